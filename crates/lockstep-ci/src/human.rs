//! What `lockstep ci generate` says (printed by the binary): the notes
//! about the plan before anything is written (schedules and their next
//! runs, where runners install lockstep from, what is left out and why),
//! then a line per file written or checked, and the diffs of a `--check`
//! that found drift.

use std::path::PathBuf;

use crate::config::CiConfig;
use crate::{Drift, GeneratedFile, LockstepInstall, Plan};

/// The notes of `ci generate` about `plan` (`ci`: the `[ci]` it came from).
pub fn notes(plan: &Plan, ci: &CiConfig) -> Vec<String> {
    let mut notes = Vec::new();
    for (what, schedule) in [
        ("release", plan.release.as_ref().map(|r| &r.schedule)),
        ("integrate", plan.integrate.as_ref().map(|r| &r.schedule)),
    ] {
        if let Some(expr) = schedule {
            notes.push(format!(
                "the {what} workflow runs on `{expr}` (UTC); next: {}",
                crate::stages::next_runs(expr, 3).join(", ")
            ));
        }
    }
    if ci.lockstep.is_none() {
        let from = match &plan.lockstep {
            LockstepInstall::Git { url, rev } => format!("{url} at {rev}"),
            LockstepInstall::Path { path } => format!("the checkout's {path}"),
            LockstepInstall::Release(r) => format!(
                "its release {}=={} (pinned by hash; to keep it without a lookup, set [ci] lockstep = {{ version = \"{}\", sha256 = [{}] }})",
                crate::released::DISTRIBUTION,
                r.version,
                r.version,
                r.sha256.iter().map(|h| format!("\"{h}\"")).collect::<Vec<_>>().join(", ")
            ),
        };
        let pin = match &plan.lockstep {
            LockstepInstall::Release(_) => "",
            _ => " (set it to pin the version)",
        };
        notes.push(format!(
            "[ci] lockstep is unset: runners install lockstep from {from}{pin}"
        ));
    }
    if plan.targets.is_empty() {
        notes.push(
            "no test jobs: lockstep.toml names no tests ([test] paths or suite-configs) and there is no suites/ beside it; the workflow builds the wheels only".into(),
        );
    }
    if !plan.builds {
        notes.push(
            "no build job: lockstep.toml has no [[pkg.package]]; the test jobs install the IREE toolchain [toolchain] iree names from PyPI".into(),
        );
    }
    if plan.lint_dir.is_none() {
        notes.push(format!(
            "--out {} has its parent outside the repository: actionlint.yaml and zizmor.yml are left out (they belong beside a workflows directory inside the repository)",
            plan.out.display()
        ));
    }
    notes
}

/// `ci generate --check`: every file up to date, or the diffs of those
/// that drifted.
pub fn checked(files: &[GeneratedFile], drifts: &[Drift]) -> String {
    if drifts.is_empty() {
        let lines = files
            .iter()
            .map(|f| format!("up to date: {}", f.path.display()));
        return lines.map(|l| l + "\n").collect();
    }
    drifts
        .iter()
        .map(|d| format!("{}\n", d.diff.trim_end()))
        .collect()
}

/// `ci generate`: each file written, or unchanged.
pub fn written(files: &[GeneratedFile], changed: &[PathBuf]) -> String {
    files
        .iter()
        .map(|f| {
            let state = match changed.contains(&f.path) {
                true => "wrote",
                false => "unchanged",
            };
            format!("{state}: {}\n", f.path.display())
        })
        .collect()
}
