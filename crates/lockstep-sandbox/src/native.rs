//! An IREE-shaped project for `lockstep pkg` and `lockstep release` (the
//! demo, the tests and `scripts/bench-pkg`): a superproject whose native
//! package is built from a submodule, as IREE's compiler wheel is built from
//! `third_party/llvm-project`.
//!
//! - `minillvm/`: the "upstream", its own git repository: a small C++
//!   library (`lib/pass_N.cpp`, template-heavy enough that compiling it
//!   takes real time, so a compiler cache shows) with a C interface.
//! - `project/`: the superproject, with `minillvm` as the submodule
//!   `third_party/minillvm`, and two packages:
//!   - `compiler/` (`demo-compiler`): scikit-build-core over CMake (cmake
//!     and ninja from PyPI), compiling the submodule's sources into its
//!     extension `demo_compiler._minillvm`;
//!   - `runtime/` (`demo-runtime`): pure Python by setuptools, depending on
//!     `packaging` from PyPI.
//!
//!   Both versions are dynamic, IREE's pattern: `version_info.json`'s
//!   `package-version` plus the `DEMO_VERSION_SUFFIX` environment variable.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_git::Repo;

use crate::packages::commit_all;
use crate::repos::write_files;

/// The submodule's path in the superproject.
pub const SUBMODULE_PATH: &str = "third_party/minillvm";

/// The `[pkg]` part of the project's lockstep.toml.
pub const PKG_CONFIG: &str = r#"[pkg]
python = ["3.11"]

[pkg.version]
write-file = "version_info.json"

[[pkg.package]]
name = "demo-compiler"
source = "compiler"

[[pkg.package]]
name = "demo-runtime"
source = "runtime"
"#;

/// [`PKG_CONFIG`] with the spec's Pythons and variants.
fn pkg_config(spec: &NativeSpec) -> String {
    let pythons: Vec<String> = spec.pythons.iter().map(|p| format!("\"{p}\"")).collect();
    let mut text = PKG_CONFIG.replace(
        "python = [\"3.11\"]",
        &format!("python = [{}]", pythons.join(", ")),
    );
    if spec.asserts_variant {
        text = text.replace(
            "name = \"demo-compiler\"\nsource = \"compiler\"\n",
            "name = \"demo-compiler\"\nsource = \"compiler\"\nvariants = [\"release\", \"asserts\"]\n",
        );
        text.push_str("\n[pkg.variants.asserts]\nenv = { DEMO_ENABLE_ASSERTS = \"ON\" }\nname-suffix = \"-asserts\"\n");
    }
    text
}

/// How big the fixture is.
#[derive(Debug, Clone)]
pub struct NativeSpec {
    /// `minillvm/lib/pass_N.cpp` files (each a fraction of a second to compile).
    pub passes: usize,
    /// `package-version` of both packages' `version_info.json`.
    pub version: String,
    /// Appended to lockstep.toml.
    pub extra_config: String,
    /// `[pkg] python` (default `["3.11"]`).
    pub pythons: Vec<String>,
    /// demo-compiler is also built as `demo-compiler-asserts` (the variant
    /// `asserts`, `name-suffix = "-asserts"`), as IREE's asserts wheels.
    pub asserts_variant: bool,
}

impl Default for NativeSpec {
    fn default() -> Self {
        NativeSpec {
            passes: 4,
            version: "0.3.0".into(),
            extra_config: String::new(),
            pythons: vec!["3.11".into()],
            asserts_variant: false,
        }
    }
}

/// The fixture's two repositories.
#[derive(Debug, Clone)]
pub struct Native {
    /// The submodule's own repository (its "upstream").
    pub minillvm: PathBuf,
    /// The superproject, with the submodule initialised.
    pub project: PathBuf,
}

/// Creates `dir/minillvm` and `dir/project` (both committed, the
/// submodule initialised at minillvm's HEAD).
pub fn create(dir: &Path, spec: &NativeSpec) -> Result<Native, Error> {
    let minillvm = dir.join("minillvm");
    let project = dir.join("project");
    write_files(&minillvm, &minillvm_files(spec.passes))?;
    let upstream = Repo::new(&minillvm);
    upstream.git(&["init", "-q", "-b", "main"])?;
    commit_all(&upstream, "minillvm: a small library of passes")?;

    write_files(&project, &project_files(spec))?;
    let repo = Repo::new(&project);
    repo.git(&["init", "-q", "-b", "main"])?;
    repo.git(&["config", "protocol.file.allow", "always"])?;
    let url = minillvm.to_string_lossy().into_owned();
    repo.git(&[
        "-c",
        "protocol.file.allow=always",
        "submodule",
        "--quiet",
        "add",
        &url,
        SUBMODULE_PATH,
    ])?;
    commit_all(&repo, "Add the demo compiler and runtime packages")?;
    Ok(Native { minillvm, project })
}

fn minillvm_files(passes: usize) -> Vec<(String, String)> {
    let passes = passes.max(1);
    let mut files = vec![
        (
            "include/minillvm.h".to_string(),
            "#pragma once\n#ifdef __cplusplus\nextern \"C\" {\n#endif\nint minillvm_passes(void);\nlong minillvm_run(long x);\n#ifdef __cplusplus\n}\n#endif\n".to_string(),
        ),
        ("lib/registry.cpp".to_string(), registry_source(passes)),
    ];
    for i in 0..passes {
        files.push((format!("lib/pass_{i}.cpp"), pass_source(i)));
    }
    files
}

/// One pass: compile-time tables built by template recursion (the work a
/// real compiler's generated tables give a C++ compiler, about half a
/// second of it per file), folded at run time.
fn pass_source(i: usize) -> String {
    crate::repos::heavy_source(
        &format!("// Pass {i} of minillvm.\n"),
        &format!("minillvm_pass_{i}"),
        i,
        12,
        "int",
    )
}

fn registry_source(passes: usize) -> String {
    let decls: String = (0..passes)
        .map(|i| format!("long minillvm_pass_{i}(long x);\n"))
        .collect();
    let calls: String = (0..passes)
        .map(|i| format!("  x = minillvm_pass_{i}(x);\n"))
        .collect();
    format!(
        "#include \"minillvm.h\"\n\n{decls}\nextern \"C\" int minillvm_passes(void) {{ return {passes}; }}\n\nextern \"C\" long minillvm_run(long x) {{\n{calls}  return x;\n}}\n"
    )
}

const COMPILER_CMAKE: &str = r#"cmake_minimum_required(VERSION 3.18)
project(demo_compiler LANGUAGES C CXX)
set(CMAKE_CXX_STANDARD 17)
find_package(Python COMPONENTS Interpreter Development.Module REQUIRED)
# The submodule's sources, as IREE's compiler wheel builds LLVM's.
set(MINILLVM ${CMAKE_CURRENT_SOURCE_DIR}/../third_party/minillvm)
file(GLOB MINILLVM_SOURCES CONFIGURE_DEPENDS ${MINILLVM}/lib/*.cpp)
if(NOT MINILLVM_SOURCES)
  message(FATAL_ERROR "third_party/minillvm is empty: the submodule was not staged")
endif()
Python_add_library(_minillvm MODULE src/module.c ${MINILLVM_SOURCES} WITH_SOABI)
target_include_directories(_minillvm PRIVATE ${MINILLVM}/include)
# A build that needs a newer glibc (closefrom, GLIBC_2.34): for the
# manylinux tests, whose policy it cannot meet below manylinux_2_34.
if(DEFINED ENV{DEMO_NEW_GLIBC})
  target_compile_definitions(_minillvm PRIVATE DEMO_NEW_GLIBC=1)
endif()
# An asserts build, as IREE's asserts wheels: `asserts()` tells.
if("$ENV{DEMO_ENABLE_ASSERTS}" STREQUAL "ON")
  target_compile_definitions(_minillvm PRIVATE DEMO_ASSERTS=1)
endif()
install(TARGETS _minillvm DESTINATION demo_compiler)
"#;

const COMPILER_MODULE: &str = r#"#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <unistd.h>
#include "minillvm.h"

#ifdef DEMO_NEW_GLIBC
/* Only referenced, never called: it ties the wheel to glibc 2.34. */
void (*demo_new_glibc)(unsigned int) = closefrom;
#endif

static PyObject *passes(PyObject *self, PyObject *args) {
  return PyLong_FromLong(minillvm_passes());
}

static PyObject *run(PyObject *self, PyObject *args) {
  long x;
  if (!PyArg_ParseTuple(args, "l", &x)) return NULL;
  return PyLong_FromLong(minillvm_run(x));
}

/* True when built with DEMO_ENABLE_ASSERTS=ON. */
static PyObject *asserts(PyObject *self, PyObject *args) {
#ifdef DEMO_ASSERTS
  Py_RETURN_TRUE;
#else
  Py_RETURN_FALSE;
#endif
}

static PyMethodDef methods[] = {
    {"passes", passes, METH_NOARGS, "number of minillvm passes"},
    {"asserts", asserts, METH_NOARGS, "built with asserts"},
    {"run", run, METH_VARARGS, "run every pass"},
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_minillvm", NULL, -1, methods};
PyMODINIT_FUNC PyInit__minillvm(void) { return PyModule_Create(&module); }
"#;

/// scikit-build-core's plugin for the dynamic version (IREE's pattern).
const VERSION_PROVIDER: &str = r#""""The version: version_info.json's package-version, plus $DEMO_VERSION_SUFFIX."""

import json
import os


def dynamic_metadata(field, settings=None):
    with open("version_info.json", encoding="utf-8") as f:
        version = json.load(f)["package-version"]
    return version + os.environ.get("DEMO_VERSION_SUFFIX", "")
"#;

const RUNTIME_SETUP: &str = r#"import json
import os

from setuptools import setup

# IREE's pattern: the version comes from version_info.json, plus a suffix.
with open("version_info.json", encoding="utf-8") as f:
    version = json.load(f)["package-version"]
setup(version=version + os.environ.get("DEMO_VERSION_SUFFIX", ""))
"#;

const RUNTIME_INIT: &str = r#""""The runtime package of lockstep's IREE-shaped fixture."""

from importlib.metadata import version as _version

from packaging.version import Version


def version():
    """The installed version, parsed by `packaging` (a PyPI dependency)."""
    return Version(_version("demo-runtime"))
"#;

fn project_files(spec: &NativeSpec) -> Vec<(String, String)> {
    let version_info = format!("{{\n  \"package-version\": \"{}\"\n}}\n", spec.version);
    vec![
        (
            "compiler/pyproject.toml".into(),
            r#"[build-system]
requires = ["scikit-build-core==1.1.2"]
build-backend = "scikit_build_core.build"

[project]
name = "demo-compiler"
dynamic = ["version"]
requires-python = ">=3.9"

[tool.scikit-build]
experimental = true
wheel.packages = ["src/demo_compiler"]

[tool.scikit-build.metadata.version]
provider = "demo_version"
provider-path = "build_tools"
"#
            .into(),
        ),
        ("compiler/CMakeLists.txt".into(), COMPILER_CMAKE.into()),
        ("compiler/src/module.c".into(), COMPILER_MODULE.into()),
        (
            "compiler/src/demo_compiler/__init__.py".into(),
            "\"\"\"The compiler package: minillvm's passes, built from the submodule.\"\"\"\n\nfrom ._minillvm import asserts, passes, run\n".into(),
        ),
        ("compiler/build_tools/demo_version.py".into(), VERSION_PROVIDER.into()),
        ("compiler/version_info.json".into(), version_info.clone()),
        (
            "runtime/pyproject.toml".into(),
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"demo-runtime\"\ndynamic = [\"version\"]\nrequires-python = \">=3.9\"\ndependencies = [\"packaging>=20\"]\n".into(),
        ),
        ("runtime/setup.py".into(), RUNTIME_SETUP.into()),
        ("runtime/MANIFEST.in".into(), "include version_info.json\n".into()),
        ("runtime/src/demo_runtime/__init__.py".into(), RUNTIME_INIT.into()),
        ("runtime/version_info.json".into(), version_info),
        (".gitignore".into(), "wheelhouse/\n".into()),
        (
            "lockstep.toml".into(),
            format!("{}{}", pkg_config(spec), spec.extra_config),
        ),
    ]
}
