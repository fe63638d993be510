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

/// Refuses a candidate whose source commit is marked not ok for a stable
/// release (`lockstep integrate mark --unstable`), naming the reasons. A
/// source commit this repository does not have cannot be checked: a warning.
pub fn check_stable_gate(
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

/// A candidate's files rewritten at the final version, in a staging
/// directory of their own (removed when this is dropped): nothing is in the
/// store yet.
pub struct Rewritten {
    pub outputs: Vec<std::path::PathBuf>,
    pub promoted: Promoted,
    _stage: tempfile::TempDir,
}

/// Rewrites every file of `candidate` (read from `dir`, each checked
/// against its sha256 in the record first) at `to`, into a new staging
/// directory under `work`.
pub fn rewrite_candidate(
    candidate: &Release,
    dir: &Path,
    to: &str,
    rewrite_stamps: bool,
    work: &Path,
) -> Result<Rewritten, Error> {
    let from = candidate.version.as_str();
    check_versions(from, to)?;
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
        let path = dir.join(&file.filename);
        if lockstep_core::hash::sha256_file(&path)? != file.sha256 {
            return Err(Error::failed(format!(
                "{} of {from} is not the file its release.json lists",
                file.filename
            ))
            .hint("the store was changed by hand: restore the file, or yank the version; nothing was promoted"));
        }
        let rewrite = if SdistName::looks_like(&file.filename) {
            rewrite_sdist
        } else {
            rewrite_wheel
        };
        let (out, found, gone) = rewrite(&path, stage.path(), from, to, rewrite_stamps)?;
        let name = lockstep_core::fs::file_name(&out);
        if !found.is_empty() {
            stamps.insert(name.clone(), found);
        }
        if !gone.is_empty() {
            dropped.insert(name, gone);
        }
        outputs.push(out);
    }
    let promoted = Promoted {
        from: from.to_string(),
        to: to.to_string(),
        wheels: outputs
            .iter()
            .map(|p| lockstep_core::fs::file_name(p))
            .collect(),
        stamps,
        rewrote_stamps: rewrite_stamps,
        dropped,
    };
    Ok(Rewritten {
        outputs,
        promoted,
        _stage: stage,
    })
}

/// The final's record (before its files are added): the candidate's
/// source and pins, channel `final`.
pub fn final_record(candidate: &Release, to: &str, tag: Option<&str>) -> Release {
    Release {
        version: to.to_string(),
        tag: tag.map(str::to_string),
        channel: Some("final".into()),
        source: candidate.source.clone(),
        pins: candidate.pins.clone(),
        promoted_from: Some(candidate.version.clone()),
        ..Release::default()
    }
}

/// Uploads the final's files with `uv publish` (the URL was checked before
/// anything was written).
pub fn upload_all(
    url: &str,
    uv: &lockstep_python::uv::Uv,
    files: &[std::path::PathBuf],
    sink: &dyn lockstep_core::events::Sink,
) -> Result<(), Error> {
    for file in files {
        let name = lockstep_core::fs::file_name(file);
        sink.note(format!(
            "uploading {name} to {}",
            crate::upload::without_userinfo(url)
        ));
        if crate::upload::upload(uv, url, file)? == lockstep_python::uv::Uploaded::AlreadyThere {
            sink.note(format!(
                "{name} is on the server already: skipped (released files are immutable)"
            ));
        }
    }
    Ok(())
}

pub use lockstep_python::restamp::{rewrite_sdist, rewrite_wheel};
