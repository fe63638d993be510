//! Keeping secrets out of everything lockstep prints, logs or emits: the one
//! rule for every credential lockstep holds or hands a tool (a GitHub token,
//! a webhook URL, a PyPI token, a Twine password).
//!
//! A request knows its secrets (a bearer token, a webhook URL, a signed
//! storage URL's query, userinfo); a child lockstep hands a credential to
//! (`uv publish`) knows its own. Text that comes back from a server, from the
//! HTTP stack or from that child may repeat them (a 401 body echoing the
//! token, a server answering `you sent Basic user:PASSWORD`, a DNS error
//! naming the webhook host). Every such text goes through a [`Scrubber`]
//! before it reaches an error, a log file or an event, then through
//! [`excerpt`] so a server cannot put raw newlines or terminal escapes into
//! lockstep's output.

use url::Url;

/// Secrets shorter than this are not scrubbed: they would mangle unrelated
/// text (a one-letter password) and hide nothing worth hiding.
const MIN_SECRET_CHARS: usize = 4;

/// Replaces known secrets in text, ASCII-case-insensitively (servers and
/// resolvers lower-case hosts), also in their percent-encoded form.
#[derive(Debug, Clone, Default)]
pub struct Scrubber {
    /// (needle, replacement), longest needle first so that a whole URL is
    /// replaced before its host.
    needles: Vec<(String, &'static str)>,
}

/// The replacement for a bearer token or other credential.
pub const TOKEN_LABEL: &str = "<token>";
/// The replacement for a URL (or part of one) that is itself a credential.
pub const URL_LABEL: &str = "<secret URL>";

impl Scrubber {
    pub fn new() -> Scrubber {
        Scrubber::default()
    }

    /// Hides `secret` behind `label`.
    pub fn add(&mut self, secret: &str, label: &'static str) -> &mut Self {
        let secret = secret.trim();
        if secret.chars().count() < MIN_SECRET_CHARS {
            return self;
        }
        let encoded = percent_encode(secret);
        for needle in [secret.to_string(), encoded] {
            if !self
                .needles
                .iter()
                .any(|(n, _)| n.eq_ignore_ascii_case(&needle))
            {
                self.needles.push((needle, label));
            }
        }
        self.needles
            .sort_by(|a, b| b.0.len().cmp(&a.0.len()).then_with(|| a.0.cmp(&b.0)));
        self
    }

    /// Hides a bearer token (or any header credential).
    pub fn add_token(&mut self, token: &str) -> &mut Self {
        self.add(token, TOKEN_LABEL)
    }

    /// Hides the credentials of an HTTP Basic login (what `uv publish` and
    /// twine send): the password alone, `user:password`, and the base64 form
    /// of the Authorization header, which a server may echo back.
    pub fn add_basic(&mut self, user: &str, password: &str) -> &mut Self {
        use base64::Engine;
        self.add(password, TOKEN_LABEL);
        let pair = format!("{user}:{password}");
        self.add(&pair, TOKEN_LABEL);
        let engine = base64::engine::general_purpose::STANDARD;
        self.add(&engine.encode(pair.as_bytes()), TOKEN_LABEL);
        self
    }

    /// Hides the secret parts of an otherwise public URL: userinfo, the
    /// query (signed storage URLs carry their signature there) and fragment.
    pub fn add_url_secrets(&mut self, url: &Url) -> &mut Self {
        self.add(url.username(), TOKEN_LABEL);
        if let Some(password) = url.password() {
            self.add(password, TOKEN_LABEL);
            self.add(&format!("{}:{password}", url.username()), TOKEN_LABEL);
        }
        if let Some(query) = url.query() {
            self.add(query, URL_LABEL);
            for (_, value) in url.query_pairs() {
                self.add(&value, URL_LABEL);
            }
            for pair in query.split('&') {
                if let Some((_, value)) = pair.split_once('=') {
                    self.add(value, URL_LABEL);
                }
            }
        }
        if let Some(fragment) = url.fragment() {
            self.add(fragment, URL_LABEL);
        }
        self
    }

    /// [`Scrubber::add_url_secrets`] of `text` when it parses as a URL (a
    /// `user:password@` in an upload URL is a Basic login, hidden in every
    /// form [`Scrubber::add_basic`] knows).
    pub fn add_url_text_secrets(&mut self, text: &str) -> &mut Self {
        if let Ok(url) = Url::parse(text.trim()) {
            if let Some(password) = url.password() {
                let user = percent_decode(url.username());
                self.add_basic(&user, &percent_decode(password));
            }
            self.add_url_secrets(&url);
        }
        self
    }

    /// Hides a URL that is a credential as a whole (a Discord or Slack
    /// webhook: whoever has it can post): the URL, its host and port, its
    /// path and the path segments that look like ids or tokens.
    pub fn add_whole_url(&mut self, url: &Url, text: &str) -> &mut Self {
        self.add(text, URL_LABEL);
        self.add(url.as_str(), URL_LABEL);
        self.add(url.as_str().trim_end_matches('/'), URL_LABEL);
        self.add_url_secrets(url);
        if let Some(rest) = url.as_str().split_once("://").map(|(_, rest)| rest) {
            self.add(rest, URL_LABEL);
        }
        if let Some(host) = url.host_str() {
            self.add(host, URL_LABEL);
            let bare = host.trim_start_matches('[').trim_end_matches(']');
            self.add(bare, URL_LABEL);
            if let Some(port) = url.port_or_known_default() {
                self.add(&format!("{host}:{port}"), URL_LABEL);
                // A port alone is short and common; only a non-default one is
                // specific enough to say where the webhook is.
                if url.port().is_some() {
                    self.add(&port.to_string(), URL_LABEL);
                }
            }
        }
        let path = url.path();
        self.add(path, URL_LABEL);
        self.add(path.trim_end_matches('/'), URL_LABEL);
        let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
        for (i, segment) in segments.iter().enumerate() {
            let tokenish = segment.chars().count() >= 20
                || (segment.chars().count() >= 6 && segment.chars().any(|c| c.is_ascii_digit()));
            if tokenish {
                self.add(segment, URL_LABEL);
            }
            // Pairs like `webhooks/42` name the hook even when each half is short.
            if let Some(next) = segments.get(i + 1) {
                self.add(&format!("{segment}/{next}"), URL_LABEL);
            }
        }
        self
    }

    /// Whether nothing would be replaced.
    pub fn is_empty(&self) -> bool {
        self.needles.is_empty()
    }

    /// `text` with every known secret replaced by its label.
    pub fn apply(&self, text: &str) -> String {
        if self.needles.is_empty() {
            return text.to_string();
        }
        let bytes = text.as_bytes();
        let mut out = String::with_capacity(text.len());
        let mut i = 0;
        'outer: while i < bytes.len() {
            if text.is_char_boundary(i) {
                for (needle, label) in &self.needles {
                    let n = needle.as_bytes();
                    if bytes.len() - i >= n.len() && bytes[i..i + n.len()].eq_ignore_ascii_case(n) {
                        out.push_str(label);
                        i += n.len();
                        continue 'outer;
                    }
                }
                // Not a match here: copy one whole character.
                let c = text[i..].chars().next().unwrap_or('\u{fffd}');
                out.push(c);
                i += c.len_utf8().max(1);
            } else {
                i += 1;
            }
        }
        out
    }
}

/// `text` on one line, at most `max_chars` characters (the last being `…`
/// when cut), with control characters (newlines, escapes, bidi overrides)
/// turned into spaces and runs of whitespace collapsed: what a server said,
/// fit to quote in an error.
pub fn excerpt(text: &str, max_chars: usize) -> String {
    let cleaned: String = text
        .chars()
        .map(|c| if is_unprintable(c) { ' ' } else { c })
        .collect();
    let one_line = cleaned.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max_chars {
        return one_line;
    }
    let mut out: String = one_line.chars().take(max_chars.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// Control characters and the Unicode formatting characters that reorder
/// or hide text on a terminal (lockstep-core's one list).
fn is_unprintable(c: char) -> bool {
    c.is_control() || crate::error::is_invisible_format(c)
}

/// `%XX` escapes decoded (invalid ones kept as they are).
fn percent_decode(text: &str) -> String {
    let bytes = text.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        match (
            bytes[i],
            bytes.get(i + 1).copied().and_then(hex),
            bytes.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(hi), Some(lo)) => {
                out.push((hi * 16 + lo) as u8);
                i += 3;
            }
            (b, _, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `%XX` for every byte outside the unreserved set (how a secret looks once
/// a server has put it into a URL of its own).
fn percent_encode(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for b in text.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'.' | b'_' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tokens_are_replaced_in_any_case_and_encoding() {
        let mut s = Scrubber::new();
        s.add_token("ghp_Secret/Token");
        let out = s.apply("Bad credentials: GHP_SECRET/TOKEN and ghp_Secret%2FToken");
        assert_eq!(out, "Bad credentials: <token> and <token>");
    }

    #[test]
    fn webhook_urls_lose_host_path_and_ids() {
        let url = Url::parse("https://User:pw12@Hooks.Example.com:8443/services/T1/B2/xyzzy1?x=1")
            .unwrap();
        let mut s = Scrubber::new();
        s.add_whole_url(&url, url.as_str());
        let text = "https://user:pw12@hooks.example.com:8443/services/T1/B2/xyzzy1?x=1 failed; \
                    resolve dns name 'hooks.example.com:8443'; host Hooks.Example.com; \
                    path /services/T1/B2/xyzzy1; id xyzzy1";
        let out = s.apply(text);
        for secret in ["example", "8443", "T1/B2", "xyzzy1", "pw12"] {
            assert!(!out.to_lowercase().contains(secret), "{secret:?} in {out}");
        }
        assert!(out.starts_with("<secret URL> failed"), "{out}");
    }

    #[test]
    fn signed_queries_and_userinfo_are_secret_parts() {
        let url =
            Url::parse("https://alice:hunter22@blob.example/x.zip?sig=abc%2Bdef&se=2026").unwrap();
        let mut s = Scrubber::new();
        s.add_url_secrets(&url);
        let out = s.apply("GET /x.zip?sig=abc%2Bdef&se=2026 sig abc+def by alice:hunter22");
        assert!(!out.contains("abc"), "{out}");
        assert!(!out.contains("hunter22"), "{out}");
        assert!(out.contains("blob") || out.contains("/x.zip"), "{out}");
    }

    #[test]
    fn basic_logins_are_hidden_in_every_form_a_server_echoes() {
        let mut s = Scrubber::new();
        s.add_basic("alice", "pypi-AgEIcHlwaS5vcmc");
        let out = s.apply(
            "you sent Basic alice:pypi-AgEIcHlwaS5vcmc (YWxpY2U6cHlwaS1BZ0VJY0hsd2FTNXZjbWM=) token pypi-AgEIcHlwaS5vcmc",
        );
        assert_eq!(out, "you sent Basic <token> (<token>) token <token>");
    }

    #[test]
    fn excerpts_are_one_bounded_printable_line() {
        assert_eq!(excerpt("a\r\nb\x1b[31m\tc\u{202e}d", 100), "a b [31m c d");
        assert_eq!(
            excerpt(&"x".repeat(300), 200),
            format!("{}…", "x".repeat(199))
        );
        assert_eq!(excerpt("  ", 10), "");
        // Every bidi control and invisible format character, as the
        // terminal rule has them (U+061C, U+2028 were missed before).
        assert_eq!(
            excerpt("a\u{061c}b\u{2028}c\u{2067}d\u{00ad}e", 100),
            "a b c d e"
        );
    }

    proptest! {
        #[test]
        fn scrubbing_never_panics_and_removes_every_secret(
            secrets in proptest::collection::vec("[A-Za-z0-9_/+=.-]{4,24}", 1..4),
            noise in "\\PC{0,40}",
            at in 0usize..40,
        ) {
            let mut s = Scrubber::new();
            for secret in &secrets {
                s.add_token(secret);
            }
            let cut = noise.char_indices().map(|(i, _)| i).nth(at).unwrap_or(noise.len());
            let text = format!("{}{}{}", &noise[..cut], secrets.join(" "), &noise[cut..]);
            let out = s.apply(&text);
            for secret in &secrets {
                let lower = out.to_ascii_lowercase();
                prop_assert!(
                    !lower.contains(&secret.to_ascii_lowercase())
                        || TOKEN_LABEL.contains(&secret.to_ascii_lowercase()),
                    "{} in {}", secret, out
                );
            }
        }

        #[test]
        fn anything_goes_through_without_panicking(text in "\\PC{0,80}", secret in "\\PC{0,12}", max in 0usize..50) {
            let mut s = Scrubber::new();
            s.add_token(&secret);
            if let Ok(url) = Url::parse(&format!("https://h.example/{secret}?{secret}")) {
                s.add_whole_url(&url, url.as_str());
            }
            let out = excerpt(&s.apply(&text), max);
            prop_assert!(out.chars().count() <= max.max(1));
            prop_assert!(!out.chars().any(is_unprintable));
        }
    }
}
