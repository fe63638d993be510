//! Halts and their reports: what stopped the integrate (a smoke failure or a
//! patch conflict at an exact upstream commit), the error summary cut from the
//! smoke log, the untracked upstream commits that may be the real cause, and the
//! commands that reproduce it.

use std::path::PathBuf;

use crate::config::ReportConfig;
use lockstep_core::Error;
use lockstep_git::{Commit, Oid};
use serde::{Deserialize, Serialize};

use crate::Integrate;

const HALT_RECORD: &str = "halt";

#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HaltKind {
    Smoke,
    Conflict,
}

impl HaltKind {
    pub fn as_str(&self) -> &'static str {
        match self {
            HaltKind::Smoke => "smoke",
            HaltKind::Conflict => "conflict",
        }
    }
}

/// A carried patch that did not apply.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ConflictInfo {
    pub patch: Oid,
    pub subject: String,
    pub files: Vec<String>,
}

/// Why and where the integrate stopped (kept in the store until resolved).
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Halt {
    pub kind: HaltKind,
    pub culprit: Commit,
    /// The last upstream commit known good (the pin's base when nothing advanced).
    pub last_good: Commit,
    /// True when the current pin itself failed (nothing to blame upstream).
    pub at_pin: bool,
    pub branch: String,
    pub superproject_head: Oid,
    /// The culprit with the carried patches applied (kept under `refs/lockstep/halt`).
    pub probe_head: Option<Oid>,
    pub conflict: Option<ConflictInfo>,
    pub log: Option<String>,
    pub exit: Option<String>,
    /// Candidates that could not be tested (exit 125) next to the culprit.
    pub skipped: Vec<Oid>,
    /// Untracked upstream commits strictly between `last_good` and `culprit`.
    pub untracked: Vec<Commit>,
    pub untracked_total: usize,
    pub smoke: Vec<String>,
    /// The pin's path (a submodule, or the file holding the pin).
    #[serde(default)]
    pub pin: String,
    /// The submodule's path when the pin is a submodule (none for a pin
    /// kept in a file: there is no submodule to name).
    #[serde(default)]
    pub submodule: Option<String>,
    pub superproject: String,
    pub link: Option<String>,
    pub report_path: String,
    pub created_at: String,
}

/// A rendered report.
#[derive(Debug, Clone, Serialize)]
pub struct Report {
    pub title: String,
    pub text: String,
    /// The error lines (the `errors.txt` attachment).
    pub errors: String,
    pub error_lines: usize,
}

/// Error lines of a log (`[integrate.report] error-patterns`, or the
/// default recognizer), at most `max-error-lines` of them, then `... and N
/// more`; and how many there were.
pub fn error_summary(log: &str, cfg: &ReportConfig) -> (Vec<String>, usize) {
    cfg.error_lines().summary(log, cfg.max_error_lines)
}

pub fn halt(ig: &Integrate) -> Result<Option<Halt>, Error> {
    let halt: Option<Halt> = ig.store.get(HALT_RECORD)?;
    // A halt an earlier lockstep recorded names only its submodule.
    Ok(halt.map(|mut h| {
        if h.pin.is_empty() {
            h.pin = h.submodule.clone().unwrap_or_default();
        }
        h
    }))
}

pub fn clear_halt(ig: &Integrate) -> Result<(), Error> {
    ig.store.remove(HALT_RECORD)
}

/// Records a halt, writes its report file and keeps the culprit's patched
/// head reachable.
pub fn record_halt(ig: &Integrate, mut halt: Halt) -> Result<Halt, Error> {
    if let Some(head) = &halt.probe_head {
        ig.sub.git(&["update-ref", "refs/lockstep/halt", head])?;
    }
    let dir = ig.state_dir.join("reports");
    let path: PathBuf = dir.join(format!(
        "{}-{}.md",
        jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S"),
        short(&halt.culprit.sha)
    ));
    halt.report_path = path.display().to_string();
    let report = crate::halt::render(ig, &halt);
    // Atomic, so a crash never leaves a half report the halt record points at.
    lockstep_core::fs::write_atomic(&path, report.text.as_bytes())?;
    ig.store.set(HALT_RECORD, &halt)?;
    Ok(halt)
}

/// Renders a halt as Markdown text plus the error attachment.
pub fn render(ig: &Integrate, halt: &Halt) -> Report {
    let name = &ig.cfg.upstream_name;
    let c = &halt.culprit;
    let title = match (halt.kind, halt.at_pin) {
        (_, true) => format!("{name} integrate halted: the current pin fails the smoke test"),
        (HaltKind::Smoke, false) => {
            format!("{name} integrate halted: smoke failed at {}", short(&c.sha))
        }
        (HaltKind::Conflict, false) => {
            format!(
                "{name} integrate halted: carried patch conflicts at {}",
                short(&c.sha)
            )
        }
    };
    let mut t = format!("# {title}\n\n");
    t += &format!(
        "- integrate branch: `{}` in {}\n",
        halt.branch, halt.superproject
    );
    t += &format!("- kind: {}\n", halt.kind.as_str());
    t += &format!("- culprit: {} {}\n", c.sha, c.subject);
    t += &format!("- author: {} on {}\n", c.author, c.date);
    if let Some(link) = &halt.link {
        t += &format!("- link: {link}\n");
    }
    t += &format!(
        "- last good: {} {}\n",
        halt.last_good.sha, halt.last_good.subject
    );
    if let Some(exit) = &halt.exit {
        t += &format!("- smoke: `{}` ended with {exit}\n", halt.smoke.join(" "));
    }
    if !halt.skipped.is_empty() {
        t += &format!(
            "- untestable (exit 125) next to the culprit, so it may be any of: {}\n",
            halt.skipped
                .iter()
                .map(|s| short(s))
                .collect::<Vec<_>>()
                .join(", ")
        );
    }
    let mut errors = String::new();
    let mut error_lines = 0;
    if let Some(conflict) = &halt.conflict {
        t += &format!(
            "\n## Conflict\n\nCarried patch {} \"{}\" does not apply on the culprit. Conflicting files:\n\n",
            short(&conflict.patch),
            conflict.subject
        );
        for f in &conflict.files {
            t += &format!("- {f}\n");
            errors += &format!("conflict: {f}\n");
        }
    }
    if let Some(log) = &halt.log {
        let text = std::fs::read_to_string(log).unwrap_or_default();
        let (lines, total) = error_summary(&text, &ig.cfg.report);
        error_lines = total;
        t += &format!(
            "\n## Errors ({})\n\n```\n",
            lockstep_core::words::count(total, "matching line", "matching lines")
        );
        for l in &lines {
            t += l;
            t += "\n";
            errors += l;
            errors += "\n";
        }
        t += &format!("```\n\nFull log: {log}\n");
    }
    if halt.untracked_total > 0 {
        t += &format!(
            "\n## Untracked upstream commits between last good and culprit ({})\n\nAny of these may be the real cause:\n\n",
            halt.untracked_total
        );
        for u in &halt.untracked {
            t += &format!("- {} {} ({})\n", short(&u.sha), u.subject, u.author);
        }
        if halt.untracked_total > halt.untracked.len() {
            t += &format!(
                "- ... and {} more\n",
                halt.untracked_total - halt.untracked.len()
            );
        }
    }
    // The final checks at the halt: what else to fix before landing.
    if let Ok(Some(checks)) = crate::final_checks::final_checks_at_head(ig) {
        t += "\n";
        t += &crate::final_checks::body_section(&checks);
    }
    t += "\n## Reproduce\n\n```\n";
    t += &format!("cd {}\n", quote(&halt.superproject));
    let smoke_line = |head: &str| {
        let log = halt.log.clone().unwrap_or_default();
        let env = ig.probe_env(c, head, std::path::Path::new(&log));
        let mut words: Vec<String> = env
            .iter()
            .map(|(k, v)| format!("{k}={}", quote(v)))
            .collect();
        words.extend(halt.smoke.iter().map(|w| quote(w)));
        format!("{}\n", words.join(" "))
    };
    let pin = ig.pin_of();
    let moved = |head: &str, note: &str| {
        pin.reproduce(
            &ig.superproject,
            &halt.superproject_head,
            head,
            &ig.checksums(),
            note,
        )
    };
    match (&halt.probe_head, halt.kind) {
        (Some(head), _) => {
            let note = match pin.carries_patches() {
                true => "the culprit with the carried patches",
                false => "the culprit",
            };
            match moved(head, note) {
                Ok(lines) => {
                    t += &format!("{}\n", lines.set);
                    t += &smoke_line(head);
                    t += &format!("{}\n", lines.back);
                }
                Err(e) => {
                    t += &format!(
                        "# {} cannot be put at {head} here: {}\n",
                        pin.describe(),
                        lockstep_core::error::printable_line(&e.message)
                    );
                }
            }
        }
        (None, HaltKind::Conflict) => {
            t += &format!(
                "git -C {} rebase {}   # replays the carried patches\n",
                quote(pin.path()),
                c.sha
            );
        }
        (None, HaltKind::Smoke) => t += &smoke_line(&c.sha),
    }
    t += "```\n\n## Next\n\n";
    match halt.kind {
        HaltKind::Smoke if !halt.at_pin => {
            t += &format!(
                "Advance to the culprit (`lockstep integrate next --to {}`), commit a fix, then `lockstep integrate loop`{}.\n",
                short(&c.sha),
                match pin.carries_patches() {
                    true => "; or carry a revert of it (`lockstep integrate revert`)",
                    false => "",
                }
            )
        }
        HaltKind::Smoke => t += "Fix the superproject at its current pin, commit, then `lockstep integrate loop`.\n",
        HaltKind::Conflict => t += &format!(
            "Rebase the carried patches onto {} in the submodule by hand (or drop the patch), commit the new pin in the superproject, then `lockstep integrate loop`.\n",
            short(&c.sha)
        ),
    }
    Report {
        title,
        text: t,
        errors,
        error_lines,
    }
}

/// `word` quoted for a POSIX shell when it needs it.
fn quote(word: &str) -> String {
    lockstep_core::process::quote(word)
}

/// The first 12 hex digits.
pub fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

/// Loads the halt for `integrate report`, or explains there is none.
pub fn require_halt(halt: Option<Halt>) -> Result<Halt, Error> {
    halt.ok_or_else(|| {
        Error::failed("there is no halt to report")
            .hint("`lockstep integrate status` shows where the integrate stands")
    })
}
