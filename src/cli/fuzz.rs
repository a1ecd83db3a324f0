//! The check behind the `cli_parsers` fuzz target: every parser the command has (.npy,
//! .csv, TOML settings, the argument line) on arbitrary input. Never a panic; what is
//! accepted is what the command can use. Lives here so the committed corpus replays as
//! an ordinary test on stable (tests/fuzz_corpus.rs).

use super::files::{Format, Table, parse_table, particles};
use super::settings::RunArgs;
use super::{Cli, Command};
use arbitrary::{Arbitrary, Unstructured};
use clap::Parser;

/// Runs one fuzz input through the parser its first byte picks; panics on a broken
/// invariant (the fuzzer's finding).
///
/// ```
/// nbody::cli::fuzz::parsers(b"\x01x,y,z,m\n1,2,3,4\n");
/// nbody::cli::fuzz::parsers(b"");
/// ```
pub fn parsers(data: &[u8]) {
    let mut u = Unstructured::new(data);
    let Ok(kind) = u8::arbitrary(&mut u) else { return };
    match kind % 8 {
        0 => table(u.take_rest(), Format::Npy),
        1 => table(u.take_rest(), Format::Csv),
        2 => settings(&String::from_utf8_lossy(u.take_rest())),
        3 => Vec::<String>::arbitrary_take_rest(u).iter().for_each(|a| args(a)),
        4 => npy_with_header(&mut u).iter().for_each(|b| table(b, Format::Npy)),
        5 => csv_from_tokens(&mut u).iter().for_each(|t| table(t.as_bytes(), Format::Csv)),
        6 => toml_from_keys(&mut u).iter().for_each(|t| settings(t)),
        _ => args_from_options(&mut u).iter().for_each(|a| args(a)),
    }
}

fn table(bytes: &[u8], format: Format) {
    let Ok(t) = parse_table(bytes, format, "fuzz") else { return };
    assert!(super::files::WIDTHS.contains(&t.columns), "accepted {} columns", t.columns);
    assert_eq!(t.values.len() % t.columns, 0, "ragged table accepted");
    check_particles(&t);
}

fn check_particles(t: &Table) {
    if let Ok((p, v)) = particles(t, "fuzz") {
        assert_eq!(p.len(), t.rows());
        assert!(p.iter().all(|p| p.position().iter().all(|x| x.is_finite()) && p.m >= 0.0 && p.m.is_finite()));
        if let Some(v) = v {
            assert_eq!(v.len(), p.len());
            assert!(v.iter().all(|v| v.components().iter().all(|x| x.is_finite())));
        }
    }
}

fn settings(text: &str) {
    if let Ok(a) = RunArgs::from_toml(text) {
        resolved(a);
    }
}

fn resolved(mut a: RunArgs) {
    a.config = None; // never read files the input names
    if let Ok(s) = a.resolve(false) {
        for (name, x) in [("t-end", s.t_end), ("dt", s.dt), ("eta", s.eta), ("tolerance", s.tolerance)] {
            assert!(x.is_finite() && x > 0.0, "{name} = {x} accepted");
        }
        assert!(s.eps.is_finite() && s.eps >= 0.0, "eps = {} accepted", s.eps);
        assert!(s.snapshot_every > 0.0 && s.energy_every > 0.0);
        assert!((16..=4096).contains(&s.pixels) && s.executor.threads().is_none_or(|t| t > 0));
        assert!((0.0..1.0).contains(&s.eccentricity));
        // What is echoed reads back as the same settings.
        let back = RunArgs::from_toml(&s.to_toml()).expect("echoed settings parse");
        assert_eq!(back.t_end, Some(s.t_end));
    }
}

fn args(list: &[String]) {
    let argv = std::iter::once("nbody".to_owned()).chain(list.iter().cloned());
    match Cli::try_parse_from(argv) {
        Ok(Cli { command: Some(Command::Run(a)), .. }) | Ok(Cli { command: None, run: a }) => resolved(a),
        Ok(_) => {}
        Err(e) => {
            let _ = e.render().to_string();
        }
    }
}

fn pick<'a>(u: &mut Unstructured<'_>, from: &[&'a str]) -> arbitrary::Result<&'a str> {
    u.choose(from).copied()
}

/// A number-like token: the awkward ones more often than chance would give.
fn number(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    Ok(match u8::arbitrary(u)? % 4 {
        0 => {
            pick(u, &["nan", "NaN", "inf", "-inf", "1e309", "-0", "0x10", "1_000", "", " ", "1e-320", "+5", ".", "-"])?
                .to_owned()
        }
        1 => f64::from_bits(u64::arbitrary(u)?).to_string(),
        2 => (i64::arbitrary(u)? % 1000).to_string(),
        _ => format!("{}", f64::arbitrary(u)?),
    })
}

fn npy_with_header(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<u8>> {
    let descr = pick(u, &["<f8", "<f4", ">f8", "<i4", "|u1", "<c16", "|O", "<f2"])?;
    let fortran = bool::arbitrary(u)?;
    let dims = u8::arbitrary(u)? % 4;
    let shape: Vec<String> = (0..dims)
        .map(|_| {
            Ok(match u8::arbitrary(u)? % 3 {
                0 => (u8::arbitrary(u)? % 8).to_string(),
                1 => u64::arbitrary(u)?.to_string(),
                _ => (u16::arbitrary(u)? as u64).to_string(),
            })
        })
        .collect::<arbitrary::Result<_>>()?;
    let shape = if dims == 1 { format!("({},)", shape[0]) } else { format!("({})", shape.join(", ")) };
    let header = format!(
        "{{'descr': '{descr}', 'fortran_order': {}, 'shape': {shape}, }}",
        if fortran { "True" } else { "False" }
    );
    let mut bytes = b"\x93NUMPY\x01\x00".to_vec();
    let padded = (10 + header.len() + 1).div_ceil(64) * 64 - 10;
    bytes.extend_from_slice(&(padded as u16).to_le_bytes());
    bytes.extend_from_slice(header.as_bytes());
    bytes.resize(10 + padded - 1, b' ');
    bytes.push(b'\n');
    let body_len = u16::arbitrary(u)? as usize % 2048;
    for _ in 0..body_len {
        bytes.push(u8::arbitrary(u)?);
    }
    Ok(bytes)
}

fn csv_from_tokens(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    let mut text = String::new();
    let lines = u8::arbitrary(u)? % 12;
    for _ in 0..lines {
        match u8::arbitrary(u)? % 8 {
            0 => text += pick(u, &["x,y,z,m", "x,y,z,m,vx,vy,vz", "# comment", "", "\"1\",\"2\",\"3\",\"4\"", "a,b"])?,
            _ => {
                let cols = u8::arbitrary(u)? % 9;
                let cells: Vec<String> = (0..cols).map(|_| number(u)).collect::<arbitrary::Result<_>>()?;
                text += &cells.join(pick(u, &[",", ", ", ";", ",,"])?);
            }
        }
        text += pick(u, &["\n", "\r\n", "\n\n"])?;
    }
    Ok(text)
}

const KEYS: [&str; 22] = [
    "ic",
    "input",
    "n",
    "eccentricity",
    "seed",
    "integrator",
    "dt",
    "eta",
    "tolerance",
    "t-end",
    "eps",
    "executor",
    "precision",
    "threads",
    "devices",
    "out",
    "snapshot-every",
    "energy-every",
    "checkpoint-every",
    "pixels",
    "config",
    "steps",
];
const WORDS: [&str; 13] = [
    "plummer",
    "kepler",
    "figure8",
    "file",
    "leapfrog",
    "hermite",
    "block-hermite",
    "hermite6",
    "rk",
    "cpu",
    "cuda",
    "f32",
    "mixed",
];

fn toml_from_keys(u: &mut Unstructured<'_>) -> arbitrary::Result<String> {
    let mut text = String::new();
    for _ in 0..u8::arbitrary(u)? % 8 {
        let key = pick(u, &KEYS)?;
        let value = match u8::arbitrary(u)? % 4 {
            0 => format!("\"{}\"", pick(u, &WORDS)?),
            1 => number(u)?,
            2 => (u64::arbitrary(u)?).to_string(),
            _ => pick(u, &["true", "[1, 2]", "{ a = 1 }", "\"\"", "nan", "-inf", "1e400"])?.to_owned(),
        };
        text += &format!("{key} = {value}\n");
    }
    Ok(text)
}

fn args_from_options(u: &mut Unstructured<'_>) -> arbitrary::Result<Vec<String>> {
    let mut list = Vec::new();
    if bool::arbitrary(u)? {
        list.push(pick(u, &["run", "accel", "bench", "info", "help"])?.to_owned());
    }
    for _ in 0..u8::arbitrary(u)? % 8 {
        let key = pick(u, &KEYS)?;
        list.push(format!("--{key}"));
        if bool::arbitrary(u)? {
            let v = if bool::arbitrary(u)? { pick(u, &WORDS)?.to_owned() } else { number(u)? };
            list.push(v);
        }
    }
    Ok(list)
}
