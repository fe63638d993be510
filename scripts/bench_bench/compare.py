#!/usr/bin/env python3
"""Figures of scripts/bench-bench from the cold and warm `lockstep bench` JSON.

(a) cold wall / (sum of compile_seconds / jobs + sum of timing_seconds)
(b) warm wall / cold wall
(c) per row, interleaved over ROUNDS rounds: `lockstep bench` on that one
    command (warm cache) then iree-benchmark-module on the row's cached vmfb
    with the same function, device, worker threads and splat inputs, invoked
    plainly (the mean time per iteration it reports); the row's ratio is the
    median over rounds of lockstep median / that; the figure is the median
    over rows. Also against --benchmark_repetitions=REPS
    --benchmark_min_time=20x (median aggregate) and lockstep's own scheme
    (min_time=1x, samples+1 repetitions, median).
Exit 0 when the figures were computed (targets met or not), 1 otherwise.
"""
import argparse
import json
import os
import re
import shlex
import statistics
import subprocess
import sys
import tempfile


def log(msg):
    print(f"bench-bench: {msg}", file=sys.stderr, flush=True)


def input_flags(module, func, splat):
    """--input flags from the func signature in the .mlir next to the vmfb."""
    mlir = os.path.splitext(module)[0] + ".mlir"
    text = open(mlir).read()
    m = re.search(r"func\.func @" + re.escape(func) + r"\((.*?)\)\s*->", text)
    if not m:
        raise SystemExit(f"bench-bench: error: no signature for {func} in {mlir}")
    types = re.findall(r"tensor<([^>]*)>", m.group(1))
    return [f"--input={t}={splat}" for t in types]


SCALE = {"s": 1e6, "ms": 1e3, "us": 1.0, "ns": 1e-3}


def iree_benchmarks(bench, module, func, device, flags, extra, out):
    """Runs iree-benchmark-module; returns its JSON `benchmarks` list."""
    argv = [
        bench,
        f"--module={module}",
        f"--function={func}",
        f"--device={device}",
        *flags,
        *extra,
        "--benchmark_format=json",
        f"--benchmark_out={out}",
        "--benchmark_out_format=json",
    ]
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.load(open(out))["benchmarks"]


def iree_median_us(bench, module, func, device, flags, reps, out, min_time="20x"):
    extra = [f"--benchmark_repetitions={reps}", f"--benchmark_min_time={min_time}"]
    for b in iree_benchmarks(bench, module, func, device, flags, extra, out):
        if b.get("run_type") == "aggregate" and b.get("aggregate_name") == "median":
            return b["real_time"] * SCALE[b.get("time_unit", "ns")]
    raise SystemExit(f"bench-bench: error: no median aggregate in {out}")


def iree_default_us(bench, module, func, device, flags, out):
    """What a plain `iree-benchmark-module` invocation reports: the mean time
    per iteration over the iteration count google-benchmark picks (~0.5 s)."""
    for b in iree_benchmarks(bench, module, func, device, flags, [], out):
        if b.get("run_type") == "iteration":
            return b["real_time"] * SCALE[b.get("time_unit", "ns")]
    raise SystemExit(f"bench-bench: error: no iteration row in {out}")


def lockstep_median_us(lockstep, command, splat, device, threads, out, cwd):
    # --no-cache: timed every round (an unchanged row would be answered
    # from its record); the kernel still comes from the cache.
    argv = [lockstep, "bench", "-j", "1", "--no-cache", "--device", device,
            "--splat-input-value", splat, "--json", out]
    if threads:
        argv += ["--threads", str(threads)]
    argv += shlex.split(command)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=cwd)
    data = json.load(open(out))
    (row,) = data["rows"]
    if data["compiled"] != 0:
        raise SystemExit(f"bench-bench: error: interleaved lockstep run recompiled: {command}")
    return row["stats"]["median"], row["module"]


def verdict(ok):
    return "PASS" if ok else "FAIL"


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--cold", required=True)
    p.add_argument("--warm", required=True)
    p.add_argument("--cold-wall", type=float, required=True)
    p.add_argument("--warm-wall", type=float, required=True)
    p.add_argument("--jobs", type=int, required=True)
    p.add_argument("--lockstep", required=True)
    p.add_argument("--iree-bench", required=True)
    p.add_argument("--device", default="local-task")
    p.add_argument("--splat", default="1")
    p.add_argument("--threads", type=int, default=0)
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--reps", type=int, default=5)
    p.add_argument("--cwd", required=True)
    a = p.parse_args()

    cold = json.load(open(a.cold))
    warm = json.load(open(a.warm))
    for name, data in (("cold", cold), ("warm", warm)):
        bad = [r for r in data["rows"] if r["status"] != "ok"]
        if bad:
            raise SystemExit(f"bench-bench: error: {name} run has failed rows: {bad[0]['status']}")
    rows = cold["rows"]
    compile_sum = sum(r["compile_seconds"] for r in rows)
    timing_sum = sum(r["timing_seconds"] for r in rows)
    ideal = compile_sum / a.jobs + timing_sum
    ratio_a = a.cold_wall / ideal
    ratio_b = a.warm_wall / a.cold_wall
    warm_compile = sum(r["compile_seconds"] for r in warm["rows"])

    # (c), interleaved per row and per round: lockstep, then three ways of
    # asking iree-benchmark-module about the same vmfb.
    refs = {
        "default": "plain invocation (mean per iteration, auto iteration count)",
        "20x": f"--benchmark_repetitions={a.reps} --benchmark_min_time=20x (median of 20-iteration means)",
        "1x": "lockstep's scheme: --benchmark_min_time=1x, samples+1 repetitions (median)",
    }
    per_row = []  # (lockstep median us, {ref: (ratio, us)})
    with tempfile.TemporaryDirectory(prefix="bench-bench-c-") as tmp:
        for i, row in enumerate(rows):
            module, func = row["module"], row["func_name"]
            flags = input_flags(module, func, a.splat)
            if a.threads:
                flags.append(f"--task_topology_max_group_count={a.threads}")
            reps1 = row["stats"]["samples"] + 1
            ls_meds, ref_us, ratios = [], {k: [] for k in refs}, {k: [] for k in refs}
            for _ in range(a.rounds):
                ls, ls_module = lockstep_median_us(
                    a.lockstep, row["arguments"], a.splat, a.device, a.threads,
                    os.path.join(tmp, "one.json"), a.cwd)
                if ls_module != module:
                    raise SystemExit(f"bench-bench: error: row {i} ran {ls_module}, expected {module}")
                out = os.path.join(tmp, "ib.json")
                got = {
                    "default": iree_default_us(a.iree_bench, module, func, a.device, flags, out),
                    "20x": iree_median_us(a.iree_bench, module, func, a.device, flags, a.reps, out),
                    "1x": iree_median_us(a.iree_bench, module, func, a.device, flags, reps1, out, "1x"),
                }
                ls_meds.append(ls)
                for k, us in got.items():
                    ref_us[k].append(us)
                    ratios[k].append(ls / us)
            med = {k: (statistics.median(ratios[k]), statistics.median(ref_us[k])) for k in refs}
            per_row.append((statistics.median(ls_meds), med))
            log(f"(c) {i + 1}/{len(rows)} lockstep {statistics.median(ls_meds):9.2f}us  "
                + "  ".join(f"{k} {med[k][1]:9.2f}us ({med[k][0]:.3f})" for k in refs))
    ratio_c = statistics.median(m["default"][0] for _, m in per_row)

    print()
    print(f"rows: {len(rows)} (cold: {cold['compiled']} compiled, {cold['cache_hits']} cached;"
          f" warm: {warm['compiled']} compiled, {warm['cache_hits']} cached)")
    print(f"(a) cold wall / (compile/jobs + timing) = {ratio_a:.3f}  target <= 1.15  {verdict(ratio_a <= 1.15)}")
    print(f"    cold wall {a.cold_wall:.2f}s; sum compile {compile_sum:.2f}s / {a.jobs} jobs"
          f" = {compile_sum / a.jobs:.2f}s; sum timing-process {timing_sum:.2f}s; ideal {ideal:.2f}s")
    print(f"(b) warm / cold = {ratio_b:.3f}  target <= 0.3  {verdict(ratio_b <= 0.3)}")
    print(f"    warm wall {a.warm_wall:.2f}s (sum compile {warm_compile:.2f}s,"
          f" sum timing-process {sum(r['timing_seconds'] for r in warm['rows']):.2f}s);"
          f" cold wall {a.cold_wall:.2f}s")
    ok_c = 0.9 <= ratio_c <= 1.1
    rs = sorted(m["default"][0] for _, m in per_row)
    print(f"(c) median over rows of lockstep median / iree-benchmark-module = {ratio_c:.3f}"
          f"  target 0.9..1.1  {verdict(ok_c)}")
    print(f"    reference: {refs['default']}; per-row ratios min {rs[0]:.3f}"
          f" p25 {rs[len(rs) // 4]:.3f} p75 {rs[3 * len(rs) // 4]:.3f} max {rs[-1]:.3f};"
          f" {a.rounds} interleaved rounds per row, splat {a.splat},"
          f" worker threads {a.threads or 'runtime default'}")
    for k in ("20x", "1x"):
        print(f"    against {refs[k]}:"
              f" median ratio {statistics.median(m[k][0] for _, m in per_row):.3f}")
    print(f"    median lockstep {statistics.median(ls for ls, _ in per_row):.2f}us,"
          f" median iree-benchmark-module {statistics.median(m['default'][1] for _, m in per_row):.2f}us")


if __name__ == "__main__":
    main()
