//! Credentials for the one git command that needs them.
//!
//! A job on GitHub Actions holds a token (`GITHUB_TOKEN`); git pushes to the
//! job's own server with it as an `Authorization` header. The header used to
//! be exported for the whole step (`GIT_CONFIG_VALUE_0`), where every child
//! of the step, the integrate smoke included, could read it. Here it is given
//! to one git command at a time, in that command's environment only, and only
//! when the remote is on the job's server (`$GITHUB_SERVER_URL`, https).
//! Outside a job (no `$GITHUB_SERVER_URL`) nothing is added: the user's own
//! credential helper does the work, as for any git command.

use base64::Engine;

/// Where the credential comes from, in order.
const TOKEN_VARS: &[&str] = &["GITHUB_TOKEN", "GH_TOKEN"];

/// A header for one git command.
#[derive(Clone)]
pub struct RemoteAuth {
    key: String,
    value: String,
}

impl std::fmt::Debug for RemoteAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "RemoteAuth({})", self.key)
    }
}

impl RemoteAuth {
    /// The header GitHub accepts for `token` when `remote_url` is on
    /// `server` (an https URL, e.g. `https://github.com`, or http on
    /// loopback); `None` otherwise.
    pub fn for_server(server: &str, remote_url: &str, token: &str) -> Option<RemoteAuth> {
        let server = server.trim().trim_end_matches('/');
        let token = token.trim();
        let on_server = remote_url
            .strip_prefix(server)
            .is_some_and(|rest| rest.starts_with('/'));
        let plain = |t: &str| !t.is_empty() && !t.chars().any(|c| c.is_control());
        // Plain http only to this machine (a test server): a token is
        // never sent in clear over a network.
        let secure = server.starts_with("https://")
            || ["http://127.0.0.1:", "http://[::1]:", "http://localhost:"]
                .iter()
                .any(|p| server.starts_with(p));
        if !secure || !on_server || !plain(token) || !plain(server) {
            return None;
        }
        let basic =
            base64::engine::general_purpose::STANDARD.encode(format!("x-access-token:{token}"));
        Some(RemoteAuth {
            key: format!("http.{server}/.extraheader"),
            value: format!("AUTHORIZATION: basic {basic}"),
        })
    }

    /// [`RemoteAuth::for_server`] with the job's server and token
    /// (`$GITHUB_SERVER_URL`, `$GITHUB_TOKEN` or `$GH_TOKEN`).
    pub fn from_job(remote_url: &str) -> Option<RemoteAuth> {
        let server = std::env::var("GITHUB_SERVER_URL").ok()?;
        let token = TOKEN_VARS
            .iter()
            .find_map(|v| std::env::var(v).ok().filter(|t| !t.trim().is_empty()))?;
        RemoteAuth::for_server(&server, remote_url, &token)
    }

    /// The variables that give git the header for one command.
    pub fn env(&self) -> [(&str, &str); 3] {
        [
            ("GIT_CONFIG_COUNT", "1"),
            ("GIT_CONFIG_KEY_0", &self.key),
            ("GIT_CONFIG_VALUE_0", &self.value),
        ]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_a_remote_on_the_server_gets_the_header() {
        let auth = RemoteAuth::for_server("https://github.com/", "https://github.com/o/r", "tok")
            .expect("on the server");
        let env = auth.env();
        assert_eq!(env[1].1, "http.https://github.com/.extraheader");
        assert!(env[2].1.starts_with("AUTHORIZATION: basic "));
        assert!(!format!("{auth:?}").contains("basic"));
        for (server, url, token) in [
            (
                "https://github.com",
                "https://github.com.evil.example/o/r",
                "tok",
            ),
            ("https://github.com", "git@github.com:o/r", "tok"),
            ("http://github.com", "http://github.com/o/r", "tok"),
            ("https://github.com", "https://github.com/o/r", ""),
            ("https://github.com", "https://github.com/o/r", "a\nb"),
        ] {
            assert!(
                RemoteAuth::for_server(server, url, token).is_none(),
                "{server} {url} {token:?}"
            );
        }
    }
}
