//! `release publish` as one step: the facts of the tag `release cut` made
//! (channel, pins, version, source), the wheelhouse validated and added to
//! the store ([`crate::publish`]), then the GitHub Release of the tag when
//! one was asked for ([`crate::github`]). The binary resolves the flags,
//! the GitHub target (checked before anything is published) and uv.

use std::path::{Path, PathBuf};

use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_python::uv::Uv;
use serde::Serialize;

use crate::config::Hosting;
use crate::github::{GithubRelease, Target};
use crate::publish::{self, PublishRequest, Published};
use crate::settings::Settings;

/// `release publish --json`: the publish report, with the GitHub Release's
/// when `--github-release` made one.
#[derive(Debug, Serialize)]
pub struct PublishReport {
    #[serde(flatten)]
    pub published: Published,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub github_release: Option<GithubRelease>,
}

/// What `release publish` is given, resolved.
pub struct Publication<'a> {
    pub settings: &'a Settings,
    /// Each wheelhouse's manifest (one per Python), published as one version.
    pub manifests: Vec<PathBuf>,
    /// `--tag`: the tag `release cut` made.
    pub tag: Option<String>,
    pub uv: &'a Uv,
    /// `--github-release`, prepared.
    pub github: Option<&'a Target>,
    /// The repository holding the tag.
    pub root: &'a Path,
}

/// Publishes; see the module doc. A tag `release cut` did not make is a
/// warning: the release then records no channel or pins.
pub fn publish_release(p: Publication, sink: &dyn Sink) -> Result<PublishReport, Error> {
    if p.settings.hosting == Hosting::GithubReleases && p.github.is_none() {
        return Err(Error::usage(
            "[release] hosting = \"github-releases\": the files are served from the version's GitHub Release, so publish needs --github-release",
        )
        .hint("pass --github-release --tag TAG (with $GITHUB_TOKEN), or set [release] hosting = \"pages\"; nothing was published"));
    }
    if let Some(tag) = &p.tag {
        crate::template::check_tag_name(tag)?;
    }
    let facts = match &p.tag {
        Some(tag) => crate::cut::tag_facts_at(p.root, tag)?,
        None => None,
    };
    if let (Some(tag), None) = (&p.tag, &facts) {
        sink.warn(format!(
            "tag {tag} is not a tag `release cut` made in this repository: the release records no channel or pins from it"
        ));
    }
    let facts = facts.unwrap_or_default();
    let (channel, source) = (facts.channel.clone(), facts.source.clone());
    let mut staged = publish::stage(
        &PublishRequest {
            manifests: p.manifests,
            index: p.settings.index.clone(),
            uv: p.uv,
            tag: p.tag,
            channel: facts.channel,
            pins: facts.pins,
            tag_version: facts.version,
            tag_source: facts.source,
            dependency_index: p.settings.dependency_index.clone(),
            pages_limit: p.settings.pages_limit,
            smoke: p.settings.smoke.clone(),
            work: publish::work_dir(),
        },
        sink,
    )?;
    // The GitHub Release is made from the staged files, before the store
    // changes: a failed upload leaves the store and index as they were
    // (the Release keeps what it got; a rerun completes it).
    let github_release = match p.github {
        Some(target) => {
            let dir = staged.dir()?;
            let record = staged.record()?;
            let (report, hosted) = target.publish(
                p.settings,
                &dir,
                &record,
                channel.as_deref(),
                source.as_deref(),
                sink,
            )?;
            if let Some(base) = hosted {
                staged.tx.mark_hosted(&record.version, &base)?;
            }
            Some(report)
        }
        None => None,
    };
    let published = staged.commit()?;
    Ok(PublishReport {
        published,
        github_release,
    })
}
