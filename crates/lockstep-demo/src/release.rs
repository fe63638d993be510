//! The release part, on the IREE-shaped fixture: a snapshot cut against a
//! local bare remote, its native package built from the submodule under
//! sccache and repaired to manylinux, published to the static index with
//! its PyPI dependency resolved during validation, then served by
//! `release serve` and installed from it with pip (the installer people
//! use), the dependency coming from PyPI.

use std::io::Write;
use std::path::{Path, PathBuf};

use lockstep_core::config::SectionSpec;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_pkg::config::PkgConfig;
use lockstep_pkg::BuildRequest;
use lockstep_release::config::ReleaseConfig;
use lockstep_release::cut::Channel;
use lockstep_sandbox::native::{self, NativeSpec};

/// What the release step did: whether it passed, and the release store it
/// published to (the site lists its releases).
pub struct Released {
    pub ok: bool,
    pub store: PathBuf,
}

pub fn run(dir: &Path, sink: &dyn Sink, out: &mut dyn Write) -> Result<Released, Error> {
    let config =
        "\n[release]\nname = \"demo\"\nversion-base = \"0.3.0\"\ntag = \"snapshot-{version}\"\n";
    let fixture = native::create(
        &dir.join("native"),
        &NativeSpec {
            extra_config: config.into(),
            ..NativeSpec::default()
        },
    )?;
    let project = fixture.project.clone();
    let repo = lockstep_git::Repo::new(&project);
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

    writeln!(
        out,
        "\n== lockstep release cut   (an IREE-shaped project: minillvm is its submodule)"
    )?;
    let made = lockstep_release::cut::cut_head(
        &settings,
        &base,
        &repo,
        lockstep_release::cut::CutOptions {
            channel: Channel::Snapshot,
            remote: "origin",
            run_id: Some("demo".into()),
            if_new_commit: false,
        },
    )?;
    writeln!(
        out,
        "   {} {} (tag {} pushed to the remote; pins {})",
        settings.name,
        made.version,
        made.tag,
        made.pins
            .iter()
            .map(|(path, rev)| format!("{path}@{}", &rev[..12.min(rev.len())]))
            .collect::<Vec<_>>()
            .join(", ")
    )?;

    writeln!(
        out,
        "\n== lockstep pkg build --version {} && lockstep release publish",
        made.version
    )?;
    let uv = crate::wheels::uv(sink)?;
    let pkg: PkgConfig = loaded.section()?;
    let house = project.join("wheelhouse");
    let request = BuildRequest {
        out: house.clone(),
        version: Some(made.version.clone()),
        jobs: 2,
        compiler_area: Some(dir.join("compiler-cache")),
        ..BuildRequest::configured(&pkg, &loaded.root, None, None, &uv)?
    };
    let report = crate::wheels::build_wheels(&request, sink, out)?;
    if let Some(c) = &report.compiler_cache {
        writeln!(
            out,
            "   compiler cache ({}): {}, {}",
            c.tool,
            lockstep_core::words::count(c.misses as usize, "miss", "misses"),
            lockstep_core::words::count(c.hits as usize, "hit", "hits")
        )?;
    }
    // lockstep's own Python kernels join the snapshot when the demo runs
    // from a checkout (crate::kernels).
    let manifests = vec![house.join(lockstep_python::pylock::FILE)];
    let published = lockstep_release::publish::publish(
        &lockstep_release::publish::PublishRequest {
            manifests,
            index: settings.index.clone(),
            uv: &uv,
            tag: Some(made.tag.clone()),
            channel: Some("snapshot".into()),
            pins: made.pins.clone(),
            tag_version: Some(made.version.clone()),
            tag_source: Some(made.source.clone()),
            dependency_index: settings.dependency_index.clone(),
            pages_limit: settings.pages_limit,
            smoke: None,
            work: lockstep_release::publish::work_dir(),
        },
        sink,
    )?;
    let simple = settings.index.join(lockstep_release::index::SIMPLE);
    writeln!(
        out,
        "   published {} (validated with `packaging` from {}); index at {}",
        lockstep_core::words::count(published.added.len(), "file", "files"),
        settings.dependency_index.as_deref().unwrap_or("nowhere"),
        simple.display()
    )?;
    // lockstep's own Python kernels join the snapshot's version when the
    // demo runs from a checkout (crate::kernels): built from that checkout,
    // so published as a set of their own (not from the tag's commit).
    let kernels_source = crate::kernels::source();
    match &kernels_source {
        Some(source) => {
            let manifest = crate::kernels::build(
                source,
                &dir.join("kernels"),
                &made.version,
                &uv,
                sink,
                out,
            )?;
            let added = lockstep_release::publish::publish(
                &lockstep_release::publish::PublishRequest {
                    manifests: vec![manifest],
                    index: settings.index.clone(),
                    uv: &uv,
                    tag: None,
                    channel: Some("snapshot".into()),
                    pins: Default::default(),
                    tag_version: None,
                    tag_source: None,
                    dependency_index: settings.dependency_index.clone(),
                    pages_limit: settings.pages_limit,
                    smoke: None,
                    work: lockstep_release::publish::work_dir(),
                },
                sink,
            )?;
            writeln!(
                out,
                "   published {} (validated with NumPy and IREE from PyPI)",
                lockstep_core::words::count(added.added.len(), "file", "files")
            )?;
        }
        None => writeln!(
            out,
            "   (lockstep-kernels, lockstep's Python kernels, joins the snapshot when the demo runs from a lockstep checkout)"
        )?,
    }

    let (listener, port) = lockstep_release::serve::bind(0)?;
    let root = settings.index.clone();
    std::thread::spawn(move || {
        let _ = lockstep_release::serve::serve(listener, root, Default::default());
    });
    let url = format!("http://127.0.0.1:{port}/simple/");
    writeln!(
        out,
        "\n== lockstep release serve --port {port} & pip install --index-url {url} --extra-index-url https://pypi.org/simple/ demo-compiler=={0} demo-runtime=={0}",
        made.version
    )?;
    let venv = project.join("venv-pip");
    uv.create_venv(
        &venv,
        &lockstep_python::uv::NewVenv {
            seed: true,
            ..Default::default()
        },
    )?;
    let compiler = format!("demo-compiler=={}", made.version);
    let runtime = format!("demo-runtime=={}", made.version);
    let installed = crate::wheels::python(
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
            "--extra-index-url",
            "https://pypi.org/simple/",
            &compiler,
            &runtime,
        ],
    );
    if let Err(e) = installed {
        writeln!(out, "   pip failed: {}", e.render().trim())?;
        return Ok(Released {
            ok: false,
            store: settings.index.clone(),
        });
    }
    let text = crate::wheels::python(
        &uv,
        &venv,
        &[
            "-c",
            "import demo_compiler, demo_runtime, packaging; print('demo-runtime', demo_runtime.version(), 'demo-compiler passes', demo_compiler.passes(), 'packaging', packaging.__version__)",
        ],
    )?;
    let want = format!(
        "demo-runtime {} demo-compiler passes 4 packaging ",
        made.version
    );
    let ok = text.starts_with(&want);
    writeln!(
        out,
        "   imported: {text} {}",
        if ok {
            "(the snapshot just cut, its dependency from PyPI)"
        } else {
            "(WRONG)"
        }
    )?;
    let ok = match kernels_source {
        Some(_) => {
            crate::kernels::launch(&dir.join("kernels"), &url, &made.version, &uv, out)? && ok
        }
        None => ok,
    };
    Ok(Released {
        ok,
        store: settings.index.clone(),
    })
}
