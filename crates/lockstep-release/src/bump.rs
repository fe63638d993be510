//! `lockstep release bump`: move every pin file to upstream's head (or
//! `--to`), in one commit, only when something changed.
//!
//! Upstream's head is read with `git ls-remote` (no clone). With a smoke
//! (a [`Probe`]: [`CommandSmoke`], or the integrate engine's prober for a
//! pin-file integrate) the new pins are tried first and a failing bump is
//! not committed: the pin files are put back as they were. The working
//! tree must have no changes to tracked files, so the commit holds the pin
//! files and nothing else.

use std::path::{Path, PathBuf};
use std::time::Duration;

use lockstep_bisect::{Probe, Tried, Verdict};
use lockstep_core::process::{self, Spec};
use lockstep_core::Error;
use lockstep_git::Repo;
use lockstep_pin::Pin;
use serde::Serialize;

pub struct BumpRequest<'a> {
    pub repo: &'a Repo,
    /// Pin files relative to the repository's top.
    pub pin_files: &'a [String],
    pub upstream_url: Option<&'a str>,
    pub upstream_branch: &'a str,
    /// `--to`: a full revision, or a ref name upstream has.
    pub to: Option<&'a str>,
}

/// The plain smoke of `release bump --smoke`: `[integrate] smoke` run in
/// the repository with every pin file set to the new revision.
pub struct CommandSmoke {
    pub top: PathBuf,
    pub pin_files: Vec<String>,
    pub argv: Vec<String>,
    pub timeout: Duration,
    pub log: PathBuf,
}

impl CommandSmoke {
    /// `argv` run at the top of `repo` within `timeout`, logged in its git
    /// directory (`lockstep/release-bump-smoke.log`).
    pub fn in_repo(
        repo: &Repo,
        pin_files: &[String],
        argv: Vec<String>,
        timeout: Duration,
    ) -> Result<CommandSmoke, Error> {
        Ok(CommandSmoke {
            top: repo.dir().into(),
            pin_files: pin_files.to_vec(),
            argv,
            timeout,
            log: repo
                .git_dir()?
                .join(lockstep_git::STATE_DIR)
                .join("release-bump-smoke.log"),
        })
    }
}

/// Checks `bump --smoke` before anything moves: with `[integrate]
/// pin-file` (`pin_file`), that file must be the one pin file (the
/// integrate engine's prober moves it); otherwise `[integrate] smoke`
/// (`argv`) must be set.
pub fn check_smoke(
    pin_file: Option<&str>,
    pin_files: &[String],
    argv: &[String],
) -> Result<(), Error> {
    match pin_file {
        Some(file) if pin_files != [file] => Err(Error::usage(format!(
            "with [integrate] pin-file = \"{file}\", `bump --smoke` moves that file through the integrate engine"
        ))
        .hint(format!("set [release] pin-files = [\"{file}\"]"))),
        None if argv.is_empty() => Err(Error::usage("--smoke needs [integrate] smoke")
            .hint("set smoke = [\"cmd\", \"arg\"] under [integrate]")),
        _ => Ok(()),
    }
}

impl Probe for CommandSmoke {
    fn probe(&mut self, rev: &str) -> Result<Tried, Error> {
        write_pins(&self.top, &self.pin_files, rev)?;
        let finished = process::run(
            &Spec {
                argv: self.argv.clone(),
                cwd: self.top.clone(),
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

fn write_pins(top: &Path, pin_files: &[String], rev: &str) -> Result<(), Error> {
    for path in pin_files {
        Pin::file(path, "[release] pin-files")?.write(top, rev, &NoChecksums)?;
    }
    Ok(())
}

/// Pin files carry no checksum.
struct NoChecksums;

impl lockstep_pin::Checksums for NoChecksums {
    fn sha256(&self, url: &str) -> Result<String, Error> {
        Err(Error::failed(format!(
            "internal: a pin file asked for the checksum of {url}"
        )))
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
    if req.pin_files.is_empty() {
        return Err(Error::usage("[release] pin-files is empty: nothing to bump")
            .hint("list the files holding upstream revisions, e.g. pin-files = [\"llvm-project.version\"]"));
    }
    req.repo.require_clean_tracked()?;
    // Every pin file is read and checked before upstream is asked anything.
    let top = Path::new(req.repo.dir());
    let mut current = Vec::new();
    for path in req.pin_files {
        let pin = Pin::file(path, "[release] pin-files")?;
        let held = pin.read_worktree(top).map_err(|e| {
            e.context(format!("cannot read pin file {path}")).hint(
                "create it with one 40-hex revision and commit it, or fix [release] pin-files",
            )
        })?;
        current.push((path, held));
    }
    let to = target(req)?;
    let changed: Vec<String> = current
        .into_iter()
        .filter(|(_, rev)| *rev != to)
        .map(|(path, _)| path.clone())
        .collect();
    if changed.is_empty() {
        return Ok(Bumped {
            to,
            changed,
            commit: None,
            smoke: None,
        });
    }
    // Each file back from HEAD on its own, so one failure cannot keep the others.
    let restore = |why: Error| {
        for path in &changed {
            let _ = req.repo.try_git(&["checkout", "HEAD", "--", path]);
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
                .hint("the pin files are back as they were; fix the breakage, or bump with --to an earlier revision (`lockstep integrate loop` finds the last good one)"),
            ));
        }
        tried = Some(result.verdict.as_str().to_string());
    }
    write_pins(top, &changed, &to).map_err(restore)?;
    let name = changed
        .first()
        .and_then(|p| Path::new(p).file_stem())
        .map(|s| s.to_string_lossy().into_owned())
        .unwrap_or_else(|| "upstream".into());
    let message = format!("Bump {name} to {to}");
    let mut add = vec!["add", "--"];
    add.extend(changed.iter().map(String::as_str));
    req.repo.git(&add).map_err(restore)?;
    // The tree was clean before: the index holds the pin files and nothing else.
    req.repo.commit_staged(&message, false).map_err(restore)?;
    Ok(Bumped {
        to,
        changed,
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
