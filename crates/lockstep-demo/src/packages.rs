//! The package part: the fixture project's two packages built once with
//! `pkg build` (two variants, in parallel), each variant's manifest
//! installed exactly with `pkg venv`, and the extension imported from it.

use std::io::Write;
use std::path::Path;

use lockstep_core::config::{Loaded, SectionSpec};
use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_pkg::config::PkgConfig;
use lockstep_pkg::BuildRequest;
use lockstep_python::pylock;
use lockstep_python::venv::{self, From};

pub fn run(project: &Path, sink: &dyn Sink, out: &mut dyn Write) -> Result<bool, Error> {
    lockstep_sandbox::packages::create(project, "1.0.0", "")?;
    let loaded = lockstep_core::config::load(None, project, &[SectionSpec::of::<PkgConfig>()])?;
    let pkg: PkgConfig = loaded.section()?;
    writeln!(out, "\n== lockstep pkg build --version 1.0.0rc1 -j 2")?;
    let uv = crate::wheels::uv(sink)?;
    let request = BuildRequest {
        out: project.join("wheelhouse"),
        version: Some("1.0.0rc1".into()),
        jobs: 2,
        ..BuildRequest::configured(&pkg, &loaded.root, None, None, &uv)?
    };
    crate::wheels::build_wheels(&request, sink, out)?;
    let mut ok = true;
    for variant in ["release", "asserts"] {
        let manifest = project.join("wheelhouse").join(pylock::file_name(variant));
        let venv_dir = project.join(format!("venv-{variant}"));
        writeln!(
            out,
            "\n== lockstep pkg venv venv-{variant} --manifest wheelhouse/{}",
            pylock::file_name(variant)
        )?;
        let made = venv::create_exact(&uv, &venv_dir, From::Manifest(&manifest), None, sink)?;
        let packages: Vec<String> = made
            .packages
            .iter()
            .map(|(n, v)| format!("{n}=={v}"))
            .collect();
        writeln!(out, "   installed {}", packages.join(" "))?;
        let printed = crate::wheels::python(
            &uv,
            &venv_dir,
            &["-c", "import demo_cext; print(demo_cext.asserts())"],
        )?;
        let want = if variant == "asserts" {
            "True"
        } else {
            "False"
        };
        writeln!(
            out,
            "   import demo_cext: asserts() = {printed} {}",
            if printed == want {
                "(as built)"
            } else {
                "(WRONG)"
            }
        )?;
        ok &= printed == want;
    }
    let _ = Loaded::defaults(project);
    Ok(ok)
}
