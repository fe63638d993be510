"""Op signatures as Python objects, each rendered to the MIOpenDriver/BOO
command line that lockstep parses (so a signature object and its command
line are the same kernel, with the same cache entry).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Tuple, Union

_CONV_DTYPES = {"float32": "conv", "float16": "convfp16", "bfloat16": "convbfp16", "int8": "convint8"}
_GEMM_DTYPES = {"float32": "gemm", "float16": "gemmfp16"}
_NORM_DTYPES = {"float32": "layernorm", "float16": "layernormfp16", "bfloat16": "layernormbfp16"}
_CONV_MODES = {"forward": 1, "input_backward": 2, "weight_backward": 4}
_GEMM_MODES = {"forward": 1, "a_backward": 2, "b_backward": 3}
_NORM_MODES = {"forward": 1, "input_backward": 2, "weight_backward": 3, "bias_backward": 4}

Pair = Tuple[int, int]


def _pick(table: dict, value: str, what: str) -> Union[str, int]:
    if value not in table:
        raise ValueError(f"{what} {value!r} is not supported: use one of {', '.join(table)}")
    return table[value]


def _pair(value: Union[int, Pair], what: str) -> Pair:
    if isinstance(value, int):
        return (value, value)
    if (
        isinstance(value, tuple)
        and len(value) == 2
        and all(isinstance(v, int) for v in value)
    ):
        return value
    raise ValueError(f"{what} must be an int or a pair of ints, got {value!r}")


@dataclass(frozen=True)
class ConvSignature:
    """A 2-D convolution: input ``n x c x h x w`` (in ``layout``), ``k``
    filters of ``y x x``, as MIOpenDriver's ``conv`` command describes it.

    ``mode`` is ``forward`` (``f(x, w) -> y``), ``input_backward``
    (``f(dy, w) -> dx``) or ``weight_backward`` (``f(x, dy) -> dw``).
    """

    n: int
    c: int
    h: int
    w: int
    k: int
    y: int = 1
    x: int = 1
    stride: Union[int, Pair] = 1
    padding: Union[int, Pair] = 0
    dilation: Union[int, Pair] = 1
    groups: int = 1
    dtype: str = "float32"
    layout: str = "NCHW"
    filter_layout: Union[str, None] = None
    mode: str = "forward"

    def command(self) -> str:
        """The MIOpenDriver command line of this convolution."""
        word = _pick(_CONV_DTYPES, self.dtype, "dtype")
        forw = _pick(_CONV_MODES, self.mode, "mode")
        su, sv = _pair(self.stride, "stride")
        pp, pq = _pair(self.padding, "padding")
        dl, dj = _pair(self.dilation, "dilation")
        layout = str(self.layout).upper()
        flayout = str(self.filter_layout or layout).upper()
        return (
            f"{word} -n {self.n} -c {self.c} -H {self.h} -W {self.w} -k {self.k}"
            f" -y {self.y} -x {self.x} -u {su} -v {sv} -p {pp} -q {pq} -l {dl} -j {dj}"
            f" -g {self.groups} -I {layout} -O {layout} -f {flayout} -F {forw}"
        )


@dataclass(frozen=True)
class GemmSignature:
    """A matrix product, as BOO's ``gemm`` command describes it: ``-m``
    (``--a_h``), ``-n`` (``--b_w``), ``-k`` (``--a_w``), ``trans_a`` /
    ``trans_b`` (``-u`` / ``-v``); the operand shapes are those of
    ``lockstep bench``'s gemm for these flags (``Launchable.parameters``
    lists them)."""

    m: int
    n: int
    k: int
    dtype: str = "float32"
    trans_a: bool = False
    trans_b: bool = False
    mode: str = "forward"

    def command(self) -> str:
        """The BOO ``gemm`` command line of this product."""
        word = _pick(_GEMM_DTYPES, self.dtype, "dtype")
        forw = _pick(_GEMM_MODES, self.mode, "mode")
        return (
            f"{word} -m {self.m} -n {self.n} -k {self.k}"
            f" -u {int(self.trans_a)} -v {int(self.trans_b)} -F {forw}"
        )


@dataclass(frozen=True)
class LayerNormSignature:
    """Layer normalization over the last dimension of ``shape`` (4 or 5
    sizes), with ``eps``; forward is ``f(x) -> y`` (weight and bias may be
    passed as further arguments)."""

    shape: Tuple[int, ...]
    eps: float = 1e-5
    dtype: str = "float32"
    mode: str = "forward"

    def command(self) -> str:
        """The BOO ``layernorm`` command line of this normalization."""
        word = _pick(_NORM_DTYPES, self.dtype, "dtype")
        forw = _pick(_NORM_MODES, self.mode, "mode")
        if not isinstance(self.shape, tuple) or not all(isinstance(s, int) for s in self.shape):
            raise ValueError(f"shape must be a tuple of ints, got {self.shape!r}")
        dims = "x".join(str(s) for s in self.shape)
        return f"{word} -X {dims} -e {self.eps!r} -o {len(self.shape) - 1} -F {forw}"


Signature = Union[ConvSignature, GemmSignature, LayerNormSignature]
