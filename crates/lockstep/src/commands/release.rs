//! `lockstep release ...`: flags into lockstep-release's calls; what they
//! return printed as JSON or in its human form (lockstep_release::human).

use lockstep_core::Error;
use lockstep_integrate::config::IntegrateConfig;
use lockstep_release::bump::{self, BumpRequest, CommandSmoke};
use lockstep_release::config::ReleaseConfig;
use lockstep_release::cut::Channel;
use lockstep_release::human;
use lockstep_release::settings::{self, Settings};

use crate::context::Ctx;
use lockstep_cmdline::{self as cli, ReleaseChannel};

pub fn run(cmd: cli::Release, ctx: &Ctx) -> Result<i32, Error> {
    let release: ReleaseConfig = ctx.section()?;
    let root = ctx.root()?;
    // [integrate]'s pin, of any kind, is one of the project's pins.
    let integrate_pin = lockstep_integrate::config::configured_pin(ctx.loaded()?)?;
    let mut settings = settings::settings(&release, root)?;
    if let Some(pin) = &integrate_pin {
        settings = settings.with_pin(pin.clone());
    }
    match cmd {
        cli::Release::Bump { to, smoke, .. } => {
            bump(ctx, &release, &settings, integrate_pin.as_ref(), to, smoke)
        }
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
            ctx.show(&made, |made| human::cut(made, &settings.name))
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
                    root,
                )?),
                false => None,
            };
            let manifests =
                match (manifest, wheelhouse.as_slice()) {
                    (Some(m), [_]) => vec![ctx.cwd.join(m)],
                    (Some(_), _) => return Err(Error::usage(
                        "--manifest names the manifest of one wheelhouse, but several were given",
                    )
                    .hint("drop --manifest: each wheelhouse's pylock.toml is read")),
                    // A wheelhouse, or a variant's manifest in one
                    // (`WH/pylock.asserts.toml`).
                    (None, houses) => houses
                        .iter()
                        .map(|h| match h.extension().is_some_and(|e| e == "toml") {
                            true => ctx.cwd.join(h),
                            false => ctx.cwd.join(h).join(lockstep_python::pylock::FILE),
                        })
                        .collect(),
                };
            let uv = super::pkg::find_uv(ctx)?;
            let publication = lockstep_release::publication::Publication {
                settings: &settings,
                manifests,
                tag,
                uv: &uv,
                github: github.as_ref(),
                root,
            };
            let report = lockstep_release::publication::publish_release(publication, ctx.sink())?;
            ctx.show(&report, |r| human::published(r, &settings.index))
        }
        cli::Release::Sync { repo, .. } => {
            let (client, repo) = lockstep_release::sync::connect_to(root, repo.as_deref())?;
            let synced =
                lockstep_release::sync::from_github(&settings.index, &client, &repo, ctx.sink())?;
            ctx.show(&synced, |s| human::synced(s, &settings.index))
        }
        cli::Release::Index { base_url } => {
            let report = lockstep_release::txn::rebuild(&settings.index, base_url.as_deref())?;
            ctx.out().print(&human::indexed(&report, &settings.index));
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
            tag,
            github_release,
            release_branch,
            copy_to,
            remote,
            ..
        } => {
            let uv = match &upload {
                Some(_) => Some(super::pkg::find_uv(ctx)?),
                None => None,
            };
            let out = copy_to.map(|o| ctx.cwd.join(o));
            let shipped = lockstep_release::final_release::ship(
                &lockstep_release::final_release::Ship {
                    settings: &settings,
                    final_tag: &release.final_tag,
                    branch_template: &release.branch,
                    from: &version,
                    to: to.as_deref(),
                    rewrite_stamps,
                    tag,
                    github_release,
                    release_branch,
                    out,
                    remote: &remote,
                    root,
                    upload: upload.as_deref().zip(uv.as_ref()),
                },
                ctx.sink(),
            )?;
            ctx.show(&shipped, human::shipped)
        }
        cli::Release::Upload {
            dir,
            url,
            trusted_publishing,
            ..
        } => {
            let uv = super::pkg::find_uv(ctx)?;
            let report = lockstep_release::upload::upload_dir(
                &uv,
                &url,
                &ctx.cwd.join(dir),
                trusted_publishing,
                ctx.sink(),
            )?;
            ctx.show(&report, human::uploaded)
        }
        cli::Release::Prune { yank, dry_run, .. } => {
            let repo = lockstep_release::open_repo(&ctx.cwd).ok();
            let hosted = settings.hosting == lockstep_release::config::Hosting::GithubReleases;
            let github = match hosted && !dry_run && !yank {
                true => Some(lockstep_release::sync::connect(root)?),
                false => None,
            };
            let pruned = lockstep_release::prune::prune(&lockstep_release::prune::PruneRequest {
                github: github.as_ref().map(|(client, repo)| (client, repo)),
                index: &settings.index,
                keep_snapshots: release.keep.snapshots,
                keep_days: release.keep.days,
                repo: repo.as_ref(),
                branches: &release.branches,
                pin_files: &settings.pin_paths(),
                yank,
                dry_run,
            })?;
            ctx.show(&pruned, |p| human::pruned(p, dry_run, yank))
        }
        cli::Release::Yank { version, reason } => {
            lockstep_release::txn::yank_and_index(&settings.index, &version, &reason)?;
            ctx.sink().note(format!(
                "{version} is yanked: installers skip it unless it is pinned with =="
            ));
            ctx.out().line(format!("yanked {version}"));
            Ok(0)
        }
    }
}

/// `release bump`: the pins kept in files to upstream's head (or `--to`),
/// with `--smoke` tried first: through the integrate engine's prober when
/// `[integrate]`'s pin is the one pin, else `[integrate] smoke`.
fn bump(
    ctx: &Ctx,
    release: &ReleaseConfig,
    settings: &Settings,
    integrate_pin: Option<&lockstep_pin::Pin>,
    to: Option<String>,
    smoke: bool,
) -> Result<i32, Error> {
    let integrate: IntegrateConfig = ctx.section()?;
    let repo = lockstep_release::open_repo(&ctx.cwd)?;
    let pins = settings.bumped_pins();
    if smoke {
        bump::check_smoke(integrate_pin, &pins, &integrate.smoke)?;
    }
    // [integrate]'s pin names its upstream in [integrate]: no second setting.
    let moves_integrate_pin =
        integrate_pin.is_some_and(|i| pins.iter().any(|p| p.path() == i.path()));
    let request = BumpRequest {
        repo: &repo,
        pins: &pins,
        upstream_url: release.upstream_url.as_deref().or(integrate
            .upstream_url
            .as_deref()
            .filter(|_| moves_integrate_pin)),
        upstream_branch: &release.upstream_branch,
        to: to.as_deref(),
    };
    let bumped = match (smoke, bump::uses_integrate_prober(integrate_pin, &pins)) {
        (false, _) => bump::bump(&request, None)?,
        (true, true) => {
            let ig = lockstep_integrate::Integrate::open(&integrate, ctx.root()?, ctx.sink())?;
            bump::bump(
                &request,
                Some(&mut lockstep_integrate::probe::pin_smoke(&ig)?),
            )?
        }
        (true, false) => {
            let argv = integrate.smoke.clone();
            let timeout = integrate.smoke_timeout;
            let mut probe = CommandSmoke::in_repo(&repo, &pins, argv, timeout)?;
            bump::bump(&request, Some(&mut probe))?
        }
    };
    ctx.show(&bumped, human::bumped)
}
