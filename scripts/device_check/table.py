"""One table of scripts/device-check run: every bench row (the embedded
kernel set, the bf16 convolutions), every smoke-suite test and every Python
kernel, with its median time and verdict. Exit 1 when a row failed."""

import json
import os
import sys

work = sys.argv[1]
rows = []


def load(name):
    path = os.path.join(work, name)
    try:
        with open(path) as fh:
            return json.load(fh)
    except (OSError, ValueError) as e:
        log = os.path.join(work, name.replace(".json", ".log"))
        tail = open(log).read().strip().splitlines()[-3:] if os.path.exists(log) else []
        rows.append((name.split(".")[0], "(no results)", None, f"FAIL: {e}; {' | '.join(tail)}"))
        return None


for section in ("kernels", "bf16"):
    doc = load(f"{section}.json")
    for r in (doc or {}).get("rows", []):
        status = r.get("status", "")
        if status == "ok":
            verdict = {"PASS": "PASS", "FAIL": "FAIL"}.get(r.get("verify"), "ok")
        elif status.startswith("skipped"):
            verdict = "SKIP: " + status
        else:
            verdict = "FAIL: " + status
        median = (r.get("stats") or {}).get("median")
        rows.append((section, r.get("func_name") or r.get("arguments"), median, verdict))
failures = os.path.join(sys.argv[2], "bf16-compile-failures.json") if len(sys.argv) > 2 else ""
if failures and os.path.exists(failures):
    for r in json.load(open(failures)):
        rows.append(("bf16", r["func_name"], None, "FAIL: compiled where prepared: " + r["status"]))
doc = load("smoke.json")
for t in (doc or {}).get("tests", []):
    outcome = t.get("outcome", "")
    verdict = {"pass": "PASS", "xfail": "PASS (xfail)", "skip": "SKIP: " + t.get("reason", "")}.get(
        outcome, "FAIL: " + t.get("reason", outcome)
    )
    rows.append(("smoke", t.get("id"), None, verdict))
doc = load("py.json")
for r in (doc or {}).get("rows", []):
    rows.append(("python", r["command"], r.get("median_us"), r["verdict"]))

width = max((len(str(r[1])) for r in rows), default=10)
print(f"{'section':<8} {'kernel or test':<{width}} {'median_us':>10}  verdict")
for section, name, median, verdict in rows:
    m = f"{median:10.1f}" if isinstance(median, (int, float)) else f"{'-':>10}"
    print(f"{section:<8} {str(name):<{width}} {m}  {verdict[:160]}")
failed = [r for r in rows if r[3].startswith("FAIL")]
passed = [r for r in rows if r[3].startswith("PASS") or r[3] == "ok"]
skipped = [r for r in rows if r[3].startswith("SKIP")]
print(f"\n{len(rows)} rows: {len(passed)} passed, {len(skipped)} skipped, {len(failed)} failed")
sys.exit(1 if failed else 0)
