//! Every log a page of the documentation cites as evidence exists: each path under
//! benches/results named in README.md, ARCHITECTURE.md and docs/ (a `*` in the last part
//! matches any run of characters, as the pages write a family of logs).

use std::path::{Path, PathBuf};

/// The cited paths of one page: `benches/results/` up to the first character that
/// cannot be part of a path, trailing punctuation dropped.
fn cited(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("benches/results/") {
        let tail = &rest[at..];
        let end = tail.find(|c: char| !(c.is_ascii_alphanumeric() || "_./*-{},".contains(c))).unwrap_or(tail.len());
        found.push(tail[..end].trim_end_matches(['.', ',', ')']).to_string());
        rest = &tail[end..];
    }
    found
}

/// Whether `pattern` (a path whose last part may hold `*` and `{a,b}`) names an
/// existing file or folder.
fn exists(root: &Path, pattern: &str) -> bool {
    if let (Some(open), Some(close)) = (pattern.find('{'), pattern.find('}')) {
        return pattern[open + 1..close]
            .split(',')
            .all(|alt| exists(root, &format!("{}{alt}{}", &pattern[..open], &pattern[close + 1..])));
    }
    let path = root.join(pattern);
    if !pattern.contains('*') {
        return path.exists();
    }
    let (dir, name) = (path.parent().expect("a folder"), path.file_name().expect("a name").to_string_lossy());
    let parts: Vec<&str> = name.split('*').collect();
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| {
        let n = e.file_name().to_string_lossy().into_owned();
        let mut at = 0;
        n.starts_with(parts[0])
            && n.ends_with(parts[parts.len() - 1])
            && parts.iter().all(|p| match n[at..].find(p) {
                Some(i) => {
                    at += i + p.len();
                    true
                }
                None => false,
            })
    })
}

#[test]
fn every_cited_log_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut pages: Vec<PathBuf> = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .expect("docs/")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    let (mut checked, mut missing) = (0, Vec::new());
    for page in &pages {
        let text = std::fs::read_to_string(page).expect("a page");
        for c in cited(&text) {
            checked += 1;
            if !exists(root, &c) {
                missing.push(format!("{}: {c}", page.strip_prefix(root).unwrap_or(page).display()));
            }
        }
    }
    assert!(checked > 50, "found only {checked} citations: is the pattern still right?");
    assert!(missing.is_empty(), "cited logs that do not exist:\n{}", missing.join("\n"));
}

#[test]
fn the_matcher_finds_and_misses() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    assert_eq!(
        cited("see benches/results/a-b.log, and benches/results/x/*.json)."),
        ["benches/results/a-b.log", "benches/results/x/*.json"]
    );
    assert!(exists(root, "Cargo.*"));
    assert!(exists(root, "{Cargo.toml,README.md}"));
    assert!(!exists(root, "Cargo.*.nothing"));
    assert!(!exists(root, "benches/results/no-such-log.log"));
}
