//! `lockstep init`: a first lockstep.toml from what a repository already
//! holds, so that a project gets from "the demo passed" to "lockstep runs
//! my project" without assembling the file from five docs pages.
//!
//! [`survey`] finds the upstream pin, the Python packages and the test
//! suites; [`render`] writes them as real settings, each with a comment
//! saying where it came from; [`make`] checks the text with every table's
//! loader (the list the caller hands it: lockstep's own) before anything
//! is written, so what `init` writes is a file every command accepts;
//! [`write_new`] creates the file and never replaces one; [`human`] says
//! what was written.

pub mod human;
pub mod render;
pub mod survey;

use std::io::Write;
use std::path::{Path, PathBuf};

use lockstep_core::config::SectionSpec;
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

/// What `init` makes for a directory.
pub struct Made {
    /// Where lockstep.toml goes ([`target`]).
    pub path: PathBuf,
    /// Its text.
    pub text: String,
    /// What it was made from.
    pub survey: Survey,
}

/// The lockstep.toml `init` makes for `dir`, nothing written: where it
/// goes ([`target`]), the [`survey`] (the pin at `pin` when several are
/// found), [`render`]ed with the IREE release `iree`, then checked by
/// `sections` (every table's loader): a text one of them refuses is a bug
/// of init's, reported as such.
pub fn make(
    dir: &Path,
    pin: Option<&str>,
    iree: &str,
    sections: &[SectionSpec],
) -> Result<Made, Error> {
    let path = target(dir)?;
    let survey = survey(dir, pin)?;
    // A name with a control or bidi character is refused here (exit 2), so
    // the text holds nothing the terminal rule escapes: `--dry-run` prints
    // the bytes `init` writes.
    let text = render(&survey, iree)?;
    let root = dir.to_path_buf();
    lockstep_core::config::parse(text.clone(), Some(path.clone()), root, sections).map_err(
        |e| {
            Error::failed(
                "lockstep init made a configuration lockstep refuses (a bug: please report it)",
            )
            .cause(e.to_string())
            .hint("nothing was written; `lockstep init --dry-run` prints what it made")
        },
    )?;
    Ok(Made { path, text, survey })
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

#[cfg(test)]
mod tests {
    use super::*;

    /// A text one of the loaders refuses is init's bug: said so, nothing
    /// written. (No loader at all knows `[toolchain]`, which init writes.)
    #[test]
    fn a_text_a_loader_refuses_is_reported_as_init_s_bug_and_not_written() {
        let dir = tempfile::tempdir().unwrap();
        for sub in ["objects", "refs/heads"] {
            std::fs::create_dir_all(dir.path().join(".git").join(sub)).unwrap();
        }
        std::fs::write(dir.path().join(".git/HEAD"), "ref: refs/heads/main\n").unwrap();
        let err = make(dir.path(), None, "3.13.0", &[])
            .err()
            .expect("refused");
        assert_eq!(err.exit_code(), 1);
        assert!(
            err.message
                .contains("lockstep init made a configuration lockstep refuses"),
            "{}",
            err.render()
        );
        assert!(!dir.path().join(FILE).exists());
    }
}
