//! Which URLs lockstep will talk to, decided by the real `url` parser (the
//! one ureq connects with), never by string prefixes.
//!
//! String checks were how `GITHUB_API_URL=http://127.0.0.1:1@localhost:PORT/`
//! passed as "loopback" while the request went to the host after the `@`,
//! with the token in clear. Here the host that is checked is the parsed host,
//! which is the host ureq connects to; `localhost` is additionally pinned to
//! loopback addresses by the client's resolver.

use std::net::{IpAddr, SocketAddr, ToSocketAddrs};

use url::{Host, Url};

/// What a URL may look like for one use.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UrlRules {
    /// Whether `user:password@` may appear (it never does for API URLs: the
    /// credentials there come from tokens, and ureq would turn userinfo into
    /// a Basic header sent to whatever host follows the `@`).
    pub userinfo: bool,
    /// Where plain `http://` is accepted.
    pub plain_http: PlainHttp,
}

/// Where plain `http://` is accepted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PlainHttp {
    /// Only to this machine (127.0.0.0/8, `::1`, `localhost`): anything that
    /// carries a credential must not cross a network in clear.
    LoopbackOnly,
    /// Anywhere: for content checked by its sha256 after download, where
    /// nothing secret travels and a tampered body is refused anyway.
    Anywhere,
}

impl UrlRules {
    /// An API or webhook URL: https, or http to loopback; no userinfo.
    pub const CREDENTIALED: UrlRules = UrlRules {
        userinfo: false,
        plain_http: PlainHttp::LoopbackOnly,
    };
    /// A download checked by its digest: http(s) anywhere; no userinfo.
    pub const CHECKED_CONTENT: UrlRules = UrlRules {
        userinfo: false,
        plain_http: PlainHttp::Anywhere,
    };
}

/// Why a URL was refused. The texts never contain the URL: callers name
/// where it came from (`$GITHUB_API_URL`, the suite file).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum UrlError {
    #[error("it is not a URL ({0})")]
    Unparsable(String),
    #[error("its scheme is `{0}`, not http or https")]
    Scheme(String),
    #[error("it has no host")]
    NoHost,
    #[error("it carries a user name or password before the host (`user:password@`)")]
    Userinfo,
    #[error(
        "plain http:// is only used to this machine (127.0.0.1, ::1, localhost); the host is `{0}`"
    )]
    PlainHttpNotLoopback(String),
}

/// Parses `text` and checks it against `rules`.
pub fn parse_url(text: &str, rules: UrlRules) -> Result<Url, UrlError> {
    let url = Url::parse(text.trim()).map_err(|e| UrlError::Unparsable(e.to_string()))?;
    check_url(&url, rules)?;
    Ok(url)
}

/// Checks an already parsed URL (a redirect target) against `rules`.
pub fn check_url(url: &Url, rules: UrlRules) -> Result<(), UrlError> {
    let scheme = url.scheme();
    if scheme != "http" && scheme != "https" {
        // The scheme of a URL with a secret in it is not itself secret, but keep
        // it short: a `javascript:` or `data:` "scheme" can run long.
        return Err(UrlError::Scheme(scheme.chars().take(16).collect()));
    }
    let host = url.host().ok_or(UrlError::NoHost)?;
    if !rules.userinfo && (!url.username().is_empty() || url.password().is_some()) {
        return Err(UrlError::Userinfo);
    }
    if scheme == "http" && rules.plain_http == PlainHttp::LoopbackOnly && !is_loopback_host(&host) {
        return Err(UrlError::PlainHttpNotLoopback(host.to_string()));
    }
    Ok(())
}

/// Whether `host` is this machine: a loopback IP literal or `localhost`
/// (which the client's resolver only ever resolves to loopback addresses).
pub fn is_loopback_host(host: &Host<&str>) -> bool {
    match host {
        Host::Ipv4(ip) => ip.is_loopback(),
        Host::Ipv6(ip) => ip.is_loopback(),
        Host::Domain(name) => name.eq_ignore_ascii_case("localhost"),
    }
}

/// Same scheme, host and port (the port defaulted by scheme): where a
/// credential may go again.
pub fn same_origin(a: &Url, b: &Url) -> bool {
    a.origin() == b.origin()
}

/// `url` for messages and logs: scheme, host, port and path, without
/// userinfo, query or fragment (where signatures and tokens live).
pub fn redacted(url: &Url) -> String {
    let mut out = format!("{}://", url.scheme());
    if let Some(host) = url.host_str() {
        out.push_str(host);
    }
    if let Some(port) = url.port() {
        out.push_str(&format!(":{port}"));
    }
    out.push_str(url.path());
    if url.query().is_some() {
        out.push_str("?…");
    }
    out
}

/// A URL given as text (a server's answer, a record), fit for a message:
/// [`redacted`] when it is an http(s) URL, else its printable first 120
/// characters with anything before an `@` left out.
pub fn shown(text: &str) -> String {
    match Url::parse(text.trim()) {
        Ok(url) if matches!(url.scheme(), "http" | "https") => redacted(&url),
        _ => {
            let bare = lockstep_core::error::without_userinfo(text);
            let line = lockstep_core::error::printable_line(&bare);
            match line.char_indices().nth(120) {
                Some((at, _)) => format!("{}…", &line[..at]),
                None => line.to_string(),
            }
        }
    }
}

/// Resolves `host:port` like the system does, except that `localhost` only
/// ever yields loopback addresses: plain http is allowed to `localhost`
/// because it is this machine, so it must be this machine that is reached.
pub(crate) fn resolve(netloc: &str) -> std::io::Result<Vec<SocketAddr>> {
    let addrs: Vec<SocketAddr> = netloc.to_socket_addrs()?.collect();
    let host = netloc
        .rsplit_once(':')
        .map_or(netloc, |(host, _)| host)
        .trim_start_matches('[')
        .trim_end_matches(']');
    if !host.eq_ignore_ascii_case("localhost") {
        return Ok(addrs);
    }
    let loopback: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| match a.ip() {
            IpAddr::V4(ip) => ip.is_loopback(),
            IpAddr::V6(ip) => ip.is_loopback(),
        })
        .collect();
    if loopback.is_empty() {
        return Err(std::io::Error::new(
            std::io::ErrorKind::AddrNotAvailable,
            "localhost does not resolve to a loopback address here",
        ));
    }
    Ok(loopback)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn the_host_checked_is_the_host_connected_to() {
        let rules = UrlRules::CREDENTIALED;
        // The regression: a "loopback" prefix with the real host after `@`.
        assert_eq!(
            parse_url("http://127.0.0.1:1@localhost:8080/", rules),
            Err(UrlError::Userinfo)
        );
        assert_eq!(
            parse_url("http://127.0.0.1:1@evil.example/", rules),
            Err(UrlError::Userinfo)
        );
        assert!(matches!(
            parse_url("http://127.0.0.1.evil.example/", rules),
            Err(UrlError::PlainHttpNotLoopback(_))
        ));
        assert!(matches!(
            parse_url("http://api.example.com", rules),
            Err(UrlError::PlainHttpNotLoopback(_))
        ));
        assert!(parse_url("http://127.0.0.1:8080/api", rules).is_ok());
        assert!(parse_url("http://127.8.9.10/", rules).is_ok());
        assert!(parse_url("http://[::1]:9/", rules).is_ok());
        assert!(parse_url("http://LOCALHOST:9/", rules).is_ok());
        assert!(parse_url("https://api.github.com", rules).is_ok());
        assert!(matches!(
            parse_url("ftp://x", rules),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            parse_url("file:///etc/passwd", rules),
            Err(UrlError::Scheme(_))
        ));
        assert!(matches!(
            parse_url("not a url", rules),
            Err(UrlError::Unparsable(_))
        ));
        assert!(parse_url("http://files.example/x.tar", UrlRules::CHECKED_CONTENT).is_ok());
        assert_eq!(
            parse_url("https://u:p@files.example/x", UrlRules::CHECKED_CONTENT),
            Err(UrlError::Userinfo)
        );
    }

    #[test]
    fn origins_compare_scheme_host_and_port() {
        let u = |s: &str| Url::parse(s).unwrap();
        assert!(same_origin(
            &u("https://api.github.com/a"),
            &u("https://api.github.com:443/b?c")
        ));
        assert!(!same_origin(
            &u("https://api.github.com/a"),
            &u("http://api.github.com/a")
        ));
        assert!(!same_origin(
            &u("https://api.github.com/a"),
            &u("https://api.github.com.evil.example/a")
        ));
        assert!(!same_origin(
            &u("http://127.0.0.1:8080/"),
            &u("http://127.0.0.1:9090/")
        ));
    }

    #[test]
    fn redacted_urls_keep_no_secret_parts() {
        let url = Url::parse("https://u:pw@host.example:8443/p/a?sig=s3cret#frag").unwrap();
        assert_eq!(redacted(&url), "https://host.example:8443/p/a?…");
    }

    #[test]
    fn localhost_resolves_to_loopback_only() {
        for addr in resolve("localhost:80").unwrap() {
            assert!(addr.ip().is_loopback(), "{addr}");
        }
    }

    proptest! {
        #[test]
        fn parsing_never_panics_and_accepted_urls_obey_the_rules(text in "\\PC{0,60}") {
            if let Ok(url) = parse_url(&text, UrlRules::CREDENTIALED) {
                prop_assert!(url.scheme() == "https" || url.scheme() == "http");
                prop_assert!(url.username().is_empty() && url.password().is_none());
                if url.scheme() == "http" {
                    prop_assert!(is_loopback_host(&url.host().unwrap()));
                }
            }
        }

        #[test]
        fn http_urls_with_an_at_sign_never_pass(
            user in "[a-z0-9.:]{1,12}",
            host in "[a-z0-9.]{1,12}",
        ) {
            let text = format!("http://{user}@{host}/");
            prop_assert!(parse_url(&text, UrlRules::CREDENTIALED).is_err());
        }
    }
}
