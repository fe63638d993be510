//! The client: one ureq agent with timeouts and a user agent, requests that
//! retry, follow redirects under a policy, and scrub what they report.
//!
//! ureq's own redirect handling is off: it would carry the `Authorization`
//! header to wherever a `Location` points. Here every hop is checked by the
//! same [`UrlRules`] as the first URL (never a non-http(s) scheme, plain http
//! only to loopback where the rules say so, never userinfo), credentials go
//! only to the origin they were given for, and hops are counted.

use std::io::Read;
use std::time::{Duration, Instant};

use url::Url;

use crate::address::{check_url, redacted, same_origin, UrlRules};
use crate::error::{HttpError, RedirectError, StatusError, TransportError, ERROR_BODY_BYTES};
use crate::retry::{status_is_retryable, RetryOn, RetryPolicy};
use crate::scrub::Scrubber;

/// How a client behaves unless a request says otherwise.
#[derive(Debug, Clone)]
pub struct ClientConfig {
    pub user_agent: String,
    /// Longest wait for a TCP (and TLS) connection.
    pub connect_timeout: Duration,
    /// Longest wait for any one read or write: a stalled server.
    pub read_timeout: Duration,
    /// Longest a request may take in all, retries and redirects included,
    /// unless the request sets its own ([`Request::deadline`]).
    pub deadline: Duration,
    pub retry: RetryPolicy,
    /// Redirects followed at most per attempt.
    pub max_redirects: u32,
}

impl Default for ClientConfig {
    fn default() -> Self {
        ClientConfig {
            user_agent: concat!("lockstep/", env!("CARGO_PKG_VERSION")).to_string(),
            connect_timeout: Duration::from_secs(30),
            read_timeout: Duration::from_secs(120),
            deadline: Duration::from_secs(60),
            retry: RetryPolicy::default(),
            max_redirects: 5,
        }
    }
}

/// Which redirects a request follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Redirects {
    /// None: a 3xx is an error (a webhook has no business redirecting).
    Refuse,
    /// Within the origin of the first URL only, with its credentials (a
    /// renamed GitHub repository answers 301 on the API host).
    SameOrigin,
    /// To any origin; credentials go along only while the hops stay on the
    /// first URL's origin, and never again once a hop has left it.
    AnyOrigin,
    /// To any origin; credentials go with the first request only (GitHub's
    /// artifact download redirects to a signed storage URL that carries its
    /// own authorization, whatever host the storage is on).
    AnyOriginCredentialsFirstOnly,
}

/// A client; cheap to clone (the agent's connection pool is shared).
#[derive(Debug, Clone)]
pub struct Client {
    agent: ureq::Agent,
    config: ClientConfig,
}

impl Default for Client {
    fn default() -> Self {
        Client::new(ClientConfig::default())
    }
}

impl Client {
    pub fn new(config: ClientConfig) -> Client {
        let agent = ureq::AgentBuilder::new()
            .timeout_connect(config.connect_timeout)
            .timeout_read(config.read_timeout)
            .timeout_write(config.read_timeout)
            .redirects(0)
            .user_agent(&config.user_agent)
            .resolver(|netloc: &str| crate::address::resolve(netloc))
            .build();
        Client { agent, config }
    }

    pub fn config(&self) -> &ClientConfig {
        &self.config
    }

    /// A request; GET and HEAD retry transient failures by default, other
    /// methods never unless [`Request::retry`] opts in.
    pub fn request(&self, method: &str, url: &Url) -> Request<'_> {
        let idempotent = matches!(method, "GET" | "HEAD" | "OPTIONS" | "PUT" | "DELETE");
        Request {
            client: self,
            method: method.to_string(),
            url: url.clone(),
            rules: UrlRules::CREDENTIALED,
            headers: Vec::new(),
            credential: None,
            scrub: Scrubber::new(),
            deadline: self.config.deadline,
            redirects: Redirects::SameOrigin,
            retry: if idempotent {
                RetryOn::Transient
            } else {
                RetryOn::Never
            },
        }
    }

    pub fn get(&self, url: &Url) -> Request<'_> {
        self.request("GET", url)
    }

    pub fn post(&self, url: &Url) -> Request<'_> {
        self.request("POST", url)
    }
}

/// One request being built, then sent (with its retries and redirects).
pub struct Request<'a> {
    client: &'a Client,
    method: String,
    url: Url,
    rules: UrlRules,
    headers: Vec<(String, String)>,
    /// A header that is a credential: sent only where [`Redirects`] allows.
    credential: Option<(String, String)>,
    scrub: Scrubber,
    deadline: Duration,
    redirects: Redirects,
    retry: RetryOn,
}

/// A 2xx answer whose body has not been read yet.
pub struct Response {
    status: u16,
    headers: Vec<(String, String)>,
    url: Url,
    inner: ureq::Response,
    scrub: Scrubber,
}

/// A 2xx answer read whole.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub status: u16,
    headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Fetched {
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }
}

impl<'a> Request<'a> {
    /// A plain header (not a credential: it follows every redirect).
    pub fn header(mut self, name: &str, value: &str) -> Self {
        self.headers.push((name.to_string(), value.to_string()));
        self
    }

    /// A query parameter, percent-encoded.
    pub fn query(mut self, name: &str, value: &str) -> Self {
        self.url.query_pairs_mut().append_pair(name, value);
        self
    }

    /// `Authorization: Bearer TOKEN`, sent only where [`Redirects`] allows,
    /// and scrubbed from everything this request reports.
    pub fn bearer(mut self, token: &str) -> Self {
        self.scrub.add_token(token);
        self.credential = Some(("Authorization".to_string(), format!("Bearer {token}")));
        self
    }

    /// More secrets to scrub from what this request reports.
    pub fn scrub(mut self, add: impl FnOnce(&mut Scrubber)) -> Self {
        add(&mut self.scrub);
        self
    }

    /// The rules for this request's URL and every redirect target
    /// (default: [`UrlRules::CREDENTIALED`]).
    pub fn rules(mut self, rules: UrlRules) -> Self {
        self.rules = rules;
        self
    }

    /// The longest the whole exchange may take, retries included.
    pub fn deadline(mut self, deadline: Duration) -> Self {
        self.deadline = deadline;
        self
    }

    /// Which redirects are followed (default: [`Redirects::SameOrigin`]).
    pub fn redirects(mut self, redirects: Redirects) -> Self {
        self.redirects = redirects;
        self
    }

    /// What is retried (default: transient failures for GET and HEAD,
    /// nothing for other methods).
    pub fn retry(mut self, retry: RetryOn) -> Self {
        self.retry = retry;
        self
    }

    /// Sends without a body; the answer's body is left to read.
    pub fn call(mut self) -> Result<Response, HttpError> {
        self.run(None, &|| Vec::new(), &mut Ok)
    }

    /// Sends `body` as `content_type`.
    pub fn send(mut self, content_type: &str, body: &[u8]) -> Result<Response, HttpError> {
        self.headers
            .push(("Content-Type".to_string(), content_type.to_string()));
        self.run(Some(body), &|| Vec::new(), &mut Ok)
    }

    /// Sends without a body and reads the whole answer (at most `max_bytes`);
    /// a connection that breaks off while the body is read is retried too.
    pub fn fetch(mut self, max_bytes: u64) -> Result<Fetched, HttpError> {
        self.run(None, &|| Vec::new(), &mut |response: Response| {
            let status = response.status;
            let headers = response.headers.clone();
            let body = response.bytes(max_bytes)?;
            Ok(Fetched {
                status,
                headers,
                body,
            })
        })
    }

    /// The retry loop: attempts (each following redirects) until an answer
    /// that `finish` accepts, a failure that is not retried, the attempts run
    /// out or the deadline passes. `extra` gives headers per attempt (a
    /// download's `Range`).
    pub(crate) fn run<T>(
        &mut self,
        body: Option<&[u8]>,
        extra: &dyn Fn() -> Vec<(String, String)>,
        finish: &mut dyn FnMut(Response) -> Result<T, HttpError>,
    ) -> Result<T, HttpError> {
        check_url(&self.url, self.rules)?;
        let policy = self.client.config.retry;
        let deadline = Instant::now() + self.deadline;
        let mut attempt = 0;
        loop {
            attempt += 1;
            let (error, retry_after) = match self.attempt(body, &extra(), deadline) {
                Ok(response) if (200..300).contains(&response.status) => match finish(response) {
                    Ok(done) => return Ok(done),
                    Err(HttpError::Transport(t))
                        if self.retry == RetryOn::Transient && t.is_transient() =>
                    {
                        (HttpError::Transport(t), None)
                    }
                    Err(other) => return Err(other),
                },
                Ok(response) => {
                    let status = response.status;
                    let mut body = Vec::new();
                    let _ = response
                        .inner
                        .into_reader()
                        .take(ERROR_BODY_BYTES)
                        .read_to_end(&mut body);
                    let headers = response.headers;
                    let error = StatusError::new(
                        status,
                        |name| find_header(&headers, name).map(str::to_string),
                        &body,
                        &self.scrub,
                    );
                    // A 403 rate limit is retried as a 429 is (never with
                    // RetryOn::Never): its class is a rate limit.
                    if !status_is_retryable(error.class(), self.retry) {
                        let mut error = error;
                        error.attempts = attempt;
                        return Err(HttpError::Status(error));
                    }
                    let retry_after = error.rate_limit_wait();
                    (HttpError::Status(error), retry_after)
                }
                Err(HttpError::Transport(t))
                    if self.retry == RetryOn::Transient && t.is_transient() =>
                {
                    (HttpError::Transport(t), None)
                }
                Err(other) => return Err(other),
            };
            let error = match error {
                HttpError::Status(mut s) => {
                    s.attempts = attempt;
                    HttpError::Status(s)
                }
                other => other,
            };
            if attempt >= policy.max_attempts {
                return Err(error);
            }
            // A server asking for longer than the cap gets its answer reported
            // at once (with its Retry-After), not a command that hangs.
            if retry_after.is_some_and(|w| w > policy.max_wait) {
                return Err(error);
            }
            let wait = retry_after.unwrap_or_else(|| policy.backoff(attempt));
            if Instant::now() + wait >= deadline {
                return Err(error);
            }
            tracing::debug!(
                url = %self.scrub.apply(&redacted(&self.url)),
                attempt,
                wait_ms = wait.as_millis() as u64,
                failure = %error,
                "retrying"
            );
            std::thread::sleep(wait);
        }
    }

    /// One attempt: the request and the redirects it is allowed to follow.
    fn attempt(
        &mut self,
        body: Option<&[u8]>,
        extra: &[(String, String)],
        deadline: Instant,
    ) -> Result<Response, HttpError> {
        let mut url = self.url.clone();
        let mut method = self.method.clone();
        let mut body = body;
        let mut credentials = true;
        let mut hops = 0;
        loop {
            let remaining = deadline.saturating_duration_since(Instant::now());
            if remaining.is_zero() {
                return Err(HttpError::Deadline(self.deadline));
            }
            let mut request = self
                .client
                .agent
                .request_url(&method, &url)
                .timeout(remaining);
            for (name, value) in self.headers.iter().chain(extra) {
                request = request.set(name, value);
            }
            if credentials {
                if let Some((name, value)) = &self.credential {
                    request = request.set(name, value);
                }
            }
            tracing::debug!(method = %method, url = %self.scrub.apply(&redacted(&url)), "request");
            let result = match body {
                Some(bytes) => request.send_bytes(bytes),
                None => request.call(),
            };
            let response = match result {
                Ok(response) | Err(ureq::Error::Status(_, response)) => response,
                Err(ureq::Error::Transport(t)) => {
                    let error = TransportError::from_ureq(&t, &self.scrub);
                    // ureq reports an overall timeout as an I/O timeout.
                    if Instant::now() >= deadline {
                        return Err(HttpError::Deadline(self.deadline));
                    }
                    return Err(HttpError::Transport(error));
                }
            };
            let status = response.status();
            if !matches!(status, 301 | 302 | 303 | 307 | 308) {
                return Ok(Response::new(response, url, self.scrub.clone()));
            }
            if self.redirects == Redirects::Refuse {
                return Err(HttpError::Redirect(RedirectError::NotFollowed(status)));
            }
            let target = response
                .header("location")
                .and_then(|location| url.join(location.trim()).ok())
                .ok_or(HttpError::Redirect(RedirectError::NoLocation(status)))?;
            // A signed target's query is a secret from here on.
            self.scrub.add_url_secrets(&target);
            check_url(&target, self.rules)
                .map_err(|reason| HttpError::Redirect(RedirectError::Refused { status, reason }))?;
            let cross = !same_origin(&self.url, &target);
            match self.redirects {
                Redirects::SameOrigin if cross => {
                    return Err(HttpError::Redirect(RedirectError::CrossOrigin(status)))
                }
                Redirects::AnyOriginCredentialsFirstOnly => credentials = false,
                _ if cross => credentials = false,
                _ => {}
            }
            hops += 1;
            if hops > self.client.config.max_redirects {
                return Err(HttpError::Redirect(RedirectError::TooMany(
                    self.client.config.max_redirects,
                )));
            }
            // What browsers do: 303, and 301/302 after a POST, become a GET
            // without a body; 307 and 308 repeat the request as it was.
            if status == 303 || (matches!(status, 301 | 302) && method != "GET" && method != "HEAD")
            {
                method = "GET".to_string();
                body = None;
            }
            url = target;
        }
    }
}

impl Response {
    fn new(inner: ureq::Response, url: Url, scrub: Scrubber) -> Response {
        let headers = inner
            .headers_names()
            .into_iter()
            .filter_map(|name| {
                inner
                    .header(&name)
                    .map(|value| (name.to_ascii_lowercase(), value.to_string()))
            })
            .collect();
        Response {
            status: inner.status(),
            headers,
            url,
            inner,
            scrub,
        }
    }

    pub fn status(&self) -> u16 {
        self.status
    }

    /// A header's value (names compare case-insensitively).
    pub fn header(&self, name: &str) -> Option<&str> {
        find_header(&self.headers, name)
    }

    /// The URL that answered (after redirects). It may carry a signature:
    /// not for messages.
    pub fn url(&self) -> &Url {
        &self.url
    }

    /// The scrubber of the request that got this answer.
    pub fn scrubber(&self) -> &Scrubber {
        &self.scrub
    }

    /// The whole body, at most `max_bytes`.
    pub fn bytes(self, max_bytes: u64) -> Result<Vec<u8>, HttpError> {
        if let Some(length) = self
            .header("content-length")
            .and_then(|v| v.trim().parse::<u64>().ok())
        {
            if length > max_bytes {
                return Err(HttpError::TooLarge { limit: max_bytes });
            }
        }
        let scrub = self.scrub.clone();
        let mut body = Vec::new();
        self.inner
            .into_reader()
            .take(max_bytes.saturating_add(1))
            .read_to_end(&mut body)
            .map_err(|e| HttpError::Transport(TransportError::from_io(&e, &scrub)))?;
        if body.len() as u64 > max_bytes {
            return Err(HttpError::TooLarge { limit: max_bytes });
        }
        Ok(body)
    }

    /// The body as a reader (bounded by the request's deadline, not in size:
    /// the caller counts).
    pub fn into_reader(self) -> impl Read + Send {
        self.inner.into_reader()
    }
}

fn find_header<'h>(headers: &'h [(String, String)], name: &str) -> Option<&'h str> {
    headers
        .iter()
        .find(|(n, _)| n.eq_ignore_ascii_case(name))
        .map(|(_, v)| v.as_str())
}
