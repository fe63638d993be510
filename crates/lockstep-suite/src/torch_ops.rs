//! iree-test-suites' `torch_ops` layout: a case is a directory holding
//! `run_module_io.json` and the torch-dialect program it names
//! (`test.mlir`), identified as `<Class>/<case>` (its parent directory's
//! name and its own), as the suite's configs name it.
//!
//! Inputs are formulas, not files: numpy seeded once per test, then
//! `(coeff * rand(*shape) + offset).astype(dtype)` per argument, which
//! lockstep-numpy reproduces bit for bit. A `compare` case's outputs are
//! checked with numpy's allclose against expected outputs named by URL (or
//! by a file beside the case); a `benchmark` case is timed with
//! iree-benchmark-module against the config's `golden_times_ms`.
//!
//! A case that cannot be read (bad JSON, an unknown dtype, a negative
//! shape) is a failed test naming its file, not an error that stops the
//! run: the other tests still run.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use lockstep_core::events::Sink;
use lockstep_core::Error;
use lockstep_numpy::{DType, Formula, Tolerance};
use serde::Deserialize;

use crate::walk::Walk;

/// The file that makes a directory a torch_ops case.
pub const CASE_FILE: &str = "run_module_io.json";
/// The largest `run_module_io.json` read.
pub const MAX_CASE_BYTES: u64 = 1 << 20;
/// The most arguments and expected outputs one case may list.
pub const MAX_ARGS: usize = 256;

/// A case found on disk.
#[derive(Debug, Clone)]
pub struct TorchCase {
    /// `<Class>/<case>`.
    pub name: String,
    pub dir: PathBuf,
    /// What the case says, or why it cannot be read (the test fails with it).
    pub spec: Result<Arc<TorchSpec>, String>,
}

/// Whether a case is checked against expected outputs or timed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Compare,
    Benchmark,
}

/// A file a case names: beside the case, or by URL (no checksum: kept in
/// the downloads area under its URL).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FileRef {
    Local(PathBuf),
    Url(String),
}

/// One argument of the entry point.
#[derive(Debug, Clone, PartialEq)]
pub enum Arg {
    Formula(Formula),
    File(FileRef),
}

/// A case's `run_module_io.json`, checked.
#[derive(Debug, Clone, PartialEq)]
pub struct TorchSpec {
    pub function: String,
    pub args: Vec<Arg>,
    pub seed: u32,
    pub tolerance: Tolerance,
    pub mode: Mode,
    /// The program, relative to the case directory (`file_name`).
    pub program: PathBuf,
    pub expected: Vec<FileRef>,
}

/// The file as iree-test-suites writes it (its runner's defaults).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSpec {
    #[serde(default = "default_function")]
    function_name: String,
    #[serde(default)]
    flat_args: Option<Vec<serde_json::Value>>,
    #[serde(default)]
    seed: i64,
    #[serde(default = "default_rtol")]
    rtol: f64,
    #[serde(default = "default_atol")]
    atol: f64,
    #[serde(default)]
    equal_nan: bool,
    #[serde(default = "default_mode")]
    mode: String,
    #[serde(default = "default_file_name")]
    file_name: String,
    /// Where the reference runner writes the module; lockstep's compile
    /// cache decides that, so it is read and not used.
    #[serde(default)]
    #[allow(dead_code)]
    vmfb_name: Option<String>,
    #[serde(default)]
    expected_output: Option<Vec<serde_json::Value>>,
    /// The generator's upload switch; nothing to do with running.
    #[serde(default)]
    #[allow(dead_code)]
    azure_blob: Option<bool>,
}

fn default_function() -> String {
    "main".into()
}
fn default_rtol() -> f64 {
    1e-5
}
fn default_atol() -> f64 {
    1e-8
}
fn default_mode() -> String {
    "compare".into()
}
fn default_file_name() -> String {
    "test.mlir".into()
}

const KEYS: &str = "function_name, flat_args, seed, rtol, atol, equal_nan, mode, file_name, vmfb_name, expected_output, azure_blob";

/// Parses the text of a case's `run_module_io.json`; the error says what is
/// wrong (the caller names the file). Never panics, whatever the text.
pub fn parse(text: &str) -> Result<TorchSpec, String> {
    let raw: RawSpec = serde_json::from_str(text).map_err(|e| format!("{e} (keys: {KEYS})"))?;
    let seed = u32::try_from(raw.seed).map_err(|_| {
        format!(
            "seed {} is not between 0 and 2^32 - 1 (numpy.random.seed refuses it)",
            raw.seed
        )
    })?;
    let mode = match raw.mode.as_str() {
        "compare" => Mode::Compare,
        "benchmark" => Mode::Benchmark,
        other => {
            return Err(format!(
                "mode `{}` is neither \"compare\" nor \"benchmark\"",
                printable(other)
            ))
        }
    };
    for (name, value) in [("rtol", raw.rtol), ("atol", raw.atol)] {
        if !value.is_finite() || value < 0.0 {
            return Err(format!("{name} {value} is not a finite number >= 0"));
        }
    }
    let program = PathBuf::from(&raw.file_name);
    if raw.file_name.is_empty()
        || program.is_absolute()
        || program
            .components()
            .any(|c| !matches!(c, std::path::Component::Normal(_)))
    {
        return Err(format!(
            "file_name `{}` must name a file inside the case directory",
            printable(&raw.file_name)
        ));
    }
    if raw.function_name.is_empty()
        || raw
            .function_name
            .chars()
            .any(|c| c.is_control() || c.is_whitespace())
    {
        return Err(format!(
            "function_name `{}` is not a function name",
            printable(&raw.function_name)
        ));
    }
    let raw_args = raw.flat_args.unwrap_or_default();
    let raw_expected = raw.expected_output.unwrap_or_default();
    if raw_args.len() > MAX_ARGS || raw_expected.len() > MAX_ARGS {
        return Err(format!(
            "more than {MAX_ARGS} arguments or expected outputs"
        ));
    }
    let args = raw_args
        .iter()
        .enumerate()
        .map(|(i, v)| arg(v).map_err(|e| format!("flat_args[{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    let expected = raw_expected
        .iter()
        .enumerate()
        .map(|(i, v)| file_ref(v).map_err(|e| format!("expected_output[{i}]: {e}")))
        .collect::<Result<Vec<_>, _>>()?;
    if mode == Mode::Compare && expected.is_empty() {
        return Err("a compare case needs expected_output (one entry per result)".into());
    }
    Ok(TorchSpec {
        function: raw.function_name,
        args,
        seed,
        tolerance: Tolerance {
            rtol: raw.rtol,
            atol: raw.atol,
            equal_nan: raw.equal_nan,
        },
        mode,
        program,
        expected,
    })
}

fn arg(value: &serde_json::Value) -> Result<Arg, String> {
    match value.get("Formula") {
        Some(f) => formula(f).map(Arg::Formula),
        None => file_ref(value).map(Arg::File),
    }
}

/// `{"shape": [..], "dtype": "float32", "coeff": 1, "offset": 0}`.
fn formula(value: &serde_json::Value) -> Result<Formula, String> {
    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Raw {
        shape: Vec<serde_json::Value>,
        #[serde(default = "float32")]
        dtype: String,
        #[serde(default = "one")]
        coeff: f64,
        #[serde(default)]
        offset: f64,
    }
    fn float32() -> String {
        "float32".into()
    }
    fn one() -> f64 {
        1.0
    }
    let raw: Raw = serde_json::from_value(value.clone())
        .map_err(|e| format!("a Formula needs shape, dtype, coeff and offset: {e}"))?;
    let dtype = DType::from_name(&raw.dtype).ok_or_else(|| {
        format!(
            "dtype `{}` is not one lockstep generates ({})",
            printable(&raw.dtype),
            lockstep_numpy::dtype::names()
        )
    })?;
    let shape = raw
        .shape
        .iter()
        .map(|d| {
            d.as_u64()
                .ok_or_else(|| format!("shape {:?} holds `{d}`, not a dimension >= 0", raw.shape))
        })
        .collect::<Result<Vec<_>, _>>()?;
    let formula = Formula {
        shape,
        dtype,
        coeff: raw.coeff,
        offset: raw.offset,
    };
    formula.elements().map_err(|e| e.to_string())?;
    Ok(formula)
}

/// `{"url": "...", "value": null}` or `{"url": null, "value": "file.npy"}`.
fn file_ref(value: &serde_json::Value) -> Result<FileRef, String> {
    let url = value
        .get("url")
        .and_then(|u| u.as_str())
        .filter(|u| !u.is_empty());
    let local = value
        .get("value")
        .and_then(|v| v.as_str())
        .filter(|v| !v.is_empty());
    match (url, local) {
        (Some(url), _) => {
            if !(url.starts_with("https://") || url.starts_with("http://")) {
                return Err(format!("url `{}` is not an http(s) URL", printable(url)));
            }
            Ok(FileRef::Url(url.to_string()))
        }
        (None, Some(path)) => {
            let p = PathBuf::from(path);
            if p.is_absolute()
                || p.components()
                    .any(|c| !matches!(c, std::path::Component::Normal(_)))
            {
                return Err(format!(
                    "value `{}` must name a file inside the case directory",
                    printable(path)
                ));
            }
            Ok(FileRef::Local(p))
        }
        (None, None) => Err(format!(
            "`{}` is neither a Formula nor a file ({{\"url\": ...}} or {{\"value\": \"FILE\"}})",
            printable(&value.to_string())
        )),
    }
}

fn printable(text: &str) -> String {
    lockstep_core::error::shown(text, 80)
}

/// Every torch_ops case under `root` (sorted by name).
pub fn find_cases(root: &Path, sink: &dyn Sink) -> Result<Vec<TorchCase>, Error> {
    let mut cases = Vec::new();
    let mut walk = Walk::new(root, sink)?;
    while let Some((dir, depth, entries)) = walk.next_dir()? {
        if let Some(file) = entries
            .iter()
            .find(|e| e.is_file && e.path.file_name().is_some_and(|n| n == CASE_FILE))
        {
            cases.push(load_case(&dir, &file.path));
            continue;
        }
        for entry in entries.iter().filter(|e| {
            e.is_dir
                && !e
                    .path
                    .file_name()
                    .is_some_and(|n| n.to_string_lossy().starts_with('.'))
        }) {
            walk.descend(entry, depth);
        }
    }
    cases.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(cases)
}

/// `<Class>/<case>`: the names the suite's configs list.
pub fn case_name(dir: &Path) -> String {
    let own = lockstep_core::fs::file_name(dir);
    match dir.parent().filter(|p| p.file_name().is_some()) {
        Some(class) => lockstep_core::error::printable_line(&format!(
            "{}/{own}",
            lockstep_core::fs::file_name(class)
        ))
        .into_owned(),
        None => lockstep_core::error::printable_line(&own).into_owned(),
    }
}

fn load_case(dir: &Path, file: &Path) -> TorchCase {
    let spec = lockstep_core::fs::read_tree_text("the torch_ops case", file, MAX_CASE_BYTES)
        .map_err(|e| e.to_string())
        .and_then(|text| parse(&text))
        .map_err(|e| format!("{}: {e}", file.display()))
        .map(Arc::new);
    TorchCase {
        name: case_name(dir),
        dir: dir.to_path_buf(),
        spec,
    }
}

/// The largest expected or produced output read for a comparison.
pub const MAX_OUTPUT_BYTES: u64 = 4 << 30;

/// How a test's files named by URL are fetched.
#[derive(Debug, Clone, Default)]
pub struct Downloads {
    pub mirrors: lockstep_cache::download::Mirrors,
    /// `--refresh-downloads`: fetch files named by URL again.
    pub refresh: bool,
}

/// A file a case names, on disk: beside the case, or fetched into the
/// downloads area (with the sha256 of what was fetched).
pub fn resolve(
    file: &FileRef,
    dir: &Path,
    cache: &lockstep_cache::Cache,
    downloads: &Downloads,
) -> Result<(PathBuf, Option<String>), String> {
    match file {
        FileRef::Local(rel) => Ok((dir.join(rel), None)),
        FileRef::Url(url) => lockstep_cache::download::fetch_unpinned(
            cache,
            url,
            &downloads.mirrors,
            downloads.refresh,
        )
        .map(|(path, sha)| (path, Some(sha)))
        .map_err(|e| e.to_string()),
    }
}

/// The `--input=` values of a case: formulas generated as numpy would
/// (one seed per test, formulas in order) into `.npy` files under
/// `io_dir` (bfloat16, which `.npy` cannot hold, as raw bytes with the
/// type in the flag); files passed as they are.
pub fn write_inputs(
    spec: &TorchSpec,
    dir: &Path,
    io_dir: &Path,
    cache: &lockstep_cache::Cache,
    downloads: &Downloads,
) -> Result<Vec<String>, String> {
    fs_err::create_dir_all(io_dir).map_err(|e| e.to_string())?;
    let mut random = lockstep_numpy::LegacyRandom::seed(spec.seed);
    let mut inputs = Vec::with_capacity(spec.args.len());
    for (i, arg) in spec.args.iter().enumerate() {
        match arg {
            Arg::Formula(f) => {
                let array = f
                    .generate(&mut random)
                    .map_err(|e| format!("flat_args[{i}]: {e}"))?;
                let value = match array.to_npy() {
                    Ok(bytes) => {
                        let path = io_dir.join(format!("input_{i}.npy"));
                        lockstep_core::fs::write_atomic(&path, &bytes)
                            .map_err(|e| e.to_string())?;
                        format!("@{}", path.display())
                    }
                    Err(_) => {
                        let path = io_dir.join(format!("input_{i}.bin"));
                        lockstep_core::fs::write_atomic(&path, &array.data)
                            .map_err(|e| e.to_string())?;
                        let dims: Vec<String> = array.shape.iter().map(u64::to_string).collect();
                        format!(
                            "{}x{}=@{}",
                            dims.join("x"),
                            array.dtype.iree_name(),
                            path.display()
                        )
                    }
                };
                inputs.push(value);
            }
            Arg::File(file) => {
                let (path, _) = resolve(file, dir, cache, downloads)?;
                inputs.push(format!("@{}", path.display()));
            }
        }
    }
    Ok(inputs)
}

/// Compares each output file with its expected output (numpy's allclose
/// with the case's tolerances); the error names the output and why.
pub fn compare(spec: &TorchSpec, outputs: &[PathBuf], expected: &[PathBuf]) -> Result<(), String> {
    if outputs.len() != expected.len() {
        return Err(format!(
            "{} outputs but {} expected outputs",
            outputs.len(),
            expected.len()
        ));
    }
    for (i, (out, exp)) in outputs.iter().zip(expected).enumerate() {
        let read = |path: &Path, what: &str| {
            lockstep_core::fs::read_tree_file(what, path, MAX_OUTPUT_BYTES)
                .map_err(|e| e.to_string())
                .and_then(|bytes| {
                    lockstep_numpy::Array::from_npy(&bytes)
                        .map_err(|e| format!("{what} {}: {e}", path.display()))
                })
        };
        let observed = read(out, "output")?;
        let wanted = read(exp, "expected output")?;
        match lockstep_numpy::allclose(&observed, &wanted, spec.tolerance) {
            Ok(lockstep_numpy::Verdict::Close) => {}
            Ok(v) => return Err(format!("output {i}: {}", v.describe(spec.tolerance))),
            Err(e) => return Err(format!("output {i}: {e}")),
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    const AB: &str = r#"{
        "function_name": "main",
        "flat_args": [
            {"Formula": {"shape": [64, 64], "dtype": "float16", "coeff": 1, "offset": 0}},
            {"Formula": {"shape": [64, 64], "dtype": "float16", "coeff": 1, "offset": 0}}
        ],
        "seed": 1, "rtol": 0.001, "atol": 0.001, "equal_nan": false,
        "mode": "compare", "file_name": "test.mlir", "vmfb_name": "out.vmfb",
        "expected_output": [{"url": "https://sharkpublic.blob.core.windows.net/sharkpublic/x/expected_result_0.npy", "value": null}]
    }"#;

    #[test]
    fn the_real_layout_reads() {
        let spec = parse(AB).unwrap();
        assert_eq!(spec.seed, 1);
        assert_eq!(spec.mode, Mode::Compare);
        assert_eq!(spec.args.len(), 2);
        assert!(
            matches!(&spec.args[0], Arg::Formula(f) if f.dtype == DType::F16 && f.shape == [64, 64])
        );
        assert!(
            matches!(&spec.expected[0], FileRef::Url(u) if u.ends_with("expected_result_0.npy"))
        );
        let bench = parse(r#"{"flat_args": [{"Formula": {"shape": [8], "dtype": "float32", "coeff": 1, "offset": 0}}], "seed": 14, "mode": "benchmark"}"#).unwrap();
        assert_eq!(
            (bench.mode, bench.function.as_str()),
            (Mode::Benchmark, "main")
        );
    }

    #[test]
    fn bad_cases_say_what_is_wrong() {
        let formula =
            |f: &str| format!(r#"{{"flat_args": [{{"Formula": {f}}}], "mode": "benchmark"}}"#);
        for (text, needle) in [
            (formula(r#"{"shape": [2], "dtype": "float128", "coeff": 1, "offset": 0}"#), "dtype `float128`"),
            (formula(r#"{"shape": [-2], "dtype": "float32", "coeff": 1, "offset": 0}"#), "not a dimension"),
            (formula(r#"{"shape": [1e20], "dtype": "float32", "coeff": 1, "offset": 0}"#), "not a dimension"),
            (formula(r#"{"shape": [4294967296, 4294967296], "dtype": "float32", "coeff": 1, "offset": 0}"#), "larger than"),
            (r#"{"mode": "compare"}"#.to_string(), "needs expected_output"),
            (r#"{"mode": "fast"}"#.to_string(), "mode `fast`"),
            (r#"{"seed": -1, "mode": "benchmark"}"#.to_string(), "seed -1"),
            (r#"{"file_name": "../x.mlir", "mode": "benchmark"}"#.to_string(), "inside the case"),
            (r#"{"typo": 1}"#.to_string(), "keys: function_name"),
            (r#"{"mode": "compare", "expected_output": [{"url": "file:///etc/passwd"}]}"#.to_string(), "not an http(s) URL"),
            (r#"{"mode": "compare", "expected_output": [{"url": null, "value": "/etc/passwd"}]}"#.to_string(), "inside the case"),
            (r#"{"flat_args": [{"x": 1}], "mode": "benchmark"}"#.to_string(), "neither a Formula"),
        ] {
            let e = parse(&text).unwrap_err();
            assert!(e.contains(needle), "{needle}: {e}");
        }
    }

    #[test]
    fn names_are_class_slash_case() {
        assert_eq!(
            case_name(Path::new("/s/generated/AB/128x128xf32_bench")),
            "AB/128x128xf32_bench"
        );
    }

    proptest::proptest! {
        #[test]
        fn parsing_never_panics(text in ".{0,300}") {
            let _ = parse(&text);
        }
    }
}
