#!/usr/bin/env python3
# check.py: end-to-end check of the bring-your-own-kernel example.
#
# Compiles program.mlir with tool.py as the executable preprocessor, runs it on
# IREE's CPU runtime and compares the results with NumPy:
#   1. iree-compile --iree-hal-preprocess-executables-with="python3 tool.py ...":
#      the tool's output is the same twice (deterministic) and the results are
#      a * b + a + BYO_MARKER (kernel.c) and sum(b) (IREE's own code);
#   2. the same with an edited copy of kernel.c (another marker): the results
#      follow the edit, so it is the C code that runs;
#   3. lockstep preprocess ... --with "python3 tool.py" --with-input kernel.c
#      --compile out.vmfb (skipped when no lockstep binary is found).
# Everything is written to a temporary directory, never to this one.
#
# Run it with a Python that has iree-base-compiler, iree-base-runtime and numpy:
#   python3 check.py [--keep] [--skip-lockstep]
# Environment: IREE_BIN (the directory of iree-compile and iree-run-module;
# default: beside this Python, else PATH), LOCKSTEP (the lockstep binary;
# default: lockstep on PATH, else this repository's target/{release,debug}),
# CC / BYO_KERNEL_CC (the C compiler tool.py uses).
# Exit status: 0 every result matched, 1 a mismatch or a failed step, 2 a tool
# is missing.

import argparse
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

try:
    import numpy as np
except ImportError:
    sys.exit("check: needs numpy (run it with the Python of your IREE environment)")

HERE = Path(__file__).resolve().parent
TOOL = HERE / "tool.py"
KERNEL = HERE / "kernel.c"
PROGRAM = HERE / "program.mlir"
IREE_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]


class StepFailed(Exception):
    pass


def main():
    parser = argparse.ArgumentParser(description="End-to-end check of the bring-your-own-kernel example.")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    parser.add_argument("--skip-lockstep", action="store_true", help="do not run step 3")
    args = parser.parse_args()

    iree_bin = find_iree_bin()
    if iree_bin is None:
        print("check: cannot find iree-compile and iree-run-module; set IREE_BIN", file=sys.stderr)
        return 2
    lockstep = None if args.skip_lockstep else find_lockstep()

    work = Path(tempfile.mkdtemp(prefix="byo-kernel-check-"))
    try:
        ok = run_checks(work, iree_bin, lockstep)
    except StepFailed as error:
        print(f"check: FAILED: {error}", file=sys.stderr)
        ok = False
    finally:
        if args.keep:
            print(f"check: files kept in {work}")
        else:
            shutil.rmtree(work, ignore_errors=True)
    print("check: all results match" if ok else "check: MISMATCH or failure (see above)")
    return 0 if ok else 1


def run_checks(work, iree_bin, lockstep):
    # Objects go to the temporary directory too (tool.py --object-dir).
    objects = work / "objects"
    rng = np.random.default_rng(7)
    a = rng.uniform(-4, 4, 64).astype(np.float32)
    b = rng.uniform(-4, 4, 64).astype(np.float32)
    np.save(work / "a.npy", a)
    np.save(work / "b.npy", b)

    marker = read_marker(KERNEL.read_text())
    ok = True

    # 1. IREE's own option, kernel.c as it is.
    tool = tool_command(sys.executable, objects)
    sources = [work / "sources-1.mlir", work / "sources-2.mlir"]
    for path in sources:
        iree_compile(iree_bin, tool, ["--compile-to=executable-sources", "-o", str(path)])
    text = sources[0].read_text()
    if sources[0].read_bytes() != sources[1].read_bytes():
        print("check: the preprocessed module differs between two identical runs")
        ok = False
    if not re.search(r"call @byo_mul_add_[0-9a-f]+\(", text) or "#hal.executable.object<{path = " not in text:
        print("check: the preprocessed module has no call to byo_mul_add_<hash> or no object")
        ok = False
    vmfb = work / "iree.vmfb"
    iree_compile(iree_bin, tool, ["-o", str(vmfb)])
    ok &= compare("iree-compile --iree-hal-preprocess-executables-with", iree_bin, vmfb, work, a, b, marker)

    # 2. An edited copy of kernel.c: the results must follow it.
    edited_marker = marker + 100.0
    edited = work / "edited" / "kernel.c"
    edited.parent.mkdir()
    edited.write_text(set_marker(KERNEL.read_text(), edited_marker))
    vmfb = work / "edited.vmfb"
    iree_compile(iree_bin, tool_command(sys.executable, objects, edited), ["-o", str(vmfb)])
    ok &= compare("edited kernel.c", iree_bin, vmfb, work, a, b, edited_marker)

    # 3. lockstep preprocess, the direct form.
    if lockstep is None:
        print("check: lockstep: skipped (no binary: set LOCKSTEP or put lockstep on PATH)")
        return ok
    vmfb = work / "lockstep.vmfb"
    command = [
        lockstep, "preprocess", str(PROGRAM), "-o", str(work / "lockstep.mlir"),
        # An absolute interpreter path is fine here: lockstep finds tools as a
        # shell does (iree-compile's option wants a name on PATH).
        "--with", shlex.join(tool_command(sys.executable, objects)),
        "--with-input", str(KERNEL),
        "--compile", str(vmfb),
        "--iree-bin", str(iree_bin),
        "--", *IREE_FLAGS,
    ]
    run(command, "lockstep preprocess", cwd=HERE)
    ok &= compare(f"lockstep preprocess ({lockstep})", iree_bin, vmfb, work, a, b, marker)
    return ok


def tool_command(python, objects, kernel=None):
    command = [python, str(TOOL), "--object-dir", str(objects)]
    if kernel is not None:
        command += ["--kernel", str(kernel)]
    return command


def iree_compile(iree_bin, tool, extra):
    """iree-compile with the tool as preprocessor. The option's command is
    split GNU-style and its first word must be a bare name, found next to
    iree-compile or on PATH, so the Python is put first on PATH."""
    python = Path(tool[0])
    env = dict(os.environ, PATH=f"{python.parent}{os.pathsep}{os.environ.get('PATH', '')}")
    option = shlex.join([python.name] + tool[1:])
    command = [
        str(iree_bin / "iree-compile"), str(PROGRAM), *IREE_FLAGS,
        f"--iree-hal-preprocess-executables-with={option}", *extra,
    ]
    run(command, "iree-compile", env=env)


def compare(name, iree_bin, vmfb, work, a, b, marker):
    out = work / f"{vmfb.stem}.out.npy"
    run(
        [
            str(iree_bin / "iree-run-module"), "--device=local-task", f"--module={vmfb}",
            "--function=main", f"--input=@{work / 'a.npy'}", f"--input=@{work / 'b.npy'}",
            f"--output=@{out}", f"--output=+{out}",
        ],
        "iree-run-module",
    )
    with open(out, "rb") as f:
        got_mul_add, got_sum = np.load(f), np.load(f)
    want_mul_add = a * b + a + np.float32(marker)
    want_sum = b.sum(dtype=np.float32)
    good = np.allclose(got_mul_add, want_mul_add, rtol=1e-5, atol=1e-5) and np.allclose(
        got_sum, want_sum, rtol=1e-4, atol=1e-4
    )
    error = float(np.max(np.abs(got_mul_add - want_mul_add)))
    print(
        f"check: {name}: {'ok' if good else 'MISMATCH'} "
        f"(a*b+a+{marker:g}: max error {error:.3g}; sum(b): {float(got_sum):.6g} vs {float(want_sum):.6g})"
    )
    return good


MARKER_LINE = re.compile(r"^#define BYO_MARKER ([-+0-9.eE]+)f?[ \t]*$", re.MULTILINE)


def read_marker(source):
    match = MARKER_LINE.search(source)
    if not match:
        raise StepFailed("kernel.c has no `#define BYO_MARKER <float>f` line")
    return float(match.group(1))


def set_marker(source, value):
    return MARKER_LINE.sub(f"#define BYO_MARKER {value!r}f", source, count=1)


def run(command, name, **kwargs):
    result = subprocess.run(command, capture_output=True, text=True, **kwargs)
    if result.returncode != 0:
        tail = "\n".join((result.stdout + result.stderr).strip().splitlines()[-25:])
        # iree-compile keeps a failed preprocessor's stderr in a file: show it.
        kept = re.search(r"tool stderr preserved at (\S+)", result.stderr)
        if kept and os.path.isfile(kept.group(1)):
            tail += "\ntool stderr:\n" + Path(kept.group(1)).read_text(errors="replace").strip()
        raise StepFailed(
            f"{name} exited with status {result.returncode}\n"
            f"command: {shlex.join(command)}\n{tail}"
        )
    return result


def find_iree_bin():
    candidates = []
    if os.environ.get("IREE_BIN"):
        candidates.append(Path(os.environ["IREE_BIN"]))
    else:
        candidates.append(Path(sys.executable).parent)
        on_path = shutil.which("iree-compile")
        if on_path:
            candidates.append(Path(on_path).parent)
    for directory in candidates:
        if all((directory / name).is_file() for name in ("iree-compile", "iree-run-module")):
            return directory.resolve()
    return None


def find_lockstep():
    if os.environ.get("LOCKSTEP"):
        return os.environ["LOCKSTEP"]
    on_path = shutil.which("lockstep")
    if on_path:
        return on_path
    # This example lives in lockstep's repository: use a build of it.
    builds = [HERE.parent.parent / "target" / kind / "lockstep" for kind in ("release", "debug")]
    builds = [path for path in builds if path.is_file()]
    return str(max(builds, key=lambda p: p.stat().st_mtime)) if builds else None


if __name__ == "__main__":
    sys.exit(main())
