//! A small HTTP/1.1 load generator for `scripts/bench-serve`: N client
//! threads GET one URL on loopback for a fixed time, reusing connections
//! when the server allows it (as pip and uv do), and print one line of
//! totals. Standard library only, so the benchmark needs nothing installed.
//!
//! Usage: loadgen URL [--concurrency N] [--seconds S] [--accept VALUE]
//! Prints: `requests R errors E seconds T rps X mbytes_per_s Y`.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Barrier};
use std::time::{Duration, Instant};

struct Totals {
    requests: AtomicU64,
    errors: AtomicU64,
    bytes: AtomicU64,
}

fn main() {
    let mut args = std::env::args().skip(1);
    let mut url = None;
    let (mut concurrency, mut seconds, mut accept) = (50usize, 5f64, None::<String>);
    while let Some(arg) = args.next() {
        let mut value = |name: &str| {
            args.next().unwrap_or_else(|| {
                eprintln!("error: {name} needs a value");
                std::process::exit(2)
            })
        };
        match arg.as_str() {
            "--concurrency" => concurrency = number(&value("--concurrency")),
            "--seconds" => seconds = number(&value("--seconds")),
            "--accept" => accept = Some(value("--accept")),
            other if url.is_none() && other.starts_with("http://") => url = Some(other.to_string()),
            other => {
                eprintln!("error: unexpected argument {other}");
                std::process::exit(2)
            }
        }
    }
    let Some(url) = url else {
        eprintln!(
            "usage: loadgen http://HOST:PORT/PATH [--concurrency N] [--seconds S] [--accept VALUE]"
        );
        std::process::exit(2)
    };
    let rest = url.trim_start_matches("http://");
    let (authority, path) = rest.split_at(rest.find('/').unwrap_or(rest.len()));
    let path = if path.is_empty() { "/" } else { path };
    let mut request =
        format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nUser-Agent: lockstep-loadgen\r\n");
    if let Some(accept) = &accept {
        request.push_str(&format!("Accept: {accept}\r\n"));
    }
    request.push_str("\r\n");

    let totals = Arc::new(Totals {
        requests: AtomicU64::new(0),
        errors: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
    });
    let start = Arc::new(Barrier::new(concurrency + 1));
    let deadline_after = Duration::from_secs_f64(seconds);
    let threads: Vec<_> = (0..concurrency)
        .map(|_| {
            let (totals, start) = (totals.clone(), start.clone());
            let (authority, request) = (authority.to_string(), request.clone());
            std::thread::spawn(move || {
                start.wait();
                let deadline = Instant::now() + deadline_after;
                let mut connection: Option<BufReader<TcpStream>> = None;
                let mut buf = vec![0u8; 1 << 16];
                while Instant::now() < deadline {
                    match one(&authority, &request, &mut connection, &mut buf) {
                        Ok(bytes) => {
                            totals.requests.fetch_add(1, Ordering::Relaxed);
                            totals.bytes.fetch_add(bytes, Ordering::Relaxed);
                        }
                        Err(_) => {
                            connection = None;
                            totals.errors.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            })
        })
        .collect();
    start.wait();
    let began = Instant::now();
    for thread in threads {
        let _ = thread.join();
    }
    let elapsed = began.elapsed().as_secs_f64();
    let requests = totals.requests.load(Ordering::Relaxed);
    println!(
        "requests {requests} errors {} seconds {elapsed:.3} rps {:.1} mbytes_per_s {:.1}",
        totals.errors.load(Ordering::Relaxed),
        requests as f64 / elapsed,
        totals.bytes.load(Ordering::Relaxed) as f64 / elapsed / 1e6
    );
}

fn number<T: std::str::FromStr>(text: &str) -> T {
    text.parse().unwrap_or_else(|_| {
        eprintln!("error: `{text}` is not a number");
        std::process::exit(2)
    })
}

/// One request on the kept connection (or a new one); the body's length.
/// Only 200 answers count; the connection is kept unless the server closes.
fn one(
    authority: &str,
    request: &str,
    connection: &mut Option<BufReader<TcpStream>>,
    buf: &mut [u8],
) -> std::io::Result<u64> {
    let reader = match connection {
        Some(reader) => reader,
        None => {
            let stream = TcpStream::connect(authority)?;
            stream.set_read_timeout(Some(Duration::from_secs(60)))?;
            stream.set_nodelay(true)?;
            connection.insert(BufReader::with_capacity(1 << 16, stream))
        }
    };
    reader.get_mut().write_all(request.as_bytes())?;
    let mut line = String::new();
    reader.read_line(&mut line)?;
    let status: u16 = line
        .split_whitespace()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| std::io::Error::other(format!("bad status line {line:?}")))?;
    let (mut length, mut close) = (None::<u64>, line.starts_with("HTTP/1.0"));
    loop {
        line.clear();
        if reader.read_line(&mut line)? == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        let header = line.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            let (name, value) = (name.trim(), value.trim());
            if name.eq_ignore_ascii_case("content-length") {
                length = value.parse().ok();
            } else if name.eq_ignore_ascii_case("connection") {
                close = value.eq_ignore_ascii_case("close");
            }
        }
    }
    let length = length.ok_or_else(|| std::io::Error::other("no Content-Length"))?;
    let mut left = length;
    while left > 0 {
        let want = left.min(buf.len() as u64) as usize;
        let n = reader.read(&mut buf[..want])?;
        if n == 0 {
            return Err(std::io::ErrorKind::UnexpectedEof.into());
        }
        left -= n as u64;
    }
    if close {
        *connection = None;
    }
    if status != 200 {
        return Err(std::io::Error::other(format!("HTTP {status}")));
    }
    Ok(length)
}
