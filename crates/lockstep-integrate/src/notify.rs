//! Posting an integrate halt report to a chat webhook.
//!
//! When `integrate loop` halts on a commit that breaks the smoke test,
//! `integrate report --post` sends the report to whoever watches the
//! integrate: a Discord channel, a Slack channel, or any service that takes a
//! plain JSON POST (`[integrate.notify] kind`). The report's text goes in the
//! message; the error summary rides along (as an `errors.txt` attachment for
//! Discord, a code block for Slack, a field for JSON).
//!
//! The webhook URL is a credential — anyone holding a Discord or Slack webhook
//! URL can post to the channel — so it is read from an environment variable
//! named in the configuration (`[integrate.notify] url-env`) and never written
//! anywhere lockstep writes: errors and log lines name the *variable*
//! (`the webhook in $LOCKSTEP_WEBHOOK_URL answered HTTP 404`), and any text
//! that comes back from the HTTP stack or the server is scrubbed of the URL, its
//! host and its path before it reaches an error. For the same reason, messages
//! are built from the parts of `ureq`'s errors rather than their `Display`,
//! which starts with the URL, and redirects are not followed (a webhook has no
//! business redirecting, and a redirect target would be one more URL to hide).

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::time::{Duration, SystemTime};

use crate::config::NotifyKind;
use lockstep_core::Error;

/// How long one post may take in all (connect, send, read the answer).
const TIMEOUT: Duration = Duration::from_secs(30);

/// Discord rejects messages whose `content` is longer than this many characters.
const DISCORD_CONTENT_LIMIT: usize = 2000;

/// At most this many characters of an error response's body go into the error.
const RESPONSE_EXCERPT: usize = 200;

/// What is posted: the report and its error summary.
#[derive(Debug, Clone, Copy)]
pub struct Message<'a> {
    /// Markdown-ish text of the report (the message body).
    pub content: &'a str,
    /// The error summary, sent as an attachment `errors.txt` for Discord.
    pub errors_txt: &'a str,
}

/// Posts `msg` to the webhook whose URL is in the environment variable
/// `url_env`.
///
/// The URL never appears in the returned error or in log lines; errors name
/// `$url_env` instead. A missing or empty variable, or a value that is not an
/// `http://` or `https://` URL, is a usage error (exit 2).
pub fn post(kind: NotifyKind, url_env: &str, msg: &Message) -> Result<(), Error> {
    let url = url_from_env(url_env, std::env::var(url_env))?;
    post_to(kind, &url, url_env, msg)
}

/// Same as [`post`], with the URL given; `url_env_name_for_messages` is the
/// name errors use for it (`the webhook in $NAME ...`).
pub fn post_to(
    kind: NotifyKind,
    url: &str,
    url_env_name_for_messages: &str,
    msg: &Message,
) -> Result<(), Error> {
    let var = url_env_name_for_messages;
    let url = url.trim();
    if url.is_empty() {
        return Err(not_set(var));
    }
    if !(starts_with_ignore_case(url, "http://") || starts_with_ignore_case(url, "https://")) {
        return Err(Error::usage(format!(
            "the webhook URL in ${var} does not start with http:// or https://"
        ))
        .hint(format!(
            "set ${var} to the webhook's full URL, e.g. https://discord.com/api/webhooks/..."
        )));
    }
    let scrub = Scrubber::new(url);

    let (content_type, body) = match kind {
        NotifyKind::Discord => {
            let boundary = fresh_boundary(msg);
            discord_multipart(msg, &boundary)
        }
        NotifyKind::Slack => (json_type(), slack_json(msg)),
        NotifyKind::Json => (json_type(), plain_json(msg)),
    };
    tracing::debug!(
        kind = ?kind,
        url_env = var,
        bytes = body.len(),
        "posting the report to the webhook"
    );

    let agent = ureq::AgentBuilder::new()
        .timeout(TIMEOUT)
        .redirects(0)
        .user_agent(concat!("lockstep/", env!("CARGO_PKG_VERSION")))
        .build();
    let result = agent
        .post(url)
        .set("Content-Type", &content_type)
        .send_bytes(&body);

    match result {
        Ok(response) if (200..300).contains(&response.status()) => {
            tracing::debug!(
                status = response.status(),
                url_env = var,
                "the webhook took the report"
            );
            Ok(())
        }
        // Only 3xx get here: 4xx and 5xx come back as `Error::Status`.
        Ok(response) => Err(status_error(var, response.status(), response, &scrub)),
        Err(ureq::Error::Status(code, response)) => Err(status_error(var, code, response, &scrub)),
        Err(ureq::Error::Transport(transport)) => Err(transport_error(var, &transport, &scrub)),
    }
}

/// Builds the Discord multipart body: returns (content_type_header_value, body
/// bytes).
///
/// Two parts, per RFC 7578 with CRLF line endings: `payload_json` (the message,
/// its content cut to Discord's 2000 characters with a trailing `…`, and the
/// attachment's metadata) and `files[0]` (`errors.txt`). The caller picks a
/// `boundary` that does not occur in the message; [`post_to`] does.
pub fn discord_multipart(msg: &Message, boundary: &str) -> (String, Vec<u8>) {
    let payload = serde_json::json!({
        "content": truncate_chars(msg.content, DISCORD_CONTENT_LIMIT),
        "attachments": [{
            "id": 0,
            "filename": "errors.txt",
            "description": "error summary",
        }],
    });
    let mut body = Vec::new();
    let mut part = |headers: &str, data: &[u8]| {
        body.extend_from_slice(format!("--{boundary}\r\n{headers}\r\n\r\n").as_bytes());
        body.extend_from_slice(data);
        body.extend_from_slice(b"\r\n");
    };
    part(
        "Content-Disposition: form-data; name=\"payload_json\"\r\n\
         Content-Type: application/json",
        payload.to_string().as_bytes(),
    );
    part(
        "Content-Disposition: form-data; name=\"files[0]\"; filename=\"errors.txt\"\r\n\
         Content-Type: text/plain; charset=utf-8",
        msg.errors_txt.as_bytes(),
    );
    body.extend_from_slice(format!("--{boundary}--\r\n").as_bytes());
    (format!("multipart/form-data; boundary={boundary}"), body)
}

/// The URL from the environment variable's value, or a usage error naming the
/// variable.
fn url_from_env(var: &str, value: Result<String, std::env::VarError>) -> Result<String, Error> {
    match value {
        Ok(url) if !url.trim().is_empty() => Ok(url.trim().to_string()),
        Ok(_) | Err(std::env::VarError::NotPresent) => Err(not_set(var)),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::usage(format!(
            "the webhook URL in ${var} is not valid UTF-8"
        ))
        .hint(format!("export {var}=<webhook url>"))),
    }
}

fn not_set(var: &str) -> Error {
    Error::usage(format!("no webhook URL: ${var} is not set")).hint(format!(
        "export {var}=<webhook url> (the variable is named by `url-env` in [integrate.notify] of lockstep.toml)"
    ))
}

fn json_type() -> String {
    "application/json".to_string()
}

fn slack_json(msg: &Message) -> Vec<u8> {
    let text = format!("{}\n```\n{}\n```", msg.content, msg.errors_txt);
    serde_json::json!({ "text": text }).to_string().into_bytes()
}

fn plain_json(msg: &Message) -> Vec<u8> {
    serde_json::json!({ "content": msg.content, "errors": msg.errors_txt })
        .to_string()
        .into_bytes()
}

/// `text` cut to at most `limit` characters, the last being `…` when cut.
fn truncate_chars(text: &str, limit: usize) -> String {
    if text.chars().count() <= limit {
        return text.to_string();
    }
    let mut out: String = text.chars().take(limit.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A multipart boundary that occurs in neither the content nor the errors
/// (hashed from the time, the pid and a randomly seeded hasher).
fn fresh_boundary(msg: &Message) -> String {
    let state = RandomState::new();
    let now = SystemTime::now()
        .duration_since(SystemTime::UNIX_EPOCH)
        .map(|d| d.as_nanos())
        .unwrap_or_default();
    let mut attempt: u64 = 0;
    loop {
        let mut words = [0u64; 2];
        for (i, word) in words.iter_mut().enumerate() {
            *word = state.hash_one((now, std::process::id(), attempt, i));
        }
        let boundary = format!("lockstep-{:016x}{:016x}", words[0], words[1]);
        if !msg.content.contains(&boundary) && !msg.errors_txt.contains(&boundary) {
            return boundary;
        }
        attempt += 1;
    }
}

fn starts_with_ignore_case(text: &str, prefix: &str) -> bool {
    text.get(..prefix.len())
        .is_some_and(|head| head.eq_ignore_ascii_case(prefix))
}

/// The error for a webhook that answered with a status other than 2xx.
fn status_error(var: &str, code: u16, response: ureq::Response, scrub: &Scrubber) -> Error {
    let body = match response.into_string() {
        Ok(body) => body,
        Err(err) => format!("(could not read the response: {err})"),
    };
    let body = scrub.apply(body.trim());
    let mut err = Error::failed(format!("the webhook in ${var} answered HTTP {code}"));
    if !body.is_empty() {
        err = err.cause(format!(
            "response: {}",
            truncate_chars(&body, RESPONSE_EXCERPT)
        ));
    }
    let hint = match code {
        401 | 403 | 404 => format!(
            "the webhook may have been deleted or its token changed: check the URL in ${var}"
        ),
        429 => "the webhook is rate-limited: post again later".to_string(),
        300..=399 => format!(
            "the webhook redirects, which lockstep does not follow: put the final URL in ${var}"
        ),
        500..=599 => "the chat service failed: post again later".to_string(),
        _ => format!("check the URL in ${var}"),
    };
    err.hint(hint)
}

/// The error for a webhook that could not be reached (or did not answer).
fn transport_error(var: &str, transport: &ureq::Transport, scrub: &Scrubber) -> Error {
    use std::error::Error as _;

    let io = transport
        .source()
        .and_then(|source| source.downcast_ref::<std::io::Error>());
    let reason = match (transport.kind(), io) {
        (ureq::ErrorKind::Dns, _) => "its host name could not be resolved".to_string(),
        (_, Some(io)) => io_reason(io),
        (kind, None) => kind.to_string().to_lowercase(),
    };

    // Everything ureq knows, minus the URL: kind, message and source chain.
    let mut detail = transport.kind().to_string();
    if let Some(message) = transport.message() {
        detail.push_str(": ");
        detail.push_str(message);
    }
    let mut source = transport.source();
    while let Some(err) = source {
        detail.push_str(": ");
        detail.push_str(&err.to_string());
        source = err.source();
    }

    let reason = scrub.apply(&reason);
    let detail = scrub.apply(&detail);
    match transport.kind() {
        ureq::ErrorKind::InvalidUrl | ureq::ErrorKind::UnknownScheme => {
            Error::usage(format!("the webhook URL in ${var} is not a valid URL"))
                .cause(detail)
                .hint(format!("set ${var} to the webhook's full URL"))
        }
        _ => Error::failed(format!(
            "the webhook in ${var} could not be reached: {reason}"
        ))
        .cause(detail)
        .hint(format!(
            "check the network, and the URL in ${var}; then post again"
        )),
    }
}

/// A short reason for an I/O failure: the error kind for the familiar ones
/// (`connection refused`), the OS's text otherwise.
fn io_reason(io: &std::io::Error) -> String {
    use std::io::ErrorKind::*;
    match io.kind() {
        TimedOut | WouldBlock => format!("timed out after {} s", TIMEOUT.as_secs()),
        kind @ (ConnectionRefused | ConnectionReset | ConnectionAborted | NotConnected
        | AddrNotAvailable | BrokenPipe | UnexpectedEof | PermissionDenied) => kind.to_string(),
        _ => io.to_string(),
    }
}

/// Replaces the webhook URL and its pieces (host, path) in text that came
/// from the HTTP stack or the server.
struct Scrubber {
    /// (needle, replacement), longest needle first.
    needles: Vec<(String, &'static str)>,
}

impl Scrubber {
    fn new(url: &str) -> Self {
        const URL: &str = "<webhook URL>";
        const HOST: &str = "<webhook host>";
        const PATH: &str = "<webhook path>";

        let mut needles: Vec<(String, &'static str)> = Vec::new();
        let mut add = |needle: &str, replacement: &'static str| {
            // Very short needles would mangle unrelated text and hide nothing.
            if needle.chars().count() >= 3 {
                needles.push((needle.to_string(), replacement));
                needles.push((needle.to_lowercase(), replacement));
            }
        };

        add(url, URL);
        add(url.trim_end_matches('/'), URL);
        let rest = url.split_once("://").map_or(url, |(_, rest)| rest);
        add(rest, URL);
        let path_start = rest.find(['/', '?', '#']).unwrap_or(rest.len());
        let (authority, path) = rest.split_at(path_start);
        add(authority, HOST);
        let host_port = authority.rsplit_once('@').map_or(authority, |(_, hp)| hp);
        add(host_port, HOST);
        let host = if host_port.starts_with('[') {
            // IPv6 literal: `[::1]:8080`.
            host_port
                .find(']')
                .map_or(host_port, |end| &host_port[..=end])
        } else {
            host_port
                .rsplit_once(':')
                .map_or(host_port, |(host, _)| host)
        };
        add(host, HOST);
        add(path, PATH);
        let path_only = path.split(['?', '#']).next().unwrap_or_default();
        add(path_only, PATH);
        add(path_only.trim_end_matches('/'), PATH);

        needles.sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        needles.dedup_by(|a, b| a.0 == b.0);
        Scrubber { needles }
    }

    fn apply(&self, text: &str) -> String {
        let mut out = text.to_string();
        for (needle, replacement) in &self.needles {
            if out.contains(needle.as_str()) {
                out = out.replace(needle.as_str(), replacement);
            }
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;
    use std::thread;

    /// One request as the test server saw it.
    struct Request {
        method: String,
        path: String,
        headers: Vec<(String, String)>,
        body: Vec<u8>,
    }

    impl Request {
        fn header(&self, name: &str) -> Option<&str> {
            self.headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case(name))
                .map(|(_, v)| v.as_str())
        }
    }

    /// Serves one request on 127.0.0.1, answering `status_line` (e.g. `204 No
    /// Content`) and the body `reply_body(port, path)` builds; returns the base
    /// URL and a receiver for the request.
    fn serve_once(
        status_line: &'static str,
        reply_body: impl FnOnce(u16, &str) -> String + Send + 'static,
    ) -> (String, mpsc::Receiver<Request>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind test server");
        let port = listener.local_addr().expect("local addr").port();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            let (stream, _) = listener.accept().expect("accept");
            let mut reader = BufReader::new(stream.try_clone().expect("clone stream"));
            let mut request_line = String::new();
            reader.read_line(&mut request_line).expect("request line");
            let mut parts = request_line.split_whitespace();
            let method = parts.next().unwrap_or_default().to_string();
            let path = parts.next().unwrap_or_default().to_string();
            let mut headers = Vec::new();
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("header line");
                let line = line.trim_end_matches(['\r', '\n']);
                if line.is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').expect("header has a colon");
                headers.push((name.trim().to_string(), value.trim().to_string()));
            }
            let length: usize = headers
                .iter()
                .find(|(n, _)| n.eq_ignore_ascii_case("content-length"))
                .map(|(_, v)| v.parse().expect("numeric content-length"))
                .unwrap_or(0);
            let mut body = vec![0; length];
            reader.read_exact(&mut body).expect("request body");
            let reply_body = reply_body(port, &path);
            let mut stream = stream;
            let reply = format!(
                "HTTP/1.1 {status_line}\r\nContent-Type: text/plain\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{reply_body}",
                reply_body.len()
            );
            stream.write_all(reply.as_bytes()).expect("reply");
            stream.flush().expect("flush");
            let _ = tx.send(Request {
                method,
                path,
                headers,
                body,
            });
        });
        (format!("http://127.0.0.1:{port}"), rx)
    }

    fn recv(rx: &mpsc::Receiver<Request>) -> Request {
        rx.recv_timeout(Duration::from_secs(10))
            .expect("the server saw a request")
    }

    const MSG: Message<'static> = Message {
        content: "**Integrate halted** at `abc123`: smoke failed",
        errors_txt: "FAILED: foo.o\nerror: `bar` not found \"quoted\"\n",
    };

    /// Splits a multipart body into (headers, data) parts.
    fn multipart_parts(body: &[u8], boundary: &str) -> Vec<(String, Vec<u8>)> {
        let text = String::from_utf8(body.to_vec()).expect("utf-8 body");
        let delimiter = format!("--{boundary}");
        let closing = format!("{delimiter}--\r\n");
        assert!(
            text.ends_with(&closing),
            "body ends with the closing delimiter"
        );
        let inner = &text[..text.len() - closing.len()];
        assert!(inner.starts_with(&format!("{delimiter}\r\n")));
        inner
            .split(&format!("{delimiter}\r\n"))
            .skip(1)
            .map(|part| {
                let part = part
                    .strip_suffix("\r\n")
                    .expect("part data ends with CRLF before the delimiter");
                let (headers, data) = part
                    .split_once("\r\n\r\n")
                    .expect("blank line after headers");
                (headers.to_string(), data.as_bytes().to_vec())
            })
            .collect()
    }

    #[test]
    fn discord_posts_multipart_with_payload_json_and_errors_txt() {
        let (base, rx) = serve_once("204 No Content", |_, _| String::new());
        let url = format!("{base}/api/webhooks/1/token");
        post_to(NotifyKind::Discord, &url, "LOCKSTEP_WEBHOOK_URL", &MSG).expect("posted");

        let req = recv(&rx);
        assert_eq!(req.method, "POST");
        assert_eq!(req.path, "/api/webhooks/1/token");
        let content_type = req.header("content-type").expect("content-type");
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .expect("multipart content type");
        assert!(!boundary.is_empty());

        let parts = multipart_parts(&req.body, boundary);
        assert_eq!(parts.len(), 2);

        let (headers, data) = &parts[0];
        assert!(headers.contains("Content-Disposition: form-data; name=\"payload_json\""));
        assert!(headers.contains("Content-Type: application/json"));
        let payload: serde_json::Value = serde_json::from_slice(data).expect("payload is JSON");
        assert_eq!(payload["content"], MSG.content);
        assert_eq!(payload["attachments"][0]["id"], 0);
        assert_eq!(payload["attachments"][0]["filename"], "errors.txt");
        assert_eq!(payload["attachments"][0]["description"], "error summary");

        let (headers, data) = &parts[1];
        assert!(headers.contains("name=\"files[0]\""));
        assert!(headers.contains("filename=\"errors.txt\""));
        assert!(headers.contains("Content-Type: text/plain"));
        assert_eq!(String::from_utf8_lossy(data), MSG.errors_txt);
    }

    #[test]
    fn discord_content_is_cut_to_2000_chars() {
        let long = "é".repeat(2500);
        let msg = Message {
            content: &long,
            errors_txt: "e",
        };
        let (_, body) = discord_multipart(&msg, "BOUNDARY");
        let parts = multipart_parts(&body, "BOUNDARY");
        let payload: serde_json::Value = serde_json::from_slice(&parts[0].1).expect("JSON");
        let content = payload["content"].as_str().expect("string content");
        assert_eq!(content.chars().count(), 2000);
        assert!(content.ends_with('…'));

        let exact = "x".repeat(2000);
        let msg = Message {
            content: &exact,
            errors_txt: "",
        };
        let (_, body) = discord_multipart(&msg, "B");
        let parts = multipart_parts(&body, "B");
        let payload: serde_json::Value = serde_json::from_slice(&parts[0].1).expect("JSON");
        assert_eq!(payload["content"], exact.as_str());
    }

    #[test]
    fn boundary_avoids_the_message() {
        let msg = Message {
            content: "lockstep-",
            errors_txt: "--lockstep-",
        };
        let boundary = fresh_boundary(&msg);
        let (content_type, body) = discord_multipart(&msg, &boundary);
        assert_eq!(
            content_type,
            format!("multipart/form-data; boundary={boundary}")
        );
        assert!(
            boundary.len() <= 70,
            "RFC 2046 limits boundaries to 70 chars"
        );
        assert!(!msg.content.contains(&boundary) && !msg.errors_txt.contains(&boundary));
        assert_eq!(multipart_parts(&body, &boundary).len(), 2);
    }

    #[test]
    fn slack_posts_text_with_errors_in_a_code_block() {
        let (base, rx) = serve_once("200 OK", |_, _| "ok".into());
        post_to(
            NotifyKind::Slack,
            &format!("{base}/services/T/B/x"),
            "HOOK",
            &MSG,
        )
        .expect("posted");
        let req = recv(&rx);
        assert_eq!(req.method, "POST");
        assert_eq!(req.header("content-type"), Some("application/json"));
        let json: serde_json::Value = serde_json::from_slice(&req.body).expect("valid JSON");
        let object = json.as_object().expect("an object");
        assert_eq!(object.len(), 1);
        assert_eq!(
            json["text"],
            format!("{}\n```\n{}\n```", MSG.content, MSG.errors_txt)
        );
    }

    #[test]
    fn json_posts_content_and_errors() {
        let (base, rx) = serve_once("201 Created", |_, _| String::new());
        post_to(NotifyKind::Json, &format!("{base}/hook"), "HOOK", &MSG).expect("posted");
        let req = recv(&rx);
        assert_eq!(req.header("content-type"), Some("application/json"));
        let json: serde_json::Value = serde_json::from_slice(&req.body).expect("valid JSON");
        assert_eq!(json.as_object().expect("an object").len(), 2);
        assert_eq!(json["content"], MSG.content);
        assert_eq!(json["errors"], MSG.errors_txt);
    }

    #[test]
    fn http_404_names_the_status_but_not_the_url() {
        // Some services echo the URL back in their error body: it must be scrubbed too.
        let (base, rx) = serve_once("404 Not Found", |port, path| {
            format!(
                "{{\"message\": \"Unknown Webhook\", \"url\": \"http://127.0.0.1:{port}{path}\", \"host\": \"127.0.0.1\"}}"
            )
        });
        let port = base.rsplit(':').next().expect("port").to_string();
        let url = format!("{base}/api/webhooks/42/sekrit-token");
        let err = post_to(NotifyKind::Discord, &url, "LOCKSTEP_WEBHOOK_URL", &MSG)
            .expect_err("404 is an error");
        assert_eq!(recv(&rx).path, "/api/webhooks/42/sekrit-token");
        let rendered = err.render();
        assert_eq!(err.exit_code(), 1);
        assert!(
            rendered.contains("the webhook in $LOCKSTEP_WEBHOOK_URL answered HTTP 404"),
            "{rendered}"
        );
        assert!(rendered.contains("Unknown Webhook"), "{rendered}");
        for secret in [
            url.as_str(),
            "127.0.0.1",
            port.as_str(),
            "sekrit-token",
            "webhooks/42",
        ] {
            assert!(
                !rendered.contains(secret),
                "{secret:?} leaked into:\n{rendered}"
            );
            assert!(!err.to_string().contains(secret), "{secret:?} leaked");
        }
    }

    #[test]
    fn long_error_bodies_are_cut_to_200_chars() {
        let (base, rx) = serve_once("500 Internal Server Error", |_, _| "x".repeat(5000));
        let err = post_to(NotifyKind::Json, &format!("{base}/h"), "HOOK", &MSG)
            .expect_err("500 is an error");
        let _ = recv(&rx);
        assert!(err.message.contains("HTTP 500"), "{}", err.render());
        let cause = &err.causes[0];
        assert_eq!(cause, &format!("response: {}…", "x".repeat(199)));
    }

    #[test]
    fn connection_refused_does_not_name_the_url() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port().to_string();
        drop(listener);
        let url = format!("http://127.0.0.1:{port}/api/webhooks/7/hush");
        let err = post_to(NotifyKind::Slack, &url, "LOCKSTEP_WEBHOOK_URL", &MSG)
            .expect_err("nobody listens");
        let rendered = err.render();
        assert_eq!(err.exit_code(), 1);
        assert!(
            rendered.contains(
                "the webhook in $LOCKSTEP_WEBHOOK_URL could not be reached: connection refused"
            ),
            "{rendered}"
        );
        for secret in [url.as_str(), "127.0.0.1", port.as_str(), "hush"] {
            assert!(
                !rendered.contains(secret),
                "{secret:?} leaked into:\n{rendered}"
            );
        }
    }

    #[test]
    fn missing_or_empty_variable_is_a_usage_error() {
        let name = "LOCKSTEP_TEST_NOTIFY_SURELY_UNSET_3F9A";
        let err = post(NotifyKind::Discord, name, &MSG).expect_err("variable is not set");
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message
                .contains(&format!("no webhook URL: ${name} is not set")),
            "{}",
            err.render()
        );
        assert!(err
            .hint
            .as_deref()
            .unwrap_or_default()
            .contains(&format!("export {name}=")));

        let err = url_from_env("HOOK", Ok("  ".into())).expect_err("empty");
        assert_eq!(err.exit_code(), 2);
        assert!(err.message.contains("$HOOK is not set"));
    }

    #[test]
    fn a_url_without_http_scheme_is_a_usage_error_that_hides_it() {
        let err = post_to(NotifyKind::Json, "ftp://secret.example/tok", "HOOK", &MSG)
            .expect_err("not http");
        assert_eq!(err.exit_code(), 2);
        let rendered = err.render();
        assert!(rendered.contains("$HOOK"), "{rendered}");
        assert!(!rendered.contains("secret"), "{rendered}");
        assert!(!rendered.contains("ftp"), "{rendered}");
    }

    #[test]
    fn scrubber_hides_url_host_and_path() {
        let scrub = Scrubber::new("https://User:pw@Hooks.Example.com:8443/services/T1/B2/xyz?x=1");
        let text = "https://User:pw@Hooks.Example.com:8443/services/T1/B2/xyz?x=1 failed; \
                    resolve dns name 'hooks.example.com:8443'; host Hooks.Example.com; \
                    path /services/T1/B2/xyz";
        let out = scrub.apply(text);
        for secret in ["Example", "example", "8443", "T1/B2", "xyz", "pw@"] {
            assert!(!out.contains(secret), "{secret:?} in {out}");
        }
        assert!(out.contains("<webhook URL> failed"), "{out}");
    }
}
