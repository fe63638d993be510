//! `OWNER/NAME`: parsed and checked before it goes into a URL path, and read
//! off a git remote URL (`https://github.com/o/n.git`, `git@github.com:o/n`,
//! `ssh://git@github.com/o/n`) when `--repo` and `$GITHUB_REPOSITORY` are unset.

use std::fmt;
use std::str::FromStr;

use lockstep_core::Error;

/// A repository on GitHub: `owner/name`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Repo {
    pub owner: String,
    pub name: String,
}

impl fmt::Display for Repo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}/{}", self.owner, self.name)
    }
}

/// GitHub's own limits: owners are at most 39 characters, names 100.
fn valid_part(part: &str, max: usize) -> bool {
    !part.is_empty()
        && part.len() <= max
        && part != "."
        && part != ".."
        && part
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

impl FromStr for Repo {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self, Error> {
        let bad = || {
            Error::usage(format!("`{s}` is not a GitHub repository"))
                .hint("name it OWNER/NAME, e.g. iree-org/iree")
        };
        let (owner, name) = s.split_once('/').ok_or_else(bad)?;
        if !valid_part(owner, 39) || !valid_part(name, 100) {
            return Err(bad());
        }
        Ok(Repo {
            owner: owner.to_string(),
            name: name.to_string(),
        })
    }
}

/// The GitHub repository a remote URL points at, if it is one on `host`
/// (`github.com` unless the API is GitHub Enterprise's).
pub fn repo_from_remote_url(url: &str, host: &str) -> Option<Repo> {
    let url = url.trim();
    let path = if let Some(rest) = url.strip_prefix("git@") {
        rest.strip_prefix(host)?.strip_prefix(':')?
    } else {
        let rest = url
            .strip_prefix("https://")
            .or_else(|| url.strip_prefix("http://"))
            .or_else(|| url.strip_prefix("ssh://"))
            .or_else(|| url.strip_prefix("git://"))?;
        let rest = rest.split_once('@').map_or(rest, |(_, r)| r);
        let rest = rest.strip_prefix(host)?;
        // An explicit port (`github.com:443/`) is allowed; the path starts at `/`.
        let rest = match rest.strip_prefix(':') {
            Some(port_and_path) => &port_and_path[port_and_path.find('/')?..],
            None => rest,
        };
        rest.strip_prefix('/')?
    };
    let path = path.trim_end_matches('/');
    let path = path.strip_suffix(".git").unwrap_or(path);
    path.parse().ok()
}

/// Which repository a command means: `flag` (`--repo`), else
/// `$GITHUB_REPOSITORY` (set on every Actions runner), else the `origin`
/// remote's URL when it is on `host`.
pub fn resolve(flag: Option<&str>, origin_url: Option<&str>, host: &str) -> Result<Repo, Error> {
    if let Some(repo) = flag {
        return repo.parse();
    }
    if let Some(repo) = std::env::var("GITHUB_REPOSITORY")
        .ok()
        .filter(|v| !v.trim().is_empty())
    {
        return repo
            .trim()
            .parse()
            .map_err(|e: Error| e.context("$GITHUB_REPOSITORY does not name a repository"));
    }
    origin_url
        .and_then(|url| repo_from_remote_url(url, host))
        .ok_or_else(|| {
            Error::usage("which repository? --repo is not given, $GITHUB_REPOSITORY is unset and `origin` is not on GitHub")
                .hint("pass --repo OWNER/NAME, or set GITHUB_REPOSITORY")
        })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn parses_owner_and_name() {
        let repo: Repo = "iree-org/iree".parse().unwrap();
        assert_eq!(repo.to_string(), "iree-org/iree");
        for bad in [
            "", "iree", "a/b/c", "../x", "a/..", "a b/c", "a/b?x=1", "/x",
        ] {
            assert!(bad.parse::<Repo>().is_err(), "{bad}");
        }
    }

    #[test]
    fn reads_remote_urls() {
        for url in [
            "https://github.com/iree-org/iree.git",
            "https://github.com/iree-org/iree",
            "https://user@github.com/iree-org/iree/",
            "git@github.com:iree-org/iree.git",
            "ssh://git@github.com/iree-org/iree.git",
            "ssh://git@github.com:22/iree-org/iree.git",
        ] {
            assert_eq!(
                repo_from_remote_url(url, "github.com").map(|r| r.to_string()),
                Some("iree-org/iree".to_string()),
                "{url}"
            );
        }
        for url in [
            "https://gitlab.com/iree-org/iree.git",
            "/srv/git/iree",
            "https://github.com.evil.example/iree-org/iree",
            "https://github.com/iree-org",
        ] {
            assert_eq!(repo_from_remote_url(url, "github.com"), None, "{url}");
        }
    }

    proptest! {
        #[test]
        fn never_panics(s in ".{0,80}") {
            let _ = s.parse::<Repo>();
            let _ = repo_from_remote_url(&s, "github.com");
        }

        #[test]
        fn what_parses_prints_back(owner in "[A-Za-z0-9_-]{1,39}", name in "[A-Za-z0-9_.-]{1,100}") {
            let text = format!("{owner}/{name}");
            if let Ok(repo) = text.parse::<Repo>() {
                prop_assert_eq!(repo.to_string(), text);
            }
        }
    }
}
