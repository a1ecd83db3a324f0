//! Every wrapper of the core reaches the wrapped executor's own hooks at every door:
//! `&mut E`, `Box<E>`, a boxed trait object, `resident::OnHost` and a wrapper of the
//! user's own written with `forward::Forward` (the command's `Counting`, the CUDA mixed
//! executor and MPI's `Replicated` are checked beside their code).

use nbody_conformance::wrappers::{Probe, every_door_reaches};
use nbody_core::Executor;
use nbody_core::forward::{Call, Forward};
use nbody_core::resident::OnHost;

/// A user's wrapper: counts calls, forwards everything.
struct Calls<E> {
    inner: E,
    calls: usize,
}

impl<E> Forward for Calls<E> {
    type Inner = E;
    fn inner(&self) -> &E {
        &self.inner
    }
    fn inner_mut(&mut self) -> &mut E {
        &mut self.inner
    }
    fn before(&mut self, _: &Call<'_>) {
        self.calls += 1;
    }
}

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
        let mut counted = Calls { inner: p, calls: 0 };
        every_door_reaches(&mut counted, &log)?;
        // Five doors, then the batch again for the answer.
        assert_eq!(counted.calls, 6);
        Ok(())
    });
}
