//! Recording a run: the history directory checked before the run starts,
//! and what a [`RunRecord`] says besides the command's own results (its
//! identity, the source commit and pins, the machine), gathered the same
//! way for `test`, `bench` and `integrate loop`.
//!
//! Why here and not in each command: three runners record, and the history's
//! readers compare their runs by these fields; one gathering keeps them
//! comparable. Nothing here fails a run: the source and the machine are
//! best effort (a directory outside git has no commit), and only the
//! directory itself can refuse to be written.

use std::collections::BTreeMap;
use std::path::{Component, Path, PathBuf};

use jiff::Timestamp;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_pin::Pin;

use crate::record::{Kind, Machine, RunRecord, Source, SCHEMA};

/// The source commit and the pins a run was made from.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Provenance {
    pub source: Source,
    /// Pin file or submodule path -> commit.
    pub pins: BTreeMap<String, String>,
}

/// A directory a history must not be (`below`: nor lie inside it), such
/// as lockstep.toml's directory or a suite directory.
#[derive(Debug, Clone, Copy)]
pub struct Forbidden<'a> {
    /// How messages name it: `lockstep.toml's directory`, `the suite directory`.
    pub what: &'a str,
    pub dir: &'a Path,
    pub below: bool,
}

/// A run being recorded: the directory (checked and created) and what was
/// known when it started.
#[derive(Debug, Clone)]
pub struct Recording {
    pub dir: PathBuf,
    pub kind: Kind,
    started: Timestamp,
    provenance: Provenance,
}

impl Recording {
    /// Checks `dir` before anything runs (`flag` names it in messages: a
    /// usage error when it exists and is not a directory, or is one of
    /// `forbidden`), creates it, and notes the start time and the source
    /// of the repository holding `repo_dir` (with the `pin_files` it
    /// names, relative to the repository's top).
    pub fn start(
        flag: &str,
        dir: &Path,
        kind: Kind,
        forbidden: &[Forbidden],
        repo_dir: &Path,
        pins: &[Pin],
    ) -> Result<Recording, Error> {
        check_dir(flag, dir, forbidden)?;
        fs_err::create_dir_all(dir).map_err(|e| {
            Error::usage(format!(
                "cannot create the history directory {flag} {}",
                dir.display()
            ))
            .cause(e.to_string())
            .hint("name a directory lockstep may create, or create it first")
        })?;
        Ok(Recording {
            dir: dir.to_path_buf(),
            kind,
            started: Timestamp::now(),
            provenance: provenance(repo_dir, "HEAD", pins),
        })
    }

    /// Writes the run: `results` is the command's `--json` document,
    /// `toolchain` the identity of the compiler it used. Returns the file.
    pub fn finish(
        self,
        results: serde_json::Value,
        toolchain: Option<String>,
    ) -> Result<PathBuf, Error> {
        let run = RunRecord {
            schema: SCHEMA,
            id: run_id(self.started),
            kind: self.kind,
            started: rfc3339(self.started),
            finished: rfc3339(Timestamp::now()),
            source: self.provenance.source,
            pins: self.provenance.pins,
            toolchain,
            machine: machine(),
            results,
        };
        crate::store::write(&self.dir, &run)
    }
}

/// The usage error for a history directory that is a file, or one of
/// `forbidden`.
pub fn check_dir(flag: &str, dir: &Path, forbidden: &[Forbidden]) -> Result<(), Error> {
    if dir.as_os_str().is_empty() {
        return Err(Error::usage(format!("{flag} was given an empty path"))
            .hint(format!("give {flag} a directory")));
    }
    match std::fs::metadata(dir) {
        Ok(meta) if !meta.is_dir() => {
            return Err(Error::usage(format!(
                "{flag} {} is not a directory",
                dir.display()
            ))
            .hint("the history is a directory of run files: name a directory (it is created when missing)"))
        }
        _ => {}
    }
    let at = resolved(dir);
    for f in forbidden {
        let other = resolved(f.dir);
        if at == other || (f.below && at.starts_with(&other)) {
            let relation = if at == other { "is" } else { "is inside" };
            return Err(Error::usage(format!(
                "{flag} {} {relation} {} {}",
                dir.display(),
                f.what,
                f.dir.display()
            ))
            .cause("the history's files would mix with the command's inputs")
            .hint("record into a directory of its own, e.g. `--record history`"));
        }
    }
    Ok(())
}

/// `path` absolute with its existing part's links resolved (a directory not
/// yet created compares by the path it will have).
fn resolved(path: &Path) -> PathBuf {
    let absolute = std::path::absolute(path).unwrap_or_else(|_| path.to_path_buf());
    let mut existing = absolute.as_path();
    let mut rest: Vec<&std::ffi::OsStr> = Vec::new();
    loop {
        if let Ok(real) = std::fs::canonicalize(existing) {
            let mut out = real;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return lexical(&out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name);
                existing = parent;
            }
            _ => return lexical(&absolute),
        }
    }
}

/// `path` with `.` and `..` taken out by their text.
fn lexical(path: &Path) -> PathBuf {
    let mut out = PathBuf::new();
    for c in path.components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir => {
                out.pop();
            }
            other => out.push(other),
        }
    }
    out
}

/// `at` as RFC 3339 in UTC with milliseconds (`2025-01-31T12:00:00.123Z`).
pub fn rfc3339(at: Timestamp) -> String {
    at.strftime("%Y-%m-%dT%H:%M:%S%.3fZ").to_string()
}

/// A run's identity: its start as `YYYYMMDDTHHMMSSZ`, then where it ran.
/// On GitHub Actions `$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT-$GITHUB_JOB`,
/// then 8 random hex digits (the cells of a matrix share the job's name);
/// elsewhere the 8 random hex digits alone.
pub fn run_id(started: Timestamp) -> String {
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.is_empty());
    let ci = var("GITHUB_RUN_ID").map(|run| {
        let attempt = var("GITHUB_RUN_ATTEMPT").unwrap_or_else(|| "1".into());
        let job = var("GITHUB_JOB").unwrap_or_else(|| "job".into());
        format!("{run}-{attempt}-{job}")
    });
    run_id_of(started, ci.as_deref(), rand::random::<u32>())
}

/// [`run_id`] from its parts.
pub fn run_id_of(started: Timestamp, ci: Option<&str>, random: u32) -> String {
    let time = started.strftime("%Y%m%dT%H%M%SZ");
    match ci {
        Some(ci) => format!("{time}-{}-{random:08x}", plain(ci)),
        None => format!("{time}-{random:08x}"),
    }
}

/// `text` with every character but letters, digits, `-`, `_` and `.` as
/// `_`, at most 80 of them (an id is part of a file name).
fn plain(text: &str) -> String {
    text.chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.') {
                c
            } else {
                '_'
            }
        })
        .take(80)
        .collect()
}

/// The machine this process runs on.
pub fn machine() -> Machine {
    let cpu = std::fs::read_to_string("/proc/cpuinfo")
        .ok()
        .and_then(|text| cpu_model(&text));
    let var = |name: &str| std::env::var(name).ok().filter(|v| !v.trim().is_empty());
    let host = var("RUNNER_NAME")
        .or_else(|| {
            std::fs::read_to_string("/proc/sys/kernel/hostname")
                .ok()
                .filter(|h| !h.trim().is_empty())
        })
        .or_else(|| var("HOSTNAME"));
    Machine {
        cpu: cpu.unwrap_or_else(|| "unknown".into()),
        cores: u32::try_from(lockstep_core::pool::cpus()).unwrap_or(u32::MAX),
        os: format!("{}-{}", std::env::consts::OS, std::env::consts::ARCH),
        host: host.map_or_else(|| "unknown".into(), |h| h.trim().to_string()),
    }
}

/// The machine of a run imported from a results file: not known.
pub fn unknown_machine() -> Machine {
    Machine {
        cpu: "unknown".into(),
        cores: 0,
        os: "unknown".into(),
        host: "unknown".into(),
    }
}

/// The first `model name` of a `/proc/cpuinfo` text.
pub fn cpu_model(cpuinfo: &str) -> Option<String> {
    cpuinfo.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        let value = value.trim();
        (key.trim() == "model name" && !value.is_empty()).then(|| value.to_string())
    })
}

/// The commit `rev` of the repository holding `dir`, its branch and whether
/// tracked files differ (for `HEAD`), and its pins: every gitlink, and each
/// of `pin_files` that holds one revision. Empty outside a repository;
/// what cannot be read is left out (logged), never an error.
pub fn provenance(dir: &Path, rev: &str, pin_list: &[Pin]) -> Provenance {
    let Ok(repo) = Repo::discover(dir) else {
        tracing::debug!("{} is not in a git work tree: no source", dir.display());
        return Provenance::default();
    };
    let Some(commit) = repo.resolve(rev).ok().flatten() else {
        return Provenance::default();
    };
    let head = rev == "HEAD";
    let branch = if head {
        repo.current_branch().ok().flatten()
    } else {
        None
    };
    let dirty = head
        && repo
            .git(&["status", "--porcelain=v1", "-z", "--untracked-files=no"])
            .is_ok_and(|out| !out.is_empty());
    let mut pins = BTreeMap::new();
    for pin in pin_list {
        let path = pin.path();
        match pin.read_at(&repo, &commit) {
            Ok(commit) => {
                pins.insert(path.to_string(), commit);
            }
            Err(e) => tracing::warn!(
                "{} left out of the run record: {}",
                pin.describe(),
                e.message
            ),
        }
    }
    match repo.gitlinks(&commit) {
        Ok(links) => {
            for (path, pin) in links {
                pins.entry(path).or_insert(pin);
            }
        }
        Err(e) => tracing::warn!("submodule pins left out of the run record: {}", e.message),
    }
    Provenance {
        source: Source {
            commit: Some(commit),
            branch,
            dirty,
        },
        pins,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(text: &str) -> Timestamp {
        text.parse().unwrap()
    }

    #[test]
    fn ids_start_with_the_time_then_the_ci_run_or_random_hex() {
        let t = at("2025-03-04T05:06:07.891Z");
        assert_eq!(run_id_of(t, None, 0xab), "20250304T050607Z-000000ab");
        assert_eq!(
            run_id_of(t, Some("123-2-test shard/1"), 0xdeadbeef),
            "20250304T050607Z-123-2-test_shard_1-deadbeef"
        );
        assert_eq!(rfc3339(t), "2025-03-04T05:06:07.891Z");
        assert_eq!(
            rfc3339(at("2025-03-04T05:06:07Z")),
            "2025-03-04T05:06:07.000Z"
        );
    }

    #[test]
    fn the_cpu_model_is_the_first_model_name() {
        let info = "processor\t: 0\nvendor_id\t: GenuineIntel\nmodel name\t: Intel(R) Xeon(R) CPU @ 2.20GHz\n\nprocessor\t: 1\nmodel name\t: other\n";
        assert_eq!(
            cpu_model(info).as_deref(),
            Some("Intel(R) Xeon(R) CPU @ 2.20GHz")
        );
        assert_eq!(cpu_model("processor : 0\nmodel name :   \n"), None);
        assert_eq!(cpu_model(""), None);
        let m = machine();
        assert!(m.cores >= 1);
        assert!(!m.cpu.is_empty() && !m.host.is_empty());
        assert!(m.os.contains('-'));
    }

    #[test]
    fn a_file_or_a_forbidden_directory_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let file = tmp.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let err = check_dir("--record", &file, &[]).unwrap_err();
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("is not a directory"),
            "{}",
            err.message
        );
        let suites = tmp.path().join("suites");
        std::fs::create_dir(&suites).unwrap();
        let forbidden = [
            Forbidden {
                what: "the suite directory",
                dir: &suites,
                below: true,
            },
            Forbidden {
                what: "lockstep.toml's directory",
                dir: tmp.path(),
                below: false,
            },
        ];
        for bad in [
            suites.clone(),
            suites.join("new/history"),
            tmp.path().join("x/../suites"),
            tmp.path().to_path_buf(),
        ] {
            let err = check_dir("--record", &bad, &forbidden).unwrap_err();
            assert_eq!(err.exit_code(), 2, "{}", bad.display());
        }
        check_dir("--record", &tmp.path().join("history"), &forbidden).unwrap();
    }

    #[test]
    fn outside_a_repository_there_is_no_source() {
        let tmp = tempfile::tempdir().unwrap();
        assert_eq!(provenance(tmp.path(), "HEAD", &[]), Provenance::default());
    }
}
