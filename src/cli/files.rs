//! Particle files in and out: .npy (f32 or f64, C order, N x 4 or N x 7) and .csv (one
//! particle a line, an optional header line, `#` comments). Every number is checked:
//! errors name the file, the row and the column. Outputs are written to a temporary
//! file in the destination folder and renamed, so no reader ever sees half a file.

use anyhow::{Context, Result, anyhow, bail};
use nbody_core::{Particle, Velocity};
use std::io::{BufWriter, Read, Write};
use std::path::Path;

/// A table of numbers read from a particle file: `rows` rows of `columns` values.
#[derive(Clone, Debug, PartialEq)]
pub struct Table {
    /// Values per row.
    pub columns: usize,
    /// Row-major values.
    pub values: Vec<f64>,
    /// For text files, the line each row came from (errors cite lines, not rows).
    pub lines: Vec<u64>,
}

impl Table {
    /// Number of rows.
    pub fn rows(&self) -> usize {
        self.values.len().checked_div(self.columns).unwrap_or(0)
    }
}

/// File formats, from the extension.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Format {
    /// NumPy .npy.
    Npy,
    /// Comma-separated values.
    Csv,
    /// Gadget's HDF5 snapshot layout (`.hdf5`, `.h5`; the `hdf5` feature).
    Hdf5,
}

impl Format {
    /// The format of `path`, from its extension.
    pub fn of(path: &Path) -> Result<Format> {
        match path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase).as_deref() {
            Some("npy") => Ok(Format::Npy),
            Some("csv") => Ok(Format::Csv),
            Some("hdf5" | "h5") => Ok(Format::Hdf5),
            _ => bail!("{}: unknown file type (expected .npy, .csv or .hdf5)", path.display()),
        }
    }
}

/// One row of a snapshot: x, y, z, m, vx, vy, vz (as [`COLUMNS`] names them).
pub type Row = [f64; 7];

/// Column names of the particle tables, in order.
pub const COLUMNS: [&str; 7] = ["x", "y", "z", "m", "vx", "vy", "vz"];

/// The column counts a particle file may have: [`COLUMNS`]' first 4 or all 7, each
/// optionally followed by `eps`, a softening length per particle.
pub const WIDTHS: [usize; 4] = [4, 5, 7, 8];

/// The name of column `c` (from 0) of a file of `columns` columns.
///
/// ```
/// use nbody::cli::files::column_name;
/// assert_eq!((column_name(5, 4), column_name(8, 6), column_name(8, 7)), ("eps", "vz", "eps"));
/// ```
pub fn column_name(columns: usize, c: usize) -> &'static str {
    if matches!(columns, 5 | 8) && c + 1 == columns { "eps" } else { COLUMNS.get(c).copied().unwrap_or("?") }
}

/// What a file of `columns` columns must hold, for errors.
const EXPECTED: &str =
    "4 (x,y,z,m) or 7 (x,y,z,m,vx,vy,vz), each optionally followed by eps (a softening length per particle)";

/// Reads a table from `bytes` in `format`; `name` is used in error messages.
///
/// ```
/// use nbody::cli::files::{parse_table, Format};
/// let t = parse_table(b"x,y,z,m\n0,0,0,1\n1,2,3,0.5\n", Format::Csv, "p.csv").unwrap();
/// assert_eq!((t.rows(), t.columns), (2, 4));
/// let e = parse_table(b"0,0,0,1\n1,2,oops,0.5\n", Format::Csv, "p.csv").unwrap_err();
/// assert_eq!(e.to_string(), "p.csv: line 2, column 3 (z): \"oops\" is not a number");
/// ```
pub fn parse_table(bytes: &[u8], format: Format, name: &str) -> Result<Table> {
    match format {
        Format::Npy => parse_npy(bytes, name),
        Format::Csv => parse_csv(bytes, name),
        Format::Hdf5 => bail!("{name}: HDF5 files are read from their path (read_table), not from bytes"),
    }
}

fn parse_csv(bytes: &[u8], name: &str) -> Result<Table> {
    let mut reader = csv::ReaderBuilder::new()
        .has_headers(false)
        .comment(Some(b'#'))
        .flexible(true)
        .trim(csv::Trim::All)
        .from_reader(bytes);
    let mut columns = 0;
    let mut values = Vec::new();
    let mut lines = Vec::new();
    for (k, record) in reader.records().enumerate() {
        let record = record.map_err(|e| anyhow!("{name}: {e}"))?;
        let line = record.position().map_or(k as u64 + 1, |p| p.line());
        if record.iter().all(|f| f.is_empty()) {
            continue;
        }
        if columns == 0 {
            let n = record.len();
            if WIDTHS.contains(&n) && record.iter().enumerate().all(|(c, f)| f.eq_ignore_ascii_case(column_name(n, c)))
            {
                columns = record.len();
                continue; // a header naming the columns
            }
            columns = record.len();
            if !WIDTHS.contains(&columns) {
                bail!("{name}: line {line}: {columns} columns; expected {EXPECTED}");
            }
        }
        if record.len() != columns {
            bail!("{name}: line {line}: {} columns where earlier lines have {columns}", record.len());
        }
        lines.push(line);
        for (c, field) in record.iter().enumerate() {
            let x: f64 = field.parse().map_err(|_| {
                anyhow!(
                    "{name}: line {line}, column {} ({}): {field:?} is not a number",
                    c + 1,
                    column_name(columns, c)
                )
            })?;
            values.push(x);
        }
    }
    Ok(Table { columns: columns.max(4), values, lines })
}

/// Checks the header before npyz parses it, against what fuzzing found: a shape whose
/// element count overflows npyz's product, and brackets nested deeply enough that its
/// parser backtracks for minutes (40 '[' already hang it). A plain float array's header
/// nests two deep; like NumPy, headers over 10,000 bytes are refused. Anything this does
/// not recognise is left to npyz to reject.
fn header_is_sane(bytes: &[u8], name: &str) -> Result<()> {
    let (start, len) = match bytes.get(6) {
        Some(1) if bytes.len() >= 10 => (10, u16::from_le_bytes([bytes[8], bytes[9]]) as usize),
        Some(2 | 3) if bytes.len() >= 12 => {
            (12, u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize)
        }
        _ => return Ok(()),
    };
    if len > 10_000 {
        bail!("{name}: .npy header of {len} bytes (at most 10,000 are read)");
    }
    let header = String::from_utf8_lossy(&bytes[start.min(bytes.len())..start.saturating_add(len).min(bytes.len())]);
    let mut depth = 0i32;
    for c in header.chars() {
        depth += matches!(c, '(' | '[' | '{') as i32 - matches!(c, ')' | ']' | '}') as i32;
        if depth > 4 {
            bail!("{name}: .npy header nests brackets too deeply for a plain array");
        }
    }
    let Some(at) = header.find("'shape'").or_else(|| header.find("\"shape\"")) else { return Ok(()) };
    let rest = &header[at + 7..];
    let Some(open) = rest.find(['(', '[']) else { return Ok(()) };
    let Some(close) = rest[open..].find([')', ']']) else { return Ok(()) };
    let mut total: u64 = 1;
    for dim in rest[open + 1..open + close].split(',').map(str::trim).filter(|d| !d.is_empty()) {
        let d: u64 =
            dim.trim_end_matches('L').parse().map_err(|_| anyhow!("{name}: unreadable shape entry {dim:?}"))?;
        // Zeros skipped: npyz's strides multiply the other dimensions regardless.
        total = total.checked_mul(d.max(1)).ok_or_else(|| {
            anyhow!("{name}: shape {} has more elements than can be counted", &rest[open..=open + close])
        })?;
    }
    Ok(())
}

fn parse_npy(bytes: &[u8], name: &str) -> Result<Table> {
    header_is_sane(bytes, name)?;
    let npy = npyz::NpyFile::new(bytes).map_err(|e| anyhow!("{name}: not a valid .npy file: {e}"))?;
    let shape = npy.shape().to_vec();
    let columns = match shape.as_slice() {
        [_, c @ (4 | 5 | 7 | 8)] => *c as usize,
        _ => bail!("{name}: array of shape {shape:?}; expected (N, C) with C = {EXPECTED}"),
    };
    if npy.order() != npyz::Order::C {
        bail!("{name}: Fortran-ordered array; save it with numpy.ascontiguousarray");
    }
    let rows = shape[0] as usize;
    // Never trust the header's size: the data must be there before we allocate for it.
    let need = rows
        .checked_mul(columns)
        .filter(|&v| v <= bytes.len())
        .ok_or_else(|| anyhow!("{name}: truncated: the header declares {rows} rows"))?;
    let dtype = npy.dtype();
    let values: Vec<f64> = match npy.try_data::<f64>() {
        Ok(data) => data.into_iter().collect::<std::io::Result<_>>(),
        Err(npy) => match npy.try_data::<f32>() {
            Ok(data) => data.into_iter().map(|x| x.map(f64::from)).collect::<std::io::Result<_>>(),
            Err(_) => bail!("{name}: element type {} not supported; use float64 or float32", dtype.descr()),
        },
    }
    .map_err(|e| anyhow!("{name}: truncated or unreadable data: {e}"))?;
    if values.len() != need {
        bail!("{name}: {} values for shape {shape:?}", values.len());
    }
    Ok(Table { columns, values, lines: Vec::new() })
}

/// Reads the table in `path` (format from the extension).
pub fn read_table(path: &Path) -> Result<Table> {
    let format = Format::of(path)?;
    if format == Format::Hdf5 {
        return read_hdf5(path);
    }
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .and_then(|mut f| f.read_to_end(&mut bytes))
        .with_context(|| format!("{}", path.display()))?;
    parse_table(&bytes, format, &path.display().to_string())
}

#[cfg(feature = "hdf5")]
fn read_hdf5(path: &Path) -> Result<Table> {
    let rows = crate::gadget::read(path)?;
    Ok(Table { columns: 7, values: rows.concat(), lines: Vec::new() })
}

#[cfg(not(feature = "hdf5"))]
fn read_hdf5(path: &Path) -> Result<Table> {
    bail!("{}: this build reads no HDF5 (build with --features hdf5, which needs libhdf5-dev)", path.display())
}

/// Checks a particle table (finite values, masses not negative, at least one row) and
/// returns particles and, for 7 columns, velocities.
///
/// ```
/// use nbody::cli::files::{particles, Table};
/// let t = Table { columns: 4, values: vec![0.0, 0.0, 0.0, 1.0, 1.0, 0.0, 0.0, -1.0], lines: vec![] };
/// let e = particles(&t, "p.npy").unwrap_err();
/// assert_eq!(e.to_string(), "p.npy: row 2, column 4 (m): negative mass -1");
/// ```
#[allow(clippy::type_complexity)]
pub fn particles(t: &Table, name: &str) -> Result<(Vec<Particle<f64>>, Option<Vec<Velocity<f64>>>)> {
    if t.rows() == 0 {
        bail!("{name}: no particles");
    }
    let place = |i: usize| match t.lines.get(i) {
        Some(line) => format!("line {line}"),
        None => format!("row {}", i + 1),
    };
    for (i, row) in t.values.chunks(t.columns).enumerate() {
        for (c, &x) in row.iter().enumerate() {
            if !x.is_finite() {
                bail!(
                    "{name}: {}, column {} ({}): {x} is not allowed (values must be finite)",
                    place(i),
                    c + 1,
                    column_name(t.columns, c)
                );
            }
        }
        if row[3] < 0.0 {
            bail!("{name}: {}, column 4 (m): negative mass {}", place(i), row[3]);
        }
        if matches!(t.columns, 5 | 8) && row[t.columns - 1] < 0.0 {
            bail!("{name}: {}, column {} (eps): negative softening length {}", place(i), t.columns, row[t.columns - 1]);
        }
    }
    let p = t.values.chunks(t.columns).map(|r| Particle::new(r[0], r[1], r[2], r[3])).collect();
    let v = (t.columns >= 7).then(|| t.values.chunks(t.columns).map(|r| Velocity::new(r[4], r[5], r[6])).collect());
    Ok((p, v))
}

/// The softening lengths of a checked particle table ([`particles`]) whose last column
/// is `eps`; `None` for a table without one.
///
/// ```
/// use nbody::cli::files::{softening_lengths, Table};
/// let t = Table { columns: 5, values: vec![0.0, 0.0, 0.0, 1.0, 0.01, 1.0, 0.0, 0.0, 1.0, 0.1], lines: vec![] };
/// assert_eq!(softening_lengths(&t), Some(vec![0.01, 0.1]));
/// ```
pub fn softening_lengths(t: &Table) -> Option<Vec<f64>> {
    matches!(t.columns, 5 | 8).then(|| t.values.chunks(t.columns).map(|r| r[t.columns - 1]).collect())
}

/// Writes `path` through a temporary file in the same folder, renamed when complete.
pub fn write_atomic(path: &Path, write: impl FnOnce(&mut dyn Write) -> std::io::Result<()>) -> Result<()> {
    let dir = match path.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let context = || format!("writing {}", path.display());
    let mut tmp = tempfile::Builder::new().prefix(".nbody-").suffix(".part").tempfile_in(dir).with_context(context)?;
    {
        let mut w = BufWriter::new(tmp.as_file_mut());
        write(&mut w).with_context(context)?;
        w.flush().with_context(context)?;
    }
    // tempfile creates 0600; outputs are ordinary files, readable as the umask allows.
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        tmp.as_file().set_permissions(std::fs::Permissions::from_mode(0o644)).with_context(context)?;
    }
    tmp.as_file().sync_all().with_context(context)?;
    tmp.persist(path).map_err(|e| e.error).with_context(context)?;
    Ok(())
}

/// Writes rows of `names.len()` values as .npy (f64, shape (rows, columns)) or .csv
/// (header line, shortest round-trip decimals), by the extension of `path`.
pub fn write_table(path: &Path, names: &[&str], values: &[f64]) -> Result<()> {
    let columns = names.len();
    let format = Format::of(path)?;
    write_atomic(path, |w| match format {
        Format::Npy => {
            use npyz::WriterBuilder;
            let rows = (values.len() / columns) as u64;
            let mut npy =
                npyz::WriteOptions::new().default_dtype().shape(&[rows, columns as u64]).writer(w).begin_nd()?;
            npy.extend(values.iter().copied())?;
            npy.finish()
        }
        Format::Csv => {
            writeln!(w, "{}", names.join(","))?;
            for row in values.chunks(columns) {
                let cells: Vec<String> = row.iter().map(|x| x.to_string()).collect();
                writeln!(w, "{}", cells.join(","))?;
            }
            Ok(())
        }
        Format::Hdf5 => Err(std::io::Error::other("tables are written as .npy or .csv; snapshots as HDF5")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Found by fuzzing: 40 nested '[' in a header made npyz's parser backtrack for
    /// minutes; they are refused before it sees them.
    #[test]
    fn deeply_nested_npy_headers_are_refused_at_once() {
        let header = format!("{{'descr': '<f8', 'fortran_order': False, 'shape': {}, }}", "[".repeat(40));
        let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
        bytes.extend_from_slice(&(header.len() as u16 + 1).to_le_bytes());
        bytes.extend_from_slice(header.as_bytes());
        bytes.push(b'\n');
        let start = std::time::Instant::now();
        let err = parse_table(&bytes, Format::Npy, "deep.npy").unwrap_err().to_string();
        assert!(err.contains("nests brackets too deeply"), "{err}");
        assert!(start.elapsed().as_secs() < 5);
    }
}
