//! The conformance suite against the reference executor, in both precisions, with its
//! mutation test, and the largest call's reach: one source of 30,025 dropped or doubled,
//! or two targets' answers swapped, is caught by that call alone.

use nbody_conformance::mutants::{Mutation, caught_by, mutation_trial};
use nbody_conformance::{Trial, run, suite};
use nbody_core::Reference;

fn main() {
    let mut trials = suite::<f32, _>("reference/f32", || Ok(Reference));
    trials.extend(suite::<f64, _>("reference/f64", || Ok(Reference)));
    trials.push(mutation_trial::<f32, _>("reference/f32", f32::EPSILON as f64, || Ok(Reference)));
    trials.push(mutation_trial::<f64, _>("reference/f64", f64::EPSILON, || Ok(Reference)));
    for mutation in [Mutation::DropSource, Mutation::DoubleMass, Mutation::SwapTargets, Mutation::WriteNan] {
        let name = format!("reference/f32::few_targets_many_sources_catches::{}", mutation.name().replace(' ', "_"));
        trials.push(Trial::test(name, move || {
            match caught_by::<f32, _>("few_targets_many_sources", mutation, f32::EPSILON as f64, &|| Ok(Reference)) {
                Ok(true) => Ok(()),
                Ok(false) => Err(format!("{}: survived the 37 x 30,025 call", mutation.name()).into()),
                Err(e) => Err(e.into()),
            }
        }));
    }
    run(trials);
}
