//! A pin's companion checksum: the sha256 of the upstream's source archive
//! for the pinned commit, computed by downloading it (lockstep-http: bounded
//! in size and time, retried, hashed while streaming) into a temporary
//! directory that is removed after.

use std::time::Duration;

use lockstep_core::Error;

/// Where a pin's archive checksum comes from.
pub trait Checksums {
    /// The hex sha256 of the archive at `url`; an error names the URL.
    fn sha256(&self, url: &str) -> Result<String, Error>;
}

/// Checksums by download.
#[derive(Debug, Clone)]
pub struct Downloads {
    /// The largest archive taken (LLVM's is about 250 MB).
    pub max_bytes: u64,
    /// The longest one download may take, retries included.
    pub deadline: Duration,
}

impl Default for Downloads {
    fn default() -> Self {
        Downloads {
            max_bytes: 2 << 30,
            deadline: Duration::from_secs(1800),
        }
    }
}

impl Checksums for Downloads {
    fn sha256(&self, url: &str) -> Result<String, Error> {
        let failed = |shown: &str, cause: String| {
            Error::failed(format!(
                "cannot compute the pin's checksum: downloading {shown} failed"
            ))
            .cause(cause)
            .hint("check the network and the pin's sha256.archive URL; the pin was not written")
        };
        let parsed = lockstep_http::parse_url(
            url,
            lockstep_http::UrlRules {
                userinfo: false,
                plain_http: lockstep_http::PlainHttp::LoopbackOnly,
            },
        )
        .map_err(|e| failed(&lockstep_core::error::printable_line(url), e.to_string()))?;
        let shown = lockstep_http::redacted(&parsed);
        let failed = |cause: String| failed(&shown, cause);
        let dir = tempfile::Builder::new()
            .prefix("lockstep-pin-archive-")
            .tempdir()
            .map_err(|e| failed(format!("no temporary directory: {e}")))?;
        let client = lockstep_http::Client::new(lockstep_http::ClientConfig {
            deadline: self.deadline,
            ..lockstep_http::ClientConfig::default()
        });
        tracing::info!(url = %shown, "downloading the archive for the pin's checksum");
        let got = client
            .get(&parsed)
            .redirects(lockstep_http::Redirects::AnyOrigin)
            .download(&dir.path().join("archive"), self.max_bytes)
            .map_err(|e| failed(e.to_string()))?;
        Ok(got.sha256)
    }
}
