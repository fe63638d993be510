//! `lockstep_kernels._native`: the Rust half of the `lockstep_kernels`
//! Python package, built by maturin over PyO3.
//!
//! Why it exists: a kernel launched from Python must be the very kernel
//! `lockstep bench` measures. So nothing here is re-implemented: command
//! lines are parsed, signatures derived, MLIR generated and references
//! computed by lockstep-kernels; cache keys, entries, locks and compiles are
//! lockstep-bench's [`modules`] over lockstep-cache; devices and compilers
//! are lockstep-iree's. The Python side (python/lockstep-kernels) only loads
//! the module with `iree.runtime` and moves arrays.
//!
//! Every function takes and returns plain Python values (str, bytes,
//! tuples, dicts), and raises `ValueError` for bad input and `RuntimeError`
//! for a failed compile or an unusable cache; compiles run with the GIL
//! released, so threads launching different kernels compile in parallel.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize};
use std::sync::Mutex;
use std::time::Duration;

use lockstep_bench::modules::{self, Compiler, Counters};
use lockstep_cache::{Area, Cache};
use lockstep_iree::{DriverTarget, Toolchain};
use lockstep_kernels::compare::compare_as;
use lockstep_kernels::signature::{signatures, OpSignature, Operand};
use lockstep_kernels::{kernel, tensor_data};
use pyo3::exceptions::{PyRuntimeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

/// How long one compile may take.
const COMPILE_TIMEOUT: Duration = Duration::from_secs(600);

/// The signatures of one MIOpenDriver/BOO command line (one per direction
/// of `-F`), each a dict: `func_name`, `mode`, `dtype`, `inputs` and
/// `outputs` (tuples of name, shape, dtype, layout), `flops`, `bytes`, and
/// `mlir` (or `unsupported`, the reason there is no kernel for it yet).
#[pyfunction]
fn plan<'py>(py: Python<'py>, command: &str) -> PyResult<Vec<Bound<'py, PyDict>>> {
    let parsed = lockstep_kernels::commands::parse_line(command).map_err(PyValueError::new_err)?;
    let mut out = Vec::new();
    for sig in signatures(&parsed.op) {
        let d = PyDict::new(py);
        d.set_item("func_name", &sig.func_name)?;
        d.set_item("mode", &sig.mode)?;
        d.set_item("dtype", sig.dtype.name())?;
        d.set_item("inputs", operands(&sig.inputs))?;
        d.set_item("outputs", operands(&sig.outputs))?;
        d.set_item("flops", sig.flops)?;
        d.set_item("bytes", sig.bytes)?;
        match kernel::module(&sig) {
            Ok(mlir) => d.set_item("mlir", mlir)?,
            Err(reason) => {
                let prefix = format!("{}: ", sig.func_name);
                let reason = reason.strip_prefix(&prefix).unwrap_or(&reason);
                d.set_item("unsupported", reason)?
            }
        }
        out.push(d);
    }
    Ok(out)
}

type OperandTuple = (String, Vec<u64>, &'static str, Option<String>);

fn operands(list: &[Operand]) -> Vec<OperandTuple> {
    list.iter()
        .map(|o| {
            (
                o.name.clone(),
                o.shape.clone(),
                o.elem.name(),
                o.layout.clone(),
            )
        })
        .collect()
}

/// `(runtime_device, target_flags)` for a runtime device name (`local-task`,
/// `cuda`, `hip://0` ...): the flags lockstep bench compiles with, the GPU's
/// chip detected where there is one.
#[pyfunction]
fn device_target(py: Python<'_>, device: &str) -> PyResult<(String, Vec<String>)> {
    check_device(device)?;
    match py.detach(|| lockstep_iree::driver_target(device)) {
        DriverTarget::Flags(flags) => Ok((device.to_string(), flags)),
        DriverTarget::NeedsTarget(why) => Err(PyValueError::new_err(format!(
            "device {device:?} needs a GPU target: iree-compile has no default for hip, and {why}; \
             pass compile_flags=[\"--iree-hal-target-device=hip\", \"--iree-rocm-target=gfx942\"] \
             with your GPU's architecture (rocminfo names it)"
        ))),
        DriverTarget::Unknown => Err(PyValueError::new_err(format!(
            "unknown device {device:?} (driver {:?}): use local-task, local-sync, cuda, hip or vulkan",
            lockstep_iree::driver(device)
        ))),
    }
}

/// A runtime device name IREE has a driver for (`local-task`, `cuda://1`
/// ...), without looking for the device or its chip.
#[pyfunction]
fn check_device(device: &str) -> PyResult<()> {
    let known = ["local-task", "local-sync", "cuda", "hip", "vulkan"];
    if device.trim().is_empty() || device.len() > 200 {
        return Err(PyValueError::new_err(
            "device must name a runtime device such as local-task, local-sync, cuda or hip",
        ));
    }
    let driver = lockstep_iree::driver(device);
    if !known.contains(&driver) {
        return Err(PyValueError::new_err(format!(
            "unknown device {device:?} (driver {driver:?}): use local-task, local-sync, cuda, hip or vulkan"
        )));
    }
    Ok(())
}

/// `(directory, on)` of the kernel cache, as `lockstep bench` resolves it:
/// `$LOCKSTEP_KERNEL_CACHE_DIR`, `$BOO_CACHE_DIR`, else
/// `$LOCKSTEP_CACHE/bench`; off with `LOCKSTEP_KERNEL_CACHE=0` or
/// `BOO_CACHE_ON=0`.
#[pyfunction]
fn kernel_cache() -> (PathBuf, bool) {
    let cache = Cache::from_env(None);
    (cache.dir(Area::Kernels), cache.is_on(Area::Kernels))
}

/// Toolchains seen by this process, by compiler path.
static TOOLCHAINS: Mutex<Option<HashMap<PathBuf, Toolchain>>> = Mutex::new(None);

fn toolchain(compile: &Path, memo_dir: Option<&Path>) -> Result<Toolchain, String> {
    if let Some(found) = TOOLCHAINS
        .lock()
        .ok()
        .and_then(|m| m.as_ref().and_then(|m| m.get(compile).cloned()))
    {
        return Ok(found);
    }
    let toolchain = lockstep_iree::python_env::toolchain_of_compiler(compile, memo_dir)
        .map_err(|e| e.render())?;
    if let Ok(mut seen) = TOOLCHAINS.lock() {
        seen.get_or_insert_with(HashMap::new)
            .insert(compile.to_path_buf(), toolchain.clone());
    }
    Ok(toolchain)
}

/// `(version line, identity)` of the compiler at `compile`.
#[pyfunction]
#[pyo3(signature = (compile, memo_dir=None))]
fn compiler(
    py: Python<'_>,
    compile: PathBuf,
    memo_dir: Option<PathBuf>,
) -> PyResult<(String, String)> {
    py.detach(|| toolchain(&compile, memo_dir.as_deref()))
        .map(|t| (t.compiler_version, t.identity))
        .map_err(PyRuntimeError::new_err)
}

/// The compiled module of a kernel: `(path, cached, compile seconds, key)`.
/// From the cache at `cache_dir` (None: off; the module then lands in
/// `work_dir`), or compiled by the iree-compile at `compile` into it, once
/// across threads and processes. Raises RuntimeError with the compiler's
/// first error lines.
#[pyfunction]
#[pyo3(signature = (func_name, mlir, flags, compile, work_dir, cache_dir=None, memo_dir=None))]
#[allow(clippy::too_many_arguments)]
fn obtain(
    py: Python<'_>,
    func_name: &str,
    mlir: &str,
    flags: Vec<String>,
    compile: PathBuf,
    work_dir: PathBuf,
    cache_dir: Option<PathBuf>,
    memo_dir: Option<PathBuf>,
) -> PyResult<(PathBuf, bool, f64, String)> {
    py.detach(|| {
        let toolchain = toolchain(&compile, memo_dir.as_deref())?;
        let key = modules::kernel_key(&toolchain.identity, mlir, &flags);
        let logs_cited = AtomicBool::new(false);
        let compiler = Compiler {
            toolchain: &toolchain,
            flags: &flags,
            timeout: COMPILE_TIMEOUT,
            work_dir: &work_dir,
            logs_cited: &logs_cited,
        };
        let (compiled, hits) = (AtomicUsize::new(0), AtomicUsize::new(0));
        let counters = Counters {
            compiled: &compiled,
            hits: &hits,
        };
        let bucket = cache_dir.map(|dir| {
            Cache::at(&work_dir)
                .with_kernels_at(dir)
                .bucket(Area::Kernels)
        });
        modules::obtain(&compiler, bucket.as_ref(), &key, func_name, mlir, &counters)
            .map(|m| (m.path, m.cached, m.seconds, key.to_string()))
            .map_err(|e| with_log_errors(&e, &work_dir, &key.to_string()))
    })
    .map_err(PyRuntimeError::new_err)
}

/// The cached module of a kernel compiled elsewhere by the compiler of
/// `identity` (a machine with only the IREE runtime): `(path, key)`, or
/// None when the cache does not hold it. Nothing is compiled or removed.
#[pyfunction]
fn lookup(
    func_name: &str,
    mlir: &str,
    flags: Vec<String>,
    identity: &str,
    cache_dir: PathBuf,
) -> Option<(PathBuf, String)> {
    let key = modules::kernel_key(identity, mlir, &flags);
    let bucket = Cache::at(&cache_dir)
        .with_kernels_at(&cache_dir)
        .bucket(Area::Kernels);
    let entry = bucket.slot(&key, Some(func_name)).peek()?;
    let path = entry.file(lockstep_bench::cache::MODULE)?.to_path_buf();
    Some((path, key.to_string()))
}

/// A compile failure with the first error lines of its log (the one-line
/// reason names only the first).
fn with_log_errors(message: &str, work_dir: &Path, key: &str) -> String {
    let log = work_dir.join("logs").join(format!("{key}.compile.log"));
    let text = std::fs::read_to_string(&log).unwrap_or_default();
    let errors: Vec<&str> = text
        .lines()
        .filter(|l| l.contains("error"))
        .take(8)
        .collect();
    if errors.is_empty() {
        message.to_string()
    } else {
        format!("{message}\n{}", errors.join("\n"))
    }
}

/// The most bytes `sample_inputs`, `reference` and `check` may hold for one
/// kernel (its tensors and, for references, their f64 copies): what `lockstep
/// bench` allows by default (half the free memory), so a huge command line
/// raises instead of aborting the interpreter.
fn max_bytes() -> u64 {
    lockstep_bench::run::default_max_bytes(&std::env::temp_dir())
}

/// The signature `func_name` of `command`, refused when its tensors (and
/// their f64 references) would not fit in memory.
fn signature(command: &str, func_name: &str) -> PyResult<OpSignature> {
    let parsed = lockstep_kernels::commands::parse_line(command).map_err(PyValueError::new_err)?;
    let sig = signatures(&parsed.op)
        .into_iter()
        .find(|s| s.func_name == func_name)
        .ok_or_else(|| PyValueError::new_err(format!("`{command}` has no kernel {func_name}")))?;
    let needed = lockstep_bench::run::bytes_needed(&sig, true);
    let limit = max_bytes();
    if needed > limit {
        return Err(PyValueError::new_err(format!(
            "{func_name}: its tensors and f64 references need {needed} bytes, more than the {limit} bytes of memory this allows"
        )));
    }
    Ok(sig)
}

/// The inputs `lockstep bench` feeds the kernel (seeded, deterministic),
/// each as raw little-endian bytes of its element type.
#[pyfunction]
fn sample_inputs<'py>(
    py: Python<'py>,
    command: &str,
    func_name: &str,
    seed: u64,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let sig = signature(command, func_name)?;
    Ok(tensor_data::inputs(&sig, seed)
        .iter()
        .zip(&sig.inputs)
        .map(|(values, op)| PyBytes::new(py, &tensor_data::encode(values, op.elem)))
        .collect())
}

/// Decodes the raw inputs (bytes of each input's element type).
fn decode_inputs(sig: &OpSignature, inputs: &[Vec<u8>]) -> PyResult<Vec<Vec<f64>>> {
    if inputs.len() != sig.inputs.len() {
        return Err(PyValueError::new_err(format!(
            "{} takes {} inputs, got {}",
            sig.func_name,
            sig.inputs.len(),
            inputs.len()
        )));
    }
    inputs
        .iter()
        .zip(&sig.inputs)
        .map(|(bytes, op)| {
            let values = tensor_data::decode(bytes, op.elem)
                .map_err(|e| PyValueError::new_err(format!("{}: {e}", op.name)))?;
            let want = op
                .shape
                .iter()
                .try_fold(1u64, |n, d| n.checked_mul(*d))
                .unwrap_or(u64::MAX);
            if values.len() as u64 != want {
                return Err(PyValueError::new_err(format!(
                    "{}: {} elements, the signature needs {want}",
                    op.name,
                    values.len()
                )));
            }
            Ok(values)
        })
        .collect()
}

/// The f64 reference of every output, as raw little-endian f64 bytes.
#[pyfunction]
fn reference<'py>(
    py: Python<'py>,
    command: &str,
    func_name: &str,
    inputs: Vec<Vec<u8>>,
) -> PyResult<Vec<Bound<'py, PyBytes>>> {
    let sig = signature(command, func_name)?;
    let values = decode_inputs(&sig, &inputs)?;
    let expected = py
        .detach(|| kernel::reference(&sig, &values))
        .map_err(PyRuntimeError::new_err)?;
    Ok(expected
        .iter()
        .map(|e| {
            let bytes: Vec<u8> = e.values.iter().flat_map(|v| v.to_le_bytes()).collect();
            PyBytes::new(py, &bytes)
        })
        .collect())
}

/// Checks a kernel's outputs against the f64 reference with the tolerances
/// of `lockstep bench --verify`: per output `(passed, max_abs, max_rel,
/// failures)`.
#[pyfunction]
fn check(
    py: Python<'_>,
    command: &str,
    func_name: &str,
    inputs: Vec<Vec<u8>>,
    outputs: Vec<Vec<u8>>,
) -> PyResult<Vec<(bool, f64, f64, usize)>> {
    let sig = signature(command, func_name)?;
    let values = decode_inputs(&sig, &inputs)?;
    if outputs.len() != sig.outputs.len() {
        return Err(PyValueError::new_err(format!(
            "{} has {} outputs, got {}",
            sig.func_name,
            sig.outputs.len(),
            outputs.len()
        )));
    }
    py.detach(|| {
        let expected = kernel::reference(&sig, &values)?;
        outputs
            .iter()
            .zip(&sig.outputs)
            .zip(&expected)
            .map(|((bytes, op), want)| {
                let got = tensor_data::decode(bytes, op.elem)?;
                let c = compare_as(op.elem, &got, &want.values, &want.sums);
                Ok((c.passed, c.max_abs, c.max_rel, c.failures))
            })
            .collect::<Result<Vec<_>, String>>()
    })
    .map_err(PyRuntimeError::new_err)
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(plan, m)?)?;
    m.add_function(wrap_pyfunction!(device_target, m)?)?;
    m.add_function(wrap_pyfunction!(check_device, m)?)?;
    m.add_function(wrap_pyfunction!(kernel_cache, m)?)?;
    m.add_function(wrap_pyfunction!(compiler, m)?)?;
    m.add_function(wrap_pyfunction!(obtain, m)?)?;
    m.add_function(wrap_pyfunction!(lookup, m)?)?;
    m.add_function(wrap_pyfunction!(sample_inputs, m)?)?;
    m.add_function(wrap_pyfunction!(reference, m)?)?;
    m.add_function(wrap_pyfunction!(check, m)?)?;
    Ok(())
}
