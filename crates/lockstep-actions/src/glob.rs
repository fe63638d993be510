//! Path patterns as the GitHub actions read them (`*`, `?`, `**`, a leading
//! `!` excluding), directory walks, copies, and `hashFiles`.
//!
//! Why here: the workspace has no glob crate, and the emulated actions
//! (upload-artifact, hashFiles, download-artifact's `pattern`) need the same
//! small matcher; a walk never follows symlinks to directories.

use std::path::Path;

use sha2::{Digest, Sha256};

/// Whether `text` has glob characters.
pub(crate) fn is_glob(text: &str) -> bool {
    text.contains(['*', '?', '['])
}

/// Whether the `/`-separated `path` matches `pattern` (`**` spans segments).
pub(crate) fn matches(pattern: &str, path: &str) -> bool {
    let pat: Vec<&str> = pattern.split('/').filter(|s| !s.is_empty()).collect();
    let segs: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    match_segments(&pat, &segs)
}

fn match_segments(pat: &[&str], segs: &[&str]) -> bool {
    match pat.split_first() {
        None => segs.is_empty(),
        Some((&"**", rest)) => (0..=segs.len()).any(|i| match_segments(rest, &segs[i..])),
        Some((first, rest)) => match segs.split_first() {
            Some((seg, more)) => match_segment(first, seg) && match_segments(rest, more),
            None => false,
        },
    }
}

/// One path segment against a pattern segment (`*`, `?`; brackets literal).
pub(crate) fn match_segment(pattern: &str, text: &str) -> bool {
    let p: Vec<char> = pattern.chars().collect();
    let t: Vec<char> = text.chars().collect();
    let (mut pi, mut ti) = (0, 0);
    let mut backtrack: Option<(usize, usize)> = None;
    while ti < t.len() {
        if pi < p.len() && (p[pi] == '?' || p[pi] == t[ti]) {
            pi += 1;
            ti += 1;
        } else if pi < p.len() && p[pi] == '*' {
            backtrack = Some((pi, ti));
            pi += 1;
        } else if let Some((bp, bt)) = backtrack {
            pi = bp + 1;
            ti = bt + 1;
            backtrack = Some((bp, bt + 1));
        } else {
            return false;
        }
    }
    p[pi..].iter().all(|c| *c == '*')
}

/// Every file (and symlink) under `root`, as paths relative to it with `/`
/// separators, sorted. `skip_hidden` leaves out names starting with `.`.
pub(crate) fn walk_files(root: &Path, skip_hidden: bool) -> std::io::Result<Vec<String>> {
    let mut out = Vec::new();
    walk_into(root, "", skip_hidden, &mut out)?;
    out.sort();
    Ok(out)
}

fn walk_into(
    dir: &Path,
    prefix: &str,
    skip_hidden: bool,
    out: &mut Vec<String>,
) -> std::io::Result<()> {
    for entry in fs_err::read_dir(dir)? {
        let entry = entry?;
        let name = entry.file_name().to_string_lossy().into_owned();
        if skip_hidden && name.starts_with('.') {
            continue;
        }
        let rel = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}/{name}")
        };
        if entry.file_type()?.is_dir() {
            walk_into(&entry.path(), &rel, skip_hidden, out)?;
        } else {
            out.push(rel);
        }
    }
    Ok(())
}

/// Copies a file, symlink or directory tree from `src` to `dest` (parents
/// created; symlinks copied as symlinks).
pub(crate) fn copy_tree(src: &Path, dest: &Path) -> std::io::Result<()> {
    copy_tree_except(src, dest, &[])
}

/// [`copy_tree`] leaving out `excluded` paths (and everything below them):
/// actions/cache's `!PATH` lines.
pub(crate) fn copy_tree_except(
    src: &Path,
    dest: &Path,
    excluded: &[std::path::PathBuf],
) -> std::io::Result<()> {
    if excluded.iter().any(|x| src.starts_with(x)) {
        return Ok(());
    }
    let meta = fs_err::symlink_metadata(src)?;
    if let Some(parent) = dest.parent() {
        fs_err::create_dir_all(parent)?;
    }
    if meta.is_dir() {
        fs_err::create_dir_all(dest)?;
        for entry in fs_err::read_dir(src)? {
            let entry = entry?;
            copy_tree_except(&entry.path(), &dest.join(entry.file_name()), excluded)?;
        }
    } else if meta.file_type().is_symlink() {
        let target = fs_err::read_link(src)?;
        if fs_err::symlink_metadata(dest).is_ok() {
            fs_err::remove_file(dest)?;
        }
        std::os::unix::fs::symlink(&target, dest).map_err(|e| {
            std::io::Error::new(e.kind(), format!("symlink {}: {e}", dest.display()))
        })?;
    } else {
        fs_err::copy(src, dest)?;
    }
    Ok(())
}

/// `hashFiles(patterns...)`: the SHA-256 over the SHA-256 of every file
/// under `root` matching the patterns (later `!` patterns exclude), or ''
/// when none matches.
pub(crate) fn hash_files(root: &Path, patterns: &[String]) -> Result<String, String> {
    let files = walk_files(root, false)
        .map_err(|e| format!("hashFiles: cannot list {}: {e}", root.display()))?;
    let mut outer = Sha256::new();
    let mut any = false;
    for rel in files.iter().filter(|rel| selected(patterns, rel)) {
        let path = root.join(rel);
        if !path.is_file() {
            continue;
        }
        let bytes = fs_err::read(&path).map_err(|e| format!("hashFiles: {e}"))?;
        outer.update(Sha256::digest(&bytes));
        any = true;
    }
    Ok(if any {
        hex::encode(outer.finalize())
    } else {
        String::new()
    })
}

/// Whether `rel` is selected by include / `!`exclude patterns applied in order.
pub(crate) fn selected(patterns: &[String], rel: &str) -> bool {
    let mut chosen = false;
    for p in patterns.iter().map(|p| p.trim()).filter(|p| !p.is_empty()) {
        match p.strip_prefix('!') {
            Some(neg) => chosen &= !matches(neg.trim_start_matches("./"), rel),
            None => chosen |= matches(p.trim_start_matches("./"), rel),
        }
    }
    chosen
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn patterns() {
        assert!(matches("**/Cargo.lock", "Cargo.lock"));
        assert!(matches("**/Cargo.lock", "a/b/Cargo.lock"));
        assert!(matches("dist/*.whl", "dist/x-1.whl"));
        assert!(!matches("dist/*.whl", "dist/sub/x.whl"));
        assert!(matches("a/**", "a/b/c"));
        assert!(matches("wheel-?", "wheel-1"));
        assert!(!matches("*.txt", "a.md"));
        assert!(selected(&["**".into(), "!**/*.md".into()], "x/a.rs"));
        assert!(!selected(&["**".into(), "!**/*.md".into()], "x/a.md"));
    }

    #[test]
    fn hash_files_is_empty_without_matches_and_stable_otherwise() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(hash_files(dir.path(), &["*.lock".into()]).unwrap(), "");
        fs_err::write(dir.path().join("a.lock"), "x").unwrap();
        let one = hash_files(dir.path(), &["*.lock".into()]).unwrap();
        assert_eq!(one.len(), 64);
        assert_eq!(one, hash_files(dir.path(), &["**/*.lock".into()]).unwrap());
    }

    #[test]
    fn copies_leave_out_excluded_paths() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("cache");
        fs_err::create_dir_all(src.join("compile")).unwrap();
        fs_err::create_dir_all(src.join("downloads/ab")).unwrap();
        fs_err::write(src.join("compile/m.vmfb"), "m").unwrap();
        fs_err::write(src.join("downloads/ab/big"), "b").unwrap();
        let dest = dir.path().join("copy");
        copy_tree_except(&src, &dest, &[src.join("downloads")]).unwrap();
        assert!(dest.join("compile/m.vmfb").is_file());
        assert!(!dest.join("downloads").exists());
    }
}
