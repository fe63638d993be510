//! lockstep's own Python kernels in the demo's release: when the demo runs
//! from a lockstep checkout (the README's `cargo run --release -- demo`),
//! `lockstep-kernels` (maturin over PyO3, python/lockstep-kernels) is built
//! from it at the snapshot's version, published with the snapshot, installed
//! from the served index into a fresh venv and a kernel launched from it, as
//! docs/kernels-python.md shows. An installed lockstep has no source to
//! build it from: the part says so and is left out.

use std::io::Write;
use std::path::{Path, PathBuf};

use lockstep_core::config::SectionSpec;
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_pkg::config::PkgConfig;
use lockstep_pkg::BuildRequest;
use lockstep_python::uv::{Install, NewVenv, Uv};

/// The checkout this binary was built from, when it is still there (a git
/// repository holding the package and its crate) and cargo can build it.
pub fn source() -> Option<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let root = std::fs::canonicalize(root).ok()?;
    let whole = root
        .join("python/lockstep-kernels/pyproject.toml")
        .is_file()
        && root.join("crates/lockstep-kernels-py/Cargo.toml").is_file()
        && root.join(".git").exists();
    (whole && lockstep_core::process::on_path("cargo").is_some()).then_some(root)
}

/// Builds the lockstep-kernels wheel from `source` at `version` into
/// `dir/wheelhouse`; its manifest (`pylock.toml`), to publish with the set.
pub fn build(
    source: &Path,
    dir: &Path,
    version: &str,
    uv: &Uv,
    sink: &dyn Sink,
    out: &mut dyn Write,
) -> Result<PathBuf, Error> {
    // The dev profile, in the target directory the tests building this
    // wheel share (kept between runs): a release build of PyO3 and every
    // crate would be minutes; the Rust side only prepares kernels.
    let target = source.join("target/tmp/lockstep-cli-wheel");
    let config = dir.join("lockstep.toml");
    fs_err::create_dir_all(dir)?;
    fs_err::write(
        &config,
        format!(
            "[pkg]\npython = [\"3.11\"]\ncompiler-cache = \"none\"\nmanylinux = \"off\"\n\n\
             [[pkg.package]]\nname = \"lockstep-kernels\"\nsource = \"python/lockstep-kernels\"\n\
             env = {{ CARGO_TARGET_DIR = {:?}, MATURIN_PEP517_ARGS = \"--profile dev\", \
             CARGO_PROFILE_DEV_DEBUG = \"false\" }}\n",
            target.display().to_string()
        ),
    )?;
    let loaded =
        lockstep_core::config::load(Some(&config), dir, &[SectionSpec::of::<PkgConfig>()])?;
    let pkg: PkgConfig = loaded.section()?;
    writeln!(
        out,
        "\n== lockstep pkg build --package lockstep-kernels --version {version}   (lockstep's own Python kernels, from {})",
        source.display()
    )?;
    let house = dir.join("wheelhouse");
    let request = BuildRequest {
        out: house.clone(),
        version: Some(version.to_string()),
        jobs: 1,
        ..BuildRequest::configured(&pkg, source, None, None, uv)?
    };
    crate::wheels::build_wheels(&request, sink, out)?;
    Ok(house.join(lockstep_python::pylock::FILE))
}

/// Installs lockstep-kernels from the served index (its NumPy and IREE from
/// PyPI) into a fresh venv and launches a convolution from it; whether the
/// result agreed with the reference.
pub fn launch(
    dir: &Path,
    url: &str,
    version: &str,
    uv: &Uv,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    writeln!(
        out,
        "\n== uv pip install --index {url} lockstep-kernels=={version} && python -c 'get_launchable(...)(x, w)'"
    )?;
    let venv_dir = dir.join("venv-kernels");
    let venv = uv.create_venv(&venv_dir, &NewVenv::default())?;
    let requirement = format!("lockstep-kernels=={version}");
    uv.install(
        &venv,
        Install::Index {
            url,
            dependencies: Some("https://pypi.org/simple/"),
            requirements: &[requirement],
        },
    )?;
    let script = "import lockstep_kernels as lk\n\
        c = 'conv -n 2 -c 8 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1 -F 1'\n\
        f = lk.get_launchable(c)\n\
        x, w = lk.sample_inputs(c)\n\
        y = f(x, w)\n\
        ok = lk.check(c, [x, w], [y])[0][0]\n\
        print(f.func_name, tuple(y.shape), 'agrees with the f64 reference' if ok else 'DISAGREES')";
    let text = crate::wheels::python(uv, &venv_dir, &["-c", script])?;
    let ok = text.ends_with("agrees with the f64 reference");
    writeln!(out, "   launched: {text}")?;
    Ok(ok)
}
