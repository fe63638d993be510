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

use std::collections::BTreeMap;
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
    /// With `[release] hosting = "github-releases"`: where the pruned
    /// versions' Releases are deleted (after the store and index dropped them).
    pub github: Option<(&'a lockstep_github::Client, &'a lockstep_github::Repo)>,
}

#[derive(Debug, Clone, Serialize)]
pub struct Pruned {
    pub removed: Vec<String>,
    pub yanked: Vec<String>,
    /// Versions the policy would prune but a branch refers to.
    pub referenced: Vec<String>,
    pub kept: usize,
    /// The tags whose GitHub Releases were deleted (hosting on GitHub).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub releases_deleted: Vec<String>,
    /// GitHub Releases of pruned versions' tags that were left alone: they
    /// do not prove they hold that version (`tag`: why).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub releases_left: Vec<LeftAlone>,
}

/// A GitHub Release prune did not delete, and why.
#[derive(Debug, Clone, Serialize)]
pub struct LeftAlone {
    pub tag: String,
    pub version: String,
    pub why: String,
}

pub fn prune(req: &PruneRequest) -> Result<Pruned, Error> {
    if !req.index.is_dir() {
        return Ok(Pruned {
            removed: Vec::new(),
            yanked: Vec::new(),
            referenced: Vec::new(),
            kept: 0,
            releases_deleted: Vec::new(),
            releases_left: Vec::new(),
        });
    }
    let mut tx = match req.dry_run {
        true => None,
        false => Some(crate::txn::Transaction::begin(req.index)?),
    };
    let releases = match &tx {
        Some(tx) => tx.view().clone(),
        None => store::releases(req.index)?,
    };
    let mut doomed = doomed(req, &releases);
    let mut referenced = Vec::new();
    if !doomed.is_empty() && !req.branches.is_empty() {
        // Fail closed: a reference that cannot be checked keeps nothing from
        // being pruned, rather than pruning what a branch may pin.
        let repo = req.repo.ok_or_else(|| {
            Error::usage("release prune checks [release] branches for references, but this is not a git repository")
                .hint("run it in the repository, or set [release] branches = [] to prune without the check")
        })?;
        let revs = branch_revs(repo, req.branches)?;
        let mut kept = Vec::new();
        for version in doomed {
            if is_referenced(repo, &revs, req.pin_files, &version)? {
                referenced.push(version);
            } else {
                kept.push(version);
            }
        }
        doomed = kept;
    }
    let mut out = Pruned {
        removed: Vec::new(),
        yanked: Vec::new(),
        referenced,
        kept: releases.len() - doomed.len(),
        releases_deleted: Vec::new(),
        releases_left: Vec::new(),
    };
    let Some(mut tx) = tx.take() else {
        match req.yank {
            true => out.yanked = doomed,
            false => out.removed = doomed,
        }
        return Ok(out);
    };
    if req.yank {
        for version in &doomed {
            crate::txn::yank(&mut tx, version, "pruned by the retention policy")?;
        }
        tx.commit()?;
        out.yanked = doomed;
        return Ok(out);
    }
    for version in &doomed {
        tx.remove(version)?;
    }
    tx.commit()?;
    out.removed = doomed;
    // The Releases go last: one that fails to go is still a complete
    // Release the next prune (or a sync) finds, never an index entry
    // pointing at deleted files. Only a Release that proves it holds the
    // pruned version (its release.json names that version and tag) is
    // deleted; any other is left alone and named.
    if let Some((client, repo)) = req.github {
        for version in &out.removed {
            let record = &releases[version];
            let Some(tag) = record.tag.as_deref().filter(|_| record.hosted.is_some()) else {
                continue;
            };
            let Some(release) = client.release_for_tag(repo, tag)? else {
                continue;
            };
            if let Err(why) = require_owned(client, repo, &release, version, tag) {
                out.releases_left.push(LeftAlone {
                    tag: tag.to_string(),
                    version: version.clone(),
                    why: why.message,
                });
                continue;
            }
            client.delete_release(repo, &release).map_err(|e| {
                e.context(format!(
                    "{version} left the store and the index, but its GitHub Release {tag} could not be deleted"
                ))
                .hint("run `lockstep release prune` again, or delete the Release by hand")
            })?;
            out.releases_deleted.push(tag.to_string());
        }
    }
    Ok(out)
}

/// The versions the `[release] keep` policy prunes (finals never).
fn doomed(req: &PruneRequest, releases: &BTreeMap<String, store::Release>) -> Vec<String> {
    let mut snapshots: Vec<(Version, String)> = releases
        .keys()
        .filter_map(|v| Version::from_str(v).ok().map(|parsed| (parsed, v.clone())))
        .filter(|(v, _)| v.is_pre() || v.is_dev())
        .collect();
    snapshots.sort();
    let now = jiff::Timestamp::now();
    let mut doomed = Vec::new();
    if req.keep_snapshots.is_none() && req.keep_days.is_none() {
        return doomed;
    }
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
    doomed
}

/// Proves that `release` (the GitHub Release of `tag`) is `version`'s: its
/// `release.json` asset names that version and that tag. lockstep deletes
/// or reads back as its own only what it can prove it published.
pub fn require_owned(
    client: &lockstep_github::Client,
    repo: &lockstep_github::Repo,
    release: &lockstep_github::releases::Release,
    version: &str,
    tag: &str,
) -> Result<(), Error> {
    let not_ours = |why: String| {
        Error::failed(format!(
            "the GitHub Release of {tag} is not {version}'s: {why}"
        ))
        .hint("lockstep only deletes or reads back a Release whose release.json names its version and tag; nothing was changed on GitHub")
    };
    if release.tag_name != tag {
        return Err(not_ours(format!(
            "GitHub answered with the Release of `{}`",
            lockstep_core::error::printable_line(&release.tag_name)
        )));
    }
    let record = crate::github::release_record(client, repo, release)?
        .ok_or_else(|| not_ours("it holds no release.json".to_string()))?;
    let same_version = record
        .version
        .parse::<Version>()
        .ok()
        .zip(version.parse::<Version>().ok())
        .is_some_and(|(a, b)| a == b);
    if !same_version || record.tag.as_deref() != Some(tag) {
        return Err(not_ours(format!(
            "its release.json names {} (tag {})",
            lockstep_core::error::printable(&record.version),
            lockstep_core::error::printable(record.tag.as_deref().unwrap_or("none"))
        )));
    }
    Ok(())
}

/// Each branch's commits: the remote-tracking `origin/B` and the local `B`,
/// every one that exists (a stale `origin/B` behind a local branch that
/// pins a snapshot must not let the snapshot go, nor the other way round);
/// a branch that exists nowhere is an error.
fn branch_revs(repo: &Repo, branches: &[String]) -> Result<Vec<String>, Error> {
    let mut revs = Vec::new();
    for branch in branches {
        let found: Vec<String> = [
            format!("refs/remotes/origin/{branch}"),
            format!("refs/heads/{branch}"),
        ]
        .into_iter()
        .filter(|r| {
            repo.try_git(&["rev-parse", "--verify", "--quiet", r])
                .is_ok_and(|o| o.code == 0)
        })
        .collect();
        if found.is_empty() {
            return Err(Error::usage(format!(
                "[release] branches: `{branch}` is not a branch here (nor origin/{branch})"
            ))
            .hint("fetch it, or fix [release] branches; nothing was pruned"));
        }
        revs.extend(found);
    }
    Ok(revs)
}

/// Whether any manifest, requirements file or pin file at `revs` names `version`.
fn is_referenced(
    repo: &Repo,
    revs: &[String],
    pin_files: &[String],
    version: &str,
) -> Result<bool, Error> {
    let mut specs: Vec<String> = vec![
        ":(glob)**/pylock*.toml".into(),
        ":(glob)**/*requirements*.txt".into(),
    ];
    specs.extend(pin_files.iter().cloned());
    for rev in revs {
        let mut args = vec!["grep", "-q", "-F", "-e", version, rev.as_str(), "--"];
        args.extend(specs.iter().map(String::as_str));
        let out = repo.try_git(&args)?;
        match out.code {
            0 => return Ok(true),
            1 => {}
            _ => {
                return Err(Error::failed(format!(
                    "cannot search {rev} for references to {version}"
                ))
                .cause(out.stderr.trim().to_string())
                .hint("nothing was pruned"))
            }
        }
    }
    Ok(false)
}
