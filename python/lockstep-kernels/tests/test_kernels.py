"""lockstep_kernels on the CPU, with the real IREE compiler and runtime.

Run by crates/lockstep/tests/kernels_py.rs in a fresh venv holding the
built wheel (`python -m unittest discover -s tests`), each test with its
own kernel cache (LOCKSTEP_KERNEL_CACHE_DIR set per test). The GPU tests
skip, naming the missing driver or device, where there is no GPU.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import tempfile
import threading
import unittest
from contextlib import redirect_stderr
from pathlib import Path

import numpy as np

import lockstep_kernels as lk
from lockstep_kernels import _launch

CONV = "conv -n 2 -c 8 -H 6 -W 6 -k 4 -y 3 -x 3 -p 1 -q 1"


def fresh_cache(test: unittest.TestCase) -> Path:
    """A kernel cache of the test's own, and no memo of earlier launchables."""
    tmp = tempfile.TemporaryDirectory()
    test.addCleanup(tmp.cleanup)
    saved = {k: os.environ.get(k) for k in ("LOCKSTEP_KERNEL_CACHE_DIR", "LOCKSTEP_KERNEL_CACHE", "BOO_CACHE_DIR", "BOO_CACHE_ON")}

    def restore() -> None:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v

    test.addCleanup(restore)
    for k in saved:
        os.environ.pop(k, None)
    os.environ["LOCKSTEP_KERNEL_CACHE_DIR"] = tmp.name
    _launch._LAUNCHABLES.clear()
    return Path(tmp.name)


def entries(cache: Path) -> list:
    return sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*.vmfb"))


class ConvolutionTest(unittest.TestCase):
    def test_every_direction_matches_the_reference_in_its_documented_argument_order(self) -> None:
        fresh_cache(self)
        x = np.random.default_rng(1).standard_normal((2, 8, 6, 6)).astype(np.float32)
        w = np.random.default_rng(2).standard_normal((4, 8, 3, 3)).astype(np.float32)
        fwd = lk.get_launchable(CONV + " -F 1")
        y = fwd(x, w)
        self.assertEqual(y.shape, (2, 4, 6, 6))
        self.assertTrue(all(c[0] for c in lk.check(CONV + " -F 1", [x, w], [y])))
        dy = np.random.default_rng(3).standard_normal(y.shape).astype(np.float32)
        bwd = lk.get_launchable(CONV + " -F 2")
        dx = bwd(dy, w)
        self.assertEqual(dx.shape, x.shape)
        self.assertTrue(all(c[0] for c in lk.check(CONV + " -F 2", [dy, w], [dx])))
        wrw = lk.get_launchable(CONV + " -F 4")
        # f(x, dy) -> dw, whatever order the kernel takes them in.
        self.assertEqual([p.name for p in wrw.parameters], ["input", "output_grad"])
        dw = wrw(x, dy)
        self.assertEqual(dw.shape, w.shape)
        kernel_order = [dy, x] if wrw.inputs[0].name == "output_grad" else [x, dy]
        self.assertTrue(all(c[0] for c in lk.check(CONV + " -F 4", kernel_order, [dw])))

    def test_signature_objects_and_nhwc_bf16(self) -> None:
        import ml_dtypes

        fresh_cache(self)
        sig = lk.ConvSignature(n=2, c=8, h=6, w=6, k=4, dtype="bfloat16", layout="NHWC")
        f = lk.get_launchable(sig)
        self.assertIn("bfloat16_forward_2x6x6x8_nhwc", f.func_name)
        x, w = lk.sample_inputs(sig)
        self.assertEqual(x.dtype, np.dtype(ml_dtypes.bfloat16))
        y = f(x, w)
        self.assertEqual(y.shape, (2, 6, 6, 4))
        self.assertTrue(lk.check(sig, [x, w], [y])[0][0])
        # The same kernel as its command line: the same launchable.
        self.assertIs(lk.get_launchable(sig.command()), f)


class OtherOpsTest(unittest.TestCase):
    def test_gemm_and_layernorm(self) -> None:
        fresh_cache(self)
        g = lk.get_launchable(lk.GemmSignature(m=5, n=3, k=4))
        a, b = lk.sample_inputs(lk.GemmSignature(m=5, n=3, k=4))
        c = g(a, b)
        self.assertTrue(lk.check(lk.GemmSignature(m=5, n=3, k=4), [a, b], [c])[0][0])
        norm = lk.LayerNormSignature(shape=(2, 3, 4, 8))
        ln = lk.get_launchable(norm)
        x = np.random.default_rng(4).standard_normal((2, 3, 4, 8)).astype(np.float32)
        y = ln(x)
        self.assertEqual(y.shape, x.shape)
        expected = (x - x.mean(-1, keepdims=True)) / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
        np.testing.assert_allclose(y, expected, rtol=1e-4, atol=1e-4)
        # Every output, in the kernel's order.
        out, mean, rstd = ln.run(x, np.ones(8, np.float32), np.zeros(8, np.float32))
        np.testing.assert_allclose(mean[..., 0], x.mean(-1), rtol=1e-5, atol=1e-5)


class DlpackTest(unittest.TestCase):
    def test_a_dlpack_tensor_is_read_without_a_copy(self) -> None:
        fresh_cache(self)

        class Tensor:
            """A DLPack producer that is not a NumPy array."""

            def __init__(self, array: np.ndarray) -> None:
                self.array = array

            def __dlpack__(self, **kwargs):  # type: ignore[no-untyped-def]
                return self.array.__dlpack__(**kwargs)

            def __dlpack_device__(self):  # type: ignore[no-untyped-def]
                return self.array.__dlpack_device__()

        g = lk.get_launchable("gemm -m 3 -n 2 -k 4")
        a, b = lk.sample_inputs("gemm -m 3 -n 2 -k 4")
        c = g(Tensor(a), Tensor(b))
        np.testing.assert_allclose(c, g(a, b))


class BadInputTest(unittest.TestCase):
    def test_bad_signatures_devices_and_arrays_name_the_value(self) -> None:
        fresh_cache(self)
        with self.assertRaisesRegex(ValueError, "unknown command `cnov`"):
            lk.get_launchable("cnov -n 1")
        with self.assertRaisesRegex(ValueError, "-F"):
            lk.get_launchable("conv -n 1 -c 1 -H 4 -W 4 -k 1 -y 1 -x 1 -F 9")
        with self.assertRaisesRegex(ValueError, "makes 3 kernels"):
            lk.get_launchable("conv -n 1 -c 1 -H 4 -W 4 -k 1 -y 1 -x 1 -F 0")
        with self.assertRaisesRegex(ValueError, "dtype 'float64' is not supported"):
            lk.get_launchable(lk.ConvSignature(n=1, c=1, h=4, w=4, k=1, dtype="float64"))
        with self.assertRaisesRegex(ValueError, 'unknown device "tpu"'):
            lk.get_launchable("gemm -m 2 -n 2 -k 2", device="tpu")
        with self.assertRaisesRegex(ValueError, "device must name a runtime device"):
            lk.get_launchable("gemm -m 2 -n 2 -k 2", device="")
        with self.assertRaisesRegex(ValueError, "compile_flags must be non-empty strings"):
            lk.get_launchable("gemm -m 2 -n 2 -k 2", compile_flags=[""])
        with self.assertRaisesRegex(ValueError, "more than the .* bytes of memory"):
            lk.sample_inputs("gemm -m 2000000 -n 2000000 -k 2000000")
        with self.assertRaisesRegex(TypeError, "sig must be"):
            lk.get_launchable(42)  # type: ignore[arg-type]
        g = lk.get_launchable("gemm -m 2 -n 3 -k 4")
        a, b = lk.sample_inputs("gemm -m 2 -n 3 -k 4")
        with self.assertRaisesRegex(ValueError, r"argument 'a' \(#1\) must have shape \(4, 2\)"):
            g(a.T.copy(), b)
        with self.assertRaisesRegex(ValueError, "argument 'b' .* dtype float32, got .* float64"):
            g(a, b.astype(np.float64))
        with self.assertRaisesRegex(ValueError, "must be a NumPy array or a DLPack tensor"):
            g(a, [[1.0]])
        with self.assertRaisesRegex(TypeError, r"takes \(a, b\), got 1 argument"):
            g(a)


class CacheTest(unittest.TestCase):
    def test_a_second_process_launches_from_the_cache(self) -> None:
        cache = fresh_cache(self)
        first = lk.get_launchable("gemm -m 4 -n 4 -k 4")
        self.assertFalse(first.cached)
        self.assertEqual(len(entries(cache)), 1)
        self.assertTrue(first.module_path.startswith(str(cache)))
        code = "import lockstep_kernels as lk; print(lk.get_launchable('gemm -m 4 -n 4 -k 4').cached)"
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        self.assertEqual(out.stdout.strip(), "True", out.stderr)

    def test_a_corrupt_entry_is_compiled_again_never_loaded(self) -> None:
        cache = fresh_cache(self)
        f = lk.get_launchable("gemm -m 3 -n 3 -k 3")
        Path(f.module_path).write_bytes(b"garbage")
        _launch._LAUNCHABLES.clear()
        g = lk.get_launchable("gemm -m 3 -n 3 -k 3")
        self.assertFalse(g.cached)
        a, b = lk.sample_inputs("gemm -m 3 -n 3 -k 3")
        self.assertTrue(lk.check("gemm -m 3 -n 3 -k 3", [a, b], [g(a, b)])[0][0])
        self.assertEqual(len(entries(cache)), 1)

    def test_the_cache_can_be_turned_off_and_boo_variables_are_honoured(self) -> None:
        cache = fresh_cache(self)
        os.environ["LOCKSTEP_KERNEL_CACHE"] = "0"
        f = lk.get_launchable("gemm -m 2 -n 2 -k 5")
        self.assertFalse(f.cached)
        self.assertEqual(entries(cache), [])
        self.assertIsNone(lk.cache_dir())
        del os.environ["LOCKSTEP_KERNEL_CACHE"]
        del os.environ["LOCKSTEP_KERNEL_CACHE_DIR"]
        boo = cache / "boo"
        os.environ["BOO_CACHE_DIR"] = str(boo)
        _launch._LAUNCHABLES.clear()
        _launch._NOTICED = False
        err = io.StringIO()
        with redirect_stderr(err):
            lk.get_launchable("gemm -m 2 -n 2 -k 5")
        self.assertIn("honouring BOO_CACHE_DIR=", err.getvalue())
        self.assertEqual(len(entries(boo)), 1)

    def test_an_unwritable_cache_says_what_to_do(self) -> None:
        cache = fresh_cache(self)
        blocker = cache / "file"
        blocker.write_text("not a directory")
        os.environ["LOCKSTEP_KERNEL_CACHE_DIR"] = str(blocker / "kernels")
        with self.assertRaisesRegex(lk.KernelCacheError, "LOCKSTEP_KERNEL_CACHE_DIR to a writable directory"):
            lk.get_launchable("gemm -m 2 -n 7 -k 2")

    def test_threads_and_processes_compile_a_new_kernel_once(self) -> None:
        cache = fresh_cache(self)
        # The real compiler behind a wrapper that counts its compiles.
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        counted = Path(tmp.name) / "compiles"
        wrapper = Path(tmp.name) / "iree-compile"
        real = _launch._compiler_path()
        wrapper.write_text(
            f"#!/bin/sh\n[ \"$1\" = --version ] || echo x >> {counted}\nexec {real} \"$@\"\n"
        )
        wrapper.chmod(0o755)
        os.environ["LOCKSTEP_IREE_BIN"] = tmp.name
        self.addCleanup(os.environ.pop, "LOCKSTEP_IREE_BIN", None)
        command = "gemm -m 6 -n 6 -k 6"
        code = (
            "import lockstep_kernels as lk, threading\n"
            f"ts = [threading.Thread(target=lambda: lk.get_launchable({command!r})) for _ in range(3)]\n"
            "[t.start() for t in ts]; [t.join() for t in ts]\n"
        )
        procs = [subprocess.Popen([sys.executable, "-c", code]) for _ in range(3)]
        self.assertEqual([p.wait() for p in procs], [0, 0, 0])
        # Nine launches in three processes; the cache's lock let one compile.
        self.assertEqual(counted.read_text().count("x"), 1)
        self.assertEqual(len(entries(cache)), 1)

    def test_a_failed_compile_raises_with_the_compilers_errors(self) -> None:
        fresh_cache(self)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        fake = Path(tmp.name) / "iree-compile"
        fake.write_text("#!/bin/sh\nif [ \"$1\" = --version ]; then echo 'IREE compiler version 0.0.1 @ x'; exit 0; fi\n"
                        "echo 'kernel.mlir:3:5: error: this is not a kernel' >&2\nexit 1\n")
        fake.chmod(0o755)
        os.environ["LOCKSTEP_IREE_BIN"] = tmp.name
        self.addCleanup(os.environ.pop, "LOCKSTEP_IREE_BIN", None)
        with self.assertRaisesRegex(lk.CompileError, "error: this is not a kernel"):
            lk.get_launchable("gemm -m 2 -n 2 -k 9")


class RuntimeOnlyTest(unittest.TestCase):
    def test_kernels_compiled_elsewhere_launch_with_no_compiler(self) -> None:
        cache = fresh_cache(self)
        command = "gemm -m 3 -n 5 -k 2"
        # "Elsewhere": compiled into the cache, for a device (here the
        # same CPU) that compile_kernel never opens.
        path = lk.compile_kernel(command)
        self.assertTrue(path.startswith(str(cache)) and path.endswith(".vmfb"))
        # A GPU kernel compiles where there is no GPU.
        if not os.path.exists("/dev/nvidia0"):
            gpu = lk.compile_kernel(command, device="cuda")
            self.assertTrue(os.path.isfile(gpu))
        identity = lk.compiler_identity()
        _launch._LAUNCHABLES.clear()
        os.environ["LOCKSTEP_KERNEL_COMPILER_IDENTITY"] = identity
        # No compiler can be reached: a compile would fail.
        os.environ["LOCKSTEP_IREE_BIN"] = str(cache / "no-compiler-here")
        self.addCleanup(os.environ.pop, "LOCKSTEP_KERNEL_COMPILER_IDENTITY", None)
        self.addCleanup(os.environ.pop, "LOCKSTEP_IREE_BIN", None)
        f = lk.get_launchable(command)
        self.assertTrue(f.cached)
        a, b = lk.sample_inputs(command)
        self.assertTrue(lk.check(command, [a, b], [f(a, b)])[0][0])
        with self.assertRaisesRegex(lk.KernelError, "nothing is compiled here"):
            lk.get_launchable("gemm -m 3 -n 5 -k 3")
        os.environ["LOCKSTEP_KERNEL_COMPILER_IDENTITY"] = "another-compiler"
        _launch._LAUNCHABLES.clear()
        with self.assertRaisesRegex(lk.KernelError, "is not in the kernel cache"):
            lk.get_launchable(command)


class SettingsTest(unittest.TestCase):
    def test_a_changed_cache_setting_gives_a_new_launchable(self) -> None:
        first = fresh_cache(self)
        a = lk.get_launchable("gemm -m 2 -n 3 -k 3")
        second = tempfile.TemporaryDirectory()
        self.addCleanup(second.cleanup)
        os.environ["LOCKSTEP_KERNEL_CACHE_DIR"] = second.name
        b = lk.get_launchable("gemm -m 2 -n 3 -k 3")
        self.assertIsNot(a, b)
        self.assertTrue(b.module_path.startswith(second.name))
        self.assertEqual(len(entries(first)), 1)

    def test_a_work_directory_others_can_write_is_refused(self) -> None:
        fresh_cache(self)
        tmp = tempfile.TemporaryDirectory()
        self.addCleanup(tmp.cleanup)
        shared = Path(tmp.name) / "shared"
        shared.mkdir()
        shared.chmod(0o777)
        os.environ["LOCKSTEP_KERNEL_WORK_DIR"] = str(shared)
        self.addCleanup(os.environ.pop, "LOCKSTEP_KERNEL_WORK_DIR", None)
        with self.assertRaisesRegex(lk.KernelError, "not a directory of this user's alone"):
            lk.get_launchable("gemm -m 2 -n 9 -k 3")

    def test_check_and_reference_take_the_kernel_order_and_check_each_array(self) -> None:
        fresh_cache(self)
        command = "gemm -m 2 -n 3 -k 4"
        a, b = lk.sample_inputs(command)
        with self.assertRaisesRegex(ValueError, r"argument 'b' \(#2\) must have shape"):
            lk.reference(command, [a, b.T.copy()])
        with self.assertRaisesRegex(ValueError, "dtype float32, got .* float16"):
            lk.check(command, [a, b], [np.zeros((4, 3), np.float16)])
        with self.assertRaisesRegex(ValueError, "1 inputs given, the kernel has 2"):
            lk.reference(command, [a])

    def test_gpu_kernels_compile_here_with_their_chip_named(self) -> None:
        fresh_cache(self)
        # hip with the chip named compiles on a machine with no AMD GPU.
        flags = ["--iree-hal-target-device=hip", "--iree-rocm-target=gfx942"]
        path = lk.compile_kernel("gemm -m 8 -n 8 -k 8", "hip", compile_flags=flags)
        self.assertTrue(os.path.isfile(path))
        with self.assertRaisesRegex(ValueError, 'unknown device "tpu"'):
            lk.compile_kernel("gemm -m 8 -n 8 -k 8", "tpu", compile_flags=flags)


class GpuTest(unittest.TestCase):
    def test_gpu_devices_launch_or_skip_naming_what_is_missing(self) -> None:
        fresh_cache(self)
        for device in ("cuda", "hip"):
            with self.subTest(device=device):
                try:
                    f = lk.get_launchable("gemm -m 4 -n 4 -k 4", device=device)
                except lk.DeviceUnavailableError as e:
                    self.assertIn(device, str(e))
                    continue
                except ValueError as e:  # hip with no chip to detect
                    self.assertIn("needs a GPU target", str(e))
                    continue
                a, b = lk.sample_inputs("gemm -m 4 -n 4 -k 4")
                self.assertTrue(lk.check("gemm -m 4 -n 4 -k 4", [a, b], [f(a, b)])[0][0])


if __name__ == "__main__":
    unittest.main()
