//! Streaming a body to a file: bounded in size (and, through the request's
//! deadline, in time), hashed with sha256 as it streams, written to a
//! temporary file beside the destination and renamed over it only when
//! whole. A transfer that breaks off is tried again, resuming with
//! `Range: bytes=N-` when the server answers 206 for the same content
//! (`If-Range` with the first answer's validator), else from the start.
//! Whatever happens, the destination either holds the whole body or is not
//! touched: a partial file never sits where a complete one is expected.

use std::cell::{Cell, RefCell};
use std::io::{Read, Seek, SeekFrom, Write};
use std::path::Path;

use sha2::{Digest, Sha256};

use crate::client::{Request, Response};
use crate::error::{HttpError, TransportError, TransportKind};

/// What was downloaded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Downloaded {
    pub bytes: u64,
    /// Hex sha256 of the content.
    pub sha256: String,
    /// Attempts that resumed a broken transfer with a Range request.
    pub resumed: u32,
}

/// The transfer in progress, kept across attempts.
struct Progress {
    file: tempfile::NamedTempFile,
    hasher: Sha256,
    /// Bytes written and hashed so far.
    written: u64,
    /// The size the server announced for the whole body.
    total: Option<u64>,
    resumed: u32,
}

impl<'a> Request<'a> {
    /// Downloads the answer's body to `dest` (replaced only when the whole
    /// body arrived), at most `max_bytes`.
    pub fn download(mut self, dest: &Path, max_bytes: u64) -> Result<Downloaded, HttpError> {
        let dir = dest
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(Path::new("."));
        let name = lockstep_core::fs::file_name(dest);
        let local =
            |context: String| move |source: std::io::Error| HttpError::Local { context, source };
        let file = tempfile::Builder::new()
            .prefix(&format!(".{name}.part-"))
            .tempfile_in(dir)
            .map_err(local(format!(
                "cannot create a temporary file in {}",
                dir.display()
            )))?;
        let progress = RefCell::new(Progress {
            file,
            hasher: Sha256::new(),
            written: 0,
            total: None,
            resumed: 0,
        });
        // The first answer's ETag (or Last-Modified): a resumed request asks
        // for the rest of *that* content, and gets the whole of a changed one.
        let validator: RefCell<Option<String>> = RefCell::new(None);
        let offset = Cell::new(0u64);
        // Compressed bodies would make byte offsets meaningless.
        self = self.header("Accept-Encoding", "identity");
        let extra = || {
            let at = offset.get();
            let mut headers = Vec::new();
            if at > 0 {
                headers.push(("Range".to_string(), format!("bytes={at}-")));
                if let Some(v) = validator.borrow().as_ref() {
                    headers.push(("If-Range".to_string(), v.clone()));
                }
            }
            headers
        };
        let mut finish = |response: Response| -> Result<(), HttpError> {
            let mut p = progress.borrow_mut();
            if validator.borrow().is_none() {
                *validator.borrow_mut() = response
                    .header("etag")
                    .filter(|v| !v.trim_start().starts_with("W/"))
                    .or_else(|| response.header("last-modified"))
                    .map(str::to_string);
            }
            let result = receive(&mut p, response, max_bytes);
            offset.set(p.written);
            result
        };
        self.run(None, &extra, &mut finish)?;
        let p = progress.into_inner();
        let mut file = p.file;
        file.as_file_mut()
            .flush()
            .and_then(|()| file.as_file().sync_all())
            .map_err(local(format!("cannot write {}", dest.display())))?;
        file.persist(dest).map_err(|e| HttpError::Local {
            context: format!("cannot rename the download to {}", dest.display()),
            source: e.error,
        })?;
        Ok(Downloaded {
            bytes: p.written,
            sha256: hex::encode(p.hasher.finalize()),
            resumed: p.resumed,
        })
    }
}

/// Takes one answer: the whole body (200) or the rest of it (206).
fn receive(p: &mut Progress, response: Response, max_bytes: u64) -> Result<(), HttpError> {
    let scrub = response.scrubber().clone();
    let broken = |detail: &str| {
        HttpError::Transport(TransportError {
            kind: TransportKind::ConnectionBroken,
            detail: detail.to_string(),
        })
    };
    let length = response
        .header("content-length")
        .and_then(|v| v.trim().parse::<u64>().ok());
    match response.status() {
        206 if p.written > 0 => {
            let range = response
                .header("content-range")
                .and_then(parse_content_range);
            match range {
                Some((start, total)) if start == p.written => {
                    p.resumed += 1;
                    if total.is_some() {
                        p.total = total;
                    }
                }
                // Not the rest we asked for: start over on the next attempt.
                _ => {
                    restart(p)?;
                    return Err(broken(
                        "the server resumed at another offset; starting over",
                    ));
                }
            }
        }
        206 => {
            // A range nobody asked for: not a whole body.
            return Err(HttpError::Transport(TransportError {
                kind: TransportKind::Protocol,
                detail: "the server answered 206 to a request without Range".to_string(),
            }));
        }
        _ => {
            // The whole body (again): whatever was kept is dropped.
            if p.written > 0 {
                restart(p)?;
            }
            p.total = length;
        }
    }
    if p.total.is_some_and(|total| total > max_bytes) {
        return Err(HttpError::TooLarge { limit: max_bytes });
    }
    let mut reader = response.into_reader();
    let mut buf = vec![0u8; 1 << 16];
    loop {
        let n = match reader.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(HttpError::Transport(TransportError::from_io(&e, &scrub))),
        };
        if p.written + n as u64 > max_bytes {
            return Err(HttpError::TooLarge { limit: max_bytes });
        }
        p.file
            .as_file_mut()
            .write_all(&buf[..n])
            .map_err(|source| HttpError::Local {
                context: "cannot write the download".to_string(),
                source,
            })?;
        p.hasher.update(&buf[..n]);
        p.written += n as u64;
    }
    match p.total {
        Some(total) if p.written < total => Err(broken(&format!(
            "the body ended after {} of {total} bytes",
            p.written
        ))),
        Some(total) if p.written > total => Err(HttpError::Transport(TransportError {
            kind: TransportKind::Protocol,
            detail: format!("the body is longer than the {total} bytes announced"),
        })),
        _ => Ok(()),
    }
}

/// Drops what was received: the next bytes are the body's first.
fn restart(p: &mut Progress) -> Result<(), HttpError> {
    let file = p.file.as_file_mut();
    file.set_len(0)
        .and_then(|()| file.seek(SeekFrom::Start(0)).map(|_| ()))
        .map_err(|source| HttpError::Local {
            context: "cannot truncate the partial download".to_string(),
            source,
        })?;
    p.hasher = Sha256::new();
    p.written = 0;
    p.total = None;
    Ok(())
}

/// `bytes START-END/TOTAL` (TOTAL may be `*`): (START, TOTAL).
pub fn parse_content_range(value: &str) -> Option<(u64, Option<u64>)> {
    let rest = value.trim().strip_prefix("bytes")?.trim_start();
    let (range, total) = rest.split_once('/')?;
    let (start, end) = range.trim().split_once('-')?;
    let start: u64 = start.trim().parse().ok()?;
    let end: u64 = end.trim().parse().ok()?;
    if end < start {
        return None;
    }
    let total = match total.trim() {
        "*" => None,
        t => {
            let total: u64 = t.parse().ok()?;
            if end >= total {
                return None;
            }
            Some(total)
        }
    };
    Some((start, total))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn content_ranges_parse() {
        assert_eq!(
            parse_content_range("bytes 100-199/200"),
            Some((100, Some(200)))
        );
        assert_eq!(parse_content_range("bytes 0-0/*"), Some((0, None)));
        for bad in [
            "bytes 5-4/10",
            "bytes 0-10/10",
            "items 0-1/2",
            "bytes -1/2",
            "bytes */10",
            "",
        ] {
            assert_eq!(parse_content_range(bad), None, "{bad}");
        }
    }

    proptest! {
        #[test]
        fn content_range_parsing_never_panics(value in "\\PC{0,40}") {
            let _ = parse_content_range(&value);
        }
    }
}
