//! Checkpoint files: everything a run needs to continue (its settings, the run loop's
//! own state and the simulation's), written atomically with a checksum; the newest two
//! are kept, and a damaged one is reported and passed over for the one before.
//!
//! Layout: `NBODYCK1`, then little-endian u64s: the settings' byte count and bytes
//! (padded to 8), the loop's word count and words, the simulation's word count and
//! words, and an FNV-1a checksum of everything before it.

use super::files::write_atomic;
use anyhow::{Context, Result, bail};
use std::path::{Path, PathBuf};

const MAGIC: &[u8; 8] = b"NBODYCK1";
/// How many checkpoints a run keeps.
const KEEP: usize = 2;

/// What a checkpoint holds.
#[derive(Clone, Debug, PartialEq)]
pub struct Saved {
    /// The run's settings, as TOML.
    pub settings: String,
    /// The run loop's state (output counters, energy rows, picture windows).
    pub run: Vec<u64>,
    /// The simulation's state (particles, time, the integrator's arrays).
    pub sim: Vec<u64>,
}

fn encode(s: &Saved) -> Vec<u8> {
    let mut b = MAGIC.to_vec();
    let text = s.settings.as_bytes();
    b.extend((text.len() as u64).to_le_bytes());
    b.extend(text);
    b.resize(b.len().next_multiple_of(8), 0);
    for words in [&s.run, &s.sim] {
        b.extend((words.len() as u64).to_le_bytes());
        b.extend(words.iter().flat_map(|w| w.to_le_bytes()));
    }
    nbody_integrators::seal(&mut b);
    b
}

fn decode(b: &[u8]) -> Result<Saved> {
    if b.len() < 16 || &b[..8] != MAGIC {
        bail!("not an nbody checkpoint");
    }
    let Some(body) = nbody_integrators::unseal(b) else {
        bail!("checksum mismatch (truncated or damaged)");
    };
    let mut at = 8;
    let mut word = || -> Result<u64> {
        let w = body.get(at..at + 8).context("ends early")?;
        at += 8;
        Ok(u64::from_le_bytes(w.try_into().expect("8 bytes")))
    };
    let len = word()? as usize;
    let _ = word;
    let text = body.get(at..at.checked_add(len).context("bad length")?).context("ends early")?;
    let settings = String::from_utf8(text.to_vec()).context("settings are not UTF-8")?;
    at = (at + len).next_multiple_of(8);
    let words = |at: &mut usize| -> Result<Vec<u64>> {
        let n = u64::from_le_bytes(body.get(*at..*at + 8).context("ends early")?.try_into().expect("8 bytes")) as usize;
        *at += 8;
        let bytes = body.get(*at..*at + n.checked_mul(8).context("bad length")?).context("ends early")?;
        *at += 8 * n;
        Ok(bytes.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes"))).collect())
    };
    let run = words(&mut at)?;
    let sim = words(&mut at)?;
    Ok(Saved { settings, run, sim })
}

/// The checkpoint files in `dir`, newest (most steps) first.
fn files(dir: &Path) -> Result<Vec<PathBuf>> {
    let mut found: Vec<PathBuf> = std::fs::read_dir(dir)
        .with_context(|| format!("{}", dir.display()))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| {
            p.file_name().and_then(|n| n.to_str()).is_some_and(|n| n.starts_with("checkpoint-") && n.ends_with(".nbck"))
        })
        .collect();
    found.sort();
    found.reverse();
    Ok(found)
}

/// Writes a checkpoint after `steps` steps into `dir` and removes all but the newest two.
pub fn write(dir: &Path, steps: u64, saved: &Saved) -> Result<()> {
    let path = dir.join(format!("checkpoint-{steps:015}.nbck"));
    let bytes = encode(saved);
    write_atomic(&path, |w| w.write_all(&bytes))?;
    for old in files(dir)?.into_iter().skip(KEEP) {
        let _ = std::fs::remove_file(old);
    }
    Ok(())
}

/// The newest valid checkpoint in `dir`; a damaged one is reported in one line and the
/// one before it used.
pub fn newest(dir: &Path) -> Result<(PathBuf, Saved)> {
    let found = files(dir)?;
    if found.is_empty() {
        bail!("{}: no checkpoint to resume from (a run writes them at every --checkpoint-every)", dir.display());
    }
    for path in found {
        let read = std::fs::read(&path).map_err(anyhow::Error::from).and_then(|b| decode(&b));
        match read {
            Ok(saved) => return Ok((path, saved)),
            Err(e) => eprintln!("warning: {}: {e}; using the one before it", path.display()),
        }
    }
    bail!("{}: every checkpoint is damaged", dir.display())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_damage() {
        let s = Saved { settings: "n = 3\n".into(), run: vec![1, 2, 3], sim: vec![u64::MAX, 0] };
        let b = encode(&s);
        assert_eq!(decode(&b).unwrap(), s);
        for cut in [b.len() - 1, b.len() / 2, 9] {
            assert!(decode(&b[..cut]).is_err(), "cut at {cut}");
        }
        let mut flipped = b.clone();
        flipped[20] ^= 1;
        assert!(decode(&flipped).unwrap_err().to_string().contains("checksum"));
    }
}
