//! A pin in its superproject: where upstream's history lives, what is
//! checked out, staging a new commit, building the index entry of one for a
//! commit made without the work tree, and the changes to the pin that are
//! not lockstep's.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_git::{Dirty, Oid, Repo};

use crate::{Checksums, Kind, Pin};

/// The name of the bare clone of upstream under the state directory that a
/// pin kept in a file reads history from.
const UPSTREAM_CLONE: &str = "upstream.git";

/// An index entry for the pin (`git update-index --cacheinfo MODE,OID,PATH`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IndexEntry {
    pub mode: &'static str,
    pub oid: Oid,
    pub path: String,
}

impl IndexEntry {
    /// `MODE,OID,PATH`, what `update-index --cacheinfo` takes.
    pub fn cacheinfo(&self) -> String {
        format!("{},{},{}", self.mode, self.oid, self.path)
    }
}

/// Changes to the pin in the work tree that lockstep did not make: in the
/// repository at `dir`, as `git status` lists them.
#[derive(Debug, Clone, Default)]
pub struct PinDirt {
    pub dir: PathBuf,
    pub entries: Vec<Dirty>,
}

impl Pin {
    /// Where upstream's history lives for this pin in `superproject`: the
    /// submodule's checkout (which must be checked out), or for a pin kept
    /// in a file a bare clone of `upstream_url` under `state_dir` (created
    /// here, filled by the first fetch), so every history query works the
    /// same way. A pin in a file without an upstream URL is a usage error.
    pub fn upstream_history(
        &self,
        superproject: &Repo,
        state_dir: &Path,
        upstream_url: Option<&str>,
    ) -> Result<Repo, Error> {
        if let Kind::Submodule = self.kind {
            self.require_listed(superproject)?;
            let dir = superproject.dir().join(&self.path);
            if !dir.join(".git").exists() {
                return Err(Error::usage(format!(
                    "the submodule `{}` is not checked out in {}",
                    self.path,
                    superproject.dir().display()
                ))
                .hint(format!("run `git submodule update --init {}`", self.path)));
            }
            return Ok(Repo::new(dir));
        }
        let table = self.setting.split(' ').next().unwrap_or("[integrate]");
        if upstream_url.is_none() {
            return Err(
                Error::usage(format!("{} needs {table} upstream-url", self.setting)).hint(format!(
                    "set upstream-url to the repository the revisions in {} come from",
                    self.path
                )),
            );
        }
        self.read_at(superproject, "HEAD")?;
        let clone = state_dir.join(UPSTREAM_CLONE);
        if !clone.join("HEAD").exists() {
            fs_err::create_dir_all(state_dir)?;
            let made =
                Repo::new(state_dir).try_git(&["init", "--quiet", "--bare", UPSTREAM_CLONE])?;
            if made.code != 0 {
                return Err(
                    Error::failed(format!("cannot create {}", clone.display())).cause(made.stderr)
                );
            }
        }
        Ok(Repo::new(clone))
    }

    /// A submodule pin must be one of `superproject`'s submodules at HEAD.
    fn require_listed(&self, superproject: &Repo) -> Result<(), Error> {
        if superproject.gitlink("HEAD", &self.path)?.is_some() {
            return Ok(());
        }
        let found = superproject.submodule_paths("HEAD").unwrap_or_default();
        let listed = if found.is_empty() {
            "it has no submodules".to_string()
        } else {
            format!("its submodules: {}", found.join(", "))
        };
        Err(Error::usage(format!(
            "`{}` ({}) is not a submodule of {} ({listed})",
            self.path,
            self.setting,
            superproject.dir().display()
        ))
        .hint(format!(
            "set {} in lockstep.toml to the path of the pinned submodule",
            self.setting
        )))
    }

    /// The upstream commit in `superproject`'s work tree now: the
    /// submodule's HEAD, or the commit its file holds.
    pub fn checked_out(&self, superproject: &Repo) -> Result<Oid, Error> {
        match self.kind {
            Kind::Submodule => Repo::new(superproject.dir().join(&self.path)).head(),
            _ => self.read_worktree(superproject.dir()),
        }
    }

    /// A revision naming what [`Pin::checked_out`] returns, in the
    /// upstream history, found without starting git: `HEAD` of the
    /// submodule's checkout, else the commit in the work tree's pin file.
    /// What a walk that must start before anything else is resolved names.
    pub fn checked_out_revision(&self, superproject: &Repo) -> Result<String, Error> {
        match self.kind {
            Kind::Submodule => Ok("HEAD".to_string()),
            _ => self.read_worktree(superproject.dir()),
        }
    }

    /// Stages `commit` as the pin in `superproject`'s index: the gitlink, or
    /// the file written (every other byte kept, the archive's checksum
    /// fetched and written in the same change) and added.
    pub fn stage(
        &self,
        superproject: &Repo,
        commit: &str,
        checksums: &dyn Checksums,
    ) -> Result<(), Error> {
        match self.kind {
            Kind::Submodule => superproject.stage_gitlink(&self.path, commit),
            _ => {
                self.write(superproject.dir(), commit, checksums)?;
                superproject.git(&["add", "--", &self.path])?;
                Ok(())
            }
        }
    }

    /// The index entry that pins `commit` in a tree made from `base` (a
    /// commit of `superproject`), without touching the work tree: the
    /// gitlink, or the file as it is at `base` with the pin rewritten (every
    /// other byte kept), written as a blob.
    pub fn index_entry(
        &self,
        superproject: &Repo,
        base: &str,
        commit: &str,
        checksums: &dyn Checksums,
    ) -> Result<IndexEntry, Error> {
        let oid = match self.kind {
            Kind::Submodule => {
                return Ok(IndexEntry {
                    mode: "160000",
                    oid: commit.to_string(),
                    path: self.path.clone(),
                })
            }
            Kind::File => self.blob(superproject, &self.render("", commit, None)?)?,
            Kind::Pattern { .. } => {
                let text = self.text_at(superproject, base)?;
                let sum = match self.archive_url(commit) {
                    Some(url) => Some(checksums.sha256(&url)?),
                    None => None,
                };
                self.blob(superproject, &self.render(&text, commit, sum.as_deref())?)?
            }
        };
        Ok(IndexEntry {
            mode: "100644",
            oid,
            path: self.path.clone(),
        })
    }

    fn blob(&self, repo: &Repo, text: &str) -> Result<Oid, Error> {
        let out = repo.git_env(
            &["hash-object", "-w", "--stdin"],
            &[],
            Some(text.as_bytes()),
        )?;
        Ok(out.trim().to_string())
    }

    /// Changes to the pin in `superproject`'s work tree that lockstep did
    /// not make: files changed in the submodule's checkout; for a pin in a
    /// file, the file gone (` D`) or holding no pin (` M`). A file lockstep
    /// will not read (too large, a FIFO, a device) is an error naming it,
    /// not blamed on uncommitted changes. The submodule pointer itself
    /// moving is lockstep's to do, so it is not listed.
    pub fn dirt(&self, superproject: &Repo) -> Result<PinDirt, Error> {
        let dir = superproject.dir();
        match self.kind {
            Kind::Submodule => {
                let sub = Repo::new(dir.join(&self.path));
                Ok(PinDirt {
                    entries: sub.dirty()?,
                    dir: sub.dir().to_path_buf(),
                })
            }
            _ => {
                let dirt = |code: &str| PinDirt {
                    dir: dir.to_path_buf(),
                    entries: vec![Dirty {
                        code: code.to_string(),
                        path: self.path.clone(),
                    }],
                };
                if dir.join(&self.path).symlink_metadata().is_err() {
                    return Ok(dirt(" D"));
                }
                let text = self.worktree_text(dir)?;
                if self.parse(&text).is_err() {
                    return Ok(dirt(" M"));
                }
                Ok(PinDirt {
                    dir: dir.to_path_buf(),
                    entries: Vec::new(),
                })
            }
        }
    }

    /// The pin's file as it is at `rev` (at most [`crate::MAX_PIN_FILE`]).
    pub(crate) fn text_at(&self, repo: &Repo, rev: &str) -> Result<String, Error> {
        let spec = format!("{rev}:{}", self.path);
        let missing = |e: Error| e.context(format!("{rev} has no pin file `{}`", self.path));
        let size = repo.blob_size(&spec).map_err(missing)?;
        if size > crate::MAX_PIN_FILE {
            return Err(Error::usage(format!(
                "the pin file {} at {rev} is {size} bytes, larger than {}, the most lockstep reads from it",
                self.path,
                crate::MAX_PIN_FILE
            ))
            .hint(format!(
                "a pin file is one line (a pin inside a file: a few KiB of build source); check {} names the right file",
                self.setting
            )));
        }
        repo.git(&["show", "--end-of-options", &spec])
            .map_err(missing)
    }
}
