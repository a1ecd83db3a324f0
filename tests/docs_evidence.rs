//! Every log a page of the documentation cites as evidence exists: each path under
//! benches/results named in README.md, ARCHITECTURE.md and docs/ (a `*` in the last part
//! matches any run of characters, as the pages write a family of logs). And every
//! paragraph that states a measured figure names its log and the commit that made it,
//! or the test that asserts it.

use std::collections::HashSet;
use std::path::{Path, PathBuf};

use regex::Regex;

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
    std::fs::read_dir(dir).into_iter().flatten().flatten().any(|e| glob(&e.file_name().to_string_lossy(), &name))
}

/// Whether `name` matches `pattern`, whose `*` stands for any run of characters.
fn glob(name: &str, pattern: &str) -> bool {
    let parts: Vec<&str> = pattern.split('*').collect();
    let mut at = 0;
    name.starts_with(parts[0])
        && name.ends_with(parts[parts.len() - 1])
        && parts.iter().all(|p| match name[at..].find(p) {
            Some(i) => {
                at += i + p.len();
                true
            }
            None => false,
        })
}

/// README.md, ARCHITECTURE.md and the pages of docs/.
fn pages(root: &Path) -> Vec<PathBuf> {
    let mut pages: Vec<PathBuf> = vec![root.join("README.md"), root.join("ARCHITECTURE.md")];
    pages.extend(
        std::fs::read_dir(root.join("docs"))
            .expect("docs/")
            .flatten()
            .map(|e| e.path())
            .filter(|p| p.extension().is_some_and(|x| x == "md")),
    );
    pages.sort();
    pages
}

#[test]
fn every_cited_log_exists() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let pages = pages(root);
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

/// A page's blocks of text with the line each starts on: paragraphs (code fences and
/// headings left out), each table or list joined to the paragraph that introduces it, and
/// the paragraph right after a table joined to it too (it speaks of the table's figures)
/// unless it introduces something of its own (ends with a colon).
fn blocks(text: &str) -> Vec<(usize, String)> {
    let mut raw: Vec<(usize, Vec<&str>)> = Vec::new();
    let (mut current, mut fenced) = (Vec::new(), false);
    let mut start = 0;
    for (i, line) in text.lines().enumerate() {
        let fence = line.trim_start().starts_with("```");
        if fence {
            fenced = !fenced;
        }
        if fence || fenced || line.trim().is_empty() || line.starts_with('#') {
            if !current.is_empty() {
                raw.push((start, std::mem::take(&mut current)));
            }
            continue;
        }
        if current.is_empty() {
            start = i + 1;
        }
        current.push(line);
    }
    if !current.is_empty() {
        raw.push((start, current));
    }
    let mut merged: Vec<(usize, String)> = Vec::new();
    let mut after_table = false;
    for (start, lines) in raw {
        let first = lines[0].trim_start();
        let table = first.starts_with('|');
        let list = first.starts_with("- ") || first.starts_with("* ") || first.starts_with("1. ");
        let introduces = lines.last().is_some_and(|l| l.trim_end().ends_with(':'));
        let joined = lines.join(" ");
        match merged.last_mut() {
            Some(last) if table || list || (after_table && !introduces) => {
                last.1.push(' ');
                last.1.push_str(&joined);
            }
            _ => merged.push((start, joined)),
        }
        after_table = table;
    }
    merged
}

/// What the evidence check looks for in a block of text.
struct Evidence {
    figure: Regex,
    commit: Regex,
    log_name: Regex,
    logs: HashSet<String>,
}

impl Evidence {
    fn new(root: &Path) -> Self {
        let mut files = Vec::new();
        walk_files(&root.join("benches/results"), &mut files);
        let logs = files.iter().filter_map(|p| p.file_name()).map(|n| n.to_string_lossy().into_owned()).collect();
        Evidence {
            // A measured figure: a value in scientific notation with a decimal point (bounds
            // are written 2e-6), a time, a ratio, a percentage with decimals.
            figure: Regex::new(
                r"\d\.\d+e[-+]?\d+|\d+\.\d+ ?(ms|s|µs|us|ns)\b|\d+(\.\d+)?x (faster|slower|fewer|more|over|the)|\d+\.\d+%",
            )
            .expect("a pattern"),
            // A commit: 7 to 40 hex digits with a letter, or digits only after "commit".
            commit: Regex::new(r"\b[0-9a-f]*[a-f][0-9a-f]*\b|(commits?|build of|at) [0-9]{7,40}\b").expect("a pattern"),
            log_name: Regex::new(r"[\w.+-]+\.(log|json|jsonl|txt|csv)\b").expect("a pattern"),
            logs,
        }
    }

    /// Why `text` (one block) lacks evidence for its figures, if it does.
    fn missing(&self, text: &str) -> Option<&'static str> {
        if !self.figure.is_match(text) || text.contains("asserted by `") {
            return None;
        }
        let log =
            text.contains("benches/results/") || self.log_name.find_iter(text).any(|m| self.logs.contains(m.as_str()));
        let commit = self.commit.find_iter(text).any(|m| {
            let s = m.as_str();
            s.contains(' ') || (7..=40).contains(&s.len()) && s.chars().any(|c| c.is_ascii_digit())
        });
        match (log, commit) {
            (true, true) => None,
            (false, true) => Some("no log"),
            (true, false) => Some("no commit"),
            (false, false) => Some("no log and no commit"),
        }
    }
}

#[test]
fn every_figure_names_its_log_and_commit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let evidence = Evidence::new(root);
    let (mut figures, mut missing) = (0, Vec::new());
    for page in pages(root) {
        let text = std::fs::read_to_string(&page).expect("a page");
        for (line, block) in blocks(&text) {
            if evidence.figure.is_match(&block) {
                figures += 1;
            }
            if let Some(why) = evidence.missing(&block) {
                let name = page.strip_prefix(root).unwrap_or(&page).display().to_string();
                missing.push(format!("{name}:{line}: {why}: {}", block.chars().take(100).collect::<String>()));
            }
        }
    }
    assert!(figures > 30, "found only {figures} paragraphs with figures: is the pattern still right?");
    assert!(missing.is_empty(), "paragraphs whose figures name no evidence:\n{}", missing.join("\n"));
}

#[test]
fn the_evidence_check_tells_cited_from_bare_figures() {
    let evidence = Evidence::new(Path::new(env!("CARGO_MANIFEST_DIR")));
    assert_eq!(evidence.missing("It ran at 1.45e12 interactions/s."), Some("no log and no commit"));
    assert_eq!(evidence.missing("1.45e12 (benches/results/x.log)"), Some("no commit"));
    assert_eq!(evidence.missing("1.45e12 at commit 6c0f8d91"), Some("no log"));
    assert_eq!(evidence.missing("1.45e12 (benches/results/x.log, commit 6c0f8d91)"), None);
    assert_eq!(evidence.missing("2.1x faster (commits 67871832; benches/results/y/)"), None);
    assert_eq!(evidence.missing("below 2e-6, as asserted by `clustered`"), None);
    assert_eq!(evidence.missing("below 2e-6 and 4 ranks"), None);
    let text = "Intro:\n\n| a | b |\n|---|---|\n| 1.5e3 | 2 |\n\nAfter the table 2.5 ms.\n\nNext table:\n\n| c |\n";
    let b = blocks(text);
    assert_eq!(b.len(), 2, "{b:?}");
    assert!(b[0].1.starts_with("Intro:") && b[0].1.contains("After the table"));
}

/// Every citation of every page (README.md, ARCHITECTURE.md, CONTRIBUTING.md, docs/ and
/// the folder READMEs under benches/results), as patterns, plus the bare file names the
/// pages mention (a log named again beside the one cited in full).
fn citations(root: &Path) -> (Vec<String>, HashSet<String>) {
    let mut pages = pages(root);
    pages.push(root.join("CONTRIBUTING.md"));
    let mut readmes = Vec::new();
    walk_files(&root.join("benches/results"), &mut readmes);
    pages.extend(readmes.into_iter().filter(|p| p.ends_with("README.md")));
    let name = Regex::new(r"[\w.+-]+\.(log|json|jsonl|txt|csv|png|md)\b").expect("a pattern");
    let (mut patterns, mut names) = (Vec::new(), HashSet::new());
    for page in pages {
        let text = std::fs::read_to_string(&page).expect("a page");
        patterns.extend(cited(&text));
        names.extend(name.find_iter(&text).map(|m| m.as_str().to_string()));
    }
    (patterns, names)
}

fn walk_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            walk_files(&path, out);
        } else {
            out.push(path);
        }
    }
}

/// Whether the file at `rel` (relative to the root) is named by `pattern`: the file
/// itself, a folder above it, or a `*` / `{a,b}` pattern over its name.
fn names_file(pattern: &str, rel: &str) -> bool {
    if let (Some(open), Some(close)) = (pattern.find('{'), pattern.find('}')) {
        return pattern[open + 1..close]
            .split(',')
            .any(|alt| names_file(&format!("{}{alt}{}", &pattern[..open], &pattern[close + 1..]), rel));
    }
    if pattern == rel || (pattern.ends_with('/') && pattern != "benches/results/" && rel.starts_with(pattern)) {
        return true;
    }
    let Some((dir, name)) = rel.rsplit_once('/') else { return false };
    let Some((pdir, pname)) = pattern.rsplit_once('/') else { return false };
    pdir == dir && pname.contains('*') && glob(name, pname)
}

#[test]
fn results_hold_only_cited_logs_named_by_commit() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let (patterns, names) = citations(root);
    let commit = Regex::new(r"(^|[^0-9a-f])[0-9a-f]{7,40}([^0-9a-f]|$)").expect("a pattern");
    let kinds = ["log", "txt", "json", "jsonl", "csv", "png", "md"];
    let mut files = Vec::new();
    walk_files(&root.join("benches/results"), &mut files);
    assert!(files.len() > 40, "found only {} files under benches/results", files.len());
    let mut wrong = Vec::new();
    for file in files {
        let rel = file.strip_prefix(root).expect("under the root").to_string_lossy().replace('\\', "/");
        let name = file.file_name().expect("a name").to_string_lossy().into_owned();
        if !file.extension().is_some_and(|x| kinds.contains(&x.to_string_lossy().as_ref())) {
            wrong.push(format!("{rel}: not a log, table or picture"));
        }
        if name == "README.md" {
            continue;
        }
        // A short hash of digits only is taken at eight digits (as git abbreviates).
        let with_hex = commit.find_iter(&rel).any(|m| {
            let hex = m.as_str().trim_matches(|c: char| !c.is_ascii_hexdigit());
            hex.chars().any(|c| c.is_ascii_alphabetic()) || hex.len() == 8
        });
        if !with_hex {
            wrong.push(format!("{rel}: no commit in its path"));
        }
        if !names.contains(&name) && !patterns.iter().any(|p| names_file(p, &rel)) {
            wrong.push(format!("{rel}: cited by no page"));
        }
    }
    assert!(wrong.is_empty(), "benches/results holds what it should not:\n{}", wrong.join("\n"));
}

#[test]
fn the_results_matcher_names_files() {
    assert!(names_file("benches/results/a/", "benches/results/a/x-1234abc.log"));
    assert!(names_file("benches/results/a/run-*.log", "benches/results/a/run-1-1234abc.log"));
    assert!(names_file("benches/results/a/{x,y}.log", "benches/results/a/y.log"));
    assert!(!names_file("benches/results/", "benches/results/a/x.log"));
    assert!(!names_file("benches/results/a/run-*.log", "benches/results/b/run-1.log"));
}
