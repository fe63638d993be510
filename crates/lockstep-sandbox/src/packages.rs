//! A fixture project of Python packages for `lockstep pkg` (the demo, the
//! tests and `scripts/bench-pkg`): a git repository holding a pure-Python
//! package (`demo-pure`, with a console script) and one with a C extension
//! built by setuptools (`demo-cext`, whose `asserts()` tells which variant
//! built it), and a lockstep.toml whose `[pkg]` table builds both, the C
//! package in a `release` and an `asserts` variant.

use std::path::Path;

use lockstep_core::Error;
use lockstep_git::Repo;

/// The `[pkg]` part of the fixture's lockstep.toml.
pub const PKG_CONFIG: &str = r#"[pkg]
python = ["3.11"]

[[pkg.package]]
name = "demo-pure"
source = "pure"

[[pkg.package]]
name = "demo-cext"
source = "cext"
variants = ["release", "asserts"]

[pkg.variants.asserts]
env = { DEMO_ENABLE_ASSERTS = "ON" }
"#;

const SETUPTOOLS: &str =
    "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n";

const PURE_INIT: &str = r#""""A pure-Python package of lockstep's fixture project."""

from importlib.metadata import version


def main():
    print(f"demo-pure {version('demo-pure')}")
"#;

const CEXT_SETUP: &str = r#"import os

from setuptools import Extension, setup

macros = [("DEMO_ASSERTS", "1")] if os.environ.get("DEMO_ENABLE_ASSERTS") == "ON" else []
setup(ext_modules=[Extension("demo_cext", ["demo_cext.c"], define_macros=macros)])
"#;

const CEXT_SOURCE: &str = r#"#include <Python.h>

/* True when built by the `asserts` variant (DEMO_ENABLE_ASSERTS=ON). */
static PyObject *asserts(PyObject *self, PyObject *args) {
#ifdef DEMO_ASSERTS
  Py_RETURN_TRUE;
#else
  Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {{"asserts", asserts, METH_NOARGS, "built with asserts"}, {0}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "demo_cext", 0, -1, methods};
PyMODINIT_FUNC PyInit_demo_cext(void) { return PyModule_Create(&module); }
"#;

/// Writes the fixture project into `dir` (created) at `version`, with
/// `extra_config` appended to lockstep.toml, and commits it.
pub fn create(dir: &Path, version: &str, extra_config: &str) -> Result<Repo, Error> {
    create_with(dir, version, &format!("{PKG_CONFIG}{extra_config}"))
}

/// [`create`] with the whole lockstep.toml given.
pub fn create_with(dir: &Path, version: &str, config: &str) -> Result<Repo, Error> {
    let files: [(&str, String); 8] = [
        ("pure/pyproject.toml", format!("{SETUPTOOLS}\n[project]\nname = \"demo-pure\"\nversion = \"{version}\"\n\n[project.scripts]\ndemo-pure = \"demo_pure:main\"\n")),
        ("pure/src/demo_pure/__init__.py", PURE_INIT.to_string()),
        ("cext/pyproject.toml", format!("{SETUPTOOLS}\n[project]\nname = \"demo-cext\"\nversion = \"{version}\"\n")),
        ("cext/setup.py", CEXT_SETUP.to_string()),
        ("cext/demo_cext.c", CEXT_SOURCE.to_string()),
        ("cext/MANIFEST.in", "include demo_cext.c\n".to_string()),
        (".gitignore", "wheelhouse/\n".to_string()),
        ("lockstep.toml", config.to_string()),
    ];
    crate::repos::write_files(dir, &files)?;
    let repo = Repo::new(dir);
    repo.git(&["init", "-q", "-b", "main"])?;
    commit_all(&repo, "Add the demo packages")?;
    Ok(repo)
}

/// `git add -A` and a commit by the fixture's identity.
pub fn commit_all(repo: &Repo, message: &str) -> Result<(), Error> {
    repo.git(&["add", "-A"])?;
    repo.git_env(
        &["commit", "-q", "-m", message],
        &[
            ("GIT_AUTHOR_NAME", "lockstep demo"),
            ("GIT_AUTHOR_EMAIL", "demo@lockstep.invalid"),
            ("GIT_COMMITTER_NAME", "lockstep demo"),
            ("GIT_COMMITTER_EMAIL", "demo@lockstep.invalid"),
        ],
        None,
    )?;
    Ok(())
}
