"""The Python part of scripts/device-check run: the three kernels compiled
by `prepare` (lockstep_kernels.compile_kernel) launched with get_launchable
from the carried kernel cache, compiling nothing, on the GPU; each checked
against the f64 reference and timed. Prints one JSON document: a row per
kernel (command, median_us, verdict)."""

import json
import os
import statistics
import sys
import time

here = sys.argv[1]
spec = json.load(open(os.path.join(here, "launch.json")))
os.environ["LOCKSTEP_KERNEL_CACHE_DIR"] = os.path.join(here, "cache")
os.environ["LOCKSTEP_KERNEL_COMPILER_IDENTITY"] = spec["identity"]

rows = []
try:
    import lockstep_kernels as lk
except Exception as e:  # reported as every row's verdict
    rows = [{"command": c, "median_us": None, "verdict": f"FAIL: import: {e}"} for c in spec["commands"]]
else:
    for command in spec["commands"]:
        row = {"command": command, "median_us": None}
        try:
            f = lk.get_launchable(command, spec["device"], compile_flags=spec["flags"])
            inputs = lk.sample_inputs(command)
            outputs = f.run(*inputs)
            verdicts = lk.check(command, inputs, list(outputs))
            times = []
            for _ in range(20):
                t0 = time.perf_counter()
                f.run(*inputs)
                times.append((time.perf_counter() - t0) * 1e6)
            row["median_us"] = statistics.median(times)
            row["verdict"] = "PASS" if all(v[0] for v in verdicts) else f"FAIL: {verdicts}"
        except lk.DeviceUnavailableError as e:
            row["verdict"] = f"SKIP: {e}"
        except Exception as e:
            row["verdict"] = f"FAIL: {type(e).__name__}: {e}"
        rows.append(row)
json.dump({"rows": rows}, sys.stdout, indent=1)
