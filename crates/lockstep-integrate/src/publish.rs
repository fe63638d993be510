//! `integrate publish` (and `loop --publish`): the integrate reaches review
//! by itself. The integrate branch is pushed to the remote `[integrate]
//! base` names (never forced: a rejected push is fetched and reported), and
//! one draft pull request is opened for it, or updated when it exists,
//! through the GitHub REST API. Its body is generated from the repository:
//! the upstream range with links, the affecting commits taken, the carried
//! patches (and those dropped because upstream landed them), the carried
//! reverts with their reasons, the smoke runs of the last loop against what
//! one smoke per commit would have cost, and the halt when there is one (the
//! title then says the integrate needs help).
//!
//! On a halt, [`crate::publish::call_for_help`] posts the halt report to the
//! configured webhook once per halt: a rerun of the loop that halts at the
//! same culprit from the same superproject commit does not post again.
//!
//! Everything that can be checked is checked before anything is pushed:
//! the branch (not the base branch itself), the remote, the repository
//! name, the token. The token comes from the variable `[integrate.github]
//! token-env` names and goes to the API host only (lockstep-github).

use lockstep_core::Error;
use lockstep_git::Commit;
use lockstep_github::pulls::{NewPull, PullRequest};
use lockstep_github::{Client, Repo, Token};
use serde::{Deserialize, Serialize};

use crate::halt::{short, Halt};
use crate::status::Patch;
use crate::Integrate;

/// The store record of the integrate's pull request.
const PULL_RECORD: &str = "github_pull";
/// The store record of the last halt posted to the webhook.
const POSTED_RECORD: &str = "posted_halt";
/// The store record of the smoke counts of an integrate branch's loops
/// (for the PR body), `loop_cost:BRANCH`.
const LOOP_RECORD: &str = "loop_cost";
/// Commits listed in the body before `... and N more` (GitHub caps a body
/// at 65,536 characters).
const MAX_LISTED: usize = 100;
/// The most characters of a body sent (GitHub's limit is 65,536).
const MAX_BODY: usize = 60_000;

/// What an integrate branch's loops cost so far, kept for the pull
/// request's body.
#[derive(Debug, Clone, Default, Serialize, Deserialize, PartialEq, Eq)]
pub struct LoopCost {
    /// Smoke processes started.
    pub smoke_runs: usize,
    /// Verdicts taken from the store.
    pub cached: usize,
    /// Loops run.
    pub loops: usize,
}

/// What `integrate publish` did.
#[derive(Debug, Clone, Serialize)]
pub struct Published {
    pub repository: String,
    pub remote: String,
    pub branch: String,
    /// The commit pushed.
    pub head: String,
    /// The push changed the remote branch (false: it was there already).
    pub pushed: bool,
    pub pull: PullRequest,
    /// The pull request was opened by this run (else updated).
    pub created: bool,
    /// The integrate is halted: the title asks for help.
    pub needs_help: bool,
    /// With `--ready`: whether the pull request is ready for review now,
    /// and why (or why not).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub ready: Option<Readiness>,
}

/// Whether a draft integrate may be marked ready for review.
#[derive(Debug, Clone, Serialize, PartialEq, Eq)]
#[serde(tag = "state", content = "reason", rename_all = "kebab-case")]
pub enum Readiness {
    /// At upstream head with green checks: marked ready (or already was).
    Ready,
    /// Upstream has commits the pin does not take yet.
    Behind(usize),
    /// Halted: it needs a person first.
    Halted,
    /// The checks of the pushed head have not all finished.
    ChecksPending,
    /// A check failed (or gave no verdict): named.
    ChecksFailing(String),
    /// `[integrate] final-checks` found this many failures to fix first.
    FinalChecksFailing(usize),
}

impl Readiness {
    /// The pull request body's line.
    fn line(&self) -> String {
        match self {
            Readiness::Ready => {
                "**Ready for review**: the pin is at upstream's head and every check passed.".into()
            }
            Readiness::Behind(n) => format!(
                "Still a draft: upstream has {} the pin does not take yet.",
                lockstep_core::words::count(*n, "commit", "commits")
            ),
            Readiness::Halted => "Still a draft: the integrate is halted (see above).".into(),
            Readiness::ChecksPending => {
                "Still a draft: at upstream's head, waiting for the checks of this head to finish."
                    .into()
            }
            Readiness::ChecksFailing(name) => {
                format!("Still a draft: at upstream's head, but checks fail: {name}.")
            }
            Readiness::FinalChecksFailing(n) => format!(
                "Still a draft: the final checks found {} to fix before landing (above).",
                lockstep_core::words::count(*n, "failure", "failures")
            ),
        }
    }
}

/// What the check runs of the pushed head (every page of them) say about
/// leaving draft: ready only when every run completed and passed; the runs
/// that did not pass are named (a run without a name by its id).
pub fn readiness_of_checks(runs: &[lockstep_github::checks::CheckRun]) -> Readiness {
    use lockstep_github::checks::{passed, summarize, Checks};
    match summarize(runs) {
        Checks::Passed => Readiness::Ready,
        Checks::Pending => Readiness::ChecksPending,
        Checks::Failed(name) | Checks::Inconclusive(name) => {
            let mut failing: Vec<String> = runs
                .iter()
                .filter(|r| !passed(r))
                .take(20)
                .map(|r| r.described())
                .collect();
            let more = runs.iter().filter(|r| !passed(r)).count() - failing.len();
            if more > 0 {
                failing.push(format!("and {more} more"));
            }
            if failing.is_empty() {
                failing.push(name);
            }
            Readiness::ChecksFailing(failing.join(", "))
        }
    }
}

/// Where the pull request (or a CI bisect's branches) go: checked before
/// anything is pushed.
pub(crate) struct Target {
    pub client: Client,
    pub repo: Repo,
    pub remote: String,
    pub base_branch: String,
    pub branch: String,
}

/// Adds what a loop cost to its branch's total, for the body of the
/// next publish.
pub fn record_loop_cost(ig: &Integrate, smoke_runs: usize, cached: usize) -> Result<(), Error> {
    let key = format!("{LOOP_RECORD}:{}", ig.branch()?);
    let mut cost: LoopCost = ig.store.get(&key)?.unwrap_or_default();
    cost.smoke_runs += smoke_runs;
    cost.cached += cached;
    cost.loops += 1;
    ig.store.set(&key, &cost)
}

/// `integrate publish`: pushes the branch and opens or updates its
/// draft pull request.
pub fn publish(ig: &Integrate) -> Result<Published, Error> {
    crate::publish::publish_with(ig, false)
}

/// `integrate publish [--ready]`: with `ready`, a draft whose pin is at
/// upstream's head, not halted, and whose pushed head's check runs all
/// passed is marked ready for review (GraphQL); otherwise it stays a
/// draft and its body says why (the failing checks named).
pub fn publish_with(ig: &Integrate, ready: bool) -> Result<Published, Error> {
    let target = crate::publish::publish_target(ig)?;
    let halt = crate::halt::halt(ig)?;
    let (title, mut body) = crate::publish::pull_text(ig, halt.as_ref())?;
    let head = ig.superproject.head()?;
    let readiness = match ready {
        true => Some(crate::publish::readiness(
            ig,
            &target,
            halt.is_some(),
            head.as_ref(),
        )?),
        false => None,
    };
    if let Some(r) = &readiness {
        body.push_str(&format!("\n\n{}\n", r.line()));
    }
    // The API first: a refused token or an unknown repository is found
    // before the push changes anything.
    let existing = target
        .client
        .pull_for_branch(&target.repo, &target.branch)?;
    if let Some(pull) = existing.as_ref().filter(|p| !p.is_open()) {
        return Err(closed_pull(pull, &target));
    }
    let pushed = crate::publish::push_branch(ig, &target, &head)?;
    let (pull, created) = match existing {
        Some(pull) if pull.is_open() => (
            target
                .client
                .update_pull(&target.repo, pull.number, &title, &body)?,
            false,
        ),
        _ => (
            target.client.create_pull(
                &target.repo,
                &NewPull {
                    title: &title,
                    head: &target.branch,
                    base: &target.base_branch,
                    body: &body,
                    draft: ig.cfg.github.draft,
                },
            )?,
            true,
        ),
    };
    let mut pull = pull;
    if readiness == Some(Readiness::Ready) && pull.draft {
        target.client.mark_ready_for_review(&target.repo, &pull)?;
        pull.draft = false;
        ig.info(format!(
            "marked pull request #{} ready for review: at upstream's head, checks green",
            pull.number
        ));
    }
    ig.store.set(PULL_RECORD, &pull)?;
    ig.info(format!(
        "{} pull request #{} of {}{}",
        if created { "opened" } else { "updated" },
        pull.number,
        target.repo,
        pull.html_url
            .as_deref()
            .map(|u| format!(": {u}"))
            .unwrap_or_default()
    ));
    Ok(Published {
        repository: target.repo.to_string(),
        remote: target.remote,
        branch: target.branch,
        head: head.to_string(),
        pushed,
        pull,
        created,
        needs_help: halt.is_some(),
        ready: readiness,
    })
}

/// Whether the integrate at `head` may leave draft (see
/// [`crate::publish::publish_with`]).
fn readiness(
    ig: &Integrate,
    target: &Target,
    halted: bool,
    head: &str,
) -> Result<Readiness, Error> {
    if halted {
        return Ok(Readiness::Halted);
    }
    let position = crate::status::position(ig)?;
    if !position.pending.is_empty() {
        return Ok(Readiness::Behind(position.pending.len()));
    }
    if let Some(checks) = crate::final_checks::final_checks_at_head(ig)? {
        if checks.failures() > 0 {
            return Ok(Readiness::FinalChecksFailing(checks.failures()));
        }
    }
    let runs = target.client.check_runs(&target.repo, head)?;
    Ok(readiness_of_checks(&runs))
}

/// The webhook URL to call for help: the one this run was given, else
/// `$[integrate.notify] url-env` when set and not empty.
pub(crate) fn webhook_url(ig: &Integrate) -> Result<Option<String>, Error> {
    if let Some(url) = &ig.reach.webhook_url {
        return Ok(Some(url.clone()));
    }
    let var = &ig.cfg.notify.url_env;
    match std::env::var(var) {
        Ok(url) => Ok(Some(url).filter(|u| !u.trim().is_empty())),
        Err(std::env::VarError::NotPresent) => Ok(None),
        Err(std::env::VarError::NotUnicode(_)) => Err(Error::usage(format!(
            "the webhook URL in ${var} is not valid UTF-8"
        ))
        .hint(format!("export {var}=<webhook url>"))),
    }
}

/// Posts `halt`'s report to the webhook unless this halt was posted
/// already; returns whether it posted. No webhook configured (its
/// variable unset) is a warning, not an error: the pull request
/// already says the integrate needs help.
pub fn call_for_help(ig: &Integrate, halt: &Halt) -> Result<bool, Error> {
    // The same culprit, kind and superproject commit is the same halt
    // (a rerun that halts there again); a new commit that still fails
    // is news.
    let id = format!(
        "{} {} {}",
        halt.kind.as_str(),
        halt.culprit.sha,
        halt.superproject_head
    );
    if ig.store.get::<String>(POSTED_RECORD)?.as_deref() == Some(id.as_str()) {
        ig.info("the halt was posted already: not posting again");
        return Ok(false);
    }
    let var = &ig.cfg.notify.url_env;
    let Some(url) = crate::publish::webhook_url(ig)? else {
        ig.warn(format!(
            "no webhook to call for help: ${var} is unset ([integrate.notify] url-env)"
        ));
        return Ok(false);
    };
    let report = crate::halt::render(ig, halt);
    let msg = crate::notify::Message {
        content: &report.text,
        errors_txt: &report.errors,
    };
    crate::notify::post_to(ig.cfg.notify.kind, url.trim(), var, &msg)?;
    ig.store.set(POSTED_RECORD, &id)?;
    ig.info(format!("posted the halt report to the webhook in ${var}"));
    Ok(true)
}

/// The integrate branch and the remote and branch `[integrate] base`
/// names (`origin`, `main` for `origin/main`), checked: the remote
/// exists and the superproject is not on the base branch itself.
/// Returns (branch, remote, base branch, remote URL).
pub(crate) fn branch_and_remote(
    ig: &Integrate,
    command: &str,
) -> Result<(String, String, String, String), Error> {
    let branch = ig.branch()?;
    let (remote, base_branch) = crate::publish::base_parts(ig, command)?;
    if branch == base_branch {
        return Err(Error::usage(format!(
            "the superproject is on `{branch}`, the base branch itself: {command} works on an integrate branch"
        ))
        .hint("check out the integrate branch (or start one with `lockstep integrate start`)"));
    }
    let remote_url = crate::publish::remote_url_of(ig, remote)?;
    Ok((
        branch,
        remote.to_string(),
        base_branch.to_string(),
        remote_url,
    ))
}

/// The remote and branch `[integrate] base` names (`origin`, `main`).
fn base_parts<'i>(ig: &'i Integrate<'_>, command: &str) -> Result<(&'i str, &'i str), Error> {
    ig.cfg.base.split_once('/').ok_or_else(|| {
        Error::usage(format!(
            "[integrate] base `{}` names no remote: {command} needs `REMOTE/BRANCH`",
            ig.cfg.base
        ))
        .hint("set [integrate] base to e.g. \"origin/main\"")
    })
}

/// The URL of `remote`, which must exist.
fn remote_url_of(ig: &Integrate, remote: &str) -> Result<String, Error> {
    ig.superproject.remote_url(remote)?.ok_or_else(|| {
        Error::usage(format!(
            "the superproject has no remote `{remote}` ([integrate] base = \"{}\")",
            ig.cfg.base
        ))
        .hint(format!(
            "add it (`git remote add {remote} URL`) or change [integrate] base"
        ))
    })
}

/// The remote, branches, repository and client, all checked.
pub(crate) fn publish_target(ig: &Integrate) -> Result<Target, Error> {
    crate::publish::github_target(ig, "publish")
}

/// [`crate::publish::publish_target`] for `command` (named in errors).
pub(crate) fn github_target(ig: &Integrate, command: &str) -> Result<Target, Error> {
    let (branch, remote, base_branch, remote_url) = crate::publish::branch_and_remote(ig, command)?;
    let (client, repo) = crate::publish::github_client(ig, &remote_url)?;
    Ok(Target {
        client,
        repo,
        remote,
        base_branch,
        branch,
    })
}

/// The API client and repository with the remote and base branch
/// `[integrate] base` names, whatever branch is checked out.
pub(crate) fn github_repo(
    ig: &Integrate,
    command: &str,
) -> Result<(Client, Repo, String, String), Error> {
    let (remote, base_branch) = crate::publish::base_parts(ig, command)?;
    let remote_url = crate::publish::remote_url_of(ig, remote)?;
    let (client, repo) = crate::publish::github_client(ig, &remote_url)?;
    Ok((client, repo, remote.to_string(), base_branch.to_string()))
}

fn github_client(ig: &Integrate, remote_url: &str) -> Result<(Client, Repo), Error> {
    let token = match &ig.reach.token {
        Some(token) => token.clone(),
        None => crate::publish::token(ig)?,
    };
    let client = match &ig.reach.api_url {
        Some(api) => Client::new(api, Some(token))?,
        None => Client::with_token(Some(token))?,
    };
    let repo = lockstep_github::repo::resolve(
        ig.cfg.github.repository.as_deref(),
        Some(remote_url),
        &client.web_host(),
    )
    .map_err(|e| e.hint("set [integrate.github] repository = \"OWNER/NAME\" in lockstep.toml"))?;
    Ok((client, repo))
}

/// The token from `[integrate.github] token-env` (for the default
/// `GITHUB_TOKEN`, `GH_TOKEN` too), or a usage error naming it.
fn token(ig: &Integrate) -> Result<Token, Error> {
    let var = ig.cfg.github.token_env.as_str();
    let vars: &[&str] = if var == "GITHUB_TOKEN" {
        &["GITHUB_TOKEN", "GH_TOKEN"]
    } else {
        &[var]
    };
    Token::from_vars(vars).ok_or_else(|| {
        Error::usage(format!(
            "no GitHub token: ${var} is unset ([integrate.github] token-env)"
        ))
        .hint(format!(
            "export {var} with a token that may push branches and open pull requests (contents: write, pull-requests: write); nothing was pushed"
        ))
    })
}

/// Pushes the branch (never forced). A rejected push fetches the
/// remote branch and reports what it has that this one lacks.
fn push_branch(ig: &Integrate, target: &Target, head: &str) -> Result<bool, Error> {
    let remote_tip = ig
        .superproject
        .ls_remote_branch(&target.remote, &target.branch)?;
    if remote_tip.as_deref() == Some(head) {
        return Ok(false);
    }
    let spec = format!("{head}:refs/heads/{}", target.branch);
    let out = ig.superproject.try_git_remote(
        &target.remote,
        &["push", "--quiet", "--", &target.remote, &spec],
    )?;
    if out.code == 0 {
        ig.info(format!(
            "pushed {} to {} {}",
            short(head),
            target.remote,
            target.branch
        ));
        return Ok(true);
    }
    let tracking = format!("refs/remotes/{}/{}", target.remote, target.branch);
    let fetched = ig.superproject.try_git_remote(
        &target.remote,
        &[
            "fetch",
            "--quiet",
            "--",
            &target.remote,
            &format!("refs/heads/{}:{tracking}", target.branch),
        ],
    )?;
    let ahead = if fetched.code == 0 {
        ig.superproject
            .rev_list(&[&format!("{head}..{tracking}")])
            .map(|c| c.len())
            .unwrap_or(0)
    } else {
        0
    };
    Err(Error::failed(format!(
        "{} refused the push of {} to {}",
        target.remote,
        short(head),
        target.branch
    ))
    .cause(out.stderr.trim().to_string())
    .cause(if ahead > 0 {
        format!(
            "{} {} has {} this branch lacks (fetched into {tracking})",
            target.remote,
            target.branch,
            lockstep_core::words::count(ahead, "commit", "commits")
        )
    } else {
        "the remote branch could not be compared".to_string()
    })
    .hint(format!(
        "nothing was forced: bring their commits in (`git merge --ff-only {tracking}`, then `git submodule update`), then publish again"
    )))
}

/// The pull request's title and body.
fn pull_text(ig: &Integrate, halt: Option<&Halt>) -> Result<(String, String), Error> {
    let name = &ig.cfg.upstream_name;
    let new_pin = ig.pin()?;
    let old_pin = ig.pin_at(&ig.cfg.base).unwrap_or_else(|_| new_pin.clone());
    let upstream = ig.upstream_head()?;
    let new_base = ig
        .sub
        .merge_base(&new_pin, &upstream)?
        .unwrap_or_else(|| new_pin.clone());
    let old_base = ig
        .sub
        .merge_base(&old_pin, &upstream)?
        .unwrap_or_else(|| old_pin.clone());
    let mut title = format!("Integrate {name} at {}", short(&new_base));
    if halt.is_some() {
        title = format!("[needs help] {title}");
    }
    let taken = if old_base == new_base {
        Vec::new()
    } else {
        crate::status::pending(ig, &old_base, &new_base)?
    };
    let all_upstream = if old_base == new_base {
        0
    } else {
        ig.sub
            .rev_list(&[&format!("{old_base}..{new_base}")])?
            .len()
    };
    let carried = if new_base == new_pin {
        Vec::new()
    } else {
        crate::status::patches(ig, &new_base, &new_pin, &upstream)?
    };
    let old_subjects: Vec<String> = if old_base == old_pin {
        Vec::new()
    } else {
        ig.sub
            .log(&[&old_pin, &format!("^{old_base}")], &[])?
            .into_iter()
            .map(|c| c.subject)
            .collect()
    };
    let cost: Option<LoopCost> = ig.store.get(&format!("{LOOP_RECORD}:{}", ig.branch()?))?;
    let body = PullBody {
        name,
        old_base: &old_base,
        new_base: &new_base,
        all_upstream,
        taken: &taken,
        carried: &carried,
        dropped: old_subjects
            .iter()
            .filter(|s| !carried.iter().any(|p| &p.subject == *s))
            .cloned()
            .collect(),
        cost,
        not_stable: crate::status::not_stable_because(ig, &carried)?,
        halt: halt.map(|h| (h, crate::halt::render(ig, h))),
        link: &|sha: &str| ig.commit_link(sha),
    }
    .render();
    // At a halt the report above holds them already.
    let body = match (crate::final_checks::final_checks_at_head(ig)?, halt) {
        (Some(checks), None) => {
            format!("{body}\n{}", crate::final_checks::body_section(&checks))
        }
        _ => body,
    };
    Ok((title, body))
}

/// The inputs of the pull request's body.
struct PullBody<'a> {
    name: &'a str,
    old_base: &'a str,
    new_base: &'a str,
    all_upstream: usize,
    taken: &'a [Commit],
    carried: &'a [Patch],
    dropped: Vec<String>,
    cost: Option<LoopCost>,
    not_stable: Vec<String>,
    halt: Option<(&'a Halt, crate::halt::Report)>,
    link: &'a dyn Fn(&str) -> Option<String>,
}

impl PullBody<'_> {
    fn sha(&self, sha: &str) -> String {
        match (self.link)(sha) {
            Some(url) => format!("[`{}`]({url})", short(sha)),
            None => format!("`{}`", short(sha)),
        }
    }

    fn render(&self) -> String {
        let mut t = String::new();
        if let Some((halt, _)) = &self.halt {
            t += &format!(
                "> **Needs help:** the integrate halted at {} ({}). CI runs on this branch; see the report below.\n\n",
                self.sha(&halt.culprit.sha),
                halt.kind.as_str()
            );
        }
        if !self.not_stable.is_empty() {
            t += "> **Not ok for a stable release:** ";
            t += &self
                .not_stable
                .iter()
                .map(|r| one_line(r))
                .collect::<Vec<_>>()
                .join("; ");
            t += "\n\n";
        }
        t += &format!(
            "Integrates {} from {} to {}: {}, {} affecting.\n\n",
            self.name,
            self.sha(self.old_base),
            self.sha(self.new_base),
            lockstep_core::words::count(self.all_upstream, "upstream commit", "upstream commits"),
            self.taken.len()
        );
        if let Some(cost) = &self.cost {
            t += &format!(
                "Smoke runs in this integrate: {} over {} ({} reused); one smoke per affecting commit (`strategy = \"each\"`) would have been {}.\n\n",
                cost.smoke_runs,
                lockstep_core::words::count(cost.loops, "loop", "loops"),
                lockstep_core::words::count(cost.cached, "verdict", "verdicts"),
                self.taken.len()
            );
        }
        t += &format!("## Affecting commits taken ({})\n\n", self.taken.len());
        for c in self.taken.iter().take(MAX_LISTED) {
            t += &format!("- {} {}\n", self.sha(&c.sha), one_line(&c.subject));
        }
        if self.taken.len() > MAX_LISTED {
            t += &format!("- ... and {} more\n", self.taken.len() - MAX_LISTED);
        }
        let (reverts, patches): (Vec<&Patch>, Vec<&Patch>) = self
            .carried
            .iter()
            .partition(|p| p.reverts.is_some() || p.subject.starts_with("Revert \""));
        t += &format!("\n## Carried patches ({})\n\n", patches.len());
        for p in &patches {
            t += &format!("- `{}` {}", short(&p.sha), one_line(&p.subject));
            if let Some(reason) = &p.reason {
                t += &format!(": {}", one_line(reason));
            }
            if let Some(by) = &p.upstreamed_by {
                t += &format!(
                    " (landed upstream as {}: dropped at the next step)",
                    self.sha(by)
                );
            }
            t += "\n";
        }
        if !self.dropped.is_empty() {
            t += &format!("\n## Dropped: landed upstream ({})\n\n", self.dropped.len());
            for s in &self.dropped {
                t += &format!("- {}\n", one_line(s));
            }
        }
        t += &format!("\n## Carried reverts ({})\n\n", reverts.len());
        for p in &reverts {
            let what = match &p.reverts {
                Some(sha) => self.sha(sha),
                None => one_line(p.subject.trim_start_matches("Revert ")),
            };
            t += &format!(
                "- `{}` reverts {what}: {}",
                short(&p.sha),
                one_line(p.reason.as_deref().unwrap_or("no reason given"))
            );
            if let Some(by) = &p.reverted_upstream_by {
                t += &format!(
                    " (upstream reverted it too, in {}: dropped at the next step)",
                    self.sha(by)
                );
            }
            t += "\n";
        }
        if let Some((_, report)) = &self.halt {
            t += "\n## Halt\n\n";
            t += &report.text.replacen("# ", "### ", 1);
        }
        t += "\n---\nGenerated by `lockstep integrate publish`; edits to this description are replaced at the next publish.\n";
        if t.len() > MAX_BODY {
            let mut cut = MAX_BODY;
            while !t.is_char_boundary(cut) {
                cut -= 1;
            }
            t.truncate(cut);
            t += "\n\n(cut: the full report is in the halt report file)\n";
        }
        t
    }
}

/// `text` on one line, as Markdown list items need it.
fn one_line(text: &str) -> String {
    lockstep_core::error::printable_line(text).into_owned()
}

fn closed_pull(pull: &PullRequest, target: &Target) -> Error {
    let what = if pull.merged_at.is_some() {
        "was merged"
    } else {
        "was closed (by someone other than lockstep)"
    };
    Error::failed(format!(
        "pull request #{} for {} {what}: lockstep does not reopen or replace it",
        pull.number, target.branch
    ))
    .hint("reopen it on GitHub to keep publishing this integrate, or start a new integrate branch (`lockstep integrate start`); nothing was pushed")
}
