//! What a run leaves behind besides the energy CSV: snapshots, density maps and the
//! summary.

use super::files::{COLUMNS, write_table};
use super::plot::{Panel, density_png};
use super::settings::{RunSettings, SnapshotFormat};
use super::sim::{Row, Simulation};
use super::team::Team;
use anyhow::Result;
use nbody_core::projection::{Plane, Projection};

/// Snapshot `k` at time `time` in the run's format.
pub(super) fn write_snapshot(s: &RunSettings, k: u64, time: f64, rows: &[Row]) -> Result<()> {
    let path = s.out.join(format!("snapshot-{k:05}.{}", s.format.extension()));
    match s.format {
        #[cfg(feature = "hdf5")]
        SnapshotFormat::Hdf5 => {
            let units = crate::gadget::GadgetUnits::of(&s.units);
            Ok(crate::gadget::write(&path, rows, &crate::gadget::Extras { time, units, field: None })?)
        }
        #[cfg(not(feature = "hdf5"))]
        SnapshotFormat::Hdf5 => anyhow::bail!("{}: this build writes no HDF5", path.display()),
        SnapshotFormat::Npy | SnapshotFormat::Csv => {
            let _ = time;
            let flat: Vec<f64> = rows.iter().flatten().copied().collect();
            write_table(&path, &COLUMNS, &flat)
        }
    }
}

/// The two density windows (x-y and x-z), centred on the centre of mass, half-width a
/// little over the 95th percentile of the particles' distance from it (per axis): the
/// same windows at start and end, so the pictures compare.
pub(super) fn windows(rows: &[Row]) -> [(Plane, [f64; 3], f64); 2] {
    let mass: f64 = rows.iter().map(|r| r[3]).sum();
    let com: [f64; 3] = if mass > 0.0 {
        core::array::from_fn(|k| rows.iter().map(|r| r[3] * r[k]).sum::<f64>() / mass)
    } else {
        core::array::from_fn(|k| rows.iter().map(|r| r[k]).sum::<f64>() / rows.len() as f64)
    };
    let mut d: Vec<f64> = rows.iter().map(|r| (0..3).map(|k| (r[k] - com[k]).abs()).fold(0.0, f64::max)).collect();
    let q = (d.len() * 95 / 100).min(d.len() - 1);
    let (_, q95, _) = d.select_nth_unstable_by(q, f64::total_cmp);
    let half = if *q95 > 0.0 { 1.15 * *q95 } else { 1.0 };
    [(Plane::XY, com, half), (Plane::XZ, com, half)]
}

pub(super) fn write_density(
    s: &RunSettings,
    sim: &mut dyn Simulation,
    windows: &[(Plane, [f64; 3], f64); 2],
    when: &str,
    team: &Team,
) -> Result<()> {
    let mut grids = Vec::new();
    for &(plane, com, half) in windows {
        let (h, v) = plane.axes();
        let proj = Projection { plane, centre: [com[h], com[v]], half_width: half, pixels: s.pixels };
        let mut grid = vec![0.0; s.pixels * s.pixels];
        sim.project(&proj, &mut grid)?;
        grids.push((plane, grid));
    }
    let panels: Vec<Panel<'_>> = grids
        .iter()
        .map(|(plane, g)| Panel {
            grid: g,
            caption: format!("{}-{} (side {:.3})", &plane.name()[..1], &plane.name()[1..], 2.0 * windows[0].2),
        })
        .collect();
    let title = format!("Projected mass, log scale, t = {:.4} (N = {})", sim.time(), s.n);
    team.on_root(|| density_png(&s.out.join(format!("density-{when}.png")), &title, s.pixels, &panels)).map(drop)
}
