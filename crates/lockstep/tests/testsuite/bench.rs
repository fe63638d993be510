//! `lockstep bench` with the real binary and the real IREE tools (provisioned
//! once through `lockstep toolchain path`); every test has its own cache.

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use crate::common::{iree_bin, walk, Project};

const SMALL: &str = "conv -n 1 -c 4 -H 8 -W 8 -k 4 -y 3 -x 3 -p 1 -q 1 -i 3";
const HEADER: &str = "arguments,min_time (us),max_time (us),mean_time (us),median_time (us),stddev (us),gflops,gbps,func_name,verify,status";

/// A project whose commands are `lockstep bench --iree-bin TOOLS ...`.
struct Env {
    p: Project,
}

impl Env {
    fn new() -> Env {
        Env { p: Project::new() }
    }

    fn path(&self) -> PathBuf {
        self.p.path()
    }

    fn cache(&self) -> PathBuf {
        self.p.cache()
    }

    fn cmd(&self, args: &[&str]) -> Command {
        self.cmd_with_tools(iree_bin(), args)
    }

    /// `lockstep bench --iree-bin TOOLS ARGS...` in this environment.
    fn cmd_with_tools(&self, tools: &Path, args: &[&str]) -> Command {
        let mut cmd = self.p.cmd(&["bench", "--iree-bin"]);
        cmd.arg(tools).args(args);
        cmd
    }

    fn run(&self, cmd: &mut Command, code: i32) -> (String, String) {
        let out = crate::common::expect(cmd, code);
        (crate::common::stdout(&out), crate::common::stderr(&out))
    }

    fn json(&self, name: &str) -> serde_json::Value {
        self.p.json(name)
    }

    /// Files in the cache, not counting hidden ones (its lock stripes are
    /// not entries).
    /// Files in the cache but for the results area (rows recorded, which
    /// the tests check through `recorded`), its root's CACHEDIR.TAG and
    /// hidden lock files.
    fn files_in_cache(&self) -> usize {
        let cache = self.cache();
        walk(&cache)
            .iter()
            .filter(|f| {
                f.strip_prefix(&cache).is_ok_and(|rel| {
                    !rel.starts_with("results")
                        && rel != Path::new(lockstep_cache::CACHEDIR_TAG)
                        && rel
                            .components()
                            .all(|c| !c.as_os_str().to_string_lossy().starts_with('.'))
                })
            })
            .count()
    }
}

fn words(line: &str) -> Vec<&str> {
    line.split_whitespace().collect()
}

#[test]
fn single_command_prints_boo_lines() {
    let env = Env::new();
    // `-j`/`-V` after the command word belong to MIOpen (dilation, verify).
    let mut args = vec!["-j", "2", "./bin/MIOpenDriver"];
    args.extend(words(SMALL));
    // `-S 5` is accepted and ignored with a note on stderr.
    args.extend(["-F", "1", "-j", "1", "-V", "0", "-S", "5"]);
    let (stdout, stderr) = env.run(&mut env.cmd(&args), 0);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 3, "{stdout}");
    assert_eq!(lines[0], format!("{SMALL} -F 1 -j 1 -V 0 -S 5"));
    assert!(
        stderr.contains("note: ignored `-S 5` (-S/--solution)"),
        "{stderr}"
    );
    assert!(
        lines[1].starts_with(">>> tensor(size=(1, 4, 8, 8), dtype=torch.float32)"),
        "{stdout}"
    );
    assert!(lines[2].starts_with(">>> min="), "{stdout}");
    for stat in ["max=", "mean=", "median=", "stddev="] {
        assert!(lines[2].contains(stat), "{stdout}");
    }
}

#[test]
fn csv_has_a_row_per_direction_and_warm_runs_compile_nothing() {
    let env = Env::new();
    let mut args = vec!["--csv", "out.csv", "--json", "out.json"];
    args.extend(words(SMALL));
    args.extend(["-F", "0"]);
    env.run(&mut env.cmd(&args), 0);
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    let lines: Vec<&str> = csv.lines().collect();
    assert_eq!(lines[0], HEADER);
    assert_eq!(lines.len(), 4, "{csv}");
    for (line, mode) in
        lines[1..]
            .iter()
            .zip(["_forward_", "_input_backward_", "_weight_backward_"])
    {
        let fields: Vec<&str> = line.split(',').collect();
        assert_eq!(fields.len(), 11, "{line}");
        assert_eq!(fields[0], format!("{SMALL} -F 0"));
        assert!(fields[8].contains(mode), "{line}");
        assert_eq!(fields[9], "");
        assert_eq!(fields[10], "ok");
        for time in &fields[1..8] {
            time.parse::<f64>()
                .unwrap_or_else(|_| panic!("not a number: {line}"));
        }
    }
    let first = env.json("out.json");
    assert_eq!(first["compiled"], 3);
    assert_eq!(first["cache_hits"], 0);
    for row in first["rows"].as_array().unwrap() {
        assert!(row["compile_seconds"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["timing_seconds"].as_f64().unwrap() > 0.0, "{row}");
        let module = row["module"].as_str().unwrap();
        assert!(
            module.ends_with(".vmfb") && Path::new(module).is_file(),
            "{row}"
        );
    }
    // Entries: module, MLIR, compile command and record per kernel.
    assert_eq!(env.files_in_cache(), 12);

    // Measured again (`--no-cache`): every kernel from the cache.
    let mut again = args.clone();
    again.insert(0, "--no-cache");
    env.run(&mut env.cmd(&again), 0);
    let warm = env.json("out.json");
    assert_eq!(warm["compiled"], 0, "{warm}");
    assert_eq!(warm["cache_hits"], 3);
    assert_eq!(warm["recorded"], 0);
    for row in warm["rows"].as_array().unwrap() {
        assert_eq!(row["compile_seconds"], 0.0, "{row}");
        assert!(row["timing_seconds"].as_f64().unwrap() > 0.0, "{row}");
        assert!(row["module"].is_string(), "{row}");
        assert!(row["recorded"].is_null(), "{row}");
    }
    // Unchanged: every row answered from its record, the last measured.
    env.run(&mut env.cmd(&args), 0);
    let answered = env.json("out.json");
    assert_eq!(
        (
            &answered["recorded"],
            &answered["compiled"],
            &answered["cache_hits"]
        ),
        (&3.into(), &0.into(), &0.into()),
        "{answered}"
    );
    for (row, measured) in answered["rows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(warm["rows"].as_array().unwrap())
    {
        assert!(row["recorded"].is_string(), "{row}");
        assert_eq!(row["stats"], measured["stats"]);
        assert_eq!(row["status"], "ok");
    }
    assert_eq!(
        env.files_in_cache(),
        12,
        "the kernels' entries are as they were"
    );

    // A corrupt module is rebuilt.
    let bench = env.cache().join("bench");
    let module = std::fs::read_dir(&bench)
        .unwrap()
        .flatten()
        .flat_map(|d| std::fs::read_dir(d.path()).unwrap().flatten())
        .map(|e| e.path())
        .find(|p| p.extension().is_some_and(|e| e == "vmfb"))
        .unwrap();
    std::fs::write(&module, b"garbage").unwrap();
    env.run(&mut env.cmd(&again), 0);
    let repaired = env.json("out.json");
    assert_eq!(repaired["compiled"], 1, "{repaired}");
    assert_eq!(repaired["cache_hits"], 2);
}

#[test]
fn boo_cache_on_0_leaves_the_cache_empty() {
    let env = Env::new();
    let mut args = vec!["--json", "out.json"];
    args.extend(words(SMALL));
    args.extend(["-F", "1"]);
    let mut cmd = env.cmd(&args);
    cmd.env("BOO_CACHE_ON", "0");
    env.run(&mut cmd, 0);
    assert_eq!(env.files_in_cache(), 0);
    assert_eq!(env.json("out.json")["compiled"], 1);

    // BOO_CACHE_DIR moves it.
    let moved = env.path().join("boo");
    let mut cmd = env.cmd(&args);
    cmd.env("BOO_CACHE_DIR", &moved);
    env.run(&mut cmd, 0);
    assert_eq!(env.files_in_cache(), 0);
    // One kernel directory (beside the cache's lock stripes).
    let visible = std::fs::read_dir(&moved)
        .unwrap()
        .flatten()
        .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
        .count();
    assert_eq!(visible, 1);
}

/// A warm `--verify` batch answers from its record: an unchanged row is
/// neither compiled, timed nor verified; changing one line reruns that row
/// alone; a compile flag reruns every row; `--no-cache` measures all again.
#[test]
fn a_warm_batch_reruns_exactly_the_rows_a_change_touches() {
    let env = Env::new();
    let lines = |iterations: &str| {
        format!("{SMALL} -F 1\ngemm -m 4 -k 4 -n 4 -i 3\nconv -n 1 -c 4 -H 6 -W 6 -k 8 -y 1 -x 1 -F 1 -i {iterations}\n")
    };
    let batch = env.path().join("batch.txt");
    let run = |extra: &[&str]| -> serde_json::Value {
        let mut args = vec![
            "--verify",
            "--commands-file",
            "batch.txt",
            "--json",
            "out.json",
        ];
        args.extend(extra);
        let (_, stderr) = env.run(&mut env.cmd(&args), 0);
        let doc = env.json("out.json");
        crate::common::assert_schema("bench-results.json", &doc);
        let recorded = doc["recorded"].as_u64().unwrap();
        if recorded > 0 {
            assert!(
                stderr.contains(&format!("{recorded} row")) && stderr.contains("answered from"),
                "{stderr}"
            );
        }
        doc
    };
    let answered = |doc: &serde_json::Value| -> Vec<bool> {
        doc["rows"]
            .as_array()
            .unwrap()
            .iter()
            .map(|r| r["recorded"].is_string())
            .collect()
    };
    std::fs::write(&batch, lines("3")).unwrap();
    let cold = run(&[]);
    assert_eq!(
        (cold["recorded"].as_u64(), cold["compiled"].as_u64()),
        (Some(0), Some(3)),
        "{cold}"
    );
    let warm = run(&[]);
    assert_eq!(answered(&warm), [true, true, true], "{warm}");
    assert_eq!(warm["compiled"], 0);
    for (row, first) in warm["rows"]
        .as_array()
        .unwrap()
        .iter()
        .zip(cold["rows"].as_array().unwrap())
    {
        assert_eq!(
            (&row["stats"], &row["check"], &row["verify"]),
            (&first["stats"], &first["check"], &first["verify"])
        );
        assert_eq!(row["verify"], "PASS", "{row}");
    }
    // One line changed (its iterations): that row alone runs again.
    std::fs::write(&batch, lines("4")).unwrap();
    let one = run(&[]);
    assert_eq!(answered(&one), [true, true, false], "{one}");
    assert_eq!(one["rows"][2]["stats"]["samples"], 4, "{one}");
    assert_eq!(
        (one["compiled"].as_u64(), one["cache_hits"].as_u64()),
        (Some(0), Some(1)),
        "{one}"
    );
    assert_eq!(one["rows"][2]["verify"], "PASS");
    // A compile flag is part of every kernel: every row runs again.
    let flagged = run(&["--compile-flag", "--iree-opt-level=O1"]);
    assert_eq!(answered(&flagged), [false, false, false], "{flagged}");
    // --no-cache measures again (the kernels still from the cache).
    let again = run(&["--no-cache"]);
    assert_eq!(answered(&again), [false, false, false], "{again}");
    assert_eq!(
        (again["compiled"].as_u64(), again["cache_hits"].as_u64()),
        (Some(0), Some(3)),
        "{again}"
    );
    // A run kept in the results history is a trend's point: measured.
    let kept = run(&["--record", "history"]);
    assert_eq!(answered(&kept), [false, false, false], "{kept}");
    // The kernel cache off (BOO_CACHE_ON=0): no record is read.
    let mut cmd = env.cmd(&[
        "--verify",
        "--commands-file",
        "batch.txt",
        "--json",
        "out.json",
    ]);
    cmd.env("BOO_CACHE_ON", "0");
    env.run(&mut cmd, 0);
    assert_eq!(
        env.json("out.json")["recorded"],
        0,
        "the cache off: no record read"
    );
}

#[test]
fn a_bad_line_fails_its_row_and_the_batch_continues() {
    let env = Env::new();
    let text = format!(
        "# a batch\n{SMALL} -F 1\nconv --bogus 1\n\n./bin/MIOpenDriver {SMALL} -F 4\ngemm -m 4 -k 4 -n 4\n"
    );
    std::fs::write(env.path().join("batch.txt"), text).unwrap();
    let (stdout, _) = env.run(
        &mut env.cmd(&[
            "--commands-file",
            "batch.txt",
            "--csv",
            "out.csv",
            "--",
            "-i",
            "2",
        ]),
        1,
    );
    assert!(
        stdout.contains("line 3: unknown flag `--bogus`"),
        "{stdout}"
    );
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 4, "{csv}");
    assert_eq!(rows[0][0], format!("{SMALL} -F 1 -i 2"));
    assert_eq!(rows[0][10], "ok");
    assert!(rows[0][4].parse::<f64>().is_ok());
    assert_eq!(rows[1][10], "line 3: unknown flag `--bogus`");
    assert!(rows[1][1..8].iter().all(|f| f.is_empty()), "{csv}");
    assert_eq!(rows[2][0], format!("{SMALL} -F 4 -i 2"));
    assert_eq!(rows[2][10], "ok");
    assert!(rows[2][8].contains("weight_backward"));
    assert_eq!(rows[3][8], "gemm_float32_forward_4x4x4");
    assert_eq!(rows[3][10], "ok", "{csv}");
}

#[test]
fn an_invalid_single_command_is_a_usage_error() {
    let env = Env::new();
    let (_, stderr) = env.run(&mut env.cmd(&["conv", "-n", "1", "--bogus", "2"]), 2);
    assert!(stderr.contains("unknown flag `--bogus`"), "{stderr}");
    assert_eq!(env.files_in_cache(), 0);
}

#[test]
fn no_command_runs_the_embedded_set() {
    let env = Env::new();
    env.run(&mut env.cmd(&["--csv", "out.csv", "--threads", "1"]), 0);
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert!(rows.len() >= 8, "{csv}");
    assert!(rows.iter().all(|r| r.ends_with(",ok")), "{csv}");
    assert!(csv.contains("conv_3d_"));
    assert!(csv.contains("_64g,"));
    assert!(csv.contains("_weight_backward_"));
    assert!(csv.contains("_trans_1x1op,"));
    assert!(csv.contains(",gemm_float16_forward_128x256x256,"));
    assert!(
        csv.contains(",layer_norm_1d_float32_forward_128x256_w_b,"),
        "{csv}"
    );
}

#[test]
fn a_timeout_is_reported_on_its_row() {
    let env = Env::new();
    let mut args = vec!["--timeout", "0.001", "--csv", "out.csv"];
    args.extend(words(SMALL));
    let (stdout, _) = env.run(&mut env.cmd(&args), 1);
    assert!(stdout.contains("timed out after 0.001s"), "{stdout}");
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    assert!(csv.lines().nth(1).unwrap().contains(",,,,,,,"), "{csv}");
}

#[test]
fn verify_passes_for_every_direction_and_bf16() {
    let env = Env::new();
    // A strided, grouped line for variety; `-V 1` on the bf16 line verifies
    // it without `--verify`.
    let text = format!(
        "{SMALL} -F 1\n{SMALL} -F 2\n2 {SMALL} -F 4\n\
         convbfp16 -n 2 -c 4 -H 7 -W 7 -k 8 -y 3 -x 3 -u 2 -v 2 -g 2 -F 1 -i 2 -V 1\n"
    );
    std::fs::write(env.path().join("batch.txt"), text).unwrap();
    let (stdout, _) = env.run(
        &mut env.cmd(&[
            "--verify",
            "--commands-file",
            "batch.txt",
            "--csv",
            "out.csv",
            "--json",
            "out.json",
        ]),
        0,
    );
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 4, "{csv}");
    for (row, mode) in rows.iter().zip([
        "float32_forward",
        "float32_input_backward",
        "float32_weight_backward",
        "bfloat16_forward",
    ]) {
        assert!(row[8].contains(mode), "{csv}");
        assert_eq!((row[9], row[10]), ("PASS", "ok"), "{csv}");
        // Timed on the verification inputs.
        assert!(row[4].parse::<f64>().is_ok(), "{csv}");
    }
    let verdicts: Vec<&str> = stdout
        .lines()
        .filter(|l| l.starts_with(">>> verify: max_abs="))
        .collect();
    assert_eq!(verdicts.len(), 4, "{stdout}");
    assert!(verdicts.iter().all(|l| l.ends_with(" PASS")), "{stdout}");
    // The verify line follows the timing line.
    let lines: Vec<&str> = stdout.lines().collect();
    let at = lines
        .iter()
        .position(|l| l.starts_with(">>> verify"))
        .unwrap();
    assert!(lines[at - 1].starts_with(">>> min="), "{stdout}");
    let json = env.json("out.json");
    assert_eq!(json["rows"][2]["repeat"], 2);
    assert_eq!(json["rows"][0]["check"]["passed"], true);
    assert_eq!(json["rows"][0]["check"]["failures"], 0);
}

#[test]
fn transposed_gemm_and_layernorm_commands_run_and_verify() {
    let env = Env::new();
    let text = "conv -n 1 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -p 1 -q 1 -u 2 -v 2 -m trans -Y 1 -X 1 -F 0 -i 2\n\
                gemmfp16 -m 8 -k 12 -n 4 -u 1 -F 2 -i 2\n\
                layernorm -X 4x16 -o 1 -m 0 -F 1 -i 2\n\
                layernormbfp16 -X 2x3x8 -o 2 -m 0 -F 2 -i 2\n\
                conv -_ 1 -n 2 -c 4 -W 9 -k 6 -x 3 -v 2 -q 1 -g 2 -b 1 -F 1 -I NWC -f NWC -O NWC -i 2\n";
    std::fs::write(env.path().join("batch.txt"), text).unwrap();
    let (stdout, _) = env.run(
        &mut env.cmd(&[
            "--verify",
            "--commands-file",
            "batch.txt",
            "--json",
            "out.json",
        ]),
        0,
    );
    let json = env.json("out.json");
    let rows = json["rows"].as_array().unwrap();
    let names: Vec<&str> = rows
        .iter()
        .map(|r| r["func_name"].as_str().unwrap())
        .collect();
    assert_eq!(rows.len(), 7, "{names:?}");
    assert!(
        names[..3].iter().all(|n| n.ends_with("_trans_1x1op")),
        "{names:?}"
    );
    assert_eq!(names[3], "gemm_float16_a_backward_12x8x4_transA");
    assert!(
        names[4].starts_with("layer_norm_1d_float32_forward_4x16"),
        "{names:?}"
    );
    assert!(
        names[5].starts_with("layer_norm_1d_bfloat16_input_backward"),
        "{names:?}"
    );
    // lockstep's 1-D extension of MIOpen's command line.
    assert_eq!(
        names[6],
        "conv_1d_float32_forward_b_2x9x4_nwc_6x3x2_fwc_nwf_2s_1p_1d_2g"
    );
    for row in rows {
        assert_eq!(
            (row["status"].as_str(), row["verify"].as_str()),
            (Some("ok"), Some("PASS")),
            "{row}"
        );
    }
    // Layer-norm forward has three results (output, mean, rstd); the first is printed.
    assert!(
        stdout.contains(">>> tensor(size=(4, 16), dtype=torch.float32)  layer_norm_"),
        "{stdout}"
    );
}

#[test]
fn without_verify_the_column_stays_empty_and_t_0_skips_timing() {
    let env = Env::new();
    let text = format!("{SMALL} -F 1 -t 0\n{SMALL} -F 1 -t 0 -V 1\n");
    std::fs::write(env.path().join("batch.txt"), text).unwrap();
    let (stdout, _) = env.run(
        &mut env.cmd(&["--commands-file", "batch.txt", "--csv", "out.csv"]),
        0,
    );
    assert_eq!(
        stdout.matches(">>> not timed (-t 0)").count(),
        2,
        "{stdout}"
    );
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    let rows: Vec<Vec<&str>> = csv
        .lines()
        .skip(1)
        .map(|l| l.split(',').collect())
        .collect();
    assert_eq!(rows.len(), 2, "{csv}");
    for row in &rows {
        assert!(row[1..8].iter().all(|f| f.is_empty()), "{csv}");
        assert_eq!(row[10], "ok");
    }
    assert_eq!(rows[0][9], "");
    assert_eq!(rows[1][9], "PASS");
}

/// The `.cmd` files (recorded compile commands) under `dir`.
fn recorded_commands(dir: &Path) -> Vec<String> {
    let mut found = Vec::new();
    for entry in std::fs::read_dir(dir).into_iter().flatten().flatten() {
        let path = entry.path();
        if path.is_dir() {
            found.extend(recorded_commands(&path));
        } else if path.extension().is_some_and(|e| e == "cmd") {
            found.push(std::fs::read_to_string(&path).unwrap());
        }
    }
    found
}

#[test]
fn the_bench_table_moves_the_cache_and_boo_cache_dir_wins() {
    let env = Env::new();
    std::fs::write(
        env.path().join("lockstep.toml"),
        "[bench]\ncache-dir = \"kernels\"\ncompile-flags = [\"--iree-opt-level=O1\"]\n",
    )
    .unwrap();
    let mut args = words(SMALL);
    args.extend(["-F", "1"]);
    env.run(&mut env.cmd(&args), 0);
    assert_eq!(env.files_in_cache(), 0, "the default location stayed empty");
    let commands = recorded_commands(&env.path().join("kernels"));
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(commands[0].contains("--iree-opt-level=O1"), "{commands:?}");

    // Measured again (an unchanged row is otherwise answered from its
    // record, and looks up no kernel): the kernel goes to BOO_CACHE_DIR.
    let boo = env.path().join("boo");
    let mut again = vec!["--no-cache"];
    again.extend(args.iter().copied());
    env.run(env.cmd(&again).env("BOO_CACHE_DIR", &boo), 0);
    assert_eq!(recorded_commands(&boo).len(), 1);
    assert_eq!(recorded_commands(&env.path().join("kernels")).len(), 1);
}

#[test]
fn configured_devices_choose_target_flags_and_runtime_device() {
    let env = Env::new();
    std::fs::write(
        env.path().join("lockstep.toml"),
        "[bench]\ndevice = \"cpu1\"\n[bench.devices.cpu1]\nruntime-device = \"local-sync\"\n",
    )
    .unwrap();
    let mut args = vec!["--json", "out.json"];
    args.extend(words(SMALL));
    args.extend(["-F", "1"]);
    env.run(&mut env.cmd(&args), 0);
    let json = env.json("out.json");
    assert_eq!(json["device"], "cpu1");
    assert_eq!(json["runtime_device"], "local-sync");
    assert_eq!(json["rows"][0]["status"], "ok");
    let commands = recorded_commands(&env.cache());
    assert!(
        commands[0].contains("--iree-llvmcpu-target-cpu=host"),
        "{commands:?}"
    );

    // hip has no default GPU target: with no AMD GPU here to detect, a
    // compile for it is a usage error that says what to add (a run is
    // skipped: tests/testsuite/bench_devices.rs).
    let mut hip = vec!["--compile-only", "--device", "hip"];
    hip.extend(words(SMALL));
    let (_, stderr) = env.run(&mut env.cmd(&hip), 2);
    if lockstep_iree::gpu::detect("hip").is_err() {
        assert!(stderr.contains("[bench.devices.hip]"), "{stderr}");
    }
    let mut unknown = vec!["--device", "tpu"];
    unknown.extend(words(SMALL));
    let (_, stderr) = env.run(&mut env.cmd(&unknown), 2);
    assert!(stderr.contains("unknown device `tpu`"), "{stderr}");
}

#[test]
fn a_gpu_device_compiles_for_its_target_and_a_missing_gpu_is_skipped() {
    let env = Env::new();
    let mut args = vec!["--device", "vulkan", "--json", "out.json"];
    args.extend(words(SMALL));
    args.extend(["-F", "1"]);
    let out = env.cmd(&args).output().unwrap();
    let json = env.json("out.json");
    let row = &json["rows"][0];
    let commands = recorded_commands(&env.cache());
    assert_eq!(commands.len(), 1, "{commands:?}");
    assert!(
        commands[0].contains("--iree-hal-target-device=vulkan") && !commands[0].contains("llvmcpu"),
        "{commands:?}"
    );
    // Without a Vulkan device (CI, this machine) the row is skipped, naming
    // the driver and the devices found, and the run exits 0; with one, the
    // kernel runs.
    let status = row["status"].as_str().unwrap();
    assert_eq!(out.status.code(), Some(0), "{status}");
    if status != "ok" {
        assert!(
            status.starts_with("skipped: no `vulkan` device on this machine"),
            "{status}"
        );
        assert!(row["stats"].is_null(), "{row}");
    }
}

/// Sets the modification time of `path` to `days` days ago.
fn age(path: &Path, days: u64) {
    let when = std::time::SystemTime::now() - std::time::Duration::from_secs(days * 86_400);
    std::fs::File::options()
        .append(true)
        .open(path)
        .unwrap()
        .set_modified(when)
        .unwrap();
}

#[test]
fn cache_prune_covers_the_kernel_compile_and_preprocess_caches() {
    let env = Env::new();
    for line in [SMALL, "conv -n 1 -c 4 -H 6 -W 6 -k 8 -y 1 -x 1 -i 3"] {
        let mut args = words(line);
        args.extend(["-F", "1"]);
        env.run(&mut env.cmd(&args), 0);
    }
    let records: Vec<PathBuf> = walk(&env.cache().join("bench"))
        .into_iter()
        .filter(|p| p.extension().is_some_and(|e| e == "json"))
        .collect();
    assert_eq!(records.len(), 2, "{records:?}");
    // The record of SMALL's kernel (input 1x4x8x8) is 40 days old.
    let (old, fresh): (Vec<PathBuf>, Vec<PathBuf>) = records
        .into_iter()
        .partition(|p| p.to_string_lossy().contains("_1x4x8x8_"));
    let (old, fresh) = (&old[0], &fresh[0]);
    age(old, 40);
    // An old compile-cache entry and a fresh preprocess entry beside them.
    // (in the layouts of the lockstep version before cache areas: they are
    // lockstep's, pruned like any entry).
    let compile_entry = env.cache().join(format!("compile/ab/{}", "ab".repeat(32)));
    std::fs::create_dir_all(&compile_entry).unwrap();
    std::fs::write(compile_entry.join("module.vmfb"), [0u8; 64]).unwrap();
    std::fs::write(compile_entry.join("meta.json"), "{}").unwrap();
    std::fs::write(compile_entry.join("used"), "").unwrap();
    age(&compile_entry.join("used"), 50);
    let preprocess_entry = env
        .cache()
        .join(format!("preprocess/cd/{}.mlir", "cd".repeat(32)));
    std::fs::create_dir_all(preprocess_entry.parent().unwrap()).unwrap();
    std::fs::write(
        &preprocess_entry,
        "// lockstep-preprocess-cache v1 k 1 x\nx",
    )
    .unwrap();

    let prune = |args: &[&str]| {
        let mut cmd = env.p.cmd(&["cache", "prune"]);
        // Never the toolchains the tests share.
        cmd.env("LOCKSTEP_TOOLCHAINS", env.p.root().join("toolchains"));
        crate::common::stdout(&crate::common::expect(cmd.args(args), 0))
    };
    let stdout = prune(&["--older-than", "30"]);
    assert!(stdout.contains("compile: removed 1 entry"), "{stdout}");
    assert!(stdout.contains("kernels: removed 1 entry"), "{stdout}");
    assert!(stdout.contains("preprocess: removed 0 entries"), "{stdout}");
    assert!(!compile_entry.exists() && !old.exists() && fresh.exists());
    assert!(
        walk(old.parent().unwrap()).is_empty(),
        "every file of the entry went"
    );
    // The surviving kernel is still a cache hit, the pruned one compiles
    // again (measured again: rows answered from their record look up no kernel).
    let mut args = vec!["--no-cache", "--json", "again.json"];
    args.extend(words("conv -n 1 -c 4 -H 6 -W 6 -k 8 -y 1 -x 1 -i 3 -F 1"));
    env.run(&mut env.cmd(&args), 0);
    assert_eq!(env.json("again.json")["cache_hits"], 1);
    let mut args = vec!["--no-cache", "--json", "again.json"];
    args.extend(words(SMALL));
    args.extend(["-F", "1"]);
    env.run(&mut env.cmd(&args), 0);
    assert_eq!(env.json("again.json")["compiled"], 1);
    // Size limit 0: everything goes, least recently used first.
    let stdout = prune(&["--max-size", "0"]);
    assert!(stdout.contains("preprocess: removed 1 entry"), "{stdout}");
    assert!(!preprocess_entry.exists());
    assert!(walk(&env.cache().join("bench"))
        .iter()
        .all(|p| p.extension().is_none_or(|e| e != "vmfb")));
}

/// A tools directory with the real iree-compile and iree-run-module and an
/// iree-benchmark-module that records its arguments in `bench-calls.log`,
/// hangs (recording its pid) or crashes for the functions named in `hang`
/// and `crash`, and runs the real one otherwise.
fn flaky_tools(dir: &Path, hang: &str, crash: &str) -> PathBuf {
    use std::os::unix::fs::PermissionsExt;
    let tools = dir.join("flaky-tools");
    std::fs::create_dir_all(&tools).unwrap();
    for tool in ["iree-compile", "iree-run-module"] {
        std::os::unix::fs::symlink(iree_bin().join(tool), tools.join(tool)).unwrap();
    }
    let script = format!(
        "#!/bin/sh\necho \"$*\" >> {calls}\ncase \"$*\" in\n\
         *--function={hang}*) echo $$ > {pids}; sleep 60 & echo $! >> {pids}; wait ;;\n\
         *--function={crash}*) kill -SEGV $$ ;;\n\
         esac\nexec {real} \"$@\"\n",
        pids = dir.join("hung.pids").display(),
        calls = dir.join("bench-calls.log").display(),
        real = iree_bin().join("iree-benchmark-module").display(),
    );
    let bench = tools.join("iree-benchmark-module");
    std::fs::write(&bench, script).unwrap();
    std::fs::set_permissions(&bench, std::fs::Permissions::from_mode(0o755)).unwrap();
    tools
}

#[test]
fn a_hung_or_crashed_kernel_fails_its_row_and_the_batch_goes_on() {
    let env = Env::new();
    let hang = "conv_2d_float32_forward_1x4x8x8_";
    let crash = "conv_2d_float32_weight_backward_1x4x8x8_";
    let tools = flaky_tools(&env.path(), hang, crash);
    let text = format!("{SMALL} -F 1\n{SMALL} -F 4\n{SMALL} -F 2\n");
    std::fs::write(env.path().join("batch.txt"), text).unwrap();
    let mut cmd = env.cmd_with_tools(
        &tools,
        &[
            "--timeout",
            "8",
            "--commands-file",
            "batch.txt",
            "--json",
            "out.json",
        ],
    );
    // Compiles take well under the timeout; the hung run is killed at it.
    let (stdout, stderr) = env.run(&mut cmd, 1);
    let json = env.json("out.json");
    let status = |i: usize| json["rows"][i]["status"].as_str().unwrap().to_string();
    assert!(
        status(0).starts_with("run failed (timed out after 8s)"),
        "{stdout}"
    );
    assert!(
        status(1).starts_with("run failed (killed by signal 11)"),
        "{stdout}"
    );
    assert_eq!(status(2), "ok", "{stdout}");
    assert!(stderr.contains("3 kernels: 1 ok, 2 failed"), "{stderr}");
    // The hung process and the child it started were killed with its group.
    let pids = std::fs::read_to_string(env.path().join("hung.pids")).unwrap();
    for pid in pids.split_whitespace() {
        let alive = Path::new(&format!("/proc/{pid}")).exists()
            && !std::fs::read_to_string(format!("/proc/{pid}/stat"))
                .unwrap_or_default()
                .contains(") Z ");
        assert!(!alive, "process {pid} outlived its timeout");
    }
}

#[test]
fn an_interrupted_driver_takes_its_running_kernel_with_it() {
    use std::os::unix::process::ExitStatusExt;
    let env = Env::new();
    let hang = "conv_2d_float32_forward_1x4x8x8_";
    let tools = flaky_tools(&env.path(), hang, "no-such-function");
    let mut args = vec!["--timeout", "600"];
    args.extend(words(SMALL));
    args.extend(["-F", "1"]);
    let mut cmd = env.cmd_with_tools(&tools, &args);
    cmd.stdout(Stdio::null()).stderr(Stdio::null());
    let mut driver = cmd.spawn().unwrap();
    let pids = env.path().join("hung.pids");
    let started = std::time::Instant::now();
    while std::fs::read_to_string(&pids).map_or(true, |t| t.lines().count() < 2) {
        assert!(
            started.elapsed().as_secs() < 120,
            "the kernel never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    // What a terminal's Ctrl-C sends to lockstep (its kernels run in their
    // own process groups, so they do not get it).
    nix::sys::signal::kill(
        nix::unistd::Pid::from_raw(driver.id() as i32),
        nix::sys::signal::Signal::SIGINT,
    )
    .unwrap();
    let status = driver.wait().unwrap();
    assert_eq!(status.signal(), Some(2), "{status:?}");
    std::thread::sleep(std::time::Duration::from_millis(200));
    for pid in std::fs::read_to_string(&pids).unwrap().split_whitespace() {
        let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
        assert!(
            stat.is_empty() || stat.contains(") Z "),
            "process {pid} outlived the interrupted driver: {stat}"
        );
    }
}

#[test]
fn misplaced_options_and_bad_values_are_usage_errors_before_any_compile() {
    let env = Env::new();
    std::fs::write(env.path().join("one.txt"), format!("{SMALL} -F 1\n")).unwrap();
    let cases: &[(&[&str], &str)] = &[
        (
            &["-j4", "conv", "-n", "1"],
            "`-j4` is not an option of lockstep bench",
        ),
        (
            &["--commands-file", "one.txt", "--verfy"],
            "`--verfy` after --commands-file is not a MIOpen flag",
        ),
        (
            &["--commands-file", "nope.txt"],
            "--commands-file nope.txt does not exist",
        ),
        (
            &["--commands-file", "."],
            "--commands-file . is a directory",
        ),
        (
            &["--commands-file", "/dev/zero"],
            "--commands-file /dev/zero is larger than 67108864 bytes",
        ),
        (
            &["--timeout", "1e30", "conv", "-n", "1"],
            "invalid --timeout",
        ),
        (
            &["--splat-input-value", "abc", "conv", "-n", "1"],
            "not a finite number",
        ),
        (
            &[
                "--splat-input-value",
                "2.5",
                "convint8",
                "-n",
                "1",
                "-F",
                "1",
            ],
            "int8 inputs need an integer",
        ),
    ];
    for (args, needle) in cases {
        let (_, stderr) = env.run(&mut env.cmd(args), 2);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(stderr.contains("hint: "), "{args:?}: {stderr}");
    }
    assert_eq!(env.files_in_cache(), 0, "nothing was compiled");
    // The extra flags after `--` are MIOpen's and are fine.
    env.run(
        &mut env.cmd(&["--commands-file", "one.txt", "--", "-i", "2"]),
        0,
    );
}

#[test]
fn commands_files_with_a_bom_quoted_words_or_no_commands() {
    let env = Env::new();
    let text = format!("\u{feff}{SMALL} -F 1 -d 'my input.bin'\n");
    std::fs::write(env.path().join("bom.txt"), text).unwrap();
    let (stdout, stderr) = env.run(
        &mut env.cmd(&["--commands-file", "bom.txt", "--csv", "out.csv"]),
        0,
    );
    // The echoed command splits back into the same words.
    assert!(
        stdout.starts_with(&format!("{SMALL} -F 1 -d 'my input.bin'\n")),
        "{stdout}"
    );
    assert!(
        stderr.contains("note: line 1: ignored `-d my input.bin`"),
        "{stderr}"
    );
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    assert!(csv.contains(",ok\n"), "{csv}");

    std::fs::write(env.path().join("empty.txt"), "# nothing yet\n\n").unwrap();
    let (_, stderr) = env.run(&mut env.cmd(&["--commands-file", "empty.txt"]), 0);
    assert!(
        stderr.contains("warning: empty.txt has no commands"),
        "{stderr}"
    );
}

#[test]
fn timed_runs_read_seeded_inputs_unless_a_splat_is_forced() {
    let env = Env::new();
    let tools = flaky_tools(&env.path(), "no-hang", "no-crash");
    let run = |extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend(words(SMALL));
        args.extend(["-F", "1"]);
        let mut cmd = env.cmd_with_tools(&tools, &args);
        env.run(&mut cmd, 0);
        let log = std::fs::read_to_string(env.path().join("bench-calls.log")).unwrap();
        std::fs::remove_file(env.path().join("bench-calls.log")).unwrap();
        log
    };
    let seeded = run(&[]);
    assert!(
        seeded.contains("--input=1x4x8x8xf32=@") && seeded.contains("in0.bin"),
        "{seeded}"
    );
    let splat = run(&["--splat-input-value", "0.5"]);
    assert!(splat.contains("--input=1x4x8x8xf32=0.5"), "{splat}");
    assert!(!splat.contains(".bin"), "{splat}");
}

/// A million-tap transposed convolution is generated, compiled, run and
/// verified like any other kernel: the module does not unroll the taps.
#[test]
fn a_million_tap_transposed_convolution_compiles_runs_and_verifies() {
    let env = Env::new();
    let (stdout, _) = env.run(
        &mut env.cmd(&[
            "--verify", "--json", "out.json", "conv", "-m", "trans", "-n", "1", "-c", "1", "-H",
            "2", "-W", "1", "-k", "1", "-y", "1000000", "-x", "1", "-u", "3", "-F", "1", "-i", "1",
        ]),
        0,
    );
    assert!(stdout.contains(" PASS"), "{stdout}");
    let json = env.json("out.json");
    let row = &json["rows"][0];
    assert_eq!(row["check"]["passed"], true, "{json}");
    // (2-1)*3 + (1000000-1) + 1 output rows.
    assert_eq!(row["output_shape"][2], 1_000_003, "{json}");
}

/// The largest filter the flags allow fails its row with the tensor sizes
/// and the limit before anything is compiled or written, and the batch
/// goes on; `[bench] max-bytes` applies like `--max-bytes`.
#[test]
fn a_kernel_over_max_bytes_fails_its_row_with_sizes_before_compiling() {
    let env = Env::new();
    let huge = "conv -m trans -n 1 -c 1 -H 1 -W 1 -k 1 -y 2147483647 -x 1 -F 1";
    let gemm = "gemm -m 1000000 -k 1000000 -n 1";
    std::fs::write(
        env.path().join("batch.txt"),
        format!("{huge}\n{gemm}\n{SMALL} -F 1\n"),
    )
    .unwrap();
    let (stdout, stderr) = env.run(
        &mut env.cmd(&[
            "--max-bytes",
            "1G",
            "--commands-file",
            "batch.txt",
            "--csv",
            "out.csv",
        ]),
        1,
    );
    let text = format!("{stdout}{stderr}");
    assert!(text.contains("output 1x1x2147483647x1xfloat32"), "{text}");
    assert!(text.contains("a 1000000x1000000xfloat32"), "{text}");
    assert!(text.contains("limit of 1073741824 bytes"), "{text}");
    assert!(text.contains("--max-bytes"), "{text}");
    assert!(
        text.contains("1 compiled"),
        "only the small row compiles: {text}"
    );
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    let rows: Vec<&str> = csv.lines().skip(1).collect();
    assert_eq!(rows.len(), 3, "{csv}");
    assert!(rows[0].contains("too large"), "{csv}");
    assert!(rows[1].contains("too large"), "{csv}");
    assert!(rows[2].ends_with(",ok"), "{csv}");

    std::fs::write(
        env.path().join("lockstep.toml"),
        "[bench]\nmax-bytes = \"2K\"\n",
    )
    .unwrap();
    let (stdout, _) = env.run(&mut env.cmd(&words(SMALL)), 1);
    assert!(
        stdout.contains("more than the limit of 2048 bytes"),
        "{stdout}"
    );
}

/// Negative, zero and out-of-range values of MIOpen's numeric flags are
/// usage errors naming the flag and the value, before any compile.
#[test]
fn bad_numeric_flag_values_name_the_flag_and_value() {
    let env = Env::new();
    let cases: &[(&str, &str)] = &[
        ("gemm -u 2", "bad value for -u/--transA: 0 or 1, found 2"),
        ("conv -t -1", "bad value for -t/--time: 0 or 1, found -1"),
        ("conv -b 2", "bad value for -b/--bias: 0 or 1, found 2"),
        (
            "conv -u 0",
            "bad value for -u/--conv_stride_h: must be at least 1, found 0",
        ),
        (
            "conv -p -1",
            "bad value for -p/--pad_h: must not be negative, found -1",
        ),
        (
            "conv -i 0",
            "bad value for -i/--iter: must be at least 1, found 0",
        ),
        (
            "conv -n 2147483648",
            "bad value for -n/--batchsize: 2147483648 is out of range",
        ),
        ("gemm -F 0", "bad value for -F/--forw"),
        ("layernorm -X 0x4", "bad value for -X/--input"),
    ];
    for (line, needle) in cases {
        let (_, stderr) = env.run(&mut env.cmd(&words(line)), 2);
        assert!(stderr.contains(needle), "{line}: {stderr}");
        assert!(
            stderr.contains(line),
            "{line}: the error names the command: {stderr}"
        );
    }
    assert_eq!(env.files_in_cache(), 0, "nothing was compiled");
}

/// The bench work directories in the test's TMPDIR.
fn work_dirs(env: &Env) -> Vec<PathBuf> {
    std::fs::read_dir(env.p.root().join("tmp"))
        .map(|entries| {
            entries
                .flatten()
                .map(|e| e.path())
                .filter(|p| p.to_string_lossy().contains("lockstep-bench-"))
                .collect()
        })
        .unwrap_or_default()
}

/// `gemm -m 20000 -k 20000` needs a 1.6 GB input file: under a file size
/// limit its row fails naming the file (EFBIG; lockstep ignores SIGXFSZ
/// instead of dying of it), the batch finishes and the work directory is
/// removed.
#[test]
fn a_file_size_limit_fails_the_row_naming_the_file_and_leaves_no_work_directory() {
    let env = Env::new();
    let mut cmd = Command::new("sh");
    cmd.args(["-c", "ulimit -f 20480 && exec \"$0\" \"$@\""])
        .arg(env!("CARGO_BIN_EXE_lockstep"))
        .args(["bench", "--iree-bin"])
        .arg(iree_bin())
        .args([
            "--max-bytes",
            "64G",
            "--csv",
            "out.csv",
            "gemm",
            "-m",
            "20000",
            "-k",
            "20000",
            "-n",
            "1",
        ]);
    env.p.isolate(&mut cmd);
    let (stdout, stderr) = env.run(&mut cmd, 1);
    let text = format!("{stdout}{stderr}");
    assert!(
        text.contains("cannot write the kernel's inputs to "),
        "{text}"
    );
    assert!(text.contains("in0.bin: File too large"), "{text}");
    assert!(text.contains("ulimit -f"), "{text}");
    let csv = std::fs::read_to_string(env.path().join("out.csv")).unwrap();
    assert!(csv.contains("File too large"), "{csv}");
    assert_eq!(
        work_dirs(&env),
        Vec::<PathBuf>::new(),
        "nothing left behind"
    );
}

/// A work directory whose bench was killed (its owner is gone) is removed
/// by the next bench; one kept for its logs, or whose owner runs, is not.
#[test]
fn a_killed_benchs_work_directory_is_removed_by_the_next() {
    let env = Env::new();
    let tmp = env.p.root().join("tmp");
    let make = |name: &str, owner: Option<&str>| {
        let dir = tmp.join(name);
        std::fs::create_dir_all(dir.join("inputs/0")).unwrap();
        std::fs::write(dir.join("inputs/0/in0.bin"), vec![0u8; 1 << 20]).unwrap();
        if let Some(pid) = owner {
            std::fs::write(dir.join(".lockstep-owner"), format!("{pid}\n")).unwrap();
        }
        dir
    };
    let killed = make("lockstep-bench-killed", Some("999999999"));
    let kept = make("lockstep-bench-kept", None);
    let running = make(
        "lockstep-bench-running",
        Some(&std::process::id().to_string()),
    );
    env.run(&mut env.cmd(&words(SMALL)), 0);
    assert!(!killed.exists(), "swept");
    assert!(kept.exists() && running.exists());
    let mut left = work_dirs(&env);
    left.sort();
    assert_eq!(left, [kept, running], "the bench removed its own");
}
