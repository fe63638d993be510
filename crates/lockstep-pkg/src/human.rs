//! The human form of what `lockstep pkg` returns (printed without
//! `--json`): pkg's results say how they read, the binary only prints them.

use std::path::PathBuf;

use lockstep_python::venv::Made;

use crate::bisect::BisectReport;

/// `pkg build` and `pkg fetch`: the manifests written, one per line.
pub fn manifests(paths: &[PathBuf]) -> String {
    paths.iter().map(|p| format!("{}\n", p.display())).collect()
}

/// `pkg venv`: the venv, its interpreter and exactly what it holds.
pub fn venv(made: &Made) -> String {
    let packages: Vec<String> = made
        .packages
        .iter()
        .map(|(n, v)| format!("{n}=={v}"))
        .collect();
    format!(
        "{} ({}): {}\n",
        made.dir.display(),
        made.python,
        packages.join(" ")
    )
}

/// `pkg bisect`: the first bad commit, or the candidates.
pub fn bisected(report: &BisectReport) -> String {
    lockstep_bisect::conclusion(report.first_bad.as_deref(), &report.candidates) + "\n"
}
