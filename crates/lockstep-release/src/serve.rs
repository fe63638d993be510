//! `lockstep release serve`: the index directory over HTTP on loopback, for
//! local use and tests, with PEP 691 content negotiation (JSON to clients
//! that ask for it, HTML otherwise). Static files only; requests are
//! bounded (64 KiB of headers, 30 s to send them) and paths that climb out
//! of the directory are refused.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Component, Path, PathBuf};
use std::time::Duration;

use lockstep_core::Error;

use crate::index::{HTML_TYPE, JSON_TYPE};

const MAX_HEADER_BYTES: u64 = 64 << 10;

/// Binds 127.0.0.1:`port` (0 = any free port); returns the listener and the port.
pub fn bind(port: u16) -> Result<(TcpListener, u16), Error> {
    let listener = TcpListener::bind(("127.0.0.1", port)).map_err(|e| {
        Error::usage(format!("cannot listen on 127.0.0.1:{port}"))
            .cause(e.to_string())
            .hint("pick another --port, or 0 for any free one")
    })?;
    let port = listener
        .local_addr()
        .map_err(|e| Error::failed(e.to_string()))?
        .port();
    Ok((listener, port))
}

/// Serves `root` until the process ends; one thread per connection. With
/// `access_log`, each request's method, path and status go to stderr.
pub fn serve(listener: TcpListener, root: PathBuf, access_log: bool) -> Result<(), Error> {
    for stream in listener.incoming() {
        let Ok(stream) = stream else { continue };
        let root = root.clone();
        std::thread::spawn(move || {
            if let Err(e) = answer(stream, &root, access_log) {
                tracing::debug!(error = %e, "request failed");
            }
        });
    }
    Ok(())
}

fn answer(mut stream: TcpStream, root: &Path, access_log: bool) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(30)))?;
    let mut reader = BufReader::new((&stream).take(MAX_HEADER_BYTES));
    let mut request_line = String::new();
    reader.read_line(&mut request_line)?;
    let mut accept = String::new();
    let mut line = String::new();
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 || line == "\r\n" || line == "\n" {
            break;
        }
        if let Some((k, v)) = line.split_once(':') {
            if k.trim().eq_ignore_ascii_case("accept") {
                accept = v.trim().to_string();
            }
        }
    }
    let mut parts = request_line.split_whitespace();
    let method = parts.next().unwrap_or_default();
    let target = parts.next().unwrap_or_default();
    if method != "GET" && method != "HEAD" {
        return respond(
            &mut stream,
            405,
            "text/plain",
            b"method not allowed\n",
            method == "HEAD",
            &[],
        );
    }
    let path = target.split(['?', '#']).next().unwrap_or_default();
    if access_log {
        eprintln!("{method} {}", path.escape_debug());
    }
    let Some(relative) = safe_path(path) else {
        return respond(&mut stream, 400, "text/plain", b"bad path\n", false, &[]);
    };
    let full = root.join(&relative);
    let head = method == "HEAD";
    if full.is_dir() {
        if !path.ends_with('/') {
            // Built from the checked relative path: never `//host` (an open redirect).
            let location = format!("/{}/", relative.display());
            return respond(
                &mut stream,
                301,
                "text/plain",
                b"",
                head,
                &[("Location", &location)],
            );
        }
        let wants_json = accept.contains("vnd.pypi.simple.v1+json")
            || accept.contains("vnd.pypi.simple.latest+json");
        let (file, kind) = if wants_json && full.join("index.json").is_file() {
            (full.join("index.json"), JSON_TYPE)
        } else if accept.contains("vnd.pypi.simple") {
            (full.join("index.html"), HTML_TYPE)
        } else {
            (full.join("index.html"), "text/html; charset=utf-8")
        };
        return match std::fs::read(&file) {
            Ok(body) => respond(&mut stream, 200, kind, &body, head, &[("Vary", "Accept")]),
            Err(_) => respond(&mut stream, 404, "text/plain", b"not found\n", head, &[]),
        };
    }
    // Files are streamed: a wheel can be hundreds of megabytes.
    let file = std::fs::File::open(&full)
        .ok()
        .filter(|f| f.metadata().is_ok_and(|m| m.is_file()));
    let Some(mut file) = file else {
        return respond(&mut stream, 404, "text/plain", b"not found\n", head, &[]);
    };
    let length = file.metadata()?.len();
    let kind = if path.ends_with(".html") {
        "text/html; charset=utf-8"
    } else if path.ends_with(".json") {
        "application/json"
    } else {
        "application/octet-stream"
    };
    write_head(&mut stream, 200, kind, length, &[])?;
    if !head {
        std::io::copy(&mut file, &mut stream)?;
    }
    stream.flush()
}

/// The request path as a relative path with only normal components.
fn safe_path(path: &str) -> Option<PathBuf> {
    if !path.starts_with('/') || path.contains('\\') || path.contains('\0') {
        return None;
    }
    let decoded = percent_decode(path)?;
    if decoded.contains(['\\', '\0']) {
        return None;
    }
    let mut out = PathBuf::new();
    for c in Path::new(&decoded).components() {
        match c {
            Component::RootDir | Component::CurDir => {}
            Component::Normal(p) => out.push(p),
            _ => return None,
        }
    }
    Some(out)
}

/// `%XX` decoded (the result must be UTF-8); a bad escape is `None`.
fn percent_decode(path: &str) -> Option<String> {
    let bytes = path.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'%' {
            let hex = path.get(i + 1..i + 3)?;
            out.push(u8::from_str_radix(hex, 16).ok()?);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    String::from_utf8(out).ok()
}

fn respond(
    stream: &mut TcpStream,
    code: u16,
    kind: &str,
    body: &[u8],
    head: bool,
    extra: &[(&str, &str)],
) -> std::io::Result<()> {
    write_head(stream, code, kind, body.len() as u64, extra)?;
    if !head {
        stream.write_all(body)?;
    }
    stream.flush()
}

fn write_head(
    stream: &mut TcpStream,
    code: u16,
    kind: &str,
    length: u64,
    extra: &[(&str, &str)],
) -> std::io::Result<()> {
    let reason = match code {
        200 => "OK",
        301 => "Moved Permanently",
        400 => "Bad Request",
        404 => "Not Found",
        _ => "Method Not Allowed",
    };
    let mut text = format!(
        "HTTP/1.1 {code} {reason}\r\nContent-Type: {kind}\r\nContent-Length: {length}\r\nConnection: close\r\n"
    );
    for (k, v) in extra {
        text.push_str(&format!("{k}: {v}\r\n"));
    }
    text.push_str("\r\n");
    stream.write_all(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn no_path_climbs_out(path in "[a-z./%2B\\\\]{0,30}") {
            if let Some(p) = safe_path(&path) {
                prop_assert!(p.components().all(|c| matches!(c, Component::Normal(_))));
            }
        }
    }

    #[test]
    fn paths_stay_inside() {
        assert_eq!(
            safe_path("/simple/demo/"),
            Some(PathBuf::from("simple/demo"))
        );
        assert_eq!(
            safe_path("/files/1.0%2Bx/a.whl"),
            Some(PathBuf::from("files/1.0+x/a.whl"))
        );
        assert_eq!(
            safe_path("/files/1%212.0/a.whl"),
            Some(PathBuf::from("files/1!2.0/a.whl"))
        );
        for bad in [
            "/../etc/passwd",
            "/simple/../../x",
            "relative",
            "/%2e%2e/x",
            "/a%5cb",
            "/a%00",
            "/a%zz",
            "/a%e2",
        ] {
            assert_eq!(safe_path(bad), None, "{bad}");
        }
    }
}
