//! `integrate bisect --test ID` / `--check N`: which advance of this
//! integrate broke a final check ([`crate::final_checks`]), found by the
//! superproject bisect over the integrate's own commits.

use lockstep_core::Error;

use crate::final_checks::{FinalChecks, RECORD};
use crate::Integrate;

/// Which final check `integrate bisect --test ID` / `--check N` bisects.
pub enum Target<'a> {
    /// A test one final check reported failing.
    Test(&'a str),
    /// A check: its number (1-based) or its command.
    Check(&'a str),
}

/// The bisect over the integrate's advances (its superproject commits
/// since the commit it started from, the submodule at each one's pin)
/// that finds the one that broke `target`: for a test, its check run
/// for that test alone (`-k ID`: a `lockstep test` check), for a check,
/// the check itself. No upstream commit is fetched.
pub fn final_check_bisect(
    ig: &Integrate,
    target: Target,
    timeout: Option<std::time::Duration>,
) -> Result<crate::bisect::BisectOptions, Error> {
    let checks = &ig.cfg.final_checks;
    if checks.is_empty() {
        return Err(Error::usage("[integrate] final-checks is empty: there is no check to bisect")
            .hint("add final-checks = [\"lockstep test suites/lit\"] to [integrate], or bisect a command: --good REV --bad REV -- CMD"));
    }
    let start: crate::journal::StartJournal = ig
        .store
        .get(crate::journal::INTEGRATE_RECORD)?
        .ok_or_else(|| {
            Error::usage("no integrate in progress: its advances are what is bisected").hint(
                "run it on the integrate branch (`lockstep integrate continue` checks it out)",
            )
        })?;
    let command = match target {
        Target::Check(which) => {
            let found = which
                .parse::<usize>()
                .ok()
                .and_then(|n| n.checked_sub(1))
                .and_then(|i| checks.get(i))
                .or_else(|| checks.iter().find(|c| c.as_str() == which));
            found.cloned().ok_or_else(|| {
                Error::usage(format!("--check {which} names no final check")).hint(format!(
                    "give its number (1 to {}) or its command",
                    checks.len()
                ))
            })?
        }
        Target::Test(id) => {
            let recorded = ig.store.get::<FinalChecks>(RECORD)?;
            let check = recorded
                .as_ref()
                .and_then(|r| {
                    r.checks
                        .iter()
                        .find(|c| c.failures.iter().any(|f| f.test == id))
                        .map(|c| c.command.clone())
                })
                .or_else(|| (checks.len() == 1).then(|| checks[0].clone()))
                .ok_or_else(|| {
                    Error::usage(format!("no final check reported `{id}` failing")).hint(
                        "name the check with --check N, or run the loop so the final checks run",
                    )
                })?;
            if !is_lockstep_test(&check) {
                return Err(Error::usage(format!(
                    "--test needs a `lockstep test` final check to run one test, but the check is `{check}`"
                ))
                .hint("bisect the whole check with --check instead"));
            }
            format!("{check} -k {}", shell_quote(id))
        }
    };
    Ok(crate::bisect::BisectOptions {
        good: start.base.to_string(),
        bad: "HEAD".into(),
        superproject: true,
        command: vec!["sh".into(), "-c".into(), command],
        timeout,
    })
}

/// Whether `command` runs `lockstep test` (`lockstep test ...`, or a path
/// to lockstep, quoted or not, then `test`).
fn is_lockstep_test(command: &str) -> bool {
    let words: Vec<&str> = command.split_whitespace().collect();
    words.windows(2).any(|pair| {
        let program = pair[0].trim_matches(|c| c == '\'' || c == '"');
        (program == "lockstep" || program.ends_with("/lockstep")) && pair[1] == "test"
    })
}

/// `text` as one shell word.
fn shell_quote(text: &str) -> String {
    format!("'{}'", text.replace('\'', "'\\''"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lockstep_test_checks_are_recognised_however_lockstep_is_named() {
        assert!(is_lockstep_test("lockstep test suites/lit"));
        assert!(is_lockstep_test("'/opt/x y/bin/lockstep' test suites/lit"));
        assert!(is_lockstep_test("/usr/bin/lockstep test -j 4 suites"));
        assert!(!is_lockstep_test("make check-lit"));
        assert!(!is_lockstep_test("lockstep bench"));
        assert_eq!(shell_quote("lit/a.mlir [lit]"), "'lit/a.mlir [lit]'");
        assert_eq!(shell_quote("it's"), "'it'\\''s'");
    }
}
