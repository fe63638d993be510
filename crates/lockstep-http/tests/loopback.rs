//! The client against real servers on 127.0.0.1: retries and Retry-After,
//! resumed downloads, redirects and credentials, refused URLs, scrubbing.
//! Each server is a small thread that answers with raw bytes, so a test can
//! break a body off halfway or echo a token back.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use lockstep_http::{
    parse_url, Client, ClientConfig, HttpError, Multipart, Redirects, RetryOn, RetryPolicy, Url,
    UrlRules,
};

/// One request a server saw.
#[derive(Debug, Clone)]
struct Seen {
    method: String,
    target: String,
    headers: Vec<(String, String)>,
    at: Instant,
}

impl Seen {
    fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }
}

type Handler = dyn Fn(usize, &Seen, u16) -> Vec<u8> + Send + Sync;

/// Answers request number `n` (from 0) with the raw bytes `handler` gives,
/// then closes the connection.
struct Server {
    port: u16,
    seen: Arc<Mutex<Vec<Seen>>>,
}

impl Server {
    fn start(handler: impl Fn(usize, &Seen, u16) -> Vec<u8> + Send + Sync + 'static) -> Server {
        let handler: Arc<Handler> = Arc::new(handler);
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let seen = Arc::new(Mutex::new(Vec::new()));
        let log = seen.clone();
        std::thread::spawn(move || {
            for (n, stream) in listener.incoming().enumerate() {
                let Ok(mut stream) = stream else { continue };
                let _ = stream.set_read_timeout(Some(Duration::from_secs(10)));
                let Ok(clone) = stream.try_clone() else {
                    continue;
                };
                let mut reader = BufReader::new(clone);
                let mut line = String::new();
                if reader.read_line(&mut line).is_err() {
                    continue;
                }
                let mut parts = line.split_whitespace();
                let method = parts.next().unwrap_or_default().to_string();
                let target = parts.next().unwrap_or_default().to_string();
                let mut headers = Vec::new();
                loop {
                    let mut h = String::new();
                    if reader.read_line(&mut h).unwrap_or(0) == 0 || h.trim().is_empty() {
                        break;
                    }
                    if let Some((k, v)) = h.split_once(':') {
                        headers.push((k.trim().to_string(), v.trim().to_string()));
                    }
                }
                let length: usize = headers
                    .iter()
                    .find(|(k, _)| k.eq_ignore_ascii_case("content-length"))
                    .and_then(|(_, v)| v.parse().ok())
                    .unwrap_or(0);
                let mut body = vec![0; length];
                let _ = std::io::Read::read_exact(&mut reader, &mut body);
                let request = Seen {
                    method,
                    target,
                    headers,
                    at: Instant::now(),
                };
                log.lock().unwrap().push(request.clone());
                let reply = handler(n, &request, port);
                let _ = stream.write_all(&reply);
                let _ = stream.flush();
            }
        });
        Server { port, seen }
    }

    fn url(&self, path: &str) -> Url {
        Url::parse(&format!("http://127.0.0.1:{}{path}", self.port)).unwrap()
    }

    fn seen(&self) -> Vec<Seen> {
        self.seen.lock().unwrap().clone()
    }
}

fn reply(status: &str, headers: &[(&str, String)], body: &[u8]) -> Vec<u8> {
    let mut out = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (k, v) in headers {
        out.push_str(&format!("{k}: {v}\r\n"));
    }
    out.push_str("\r\n");
    let mut bytes = out.into_bytes();
    bytes.extend_from_slice(body);
    bytes
}

/// A client whose backoff is short, so the tests stay quick; Retry-After
/// still decides when a server gives one.
fn client() -> Client {
    Client::new(ClientConfig {
        deadline: Duration::from_secs(30),
        retry: RetryPolicy {
            max_attempts: 4,
            base: Duration::from_millis(50),
            max_wait: Duration::from_secs(5),
        },
        ..ClientConfig::default()
    })
}

#[test]
fn a_503_with_retry_after_is_retried_after_the_wait() {
    let server = Server::start(|n, _, _| match n {
        0 => reply("503 Busy", &[("Retry-After", "1".into())], b"busy"),
        _ => reply("200 OK", &[], b"ok"),
    });
    let got = client()
        .get(&server.url("/x"))
        .fetch(1024)
        .expect("second try");
    assert_eq!(got.body, b"ok");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    // Sleeping guarantees at least the wait: a lower bound only.
    assert!(seen[1].at.duration_since(seen[0].at) >= Duration::from_millis(900));
}

#[test]
fn a_429_is_retried_and_gives_up_after_the_attempts() {
    let server = Server::start(|n, _, _| match n {
        0 => reply("429 Too Many Requests", &[("Retry-After", "0".into())], b""),
        _ => reply("200 OK", &[], b"ok"),
    });
    assert_eq!(
        client().get(&server.url("/")).fetch(10).unwrap().body,
        b"ok"
    );

    let always = Server::start(|_, _, _| reply("429 Slow Down", &[], b"slow down"));
    let err = client().get(&always.url("/")).fetch(10).unwrap_err();
    match &err {
        HttpError::Status(s) => {
            assert_eq!(s.status, 429);
            assert_eq!(s.attempts, 4);
            assert_eq!(s.excerpt(), "slow down");
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(always.seen().len(), 4);
}

/// GitHub's secondary rate limits answer 403 with a `Retry-After` (or
/// `x-ratelimit-remaining: 0`): retried like a 429. A plain 403 (a token
/// without the permission) is not.
#[test]
fn a_403_rate_limit_is_retried_and_a_plain_403_is_not() {
    let server = Server::start(|n, _, _| match n {
        0 => reply(
            "403 Forbidden",
            &[("Retry-After", "0".into())],
            b"{\"message\": \"You have exceeded a secondary rate limit\"}",
        ),
        1 => reply(
            "403 Forbidden",
            &[
                ("x-ratelimit-remaining", "0".into()),
                ("x-ratelimit-reset", "0".into()),
            ],
            b"{\"message\": \"API rate limit exceeded\"}",
        ),
        _ => reply("200 OK", &[], b"ok"),
    });
    assert_eq!(
        client().get(&server.url("/")).fetch(10).unwrap().body,
        b"ok"
    );
    assert_eq!(server.seen().len(), 3);

    let refused = Server::start(|_, _, _| reply("403 Forbidden", &[], b"no"));
    let err = client().get(&refused.url("/")).fetch(10).unwrap_err();
    assert_eq!(err.status(), Some(403));
    assert_eq!(refused.seen().len(), 1);
}

#[test]
fn a_retry_after_beyond_the_cap_is_reported_at_once() {
    let server = Server::start(|_, _, _| reply("503 Busy", &[("Retry-After", "3600".into())], b""));
    let err = client().get(&server.url("/")).fetch(10).unwrap_err();
    assert_eq!(err.status(), Some(503));
    assert_eq!(server.seen().len(), 1);
}

#[test]
fn other_4xx_and_posts_are_not_retried_unless_asked() {
    let server = Server::start(|_, _, _| reply("404 Not Found", &[], b""));
    assert_eq!(
        client()
            .get(&server.url("/"))
            .fetch(10)
            .unwrap_err()
            .status(),
        Some(404)
    );
    assert_eq!(server.seen().len(), 1);

    let server = Server::start(|_, _, _| reply("503 Busy", &[], b""));
    let err = client()
        .post(&server.url("/"))
        .send("text/plain", b"x")
        .err()
        .unwrap();
    assert_eq!(err.status(), Some(503));
    assert_eq!(server.seen().len(), 1, "a POST is not repeated");

    let server = Server::start(|n, _, _| match n {
        0 => reply("429 Slow Down", &[("Retry-After", "0".into())], b""),
        _ => reply("204 No Content", &[], b""),
    });
    let form = Multipart::new().field("a", None, b"1").encode();
    client()
        .post(&server.url("/hook"))
        .retry(RetryOn::RateLimitOnly)
        .send(&form.content_type, &form.body)
        .expect("posted on the second try");
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert!(seen.iter().all(|s| s.method == "POST"));
}

#[test]
fn a_refused_connection_is_retried_then_named_without_the_url() {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    let url = Url::parse(&format!("http://127.0.0.1:{port}/secret-path?sig=abc123")).unwrap();
    let err = client().get(&url).fetch(10).unwrap_err();
    match &err {
        HttpError::Transport(t) => {
            assert_eq!(t.reason(), "connection refused");
            assert!(
                !t.detail.contains("secret-path") && !t.detail.contains("abc123"),
                "{}",
                t.detail
            );
        }
        other => panic!("{other:?}"),
    }
    let rendered = err.into_error("the server", "the thing").render();
    assert!(!rendered.contains("abc123"), "{rendered}");
}

fn content(len: usize) -> Vec<u8> {
    (0..len).map(|i| (i * 7 % 251) as u8).collect()
}

fn sha256(bytes: &[u8]) -> String {
    lockstep_core::hash::sha256_bytes(bytes)
}

#[test]
fn a_body_cut_off_midway_is_resumed_with_range() {
    let data = content(200_000);
    let body = data.clone();
    let server = Server::start(move |n, seen, _| {
        let etag = ("ETag", "\"v1\"".to_string());
        match (n, seen.header("range")) {
            // The first answer announces everything, sends half, and drops.
            (0, None) => {
                let mut raw = reply("200 OK", &[etag], &body);
                raw.truncate(raw.len() - body.len() / 2);
                raw
            }
            (_, Some(range)) => {
                let start: usize = range
                    .trim_start_matches("bytes=")
                    .trim_end_matches('-')
                    .parse()
                    .unwrap();
                let rest = &body[start..];
                reply(
                    "206 Partial Content",
                    &[
                        etag,
                        (
                            "Content-Range",
                            format!("bytes {start}-{}/{}", body.len() - 1, body.len()),
                        ),
                    ],
                    rest,
                )
            }
            _ => reply("500 Unexpected", &[], b""),
        }
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("blob.zip");
    let got = client()
        .get(&server.url("/blob"))
        .download(&dest, 1 << 20)
        .expect("resumed");
    assert_eq!(got.bytes, data.len() as u64);
    assert_eq!(got.sha256, sha256(&data));
    assert_eq!(got.resumed, 1);
    assert_eq!(std::fs::read(&dest).unwrap(), data);
    let seen = server.seen();
    assert_eq!(seen.len(), 2);
    assert_eq!(seen[1].header("if-range"), Some("\"v1\""));
    assert_eq!(seen[1].header("accept-encoding"), Some("identity"));
    let names: Vec<_> = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(names.len(), 1, "{names:?}");
}

#[test]
fn a_server_that_ignores_range_restarts_the_body() {
    let data = content(50_000);
    let body = data.clone();
    let server = Server::start(move |n, _, _| {
        let mut raw = reply("200 OK", &[], &body);
        if n == 0 {
            raw.truncate(raw.len() - 10_000);
        }
        raw
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("f");
    let got = client()
        .get(&server.url("/f"))
        .download(&dest, 1 << 20)
        .unwrap();
    assert_eq!(got.resumed, 0);
    assert_eq!(got.sha256, sha256(&data));
    assert_eq!(std::fs::read(&dest).unwrap(), data);
}

#[test]
fn a_download_that_never_completes_leaves_nothing() {
    let data = content(30_000);
    let server = Server::start(move |_, _, _| {
        let mut raw = reply("200 OK", &[], &data);
        raw.truncate(raw.len() - 1);
        raw
    });
    let dir = tempfile::tempdir().unwrap();
    let dest = dir.path().join("f");
    let err = client()
        .get(&server.url("/f"))
        .download(&dest, 1 << 20)
        .unwrap_err();
    assert!(matches!(err, HttpError::Transport(_)), "{err:?}");
    assert_eq!(server.seen().len(), 4);
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);

    // Too large: refused from the announced length, nothing kept either.
    let big = Server::start(|_, _, _| reply("200 OK", &[], &[0u8; 5000]));
    let err = client()
        .get(&big.url("/f"))
        .download(&dest, 100)
        .unwrap_err();
    assert!(matches!(err, HttpError::TooLarge { limit: 100 }), "{err:?}");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

#[test]
fn credentials_stay_on_their_origin() {
    let storage = Server::start(|_, _, _| reply("200 OK", &[], b"blob"));
    let storage_url = storage.url("/blob?sig=signature-never-printed");
    let api = Server::start(move |_, seen, port| {
        if seen.target.starts_with("/same") {
            let to = format!("http://127.0.0.1:{port}/landed");
            reply("302 Found", &[("Location", to)], b"")
        } else if seen.target.starts_with("/cross") {
            reply("302 Found", &[("Location", storage_url.to_string())], b"")
        } else {
            reply("200 OK", &[], b"api")
        }
    });
    // Same origin: the token goes along.
    let got = client()
        .get(&api.url("/same"))
        .bearer("tok-123456")
        .fetch(10)
        .unwrap();
    assert_eq!(got.body, b"api");
    let landed = api
        .seen()
        .into_iter()
        .find(|s| s.target == "/landed")
        .unwrap();
    assert_eq!(landed.header("authorization"), Some("Bearer tok-123456"));

    // Another origin (another port): followed only when allowed, without the token.
    let err = client()
        .get(&api.url("/cross"))
        .bearer("tok-123456")
        .fetch(10)
        .unwrap_err();
    assert!(matches!(err, HttpError::Redirect(_)), "{err:?}");
    assert!(storage.seen().is_empty());
    let got = client()
        .get(&api.url("/cross"))
        .bearer("tok-123456")
        .redirects(Redirects::AnyOrigin)
        .fetch(10)
        .unwrap();
    assert_eq!(got.body, b"blob");
    let seen = storage.seen();
    assert_eq!(seen.len(), 1);
    assert_eq!(seen[0].header("authorization"), None);

    // First-hop-only drops it even on the same origin.
    client()
        .get(&api.url("/same"))
        .bearer("tok-123456")
        .redirects(Redirects::AnyOriginCredentialsFirstOnly)
        .fetch(10)
        .unwrap();
    let last = api
        .seen()
        .into_iter()
        .rfind(|s| s.target == "/landed")
        .unwrap();
    assert_eq!(last.header("authorization"), None);
}

#[test]
fn redirects_to_other_schemes_userinfo_or_too_many_hops_are_refused() {
    let server = Server::start(|_, seen, port| {
        let to = match seen.target.as_str() {
            "/file" => "file:///etc/passwd".to_string(),
            "/user" => format!("http://u:p@127.0.0.1:{port}/x"),
            "/remote" => "http://example.com/x".to_string(),
            _ => format!("http://127.0.0.1:{port}/loop"),
        };
        reply("302 Found", &[("Location", to)], b"")
    });
    for path in ["/file", "/user", "/remote"] {
        let err = client()
            .get(&server.url(path))
            .redirects(Redirects::AnyOrigin)
            .fetch(10)
            .unwrap_err();
        assert!(
            matches!(
                err,
                HttpError::Redirect(lockstep_http::RedirectError::Refused { .. })
            ),
            "{path}: {err:?}"
        );
    }
    let err = client().get(&server.url("/loop")).fetch(10).unwrap_err();
    assert!(
        matches!(
            err,
            HttpError::Redirect(lockstep_http::RedirectError::TooMany(5))
        ),
        "{err:?}"
    );
    let loops = server.seen().iter().filter(|s| s.target == "/loop").count();
    assert_eq!(loops, 6);
}

#[test]
fn urls_with_userinfo_are_refused_before_anything_is_sent() {
    let server = Server::start(|_, _, _| reply("200 OK", &[], b""));
    let text = format!("http://127.0.0.1:1@localhost:{}/", server.port);
    assert!(parse_url(&text, UrlRules::CREDENTIALED).is_err());
    // Even a URL parsed elsewhere is checked when sent.
    let url = Url::parse(&text).unwrap();
    let err = client()
        .get(&url)
        .bearer("tok-abcdef")
        .fetch(10)
        .unwrap_err();
    assert!(err.is_usage(), "{err:?}");
    assert!(server.seen().is_empty());
}

#[test]
fn a_token_echoed_by_the_server_is_scrubbed() {
    let server = Server::start(|_, seen, _| {
        let auth = seen.header("authorization").unwrap_or_default().to_string();
        let body = format!("{{\"message\": \"Bad credentials: {auth}\\n\\u001b[31mred\"}}");
        reply("401 Unauthorized", &[("X-Echo", auth)], body.as_bytes())
    });
    let err = client()
        .get(&server.url("/"))
        .bearer("ghp_EchoedSecret123")
        .fetch(1000)
        .unwrap_err();
    let HttpError::Status(status) = &err else {
        panic!("{err:?}")
    };
    assert_eq!(status.status, 401);
    assert_eq!(
        status.message(),
        Some("Bad credentials: Bearer <token> [31mred")
    );
    assert!(
        !status.excerpt().contains("EchoedSecret"),
        "{}",
        status.excerpt()
    );
    let rendered = err.into_error("GitHub", "x").render();
    assert!(!rendered.contains("EchoedSecret"), "{rendered}");
    assert!(!rendered.contains('\u{1b}'), "{rendered}");
}
