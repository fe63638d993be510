//! Per-user directories: `$LOCKSTEP_HOME` (default `$XDG_CACHE_HOME/lockstep`
//! or `~/.cache/lockstep`), toolchains and content-addressed caches below it,
//! each overridable on its own so tests can isolate caches without reinstalling
//! toolchains.

use std::path::PathBuf;

fn env_path(name: &str) -> Option<PathBuf> {
    std::env::var_os(name)
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
}

/// `$LOCKSTEP_HOME`, or `$XDG_CACHE_HOME/lockstep`, or `~/.cache/lockstep`.
pub fn home() -> PathBuf {
    if let Some(p) = env_path("LOCKSTEP_HOME") {
        return p;
    }
    if let Some(p) = env_path("XDG_CACHE_HOME") {
        return p.join("lockstep");
    }
    let home = env_path("HOME").unwrap_or_else(std::env::temp_dir);
    home.join(".cache").join("lockstep")
}

/// `$LOCKSTEP_TOOLCHAINS`, default `$LOCKSTEP_HOME/toolchains`.
pub fn toolchains() -> PathBuf {
    env_path("LOCKSTEP_TOOLCHAINS").unwrap_or_else(|| home().join("toolchains"))
}

/// [`toolchains`] as an absolute path, created (an error names it and the
/// variables that move it).
pub fn toolchains_dir() -> crate::Result<PathBuf> {
    let root = toolchains();
    let root = std::path::absolute(&root).map_err(|e| {
        crate::Error::failed(format!(
            "cannot locate the toolchains directory {}",
            root.display()
        ))
        .cause(e.to_string())
    })?;
    create_toolchains_dir(&root)?;
    Ok(root)
}

/// Creates the toolchains directory `root` (and its parents).
pub fn create_toolchains_dir(root: &std::path::Path) -> crate::Result<()> {
    std::fs::create_dir_all(root).map_err(|e| {
        crate::Error::failed(format!(
            "cannot create the toolchains directory {}",
            root.display()
        ))
        .cause(e.to_string())
        .hint("set LOCKSTEP_TOOLCHAINS (or LOCKSTEP_HOME) to a writable directory")
    })
}

/// `$LOCKSTEP_CACHE`, default `$LOCKSTEP_HOME/cache`.
pub fn cache() -> PathBuf {
    env_path("LOCKSTEP_CACHE").unwrap_or_else(|| home().join("cache"))
}

/// `$LOCKSTEP_HOME/file-hashes`: the memo of content hashes of large files
/// (see [`crate::hash::sha256_file_memo`]).
pub fn file_hashes() -> PathBuf {
    home().join("file-hashes")
}

/// `$LOCKSTEP_HOME/preprocess/runs`: temporary files of preprocessing runs
/// (kept after a failure).
pub fn preprocess_runs() -> PathBuf {
    home().join("preprocess").join("runs")
}

/// `$LOCKSTEP_HOME/state`: per-directory state of commands run outside a git
/// repository (inside one, state lives in its git common dir).
pub fn states() -> PathBuf {
    home().join("state")
}

/// `$LOCKSTEP_HOME/tokens`: the machine-wide token pools that bound
/// concurrent tool processes (`lockstep preprocess`).
pub fn tokens() -> PathBuf {
    home().join("tokens")
}
