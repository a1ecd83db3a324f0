//! Every wrapper of the core reaches the wrapped executor's own hooks at every door:
//! `&mut E`, `Box<E>`, a boxed trait object, `resident::OnHost` and a wrapper of the
//! user's own written with `forward::Forward` (`forward::Counted`, which the run loop
//! counts with; the CUDA mixed executor and MPI's `Replicated` are checked beside their
//! code).

use nbody_conformance::wrappers::{Probe, every_door_reaches};
use nbody_core::Executor;
use nbody_core::forward::Counted;
use nbody_core::resident::OnHost;

fn check(make: impl FnOnce(Probe) -> Result<(), String>) {
    let probe = Probe::default();
    make(probe).unwrap();
}

#[test]
fn core_wrappers_reach_every_hook() {
    check(|mut p| {
        let log = p.log.clone();
        every_door_reaches(&mut p, &log)
    });
    check(|p| {
        let log = p.log.clone();
        every_door_reaches(Box::new(p), &log)
    });
    check(|p| {
        let log = p.log.clone();
        let boxed: Box<dyn Executor<f64>> = Box::new(p);
        every_door_reaches(boxed, &log)
    });
    check(|p| {
        let log = p.log.clone();
        every_door_reaches(OnHost::new(p), &log)
    });
    check(|p| {
        let log = p.log.clone();
        let mut counted = Counted::new(p);
        every_door_reaches(&mut counted, &log)?;
        // Five doors, then the batch again for the answer: four calls of 6 x 6 and two
        // batches of 6 x 6.
        assert_eq!((counted.calls, counted.interactions), (6, 6.0 * 36.0));
        Ok(())
    });
}
