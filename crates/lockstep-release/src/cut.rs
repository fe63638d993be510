//! `lockstep release cut`: the next version and its tag, allocated so that
//! concurrent runs never share one.
//!
//! The remote is the arbiter: each attempt lists the remote's tags (and the
//! local ones, which count as taken), computes the next version, creates an
//! annotated tag carrying the run's identity and pushes it without force.
//! A push rejected because the tag now exists on the remote lost a race:
//! the local tag is deleted and the next attempt takes the next number. A
//! push rejected for anything else (auth, a protected ref) is an error with
//! git's own words, and the local tag is deleted again. A rerun of the same
//! job (same commit, same run identity) finds its own tag and reuses it.

use std::collections::BTreeMap;

use lockstep_core::Error;
use lockstep_git::{GitError, Repo};
use pep440_rs::Version;
use serde::Serialize;

use crate::settings::Settings;
use crate::template::{render_tag, Slot, VersionTemplate};

/// Attempts before giving up on a remote that keeps moving.
const MAX_ATTEMPTS: usize = 60;

/// Which kind of release.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Channel {
    Snapshot,
    Candidate,
    Final,
}

impl Channel {
    pub fn name(self) -> &'static str {
        match self {
            Channel::Snapshot => "snapshot",
            Channel::Candidate => "candidate",
            Channel::Final => "final",
        }
    }
}

/// What to cut.
pub struct CutRequest<'a> {
    pub repo: &'a Repo,
    pub remote: &'a str,
    pub channel: Channel,
    pub name: &'a str,
    pub base: &'a str,
    /// The channel's version template (unused for `final`).
    pub template: &'a VersionTemplate,
    pub tag_template: &'a str,
    pub run_id: &'a str,
    /// Pin files (relative to the repository) and the revision each holds at HEAD.
    pub pins: BTreeMap<String, String>,
    /// UTC `YYYYMMDD`.
    pub today: u32,
    /// Cut nothing when HEAD already has a version of the tag template.
    pub if_new_commit: bool,
}

/// What was cut.
#[derive(Debug, Clone, Serialize)]
pub struct Cut {
    pub version: String,
    pub tag: String,
    pub channel: Channel,
    pub run_id: String,
    pub source: String,
    pub pins: BTreeMap<String, String>,
    /// The tag already existed for this run and commit.
    pub reused: bool,
    /// Nothing was cut: `--if-new-commit` and HEAD already has a version
    /// (`version` and `tag` are that one).
    pub skipped: bool,
    pub attempts: usize,
}

/// The run's identity: `flag` (`--run-id`), else
/// `$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT`, else a fresh random id. Reruns of
/// one run reuse its tag.
pub fn run_identity(flag: Option<String>) -> Result<String, Error> {
    let id = match flag {
        Some(id) => id,
        None => match (
            std::env::var("GITHUB_RUN_ID"),
            std::env::var("GITHUB_RUN_ATTEMPT"),
        ) {
            (Ok(run), Ok(attempt)) if !run.is_empty() => format!("{run}-{attempt}"),
            (Ok(run), _) if !run.is_empty() => run,
            _ => format!("local-{:016x}", rand::random::<u64>()),
        },
    };
    if id.is_empty()
        || id.len() > 100
        || !id
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
    {
        return Err(Error::usage(format!(
            "run id `{}` is not a plain identifier",
            id.escape_debug()
        ))
        .hint("use letters, digits, `-`, `_`, `.` (at most 100)"));
    }
    Ok(id)
}

/// Today in UTC as YYYYMMDD; `$LOCKSTEP_RELEASE_TODAY` overrides it (to
/// reproduce a day's versions).
pub fn today() -> Result<u32, Error> {
    if let Ok(text) = std::env::var("LOCKSTEP_RELEASE_TODAY") {
        let ok = text.len() == 8 && text.bytes().all(|b| b.is_ascii_digit());
        return text.parse().ok().filter(|_| ok).ok_or_else(|| {
            Error::usage(format!(
                "$LOCKSTEP_RELEASE_TODAY = `{text}` is not YYYYMMDD"
            ))
        });
    }
    let date = jiff::Timestamp::now()
        .to_zoned(jiff::tz::TimeZone::UTC)
        .date();
    Ok(date.year() as u32 * 10000 + date.month() as u32 * 100 + date.day() as u32)
}

/// `release cut`: the next version of `channel` for the repository's HEAD
/// (clean tracked files; every pin file read at HEAD), tagged and pushed to
/// `remote`.
/// How `release cut` was asked to cut.
pub struct CutOptions<'a> {
    pub channel: Channel,
    /// The remote that arbitrates tags.
    pub remote: &'a str,
    /// `--run-id`.
    pub run_id: Option<String>,
    /// Cut nothing when HEAD already has a version of the tag template.
    pub if_new_commit: bool,
}

pub fn cut_head(
    settings: &Settings,
    base: &str,
    repo: &Repo,
    options: CutOptions,
) -> Result<Cut, Error> {
    let CutOptions {
        channel,
        remote,
        run_id,
        if_new_commit,
    } = options;
    let is_url = remote.contains(':') || remote.contains('/');
    if !is_url && repo.remote_url(remote)?.is_none() {
        return Err(Error::usage(format!(
            "this repository has no remote `{remote}`: release cut claims its tag by pushing it there"
        ))
        .cause("the remote arbitrates tags, so two runs racing can never cut one version twice")
        .hint(format!(
            "add the repository others fetch tags from (`git remote add {remote} URL`), or pass --remote NAME"
        )));
    }
    repo.require_clean_tracked()?;
    let mut pins = BTreeMap::new();
    for pin in &settings.pins {
        match pin.read_at(repo, "HEAD") {
            Ok(commit) => {
                pins.insert(pin.path().to_string(), commit);
            }
            // A default submodule [integrate] never named, not there: nothing to record.
            Err(_) if pin.assumed() => {}
            Err(e) => return Err(e.context(format!("cannot read {}", pin.describe()))),
        }
    }
    // Submodules pin too (an LLVM submodule is IREE's pin).
    for (path, commit) in repo.gitlinks("HEAD")? {
        pins.entry(path).or_insert(commit);
    }
    let run_id = run_identity(run_id)?;
    let template = match channel {
        Channel::Candidate => &settings.candidate,
        _ => &settings.snapshot,
    };
    cut(&CutRequest {
        repo,
        remote,
        channel,
        name: &settings.name,
        base,
        template,
        tag_template: &settings.tag,
        run_id: &run_id,
        pins,
        today: today()?,
        if_new_commit,
    })
}

/// Cuts; see the module doc.
pub fn cut(req: &CutRequest) -> Result<Cut, Error> {
    let head = req.repo.head()?.to_string();
    req.repo.require_clean_tracked()?;
    let (prefix, suffix) = tag_affixes(req.tag_template, req.name, req.channel)?;
    let made = |version: String, tag: String, reused: bool, attempts: usize| Cut {
        version,
        tag,
        channel: req.channel,
        run_id: req.run_id.to_string(),
        source: head.clone(),
        pins: req.pins.clone(),
        reused,
        skipped: false,
        attempts,
    };
    for attempt in 1..=MAX_ATTEMPTS {
        let tags = all_tags(req)?;
        if let Some(tag) = own_tag(req, &tags, &head, &prefix, &suffix)? {
            let version = tag[prefix.len()..tag.len() - suffix.len()].to_string();
            return Ok(made(version, tag, true, attempt));
        }
        if req.if_new_commit {
            if let Some(tag) = tag_on(&tags, &head, &prefix, &suffix) {
                let version = tag[prefix.len()..tag.len() - suffix.len()].to_string();
                return Ok(Cut {
                    skipped: true,
                    ..made(version, tag, false, attempt)
                });
            }
        }
        let version = next_version(req, &tags, &prefix, &suffix)?;
        let tag = render_tag(req.tag_template, req.name, &version, req.channel.name())?;
        let message = tag_message(req, &version, &head);
        match req.repo.create_tag(&tag, &head, &message) {
            Ok(()) => {}
            // Another cut in this same clone took the name first: next number.
            Err(GitError::RefExists { .. }) => continue,
            Err(e) => return Err(Error::from(e).context(format!("cannot create tag {tag}"))),
        }
        let pushed = req.repo.try_git_remote(
            req.remote,
            &[
                "push",
                "--porcelain",
                "--",
                req.remote,
                &format!("refs/tags/{tag}:refs/tags/{tag}"),
            ],
        )?;
        if pushed.code == 0 {
            return Ok(made(version, tag, false, attempt));
        }
        let _ = req.repo.try_git(&["tag", "-d", &tag]);
        if !remote_has_tag(req, &tag)? {
            return Err(Error::failed(format!("the remote `{}` refused tag {tag}", req.remote))
                .cause(pushed.stderr.trim().to_string())
                .hint("check the remote's permissions and tag protection rules; nothing was released"));
        }
        if req.channel == Channel::Final {
            return Err(
                Error::failed(format!("{tag} was created by another run just now"))
                    .hint("a final version is released once"),
            );
        }
        tracing::info!(
            tag,
            attempt,
            "lost a race for the tag; taking the next version"
        );
        std::thread::sleep(std::time::Duration::from_millis(
            rand::random::<u64>() % 200 + 20,
        ));
    }
    Err(Error::failed(format!(
        "could not claim a tag after {MAX_ATTEMPTS} attempts: the remote keeps moving"
    ))
    .hint("retry later"))
}

/// The text around `{version}` in the tag template.
fn tag_affixes(template: &str, name: &str, channel: Channel) -> Result<(String, String), Error> {
    let marker = "0.0.0";
    let tag = render_tag(template, name, marker, channel.name())?;
    let at = tag.find(marker).unwrap_or(0);
    Ok((tag[..at].to_string(), tag[at + marker.len()..].to_string()))
}

/// Tag name -> the commit it points at (peeled), from the remote and from
/// the local repository (local tags count as taken).
fn all_tags(req: &CutRequest) -> Result<BTreeMap<String, Option<String>>, Error> {
    let mut tags = BTreeMap::new();
    let listed = req
        .repo
        .try_git_remote(req.remote, &["ls-remote", "--tags", "--", req.remote])?;
    if listed.code != 0 {
        let mut err = Error::failed(format!("cannot list the tags of remote `{}`", req.remote))
            .hint("check --remote and network access");
        let said = listed.stderr.trim();
        if !said.is_empty() {
            err = err.cause(lockstep_core::error::printable(said).into_owned());
        }
        return Err(err);
    }
    for line in listed.stdout.lines() {
        let Some((sha, name)) = line.split_once('\t') else {
            continue;
        };
        let Some(name) = name.strip_prefix("refs/tags/") else {
            continue;
        };
        match name.strip_suffix("^{}") {
            Some(tag) => {
                tags.insert(tag.to_string(), Some(sha.to_string()));
            }
            None => {
                tags.entry(name.to_string()).or_insert(None);
            }
        }
    }
    let local = req.repo.git(&["tag", "--list"])?;
    for name in local.lines().map(str::trim).filter(|l| !l.is_empty()) {
        tags.entry(name.to_string()).or_insert(None);
    }
    Ok(tags)
}

/// The newest tag of the template (by name) that points at `head`.
fn tag_on(
    tags: &BTreeMap<String, Option<String>>,
    head: &str,
    prefix: &str,
    suffix: &str,
) -> Option<String> {
    tags.iter()
        .filter(|(tag, peeled)| {
            tag.len() > prefix.len() + suffix.len()
                && tag.starts_with(prefix)
                && tag.ends_with(suffix)
                && peeled.as_deref() == Some(head)
        })
        .map(|(tag, _)| tag.clone())
        .next_back()
}

/// A tag of this template on `head` whose message names this run.
fn own_tag(
    req: &CutRequest,
    tags: &BTreeMap<String, Option<String>>,
    head: &str,
    prefix: &str,
    suffix: &str,
) -> Result<Option<String>, Error> {
    for (tag, peeled) in tags {
        if !(tag.starts_with(prefix) && tag.ends_with(suffix)) || peeled.as_deref() != Some(head) {
            continue;
        }
        let local_ref = format!("refs/lockstep/release-cut/{tag}");
        let fetched = req.repo.try_git_remote(
            req.remote,
            &[
                "fetch",
                "--quiet",
                "--no-tags",
                "--",
                req.remote,
                &format!("+refs/tags/{tag}:{local_ref}"),
            ],
        )?;
        if fetched.code != 0 {
            continue;
        }
        let body = req.repo.try_git(&["cat-file", "-p", &local_ref])?;
        let _ = req.repo.try_git(&["update-ref", "-d", &local_ref]);
        let ours = body
            .stdout
            .lines()
            .any(|l| l.trim() == format!("run: {}", req.run_id));
        let channel = body
            .stdout
            .lines()
            .any(|l| l.trim() == format!("channel: {}", req.channel.name()));
        if ours && channel {
            return Ok(Some(tag.clone()));
        }
    }
    Ok(None)
}

fn next_version(
    req: &CutRequest,
    tags: &BTreeMap<String, Option<String>>,
    prefix: &str,
    suffix: &str,
) -> Result<String, Error> {
    let versions: Vec<&str> = tags
        .keys()
        .filter(|t| {
            t.len() >= prefix.len() + suffix.len() && t.starts_with(prefix) && t.ends_with(suffix)
        })
        .map(|t| &t[prefix.len()..t.len() - suffix.len()])
        .collect();
    if req.channel == Channel::Final {
        if versions.contains(&req.base) {
            return Err(Error::usage(format!(
                "{} {} is already released (tag exists)",
                req.name, req.base
            ))
            .hint("bump [release] version-base for the next release"));
        }
        return Ok(req.base.to_string());
    }
    let family: Vec<(u32, u64, Version)> = versions
        .iter()
        .filter_map(|v| {
            let (date, n) = req.template.match_version(v, req.base)?;
            Some((date, n, v.parse::<Version>().ok()?))
        })
        .collect();
    let date = if req.template.uses_date() {
        req.today
    } else {
        0
    };
    let full = || {
        Error::failed(format!(
            "the counter of \"{}\" is exhausted for base {}",
            req.template.source(),
            req.base
        ))
        .hint("bump [release] version-base")
    };
    let mut n = family
        .iter()
        .filter(|(d, _, _)| *d == date)
        .map(|(_, n, _)| *n)
        .max()
        .unwrap_or(0)
        .checked_add(1)
        .ok_or_else(full)?;
    let newest = family.iter().map(|(_, _, v)| v).max();
    loop {
        let text = req.template.render(Slot {
            base: req.base,
            date,
            n,
        })?;
        let version: Version = text.parse().map_err(|e| {
            Error::failed(format!("`{text}` is not a PEP 440 version")).cause(format!("{e}"))
        })?;
        match newest {
            Some(newest) if version <= *newest => {
                if req.template.uses_date() {
                    return Err(Error::failed(format!(
                        "a newer version than {text} exists already ({newest})"
                    ))
                    .hint("check this machine's clock (dates are UTC)"));
                }
                n = n.checked_add(1).ok_or_else(full)?;
            }
            _ => return Ok(text),
        }
    }
}

fn tag_message(req: &CutRequest, version: &str, head: &str) -> String {
    let mut message = format!(
        "lockstep release cut: {} {version} ({})\n\nversion: {version}\nchannel: {}\nsource: {head}\nrun: {}\n",
        req.name,
        req.channel.name(),
        req.channel.name(),
        req.run_id
    );
    for (path, rev) in &req.pins {
        message.push_str(&format!("pin {path}: {rev}\n"));
    }
    message
}

/// What a tag `release cut` made says about its release: the channel, the
/// source commit and the pins (from its annotation).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct TagFacts {
    pub version: Option<String>,
    pub channel: Option<String>,
    pub source: Option<String>,
    pub pins: BTreeMap<String, String>,
}

/// The facts of `tag` when it is an annotated tag `release cut` made;
/// `None` when the repository has no such tag (or another tool made it).
pub fn tag_facts(repo: &Repo, tag: &str) -> Result<Option<TagFacts>, Error> {
    let out = repo.try_git(&["cat-file", "tag", &format!("refs/tags/{tag}")])?;
    if out.code != 0 {
        return Ok(None);
    }
    Ok(parse_tag_message(&out.stdout))
}

/// [`tag_facts`] in the repository around `dir` (`None` outside one).
pub fn tag_facts_at(dir: &std::path::Path, tag: &str) -> Result<Option<TagFacts>, Error> {
    match Repo::discover(dir) {
        Ok(repo) => tag_facts(&repo, tag),
        Err(GitError::NotARepository { .. }) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

/// The facts in a tag object's text (headers, a blank line, the message).
pub fn parse_tag_message(text: &str) -> Option<TagFacts> {
    let (_, message) = text.split_once("\n\n")?;
    if !message.starts_with("lockstep release cut:") {
        return None;
    }
    let mut facts = TagFacts::default();
    for line in message.lines() {
        if let Some(v) = line.strip_prefix("version: ") {
            facts.version = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("channel: ") {
            facts.channel = Some(v.trim().to_string());
        } else if let Some(v) = line.strip_prefix("source: ") {
            facts.source = Some(v.trim().to_string());
        } else if let Some((path, rev)) =
            line.strip_prefix("pin ").and_then(|l| l.rsplit_once(": "))
        {
            facts.pins.insert(path.to_string(), rev.trim().to_string());
        }
    }
    Some(facts)
}

fn remote_has_tag(req: &CutRequest, tag: &str) -> Result<bool, Error> {
    let out = req.repo.try_git_remote(
        req.remote,
        &[
            "ls-remote",
            "--tags",
            "--",
            req.remote,
            &format!("refs/tags/{tag}"),
        ],
    )?;
    Ok(out.code == 0 && !out.stdout.trim().is_empty())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn tag_messages_of_release_cut_are_read_back() {
        let text = "object abc\ntype commit\ntag demo-1\ntagger t <t@e> 1 +0000\n\nlockstep release cut: demo 1.0rc1 (snapshot)\n\nversion: 1.0rc1\nchannel: snapshot\nsource: 0123\nrun: local-1\npin third_party/llvm: 4567\npin a: b: 89ab\n";
        let facts = parse_tag_message(text).expect("a cut tag");
        assert_eq!(facts.channel.as_deref(), Some("snapshot"));
        assert_eq!(facts.source.as_deref(), Some("0123"));
        assert_eq!(facts.pins["third_party/llvm"], "4567");
        assert_eq!(facts.pins["a: b"], "89ab");
        assert_eq!(parse_tag_message("object x\n\nsomeone else's tag\n"), None);
    }

    proptest! {
        #[test]
        fn any_tag_text_is_read_without_panicking(text in "(.|\n){0,400}") {
            let _ = parse_tag_message(&text);
        }
    }
}
