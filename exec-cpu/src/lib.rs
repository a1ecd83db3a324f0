//! # nbody-cpu
//!
//! The CPU executor (tiled SIMD kernels, threads over target blocks) lands with its own
//! issue; until then this crate only re-exports the core so the facade's layout is final.

pub use nbody_core;
