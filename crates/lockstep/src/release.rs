//! `lockstep release ...`: dispatch and printing (the engine is lockstep-release).

use std::collections::BTreeMap;
use std::path::Path;

use lockstep_core::config::Loaded;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_integrate::config::IntegrateConfig;
use lockstep_release::config::ReleaseConfig;
use lockstep_release::cut::{self, Channel, CutRequest};
use lockstep_release::settings;
use lockstep_report::Reporters;

use crate::cli::{self, ReleaseChannel};

pub fn run(cmd: cli::Release, loaded: &Loaded, cwd: &Path, rep: &Reporters) -> Result<i32, Error> {
    let release: ReleaseConfig = loaded.section()?;
    let integrate: IntegrateConfig = loaded.section()?;
    let settings = settings::settings(&release, &loaded.root)?;
    match cmd {
        cli::Release::Bump { to, smoke, json } => {
            if let (true, Some(file)) = (smoke, &integrate.pin_file) {
                if settings.pin_files.as_slice() != [file.clone()] {
                    return Err(Error::usage(format!(
                        "with [integrate] pin-file = \"{file}\", `bump --smoke` moves that file through the integrate engine"
                    ))
                    .hint(format!("set [release] pin-files = [\"{file}\"]")));
                }
                return crate::integrate::bump_pin_file(loaded, to.as_deref(), json, rep);
            }
            let repo = lockstep_release::open_repo(cwd)?;
            let smoke = match smoke {
                false => None,
                true if integrate.smoke.is_empty() => {
                    return Err(Error::usage("--smoke needs [integrate] smoke")
                        .hint("set smoke = [\"cmd\", \"arg\"] under [integrate]"))
                }
                true => Some((integrate.smoke.clone(), integrate.smoke_timeout)),
            };
            let log_dir = repo.git_dir()?.join("lockstep");
            fs_err::create_dir_all(&log_dir)?;
            let bumped = lockstep_release::bump::bump(&lockstep_release::bump::BumpRequest {
                repo: &repo,
                pin_files: &settings.pin_files,
                upstream_url: release.upstream_url.as_deref(),
                upstream_branch: &release.upstream_branch,
                to: to.as_deref(),
                smoke,
                log: &log_dir.join("release-bump-smoke.log"),
            })?;
            let out = rep.out();
            if json {
                out.line(crate::output::json_document(&bumped)?);
            } else if let Some(commit) = &bumped.commit {
                out.line(format!(
                    "bumped {} to {} ({})",
                    bumped.changed.join(" "),
                    bumped.to,
                    &commit[..12.min(commit.len())]
                ));
            } else {
                out.line(format!("already at {}: nothing to commit", bumped.to));
            }
            Ok(0)
        }
        cli::Release::Cut {
            channel,
            remote,
            run_id,
            json,
        } => {
            let channel = match channel {
                ReleaseChannel::Snapshot => Channel::Snapshot,
                ReleaseChannel::Candidate => Channel::Candidate,
                ReleaseChannel::Final => Channel::Final,
            };
            let base = settings::base_version(&release, &loaded.root)?;
            let repo = lockstep_release::open_repo(cwd)?;
            repo.require_clean_tracked()?;
            let mut pins = BTreeMap::new();
            for path in &settings.pin_files {
                pins.insert(path.clone(), cut::read_pin(&repo, "HEAD", path)?);
            }
            let run_id = run_identity(run_id)?;
            let template = if channel == Channel::Candidate {
                &settings.candidate
            } else {
                &settings.snapshot
            };
            let made = cut::cut(&CutRequest {
                repo: &repo,
                remote: &remote,
                channel,
                name: &settings.name,
                base: &base,
                template,
                tag_template: &settings.tag,
                run_id: &run_id,
                pins,
                today: today()?,
            })?;
            let out = rep.out();
            if json {
                out.line(crate::output::json_document(&made)?);
            } else {
                let how = if made.reused { "reused" } else { "tagged" };
                out.line(format!(
                    "{} {} ({how} {} on {})",
                    settings.name,
                    made.version,
                    made.tag,
                    &made.source[..12.min(made.source.len())]
                ));
            }
            Ok(0)
        }
        cli::Release::Publish {
            wheelhouse,
            manifest,
            tag,
            json,
        } => {
            let wheelhouse = cwd.join(wheelhouse);
            let manifest = manifest
                .map(|m| cwd.join(m))
                .unwrap_or_else(|| wheelhouse.join(lockstep_python::pylock::FILE));
            let uv = crate::pkg::find_uv(rep)?.hiding(&integrate.notify.url_env);
            let published = lockstep_release::publish::publish(
                &lockstep_release::publish::PublishRequest {
                    manifest,
                    index: settings.index.clone(),
                    uv: &uv,
                    tag,
                    channel: None,
                    smoke: settings.smoke.clone(),
                    work: lockstep_release::publish::work_dir(),
                },
                rep,
            )?;
            let out = rep.out();
            if json {
                out.line(crate::output::json_document(&published)?);
            } else {
                out.line(format!(
                    "published {} {}: {} new file(s); index: {} project(s), {} file(s) in {}",
                    published.packages.join(" "),
                    published.version,
                    published.added.len(),
                    published.index.projects,
                    published.index.files,
                    settings.index.display()
                ));
            }
            Ok(0)
        }
        cli::Release::Index { base_url } => {
            if let Some(url) = &base_url {
                if !(url.starts_with("https://")
                    || url.starts_with("http://")
                    || url.starts_with("file://"))
                    || url.chars().any(|c| c.is_whitespace() || c == '"')
                {
                    return Err(Error::usage(format!(
                        "--base-url `{url}` is not an http(s) or file URL"
                    )));
                }
            }
            let _lock = lockstep_release::store::lock(&settings.index)?;
            let report =
                lockstep_release::index::write_index(&settings.index, base_url.as_deref())?;
            rep.out().line(format!(
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
            if !settings
                .index
                .join(lockstep_release::index::SIMPLE)
                .is_dir()
            {
                return Err(
                    Error::usage(format!("{} has no index yet", settings.index.display()))
                        .hint("run `lockstep release publish` or `lockstep release index` first"),
                );
            }
            let (listener, port) = lockstep_release::serve::bind(port)?;
            rep.out()
                .line(format!("serving http://127.0.0.1:{port}/simple/"));
            lockstep_release::serve::serve(listener, settings.index.clone(), access_log)?;
            Ok(0)
        }
        cli::Release::Promote {
            version,
            to,
            rewrite_stamps,
            upload,
            json,
        } => {
            let promoted = lockstep_release::promote::promote(
                &settings.index,
                &version,
                &to,
                rewrite_stamps,
                &lockstep_release::publish::work_dir(),
            )?;
            let sink: &dyn Sink = rep;
            if let Some(url) = &upload {
                let dir = settings
                    .index
                    .join(lockstep_release::store::FILES)
                    .join(&to);
                let record = lockstep_release::store::load_or_scan(&dir)?;
                let uv = crate::pkg::find_uv(rep)?.hiding(&integrate.notify.url_env);
                for file in &record.files {
                    sink.note(format!(
                        "uploading {} to {}",
                        file.filename,
                        lockstep_release::upload::without_userinfo(url)
                    ));
                    lockstep_release::upload::upload(&uv, url, &dir.join(&file.filename))?;
                }
            }
            for (wheel, members) in &promoted.stamps {
                let verb = if rewrite_stamps {
                    "rewrote"
                } else {
                    "still holds the old version"
                };
                sink.warn(format!("{wheel}: {} {verb}", members.join(", ")));
            }
            let out = rep.out();
            if json {
                out.line(crate::output::json_document(&promoted)?);
            } else {
                out.line(format!(
                    "promoted {version} to {to}: {}",
                    promoted.wheels.join(" ")
                ));
            }
            Ok(0)
        }
        cli::Release::Prune {
            yank,
            dry_run,
            json,
        } => {
            let repo = lockstep_release::open_repo(cwd).ok();
            let keep = &release.keep;
            let pruned = lockstep_release::prune::prune(&lockstep_release::prune::PruneRequest {
                index: &settings.index,
                keep_snapshots: keep.snapshots,
                keep_days: keep.days,
                repo: repo.as_ref(),
                branches: &release.branches,
                pin_files: &settings.pin_files,
                yank,
                dry_run,
            })?;
            let out = rep.out();
            if json {
                out.line(crate::output::json_document(&pruned)?);
            } else {
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
            }
            Ok(0)
        }
        cli::Release::Yank { version, reason } => {
            let _lock = lockstep_release::store::lock_existing(&settings.index)?;
            lockstep_release::index::yank(&settings.index, &version, &reason)?;
            lockstep_release::index::write_index(&settings.index, None)?;
            let sink: &dyn Sink = rep;
            sink.note(format!(
                "{version} is yanked: installers skip it unless it is pinned with =="
            ));
            rep.out().line(format!("yanked {version}"));
            Ok(0)
        }
    }
}

/// `--run-id`, else `$GITHUB_RUN_ID-$GITHUB_RUN_ATTEMPT`, else a fresh random id.
fn run_identity(flag: Option<String>) -> Result<String, Error> {
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
fn today() -> Result<u32, Error> {
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

/// The demo's release part: cut a snapshot of the fixture packages against
/// a local bare remote, build that version, publish it, and install it with
/// pip from the generated index.
pub fn demo(rep: &Reporters) -> Result<i32, Error> {
    let out = rep.out();
    let dir = tempfile::tempdir()?;
    let project = dir.path().join("packages");
    let config =
        "\n[release]\nname = \"demo\"\nversion-base = \"1.1.0\"\ntag = \"snapshot-{version}\"\n";
    let repo = lockstep_sandbox::packages::create(&project, "1.1.0", config)?;
    let remote = dir.path().join("remote.git");
    let init = std::process::Command::new("git")
        .args(["init", "--quiet", "--bare"])
        .arg(&remote)
        .stdin(std::process::Stdio::null())
        .output()?;
    if !init.status.success() {
        return Err(Error::failed("git init --bare failed")
            .cause(String::from_utf8_lossy(&init.stderr).into_owned()));
    }
    repo.git(&["remote", "add", "origin", &remote.to_string_lossy()])?;
    let loaded = crate::config::load(None, &project)?;
    let release: ReleaseConfig = loaded.section()?;
    let settings = settings::settings(&release, &loaded.root)?;

    out.line("\n== lockstep release cut");
    let made = cut::cut(&CutRequest {
        repo: &repo,
        remote: "origin",
        channel: Channel::Snapshot,
        name: &settings.name,
        base: &settings::base_version(&release, &loaded.root)?,
        template: &settings.snapshot,
        tag_template: &settings.tag,
        run_id: "demo",
        pins: BTreeMap::new(),
        today: today()?,
    })?;
    out.line(format!(
        "   {} {} (tag {} pushed to the remote)",
        settings.name, made.version, made.tag
    ));

    out.line(format!(
        "\n== lockstep pkg build --variant release --version {} && lockstep release publish",
        made.version
    ));
    let uv = crate::pkg::find_uv(rep)?;
    let house = project.join("wheelhouse");
    let pkg = loaded.section()?;
    let request = lockstep_pkg::BuildRequest {
        out: house.clone(),
        version: Some(made.version.clone()),
        variants: vec!["release".into()],
        jobs: 2,
        pin_path: None,
        ..crate::pkg::build_request(&pkg, &loaded, &uv)?
    };
    lockstep_pkg::build(&request, rep)?;
    let published = lockstep_release::publish::publish(
        &lockstep_release::publish::PublishRequest {
            manifest: house.join(lockstep_python::pylock::FILE),
            index: settings.index.clone(),
            uv: &uv,
            tag: Some(made.tag.clone()),
            channel: Some("snapshot".into()),
            smoke: None,
            work: lockstep_release::publish::work_dir(),
        },
        rep,
    )?;
    out.line(format!(
        "   published {} file(s); index at {}",
        published.added.len(),
        settings
            .index
            .join(lockstep_release::index::SIMPLE)
            .display()
    ));

    out.line("\n== pip install --index-url file://.../simple/ --pre demo-pure demo-cext");
    let venv = uv.create_venv(
        &project.join("venv-pip"),
        &lockstep_python::uv::NewVenv {
            seed: true,
            ..Default::default()
        },
    )?;
    let url = format!(
        "file://{}/",
        settings
            .index
            .join(lockstep_release::index::SIMPLE)
            .display()
    );
    let python = |args: &[&str]| {
        let mut argv = vec!["python".to_string()];
        argv.extend(args.iter().map(|a| a.to_string()));
        venv.run(
            &argv,
            &lockstep_python::venv::RunIn {
                what: "pip",
                cwd: &project,
                timeout: std::time::Duration::from_secs(600),
                log: None,
            },
        )
    };
    let installed = python(&[
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-cache-dir",
        "--index-url",
        &url,
        "--pre",
        "demo-pure",
        "demo-cext",
    ])?;
    if !installed.success() {
        out.line(format!("   pip failed: {}", installed.tail(5)));
        return Ok(1);
    }
    let probe = python(&[
        "-c",
        "from importlib.metadata import version; print(version('demo-pure'), version('demo-cext'))",
    ])?;
    let text = probe.output().trim().to_string();
    let want = format!("{} {}", made.version, made.version);
    out.line(format!(
        "   installed: {text} {}",
        if text == want {
            "(the snapshot just cut)"
        } else {
            "(WRONG)"
        }
    ));
    Ok(if text == want { 0 } else { 1 })
}
