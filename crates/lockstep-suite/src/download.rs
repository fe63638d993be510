//! Sources given by URL: downloaded once into `$LOCKSTEP_CACHE/downloads`,
//! verified against their sha256 before anything is kept (a mismatch caches
//! nothing), then reused by every run.

use std::io::Read;
use std::path::PathBuf;

use lockstep_core::Error;
use sha2::{Digest, Sha256};

/// The local copy of `url`, downloading and verifying it when needed.
pub fn fetch(url: &str, sha256: &str) -> Result<PathBuf, Error> {
    let want = sha256.trim().to_lowercase();
    if want.len() != 64 || !want.chars().all(|c| c.is_ascii_hexdigit()) {
        return Err(Error::usage(format!(
            "sha256 `{sha256}` for {url} is not 64 hex digits"
        )));
    }
    let dir = lockstep_core::paths::cache().join("downloads");
    let path = dir.join(&want);
    if path.is_file() && crate::cache::sha256_file(&path).ok().as_deref() == Some(want.as_str()) {
        return Ok(path);
    }
    fs_err::create_dir_all(&dir)?;
    let response = ureq::get(url)
        .timeout(std::time::Duration::from_secs(600))
        .call()
        .map_err(|e| Error::failed(format!("cannot download {url}")).cause(e.to_string()))?;
    let mut body = Vec::new();
    response
        .into_reader()
        .read_to_end(&mut body)
        .map_err(|e| Error::failed(format!("cannot download {url}")).cause(e.to_string()))?;
    let got = hex::encode(Sha256::digest(&body));
    if got != want {
        return Err(Error::failed(format!(
            "download of {url} has sha256 {got}, expected {want}; nothing was cached"
        ))
        .hint("update sha256 in the suite file if the source changed on purpose"));
    }
    let tmp = tempfile::NamedTempFile::new_in(&dir).map_err(|e| Error::failed(e.to_string()))?;
    fs_err::write(tmp.path(), &body)?;
    tmp.persist(&path)
        .map_err(|e| Error::failed(e.to_string()))?;
    Ok(path)
}
