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
use lockstep_github::releases::{AssetUpload, NewRelease};
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
        .try_git_remote("origin", &["ls-remote", "--tags", "origin", &name, &peeled])
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

    /// Creates or completes the release of the tag with the files of
    /// `version` in the store under `index`.
    pub fn publish(
        &self,
        settings: &Settings,
        version: &str,
        channel: Option<&str>,
        source: Option<&str>,
        sink: &dyn Sink,
    ) -> Result<GithubRelease, Error> {
        let (index, binaries, hosting) = (&settings.index, &settings.binaries, settings.hosting);
        if version.contains('+') {
            // GitHub renames asset names with `+`: SHA256SUMS would not match them.
            return Err(Error::usage(format!(
                "{version} is a local version: GitHub renames assets whose names hold `+`"
            ))
            .hint("publish GitHub Releases of snapshot, candidate or final versions only"));
        }
        let dir = index.join(store::FILES).join(version);
        let mut record = store::load_or_scan(&dir)?;
        let (release, created) = match self.client.release_for_tag(&self.repo, &self.tag)? {
            Some(release) => (release, false),
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
            Hosting::GithubReleases => Some(download_base(&release, &self.tag)?),
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
            None => programs(&dir, &record, version, binaries)?,
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
                // A released file GitHub has: compared without reading it
                // (a hosted store no longer holds it).
                if have.size != file.size {
                    return Err(Error::failed(format!(
                        "the GitHub Release of {} has an asset {name} of {} bytes, not the {} published",
                        self.tag, have.size, file.size
                    ))
                    .hint("released files are immutable: delete that asset on GitHub if it is wrong, then publish again"));
                }
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
                metadata_file(&dir, &record, wheel)?
            } else {
                stored_file(&dir, &record, name)?
            };
            if let Some(have) = release.assets.iter().find(|a| &a.name == name) {
                if have.size != bytes.len() as u64 {
                    return Err(Error::failed(format!(
                        "the GitHub Release of {} has an asset {name} of {} bytes, not the {} published",
                        self.tag,
                        have.size,
                        bytes.len()
                    ))
                    .hint("released files are immutable: delete that asset on GitHub if it is wrong, then publish again"));
                }
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
        if let Some(base) = &hosted {
            crate::index::mark_hosted(index, version, base)?;
        }
        Ok(report)
    }
}

/// Where a Release's assets download from: its page's URL with
/// `/releases/tag/TAG` turned into `/releases/download/TAG/`.
fn download_base(release: &lockstep_github::releases::Release, tag: &str) -> Result<String, Error> {
    let page = release.html_url.as_deref().unwrap_or_default();
    match page.rsplit_once("/releases/tag/") {
        Some((repo, _)) if page.starts_with("https://") || is_loopback_http(page) => {
            Ok(format!("{repo}/releases/download/{}/", lockstep_github::releases::encode_segment(tag)))
        }
        _ => Err(Error::failed(format!(
            "GitHub did not say where the Release of {tag} is (html_url `{}`)",
            lockstep_core::error::printable(page)
        ))
        .hint("[release] hosting = \"github-releases\" links the index to the Release's downloads; nothing was published to the index")),
    }
}

/// `http://127.0.0.1...` or `http://localhost...`: a GitHub on this machine.
fn is_loopback_http(url: &str) -> bool {
    [
        "http://127.0.0.1:",
        "http://127.0.0.1/",
        "http://localhost:",
        "http://localhost/",
    ]
    .iter()
    .any(|p| url.starts_with(p))
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
