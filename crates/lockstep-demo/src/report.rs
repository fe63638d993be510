//! The demo's own results history and the report site it ends with: every
//! test, bench and integrate loop run of the story is recorded as the
//! commands' `--record DIR` records it, and `lockstep report site` is made
//! from that history.

use std::io::Write;
use std::path::{Path, PathBuf};

use lockstep_core::words::count;
use lockstep_core::Error;
use lockstep_history::collect::Recording;
use lockstep_history::Kind;

/// The demo's history directory.
pub struct History {
    pub dir: PathBuf,
}

impl History {
    pub fn new(dir: &Path) -> History {
        History {
            dir: dir.to_path_buf(),
        }
    }

    /// A run of `kind` starting now, from the repository holding `repo_dir`.
    pub fn start(&self, kind: Kind, repo_dir: &Path) -> Result<Recording, Error> {
        Recording::start("the demo's history", &self.dir, kind, &[], repo_dir, &[])
    }

    /// Records the run: `document` is what the command's `--json` prints.
    pub fn finish(
        &self,
        recording: Recording,
        document: &str,
        toolchain: Option<String>,
        out: &mut dyn Write,
    ) -> Result<(), Error> {
        let results = serde_json::from_str(document).map_err(|e| {
            Error::failed("cannot read back a results document").cause(e.to_string())
        })?;
        let path = recording.finish(results, toolchain)?;
        let name = path.file_name().unwrap_or_default().to_string_lossy();
        writeln!(out, "   recorded {name}")?;
        Ok(())
    }
}

/// `lockstep report site --history HISTORY --releases STORE --out SITE`:
/// whether it wrote every page, the releases page listing the release.
pub fn site(
    history: &History,
    releases: &Path,
    out_dir: &Path,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    writeln!(
        out,
        "\n== lockstep report site --history {} --releases {} --out {}",
        history.dir.display(),
        releases.display(),
        out_dir.display()
    )?;
    let loaded = lockstep_history::load(&history.dir)?;
    for skipped in &loaded.skipped {
        writeln!(
            out,
            "   skipped {}: {}",
            skipped.path.display(),
            skipped.reason
        )?;
    }
    let report = lockstep_site::site(&loaded, Some(releases), out_dir, None)?;
    writeln!(
        out,
        "   {} from {} and {} ({}, {}); open {}",
        count(report.pages.len(), "page", "pages"),
        count(report.runs, "run", "runs"),
        count(report.releases, "release", "releases"),
        count(report.regressions, "regression", "regressions"),
        count(report.flaky_tests, "flaky test", "flaky tests"),
        report.out.join("index.html").display()
    )?;
    Ok(report.runs >= 3
        && report.pages.len() == lockstep_site::html::PAGES.len()
        && report.releases >= 1)
}
