//! How entries are laid out on disk, and which files are lockstep's.
//!
//! An entry `KEY` in a group directory (the key's first two hex digits, or a
//! kernel's function name) is its payload files `KEY.SUFFIX` and its seal
//! `KEY.json`, written last. Staging files are `.KEY.SUFFIX.tmp-PID-N` beside
//! them; locks are stripes `.locks/KEY[..3].lock` in the area directory.
//! Earlier lockstep versions used other layouts ([`is_legacy`]): those entries
//! can never be hit again and any prune removes them.

use std::path::Path;

use crate::key::is_key;
use crate::Area;

/// The seal's suffix.
pub(crate) const SEAL: &str = "json";

/// The directory of lock stripes inside an area.
pub(crate) const LOCKS: &str = ".locks";

/// Hex digits of the key that choose its lock stripe (4096 stripes at most,
/// empty files, created on first use).
pub(crate) const STRIPE_DIGITS: usize = 3;

/// A group directory name a caller may choose (a kernel's function name):
/// one plain path component.
pub(crate) fn is_group_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= 200
        && !name.starts_with('.')
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"_-.".contains(&b))
}

/// A payload suffix: short, plain, and not the seal's.
pub(crate) fn is_suffix(suffix: &str) -> bool {
    !suffix.is_empty()
        && suffix.len() <= 40
        && suffix != SEAL
        && suffix.as_bytes()[0].is_ascii_alphanumeric()
        && suffix
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
}

/// The key a file name belongs to (`KEY.anything`), if it starts with one.
pub(crate) fn key_of(name: &str) -> Option<&str> {
    let (stem, _) = name.split_once('.')?;
    is_key(stem).then_some(stem)
}

/// The key of a staging file (`.KEY.SUFFIX.tmp-PID-N`).
pub(crate) fn staging_key(name: &str) -> Option<&str> {
    let rest = name.strip_prefix('.')?;
    rest.contains(".tmp-").then_some(())?;
    key_of(rest)
}

/// Whether `path` (a file or directory directly in a group directory, or in
/// the area directory for `top`) is an entry of an earlier lockstep version.
pub(crate) fn is_legacy(area: Area, path: &Path, top: bool) -> bool {
    let Some(name) = path.file_name().and_then(|n| n.to_str()) else {
        return false;
    };
    match (area, top) {
        // Before areas: `compile/locks/KEY.lock`, `compile/tmp/`.
        (Area::Compile, true) => (name == "locks" || name == "tmp") && path.is_dir(),
        // `compile/KK/KEY/{meta.json,module.vmfb,used}`.
        (Area::Compile, false) => is_key(name) && path.is_dir() && path.join("meta.json").is_file(),
        // `downloads/SHA256`.
        (Area::Downloads, true) => is_key(name) && path.is_file(),
        // `preprocess/KK/KEY.mlir` with the old header line.
        (Area::Preprocess, false) => {
            key_of(name).is_some()
                && name.ends_with(".mlir")
                && first_line_starts(path, "// lockstep-preprocess-cache v1")
        }
        // `FUNC/KEY.{vmfb,mlir,cmd}` recorded in `FUNC/KEY.json` of the old form.
        (Area::Kernels, false) => key_of(name).is_some_and(|key| {
            let record = path.with_file_name(format!("{key}.json"));
            is_old_kernel_record(&record, key)
        }),
        _ => false,
    }
}

fn first_line_starts(path: &Path, prefix: &str) -> bool {
    use std::io::Read;
    let mut head = vec![0u8; prefix.len()];
    // A FIFO or a device in the cache is not what this looks for.
    lockstep_core::fs::open_tree_file("the cache file", path, u64::MAX)
        .is_ok_and(|(mut f, _)| f.read_exact(&mut head).is_ok())
        && head == prefix.as_bytes()
}

/// `{"key": KEY, "module_sha256": ..., ...}`: what lockstep's kernel cache
/// wrote before areas had seals.
fn is_old_kernel_record(record: &Path, key: &str) -> bool {
    let Ok(text) = lockstep_core::fs::read_tree_text("the cache record", record, 1 << 20) else {
        return false;
    };
    let Ok(value) = serde_json::from_str::<serde_json::Value>(&text) else {
        return false;
    };
    value["key"].as_str() == Some(key)
        && value.get("module_sha256").is_some()
        && value.get("lockstep_cache").is_none()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        let key = "a".repeat(64);
        assert_eq!(key_of(&format!("{key}.vmfb")), Some(key.as_str()));
        assert_eq!(
            key_of(&format!("{key}.statistics.json")),
            Some(key.as_str())
        );
        assert_eq!(key_of("abc.vmfb"), None);
        assert_eq!(
            staging_key(&format!(".{key}.vmfb.tmp-12-0")),
            Some(key.as_str())
        );
        assert_eq!(staging_key(&format!("{key}.vmfb.tmp-12-0")), None);
        assert!(is_suffix("vmfb") && is_suffix("out0.f64") && is_suffix("statistics.json"));
        for bad in ["", "json", ".x", "A", "a/b", &"x".repeat(41)] {
            assert!(!is_suffix(bad), "{bad}");
        }
        assert!(is_group_name("conv_2d_float32_forward_1x2"));
        for bad in ["", ".locks", "a/b", "..", &"x".repeat(201)] {
            assert!(!is_group_name(bad), "{bad}");
        }
    }
}
