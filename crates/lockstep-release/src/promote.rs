//! `lockstep release promote VERSION --to FINAL`: a final release made from
//! a candidate's wheels (and sdists) without rebuilding them.
//!
//! Each wheel and sdist is rewritten at the final version by
//! `lockstep_python::restamp` (file name, dist-info, METADATA or PKG-INFO,
//! RECORD); text files that still hold the candidate's version are listed,
//! and rewritten with `--rewrite-stamps`.

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_core::Error;
use lockstep_python::sdist::SdistName;
use serde::Serialize;

use crate::store::{self, Release};

#[derive(Debug, Clone, Serialize)]
pub struct Promoted {
    pub from: String,
    pub to: String,
    pub wheels: Vec<String>,
    /// Members (per wheel) that still held the old version.
    pub stamps: BTreeMap<String, Vec<String>>,
    pub rewrote_stamps: bool,
    pub dropped: BTreeMap<String, Vec<String>>,
}

/// `release promote`: [`promote`], then, with `upload`, every final wheel
/// to that URL (the URL is checked before anything is written). With
/// `repo` (the project's repository), a candidate whose source commit holds
/// the stable-release gate ([`lockstep_core::marks::UNSTABLE_MARK`]) is
/// refused before anything is written.
pub fn promote_and_upload(
    index: &Path,
    from: &str,
    to: &str,
    rewrite_stamps: bool,
    upload: Option<(&str, &lockstep_python::uv::Uv)>,
    repo: Option<&Path>,
    sink: &dyn lockstep_core::events::Sink,
) -> Result<Promoted, Error> {
    promote_tagged(index, from, to, None, rewrite_stamps, upload, repo, sink)
}

/// [`promote_and_upload`], the final's record naming `tag`.
#[allow(clippy::too_many_arguments)]
pub fn promote_tagged(
    index: &Path,
    from: &str,
    to: &str,
    tag: Option<&str>,
    rewrite_stamps: bool,
    upload: Option<(&str, &lockstep_python::uv::Uv)>,
    repo: Option<&Path>,
    sink: &dyn lockstep_core::events::Sink,
) -> Result<Promoted, Error> {
    if let Some((url, _)) = upload {
        crate::upload::check_url(url)?;
    }
    if let Some(repo) = repo {
        check_stable_gate(index, from, repo, sink)?;
    }
    let promoted = promote(
        index,
        from,
        to,
        tag,
        rewrite_stamps,
        &crate::publish::work_dir(),
    )?;
    if let Some((url, uv)) = upload {
        let dir = index.join(store::FILES).join(to);
        let record = store::load_or_scan(&dir)?;
        for file in &record.files {
            sink.note(format!(
                "uploading {} to {}",
                file.filename,
                crate::upload::without_userinfo(url)
            ));
            let sent = crate::upload::upload(uv, url, &dir.join(&file.filename))?;
            if sent == lockstep_python::uv::Uploaded::AlreadyThere {
                sink.note(format!(
                    "{} is on the server already: skipped (released files are immutable)",
                    file.filename
                ));
            }
        }
    }
    for (wheel, members) in &promoted.stamps {
        let verb = match rewrite_stamps {
            true => "rewrote",
            false => "still holds the old version",
        };
        sink.warn(format!("{wheel}: {} {verb}", members.join(", ")));
    }
    Ok(promoted)
}

/// Refuses a candidate whose source commit is marked not ok for a stable
/// release (`lockstep integrate mark --unstable`), naming the reasons. A
/// source commit this repository does not have cannot be checked: a warning.
fn check_stable_gate(
    index: &Path,
    from: &str,
    repo: &Path,
    sink: &dyn lockstep_core::events::Sink,
) -> Result<(), Error> {
    let dir = index.join(store::FILES).join(from);
    if !dir.join(store::RELEASE_JSON).is_file() {
        // promote() names a missing candidate.
        return Ok(());
    }
    let Some(source) = store::load_or_scan(&dir)?.source else {
        sink.warn(format!(
            "{from} records no source commit: the stable-release gate cannot be checked"
        ));
        return Ok(());
    };
    let repo = lockstep_git::Repo::new(repo);
    if !repo.has_commit(&source).unwrap_or(false) {
        sink.warn(format!(
            "the source commit {} of {from} is not in this repository: the stable-release gate cannot be checked (fetch it first)",
            &source[..source.len().min(12)]
        ));
        return Ok(());
    }
    let mark = lockstep_core::marks::UNSTABLE_MARK;
    let shown = repo.try_git(&["show", &format!("{source}:{mark}")])?;
    if shown.code != 0 {
        return Ok(());
    }
    let mut err = Error::usage(format!(
        "{from} was cut from {}, which is marked not ok for a stable release ({mark})",
        &source[..source.len().min(12)]
    ));
    for reason in lockstep_core::marks::reasons(&shown.stdout) {
        err = err.cause(reason);
    }
    Err(err.hint("nothing was promoted: fix what the mark names, clear it (`lockstep integrate mark --stable`), cut and publish a new candidate, and promote that"))
}

/// `to` is a final version: not local, sorting above `from`.
pub fn check_versions(from: &str, to: &str) -> Result<(), Error> {
    let final_version = lockstep_python::wheel::check_stamp_version("--to", to)?;
    if !final_version.local().is_empty() {
        return Err(Error::usage(format!("--to {to} is a local version"))
            .hint("indexes refuse local versions"));
    }
    let source = lockstep_python::wheel::parse_version(from).map_err(Error::usage)?;
    if final_version <= source {
        return Err(
            Error::usage(format!("--to {to} does not sort above {from}")).hint(
                "promote a candidate to the release it leads to (3.14.0rc2026112501 -> 3.14.0)",
            ),
        );
    }
    Ok(())
}

/// Promotes `from` in the store under `index` to `to`.
pub fn promote(
    index: &Path,
    from: &str,
    to: &str,
    tag: Option<&str>,
    rewrite_stamps: bool,
    work: &Path,
) -> Result<Promoted, Error> {
    check_versions(from, to)?;
    let dir = index.join(store::FILES).join(from);
    if !dir.join(store::RELEASE_JSON).is_file() {
        return Err(Error::usage(format!("{from} is not in the release store"))
            .hint("publish it first (lockstep release publish)"));
    }
    let candidate = store::load_or_scan(&dir)?;
    if candidate.files.is_empty() {
        return Err(Error::usage(format!("{from} has no wheels in the store")));
    }
    fs_err::create_dir_all(work)?;
    let stage = tempfile::Builder::new()
        .prefix("promote-")
        .tempdir_in(work)
        .map_err(|e| Error::failed("cannot create a staging directory").cause(e.to_string()))?;
    let mut outputs = Vec::new();
    let mut stamps = BTreeMap::new();
    let mut dropped = BTreeMap::new();
    for file in &candidate.files {
        let rewrite = if SdistName::looks_like(&file.filename) {
            rewrite_sdist
        } else {
            rewrite_wheel
        };
        let (out, found, gone) = rewrite(
            &dir.join(&file.filename),
            stage.path(),
            from,
            to,
            rewrite_stamps,
        )?;
        let name = lockstep_core::fs::file_name(&out);
        if !found.is_empty() {
            stamps.insert(name.clone(), found);
        }
        if !gone.is_empty() {
            dropped.insert(name, gone);
        }
        outputs.push(out);
    }
    let release = Release {
        version: to.to_string(),
        tag: tag.map(str::to_string),
        channel: Some("final".into()),
        source: candidate.source.clone(),
        pins: candidate.pins.clone(),
        promoted_from: Some(from.to_string()),
        ..Release::default()
    };
    let _lock = store::lock(index)?;
    store::add(index, &release, &outputs)?;
    crate::index::write_index(index, None)?;
    Ok(Promoted {
        from: from.to_string(),
        to: to.to_string(),
        wheels: outputs
            .iter()
            .map(|p| {
                p.file_name()
                    .unwrap_or_default()
                    .to_string_lossy()
                    .into_owned()
            })
            .collect(),
        stamps,
        rewrote_stamps: rewrite_stamps,
        dropped,
    })
}

pub use lockstep_python::restamp::{rewrite_sdist, rewrite_wheel};
