//! What went wrong in a git call, as values code decides on.
//!
//! A caller that branches on a failure (outside a repository, a ref that
//! names nothing, a merge that stopped at conflicts, a ref another process
//! took) matches a variant; nothing compares git's words or a message's
//! text. Each variant is told by git's exit status and by asking git about
//! the repository afterwards, never by reading its stderr, which is kept
//! only to be shown. At the boundary a [`GitError`] becomes a
//! [`lockstep_core::Error`] (first line, `cause:` lines, `hint:`, exit
//! class) through `From`, as lockstep prints every error.

use std::path::PathBuf;

use lockstep_core::Error;

use crate::GIT_TIMEOUT;

/// A failed git call.
#[derive(Debug, thiserror::Error)]
pub enum GitError {
    /// git could not be started: not installed or not on PATH (or the OS
    /// refused an argument).
    #[error("cannot run git")]
    Spawn(#[source] std::io::Error),
    /// An argument or environment value holds a NUL, which no process can
    /// be given: a name or path from lockstep.toml or the command line.
    #[error("cannot pass {0:?} to git: it contains a NUL character")]
    Nul(String),
    /// git ran past [`GIT_TIMEOUT`] and was stopped.
    #[error(
        "`git {command}` in {} did not finish within {} minutes and was stopped",
        dir.display(),
        GIT_TIMEOUT.as_secs() / 60
    )]
    TimedOut { command: String, dir: PathBuf },
    /// `dir` is in no git work tree (`git rev-parse` found none).
    #[error("{} is not inside a git work tree", dir.display())]
    NotARepository {
        dir: PathBuf,
        /// The command that found none, and what git said.
        command: String,
        git_said: String,
    },
    /// `rev` names no commit in the repository at `dir`.
    #[error("`{rev}` does not name a commit in {}", dir.display())]
    NoSuchRef { rev: String, dir: PathBuf },
    /// A merge, cherry-pick or rebase stopped at conflicts; `paths` are
    /// the files left unmerged (the operation is still in progress).
    #[error("`git {command}` stopped at conflicts in {}", dir.display())]
    Conflict {
        command: String,
        dir: PathBuf,
        paths: Vec<String>,
    },
    /// Creating the ref `name` failed because it exists, or because
    /// another process holds its lock while creating it.
    #[error("{name} exists already in {}", dir.display())]
    RefExists {
        name: String,
        dir: PathBuf,
        git_said: String,
    },
    /// Any other failure: the command, its exit status and what git said.
    #[error("`git {command}` failed in {}", dir.display())]
    Failed {
        command: String,
        dir: PathBuf,
        code: i32,
        stderr: String,
    },
}

impl From<GitError> for Error {
    fn from(e: GitError) -> Error {
        let message = e.to_string();
        match e {
            GitError::Spawn(io) => match io.kind() {
                std::io::ErrorKind::NotFound => Error::failed(message)
                    .cause(io.to_string())
                    .hint("install git and put it on PATH"),
                std::io::ErrorKind::InvalidInput => {
                    Error::usage("cannot pass an argument to git: it contains a NUL character")
                        .cause(io.to_string())
                        .hint("check the names and paths in lockstep.toml and on the command line")
                }
                _ => Error::failed(message).cause(io.to_string()),
            },
            GitError::Nul(_) => Error::usage(message).hint(
                "remove the NUL (`\\u0000`) from that name or path in lockstep.toml or on the command line",
            ),
            GitError::TimedOut { .. } => Error::failed(message).hint(
                "check for a stalled network connection or a held lock (index.lock), then run it again",
            ),
            GitError::NotARepository {
                dir,
                command,
                git_said,
            } => Error::usage(message)
                .cause(format!("`git {command}` failed in {}", dir.display()))
                .cause(git_said)
                .hint("run lockstep from the superproject's checkout, or pass --config"),
            GitError::NoSuchRef { .. } => Error::usage(message).hint(
                "check the revision (an ambiguous abbreviation also fails); fetch if it is new",
            ),
            GitError::Conflict { paths, .. } => paths
                .iter()
                .fold(Error::failed(message), |e, p| e.cause(format!("conflict: {p}"))),
            GitError::RefExists { git_said, .. } => Error::failed(message).cause(git_said),
            GitError::Failed { code, stderr, .. } => {
                let said = stderr.trim();
                Error::failed(message).cause(if said.is_empty() {
                    format!("exit status {code}")
                } else {
                    said.to_string()
                })
            }
        }
    }
}
