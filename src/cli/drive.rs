//! The run loop of `nbody run`: steps, snapshots, energy rows, checkpoints and the
//! progress bar, until the end time, a stop request or an error.

use super::files::{write_atomic, write_table};
use super::outputs::{windows, write_density, write_snapshot};
use super::plot::energy_png;
use super::settings::{IntegratorKind, RunSettings};
use super::sim::{Row, Simulation};
use super::team::Team;
use anyhow::{Result, bail};
use indicatif::{ProgressBar, ProgressStyle};
use nbody_core::projection::Plane;
use nbody_integrators::{Diagnostics, Words};
use std::fmt::Write as _;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

pub(super) struct Energy {
    rows: Vec<f64>,
    e0: f64,
    p0: [f64; 3],
    l0: [f64; 3],
    /// Σ m |v| at the start: the scale momentum errors are relative to.
    p_scale: f64,
    l_scale: f64,
}

pub(super) const ENERGY_COLUMNS: [&str; 13] = [
    "time",
    "steps",
    "kinetic",
    "potential",
    "total",
    "rel_energy_error",
    "px",
    "py",
    "pz",
    "lx",
    "ly",
    "lz",
    "virial_ratio",
];

/// energy.csv, its header naming the run's units where they are not N-body units
/// (`time [yr]`, `kinetic [msun au^2/yr^2]`).
fn write_energy(s: &RunSettings, energy: &Energy) -> Result<()> {
    let [t, e, p, l] = s.units.labels();
    let header: Vec<String> = ENERGY_COLUMNS
        .iter()
        .enumerate()
        .map(|(c, name)| {
            let unit = match c {
                0 => &t,
                2..=4 => &e,
                6..=8 => &p,
                9..=11 => &l,
                _ => "",
            };
            format!("{name}{unit}")
        })
        .collect();
    let names: Vec<&str> = header.iter().map(String::as_str).collect();
    write_table(&s.out.join("energy.csv"), &names, &energy.rows)
}

impl Energy {
    fn record(&mut self, t: f64, steps: u64, d: &Diagnostics) {
        let rel = (d.total - self.e0) / self.e0.abs();
        self.rows.extend([t, steps as f64, d.kinetic, d.potential, d.total, rel]);
        self.rows.extend(d.momentum);
        self.rows.extend(d.angular_momentum);
        self.rows.push(d.virial_ratio);
    }

    /// Whether the last sample is of the state after `steps` steps.
    fn holds(&self, steps: u64) -> bool {
        self.rows.len() >= ENERGY_COLUMNS.len() && self.rows[self.rows.len() - ENERGY_COLUMNS.len() + 1] == steps as f64
    }

    fn errors(&self) -> impl Iterator<Item = (f64, f64)> + '_ {
        self.rows.chunks(ENERGY_COLUMNS.len()).map(|r| (r[0], r[5]))
    }
}

/// Where the run loop stands: what a checkpoint saves besides the simulation.
pub(super) struct Progress {
    energy: Energy,
    snapshots: u64,
    k_energy: u64,
    k_snap: u64,
    k_ckpt: u64,
    last: Diagnostics,
    /// Centre and half-width of the density windows (the same at start and end).
    com: [f64; 3],
    half: f64,
}

pub(super) fn diag_words(d: &Diagnostics) -> [f64; 13] {
    let (p, l, c) = (d.momentum, d.angular_momentum, d.centre_of_mass);
    [d.kinetic, d.potential, d.total, p[0], p[1], p[2], l[0], l[1], l[2], c[0], c[1], c[2], d.virial_ratio]
}

impl Progress {
    fn words(&self) -> Vec<u64> {
        let e = &self.energy;
        let mut w = vec![self.snapshots, self.k_energy, self.k_snap, self.k_ckpt];
        let mut f = vec![e.e0, e.p0[0], e.p0[1], e.p0[2], e.l0[0], e.l0[1], e.l0[2], e.p_scale, e.l_scale];
        f.extend(self.com);
        f.push(self.half);
        f.extend(diag_words(&self.last));
        w.extend(f.iter().map(|x| x.to_bits()));
        w.push(e.rows.len() as u64);
        w.extend(e.rows.iter().map(|x| x.to_bits()));
        w
    }

    fn from_words(words: &[u64]) -> Result<Self> {
        let mut w = Words::new(words);
        let (snapshots, k_energy, k_snap, k_ckpt) = (w.word()?, w.word()?, w.word()?, w.word()?);
        let mut f = [0.0; 26];
        for x in &mut f {
            *x = w.f64()?;
        }
        let n = w.len(1)?;
        let rows = (0..n).map(|_| w.f64()).collect::<Result<Vec<f64>, _>>()?;
        let d = &f[13..];
        let last = Diagnostics {
            kinetic: d[0],
            potential: d[1],
            total: d[2],
            momentum: [d[3], d[4], d[5]],
            angular_momentum: [d[6], d[7], d[8]],
            centre_of_mass: [d[9], d[10], d[11]],
            virial_ratio: d[12],
        };
        let energy =
            Energy { rows, e0: f[0], p0: [f[1], f[2], f[3]], l0: [f[4], f[5], f[6]], p_scale: f[7], l_scale: f[8] };
        Ok(Self { energy, snapshots, k_energy, k_snap, k_ckpt, last, com: [f[9], f[10], f[11]], half: f[12] })
    }

    fn windows(&self) -> [(Plane, [f64; 3], f64); 2] {
        [(Plane::XY, self.com, self.half), (Plane::XZ, self.com, self.half)]
    }
}

/// Writes a checkpoint (and the energy rows so far) when the simulation can give one.
pub(super) fn checkpoint(s: &RunSettings, sim: &mut dyn Simulation, p: &Progress, team: &Team) -> Result<()> {
    if let Some(words) = sim.save()? {
        team.on_root(|| {
            write_energy(s, &p.energy)?;
            let saved = super::checkpoint::Saved { settings: s.to_toml(), run: p.words(), sim: words };
            super::checkpoint::write(&s.out, sim.steps(), &saved)
        })?;
    }
    Ok(())
}

/// Wall time after which a checkpoint is written even between scheduled ones.
pub(super) const CHECKPOINT_WALL: std::time::Duration = std::time::Duration::from_secs(600);

pub(super) fn drive(
    s: &RunSettings,
    mut sim: Box<dyn Simulation + '_>,
    label: &str,
    grid: f64,
    stop: &AtomicBool,
    team: &Team,
    resume: Option<super::checkpoint::Saved>,
) -> Result<bool> {
    let wall = Instant::now();
    // Every rank stops at the same step: the flag is agreed at each check.
    let stop = || team.any(stop.load(Ordering::SeqCst));
    let mut p = match resume {
        Some(saved) => {
            sim.restore(&mut Words::new(&saved.sim))?;
            let p = Progress::from_words(&saved.run)?;
            if team.is_root() {
                println!("  # resumed at t = {} after {} steps", sim.time(), sim.steps());
            }
            p
        }
        None => {
            let d0 = sim.diagnostics()?;
            // The first diagnostics evaluated the force once: the run's cost follows from it.
            let per_force = wall.elapsed().as_secs_f64();
            if team.is_root() {
                println!("{}", estimate(s, per_force));
            }
            let first = sim.snapshot()?;
            let speed = |r: &Row| (r[4] * r[4] + r[5] * r[5] + r[6] * r[6]).sqrt();
            let p_scale: f64 = first.iter().map(|r| r[3] * speed(r)).sum();
            let l_scale: f64 =
                first.iter().map(|r| r[3] * (r[0] * r[0] + r[1] * r[1] + r[2] * r[2]).sqrt() * speed(r)).sum();
            let mut energy = Energy {
                rows: Vec::new(),
                e0: d0.total,
                p0: d0.momentum,
                l0: d0.angular_momentum,
                p_scale: p_scale.max(f64::MIN_POSITIVE),
                l_scale: l_scale.max(f64::MIN_POSITIVE),
            };
            energy.record(0.0, 0, &d0);
            team.on_root(|| write_snapshot(s, 0, sim.time(), &first))?;
            let [(_, com, half), _] = windows(&first);
            let p = Progress { energy, snapshots: 0, k_energy: 1, k_snap: 1, k_ckpt: 1, last: d0, com, half };
            write_density(s, &mut *sim, &p.windows(), "start", team)?;
            p
        }
    };
    let bar = progress_bar(s.quiet || !team.is_root());
    let mut interrupted = false;
    let mut last_ckpt = Instant::now();
    'run: loop {
        let next_energy = schedule(p.k_energy, s.energy_every, grid, s.t_end);
        let next_snap = schedule(p.k_snap, s.snapshot_every, grid, s.t_end);
        let next_ckpt = schedule(p.k_ckpt, s.checkpoint_every, grid, s.t_end);
        let until = next_energy.min(next_snap).min(next_ckpt);
        let mut before = sim.time();
        while !sim.step(until)? {
            team.fault_point(sim.steps())?;
            check_progress(s, &*sim, before)?;
            before = sim.time();
            show(&bar, s, &*sim, &wall, team.size());
            if stop() {
                interrupted = true;
                break 'run;
            }
            if team.any(last_ckpt.elapsed() > CHECKPOINT_WALL) {
                checkpoint(s, &mut *sim, &p, team)?;
                last_ckpt = Instant::now();
            }
        }
        show(&bar, s, &*sim, &wall, team.size());
        if close(until, next_energy) {
            // One sample a state: sample times closer together than the steps (within
            // half a leapfrog step, or past the time reached) come to the state sampled
            // last.
            if !p.energy.holds(sim.steps()) {
                p.last = sim.diagnostics()?;
                p.energy.record(sim.time(), sim.steps(), &p.last);
            }
            p.k_energy = next_output(p.k_energy, s.energy_every, grid, s.t_end, sim.time());
        }
        if close(until, next_snap) {
            p.snapshots += 1;
            let rows = sim.snapshot()?;
            team.on_root(|| write_snapshot(s, p.snapshots, sim.time(), &rows))?;
            p.k_snap = next_output(p.k_snap, s.snapshot_every, grid, s.t_end, sim.time());
        }
        // At the end every output is written next: a checkpoint there would only make a
        // resumed run record the end twice.
        if close(until, next_ckpt) && !close(until, s.t_end) {
            p.k_ckpt = next_output(p.k_ckpt, s.checkpoint_every, grid, s.t_end, sim.time());
            checkpoint(s, &mut *sim, &p, team)?;
            last_ckpt = Instant::now();
        }
        if close(until, s.t_end) {
            break;
        }
        if stop() {
            interrupted = true;
            break;
        }
    }
    bar.finish_and_clear();
    if interrupted {
        // Stopped between outputs: record where it stopped.
        p.last = sim.diagnostics()?;
        p.energy.record(sim.time(), sim.steps(), &p.last);
        p.snapshots += 1;
        let rows = sim.snapshot()?;
        team.on_root(|| write_snapshot(s, p.snapshots, sim.time(), &rows))?;
    }
    write_density(s, &mut *sim, &p.windows(), "end", team)?;
    let interactions = team.sum(sim.interactions());
    let seconds = wall.elapsed().as_secs_f64();
    team.on_root(|| {
        write_energy(s, &p.energy)?;
        let errors: Vec<(f64, f64)> = p.energy.errors().collect();
        let title = format!("Energy error: N = {}, {:?}, {}", s.n, s.integrator, s.precision.name());
        energy_png(&s.out.join("energy-error.png"), &title, &errors)?;
        let summary = summary(s, &*sim, label, &p.energy, &p.last, seconds, interactions, p.snapshots + 1, interrupted);
        print!("{summary}");
        write_atomic(&s.out.join("summary.txt"), |w| w.write_all(summary.as_bytes()))
    })?;
    Ok(interrupted)
}

/// The settings echo's last line: the wall time the run should take, from one force
/// evaluation's time (fixed steps), or that time alone (adaptive steps).
pub(super) fn estimate(s: &RunSettings, per_force: f64) -> String {
    let human = |t: f64| {
        if t < 1e-3 {
            format!("{:.0} us", t * 1e6)
        } else if t < 1.0 {
            format!("{:.1} ms", t * 1e3)
        } else if t < 120.0 {
            format!("{t:.2} s")
        } else if t < 7200.0 {
            format!("{:.1} min", t / 60.0)
        } else {
            format!("{:.1} h", t / 3600.0)
        }
    };
    match s.integrator {
        IntegratorKind::Leapfrog => {
            let steps = (s.t_end / s.dt).ceil();
            format!(
                "  # estimated wall time {} ({steps} steps at {} per force evaluation)",
                human(steps * per_force),
                human(per_force)
            )
        }
        _ => format!(
            "  # {} per force evaluation (adaptive steps: their number is not known in advance)",
            human(per_force)
        ),
    }
}

/// Adaptive steps: refuses a run whose steps stopped advancing the time (lost against t
/// in double precision) or that would take more than 2^40 of them at its current pace.
pub(super) fn check_progress(s: &RunSettings, sim: &dyn Simulation, before: f64) -> Result<()> {
    let (t, steps) = (sim.time(), sim.steps());
    if t <= before {
        bail!("the step at t = {t:e} no longer advances the time (lost against t in double precision)");
    }
    // Checked from the 65,536th step on, at powers of two (so it costs nothing): a
    // Hermite start can crawl for thousands of tiny steps before its pace settles (the
    // figure-eight takes 16,834 steps to reach t = 0.002, then 129 to t = 0.25).
    if steps >= 1 << 16 && steps.is_power_of_two() {
        let projected = s.t_end / (t / steps as f64);
        if projected.is_nan() || projected > (1u64 << 40) as f64 {
            bail!(
                "after {steps} steps the time is {t:e}: reaching --t-end {:e} would take about {projected:.2e} steps (more than 2^40)",
                s.t_end
            );
        }
    }
    Ok(())
}

pub(super) fn progress_bar(quiet: bool) -> ProgressBar {
    if quiet {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(1000);
    let style =
        ProgressStyle::with_template("[{elapsed_precise}] {wide_bar:.cyan/blue} {percent:>3}%  {msg}  ETA {eta}")
            .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style.progress_chars("=> "));
    bar
}

/// Progress; with `ranks` > 1 the rate is this rank's times the number of ranks.
pub(super) fn show(bar: &ProgressBar, s: &RunSettings, sim: &dyn Simulation, wall: &Instant, ranks: usize) {
    if bar.is_hidden() {
        return;
    }
    let rate = ranks as f64 * sim.interactions() / wall.elapsed().as_secs_f64().max(1e-9);
    bar.set_position((1000.0 * sim.time() / s.t_end).clamp(0.0, 1000.0) as u64);
    bar.set_message(format!("t = {:.4}/{}  steps {}  {:.3e} interactions/s", sim.time(), s.t_end, sim.steps(), rate));
}

#[allow(clippy::too_many_arguments)]
pub(super) fn summary(
    s: &RunSettings,
    sim: &dyn Simulation,
    label: &str,
    energy: &Energy,
    last: &Diagnostics,
    seconds: f64,
    interactions: f64,
    snapshots: u64,
    interrupted: bool,
) -> String {
    let max_err = energy.errors().map(|e| e.1.abs()).fold(0.0, f64::max);
    let final_err = (last.total - energy.e0) / energy.e0.abs();
    let dp = (0..3).map(|k| (last.momentum[k] - energy.p0[k]).powi(2)).sum::<f64>().sqrt();
    let dl = (0..3).map(|k| (last.angular_momentum[k] - energy.l0[k]).powi(2)).sum::<f64>().sqrt();
    let mut o = String::new();
    let _ = writeln!(o, "{}", if interrupted { "Stopped by Ctrl-C after the current step." } else { "Done." });
    let _ = writeln!(o, "  particles             {}", s.n);
    if let Some(tp) = &s.test_particles {
        let _ = writeln!(o, "  test particles        {} (massless, after the others)", tp.display());
    }
    let _ = writeln!(o, "  executor              {label}, {}", s.precision.name());
    let _ = writeln!(o, "  simulated time        {:.6} of {}", sim.time(), s.t_end);
    if !s.units.is_nbody() {
        let _ = writeln!(o, "  units                 {} (G = {:.6e} in them)", s.units.spec(), s.units.g());
    }
    let _ = writeln!(o, "  steps                 {}", sim.steps());
    let _ = writeln!(o, "  wall time             {seconds:.3} s");
    let _ = writeln!(o, "  interactions          {:.4e} ({:.4e} per second)", interactions, interactions / seconds);
    if let Some((forces, busy)) = sim.force_time().filter(|f| f.0 > 0) {
        let _ = writeln!(
            o,
            "  forces                {forces}, {busy:.3} s on the GPU ({:.2} ms each; the rest of the wall time is steps' kicks and drifts, outputs and start-up)",
            1e3 * busy / forces as f64
        );
    }
    let _ = writeln!(
        o,
        "  energy error          {final_err:.3e} at the end, {max_err:.3e} at most (|E(t) - E(0)| / |E(0)|)"
    );
    let _ = writeln!(o, "  momentum change       {dp:.3e} ({:.3e} of sum m|v|)", dp / energy.p_scale);
    let _ = writeln!(o, "  angular momentum      {dl:.3e} ({:.3e} of sum m|x||v|)", dl / energy.l_scale);
    let _ = writeln!(o, "  virial ratio 2T/|W|   {:.4}", last.virial_ratio);
    let _ = writeln!(
        o,
        "  written to {}: settings.toml, {snapshots} snapshot(s), energy.csv, energy-error.png, density-start.png, density-end.png, summary.txt",
        s.out.display()
    );
    o
}

/// Output times: multiples of `every` (rounded up to multiples of `grid` when set),
/// the last one `t_end`.
pub(super) fn schedule(k: u64, every: f64, grid: f64, t_end: f64) -> f64 {
    let t = k as f64 * every;
    let t = if grid > 0.0 { (t / grid).ceil() * grid } else { t };
    t.min(t_end)
}

/// The index after `k` of the first output time past `t` (the time just reached): output
/// times closer together than the steps fall on one step and are written there once, not
/// once each for the same state.
///
/// With steps of 1/256 and energies every 1/1024, the energies after the first step (at
/// k = 1) come next at the second step (k = 5):
/// `next_output(1, 1.0 / 1024.0, 0.0, 1.0, 1.0 / 256.0) == 5`.
pub(super) fn next_output(k: u64, every: f64, grid: f64, t_end: f64, t: f64) -> u64 {
    let mut k = (k + 1).max((t / every) as u64);
    loop {
        let at = schedule(k, every, grid, t_end);
        if (at > t && !close(at, t)) || close(at, t_end) {
            return k;
        }
        k += 1;
    }
}

pub(super) fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-12 * b.abs().max(1.0)
}

#[cfg(test)]
mod tests {
    use super::{next_output, schedule};

    #[test]
    fn outputs_closer_than_the_steps_fall_on_each_step_once() {
        let (dt, every, t_end) = (1.0 / 256.0, 1.0 / 1024.0, 0.125);
        let (mut k, mut steps) = (1, 0);
        let mut times = vec![0.0];
        let mut t = 0.0;
        while t < t_end {
            let until = schedule(k, every, 0.0, t_end);
            // The leapfrog's loop: steps while the time is half a step short of `until`;
            // the run loop samples a state once.
            let before = steps;
            while t < until - 0.5 * dt {
                (t, steps) = (t + dt, steps + 1);
            }
            if steps > before {
                times.push(t);
            }
            k = next_output(k, every, 0.0, t_end, t);
        }
        assert_eq!(times.len(), 33);
        assert!(times.windows(2).all(|w| w[1] > w[0]), "{times:?}");
        assert_eq!(next_output(1, every, 0.0, 1.0, dt), 5);
        // Outputs farther apart than the steps are unchanged: every one, in order.
        assert_eq!(next_output(3, 0.1, 0.0, 1.0, 0.3), 4);
        // At the end the index stays at t_end's.
        assert_eq!(schedule(next_output(9, 0.1, 0.0, 1.0, 1.0), 0.1, 0.0, 1.0), 1.0);
    }
}
