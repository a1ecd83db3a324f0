//! Snapshots in Gadget's HDF5 layout, the format yt, pynbody and the Gadget/AREPO tool
//! chain open: a `Header` group of attributes (particle counts per type, the mass table,
//! the time, the box size, the unit attributes), a `Parameters` group (where Gadget-4
//! keeps the units) and one group per particle type, here `PartType1` (collisionless
//! particles) with `Coordinates`, `Velocities`, `Masses`, `ParticleIDs` and, when the
//! field is known, `Acceleration` and `Potential`. Values are written in double
//! precision; reading takes any float width and every `PartType0`..`PartType5` present
//! (masses from the `Masses` dataset or the header's mass table).

use hdf5_metno as hdf5;
use std::fmt;
use std::path::Path;

/// A snapshot that could not be written or read: the message names the file and, for a
/// damaged file, the group or field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct SnapshotError(pub String);

type Result<T> = std::result::Result<T, SnapshotError>;

macro_rules! fail {
    ($($t:tt)*) => { return Err(SnapshotError(format!($($t)*))) };
}

macro_rules! error {
    ($($t:tt)*) => { SnapshotError(format!($($t)*)) };
}

/// The unit system of a snapshot in Gadget's terms: the length, mass and velocity units
/// in cgs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GadgetUnits {
    /// The length unit in cm.
    pub length_cm: f64,
    /// The mass unit in g.
    pub mass_g: f64,
    /// The velocity unit in cm/s.
    pub velocity_cm_s: f64,
}

impl GadgetUnits {
    /// A run's physical units in Gadget's terms (`None` for N-body units or G = value,
    /// which name no unit in cgs).
    ///
    /// ```
    /// let u = nbody::units::Units::parse("au,msun,yr").unwrap();
    /// assert_eq!(nbody::gadget::GadgetUnits::of(&u).unwrap().length_cm, 1.495_978_707e13);
    /// ```
    pub fn of(units: &crate::units::Units) -> Option<GadgetUnits> {
        units.gadget().map(|[length_cm, mass_g, velocity_cm_s]| GadgetUnits { length_cm, mass_g, velocity_cm_s })
    }
}

/// What a snapshot holds besides positions, velocities and masses.
#[derive(Clone, Debug, Default)]
pub struct Extras<'a> {
    /// The simulated time.
    pub time: f64,
    /// Units, when the run has physical ones (N-body units otherwise, G = 1).
    pub units: Option<GadgetUnits>,
    /// The field `[ax, ay, az, phi]` per particle, when known.
    pub field: Option<&'a [[f64; 4]]>,
}

/// The particle type nbody's particles go to: Gadget's collisionless "halo" type.
const TYPE: usize = 1;

/// Writes `rows` (x, y, z, m, vx, vy, vz) to `path` in Gadget's HDF5 layout, through a
/// temporary file in the same folder renamed when complete.
///
/// ```
/// use nbody::gadget::{read, write, Extras};
/// let dir = tempfile::tempdir().unwrap();
/// let path = dir.path().join("snap.hdf5");
/// let rows = [[1.0, 0.0, 0.0, 0.5, 0.0, 1.0, 0.0], [-1.0, 0.0, 0.0, 0.5, 0.0, -1.0, 0.0]];
/// write(&path, &rows, &Extras { time: 0.25, ..Extras::default() })?;
/// assert_eq!(read(&path)?, rows);
/// # Ok::<(), nbody::gadget::SnapshotError>(())
/// ```
pub fn write(path: &Path, rows: &[[f64; 7]], extras: &Extras<'_>) -> Result<()> {
    let name = path.display();
    let io = |e: &dyn fmt::Display| error!("writing {name}: {e}");
    let n = rows.len();
    let count =
        u32::try_from(n).map_err(|_| error!("{name}: {n} particles; a Gadget file holds at most 2^32 - 1 per type"))?;
    let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
    let tmp = tempfile::Builder::new().prefix(".nbody-").suffix(".part").tempfile_in(dir).map_err(|e| io(&e))?;
    {
        let file = hdf5::File::create(tmp.path()).map_err(|e| io(&e))?;
        fill(&file, rows, count, extras).map_err(|e| io(&e))?;
        file.close().map_err(|e| io(&e))?;
    }
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).map_err(|e| io(&e))?;
    }
    tmp.as_file().sync_all().map_err(|e| io(&e))?;
    tmp.persist(path).map_err(|e| io(&e.error))?;
    Ok(())
}

fn attr<T: hdf5::H5Type + Copy>(g: &hdf5::Group, name: &str, values: &[T]) -> hdf5::Result<()> {
    if values.len() == 1 {
        g.new_attr::<T>().create(name)?.write_scalar(&values[0])
    } else {
        g.new_attr::<T>().shape(values.len()).create(name)?.write_raw(values)
    }
}

fn dataset(g: &hdf5::Group, name: &str, values: &[f64], width: usize) -> hdf5::Result<()> {
    let n = values.len() / width;
    if width == 1 {
        g.new_dataset::<f64>().shape(n).create(name)?.write_raw(values)
    } else {
        g.new_dataset::<f64>().shape((n, width)).create(name)?.write_raw(values)
    }
}

fn fill(file: &hdf5::File, rows: &[[f64; 7]], count: u32, x: &Extras<'_>) -> hdf5::Result<()> {
    let mut counts = [0u32; 6];
    counts[TYPE] = count;
    let header = file.create_group("Header")?;
    attr(&header, "NumPart_ThisFile", &counts)?;
    attr(&header, "NumPart_Total", &counts)?;
    attr(&header, "NumPart_Total_HighWord", &[0u32; 6])?;
    attr(&header, "MassTable", &[0.0f64; 6])?;
    attr(&header, "Time", &[x.time])?;
    attr(&header, "Redshift", &[0.0f64])?;
    // Not periodic: the box is a cube about the origin holding every particle (readers
    // that place the domain at [0, BoxSize] need the bounding box passed).
    let reach = rows.iter().flat_map(|r| r[..3].iter().map(|c| c.abs())).fold(0.0, f64::max);
    attr(&header, "BoxSize", &[(2.0 * reach).max(f64::MIN_POSITIVE)])?;
    attr(&header, "NumFilesPerSnapshot", &[1i32])?;
    for (name, v) in [("Omega0", 0.0), ("OmegaLambda", 0.0), ("OmegaBaryon", 0.0), ("HubbleParam", 1.0)] {
        attr(&header, name, &[v])?;
    }
    for flag in ["Flag_Sfr", "Flag_Cooling", "Flag_StellarAge", "Flag_Metals", "Flag_Feedback"] {
        attr(&header, flag, &[0i32])?;
    }
    attr(&header, "Flag_DoublePrecision", &[1i32])?;
    let parameters = file.create_group("Parameters")?;
    attr(&parameters, "ComovingIntegrationOn", &[0i32])?;
    attr(&parameters, "PeriodicBoundariesOn", &[0i32])?;
    // N-body units are G = 1 in whatever units the initial conditions meant: no unit
    // attributes are written, rather than false ones.
    if let Some(u) = x.units {
        let g = crate::units::G_CGS * u.mass_g / (u.length_cm * u.velocity_cm_s * u.velocity_cm_s);
        for group in [&header, &parameters] {
            attr(group, "UnitLength_in_cm", &[u.length_cm])?;
            attr(group, "UnitMass_in_g", &[u.mass_g])?;
            attr(group, "UnitVelocity_in_cm_per_s", &[u.velocity_cm_s])?;
        }
        attr(&parameters, "GravityConstantInternal", &[g])?;
    }
    let part = file.create_group(&format!("PartType{TYPE}"))?;
    let column = |k: std::ops::Range<usize>| -> Vec<f64> { rows.iter().flat_map(|r| r[k.clone()].to_vec()).collect() };
    dataset(&part, "Coordinates", &column(0..3), 3)?;
    dataset(&part, "Velocities", &column(4..7), 3)?;
    dataset(&part, "Masses", &column(3..4), 1)?;
    let ids: Vec<u64> = (1..=rows.len() as u64).collect();
    part.new_dataset::<u64>().shape(ids.len()).create("ParticleIDs")?.write_raw(&ids)?;
    if let Some(f) = x.field {
        let a: Vec<f64> = f.iter().flat_map(|r| r[..3].to_vec()).collect();
        let phi: Vec<f64> = f.iter().map(|r| r[3]).collect();
        dataset(&part, "Acceleration", &a, 3)?;
        dataset(&part, "Potential", &phi, 1)?;
    }
    Ok(())
}

/// Reads every particle of a Gadget HDF5 file (types 0 to 5 in order) as rows (x, y, z,
/// m, vx, vy, vz; velocities 0 where a type has none). Errors name the file and the
/// group or field.
pub fn read(path: &Path) -> Result<Vec<[f64; 7]>> {
    let name = path.display().to_string();
    let file = hdf5::File::open(path).map_err(|e| error!("{name}: not a readable HDF5 file: {e}"))?;
    let header = file.group("Header").map_err(|_| error!("{name}: no Header group (not a Gadget snapshot)"))?;
    let table: Vec<f64> = match header.attr("MassTable") {
        Ok(a) => a.read_raw::<f64>().map_err(|e| error!("{name}: Header/MassTable: {e}"))?,
        Err(_) => vec![0.0; 6],
    };
    if table.len() != 6 {
        fail!("{name}: Header/MassTable has {} values, not 6", table.len());
    }
    let mut rows = Vec::new();
    let mut found = false;
    for (t, &table_mass) in table.iter().enumerate() {
        let group = format!("PartType{t}");
        let Ok(g) = file.group(&group) else { continue };
        found = true;
        let read = |field: &str, width: usize| -> Result<Option<Vec<f64>>> {
            if !g.link_exists(field) {
                return Ok(None);
            }
            let d = g.dataset(field).map_err(|e| error!("{name}: {group}/{field}: {e}"))?;
            let shape = d.shape();
            let ok = match width {
                1 => shape.len() == 1,
                w => shape.len() == 2 && shape[1] == w,
            };
            if !ok {
                fail!(
                    "{name}: {group}/{field} has shape {shape:?}, expected (N{})",
                    if width > 1 { ", 3" } else { "" }
                );
            }
            let v = d.read_raw::<f64>().map_err(|e| error!("{name}: {group}/{field}: {e}"))?;
            Ok(Some(v))
        };
        let pos = read("Coordinates", 3)?.ok_or_else(|| error!("{name}: {group} has no Coordinates"))?;
        let n = pos.len() / 3;
        let vel = read("Velocities", 3)?.unwrap_or_else(|| vec![0.0; 3 * n]);
        let mass = match read("Masses", 1)? {
            Some(m) => m,
            None if table_mass > 0.0 => vec![table_mass; n],
            None => fail!("{name}: {group} has no Masses and Header/MassTable[{t}] is 0"),
        };
        for (field, len) in [("Velocities", vel.len() / 3), ("Masses", mass.len())] {
            if len != n {
                fail!("{name}: {group}/{field} has {len} rows, Coordinates {n}");
            }
        }
        for i in 0..n {
            let (x, v) = (&pos[3 * i..3 * i + 3], &vel[3 * i..3 * i + 3]);
            rows.push([x[0], x[1], x[2], mass[i], v[0], v[1], v[2]]);
        }
    }
    if !found {
        fail!("{name}: no PartType0 to PartType5 group (no particles)");
    }
    Ok(rows)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_snapshot_reads_back_exactly_with_its_header() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("snap.hdf5");
        let rows = [[1.0, -2.0, 3.5, 0.25, 0.1, 0.2, -0.3], [-1e-3, 4.0, 0.0, 0.75, 0.0, -1.0, 2.0]];
        let field = [[1.0, 2.0, 3.0, -4.0], [5.0, 6.0, 7.0, -8.0]];
        let units = GadgetUnits { length_cm: 1.496e13, mass_g: 1.989e33, velocity_cm_s: 4.74e5 };
        write(&path, &rows, &Extras { time: 0.5, units: Some(units), field: Some(&field) }).unwrap();
        assert_eq!(read(&path).unwrap(), rows);
        let f = hdf5::File::open(&path).unwrap();
        let h = f.group("Header").unwrap();
        assert_eq!(h.attr("NumPart_ThisFile").unwrap().read_raw::<u32>().unwrap(), [0, 2, 0, 0, 0, 0]);
        assert_eq!(h.attr("Time").unwrap().read_scalar::<f64>().unwrap(), 0.5);
        assert_eq!(h.attr("UnitLength_in_cm").unwrap().read_scalar::<f64>().unwrap(), 1.496e13);
        assert_eq!(h.attr("BoxSize").unwrap().read_scalar::<f64>().unwrap(), 8.0);
        let p = f.group("PartType1").unwrap();
        assert_eq!(p.dataset("Potential").unwrap().read_raw::<f64>().unwrap(), [-4.0, -8.0]);
        assert_eq!(p.dataset("ParticleIDs").unwrap().read_raw::<u64>().unwrap(), [1, 2]);
        // Nothing but the snapshot in the folder: the temporary file was renamed.
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
    }

    #[test]
    fn damaged_files_name_the_file_and_the_field() {
        let dir = tempfile::tempdir().unwrap();
        let junk = dir.path().join("junk.hdf5");
        std::fs::write(&junk, b"not hdf5 at all").unwrap();
        let e = read(&junk).unwrap_err().to_string();
        assert!(e.contains("junk.hdf5") && e.contains("not a readable HDF5 file"), "{e}");

        // A file with one group of `shape` coordinates and no masses: the read's message.
        let damaged = |name: &str, group: &str, shape: (usize, usize)| {
            let path = dir.path().join(name);
            let f = hdf5::File::create(&path).unwrap();
            f.create_group("Header").unwrap();
            let g = f.create_group(group).unwrap();
            let zeros = vec![0f32; shape.0 * shape.1];
            g.new_dataset::<f32>().shape(shape).create("Coordinates").unwrap().write_raw(&zeros).unwrap();
            drop((g, f));
            read(&path).unwrap_err().to_string()
        };
        let e = damaged("bad.hdf5", "PartType0", (2, 2));
        assert!(e.contains("bad.hdf5: PartType0/Coordinates has shape [2, 2]"), "{e}");
        let e = damaged("massless.hdf5", "PartType2", (2, 3));
        assert!(e.contains("PartType2 has no Masses and Header/MassTable[2] is 0"), "{e}");
    }

    #[test]
    fn float_coordinates_and_a_mass_table_are_read() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("g2.hdf5");
        let f = hdf5::File::create(&path).unwrap();
        let h = f.create_group("Header").unwrap();
        attr(&h, "MassTable", &[0.0, 0.5, 0.0, 0.0, 0.0, 0.0]).unwrap();
        let g = f.create_group("PartType1").unwrap();
        g.new_dataset::<f32>()
            .shape((2, 3))
            .create("Coordinates")
            .unwrap()
            .write_raw(&[1f32, 2., 3., 4., 5., 6.])
            .unwrap();
        drop((g, h, f));
        assert_eq!(read(&path).unwrap(), [[1.0, 2.0, 3.0, 0.5, 0.0, 0.0, 0.0], [4.0, 5.0, 6.0, 0.5, 0.0, 0.0, 0.0]]);
    }
}
