//! When a failed request is tried again, and how long to wait first.
//!
//! Servers under load (GitHub's API, chat webhooks, artifact storage) answer
//! 429 or 5xx or drop connections now and then; one such answer must not
//! fail a command that took an hour to reach it. Waits grow exponentially
//! with full jitter (so many clients do not retry in step), a server's
//! `Retry-After` wins when it gives one, and both the single wait and the
//! number of attempts are capped: a server asking for an hour gets an error
//! that says so, not a hung command.

use std::time::{Duration, SystemTime};

use crate::status::StatusClass;

/// What may be retried for one request.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RetryOn {
    /// 429, 5xx and connection failures: for idempotent requests (GET,
    /// HEAD), where a repeat cannot do anything twice.
    Transient,
    /// Only 429: the server said it did nothing and when to come back. A
    /// webhook POST may opt into this; a 5xx or a dropped connection may
    /// have posted the message already.
    RateLimitOnly,
    /// Never.
    Never,
}

/// Bounds on retrying.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RetryPolicy {
    /// Attempts in all, the first included.
    pub max_attempts: u32,
    /// The first backoff's upper bound; doubled per attempt.
    pub base: Duration,
    /// The longest single wait. A `Retry-After` longer than this is not
    /// waited for: the error is returned at once (it carries the header).
    pub max_wait: Duration,
}

impl Default for RetryPolicy {
    fn default() -> Self {
        RetryPolicy {
            max_attempts: 4,
            base: Duration::from_millis(500),
            max_wait: Duration::from_secs(30),
        }
    }
}

impl RetryPolicy {
    /// The wait before attempt `attempt + 1` after `attempt` failed (1-based),
    /// without a `Retry-After`: uniformly random in `[0, base·2^(attempt-1)]`,
    /// capped at `max_wait` ("full jitter").
    pub fn backoff(&self, attempt: u32) -> Duration {
        let ceiling = self
            .base
            .saturating_mul(1u32 << attempt.saturating_sub(1).min(16))
            .min(self.max_wait);
        let millis = ceiling.as_millis().min(u64::MAX as u128) as u64;
        Duration::from_millis(rand::random::<u64>() % (millis + 1))
    }
}

/// Whether an answer of this class may be retried under `on`.
pub fn status_is_retryable(class: StatusClass, on: RetryOn) -> bool {
    match on {
        RetryOn::Transient => class.is_transient(),
        RetryOn::RateLimitOnly => class == StatusClass::RateLimited,
        RetryOn::Never => false,
    }
}

/// A `Retry-After` value (RFC 9110 §10.2.3): delta-seconds or an HTTP-date,
/// as the wait from `now` (zero for a date in the past). `None` when it is
/// neither.
pub fn parse_retry_after(value: &str, now: SystemTime) -> Option<Duration> {
    let value = value.trim();
    if !value.is_empty() && value.bytes().all(|b| b.is_ascii_digit()) {
        // Absurdly long numbers saturate: they are over any cap anyway.
        return Some(Duration::from_secs(
            value.parse::<u64>().unwrap_or(u64::MAX),
        ));
    }
    let when = parse_http_date(value)?;
    Some(when.duration_since(now).unwrap_or(Duration::ZERO))
}

/// An HTTP-date in any of the three forms RFC 9110 §5.6.7 says a recipient
/// must accept: IMF-fixdate (`Sun, 06 Nov 1994 08:49:37 GMT`), the obsolete
/// RFC 850 form (`Sunday, 06-Nov-94 08:49:37 GMT`) and asctime
/// (`Sun Nov  6 08:49:37 1994`).
pub fn parse_http_date(value: &str) -> Option<SystemTime> {
    let words: Vec<&str> = value.split_whitespace().collect();
    let (day, month, year, time) = match words.as_slice() {
        // IMF-fixdate.
        [_, day, month, year, time, "GMT"] => (*day, *month, year.parse::<i32>().ok()?, *time),
        // RFC 850: two-digit year, read as the nearest century (RFC 9110 says
        // a year more than 50 years ahead is in the past century).
        [_, date, time, "GMT"] => {
            let mut parts = date.split('-');
            let (day, month, yy) = (parts.next()?, parts.next()?, parts.next()?);
            if parts.next().is_some() || yy.len() != 2 {
                return None;
            }
            let yy: i32 = yy.parse().ok()?;
            let year = if yy >= 70 { 1900 + yy } else { 2000 + yy };
            (day, month, year, *time)
        }
        // asctime.
        [_, month, day, time, year] => (*day, *month, year.parse::<i32>().ok()?, *time),
        _ => return None,
    };
    if day.is_empty() || day.len() > 2 || !day.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    let day: i8 = day.parse().ok()?;
    let month = MONTHS.iter().position(|m| *m == month)? as i8 + 1;
    let mut hms = time.split(':');
    let (h, m, s) = (hms.next()?, hms.next()?, hms.next()?);
    if hms.next().is_some() || [h, m, s].iter().any(|p| p.len() != 2) {
        return None;
    }
    let civil = jiff::civil::DateTime::new(
        i16::try_from(year).ok()?,
        month,
        day,
        h.parse().ok()?,
        m.parse().ok()?,
        s.parse().ok()?,
        0,
    )
    .ok()?;
    let timestamp = civil.to_zoned(jiff::tz::TimeZone::UTC).ok()?.timestamp();
    let secs = timestamp.as_second();
    if secs >= 0 {
        SystemTime::UNIX_EPOCH.checked_add(Duration::from_secs(secs as u64))
    } else {
        SystemTime::UNIX_EPOCH.checked_sub(Duration::from_secs(secs.unsigned_abs()))
    }
}

const MONTHS: [&str; 12] = [
    "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
];

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn at(secs: u64) -> SystemTime {
        SystemTime::UNIX_EPOCH + Duration::from_secs(secs)
    }

    #[test]
    fn retry_after_takes_seconds_and_all_three_date_forms() {
        let now = at(784_111_777); // Sun, 06 Nov 1994 08:49:37 GMT
        assert_eq!(
            parse_retry_after("120", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(parse_retry_after(" 0 ", now), Some(Duration::ZERO));
        assert_eq!(
            parse_retry_after("Sun, 06 Nov 1994 08:51:37 GMT", now),
            Some(Duration::from_secs(120))
        );
        assert_eq!(
            parse_retry_after("Sunday, 06-Nov-94 08:50:37 GMT", now),
            Some(Duration::from_secs(60))
        );
        assert_eq!(
            parse_retry_after("Sun Nov  6 08:49:47 1994", now),
            Some(Duration::from_secs(10))
        );
        // A date in the past means now.
        assert_eq!(
            parse_retry_after("Sat, 05 Nov 1994 08:49:37 GMT", now),
            Some(Duration::ZERO)
        );
        for bad in [
            "",
            "-1",
            "1.5",
            "soon",
            "Sun, 06 Nov 1994 25:00:00 GMT",
            "Sun, 32 Nov 1994 08:00:00 GMT",
        ] {
            assert_eq!(parse_retry_after(bad, now), None, "{bad}");
        }
        assert!(
            parse_retry_after("99999999999999999999999", now).unwrap()
                > Duration::from_secs(1 << 40)
        );
    }

    #[test]
    fn backoff_grows_and_stays_under_the_cap() {
        let policy = RetryPolicy {
            max_attempts: 10,
            base: Duration::from_millis(100),
            max_wait: Duration::from_secs(1),
        };
        for attempt in 1..40 {
            let wait = policy.backoff(attempt);
            assert!(wait <= Duration::from_secs(1), "{attempt}: {wait:?}");
            let ceiling = Duration::from_millis(100).saturating_mul(1 << (attempt - 1).min(16));
            assert!(wait <= ceiling, "{attempt}: {wait:?}");
        }
    }

    #[test]
    fn only_transient_statuses_retry() {
        let retries = |status: u16, on: RetryOn| status_is_retryable(StatusClass::of(status), on);
        assert!(retries(503, RetryOn::Transient));
        assert!(retries(429, RetryOn::Transient));
        assert!(!retries(404, RetryOn::Transient));
        assert!(!retries(403, RetryOn::Transient));
        assert!(retries(429, RetryOn::RateLimitOnly));
        assert!(!retries(503, RetryOn::RateLimitOnly));
        assert!(!retries(429, RetryOn::Never));
        // A 403 rate limit (its class seen with the headers) is one.
        assert!(status_is_retryable(
            StatusClass::RateLimited,
            RetryOn::RateLimitOnly
        ));
    }

    proptest! {
        #[test]
        fn parsing_never_panics(value in "\\PC{0,40}", now in 0u64..4_000_000_000) {
            let _ = parse_retry_after(&value, at(now));
        }

        #[test]
        fn imf_dates_round_trip(secs in 0i64..4_000_000_000) {
            let t = jiff::Timestamp::from_second(secs).unwrap();
            let text = t.strftime("%a, %d %b %Y %H:%M:%S GMT").to_string();
            prop_assert_eq!(parse_http_date(&text), Some(at(secs as u64)));
        }
    }
}
