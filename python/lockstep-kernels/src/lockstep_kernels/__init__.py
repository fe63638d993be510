"""lockstep's kernels callable from Python.

``get_launchable(sig)`` turns an op signature (a MIOpenDriver/BOO command
line, or a ConvSignature, GemmSignature or LayerNormSignature) into a
callable on NumPy arrays and DLPack tensors, compiled by IREE through the
kernel cache ``lockstep bench`` uses (same key, same entries): a kernel
benchmarked once launches without compiling, and the other way round.

``sample_inputs``, ``reference`` and ``check`` are the inputs, the f64
reference and the tolerances of ``lockstep bench --verify``.

Settings (environment): ``LOCKSTEP_KERNEL_CACHE_DIR`` (where compiled
kernels are kept; default ``$LOCKSTEP_CACHE/bench``), ``LOCKSTEP_KERNEL_CACHE=0``
(no cache); BOO's ``BOO_CACHE_DIR`` and ``BOO_CACHE_ON`` are honoured when
set; ``LOCKSTEP_IREE_BIN`` (a directory holding the iree-compile to use
instead of this environment's iree-base-compiler);
``LOCKSTEP_KERNEL_COMPILER_IDENTITY`` (compile nothing: launch only the
kernels that compiler put in the cache, on a machine with the runtime alone).
"""

from __future__ import annotations

from typing import Any, List, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._launch import (
    CompileError,
    DeviceUnavailableError,
    KernelCacheError,
    KernelError,
    Launchable,
    TensorSpec,
    _command_of,
    _dtype,
    _one_kernel,
    compile_kernel,
    get_launchable,
)
from ._signature import ConvSignature, GemmSignature, LayerNormSignature, Signature

__all__ = [
    "CompileError",
    "ConvSignature",
    "DeviceUnavailableError",
    "GemmSignature",
    "KernelCacheError",
    "KernelError",
    "LayerNormSignature",
    "Launchable",
    "Signature",
    "TensorSpec",
    "cache_dir",
    "check",
    "compile_kernel",
    "compiler_identity",
    "get_launchable",
    "reference",
    "sample_inputs",
]


def compiler_identity() -> str:
    """The identity of the compiler get_launchable uses (what the kernel
    cache's keys cover). On a machine with only the IREE runtime,
    ``LOCKSTEP_KERNEL_COMPILER_IDENTITY`` set to this value launches the
    kernels it compiled, from a copy of the cache, compiling nothing."""
    from ._launch import _compiler_path, _work_dir

    return _native.compiler(_compiler_path(), _work_dir())[1]


def cache_dir() -> Union[str, None]:
    """Where compiled kernels are kept (None when the cache is off)."""
    path, on = _native.kernel_cache()
    return str(path) if on else None


def sample_inputs(sig: Union[str, Signature], seed: int = 0x5EED) -> List[np.ndarray]:
    """The seeded inputs ``lockstep bench --verify`` feeds the kernel, in
    the kernel's argument order (``Launchable.inputs``)."""
    command = _command_of(sig)
    kernel = _one_kernel(command)
    raw = _native.sample_inputs(command, kernel["func_name"], seed)
    return [
        np.frombuffer(bytes(b), dtype=_dtype(t[2])).reshape(t[1]).copy()
        for b, t in zip(raw, kernel["inputs"])
    ]


def reference(sig: Union[str, Signature], inputs: Sequence[Any]) -> List[np.ndarray]:
    """The f64 reference of every output for ``inputs``, given in the
    kernel's argument order (``Launchable.inputs``), each checked against
    its shape and dtype."""
    command = _command_of(sig)
    kernel = _one_kernel(command)
    raw = _native.reference(command, kernel["func_name"], _checked(inputs, kernel["inputs"], "inputs"))
    return [np.frombuffer(bytes(b), dtype=np.float64).reshape(t[1]) for b, t in zip(raw, kernel["outputs"])]


def check(
    sig: Union[str, Signature], inputs: Sequence[Any], outputs: Sequence[Any]
) -> List[Tuple[bool, float, float, int]]:
    """Compares each output with the f64 reference under the tolerances of
    ``lockstep bench --verify``: per output ``(passed, max_abs, max_rel,
    failures)``. ``inputs`` and ``outputs`` are in the kernel's order
    (``Launchable.inputs`` and ``.outputs``, what ``sample_inputs`` gives and
    ``Launchable.run`` returns), each checked against its shape and dtype."""
    command = _command_of(sig)
    kernel = _one_kernel(command)
    return _native.check(
        command,
        kernel["func_name"],
        _checked(inputs, kernel["inputs"], "inputs"),
        _checked(outputs, kernel["outputs"], "outputs"),
    )


def _checked(arrays: Sequence[Any], specs: List[Any], what: str) -> List[bytes]:
    """The raw bytes of each array, after the checks a launch makes."""
    from ._arrays import from_host

    if len(arrays) != len(specs):
        names = ", ".join(s[0] for s in specs)
        raise ValueError(f"{len(arrays)} {what} given, the kernel has {len(specs)} ({names})")
    out = []
    for i, (array, spec) in enumerate(zip(arrays, specs)):
        t = TensorSpec(*spec)
        out.append(from_host(array, t, _dtype(t.dtype), i, None)[0].tobytes())
    return out
