//! Every parser of the nbody command (.npy, .csv, TOML settings, the argument line) on
//! arbitrary and structured input: never a panic; what is accepted is usable.
#![no_main]

use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| nbody::cli::fuzz::parsers(data));
