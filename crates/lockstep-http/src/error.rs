//! The one mapping from what went wrong on the wire to lockstep's errors.
//!
//! Errors are built from parts, never from ureq's `Display` (which starts
//! with the URL, and a storage URL carries a signature), and every text that
//! came from a server or the HTTP stack is scrubbed of the request's secrets
//! and cut to one short printable line before it is stored here. Callers
//! that know what a status means to the user (401 naming the token's
//! variable, 410 an expired artifact) match on [`StatusError::class`] (a
//! [`StatusClass`], never the number or the body's text); the rest use
//! [`HttpError::into_error`].

use std::time::Duration;

use lockstep_core::Error;

use crate::address::UrlError;
use crate::scrub::{excerpt, Scrubber};

/// Characters of a server's error text quoted in an error.
pub const EXCERPT_CHARS: usize = 200;
/// Bytes of an error answer's body read at most (to find its message).
pub const ERROR_BODY_BYTES: u64 = 64 << 10;

/// What went wrong with a request. Nothing in it contains a secret the
/// request knew about.
#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    /// The URL was refused before anything was sent.
    #[error("the URL is refused: {0}")]
    Url(#[from] UrlError),
    /// The server answered with a status other than 2xx.
    #[error("the server answered HTTP {}", .0.status)]
    Status(StatusError),
    /// No answer: DNS, connect, TLS, timeout or a connection dropped.
    #[error("{}", .0.reason())]
    Transport(TransportError),
    /// A redirect that is not followed.
    #[error("{0}")]
    Redirect(RedirectError),
    /// The body is larger than the caller accepts.
    #[error("the answer is larger than {limit} bytes")]
    TooLarge { limit: u64 },
    /// The request's overall deadline passed.
    #[error("no complete answer within {} s", .0.as_secs())]
    Deadline(Duration),
    /// A local file could not be written.
    #[error("{context}: {source}")]
    Local {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

pub use crate::status::StatusClass;

/// A non-2xx answer, with what lockstep may want to say about it.
#[derive(Debug, Clone)]
pub struct StatusError {
    pub status: u16,
    /// The headers callers read (rate limits, `Retry-After`), lower-cased names.
    headers: Vec<(String, String)>,
    /// The body's text: scrubbed, one line, at most [`EXCERPT_CHARS`].
    excerpt: String,
    /// The JSON body's `message` field (GitHub's, Discord's), scrubbed and cut.
    message: Option<String>,
    /// The `code` of each entry of the JSON body's `errors` list (GitHub's
    /// validation errors: `already_exists`, `missing_field` ...).
    codes: Vec<String>,
    /// Attempts made before giving up.
    pub attempts: u32,
}

/// Headers kept on a [`StatusError`]; everything else is dropped (a
/// `Location` or `Set-Cookie` could carry secrets).
const KEPT_HEADERS: [&str; 5] = [
    "retry-after",
    "x-ratelimit-remaining",
    "x-ratelimit-reset",
    "x-ratelimit-limit",
    "content-type",
];

impl StatusError {
    /// Built from a status, its headers and up to [`ERROR_BODY_BYTES`] of body.
    pub(crate) fn new(
        status: u16,
        header: impl Fn(&str) -> Option<String>,
        body: &[u8],
        scrub: &Scrubber,
    ) -> StatusError {
        let headers = KEPT_HEADERS
            .iter()
            .filter_map(|name| {
                header(name).map(|v| (name.to_string(), excerpt(&scrub.apply(&v), 100)))
            })
            .collect();
        let text = String::from_utf8_lossy(body);
        let json = serde_json::from_slice::<serde_json::Value>(body).ok();
        let message = json
            .as_ref()
            .and_then(|v| {
                v.get("message")
                    .and_then(|m| m.as_str())
                    .map(str::to_string)
            })
            .map(|m| excerpt(&scrub.apply(&m), EXCERPT_CHARS))
            .filter(|m| !m.is_empty());
        let codes = json
            .as_ref()
            .and_then(|v| v.get("errors"))
            .and_then(|e| e.as_array())
            .map(|errors| {
                errors
                    .iter()
                    .filter_map(|e| e.get("code").and_then(|c| c.as_str()))
                    .take(20)
                    .map(|c| excerpt(&scrub.apply(c), 60))
                    .collect()
            })
            .unwrap_or_default();
        StatusError {
            status,
            headers,
            excerpt: excerpt(&scrub.apply(text.trim()), EXCERPT_CHARS),
            message,
            codes,
            attempts: 1,
        }
    }

    /// A kept header's value (`retry-after`, `x-ratelimit-*`, `content-type`).
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The body's text, scrubbed, on one line, at most [`EXCERPT_CHARS`].
    pub fn excerpt(&self) -> &str {
        &self.excerpt
    }

    /// The `message` of a JSON error body, scrubbed and cut.
    pub fn message(&self) -> Option<&str> {
        self.message.as_deref()
    }

    /// What the status means: [`StatusClass::of`] the status, a 403 with a
    /// rate limit's headers [`StatusClass::RateLimited`].
    pub fn class(&self) -> StatusClass {
        if self.is_rate_limit_403() {
            StatusClass::RateLimited
        } else {
            StatusClass::of(self.status)
        }
    }

    /// Whether the JSON body's `errors` list holds an entry with this
    /// `code` (GitHub answers an asset name it has with 422 and
    /// `already_exists`).
    pub fn has_error_code(&self, code: &str) -> bool {
        self.codes.iter().any(|c| c == code)
    }

    /// A 403 that is a rate limit, not a refusal: GitHub answers its
    /// secondary limits (and an exhausted primary one) with 403 and a
    /// `Retry-After` or `x-ratelimit-remaining: 0`.
    pub fn is_rate_limit_403(&self) -> bool {
        self.status == 403
            && (self.header("retry-after").is_some()
                || self.header("x-ratelimit-remaining").map(str::trim) == Some("0"))
    }

    /// The wait a rate limit asks for: `Retry-After`, else until
    /// `x-ratelimit-reset` (epoch seconds) when nothing remains.
    pub fn rate_limit_wait(&self) -> Option<Duration> {
        if let Some(wait) = self.retry_after() {
            return Some(wait);
        }
        if self.header("x-ratelimit-remaining").map(str::trim) != Some("0") {
            return None;
        }
        let reset: u64 = self.header("x-ratelimit-reset")?.trim().parse().ok()?;
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .ok()?
            .as_secs();
        Some(Duration::from_secs(reset.saturating_sub(now)))
    }

    /// The `Retry-After` header as a wait from now.
    pub fn retry_after(&self) -> Option<Duration> {
        self.header("retry-after")
            .and_then(|v| crate::retry::parse_retry_after(v, std::time::SystemTime::now()))
    }
}

/// The kind of a transport failure, for messages and for retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TransportKind {
    /// The host name did not resolve.
    Dns,
    /// Nobody listens there.
    ConnectionRefused,
    /// The connection broke off (reset, closed early).
    ConnectionBroken,
    /// No data for too long.
    TimedOut,
    /// The TLS handshake or certificate check failed.
    Tls,
    /// The server's answer is not HTTP.
    Protocol,
    /// Anything else.
    Other,
}

/// A failure below HTTP, described without the URL.
#[derive(Debug, Clone)]
pub struct TransportError {
    pub kind: TransportKind,
    /// ureq's kind, message and source chain, scrubbed and cut.
    pub detail: String,
}

impl TransportError {
    /// A short reason in the user's terms.
    pub fn reason(&self) -> &'static str {
        match self.kind {
            TransportKind::Dns => "its host name could not be resolved",
            TransportKind::ConnectionRefused => "connection refused",
            TransportKind::ConnectionBroken => "the connection broke off",
            TransportKind::TimedOut => "timed out",
            TransportKind::Tls => "the TLS handshake failed",
            TransportKind::Protocol => "the answer is not valid HTTP",
            TransportKind::Other => "the request failed",
        }
    }

    /// Whether trying again could help (not for DNS, TLS or protocol errors,
    /// which a repeat meets again).
    pub fn is_transient(&self) -> bool {
        matches!(
            self.kind,
            TransportKind::ConnectionRefused
                | TransportKind::ConnectionBroken
                | TransportKind::TimedOut
        )
    }

    pub(crate) fn from_ureq(t: &ureq::Transport, scrub: &Scrubber) -> TransportError {
        use std::error::Error as _;
        let io = t.source().and_then(|s| s.downcast_ref::<std::io::Error>());
        let tls_words = |text: &str| {
            let lower = text.to_ascii_lowercase();
            lower.contains("tls") || lower.contains("certificate") || lower.contains("handshake")
        };
        let mut detail = t.kind().to_string();
        if let Some(message) = t.message() {
            detail.push_str(": ");
            detail.push_str(message);
        }
        let mut source = t.source();
        while let Some(err) = source {
            detail.push_str(": ");
            detail.push_str(&err.to_string());
            source = err.source();
        }
        let kind = match (t.kind(), io) {
            (ureq::ErrorKind::Dns, _) => TransportKind::Dns,
            (_, Some(io)) => match io_kind(io) {
                TransportKind::Other if tls_words(&detail) => TransportKind::Tls,
                kind => kind,
            },
            (ureq::ErrorKind::BadStatus | ureq::ErrorKind::BadHeader, _) => TransportKind::Protocol,
            _ if tls_words(&detail) => TransportKind::Tls,
            (ureq::ErrorKind::ConnectionFailed, _) => TransportKind::ConnectionRefused,
            _ => TransportKind::Other,
        };
        TransportError {
            kind,
            detail: excerpt(&scrub.apply(&detail), EXCERPT_CHARS),
        }
    }

    pub(crate) fn from_io(e: &std::io::Error, scrub: &Scrubber) -> TransportError {
        TransportError {
            kind: io_kind(e),
            detail: excerpt(&scrub.apply(&e.to_string()), EXCERPT_CHARS),
        }
    }
}

fn io_kind(e: &std::io::Error) -> TransportKind {
    use std::io::ErrorKind::*;
    match e.kind() {
        ConnectionRefused => TransportKind::ConnectionRefused,
        ConnectionReset | ConnectionAborted | BrokenPipe | UnexpectedEof | NotConnected => {
            TransportKind::ConnectionBroken
        }
        TimedOut | WouldBlock => TransportKind::TimedOut,
        InvalidData if e.to_string().to_ascii_lowercase().contains("certificate") => {
            TransportKind::Tls
        }
        _ => TransportKind::Other,
    }
}

/// A redirect that is not followed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RedirectError {
    #[error("it redirects (HTTP {0}), and this request follows no redirects")]
    NotFollowed(u16),
    #[error("it redirects (HTTP {0}) to another origin, which this request does not follow")]
    CrossOrigin(u16),
    #[error("it redirects (HTTP {status}) to a URL that is refused: {reason}")]
    Refused { status: u16, reason: UrlError },
    #[error("it redirects (HTTP {0}) without a usable Location")]
    NoLocation(u16),
    #[error("more than {0} redirects")]
    TooMany(u32),
}

impl HttpError {
    /// Whether the error is the caller's input (a refused URL): exit 2.
    pub fn is_usage(&self) -> bool {
        matches!(self, HttpError::Url(_))
    }

    /// The status of a status error.
    pub fn status(&self) -> Option<u16> {
        match self {
            HttpError::Status(s) => Some(s.status),
            _ => None,
        }
    }

    /// The generic error for `what` (e.g. `the artifacts of run 42`) on
    /// `service` (e.g. `GitHub`, `the download server`).
    pub fn into_error(self, service: &str, what: &str) -> Error {
        match self {
            HttpError::Url(reason) => Error::usage(format!("the URL for {what} is refused"))
                .cause(reason.to_string())
                .hint("use an https:// URL (http:// only to 127.0.0.1 or localhost) without user:password@"),
            HttpError::Status(status) => {
                let mut error = Error::failed(format!("{service} answered HTTP {} for {what}", status.status));
                if let Some(said) = status.message().or(Some(status.excerpt())).filter(|s| !s.is_empty()) {
                    error = error.cause(format!("{service} said: {said}"));
                }
                match status.class().is_transient() {
                    true => error.hint(match status.attempts {
                        1 => "try again later".to_string(),
                        n => format!("tried {n} times; try again later"),
                    }),
                    false => error,
                }
            }
            HttpError::Transport(t) => Error::failed(format!("cannot reach {service} for {what}: {}", t.reason()))
                .cause(t.detail)
                .hint("check the network and the URL, then try again"),
            HttpError::Redirect(r) => Error::failed(format!("{service} cannot be followed for {what}")).cause(r.to_string()),
            HttpError::TooLarge { limit } => Error::failed(format!(
                "{service}'s answer for {what} is larger than lockstep accepts ({limit} bytes)"
            )),
            HttpError::Deadline(limit) => Error::failed(format!(
                "{service} gave no complete answer for {what} within {} s",
                limit.as_secs()
            ))
            .hint("check the network, then try again"),
            HttpError::Local { context, source } => {
                Error::failed(format!("cannot save {what}")).cause(format!("{context}: {source}"))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(status: u16, headers: &[(&str, &str)], body: &str) -> StatusError {
        let headers: Vec<(String, String)> = headers
            .iter()
            .map(|(n, v)| (n.to_string(), v.to_string()))
            .collect();
        StatusError::new(
            status,
            |name| {
                headers
                    .iter()
                    .find(|(n, _)| n == name)
                    .map(|(_, v)| v.clone())
            },
            body.as_bytes(),
            &Scrubber::default(),
        )
    }

    #[test]
    fn each_status_has_its_class_and_a_rate_limited_403_is_one() {
        for (status, class) in [
            (401, StatusClass::Unauthorized),
            (403, StatusClass::Forbidden),
            (404, StatusClass::NotFound),
            (409, StatusClass::Conflict),
            (410, StatusClass::Gone),
            (422, StatusClass::Unprocessable),
            (429, StatusClass::RateLimited),
            (500, StatusClass::ServerError),
            (503, StatusClass::ServerError),
            (599, StatusClass::ServerError),
            (400, StatusClass::Other),
            (418, StatusClass::Other),
        ] {
            assert_eq!(answer(status, &[], "").class(), class, "{status}");
        }
        assert_eq!(
            answer(403, &[("x-ratelimit-remaining", "0")], "").class(),
            StatusClass::RateLimited
        );
        assert_eq!(
            answer(403, &[("retry-after", "30")], "").class(),
            StatusClass::RateLimited
        );
        assert_eq!(
            answer(403, &[("x-ratelimit-remaining", "12")], "").class(),
            StatusClass::Forbidden
        );
        assert!(StatusClass::ServerError.is_transient());
        assert!(!StatusClass::NotFound.is_transient());
    }

    #[test]
    fn validation_error_codes_are_read_from_the_json_body_not_its_text() {
        let taken = answer(
            422,
            &[],
            r#"{"message":"Validation Failed","errors":[{"resource":"ReleaseAsset","code":"already_exists","field":"name"}]}"#,
        );
        assert!(taken.has_error_code("already_exists"));
        assert!(!taken.has_error_code("missing_field"));
        // The words in a message are not a code.
        let said = answer(
            422,
            &[],
            r#"{"message":"name already_exists? no: missing"}"#,
        );
        assert!(!said.has_error_code("already_exists"));
        assert!(!answer(422, &[], "already_exists").has_error_code("already_exists"));
    }
}
