//! The one bisection every command shares: what a tried revision is
//! ([`Verdict`]), how a command's exit becomes one (`git bisect run`'s
//! rules, [`Verdict::from_exit`] and [`aborts`]), how a range narrows to the
//! first bad revision around untestable ones ([`narrow`]), and what a smoke
//! or a bisect step implements to be tried ([`Probe`]).
//!
//! `integrate loop`/`bisect`, `pkg bisect` and `release bump --smoke` all
//! go through it, so they pick the same next revision, read exit codes the
//! same way and refuse the same bad ranges. Verdicts are remembered in the
//! one verdict store, lockstep-store's probe records (by a key each caller
//! frames with `lockstep_core::hash::Framed`), through [`stored`]: the one
//! recall-or-judge and the narrowing with it. [`range`] resolves GOOD..BAD
//! (git's reads are all it runs), [`venvs`] is what a bisection over
//! packages is handed to probe in.

pub mod range;
pub mod stored;
pub mod venvs;

pub use range::{range, Range};
pub use stored::{narrow_stored, recall_or_judge, Judged, Recalled, Stored, VerdictStore};
pub use venvs::CommitVenvs;

use lockstep_core::process::Exit;
use lockstep_core::Error;
use serde::{Deserialize, Serialize};

/// The line that ends a bisection's human form: the first bad commit, or
/// the candidates skipped commits leave open.
pub fn conclusion(first_bad: Option<&str>, candidates: &[String]) -> String {
    match first_bad {
        Some(commit) => format!("first bad commit: {commit}"),
        None => format!(
            "the first bad commit is one of (skipped commits leave it open): {}",
            candidates.join(" ")
        ),
    }
}

/// What trying one revision found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    Good,
    Bad,
    /// Untestable (exit 125, or it could not be built), as `git bisect run`
    /// treats it: a neighbour is tried instead.
    Skip,
    /// The revision could not be prepared for the command (integrate: the
    /// carried patches do not apply); bad for narrowing.
    Conflict,
}

impl Verdict {
    pub fn as_str(&self) -> &'static str {
        match self {
            Verdict::Good => "good",
            Verdict::Bad => "bad",
            Verdict::Skip => "skip",
            Verdict::Conflict => "conflict",
        }
    }

    /// The verdict a store recorded (`as_str`); anything else is bad, the
    /// safe reading of a record a newer lockstep wrote.
    pub fn parse(s: &str) -> Verdict {
        match s {
            "good" => Verdict::Good,
            "skip" => Verdict::Skip,
            "conflict" => Verdict::Conflict,
            _ => Verdict::Bad,
        }
    }

    /// A smoke's verdict: exit 0 good, 125 skip, anything else (a crash, a
    /// timeout) bad.
    pub fn from_exit(exit: Exit) -> Verdict {
        match exit {
            Exit::Code(0) => Verdict::Good,
            Exit::Code(125) => Verdict::Skip,
            _ => Verdict::Bad,
        }
    }

    /// Whether narrowing moves the bad end here.
    pub fn is_bad(&self) -> bool {
        matches!(self, Verdict::Bad | Verdict::Conflict)
    }
}

/// `git bisect run`'s rule for a bisect command: an exit of 128 or more, or
/// a signal, is no verdict: the command itself broke and the bisection
/// stops (a timeout counts as bad).
pub fn aborts(exit: Exit) -> bool {
    match exit {
        Exit::Code(c) => !(0..128).contains(&c),
        Exit::Signal(_) => true,
        Exit::TimedOut => false,
    }
}

/// The error that stops a bisection at a command that broke.
pub fn abort_error(command: &[String], exit: Exit, at: &str) -> Error {
    Error::failed(format!(
        "`{}` {} at {at}; the bisection stops",
        command.join(" "),
        exit.describe()
    ))
    .cause("as with `git bisect run`, exit codes of 128 and above (and signals) abort")
    .hint("make the command exit 0 (good), 1-127 (bad) or 125 (skip)")
}

/// Refuses a range whose ends are one revision: there is nothing between
/// them to find (`good` and `bad` as the user named them).
pub fn require_range(good_sha: &str, bad_sha: &str, good: &str, bad: &str) -> Result<(), Error> {
    if good_sha == bad_sha {
        return Err(Error::usage(format!(
            "--good {good} and --bad {bad} are the same commit ({})",
            &good_sha[..good_sha.len().min(12)]
        ))
        .hint("give a good commit older than the bad one"));
    }
    Ok(())
}

/// Narrows between a good index `lo` (-1: before the first candidate) and
/// a bad index `hi` of a candidate list, trying the index nearest the
/// middle each time (an untestable one is added to `skipped` and its
/// nearest neighbour tried instead). Returns the last good and first bad.
pub fn narrow(
    mut lo: isize,
    mut hi: usize,
    skipped: &mut Vec<usize>,
    mut verdict: impl FnMut(usize) -> Result<Verdict, Error>,
) -> Result<(isize, usize), Error> {
    while let Some(m) = pick_between(lo, hi, skipped) {
        match verdict(m)? {
            Verdict::Good => lo = m as isize,
            Verdict::Bad | Verdict::Conflict => hi = m,
            Verdict::Skip => skipped.push(m),
        }
    }
    Ok((lo, hi))
}

/// The untested index in (lo, hi) nearest the middle (the later one first
/// on a tie), leaving out untestable ones; `None` when none is left.
pub fn pick_between(lo: isize, hi: usize, skipped: &[usize]) -> Option<usize> {
    let (lo, hi) = (lo + 1, hi as isize - 1);
    if lo > hi {
        return None;
    }
    let mid = lo + (hi - lo) / 2;
    (0..=(hi - lo))
        .flat_map(|d| [mid + d, mid - d])
        .find(|c| *c >= lo && *c <= hi && !skipped.contains(&(*c as usize)))
        .map(|c| c as usize)
}

/// The skipped indices between `lo` and `hi` then `hi`: the revisions the
/// first bad one may be when untestable ones sit right before it.
pub fn candidates(lo: isize, hi: usize, skipped: &[usize]) -> Vec<usize> {
    let mut open: Vec<usize> = skipped
        .iter()
        .copied()
        .filter(|&i| i as isize > lo && i < hi)
        .collect();
    open.sort_unstable();
    open.dedup();
    open.push(hi);
    open
}

/// One revision tried.
#[derive(Debug, Clone)]
pub struct Tried {
    pub verdict: Verdict,
    /// The verdict came from the store; nothing ran.
    pub cached: bool,
    /// The command's log, when it ran.
    pub log: Option<String>,
}

/// Something that tries a revision: a smoke on new pins, a bisect step.
pub trait Probe {
    /// Tries `rev` (a full revision of the upstream being pinned).
    fn probe(&mut self, rev: &str) -> Result<Tried, Error>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Narrows over `verdicts` (index -> verdict), counting tries.
    fn run(verdicts: &[Verdict]) -> ((isize, usize), usize, Vec<usize>) {
        let mut tries = 0;
        let mut skipped = Vec::new();
        let hi = verdicts.len() - 1;
        let found = narrow(-1, hi, &mut skipped, |i| {
            tries += 1;
            Ok(verdicts[i])
        })
        .unwrap();
        (found, tries, skipped)
    }

    #[test]
    fn finds_the_first_bad_in_logarithmic_tries() {
        use Verdict::*;
        let mut v = vec![Good; 1000];
        for x in v.iter_mut().skip(617) {
            *x = Bad;
        }
        let ((lo, hi), tries, _) = run(&v);
        assert_eq!((lo, hi), (616, 617));
        assert!(tries <= 10, "{tries} tries");
    }

    #[test]
    fn skips_leave_the_candidates_open() {
        use Verdict::*;
        let v = [Good, Skip, Skip, Bad, Bad];
        let ((lo, hi), _, skipped) = run(&v);
        assert_eq!((lo, hi), (0, 3));
        assert_eq!(candidates(lo, hi, &skipped), vec![1, 2, 3]);
    }

    #[test]
    fn nothing_between_adjacent_ends_and_the_same_commit_is_refused() {
        assert_eq!(pick_between(-1, 0, &[]), None);
        assert_eq!(pick_between(3, 4, &[]), None);
        let err = require_range("abc", "abc", "HEAD", "HEAD").unwrap_err();
        assert_eq!(err.exit_code(), 2);
    }

    #[test]
    fn exit_rules() {
        assert_eq!(Verdict::from_exit(Exit::Code(0)), Verdict::Good);
        assert_eq!(Verdict::from_exit(Exit::Code(125)), Verdict::Skip);
        assert_eq!(Verdict::from_exit(Exit::TimedOut), Verdict::Bad);
        assert!(aborts(Exit::Code(128)) && aborts(Exit::Signal(9)));
        assert!(!aborts(Exit::Code(127)) && !aborts(Exit::TimedOut));
        for v in [
            Verdict::Good,
            Verdict::Bad,
            Verdict::Skip,
            Verdict::Conflict,
        ] {
            assert_eq!(Verdict::parse(v.as_str()), v);
        }
    }

    proptest::proptest! {
        /// Whatever the verdicts, narrowing ends with lo < hi, never tries
        /// an index twice, and never panics.
        #[test]
        fn narrowing_terminates_in_range(verdicts in proptest::collection::vec(0u8..4, 1..200)) {
            let v: Vec<Verdict> = verdicts.iter().map(|b| match b {
                0 => Verdict::Good, 1 => Verdict::Bad, 2 => Verdict::Skip, _ => Verdict::Conflict,
            }).collect();
            let mut seen = std::collections::HashSet::new();
            let mut skipped = Vec::new();
            let (lo, hi) = narrow(-1, v.len() - 1, &mut skipped, |i| {
                if !seen.insert(i) {
                    return Err(Error::failed(format!("tried {i} twice")));
                }
                Ok(v[i])
            }).unwrap();
            proptest::prop_assert!(lo < hi as isize);
            proptest::prop_assert!(hi < v.len());
        }
    }
}
