//! Native packages shaped like the real ones lockstep builds, for the
//! compiler-cache tests and `scripts/bench-pkg`: each takes what real
//! projects take from PyPI in their isolated build environment and sets
//! nothing for a compiler cache of its own.
//!
//! - [`Shape::SkbuildPybind11`]: scikit-build-core over CMake, pybind11 from
//!   PyPI as a build requirement (scikit-build-sample-projects'
//!   `core-pybind11-hello`), every source including pybind11's headers.
//! - [`Shape::SetupPyCmake`]: a setup.py whose `build_ext` runs cmake (from
//!   PyPI, with ninja) on a CMakeLists.txt, the version hard-coded in
//!   setup.py (pybind11's `cmake_example`).
//! - [`Shape::SetuptoolsExtension`]: a plain setuptools `Extension` of C++
//!   sources, compiled by setuptools itself (`CC`), no CMake.
//!
//! Sources are template-heavy enough that compiling one takes real time
//! (`weight`), so a compiler cache shows in wall time. [`create`] writes
//! and commits the project (with a `lockstep.toml` building it);
//! [`touch_readme`] and [`touch_source`] commit the two kinds of change the
//! benchmark rebuilds after.

use std::path::{Path, PathBuf};

use lockstep_core::Error;
use lockstep_git::Repo;

use lockstep_sandbox::packages::commit_all;

/// Which real project it is shaped like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Shape {
    SkbuildPybind11,
    SetupPyCmake,
    SetuptoolsExtension,
}

impl Shape {
    /// The distribution name.
    pub fn name(self) -> &'static str {
        match self {
            Shape::SkbuildPybind11 => "skbdemo",
            Shape::SetupPyCmake => "cmkdemo",
            Shape::SetuptoolsExtension => "extdemo",
        }
    }

    /// Every shape.
    pub const ALL: [Shape; 3] = [
        Shape::SkbuildPybind11,
        Shape::SetupPyCmake,
        Shape::SetuptoolsExtension,
    ];
}

/// What to make.
#[derive(Debug, Clone)]
pub struct ShapeSpec {
    pub shape: Shape,
    /// Compiled sources (besides the module's own), at least 1.
    pub sources: usize,
    /// Template work per source: 1 is light (tests), 8 about a second of
    /// compiling each (benchmarks).
    pub weight: usize,
    /// Appended to the project's lockstep.toml.
    pub extra_config: String,
}

/// The pins of what the fixtures take from PyPI.
const SCIKIT_BUILD_CORE: &str = "scikit-build-core==1.1.2";
const PYBIND11: &str = "pybind11==3.1.0";

/// Creates the project in `dir` (a new git repository, committed); returns
/// its path.
pub fn create(dir: &Path, spec: &ShapeSpec) -> Result<PathBuf, Error> {
    let sources = spec.sources.max(1);
    let mut files = common_files(spec, sources);
    files.extend(match spec.shape {
        Shape::SkbuildPybind11 => skbuild_files(sources),
        Shape::SetupPyCmake => setup_cmake_files(sources),
        Shape::SetuptoolsExtension => extension_files(sources),
    });
    lockstep_sandbox::repos::write_files(dir, &files)?;
    let repo = Repo::new(dir);
    repo.git(&["init", "-q", "-b", "main"])?;
    commit_all(&repo, &format!("{}: a native package", spec.shape.name()))?;
    Ok(dir.to_path_buf())
}

/// Appends a line to README.md and commits it: a change no compile sees.
pub fn touch_readme(dir: &Path, n: u32) -> Result<(), Error> {
    let path = dir.join("README.md");
    let mut text = fs_err::read_to_string(&path)?;
    text.push_str(&format!("\nChange {n} of the documentation.\n"));
    fs_err::write(&path, text)?;
    commit_all(&Repo::new(dir), &format!("README: change {n}"))
}

/// Changes one constant of source `i` and commits it: one compile changes.
pub fn touch_source(dir: &Path, i: usize, n: u32) -> Result<(), Error> {
    let path = dir.join(format!("src/k{i}.cpp"));
    let text = fs_err::read_to_string(&path)?;
    let text: String = text
        .lines()
        .map(|l| {
            if l.starts_with("static const long kTweak") {
                format!("static const long kTweak = {n};\n")
            } else {
                format!("{l}\n")
            }
        })
        .collect();
    fs_err::write(&path, text)?;
    commit_all(&Repo::new(dir), &format!("k{i}: tweak {n}"))
}

fn common_files(spec: &ShapeSpec, sources: usize) -> Vec<(String, String)> {
    let name = spec.shape.name();
    let mut files = vec![
        (
            "README.md".to_string(),
            format!("# {name}\n\nA native package shaped like a real one (lockstep's fixture).\n"),
        ),
        (
            "lockstep.toml".to_string(),
            format!(
                "[pkg]\npython = [\"3.11\"]\nmanylinux = \"off\"\n\n[[pkg.package]]\nname = \"{name}\"\nsource = \".\"\n{}",
                spec.extra_config
            ),
        ),
        (".gitignore".to_string(), "wheelhouse/\nbuild/\n".to_string()),
    ];
    let pybind = spec.shape != Shape::SetuptoolsExtension;
    for i in 0..sources {
        files.push((
            format!("src/k{i}.cpp"),
            kernel_source(i, spec.weight, pybind),
        ));
    }
    files
}

/// Source `i`: compile-time tables built by template recursion, folded at
/// run time (`weight` tables of 400 entries).
fn kernel_source(i: usize, weight: usize, pybind: bool) -> String {
    // Every source sees pybind11's headers, as in real bindings.
    let include = if pybind {
        "#include <pybind11/pybind11.h>\n"
    } else {
        ""
    };
    lockstep_sandbox::repos::heavy_source(
        &format!("// Kernel {i}.\n{include}"),
        &format!("kernel_{i}"),
        i,
        weight,
        "long",
    )
}

/// `long run(long)` calling every kernel, declared for the module.
fn kernel_calls(sources: usize) -> (String, String) {
    let decls = (0..sources)
        .map(|i| format!("long kernel_{i}(long x);\n"))
        .collect();
    let calls = (0..sources)
        .map(|i| format!("  x = kernel_{i}(x);\n"))
        .collect();
    (decls, calls)
}

fn pybind_module(module: &str, sources: usize) -> String {
    let (decls, calls) = kernel_calls(sources);
    format!(
        "#include <pybind11/pybind11.h>\n\n{decls}\nstatic long run(long x) {{\n{calls}  return x;\n}}\n\nPYBIND11_MODULE({module}, m) {{\n  m.def(\"run\", &run);\n  m.def(\"kernels\", [] {{ return {sources}; }});\n}}\n"
    )
}

fn source_list(sources: usize) -> String {
    (0..sources)
        .map(|i| format!("src/k{i}.cpp"))
        .collect::<Vec<_>>()
        .join(" ")
}

fn skbuild_files(sources: usize) -> Vec<(String, String)> {
    vec![
        (
            "pyproject.toml".into(),
            format!(
                "[build-system]\nrequires = [\"{SCIKIT_BUILD_CORE}\", \"{PYBIND11}\"]\nbuild-backend = \"scikit_build_core.build\"\n\n[project]\nname = \"skbdemo\"\nversion = \"0.1.0\"\nrequires-python = \">=3.9\"\n"
            ),
        ),
        (
            "CMakeLists.txt".into(),
            format!(
                "cmake_minimum_required(VERSION 3.18)\nproject(skbdemo LANGUAGES CXX)\nset(CMAKE_CXX_STANDARD 17)\nfind_package(pybind11 CONFIG REQUIRED)\npybind11_add_module(skbdemo NO_EXTRAS src/module.cpp {})\ninstall(TARGETS skbdemo DESTINATION .)\n",
                source_list(sources)
            ),
        ),
        ("src/module.cpp".into(), pybind_module("skbdemo", sources)),
    ]
}

const SETUP_CMAKE: &str = r#"import os
import subprocess
import sys
from pathlib import Path

import pybind11
from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext


class CMakeExtension(Extension):
    def __init__(self, name: str, sourcedir: str = "") -> None:
        super().__init__(name, sources=[])
        self.sourcedir = os.fspath(Path(sourcedir).resolve())


class CMakeBuild(build_ext):
    def build_extension(self, ext: CMakeExtension) -> None:
        extdir = (Path.cwd() / self.get_ext_fullpath(ext.name)).parent.resolve()
        build_temp = Path(self.build_temp) / ext.name
        build_temp.mkdir(parents=True, exist_ok=True)
        import ninja

        args = [
            f"-DCMAKE_LIBRARY_OUTPUT_DIRECTORY={extdir}{os.sep}",
            f"-DPython_EXECUTABLE={sys.executable}",
            f"-Dpybind11_DIR={pybind11.get_cmake_dir()}",
            "-DCMAKE_BUILD_TYPE=Release",
            "-GNinja",
            f"-DCMAKE_MAKE_PROGRAM:FILEPATH={Path(ninja.BIN_DIR) / 'ninja'}",
        ]
        subprocess.run(["cmake", ext.sourcedir, *args], cwd=build_temp, check=True)
        subprocess.run(["cmake", "--build", "."], cwd=build_temp, check=True)


setup(
    name="cmkdemo",
    version="0.0.1",
    ext_modules=[CMakeExtension("cmkdemo")],
    cmdclass={"build_ext": CMakeBuild},
    zip_safe=False,
)
"#;

fn setup_cmake_files(sources: usize) -> Vec<(String, String)> {
    vec![
        (
            "pyproject.toml".into(),
            format!(
                "[build-system]\nrequires = [\"setuptools>=61\", \"wheel\", \"ninja\", \"cmake>=3.18\", \"{PYBIND11}\"]\nbuild-backend = \"setuptools.build_meta\"\n"
            ),
        ),
        ("setup.py".into(), SETUP_CMAKE.into()),
        (
            "CMakeLists.txt".into(),
            format!(
                "cmake_minimum_required(VERSION 3.18)\nproject(cmkdemo LANGUAGES CXX)\nset(CMAKE_CXX_STANDARD 17)\nfind_package(pybind11 CONFIG REQUIRED)\npybind11_add_module(cmkdemo NO_EXTRAS src/module.cpp {})\n",
                source_list(sources)
            ),
        ),
        ("src/module.cpp".into(), pybind_module("cmkdemo", sources)),
    ]
}

fn extension_files(sources: usize) -> Vec<(String, String)> {
    let (decls, calls) = kernel_calls(sources);
    let module = format!(
        "#define PY_SSIZE_T_CLEAN\n#include <Python.h>\n\n{decls}\nstatic PyObject *run(PyObject *, PyObject *args) {{\n  long x;\n  if (!PyArg_ParseTuple(args, \"l\", &x)) return nullptr;\n{calls}  return PyLong_FromLong(x);\n}}\n\nstatic PyMethodDef methods[] = {{{{\"run\", run, METH_VARARGS, \"Runs every kernel.\"}}, {{nullptr, nullptr, 0, nullptr}}}};\nstatic struct PyModuleDef module = {{PyModuleDef_HEAD_INIT, \"extdemo\", nullptr, -1, methods}};\nPyMODINIT_FUNC PyInit_extdemo(void) {{ return PyModule_Create(&module); }}\n"
    );
    let sources: Vec<String> = std::iter::once("\"src/module.cpp\"".to_string())
        .chain((0..sources).map(|i| format!("\"src/k{i}.cpp\"")))
        .collect();
    vec![
        (
            "pyproject.toml".into(),
            "[build-system]\nrequires = [\"setuptools>=61\"]\nbuild-backend = \"setuptools.build_meta\"\n\n[project]\nname = \"extdemo\"\nversion = \"0.1.0\"\n".into(),
        ),
        (
            "setup.py".into(),
            format!(
                "from setuptools import Extension, setup\n\nsetup(\n    ext_modules=[\n        Extension(\n            \"extdemo\",\n            sources=[{}],\n            language=\"c++\",\n            extra_compile_args=[\"-std=c++17\"],\n        )\n    ]\n)\n",
                sources.join(", ")
            ),
        ),
        ("src/module.cpp".into(), module),
    ]
}
