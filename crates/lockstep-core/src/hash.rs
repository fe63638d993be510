//! Content hashes for the caches and downloads that verify what they read back.

use std::path::Path;

use sha2::{Digest, Sha256};

use crate::error::Result;

/// Hex sha256 of a file's content, streamed.
pub fn sha256_file(path: &Path) -> Result<String> {
    let mut file = fs_err::File::open(path)?;
    let mut h = Sha256::new();
    std::io::copy(&mut file, &mut h)?;
    Ok(hex::encode(h.finalize()))
}
