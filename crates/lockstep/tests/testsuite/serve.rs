//! `lockstep release serve` under load and abuse, on loopback: many clients
//! at once, a client that sends one byte a second, thousands of idle
//! connections; HEAD, Range, PEP 691 negotiation; and what is never served
//! (dotfiles, symlinks out of the index, paths that climb out, `//host`).
//! Every wait is bounded by a count of tries; nothing asserts on timings.

use std::io::{Read, Write};
use std::net::TcpStream;
use std::sync::{Arc, Barrier};
use std::time::Duration;

use crate::common::*;

/// A wheel big enough to need several chunks.
const WHEEL_BYTES: usize = 3 << 20;
const JSON_PAGE: &str = "{\"meta\": {\"api-version\": \"1.1\"}, \"name\": \"demo\", \"files\": []}";
const HTML_PAGE: &str = "<!DOCTYPE html><html><body><a href=\"../../files/1.0/demo-1.0-py3-none-any.whl\">demo</a></body></html>";

fn wheel_bytes() -> Vec<u8> {
    (0..WHEEL_BYTES).map(|i| (i * 31 % 253) as u8).collect()
}

/// A project whose default index (`release/index`) is laid out by hand,
/// with a secret beside it, a symlink to it from `files/`, and dotfiles.
fn indexed() -> Project {
    let p = Project::new();
    let index = p.path().join("release/index");
    p.write(
        "release/index/simple/index.html",
        "<a href=\"demo/\">demo</a>",
    );
    p.write("release/index/simple/demo/index.html", HTML_PAGE);
    p.write("release/index/simple/demo/index.json", JSON_PAGE);
    p.write("release/index/.lock", "");
    p.write("release/index/.simple.tmp-1/index.html", "half-written");
    std::fs::create_dir_all(index.join("files/1.0")).unwrap();
    std::fs::write(
        index.join("files/1.0/demo-1.0-py3-none-any.whl"),
        wheel_bytes(),
    )
    .unwrap();
    std::fs::write(p.root().join("secret.txt"), "outside the index").unwrap();
    std::os::unix::fs::symlink(
        p.root().join("secret.txt"),
        index.join("files/1.0/evil-1.0-py3-none-any.whl"),
    )
    .unwrap();
    std::os::unix::fs::symlink(p.root(), index.join("files/up")).unwrap();
    p
}

/// An answer as read off the wire.
#[derive(Debug)]
struct Answer {
    status: u16,
    head: String,
    body: Vec<u8>,
}

impl Answer {
    fn header(&self, name: &str) -> Option<String> {
        self.head.lines().skip(1).find_map(|line| {
            let (k, v) = line.split_once(':')?;
            k.trim()
                .eq_ignore_ascii_case(name)
                .then(|| v.trim().to_string())
        })
    }
}

/// Sends `method target` with `headers` on a fresh connection (closed after
/// the answer) and reads the whole answer.
fn send(port: u16, method: &str, target: &str, headers: &[(&str, &str)]) -> Answer {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
    stream
        .set_read_timeout(Some(Duration::from_secs(60)))
        .unwrap();
    let mut request =
        format!("{method} {target} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\n");
    for (k, v) in headers {
        request.push_str(&format!("{k}: {v}\r\n"));
    }
    request.push_str("\r\n");
    stream.write_all(request.as_bytes()).unwrap();
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).unwrap();
    parse(&raw)
}

fn parse(raw: &[u8]) -> Answer {
    let split = raw
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .unwrap_or_else(|| panic!("no head in {:?}", String::from_utf8_lossy(raw)));
    let head = String::from_utf8_lossy(&raw[..split]).into_owned();
    let status = head
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap();
    Answer {
        status,
        head,
        body: raw[split + 4..].to_vec(),
    }
}

fn get(port: u16, target: &str) -> Answer {
    send(port, "GET", target, &[])
}

#[test]
fn head_range_negotiation_and_what_is_never_served() {
    let p = indexed();
    let server = Served::start(&p);
    let port = server.port;
    let wheel = "/files/1.0/demo-1.0-py3-none-any.whl";

    // PEP 691: JSON to who asks for it, HTML otherwise, Vary: Accept.
    let json = send(
        port,
        "GET",
        "/simple/demo/",
        &[("Accept", "application/vnd.pypi.simple.v1+json")],
    );
    assert_eq!(json.status, 200);
    assert_eq!(
        json.header("content-type").as_deref(),
        Some("application/vnd.pypi.simple.v1+json")
    );
    assert_eq!(json.header("vary").as_deref(), Some("Accept"));
    assert_eq!(json.body, JSON_PAGE.as_bytes());
    let html = send(
        port,
        "GET",
        "/simple/demo/",
        &[("Accept", "application/vnd.pypi.simple.v1+html")],
    );
    assert_eq!(
        html.header("content-type").as_deref(),
        Some("application/vnd.pypi.simple.v1+html")
    );
    let plain = get(port, "/simple/demo/");
    assert_eq!(
        plain.header("content-type").as_deref(),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(plain.body, HTML_PAGE.as_bytes());
    let moved = get(port, "/simple/demo");
    assert_eq!(moved.status, 301);
    assert_eq!(moved.header("location").as_deref(), Some("/simple/demo/"));

    // The wheel whole, its HEAD, and ranges of it.
    let bytes = wheel_bytes();
    let whole = get(port, wheel);
    assert_eq!(whole.status, 200);
    assert_eq!(whole.body, bytes);
    assert_eq!(whole.header("accept-ranges").as_deref(), Some("bytes"));
    let head = send(port, "HEAD", wheel, &[]);
    assert_eq!(head.status, 200);
    assert_eq!(head.header("content-length"), Some(WHEEL_BYTES.to_string()));
    assert!(head.body.is_empty());
    let part = send(port, "GET", wheel, &[("Range", "bytes=1000000-1999999")]);
    assert_eq!(part.status, 206);
    assert_eq!(
        part.header("content-range"),
        Some(format!("bytes 1000000-1999999/{WHEEL_BYTES}"))
    );
    assert_eq!(part.body, &bytes[1_000_000..2_000_000]);
    let tail = send(port, "GET", wheel, &[("Range", "bytes=-10")]);
    assert_eq!(tail.status, 206);
    assert_eq!(tail.body, &bytes[WHEEL_BYTES - 10..]);
    let beyond = send(
        port,
        "GET",
        wheel,
        &[("Range", &format!("bytes={WHEEL_BYTES}-"))],
    );
    assert_eq!(beyond.status, 416);
    assert_eq!(
        beyond.header("content-range"),
        Some(format!("bytes */{WHEEL_BYTES}"))
    );
    // A stale If-Range gets the whole (current) file.
    let stale = send(
        port,
        "GET",
        wheel,
        &[("Range", "bytes=0-9"), ("If-Range", "\"old\"")],
    );
    assert_eq!(stale.status, 200);
    assert_eq!(stale.body.len(), WHEEL_BYTES);

    // Never served: dotfiles, symlinks out of the index, climbing out.
    for hidden in [
        "/.lock",
        "/.simple.tmp-1/index.html",
        "/files/1.0/evil-1.0-py3-none-any.whl",
        "/files/up/secret.txt",
        "/files/up/work/release/index/.lock",
    ] {
        let answer = get(port, hidden);
        assert_eq!(answer.status, 404, "{hidden}");
        assert!(!String::from_utf8_lossy(&answer.body).contains("outside"));
    }
    for climbing in [
        "/%2e%2e/secret.txt",
        "/simple/%2e%2e/%2e%2e/%2e%2e/secret.txt",
        "/simple/..%2f..%2f..%2fsecret.txt",
        "/%2e%2e%2f%2e%2e%2fsecret.txt",
    ] {
        let answer = get(port, climbing);
        assert!(matches!(answer.status, 400 | 404), "{climbing}: {answer:?}");
        assert!(!String::from_utf8_lossy(&answer.body).contains("outside"));
    }
    // `//host` is a path here, never a redirect to another host.
    let evil = get(port, "//evil.example");
    assert_eq!(evil.status, 404);
    assert_eq!(evil.header("location"), None);
    let evil = get(port, "//evil.example/%2e%2e/simple");
    assert!(matches!(evil.status, 400 | 404), "{evil:?}");
    let slashes = get(port, "//simple");
    assert_eq!(slashes.status, 301);
    assert_eq!(slashes.header("location").as_deref(), Some("/simple/"));
    assert_eq!(send(port, "POST", "/simple/", &[]).status, 405);

    // The access log is the binary's: one line per request, escaped.
    let weird = get(port, "/simple/%0a%1b");
    assert_eq!(weird.status, 404);
    let log = server.stop();
    let lines: Vec<&str> = log.lines().collect();
    assert!(lines.contains(&"GET /simple/demo/"), "{log}");
    assert!(lines.contains(&format!("HEAD {wheel}").as_str()), "{log}");
    assert!(lines.contains(&"GET /.lock"), "{log}");
    assert!(lines.contains(&"GET /simple/%0a%1b"), "{log}");
    assert!(!log.contains('\u{1b}'));
}

#[test]
fn two_hundred_clients_at_once_all_get_answers() {
    let p = indexed();
    let mut server = Served::start(&p);
    let port = server.port;
    let clients = 200;
    let start = Arc::new(Barrier::new(clients));
    let handles: Vec<_> = (0..clients)
        .map(|i| {
            let start = start.clone();
            std::thread::spawn(move || {
                start.wait();
                if i % 10 == 0 {
                    get(port, "/files/1.0/demo-1.0-py3-none-any.whl").status
                } else {
                    get(port, "/simple/demo/").status
                }
            })
        })
        .collect();
    let statuses: Vec<u16> = handles.into_iter().map(|h| h.join().unwrap()).collect();
    assert!(statuses.iter().all(|s| *s == 200), "{statuses:?}");
    assert!(server.alive());
    assert_eq!(get(port, "/simple/demo/").status, 200);
}

#[test]
fn a_client_sending_one_byte_a_second_is_cut_off_and_blocks_nobody() {
    let p = indexed();
    let mut server = Served::start(&p);
    let port = server.port;
    // Far longer than the server's header timeout at one byte a second.
    let request = format!(
        "GET /simple/demo/ HTTP/1.1\r\nHost: x\r\nX-Slow: {}\r\n\r\n",
        "z".repeat(100)
    );
    let slow = std::thread::spawn(move || {
        let mut stream = TcpStream::connect(("127.0.0.1", port)).unwrap();
        stream
            .set_read_timeout(Some(Duration::from_secs(1)))
            .unwrap();
        let mut sent = 0;
        for byte in request.as_bytes() {
            if stream.write_all(&[*byte]).is_err() {
                return (true, sent, request.len());
            }
            sent += 1;
            // The read doubles as the one-second pause between bytes.
            let mut buf = [0u8; 1024];
            match stream.read(&mut buf) {
                Ok(_) => return (true, sent, request.len()),
                Err(e)
                    if matches!(
                        e.kind(),
                        std::io::ErrorKind::WouldBlock | std::io::ErrorKind::TimedOut
                    ) => {}
                Err(_) => return (true, sent, request.len()),
            }
        }
        (false, sent, request.len())
    });
    // Meanwhile everyone else is served.
    for _ in 0..20 {
        assert_eq!(get(port, "/simple/demo/").status, 200);
    }
    let (cut_off, sent, total) = slow.join().unwrap();
    assert!(cut_off, "the slow client sent all {total} bytes");
    assert!(sent < total);
    assert!(server.alive());
    assert_eq!(get(port, "/simple/demo/").status, 200);
}

#[test]
fn thousands_of_idle_connections_do_not_kill_the_server() {
    let p = indexed();
    let mut server = Served::start(&p);
    let port = server.port;
    let mut idle = Vec::new();
    for _ in 0..3600 {
        match TcpStream::connect(("127.0.0.1", port)) {
            Ok(stream) => idle.push(stream),
            Err(e) => panic!("connect {}: {e}", idle.len()),
        }
    }
    assert!(server.alive());
    // While they sit there, a request is refused (503) or served; once the
    // header timeout has closed the idle ones, requests are served again.
    let mut served = false;
    for _ in 0..120 {
        let answer = try_get(port, "/simple/demo/");
        if answer.as_ref().is_some_and(|a| a.status == 200) {
            served = true;
            break;
        }
        if let Some(answer) = &answer {
            assert_eq!(answer.status, 503, "{answer:?}");
            assert_eq!(answer.header("retry-after").as_deref(), Some("1"));
        }
        std::thread::sleep(Duration::from_millis(500));
    }
    assert!(
        served,
        "never served again while idle connections were open"
    );
    drop(idle);
    assert!(server.alive());
    for _ in 0..10 {
        assert_eq!(get(port, "/simple/demo/").status, 200);
    }
}

/// [`get`], or `None` when the connection broke before an answer.
fn try_get(port: u16, target: &str) -> Option<Answer> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .ok()?;
    let request = format!("GET {target} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    stream.write_all(request.as_bytes()).ok()?;
    let mut raw = Vec::new();
    stream.read_to_end(&mut raw).ok()?;
    raw.windows(4)
        .any(|w| w == b"\r\n\r\n")
        .then(|| parse(&raw))
}
