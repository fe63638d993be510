//! `lockstep test` on suites in iree-test-suites' torch_ops layout
//! (`<Class>/<case>/run_module_io.json` + `test.mlir` in the torch dialect),
//! with the real IREE tools: inputs generated from formulas, outputs compared
//! with numpy's allclose against expected outputs named by URL and served
//! from a loopback mirror (a machine that cannot reach the blob host),
//! benchmarks judged against the config's golden times, bad cases failing
//! alone, bad configs and mirrors refused before anything runs.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use serde_json::Value;

use crate::common::{expect, iree_bin, stderr, stdout, write, Project};

const BLOB: &str = "https://sharkpublic.blob.core.windows.net/sharkpublic/t/";

/// `A @ B` on N x N tensors of `ty` (f32, f16), as torch-mlir exports it.
fn matmul(n: usize, ty: &str) -> String {
    format!(
        "module @module {{
  func.func @main(%arg0: !torch.vtensor<[{n},{n}],{ty}>, %arg1: !torch.vtensor<[{n},{n}],{ty}>) -> !torch.vtensor<[{n},{n}],{ty}> {{
    %0 = torch.aten.matmul %arg0, %arg1 : !torch.vtensor<[{n},{n}],{ty}>, !torch.vtensor<[{n},{n}],{ty}> -> !torch.vtensor<[{n},{n}],{ty}>
    return %0 : !torch.vtensor<[{n},{n}],{ty}>
  }}
}}
"
    )
}

fn formula(n: usize, dtype: &str) -> String {
    format!(
        r#"{{"Formula": {{"shape": [{n}, {n}], "dtype": "{dtype}", "coeff": 1, "offset": 0}}}}"#
    )
}

/// A case directory `suite/generated/CLASS/NAME`.
fn case(suite: &Path, name: &str, mlir: &str, io: &str) {
    let dir = suite.join("generated").join(name);
    write(&dir.join("test.mlir"), mlir);
    write(&dir.join("run_module_io.json"), io);
}

fn compare_io(n: usize, dtype: &str, seed: u32, tol: (f64, f64), url: &str) -> String {
    format!(
        r#"{{"function_name": "main", "flat_args": [{f}, {f}], "seed": {seed}, "rtol": {r}, "atol": {a}, "equal_nan": false, "mode": "compare", "file_name": "test.mlir", "vmfb_name": "out.vmfb", "expected_output": [{{"url": "{url}", "value": null}}]}}"#,
        f = formula(n, dtype),
        r = tol.0,
        a = tol.1
    )
}

fn bench_io(n: usize, seed: u32) -> String {
    format!(
        r#"{{"function_name": "main", "flat_args": [{f}, {f}], "seed": {seed}, "mode": "benchmark", "file_name": "test.mlir", "vmfb_name": "out.vmfb"}}"#,
        f = formula(n, "float32")
    )
}

/// numpy's `A @ B` for a case's formulas, saved where the mirror serves
/// `url` (computed in float32, cast to `dtype`; `off` added to element 0 to
/// make a wrong expected output).
fn expected_output(mirror: &Path, url: &str, n: usize, dtype: &str, seed: u32, off: f64) {
    let path = mirror.join(
        url.strip_prefix("https://sharkpublic.blob.core.windows.net/")
            .unwrap(),
    );
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    let script = format!(
        "import numpy\nnumpy.random.seed({seed})\na = numpy.random.rand({n}, {n}).astype('{dtype}')\nb = numpy.random.rand({n}, {n}).astype('{dtype}')\nc = (a.astype('float32') @ b.astype('float32')).astype('{dtype}')\nc[0, 0] += {off}\nnumpy.save({p:?}, c)",
        p = path.to_str().unwrap()
    );
    expect(Command::new(python()).args(["-c", &script]), 0);
}

fn python() -> PathBuf {
    iree_bin().parent().unwrap().join("venv/bin/python3")
}

/// `python -m http.server` on a free loopback port serving `dir`, its log
/// (one line per request) in `log`; stopped when dropped.
struct Mirror {
    child: Child,
    port: u16,
    log: PathBuf,
}

impl Mirror {
    fn start(dir: &Path, log: &Path) -> Mirror {
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new(python())
            .args([
                "-u",
                "-m",
                "http.server",
                &port.to_string(),
                "--bind",
                "127.0.0.1",
                "--directory",
            ])
            .arg(dir)
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(log).unwrap())
            .spawn()
            .expect("python -m http.server");
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        Mirror {
            child,
            port,
            log: log.to_path_buf(),
        }
    }

    fn mapping(&self) -> String {
        format!(
            "https://sharkpublic.blob.core.windows.net/=http://127.0.0.1:{}/",
            self.port
        )
    }

    fn requests(&self) -> usize {
        std::fs::read_to_string(&self.log)
            .unwrap_or_default()
            .matches("\"GET ")
            .count()
    }
}

impl Drop for Mirror {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn outcomes(json: &Value) -> std::collections::BTreeMap<String, String> {
    json["tests"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            (
                t["id"].as_str().unwrap().to_string(),
                t["outcome"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn test<'a>(json: &'a Value, id: &str) -> &'a Value {
    json["tests"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["id"] == id)
        .unwrap_or_else(|| panic!("no {id}"))
}

fn run_json(p: &Project, args: &[&str], envs: &[(&str, String)], code: i32) -> (Value, String) {
    let json = p.root().join("results.json");
    let _ = std::fs::remove_file(&json);
    let mut all = vec!["test"];
    all.extend_from_slice(args);
    let json_arg = json.to_str().unwrap().to_string();
    all.extend(["-j", "2", "--json", json_arg.as_str()]);
    let mut cmd = p.cmd(&all);
    for (k, v) in envs {
        cmd.env(k, v);
    }
    let out = expect(&mut cmd, code);
    let text = format!("{}{}", stdout(&out), stderr(&out));
    let value = serde_json::from_str(
        &std::fs::read_to_string(&json).unwrap_or_else(|_| panic!("no JSON:\n{text}")),
    )
    .unwrap();
    (value, text)
}

#[test]
fn torch_ops_cases_run_compare_and_benchmark_with_outputs_from_a_mirror() {
    let p = Project::new();
    let suite = p.path().join("torch_ops");
    let mirror_dir = p.root().join("mirror");
    let (f32_url, f16_url, wrong_url) = (
        format!("{BLOB}AB/8x8xf32/expected_result_0.npy"),
        format!("{BLOB}AB/8x8xf16/expected_result_0.npy"),
        format!("{BLOB}AB/8x8xf32_wrong/expected_result_0.npy"),
    );
    case(
        &suite,
        "AB/8x8xf32",
        &matmul(8, "f32"),
        &compare_io(8, "float32", 0, (1e-5, 1e-8), &f32_url),
    );
    case(
        &suite,
        "AB/8x8xf16",
        &matmul(8, "f16"),
        &compare_io(8, "float16", 1, (1e-3, 1e-3), &f16_url),
    );
    case(
        &suite,
        "AB/8x8xf32_wrong",
        &matmul(8, "f32"),
        &compare_io(8, "float32", 2, (1e-5, 1e-8), &wrong_url),
    );
    case(
        &suite,
        "AB/8x8xf32_missing",
        &matmul(8, "f32"),
        &compare_io(
            8,
            "float32",
            3,
            (1e-5, 1e-8),
            &format!("{BLOB}nowhere/expected_result_0.npy"),
        ),
    );
    case(
        &suite,
        "AB/8x8_bad_dtype",
        &matmul(8, "f32"),
        &bench_io(8, 4).replace("float32", "float128"),
    );
    case(
        &suite,
        "AB/32x32_bench",
        &matmul(32, "f32"),
        &bench_io(32, 14),
    );
    case(
        &suite,
        "AB/32x32_fast_bench",
        &matmul(32, "f32"),
        &bench_io(32, 15),
    );
    case(
        &suite,
        "AB/32x32_slow_bench",
        &matmul(32, "f32"),
        &bench_io(32, 16),
    );
    expected_output(&mirror_dir, &f32_url, 8, "float32", 0, 0.0);
    expected_output(&mirror_dir, &f16_url, 8, "float16", 1, 0.0);
    expected_output(&mirror_dir, &wrong_url, 8, "float32", 2, 0.5);
    write(
        &suite.join("configs/cpu.json"),
        r#"{
  "config_name": "cpu",
  "iree_compile_flags": ["--iree-hal-target-device=local", "--iree-hal-local-target-device-backends=llvm-cpu", "--iree-llvmcpu-target-cpu=host"],
  "iree_run_module_flags": ["--device=local-task"],
  "golden_times_ms": {"AB/32x32_fast_bench": 0.000001, "AB/32x32_slow_bench": 100000},
  "tolerance_factor": 1.1
}"#,
    );
    let mirror = Mirror::start(&mirror_dir, &p.root().join("mirror.log"));
    let envs = [("LOCKSTEP_TEST_MIRRORS", mirror.mapping())];
    let args = ["torch_ops", "--suite-config", "torch_ops/configs/cpu.json"];
    let (json, text) = run_json(&p, &args, &envs, 1);
    let want: Vec<(&str, &str)> = vec![
        ("AB/32x32_bench [cpu]", "pass"),
        ("AB/32x32_fast_bench [cpu]", "fail"),
        ("AB/32x32_slow_bench [cpu]", "pass"),
        ("AB/8x8_bad_dtype [cpu]", "fail"),
        ("AB/8x8xf16 [cpu]", "pass"),
        ("AB/8x8xf32 [cpu]", "pass"),
        ("AB/8x8xf32_missing [cpu]", "fail"),
        ("AB/8x8xf32_wrong [cpu]", "fail"),
    ];
    let want: std::collections::BTreeMap<String, String> = want
        .into_iter()
        .map(|(a, b)| (a.to_string(), b.to_string()))
        .collect();
    assert_eq!(outcomes(&json), want, "{text}");
    // Each failure says why, naming what was wrong.
    let reason = |id: &str| test(&json, id)["reason"].as_str().unwrap().to_string();
    assert!(
        reason("AB/8x8xf32_wrong [cpu]").contains("1 of 64 elements not close"),
        "{}",
        reason("AB/8x8xf32_wrong [cpu]")
    );
    assert!(
        reason("AB/8x8xf32_missing [cpu]").contains("nowhere/expected_result_0.npy"),
        "{}",
        reason("AB/8x8xf32_missing [cpu]")
    );
    let bad = reason("AB/8x8_bad_dtype [cpu]");
    assert!(
        bad.contains("run_module_io.json") && bad.contains("dtype `float128`"),
        "{bad}"
    );
    assert!(
        reason("AB/32x32_fast_bench [cpu]").contains("golden 0.000001 ms x 1.1"),
        "{}",
        reason("AB/32x32_fast_bench [cpu]")
    );
    // A benchmark without a golden is timed and reported, never failed.
    let timed = step_of(&json, "AB/32x32_bench [cpu]", "benchmark");
    assert!(
        timed["metrics"]["time_ms"].as_f64().unwrap() > 0.0,
        "{timed:#}"
    );
    assert!(timed["metrics"]["golden_time_ms"].is_null(), "{timed:#}");
    // Inputs are numpy's: the run's commands name the generated .npy files.
    let run = step_of(&json, "AB/8x8xf32 [cpu]", "run");
    let command = run["command"].as_str().unwrap();
    assert!(
        command.contains("--function=main")
            && command.contains("input_0.npy")
            && command.contains("--output=@"),
        "{command}"
    );
    // What was fetched by URL alone is named in the results with its sha256.
    let served = mirror_dir.join("sharkpublic/t/AB/8x8xf32/expected_result_0.npy");
    assert_eq!(
        run["fetched"],
        serde_json::json!([{"url": f32_url, "sha256": crate::common::sha256_of(&served)}])
    );
    // The downloads area serves the second run: the mirror is not asked again
    // (the missing file is asked again: failures are not kept).
    let asked = mirror.requests();
    assert_eq!(
        asked,
        4,
        "{}",
        std::fs::read_to_string(&mirror.log).unwrap()
    );
    let (again, _) = run_json(&p, &args, &envs, 1);
    assert_eq!(outcomes(&again), outcomes(&json));
    assert_eq!(mirror.requests(), asked + 1);
    // --refresh-downloads fetches each again.
    let mut refreshed = args.to_vec();
    refreshed.extend(["-k", "8x8xf", "--refresh-downloads"]);
    run_json(&p, &refreshed, &envs, 1);
    assert_eq!(mirror.requests(), asked + 1 + 4);
}

#[test]
fn bad_torch_ops_configs_and_mirrors_are_refused_before_anything_runs() {
    let p = Project::new();
    let suite = p.path().join("torch_ops");
    case(&suite, "AB/8x8_bench", &matmul(8, "f32"), &bench_io(8, 1));
    let config = |extra: &str| {
        write(
            &suite.join("configs/cpu.json"),
            &format!(
                r#"{{"config_name": "cpu", "iree_compile_flags": [], "iree_run_module_flags": []{extra}}}"#
            ),
        );
    };
    let refused = |envs: &[(&str, &str)], needles: &[&str]| {
        let mut cmd = p.cmd(&[
            "test",
            "torch_ops",
            "--suite-config",
            "torch_ops/configs/cpu.json",
        ]);
        for (k, v) in envs {
            cmd.env(k, v);
        }
        let out = expect(&mut cmd, 2);
        let err = stderr(&out);
        for needle in needles {
            assert!(err.contains(needle), "{needle}: {err}");
        }
    };
    config(r#", "golden_times_ms": {"AB/8x8_bnech": 1.0}"#);
    refused(&[], &["golden_times_ms", "AB/8x8_bnech", "AB/8x8_bench"]);
    config(r#", "tolerance_factor": -1"#);
    refused(&[], &["tolerance_factor", "-1"]);
    config(r#", "golden_times_ms": {"AB/8x8_bench": -3}"#);
    refused(&[], &["golden_times_ms", "-3"]);
    config("");
    refused(
        &[("LOCKSTEP_TEST_MIRRORS", "https://a.example/=file:///etc/")],
        &["mirror `file:///etc/`", "http"],
    );
    refused(
        &[("LOCKSTEP_TEST_MIRRORS", "no-equals-sign")],
        &["LOCKSTEP_TEST_MIRRORS", "FROM=TO"],
    );
    p.write(
        "lockstep.toml",
        "[test.mirrors]\n\"https://a.example/\" = \"ftp://b.example/\"\n",
    );
    refused(&[], &["mirror `ftp://b.example/`", "[test.mirrors]"]);
}

/// `a + w`, `w` a parameter of scope `model`.
const WITH_PARAMETER: &str =
    "util.global private @w = #flow.parameter.named<\"model\"::\"w\"> : tensor<4xf32>
func.func @main(%a: tensor<4xf32>) -> tensor<4xf32> {
  %w = util.global.load @w : tensor<4xf32>
  %0 = arith.addf %a, %w : tensor<4xf32>
  return %0 : tensor<4xf32>
}
";

#[test]
fn parameter_files_from_a_url_or_beside_the_suite_reach_the_module() {
    let p = Project::new();
    let served = p.root().join("served");
    std::fs::create_dir_all(&served).unwrap();
    // A parameter archive whose `w` is 2.5 everywhere, made by IREE's own tool.
    let irpa = served.join("weights.irpa");
    expect(
        Command::new(iree_bin().join("iree-create-parameters")).args([
            "--splat=w=4xf32=2.5",
            &format!("--output={}", irpa.display()),
        ]),
        0,
    );
    let sha = crate::common::sha256_of(&irpa);
    let mirror = Mirror::start(&served, &p.root().join("served.log"));
    let suite = p.path().join("suites/params");
    write(&suite.join("add_w.mlir"), WITH_PARAMETER);
    std::fs::copy(&irpa, suite.join("local.irpa")).unwrap();
    let native = |name: &str, parameters: &str, expected: &str| {
        format!(
            "[[test]]\nname = \"{name}\"\nsource = \"add_w.mlir\"\ninputs = [\"4xf32=1 2 3 4\"]\noutputs = [\"4xf32={expected}\"]\nparameters = [{parameters}]\n\n"
        )
    };
    // The suite names the model host; this machine reaches it through a mirror.
    let url = "https://models.example/weights.irpa".to_string();
    let envs = [(
        "LOCKSTEP_TEST_MIRRORS",
        format!("https://models.example/=http://127.0.0.1:{}/", mirror.port),
    )];
    let mut text = String::from("[suite]\nname = \"params\"\n\n");
    text.push_str(&native(
        "from_url",
        &format!("{{ scope = \"model\", url = \"{url}\", sha256 = \"{sha}\" }}"),
        "3.5 4.5 5.5 6.5",
    ));
    text.push_str(&native(
        "from_file",
        "{ scope = \"model\", file = \"local.irpa\" }",
        "3.5 4.5 5.5 6.5",
    ));
    text.push_str(&native(
        "wrong_sha",
        &format!(
            "{{ scope = \"model\", url = \"{url}\", sha256 = \"{}\" }}",
            "0".repeat(64)
        ),
        "3.5 4.5 5.5 6.5",
    ));
    text.push_str(&native(
        "missing_file",
        "{ scope = \"model\", file = \"nowhere.irpa\" }",
        "3.5 4.5 5.5 6.5",
    ));
    write(&suite.join("params.suite.toml"), &text);
    let (json, text_out) = run_json(&p, &["suites/params"], &envs, 1);
    let want: std::collections::BTreeMap<String, String> = [
        ("params/from_file [cpu]", "pass"),
        ("params/from_url [cpu]", "pass"),
        ("params/missing_file [cpu]", "fail"),
        ("params/wrong_sha [cpu]", "fail"),
    ]
    .into_iter()
    .map(|(a, b)| (a.to_string(), b.to_string()))
    .collect();
    assert_eq!(outcomes(&json), want, "{text_out}");
    let reason = |id: &str| test_reason(&json, id);
    assert!(
        reason("params/wrong_sha [cpu]").contains("has sha256"),
        "{}",
        reason("params/wrong_sha [cpu]")
    );
    assert!(
        reason("params/missing_file [cpu]").contains("nowhere.irpa"),
        "{}",
        reason("params/missing_file [cpu]")
    );
    let run = step_of(&json, "params/from_url [cpu]", "run");
    assert!(
        run["command"]
            .as_str()
            .unwrap()
            .contains("--parameters=model="),
        "{run:#}"
    );
    // Downloaded once: the second run reads the downloads area.
    let asked = mirror.requests();
    run_json(&p, &["suites/params", "-k", "from_url"], &envs, 0);
    assert_eq!(mirror.requests(), asked);
    // A url without its sha256, a bad scope: refused before anything runs.
    for (bad, needle) in [
        (
            format!("{{ scope = \"model\", url = \"{url}\" }}"),
            "no sha256",
        ),
        (
            "{ scope = \"a=b\", file = \"local.irpa\" }".to_string(),
            "parameter scope `a=b`",
        ),
        (
            "{ scope = \"model\" }".to_string(),
            "exactly one of `file` or `url`",
        ),
    ] {
        write(
            &suite.join("params.suite.toml"),
            &format!(
                "[suite]\nname = \"params\"\n\n{}",
                native("bad", &bad, "1 2 3 4")
            ),
        );
        let out = expect(&mut p.cmd(&["test", "suites/params"]), 2);
        assert!(stderr(&out).contains(needle), "{needle}: {}", stderr(&out));
    }
}

/// The step of `kind` of test `id`.
fn step_of(json: &Value, id: &str, kind: &str) -> Value {
    test(json, id)["steps"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["kind"] == kind)
        .cloned()
        .unwrap_or_else(|| panic!("no {kind} step in {id}"))
}

fn test_reason(json: &Value, id: &str) -> String {
    test(json, id)["reason"].as_str().unwrap().to_string()
}
