//! Files given by URL: downloaded once into the `downloads` area under their
//! sha256, checked before anything is kept (a mismatch caches nothing), then
//! reused by every run. The body is streamed to a staging file (never held in
//! memory) and bounded in size and time.

use std::io::{Read, Write};
use std::path::PathBuf;
use std::time::Duration;

use lockstep_core::Error;
use sha2::{Digest, Sha256};

use crate::{Area, Cache, Key};

/// Longest a download may take.
pub const TIMEOUT: Duration = Duration::from_secs(600);

/// Largest file lockstep downloads (a bigger body is refused, nothing kept).
pub const MAX_BYTES: u64 = 8 << 30;

/// The payload's suffix in the area.
const DATA: &str = "data";

/// The local copy of `url`, whose content must have `sha256`.
pub fn fetch(cache: &Cache, url: &str, sha256: &str) -> Result<PathBuf, Error> {
    let key = Key::parse(sha256).ok_or_else(|| {
        Error::usage(format!("sha256 `{sha256}` for {url} is not 64 hex digits"))
            .hint("give the sha256 of the file's content (e.g. from `sha256sum FILE`)")
    })?;
    let slot = cache.bucket(Area::Downloads).slot(&key, None);
    if let Some(path) = slot.get().and_then(|e| e.file(DATA).map(PathBuf::from)) {
        return Ok(path);
    }
    let lock = slot.lock()?;
    if let Some(path) = lock.get().and_then(|e| e.file(DATA).map(PathBuf::from)) {
        return Ok(path);
    }
    let mut stage = lock.stage();
    let temp = stage.path(DATA)?;
    let got = download_to(url, &temp)?;
    if got != key.as_str() {
        return Err(Error::failed(format!(
            "download of {url} has sha256 {got}, expected {key}; nothing was cached"
        ))
        .hint("update sha256 in the suite file if the source changed on purpose"));
    }
    let entry = stage.commit(serde_json::json!({ "url": url }))?;
    entry
        .file(DATA)
        .map(PathBuf::from)
        .ok_or_else(|| Error::failed(format!("internal: the download of {url} has no file")))
}

/// Streams `url` into `path`; returns the content's sha256.
fn download_to(url: &str, path: &std::path::Path) -> Result<String, Error> {
    let failed = |e: String| Error::failed(format!("cannot download {url}")).cause(e);
    let response = ureq::get(url)
        .timeout(TIMEOUT)
        .call()
        .map_err(|e| failed(e.to_string()))?;
    let mut body = response.into_reader().take(MAX_BYTES + 1);
    let mut file =
        std::io::BufWriter::new(fs_err::File::create(path).map_err(|e| failed(e.to_string()))?);
    let mut hasher = Sha256::new();
    let mut buf = vec![0u8; 1 << 16];
    let mut total: u64 = 0;
    loop {
        let n = body.read(&mut buf).map_err(|e| failed(e.to_string()))?;
        if n == 0 {
            break;
        }
        total += n as u64;
        if total > MAX_BYTES {
            return Err(failed(format!(
                "the file is larger than {} GiB; lockstep does not download it",
                MAX_BYTES >> 30
            )));
        }
        hasher.update(&buf[..n]);
        file.write_all(&buf[..n])
            .map_err(|e| failed(e.to_string()))?;
    }
    file.flush().map_err(|e| failed(e.to_string()))?;
    Ok(hex::encode(hasher.finalize()))
}
