//! The stable-release gate: `integrate mark --unstable REASON` commits
//! `.lockstep/unstable` (one reason per line) to the superproject, `mark
//! --stable` removes it. While it is there, or while reverts are carried,
//! `status` and the pull request say the project is not ok for a stable
//! release; `release promote` refuses a candidate cut from a commit that
//! holds the file, naming the reasons (megabump: "mark the project as not
//! ok to stable release" when a breakage is carried).

use lockstep_core::marks::{reasons, UNSTABLE_MARK};
use lockstep_core::Error;
use serde::Serialize;

use crate::Integrate;

/// The longest reason.
const MAX_REASON: usize = 500;

/// What `integrate mark` did.
#[derive(Debug, Clone, Serialize)]
pub struct Marked {
    /// The reasons the mark holds now (empty: ok for a stable release).
    pub reasons: Vec<String>,
    /// The superproject commit made, when one was.
    pub commit: Option<String>,
}

/// The reasons committed in HEAD's mark file.
pub fn unstable_reasons(ig: &Integrate) -> Result<Vec<String>, Error> {
    unstable_reasons_in(&ig.superproject)
}

/// [`unstable_reasons`] of the superproject `sup`.
pub fn unstable_reasons_in(sup: &lockstep_git::Repo) -> Result<Vec<String>, Error> {
    let out = sup.try_git(&["show", &format!("HEAD:{UNSTABLE_MARK}")])?;
    Ok(if out.code == 0 {
        reasons(&out.stdout)
    } else {
        Vec::new()
    })
}

/// `integrate mark --unstable REASON` (`Some`) or `--stable` (`None`).
pub fn mark(ig: &Integrate, unstable: Option<&str>) -> Result<Marked, Error> {
    let reason = unstable.map(check_reason).transpose()?;
    let _lock = ig.lock("integrate mark")?;
    let _session = crate::recover::begin_session(ig, "integrate mark")?;
    ig.require_clean()?;
    let mut current = crate::mark::unstable_reasons(ig)?;
    let path = lockstep_core::fs::inside_tree(
        ig.superproject.dir(),
        UNSTABLE_MARK,
        "the stable-release mark",
    )?;
    let message = match &reason {
        Some(reason) => {
            if current.contains(reason) {
                return Ok(Marked {
                    reasons: current,
                    commit: None,
                });
            }
            current.push(reason.clone());
            let text = format!(
                "# Not ok for a stable release (lockstep integrate mark); one reason per line.\n{}\n",
                current.join("\n")
            );
            if let Some(dir) = path.parent() {
                fs_err::create_dir_all(dir)?;
            }
            lockstep_core::fs::write_atomic(&path, text.as_bytes())?;
            ig.superproject.git(&["add", "--", UNSTABLE_MARK])?;
            format!("Mark the project as not ok for a stable release: {reason}\n")
        }
        None => {
            if current.is_empty() && !path.exists() {
                return Ok(Marked {
                    reasons: Vec::new(),
                    commit: None,
                });
            }
            ig.superproject
                .git(&["rm", "--quiet", "--ignore-unmatch", "--", UNSTABLE_MARK])?;
            current.clear();
            "Mark the project as ok for a stable release\n".to_string()
        }
    };
    let commit = match ig.superproject.commit_staged(&message, false) {
        Ok(commit) => commit,
        Err(e) => {
            // Nothing half-done: the mark goes back to what HEAD holds.
            let sp = &ig.superproject;
            let _ = sp.try_git(&["reset", "--quiet", "--", UNSTABLE_MARK]);
            let restored = sp.try_git(&["checkout", "--quiet", "HEAD", "--", UNSTABLE_MARK]);
            if !restored.is_ok_and(|o| o.code == 0) {
                let _ = std::fs::remove_file(&path);
            }
            return Err(e);
        }
    };
    Ok(Marked {
        reasons: current,
        commit: Some(commit),
    })
}

fn check_reason(reason: &str) -> Result<String, Error> {
    let reason = reason.trim();
    if reason.is_empty() || reason.contains(['\n', '\r']) || reason.len() > MAX_REASON {
        return Err(Error::usage(format!(
            "--unstable needs a reason of one line, 1 to {MAX_REASON} characters"
        ))
        .hint("e.g. --unstable \"carries a revert of 1a2b3c4d5e6f; ROCm tests disabled\""));
    }
    Ok(reason.to_string())
}
