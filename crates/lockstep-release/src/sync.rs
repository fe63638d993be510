//! `lockstep release sync --from-github`: the store's records and the
//! index rebuilt from the repository's GitHub Releases.
//!
//! With `[release] hosting = "github-releases"` every published version's
//! files are assets of its Release, and the last asset uploaded is the
//! version's `release.json`. The store in the Actions cache is then only a
//! copy: when the cache is evicted, this puts every version back from the
//! Releases (one listing, one small download per Release), so the next
//! index still lists every snapshot. Everything is read and checked before
//! anything is written: a Release whose files were deleted by hand, or a
//! store that says otherwise than the Releases, is an error naming the
//! version, and the store is left as it was.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_github::releases::Release as GithubRelease;
use lockstep_github::{Client, Repo};
use serde::Serialize;

use crate::index::IndexReport;
use crate::store::{self, Release};

/// What `release sync` did.
#[derive(Debug, Clone, Serialize)]
pub struct Synced {
    pub repository: String,
    /// Releases GitHub listed.
    pub releases: usize,
    /// Versions written into the store from their Release.
    pub restored: Vec<String>,
    /// Versions the store already had, the same as their Release.
    pub already_there: Vec<String>,
    /// Releases without a `release.json` (not published by lockstep with
    /// hosting on GitHub, or still being published): left alone.
    pub not_lockstep: Vec<String>,
    pub index: IndexReport,
}

/// The API client (`$GITHUB_API_URL`, `$GITHUB_TOKEN`) and the repository
/// (`$GITHUB_REPOSITORY`, else `origin` of the repository around `root`).
pub fn connect(root: &Path) -> Result<(Client, Repo), Error> {
    connect_to(root, None)
}

/// [`connect`], the repository given (`--repo OWNER/NAME`) when `Some`.
pub fn connect_to(root: &Path, repo: Option<&str>) -> Result<(Client, Repo), Error> {
    let client = Client::from_env()?;
    let origin = lockstep_git::Repo::discover(root)
        .ok()
        .and_then(|git| git.remote_url("origin").ok().flatten());
    let repo = lockstep_github::repo::resolve(repo, origin.as_deref(), &client.web_host())?;
    Ok((client, repo))
}

/// Reads every Release of `repo`, checks each against its assets and the
/// store under `index`, then writes the missing records and the index.
pub fn from_github(
    index: &Path,
    client: &Client,
    repo: &Repo,
    sink: &dyn Sink,
) -> Result<Synced, Error> {
    let listed = client.list_releases(repo)?;
    sink.note(format!(
        "{} lists {}",
        repo,
        lockstep_core::words::count(listed.len(), "release", "releases")
    ));
    let mut records: BTreeMap<String, Release> = BTreeMap::new();
    let mut not_lockstep = Vec::new();
    for release in listed.iter().filter(|r| !r.draft) {
        match record_of(client, repo, release)? {
            Some(record) => {
                if let Some(first) = records.get(&record.version) {
                    return Err(Error::failed(format!(
                        "two GitHub Releases hold version {}: {} and {}",
                        record.version,
                        first.tag.as_deref().unwrap_or("?"),
                        release.tag_name
                    ))
                    .hint("delete the wrong Release; nothing was changed"));
                }
                records.insert(record.version.clone(), record);
            }
            None => not_lockstep.push(release.tag_name.clone()),
        }
    }
    let mut tx = crate::txn::Transaction::begin(index)?;
    let stored = tx.view().clone();
    let mut restored = Vec::new();
    let mut already_there = Vec::new();
    for (version, record) in &records {
        match stored.get(version) {
            Some(have) => {
                agree(version, have, record)?;
                already_there.push(version.clone());
            }
            None => restored.push(version.clone()),
        }
    }
    for (version, have) in &stored {
        if have.hosted.is_some() && !records.contains_key(version) {
            return Err(Error::failed(format!(
                "the store lists {version}, hosted on GitHub, but no GitHub Release holds it"
            ))
            .cause("its Release was deleted, or its release.json asset was")
            .hint(format!(
                "restore the Release, or remove files/{version} from the store (`lockstep release prune` removes old snapshots from both); nothing was changed"
            )));
        }
    }
    for version in &restored {
        tx.set_record(records[version].clone())?;
    }
    let report = tx.commit()?;
    Ok(Synced {
        repository: repo.to_string(),
        releases: listed.len(),
        restored,
        already_there,
        not_lockstep,
        index: report,
    })
}

/// The version record a Release carries, checked against its assets;
/// `None` when it carries none.
fn record_of(
    client: &Client,
    repo: &Repo,
    release: &GithubRelease,
) -> Result<Option<Release>, Error> {
    let Some(record) = crate::github::release_record(client, repo, release)? else {
        return Ok(None);
    };
    let tag = lockstep_core::error::printable_line(&release.tag_name);
    let refuse = |what: String| {
        Error::failed(format!(
            "the release.json of the GitHub Release {tag} {what}"
        ))
        .hint("it was not written by `release publish --github-release` with hosting on GitHub for this Release: delete that asset (or the Release). Nothing was changed")
    };
    let normal = record
        .version
        .parse::<pep440_rs::Version>()
        .is_ok_and(|v| v.to_string() == record.version);
    if !normal || store::check_version_name(&record.version).is_err() {
        return Err(refuse(format!(
            "names version `{}`, not a PEP 440 version in normal form",
            lockstep_core::error::printable(&record.version)
        )));
    }
    if record.tag.as_deref() != Some(release.tag_name.as_str()) {
        return Err(refuse(format!(
            "names the tag `{}`, not its own",
            lockstep_core::error::printable(record.tag.as_deref().unwrap_or("none"))
        )));
    }
    let expected = client.release_download_base(repo, release)?;
    match record.hosted.as_deref() {
        Some(hosted) if hosted == expected => {}
        Some(hosted) => {
            return Err(refuse(format!(
                "says its files are at `{}`, not at this Release's downloads ({expected})",
                lockstep_http::shown(hosted)
            )))
        }
        None => return Err(refuse("gives no download URL".to_string())),
    }
    store::check_record_named(
        &format!("the release.json of the GitHub Release {tag}"),
        &record,
    )
    .map_err(|e| {
        e.hint("delete that asset (or the Release) if it is not lockstep's; nothing was changed")
    })?;
    for file in &record.files {
        let Some(have) = release.assets.iter().find(|a| a.name == file.filename) else {
            return Err(Error::failed(format!(
                "the GitHub Release {tag} lacks {}, which {} lists",
                file.filename, record.version
            ))
            .cause("an asset was deleted by hand: the index would link to a missing file")
            .hint(format!(
                "upload the file again (`lockstep release publish --github-release` from its wheelhouse), or yank {} and delete its Release; nothing was changed",
                record.version
            )));
        };
        let digest_differs = have
            .digest
            .as_deref()
            .and_then(|d| d.strip_prefix("sha256:"))
            .is_some_and(|d| !d.eq_ignore_ascii_case(&file.sha256));
        if have.size != file.size || digest_differs {
            return Err(Error::failed(format!(
                "the GitHub Release {tag} holds a {} that is not the one {} lists",
                file.filename, record.version
            ))
            .cause(format!(
                "asset: {} bytes{}; release.json: {} bytes, sha256 {}",
                have.size,
                have.digest
                    .as_deref()
                    .map(|d| format!(", {d}"))
                    .unwrap_or_default(),
                file.size,
                file.sha256
            ))
            .hint("released files are immutable: restore the original file; nothing was changed"));
        }
    }
    Ok(Some(record))
}

/// A version both in the store and on GitHub must be the same files.
fn agree(version: &str, have: &Release, release: &Release) -> Result<(), Error> {
    let files = |r: &Release| -> Vec<(String, String)> {
        let mut f: Vec<(String, String)> = r
            .files
            .iter()
            .map(|f| (f.filename.clone(), f.sha256.clone()))
            .collect();
        f.sort();
        f
    };
    if files(have) == files(release) {
        return Ok(());
    }
    Err(Error::failed(format!(
        "the store and the GitHub Release disagree about {version}"
    ))
    .cause(format!(
        "store: {}; Release: {}",
        names(have),
        names(release)
    ))
    .hint(format!(
        "the Release is what installers download: remove files/{version} from the store and sync again; nothing was changed"
    )))
}

fn names(r: &Release) -> String {
    r.files
        .iter()
        .map(|f| format!("{} ({})", f.filename, &f.sha256[..12.min(f.sha256.len())]))
        .collect::<Vec<_>>()
        .join(", ")
}
