//! What a non-2xx status means ([`StatusClass`]): below both the errors
//! that carry it and the retry rules that decide on it.

/// What a non-2xx status means, the one thing callers decide on (retry,
/// "not there", "expired", which credential to blame).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusClass {
    /// 401: no credential, or one the server refused.
    Unauthorized,
    /// 403 that is not a rate limit: the credential may not do this.
    Forbidden,
    /// 404.
    NotFound,
    /// 409: the request conflicts with what the server holds.
    Conflict,
    /// 410: it was there and is gone (an expired artifact).
    Gone,
    /// 422: understood and refused (GitHub's validation errors).
    Unprocessable,
    /// 429, or a 403 that carries a rate limit's headers.
    RateLimited,
    /// 5xx.
    ServerError,
    /// Any other status.
    Other,
}

impl StatusClass {
    /// The class of a bare status (a 403 is [`StatusClass::Forbidden`]
    /// here: only `StatusError::class` sees the headers of a rate limit).
    pub fn of(status: u16) -> StatusClass {
        match status {
            401 => StatusClass::Unauthorized,
            403 => StatusClass::Forbidden,
            404 => StatusClass::NotFound,
            409 => StatusClass::Conflict,
            410 => StatusClass::Gone,
            422 => StatusClass::Unprocessable,
            429 => StatusClass::RateLimited,
            500..=599 => StatusClass::ServerError,
            _ => StatusClass::Other,
        }
    }

    /// Whether the server may answer otherwise later (a rate limit, a
    /// server error).
    pub fn is_transient(self) -> bool {
        matches!(self, StatusClass::RateLimited | StatusClass::ServerError)
    }
}
