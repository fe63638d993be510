//! The scheduled stages of the pipeline: what `[ci.release]` and
//! `[ci.integrate]` resolve to, checked before anything is written.
//!
//! The release workflow needs `[release]` (what to cut and where the index
//! is), the integrate workflow `[integrate]`; a schedule must be a cron
//! expression GitHub accepts (5 fields, UTC, at least 5 minutes apart), and
//! everything that reaches YAML is bounded here like the rest of the plan.

use std::path::PathBuf;

use lockstep_core::Error;

use crate::checks::{inside, timeout};
use crate::config::CiConfig;
use crate::cron::Schedule;

/// What the release workflow needs to know of `[release]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseFacts {
    /// `[release] pin-files` is not empty: the workflow bumps them first.
    pub bumps_pins: bool,
    /// `[release] index`, relative to lockstep.toml's directory.
    pub index: PathBuf,
    /// `[release] hosting = "github-releases"`: the files are Release
    /// assets, the store is rebuilt from them when the cache misses.
    pub hosted_on_github: bool,
    /// `[release] keep` is set: the workflow prunes after publishing.
    pub prunes: bool,
    /// `[release] branches`: prune reads their pins, so the job fetches them.
    pub branches: Vec<String>,
}

/// `lockstep-release.yml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReleaseStage {
    pub schedule: String,
    /// What scheduled runs cut: `snapshot` or `candidate`.
    pub channel: String,
    pub bumps_pins: bool,
    /// The release index, relative to the working directory (`/`-separated).
    pub index: String,
    pub pages: bool,
    pub github_release: bool,
    pub hosted_on_github: bool,
    pub prunes: bool,
    /// `[ci.release] pypi`.
    pub pypi: bool,
    /// `[release] branches`, checked as plain branch names.
    pub branches: Vec<String>,
    pub timeout_minutes: u32,
}

/// What the integrate workflow needs to know of `[integrate]`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct IntegrateFacts {
    /// `[integrate] submodule` (none with a pin file).
    pub submodule: Option<String>,
    /// Each `[[integrate.follow]] submodule`.
    pub followers: Vec<String>,
    /// `[integrate] smoke-submodules`.
    pub smoke_submodules: Vec<String>,
}

/// How a submodule is fetched (`[ci.integrate] submodules`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fetch {
    Full,
    /// Every commit and tree, blobs on demand (`--filter=blob:none`).
    Blobless,
    Depth(u32),
}

/// The most submodules `[ci.integrate] submodules` may list.
const MAX_SUBMODULES: usize = 100;

/// `lockstep-integrate.yml`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntegrateStage {
    pub schedule: String,
    pub timeout_minutes: u32,
    /// The secret with a token whose pushes start CI; `None`: the job's
    /// `GITHUB_TOKEN`.
    pub token_secret: Option<String>,
    /// The submodules checked out, in path order, with how much history.
    pub submodules: Vec<(String, Fetch)>,
}

/// The channels a workflow may cut (a final is promoted, never scheduled).
pub const CHANNELS: [&str; 2] = ["snapshot", "candidate"];

/// `[ci.release]`, when configured.
pub fn release(ci: &CiConfig, facts: Option<&ReleaseFacts>) -> Result<Option<ReleaseStage>, Error> {
    let Some(cfg) = &ci.release else {
        return Ok(None);
    };
    let Some(facts) = facts else {
        return Err(Error::usage(
            "[ci.release] needs a [release] table: the workflow cuts, publishes and indexes what [release] describes",
        )
        .hint("add [release] (docs/release.md), or remove [ci.release]"));
    };
    let schedule = schedule("[ci.release] schedule", &cfg.schedule)?;
    if !CHANNELS.contains(&cfg.channel.as_str()) {
        return Err(Error::usage(format!(
            "[ci.release] channel = \"{}\" is not a channel a schedule cuts",
            cfg.channel.escape_debug()
        ))
        .hint(
            "use \"snapshot\" or \"candidate\" (a final is made with `lockstep release promote`)",
        ));
    }
    let index = inside("[release] index", &facts.index).map_err(|e| {
        if cfg.pages {
            e.context(
                "[ci.release] pages deploys the release index, which must be inside the repository",
            )
        } else {
            e
        }
    })?;
    Ok(Some(ReleaseStage {
        schedule,
        channel: cfg.channel.clone(),
        bumps_pins: facts.bumps_pins,
        index,
        pages: cfg.pages,
        github_release: cfg.github_release || facts.hosted_on_github,
        hosted_on_github: facts.hosted_on_github,
        prunes: facts.prunes,
        pypi: cfg.pypi,
        branches: branches(&facts.branches)?,
        timeout_minutes: timeout("[ci.release] timeout-minutes", cfg.timeout_minutes)?,
    }))
}

/// `[release] branches` go into the prune step's script: plain branch names
/// only.
fn branches(names: &[String]) -> Result<Vec<String>, Error> {
    for name in names {
        let plain = !name.is_empty()
            && name.len() <= 200
            && !name.starts_with(['-', '/', '.'])
            && !name.contains("..")
            && name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
        if !plain {
            return Err(Error::usage(format!(
                "[release] branches: `{}` is not a branch name the release workflow fetches",
                name.escape_debug()
            ))
            .hint("letters, digits, `-`, `_`, `.` and `/`, e.g. \"main\" or \"release/3.4\""));
        }
    }
    Ok(names.to_vec())
}

/// `[ci.integrate]`, when it has a schedule.
pub fn integrate(
    ci: &CiConfig,
    facts: Option<&IntegrateFacts>,
) -> Result<Option<IntegrateStage>, Error> {
    let Some(cfg) = &ci.integrate else {
        return Ok(None);
    };
    let Some(expr) = &cfg.schedule else {
        return Ok(None);
    };
    let Some(facts) = facts else {
        return Err(Error::usage(
            "[ci.integrate] needs an [integrate] table: the workflow runs `lockstep integrate loop --publish`",
        )
        .hint("add [integrate] (docs/integrate.md), or remove [ci.integrate]"));
    };
    let schedule = schedule("[ci.integrate] schedule", expr)?;
    if let Some(secret) = &cfg.token_secret {
        let ok = !secret.is_empty()
            && secret.len() <= 100
            && secret
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_')
            && !secret.starts_with(|c: char| c.is_ascii_digit())
            && !secret.to_ascii_uppercase().starts_with("GITHUB_");
        if !ok {
            return Err(Error::usage(format!(
                "[ci.integrate] token-secret = \"{}\" is not a secret name",
                secret.escape_debug()
            ))
            .hint(
                "secret names are letters, digits and `_`, not starting with a digit or GITHUB_",
            ));
        }
    }
    Ok(Some(IntegrateStage {
        schedule,
        timeout_minutes: timeout("[ci.integrate] timeout-minutes", cfg.timeout_minutes)?,
        token_secret: cfg.token_secret.clone(),
        submodules: integrate_submodules(cfg.submodules.as_ref(), facts)?,
    }))
}

/// `[ci.integrate] submodules` checked, or its default from `[integrate]`.
fn integrate_submodules(
    configured: Option<&std::collections::BTreeMap<String, crate::config::SubmoduleHistory>>,
    facts: &IntegrateFacts,
) -> Result<Vec<(String, Fetch)>, Error> {
    let key = "[ci.integrate] submodules";
    let wanted: Vec<(String, Fetch)> = match configured {
        None => {
            let mut all: std::collections::BTreeMap<String, Fetch> = facts
                .followers
                .iter()
                .chain(&facts.smoke_submodules)
                .map(|p| (p.clone(), Fetch::Depth(1)))
                .collect();
            if let Some(sub) = &facts.submodule {
                all.insert(sub.clone(), Fetch::Blobless);
            }
            all.into_iter().collect()
        }
        Some(configured) => {
            if configured.len() > MAX_SUBMODULES {
                return Err(Error::usage(format!(
                    "{key} lists {} submodules; at most {MAX_SUBMODULES} are allowed",
                    configured.len()
                )));
            }
            configured
                .iter()
                .map(|(path, history)| Ok((path.clone(), fetch_of(key, path, history)?)))
                .collect::<Result<_, Error>>()?
        }
    };
    wanted
        .into_iter()
        .map(|(path, fetch)| Ok((submodule_path(key, &path)?, fetch)))
        .collect()
}

/// A submodule path the workflow's script can name as it is.
fn submodule_path(key: &str, path: &str) -> Result<String, Error> {
    let safe = path.len() <= 255
        && path
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "/._-+@".contains(c));
    if !safe {
        return Err(Error::usage(format!(
            "{key}: `{}` is not a submodule path this workflow can name",
            lockstep_core::error::printable(path)
        ))
        .hint("give the submodule's path in the superproject (letters, digits and / . _ - + @, at most 255 bytes)"));
    }
    inside(key, std::path::Path::new(path))
}

fn fetch_of(
    key: &str,
    path: &str,
    history: &crate::config::SubmoduleHistory,
) -> Result<Fetch, Error> {
    use crate::config::SubmoduleHistory;
    match history {
        SubmoduleHistory::Named(n) if n == "full" => Ok(Fetch::Full),
        SubmoduleHistory::Named(n) if n == "blobless" => Ok(Fetch::Blobless),
        SubmoduleHistory::Depth(d) if (1..=1_000_000).contains(d) => Ok(Fetch::Depth(*d as u32)),
        other => {
            let shown = match other {
                SubmoduleHistory::Depth(d) => d.to_string(),
                SubmoduleHistory::Named(n) => format!("\"{}\"", n.escape_debug()),
            };
            Err(Error::usage(format!(
                "{key}: `{}` = {shown} is not a history to fetch",
                lockstep_core::error::printable(path)
            ))
            .hint("use \"full\", \"blobless\" (every commit, files fetched when read) or a depth from 1 to 1000000"))
        }
    }
}

/// A schedule GitHub accepts, normalised to single spaces.
fn schedule(key: &str, expr: &str) -> Result<String, Error> {
    match Schedule::parse(expr) {
        Ok(_) => Ok(expr.split_whitespace().collect::<Vec<_>>().join(" ")),
        Err(e) => Err(Error::usage(format!(
            "{key} = \"{}\" is not a schedule GitHub runs",
            expr.escape_debug()
        ))
        .cause(e.to_string())
        .hint("write 5 fields, minute hour day-of-month month day-of-week, in UTC, at least 5 minutes apart: \"0 5 * * *\" is 05:00 UTC every day")),
    }
}

/// The next `n` runs of a valid schedule after now, as `YYYY-MM-DD HH:MM UTC`.
pub fn next_runs(expr: &str, n: usize) -> Vec<String> {
    let Ok(schedule) = Schedule::parse(expr) else {
        return Vec::new();
    };
    schedule
        .next_runs(jiff::Timestamp::now(), n)
        .into_iter()
        .map(|t| t.strftime("%Y-%m-%d %H:%M UTC").to_string())
        .collect()
}
