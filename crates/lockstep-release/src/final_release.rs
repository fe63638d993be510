//! What makes a promoted version a release people can find: the final's
//! tag (`[release] final-tag`, `v{version}`) at the candidate's source
//! commit, the release branch (`[release] branch`, `release/{major}.{minor}`)
//! there, and, for a candidate hosted on GitHub, its files fetched back from
//! its Release so they can be rewritten (`release promote --tag
//! --release-branch`; the GitHub Release itself is [`crate::github`]'s).
//!
//! Nothing here moves anything: a tag or branch that exists at the same
//! commit is reused (a rerun of a half-finished promote completes it), one
//! elsewhere is an error; branches are never forced.

use std::path::Path;

use lockstep_core::Error;
use lockstep_git::Repo;
use pep440_rs::Version;
use serde::Serialize;

use crate::store::{self, Release};

/// The largest candidate file fetched back from its Release.
const MAX_FILE_BYTES: u64 = 4 << 30;

/// What happened to a ref.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum RefOutcome {
    Created,
    /// It was there already, at the same commit.
    AlreadyThere,
}

/// The final version a candidate leads to: its release segment
/// (`3.14.0rc2026112701` -> `3.14.0`).
pub fn final_of(candidate: &str) -> Result<String, Error> {
    let version = candidate.parse::<Version>().map_err(|e| {
        Error::usage(format!("`{candidate}` is not a PEP 440 version")).cause(e.to_string())
    })?;
    Ok(version
        .release()
        .iter()
        .map(u64::to_string)
        .collect::<Vec<_>>()
        .join("."))
}

/// `[release] branch` for `version`, checked as a branch name.
pub fn branch_name(template: &str, version: &str) -> Result<String, Error> {
    let parsed = version.parse::<Version>().map_err(|e| {
        Error::usage(format!("`{version}` is not a PEP 440 version")).cause(e.to_string())
    })?;
    let part = |i: usize| parsed.release().get(i).copied().unwrap_or(0).to_string();
    let name = template
        .replace("{major}", &part(0))
        .replace("{minor}", &part(1))
        .replace("{patch}", &part(2))
        .replace("{version}", version);
    let plain = !name.is_empty()
        && name.len() <= 200
        && !name.starts_with(['-', '/', '.'])
        && !name.ends_with(['/', '.'])
        && !name.contains("..")
        && !name.ends_with(".lock")
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.' | '/'));
    if !plain || name.contains('{') {
        return Err(Error::usage(format!(
            "[release] branch = \"{}\" gives `{}`, not a branch name",
            template.escape_debug(),
            name.escape_debug()
        ))
        .hint("use {major}, {minor}, {patch} and {version} in a plain name, e.g. \"release/{major}.{minor}\""));
    }
    Ok(name)
}

/// The candidate, published and not yanked.
pub fn candidate(index: &Path, from: &str) -> Result<Release, Error> {
    let dir = index.join(store::FILES).join(from);
    if !dir.join(store::RELEASE_JSON).is_file() {
        return Err(Error::usage(format!("{from} is not a published version"))
            .hint("promote a version `release publish` published (see the index); nothing was promoted"));
    }
    let record = store::load_or_scan(&dir)?;
    if let Some(reason) = &record.yanked {
        return Err(Error::usage(format!("{from} is yanked: {reason}"))
            .hint("promote a candidate that is not yanked; nothing was promoted"));
    }
    Ok(record)
}

/// The files of a candidate hosted on GitHub (the store keeps only its
/// record), fetched from its Release into `into` (a staging directory, never
/// the store), each checked against the record's sha256: a tampered file is
/// an error and nothing of it is kept. The Release must be the version's own
/// (its `release.json` names this version and tag).
pub fn fetch_hosted(
    record: &Release,
    into: &Path,
    client: &lockstep_github::Client,
    repo: &lockstep_github::Repo,
) -> Result<(), Error> {
    let tag = record.tag.as_deref().ok_or_else(|| {
        Error::failed(format!(
            "{} is hosted on GitHub but records no tag",
            record.version
        ))
    })?;
    let release = client.release_for_tag(repo, tag)?.ok_or_else(|| {
        Error::failed(format!(
            "{} is hosted on GitHub, but {repo} has no Release of its tag {tag}",
            record.version
        ))
        .hint("`lockstep release sync --from-github` shows what the Releases hold; nothing was promoted")
    })?;
    crate::prune::require_owned(client, repo, &release, &record.version, tag)?;
    for file in &record.files {
        let asset = release
            .assets
            .iter()
            .find(|a| a.name == file.filename)
            .ok_or_else(|| {
                Error::failed(format!("the GitHub Release {tag} lacks {}", file.filename))
                    .hint("nothing was promoted")
            })?;
        let bytes = client.download_asset(repo, asset, MAX_FILE_BYTES.min(file.size))?;
        if lockstep_core::hash::sha256_bytes(&bytes) != file.sha256 {
            return Err(Error::failed(format!(
                "{} downloaded from the GitHub Release {tag} is not the file {} lists",
                file.filename, record.version
            ))
            .hint("nothing was promoted"));
        }
        fs_err::write(into.join(&file.filename), &bytes)?;
    }
    Ok(())
}

/// Creates the annotated tag `tag` at `commit` (facts as `release cut`
/// writes them, channel `final`) and pushes it to `remote`; one already
/// there at `commit` is reused, one elsewhere refused.
pub fn tag_final(
    repo: &Repo,
    remote: &str,
    tag: &str,
    commit: &str,
    message: &str,
) -> Result<RefOutcome, Error> {
    if check_tag_free(repo, remote, tag, commit)? == Some(RefOutcome::AlreadyThere) {
        return Ok(RefOutcome::AlreadyThere);
    }
    let identity = repo.fallback_identity()?;
    let _ = repo.try_git(&["tag", "-d", tag]);
    let created = repo.try_git(
        &[
            identity.as_slice(),
            &["tag", "-a", tag, "-m", message, commit],
        ]
        .concat(),
    )?;
    if created.code != 0 {
        return Err(Error::failed(format!("cannot create tag {tag}"))
            .cause(created.stderr.trim().to_string()));
    }
    push(
        repo,
        remote,
        &format!("refs/tags/{tag}:refs/tags/{tag}"),
        tag,
    )?;
    Ok(RefOutcome::Created)
}

/// `None` when `remote` has no tag `tag`; already there when it names
/// `commit`; an error when it names another commit.
fn check_tag_free(
    repo: &Repo,
    remote: &str,
    tag: &str,
    commit: &str,
) -> Result<Option<RefOutcome>, Error> {
    crate::template::check_tag_name(tag)?;
    match remote_ref(repo, remote, &format!("refs/tags/{tag}"), true)? {
        None => Ok(None),
        Some(at) if at == commit => Ok(Some(RefOutcome::AlreadyThere)),
        Some(at) => Err(Error::usage(format!(
            "tag {tag} exists on `{remote}` at {}, not at the candidate's commit {}",
            short(&at),
            short(commit)
        ))
        .hint("a final is released once: pick another --to, or delete the wrong tag by hand; nothing was promoted")),
    }
}

/// Creates branch `name` at `commit` on `remote` unless it exists there
/// (an existing release branch is left as it is: it may hold fixes).
pub fn release_branch(
    repo: &Repo,
    remote: &str,
    name: &str,
    commit: &str,
) -> Result<RefOutcome, Error> {
    if remote_ref(repo, remote, &format!("refs/heads/{name}"), false)?.is_some() {
        return Ok(RefOutcome::AlreadyThere);
    }
    push(repo, remote, &format!("{commit}:refs/heads/{name}"), name)?;
    Ok(RefOutcome::Created)
}

/// The message of a final's tag, read back by [`crate::cut::tag_facts`].
pub fn tag_message(name: &str, version: &str, record: &Release, from: &str) -> String {
    let mut message = format!(
        "lockstep release cut: {name} {version} (final)\n\nversion: {version}\nchannel: final\nsource: {}\npromoted-from: {from}\n",
        record.source.as_deref().unwrap_or_default()
    );
    for (path, rev) in &record.pins {
        message.push_str(&format!("pin {path}: {rev}\n"));
    }
    message
}

/// The commit `name` names on `remote` (a tag peeled when `peel`).
fn remote_ref(repo: &Repo, remote: &str, name: &str, peel: bool) -> Result<Option<String>, Error> {
    let peeled = format!("{name}^{{}}");
    let mut args = vec!["ls-remote", "--", remote, name];
    if peel {
        args.push(&peeled);
    }
    let out = repo.try_git_remote(remote, &args)?;
    if out.code != 0 {
        return Err(Error::failed(format!("cannot list {name} on `{remote}`"))
            .cause(out.stderr.trim().to_string())
            .hint("check the remote and its credentials; nothing was pushed"));
    }
    let entries: Vec<(&str, &str)> = out
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .collect();
    Ok(entries
        .iter()
        .find(|(_, r)| *r == peeled)
        .or_else(|| entries.iter().find(|(_, r)| *r == name))
        .map(|(oid, _)| oid.to_string()))
}

fn push(repo: &Repo, remote: &str, refspec: &str, what: &str) -> Result<(), Error> {
    let pushed = repo.try_git_remote(remote, &["push", "--porcelain", "--", remote, refspec])?;
    if pushed.code != 0 {
        return Err(
            Error::failed(format!("the remote `{remote}` refused {what}"))
                .cause(pushed.stderr.trim().to_string())
                .hint("check the remote's permissions and protection rules"),
        );
    }
    Ok(())
}

fn short(sha: &str) -> &str {
    &sha[..12.min(sha.len())]
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kernel_filesystems_are_refused_but_dev_shm_is_a_directory_for_files() {
        assert_eq!(kernel_dir(Path::new("/proc/self")), Some("/proc"));
        assert_eq!(kernel_dir(Path::new("/sys/kernel")), Some("/sys"));
        assert_eq!(kernel_dir(Path::new("/dev")), Some("/dev"));
        assert_eq!(kernel_dir(Path::new("/dev/pts")), Some("/dev"));
        assert_eq!(kernel_dir(Path::new("/dev/shm")), None);
        assert_eq!(kernel_dir(Path::new("/dev/shm/ci/final")), None);
        assert_eq!(kernel_dir(Path::new("/devices")), None);
        assert_eq!(kernel_dir(Path::new("/tmp/final")), None);
    }

    #[test]
    fn a_kernel_filesystem_is_refused_wherever_it_is_mounted() {
        let index = Path::new("/nonexistent/release/index");
        // By the filesystem's kind, not its path; a temporary directory
        // (on /dev/shm under scripts/test) is a directory for files.
        assert!(lockstep_core::fs::on_kernel_filesystem_at(Path::new(
            "/proc/self"
        )));
        assert!(!lockstep_core::fs::on_kernel_filesystem_at(Path::new("/")));
        let err = check_copy_dir(Path::new("/proc/self/final"), index).unwrap_err();
        assert!(err.to_string().contains("under /proc"), "{err}");
        let tmp = tempfile::tempdir().unwrap();
        assert!(check_copy_dir(&tmp.path().join("final"), index).is_ok());
    }

    #[test]
    fn finals_and_branches_come_from_the_candidate() {
        assert_eq!(final_of("3.14.0rc2026112701").unwrap(), "3.14.0");
        assert_eq!(final_of("0.3.0.dev5").unwrap(), "0.3.0");
        assert!(final_of("not a version").is_err());
        assert_eq!(
            branch_name("release/{major}.{minor}", "3.14.0").unwrap(),
            "release/3.14"
        );
        assert_eq!(
            branch_name("v{version}-fixes", "3.14.1").unwrap(),
            "v3.14.1-fixes"
        );
        for bad in [
            "release/{major}..{minor}",
            "-x{major}",
            "a b{minor}",
            "r/{nope}",
        ] {
            assert!(branch_name(bad, "3.14.0").is_err(), "{bad}");
        }
    }
}

/// What `release promote` ships beyond the rewritten files.
pub struct Ship<'a> {
    pub settings: &'a crate::settings::Settings,
    /// `[release] final-tag`.
    pub final_tag: &'a str,
    /// `[release] branch`.
    pub branch_template: &'a str,
    pub from: &'a str,
    /// `--to`, else the candidate's release segment.
    pub to: Option<&'a str>,
    pub rewrite_stamps: bool,
    /// `--tag`: the final's tag, pushed.
    pub tag: bool,
    /// `--github-release`: its GitHub Release (implies `tag`).
    pub github_release: bool,
    /// `--release-branch`.
    pub release_branch: bool,
    /// `--copy-to DIR`: the final files copied there (for an upload job).
    pub out: Option<std::path::PathBuf>,
    pub remote: &'a str,
    /// The repository around the project.
    pub root: &'a Path,
    pub upload: Option<(&'a str, &'a lockstep_python::uv::Uv)>,
}

/// `release promote`'s report.
#[derive(Debug, Serialize)]
pub struct Shipped {
    #[serde(flatten)]
    pub promoted: crate::promote::Promoted,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tag_outcome: Option<RefOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub branch_outcome: Option<RefOutcome>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_release: Option<crate::github::GithubRelease>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub out: Option<std::path::PathBuf>,
}

/// Checks everything that can be checked (versions, tag, branch, the
/// candidate, `--copy-to`, `--upload`, the stable gate), then: the
/// candidate's files (from its GitHub Release when hosted there, into a
/// staging directory), rewritten and staged in one store transaction, then
/// uploaded, tagged and released on GitHub from the staged files, and only
/// then the store and index swapped in; `--copy-to` and the release branch
/// last. A failure before the swap leaves the store and index as they were.
pub fn ship(req: &Ship, sink: &dyn lockstep_core::events::Sink) -> Result<Shipped, Error> {
    use crate::config::Hosting;
    let to = match req.to {
        Some(to) => to.to_string(),
        None => final_of(req.from)?,
    };
    crate::promote::check_versions(req.from, &to)?;
    if let Some((url, _)) = req.upload {
        crate::upload::check_url(url)?;
    }
    let hosted = req.settings.hosting == Hosting::GithubReleases;
    if hosted && !req.github_release {
        return Err(Error::usage(
            "[release] hosting = \"github-releases\": the final's files are served from its GitHub Release, so promote needs --github-release",
        )
        .hint("pass --github-release (with $GITHUB_TOKEN); nothing was promoted"));
    }
    let wants_tag = req.tag || req.github_release;
    let tag = match wants_tag {
        true => Some(crate::template::render_tag_of(
            "[release] final-tag",
            req.final_tag,
            &req.settings.name,
            &to,
            "final",
        )?),
        false => None,
    };
    let branch = match req.release_branch {
        true => Some(branch_name(req.branch_template, &to)?),
        false => None,
    };
    let index = &req.settings.index;
    if let Some(out) = &req.out {
        check_copy_dir(out, index)?;
    }
    let candidate = candidate(index, req.from)?;
    let source = candidate.source.clone();
    if (tag.is_some() || branch.is_some()) && source.is_none() {
        return Err(Error::usage(format!(
            "{} records no source commit: its final cannot be tagged or branched there",
            req.from
        ))
        .hint("promote a candidate `release publish` published from a tag `release cut` made; nothing was promoted"));
    }
    crate::promote::check_stable_gate(index, req.from, req.root, sink)?;
    let git = match tag.is_some() || branch.is_some() {
        true => Some(Repo::discover(req.root)?),
        false => None,
    };
    let github = match req.github_release || candidate.hosted.is_some() {
        true => {
            let (client, repo) = crate::sync::connect(req.root)?;
            if !client.has_token() {
                return Err(Error::usage("--github-release needs a token: $GITHUB_TOKEN (or $GH_TOKEN) is not set")
                    .hint("set GITHUB_TOKEN to a token that may write the repository's releases; nothing was promoted"));
            }
            Some((client, repo))
        }
        false => None,
    };
    // A tag already elsewhere is refused before anything is written.
    if let (Some(tag), Some(git)) = (&tag, &git) {
        check_tag_free(git, req.remote, tag, source.as_deref().unwrap_or_default())?;
    }
    let work = crate::publish::work_dir();
    fs_err::create_dir_all(&work)?;
    let fetched = tempfile::Builder::new()
        .prefix("candidate-")
        .tempdir_in(&work)
        .map_err(|e| Error::failed("cannot create a staging directory").cause(e.to_string()))?;
    let candidate_dir = match (&candidate.hosted, &github) {
        (Some(_), Some((client, repo))) => {
            sink.note(format!(
                "fetching the files of {} from its GitHub Release",
                req.from
            ));
            fetch_hosted(&candidate, fetched.path(), client, repo)?;
            fetched.path().to_path_buf()
        }
        _ => index.join(store::FILES).join(req.from),
    };
    let rewritten = crate::promote::rewrite_candidate(
        &candidate,
        &candidate_dir,
        &to,
        req.rewrite_stamps,
        &work,
    )?;
    if let Some(out) = &req.out {
        check_copy_targets(out, &rewritten.outputs)?;
    }
    let mut tx = crate::txn::Transaction::begin(index)?;
    if let Some(tag) = &tag {
        crate::publish::check_tag_owner(tx.view(), tag, &to)?;
    }
    let record = crate::promote::final_record(&candidate, &to, tag.as_deref());
    tx.add(&record, &rewritten.outputs)?;
    if let Some((url, uv)) = req.upload {
        crate::promote::upload_all(url, uv, &rewritten.outputs, sink)?;
    }
    let mut shipped = Shipped {
        promoted: rewritten.promoted.clone(),
        tag: tag.clone(),
        tag_outcome: None,
        branch: branch.clone(),
        branch_outcome: None,
        github_release: None,
        out: req.out.clone(),
    };
    let commit = source.unwrap_or_default();
    if let (Some(tag), Some(git)) = (&tag, &git) {
        let message = tag_message(&req.settings.name, &to, &candidate, req.from);
        shipped.tag_outcome = Some(tag_final(git, req.remote, tag, &commit, &message)?);
    }
    if req.github_release {
        let target = crate::github::Target::prepare(tag.as_deref(), req.root)?;
        let dir = tx.staged_dir(&to)?;
        let staged = tx
            .view()
            .get(&to)
            .cloned()
            .ok_or_else(|| Error::failed(format!("{to} is not staged in the release store")))?;
        let (report, hosted) = target.publish(
            req.settings,
            &dir,
            &staged,
            Some("final"),
            Some(&commit),
            sink,
        )?;
        if let Some(base) = hosted {
            tx.mark_hosted(&to, &base)?;
        }
        shipped.github_release = Some(report);
    }
    tx.commit()?;
    if let Some(out) = &req.out {
        copy_out(out, &rewritten.outputs)?;
    }
    if let (Some(branch), Some(git)) = (&branch, &git) {
        shipped.branch_outcome = Some(release_branch(git, req.remote, branch, &commit)?);
    }
    for (wheel, members) in &shipped.promoted.stamps {
        let verb = match req.rewrite_stamps {
            true => "rewrote",
            false => "still holds the old version",
        };
        sink.warn(format!("{wheel}: {} {verb}", members.join(", ")));
    }
    Ok(shipped)
}

/// `--copy-to DIR` before anything is written: a directory (or a path
/// whose nearest existing parent is one), outside the release store and
/// off the kernel's filesystems.
fn check_copy_dir(out: &Path, index: &Path) -> Result<(), Error> {
    let refuse = |why: String| {
        Error::usage(format!("--copy-to {}: {why}", out.display()))
            .hint("name a new or existing directory for the final's files (outside the release store); nothing was promoted")
    };
    let mut existing = out.to_path_buf();
    while existing.symlink_metadata().is_err() {
        match existing.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => existing = parent.to_path_buf(),
            _ => {
                existing = std::path::PathBuf::from(".");
                break;
            }
        }
    }
    let meta = std::fs::metadata(&existing).map_err(|e| refuse(format!("cannot be read ({e})")))?;
    if !meta.is_dir() {
        let what = if existing == out {
            "it is"
        } else {
            "its parent is"
        };
        return Err(refuse(format!("{what} not a directory")));
    }
    let real = existing
        .canonicalize()
        .map_err(|e| refuse(format!("cannot be resolved ({e})")))?;
    if let Some(kernel) = kernel_dir(&real) {
        return Err(refuse(format!(
            "it is under {kernel}, not a directory for files"
        )));
    }
    // A kernel filesystem mounted elsewhere (a cgroup tree, debugfs).
    if lockstep_core::fs::on_kernel_filesystem_at(&real) {
        return Err(refuse(
            "it is on a kernel filesystem, not a directory for files".to_string(),
        ));
    }
    if let Ok(store) = index.canonicalize() {
        if real.starts_with(&store) {
            return Err(refuse("it is inside the release store".to_string()));
        }
    }
    Ok(())
}

/// The kernel's filesystem a resolved path lies in (`/proc`, `/sys`, or
/// `/dev` but for `/dev/shm`, the tmpfs for files many machines keep their
/// temporary directories in), where no final's files belong.
fn kernel_dir(real: &Path) -> Option<&'static str> {
    if real.starts_with("/dev/shm") {
        return None;
    }
    ["/proc", "/sys", "/dev"]
        .into_iter()
        .find(|k| real.starts_with(k))
}

/// The files `--copy-to` will write, checked: each name is new there, or
/// already holds the same bytes (a rerun); a link or other file in the way
/// is refused, naming it.
fn check_copy_targets(out: &Path, files: &[std::path::PathBuf]) -> Result<(), Error> {
    for file in files {
        let dest = out.join(lockstep_core::fs::file_name(file));
        let Ok(meta) = dest.symlink_metadata() else {
            continue;
        };
        let same = meta.is_file()
            && lockstep_core::hash::sha256_file(&dest).ok()
                == lockstep_core::hash::sha256_file(file).ok();
        if !same {
            let what = if meta.file_type().is_symlink() {
                "a link"
            } else {
                "another file"
            };
            return Err(Error::usage(format!(
                "--copy-to: {} is {what}, not this final's file",
                dest.display()
            ))
            .hint("remove it or name another directory; lockstep never writes through a link or over a file; nothing was promoted"));
        }
    }
    Ok(())
}

/// Copies the final's files into `out`, each created new (never through a
/// link); one already there with the same bytes is kept.
fn copy_out(out: &Path, files: &[std::path::PathBuf]) -> Result<(), Error> {
    fs_err::create_dir_all(out)?;
    for file in files {
        let dest = out.join(lockstep_core::fs::file_name(file));
        if dest.symlink_metadata().is_ok() {
            check_copy_targets(out, std::slice::from_ref(file))?;
            continue;
        }
        let mut from = fs_err::File::open(file)?;
        let mut to = fs_err::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&dest)?;
        std::io::copy(&mut from, &mut to)?;
    }
    Ok(())
}
