//! `lockstep release prune`: retention of snapshots by the `[release] keep`
//! policy, without ever breaking a pin.
//!
//! Final versions are never pruned. Of the others, the newest
//! `keep.snapshots` (by PEP 440 order) and every one younger than
//! `keep.days` stay; with neither set, everything stays. A version named in
//! any `pylock*.toml`, `*requirements*.txt` or pin file on one of
//! `[release] branches` stays too (a snapshot that vanishes under a pin is
//! what broke the anchors' users). Pruned versions leave the store by a
//! rename out of `files/` before they are deleted, or are yanked instead
//! with `--yank`; the index is regenerated either way.

use std::path::Path;
use std::str::FromStr;

use lockstep_core::Error;
use lockstep_git::Repo;
use pep440_rs::Version;
use serde::Serialize;

use crate::store;

pub struct PruneRequest<'a> {
    pub index: &'a Path,
    pub keep_snapshots: Option<u32>,
    pub keep_days: Option<u32>,
    /// Where references are searched (None: no repository).
    pub repo: Option<&'a Repo>,
    pub branches: &'a [String],
    pub pin_files: &'a [String],
    pub yank: bool,
    pub dry_run: bool,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    pub removed: Vec<String>,
    pub yanked: Vec<String>,
    /// Versions the policy would prune but a branch refers to.
    pub referenced: Vec<String>,
    pub kept: usize,
}

pub fn prune(req: &PruneRequest) -> Result<Pruned, Error> {
    let releases = store::releases(req.index)?;
    let mut snapshots: Vec<(Version, String)> = releases
        .keys()
        .filter_map(|v| Version::from_str(v).ok().map(|parsed| (parsed, v.clone())))
        .filter(|(v, _)| v.is_pre() || v.is_dev())
        .collect();
    snapshots.sort();
    let now = jiff::Timestamp::now();
    let mut doomed = Vec::new();
    if req.keep_snapshots.is_some() || req.keep_days.is_some() {
        let count = snapshots.len();
        for (i, (_, version)) in snapshots.iter().enumerate() {
            let among_newest = req.keep_snapshots.is_some_and(|n| count - i <= n as usize);
            let young = req.keep_days.is_some_and(|days| {
                releases[version]
                    .files
                    .iter()
                    .filter_map(|f| jiff::Timestamp::from_str(&f.upload_time).ok())
                    .max()
                    .is_none_or(|t| now.duration_since(t).as_secs() < i64::from(days) * 86_400)
            });
            let already_yanked = releases[version].yanked.is_some() && req.yank;
            if !among_newest && !young && !already_yanked {
                doomed.push(version.clone());
            }
        }
    }
    let mut referenced = Vec::new();
    if let Some(repo) = req.repo {
        doomed.retain(|version| {
            let named = is_referenced(repo, req.branches, req.pin_files, version);
            if named {
                referenced.push(version.clone());
            }
            !named
        });
    }
    let mut out = Pruned {
        removed: Vec::new(),
        yanked: Vec::new(),
        referenced,
        kept: releases.len() - doomed.len(),
    };
    if req.dry_run {
        if req.yank {
            out.yanked = doomed
        } else {
            out.removed = doomed
        }
        return Ok(out);
    }
    for version in doomed {
        if req.yank {
            crate::index::yank(req.index, &version, "pruned by the retention policy")?;
            out.yanked.push(version);
        } else {
            let dir = req.index.join(store::FILES).join(&version);
            let gone = req
                .index
                .join(store::FILES)
                .join(format!(".{version}.pruned-{}", std::process::id()));
            fs_err::rename(&dir, &gone)?;
            fs_err::remove_dir_all(&gone)?;
            out.removed.push(version);
        }
    }
    crate::index::write_index(req.index, None)?;
    Ok(out)
}

/// Whether any manifest, requirements file or pin file on `branches` names `version`.
fn is_referenced(repo: &Repo, branches: &[String], pin_files: &[String], version: &str) -> bool {
    let mut specs: Vec<String> = vec![
        ":(glob)**/pylock*.toml".into(),
        ":(glob)**/*requirements*.txt".into(),
    ];
    specs.extend(pin_files.iter().cloned());
    branches.iter().any(|branch| {
        let rev = [
            format!("refs/heads/{branch}"),
            format!("refs/remotes/origin/{branch}"),
        ]
        .into_iter()
        .find(|r| {
            repo.try_git(&["rev-parse", "--verify", "--quiet", r])
                .is_ok_and(|o| o.code == 0)
        });
        let Some(rev) = rev else { return false };
        let mut args = vec!["grep", "-q", "-F", "-e", version, rev.as_str(), "--"];
        args.extend(specs.iter().map(String::as_str));
        repo.try_git(&args).is_ok_and(|o| o.code == 0)
    })
}
