//! The human form of what `lockstep history` returns (printed without
//! `--json`): the history says how its results read, the binary only
//! prints them. Also the one way a history's timestamps read to people
//! ([`when`]): runs are stamped to the millisecond and release files to the
//! nanosecond, and a reader should see neither, only one format.

use std::path::Path;

use crate::import::{Outcome, Prepared};
use crate::list::{line, Listed};

/// A timestamp of the history (RFC 3339, any precision or offset) as
/// people read it: UTC to the minute, `2026-11-27 16:30`. Text that is not
/// a timestamp comes back as it was (a newer lockstep's format is still
/// shown, never dropped).
pub fn when(text: &str) -> String {
    formatted(text, "%Y-%m-%d %H:%M")
}

/// [`when`] to the second, `2026-11-27 16:30:05`: to tell apart two runs
/// that started in one minute.
pub fn when_to_the_second(text: &str) -> String {
    formatted(text, "%Y-%m-%d %H:%M:%S")
}

fn formatted(text: &str, format: &str) -> String {
    match text.trim().parse::<jiff::Timestamp>() {
        Ok(at) => at.strftime(format).to_string(),
        Err(_) => text.to_string(),
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timestamps_read_alike_whatever_their_precision() {
        for stamp in [
            "2026-11-27T16:30:05Z",
            "2026-11-27T16:30:05.123Z",
            "2026-11-27T16:30:05.123456789Z",
            "2026-11-27T17:30:05.5+01:00",
        ] {
            assert_eq!(when(stamp), "2026-11-27 16:30", "{stamp}");
            assert_eq!(when_to_the_second(stamp), "2026-11-27 16:30:05", "{stamp}");
        }
        assert_eq!(when("yesterday"), "yesterday");
        assert_eq!(when(""), "");
    }
}
