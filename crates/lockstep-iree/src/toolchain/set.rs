//! Toolchains made of a built set of wheels (`lockstep toolchain install
//! --manifest FILE` / `--wheels DIR`, and `$LOCKSTEP_IREE_MANIFEST` or
//! `[toolchain] manifest` for every other command), so `lockstep test` runs
//! on the packages this commit built instead of a release from PyPI.
//!
//! A set that holds both IREE packages is the whole toolchain, installed
//! offline exactly as `lockstep pkg venv` does. A set that holds neither (a
//! project's own plugins or Python packages) is installed exactly, offline,
//! on top of the pinned IREE from PyPI. A set holding only one of the two is
//! refused: a new compiler with an old runtime is the skew exact installs
//! exist to prevent.
//!
//! The toolchain lives in `$LOCKSTEP_TOOLCHAINS/iree-set-<KEY>/`, KEY from the
//! wheels' sha256 (and the PyPI version when one completes the set), built
//! in a staging directory and moved into place under the same lock protocol
//! as a PyPI toolchain. Its identity is computed from the wheels' sha256 and
//! `iree-compile --version`, so cache entries follow the content.
//!
//! The toolchain runs the native IREE tools, which import nothing from
//! Python: a requirement of the set's wheels that the venv does not meet
//! (IREE's own `numpy`, when the set does not carry it) is a warning naming
//! it, not an error (`lockstep pkg venv` refuses such a set).

use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::hash::Framed;
use lockstep_core::Error;
use lockstep_python::pylock::{self, Lock};
use lockstep_python::uv::{Install, NewVenv};
use lockstep_python::venv::{self, From};
use lockstep_python::wheel;

use super::*;

/// Where the set's wheels are.
#[derive(Debug, Clone, Copy)]
pub enum SetFrom<'a> {
    Manifest(&'a Path),
    Wheels(&'a Path),
}

impl SetFrom<'_> {
    fn lock(&self) -> Result<Lock, Error> {
        match self {
            SetFrom::Manifest(path) => Lock::load(path),
            SetFrom::Wheels(dir) => pylock::from_dir(dir),
        }
    }

    fn venv_from(&self) -> From<'_> {
        match self {
            SetFrom::Manifest(p) => From::Manifest(p),
            SetFrom::Wheels(d) => From::Wheels(d),
        }
    }
}

/// The installed toolchain of the set, installing it on first use.
pub fn resolve_set(
    from: SetFrom<'_>,
    pypi_version: &str,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    install_set(from, pypi_version, sink)
}

/// Installs (idempotent) the toolchain of a set; see the module doc.
pub fn install_set(
    from: SetFrom<'_>,
    pypi_version: &str,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    let lock = from.lock()?;
    if let SetFrom::Manifest(path) = &from {
        lock.require_whole(path, "a toolchain")?;
    }
    let complete = iree_packages(&lock)?;
    if !complete {
        validate_version(pypi_version)?;
    }
    let key = set_key(&lock, (!complete).then_some(pypi_version));
    let name = format!("set-{key}");
    let root = toolchains_root()?;
    let final_dir = root.join(dir_name(&name));
    if let Some(t) = installed_at(&final_dir)? {
        return Ok(t);
    }
    paths::create_toolchains_dir(&root)?;
    let _guard = super::lock(&root, &name, sink)?;
    if let Some(t) = installed_at(&final_dir)? {
        return Ok(t);
    }
    sink.note(format!(
        "installing the IREE toolchain of {} into {}",
        describe(&from),
        final_dir.display()
    ));
    remove_leftovers(&root, &name, &final_dir)?;
    let staged = lockstep_core::fs::StagedDir::beside(&final_dir)?;
    let toolchain = build_set(
        staged.path(),
        &final_dir,
        &from,
        &lock,
        complete,
        pypi_version,
        &key,
        sink,
    )?;
    move_into_place(staged, &final_dir)?;
    Ok(toolchain)
}

fn describe(from: &SetFrom<'_>) -> String {
    match from {
        SetFrom::Manifest(p) => p.display().to_string(),
        SetFrom::Wheels(d) => format!("the wheels in {}", d.display()),
    }
}

/// Whether the set holds the whole of IREE (a compiler and a runtime, of
/// one variant: `iree-base-compiler-asserts` with `iree-base-runtime-asserts`);
/// one without the other, or two variants of a part, is an error.
fn iree_packages(lock: &Lock) -> Result<bool, Error> {
    let names: Vec<String> = lock
        .packages
        .iter()
        .map(|p| wheel::normalize(&p.name))
        .collect();
    iree_parts(&names)
}

/// [`iree_packages`] over the set's distribution names (normalised).
fn iree_parts(names: &[String]) -> Result<bool, Error> {
    let of = |part: usize| -> Vec<&String> {
        names
            .iter()
            .filter(|n| iree_part(n) == Some(part))
            .collect()
    };
    let (compilers, runtimes) = (of(0), of(1));
    for (found, what) in [(&compilers, "compilers"), (&runtimes, "runtimes")] {
        if found.len() > 1 {
            let listed: Vec<&str> = found.iter().map(|n| n.as_str()).collect();
            return Err(Error::usage(format!(
                "the set mixes variants: it holds {} IREE {what} ({})",
                found.len(),
                listed.join(", ")
            ))
            .cause("a toolchain is one compiler and one runtime; which one the tools would come from is not defined")
            .hint("install the manifest of one variant (`pylock.VARIANT.toml`)"));
        }
    }
    let suffix = |n: &String, part: usize| n[PACKAGES[part].len()..].to_string();
    match (compilers.first(), runtimes.first()) {
        (Some(c), Some(r)) if suffix(c, 0) != suffix(r, 1) => Err(Error::usage(format!(
            "the set mixes variants: {c} with {r}"
        ))
        .cause("a compiler and runtime from different builds do not work together")
        .hint("install the manifest of one variant (`pylock.VARIANT.toml`)")),
        (Some(_), Some(_)) => Ok(true),
        (None, None) => Ok(false),
        (Some(present), None) | (None, Some(present)) => {
            let missing = if compilers.is_empty() {
                PACKAGES[0]
            } else {
                PACKAGES[1]
            };
            Err(
                Error::usage(format!("the set holds {present} but no {missing}"))
                    .cause("a compiler and runtime from different builds do not work together")
                    .hint(format!(
                        "build or fetch {missing} (of the same variant and version) into the set"
                    )),
            )
        }
    }
}

/// 16 hex digits over the wheels' sha256 (sorted) and the PyPI version.
fn set_key(lock: &Lock, pypi: Option<&str>) -> String {
    let mut lines: Vec<String> = lock
        .packages
        .iter()
        .flat_map(|p| {
            p.wheels.iter().map(move |w| {
                format!(
                    "{} {}",
                    p.name,
                    w.hashes.get("sha256").cloned().unwrap_or_default()
                )
            })
        })
        .collect();
    lines.sort();
    Framed::new("lockstep-iree", "set", 2)
        .part("pypi", pypi.unwrap_or("-"))
        .parts("wheels", lines)
        .hex()[..16]
        .to_string()
}

#[allow(clippy::too_many_arguments)]
fn build_set(
    tmp: &Path,
    final_dir: &Path,
    from: &SetFrom<'_>,
    lock: &Lock,
    complete: bool,
    pypi_version: &str,
    key: &str,
    sink: &dyn Sink,
) -> Result<Toolchain, Error> {
    let root = tmp.parent().unwrap_or(tmp);
    let uv = find_uv(root, tmp, sink)?;
    let venv_dir = tmp.join("venv");
    let venv = uv
        .create_venv(
            &venv_dir,
            &NewVenv {
                offline: complete,
                ..NewVenv::default()
            },
        )
        .map_err(|e| e.context("cannot create a Python venv for the toolchain"))?;
    if !complete {
        sink.note(format!(
            "installing {} {pypi_version} from PyPI under the set",
            PACKAGES.join(" and ")
        ));
        let requirements: Vec<String> = PACKAGES
            .iter()
            .map(|p| format!("{p}=={pypi_version}"))
            .collect();
        uv.install(&venv, Install::Pypi(&requirements))
            .map_err(|e| {
                e.context(format!("cannot install IREE {pypi_version} from PyPI"))
                    .hint("check network access to PyPI, or put the IREE wheels into the set")
            })?;
    }
    let made = venv::add_exact(&uv, &venv, from.venv_from(), sink)?;
    if !made.unmet.is_empty() {
        let unmet: Vec<String> = made.unmet.iter().map(|u| u.describe()).collect();
        sink.warn(format!(
            "the toolchain's venv does not meet what its packages require ({}): the IREE tools run, but importing those packages in Python fails",
            unmet.join("; ")
        ));
    }
    let site = site_packages(&venv_dir)?;
    let bin = tmp.join("bin");
    fs_err::create_dir_all(&bin)?;
    link_native_tools(tmp, &site, &bin)?;
    if !is_executable(&bin.join("iree-compile")) {
        return Err(
            Error::usage("the set's IREE packages hold no native iree-compile")
                .cause(format!("looked in {}", NATIVE_DIRS.join(" and "))),
        );
    }
    let output = version_output(&bin.join("iree-compile"))?;
    let mut content: Vec<String> = made
        .wheels
        .iter()
        .map(|(n, h)| format!("wheel {n} {h}"))
        .collect();
    content.sort();
    content.push(format!("set {key}"));
    if !complete {
        content.extend(wheel_content(&site)?);
    }
    let mut packages = package_versions(&site)?;
    for p in &lock.packages {
        let name = wheel::normalize(&p.name);
        if !packages.iter().any(|(n, _)| *n == name) {
            packages.push((name, p.version.clone().unwrap_or_default()));
        }
    }
    let toolchain = Toolchain {
        bin: final_dir.join("bin"),
        source: Source::Provisioned,
        packages,
        compiler_version: compiler_version_line(&output),
        identity: identity(&output, &content),
        identity_version: IDENTITY_VERSION,
    };
    write_manifest(&tmp.join(MANIFEST), &toolchain)?;
    Ok(toolchain)
}

#[cfg(test)]
mod parts_tests {
    use super::*;

    fn names(list: &[&str]) -> Vec<String> {
        list.iter().map(|n| wheel::normalize(n)).collect()
    }

    #[test]
    fn variants_are_iree_and_mixed_variants_are_refused() {
        assert_eq!(iree_part("iree_base_compiler"), Some(0));
        assert_eq!(iree_part("iree-base-compiler-asserts"), Some(0));
        assert_eq!(iree_part("IREE.Base.Runtime-Tracy"), Some(1));
        assert_eq!(iree_part("iree-base-compilers"), None);
        assert_eq!(iree_part("iree-turbine"), None);
        // A suffixed variant is the whole toolchain: PyPI's IREE is not
        // installed under it.
        assert!(iree_parts(&names(&[
            "iree-base-compiler-asserts",
            "iree-base-runtime-asserts",
            "numpy"
        ]))
        .unwrap());
        assert!(iree_parts(&names(&["iree-base-compiler", "iree-base-runtime"])).unwrap());
        assert!(!iree_parts(&names(&["my-plugin"])).unwrap());
        for (set, says) in [
            (
                &[
                    "iree-base-compiler",
                    "iree-base-compiler-asserts",
                    "iree-base-runtime",
                ][..],
                "holds 2 IREE compilers",
            ),
            (
                &["iree-base-compiler-asserts", "iree-base-runtime"][..],
                "mixes variants: iree-base-compiler-asserts with iree-base-runtime",
            ),
            (
                &["iree-base-runtime-asserts"][..],
                "holds iree-base-runtime-asserts but no iree-base-compiler",
            ),
        ] {
            let err = iree_parts(&names(set)).unwrap_err();
            assert!(err.message.contains(says), "{set:?}: {}", err.message);
        }
    }
}
