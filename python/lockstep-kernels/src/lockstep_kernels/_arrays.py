"""Arrays in and out of a kernel: NumPy arrays as they are, any DLPack
tensor on the host through ``np.from_dlpack`` (no copy), PyTorch's bf16
through an int16 view (NumPy's DLPack has no bf16); every argument checked
against the signature, each error naming the argument.
"""

from __future__ import annotations

from typing import Any, Optional, Tuple

import numpy as np


def _is_torch(value: Any) -> bool:
    return type(value).__module__.split(".", 1)[0] == "torch"


def _dlpack_to_numpy(value: Any, spec: Any, position: int) -> np.ndarray:
    try:
        return np.from_dlpack(value)
    except (TypeError, BufferError, RuntimeError, ValueError) as first:
        # NumPy's DLPack lacks bf16: view PyTorch's bf16 as int16 bits.
        if _is_torch(value) and str(getattr(value, "dtype", "")) == "torch.bfloat16":
            import torch
            import ml_dtypes

            if value.device.type != "cpu":
                raise ValueError(_where(spec, position) + f" is on {value.device}: pass a CPU tensor (x.cpu())") from None
            bits = np.from_dlpack(value.detach().contiguous().view(torch.int16))
            return bits.view(ml_dtypes.bfloat16)
        device = getattr(value, "device", None)
        raise ValueError(
            _where(spec, position) + f": cannot read it through DLPack ({first})"
            + (f"; it is on {device}: pass a host tensor" if device is not None else "")
        ) from None


def _where(spec: Any, position: int) -> str:
    return f"argument {spec.name!r} (#{position + 1})"


def from_host(
    value: Any, spec: Any, dtype: np.dtype, position: int, torch_like: Optional[bool]
) -> Tuple[np.ndarray, Optional[bool]]:
    """The argument as a C-contiguous NumPy array of ``spec``'s shape and
    dtype (or a ValueError naming it), and whether results go back as
    PyTorch tensors (decided by the first argument)."""
    if isinstance(value, np.ndarray):
        array = value
        if torch_like is None:
            torch_like = False
    elif hasattr(value, "__dlpack__"):
        if torch_like is None:
            torch_like = _is_torch(value)
        array = _dlpack_to_numpy(value, spec, position)
    else:
        raise ValueError(
            _where(spec, position)
            + f" must be a NumPy array or a DLPack tensor of shape {spec.shape} and dtype {spec.dtype}, got {type(value).__name__}"
        )
    if array.dtype != dtype or array.shape != spec.shape:
        hint = ""
        if array.dtype != dtype and spec.dtype == "bfloat16":
            hint = " (NumPy arrays of bf16: x.astype(ml_dtypes.bfloat16))"
        raise ValueError(
            _where(spec, position)
            + f" must have shape {spec.shape} and dtype {spec.dtype}, got shape {tuple(array.shape)} and dtype {array.dtype}{hint}"
        )
    if not array.flags.c_contiguous:
        array = np.ascontiguousarray(array)
    return array, torch_like


def to_host(result: Any, torch_like: Optional[bool]) -> Any:
    """A kernel result as a NumPy array, or a PyTorch tensor sharing its
    memory when the arguments were PyTorch tensors."""
    array = result.to_host() if hasattr(result, "to_host") else np.asarray(result)
    if not torch_like:
        return array
    import torch

    if array.dtype.name == "bfloat16":
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16)
    return torch.from_numpy(array)
