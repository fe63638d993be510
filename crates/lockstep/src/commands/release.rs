//! `lockstep release ...`: flags into lockstep-release's calls, and the
//! human form of what they return.

use lockstep_core::Error;
use lockstep_integrate::config::IntegrateConfig;
use lockstep_release::config::ReleaseConfig;
use lockstep_release::cut::Channel;
use lockstep_release::settings::{self, Settings};

use crate::cli::{self, ReleaseChannel};
use crate::context::Ctx;

pub fn run(cmd: cli::Release, ctx: &Ctx) -> Result<i32, Error> {
    let release: ReleaseConfig = ctx.section()?;
    let root = ctx.root()?;
    let settings = settings::settings(&release, root)?;
    match cmd {
        cli::Release::Bump { to, smoke, .. } => bump(ctx, &release, &settings, to, smoke),
        cli::Release::Cut {
            channel,
            remote,
            run_id,
            base,
            if_new_commit,
            ..
        } => {
            let channel = match channel {
                ReleaseChannel::Snapshot => Channel::Snapshot,
                ReleaseChannel::Candidate => Channel::Candidate,
                ReleaseChannel::Final => Channel::Final,
            };
            let base = match base {
                Some(text) => settings::check_base_version(&text, "--base")?,
                None => settings::base_version(&release, root)?,
            };
            let repo = lockstep_release::open_repo(&ctx.cwd)?;
            let made = lockstep_release::cut::cut_head(
                &settings,
                &base,
                &repo,
                lockstep_release::cut::CutOptions {
                    channel,
                    remote: &remote,
                    run_id,
                    if_new_commit,
                },
            )?;
            ctx.result(&made, |out| {
                if made.skipped {
                    out.line(format!(
                        "nothing to cut: {} is already {} {} (tag {})",
                        &made.source[..12.min(made.source.len())],
                        settings.name,
                        made.version,
                        made.tag
                    ));
                    return;
                }
                let how = if made.reused { "reused" } else { "tagged" };
                out.line(format!(
                    "{} {} ({how} {} on {})",
                    settings.name,
                    made.version,
                    made.tag,
                    &made.source[..12.min(made.source.len())]
                ));
            })?;
            Ok(0)
        }
        cli::Release::Publish {
            wheelhouse,
            manifest,
            tag,
            github_release,
            ..
        } => {
            // Checked before anything is published.
            let github = match github_release {
                true => Some(lockstep_release::github::Target::prepare(
                    tag.as_deref(),
                    ctx.root()?,
                )?),
                false => None,
            };
            let wheelhouse = ctx.cwd.join(wheelhouse);
            let manifest = manifest
                .map(|m| ctx.cwd.join(m))
                .unwrap_or_else(|| wheelhouse.join(lockstep_python::pylock::FILE));
            let uv = crate::commands::pkg::find_uv(ctx)?.hiding(&webhook_var(ctx)?);
            // The tag `release cut` made says the channel and the pins.
            let facts = match &tag {
                Some(tag) => lockstep_release::cut::tag_facts_at(ctx.root()?, tag)?,
                None => None,
            };
            if let (Some(tag), None) = (&tag, &facts) {
                ctx.sink().warn(format!(
                    "tag {tag} is not a tag `release cut` made in this repository: the release records no channel or pins from it"
                ));
            }
            let facts = facts.unwrap_or_default();
            let facts_channel = facts.channel.clone();
            let facts_source = facts.source.clone();
            let published = lockstep_release::publish::publish(
                &lockstep_release::publish::PublishRequest {
                    manifest,
                    index: settings.index.clone(),
                    uv: &uv,
                    tag,
                    channel: facts.channel,
                    pins: facts.pins,
                    tag_version: facts.version,
                    tag_source: facts.source,
                    dependency_index: settings.dependency_index.clone(),
                    smoke: settings.smoke.clone(),
                    work: lockstep_release::publish::work_dir(),
                },
                ctx.sink(),
            )?;
            let github_release = match &github {
                Some(target) => Some(target.publish(
                    &settings.index,
                    &published.version,
                    facts_channel.as_deref(),
                    facts_source.as_deref(),
                    ctx.sink(),
                )?),
                None => None,
            };
            let report = PublishReport {
                published: &published,
                github_release: github_release.as_ref(),
            };
            ctx.result(&report, |out| {
                out.line(format!(
                    "published {} {}: {} new file(s); index: {} project(s), {} file(s) in {}",
                    published.packages.join(" "),
                    published.version,
                    published.added.len(),
                    published.index.projects,
                    published.index.files,
                    settings.index.display()
                ));
                if let Some(g) = &github_release {
                    out.line(format!(
                        "GitHub Release {} of {}{}: {} asset(s) uploaded, {} already there{}",
                        g.tag,
                        g.repository,
                        if g.created { " (created)" } else { "" },
                        g.uploaded.len(),
                        g.already_there.len(),
                        g.url
                            .as_deref()
                            .map(|u| format!(" ({u})"))
                            .unwrap_or_default()
                    ));
                }
            })?;
            Ok(0)
        }
        cli::Release::Index { base_url } => {
            let report = lockstep_release::index::rebuild(&settings.index, base_url.as_deref())?;
            ctx.out().line(format!(
                "{}: {} project(s), {} version(s), {} file(s) ({} yanked)",
                settings
                    .index
                    .join(lockstep_release::index::SIMPLE)
                    .display(),
                report.projects,
                report.versions,
                report.files,
                report.yanked
            ));
            Ok(0)
        }
        cli::Release::Serve { port, access_log } => {
            lockstep_release::index::require(&settings.index)?;
            let (listener, port) = lockstep_release::serve::bind(port)?;
            ctx.out()
                .line(format!("serving http://127.0.0.1:{port}/simple/"));
            // The engine reports each request; printing it is the binary's job
            // (`METHOD PATH` lines: scripts/bench-release greps them).
            let log: Option<lockstep_release::serve::AccessLog> = access_log.then(|| {
                std::sync::Arc::new(|a: &lockstep_release::serve::Access| {
                    eprintln!("{} {}", a.method, a.path.escape_debug())
                }) as lockstep_release::serve::AccessLog
            });
            let options = lockstep_release::serve::ServeOptions {
                access_log: log,
                ..Default::default()
            };
            lockstep_release::serve::serve(listener, settings.index.clone(), options)?;
            Ok(0)
        }
        cli::Release::Promote {
            version,
            to,
            rewrite_stamps,
            upload,
            ..
        } => {
            let uv = match &upload {
                Some(_) => Some(crate::commands::pkg::find_uv(ctx)?.hiding(&webhook_var(ctx)?)),
                None => None,
            };
            let promoted = lockstep_release::promote::promote_and_upload(
                &settings.index,
                &version,
                &to,
                rewrite_stamps,
                upload.as_deref().zip(uv.as_ref()),
                Some(ctx.root()?),
                ctx.sink(),
            )?;
            ctx.result(&promoted, |out| {
                out.line(format!(
                    "promoted {version} to {to}: {}",
                    promoted.wheels.join(" ")
                ))
            })?;
            Ok(0)
        }
        cli::Release::Prune { yank, dry_run, .. } => {
            let repo = lockstep_release::open_repo(&ctx.cwd).ok();
            let pruned = lockstep_release::prune::prune(&lockstep_release::prune::PruneRequest {
                index: &settings.index,
                keep_snapshots: release.keep.snapshots,
                keep_days: release.keep.days,
                repo: repo.as_ref(),
                branches: &release.branches,
                pin_files: &settings.pin_files,
                yank,
                dry_run,
            })?;
            ctx.result(&pruned, |out| {
                let verb = match (dry_run, yank) {
                    (true, true) => "would yank",
                    (true, false) => "would remove",
                    (false, true) => "yanked",
                    (false, false) => "removed",
                };
                let list = if yank {
                    &pruned.yanked
                } else {
                    &pruned.removed
                };
                out.line(format!(
                    "{verb} {} version(s){}{}; kept {}",
                    list.len(),
                    if list.is_empty() { "" } else { ": " },
                    list.join(" "),
                    pruned.kept
                ));
                if !pruned.referenced.is_empty() {
                    out.line(format!(
                        "kept because a branch names them: {}",
                        pruned.referenced.join(" ")
                    ));
                }
            })?;
            Ok(0)
        }
        cli::Release::Yank { version, reason } => {
            lockstep_release::index::yank_and_index(&settings.index, &version, &reason)?;
            ctx.sink().note(format!(
                "{version} is yanked: installers skip it unless it is pinned with =="
            ));
            ctx.out().line(format!("yanked {version}"));
            Ok(0)
        }
    }
}

/// `release bump`: the pin files to upstream's head (or `--to`), with
/// `--smoke` tried first: through the integrate engine's prober when
/// `[integrate] pin-file` is that one pin file, else `[integrate] smoke`.
fn bump(
    ctx: &Ctx,
    release: &ReleaseConfig,
    settings: &Settings,
    to: Option<String>,
    smoke: bool,
) -> Result<i32, Error> {
    let integrate: IntegrateConfig = ctx.section()?;
    let repo = lockstep_release::open_repo(&ctx.cwd)?;
    let pin_file = integrate.pin_file.clone().filter(|_| smoke);
    if let Some(file) = &pin_file {
        if settings.pin_files.as_slice() != [file.clone()] {
            return Err(Error::usage(format!(
                "with [integrate] pin-file = \"{file}\", `bump --smoke` moves that file through the integrate engine"
            ))
            .hint(format!("set [release] pin-files = [\"{file}\"]")));
        }
    } else if smoke && integrate.smoke.is_empty() {
        return Err(Error::usage("--smoke needs [integrate] smoke")
            .hint("set smoke = [\"cmd\", \"arg\"] under [integrate]"));
    }
    let request = lockstep_release::bump::BumpRequest {
        repo: &repo,
        pin_files: &settings.pin_files,
        // A pin-file integrate names its upstream in [integrate].
        upstream_url: release
            .upstream_url
            .as_deref()
            .or(pin_file.as_ref().and(integrate.upstream_url.as_deref())),
        upstream_branch: &release.upstream_branch,
        to: to.as_deref(),
    };
    let bumped = match (smoke, &pin_file) {
        (false, _) => lockstep_release::bump::bump(&request, None)?,
        (true, Some(_)) => {
            let ig = lockstep_integrate::Integrate::open(&integrate, ctx.root()?, ctx.sink())?;
            let mut probe = ig.pin_smoke()?;
            lockstep_release::bump::bump(&request, Some(&mut probe))?
        }
        (true, None) => {
            let log_dir = repo.git_dir()?.join("lockstep");
            let mut probe = lockstep_release::bump::CommandSmoke {
                top: repo.dir().into(),
                pin_files: settings.pin_files.clone(),
                argv: integrate.smoke.clone(),
                timeout: integrate.smoke_timeout,
                log: log_dir.join("release-bump-smoke.log"),
            };
            lockstep_release::bump::bump(&request, Some(&mut probe))?
        }
    };
    ctx.result(&bumped, |out| match &bumped.commit {
        Some(commit) => out.line(format!(
            "bumped {} to {} ({})",
            bumped.changed.join(" "),
            bumped.to,
            &commit[..12.min(commit.len())]
        )),
        None => out.line(format!("already at {}: nothing to commit", bumped.to)),
    })?;
    Ok(0)
}

/// The variable holding the webhook URL (`[integrate.notify] url-env`): a
/// secret no child process may see.
fn webhook_var(ctx: &Ctx) -> Result<String, Error> {
    Ok(ctx.section::<IntegrateConfig>()?.notify.url_env)
}

/// `release publish --json`: the publish report, with the GitHub Release's
/// when `--github-release` made one.
#[derive(serde::Serialize)]
struct PublishReport<'a> {
    #[serde(flatten)]
    published: &'a lockstep_release::publish::Published,
    #[serde(skip_serializing_if = "Option::is_none")]
    github_release: Option<&'a lockstep_release::github::GithubRelease>,
}
