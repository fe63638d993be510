"""get_launchable: an op signature becomes a callable on arrays.

The kernel is the one `lockstep bench` measures: the native module parses
the command line, generates the MLIR and finds or compiles the module in
lockstep's kernel cache (same key, same entry, same lock); this module loads
it with ``iree.runtime`` in process and moves arrays in and out.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
import tempfile
import threading
from typing import Any, Dict, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _native
from ._arrays import from_host, to_host
from ._signature import Signature

_DTYPES: Dict[str, Any] = {
    "float32": np.dtype(np.float32),
    "float16": np.dtype(np.float16),
    "int8": np.dtype(np.int8),
    "int32": np.dtype(np.int32),
}

# The arguments a caller passes, by op and mode, in the order the
# kernel's documentation promises (`f(x, dy) -> dw`); the kernel's own
# order may differ. Modes not listed take the kernel's order.
_CALL_ORDER = {
    ("conv", "forward"): ("input", "filter"),
    ("conv", "input_backward"): ("output_grad", "filter"),
    ("conv", "weight_backward"): ("input", "output_grad"),
}


class KernelError(RuntimeError):
    """A kernel could not be compiled or loaded."""


class CompileError(KernelError):
    """iree-compile rejected the kernel (the message holds its first errors)."""


class KernelCacheError(KernelError, OSError):
    """The kernel cache cannot be used (not writable, say)."""


class DeviceUnavailableError(KernelError):
    """The device names a driver or device this machine does not have."""


def _dtype(name: str) -> Any:
    if name == "bfloat16":
        import ml_dtypes  # iree-base-runtime's own dependency

        return np.dtype(ml_dtypes.bfloat16)
    return _DTYPES[name]


class TensorSpec:
    """One argument or result of a kernel: name, shape, dtype, layout."""

    __slots__ = ("name", "shape", "dtype", "layout")

    def __init__(self, name: str, shape: Sequence[int], dtype: str, layout: Optional[str]):
        self.name = name
        self.shape: Tuple[int, ...] = tuple(int(s) for s in shape)
        self.dtype: str = dtype
        self.layout = layout

    def __repr__(self) -> str:
        layout = f", {self.layout}" if self.layout else ""
        return f"TensorSpec({self.name}, {self.shape}, {self.dtype}{layout})"


# Settings read once per process: the cache, the compiler, the work dir.
_LOCK = threading.Lock()
_LAUNCHABLES: Dict[Tuple[Any, ...], "Launchable"] = {}
# One lock per kernel being compiled in this process.
_COMPILING: Dict[Tuple[Any, ...], threading.Lock] = {}
_CONFIGS: Dict[str, Any] = {}
_NOTICED = False


def _notice_boo_variables() -> None:
    """Says once that BOO's variables are honoured (lockstep's win)."""
    global _NOTICED
    if _NOTICED:
        return
    _NOTICED = True
    used = [
        f"{boo}={os.environ[boo]}"
        for boo, ours in (("BOO_CACHE_DIR", "LOCKSTEP_KERNEL_CACHE_DIR"), ("BOO_CACHE_ON", "LOCKSTEP_KERNEL_CACHE"))
        if os.environ.get(boo) and not os.environ.get(ours)
    ]
    if used:
        print(
            f"lockstep_kernels: honouring {' and '.join(used)} "
            "(lockstep's own settings: LOCKSTEP_KERNEL_CACHE_DIR, LOCKSTEP_KERNEL_CACHE)",
            file=sys.stderr,
        )


def _work_dir() -> str:
    """Compile logs, uncached modules and the compiler's remembered version:
    a directory of this user's alone (a predictable name in the shared
    temporary directory could have been made by someone else first)."""
    base = os.environ.get("LOCKSTEP_KERNEL_WORK_DIR") or os.path.join(
        tempfile.gettempdir(), f"lockstep-kernels-{os.getuid()}"
    )
    os.makedirs(base, mode=0o700, exist_ok=True)
    st = os.lstat(base)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o022:
        raise KernelError(
            f"the work directory {base} is not a directory of this user's alone (owner uid {st.st_uid}, "
            f"mode {stat.S_IMODE(st.st_mode):o}): remove it, or set LOCKSTEP_KERNEL_WORK_DIR to a directory of your own"
        )
    return base


def _compiler_path() -> str:
    """The iree-compile to use: `$LOCKSTEP_IREE_BIN/iree-compile`, else the
    native one of this environment's iree-base-compiler."""
    bin_dir = os.environ.get("LOCKSTEP_IREE_BIN")
    if bin_dir:
        return os.path.join(bin_dir, "iree-compile")
    spec = importlib.util.find_spec("iree.compiler")
    if spec is None or not spec.submodule_search_locations:
        raise KernelError(
            "no IREE compiler: install iree-base-compiler in this environment "
            "(pip install iree-base-compiler) or set LOCKSTEP_IREE_BIN to a directory holding iree-compile"
        )
    return os.path.join(list(spec.submodule_search_locations)[0], "_mlir_libs", "iree-compile")


def _runtime_config(device: str) -> Any:
    """The iree.runtime config of a device, made once per process (a
    local-task device owns a thread pool)."""
    import iree.runtime as rt

    with _LOCK:
        config = _CONFIGS.get(device)
        if config is not None:
            return config
        driver = device.split("://", 1)[0]
        drivers = rt.query_available_drivers()
        if driver not in drivers:
            raise DeviceUnavailableError(
                f"device {device!r}: this IREE runtime has no {driver!r} driver (it has {', '.join(sorted(drivers))})"
            )
        try:
            hal_device = rt.get_device(device)
        except Exception as e:  # the runtime's own error type varies by driver
            first = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
            raise DeviceUnavailableError(
                f"device {device!r}: the {driver} driver found no device ({first}); "
                "use a device this machine has (local-task, local-sync) or run on a machine with the GPU"
            ) from None
        config = rt.Config(device=hal_device)
        _CONFIGS[device] = config
        return config


def _command_of(sig: Union[str, Signature]) -> str:
    if isinstance(sig, str):
        return sig
    command = getattr(sig, "command", None)
    if command is None:
        raise TypeError(
            f"sig must be a command line (str) or a ConvSignature, GemmSignature or LayerNormSignature, got {type(sig).__name__}"
        )
    return command()


def _one_kernel(command: str) -> Dict[str, Any]:
    """The command's one kernel, or a ValueError saying how to pick one."""
    kernels = _native.plan(command)
    if len(kernels) != 1:
        modes = ", ".join(k["mode"] for k in kernels)
        raise ValueError(
            f"`{command}` makes {len(kernels)} kernels ({modes}): a launchable is one kernel; "
            "pick one direction with -F (conv: 1 forward, 2 input backward, 4 weight backward)"
        )
    kernel = kernels[0]
    if "unsupported" in kernel:
        raise ValueError(f"`{command}`: {kernel['func_name']} is not supported: {kernel['unsupported']}")
    return kernel


def _flags_for(device: str, compile_flags: Optional[Sequence[str]]) -> Tuple[str, List[str]]:
    """The runtime device and the compile flags: the device's own (its
    GPU's chip detected), or ``compile_flags`` as given (then only the
    driver's name is checked: the chip may not be on this machine)."""
    if not isinstance(device, str):
        raise TypeError(f"device must be a str, got {type(device).__name__}")
    if compile_flags is None:
        runtime_device, flags = _native.device_target(device)
        return runtime_device, list(flags)
    _native.check_device(device)
    flags = list(compile_flags)
    if not all(isinstance(f, str) and f for f in flags):
        raise ValueError(f"compile_flags must be non-empty strings, got {compile_flags!r}")
    return device, flags


def _settings() -> Tuple[str, bool, Optional[str], Optional[str]]:
    """What a kernel's module depends on besides its MLIR and flags: the
    cache directory and switch, the compiler named by LOCKSTEP_IREE_BIN and
    LOCKSTEP_KERNEL_COMPILER_IDENTITY (read at each call: a change mid-process
    gets new launchables)."""
    cache_dir, cache_on = _native.kernel_cache()
    return (
        str(cache_dir),
        bool(cache_on),
        os.environ.get("LOCKSTEP_IREE_BIN") or None,
        os.environ.get("LOCKSTEP_KERNEL_COMPILER_IDENTITY") or None,
    )


def _obtain(kernel: Dict[str, Any], flags: List[str], settings: Tuple[str, bool, Optional[str], Optional[str]]) -> Tuple[str, bool, float, str]:
    """The kernel's module from the cache, else compiled: once per kernel
    in a process (other processes wait on the cache's lock)."""
    cache_dir, cache_on, _, _ = settings
    key = (kernel["mlir"], tuple(flags), settings)
    with _LOCK:
        lock = _COMPILING.setdefault(key, threading.Lock())
    with lock:
        work = _work_dir()
        if not cache_on:
            # Uncached modules of this process alone: no other compile
            # writes over a module this process has mapped.
            work = os.path.join(work, f"pid-{os.getpid()}")
        try:
            path, cached, seconds, digest = _native.obtain(
                kernel["func_name"],
                kernel["mlir"],
                flags,
                _compiler_path(),
                work,
                cache_dir if cache_on else None,
                _work_dir(),
            )
        except RuntimeError as e:
            raise _classify(str(e), cache_dir) from None
    return str(path), bool(cached), float(seconds), str(digest)


def get_launchable(
    sig: Union[str, Signature],
    device: str = "local-task",
    *,
    compile_flags: Optional[Sequence[str]] = None,
) -> "Launchable":
    """The kernel of ``sig`` as a callable on arrays.

    ``sig`` is a MIOpenDriver/BOO command line (``"convbfp16 -n 128 -c 128
    -H 24 -W 48 -k 384 -y 1 -x 1 -F 1"``) or a signature object; it must
    name one direction (``-F 1``, ``2`` or ``4`` for a convolution).
    ``device`` is an IREE runtime device (``local-task``, ``local-sync``,
    ``cuda``, ``hip``, ``cuda://1`` ...); ``compile_flags`` replaces the
    device's target flags (a hip device with no GPU here to detect, say).

    The compiled module comes from lockstep's kernel cache (the one
    ``lockstep bench`` uses, keyed by the compiler's identity, the MLIR and
    the flags) or is compiled into it, once across threads and processes.
    Raises ValueError for a bad signature or device, DeviceUnavailableError
    for a device this machine lacks, CompileError with the compiler's first
    errors, KernelCacheError for a cache that cannot be written.
    """
    command = _command_of(sig).strip()
    kernel = _one_kernel(command)
    runtime_device, flags = _flags_for(device, compile_flags)
    settings = _settings()
    memo = (kernel["mlir"], runtime_device, tuple(flags), settings)
    with _LOCK:
        found = _LAUNCHABLES.get(memo)
    if found is not None:
        return found
    config = _runtime_config(runtime_device)
    _notice_boo_variables()
    cache_dir, cache_on, _, identity = settings
    if identity:
        # No compiler here: only kernels compiled elsewhere by that compiler.
        hit = _native.lookup(kernel["func_name"], kernel["mlir"], list(flags), identity, cache_dir)
        if hit is None:
            raise KernelError(
                f"{kernel['func_name']} is not in the kernel cache {cache_dir} for the compiler "
                f"LOCKSTEP_KERNEL_COMPILER_IDENTITY names, and nothing is compiled here: compile it where "
                "the compiler is (same device and compile flags), or unset the variable to compile"
            )
        path, cached, seconds, key = str(hit[0]), True, 0.0, str(hit[1])
    else:
        path, cached, seconds, key = _obtain(kernel, flags, settings)
    launchable = Launchable(command, kernel, runtime_device, flags, path, cached, seconds, key, config)
    with _LOCK:
        return _LAUNCHABLES.setdefault(memo, launchable)


def compile_kernel(
    sig: Union[str, Signature],
    device: str = "local-task",
    *,
    compile_flags: Optional[Sequence[str]] = None,
) -> str:
    """Compiles the kernel of ``sig`` for ``device`` into the kernel cache
    and returns the module's path, without opening the device: compile
    here (a machine without the GPU), launch there with
    ``LOCKSTEP_KERNEL_COMPILER_IDENTITY``, a copy of the cache and the same
    ``compile_flags`` (a GPU's detected chip is part of the key: name it)."""
    command = _command_of(sig).strip()
    kernel = _one_kernel(command)
    _, flags = _flags_for(device, compile_flags)
    return _obtain(kernel, flags, _settings())[0]


def _classify(message: str, cache_dir: str) -> KernelError:
    if message.startswith("cannot use the kernel cache"):
        return KernelCacheError(
            f"{message}\nthe kernel cache is {cache_dir}: set LOCKSTEP_KERNEL_CACHE_DIR to a writable "
            "directory, or LOCKSTEP_KERNEL_CACHE=0 to compile without caching"
        )
    if message.startswith("compile failed"):
        return CompileError(message)
    return KernelError(message)


class Launchable:
    """A compiled kernel, loaded and ready: call it on arrays.

    Arguments are NumPy arrays or DLPack tensors (PyTorch tensors on the
    CPU, without a copy) of exactly the signature's shapes and dtypes, in
    the command's layouts; results come back as NumPy arrays, or as PyTorch
    tensors when the first argument was one. Safe to call from several
    threads (calls on one launchable take turns).
    """

    def __init__(
        self,
        command: str,
        kernel: Dict[str, Any],
        device: str,
        flags: List[str],
        path: str,
        cached: bool,
        seconds: float,
        key: str,
        config: Any,
    ) -> None:
        import iree.runtime as rt

        self.command = command
        self.func_name: str = kernel["func_name"]
        self.mode: str = kernel["mode"]
        self.device = device
        self.compile_flags = tuple(flags)
        self.module_path = path
        #: True when the module came from the cache (no compile).
        self.cached = cached
        self.compile_seconds = seconds
        self.key = key
        self.inputs = [TensorSpec(*t) for t in kernel["inputs"]]
        self.outputs = [TensorSpec(*t) for t in kernel["outputs"]]
        self._dtypes = [_dtype(t.dtype) for t in self.inputs]
        op = self.func_name.split("_", 1)[0]
        order = _CALL_ORDER.get((op, self.mode))
        names = [t.name for t in self.inputs]
        # kernel argument i <- caller argument _order[i]
        self._order = [order.index(n) for n in names] if order else list(range(len(names)))
        # Layer norm forward: f(x) -> y, weight 1 and bias 0 unless given.
        self._defaults: List[Optional[np.ndarray]] = [None] * len(self.inputs)
        self._first_output_only = False
        if op == "layer" and self.mode == "forward":
            self._first_output_only = True
            for i, t in enumerate(self.inputs):
                if t.name == "weight":
                    self._defaults[i] = np.ones(t.shape, self._dtypes[i])
                elif t.name == "bias":
                    self._defaults[i] = np.zeros(t.shape, self._dtypes[i])
        self._required = sum(1 for d in self._defaults if d is None)
        try:
            vm_module = rt.VmModule.mmap(config.vm_instance, path)
            self._context = rt.SystemContext(vm_modules=[vm_module], config=config)
            self._function = self._context.modules.module[self.func_name]
        except Exception as e:
            raise KernelError(f"cannot load {path}: {e}") from None
        self._call_lock = threading.Lock()

    def __repr__(self) -> str:
        return f"Launchable({self.func_name}, device={self.device!r}, cached={self.cached})"

    @property
    def parameters(self) -> List[TensorSpec]:
        """The arguments in the order the callable takes them."""
        by_caller = sorted(range(len(self.inputs)), key=lambda i: self._order[i])
        return [self.inputs[i] for i in by_caller]

    def __call__(self, *args: Any) -> Any:
        n = len(args)
        if n < self._required or n > len(self.inputs):
            names = ", ".join(t.name for t in self.parameters)
            raise TypeError(f"{self.func_name} takes ({names}), got {n} argument{'s' if n != 1 else ''}")
        kernel_args: List[Any] = []
        torch_like = None
        for i, spec in enumerate(self.inputs):
            at = self._order[i]
            if at < n:
                value = args[at]
                array, torch_like = from_host(value, spec, self._dtypes[i], at, torch_like)
            else:
                array = self._defaults[i]
                if array is None:
                    raise TypeError(f"{self.func_name}: argument {spec.name!r} is missing")
            kernel_args.append(array)
        with self._call_lock:
            results = self._function(*kernel_args)
        if not isinstance(results, (tuple, list)):
            results = (results,)
        outputs = [to_host(r, torch_like) for r in results]
        if self._first_output_only or len(outputs) == 1:
            return outputs[0]
        return tuple(outputs)

    def run(self, *kernel_args: Any) -> Tuple[Any, ...]:
        """Calls the kernel with its arguments in the kernel's own order
        (``self.inputs``) and returns every output (``self.outputs``), the
        layer norm's mean and rstd included."""
        if len(kernel_args) != len(self.inputs):
            names = ", ".join(t.name for t in self.inputs)
            raise TypeError(f"{self.func_name}.run takes ({names}), got {len(kernel_args)}")
        torch_like = None
        arrays = []
        for i, (value, spec) in enumerate(zip(kernel_args, self.inputs)):
            array, torch_like = from_host(value, spec, self._dtypes[i], i, torch_like)
            arrays.append(array)
        with self._call_lock:
            results = self._function(*arrays)
        if not isinstance(results, (tuple, list)):
            results = (results,)
        return tuple(to_host(r, torch_like) for r in results)
