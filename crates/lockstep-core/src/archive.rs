//! The members of a zip archive (an artifact, a wheel), checked before
//! anything is read out of it: no `..`, no absolute path, no symlink, no
//! path twice (case-insensitively, as a checkout on macOS would collide),
//! no NUL or backslash in a name, at most [`MAX_MEMBERS`] of them. One check
//! for every archive lockstep opens, so `pkg fetch`, `release publish`,
//! `promote` and `index` refuse the same things.

use std::collections::HashSet;
use std::io::{Read, Seek};
use std::path::{Component, Path, PathBuf};

use crate::error::{Error, Result};

/// The most members an archive may hold.
pub const MAX_MEMBERS: usize = 100_000;

/// One member: its index in the archive and its checked relative path.
#[derive(Debug, Clone)]
pub struct Member {
    pub index: usize,
    pub path: PathBuf,
    pub dir: bool,
}

/// Every member of `archive` (read from `file`, called `what` in messages:
/// "the artifact", "the wheel"), checked; the first unsafe one is an error
/// naming it, with `hint`.
pub fn members<R: Read + Seek>(
    archive: &mut zip::ZipArchive<R>,
    file: &Path,
    what: &str,
    hint: &str,
) -> Result<Vec<Member>> {
    if archive.len() > MAX_MEMBERS {
        return Err(Error::failed(format!(
            "{} holds {} entries, more than lockstep reads ({MAX_MEMBERS})",
            file.display(),
            archive.len()
        )));
    }
    let mut seen = HashSet::new();
    let mut members = Vec::with_capacity(archive.len());
    for index in 0..archive.len() {
        let entry = archive.by_index_raw(index).map_err(|e| {
            Error::failed(format!("{} is damaged", file.display())).cause(e.to_string())
        })?;
        let name = entry
            .name()
            .map_err(|e| {
                Error::failed(format!(
                    "{} has an entry whose name cannot be read",
                    file.display()
                ))
                .cause(e.to_string())
            })?
            .into_owned();
        let refuse = |why: &str| {
            Error::failed(format!("{what}'s entry `{}` {why}", name.escape_debug()))
                .cause(format!("in {}", file.display()))
                .hint(hint)
        };
        if entry.is_symlink() {
            return Err(refuse("is a symlink"));
        }
        let path = safe_relative_path(&name).map_err(&refuse)?;
        let key = path.to_string_lossy().to_lowercase();
        if !seen.insert(key) {
            return Err(refuse("appears twice"));
        }
        members.push(Member {
            index,
            path,
            dir: entry.is_dir(),
        });
    }
    Ok(members)
}

/// The member name as a relative path with only normal components (zip
/// members here, tar members in `lockstep_python::sdist`).
pub fn safe_relative_path(name: &str) -> std::result::Result<PathBuf, &'static str> {
    if name.contains('\0') {
        return Err("has a NUL in its name");
    }
    if name.contains('\\') {
        return Err("has a backslash in its name");
    }
    if name.starts_with('/') || (name.len() >= 2 && name.as_bytes()[1] == b':') {
        return Err("has an absolute path");
    }
    let mut path = PathBuf::new();
    for component in Path::new(name).components() {
        match component {
            Component::Normal(part) => path.push(part),
            Component::CurDir => {}
            Component::ParentDir => return Err("climbs out of the directory with `..`"),
            Component::RootDir | Component::Prefix(_) => return Err("has an absolute path"),
        }
    }
    if path.as_os_str().is_empty() {
        return Err("has an empty name");
    }
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_are_checked() {
        assert!(safe_relative_path("a/./b").is_ok());
        for bad in ["", ".", "a/../../b", "C:/x", "a\\b", "/", "a\0b"] {
            assert!(safe_relative_path(bad).is_err(), "{bad}");
        }
    }

    proptest::proptest! {
        #[test]
        fn arbitrary_names_never_escape(name in "[a-z./\\\\]{0,24}") {
            if let Ok(path) = safe_relative_path(&name) {
                proptest::prop_assert!(path.components().all(|c| matches!(c, Component::Normal(_))));
            }
        }
    }
}
