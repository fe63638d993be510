#!/usr/bin/env python3
"""Generate lockstep's embedded default regression suite, suites/smoke/.

Every file under suites/smoke/ is written by this script: the MLIR programs,
the golden inputs and outputs (.npy), the native suite file, the
iree-test-suites case directories with their flag files, the two configs and
the README. Expected outputs are computed independently with numpy (float64
reference arithmetic, rounded to the output type), never by running IREE.
Inputs come from fixed seeds and small value ranges, so the goldens are exact
or near-exact and the output is byte-identical on every rerun.

Usage:
    scripts/gen-smoke-suite.py                 # (re)write suites/smoke/
    scripts/gen-smoke-suite.py --check         # exit 1 if suites/smoke/ is stale
    scripts/gen-smoke-suite.py --verify IREE_COMPILE IREE_RUN_MODULE
        # after writing, compile and run every case with the real IREE tools
        # (both layouts, local-task and local-sync), and check that a
        # perturbed golden makes the run fail.

Needs Python >= 3.11 and numpy (e.g. `python3 -m venv /tmp/smokegen &&
/tmp/smokegen/bin/pip install numpy`).
"""

from __future__ import annotations

import argparse
import io
import json
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "suites" / "smoke"

CPU_COMPILE_FLAGS = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
]

# iree-run-module's flag for the absolute tolerance of each float type.
THRESHOLD_FLAG = {
    np.dtype(np.float16): "--expected_f16_threshold",
    np.dtype(np.float32): "--expected_f32_threshold",
    np.dtype(np.float64): "--expected_f64_threshold",
}


@dataclass
class Case:
    name: str
    description: str
    mlir: str
    inputs: list[np.ndarray]
    outputs: list[np.ndarray]
    markers: list[str]
    tolerance: float | None = None  # absolute, for float outputs
    benchmark: dict[str, float] | None = None
    extra: dict = field(default_factory=dict)


# ----------------------------------------------------------------------------
# Helpers
# ----------------------------------------------------------------------------

MLIR_DTYPE = {
    np.dtype(np.float16): "f16",
    np.dtype(np.float32): "f32",
    np.dtype(np.float64): "f64",
    np.dtype(np.int8): "i8",
    np.dtype(np.int32): "i32",
    np.dtype(np.int64): "i64",
}


def ttype(shape, dtype) -> str:
    """MLIR tensor type, e.g. tensor<16x32xf32>."""
    dims = "x".join(str(d) for d in shape)
    elem = MLIR_DTYPE[np.dtype(dtype)]
    return f"tensor<{dims}x{elem}>" if dims else f"tensor<{elem}>"


def ints(rng, shape, lo, hi, dtype):
    """Integers uniformly in [lo, hi], cast to dtype (exact in every float type used)."""
    return rng.integers(lo, hi, size=shape, endpoint=True).astype(dtype)


def steps(rng, shape, lo, hi, step, dtype):
    """Multiples of `step` in [lo, hi] (step a power of two: exact in f16/f32)."""
    n_lo, n_hi = int(round(lo / step)), int(round(hi / step))
    return (rng.integers(n_lo, n_hi, size=shape, endpoint=True) * step).astype(dtype)


def softmax64(x, axis):
    x = x.astype(np.float64)
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def is_int(a: np.ndarray) -> bool:
    return a.dtype.kind in "iu"


def output_file(case: "Case", i: int, native: bool) -> str:
    """File name of golden output i. Integer outputs are raw little-endian
    .bin files: iree-run-module reads an integer .npy as a *signed* type
    (e.g. si32) and then rejects it against the signless i32 the program
    returns ("metadata is 8xi32; expected that the view matches 8xsi32")."""
    ext = "bin" if is_int(case.outputs[i]) else "npy"
    return f"data/{case.name}.output{i}.{ext}" if native else f"output_{i}.{ext}"


def output_ref(case: "Case", i: int, native: bool) -> str:
    """How a golden output is named on a command line / in a suite file."""
    a = case.outputs[i]
    ref = "@" + output_file(case, i, native)
    return f"{fmt_shape(a)}={ref}" if is_int(a) else ref


def output_bytes(a: np.ndarray) -> bytes:
    return np.ascontiguousarray(a).astype(a.dtype.newbyteorder("<")).tobytes() if is_int(a) else npy_bytes(a)


def load_output(path: Path, like: np.ndarray) -> np.ndarray:
    if path.suffix == ".bin":
        return np.fromfile(path, dtype=like.dtype.newbyteorder("<")).reshape(like.shape)
    return np.load(path)


def save_output(path: Path, a: np.ndarray) -> None:
    path.write_bytes(output_bytes(a))


def npy_bytes(a: np.ndarray) -> bytes:
    buf = io.BytesIO()
    np.save(buf, np.ascontiguousarray(a), allow_pickle=False)
    return buf.getvalue()


# ----------------------------------------------------------------------------
# The programs
# ----------------------------------------------------------------------------


def case_matmul_f32() -> Case:
    rng = np.random.default_rng(1001)
    M, K, N = 16, 32, 24
    a = ints(rng, (M, K), -4, 4, np.float32)
    b = ints(rng, (K, N), -4, 4, np.float32)
    out = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    A, B, C = ttype((M, K), np.float32), ttype((K, N), np.float32), ttype((M, N), np.float32)
    mlir = f"""\
// C = A @ B, f32, zero-filled accumulator.
func.func @main(%a: {A}, %b: {B}) -> {C} {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : {C}
  %init = linalg.fill ins(%zero : f32) outs(%empty : {C}) -> {C}
  %c = linalg.matmul ins(%a, %b : {A}, {B}) outs(%init : {C}) -> {C}
  return %c : {C}
}}
"""
    return Case(
        "matmul_f32",
        f"{M}x{K} @ {K}x{N} f32 matmul (linalg.matmul)",
        mlir,
        [a, b],
        [out],
        ["matmul", "f32"],
        benchmark={"time-ms": 50.0, "tolerance": 2.0, "dispatch-count": 10, "vmfb-size": 2000000},
    )


def case_conv2d_nhwc_f32() -> Case:
    rng = np.random.default_rng(1002)
    N, H, W, C, KH, KW, F = 1, 8, 8, 4, 3, 3, 8
    x = ints(rng, (N, H, W, C), -3, 3, np.float32)
    w = ints(rng, (KH, KW, C, F), -3, 3, np.float32)
    # "same" padding: pad H and W by 1 with zeros, then a stride-1 valid conv.
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    out = np.zeros((N, H, W, F), np.float64)
    for kh in range(KH):
        for kw in range(KW):
            out += np.einsum("nhwc,cf->nhwf", xp[:, kh : kh + H, kw : kw + W, :], w[kh, kw].astype(np.float64))
    out = out.astype(np.float32)
    X, Wt, P, O = (
        ttype((N, H, W, C), np.float32),
        ttype((KH, KW, C, F), np.float32),
        ttype((N, H + 2, W + 2, C), np.float32),
        ttype((N, H, W, F), np.float32),
    )
    mlir = f"""\
// 3x3 "same" convolution, NHWC input, HWCF filter, stride 1, zero padding 1.
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
    return Case(
        "conv2d_nhwc_f32",
        f"{N}x{H}x{W}x{C} (padded) * {KH}x{KW}x{C}x{F} f32 convolution (tensor.pad + linalg.conv_2d_nhwc_hwcf)",
        mlir,
        [x, w],
        [out],
        ["conv", "f32"],
    )


def case_softmax_f32() -> Case:
    rng = np.random.default_rng(1003)
    R, L = 4, 16
    x = steps(rng, (R, L), -4, 4, 0.5, np.float32)
    out = softmax64(x, axis=1).astype(np.float32)
    T = ttype((R, L), np.float32)
    mlir = f"""\
// Row-wise softmax (linalg.softmax over the last dimension).
func.func @main(%x: {T}) -> {T} {{
  %empty = tensor.empty() : {T}
  %y = linalg.softmax dimension(1) ins(%x : {T}) outs(%empty : {T}) -> {T}
  return %y : {T}
}}
"""
    return Case(
        "softmax_f32",
        f"{R}x{L} f32 softmax over the last dimension (linalg.softmax)",
        mlir,
        [x],
        [out],
        ["softmax", "f32"],
        tolerance=1e-5,
    )


def case_reduction_sum_f32() -> Case:
    rng = np.random.default_rng(1004)
    R, L = 8, 64
    x = ints(rng, (R, L), -8, 8, np.float32)
    out = x.astype(np.float64).sum(axis=1).astype(np.float32)
    X, O = ttype((R, L), np.float32), ttype((R,), np.float32)
    mlir = f"""\
// Row sums (linalg.reduce with arith.addf).
func.func @main(%x: {X}) -> {O} {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : {O}
  %init = linalg.fill ins(%zero : f32) outs(%empty : {O}) -> {O}
  %sum = linalg.reduce ins(%x : {X}) outs(%init : {O}) dimensions = [1]
    (%in: f32, %acc: f32) {{
      %s = arith.addf %in, %acc : f32
      linalg.yield %s : f32
    }}
  return %sum : {O}
}}
"""
    return Case(
        "reduction_sum_f32",
        f"{R}x{L} -> {R} f32 sum reduction (linalg.reduce)",
        mlir,
        [x],
        [out],
        ["reduction", "f32"],
    )


def case_elementwise_f32() -> Case:
    rng = np.random.default_rng(1005)
    shape = (4, 32)
    a = steps(rng, shape, -2, 2, 0.25, np.float32)
    b = steps(rng, shape, -2, 2, 0.25, np.float32)
    c = ints(rng, shape, -4, 4, np.float32)
    a64, b64, c64 = (v.astype(np.float64) for v in (a, b, c))
    out = (np.tanh(a64 + b64) * c64 + a64).astype(np.float32)
    T = ttype(shape, np.float32)
    mlir = f"""\
// Fused elementwise chain: tanh(a + b) * c + a.
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
    return Case(
        "elementwise_f32",
        f"{'x'.join(map(str, shape))} f32 elementwise add/tanh/mul/add (linalg.generic + math.tanh)",
        mlir,
        [a, b, c],
        [out],
        ["elementwise", "f32"],
        tolerance=1e-4,
    )


def case_attention_f32() -> Case:
    rng = np.random.default_rng(1006)
    B, S, D = 1, 8, 16
    scale = 0.25  # 1/sqrt(D)
    q = steps(rng, (B, S, D), -1, 1, 0.25, np.float32)
    k = steps(rng, (B, S, D), -1, 1, 0.25, np.float32)
    v = ints(rng, (B, S, D), -4, 4, np.float32)
    q64, k64, v64 = (t.astype(np.float64) for t in (q, k, v))
    scores = np.einsum("bsd,btd->bst", q64, k64) * scale
    out = (softmax64(scores, axis=2) @ v64).astype(np.float32)
    QKV = ttype((B, S, D), np.float32)
    KT = ttype((B, D, S), np.float32)
    SS = ttype((B, S, S), np.float32)
    mlir = f"""\
// Single-head scaled dot-product attention: softmax(Q @ K^T * scale) @ V,
// composed from linalg.transpose, linalg.batch_matmul, linalg.generic and
// linalg.softmax.
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
    return Case(
        "attention_f32",
        f"{B}x{S}x{D} f32 single-head attention (transpose, batch_matmul, scale, softmax, batch_matmul)",
        mlir,
        [q, k, v],
        [out],
        ["attention", "matmul", "softmax", "f32"],
        tolerance=1e-4,
    )


def case_matmul_i8_i32() -> Case:
    rng = np.random.default_rng(1007)
    M, K, N = 16, 32, 16
    a = ints(rng, (M, K), -128, 127, np.int8)
    b = ints(rng, (K, N), -128, 127, np.int8)
    out = (a.astype(np.int64) @ b.astype(np.int64)).astype(np.int32)
    A, B, C = ttype((M, K), np.int8), ttype((K, N), np.int8), ttype((M, N), np.int32)
    mlir = f"""\
// Integer matmul: i8 operands, sign-extended, accumulated in i32.
func.func @main(%a: {A}, %b: {B}) -> {C} {{
  %zero = arith.constant 0 : i32
  %empty = tensor.empty() : {C}
  %init = linalg.fill ins(%zero : i32) outs(%empty : {C}) -> {C}
  %c = linalg.matmul ins(%a, %b : {A}, {B}) outs(%init : {C}) -> {C}
  return %c : {C}
}}
"""
    return Case(
        "matmul_i8_i32",
        f"{M}x{K} @ {K}x{N} i8 matmul with i32 accumulation (linalg.matmul, mixed types)",
        mlir,
        [a, b],
        [out],
        ["matmul", "int"],
    )


def case_elementwise_f16() -> Case:
    rng = np.random.default_rng(1008)
    shape = (8, 32)
    a = steps(rng, shape, -2, 2, 0.25, np.float16)
    b = steps(rng, shape, -2, 2, 0.25, np.float16)
    c = steps(rng, shape, -2, 2, 0.25, np.float16)
    # Every intermediate is a multiple of 1/16 below 16: exact in f16.
    out = ((a.astype(np.float64) + b.astype(np.float64)) * c.astype(np.float64)).astype(np.float16)
    T = ttype(shape, np.float16)
    mlir = f"""\
// f16 elementwise: (a + b) * c.
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
    return Case(
        "elementwise_f16",
        f"{'x'.join(map(str, shape))} f16 elementwise (a + b) * c (linalg.generic)",
        mlir,
        [a, b, c],
        [out],
        ["elementwise", "f16"],
        tolerance=1e-2,
    )


def case_matmul_f16() -> Case:
    rng = np.random.default_rng(1009)
    M, K, N = 16, 32, 16
    a = ints(rng, (M, K), -4, 4, np.float16)
    b = ints(rng, (K, N), -4, 4, np.float16)
    out = (a.astype(np.float64) @ b.astype(np.float64)).astype(np.float32)
    A, B, C = ttype((M, K), np.float16), ttype((K, N), np.float16), ttype((M, N), np.float32)
    mlir = f"""\
// f16 matmul accumulated in f32 (operands extended by linalg.matmul).
func.func @main(%a: {A}, %b: {B}) -> {C} {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : {C}
  %init = linalg.fill ins(%zero : f32) outs(%empty : {C}) -> {C}
  %c = linalg.matmul ins(%a, %b : {A}, {B}) outs(%init : {C}) -> {C}
  return %c : {C}
}}
"""
    return Case(
        "matmul_f16",
        f"{M}x{K} @ {K}x{N} f16 matmul with f32 accumulation (linalg.matmul, mixed types)",
        mlir,
        [a, b],
        [out],
        ["matmul", "f16"],
        tolerance=1e-2,
    )


def case_reduction_max_i32() -> Case:
    rng = np.random.default_rng(1010)
    R, L = 8, 64
    x = ints(rng, (R, L), -100000, 100000, np.int32)
    out = x.max(axis=1).astype(np.int32)
    X, O = ttype((R, L), np.int32), ttype((R,), np.int32)
    mlir = f"""\
// Row maxima of an i32 matrix (linalg.reduce with arith.maxsi).
func.func @main(%x: {X}) -> {O} {{
  %lowest = arith.constant -2147483648 : i32
  %empty = tensor.empty() : {O}
  %init = linalg.fill ins(%lowest : i32) outs(%empty : {O}) -> {O}
  %max = linalg.reduce ins(%x : {X}) outs(%init : {O}) dimensions = [1]
    (%in: i32, %acc: i32) {{
      %m = arith.maxsi %in, %acc : i32
      linalg.yield %m : i32
    }}
  return %max : {O}
}}
"""
    return Case(
        "reduction_max_i32",
        f"{R}x{L} -> {R} i32 max reduction (linalg.reduce + arith.maxsi)",
        mlir,
        [x],
        [out],
        ["reduction", "int"],
    )


def case_transpose_broadcast_f32() -> Case:
    rng = np.random.default_rng(1011)
    R, L = 8, 16
    x = ints(rng, (R, L), -8, 8, np.float32)
    bias = ints(rng, (R,), -8, 8, np.float32)
    out = (x.astype(np.float64).T + bias.astype(np.float64)[None, :]).astype(np.float32)
    X, BI, O = ttype((R, L), np.float32), ttype((R,), np.float32), ttype((L, R), np.float32)
    mlir = f"""\
// y = transpose(x) + broadcast(bias): y[j, i] = x[i, j] + bias[i].
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
    return Case(
        "transpose_broadcast_f32",
        f"{R}x{L} -> {L}x{R} f32 transpose plus a broadcast {R}-vector (linalg.transpose + linalg.broadcast + linalg.generic add)",
        mlir,
        [x, bias],
        [out],
        ["transpose", "broadcast", "f32"],
    )


def case_layernorm_f32() -> Case:
    rng = np.random.default_rng(1012)
    R, L = 4, 32
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
// Layer normalization over the last dimension:
// (x - mean) * rsqrt(var + eps) * gamma + beta, composed from linalg.reduce
// and linalg.generic with math.rsqrt.
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
    return Case(
        "layernorm_f32",
        f"{R}x{L} f32 layer normalization with {L}-vector gamma/beta (linalg.reduce + linalg.generic + math.rsqrt)",
        mlir,
        [x, gamma, beta],
        [out],
        ["normalization", "reduction", "f32"],
        tolerance=1e-4,
    )


CASES = [
    case_matmul_f32,
    case_conv2d_nhwc_f32,
    case_softmax_f32,
    case_reduction_sum_f32,
    case_elementwise_f32,
    case_attention_f32,
    case_matmul_i8_i32,
    case_elementwise_f16,
    case_matmul_f16,
    case_reduction_max_i32,
    case_transpose_broadcast_f32,
    case_layernorm_f32,
]


# ----------------------------------------------------------------------------
# Rendering
# ----------------------------------------------------------------------------


def toml_str(s: str) -> str:
    return json.dumps(s)  # a TOML basic string for the plain ASCII used here


def toml_list(items: list[str]) -> str:
    return "[" + ", ".join(toml_str(i) for i in items) + "]"


def toml_float(x: float) -> str:
    r = repr(float(x))
    return r if ("." in r or "e" in r or "inf" in r or "nan" in r) else r + ".0"


def float_outputs(case: Case) -> list[np.dtype]:
    seen = []
    for o in case.outputs:
        if o.dtype in THRESHOLD_FLAG and o.dtype not in seen:
            seen.append(o.dtype)
    return seen


def threshold_flags(case: Case) -> list[str]:
    if case.tolerance is None:
        return []
    return [f"{THRESHOLD_FLAG[dt]}={case.tolerance:g}" for dt in float_outputs(case)]


def render_suite_toml(cases: list[Case]) -> str:
    lines = [
        "# lockstep's embedded default regression suite (format: docs/test.md).",
        "# Generated by scripts/gen-smoke-suite.py -- edit that script, not this file.",
        "",
        "[suite]",
        'name = "smoke"',
        'markers = ["presubmit"]',
    ]
    for c in cases:
        lines += [
            "",
            f"# {c.description}",
            "[[test]]",
            f"name = {toml_str(c.name)}",
            f"source = {toml_str(c.name + '.mlir')}",
            'function = "main"',
            f"inputs = {toml_list([f'@data/{c.name}.input{i}.npy' for i in range(len(c.inputs))])}",
            f"outputs = {toml_list([output_ref(c, i, native=True) for i in range(len(c.outputs))])}",
        ]
        if c.tolerance is not None:
            lines.append(f"tolerance = {c.tolerance:g}")
        lines.append(f"markers = {toml_list(c.markers)}")
        if c.benchmark:
            lines += ["", "[test.benchmark]"]
            for k, v in c.benchmark.items():
                lines.append(f"{k} = {toml_float(v) if isinstance(v, float) else v}")
    return "\n".join(lines) + "\n"


def render_flagfile(case: Case) -> str:
    flags = ["--function=main"]
    flags += [f"--input=@input_{i}.npy" for i in range(len(case.inputs))]
    flags += [f"--expected_output={output_ref(case, i, native=False)}" for i in range(len(case.outputs))]
    flags += threshold_flags(case)
    return "\n".join(flags) + "\n"


def config_dict(name: str, device: str) -> dict:
    return {
        "config_name": name,
        "iree_compile_flags": CPU_COMPILE_FLAGS,
        "iree_run_module_flags": [f"--device={device}"],
        "skip_compile_tests": [],
        "skip_run_tests": [],
        "expected_compile_failures": [],
        "expected_run_failures": [],
    }


def render_config_json5() -> str:
    d = config_dict("cpu_llvm_task", "local-task")
    q = json.dumps

    def arr(xs):
        return "[" + ", ".join(q(x) for x in xs) + "]"

    return (
        "// Smoke suite on the host CPU, multi-threaded local-task device.\n"
        "// Generated by scripts/gen-smoke-suite.py. Case names are directory names.\n"
        "{\n"
        f"  config_name: {q(d['config_name'])},\n"
        "  iree_compile_flags: [\n"
        + "".join(f"    {q(f)},\n" for f in d["iree_compile_flags"])
        + "  ],\n"
        f"  iree_run_module_flags: {arr(d['iree_run_module_flags'])},\n"
        "  skip_compile_tests: [],        // not compiled, not run\n"
        "  skip_run_tests: [],            // compiled only\n"
        "  expected_compile_failures: [], // every case is expected to pass\n"
        "  expected_run_failures: [],\n"
        "}\n"
    )


def render_config_json() -> str:
    return json.dumps(config_dict("cpu_llvm_sync", "local-sync"), indent=2) + "\n"


def fmt_shape(a: np.ndarray) -> str:
    return "x".join(str(d) for d in a.shape) + "x" + MLIR_DTYPE[a.dtype]


def render_readme(cases: list[Case]) -> str:
    rows = []
    for c in cases:
        ins = ", ".join(fmt_shape(a) for a in c.inputs)
        outs = ", ".join(fmt_shape(a) for a in c.outputs)
        tol = "exact" if c.tolerance is None and not float_outputs(c) else (
            f"{c.tolerance:g}" if c.tolerance is not None else "default"
        )
        rows.append(f"| `{c.name}` | {ins} | {outs} | {tol} | {c.description} |")
    table = "\n".join(rows)
    return f"""\
# The smoke suite

lockstep's embedded default regression suite: {len(cases)} small MLIR programs
(linalg / arith / tensor / math on tensors, `func.func @main`) with golden
inputs and outputs. Each compiles in well under a second for the host CPU and
runs in milliseconds. The same programs and goldens are shipped twice:

- `native/smoke.suite.toml`: lockstep's native suite (`native/<name>.mlir`,
  goldens in `native/data/<name>.input<i>.npy` / `.output<i>.npy`; integer
  outputs are `.output<i>.bin`, see below). Every test
  carries the `presubmit` marker plus per-test markers; `matmul_f32` also has
  generous `[test.benchmark]` goldens that any CPU meets.
- `iree-test-suites/`: the iree-test-suites layout, one directory per case
  (`model.mlir`, `run_module_io_flags.txt`, `input_<i>.npy`, `output_<i>.npy`
  or `output_<i>.bin`),
  with `config_cpu.json5` (llvm-cpu, `local-task`) and `config_cpu_sync.json`
  (llvm-cpu, `local-sync`).

```
lockstep test suites/smoke/native/smoke.suite.toml
lockstep test suites/smoke/iree-test-suites --suite-config suites/smoke/iree-test-suites/config_cpu.json5
```

| test | inputs | outputs | tolerance (abs) | what |
|---|---|---|---|---|
{table}

"exact" means integer outputs (compared exactly); "default" means
iree-run-module's default float threshold (1e-4 for f32); a number is passed
as `tolerance` (native) and `--expected_<type>_threshold` (flag files).

## How the goldens were made

Inputs are drawn with `numpy.random.default_rng(seed)` (a fixed seed per test)
from small ranges: integers in [-4, 4] or multiples of 1/4 or 1/2 for floats,
full-range i8, and bounded i32. Expected outputs are computed independently
with numpy in float64 (int64 for integers) and rounded to the output type; IREE
is never used to produce a golden. With these inputs matmul, convolution,
reductions, transpose and the f16 cases are exact; softmax, tanh, rsqrt and
attention differ from the float64 reference only by float rounding.

Integer outputs are stored as raw little-endian `.bin` files and named with
their type (`16x16xi32=@output_0.bin`), not as `.npy`: iree-run-module reads
an integer `.npy` as a signed type (`si32`) and rejects it against the
signless `i32` the program returns ("metadata is 8xi32; expected that the view
matches 8xsi32"). Integer *inputs* load fine from `.npy`.

## Regenerating

Everything in this directory is written by `scripts/gen-smoke-suite.py`
(deterministic: a rerun is byte-identical). Do not edit the files by hand.

```
python3 -m venv /tmp/smokegen && /tmp/smokegen/bin/pip install numpy
/tmp/smokegen/bin/python scripts/gen-smoke-suite.py            # rewrite suites/smoke/
/tmp/smokegen/bin/python scripts/gen-smoke-suite.py --check    # fail if stale
/tmp/smokegen/bin/python scripts/gen-smoke-suite.py --verify "$(lockstep toolchain path)/iree-compile" "$(lockstep toolchain path)/iree-run-module"
```

`--verify` compiles every program for the host CPU, runs both layouts on
`local-task` and `local-sync` and requires `[SUCCESS]`, then perturbs each
golden output (in a temporary copy) and requires the run to fail.
"""


def render_all(cases: list[Case]) -> dict[str, bytes]:
    names = [c.name for c in cases]
    assert len(set(names)) == len(names), "duplicate test names"
    files: dict[str, bytes] = {}
    files["README.md"] = render_readme(cases).encode()
    files["native/smoke.suite.toml"] = render_suite_toml(cases).encode()
    files["iree-test-suites/config_cpu.json5"] = render_config_json5().encode()
    files["iree-test-suites/config_cpu_sync.json"] = render_config_json().encode()
    for c in cases:
        files[f"native/{c.name}.mlir"] = c.mlir.encode()
        files[f"iree-test-suites/{c.name}/model.mlir"] = c.mlir.encode()
        files[f"iree-test-suites/{c.name}/run_module_io_flags.txt"] = render_flagfile(c).encode()
        for i, a in enumerate(c.inputs):
            data = npy_bytes(a)
            files[f"native/data/{c.name}.input{i}.npy"] = data
            files[f"iree-test-suites/{c.name}/input_{i}.npy"] = data
        for i, a in enumerate(c.outputs):
            data = output_bytes(a)
            files[f"native/{output_file(c, i, native=True)}"] = data
            files[f"iree-test-suites/{c.name}/{output_file(c, i, native=False)}"] = data
    return files


def existing_files(root: Path) -> set[str]:
    if not root.exists():
        return set()
    return {p.relative_to(root).as_posix() for p in root.rglob("*") if p.is_file()}


def write_all(files: dict[str, bytes]) -> None:
    for rel in sorted(existing_files(OUT) - set(files)):
        (OUT / rel).unlink()
    for rel, data in sorted(files.items()):
        p = OUT / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        if not p.exists() or p.read_bytes() != data:
            p.write_bytes(data)
    # Drop directories left empty by removed cases.
    for d in sorted((p for p in OUT.rglob("*") if p.is_dir()), key=lambda p: -len(p.parts)):
        if not any(d.iterdir()):
            d.rmdir()


def check_all(files: dict[str, bytes]) -> list[str]:
    problems = []
    have = existing_files(OUT)
    for rel in sorted(have - set(files)):
        problems.append(f"extra file: {rel}")
    for rel, data in sorted(files.items()):
        p = OUT / rel
        if rel not in have:
            problems.append(f"missing: {rel}")
        elif p.read_bytes() != data:
            problems.append(f"stale: {rel}")
    return problems


# ----------------------------------------------------------------------------
# Verification with the real IREE tools
# ----------------------------------------------------------------------------

SUCCESS = "[SUCCESS] all function outputs matched their expected values."


def run(cmd: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True)


def perturbed(a: np.ndarray) -> np.ndarray:
    """A copy of `a` with one element changed by far more than any tolerance."""
    b = a.copy()
    flat = b.reshape(-1)
    flat[len(flat) // 2] += 1 if a.dtype.kind in "iu" else a.dtype.type(0.5)
    return b


def verify(cases: list[Case], iree_compile: str, iree_run: str) -> int:
    iree_compile = str(Path(iree_compile).resolve())
    iree_run = str(Path(iree_run).resolve())
    suite = tomllib.loads((OUT / "native/smoke.suite.toml").read_text())
    tests = {t["name"]: t for t in suite["test"]}
    failures: list[str] = []
    report = []
    with tempfile.TemporaryDirectory(prefix="smoke-verify-") as tmp:
        tmp = Path(tmp)
        if sorted(tests) != sorted(c.name for c in cases):
            failures.append("smoke.suite.toml does not list exactly the generated cases")
        for case in cases:
            name = case.name
            case_dir = OUT / "iree-test-suites" / name
            vmfb = tmp / f"{name}.vmfb"
            t0 = time.monotonic()
            cp = run([iree_compile, "model.mlir", *CPU_COMPILE_FLAGS, "-o", str(vmfb)], case_dir)
            compile_s = time.monotonic() - t0
            row = {"name": name, "compile_s": compile_s}
            if cp.returncode != 0:
                failures.append(f"{name}: compile failed:\n{cp.stderr}")
                report.append(row)
                continue
            row["vmfb_bytes"] = vmfb.stat().st_size

            # iree-test-suites layout, as the reference runner runs it.
            for device in ("local-task", "local-sync"):
                rp = run([iree_run, f"--module={vmfb}", f"--device={device}", "--flagfile=run_module_io_flags.txt"], case_dir)
                ok = rp.returncode == 0 and SUCCESS in rp.stdout
                row[f"its_{device}"] = ok
                if not ok:
                    failures.append(f"{name} (iree-test-suites, {device}): run failed\n{rp.stdout}\n{rp.stderr}")

            # Native layout: flags from the suite file, run from its directory.
            t = tests[name]
            native_dir = OUT / "native"
            ncp = run([iree_compile, t["source"], *CPU_COMPILE_FLAGS, "-o", str(tmp / f"{name}.native.vmfb")], native_dir)
            nflags = [f"--function={t['function']}"]
            nflags += [f"--input={i}" for i in t["inputs"]]
            nflags += [f"--expected_output={o}" for o in t["outputs"]]
            if "tolerance" in t:
                nflags += [f"{THRESHOLD_FLAG[dt]}={t['tolerance']:g}" for dt in float_outputs(case)]
            rp = run([iree_run, f"--module={tmp / f'{name}.native.vmfb'}", "--device=local-task", *nflags], native_dir)
            ok = ncp.returncode == 0 and rp.returncode == 0 and SUCCESS in rp.stdout
            row["native"] = ok
            if not ok:
                failures.append(f"{name} (native): failed\n{ncp.stderr}\n{rp.stdout}\n{rp.stderr}")

            # The goldens must catch a wrong answer: perturb each output in a copy.
            caught = True
            n_out = len(case.outputs)
            for i in range(n_out):
                copy = tmp / f"{name}.perturb{i}"
                shutil.copytree(case_dir, copy)
                golden = copy / output_file(case, i, native=False)
                save_output(golden, perturbed(load_output(golden, case.outputs[i])))
                rp = run([iree_run, f"--module={vmfb}", "--device=local-task", "--flagfile=run_module_io_flags.txt"], copy)
                if rp.returncode == 0 or SUCCESS in rp.stdout:
                    caught = False
                    failures.append(f"{name}: perturbed output_{i} was not detected\n{rp.stdout}")
            row["perturb_caught"] = caught

            # Largest error against the golden (informational): run without
            # expectations and parse the printed outputs via --output=@file.npy.
            outs = [tmp / f"{name}.actual{i}.npy" for i in range(n_out)]
            flagfile = (case_dir / "run_module_io_flags.txt").read_text().split()
            plain = [f for f in flagfile if not f.startswith("--expected")]
            rp = run([iree_run, f"--module={vmfb}", "--device=local-task", *plain, *[f"--output=@{o}" for o in outs]], case_dir)
            if rp.returncode == 0:
                errs = []
                for i, o in enumerate(outs):
                    want = load_output(case_dir / output_file(case, i, native=False), case.outputs[i]).astype(np.float64)
                    got = np.load(o).astype(np.float64)
                    errs.append(float(np.max(np.abs(got - want))))
                row["max_abs_err"] = max(errs)
            report.append(row)

        # Benchmark goldens of the one test that has them (informational
        # plus a sanity check that they are generous).
        bench_rows = []
        bench_tool = Path(iree_run).with_name("iree-benchmark-module")
        for name, t in tests.items():
            if "benchmark" not in t:
                continue
            b = t["benchmark"]
            stats = tmp / f"{name}.stats.json"
            vmfb = tmp / f"{name}.bench.vmfb"
            cp = run(
                [iree_compile, t["source"], *CPU_COMPILE_FLAGS, "-o", str(vmfb),
                 "--iree-scheduling-dump-statistics-format=json", f"--iree-scheduling-dump-statistics-file={stats}"],
                OUT / "native",
            )
            info = {"name": name, "vmfb_bytes": vmfb.stat().st_size if vmfb.exists() else None}
            try:
                st = json.loads(stats.read_text())
                info["dispatch_count"] = find_dispatch_count(st)
            except Exception as e:  # noqa: BLE001 - informational
                info["dispatch_count"] = f"? ({e})"
            if bench_tool.exists():
                ins = [f"--input={i}" for i in t["inputs"]]
                bp = run([str(bench_tool), f"--module={vmfb}", "--device=local-task", "--function=main", *ins,
                          "--benchmark_repetitions=5", "--benchmark_format=json"], OUT / "native")
                try:
                    bj = json.loads(bp.stdout)
                    times = [x["real_time"] for x in bj["benchmarks"] if x.get("run_type") == "aggregate" and x.get("aggregate_name") == "median"]
                    unit = bj["benchmarks"][0].get("time_unit", "ms")
                    scale = {"ns": 1e-6, "us": 1e-3, "ms": 1.0, "s": 1e3}[unit]
                    info["time_ms"] = times[0] * scale if times else None
                except Exception as e:  # noqa: BLE001
                    info["time_ms"] = f"? ({e})"
            if isinstance(info.get("vmfb_bytes"), int) and info["vmfb_bytes"] > b["vmfb-size"]:
                failures.append(f"{name}: vmfb {info['vmfb_bytes']} > benchmark golden {b['vmfb-size']}")
            if isinstance(info.get("dispatch_count"), int) and info["dispatch_count"] > b["dispatch-count"]:
                failures.append(f"{name}: {info['dispatch_count']} dispatches > benchmark golden {b['dispatch-count']}")
            if isinstance(info.get("time_ms"), float) and info["time_ms"] > b["time-ms"] * b["tolerance"]:
                failures.append(f"{name}: {info['time_ms']:.3f} ms > benchmark golden {b['time-ms']} x {b['tolerance']}")
            bench_rows.append(info)

    print(f"{'test':<26} {'compile':>8} {'vmfb':>7}  task sync native perturb  max|err|")
    for r in report:
        def yn(k):
            return {True: "ok", False: "FAIL", None: "-"}[r.get(k)]
        err = r.get("max_abs_err")
        print(
            f"{r['name']:<26} {r['compile_s']:>7.2f}s {r.get('vmfb_bytes', 0):>7}  "
            f"{yn('its_local-task'):>4} {yn('its_local-sync'):>4} {yn('native'):>6} {yn('perturb_caught'):>7}  "
            f"{'-' if err is None else f'{err:.3g}'}"
        )
    for b in bench_rows:
        print(f"benchmark {b['name']}: {b}")
    if failures:
        print(f"\n{len(failures)} failure(s):", file=sys.stderr)
        for f in failures:
            print(f"--- {f}", file=sys.stderr)
        return 1
    print(f"\nall {len(report)} cases verified")
    return 0


def find_dispatch_count(st) -> int:
    """The dispatch count lockstep checks against the golden: the value at
    ["stream-aggregate"]["execution"]["dispatch-count"] of iree-compile's
    scheduling statistics JSON (crates/lockstep-suite/src/runner.rs)."""
    try:
        count = st["stream-aggregate"]["execution"]["dispatch-count"]
    except (KeyError, TypeError):
        raise ValueError("no stream-aggregate.execution.dispatch-count in statistics") from None
    if not isinstance(count, int) or isinstance(count, bool):
        raise ValueError(f"dispatch-count is not an integer: {count!r}")
    return count


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--check", action="store_true", help="do not write; exit 1 if suites/smoke/ differs")
    ap.add_argument("--verify", nargs=2, metavar=("IREE_COMPILE", "IREE_RUN_MODULE"),
                    help="after writing, verify every case with these IREE tools")
    args = ap.parse_args()
    cases = [f() for f in CASES]
    files = render_all(cases)
    if args.check:
        problems = check_all(files)
        for p in problems:
            print(p)
        if problems:
            print(f"suites/smoke/ is out of date ({len(problems)} file(s)); rerun scripts/gen-smoke-suite.py")
            return 1
        print(f"suites/smoke/ is up to date ({len(files)} files)")
    else:
        write_all(files)
        print(f"wrote {len(files)} files under {OUT.relative_to(REPO)}/")
    if args.verify:
        return verify(cases, *args.verify)
    return 0


if __name__ == "__main__":
    sys.exit(main())
