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
//! (`the webhook in $LOCKSTEP_WEBHOOK_URL answered HTTP 404`). The wire is
//! lockstep-http's: the whole URL (host, path, ids) is registered with its
//! scrubber, so whatever the server or the HTTP stack says comes back without
//! it; redirects are not followed (a webhook has no business redirecting, and
//! a redirect target would be one more URL to hide); a 429 is retried after
//! the server's `Retry-After`, nothing else (a 5xx or a dropped connection
//! may have posted the message already).

use std::time::Duration;

use crate::config::NotifyKind;
use lockstep_core::Error;
use lockstep_http::{
    parse_url, ClientConfig, HttpError, Multipart, Redirects, RetryOn, StatusError, TransportKind,
    UrlError, UrlRules,
};

/// How long one post may take in all (connect, send, read the answer).
const TIMEOUT: Duration = Duration::from_secs(30);

/// Discord rejects messages whose `content` is longer than this many characters.
const DISCORD_CONTENT_LIMIT: usize = 2000;

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
    let text = url.trim();
    if text.is_empty() {
        return Err(not_set(var));
    }
    let url = parse_url(text, UrlRules::CREDENTIALED).map_err(|reason| refused(var, &reason))?;

    let (content_type, body) = match kind {
        NotifyKind::Discord => {
            let form = discord_form(msg).encode();
            (form.content_type, form.body)
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

    let client = lockstep_http::Client::new(ClientConfig {
        deadline: TIMEOUT,
        ..ClientConfig::default()
    });
    let result = client
        .post(&url)
        .scrub(|s| {
            s.add_whole_url(&url, text);
        })
        .redirects(Redirects::Refuse)
        .retry(RetryOn::RateLimitOnly)
        .send(&content_type, &body);
    let reach = || format!("check the network, and the URL in ${var}; then post again");
    match result {
        Ok(response) => {
            tracing::debug!(
                status = response.status(),
                url_env = var,
                "the webhook took the report"
            );
            Ok(())
        }
        Err(HttpError::Status(status)) => Err(status_error(var, &status)),
        Err(HttpError::Redirect(lockstep_http::RedirectError::NotFollowed(code))) => Err(
            Error::failed(format!("the webhook in ${var} answered HTTP {code}")).hint(format!(
                "the webhook redirects, which lockstep does not follow: put the final URL in ${var}"
            )),
        ),
        Err(HttpError::Transport(t)) => {
            let reason = match t.kind {
                TransportKind::TimedOut => format!("timed out after {} s", TIMEOUT.as_secs()),
                _ => t.reason().to_string(),
            };
            Err(Error::failed(format!(
                "the webhook in ${var} could not be reached: {reason}"
            ))
            .cause(t.detail)
            .hint(reach()))
        }
        Err(HttpError::Deadline(limit)) => Err(Error::failed(format!(
            "the webhook in ${var} could not be reached: timed out after {} s",
            limit.as_secs()
        ))
        .hint(reach())),
        Err(HttpError::Url(reason)) => Err(refused(var, &reason)),
        Err(other) => Err(other.into_error(&format!("the webhook in ${var}"), "the report")),
    }
}

/// The Discord form: two parts, `payload_json` (the message, its content cut
/// to Discord's 2000 characters with a trailing `…`, and the attachment's
/// metadata) and `files[0]` (`errors.txt`).
pub fn discord_form(msg: &Message) -> Multipart {
    let payload = serde_json::json!({
        "content": truncate_chars(msg.content, DISCORD_CONTENT_LIMIT),
        "attachments": [{
            "id": 0,
            "filename": "errors.txt",
            "description": "error summary",
        }],
    });
    Multipart::new()
        .field(
            "payload_json",
            Some("application/json"),
            payload.to_string().as_bytes(),
        )
        .file(
            "files[0]",
            "errors.txt",
            "text/plain; charset=utf-8",
            msg.errors_txt.as_bytes(),
        )
}

/// The usage error for a webhook URL that is refused, without the URL.
fn refused(var: &str, reason: &UrlError) -> Error {
    let why = match reason {
        UrlError::Scheme(_) | UrlError::Unparsable(_) | UrlError::NoHost => {
            format!("the webhook URL in ${var} does not start with http:// or https://")
        }
        UrlError::Userinfo => {
            format!("the webhook URL in ${var} carries a user name or password before the host")
        }
        UrlError::PlainHttpNotLoopback(_) => format!(
            "the webhook URL in ${var} is plain http:// to another machine (only https:// leaves this machine)"
        ),
    };
    Error::usage(why).hint(format!(
        "set ${var} to the webhook's full URL, e.g. https://discord.com/api/webhooks/..."
    ))
}

/// The URL from the environment variable's value, or a usage error naming the
/// variable.
/// Checks a webhook URL as [`post_to`] would, sending nothing: a loop
/// that will call for help finds a bad URL before its first side effect.
pub fn check_url(url: &str, var: &str) -> Result<(), Error> {
    let text = url.trim();
    if text.is_empty() {
        return Err(not_set(var));
    }
    parse_url(text, UrlRules::CREDENTIALED)
        .map(drop)
        .map_err(|reason| refused(var, &reason))
}

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

/// The error for a webhook that answered with a status other than 2xx
/// (the excerpt is scrubbed of the URL and cut by lockstep-http).
fn status_error(var: &str, status: &StatusError) -> Error {
    let code = status.status;
    let mut err = Error::failed(format!("the webhook in ${var} answered HTTP {code}"));
    if !status.excerpt().is_empty() {
        err = err.cause(format!("response: {}", status.excerpt()));
    }
    use lockstep_http::status::StatusClass;
    let hint = match status.class() {
        StatusClass::Unauthorized | StatusClass::Forbidden | StatusClass::NotFound => format!(
            "the webhook may have been deleted or its token changed: check the URL in ${var}"
        ),
        StatusClass::RateLimited => "the webhook is rate-limited: post again later".to_string(),
        StatusClass::ServerError => "the chat service failed: post again later".to_string(),
        _ => format!("check the URL in ${var}"),
    };
    err.hint(hint)
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
        let body = discord_form(&msg).encode_with("BOUNDARY").unwrap().body;
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
        let body = discord_form(&msg).encode_with("B").unwrap().body;
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
        let encoded = discord_form(&msg).encode();
        let (content_type, body) = (encoded.content_type, encoded.body);
        let boundary = content_type
            .strip_prefix("multipart/form-data; boundary=")
            .expect("multipart")
            .to_string();
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
    fn plain_http_to_another_machine_and_userinfo_are_refused_unsent() {
        for url in [
            "http://hooks.example.com/services/T1/B2/xyz",
            "https://user:pw@hooks.example.com/services/T1/B2/xyz",
        ] {
            let err = post_to(NotifyKind::Json, url, "HOOK", &MSG).expect_err("refused");
            assert_eq!(err.exit_code(), 2, "{}", err.render());
            let rendered = err.render();
            for secret in ["hooks.example", "xyz", "pw"] {
                assert!(!rendered.contains(secret), "{secret:?} in {rendered}");
            }
        }
    }

    #[test]
    fn a_429_is_posted_again_after_retry_after() {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let port = listener.local_addr().expect("addr").port();
        let (tx, rx) = mpsc::channel();
        thread::spawn(move || {
            for (n, stream) in listener.incoming().take(2).enumerate() {
                let mut stream = stream.expect("accept");
                let mut reader = BufReader::new(stream.try_clone().expect("clone"));
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).expect("line");
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some(v) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                        length = v.trim().parse().expect("length");
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).expect("body");
                let reply = if n == 0 {
                    "HTTP/1.1 429 Too Many Requests\r\nRetry-After: 0\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                } else {
                    "HTTP/1.1 204 No Content\r\nConnection: close\r\n\r\n"
                };
                stream.write_all(reply.as_bytes()).expect("reply");
                let _ = tx.send(body);
            }
        });
        let url = format!("http://127.0.0.1:{port}/hook");
        post_to(NotifyKind::Json, &url, "HOOK", &MSG).expect("posted on the second try");
        let first = rx.recv_timeout(Duration::from_secs(10)).expect("first");
        let second = rx.recv_timeout(Duration::from_secs(10)).expect("second");
        assert_eq!(first, second);
    }
}
