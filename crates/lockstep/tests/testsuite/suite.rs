//! `lockstep test` end to end with the real `lockstep` binary and the real IREE
//! tools (llvm-cpu backend on the host): the embedded smoke suite, the
//! iree-test-suites outcome table and its configs, native suites, selection,
//! sharding, history, the shared compile cache, downloads, bad input, timeouts,
//! benchmark goldens and reproducible commands (docs/test.md).
//!
//! The toolchain is provisioned once per test binary with `lockstep toolchain
//! path` under the shared `$LOCKSTEP_TOOLCHAINS` (default
//! `~/.cache/lockstep/toolchains`); every test runs in its own temporary
//! directory (not a git repository) with its own `$LOCKSTEP_HOME` (history,
//! logs) and `$LOCKSTEP_CACHE` (compile cache, downloads).

use std::collections::{BTreeMap, BTreeSet};
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use crate::common::{iree_bin, jcase, junit_suites, serve, sha256_of, write, JCase, Project};
use serde_json::Value;

// ---------------------------------------------------------------------------
// Programs and flag files

/// `a + b` on `tensor<Nxf32>`.
fn add_mlir(n: usize) -> String {
    format!(
        "func.func @main(%a: tensor<{n}xf32>, %b: tensor<{n}xf32>) -> tensor<{n}xf32> {{
  %0 = arith.addf %a, %b : tensor<{n}xf32>
  return %0 : tensor<{n}xf32>
}}
"
    )
}

/// The 4-element add every small fixture uses.
fn add4() -> String {
    add_mlir(4)
}

/// Invalid MLIR (a type error): iree-compile rejects it deterministically.
const BAD_MLIR: &str = "func.func @main(%a: tensor<4xf32>, %b: tensor<4xf32>) -> tensor<4xf32> {
  %0 = arith.addf %a, %b : tensor<4xi32>
  return %0 : tensor<4xf32>
}
";

/// A flag file for the 4-element add with the right expected output.
const GOOD_FLAGS: &str = "--function=main
--input=4xf32=1 2 3 4
--input=4xf32=10 20 30 40
--expected_output=4xf32=11 22 33 44
";

/// The same inputs with a wrong expected output: the run reports a mismatch.
const WRONG_FLAGS: &str = "--function=main
--input=4xf32=1 2 3 4
--input=4xf32=10 20 30 40
--expected_output=4xf32=11 22 33 45
";

const CPU_COMPILE_FLAGS: [&str; 3] = [
    "--iree-hal-target-device=local",
    "--iree-hal-local-target-device-backends=llvm-cpu",
    "--iree-llvmcpu-target-cpu=host",
];

/// A native `[[test]]` for the 4-element add with inline values.
fn native_add_test(name: &str, source: &str, expected: &str, extra: &str) -> String {
    format!(
        "[[test]]
name = \"{name}\"
source = \"{source}\"
function = \"main\"
inputs = [\"4xf32=1 2 3 4\", \"4xf32=10 20 30 40\"]
outputs = [\"4xf32={expected}\"]
{extra}
"
    )
}

/// Writes an iree-test-suites case `root/name/{model.mlir,run_module_io_flags.txt}`.
fn layout_case(root: &Path, name: &str, mlir: &str, flags: &str) {
    let dir = root.join(name);
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("model.mlir"), mlir).unwrap();
    std::fs::write(dir.join("run_module_io_flags.txt"), flags).unwrap();
}

/// A JSON config on the host CPU with the given lists.
fn config_json(name: &str, device: &str, lists: &[(&str, &[&str])]) -> String {
    let mut all: BTreeMap<&str, Vec<String>> = [
        "skip_compile_tests",
        "skip_run_tests",
        "expected_compile_failures",
        "expected_run_failures",
    ]
    .into_iter()
    .map(|k| (k, Vec::new()))
    .collect();
    for (key, items) in lists {
        all.get_mut(key)
            .unwrap_or_else(|| panic!("unknown list {key}"))
            .extend(items.iter().map(|s| s.to_string()));
    }
    let mut value = serde_json::json!({
        "config_name": name,
        "iree_compile_flags": CPU_COMPILE_FLAGS,
        "iree_run_module_flags": [format!("--device={device}")],
    });
    for (k, v) in all {
        value[k] = serde_json::json!(v);
    }
    serde_json::to_string_pretty(&value).unwrap()
}

// ---------------------------------------------------------------------------
// A project per test

/// What a finished `lockstep` process said.
struct Ran {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl From<std::process::Output> for Ran {
    fn from(out: std::process::Output) -> Ran {
        Ran {
            code: out.status.code(),
            stdout: crate::common::stdout(&out),
            stderr: crate::common::stderr(&out),
        }
    }
}

impl Ran {
    fn expect(&self, code: i32, what: &str) {
        assert_eq!(
            self.code,
            Some(code),
            "{what}: exit {:?}, expected {code}\nstdout:\n{}\nstderr:\n{}",
            self.code,
            self.stdout,
            self.stderr
        );
    }

    /// Test ids printed by `--list` (`<id>  [markers]` per line).
    fn listed(&self) -> BTreeSet<String> {
        self.stdout
            .lines()
            .filter(|l| !l.trim().is_empty())
            .map(|l| l.split("  [").next().unwrap_or(l).to_string())
            .collect()
    }
}

/// A [`Project`] whose `lockstep test` runs each write their own JSON
/// results file.
struct Sandbox {
    p: Project,
    runs: AtomicUsize,
}

impl Sandbox {
    fn new() -> Sandbox {
        Sandbox {
            p: Project::new(),
            runs: AtomicUsize::new(0),
        }
    }

    /// The temporary directory (fixtures live beside the work tree).
    fn root(&self) -> &Path {
        self.p.root()
    }

    fn cache(&self) -> PathBuf {
        self.p.cache()
    }

    /// `lockstep ARGS` in `cwd` with this sandbox's home and the given cache.
    fn command_in(&self, cwd: &Path, cache: &Path, args: &[&str]) -> Command {
        let mut cmd = self.p.cmd_in(cwd, args);
        cmd.env("LOCKSTEP_CACHE", cache);
        cmd
    }

    fn command(&self, args: &[&str]) -> Command {
        self.p.cmd(args)
    }

    fn run(&self, args: &[&str]) -> Ran {
        Ran::from(crate::common::output(&mut self.command(args)))
    }

    /// `lockstep test ARGS -j 2 --json FILE`: asserts the exit code, returns the JSON.
    fn test(&self, args: &[&str], code: i32) -> (Value, Ran) {
        let json = self.next_json();
        let mut all: Vec<&str> = vec!["test"];
        all.extend_from_slice(args);
        let json_arg = json.display().to_string();
        all.extend_from_slice(&["-j", "2", "--json", &json_arg]);
        let ran = self.run(&all);
        ran.expect(code, &format!("lockstep {all:?}"));
        (read_json(&json, &ran), ran)
    }

    /// `lockstep test ARGS --list`: asserts exit 0.
    fn list(&self, args: &[&str]) -> BTreeSet<String> {
        let mut all: Vec<&str> = vec!["test", "--list"];
        all.extend_from_slice(args);
        let ran = self.run(&all);
        ran.expect(0, &format!("lockstep {all:?}"));
        ran.listed()
    }

    fn next_json(&self) -> PathBuf {
        let n = self.runs.fetch_add(1, Ordering::SeqCst);
        self.root().join(format!("results-{n}.json"))
    }
}

fn read_json(path: &Path, ran: &Ran) -> Value {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| {
        panic!(
            "no JSON results at {}: {e}\nstdout:\n{}\nstderr:\n{}",
            path.display(),
            ran.stdout,
            ran.stderr
        )
    });
    serde_json::from_str(&text).expect("valid JSON results")
}

// ---------------------------------------------------------------------------
// Reading the JSON results

fn tests_of(json: &Value) -> &Vec<Value> {
    json["tests"].as_array().expect("tests is an array")
}

/// id -> outcome.
fn outcomes(json: &Value) -> BTreeMap<String, String> {
    tests_of(json)
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn test_by_id<'a>(json: &'a Value, id: &str) -> &'a Value {
    tests_of(json)
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no test {id} in {:#?}", outcomes(json)))
}

fn step<'a>(test: &'a Value, kind: &str) -> &'a Value {
    test["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == kind)
        .unwrap_or_else(|| panic!("no {kind} step in {test:#}"))
}

fn summary_count(json: &Value, key: &str) -> u64 {
    json["summary"][key]
        .as_u64()
        .unwrap_or_else(|| panic!("summary.{key} is not a count: {:#}", json["summary"]))
}

fn expect_outcomes(json: &Value, expected: &[(&str, &str)]) {
    let got = outcomes(json);
    let want: BTreeMap<String, String> = expected
        .iter()
        .map(|(id, o)| (id.to_string(), o.to_string()))
        .collect();
    assert_eq!(got, want, "outcomes differ; tests:\n{json:#}");
}

fn keys(v: &Value) -> BTreeSet<String> {
    v.as_object()
        .unwrap_or_else(|| panic!("not an object: {v}"))
        .keys()
        .cloned()
        .collect()
}

fn assert_has_keys(v: &Value, want: &[&str], what: &str) {
    let have = keys(v);
    let missing: Vec<&&str> = want.iter().filter(|k| !have.contains(**k)).collect();
    assert!(missing.is_empty(), "{what} lacks {missing:?}: {v:#}");
}

// ---------------------------------------------------------------------------
// The compile cache on disk

/// `$LOCKSTEP_CACHE/compile/<2 hex>/<key>` directories.
/// The seals (`compile/KK/KEY.json`) of the compile area's entries: its
/// compiles, not the passes remembered beside them.
fn cache_entries(cache: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    let Ok(shards) = std::fs::read_dir(cache.join("compile")) else {
        return found;
    };
    for shard in shards.flatten() {
        let name = shard.file_name().to_string_lossy().into_owned();
        if name.len() != 2 || !name.chars().all(|c| c.is_ascii_hexdigit()) {
            continue;
        }
        for entry in std::fs::read_dir(shard.path()).unwrap().flatten() {
            let path = entry.path();
            let file = path.file_name().unwrap().to_string_lossy().into_owned();
            // Compile entries: a remembered pass (meta `run`) is not one.
            let is_run = || {
                std::fs::read_to_string(&path)
                    .ok()
                    .and_then(|t| serde_json::from_str::<Value>(&t).ok())
                    .is_some_and(|v| v["meta"].get("run").is_some())
            };
            if file.len() == 64 + ".json".len() && file.ends_with(".json") && !is_run() {
                found.push(path);
            }
        }
    }
    found.sort();
    found
}

/// The module of the entry sealed by `seal`.
fn module_of(seal: &Path) -> PathBuf {
    seal.with_extension("vmfb")
}

/// Staging files (`.KEY.SUFFIX.tmp-...`) left in the compile area.
fn staging_leftovers(cache: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for shard in std::fs::read_dir(cache.join("compile"))
        .into_iter()
        .flatten()
        .flatten()
    {
        for entry in std::fs::read_dir(shard.path())
            .into_iter()
            .flatten()
            .flatten()
        {
            if entry.file_name().to_string_lossy().contains(".tmp-") {
                found.push(entry.path());
            }
        }
    }
    found
}

/// Asserts an entry is complete: its seal names its key and every file's
/// size and sha256; it holds a module unless it caches a failure.
fn assert_valid_entry(seal_path: &Path) {
    let name = seal_path
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    let key = name.trim_end_matches(".json");
    let seal: Value = serde_json::from_str(
        &std::fs::read_to_string(seal_path)
            .unwrap_or_else(|e| panic!("{}: no seal: {e}", seal_path.display())),
    )
    .expect("the seal is JSON");
    assert_eq!(seal["key"], key, "{}", seal_path.display());
    assert_eq!(seal["area"], "compile");
    assert!(
        seal_path.parent().unwrap().ends_with(&key[..2]),
        "entry {} not under its 2-hex shard",
        seal_path.display()
    );
    let files = seal["files"].as_object().expect("files");
    if seal["meta"]["failure"].is_null() {
        assert!(files.contains_key("vmfb"), "{seal:#}");
    }
    for (suffix, record) in files {
        let file = seal_path.with_file_name(format!("{key}.{suffix}"));
        let size = std::fs::metadata(&file).expect("payload").len();
        assert_eq!(record["size"].as_u64(), Some(size), "{seal:#}");
        assert_eq!(
            record["sha256"].as_str(),
            Some(sha256_of(&file).as_str()),
            "{seal:#}"
        );
    }
}

// ---------------------------------------------------------------------------
// JSON5 lists, read with string searches

/// The strings in `key: [ ... ]` of a JSON/JSON5 config (comments ignored).
fn json5_list(text: &str, key: &str) -> Vec<String> {
    let at = text
        .find(key)
        .unwrap_or_else(|| panic!("no {key} in\n{text}"));
    let open = text[at..].find('[').unwrap() + at;
    let close = text[open..].find(']').unwrap() + open;
    let inner = &text[open + 1..close];
    let mut without_comments = String::new();
    let mut rest = inner;
    while !rest.is_empty() {
        if let Some(r) = rest.strip_prefix("//") {
            rest = r.split_once('\n').map(|(_, r)| r).unwrap_or("");
        } else if let Some(r) = rest.strip_prefix("/*") {
            rest = r.split_once("*/").map(|(_, r)| r).unwrap_or("");
        } else {
            let c = rest.chars().next().unwrap();
            without_comments.push(c);
            rest = &rest[c.len_utf8()..];
        }
    }
    without_comments
        .split(',')
        .map(|s| s.trim().trim_matches(|c| c == '"' || c == '\''))
        .filter(|s| !s.is_empty())
        .map(str::to_string)
        .collect()
}

// ---------------------------------------------------------------------------
// Fixture suites

/// The iree-test-suites outcome table: one case per row (docs/test.md).
fn outcome_table_suite(sb: &Sandbox) -> (PathBuf, PathBuf) {
    let root = sb.root().join("its");
    layout_case(&root, "pass", &add4(), GOOD_FLAGS);
    layout_case(&root, "compile_fail", BAD_MLIR, GOOD_FLAGS);
    layout_case(&root, "run_mismatch", &add4(), WRONG_FLAGS);
    layout_case(&root, "xfail_compile", BAD_MLIR, GOOD_FLAGS);
    layout_case(&root, "xfail_run", &add4(), WRONG_FLAGS);
    layout_case(&root, "xpass_listed", &add4(), GOOD_FLAGS);
    layout_case(&root, "xpass_compiles_run_fails", &add4(), WRONG_FLAGS);
    // Unique bytes: if it were compiled, compiles_run would count it.
    layout_case(
        &root,
        "skipped",
        &format!("// never compiled\n{BAD_MLIR}"),
        GOOD_FLAGS,
    );
    layout_case(&root, "compile_only", &add4(), WRONG_FLAGS);
    let config = sb.root().join("config.json");
    write(
        &config,
        &config_json(
            "cpu_table",
            "local-task",
            &[
                ("skip_compile_tests", &["skipped"]),
                ("skip_run_tests", &["compile_only"]),
                (
                    "expected_compile_failures",
                    &["xfail_compile", "xpass_compiles_run_fails"],
                ),
                ("expected_run_failures", &["xfail_run", "xpass_listed"]),
            ],
        ),
    );
    (root, config)
}

/// A native suite of `n` distinct adds (sizes 1..=n), passing.
fn distinct_adds_suite(dir: &Path, n: usize) -> PathBuf {
    let mut text = String::from("[suite]\nname = \"adds\"\n\n");
    for i in 1..=n {
        write(&dir.join(format!("add{i}.mlir")), &add_mlir(i));
        text.push_str(&format!(
            "[[test]]
name = \"add{i}\"
source = \"add{i}.mlir\"
inputs = [\"{i}xf32=1\", \"{i}xf32=2\"]
outputs = [\"{i}xf32=3\"]

"
        ));
    }
    let file = dir.join("adds.suite.toml");
    write(&file, &text);
    file
}

// ---------------------------------------------------------------------------
// 1. The embedded smoke suite

const SMOKE: [&str; 12] = [
    "attention_f32",
    "conv2d_nhwc_f32",
    "elementwise_f16",
    "elementwise_f32",
    "layernorm_f32",
    "matmul_f16",
    "matmul_f32",
    "matmul_i8_i32",
    "reduction_max_i32",
    "reduction_sum_f32",
    "softmax_f32",
    "transpose_broadcast_f32",
];

fn smoke_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../suites/smoke")
        .canonicalize()
        .expect("suites/smoke")
}

#[test]
fn embedded_smoke_suite_passes_and_second_run_compiles_nothing() {
    let sb = Sandbox::new();
    let smoke = smoke_dir();
    let smoke_arg = smoke.display().to_string();
    let (first, ran) = sb.test(&[&smoke_arg], 0);

    // 12 native tests + 12 iree-test-suites cases, on the default target cpu.
    let mut want = BTreeSet::new();
    for name in SMOKE {
        want.insert(format!("smoke/{name} [cpu]"));
        want.insert(format!("iree-test-suites/{name} [cpu]"));
    }
    let got: BTreeSet<String> = outcomes(&first).keys().cloned().collect();
    assert_eq!(got, want);
    assert!(
        outcomes(&first).values().all(|o| o == "pass"),
        "{:#?}",
        outcomes(&first)
    );
    assert!(ran.stdout.contains("24 tests"), "{}", ran.stdout);

    // The documented schema (readers ignore unknown keys, so only require these).
    assert_eq!(first["version"], 1);
    assert_has_keys(&first, &["version", "summary", "changes", "tests"], "top");
    assert_has_keys(
        &first["summary"],
        &[
            "total",
            "pass",
            "fail",
            "xfail",
            "xpass",
            "skip",
            "failed",
            "wall_seconds",
            "jobs",
            "compiles_run",
            "compiles_cached",
            "compiler",
            "compiler_identity",
        ],
        "summary",
    );
    assert_eq!(summary_count(&first, "total"), 24);
    assert_eq!(summary_count(&first, "pass"), 24);
    for k in ["fail", "xfail", "xpass", "skip"] {
        assert_eq!(summary_count(&first, k), 0, "{k}");
    }
    assert_eq!(first["summary"]["failed"], false);
    assert_eq!(summary_count(&first, "jobs"), 2);
    assert!(first["summary"]["wall_seconds"].as_f64().unwrap() > 0.0);
    assert_has_keys(
        &first["changes"],
        &["newly_failing", "newly_passing", "slower"],
        "changes",
    );
    for k in ["newly_failing", "newly_passing", "slower"] {
        assert_eq!(first["changes"][k], serde_json::json!([]), "{k}");
    }
    // Both layouts hold the same 12 programs, compiled with the same flags:
    // one compile each, plus matmul_f32 again with statistics (its benchmark).
    let compiles = summary_count(&first, "compiles_run");
    assert_eq!(compiles, 13);
    assert_eq!(summary_count(&first, "compiles_cached"), 0);
    for t in tests_of(&first) {
        assert_has_keys(
            t,
            &[
                "id", "case", "group", "outcome", "reason", "steps", "seconds", "markers",
            ],
            "test",
        );
        assert_eq!(t["group"], "cpu");
        assert_eq!(
            t["id"].as_str().unwrap(),
            format!("{} [cpu]", t["case"].as_str().unwrap())
        );
        assert!(t["markers"].as_array().unwrap().contains(&"cpu".into()));
        for s in t["steps"].as_array().unwrap() {
            assert_has_keys(
                s,
                &[
                    "kind",
                    "status",
                    "command",
                    "log",
                    "seconds",
                    "cached",
                    "message",
                    "output_tail",
                    "metrics",
                ],
                "step",
            );
            assert_eq!(s["status"], "passed", "{s:#}");
        }
        let kinds: Vec<&str> = t["steps"]
            .as_array()
            .unwrap()
            .iter()
            .map(|s| s["kind"].as_str().unwrap())
            .collect();
        // matmul_f32 (native) carries generous benchmark goldens.
        if t["id"] == "smoke/matmul_f32 [cpu]" {
            assert_eq!(kinds, ["compile", "run", "benchmark"]);
            let m = &step(t, "benchmark")["metrics"];
            assert_has_keys(
                m,
                &["time_ms", "golden_time_ms", "dispatch_count", "vmfb_size"],
                "metrics",
            );
        } else {
            assert_eq!(kinds, ["compile", "run"], "{}", t["id"]);
        }
    }
    let mm = test_by_id(&first, "smoke/matmul_f32 [cpu]");
    for m in ["presubmit", "matmul", "f32", "cpu", "smoke"] {
        assert!(mm["markers"].as_array().unwrap().contains(&m.into()), "{m}");
    }

    // Second run: every module comes from the cache.
    let (second, _) = sb.test(&[&smoke_arg], 0);
    assert_eq!(summary_count(&second, "total"), 24);
    assert_eq!(summary_count(&second, "pass"), 24);
    assert_eq!(summary_count(&second, "compiles_run"), 0);
    assert_eq!(summary_count(&second, "compiles_cached"), compiles);
    for t in tests_of(&second) {
        let c = step(t, "compile");
        assert_eq!(c["cached"], true, "{}", t["id"]);
        assert_eq!(c["status"], "passed");
    }
    assert_eq!(cache_entries(&sb.cache()).len() as u64, compiles);

    // summary.compiler is what iree-compile --version says (docs/test.md).
    let compiler = first["summary"]["compiler"].as_str().unwrap();
    assert!(
        compiler.contains("IREE compiler version"),
        "summary.compiler should be the compiler's version line, got {compiler:?}"
    );
    assert!(!first["summary"]["compiler_identity"]
        .as_str()
        .unwrap()
        .is_empty());
}

// ---------------------------------------------------------------------------
// 2. iree-test-suites outcomes with a config

/// A failed compile says why on the console: the compiler's own words on
/// the FAIL line and its first error lines under it, the log path after.
fn compile_error_is_on_the_console(ran: &Ran, id: &str) {
    let console = format!("{}{}", ran.stdout, ran.stderr);
    let lines: Vec<&str> = console.lines().collect();
    let fail = lines
        .iter()
        .position(|l| l.starts_with(&format!("  FAIL {id} (compile): iree-compile failed")))
        .unwrap_or_else(|| panic!("no FAIL line for {id}:\n{console}"));
    // The compiler's first error ends the FAIL line (or, when that line was
    // cut, opens the excerpt); then the source line, the caret, the note.
    let excerpt: Vec<&str> = lines[fail + 1..]
        .iter()
        .take_while(|l| l.starts_with("      | "))
        .copied()
        .collect();
    assert!((2..=6).contains(&excerpt.len()), "{console}");
    let error = "error: use of value '%a' expects different type";
    assert!(
        lines[fail].contains(error) || excerpt[0].contains(error),
        "{console}"
    );
    let source = excerpt
        .iter()
        .position(|l| l.contains("arith.addf %a, %b"))
        .unwrap_or_else(|| panic!("no source line under the FAIL line:\n{console}"));
    assert!(excerpt[source + 1].trim_end().ends_with('^'), "{console}");
    let after = lines[fail + 1 + excerpt.len()];
    assert!(after.starts_with("      log: "), "{console}");
}

#[test]
fn config_outcomes_follow_the_reference_table() {
    let sb = Sandbox::new();
    let (root, config) = outcome_table_suite(&sb);
    let (root_arg, config_arg) = (root.display().to_string(), config.display().to_string());
    let (json, ran) = sb.test(&[&root_arg, "--suite-config", &config_arg], 1);
    let id = |case: &str| format!("{case} [cpu_table]");
    compile_error_is_on_the_console(&ran, &id("compile_fail"));
    let expected = [
        ("pass", "pass"),
        ("compile_fail", "fail"),
        ("run_mismatch", "fail"),
        ("xfail_compile", "xfail"),
        ("xfail_run", "xfail"),
        ("xpass_listed", "xpass"),
        ("xpass_compiles_run_fails", "xpass"),
        ("skipped", "skip"),
        ("compile_only", "pass"),
    ];
    let ids: Vec<(String, &str)> = expected.iter().map(|(c, o)| (id(c), *o)).collect();
    let ids_ref: Vec<(&str, &str)> = ids.iter().map(|(i, o)| (i.as_str(), *o)).collect();
    expect_outcomes(&json, &ids_ref);
    assert_eq!(summary_count(&json, "pass"), 2);
    assert_eq!(summary_count(&json, "fail"), 2);
    assert_eq!(summary_count(&json, "xfail"), 2);
    assert_eq!(summary_count(&json, "xpass"), 2);
    assert_eq!(summary_count(&json, "skip"), 1);
    assert_eq!(json["summary"]["failed"], true);
    // Only the add and the invalid program were compiled (each once); the
    // skipped case's unique source never was.
    assert_eq!(summary_count(&json, "compiles_run"), 2);

    for t in tests_of(&json) {
        assert_eq!(t["group"], "cpu_table");
        assert_eq!(t["markers"], serde_json::json!(["cpu_table"]));
    }
    let t = test_by_id(&json, &id("compile_fail"));
    assert_eq!(step(t, "compile")["status"], "failed");
    assert!(step(t, "compile")["output_tail"]
        .as_str()
        .unwrap()
        .contains("error"));
    assert_eq!(step(t, "run")["status"], "skipped");
    let t = test_by_id(&json, &id("run_mismatch"));
    assert_eq!(step(t, "compile")["status"], "passed");
    assert_eq!(step(t, "run")["status"], "failed");
    assert!(t["reason"].as_str().unwrap().starts_with("run:"), "{t:#}");
    let t = test_by_id(&json, &id("xfail_compile"));
    assert!(t["reason"]
        .as_str()
        .unwrap()
        .contains("expected_compile_failures"));
    let t = test_by_id(&json, &id("xfail_run"));
    assert_eq!(step(t, "run")["status"], "failed");
    assert!(t["reason"]
        .as_str()
        .unwrap()
        .contains("expected_run_failures"));
    let t = test_by_id(&json, &id("xpass_listed"));
    assert_eq!(step(t, "run")["status"], "passed");
    // skip_compile_tests: neither step ran.
    let t = test_by_id(&json, &id("skipped"));
    for s in t["steps"].as_array().unwrap() {
        assert_eq!(s["status"], "skipped", "{s:#}");
        assert_eq!(s["command"], "", "{s:#}");
        assert_eq!(s["cached"], false, "{s:#}");
        assert!(s["log"].is_null(), "{s:#}");
    }
    // skip_run_tests: compiled only (its wrong golden is never checked).
    let t = test_by_id(&json, &id("compile_only"));
    assert_eq!(step(t, "compile")["status"], "passed");
    assert_eq!(step(t, "run")["status"], "skipped");

    // --ignore-xfails: the lists are empty.
    let (json, _) = sb.test(
        &[&root_arg, "--suite-config", &config_arg, "--ignore-xfails"],
        1,
    );
    let expected = [
        ("pass", "pass"),
        ("compile_fail", "fail"),
        ("run_mismatch", "fail"),
        ("xfail_compile", "fail"),
        ("xfail_run", "fail"),
        ("xpass_listed", "pass"),
        // No longer expected to fail compiling, so its run happens and fails.
        ("xpass_compiles_run_fails", "fail"),
        ("skipped", "skip"),
        ("compile_only", "pass"),
    ];
    let ids: Vec<(String, &str)> = expected.iter().map(|(c, o)| (id(c), *o)).collect();
    let ids_ref: Vec<(&str, &str)> = ids.iter().map(|(i, o)| (i.as_str(), *o)).collect();
    expect_outcomes(&json, &ids_ref);
    assert_eq!(summary_count(&json, "xfail"), 0);
    assert_eq!(summary_count(&json, "xpass"), 0);
    // Deterministic compile errors were cached by the first run.
    assert_eq!(summary_count(&json, "compiles_run"), 0);
    let c = step(test_by_id(&json, &id("compile_fail")), "compile");
    assert_eq!(c["status"], "failed");
    assert_eq!(c["cached"], true, "{c:#}");

    // --skip-all-runs: compiles only; nothing is run.
    let (json, _) = sb.test(
        &[&root_arg, "--suite-config", &config_arg, "--skip-all-runs"],
        1,
    );
    let o = outcomes(&json);
    assert_eq!(o.len(), 9);
    for (case, want) in [
        ("pass", "pass"),
        ("compile_fail", "fail"),
        ("run_mismatch", "pass"),
        ("xfail_compile", "xfail"),
        ("xpass_compiles_run_fails", "xpass"),
        ("skipped", "skip"),
        ("compile_only", "pass"),
    ] {
        assert_eq!(o[&id(case)], want, "{case}: {o:#?}");
    }
    for t in tests_of(&json) {
        for s in t["steps"].as_array().unwrap() {
            if s["kind"] != "compile" {
                assert_eq!(s["status"], "skipped", "{}: {s:#}", t["id"]);
                assert_eq!(s["command"], "", "{}: {s:#}", t["id"]);
            }
        }
    }
    assert_eq!(
        step(test_by_id(&json, &id("pass")), "compile")["status"],
        "passed"
    );
}

/// A run failure's reason is the tool's error, even when the case's path
/// happens to contain a word like "mismatch" or "error" (the log's first line
/// is the command, which names the path).
#[test]
fn run_failure_reason_is_the_tools_error() {
    let sb = Sandbox::new();
    let root = sb.root().join("its");
    layout_case(&root, "error_mismatch", &add4(), WRONG_FLAGS);
    let (json, _) = sb.test(&[&root.display().to_string()], 1);
    let t = test_by_id(&json, "error_mismatch [cpu]");
    assert_eq!(t["outcome"], "fail");
    let message = step(t, "run")["message"].as_str().unwrap();
    assert!(
        message.contains("[FAILED]") && message.contains("does not match"),
        "the run step's message should quote iree-run-module's error, got {message:?}"
    );
    assert!(!message.contains("$ cd "), "{message:?}");
}

// ---------------------------------------------------------------------------
// 3. --update-xfails on a JSON5 config with comments

#[test]
fn update_xfails_rewrites_the_lists_and_keeps_comments() {
    let sb = Sandbox::new();
    let root = sb.root().join("its");
    layout_case(&root, "pass", &add4(), GOOD_FLAGS);
    layout_case(&root, "broken_compile", BAD_MLIR, GOOD_FLAGS);
    layout_case(&root, "broken_run", &add4(), WRONG_FLAGS);
    layout_case(&root, "stale", &add4(), GOOD_FLAGS);
    let config = sb.root().join("config.json5");
    let flags: Vec<String> = CPU_COMPILE_FLAGS
        .iter()
        .map(|f| format!("    \"{f}\","))
        .collect();
    let original = format!(
        "// Suite config for the update test.
{{
  // the name shown in test ids
  config_name: \"cpu_update\",
  iree_compile_flags: [
{}
  ], // llvm-cpu for the host
  iree_run_module_flags: ['--device=local-task'],
  skip_compile_tests: [],   // nothing skipped
  skip_run_tests: [],
  expected_compile_failures: [
    \"stale\", // fixed upstream
  ],
  expected_run_failures: [],
  /* trailing block comment */
}}
",
        flags.join("\n")
    );
    write(&config, &original);
    let (root_arg, config_arg) = (root.display().to_string(), config.display().to_string());

    let (json, _) = sb.test(
        &[&root_arg, "--suite-config", &config_arg, "--update-xfails"],
        1,
    );
    expect_outcomes(
        &json,
        &[
            ("pass [cpu_update]", "pass"),
            ("broken_compile [cpu_update]", "fail"),
            ("broken_run [cpu_update]", "fail"),
            ("stale [cpu_update]", "xpass"),
        ],
    );
    let updated = std::fs::read_to_string(&config).unwrap();
    eprintln!("updated config:\n{updated}");
    assert_eq!(
        json5_list(&updated, "expected_compile_failures"),
        ["broken_compile"]
    );
    assert_eq!(
        json5_list(&updated, "expected_run_failures"),
        ["broken_run"]
    );
    // Everything else is kept, comments included, in order.
    let kept = [
        "// Suite config for the update test.",
        "// the name shown in test ids",
        "config_name: \"cpu_update\"",
        "iree_compile_flags: [",
        "\"--iree-llvmcpu-target-cpu=host\",",
        "], // llvm-cpu for the host",
        "iree_run_module_flags: ['--device=local-task'],",
        "skip_compile_tests: [],   // nothing skipped",
        "skip_run_tests: [],",
        "expected_compile_failures:",
        "expected_run_failures:",
        "/* trailing block comment */",
    ];
    let mut at = 0;
    for piece in kept {
        let found = updated[at..]
            .find(piece)
            .unwrap_or_else(|| panic!("{piece:?} missing or out of order in\n{updated}"));
        at += found + piece.len();
    }

    // The updated lists describe the suite: a rerun succeeds.
    let (json, _) = sb.test(&[&root_arg, "--suite-config", &config_arg], 0);
    expect_outcomes(
        &json,
        &[
            ("pass [cpu_update]", "pass"),
            ("broken_compile [cpu_update]", "xfail"),
            ("broken_run [cpu_update]", "xfail"),
            ("stale [cpu_update]", "pass"),
        ],
    );
}

/// `--update-xfails` changes only the entries of cases whose step ran: a
/// partial run (`-k`, `--skip-all-runs`) keeps the others' entries.
#[test]
fn update_xfails_keeps_entries_of_cases_that_did_not_run() {
    let sb = Sandbox::new();
    let root = sb.root().join("its");
    layout_case(&root, "broken_compile", BAD_MLIR, GOOD_FLAGS);
    layout_case(&root, "broken_run", &add4(), WRONG_FLAGS);
    layout_case(&root, "fixed", &add4(), GOOD_FLAGS);
    let config = sb.root().join("config.json");
    write(
        &config,
        &config_json(
            "cfg",
            "local-task",
            &[
                ("expected_compile_failures", &["broken_compile"]),
                ("expected_run_failures", &["broken_run", "fixed"]),
            ],
        ),
    );
    let (root_arg, config_arg) = (root.display().to_string(), config.display().to_string());
    let lists = || {
        let text = std::fs::read_to_string(&config).unwrap();
        (
            json5_list(&text, "expected_compile_failures"),
            json5_list(&text, "expected_run_failures"),
        )
    };

    // No run step ran: the run list stays as it was.
    let base = [root_arg.as_str(), "--suite-config", &config_arg];
    let skip_runs = [&base[..], &["--skip-all-runs", "--update-xfails"]].concat();
    let (json, _) = sb.test(&skip_runs, 0);
    expect_outcomes(
        &json,
        &[
            ("broken_compile [cfg]", "xfail"),
            ("broken_run [cfg]", "pass"),
            ("fixed [cfg]", "pass"),
        ],
    );
    assert_eq!(
        lists(),
        (
            vec!["broken_compile".into()],
            vec!["broken_run".into(), "fixed".into()]
        )
    );

    // Only `fixed` ran: it leaves the run list, the others stay listed.
    let one = [&base[..], &["-k", "fixed", "--update-xfails"]].concat();
    let (json, _) = sb.test(&one, 1);
    expect_outcomes(&json, &[("fixed [cfg]", "xpass")]);
    assert_eq!(
        lists(),
        (vec!["broken_compile".into()], vec!["broken_run".into()])
    );

    // The lists still describe the suite: a full run succeeds.
    let (json, _) = sb.test(&base, 0);
    expect_outcomes(
        &json,
        &[
            ("broken_compile [cfg]", "xfail"),
            ("broken_run [cfg]", "xfail"),
            ("fixed [cfg]", "pass"),
        ],
    );
}

// ---------------------------------------------------------------------------
// 4. JUnit XML

#[test]
fn junit_has_a_suite_per_config_and_a_case_per_step() {
    let sb = Sandbox::new();
    let root = sb.root().join("its");
    layout_case(&root, "pass", &add4(), GOOD_FLAGS);
    layout_case(&root, "compile_fail", BAD_MLIR, GOOD_FLAGS);
    layout_case(&root, "run_mismatch", &add4(), WRONG_FLAGS);
    let cfg_a = sb.root().join("a.json");
    write(
        &cfg_a,
        &config_json(
            "cfg_a",
            "local-task",
            &[
                ("expected_compile_failures", &["compile_fail"]),
                ("expected_run_failures", &["run_mismatch"]),
            ],
        ),
    );
    let cfg_b = sb.root().join("b.json");
    write(&cfg_b, &config_json("cfg_b", "local-sync", &[]));
    let xml_path = sb.root().join("out.xml");
    let args: Vec<String> = vec![
        root.display().to_string(),
        "--suite-config".into(),
        cfg_a.display().to_string(),
        "--suite-config".into(),
        cfg_b.display().to_string(),
        "--junit".into(),
        xml_path.display().to_string(),
    ];
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    let (json, _) = sb.test(&args, 1);
    expect_outcomes(
        &json,
        &[
            ("pass [cfg_a]", "pass"),
            ("compile_fail [cfg_a]", "xfail"),
            ("run_mismatch [cfg_a]", "xfail"),
            ("pass [cfg_b]", "pass"),
            ("compile_fail [cfg_b]", "fail"),
            ("run_mismatch [cfg_b]", "fail"),
        ],
    );

    let xml = std::fs::read_to_string(&xml_path).expect("junit written");
    eprintln!("{xml}");
    assert!(xml.trim_start().starts_with("<?xml"), "{xml}");
    let suites = junit_suites(&xml);
    let names: Vec<&str> = suites.iter().map(|(n, _)| n.as_str()).collect();
    assert_eq!(names, ["cfg_a", "cfg_b"]);
    for (name, cases) in &suites {
        let got: BTreeSet<(String, String)> = cases
            .iter()
            .map(|c| (c.classname.clone(), c.name.clone()))
            .collect();
        let want: BTreeSet<(String, String)> = ["pass", "compile_fail", "run_mismatch"]
            .iter()
            .flat_map(|c| {
                ["compile", "run"]
                    .iter()
                    .map(move |s| (c.to_string(), s.to_string()))
            })
            .collect();
        assert_eq!(got, want, "testcases of {name}");
        assert_eq!(cases.len(), 6, "{name}: {cases:#?}");
    }
    let (_, a) = &suites[0];
    let (_, b) = &suites[1];
    // XFAIL steps are not failures; the reason goes to system-out.
    assert!(a.iter().all(|c| !c.failed()), "{a:#?}");
    let xfail_run = jcase(a, "run_mismatch", "run");
    assert!(
        xfail_run.body.contains("<system-out>") && xfail_run.body.contains("XFAIL"),
        "{xfail_run:#?}"
    );
    assert!(jcase(a, "compile_fail", "compile").body.contains("XFAIL"));
    assert!(jcase(a, "compile_fail", "run").skipped());
    // Real failures carry the command and the output tail.
    let bin = iree_bin().display().to_string();
    let failures: Vec<&JCase> = b.iter().filter(|c| c.failed()).collect();
    assert_eq!(failures.len(), 2, "{b:#?}");
    let cf = jcase(b, "compile_fail", "compile");
    assert!(cf.failed());
    assert!(
        cf.body.contains(&format!(
            "$ cd {} && {bin}/iree-compile",
            root.join("compile_fail").display()
        )),
        "{cf:#?}"
    );
    assert!(cf.body.contains("error:"), "{cf:#?}");
    assert!(jcase(b, "compile_fail", "run").skipped());
    let rm = jcase(b, "run_mismatch", "run");
    assert!(rm.failed());
    assert!(
        rm.body.contains(&format!(
            "$ cd {} && {bin}/iree-run-module",
            root.join("run_mismatch").display()
        )),
        "{rm:#?}"
    );
    assert!(rm.body.contains("[FAILED]"), "{rm:#?}");
    assert!(!jcase(b, "run_mismatch", "compile").failed());
    assert!(!jcase(b, "pass", "compile").failed() && !jcase(b, "pass", "run").failed());
    assert_eq!(xml.matches("<failure").count(), 2);
}

// ---------------------------------------------------------------------------
// 5. Markers, keywords and targets

#[test]
fn markers_keywords_and_targets_select_tests() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let mut text = String::from("[suite]\nname = \"sel\"\nmarkers = [\"presubmit\"]\n\n");
    for (name, markers) in [
        ("mm_f32", "\"matmul\", \"f32\""),
        ("mm_f16", "\"matmul\", \"f16\""),
        ("conv_f32", "\"conv\", \"f32\""),
        ("attn", "\"matmul\", \"softmax\", \"f32\""),
        ("plain", ""),
    ] {
        text.push_str(&native_add_test(
            name,
            "add.mlir",
            "11 22 33 44",
            &format!("markers = [{markers}]"),
        ));
    }
    write(&dir.join("sel.suite.toml"), &text);
    let its = sb.root().join("its");
    layout_case(&its, "layout_add", &add4(), GOOD_FLAGS);
    let d = dir.display().to_string();
    let ids = |names: &[&str], target: &str| -> BTreeSet<String> {
        names
            .iter()
            .map(|n| format!("sel/{n} [{target}]"))
            .collect()
    };
    let all = ["mm_f32", "mm_f16", "conv_f32", "attn", "plain"];

    assert_eq!(sb.list(&[&d]), ids(&all, "cpu"));
    assert_eq!(
        sb.list(&[&d, "-m", "matmul and not f16"]),
        ids(&["mm_f32", "attn"], "cpu")
    );
    assert_eq!(
        sb.list(&[&d, "-m", "(conv or softmax) and f32"]),
        ids(&["conv_f32", "attn"], "cpu")
    );
    assert_eq!(
        sb.list(&[&d, "-m", "not matmul"]),
        ids(&["conv_f32", "plain"], "cpu")
    );
    // Suite markers, the suite name and the target name are markers too.
    assert_eq!(sb.list(&[&d, "-m", "presubmit"]), ids(&all, "cpu"));
    assert_eq!(sb.list(&[&d, "-m", "sel and cpu"]), ids(&all, "cpu"));
    assert!(sb.list(&[&d, "-m", "nosuchmarker"]).is_empty());
    // -k: a substring of the id.
    assert_eq!(
        sb.list(&[&d, "-k", "mm_"]),
        ids(&["mm_f32", "mm_f16"], "cpu")
    );
    assert_eq!(sb.list(&[&d, "-k", "sel/attn ["]), ids(&["attn"], "cpu"));
    assert_eq!(
        sb.list(&[&d, "-k", "f32", "-m", "matmul"]),
        ids(&["mm_f32"], "cpu")
    );

    // Targets multiply native tests.
    assert_eq!(
        sb.list(&[&d, "--target", "cpu-sync"]),
        ids(&all, "cpu-sync")
    );
    let both = sb.list(&[&d, "--target", "cpu", "--target", "cpu-sync"]);
    let mut want = ids(&all, "cpu");
    want.extend(ids(&all, "cpu-sync"));
    assert_eq!(both, want);
    assert_eq!(
        sb.list(&[
            &d,
            "--target",
            "cpu",
            "--target",
            "cpu-sync",
            "-m",
            "cpu-sync and matmul and not f16"
        ]),
        ids(&["mm_f32", "attn"], "cpu-sync")
    );

    // iree-test-suites cases carry their config name.
    let config = sb.root().join("cfg.json");
    write(&config, &config_json("cfg_sel", "local-task", &[]));
    let (its_arg, config_arg) = (its.display().to_string(), config.display().to_string());
    let mixed = sb.list(&[&d, &its_arg, "--suite-config", &config_arg]);
    assert!(mixed.contains("layout_add [cfg_sel]"), "{mixed:?}");
    assert_eq!(mixed.len(), 6);
    assert_eq!(
        sb.list(&[&d, &its_arg, "--suite-config", &config_arg, "-m", "cfg_sel"]),
        BTreeSet::from(["layout_add [cfg_sel]".to_string()])
    );

    // Usage errors.
    let ran = sb.run(&["test", &d, "--list", "-m", "a and ("]);
    ran.expect(2, "bad marker expression");
    assert!(ran.stderr.contains("a and ("), "{}", ran.stderr);
    let ran = sb.run(&["test", &d, "--list", "--target", "gpu"]);
    ran.expect(2, "unknown target");
    assert!(ran.stderr.contains("gpu"), "{}", ran.stderr);
    assert!(
        ran.stderr.contains("cpu") && ran.stderr.contains("cpu-sync"),
        "the error names the known targets: {}",
        ran.stderr
    );
    let ran = sb.run(&["test", &d, "-j", "2", "--target", "gpu"]);
    ran.expect(2, "unknown target without --list");
}

// ---------------------------------------------------------------------------
// 6. Sharding

#[test]
fn shards_partition_the_tests() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let mut text = String::from("[suite]\nname = \"sh\"\n\n");
    for i in 0..12 {
        text.push_str(&native_add_test(
            &format!("t{i:02}"),
            "add.mlir",
            "11 22 33 44",
            "",
        ));
    }
    let suite = dir.join("sh.suite.toml");
    write(&suite, &text);
    let d = dir.display().to_string();
    let targets = ["--target", "cpu", "--target", "cpu-sync"];
    let with = |extra: &[&str]| {
        let mut args = vec![d.as_str()];
        args.extend_from_slice(&targets);
        args.extend_from_slice(extra);
        sb.list(&args)
    };
    let all = with(&[]);
    assert_eq!(all.len(), 24);
    let shards: Vec<BTreeSet<String>> = (1..=3)
        .map(|i| with(&["--shard", &format!("{i}/3")]))
        .collect();
    let mut union = BTreeSet::new();
    for (i, s) in shards.iter().enumerate() {
        for (j, t) in shards.iter().enumerate() {
            if i < j {
                assert!(s.is_disjoint(t), "shards {} and {} overlap", i + 1, j + 1);
            }
        }
        union.extend(s.iter().cloned());
    }
    assert_eq!(union, all);
    assert!(
        shards.iter().filter(|s| !s.is_empty()).count() >= 2,
        "{shards:?}"
    );
    // Deterministic, and stable when a test is added.
    assert_eq!(with(&["--shard", "2/3"]), shards[1]);
    text.push_str(&native_add_test("t_new", "add.mlir", "11 22 33 44", ""));
    write(&suite, &text);
    for (i, before) in shards.iter().enumerate() {
        let after = with(&["--shard", &format!("{}/3", i + 1)]);
        let old: BTreeSet<String> = after.intersection(&all).cloned().collect();
        assert_eq!(&old, before, "shard {} moved existing tests", i + 1);
    }
    // Out of range.
    for bad in ["4/3", "0/3", "x"] {
        let ran = sb.run(&["test", &d, "--list", "--shard", bad]);
        ran.expect(2, &format!("--shard {bad}"));
        assert!(ran.stderr.contains("--shard"), "{}", ran.stderr);
    }
}

// ---------------------------------------------------------------------------
// 7. --last-failed

#[test]
fn last_failed_reruns_only_the_failures() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let suite_text = |bad_expected: &str| {
        let mut text = String::from("[suite]\nname = \"lf\"\n\n");
        text.push_str(&native_add_test("ok1", "add.mlir", "11 22 33 44", ""));
        text.push_str(&native_add_test("ok2", "add.mlir", "11 22 33 44", ""));
        text.push_str(&native_add_test("flaky", "add.mlir", bad_expected, ""));
        text
    };
    let suite = dir.join("lf.suite.toml");
    write(&suite, &suite_text("11 22 33 45"));
    let d = dir.display().to_string();

    let (json, _) = sb.test(&[&d], 1);
    expect_outcomes(
        &json,
        &[
            ("lf/ok1 [cpu]", "pass"),
            ("lf/ok2 [cpu]", "pass"),
            ("lf/flaky [cpu]", "fail"),
        ],
    );
    assert_eq!(json["changes"]["newly_failing"], serde_json::json!([]));
    assert_eq!(
        sb.list(&[&d, "--last-failed"]),
        BTreeSet::from(["lf/flaky [cpu]".to_string()])
    );

    // Fix it: --last-failed runs just that test, which now passes.
    write(&suite, &suite_text("11 22 33 44"));
    let (json, _) = sb.test(&[&d, "--last-failed"], 0);
    expect_outcomes(&json, &[("lf/flaky [cpu]", "pass")]);
    assert_eq!(
        json["changes"]["newly_passing"],
        serde_json::json!(["lf/flaky [cpu]"])
    );

    // No failures recorded: everything runs.
    let (json, ran) = sb.test(&[&d, "--last-failed"], 0);
    assert!(
        ran.stderr.contains("no failures recorded"),
        "{}",
        ran.stderr
    );
    expect_outcomes(
        &json,
        &[
            ("lf/ok1 [cpu]", "pass"),
            ("lf/ok2 [cpu]", "pass"),
            ("lf/flaky [cpu]", "pass"),
        ],
    );
}

// ---------------------------------------------------------------------------
// 8. Two runners, one cache

#[test]
fn concurrent_runners_share_the_cache_and_compile_each_module_once() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    let distinct = 5;
    distinct_adds_suite(&dir, distinct);
    let d = dir.display().to_string();
    let mut children = Vec::new();
    let mut jsons = Vec::new();
    for who in ["a", "b"] {
        let cwd = sb.root().join(format!("work-{who}"));
        std::fs::create_dir_all(&cwd).unwrap();
        std::fs::write(cwd.join("lockstep.toml"), "").unwrap();
        let json = sb.root().join(format!("{who}.json"));
        let args = [
            "test",
            &d,
            "--target",
            "cpu",
            "--target",
            "cpu-sync",
            "-j",
            "2",
            "--json",
            &json.display().to_string(),
        ]
        .map(|s| s.to_string());
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let child = sb
            .command_in(&cwd, &sb.cache(), &args)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn lockstep");
        children.push((
            child,
            args.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ));
        jsons.push(json);
    }
    let mut compiles = Vec::new();
    for ((child, args), json) in children.into_iter().zip(&jsons) {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        let ran = Ran::from(child.wait_with_output().unwrap());
        ran.expect(0, &format!("concurrent runner {args:?}"));
        let v = read_json(json, &ran);
        assert_eq!(summary_count(&v, "total"), 2 * distinct as u64);
        assert_eq!(summary_count(&v, "pass"), 2 * distinct as u64);
        assert_eq!(
            summary_count(&v, "compiles_run") + summary_count(&v, "compiles_cached"),
            distinct as u64
        );
        compiles.push(summary_count(&v, "compiles_run"));
    }
    assert_eq!(
        compiles[0] + compiles[1],
        distinct as u64,
        "each distinct module compiled exactly once across both runners: {compiles:?}"
    );
    let entries = cache_entries(&sb.cache());
    assert_eq!(entries.len(), distinct, "{entries:#?}");
    for e in &entries {
        assert_valid_entry(e);
    }
    // No staging file is left behind.
    let leftovers = staging_leftovers(&sb.cache());
    assert!(leftovers.is_empty(), "{leftovers:#?}");
}

// ---------------------------------------------------------------------------
// 9. A corrupted cache entry

#[test]
fn a_truncated_cache_entry_is_rebuilt() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    distinct_adds_suite(&dir, 2);
    let d = dir.display().to_string();
    let (json, _) = sb.test(&[&d], 0);
    assert_eq!(summary_count(&json, "compiles_run"), 2);
    let entries = cache_entries(&sb.cache());
    assert_eq!(entries.len(), 2);
    let victim = module_of(&entries[0]);
    let len = std::fs::metadata(&victim).unwrap().len();
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&victim)
        .unwrap();
    file.set_len(len / 2).unwrap();
    drop(file);

    let (json, _) = sb.test(&[&d], 0);
    assert_eq!(summary_count(&json, "pass"), 2);
    assert_eq!(summary_count(&json, "compiles_run"), 1);
    assert_eq!(summary_count(&json, "compiles_cached"), 1);
    let entries = cache_entries(&sb.cache());
    assert_eq!(entries.len(), 2);
    for e in &entries {
        assert_valid_entry(e);
    }
    assert_eq!(std::fs::metadata(&victim).unwrap().len(), len);

    let (json, _) = sb.test(&[&d], 0);
    assert_eq!(summary_count(&json, "compiles_run"), 0);

    // --no-cache compiles everything and leaves the cache alone.
    let before: Vec<(PathBuf, String)> = entries
        .iter()
        .map(|e| (e.clone(), sha256_of(&module_of(e))))
        .collect();
    let (json, _) = sb.test(&[&d, "--no-cache"], 0);
    assert_eq!(summary_count(&json, "compiles_run"), 2);
    assert_eq!(summary_count(&json, "compiles_cached"), 0);
    for t in tests_of(&json) {
        assert_eq!(step(t, "compile")["cached"], false);
    }
    let after: Vec<(PathBuf, String)> = cache_entries(&sb.cache())
        .iter()
        .map(|e| (e.clone(), sha256_of(&module_of(e))))
        .collect();
    assert_eq!(before, after);
}

// ---------------------------------------------------------------------------
// 10. URL sources and sha256

#[test]
fn url_sources_are_verified_before_they_are_cached() {
    static BODY: OnceLock<String> = OnceLock::new();
    let body: &'static str = BODY.get_or_init(|| format!("// served\n{}", add4()));
    let (port, requests) = serve(body, 20);
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("local.mlir"), &add4());
    let body_file = sb.root().join("body.mlir");
    write(&body_file, body);
    let right = sha256_of(&body_file);
    let wrong = "0".repeat(64);
    let suite_text = |sha: &str| {
        let mut text = String::from("[suite]\nname = \"dl\"\n\n");
        text.push_str(&native_add_test("local", "local.mlir", "11 22 33 44", ""));
        text.push_str(&format!(
            "[[test]]
name = \"remote\"
url = \"http://127.0.0.1:{port}/add.mlir\"
sha256 = \"{sha}\"
inputs = [\"4xf32=1 2 3 4\", \"4xf32=10 20 30 40\"]
outputs = [\"4xf32=11 22 33 44\"]
"
        ));
        text
    };
    write(&dir.join("dl.suite.toml"), &suite_text(&wrong));
    let d = dir.display().to_string();
    let downloads = sb.cache().join("downloads");
    // The downloaded files (`downloads/KK/SHA256.data`), without seals and locks.
    let stored = || -> Vec<PathBuf> {
        let mut found = Vec::new();
        for shard in std::fs::read_dir(&downloads)
            .into_iter()
            .flatten()
            .flatten()
        {
            if shard.file_name().to_string_lossy().starts_with('.') {
                continue;
            }
            for file in std::fs::read_dir(shard.path())
                .into_iter()
                .flatten()
                .flatten()
            {
                if !file.file_name().to_string_lossy().ends_with(".json") {
                    found.push(file.path());
                }
            }
        }
        found
    };

    // Wrong sha256: that test fails, the others run, nothing is kept.
    let (json, _) = sb.test(&[&d], 1);
    expect_outcomes(
        &json,
        &[("dl/local [cpu]", "pass"), ("dl/remote [cpu]", "fail")],
    );
    let remote = test_by_id(&json, "dl/remote [cpu]");
    assert!(
        remote["reason"].as_str().unwrap().contains("sha256"),
        "{remote:#}"
    );
    assert_eq!(requests.load(Ordering::SeqCst), 1);
    assert!(stored().is_empty(), "{:?}", stored());

    // Right sha256: downloaded, verified, kept, and it passes.
    write(&dir.join("dl.suite.toml"), &suite_text(&right));
    let (json, _) = sb.test(&[&d], 0);
    expect_outcomes(
        &json,
        &[("dl/local [cpu]", "pass"), ("dl/remote [cpu]", "pass")],
    );
    assert_eq!(requests.load(Ordering::SeqCst), 2);
    let kept = downloads.join(&right[..2]).join(format!("{right}.data"));
    assert_eq!(stored(), vec![kept.clone()]);
    assert_eq!(std::fs::read_to_string(&kept).unwrap(), body);

    // Next run: served from the download cache, the server is not contacted.
    let (json, _) = sb.test(&[&d], 0);
    assert_eq!(summary_count(&json, "pass"), 2);
    assert_eq!(requests.load(Ordering::SeqCst), 2);
}

// ---------------------------------------------------------------------------
// 11. Bad input

#[test]
fn a_missing_input_file_fails_only_its_test() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let mut text = String::from("[suite]\nname = \"bad\"\n\n");
    text.push_str(&native_add_test("good", "add.mlir", "11 22 33 44", ""));
    text.push_str(
        "[[test]]
name = \"nofile\"
source = \"add.mlir\"
inputs = [\"@data/nope.npy\", \"4xf32=10 20 30 40\"]
outputs = [\"4xf32=11 22 33 44\"]
",
    );
    write(&dir.join("bad.suite.toml"), &text);
    let d = dir.display().to_string();
    let (json, _) = sb.test(&[&d], 1);
    expect_outcomes(
        &json,
        &[("bad/good [cpu]", "pass"), ("bad/nofile [cpu]", "fail")],
    );
    let t = test_by_id(&json, "bad/nofile [cpu]");
    assert!(
        t["reason"].as_str().unwrap().contains("missing input file"),
        "{t:#}"
    );
    assert!(t["reason"].as_str().unwrap().contains("nope.npy"), "{t:#}");
    assert_eq!(step(t, "run")["status"], "failed");
}

#[test]
fn malformed_suite_and_config_files_stop_the_run() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    // An unknown key on line 6.
    let suite = dir.join("typo.suite.toml");
    write(
        &suite,
        "[suite]
name = \"typo\"

[[test]]
name = \"t\"
colour = \"red\"
source = \"add.mlir\"
",
    );
    let d = dir.display().to_string();
    let ran = sb.run(&["test", &d, "-j", "2"]);
    ran.expect(2, "unknown key in a suite file");
    assert!(
        ran.stderr.contains(&format!("{}:6:", suite.display())),
        "names file:line: {}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("colour"),
        "names the key: {}",
        ran.stderr
    );
    assert!(
        cache_entries(&sb.cache()).is_empty(),
        "nothing ran before the error"
    );

    // A JSON5 config with a syntax error.
    let its = sb.root().join("its");
    layout_case(&its, "pass", &add4(), GOOD_FLAGS);
    let its_arg = its.display().to_string();
    let config = sb.root().join("broken.json5");
    write(
        &config,
        "{\n  config_name: \"broken\",\n  iree_compile_flags: [\n}\n",
    );
    let config_arg = config.display().to_string();
    let ran = sb.run(&["test", &its_arg, "--suite-config", &config_arg, "-j", "2"]);
    ran.expect(2, "malformed JSON5 config");
    assert!(
        ran.stderr.contains(&format!("{config_arg}:4:")),
        "names the file and line: {}",
        ran.stderr
    );

    // A JSON5 config with an unknown key.
    let config = sb.root().join("unknown.json5");
    write(
        &config,
        "{\n  config_name: \"unknown\",\n  expected_compile_failure: [],\n}\n",
    );
    let config_arg = config.display().to_string();
    let ran = sb.run(&["test", &its_arg, "--suite-config", &config_arg, "-j", "2"]);
    ran.expect(2, "unknown key in a config");
    assert!(
        ran.stderr.contains(&format!("{config_arg}:3:")),
        "names the file and line: {}",
        ran.stderr
    );
    assert!(
        ran.stderr.contains("expected_compile_failure"),
        "names the key: {}",
        ran.stderr
    );
    assert!(cache_entries(&sb.cache()).is_empty());
}

// ---------------------------------------------------------------------------
// 12. Timeouts and crashes (fake tools)

fn fake_tools(dir: &Path) {
    std::fs::create_dir_all(dir).unwrap();
    let compile = r#"#!/bin/sh
if [ "$1" = "--version" ]; then
  echo "IREE (https://iree.dev):"
  echo "  IREE compiler version 0.0.0-fake @ 0000000"
  exit 0
fi
case "$1" in
  *crash*) kill -SEGV $$ ;;
esac
out=""
while [ $# -gt 0 ]; do
  if [ "$1" = "-o" ]; then out="$2"; shift; fi
  shift
done
echo "fake module" > "$out"
exit 0
"#;
    let run = "#!/bin/sh\necho running\nsleep 600\necho done\n";
    for (name, text) in [("iree-compile", compile), ("iree-run-module", run)] {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
}

#[test]
fn timeouts_and_compiler_crashes_are_reported_on_their_tests() {
    let sb = Sandbox::new();
    let bin = sb.root().join("fake-bin");
    fake_tools(&bin);
    let dir = sb.root().join("native");
    write(&dir.join("slow.mlir"), &add4());
    // Distinct bytes: the cache key covers the source's content, not its name.
    write(&dir.join("crash.mlir"), &format!("// crash\n{}", add4()));
    let mut text = String::from("[suite]\nname = \"fake\"\n\n");
    text.push_str(&native_add_test("slow", "slow.mlir", "11 22 33 44", ""));
    text.push_str(&native_add_test("crash", "crash.mlir", "11 22 33 44", ""));
    write(&dir.join("fake.suite.toml"), &text);
    let (d, b) = (dir.display().to_string(), bin.display().to_string());

    let started = Instant::now();
    let (json, _) = sb.test(&[&d, "--iree-bin", &b, "--timeout", "1"], 1);
    let elapsed = started.elapsed();
    // Far below the tool's own 600 s, whatever the load: the timeout
    // stopped it.
    assert!(
        elapsed < Duration::from_secs(300),
        "the timeout did not stop the run: {elapsed:?}"
    );
    expect_outcomes(
        &json,
        &[("fake/slow [cpu]", "fail"), ("fake/crash [cpu]", "fail")],
    );
    let slow = test_by_id(&json, "fake/slow [cpu]");
    assert!(
        slow["reason"].as_str().unwrap().contains("timed out"),
        "{slow:#}"
    );
    assert_eq!(step(slow, "compile")["status"], "passed");
    assert_eq!(step(slow, "run")["status"], "failed");
    let crash = test_by_id(&json, "fake/crash [cpu]");
    assert!(
        crash["reason"].as_str().unwrap().contains("crashed"),
        "{crash:#}"
    );
    assert_eq!(step(crash, "compile")["status"], "failed");
    assert_eq!(step(crash, "run")["status"], "skipped");
    assert_eq!(summary_count(&json, "compiles_run"), 2);

    // Crashes are not cached (the good compile is).
    let (json, _) = sb.test(&[&d, "--iree-bin", &b, "--timeout", "1"], 1);
    assert_eq!(summary_count(&json, "compiles_run"), 1);
    assert_eq!(summary_count(&json, "compiles_cached"), 1);
    let crash = test_by_id(&json, "fake/crash [cpu]");
    assert!(crash["reason"].as_str().unwrap().contains("crashed"));
    assert_eq!(step(crash, "compile")["cached"], false);
}

// ---------------------------------------------------------------------------
// 13. Benchmark goldens

/// Without iree-benchmark-module the benchmark step fails on its test; the
/// run still finishes and writes its report.
#[test]
fn a_missing_benchmark_tool_fails_the_step_not_the_run() {
    let sb = Sandbox::new();
    let bin = sb.root().join("no-bench-bin");
    std::fs::create_dir_all(&bin).unwrap();
    for tool in ["iree-compile", "iree-run-module"] {
        std::os::unix::fs::symlink(iree_bin().join(tool), bin.join(tool)).unwrap();
    }
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let mut text = String::from("[suite]\nname = \"bench\"\n\n");
    text.push_str(&native_add_test(
        "timed",
        "add.mlir",
        "11 22 33 44",
        "[test.benchmark]\ntime-ms = 10000.0\n",
    ));
    text.push_str(&native_add_test("plain", "add.mlir", "11 22 33 44", ""));
    write(&dir.join("bench.suite.toml"), &text);
    let (d, b) = (dir.display().to_string(), bin.display().to_string());
    let (json, _) = sb.test(&[&d, "--iree-bin", &b], 1);
    expect_outcomes(
        &json,
        &[("bench/timed [cpu]", "fail"), ("bench/plain [cpu]", "pass")],
    );
    let t = test_by_id(&json, "bench/timed [cpu]");
    assert_eq!(step(t, "run")["status"], "passed");
    let bench = step(t, "benchmark");
    assert_eq!(bench["status"], "failed", "{t:#}");
    let message = bench["message"].as_str().unwrap();
    assert!(message.contains("iree-benchmark-module"), "{message}");
    assert!(
        t["reason"].as_str().unwrap().starts_with("benchmark: "),
        "{t:#}"
    );
}

#[test]
fn benchmark_goldens_are_checked() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let mut text = String::from("[suite]\nname = \"bench\"\n\n");
    text.push_str(&native_add_test(
        "impossible",
        "add.mlir",
        "11 22 33 44",
        "[test.benchmark]\ntime-ms = 0.000001\n",
    ));
    text.push_str(&native_add_test(
        "generous",
        "add.mlir",
        "11 22 33 44",
        "[test.benchmark]\ntime-ms = 10000.0\ntolerance = 2.0\ndispatch-count = 100\nvmfb-size = 100000000\n",
    ));
    text.push_str(&native_add_test(
        "tiny_vmfb",
        "add.mlir",
        "11 22 33 44",
        "[test.benchmark]\nvmfb-size = 1\n",
    ));
    write(&dir.join("bench.suite.toml"), &text);
    let d = dir.display().to_string();
    let (json, _) = sb.test(&[&d], 1);
    expect_outcomes(
        &json,
        &[
            ("bench/impossible [cpu]", "fail"),
            ("bench/generous [cpu]", "pass"),
            ("bench/tiny_vmfb [cpu]", "fail"),
        ],
    );

    let t = test_by_id(&json, "bench/impossible [cpu]");
    let reason = t["reason"].as_str().unwrap();
    assert!(
        reason.contains("time") && reason.contains("golden") && reason.contains("0.000001"),
        "{t:#}"
    );
    assert_eq!(step(t, "run")["status"], "passed");
    let b = step(t, "benchmark");
    assert_eq!(b["status"], "failed");
    assert!(b["metrics"]["time_ms"].as_f64().unwrap() > 0.000001);
    assert_eq!(b["metrics"]["golden_time_ms"].as_f64(), Some(0.000001));
    let slower: Vec<&str> = json["changes"]["slower"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| s["id"].as_str().unwrap())
        .collect();
    assert_eq!(slower, ["bench/impossible [cpu]"]);

    let t = test_by_id(&json, "bench/generous [cpu]");
    let b = step(t, "benchmark");
    assert_eq!(b["status"], "passed", "{b:#}");
    let m = &b["metrics"];
    assert!(m["time_ms"].as_f64().unwrap() > 0.0, "{m:#}");
    assert!(m["dispatch_count"].as_u64().unwrap() >= 1, "{m:#}");
    assert!(m["vmfb_size"].as_u64().unwrap() > 0, "{m:#}");
    assert_eq!(m["golden_time_ms"].as_f64(), Some(10000.0));

    let t = test_by_id(&json, "bench/tiny_vmfb [cpu]");
    let reason = t["reason"].as_str().unwrap();
    assert!(reason.contains("vmfb size"), "{t:#}");
}

// ---------------------------------------------------------------------------
// 14. Logs and reproducible commands

/// `cd DIR && /abs/tool ...`: the directory and the tool.
fn split_command(command: &str) -> (String, String) {
    let rest = command
        .strip_prefix("cd ")
        .unwrap_or_else(|| panic!("{command:?} does not start with `cd `"));
    let (dir, rest) = rest
        .split_once(" && ")
        .unwrap_or_else(|| panic!("{command:?} has no ` && `"));
    let tool = rest.split(' ').next().unwrap().to_string();
    (dir.trim_matches('\'').to_string(), tool)
}

#[test]
fn step_logs_start_with_the_exact_command() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let mut text = String::from("[suite]\nname = \"logs\"\n\n");
    text.push_str(&native_add_test(
        "bench",
        "add.mlir",
        "11 22 33 44",
        "[test.benchmark]\ntime-ms = 10000.0\n",
    ));
    write(&dir.join("logs.suite.toml"), &text);
    let its = sb.root().join("its");
    layout_case(&its, "pass", &add4(), GOOD_FLAGS);
    layout_case(&its, "compile_fail", BAD_MLIR, GOOD_FLAGS);
    layout_case(&its, "run_mismatch", &add4(), WRONG_FLAGS);
    let (d, i) = (dir.display().to_string(), its.display().to_string());
    let (json, _) = sb.test(&[&d, &i], 1);
    let bin = iree_bin();
    let mut seen = BTreeSet::new();
    for t in tests_of(&json) {
        for s in t["steps"].as_array().unwrap() {
            if s["status"] == "skipped" {
                continue;
            }
            let kind = s["kind"].as_str().unwrap();
            let command = s["command"].as_str().unwrap();
            let (cwd, tool) = split_command(command);
            assert!(Path::new(&cwd).is_absolute() && Path::new(&cwd).is_dir());
            let want_tool = match kind {
                "compile" => "iree-compile",
                "run" => "iree-run-module",
                _ => "iree-benchmark-module",
            };
            assert_eq!(tool, bin.join(want_tool).display().to_string(), "{command}");
            let log = s["log"]
                .as_str()
                .unwrap_or_else(|| panic!("{} {kind} has no log: {s:#}", t["id"]));
            let text = std::fs::read_to_string(log).unwrap();
            let first = text.lines().next().unwrap_or("");
            assert_eq!(
                first,
                format!("$ {command}"),
                "{} {kind}: the log {log} must start with the command",
                t["id"]
            );
            seen.insert(kind.to_string());
        }
    }
    assert_eq!(
        seen,
        BTreeSet::from(["compile", "run", "benchmark"].map(String::from))
    );
}

#[test]
fn step_commands_are_reproducible_from_a_shell() {
    let sb = Sandbox::new();
    let its = sb.root().join("its");
    layout_case(&its, "pass", &add4(), GOOD_FLAGS);
    let i = its.display().to_string();
    let (json, _) = sb.test(&[&i], 0);
    let t = test_by_id(&json, "pass [cpu]");
    let sh = |command: &str| {
        let out = Command::new("sh")
            .args(["-c", command])
            .current_dir(sb.root())
            .stdin(Stdio::null())
            .output()
            .unwrap();
        (
            out.status.code(),
            format!(
                "{}{}",
                String::from_utf8_lossy(&out.stdout),
                String::from_utf8_lossy(&out.stderr)
            ),
        )
    };
    let run = step(t, "run")["command"].as_str().unwrap();
    let (code, output) = sh(run);
    assert_eq!(code, Some(0), "$ {run}\n{output}");
    assert!(output.contains("[SUCCESS]"), "{output}");

    let compile = step(t, "compile");
    assert_eq!(compile["cached"], false);
    let command = compile["command"].as_str().unwrap();
    let (code, output) = sh(command);
    assert_eq!(
        code,
        Some(0),
        "the compile command from the JSON results must succeed from a shell:\n$ {command}\n{output}"
    );
    // A cached compile reports the same reproducible command.
    let (json, _) = sb.test(&[&i], 0);
    let cached = step(test_by_id(&json, "pass [cpu]"), "compile");
    assert_eq!(cached["cached"], true);
    let (code, output) = sh(cached["command"].as_str().unwrap());
    assert_eq!(code, Some(0), "{cached:#}\n{output}");
}

// ---------------------------------------------------------------------------
// 15. Hostile trees, names and values (issue 10)

/// A tree with every kind of link that used to hang discovery or list tests
/// many times: loops to itself, a link up, a link to `/`, one into /proc.
fn looping_tree(sb: &Sandbox) -> PathBuf {
    let s = sb.root().join("s");
    write(&s.join("add.mlir"), &add4());
    write(
        &s.join("adds.suite.toml"),
        &native_add_test("add", "add.mlir", "11 22 33 44", ""),
    );
    layout_case(&s.join("cases"), "pass", &add4(), GOOD_FLAGS);
    for (link, target) in [
        ("s/a", "."),
        ("s/b", "."),
        ("s/cases/up", ".."),
        ("s/root", "/"),
        ("s/proc", "/proc/self"),
    ] {
        std::os::unix::fs::symlink(target, sb.root().join(link)).unwrap();
    }
    s
}

#[test]
fn symbolic_link_loops_end_and_every_test_is_listed_once() {
    let sb = Sandbox::new();
    let s = looping_tree(&sb);
    let d = s.display().to_string();
    let ran = sb.run(&["test", "--list", &d]);
    ran.expect(0, "a tree of loops is listed");
    assert_eq!(
        ran.stdout.lines().filter(|l| !l.trim().is_empty()).count(),
        2,
        "each test once: {}",
        ran.stdout
    );
    assert_eq!(
        ran.listed(),
        ["adds/add [cpu]", "cases/pass [cpu]"]
            .map(String::from)
            .into()
    );
    for link in ["s/a", "s/b", "s/cases/up", "s/root", "s/proc"] {
        let skipped = ran
            .stderr
            .lines()
            .any(|l| l.starts_with("warning: skipped") && l.contains(link));
        assert!(skipped, "says it skipped {link}: {}", ran.stderr);
    }
    // And the tests in it run, once each.
    let (json, _) = sb.test(&[&d], 0);
    expect_outcomes(
        &json,
        &[("adds/add [cpu]", "pass"), ("cases/pass [cpu]", "pass")],
    );
}

#[test]
fn proc_self_as_a_test_path_is_refused_not_walked() {
    let sb = Sandbox::new();
    sb.p.write("lockstep.toml", "[test]\npaths = [\"/proc/self\"]\n");
    let ran = sb.run(&["test", "--list"]);
    ran.expect(2, "[test] paths = [\"/proc/self\"]");
    assert!(
        ran.stderr
            .contains("/proc/self is on the kernel's proc filesystem"),
        "{}",
        ran.stderr
    );
    let ran = sb.run(&["test", "--list", "/proc/self/fd"]);
    ran.expect(2, "/proc/self/fd as a PATH");
}

#[test]
fn a_tree_too_deep_is_refused_naming_it() {
    let sb = Sandbox::new();
    let mut deep = sb.root().join("deep");
    for _ in 0..70 {
        deep.push("d");
    }
    std::fs::create_dir_all(&deep).unwrap();
    let d = sb.root().join("deep").display().to_string();
    let ran = sb.run(&["test", "--list", &d]);
    ran.expect(2, "70 levels");
    assert!(
        ran.stderr.contains("levels deep, more than 64"),
        "{}",
        ran.stderr
    );
    assert!(ran.stderr.contains(&d), "names the root: {}", ran.stderr);
}

#[test]
fn a_fifo_named_like_a_suite_is_skipped_not_read() {
    let sb = Sandbox::new();
    let s = sb.root().join("s");
    write(&s.join("add.mlir"), &add4());
    write(
        &s.join("adds.suite.toml"),
        &native_add_test("add", "add.mlir", "11 22 33 44", ""),
    );
    let fifo = s.join("pipe.suite.toml");
    nix::unistd::mkfifo(&fifo, nix::sys::stat::Mode::S_IRWXU).unwrap();
    let d = s.display().to_string();
    let ran = sb.run(&["test", "--list", &d]);
    ran.expect(0, "a FIFO in the tree");
    assert_eq!(ran.listed(), ["adds/add [cpu]".to_string()].into());
    assert!(
        ran.stderr.contains("pipe.suite.toml: not a regular file"),
        "{}",
        ran.stderr
    );
    let f = fifo.display().to_string();
    let ran = sb.run(&["test", "--list", &f]);
    ran.expect(2, "a FIFO as the PATH");
    assert!(
        ran.stderr
            .contains("neither a directory nor a regular file"),
        "{}",
        ran.stderr
    );
}

#[test]
fn sources_and_inputs_that_are_not_files_say_what_they_are() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    std::fs::create_dir_all(dir.join("folder.mlir")).unwrap();
    std::fs::create_dir_all(dir.join("data/in.npy")).unwrap();
    let mut text = String::from("[suite]\nname = \"odd\"\n\n");
    text.push_str(&native_add_test("zero", "/dev/zero", "11 22 33 44", ""));
    text.push_str(&native_add_test("folder", "folder.mlir", "11 22 33 44", ""));
    text.push_str(
        "[[test]]\nname = \"input\"\nsource = \"add.mlir\"\n\
         inputs = [\"@data/in.npy\", \"4xf32=1 2 3 4\"]\noutputs = [\"4xf32=2 4 6 8\"]\n",
    );
    write(&dir.join("odd.suite.toml"), &text);
    let d = dir.display().to_string();
    let (json, _) = sb.test(&[&d], 1);
    let reason = |id: &str| {
        test_by_id(&json, id)["reason"]
            .as_str()
            .unwrap()
            .to_string()
    };
    assert!(
        reason("odd/zero [cpu]").contains("/dev/zero is not a regular file"),
        "{}",
        reason("odd/zero [cpu]")
    );
    assert!(reason("odd/folder [cpu]").contains("folder.mlir is a directory"));
    assert!(
        reason("odd/input [cpu]").contains("in.npy is a directory"),
        "{}",
        reason("odd/input [cpu]")
    );

    // Configs: a device and a directory are refused before anything runs.
    for (config, says) in [
        ("/dev/zero".to_string(), "/dev/zero is larger than"),
        (dir.display().to_string(), "is a directory"),
    ] {
        let ran = sb.run(&["test", "--list", &d, "--suite-config", &config]);
        ran.expect(2, &config);
        assert!(ran.stderr.contains(says), "{config}: {}", ran.stderr);
    }
}

#[test]
fn long_names_run_with_hashed_log_names() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let (suite, test) = ("s".repeat(128), "t".repeat(128));
    let mut text = format!("[suite]\nname = \"{suite}\"\n\n");
    // A wrong expected output: the run step fails and keeps its log.
    text.push_str(&native_add_test(&test, "add.mlir", "0 0 0 0", ""));
    write(&dir.join("long.suite.toml"), &text);
    // A case three directories of 200 bytes deep: its name cannot be refused.
    let long = "c".repeat(200);
    let cases = sb.root().join("cases");
    layout_case(&cases.join(&long).join(&long), &long, &add4(), GOOD_FLAGS);
    let (d, c) = (dir.display().to_string(), cases.display().to_string());
    let (json, _) = sb.test(&[&d, &c], 1);
    let native = test_by_id(&json, &format!("{suite}/{test} [cpu]"));
    assert_eq!(native["outcome"], "fail", "{native:#}");
    let case = test_by_id(&json, &format!("{long}/{long}/{long} [cpu]"));
    assert_eq!(case["outcome"], "pass", "{case:#}");
    for t in [native, case] {
        let log = PathBuf::from(step(t, "run")["log"].as_str().unwrap());
        let name = log.file_name().unwrap().len();
        assert!(
            name <= 120,
            "a short file name ({name} bytes): {}",
            log.display()
        );
        assert!(log.is_file(), "{}", log.display());
    }
}

#[test]
fn control_characters_in_names_are_escaped_or_refused() {
    let sb = Sandbox::new();
    let cases = sb.root().join("cases");
    layout_case(&cases, "bell\u{7}esc\u{1b}[31m", &add4(), GOOD_FLAGS);
    let c = cases.display().to_string();
    let ran = sb.run(&["test", "--list", &c]);
    ran.expect(0, "a case directory with control characters");
    assert!(!ran.stdout.contains('\u{1b}') && !ran.stdout.contains('\u{7}'));
    assert!(
        ran.stdout.contains("bell\\u{7}esc\\u{1b}[31m [cpu]"),
        "{}",
        ran.stdout
    );

    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    write(
        &dir.join("bad.suite.toml"),
        // TOML's own escape: the name holds a raw ESC once parsed.
        &native_add_test("red\\u001b[31m", "add.mlir", "11 22 33 44", ""),
    );
    let d = dir.display().to_string();
    let ran = sb.run(&["test", "--list", &d]);
    ran.expect(2, "a test name with an escape sequence");
    assert!(!ran.stderr.contains('\u{1b}'), "{}", ran.stderr);
    assert!(ran.stderr.contains("control character"), "{}", ran.stderr);
}

#[test]
fn bad_values_are_refused_before_anything_runs() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    let d = dir.display().to_string();
    let suite = dir.join("v.suite.toml");
    for (extra, says) in [
        (
            "tolerance = -inf",
            "`tolerance = -inf` must be a finite number",
        ),
        (
            "[test.benchmark]\ntime-ms = -inf",
            "`benchmark.time-ms = -inf`",
        ),
        (
            "[test.benchmark]\nrepetitions = 0",
            "`benchmark.repetitions = 0` must be 1 to 1000",
        ),
        (
            "[test.benchmark]\nmin-time-s = 1e30",
            "must be at most 3600",
        ),
        ("markers = [\"not\"]", "marker \"not\" of test `v`"),
        ("markers = [\"a b\"]", "can never be selected with -m"),
        (
            "[test.targets.cpu_sync]\nrun-flags = []",
            "did you mean `cpu-sync`?",
        ),
    ] {
        write(
            &suite,
            &native_add_test("v", "add.mlir", "11 22 33 44", extra),
        );
        let ran = sb.run(&["test", &d, "-j", "2"]);
        ran.expect(2, extra);
        assert!(ran.stderr.contains(says), "{extra}: {}", ran.stderr);
        assert!(
            ran.stderr.contains("v.suite.toml"),
            "names the file: {}",
            ran.stderr
        );
    }
    write(&suite, &native_add_test("v", "add.mlir", "11 22 33 44", ""));
    for (args, says) in [
        (vec!["-j", "0"], "-j 0"),
        (vec!["--timeout", "0"], "--timeout 0"),
        (vec!["--shard", "0/2"], "invalid --shard `0/2`"),
        (vec!["--shard", "3/2"], "invalid --shard `3/2`"),
        (vec!["--shard", "1/0"], "invalid --shard `1/0`"),
        (vec!["-m", "("], "expected a marker name"),
    ] {
        let mut all = vec!["test", d.as_str()];
        all.extend(args.iter().copied());
        let ran = sb.run(&all);
        ran.expect(2, &format!("{args:?}"));
        assert!(ran.stderr.contains(says), "{args:?}: {}", ran.stderr);
    }
    for (toml, says) in [
        (
            "[test.targets.\"gpu\\nx\"]\n",
            "invalid target name \"gpu\\nx\"",
        ),
        (
            "[test.targets.gpu]\nmarkers = [\"and\"]\n",
            "marker \"and\" of [test.targets.gpu]",
        ),
        ("[test]\nrun-timeout = \"0s\"\n", "[test] run-timeout"),
    ] {
        sb.p.write("lockstep.toml", toml);
        let ran = sb.run(&["test", &d]);
        ran.expect(2, toml);
        assert!(ran.stderr.contains(says), "{toml}: {}", ran.stderr);
        assert!(ran.stderr.contains("lockstep.toml"), "{}", ran.stderr);
    }
    sb.p.write("lockstep.toml", "");
    let config = sb.root().join("c.json");
    write(&config, "{\"config_name\": \"a\\nb\"}");
    let cfg = config.display().to_string();
    let ran = sb.run(&["test", &d, "--suite-config", &cfg]);
    ran.expect(2, "a config name with a newline");
    assert!(ran.stderr.contains("invalid config name"), "{}", ran.stderr);
    assert!(cache_entries(&sb.cache()).is_empty(), "nothing ran");
}

#[test]
fn a_huge_job_count_starts_only_the_workers_there_is_work_for() {
    let sb = Sandbox::new();
    let dir = sb.root().join("native");
    write(&dir.join("add.mlir"), &add4());
    write(
        &dir.join("one.suite.toml"),
        &native_add_test("add", "add.mlir", "11 22 33 44", ""),
    );
    let json = sb.root().join("huge-j.json");
    let (d, j) = (dir.display().to_string(), json.display().to_string());
    let ran = sb.run(&["test", &d, "-j", "18446744073709551615", "--json", &j]);
    ran.expect(0, "-j usize::MAX");
    let json = read_json(&json, &ran);
    expect_outcomes(&json, &[("one/add [cpu]", "pass")]);
}

#[test]
fn a_json_config_written_in_json5_runs_with_a_note() {
    let sb = Sandbox::new();
    let its = sb.root().join("its");
    layout_case(&its, "pass", &add4(), GOOD_FLAGS);
    let config = sb.root().join("cpu.json");
    let flags = CPU_COMPILE_FLAGS.map(|f| format!("'{f}'")).join(", ");
    write(
        &config,
        &format!(
            "// iree-test-suites style\n{{\n  config_name: 'cpu',\n  \
             iree_compile_flags: [{flags}],\n  iree_run_module_flags: ['--device=local-task',],\n}}\n"
        ),
    );
    let (i, c) = (its.display().to_string(), config.display().to_string());
    let (json, ran) = sb.test(&[&i, "--suite-config", &c], 0);
    expect_outcomes(&json, &[("pass [cpu]", "pass")]);
    assert!(
        ran.stderr.contains(&format!("{c} is JSON5, not JSON")),
        "{}",
        ran.stderr
    );
}

#[test]
fn update_xfails_writes_through_a_symbolic_link_and_refuses_what_it_cannot_rewrite() {
    let sb = Sandbox::new();
    let its = sb.root().join("its");
    layout_case(&its, "broken_run", &add4(), WRONG_FLAGS);
    let real = sb.root().join("configs/real.json");
    write(&real, &config_json("cpu", "local-task", &[]));
    let link = sb.root().join("config.json");
    std::os::unix::fs::symlink("configs/real.json", &link).unwrap();
    let (i, l) = (its.display().to_string(), link.display().to_string());
    sb.test(&[&i, "--suite-config", &l, "--update-xfails"], 1);
    assert!(
        link.symlink_metadata().unwrap().file_type().is_symlink(),
        "the link is kept"
    );
    assert_eq!(
        json5_list(
            &std::fs::read_to_string(&real).unwrap(),
            "expected_run_failures"
        ),
        vec!["broken_run".to_string()],
        "the file it names is updated"
    );
    // A config read from a process substitution cannot be rewritten: said
    // before anything runs.
    let mut cmd = Command::new("bash");
    cmd.arg("-c").arg(format!(
        "exec \"$0\" test {i} --update-xfails --suite-config <(cat {})",
        real.display()
    ));
    cmd.arg(env!("CARGO_BIN_EXE_lockstep"));
    sb.p.isolate(&mut cmd);
    let ran = Ran::from(crate::common::output(&mut cmd));
    ran.expect(2, "--update-xfails on a pipe");
    assert!(
        ran.stderr.contains("--update-xfails cannot rewrite"),
        "{}",
        ran.stderr
    );
}

/// `--list` shows each marker of a test once: the built-in `cpu` target's
/// marker is its name too (it printed `[cpu, cpu]`).
#[test]
fn list_shows_each_marker_once() {
    let sb = Sandbox::new();
    sb.p.add_suite(&[("add", "4xf32=11 22 33 44")]);
    for target in ["cpu", "cpu-sync"] {
        let ran = sb.run(&["test", "s", "--list", "--target", target]);
        ran.expect(0, "--list");
        let line = ran
            .stdout
            .lines()
            .find(|l| l.starts_with("adds/add "))
            .unwrap_or_else(|| panic!("listed: {}", ran.stdout));
        let markers: Vec<&str> = line
            .rsplit_once("  [")
            .and_then(|(_, m)| m.strip_suffix(']'))
            .unwrap_or_else(|| panic!("{line}"))
            .split(", ")
            .collect();
        let unique: BTreeSet<&str> = markers.iter().copied().collect();
        assert_eq!(unique.len(), markers.len(), "{line}");
        assert!(
            markers.contains(&"cpu") && markers.contains(&target),
            "{line}"
        );
    }
}

#[test]
fn an_unchanged_test_reads_its_remembered_pass_and_a_changed_one_runs_again() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44"), ("same", "11 22 33 44")]);
    let runs = |json: &serde_json::Value| -> Vec<(String, bool)> {
        json["tests"]
            .as_array()
            .unwrap()
            .iter()
            .map(|t| {
                let run = t["steps"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .find(|s| s["kind"] == "run")
                    .cloned()
                    .unwrap();
                (t["id"].as_str().unwrap().to_string(), run["cached"] == true)
            })
            .collect()
    };
    p.run(&["test", "s", "--json", "one.json"], 0);
    assert!(runs(&p.json("one.json")).iter().all(|(_, cached)| !cached));
    // Nothing changed: both runs are read, not run.
    p.run(&["test", "s", "--json", "two.json"], 0);
    assert!(runs(&p.json("two.json")).iter().all(|(_, cached)| *cached));
    // One expected output changes: that test runs again (and fails); the
    // other is still read.
    let suite = p.read("s/adds.suite.toml");
    let changed = suite.replacen("4xf32=11 22 33 44", "4xf32=11 22 33 45", 1);
    p.write("s/adds.suite.toml", &changed);
    p.run(&["test", "s", "--json", "three.json"], 1);
    let three = p.json("three.json");
    assert_eq!(
        runs(&three),
        [
            ("adds/add [cpu]".to_string(), false),
            ("adds/same [cpu]".to_string(), true)
        ]
    );
    assert_eq!(three["tests"][0]["outcome"], "fail");
    // A failure is never remembered; --no-cache runs everything.
    p.run(&["test", "s", "--json", "four.json"], 1);
    assert!(!runs(&p.json("four.json"))[0].1);
    p.run(&["test", "s", "--no-cache", "--json", "five.json"], 1);
    assert!(runs(&p.json("five.json")).iter().all(|(_, cached)| !cached));
}
