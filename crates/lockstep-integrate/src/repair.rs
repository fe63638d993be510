//! `integrate repair`: a state database that cannot be read is moved aside
//! (never deleted) and a new one started, with the integrate record rebuilt
//! from git, which is the source of truth: the current branch's "Start ...
//! integrate BRANCH" commit names the branch and, through its parent, the
//! base. Probe results are a cache and come back as smokes rerun.

use std::path::{Path, PathBuf};

use crate::config::IntegrateConfig;
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_store::{RepoLock, Store};
use serde::Serialize;

use crate::journal::{StartJournal, INTEGRATE_RECORD};

/// What `repair` did.
#[derive(Debug, Clone, Serialize)]
pub struct Repaired {
    /// Where the old database was moved (`None`: it was readable, nothing moved).
    pub moved_aside: Option<PathBuf>,
    /// The integrate branch whose record was rebuilt from git.
    pub integrate_branch: Option<String>,
}

/// How far back on the current branch the start commit is looked for.
const MAX_COMMITS: &str = "100000";

/// Repairs the state database of the repository at `root` (lockstep.toml's
/// directory); `force` moves even a readable database aside.
pub fn repair(cfg: &IntegrateConfig, root: &Path, force: bool) -> Result<Repaired, Error> {
    crate::validate::config(cfg)?;
    let superproject = Repo::discover(root)?;
    let state_dir = superproject.state_dir()?;
    lockstep_store::ensure_state_dir(&state_dir)?;
    let _lock = RepoLock::acquire(&state_dir, "integrate repair")?;
    // Readable means every row converts, not just that SQLite opens it.
    let readable = Store::open(&state_dir)
        .and_then(|store| store.inventory())
        .is_ok();
    if readable && !force {
        return Ok(Repaired {
            moved_aside: None,
            integrate_branch: None,
        });
    }
    let moved_aside = Store::move_aside(&state_dir)?;
    let store = Store::open(&state_dir)?;
    let integrate_branch = match rebuild_record(&superproject, &cfg.upstream_name)? {
        Some(record) => {
            store.set(INTEGRATE_RECORD, &record)?;
            Some(record.branch)
        }
        None => None,
    };
    Ok(Repaired {
        moved_aside,
        integrate_branch,
    })
}

/// The integrate record of the current branch, from its start commit.
fn rebuild_record(sp: &Repo, upstream_name: &str) -> Result<Option<StartJournal>, Error> {
    let Some(branch) = sp.current_branch()? else {
        return Ok(None);
    };
    let subject = format!("Start {upstream_name} integrate {branch}");
    let log = sp.git(&[
        "log",
        "--first-parent",
        "-n",
        MAX_COMMITS,
        "--format=%H %P%x1f%s",
        "HEAD",
    ])?;
    for line in log.lines() {
        let Some((ids, s)) = line.split_once('\x1f') else {
            continue;
        };
        if s != subject {
            continue;
        }
        let mut ids = ids.split_whitespace();
        let (Some(_start), Some(parent)) = (ids.next(), ids.next()) else {
            continue;
        };
        return Ok(Some(StartJournal {
            branch,
            base: parent.to_string(),
            original_branch: None,
            original_head: parent.to_string(),
        }));
    }
    Ok(None)
}
