"""A small pytest runner for the iree-test-suites layout, the baseline of
scripts/bench-suite. It does what iree-test-suites' onnx_ops/conftest.py does:

- every `run_module_io_flags.txt` beside a `model.mlir[bc]` is a case, named by
  its directory relative to the suite root (the directory holding this file);
- for every config (`--config-files`, JSON; default `$IREE_TEST_CONFIG_FILES`,
  `;`-separated) one test item `model.mlir::<config_name>`;
- the item runs two steps, each a shell subprocess from the case directory:
      iree-compile model.mlir <compile flags> -o <vmfb>
      iree-run-module --module=<vmfb> <run flags> --flagfile=run_module_io_flags.txt
  with `iree-compile` / `iree-run-module` found on PATH, and compiles afresh
  every time (no cache). Skip and expected-failure lists are honoured as
  strict XFAIL, like the original.

The only difference: modules go to `--vmfb-dir` (default: a pytest temporary
directory) instead of the case directory, so the suite tree stays untouched.

scripts/bench-suite copies this file to the root of the generated suite and runs
`pytest -n 2 -q -p no:cacheprovider --config-files CONFIG --vmfb-dir DIR ROOT`.
"""

from __future__ import annotations

import json
import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

import pytest

THIS_DIR = Path(__file__).parent
FLAGFILE = "run_module_io_flags.txt"


def pytest_addoption(parser):
    default = [f for f in os.getenv("IREE_TEST_CONFIG_FILES", "").split(";") if f]
    parser.addoption("--config-files", action="store", nargs="*", default=default,
                     help="config JSON files (config_name, iree_compile_flags, iree_run_module_flags, ...)")
    parser.addoption("--vmfb-dir", action="store", default=None,
                     help="where compiled modules are written (default: a temporary directory)")
    parser.addoption("--ignore-xfails", action="store_true", default=False)
    parser.addoption("--skip-all-runs", action="store_true", default=False)


def pytest_configure(config):
    config.iree_test_configs = []
    for path in config.getoption("config_files") or []:
        with open(path) as f:
            cfg = json.load(f)
        for key in ("config_name", "iree_compile_flags", "iree_run_module_flags"):
            if key not in cfg:
                raise ValueError(f"config file '{path}' is missing a '{key}' field")
        config.iree_test_configs.append(cfg)
    vmfb_dir = config.getoption("vmfb_dir")
    if vmfb_dir is None:
        vmfb_dir = tempfile.mkdtemp(prefix="its-vmfb-")
    config.iree_vmfb_dir = Path(vmfb_dir)
    config.iree_vmfb_dir.mkdir(parents=True, exist_ok=True)


def pytest_collect_file(parent, file_path):
    if file_path.name == FLAGFILE:
        return CaseFile.from_parent(parent, path=file_path)


class CompileError(Exception):
    pass


class RunError(Exception):
    pass


@dataclass(frozen=True)
class Spec:
    case_dir: Path
    case_name: str
    mlir_name: str
    config_name: str
    compile_flags: list
    run_flags: list
    expect_compile: bool
    expect_run: bool
    skip_run: bool


class CaseFile(pytest.File):
    def collect(self):
        case_dir = self.path.parent
        mlirs = sorted(case_dir.glob("*.mlir*"))
        assert len(mlirs) == 1, f"{case_dir}: expected exactly one .mlir file"
        name = case_dir.relative_to(THIS_DIR).as_posix()
        opt = self.config.getoption
        for cfg in self.config.iree_test_configs:
            if name in cfg.get("skip_compile_tests", []):
                continue
            spec = Spec(
                case_dir=case_dir,
                case_name=name,
                mlir_name=mlirs[0].name,
                config_name=cfg["config_name"],
                compile_flags=list(cfg["iree_compile_flags"]),
                run_flags=list(cfg["iree_run_module_flags"]),
                expect_compile=opt("ignore_xfails") or name not in cfg.get("expected_compile_failures", []),
                expect_run=opt("ignore_xfails") or name not in cfg.get("expected_run_failures", []),
                skip_run=opt("skip_all_runs") or name in cfg.get("skip_run_tests", []),
            )
            yield CompileRunItem.from_parent(self, name=f"{spec.mlir_name}::{spec.config_name}", spec=spec)


class CompileRunItem(pytest.Item):
    def __init__(self, spec: Spec, **kwargs):
        super().__init__(**kwargs)
        self.spec = spec
        stem = Path(spec.mlir_name).stem
        vmfb = self.config.iree_vmfb_dir / f"{spec.case_name.replace('/', '__')}__{stem}_{spec.config_name}.vmfb"
        self.compile_cmd = subprocess.list2cmdline(
            ["iree-compile", spec.mlir_name, *spec.compile_flags, "-o", str(vmfb)])
        self.run_cmd = subprocess.list2cmdline(
            ["iree-run-module", f"--module={vmfb}", *spec.run_flags, f"--flagfile={FLAGFILE}"])

    def runtest(self):
        if not self.spec.expect_compile:
            self.add_marker(pytest.mark.xfail(raises=CompileError, strict=True,
                                              reason="in expected_compile_failures"))
        if not self.spec.expect_run:
            self.add_marker(pytest.mark.xfail(raises=RunError, strict=True,
                                              reason="in expected_run_failures"))
        self._step(self.compile_cmd, CompileError)
        if not self.spec.skip_run:
            self._step(self.run_cmd, RunError)

    def _step(self, cmd, error):
        proc = subprocess.run(cmd, shell=True, capture_output=True, cwd=self.spec.case_dir)
        if proc.returncode != 0:
            raise error(f"cd {self.spec.case_dir} && {cmd}\nexit {proc.returncode}\n"
                        f"{proc.stdout.decode(errors='replace')}\n{proc.stderr.decode(errors='replace')}")

    def repr_failure(self, excinfo):
        if isinstance(excinfo.value, (CompileError, RunError)):
            return str(excinfo.value)
        return super().repr_failure(excinfo)

    def reportinfo(self):
        return self.path, 0, f"IREE compile and run: {self.spec.case_name}::{self.name}"
