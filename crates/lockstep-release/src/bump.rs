//! `lockstep release bump`: move every pin of the project (`[release]
//! pin-files`, and `[integrate]`'s pin of any kind: a submodule, a pin
//! file, a pin inside a larger file with its archive's checksum) to
//! upstream's head (or `--to`), in one commit, only when something changed.
//!
//! Upstream's head is read with `git ls-remote` (no clone). With a smoke
//! (a [`Probe`]: [`CommandSmoke`], or the integrate engine's prober when
//! the one pin is `[integrate]`'s) the new pins are tried first and a
//! failing bump is not committed: the pins are put back as they were. The
//! working tree must have no changes to tracked files, so the commit holds
//! the pins and nothing else.

use std::path::PathBuf;
use std::time::Duration;

use lockstep_bisect::{Probe, Tried, Verdict};
use lockstep_core::process::{self, Spec};
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_pin::{Downloads, Pin};
use serde::Serialize;

pub struct BumpRequest<'a> {
    pub repo: &'a Repo,
    /// The pins to move (`Settings::pins`).
    pub pins: &'a [Pin],
    pub upstream_url: Option<&'a str>,
    pub upstream_branch: &'a str,
    /// `--to`: a full revision, or a ref name upstream has.
    pub to: Option<&'a str>,
}

/// The plain smoke of `release bump --smoke`: `[integrate] smoke` run in
/// the repository with every pin put at the new revision.
pub struct CommandSmoke {
    pub repo: Repo,
    pub pins: Vec<Pin>,
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub log: PathBuf,
}

impl CommandSmoke {
    /// `argv` run at the top of `repo` within `timeout`, logged in its git
    /// directory (`lockstep/release-bump-smoke.log`).
    pub fn in_repo(
        repo: &Repo,
        pins: &[Pin],
        argv: Vec<String>,
        timeout: Duration,
    ) -> Result<CommandSmoke, Error> {
        Ok(CommandSmoke {
            repo: repo.clone(),
            pins: pins.to_vec(),
            argv,
            timeout,
            log: repo
                .git_dir()?
                .join(lockstep_git::STATE_DIR)
                .join("release-bump-smoke.log"),
        })
    }
}

/// Checks `bump --smoke` before anything moves: when the one pin to move
/// is `[integrate]`'s (`integrate`), the integrate engine's prober moves
/// it; otherwise `[integrate] smoke` (`argv`) must be set.
pub fn check_smoke(integrate: Option<&Pin>, pins: &[Pin], argv: &[String]) -> Result<(), Error> {
    if uses_integrate_prober(integrate, pins) {
        return Ok(());
    }
    if let Some(pin) = integrate.filter(|p| pins.iter().any(|q| q.path() == p.path())) {
        return Err(Error::usage(format!(
            "`bump --smoke` moves {} through the integrate engine, but [release] pin-files lists other pins too",
            pin.describe()
        ))
        .hint("bump the integrate pin on its own (drop the other pin files), or smoke them with [integrate] smoke after a pin of their own"));
    }
    if argv.is_empty() {
        return Err(Error::usage("--smoke needs [integrate] smoke")
            .hint("set smoke = [\"cmd\", \"arg\"] under [integrate]"));
    }
    Ok(())
}

/// Whether `bump --smoke` tries the new revision with the integrate
/// engine's prober: `pins` is exactly `[integrate]`'s pin.
pub fn uses_integrate_prober(integrate: Option<&Pin>, pins: &[Pin]) -> bool {
    matches!((integrate, pins), (Some(i), [only]) if i.path() == only.path())
}

impl Probe for CommandSmoke {
    fn probe(&mut self, rev: &str) -> Result<Tried, Error> {
        for pin in &self.pins {
            let held = pin.read_at(&self.repo, "HEAD")?;
            pin.put(&self.repo, rev, &[&held], &Downloads::default())?;
        }
        let finished = process::run(
            &Spec {
                argv: self.argv.clone(),
                cwd: self.repo.dir().to_path_buf(),
                env: Vec::new(),
                timeout: Some(self.timeout),
                log: self.log.clone(),
                header: Some(format!("$ {}\n", self.argv.join(" "))),
            },
            |_| {},
        )?;
        Ok(Tried {
            verdict: Verdict::from_exit(finished.exit),
            cached: false,
            log: Some(self.log.display().to_string()),
        })
    }
}

#[derive(Debug, Clone, Serialize)]
pub struct Bumped {
    pub to: String,
    pub changed: Vec<String>,
    pub commit: Option<String>,
    pub smoke: Option<String>,
}

/// Bumps; with `smoke`, the new revision is tried first.
pub fn bump(req: &BumpRequest, smoke: Option<&mut dyn Probe>) -> Result<Bumped, Error> {
    if req.pins.is_empty() {
        return Err(Error::usage("[release] pin-files is empty and there is no [integrate] pin: nothing to bump")
            .hint("list the files holding upstream revisions, e.g. pin-files = [\"llvm-project.version\"], or configure [integrate]'s pin"));
    }
    req.repo.require_clean_tracked()?;
    // Every pin is read and checked before upstream is asked anything.
    let mut current = Vec::new();
    for pin in req.pins {
        let held = pin.checked_out(req.repo).map_err(|e| {
            e.context(format!("cannot read {}", pin.describe()))
                .hint(format!(
                    "commit it holding one 40-hex revision, or fix {}",
                    pin.setting()
                ))
        })?;
        current.push((pin, held));
    }
    let to = target(req)?;
    let changed: Vec<(&Pin, String)> = current.into_iter().filter(|(_, rev)| *rev != to).collect();
    if changed.is_empty() {
        return Ok(Bumped {
            to,
            changed: Vec::new(),
            commit: None,
            smoke: None,
        });
    }
    let checksums = Downloads::default();
    // Each pin back to where it was on its own, so one failure cannot keep
    // the others; the index too.
    let restore = |why: Error| {
        for (pin, held) in &changed {
            let _ = req.repo.try_git(&["reset", "-q", "--", pin.path()]);
            let _ = pin.put(req.repo, held, &[&to, held], &checksums);
        }
        why
    };
    let mut tried = None;
    if let Some(smoke) = smoke {
        let result = smoke.probe(&to).map_err(restore)?;
        if result.verdict != Verdict::Good {
            return Err(restore(
                Error::failed(format!(
                    "the smoke command is {} on {to}{}; the bump is not committed",
                    result.verdict.as_str(),
                    if result.cached { " (a cached verdict)" } else { "" }
                ))
                .cause(format!("log: {}", result.log.as_deref().unwrap_or("none (cached)")))
                .hint("the pins are back as they were; fix the breakage, or bump with --to an earlier revision (`lockstep integrate loop` finds the last good one)"),
            ));
        }
        tried = Some(result.verdict.as_str().to_string());
    }
    for (pin, held) in &changed {
        pin.put(req.repo, &to, &[held, &to], &checksums)
            .and_then(|_| pin.stage(req.repo, &to, &checksums))
            .map_err(restore)?;
    }
    let name = changed
        .first()
        .and_then(|(p, _)| std::path::Path::new(p.path()).file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "upstream".into());
    let message = format!("Bump {name} to {to}");
    // The tree was clean before: the index holds the pins and nothing else.
    req.repo.commit_staged(&message, false).map_err(restore)?;
    Ok(Bumped {
        to,
        changed: changed.iter().map(|(p, _)| p.path().to_string()).collect(),
        commit: Some(req.repo.head()?.to_string()),
        smoke: tried,
    })
}

/// `--to` (a full revision as is; a name resolved upstream), else upstream's head.
fn target(req: &BumpRequest) -> Result<String, Error> {
    if let Some(to) = req.to {
        if to.len() == 40 && to.bytes().all(|b| b.is_ascii_hexdigit()) {
            return Ok(to.to_ascii_lowercase());
        }
    }
    let url = req.upstream_url.ok_or_else(|| {
        Error::usage("[release] upstream-url is unset")
            .hint("set it, or pass --to with a full 40-hex revision")
    })?;
    let refs: Vec<String> = match req.to {
        Some(name) => vec![
            format!("refs/heads/{name}"),
            format!("refs/tags/{name}^{{}}"),
            format!("refs/tags/{name}"),
        ],
        None => vec![format!("refs/heads/{}", req.upstream_branch)],
    };
    let listed = req.repo.try_git(&["ls-remote", "--", url])?;
    if listed.code != 0 {
        return Err(Error::failed(format!(
            "cannot read upstream {}",
            crate::upload::without_userinfo(url)
        ))
        .cause(listed.stderr.trim().to_string())
        .hint("check [release] upstream-url and network access"));
    }
    for want in &refs {
        for line in listed.stdout.lines() {
            if let Some((sha, name)) = line.split_once('\t') {
                if name == want && sha.len() == 40 {
                    return Ok(sha.to_string());
                }
            }
        }
    }
    Err(Error::usage(format!(
        "upstream {url} has no {}",
        refs[0].trim_start_matches("refs/heads/")
    ))
    .hint("check [release] upstream-branch, or --to"))
}
