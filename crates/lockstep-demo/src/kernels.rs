//! lockstep's own Python kernels in the demo's release: when the demo runs
//! from a lockstep checkout (the README's `cargo run -- demo`),
//! `lockstep-kernels` (maturin over PyO3, python/lockstep-kernels) is built
//! from it at the snapshot's version, published with the snapshot, installed
//! from the served index into a fresh venv, and the examples of
//! docs/kernels-python.md run there as written. An installed lockstep has no source to
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
    let config = dir.join("lockstep.toml");
    fs_err::create_dir_all(dir)?;
    let env = build_env(&source.join("target"))
        .into_iter()
        .map(|(name, value)| {
            // The TOML serializer's quoting (Rust's `{:?}` is not TOML's).
            let value = lockstep_core::config::toml_string(&value.display().to_string());
            format!("{name} = {value}")
        })
        .collect::<Vec<_>>()
        .join(", ");
    fs_err::write(
        &config,
        format!(
            "[pkg]\npython = [\"3.11\"]\ncompiler-cache = \"none\"\nmanylinux = \"off\"\n\n\
             [[pkg.package]]\nname = \"lockstep-kernels\"\nsource = \"python/lockstep-kernels\"\n\
             env = {{ {env} }}\n"
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

/// How lockstep's own maturin wheels (lockstep-kernels, lockstep-cli) are
/// built from a checkout whose cargo target directory is `target`: by the
/// demo, and by the tests that build them.
///
/// The dev profile (the release profile would make each a build of
/// minutes; the Rust side only prepares kernels), into a target directory
/// of their own, kept between runs, whose intermediate files live in the
/// checkout's own build directory (cargo's `build.build-dir`): the
/// dependencies `cargo build` or `cargo test` compiled there are reused,
/// not compiled a second time. Without debug info, so lockstep's own crates,
/// compiled here from the staged commit, are units of their own beside the
/// checkout's (cargo names a unit by its profile): a wheel build never
/// replaces what the checkout's next build would take as fresh. A
/// `CARGO_BUILD_BUILD_DIR` already set is left as it is.
pub fn build_env(target: &Path) -> Vec<(&'static str, PathBuf)> {
    let mut env = vec![
        ("CARGO_TARGET_DIR", target.join("tmp/lockstep-cli-wheel")),
        ("MATURIN_PEP517_ARGS", PathBuf::from("--profile dev")),
        ("CARGO_PROFILE_DEV_DEBUG", PathBuf::from("false")),
    ];
    if std::env::var_os("CARGO_BUILD_BUILD_DIR").is_none() {
        env.push(("CARGO_BUILD_BUILD_DIR", target.to_path_buf()));
    }
    env
}

/// Installs lockstep-kernels from the served index (its NumPy and IREE from
/// PyPI) into a fresh venv and runs the examples of docs/kernels-python.md
/// there, as written; whether every one ran.
pub fn launch(
    dir: &Path,
    url: &str,
    version: &str,
    uv: &Uv,
    out: &mut dyn Write,
) -> Result<bool, Error> {
    writeln!(
        out,
        "\n== uv pip install --index {url} lockstep-kernels=={version} && the examples of docs/kernels-python.md"
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
    let script = examples_script(DOCS_PAGE);
    let text = crate::wheels::python(uv, &venv_dir, &["-c", &script])?;
    let ran = text.lines().filter(|l| l.starts_with("example ")).count();
    let ok = ran == examples(DOCS_PAGE).len() && ran > 0;
    for line in text.lines().filter(|l| !l.starts_with("example ")) {
        writeln!(out, "   {line}")?;
    }
    writeln!(
        out,
        "   ran the {ran} examples of docs/kernels-python.md {}",
        if ok { "as written" } else { "(NOT ALL)" }
    )?;
    Ok(ok)
}

/// The page whose examples the demo runs.
const DOCS_PAGE: &str = include_str!("../../../docs/kernels-python.md");

/// The ```python blocks of a Markdown page.
fn examples(page: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut block: Option<String> = None;
    for line in page.lines() {
        match (block.as_mut(), line.trim_end()) {
            (None, "```python") => block = Some(String::new()),
            (Some(_), "```") => blocks.extend(block.take()),
            (Some(body), _) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, _) => {}
        }
    }
    blocks
}

/// One Python script running each example in a function of its own (their
/// names do not leak into each other), printing `example N ok` after each.
fn examples_script(page: &str) -> String {
    let mut script = String::new();
    for (n, body) in examples(page).iter().enumerate() {
        script.push_str(&format!("def example_{n}():\n"));
        for line in body.lines() {
            script.push_str(&format!("    {line}\n"));
        }
        script.push_str(&format!("example_{n}()\nprint('example {n} ok')\n"));
    }
    script
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn wheel_builds_take_the_checkouts_dependencies_in_units_of_their_own() {
        let target = Path::new("/checkout/target");
        let env: std::collections::BTreeMap<_, _> = build_env(target).into_iter().collect();
        assert_eq!(
            env["CARGO_TARGET_DIR"],
            Path::new("/checkout/target/tmp/lockstep-cli-wheel")
        );
        // No debug info: lockstep's own crates are not the checkout's units.
        assert_eq!(env["CARGO_PROFILE_DEV_DEBUG"], Path::new("false"));
        assert_eq!(env["MATURIN_PEP517_ARGS"], Path::new("--profile dev"));
        // The checkout's build directory, unless one is set already.
        match std::env::var_os("CARGO_BUILD_BUILD_DIR") {
            None => assert_eq!(env["CARGO_BUILD_BUILD_DIR"], target),
            Some(_) => assert!(!env.contains_key("CARGO_BUILD_BUILD_DIR")),
        }
    }

    #[test]
    fn the_docs_page_has_examples_and_each_runs_in_its_own_function() {
        let blocks = examples(DOCS_PAGE);
        assert!(blocks.len() >= 4, "{}", blocks.len());
        let script = examples_script("x\n```python\nprint(1)\n```\n```sh\nls\n```\n");
        assert_eq!(
            script,
            "def example_0():\n    print(1)\nexample_0()\nprint('example 0 ok')\n"
        );
    }
}
