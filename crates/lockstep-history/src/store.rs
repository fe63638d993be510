//! The history directory: writing a run (never replacing a file) and
//! reading every run back (naming each file that could not be read).

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use lockstep_core::Error;

use crate::record::{RunRecord, SCHEMA};
use crate::trimmed::Trimmed;

/// The largest run file read back (a bench run with every sample of 1,000
/// kernels is a few MB).
pub const MAX_RUN_BYTES: u64 = 64 << 20;

/// A file of the directory that was not read, and why.
#[derive(Debug, Clone, PartialEq, Eq, serde::Serialize)]
pub struct Skipped {
    /// In JSON, a name that is not UTF-8 is written lossily (U+FFFD) rather
    /// than failing the whole document.
    #[serde(serialize_with = "lossy_path")]
    pub path: PathBuf,
    pub reason: String,
}

fn lossy_path<S: serde::Serializer>(path: &Path, s: S) -> Result<S::Ok, S::Error> {
    s.serialize_str(&path.to_string_lossy())
}

/// What [`load`] found.
#[derive(Debug, Default)]
pub struct Loaded {
    /// Every run, oldest first (by `started`, then id).
    pub runs: Vec<RunRecord>,
    pub skipped: Vec<Skipped>,
}

impl Loaded {
    /// Every skipped file as a warning (the runs that were read still count).
    pub fn warn_skipped(&self, sink: &dyn lockstep_core::events::Sink) {
        for s in &self.skipped {
            sink.warn(format!(
                "skipped {}: {}",
                lockstep_core::error::printable_line(&s.path.to_string_lossy()),
                s.reason
            ));
        }
    }
}

/// The file name of `run`: its start time and identity, so a listing sorts
/// by time and two machines never pick the same name.
pub fn file_name(run: &RunRecord) -> String {
    let safe: String = run
        .id
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(120)
        .collect();
    format!("{}-{}.json", run.kind.name(), safe)
}

/// Writes `run` into `dir` (created if missing) as a new file; an existing
/// file of that name is never replaced (the same run recorded twice: the
/// first stays). Returns the file's path.
pub fn write(dir: &Path, run: &RunRecord) -> Result<PathBuf, Error> {
    fs_err::create_dir_all(dir).map_err(|e| {
        Error::failed(format!(
            "cannot create the history directory {}",
            dir.display()
        ))
        .cause(e.to_string())
    })?;
    let path = dir.join(file_name(run));
    let bytes = serde_json::to_vec_pretty(run)
        .map_err(|e| Error::failed("cannot encode the run").cause(e.to_string()))?;
    let tmp = tempfile_in(dir, &bytes)?;
    // A hard link fails when the name exists: nothing is ever replaced.
    let linked = std::fs::hard_link(&tmp, &path);
    let _ = std::fs::remove_file(&tmp);
    match linked {
        Ok(()) => Ok(path),
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => Err(Error::failed(format!(
            "the history already holds run {} ({})",
            run.id,
            path.display()
        ))
        .hint("a run is recorded once; its file is never replaced")),
        Err(e) => {
            Err(Error::failed(format!("cannot write {}", path.display())).cause(e.to_string()))
        }
    }
}

/// `bytes` in a new hidden file of `dir` (readers skip dot files).
fn tempfile_in(dir: &Path, bytes: &[u8]) -> Result<PathBuf, Error> {
    use std::io::Write;
    for attempt in 0..100u32 {
        let path = dir.join(format!(".run-{}-{attempt}.tmp", std::process::id()));
        match std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)
        {
            Ok(mut file) => {
                let written = file.write_all(bytes).and_then(|_| file.sync_all());
                if let Err(e) = written {
                    let _ = std::fs::remove_file(&path);
                    return Err(Error::failed(format!("cannot write {}", path.display()))
                        .cause(e.to_string()));
                }
                return Ok(path);
            }
            Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
            Err(e) => {
                return Err(Error::failed(format!("cannot write in {}", dir.display()))
                    .cause(e.to_string()))
            }
        }
    }
    Err(Error::failed(format!(
        "cannot create a temporary file in {}",
        dir.display()
    )))
}

/// Whether [`load`] of `dir` would read `file` (existing or not yet): a
/// `*.json`, not hidden, right in `dir`. An output there would replace a
/// run, or be read as one.
pub fn would_read(dir: &Path, file: &Path) -> bool {
    let name = lockstep_core::fs::file_name(file);
    if !is_run_name(&name) {
        return false;
    }
    let parent = match file.parent() {
        Some(p) if !p.as_os_str().is_empty() => p,
        _ => Path::new("."),
    };
    match (parent.canonicalize(), dir.canonicalize()) {
        (Ok(a), Ok(b)) => a == b,
        _ => false,
    }
}

/// Refuses (a usage error) an output of `outputs` (flag, path) that is,
/// or would be read as, a run of one of the history directories `dirs`
/// (what names it, directory) the command reads: [`would_read`].
pub fn check_outputs(dirs: &[(String, PathBuf)], outputs: &[(&str, &Path)]) -> Result<(), Error> {
    for (what, dir) in dirs {
        if let Some((flag, out)) = outputs.iter().find(|(_, out)| would_read(dir, out)) {
            return Err(Error::usage(format!(
                "{flag} {} is a run file of the history {what} {}",
                out.display(),
                dir.display()
            ))
            .hint(format!(
                "write {flag} outside {}: history runs are never overwritten, and a file there is read as a run",
                dir.display()
            )));
        }
    }
    Ok(())
}

fn is_run_name(name: &str) -> bool {
    name.ends_with(".json") && !name.starts_with('.')
}

/// Every run of `dir` (`*.json` files, not hidden), oldest first; files
/// that are not runs lockstep can read are skipped and named. Test rows
/// keep only the keys the history's readers read ([`crate::trimmed`]).
pub fn load(dir: &Path) -> Result<Loaded, Error> {
    let entries = fs_err::read_dir(dir).map_err(|e| {
        Error::usage(format!(
            "cannot read the history directory {}",
            dir.display()
        ))
        .cause(e.to_string())
        .hint("name a directory that `--record DIR` or [history] dir wrote")
    })?;
    let mut paths: Vec<PathBuf> = entries
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let name = lockstep_core::fs::file_name(p);
            is_run_name(&name)
        })
        .collect();
    paths.sort();
    let mut loaded = Loaded::default();
    let mut seen = BTreeSet::new();
    // Parsing dominates (a bench run holds every sample): every core reads.
    let read = lockstep_core::pool::map_all(
        "history reader",
        lockstep_core::pool::cpus(),
        paths.len(),
        |i| read_run(&paths[i]),
    )?;
    for (path, result) in paths.into_iter().zip(read) {
        match result {
            Ok(run) => {
                if seen.insert(run.id.clone()) {
                    loaded.runs.push(run);
                } else {
                    loaded.skipped.push(Skipped {
                        path,
                        reason: format!("run {} is already in the history (a copy)", run.id),
                    });
                }
            }
            Err(reason) => loaded.skipped.push(Skipped { path, reason }),
        }
    }
    loaded.runs.sort_by(|a, b| {
        (a.started.as_str(), a.id.as_str()).cmp(&(b.started.as_str(), b.id.as_str()))
    });
    Ok(loaded)
}

fn read_run(path: &Path) -> Result<RunRecord, String> {
    let meta = std::fs::metadata(path).map_err(|e| e.to_string())?;
    if !meta.is_file() {
        return Err("not a regular file".into());
    }
    if meta.len() > MAX_RUN_BYTES {
        return Err(format!(
            "{} bytes, more than a run holds ({MAX_RUN_BYTES})",
            meta.len()
        ));
    }
    // One buffer per reader thread: a fresh allocation per file (most are
    // larger than the allocator's mmap threshold) costs a map, an unmap and
    // page faults each time.
    thread_local! {
        static BUFFER: std::cell::RefCell<Vec<u8>> = const { std::cell::RefCell::new(Vec::new()) };
    }
    let parsed = BUFFER.with(|buffer| {
        let mut bytes = buffer.borrow_mut();
        bytes.clear();
        std::fs::File::open(path)
            .and_then(|mut file| std::io::Read::read_to_end(&mut file, &mut bytes))
            .map_err(|e| e.to_string())?;
        // The common case in one pass; the slow path only says why not.
        match serde_json::from_slice::<RunRecord<Trimmed>>(&bytes) {
            Ok(run) if run.schema <= SCHEMA => Ok(Ok(run.map_results(|t| t.0))),
            _ => Ok(Err(bytes.clone())),
        }
    });
    let bytes = match parsed {
        Ok(Ok(run)) => return Ok(run),
        Ok(Err(bytes)) => bytes,
        Err(e) => return Err(e),
    };
    let value: serde_json::Value =
        serde_json::from_slice(&bytes).map_err(|e| format!("not JSON ({e})"))?;
    let schema = value.get("schema").and_then(|s| s.as_u64());
    match schema {
        None => return Err("not a lockstep history run (no \"schema\")".into()),
        Some(s) if s > u64::from(SCHEMA) => {
            return Err(format!(
                "written by a newer lockstep (schema {s}; this one reads {SCHEMA})"
            ))
        }
        Some(_) => {}
    }
    serde_json::from_value::<RunRecord>(value)
        .map_err(|e| format!("not a lockstep history run ({e})"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::{Kind, Machine, Source};
    use proptest::prelude::*;

    fn run(id: &str, kind: Kind) -> RunRecord {
        RunRecord {
            schema: SCHEMA,
            id: id.into(),
            kind,
            started: "2025-01-02T03:04:05.000Z".into(),
            finished: "2025-01-02T03:04:06.000Z".into(),
            source: Source::default(),
            pins: Default::default(),
            toolchain: None,
            machine: Machine::default(),
            results: serde_json::json!({"rows": []}),
        }
    }

    #[test]
    fn file_names_are_the_kind_and_a_plain_id() {
        assert_eq!(
            file_name(&run("20250102T030405Z-0a1b2c3d", Kind::Test)),
            "test-20250102T030405Z-0a1b2c3d.json"
        );
        assert_eq!(
            file_name(&run("a/../b c", Kind::Integrate)),
            "integrate-a_.._b_c.json"
        );
        let long = "x".repeat(500);
        assert_eq!(
            file_name(&run(&long, Kind::Bench)).len(),
            "bench-".len() + 120 + 5
        );
    }

    #[test]
    fn a_run_is_written_once_and_read_back() {
        let tmp = tempfile::tempdir().unwrap();
        let dir = tmp.path().join("h");
        let r = run("20250102T030405Z-0a1b2c3d", Kind::Bench);
        let path = write(&dir, &r).unwrap();
        assert!(write(&dir, &r).is_err(), "the file is never replaced");
        std::fs::copy(&path, dir.join("copy.json")).unwrap();
        std::fs::write(dir.join("cut.json"), b"{\"schema\": 1, \"id\"").unwrap();
        std::fs::write(dir.join(".hidden.json"), b"nonsense").unwrap();
        let loaded = load(&dir).unwrap();
        assert_eq!(loaded.runs, vec![r]);
        let skipped: Vec<String> = loaded
            .skipped
            .iter()
            .map(|s| s.path.file_name().unwrap().to_string_lossy().into_owned())
            .collect();
        assert_eq!(skipped.len(), 2, "{:?}", loaded.skipped);
        assert!(skipped.contains(&"cut.json".to_string()));
    }

    proptest! {
        #[test]
        fn load_never_panics_on_any_file(
            bytes in proptest::collection::vec(any::<u8>(), 0..300),
            text in "\\{(\"(schema|id|kind|results|pins|machine)\": ?(1|2|-1|\"x\"|null|\\{\\}|\\[\\]), ?){0,6}\\}?",
        ) {
            let tmp = tempfile::tempdir().unwrap();
            std::fs::write(tmp.path().join("a.json"), &bytes).unwrap();
            std::fs::write(tmp.path().join("b.json"), text.as_bytes()).unwrap();
            let loaded = load(tmp.path()).unwrap();
            prop_assert_eq!(loaded.runs.len() + loaded.skipped.len(), 2);
        }
    }
}
