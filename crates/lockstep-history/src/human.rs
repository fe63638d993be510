//! The human form of what `lockstep history` returns (printed without
//! `--json`): the history says how its results read, the binary only
//! prints them.

use std::path::Path;

use crate::import::{Outcome, Prepared};
use crate::list::{line, Listed};

/// `history import`: one line per file, imported or already there.
pub fn imported(prepared: &[Prepared], outcomes: &[Outcome]) -> String {
    let mut text = String::new();
    for (p, outcome) in prepared.iter().zip(outcomes) {
        let one = match outcome {
            Outcome::Imported(path) => format!(
                "imported {} as {} run {}",
                p.path.display(),
                p.run.kind.name(),
                path.display()
            ),
            Outcome::Already(path) => format!(
                "{}: already in the history ({})",
                p.path.display(),
                path.display()
            ),
        };
        text.push_str(&one);
        text.push('\n');
    }
    text
}

/// `history list` of the history `dir`: one line per run.
pub fn listed(listed: &Listed, dir: &Path) -> String {
    let mut text = String::new();
    if listed.runs.is_empty() {
        text.push_str(&format!("no runs in {}\n", dir.display()));
    }
    for run in &listed.runs {
        text.push_str(&line(run));
        text.push('\n');
    }
    text
}
