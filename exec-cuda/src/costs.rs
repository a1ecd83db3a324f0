//! The costs that limit multi-device scaling, measured as in Miki et al. 2013 (Table 2,
//! Fig. 10): kernel launch latency, stream and event synchronisation, and host-to-device,
//! device-to-host and device-to-device (peer) copies against size; and the model that
//! turns them and the kernel's rate into the time of a force call and of a step on any
//! number of devices.

use crate::CudaExecutor;
use crate::device::cuda;
use crate::memory::alloc;
use crate::pipeline::Marker;
use cust::memory::{CopyDestination, DeviceBuffer, LockedBuffer};
use nbody_core::Error;
use std::time::Instant;

/// A copy's time against its size.
#[derive(Clone, Debug, Default)]
pub struct CopyCurve {
    /// `(bytes, seconds)`, median of repeats, smallest first.
    pub points: Vec<(usize, f64)>,
}

impl CopyCurve {
    /// Latency: the time of the smallest copy.
    pub fn latency(&self) -> f64 {
        self.points.first().map_or(0.0, |p| p.1)
    }

    /// Bandwidth in bytes per second: from the two largest copies' difference.
    pub fn bandwidth(&self) -> f64 {
        match self.points.as_slice() {
            [.., (b1, t1), (b2, t2)] if t2 > t1 => (b2 - b1) as f64 / (t2 - t1),
            [.., (b, t)] if *t > 0.0 => *b as f64 / t,
            _ => f64::INFINITY,
        }
    }

    /// Modelled time of a copy of `bytes`: latency plus bytes over bandwidth.
    pub fn time(&self, bytes: f64) -> f64 {
        if bytes <= 0.0 {
            return 0.0;
        }
        self.latency() + bytes / self.bandwidth()
    }
}

/// What one device (and one pair of devices) costs besides the kernel itself.
#[derive(Clone, Debug, Default)]
pub struct Costs {
    /// Queueing one small kernel launch (back to back, per launch).
    pub launch: f64,
    /// A small launch plus waiting for it on the host (launch latency).
    pub launch_and_sync: f64,
    /// Synchronising an idle stream.
    pub stream_sync: f64,
    /// Recording an event and waiting for it.
    pub event_sync: f64,
    /// Spawning and joining the host threads that drive the devices.
    pub thread: f64,
    /// Host to device from pageable memory (what host-slice calls use).
    pub h2d: CopyCurve,
    /// Host to device from pinned memory.
    pub h2d_pinned: CopyCurve,
    /// Device to host into pageable memory.
    pub d2h: CopyCurve,
    /// Device to device between the two executors given (peer, or within one device).
    pub peer: CopyCurve,
}

fn median(mut v: Vec<f64>) -> f64 {
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Sizes the copy curves are measured at: 4 bytes to 64 MiB.
const SIZES: [usize; 8] = [4, 1 << 10, 1 << 14, 1 << 17, 1 << 20, 1 << 22, 1 << 24, 1 << 26];

impl Costs {
    /// Measures on `a`, with copies from `a` to `b` for the peer curve.
    pub fn measure(a: &mut CudaExecutor, b: &mut CudaExecutor) -> Result<Self, Error> {
        a.gpu.make_current()?;
        let mut c = Costs::default();
        let mut scratch = alloc(64)?;
        let kick = crate::kernels::Kernel::Kick { tag: crate::Family::F32 };
        let f = a.function(kick)?;
        let stream = a.gpu.stream();
        let gpu = &*a;
        let small = |buf: &DeviceBuffer<u8>| -> Result<(), Error> {
            let p = crate::memory::ptr(buf);
            let args = crate::args::StepArgs::<f32> { a: p, b: p, h: 0.0, n: 1 };
            // SAFETY: the buffer holds four f32 lanes for the one particle the kick
            // touches (it adds a zero acceleration to a zero velocity).
            unsafe { gpu.launch_function(&f, kick, 1, 32, args, "launching") }
        };
        scratch.copy_from(&[0u8; 64][..]).map_err(cuda("copying"))?;
        small(&scratch)?;
        stream.synchronize().map_err(cuda("synchronising"))?;
        let reps = 2000;
        let t = Instant::now();
        for _ in 0..reps {
            small(&scratch)?;
        }
        stream.synchronize().map_err(cuda("synchronising"))?;
        c.launch = t.elapsed().as_secs_f64() / reps as f64;
        c.launch_and_sync = median(
            (0..200)
                .map(|_| {
                    let t = Instant::now();
                    small(&scratch).and_then(|_| stream.synchronize().map_err(cuda("synchronising")))?;
                    Ok(t.elapsed().as_secs_f64())
                })
                .collect::<Result<_, Error>>()?,
        );
        c.stream_sync = median(
            (0..200)
                .map(|_| {
                    let t = Instant::now();
                    stream.synchronize().map_err(cuda("synchronising"))?;
                    Ok(t.elapsed().as_secs_f64())
                })
                .collect::<Result<_, Error>>()?,
        );
        let ev = Marker::new()?;
        c.event_sync = median(
            (0..200)
                .map(|_| {
                    let t = Instant::now();
                    ev.record(stream)?;
                    ev.synchronize()?;
                    Ok(t.elapsed().as_secs_f64())
                })
                .collect::<Result<_, Error>>()?,
        );
        c.thread = median(
            (0..50)
                .map(|_| {
                    let t = Instant::now();
                    std::thread::scope(|s| {
                        s.spawn(|| ());
                        s.spawn(|| ());
                    });
                    t.elapsed().as_secs_f64()
                })
                .collect(),
        );
        drop(scratch);
        let largest = SIZES[SIZES.len() - 1];
        let dev = alloc(largest)?;
        let host = vec![1u8; largest];
        let mut back = vec![0u8; largest];
        // SAFETY: u8 has no invalid values; the buffer is written before it is read.
        let mut pinned =
            unsafe { LockedBuffer::<u8>::uninitialized(largest) }.map_err(cuda("allocating pinned memory"))?;
        pinned.as_mut_slice().fill(1);
        b.gpu.make_current()?;
        let other = alloc(largest)?;
        a.gpu.make_current()?;
        let curve = |f: &mut dyn FnMut(usize) -> Result<(), Error>| -> Result<CopyCurve, Error> {
            let mut points = Vec::new();
            for &bytes in &SIZES {
                f(bytes)?;
                let reps = if bytes <= 1 << 17 { 50 } else { 7 };
                let mut times = Vec::new();
                for _ in 0..reps {
                    let t = Instant::now();
                    f(bytes)?;
                    times.push(t.elapsed().as_secs_f64());
                }
                points.push((bytes, median(times)));
            }
            Ok(CopyCurve { points })
        };
        c.h2d = curve(&mut |n| dev.index(..n).copy_from(&host[..n]).map_err(cuda("copying to the device")))?;
        c.h2d_pinned =
            curve(&mut |n| dev.index(..n).copy_from(&pinned.as_slice()[..n]).map_err(cuda("copying to the device")))?;
        c.d2h = curve(&mut |n| dev.index(..n).copy_to(&mut back[..n]).map_err(cuda("copying from the device")))?;
        let (ca, cb) = (a.gpu.context().as_raw(), b.gpu.context().as_raw());
        let (src, dst) = (dev.as_device_ptr().as_raw(), other.as_device_ptr().as_raw());
        c.peer = curve(&mut |n| {
            // SAFETY: both buffers hold `largest` >= n bytes.
            let r = unsafe { cust::sys::cuMemcpyPeer(dst, cb, src, ca, n) };
            crate::pipeline::driver(r, "copying between devices")?;
            // A device-to-device copy returns before it is done: wait for it.
            // SAFETY: synchronises the current context; no handles involved.
            crate::pipeline::driver(unsafe { cust::sys::cuCtxSynchronize() }, "copying between devices")
        })?;
        drop(other);
        Ok(c)
    }
}

/// The time of a force call and of a leapfrog step on `d` devices, from the costs and
/// the kernel's rate `rate(n_targets)` (interactions per second with `n_targets`
/// targets against many sources, measured on one device).
pub struct Model<'a> {
    /// Measured costs.
    pub costs: &'a Costs,
    /// Kernel rate against the number of targets.
    pub rate: &'a dyn Fn(f64) -> f64,
    /// Bytes of a particle (16 for f32, 32 for f64).
    pub record: f64,
}

impl core::fmt::Debug for Model<'_> {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.debug_struct("Model").field("costs", self.costs).field("record", &self.record).finish_non_exhaustive()
    }
}

impl Model<'_> {
    /// One kernel launch of `nt` targets against `ns` sources.
    pub fn kernel(&self, nt: f64, ns: f64) -> f64 {
        if nt <= 0.0 {
            return 0.0;
        }
        self.costs.launch + nt * ns / (self.rate)(nt)
    }

    /// A device-resident leapfrog step of `n` particles on `d` devices: kick and drift
    /// of the own slice, the exchange hidden behind the kernel on the own slice, the
    /// kernels on the other slices, the second kick, and a wait for every device.
    pub fn step(&self, n: f64, d: usize) -> f64 {
        let df = d as f64;
        let own = n / df;
        let c = self.costs;
        if d == 1 {
            return 3.0 * c.launch + self.kernel(n, n) + c.stream_sync;
        }
        // Each device receives d - 1 slices; copies into one device run one at a time.
        let exchange = (df - 1.0) * c.peer.time(own * self.record);
        let first = self.kernel(own, own);
        let rest = (df - 1.0) * self.kernel(own, own);
        3.0 * c.launch + exchange.max(first) + rest + df * c.event_sync
    }

    /// A device-resident force evaluation of `n` particles on `d` devices (every device
    /// holds every position): one launch per device slice, and a wait for each device.
    pub fn force(&self, n: f64, d: usize) -> f64 {
        let df = d as f64;
        let own = n / df;
        df * self.kernel(own, own) + df * self.costs.event_sync
    }

    /// A host-slice force call of `n` targets and sources on `d` devices: the threads,
    /// targets and outputs up, the first source tile up (the rest hide behind the
    /// kernel), the kernel, the outputs down, and the merge on the host.
    pub fn call(&self, n: f64, d: usize) -> f64 {
        let c = self.costs;
        let own = n / d as f64;
        let tile = (n / 8.0).max(16_384.0).min(n);
        let threads = if d > 1 { c.thread } else { 0.0 };
        let merge = if d > 1 { own * self.record / 10e9 } else { 0.0 };
        threads
            + c.h2d.time(own * self.record) * 2.0
            + c.h2d.time(tile * self.record)
            + self.kernel(own, n)
            + c.d2h.time(own * self.record)
            + c.stream_sync
            + merge
    }
}
