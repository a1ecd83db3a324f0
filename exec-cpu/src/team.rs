//! The executor's own threads, built for leaf-sized calls: the calling thread computes
//! the first part itself, and the workers wait for work by spinning for a while before
//! they sleep, so a call that follows another soon after (a tree code's stream of leaf
//! calls, a benchmark loop) puts no thread wake-up on its critical path.

use std::cell::UnsafeCell;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::{self, JoinHandle, Thread};
use std::time::{Duration, Instant};

/// How long an idle worker spins before it sleeps: longer than the gap between the
/// calls of a busy caller, short enough that an idle executor costs nothing for long.
const SPIN: Duration = Duration::from_micros(200);

/// A call's work: run part `k`.
type Task<'a> = dyn Fn(usize) + Sync + 'a;

struct Shared {
    /// The current call: its number (bumped for every call; workers wait for it to
    /// change) above 16 bits, its part count below, so a worker reads both at once and a
    /// late worker can never pair one call's number with the next call's parts.
    call: AtomicU64,
    /// Parts finished by workers in the current call.
    done: AtomicUsize,
    /// The current call's task, valid while a call is in progress.
    task: UnsafeCell<Option<*const Task<'static>>>,
    /// A worker's task panicked during the current call.
    panicked: AtomicBool,
    shutdown: AtomicBool,
    /// Workers asleep, to be woken when work arrives.
    sleepers: Mutex<Vec<Thread>>,
}

// SAFETY: `task` is written only by the calling thread between calls (no worker reads it
// then: every worker of the previous call has finished, and a new call's workers read it
// only after the release store of `call` that follows the write); the pointee is `Sync`.
unsafe impl Sync for Shared {}
// SAFETY: as above; the raw pointer is only dereferenced under that protocol.
unsafe impl Send for Shared {}

/// `threads - 1` workers plus the calling thread.
pub(crate) struct Team {
    shared: Arc<Shared>,
    workers: Vec<JoinHandle<()>>,
}

impl std::fmt::Debug for Team {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Team({} threads)", self.workers.len() + 1)
    }
}

impl Team {
    /// A team of `threads` threads in all (the caller is one of them).
    pub(crate) fn new(threads: usize) -> Self {
        let shared = Arc::new(Shared {
            call: AtomicU64::new(0),
            done: AtomicUsize::new(0),
            task: UnsafeCell::new(None),
            panicked: AtomicBool::new(false),
            shutdown: AtomicBool::new(false),
            sleepers: Mutex::new(Vec::new()),
        });
        let workers = (1..threads.max(1))
            .map(|w| {
                let shared = Arc::clone(&shared);
                thread::Builder::new()
                    .name(format!("nbody-cpu-{w}"))
                    .spawn(move || work(&shared, w))
                    .expect("starting a worker thread")
            })
            .collect();
        Self { shared, workers }
    }

    /// Threads in all, the caller's included.
    pub(crate) fn threads(&self) -> usize {
        self.workers.len() + 1
    }

    /// Runs `task(k)` for `k < parts` (at most [`Team::threads`]): part 0 on the calling
    /// thread, part `w` on worker `w`; returns when all are done.
    pub(crate) fn run(&self, parts: usize, task: &Task<'_>) {
        let parts = parts.min(self.threads()).min(0xffff);
        if parts <= 1 {
            if parts == 1 {
                task(0);
            }
            return;
        }
        let s = &*self.shared;
        // SAFETY: the lifetime is erased only for this call: no worker touches the
        // pointer after it adds itself to `done`, and this function waits for all.
        let erased: *const Task<'static> = unsafe { std::mem::transmute::<&Task<'_>, &'static Task<'static>>(task) };
        // SAFETY: no call is in progress (calls take `&self` of one executor, which is
        // `&mut` above; see `Shared`), so no worker reads `task` now.
        unsafe { *s.task.get() = Some(erased) };
        s.done.store(0, Ordering::Relaxed);
        s.panicked.store(false, Ordering::Relaxed);
        let number = (s.call.load(Ordering::Relaxed) >> 16) + 1;
        s.call.store((number << 16) | parts as u64, Ordering::Release);
        for t in s.sleepers.lock().map(|mut v| std::mem::take(&mut *v)).unwrap_or_default() {
            t.unpark();
        }
        let mine = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| task(0)));
        while s.done.load(Ordering::Acquire) < parts - 1 {
            std::hint::spin_loop();
        }
        // SAFETY: every worker of this call has finished with the task.
        unsafe { *s.task.get() = None };
        if let Err(p) = mine {
            std::panic::resume_unwind(p);
        }
        if s.panicked.load(Ordering::Relaxed) {
            panic!("a worker thread of the CPU executor panicked");
        }
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        self.shared.shutdown.store(true, Ordering::Release);
        let number = (self.shared.call.load(Ordering::Relaxed) >> 16) + 1;
        self.shared.call.store(number << 16, Ordering::Release);
        for w in &self.workers {
            w.thread().unpark();
        }
        for w in self.workers.drain(..) {
            let _ = w.join();
        }
    }
}

/// Worker `w`: waits for a new call (spinning, then asleep), runs its part if it has
/// one, reports, and waits again.
fn work(s: &Shared, w: usize) {
    let mut seen = 0u64;
    loop {
        let start = Instant::now();
        let mut registered = false;
        let mut call = s.call.load(Ordering::Acquire);
        while call >> 16 == seen {
            if start.elapsed() < SPIN {
                std::hint::spin_loop();
            } else {
                if !registered {
                    if let Ok(mut v) = s.sleepers.lock() {
                        v.push(thread::current());
                    }
                    registered = true;
                }
                // Work may have arrived between the check and the registration.
                if s.call.load(Ordering::Acquire) >> 16 == seen {
                    thread::park_timeout(Duration::from_millis(50));
                }
            }
            call = s.call.load(Ordering::Acquire);
        }
        seen = call >> 16;
        if s.shutdown.load(Ordering::Acquire) {
            return;
        }
        if w < (call & 0xffff) as usize {
            // SAFETY: the acquire load of `call` orders this read after the caller's write;
            // the caller keeps the task alive until this worker reports below.
            let task = unsafe { (*s.task.get()).expect("a task for this call") };
            // SAFETY: as above: the pointee lives until `done` counts this worker.
            let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| unsafe { (*task)(w) }));
            if r.is_err() {
                s.panicked.store(true, Ordering::Relaxed);
            }
            s.done.fetch_add(1, Ordering::Release);
        }
    }
}
