//! `lockstep history import`: the `--json` results of earlier runs
//! (test-results.json, bench-results.json, integrate-loop.json) turned into
//! history runs, so a history can start from files CI already kept.
//!
//! Every file is read and recognised before anything is written: one file
//! that is not such a document fails the import and writes nothing. A run's
//! identity is the hash of its file's content, so importing a file twice
//! (or a copy of it) finds the run already there and writes nothing.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use sha2::{Digest, Sha256};

use crate::collect::{self, Provenance};
use crate::record::{Kind, RunRecord, SCHEMA};
use crate::store::{self, MAX_RUN_BYTES};

/// What the import knows beyond the files.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// The commit the runs were made from (`--commit`), checked.
    pub commit: Option<String>,
    /// The toolchain identity (`--toolchain`); a test result's own
    /// `compiler_identity` otherwise.
    pub toolchain: Option<String>,
    /// The directory whose repository resolves `commit` and gives the pins.
    pub repo_dir: PathBuf,
    /// Pin files (relative to the repository's top) read at `commit`.
    pub pins: Vec<lockstep_pin::Pin>,
}

/// What happened to one file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Written as this history file.
    Imported(PathBuf),
    /// The history already holds the run (this file).
    Already(PathBuf),
}

/// One file, read and recognised.
#[derive(Debug)]
pub struct Prepared {
    pub path: PathBuf,
    pub run: RunRecord,
}

/// Checks `history import`'s flags before anything is read: the history
/// directory `--to` (a usage error when it is a file) and a `--toolchain`
/// that says nothing.
pub fn check_flags(to: &Path, toolchain: Option<&str>) -> Result<(), Error> {
    collect::check_dir("--to", to, &[])?;
    if toolchain.is_some_and(|t| t.trim().is_empty()) {
        return Err(Error::usage("--toolchain is empty")
            .hint("give the toolchain's identity, or leave --toolchain out"));
    }
    Ok(())
}

/// What kind of run wrote `doc`: test-results.json has `tests` and
/// `summary`, a lockstep-speed document (`scripts/bench-all --json`)
/// `document` and `rows`, bench-results.json `rows`, integrate-loop.json
/// `end`.
pub fn recognise(doc: &serde_json::Value) -> Option<Kind> {
    let has = |key: &str| doc.get(key).is_some();
    if !doc.is_object() {
        return None;
    }
    if has("tests") && has("summary") {
        Some(Kind::Test)
    } else if crate::speed::is_speed_document(doc) {
        Some(Kind::Speed)
    } else if doc.get("rows").is_some_and(serde_json::Value::is_array) {
        Some(Kind::Bench)
    } else if doc.get("end").is_some_and(serde_json::Value::is_object) {
        Some(Kind::Integrate)
    } else {
        None
    }
}

/// Reads and recognises every file; the first that is not a results
/// document is a usage error naming it.
pub fn prepare(files: &[PathBuf], opts: &Options) -> Result<Vec<Prepared>, Error> {
    if files.is_empty() {
        return Err(Error::usage("no results files to import").hint(
            "name the --json files of earlier runs: lockstep history import results.json --to DIR",
        ));
    }
    let commit = match &opts.commit {
        Some(c) => Some(check_commit(c)?),
        None => None,
    };
    let provenance = match &commit {
        Some(c) => {
            let mut found = collect::provenance(&opts.repo_dir, c, &opts.pins);
            if found.source.commit.is_none() {
                // Not in this repository: keep the commit as given.
                found = Provenance::default();
                found.source.commit = Some(c.clone());
            }
            found
        }
        None => Provenance::default(),
    };
    let mut prepared = Vec::with_capacity(files.len());
    for path in files {
        let (bytes, modified) = read(path)?;
        let doc: serde_json::Value = serde_json::from_slice(&bytes).map_err(|e| {
            Error::usage(format!("{} is not JSON", path.display()))
                .cause(e.to_string())
                .hint("import the files `--json FILE` wrote (test, bench, integrate loop)")
        })?;
        let Some(kind) = recognise(&doc) else {
            let hint = if doc.get("kind").is_some() && doc.get("results").is_some() {
                "it looks like a history run already: copy it into the history instead (cp -n)"
            } else {
                "import the files `--json FILE` wrote: test-results.json (\"tests\" and \"summary\"), bench-results.json (\"rows\"), integrate-loop.json (\"end\"), scripts/bench-all's (\"document\": \"lockstep-speed\")"
            };
            return Err(Error::usage(format!(
                "{} is not the results of lockstep test, bench or integrate loop",
                path.display()
            ))
            .hint(hint));
        };
        let toolchain = opts.toolchain.clone().or_else(|| match kind {
            Kind::Test => doc
                .pointer("/summary/compiler_identity")
                .and_then(|v| v.as_str())
                .filter(|s| !s.is_empty())
                .map(str::to_string),
            _ => None,
        });
        let at = collect::rfc3339(modified);
        prepared.push(Prepared {
            path: path.clone(),
            run: RunRecord {
                schema: SCHEMA,
                id: content_id(&bytes),
                kind,
                started: at.clone(),
                finished: at,
                source: provenance.source.clone(),
                pins: provenance.pins.clone(),
                toolchain,
                machine: collect::unknown_machine(),
                results: doc,
            },
        });
    }
    Ok(prepared)
}

/// Writes each prepared run into `dir` unless the history holds it.
pub fn write(dir: &Path, prepared: &[Prepared]) -> Result<Vec<Outcome>, Error> {
    let mut outcomes = Vec::with_capacity(prepared.len());
    for p in prepared {
        let existing = dir.join(store::file_name(&p.run));
        if existing.exists() {
            outcomes.push(Outcome::Already(existing));
            continue;
        }
        outcomes.push(Outcome::Imported(store::write(dir, &p.run)?));
    }
    Ok(outcomes)
}

/// The identity of an imported run: `import-` and the start of its file's
/// sha256.
pub fn content_id(bytes: &[u8]) -> String {
    let digest = hex::encode(Sha256::digest(bytes));
    format!("import-{}", &digest[..20])
}

/// A `--commit`: 4 to 64 hex digits, lowercased.
fn check_commit(text: &str) -> Result<String, Error> {
    let t = text.trim();
    if (4..=64).contains(&t.len()) && t.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Ok(t.to_ascii_lowercase());
    }
    Err(Error::usage(format!(
        "--commit `{}` is not a commit id",
        text.escape_debug()
    ))
    .hint("give the hex commit the results were made from (a full id when the repository is not here)"))
}

/// The file's bytes and its modification time.
fn read(path: &Path) -> Result<(Vec<u8>, jiff::Timestamp), Error> {
    let unreadable = |e: std::io::Error| {
        Error::usage(format!("cannot read {}", path.display())).cause(e.to_string())
    };
    let meta = std::fs::metadata(path).map_err(unreadable)?;
    if !meta.is_file() {
        return Err(Error::usage(format!("{} is not a file", path.display()))
            .hint("name the --json files of earlier runs"));
    }
    if meta.len() > MAX_RUN_BYTES {
        return Err(Error::usage(format!(
            "{} has {} bytes, more than a run may hold ({MAX_RUN_BYTES})",
            path.display(),
            meta.len()
        )));
    }
    let modified = meta
        .modified()
        .ok()
        .and_then(|t| jiff::Timestamp::try_from(t).ok())
        .unwrap_or_else(jiff::Timestamp::now);
    let bytes = std::fs::read(path).map_err(unreadable)?;
    Ok((bytes, modified))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn documents_are_recognised_by_their_keys() {
        assert_eq!(
            recognise(&json!({"schema": 1, "tests": [], "summary": {}})),
            Some(Kind::Test)
        );
        assert_eq!(recognise(&json!({"rows": []})), Some(Kind::Bench));
        assert_eq!(
            recognise(&json!({"end": {"result": "at_head"}})),
            Some(Kind::Integrate)
        );
        assert_eq!(recognise(&json!({"tests": []})), None);
        assert_eq!(recognise(&json!([1, 2])), None);
        assert_eq!(recognise(&json!({"rows": 3})), None);
    }

    #[test]
    fn the_id_follows_the_content_and_importing_twice_writes_once() {
        assert_eq!(content_id(b"a"), content_id(b"a"));
        assert_ne!(content_id(b"a"), content_id(b"b"));
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("bench.json");
        std::fs::write(&file, r#"{"schema": 1, "rows": []}"#).unwrap();
        let opts = Options {
            commit: Some("ABCDEF12".into()),
            repo_dir: tmp.path().to_path_buf(),
            ..Options::default()
        };
        let prepared = prepare(std::slice::from_ref(&file), &opts).unwrap();
        assert_eq!(prepared[0].run.source.commit.as_deref(), Some("abcdef12"));
        let history = tmp.path().join("history");
        let first = write(&history, &prepared).unwrap();
        assert!(matches!(first[0], Outcome::Imported(_)));
        let again = prepare(&[file], &opts).unwrap();
        assert!(matches!(
            write(&history, &again).unwrap()[0],
            Outcome::Already(_)
        ));
        assert_eq!(store::load(&history).unwrap().runs.len(), 1);
    }

    #[test]
    fn a_bad_commit_or_file_is_a_usage_error() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("x.json");
        std::fs::write(&file, "{}").unwrap();
        let opts = Options {
            commit: Some("main".into()),
            ..Options::default()
        };
        assert_eq!(
            prepare(std::slice::from_ref(&file), &opts)
                .unwrap_err()
                .exit_code(),
            2
        );
        let err = prepare(&[file], &Options::default()).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(err.message.contains("x.json"), "{}", err.message);
    }
}
