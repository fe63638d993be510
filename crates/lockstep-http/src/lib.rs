//! lockstep's one HTTP client. Every request lockstep makes (the GitHub REST
//! API, artifact and cache downloads, chat webhooks) goes through here, so
//! the things that must be right once are right everywhere:
//!
//! - timeouts: connect, per read, and an overall deadline per request
//!   ([`Client`], [`Request::deadline`]);
//! - retries with exponential backoff and jitter on 429, 5xx and dropped
//!   connections, honouring `Retry-After`, capped in wait and attempts, and
//!   only for idempotent requests unless the caller opts in ([`retry`]);
//! - redirects followed here, not by ureq: credentials only to the origin
//!   they were given for, never to a non-http(s) scheme, a bounded number of
//!   hops ([`Redirects`]);
//! - URLs read by the real `url` parser: plain http only to loopback where a
//!   credential travels, never userinfo ([`address`]);
//! - one error mapping, built from parts, with short sanitised excerpts of
//!   what servers said ([`HttpError`]);
//! - secret scrubbing of everything that leaves the module ([`Scrubber`]);
//! - one multipart encoder ([`Multipart`]);
//! - downloads streamed to a temporary file, hashed, resumed with `Range`,
//!   renamed only when whole ([`Request::download`]).
//!
//! It must not know what the requests are for (GitHub's 401 wording belongs
//! to lockstep-github), print anything, or serve HTTP.

pub mod address;
pub mod client;
pub mod download;
pub mod error;
pub mod multipart;
pub mod retry;
pub mod status;
/// Secret scrubbing lives in lockstep-core (every child's log and every
/// answer go through the one [`Scrubber`]); re-exported where HTTP users look.
pub mod scrub {
    pub use lockstep_core::scrub::*;
}

pub use address::{parse_url, redacted, same_origin, shown, PlainHttp, UrlError, UrlRules};
pub use client::{Client, ClientConfig, Fetched, Redirects, Request, Response};
pub use download::Downloaded;
pub use error::{
    HttpError, RedirectError, StatusClass, StatusError, TransportError, TransportKind,
};
pub use multipart::{Encoded, Multipart};
pub use retry::{RetryOn, RetryPolicy};
pub use scrub::{excerpt, Scrubber};
pub use url::Url;
