//! The release part: a snapshot of the fixture packages cut against a local
//! bare remote, built at that version, published to the static index, and
//! installed from it with pip (the installer people use).

use std::io::Write;
use std::path::Path;

use lockstep_core::config::SectionSpec;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_pkg::config::PkgConfig;
use lockstep_pkg::BuildRequest;
use lockstep_python::uv::Uv;
use lockstep_release::config::ReleaseConfig;
use lockstep_release::cut::Channel;

pub fn run(dir: &Path, sink: &dyn Sink, out: &mut dyn Write) -> Result<bool, Error> {
    let project = dir.join("packages");
    let config =
        "\n[release]\nname = \"demo\"\nversion-base = \"1.1.0\"\ntag = \"snapshot-{version}\"\n";
    let repo = lockstep_sandbox::packages::create(&project, "1.1.0", config)?;
    let remote = dir.join("remote.git");
    lockstep_git::Repo::init_bare(&remote)?;
    repo.git(&["remote", "add", "origin", &remote.to_string_lossy()])?;
    let loaded = lockstep_core::config::load(
        None,
        &project,
        &[
            SectionSpec::of::<PkgConfig>(),
            SectionSpec::of::<ReleaseConfig>(),
        ],
    )?;
    let release: ReleaseConfig = loaded.section()?;
    let settings = lockstep_release::settings::settings(&release, &loaded.root)?;
    let base = lockstep_release::settings::base_version(&release, &loaded.root)?;

    writeln!(out, "\n== lockstep release cut")?;
    let made = lockstep_release::cut::cut_head(
        &settings,
        &base,
        &repo,
        Channel::Snapshot,
        "origin",
        Some("demo".into()),
    )?;
    writeln!(
        out,
        "   {} {} (tag {} pushed to the remote)",
        settings.name, made.version, made.tag
    )?;

    writeln!(
        out,
        "\n== lockstep pkg build --variant release --version {} && lockstep release publish",
        made.version
    )?;
    let uv = uv(sink)?;
    let pkg: PkgConfig = loaded.section()?;
    let house = project.join("wheelhouse");
    let request = BuildRequest {
        out: house.clone(),
        version: Some(made.version.clone()),
        variants: vec!["release".into()],
        jobs: 2,
        ..BuildRequest::configured(&pkg, &loaded.root, None, None, &uv)?
    };
    lockstep_pkg::build(&request, sink)?;
    let published = lockstep_release::publish::publish(
        &lockstep_release::publish::PublishRequest {
            manifest: house.join(lockstep_python::pylock::FILE),
            index: settings.index.clone(),
            uv: &uv,
            tag: Some(made.tag.clone()),
            channel: Some("snapshot".into()),
            pins: made.pins.clone(),
            dependency_index: settings.dependency_index.clone(),
            smoke: None,
            work: lockstep_release::publish::work_dir(),
        },
        sink,
    )?;
    let simple = settings.index.join(lockstep_release::index::SIMPLE);
    writeln!(
        out,
        "   published {} file(s); index at {}",
        published.added.len(),
        simple.display()
    )?;

    writeln!(
        out,
        "\n== pip install --index-url file://.../simple/ --pre demo-pure demo-cext"
    )?;
    let venv = project.join("venv-pip");
    let url = format!("file://{}/", simple.display());
    uv.create_venv(
        &venv,
        &lockstep_python::uv::NewVenv {
            seed: true,
            ..Default::default()
        },
    )?;
    let installed = python(
        &uv,
        &venv,
        &[
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
        ],
    );
    if let Err(e) = installed {
        writeln!(out, "   pip failed: {}", e.render().trim())?;
        return Ok(false);
    }
    let text = python(
        &uv,
        &venv,
        &[
            "-c",
            "from importlib.metadata import version; print('demo-pure', version('demo-pure'), 'demo-cext', version('demo-cext'))",
        ],
    )?;
    let want = format!("demo-pure {0} demo-cext {0}", made.version);
    writeln!(
        out,
        "   installed: {text} {}",
        if text == want {
            "(the snapshot just cut)"
        } else {
            "(WRONG)"
        }
    )?;
    Ok(text == want)
}

/// uv, found or installed the way every command finds it.
pub(crate) fn uv(sink: &dyn Sink) -> Result<Uv, Error> {
    lockstep_python::uv::find_default(sink)
}

/// What `venv`'s Python prints for `args` (through the Python layer: no
/// index variables or secrets reach it), trimmed; a failure is an error.
pub(crate) fn python(uv: &Uv, venv: &Path, args: &[&str]) -> Result<String, Error> {
    let mut argv = vec!["python".to_string()];
    argv.extend(args.iter().map(|a| a.to_string()));
    let ran = uv.venv(venv).run(
        &argv,
        &lockstep_python::venv::RunIn {
            what: "python",
            cwd: venv,
            timeout: std::time::Duration::from_secs(1800),
            log: None,
        },
    )?;
    Ok(ran.require_success()?.output().trim().to_string())
}
