//! The conformance suite against the reference executor, in both precisions.

use nbody_conformance::{run, suite};
use nbody_core::Reference;

fn main() {
    let mut trials = suite::<f32, _>("reference/f32", || Ok(Reference));
    trials.extend(suite::<f64, _>("reference/f64", || Ok(Reference)));
    run(trials);
}
