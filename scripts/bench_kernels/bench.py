"""The figures of scripts/bench-kernels (see its header): launch overhead
against iree.runtime called directly, the first call of a new process with a
warm cache, and the 30 commands of scripts/bench-bench checked against the
f64 reference. Prints one line per figure; exit 1 when a kernel disagrees
with its reference or fails to launch."""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import numpy as np

import lockstep_kernels as lk

# A 1x1 convolution small enough that the call, not the arithmetic, is
# what is measured (about 60 us of work on one core).
CONV = "conv -n 1 -c 32 -H 14 -W 14 -k 32 -y 1 -x 1 -F 1"


def overhead(calls: int, rounds: int) -> None:
    import iree.runtime as rt

    f = lk.get_launchable(CONV)
    x, w = lk.sample_inputs(CONV)
    config = rt.Config(device=rt.get_device("local-task"))
    ctx = rt.SystemContext(vm_modules=[rt.VmModule.mmap(config.vm_instance, f.module_path)], config=config)
    direct = ctx.modules.module[f.func_name]
    np.testing.assert_array_equal(f(x, w), direct(x, w).to_host())
    ours, theirs = [], []
    per = calls // rounds

    def block(call) -> float:  # type: ignore[no-untyped-def]
        t0 = time.perf_counter()
        for _ in range(per):
            call()
        return (time.perf_counter() - t0) / per * 1e6

    ours_call = lambda: f(x, w)  # noqa: E731
    theirs_call = lambda: direct(x, w).to_host()  # noqa: E731
    for r in range(rounds):
        # Alternate which goes first: neither gets the warmer caches.
        if r % 2:
            ours.append(block(ours_call))
            theirs.append(block(theirs_call))
        else:
            theirs.append(block(theirs_call))
            ours.append(block(ours_call))
    a, b = statistics.median(ours), statistics.median(theirs)
    print(
        f"(a) launch overhead, {calls} calls of a cached 1x1 conv in {rounds} interleaved blocks: "
        f"get_launchable {a:.1f} us/call, iree.runtime directly {b:.1f} us/call, "
        f"ratio {a / b:.3f} (target <= 1.1)"
    )


FIRST_OURS = """
import time, iree.runtime
t0 = time.perf_counter()
import lockstep_kernels as lk
f = lk.get_launchable({cmd!r})
x, w = lk.sample_inputs({cmd!r})
f(x, w)
print(time.perf_counter() - t0, f.cached)
"""

FIRST_DIRECT = """
import time, iree.runtime as rt, numpy as np
x = np.ones({xs}, np.float32); w = np.ones({ws}, np.float32)
t0 = time.perf_counter()
config = rt.Config(device=rt.get_device("local-task"))
ctx = rt.SystemContext(vm_modules=[rt.VmModule.mmap(config.vm_instance, {path!r})], config=config)
ctx.modules.module[{func!r}](x, w).to_host()
print(time.perf_counter() - t0)
"""


def first_call(procs: int) -> None:
    f = lk.get_launchable(CONV)  # warm: the module is in the cache
    xs, ws = (tuple(t.shape) for t in f.inputs)
    ours, theirs = [], []
    for _ in range(procs):
        out = subprocess.run(
            [sys.executable, "-c", FIRST_OURS.format(cmd=CONV)], capture_output=True, text=True, check=True
        ).stdout.split()
        assert out[1] == "True", "the warm cache missed"
        ours.append(float(out[0]))
        out = subprocess.run(
            [sys.executable, "-c", FIRST_DIRECT.format(xs=xs, ws=ws, path=f.module_path, func=f.func_name)],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        theirs.append(float(out))
    a, b = statistics.median(ours) * 1e3, statistics.median(theirs) * 1e3
    print(
        f"(b) first call in a new process, warm cache ({procs} processes each): get_launchable + call {a:.1f} ms, "
        f"iree.runtime module load + call {b:.1f} ms, difference {a - b:.1f} ms (target <= 50 ms)"
    )


def agreement(commands_file: str) -> bool:
    commands = []
    with open(commands_file) as fh:
        for line in fh:
            line = line.strip()
            if line and not line.startswith("#"):
                commands.append(line.replace(" -i 20", ""))
    passed, failed = 0, []
    t0 = time.perf_counter()
    for command in commands:
        try:
            f = lk.get_launchable(command)
            inputs = lk.sample_inputs(command)
            outputs = f.run(*inputs)
            verdicts = lk.check(command, inputs, list(outputs))
        except Exception as e:  # reported, then counted as a failure
            failed.append(f"{command}: {type(e).__name__}: {e}")
            continue
        if all(v[0] for v in verdicts):
            passed += 1
        else:
            failed.append(f"{command}: {verdicts}")
    print(
        f"(c) the {len(commands)} commands of scripts/bench-bench through get_launchable, checked against the "
        f"f64 reference with bench --verify's tolerances: {passed} agree, {len(failed)} do not "
        f"({time.perf_counter() - t0:.1f} s, compiles included)"
    )
    for line in failed:
        print(f"    {line}")
    return not failed


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--rounds", type=int, default=10)
    parser.add_argument("--procs", type=int, default=7)
    parser.add_argument("--commands", required=True)
    args = parser.parse_args()
    ok = agreement(args.commands)
    overhead(args.calls, args.rounds)
    first_call(args.procs)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
