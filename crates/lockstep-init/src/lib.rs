//! `lockstep init`: a first lockstep.toml from what a repository already
//! holds, so that a project gets from "the demo passed" to "lockstep runs
//! my project" without assembling the file from five docs pages.
//!
//! [`survey`] finds the upstream pin, the Python packages and the test
//! suites; [`render`] writes them as real settings, each with a comment
//! saying where it came from; [`write_new`] creates the file and never
//! replaces one. The caller checks the text with lockstep's own
//! configuration loader before writing, so what `init` writes is a file
//! every command accepts.

pub mod render;
pub mod survey;

use std::io::Write;
use std::path::{Path, PathBuf};

use lockstep_core::Error;

pub use render::render;
pub use survey::{survey, FoundPackage, FoundPin, Survey};

/// The file `init` writes.
pub const FILE: &str = "lockstep.toml";

/// Where lockstep.toml goes for `dir`, refused when `dir` is not inside a
/// git work tree or already has one (a file, a link, anything by that
/// name): nothing is ever replaced.
pub fn target(dir: &Path) -> Result<PathBuf, Error> {
    if !dir.is_dir() {
        return Err(Error::usage(format!("{} is not a directory", dir.display()))
            .hint("run `lockstep init` in your repository's checkout, or name it: `lockstep init DIR`"));
    }
    lockstep_git::Repo::discover(dir).map_err(|e| {
        Error::from(e).hint("`lockstep init` looks at a git repository: run it in your project's checkout (or `git init` first); nothing was written")
    })?;
    let path = dir.join(FILE);
    if path.symlink_metadata().is_ok() {
        return Err(Error::usage(format!("{} already exists", path.display()))
            .hint("lockstep init never replaces a configuration: edit it, or move it aside and run `lockstep init` again; nothing was written"));
    }
    Ok(path)
}

/// Creates `path` with `text`; an existing file (made since [`target`]
/// looked) is refused, never replaced, and a failed write leaves no file.
pub fn write_new(path: &Path, text: &str) -> Result<(), Error> {
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .open(path)
        .map_err(|e| {
            Error::usage(format!("cannot create {}", path.display()))
                .cause(e.to_string())
                .hint("lockstep init never replaces a file; nothing was written")
        })?;
    let written = file
        .write_all(text.as_bytes())
        .and_then(|()| file.sync_all());
    if let Err(e) = written {
        let _ = std::fs::remove_file(path);
        return Err(Error::failed(format!("cannot write {}", path.display())).cause(e.to_string()));
    }
    Ok(())
}
