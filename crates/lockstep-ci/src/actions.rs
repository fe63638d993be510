//! The actions generated workflows use, and the commits they are pinned to.
//!
//! A tag can be moved under a workflow (a compromised tag runs someone
//! else's code with the job's token), so by default (`[ci] pin-actions =
//! true`) every `uses:` names the full commit SHA, with the version as a
//! comment for people and update bots. The table is checked in: lockstep
//! only ever writes an action it knows, at a commit that was looked up in
//! the action's own repository (`git rev-parse vX.Y.Z^{commit}`), never one
//! taken from a third party's workflow. Update an entry by changing the
//! version and the SHA together; the tests check every SHA is 40 hex digits
//! and every generated `uses:` comes from here.

use lockstep_core::Error;

use crate::yaml::Node;

/// One pinned action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Action {
    /// `owner/repo`.
    pub name: &'static str,
    /// The major tag (`v6`): what `pin-actions = false` writes.
    pub major: &'static str,
    /// The release the SHA is (`v6.1.0`).
    pub version: &'static str,
    /// The commit of that release.
    pub sha: &'static str,
}

pub const CHECKOUT: Action = Action {
    name: "actions/checkout",
    major: "v6",
    version: "v6.1.0",
    sha: "d23441a48e516b6c34aea4fa41551a30e30af803",
};
pub const SETUP_PYTHON: Action = Action {
    name: "actions/setup-python",
    major: "v6",
    version: "v6.3.0",
    sha: "ece7cb06caefa5fff74198d8649806c4678c61a1",
};
pub const CACHE: Action = Action {
    name: "actions/cache",
    major: "v5",
    version: "v5.0.5",
    sha: "27d5ce7f107fe9357f9df03efb73ab90386fccae",
};
/// actions/cache's restore-only and save-only halves (the same repository
/// and commit): a cache whose key is known only after a step ran.
pub const CACHE_RESTORE: Action = Action {
    name: "actions/cache/restore",
    ..CACHE
};
pub const CACHE_SAVE: Action = Action {
    name: "actions/cache/save",
    ..CACHE
};
pub const UPLOAD_ARTIFACT: Action = Action {
    name: "actions/upload-artifact",
    major: "v6",
    version: "v6.0.0",
    sha: "b7c566a772e6b6bfb58ed0dc250532a479d7789f",
};
pub const DOWNLOAD_ARTIFACT: Action = Action {
    name: "actions/download-artifact",
    major: "v7",
    version: "v7.0.0",
    sha: "37930b1c2abaa49bbe596cd826c3c89aef350131",
};
pub const UPLOAD_PAGES_ARTIFACT: Action = Action {
    name: "actions/upload-pages-artifact",
    major: "v5",
    version: "v5.0.0",
    sha: "fc324d3547104276b827a68afc52ff2a11cc49c9",
};
pub const DEPLOY_PAGES: Action = Action {
    name: "actions/deploy-pages",
    major: "v5",
    version: "v5.0.0",
    sha: "cd2ce8fcbc39b97be8ca5fce6e763baed58fa128",
};

/// Every action a generated workflow may use.
pub const ALL: [Action; 9] = [
    CHECKOUT,
    SETUP_PYTHON,
    CACHE,
    CACHE_RESTORE,
    CACHE_SAVE,
    UPLOAD_ARTIFACT,
    DOWNLOAD_ARTIFACT,
    UPLOAD_PAGES_ARTIFACT,
    DEPLOY_PAGES,
];

impl Action {
    /// The `uses:` value: `owner/repo@SHA` when pinned (the version goes
    /// in a comment beside it, see [`Action::comment`]), else `owner/repo@vN`.
    pub fn uses(&self, pinned: bool) -> String {
        if pinned {
            format!("{}@{}", self.name, self.sha)
        } else {
            format!("{}@{}", self.name, self.major)
        }
    }

    /// The comment written after a pinned `uses:`.
    pub fn comment(&self) -> String {
        self.version.to_string()
    }
}

/// The table entry of a `uses:` value as generated (either form), if any.
pub fn known(uses: &str) -> Option<Action> {
    let (name, reference) = uses.split_once('@')?;
    ALL.iter()
        .copied()
        .find(|a| a.name == name && (a.sha == reference || a.major == reference))
}

/// The `uses:` of every action a plan writes: the table, `[ci.pins]`
/// overrides, and whether to pin by SHA.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Pins {
    pinned: bool,
    table: Vec<Action>,
    /// `[ci.pins]` entries: (name, version, sha).
    overrides: Vec<(String, String, String)>,
}

impl Pins {
    /// Checks `[ci.pins]`: each names an action of the table, with a
    /// 40-hex commit and a `v` version.
    pub fn resolve(
        pinned: bool,
        overrides: &std::collections::BTreeMap<String, crate::config::PinConfig>,
    ) -> Result<Pins, Error> {
        let mut resolved = Vec::new();
        for (name, pin) in overrides {
            let key = format!("[ci.pins] \"{}\"", name.escape_debug());
            if !ALL.iter().any(|a| a.name == name) {
                let names: Vec<&str> = ALL.iter().map(|a| a.name).collect();
                return Err(Error::usage(format!(
                    "{key} is not an action lockstep's workflows use"
                ))
                .cause(format!("they use: {}", names.join(", ")))
                .hint("remove the entry, or name one of those actions"));
            }
            let sha_ok = pin.sha.len() == 40
                && pin
                    .sha
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
            if !sha_ok {
                return Err(Error::usage(format!(
                    "{key} sha = \"{}\" is not a full commit",
                    pin.sha.escape_debug()
                ))
                .hint("give the 40 lowercase hex digits of the release's commit: git ls-remote https://github.com/OWNER/REPO refs/tags/vX.Y.Z^{}"));
            }
            let version_ok = pin.version.len() <= 40
                && pin.version.starts_with('v')
                && pin.version[1..]
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '-'));
            if !version_ok || pin.version.len() < 2 {
                return Err(Error::usage(format!(
                    "{key} version = \"{}\" is not a release tag",
                    pin.version.escape_debug()
                ))
                .hint("write the tag the commit is, e.g. \"v6.2.0\""));
            }
            resolved.push((name.clone(), pin.version.clone(), pin.sha.clone()));
        }
        Ok(Pins {
            pinned,
            table: ALL.to_vec(),
            overrides: resolved,
        })
    }

    /// The `uses:` node of `action`: `name@SHA # version`, or `name@major`.
    pub fn uses(&self, action: Action) -> Node {
        // A pin of `actions/cache` pins its `restore` and `save` too.
        let repo: String = action
            .name
            .splitn(3, '/')
            .take(2)
            .collect::<Vec<_>>()
            .join("/");
        if let Some((_, version, sha)) = self
            .overrides
            .iter()
            .find(|(n, _, _)| n == action.name || *n == repo)
        {
            if self.pinned {
                return Node::Commented(format!("{}@{sha}", action.name), version.clone());
            }
            let major = version.split('.').next().unwrap_or(version);
            return Node::Str(format!("{}@{major}", action.name));
        }
        let action = self
            .table
            .iter()
            .copied()
            .find(|a| a.name == action.name)
            .unwrap_or(action);
        if self.pinned {
            Node::Commented(action.uses(true), action.comment())
        } else {
            Node::Str(action.uses(false))
        }
    }

    /// Whether actions are pinned by commit.
    pub fn pinned(&self) -> bool {
        self.pinned
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_pin_is_a_full_commit_and_every_name_unique() {
        for action in ALL {
            assert_eq!(action.sha.len(), 40, "{}", action.name);
            assert!(action
                .sha
                .bytes()
                .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
            assert!(action.version.starts_with(action.major), "{}", action.name);
            assert_eq!(ALL.iter().filter(|a| a.name == action.name).count(), 1);
            assert_eq!(known(&action.uses(true)), Some(action));
            assert_eq!(known(&action.uses(false)), Some(action));
        }
        assert_eq!(known("actions/checkout@main"), None);
        assert_eq!(known("someone/else@v1"), None);
    }
}
