//! `lockstep release publish --github-release`: the published version's
//! files and a `SHA256SUMS` as the assets of the GitHub Release of its tag,
//! created when missing (a prerelease unless the channel is `final`),
//! completed when it exists. Assets GitHub already has are left as they
//! are (released files are immutable), so a rerun uploads only what is
//! missing.
//!
//! Everything that can be checked is checked before the store is touched
//! ([`Target::prepare`]): the tag is given, a token is set, the repository
//! is known and the API URL acceptable.

use lockstep_python::sdist::SdistName;
use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_github::releases::{AssetUpload, NewRelease, Release as GithubReleaseData};
use lockstep_github::{Client, Repo};
use serde::Serialize;

use crate::config::{BinaryConfig, Hosting};
use crate::settings::Settings;
use crate::store;

/// The checksum file's asset name.
pub const SUMS: &str = "SHA256SUMS";

/// Where the release goes, resolved before anything is published.
pub struct Target {
    client: Client,
    repo: Repo,
    tag: String,
    /// The commit the tag names in the repository at `root`.
    commit: String,
}

/// The commit `tag` names: here, else on `origin` (a CI job's checkout
/// has no tags; the Release is made where GitHub sees the tag).
fn tag_commit(git: &lockstep_git::Repo, tag: &str) -> Option<String> {
    let name = format!("refs/tags/{tag}");
    if let Some(commit) = git.resolve(&name).ok().flatten() {
        return Some(commit);
    }
    let peeled = format!("{name}^{{}}");
    let listed = git
        .try_git_remote(
            "origin",
            &["ls-remote", "--tags", "--", "origin", &name, &peeled],
        )
        .ok()
        .filter(|o| o.code == 0)?;
    let entries: Vec<(&str, &str)> = listed
        .stdout
        .lines()
        .filter_map(|l| l.split_once('\t'))
        .collect();
    // An annotated tag lists its object, then the commit it peels to.
    entries
        .iter()
        .find(|(_, r)| *r == peeled)
        .or_else(|| entries.iter().find(|(_, r)| *r == name))
        .map(|(oid, _)| oid.to_string())
        .filter(|oid| oid.len() >= 40 && oid.bytes().all(|b| b.is_ascii_hexdigit()))
}

/// What `--github-release` did.
#[derive(Debug, Clone, Serialize)]
pub struct GithubRelease {
    pub repository: String,
    pub tag: String,
    pub url: Option<String>,
    pub created: bool,
    pub uploaded: Vec<String>,
    pub already_there: Vec<String>,
}

impl Target {
    /// The client (`$GITHUB_API_URL`, `$GITHUB_TOKEN`), the repository
    /// (`$GITHUB_REPOSITORY`, else `origin` of the repository at `root`)
    /// and the tag, checked.
    pub fn prepare(tag: Option<&str>, root: &Path) -> Result<Target, Error> {
        let tag = tag.ok_or_else(|| {
            Error::usage("--github-release needs --tag: a GitHub Release belongs to a tag")
                .hint("pass the tag `release cut` printed (`--tag TAG`)")
        })?;
        crate::template::check_tag_name(tag)?;
        let git = lockstep_git::Repo::discover(root).ok();
        let commit = git
            .as_ref()
            .and_then(|g| tag_commit(g, tag))
            .ok_or_else(|| {
                Error::usage(format!(
                    "--github-release: there is no tag `{tag}` in this repository or its `origin`"
                ))
                .hint("pass the tag `release cut` printed (and pushed); a GitHub Release of a missing tag would tag the default branch. Nothing was published")
            })?;
        let client = Client::from_env()?;
        if !client.has_token() {
            return Err(Error::usage(
                "--github-release needs a token: $GITHUB_TOKEN (or $GH_TOKEN) is not set",
            )
            .hint("set GITHUB_TOKEN to a token that may write the repository's releases (contents: write)"));
        }
        let origin = git.and_then(|git| git.remote_url("origin").ok().flatten());
        let repo = lockstep_github::repo::resolve(None, origin.as_deref(), &client.web_host())?;
        Ok(Target {
            client,
            repo,
            tag: tag.to_string(),
            commit: commit.to_string(),
        })
    }

    /// The repository the Release goes to.
    pub fn repo(&self) -> &Repo {
        &self.repo
    }

    /// The tag.
    pub fn tag(&self) -> &str {
        &self.tag
    }

    /// Creates or completes the Release of the tag with the files of
    /// `record`, read from `dir` (the version's staged store directory:
    /// nothing is in the store yet). Returns what it did and, with hosting
    /// on GitHub, the download base the index links (the caller records it
    /// in the same store transaction). A Release of the tag that holds
    /// another version's `release.json` is refused (exit 2) before any
    /// upload: a tag belongs to one version.
    pub fn publish(
        &self,
        settings: &Settings,
        dir: &Path,
        record: &store::Release,
        channel: Option<&str>,
        source: Option<&str>,
        sink: &dyn Sink,
    ) -> Result<(GithubRelease, Option<String>), Error> {
        let (binaries, hosting) = (&settings.binaries, settings.hosting);
        let version = record.version.as_str();
        if version.contains('+') {
            // GitHub renames asset names with `+`: SHA256SUMS would not match them.
            return Err(Error::usage(format!(
                "{version} is a local version: GitHub renames assets whose names hold `+`"
            ))
            .hint("publish GitHub Releases of snapshot, candidate or final versions only"));
        }
        let mut record = record.clone();
        let (release, created) = match self.client.release_for_tag(&self.repo, &self.tag)? {
            Some(release) => {
                self.check_owner(&release, version)?;
                (release, false)
            }
            None => {
                sink.note(format!(
                    "creating the GitHub Release of {} in {}",
                    self.tag, self.repo
                ));
                let new = NewRelease {
                    tag_name: self.tag.clone(),
                    // If GitHub does not have the tag yet, it is made here,
                    // at the commit the release was built from.
                    target_commitish: Some(
                        source
                            .or(record.source.as_deref())
                            .unwrap_or(&self.commit)
                            .to_string(),
                    ),
                    name: self.tag.clone(),
                    body: body(version, channel, &record),
                    draft: false,
                    prerelease: channel != Some("final"),
                };
                (self.client.create_release(&self.repo, &new)?, true)
            }
        };
        let mut report = GithubRelease {
            repository: self.repo.to_string(),
            tag: self.tag.clone(),
            url: release.html_url.clone(),
            created,
            uploaded: Vec::new(),
            already_there: Vec::new(),
        };
        let mut assets: Vec<(String, &str)> = record
            .files
            .iter()
            .map(|f| {
                let kind = if SdistName::looks_like(&f.filename) {
                    "application/gzip"
                } else {
                    "application/zip"
                };
                (f.filename.clone(), kind)
            })
            .collect();
        // Hosted here: each wheel's core metadata (PEP 658: the index
        // promises `URL.metadata`) goes beside it.
        let hosted = match hosting {
            Hosting::GithubReleases => {
                Some(self.client.release_download_base(&self.repo, &release)?)
            }
            Hosting::Pages => None,
        };
        if hosted.is_some() {
            for f in record.files.iter().filter(|f| f.metadata_sha256.is_some()) {
                assets.push((format!("{}.metadata", f.filename), "text/plain"));
            }
        }
        // The standalone programs, taken out of the stored wheels before
        // anything is uploaded: a missing one fails the whole publish.
        let programs = match record.hosted {
            // Published before: the wheels are no longer here.
            Some(_) => Vec::new(),
            None => programs(dir, &record, version, binaries)?,
        };
        for (name, _) in &programs {
            assets.push((name.clone(), "application/octet-stream"));
        }
        assets.push((SUMS.to_string(), "text/plain"));
        // The record last: a Release holding it is complete, which is what
        // `release sync --from-github` trusts.
        if let Some(base) = &hosted {
            record.hosted = Some(base.clone());
            assets.push((store::RELEASE_JSON.to_string(), "application/json"));
        }
        let program_sums: Vec<(String, String)> = programs
            .iter()
            .map(|(name, bytes)| (name.clone(), lockstep_core::hash::sha256_bytes(bytes)))
            .collect();
        for (name, content_type) in &assets {
            let stored = record.files.iter().find(|f| &f.filename == name);
            if let (Some(have), Some(file)) =
                (release.assets.iter().find(|a| &a.name == name), stored)
            {
                // A released file GitHub has: compared by its digest (a
                // hosted store no longer holds it).
                self.require_same(have, file.size, &file.sha256)?;
                report.already_there.push(name.clone());
                continue;
            }
            // One file in memory at a time, checked against the record.
            let bytes = if name == SUMS {
                sums_with(&record, &program_sums).into_bytes()
            } else if name == store::RELEASE_JSON {
                store::record_bytes(&record)?
            } else if let Some((_, bytes)) = programs.iter().find(|(n, _)| n == name) {
                bytes.clone()
            } else if let Some(wheel) = name.strip_suffix(".metadata") {
                metadata_file(dir, &record, wheel)?
            } else {
                stored_file(dir, &record, name)?
            };
            if let Some(have) = release.assets.iter().find(|a| &a.name == name) {
                let sha256 = lockstep_core::hash::sha256_bytes(&bytes);
                self.require_same(have, bytes.len() as u64, &sha256)?;
                report.already_there.push(name.clone());
                continue;
            }
            sink.note(format!(
                "uploading {name} to the GitHub Release of {}",
                self.tag
            ));
            match self
                .client
                .upload_asset(&release, name, content_type, &bytes)?
            {
                AssetUpload::Sent => report.uploaded.push(name.clone()),
                AssetUpload::AlreadyThere => report.already_there.push(name.clone()),
            }
        }
        Ok((report, hosted))
    }

    /// Refuses a Release of the tag whose `release.json` names another
    /// version or tag (it belongs to that version; lockstep never adds to
    /// or deletes what another version published).
    fn check_owner(&self, release: &GithubReleaseData, version: &str) -> Result<(), Error> {
        let Some(owner) = release_record(&self.client, &self.repo, release)? else {
            return Ok(());
        };
        let same_version = owner
            .version
            .parse::<pep440_rs::Version>()
            .ok()
            .zip(version.parse::<pep440_rs::Version>().ok())
            .is_some_and(|(a, b)| a == b);
        if !same_version || owner.tag.as_deref() != Some(self.tag.as_str()) {
            return Err(Error::usage(format!(
                "the GitHub Release of {} holds {}, not {version}",
                self.tag,
                lockstep_core::error::printable(&owner.version)
            ))
            .cause("its release.json says so: a tag and its Release belong to one version")
            .hint(
                "cut a new tag for this version (`lockstep release cut`); nothing was published",
            ));
        }
        Ok(())
    }

    /// An asset GitHub has under a name lockstep would upload must be the
    /// same file: same size and, by GitHub's digest or else by its bytes,
    /// the same sha256. Released files are immutable: a different one is an
    /// error, never "already there".
    fn require_same(
        &self,
        have: &lockstep_github::releases::Asset,
        size: u64,
        sha256: &str,
    ) -> Result<(), Error> {
        let differs = || {
            let digest = have
                .digest
                .as_deref()
                .map(|d| format!(", {}", lockstep_core::error::printable_line(d)))
                .unwrap_or_default();
            Error::failed(format!(
                "the GitHub Release of {} has an asset {} that is not the file published",
                self.tag,
                lockstep_core::error::printable_line(&have.name)
            ))
            .cause(format!(
                "GitHub: {} bytes{digest}; published: {size} bytes, sha256 {sha256}",
                have.size
            ))
            .hint("released files are immutable: delete that asset on GitHub if it is wrong, then publish again")
        };
        if have.size != size {
            return Err(differs());
        }
        let same = match have
            .digest
            .as_deref()
            .and_then(|d| d.strip_prefix("sha256:"))
        {
            Some(digest) => digest.eq_ignore_ascii_case(sha256),
            None => {
                let bytes = self.client.download_asset(&self.repo, have, size)?;
                lockstep_core::hash::sha256_bytes(&bytes) == sha256
            }
        };
        match same {
            true => Ok(()),
            false => Err(differs()),
        }
    }
}

/// The largest `release.json` asset read.
pub const MAX_RECORD_BYTES: u64 = 4 << 20;

/// The version record `release` carries as its `release.json` asset
/// (parsed, not yet checked); `None` when it carries none.
pub fn release_record(
    client: &Client,
    repo: &Repo,
    release: &GithubReleaseData,
) -> Result<Option<store::Release>, Error> {
    let Some(asset) = release
        .assets
        .iter()
        .find(|a| a.name == store::RELEASE_JSON)
    else {
        return Ok(None);
    };
    let tag = lockstep_core::error::printable_line(&release.tag_name);
    let bytes = client.download_asset(repo, asset, MAX_RECORD_BYTES)?;
    serde_json::from_slice(&bytes).map(Some).map_err(|e| {
        Error::failed(format!(
            "the release.json of the GitHub Release {tag} is not a release record"
        ))
        .cause(e.to_string())
        .hint("delete that asset if it is not lockstep's; nothing was changed")
    })
}

/// A wheel's stored core metadata, checked against its sha256.
fn metadata_file(dir: &Path, record: &store::Release, wheel: &str) -> Result<Vec<u8>, Error> {
    let want = record
        .files
        .iter()
        .find(|f| f.filename == wheel)
        .and_then(|f| f.metadata_sha256.clone());
    checked_bytes(dir, &format!("{wheel}.metadata"), want)
}

/// `SHA256SUMS`: `sha256  file` per file, by name (what `sha256sum -c` reads).
pub fn sums(record: &store::Release) -> String {
    sums_with(record, &[])
}

/// [`sums`] with more assets (`(name, sha256)`: the standalone programs).
fn sums_with(record: &store::Release, more: &[(String, String)]) -> String {
    let mut files: Vec<(&str, &str)> = record
        .files
        .iter()
        .map(|f| (f.filename.as_str(), f.sha256.as_str()))
        .chain(more.iter().map(|(n, h)| (n.as_str(), h.as_str())))
        .collect();
    files.sort();
    files
        .iter()
        .map(|(name, sha256)| format!("{sha256}  {name}\n"))
        .collect()
}

/// A stored file's bytes, checked against its sha256 in release.json.
fn stored_file(dir: &Path, record: &store::Release, name: &str) -> Result<Vec<u8>, Error> {
    let want = record
        .files
        .iter()
        .find(|f| f.filename == name)
        .map(|f| f.sha256.clone());
    checked_bytes(dir, name, want)
}

/// The bytes of `dir/name`, which must hash to `want`.
fn checked_bytes(dir: &Path, name: &str, want: Option<String>) -> Result<Vec<u8>, Error> {
    let bytes = fs_err::read(dir.join(name))?;
    if Some(lockstep_core::hash::sha256_bytes(&bytes)) != want {
        return Err(Error::failed(format!(
            "{name} in the store does not match its sha256 in release.json"
        ))
        .hint("the store was changed by hand: restore the file, or yank the version"));
    }
    Ok(bytes)
}

/// The largest program taken out of a wheel.
const MAX_PROGRAM_BYTES: u64 = 512 << 20;

/// `[release] binaries` of `version`: each program out of each stored
/// wheel of its package, named `SCRIPT-VERSION-PLATFORM` (the wheel's
/// first platform tag), with its bytes. A package with no wheel, or a
/// wheel without the program, is an error: the release would miss it.
fn programs(
    dir: &Path,
    record: &store::Release,
    version: &str,
    binaries: &[BinaryConfig],
) -> Result<Vec<(String, Vec<u8>)>, Error> {
    let mut out = Vec::new();
    for binary in binaries {
        let package = lockstep_python::wheel::normalize(&binary.package);
        let wheels: Vec<(&str, lockstep_python::wheel::WheelName)> = record
            .files
            .iter()
            .filter_map(|f| {
                let name = lockstep_python::wheel::WheelName::parse(&f.filename)?;
                (name.name == package).then_some((f.filename.as_str(), name))
            })
            .collect();
        if wheels.is_empty() {
            return Err(Error::usage(format!(
                "[release] binaries: {version} has no wheel of {}",
                binary.package
            ))
            .hint("publish a set that builds it, or remove the entry; nothing was uploaded"));
        }
        for (file, wheel) in wheels {
            let bytes = stored_file(dir, record, file)?;
            let program = lockstep_python::wheel::script(&bytes, &binary.script, MAX_PROGRAM_BYTES)
                .map_err(|e| Error::failed(format!("cannot read {file}")).cause(e))?
                .ok_or_else(|| {
                    Error::usage(format!(
                        "[release] binaries: {file} has no program `{}` in its scripts",
                        binary.script
                    ))
                    .hint("name the program the wheel installs (its .data/scripts file); nothing was uploaded")
                })?;
            let platform = wheel.platform.split('.').next().unwrap_or(&wheel.platform);
            out.push((format!("{}-{version}-{platform}", binary.script), program));
        }
    }
    Ok(out)
}

/// The release's description: version, channel, source and pins.
fn body(version: &str, channel: Option<&str>, record: &store::Release) -> String {
    let mut text = format!(
        "{version} ({}), published by lockstep.\n",
        channel.unwrap_or("no channel recorded")
    );
    if let Some(source) = &record.source {
        text.push_str(&format!("\nSource: {source}\n"));
    }
    if !record.pins.is_empty() {
        text.push_str("\nPins:\n");
        for (path, rev) in &record.pins {
            text.push_str(&format!("- {path}: {rev}\n"));
        }
    }
    text.push_str(&format!(
        "\nVerify the assets with `sha256sum -c {SUMS}`.\n"
    ));
    text
}
