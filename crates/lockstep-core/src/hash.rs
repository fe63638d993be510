//! Content hashes for the caches and downloads that verify what they read
//! back, and for identities that must not depend on where a file lives.

use std::os::unix::fs::MetadataExt;
use std::path::Path;

use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use crate::error::Result;

/// Hex sha256 of a file's content, streamed.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = fs_err::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h)?;
    Ok(hex::encode(h.finalize()))
}

/// Hex sha256 of bytes in memory.
pub fn sha256_bytes(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// What [`sha256_file_memo`] remembers of a file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct Memo {
    dev: u64,
    ino: u64,
    size: u64,
    mtime_ns: i128,
    ctime_ns: i128,
    sha256: String,
}

/// [`sha256_file`] remembered in `memo_dir` (one small file per path) while
/// the file's device, inode, size, mtime and ctime stay the same, as git's
/// index does: hashing a 300 MB compiler library on every command would cost
/// a second. The result is the content's hash; only the memo is keyed by
/// where the file is. A memo that cannot be read or written is ignored.
pub fn sha256_file_memo(path: &Path, memo_dir: &Path) -> Result<String> {
    let real = std::fs::canonicalize(path).unwrap_or_else(|_| path.to_path_buf());
    let meta = fs_err::metadata(&real)?;
    let stamp = |sha256: String| Memo {
        dev: meta.dev(),
        ino: meta.ino(),
        size: meta.len(),
        mtime_ns: i128::from(meta.mtime()) * 1_000_000_000 + i128::from(meta.mtime_nsec()),
        ctime_ns: i128::from(meta.ctime()) * 1_000_000_000 + i128::from(meta.ctime_nsec()),
        sha256,
    };
    let name = hex::encode(Sha256::digest(real.as_os_str().as_encoded_bytes()));
    let memo_path = memo_dir.join(format!("{}.json", &name[..32]));
    let remembered = std::fs::read_to_string(&memo_path)
        .ok()
        .and_then(|text| serde_json::from_str::<Memo>(&text).ok());
    if let Some(memo) = remembered {
        if memo == stamp(memo.sha256.clone()) {
            return Ok(memo.sha256);
        }
    }
    let sha256 = sha256_file(&real)?;
    if let Ok(text) = serde_json::to_vec(&stamp(sha256.clone())) {
        let _ = crate::fs::write_atomic(&memo_path, &text);
    }
    Ok(sha256)
}

/// The one framed hasher behind every key and identity: a sha256 over
/// labelled, length-framed parts, so two different inputs can never frame
/// into the same bytes. A key names its domain and a format version first,
/// so a change of format never matches an old key.
#[derive(Clone)]
pub struct Framed {
    hasher: Sha256,
}

impl Framed {
    /// A hash of `domain`'s values `name`, format `version` (bump it when
    /// what is hashed, or how, changes).
    pub fn new(domain: &str, name: &str, version: u32) -> Framed {
        Framed {
            hasher: Sha256::new(),
        }
        .part(domain, name)
        .part("version", version.to_le_bytes())
    }

    /// Adds one labelled part (framed with its length).
    pub fn part(mut self, label: &str, bytes: impl AsRef<[u8]>) -> Framed {
        for chunk in [label.as_bytes(), bytes.as_ref()] {
            self.hasher.update((chunk.len() as u64).to_le_bytes());
            self.hasher.update(chunk);
        }
        self
    }

    /// Adds a list of parts under one label (the count framed too).
    pub fn parts<S: AsRef<[u8]>>(
        mut self,
        label: &str,
        items: impl IntoIterator<Item = S>,
    ) -> Framed {
        let items: Vec<S> = items.into_iter().collect();
        self = self.part(label, (items.len() as u64).to_le_bytes());
        for item in &items {
            self = self.part("", item);
        }
        self
    }

    /// The hash as 64 lowercase hex digits.
    pub fn hex(self) -> String {
        hex::encode(self.hasher.finalize())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn memo_follows_the_file() {
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("lib.so");
        std::fs::write(&file, b"one").unwrap();
        let memo = dir.path().join("memo");
        let first = sha256_file_memo(&file, &memo).unwrap();
        assert_eq!(first, sha256_file(&file).unwrap());
        assert_eq!(std::fs::read_dir(&memo).unwrap().count(), 1);
        assert_eq!(sha256_file_memo(&file, &memo).unwrap(), first);
        // Rewritten: the memo no longer matches and the content is hashed again.
        std::fs::write(&file, b"two").unwrap();
        assert_eq!(
            sha256_file_memo(&file, &memo).unwrap(),
            sha256_file(&file).unwrap()
        );
        // A copy elsewhere has the same hash.
        let copy = dir.path().join("copy.so");
        std::fs::copy(&file, &copy).unwrap();
        assert_eq!(
            sha256_file_memo(&copy, &memo).unwrap(),
            sha256_file(&file).unwrap()
        );
    }
}
