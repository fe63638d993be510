//! Where a command's output files go: a path, or `-` for standard output.
//! A regular file is written whole through a temporary name and a rename, so
//! a reader never sees half of it.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};

/// An output named by a flag (`--json FILE`, `--events FILE`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// `-`: standard output.
    Stdout,
    Path(PathBuf),
}

impl Target {
    /// `-` is standard output; anything else a path (relative to the
    /// process's working directory).
    pub fn parse(path: &Path) -> Target {
        if path.as_os_str() == "-" {
            Target::Stdout
        } else {
            Target::Path(path.to_path_buf())
        }
    }

    pub fn is_stdout(&self) -> bool {
        *self == Target::Stdout
    }

    /// How messages name it.
    pub fn describe(&self) -> String {
        match self {
            Target::Stdout => "standard output".to_string(),
            Target::Path(p) => p.display().to_string(),
        }
    }
}

/// Writes `bytes` to `target`.
pub fn write(target: &Target, bytes: &[u8]) -> Result<()> {
    let written = match target {
        Target::Stdout => {
            let mut out = std::io::stdout().lock();
            out.write_all(bytes)
                .and_then(|()| out.flush())
                .map_err(Error::from)
        }
        Target::Path(path) => crate::fs::write_atomic(path, bytes),
    };
    written.map_err(|e| e.context(format!("cannot write {}", target.describe())))
}
