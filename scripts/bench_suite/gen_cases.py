#!/usr/bin/env python3
"""Generate the benchmark suite for scripts/bench-suite: N cases (default 48) in
the iree-test-suites layout, plus a config file.

Each case is a directory `<family>/<variant>/` holding `model.mlir`,
`input_<i>.npy`, the golden `output_<i>.npy` (integer outputs: raw `.bin`, see
scripts/gen-smoke-suite.py) and `run_module_io_flags.txt`. The programs are the
smoke suite's (matmul f32/f16/i8, conv2d, softmax, reductions, elementwise
f32/f16, transpose+broadcast, layernorm, attention) with different shapes and
seeds; the goldens are computed with numpy in float64 (int64) and rounded to the
output type, never by running IREE. The helpers (tensor types, value
generators, .npy/.bin writers, the flag file) come from scripts/gen-smoke-suite.py.

Usage:
    gen_cases.py OUT_DIR [--cases N] [--config FILE]
    gen_cases.py OUT_DIR --verify IREE_BIN_DIR   # also compile + run every case
Needs numpy.
"""

from __future__ import annotations

import argparse
import importlib.util
import json
import subprocess
import sys
import tempfile
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.dont_write_bytecode = True  # no scripts/__pycache__ from importing gen-smoke-suite.py
_spec = importlib.util.spec_from_file_location("gen_smoke_suite", HERE.parent / "gen-smoke-suite.py")
smoke = importlib.util.module_from_spec(_spec)
sys.modules["gen_smoke_suite"] = smoke  # dataclasses look the module up by name
_spec.loader.exec_module(smoke)

Case, ttype, ints, steps, softmax64 = smoke.Case, smoke.ttype, smoke.ints, smoke.steps, smoke.softmax64

CONFIG = {
    "config_name": "cpu_llvm_task",
    "iree_compile_flags": smoke.CPU_COMPILE_FLAGS,
    "iree_run_module_flags": ["--device=local-task"],
    "skip_compile_tests": [],
    "skip_run_tests": [],
    "expected_compile_failures": [],
    "expected_run_failures": [],
}

# ----------------------------------------------------------------------------
# Parameterized programs. Each returns a Case whose name is "<family>/<variant>".
# ----------------------------------------------------------------------------


def matmul(seed, M, K, N, elem, acc):
    """C = A @ B; elem in {f32, f16, i8}, acc the accumulator/result type."""
    rng = np.random.default_rng(seed)
    dt = {"f32": np.float32, "f16": np.float16, "i8": np.int8}[elem]
    at = {"f32": np.float32, "i32": np.int32}[acc]
    lo, hi = (-128, 127) if elem == "i8" else (-4, 4)
    a, b = ints(rng, (M, K), lo, hi, dt), ints(rng, (K, N), lo, hi, dt)
    out = (a.astype(np.int64) @ b.astype(np.int64)).astype(at)
    A, B, C = ttype((M, K), dt), ttype((K, N), dt), ttype((M, N), at)
    zero = "0" if acc == "i32" else "0.0"
    mlir = f"""\
// C = A @ B: {M}x{K} {elem} @ {K}x{N} {elem} -> {acc}.
func.func @main(%a: {A}, %b: {B}) -> {C} {{
  %zero = arith.constant {zero} : {acc}
  %empty = tensor.empty() : {C}
  %init = linalg.fill ins(%zero : {acc}) outs(%empty : {C}) -> {C}
  %c = linalg.matmul ins(%a, %b : {A}, {B}) outs(%init : {C}) -> {C}
  return %c : {C}
}}
"""
    fam = f"matmul_{elem}" if elem == "f32" else f"matmul_{elem}_{acc}"
    return Case(f"{fam}/m{M}_k{K}_n{N}", "matmul", mlir, [a, b], [out], ["matmul"])


def conv2d(seed, H, W, C, F):
    rng = np.random.default_rng(seed)
    N, KH, KW = 1, 3, 3
    x = ints(rng, (N, H, W, C), -3, 3, np.float32)
    w = ints(rng, (KH, KW, C, F), -3, 3, np.float32)
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((N, H, W, F), np.float64)
    for kh in range(KH):
        for kw in range(KW):
            out += np.einsum("nhwc,cf->nhwf", xp[:, kh : kh + H, kw : kw + W, :], w[kh, kw].astype(np.float64))
    out = out.astype(np.float32)
    X, Wt = ttype((N, H, W, C), np.float32), ttype((KH, KW, C, F), np.float32)
    P, O = ttype((N, H + 2, W + 2, C), np.float32), ttype((N, H, W, F), np.float32)
    mlir = f"""\
// 3x3 "same" convolution, NHWC {N}x{H}x{W}x{C}, HWCF filter to {F} channels.
func.func @main(%x: {X}, %w: {Wt}) -> {O} {{
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  }} : {X} to {P}
  %empty = tensor.empty() : {O}
  %init = linalg.fill ins(%zero : f32) outs(%empty : {O}) -> {O}
  %y = linalg.conv_2d_nhwc_hwcf
         {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}
         ins(%padded, %w : {P}, {Wt}) outs(%init : {O}) -> {O}
  return %y : {O}
}}
"""
    return Case(f"conv2d_nhwc_f32/h{H}_w{W}_c{C}_f{F}", "conv", mlir, [x, w], [out], ["conv"])


def softmax(seed, R, L):
    rng = np.random.default_rng(seed)
    x = steps(rng, (R, L), -4, 4, 0.5, np.float32)
    out = softmax64(x, axis=1).astype(np.float32)
    T = ttype((R, L), np.float32)
    mlir = f"""\
// Row-wise softmax of a {R}x{L} f32 matrix.
func.func @main(%x: {T}) -> {T} {{
  %empty = tensor.empty() : {T}
  %y = linalg.softmax dimension(1) ins(%x : {T}) outs(%empty : {T}) -> {T}
  return %y : {T}
}}
"""
    return Case(f"softmax_f32/r{R}_l{L}", "softmax", mlir, [x], [out], ["softmax"], tolerance=1e-5)


def reduction(seed, R, L, kind):
    rng = np.random.default_rng(seed)
    if kind == "sum_f32":
        dt, x = np.float32, ints(rng, (R, L), -8, 8, np.float32)
        out = x.astype(np.float64).sum(axis=1).astype(np.float32)
        init, op = "0.0 : f32", "arith.addf"
        elem = "f32"
    else:
        dt, x = np.int32, ints(rng, (R, L), -100000, 100000, np.int32)
        out = x.max(axis=1).astype(np.int32)
        init, op = "-2147483648 : i32", "arith.maxsi"
        elem = "i32"
    X, O = ttype((R, L), dt), ttype((R,), dt)
    mlir = f"""\
// Row {kind.split('_')[0]} of a {R}x{L} {elem} matrix (linalg.reduce).
func.func @main(%x: {X}) -> {O} {{
  %init_v = arith.constant {init}
  %empty = tensor.empty() : {O}
  %init = linalg.fill ins(%init_v : {elem}) outs(%empty : {O}) -> {O}
  %r = linalg.reduce ins(%x : {X}) outs(%init : {O}) dimensions = [1]
    (%in: {elem}, %acc: {elem}) {{
      %s = {op} %in, %acc : {elem}
      linalg.yield %s : {elem}
    }}
  return %r : {O}
}}
"""
    return Case(f"reduction_{kind}/r{R}_l{L}", "reduction", mlir, [x], [out], ["reduction"])


def elementwise_f32(seed, R, L):
    rng = np.random.default_rng(seed)
    shape = (R, L)
    a = steps(rng, shape, -2, 2, 0.25, np.float32)
    b = steps(rng, shape, -2, 2, 0.25, np.float32)
    c = ints(rng, shape, -4, 4, np.float32)
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
    out = (np.tanh(a64 + b64) * c64 + a64).astype(np.float32)
    T = ttype(shape, np.float32)
    mlir = f"""\
// Fused elementwise chain on {R}x{L} f32: tanh(a + b) * c + a.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: {T}, %b: {T}, %c: {T}) -> {T} {{
  %empty = tensor.empty() : {T}
  %y = linalg.generic
         {{indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}}
         ins(%a, %b, %c : {T}, {T}, {T}) outs(%empty : {T}) {{
    ^bb0(%va: f32, %vb: f32, %vc: f32, %out: f32):
      %sum = arith.addf %va, %vb : f32
      %t = math.tanh %sum : f32
      %prod = arith.mulf %t, %vc : f32
      %r = arith.addf %prod, %va : f32
      linalg.yield %r : f32
  }} -> {T}
  return %y : {T}
}}
"""
    return Case(f"elementwise_f32/r{R}_l{L}", "elementwise", mlir, [a, b, c], [out], ["elementwise"], tolerance=1e-4)


def elementwise_f16(seed, R, L):
    rng = np.random.default_rng(seed)
    shape = (R, L)
    a, b, c = (steps(rng, shape, -2, 2, 0.25, np.float16) for _ in range(3))
    out = ((a.astype(np.float64) + b.astype(np.float64)) * c.astype(np.float64)).astype(np.float16)
    T = ttype(shape, np.float16)
    mlir = f"""\
// f16 elementwise on {R}x{L}: (a + b) * c.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%a: {T}, %b: {T}, %c: {T}) -> {T} {{
  %empty = tensor.empty() : {T}
  %y = linalg.generic
         {{indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}}
         ins(%a, %b, %c : {T}, {T}, {T}) outs(%empty : {T}) {{
    ^bb0(%va: f16, %vb: f16, %vc: f16, %out: f16):
      %sum = arith.addf %va, %vb : f16
      %r = arith.mulf %sum, %vc : f16
      linalg.yield %r : f16
  }} -> {T}
  return %y : {T}
}}
"""
    return Case(f"elementwise_f16/r{R}_l{L}", "elementwise", mlir, [a, b, c], [out], ["elementwise"], tolerance=1e-2)


def transpose_broadcast(seed, R, L):
    rng = np.random.default_rng(seed)
    x = ints(rng, (R, L), -8, 8, np.float32)
    bias = ints(rng, (R,), -8, 8, np.float32)
    out = (x.astype(np.float64).T + bias.astype(np.float64)[None, :]).astype(np.float32)
    X, BI, O = ttype((R, L), np.float32), ttype((R,), np.float32), ttype((L, R), np.float32)
    mlir = f"""\
// y = transpose(x) + broadcast(bias), x {R}x{L} f32.
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%x: {X}, %bias: {BI}) -> {O} {{
  %empty = tensor.empty() : {O}
  %xt = linalg.transpose ins(%x : {X}) outs(%empty : {O}) permutation = [1, 0]
  %b = linalg.broadcast ins(%bias : {BI}) outs(%empty : {O}) dimensions = [0]
  %y = linalg.generic
         {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}}
         ins(%xt, %b : {O}, {O}) outs(%empty : {O}) {{
    ^bb0(%u: f32, %v: f32, %out: f32):
      %s = arith.addf %u, %v : f32
      linalg.yield %s : f32
  }} -> {O}
  return %y : {O}
}}
"""
    return Case(f"transpose_broadcast_f32/r{R}_l{L}", "transpose", mlir, [x, bias], [out], ["transpose"])


def layernorm(seed, R, L):
    rng = np.random.default_rng(seed)
    eps = 1e-5
    x = ints(rng, (R, L), -4, 4, np.float32)
    gamma = steps(rng, (L,), -2, 2, 0.25, np.float32)
    beta = steps(rng, (L,), -2, 2, 0.25, np.float32)
    x64 = x.astype(np.float64)
    mean = x64.mean(axis=1, keepdims=True)
    var = ((x64 - mean) ** 2).mean(axis=1, keepdims=True)
    out = ((x64 - mean) / np.sqrt(var + eps) * gamma.astype(np.float64) + beta.astype(np.float64)).astype(np.float32)
    X, V, RR = ttype((R, L), np.float32), ttype((L,), np.float32), ttype((R,), np.float32)
    mlir = f"""\
// Layer normalization of {R}x{L} f32 over the last dimension.
#x2 = affine_map<(d0, d1) -> (d0, d1)>
#row = affine_map<(d0, d1) -> (d0)>
#col = affine_map<(d0, d1) -> (d1)>
func.func @main(%x: {X}, %gamma: {V}, %beta: {V}) -> {X} {{
  %zero = arith.constant 0.0 : f32
  %n = arith.constant {float(L):.6e} : f32
  %eps = arith.constant {eps:.6e} : f32
  %r_empty = tensor.empty() : {RR}
  %r_init = linalg.fill ins(%zero : f32) outs(%r_empty : {RR}) -> {RR}
  %sum = linalg.reduce ins(%x : {X}) outs(%r_init : {RR}) dimensions = [1]
    (%in: f32, %acc: f32) {{
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }}
  %x_empty = tensor.empty() : {X}
  %centered = linalg.generic
      {{indexing_maps = [#x2, #row, #x2], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %sum : {X}, {RR}) outs(%x_empty : {X}) {{
    ^bb0(%v: f32, %s: f32, %out: f32):
      %mean = arith.divf %s, %n : f32
      %c = arith.subf %v, %mean : f32
      linalg.yield %c : f32
  }} -> {X}
  %sqsum = linalg.generic
      {{indexing_maps = [#x2, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%centered : {X}) outs(%r_init : {RR}) {{
    ^bb0(%c: f32, %acc: f32):
      %sq = arith.mulf %c, %c : f32
      %a = arith.addf %sq, %acc : f32
      linalg.yield %a : f32
  }} -> {RR}
  %y = linalg.generic
      {{indexing_maps = [#x2, #row, #col, #col, #x2], iterator_types = ["parallel", "parallel"]}}
      ins(%centered, %sqsum, %gamma, %beta : {X}, {RR}, {V}, {V}) outs(%x_empty : {X}) {{
    ^bb0(%c: f32, %ss: f32, %g: f32, %b: f32, %out: f32):
      %var = arith.divf %ss, %n : f32
      %ve = arith.addf %var, %eps : f32
      %inv = math.rsqrt %ve : f32
      %norm = arith.mulf %c, %inv : f32
      %scaled = arith.mulf %norm, %g : f32
      %r = arith.addf %scaled, %b : f32
      linalg.yield %r : f32
  }} -> {X}
  return %y : {X}
}}
"""
    return Case(f"layernorm_f32/r{R}_l{L}", "layernorm", mlir, [x, gamma, beta], [out], ["normalization"], tolerance=1e-4)


def attention(seed, S, D):
    rng = np.random.default_rng(seed)
    B = 1
    scale = 1.0 / np.sqrt(D)  # D is a power of 4: exact
    q = steps(rng, (B, S, D), -1, 1, 0.25, np.float32)
    k = steps(rng, (B, S, D), -1, 1, 0.25, np.float32)
    v = ints(rng, (B, S, D), -4, 4, np.float32)
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    scores = np.einsum("bsd,btd->bst", q64, k64) * scale
    out = (softmax64(scores, axis=2) @ v64).astype(np.float32)
    QKV, KT, SS = ttype((B, S, D), np.float32), ttype((B, D, S), np.float32), ttype((B, S, S), np.float32)
    mlir = f"""\
// Single-head attention softmax(Q @ K^T * scale) @ V, S={S}, D={D}.
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @main(%q: {QKV}, %k: {QKV}, %v: {QKV}) -> {QKV} {{
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant {scale:.6e} : f32
  %kt_empty = tensor.empty() : {KT}
  %kt = linalg.transpose ins(%k : {QKV}) outs(%kt_empty : {KT}) permutation = [0, 2, 1]
  %s_empty = tensor.empty() : {SS}
  %s_init = linalg.fill ins(%zero : f32) outs(%s_empty : {SS}) -> {SS}
  %s = linalg.batch_matmul ins(%q, %kt : {QKV}, {KT}) outs(%s_init : {SS}) -> {SS}
  %scaled = linalg.generic
              {{indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}}
              ins(%s : {SS}) outs(%s_empty : {SS}) {{
    ^bb0(%x: f32, %out: f32):
      %y = arith.mulf %x, %scale : f32
      linalg.yield %y : f32
  }} -> {SS}
  %p = linalg.softmax dimension(2) ins(%scaled : {SS}) outs(%s_empty : {SS}) -> {SS}
  %o_empty = tensor.empty() : {QKV}
  %o_init = linalg.fill ins(%zero : f32) outs(%o_empty : {QKV}) -> {QKV}
  %o = linalg.batch_matmul ins(%p, %v : {SS}, {QKV}) outs(%o_init : {QKV}) -> {QKV}
  return %o : {QKV}
}}
"""
    return Case(f"attention_f32/s{S}_d{D}", "attention", mlir, [q, k, v], [out], ["attention"], tolerance=1e-4)


# Four variants of each of 12 families: 48 cases, round-robin over families so
# that `--cases N` < 48 still covers every program.
FAMILIES = [
    [lambda s, p=p: matmul(s, *p, "f32", "f32") for p in [(8, 16, 8), (16, 32, 24), (32, 64, 32), (64, 32, 48)]],
    [lambda s, p=p: matmul(s, *p, "f16", "f32") for p in [(8, 16, 8), (16, 32, 16), (32, 32, 32), (16, 64, 8)]],
    [lambda s, p=p: matmul(s, *p, "i8", "i32") for p in [(8, 16, 8), (16, 32, 16), (32, 64, 32), (24, 16, 40)]],
    [lambda s, p=p: conv2d(s, *p) for p in [(6, 6, 2, 4), (8, 8, 4, 8), (12, 10, 3, 6), (16, 16, 8, 8)]],
    [lambda s, p=p: softmax(s, *p) for p in [(2, 8), (4, 16), (8, 64), (16, 128)]],
    [lambda s, p=p: reduction(s, *p, "sum_f32") for p in [(4, 16), (8, 64), (16, 128), (3, 256)]],
    [lambda s, p=p: reduction(s, *p, "max_i32") for p in [(4, 16), (8, 64), (16, 128), (5, 200)]],
    [lambda s, p=p: elementwise_f32(s, *p) for p in [(2, 16), (4, 32), (16, 64), (32, 128)]],
    [lambda s, p=p: elementwise_f16(s, *p) for p in [(4, 16), (8, 32), (16, 64), (3, 100)]],
    [lambda s, p=p: transpose_broadcast(s, *p) for p in [(4, 8), (8, 16), (16, 32), (48, 24)]],
    [lambda s, p=p: layernorm(s, *p) for p in [(2, 16), (4, 32), (8, 64), (16, 128)]],
    [lambda s, p=p: attention(s, *p) for p in [(4, 4), (8, 16), (16, 16), (32, 64)]],
]


def generate(n: int) -> list[Case]:
    makers = [f for variant in zip(*FAMILIES) for f in variant]
    # Past 48: more variants of the same shapes with other seeds.
    cases = []
    for i in range(n):
        c = makers[i % len(makers)](2000 + i)
        if i >= len(makers):
            c.name = f"{c.name}_seed{2000 + i}"
        cases.append(c)
    return cases


def write(out: Path, cases: list[Case]) -> None:
    for c in cases:
        d = out / c.name
        d.mkdir(parents=True, exist_ok=True)
        (d / "model.mlir").write_text(c.mlir)
        (d / "run_module_io_flags.txt").write_text(smoke.render_flagfile(c))
        for i, a in enumerate(c.inputs):
            (d / f"input_{i}.npy").write_bytes(smoke.npy_bytes(a))
        for i, a in enumerate(c.outputs):
            (d / smoke.output_file(c, i, native=False)).write_bytes(smoke.output_bytes(a))


def verify(out: Path, cases: list[Case], bin_dir: Path) -> int:
    """Compile and run every case with the native tools in bin_dir."""
    bad = 0
    with tempfile.TemporaryDirectory(prefix="bench-verify-") as tmp:
        for i, c in enumerate(cases):
            d, vmfb = out / c.name, Path(tmp) / f"{i}.vmfb"
            cp = subprocess.run([str(bin_dir / "iree-compile"), "model.mlir", *CONFIG["iree_compile_flags"], "-o", str(vmfb)],
                                cwd=d, capture_output=True, text=True)
            rp = cp.returncode == 0 and subprocess.run(
                [str(bin_dir / "iree-run-module"), f"--module={vmfb}", *CONFIG["iree_run_module_flags"],
                 "--flagfile=run_module_io_flags.txt"], cwd=d, capture_output=True, text=True)
            ok = bool(rp) and rp.returncode == 0 and smoke.SUCCESS in rp.stdout
            print(f"{'ok  ' if ok else 'FAIL'} {c.name}")
            if not ok:
                bad += 1
                print(cp.stderr if cp.returncode else (rp.stdout + rp.stderr), file=sys.stderr)
    print(f"{len(cases) - bad}/{len(cases)} cases passed")
    return 1 if bad else 0


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("out", type=Path, help="directory to write the cases into (created)")
    ap.add_argument("--cases", type=int, default=48)
    ap.add_argument("--config", type=Path, help="also write the suite config (JSON) here")
    ap.add_argument("--verify", type=Path, metavar="IREE_BIN_DIR")
    args = ap.parse_args()
    cases = generate(args.cases)
    assert len({c.name for c in cases}) == len(cases), "duplicate case names"
    write(args.out, cases)
    if args.config:
        args.config.write_text(json.dumps(CONFIG, indent=2) + "\n")
    print(f"wrote {len(cases)} cases under {args.out}")
    if args.verify:
        return verify(args.out, cases, args.verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
