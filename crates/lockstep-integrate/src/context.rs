//! The integrate context: the superproject, the pinned submodule inside it, the
//! configuration and the store, resolved once per command.

use std::path::{Path, PathBuf};

use crate::config::IntegrateConfig;
use lockstep_core::error::without_userinfo;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_git::{Oid, Repo};
use lockstep_pin::Pin;
use lockstep_store::{RepoLock, Store};

/// The upstream remote's URL and tracking ref at one moment
/// ([`Integrate::upstream_state`]).
pub(crate) struct UpstreamState {
    url: Option<String>,
    tracking: Option<Oid>,
}

/// A revision given on the command line (`flag`: `--to`, `--good` ...)
/// that is not one at all (empty, an option, control characters, longer
/// than any ref) is a usage error before anything is touched.
pub fn check_rev(flag: &str, rev: &str) -> Result<(), Error> {
    let why = if rev.trim().is_empty() {
        "it is empty"
    } else if rev.starts_with('-') {
        "it starts with `-`"
    } else if rev.chars().any(char::is_control) {
        "it holds control characters"
    } else if rev.len() > crate::validate::MAX_REF {
        "it is longer than any revision"
    } else {
        return Ok(());
    };
    let shown: String = rev.chars().take(60).collect();
    Err(Error::usage(format!(
        "`{}` ({flag}) is not a revision: {why}",
        shown.escape_debug()
    ))
    .hint("give a commit id (an unambiguous abbreviation) or a ref; nothing was done"))
}

/// How many run directories of one label one second may have.
const MAX_RUNS_PER_SECOND: u32 = 10_000;

/// Everything an integrate command works on.
pub struct Integrate<'a> {
    pub(crate) cfg: IntegrateConfig,
    pub(crate) superproject: Repo,
    pub(crate) sub: Repo,
    pub(crate) store: Store,
    /// `<git common dir>/lockstep`: store, lock, reports, logs.
    pub(crate) state_dir: PathBuf,
    pub(crate) sink: &'a dyn Sink,
    /// The files this command writes (`--events FILE` ...), absolute:
    /// lockstep's own outputs, never counted as uncommitted changes.
    pub(crate) outputs: Vec<PathBuf>,
    /// Set when this command fetched upstream (what a usage error undoes).
    fetched: std::sync::atomic::AtomicBool,
    /// Where `publish` and `call_for_help` go instead of what the
    /// environment says (the demo's loopback GitHub).
    pub(crate) reach: Reach,
    /// The pin: a submodule, a pin file or a pin inside a larger file.
    pin: Pin,
}

/// The GitHub API, token and webhook given in code instead of
/// `$GITHUB_API_URL`, the token variable and the webhook variable.
#[derive(Debug, Clone, Default)]
pub struct Reach {
    pub api_url: Option<String>,
    pub token: Option<lockstep_github::Token>,
    pub webhook_url: Option<String>,
}

impl<'a> Integrate<'a> {
    /// Resolves the superproject from `root` (lockstep.toml's directory),
    /// the pin and where upstream's history lives (the submodule's checkout,
    /// or a bare clone under the state directory for a pin kept in a file).
    pub fn open(
        cfg: &IntegrateConfig,
        root: &Path,
        sink: &'a dyn Sink,
    ) -> Result<Integrate<'a>, Error> {
        let cfg = cfg.clone();
        // Nothing is touched before the configuration is known to be sane.
        crate::validate::config(&cfg)?;
        let pin = cfg.pin()?;
        let (superproject, state_dir) = Repo::discover_with_state_dir(root)?;
        let history =
            || pin.upstream_history(&superproject, &state_dir, cfg.upstream_url.as_deref());
        // The submodule is checked before anything is created.
        let checked = match pin.carries_patches() {
            true => Some(history()?),
            false => None,
        };
        // The store before the clone: it refuses a state directory or
        // database that is not what it should be before anything is
        // created there.
        let store = Store::open(&state_dir)?;
        let sub = match checked {
            Some(sub) => sub,
            None => history()?,
        };
        Ok(Integrate {
            cfg,
            sub,
            state_dir,
            superproject,
            store,
            sink,
            outputs: Vec::new(),
            fetched: Default::default(),
            reach: Reach::default(),
            pin,
        })
    }

    /// Declares the files this command writes (absolute paths, or relative
    /// to the current directory): when one of them is an untracked file in
    /// the superproject or the submodule, the cleanliness checks leave it
    /// out. Only exactly those paths, and only while untracked.
    pub fn with_outputs(mut self, outputs: Vec<PathBuf>) -> Self {
        self.outputs = outputs;
        self
    }

    /// This integrate publishing to `reach` instead of what the environment
    /// names.
    pub fn with_reach(mut self, reach: Reach) -> Self {
        self.reach = reach;
        self
    }

    /// Whether the untracked `path` (relative to `repo`'s top, as git
    /// prints it) is one of [`Integrate::outputs`]. Directories are
    /// compared with their links resolved; the file itself is not (an
    /// output given as a link is the link git lists).
    fn is_own_output(&self, repo: &Path, path: &str) -> bool {
        if self.outputs.is_empty() {
            return false;
        }
        let real = |p: &Path| -> Option<PathBuf> {
            let p = std::path::absolute(p).ok()?;
            let name = p.file_name()?.to_owned();
            Some(std::fs::canonicalize(p.parent()?).ok()?.join(name))
        };
        let Some(listed) = real(&repo.join(path)) else {
            return false;
        };
        self.outputs
            .iter()
            .any(|o| real(o).as_ref() == Some(&listed))
    }

    /// The `[integrate]` table this integrate runs with.
    pub fn config(&self) -> &IntegrateConfig {
        &self.cfg
    }

    /// The superproject (the repository holding the pin).
    pub fn superproject(&self) -> &Repo {
        &self.superproject
    }

    /// The repository holding upstream's history (the submodule, or the
    /// bare clone of a pin kept in a file).
    pub fn upstream(&self) -> &Repo {
        &self.sub
    }

    /// The pin.
    pub fn pin_of(&self) -> &Pin {
        &self.pin
    }

    /// The superproject path that holds the pin: the submodule or the pin's file.
    pub fn pin_path(&self) -> &str {
        self.pin.path()
    }

    /// The upstream commit checked out now: the submodule's HEAD, or the
    /// revision in the work tree's pin file.
    pub fn checked_out(&self) -> Result<Oid, Error> {
        self.pin.checked_out(&self.superproject)
    }

    /// Stages `sha` as the new pin in the superproject's index (a pin in a
    /// file is written first, with its archive's checksum when it has one:
    /// remembered in the store per URL, so a commit probed twice downloads
    /// once).
    pub(crate) fn stage_pin(&self, sha: &str) -> Result<(), Error> {
        self.pin.stage(&self.superproject, sha, &self.checksums())
    }

    /// Archive checksums remembered in the store.
    pub(crate) fn checksums(&self) -> StoredChecksums<'_> {
        StoredChecksums {
            store: &self.store,
            downloads: lockstep_pin::Downloads::default(),
        }
    }

    /// Takes the per-repository integrate lock.
    pub fn lock(&self, command: &str) -> Result<RepoLock, Error> {
        RepoLock::acquire(&self.state_dir, command)
    }

    pub fn emit(&self, event: crate::events::IntegrateEvent) {
        self.sink.emit(&event);
    }

    pub fn info(&self, message: impl Into<String>) {
        self.sink.note(message);
    }

    pub fn warn(&self, message: impl Into<String>) {
        self.sink.warn(message);
    }

    /// `refs/remotes/<upstream-remote>/<upstream-branch>`.
    pub fn upstream_ref(&self) -> String {
        format!(
            "refs/remotes/{}/{}",
            self.cfg.upstream_remote, self.cfg.upstream_branch
        )
    }

    /// Where upstream is, fetching it first when it was never fetched.
    pub fn upstream_head(&self) -> Result<Oid, Error> {
        if let Some(sha) = self.sub.resolve(&self.upstream_ref())? {
            return Ok(sha);
        }
        self.fetch_upstream()?;
        self.sub.resolve(&self.upstream_ref())?.ok_or_else(|| {
            Error::usage(format!(
                "upstream branch `{}` of remote `{}` does not exist",
                self.cfg.upstream_branch, self.cfg.upstream_remote
            ))
            .hint("check [integrate] upstream-remote and upstream-branch in lockstep.toml")
        })
    }

    /// Where upstream is, if it was ever fetched; never fetches.
    pub fn fetched_upstream_head(&self) -> Result<Option<Oid>, Error> {
        self.sub.resolve(&self.upstream_ref())
    }

    /// What fetching upstream may change, as it is now: the upstream
    /// remote's URL and its tracking ref ([`Integrate::restore_upstream`]
    /// puts them back).
    pub(crate) fn upstream_state(&self) -> Result<UpstreamState, Error> {
        Ok(UpstreamState {
            url: self.sub.remote_url(&self.cfg.upstream_remote)?,
            tracking: self.sub.resolve(&self.upstream_ref())?,
        })
    }

    /// Undoes what fetching upstream changed since `before` (a remote
    /// added or pointed elsewhere, its tracking ref created or moved), for
    /// a command ending in a usage error after it fetched: exit 2 means
    /// nothing was done. The fetched objects stay (unreferenced, as after
    /// any fetch). Best effort: a failure here leaves the fetch's result.
    pub(crate) fn restore_upstream(&self, before: &UpstreamState) {
        let remote = &self.cfg.upstream_remote;
        let now = self.sub.remote_url(remote).ok().flatten();
        match (&before.url, &now) {
            // Removing the remote removes its tracking refs too.
            (None, Some(_)) => {
                let _ = self.sub.try_git(&["remote", "remove", "--", remote]);
                return;
            }
            (Some(old), Some(new)) if old != new => {
                let _ = self.sub.try_git(&["remote", "set-url", "--", remote, old]);
            }
            _ => {}
        }
        let tracking = self.upstream_ref();
        let now = self.sub.resolve(&tracking).ok().flatten();
        if now != before.tracking {
            let _ = match &before.tracking {
                None => self.sub.try_git(&["update-ref", "-d", &tracking]),
                Some(old) => self.sub.try_git(&["update-ref", &tracking, old]),
            };
        }
    }

    /// Runs `step` (a command that may fetch upstream); when it ends in a
    /// usage error, puts the upstream remote and its tracking ref back as
    /// they were ([`Integrate::restore_upstream`]).
    pub(crate) fn or_restore_upstream<T>(
        &self,
        step: impl FnOnce() -> Result<T, Error>,
    ) -> Result<T, Error> {
        use std::sync::atomic::Ordering;
        let before = self.upstream_state()?;
        self.fetched.store(false, Ordering::Relaxed);
        let result = step();
        if let Err(e) = &result {
            // Only what this command's own fetch changed.
            if e.kind == lockstep_core::ErrorKind::Usage && self.fetched.load(Ordering::Relaxed) {
                self.restore_upstream(&before);
            }
        }
        result
    }

    /// What [`Integrate::fetch_upstream`] would do, for commands that do not
    /// fetch unless asked.
    pub fn fetch_plan(&self) -> Result<String, Error> {
        let remote = &self.cfg.upstream_remote;
        let branch = &self.cfg.upstream_branch;
        // URLs are printed without `user:password@`.
        let plain = |u: &String| without_userinfo(u);
        let configured = self.cfg.upstream_url.as_ref().map(plain);
        let existing = self.sub.remote_url(remote)?;
        let same = self.cfg.upstream_url == existing;
        let existing = existing.as_ref().map(plain);
        let history = self.pin.history_name();
        Ok(match (configured, existing) {
            (Some(url), None) => format!(
                "add the remote `{remote}` ({url}) to {history} and fetch its `{branch}`"
            ),
            (Some(url), Some(existing)) if !same => format!(
                "point the remote `{remote}` of {history} at {url} (now {existing}) and fetch its `{branch}`"
            ),
            (_, Some(_)) => format!("fetch `{branch}` of the remote `{remote}` of {history}"),
            (None, None) => format!(
                "nothing: {history} has no remote `{remote}` and no [integrate] upstream-url is set"
            ),
        })
    }

    /// Makes sure the upstream remote exists (from `upstream-url`) and fetches it.
    pub fn fetch_upstream(&self) -> Result<(), Error> {
        self.fetched
            .store(true, std::sync::atomic::Ordering::Relaxed);
        let remote = &self.cfg.upstream_remote;
        match (&self.cfg.upstream_url, self.sub.remote_url(remote)?) {
            (Some(url), _) => self
                .sub
                .ensure_remote(remote, url)
                .map_err(|e| self.without_credentials(e))?,
            (None, Some(_)) => {}
            (None, None) => {
                return Err(Error::usage(format!(
                    "{} has no remote `{remote}` and no upstream-url is configured",
                    self.pin.history_name()
                ))
                .hint("set [integrate] upstream-url in lockstep.toml, or add the remote with `git remote add`"))
            }
        }
        self.info(format!("fetching {remote}"));
        let refspec = format!(
            "+refs/heads/{b}:refs/remotes/{remote}/{b}",
            b = self.cfg.upstream_branch
        );
        self.sub
            .fetch(remote, &[&refspec])
            .map_err(|e| self.without_credentials(e))
    }

    /// `err` with the configured upstream URL's `user:password@` taken out
    /// wherever git quoted it.
    fn without_credentials(&self, mut err: Error) -> Error {
        let Some(url) = &self.cfg.upstream_url else {
            return err;
        };
        let plain = without_userinfo(url);
        if plain == *url {
            return err;
        }
        err.message = err.message.replace(url.as_str(), &plain);
        for cause in &mut err.causes {
            *cause = cause.replace(url.as_str(), &plain);
        }
        err
    }

    /// The upstream commit recorded in the superproject's HEAD.
    pub fn pin(&self) -> Result<Oid, Error> {
        self.pin_at("HEAD")
    }

    /// The upstream commit recorded in the superproject's commit `rev`.
    pub fn pin_at(&self, rev: &str) -> Result<Oid, Error> {
        self.pin.read_at(&self.superproject, rev)
    }

    /// Superproject changes other than the submodule pointer and this
    /// command's own untracked outputs, as `XY path` lines.
    pub fn superproject_dirt(&self) -> Result<Vec<String>, Error> {
        Ok(self
            .superproject
            .dirty()?
            .into_iter()
            .filter(|d| d.path != self.pin_path())
            .filter(|d| !(d.code == "??" && self.is_own_output(self.superproject.dir(), &d.path)))
            .map(|d| format!("{} {}", d.code, d.path))
            .collect())
    }

    /// Refuses to act on uncommitted work, naming the files.
    pub fn require_clean(&self) -> Result<(), Error> {
        let dirt = self.superproject_dirt()?;
        if !dirt.is_empty() {
            return Err(dirty_error(self.superproject.dir(), &dirt));
        }
        let pin = self.pin.dirt(&self.superproject)?;
        let pin_dirt: Vec<String> = pin
            .entries
            .into_iter()
            .filter(|d| !(d.code == "??" && self.is_own_output(&pin.dir, &d.path)))
            .map(|d| format!("{} {}", d.code, d.path))
            .collect();
        if !pin_dirt.is_empty() {
            return Err(dirty_error(&pin.dir, &pin_dirt));
        }
        Ok(())
    }

    /// The superproject's current branch, required for commits and exports.
    pub fn branch(&self) -> Result<String, Error> {
        self.superproject.current_branch()?.ok_or_else(|| {
            Error::usage("the superproject's HEAD is detached").hint(
                "check out the integrate branch (or start one with `lockstep integrate start`)",
            )
        })
    }

    /// Directory name of the superproject (`{repo}` in the export branch).
    pub fn repo_name(&self) -> String {
        self.superproject
            .dir()
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "repo".into())
    }

    /// A new directory for one run's logs and reports.
    pub fn run_dir(&self, label: &str) -> Result<PathBuf, Error> {
        let stamp = jiff::Timestamp::now().strftime("%Y%m%dT%H%M%S").to_string();
        let base = self.state_dir.join("runs");
        for n in 0..MAX_RUNS_PER_SECOND {
            let dir = base.join(if n == 0 {
                format!("{stamp}-{label}")
            } else {
                format!("{stamp}-{label}-{n}")
            });
            if !dir.exists() {
                fs_err::create_dir_all(&dir)?;
                return Ok(dir);
            }
        }
        Err(Error::failed(format!(
            "{} already holds {MAX_RUNS_PER_SECOND} run directories named {stamp}-{label}",
            base.display()
        ))
        .hint("remove old run directories there, then rerun"))
    }

    /// The variables a smoke receives for a probe of `commit` (its patched
    /// head `head`, its log `log`); the halt report's reproduce steps set the
    /// same ones.
    pub(crate) fn probe_env(
        &self,
        commit: &lockstep_git::Commit,
        head: &str,
        log: &std::path::Path,
    ) -> Vec<(String, String)> {
        let mut env = vec![
            ("LOCKSTEP_PROBE_COMMIT".to_string(), commit.sha.clone()),
            ("LOCKSTEP_PROBE_SUBJECT".to_string(), commit.subject.clone()),
            ("LOCKSTEP_PROBE_HEAD".to_string(), head.to_string()),
        ];
        env.extend(self.pin.smoke_env());
        env.extend([
            (
                "LOCKSTEP_SUPERPROJECT".to_string(),
                self.superproject.dir().display().to_string(),
            ),
            ("LOCKSTEP_LOG".to_string(), log.display().to_string()),
        ]);
        env
    }

    /// Link to an upstream commit, when `commit-url` is configured.
    /// It is printed in reports and events: without `user:password@`.
    pub fn commit_link(&self, sha: &str) -> Option<String> {
        self.cfg
            .commit_url
            .as_ref()
            .map(|u| without_userinfo(&u.replace("{sha}", sha)))
    }
}

/// Archive checksums remembered in the store by URL (an archive of one
/// commit does not change), downloaded once.
pub(crate) struct StoredChecksums<'s> {
    store: &'s Store,
    downloads: lockstep_pin::Downloads,
}

impl lockstep_pin::Checksums for StoredChecksums<'_> {
    fn sha256(&self, url: &str) -> Result<String, Error> {
        let key = format!("pin-archive-sha256:{url}");
        if let Some(sum) = self.store.get::<String>(&key)? {
            return Ok(sum);
        }
        let sum = self.downloads.sha256(url)?;
        self.store.set(&key, &sum)?;
        Ok(sum)
    }
}

fn dirty_error(dir: &Path, dirt: &[String]) -> Error {
    let mut err = Error::usage(format!(
        "{} has uncommitted changes; lockstep never discards them",
        dir.display()
    ));
    for line in dirt.iter().take(20) {
        err = err.cause(line.clone());
    }
    if dirt.len() > 20 {
        err = err.cause(format!("... and {} more", dirt.len() - 20));
    }
    err.hint("commit or stash them (`git stash -u`), then rerun")
}
