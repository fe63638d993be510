//! How outputs are chosen on the command line: runners write `--json -` to
//! stdout (one JSON document with `schema`, nothing else on stdout; the
//! human output moves to stderr, as with `--csv -`), `-q`
//! keeps progress off stderr, and in `lockstep bench` options before the
//! MIOpen command word are lockstep's while after it they are MIOpen's
//! (`-q` there is the pad width) (docs/output.md).

use crate::common::Project;
use serde_json::Value;

#[test]
fn a_runner_writes_its_json_to_stdout_with_a_dash() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let out = p.run(&["test", "s", "--json", "-"], 0);
    // Stdout is the document alone; the human summary moved to stderr.
    let doc: Value = serde_json::from_slice(&out.stdout).expect("stdout is one JSON document");
    assert_eq!(doc["schema"], 1);
    assert_eq!(doc["summary"]["pass"], 1);
    assert!(String::from_utf8_lossy(&out.stderr).contains("test result: ok."));
    assert!(!p.path().join("-").exists(), "`-` is stdout, not a file");
}

#[test]
fn bench_csv_on_stdout_moves_the_boo_lines_to_stderr() {
    let p = Project::new();
    let out = p.run(
        &[
            "bench", "--csv", "-", "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "8",
            "-y", "3", "-x", "3", "-F", "1",
        ],
        0,
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 2, "a header and one row:\n{stdout}");
    assert!(lines[0].starts_with("arguments,min_time (us),"), "{stdout}");
    assert!(String::from_utf8_lossy(&out.stderr).contains(">>> tensor("));
}

#[test]
fn quiet_keeps_progress_off_stderr_but_not_results() {
    let p = Project::new();
    p.add_suite(&[("add", "11 22 33 44")]);
    let loud = p.run(&["test", "s"], 0);
    assert!(String::from_utf8_lossy(&loud.stderr).contains("1 test, "));
    let quiet = p.run(&["-q", "test", "s"], 0);
    let stderr = String::from_utf8_lossy(&quiet.stderr);
    assert!(
        !stderr.contains("1 test, ") && !stderr.contains("[1/1]"),
        "{stderr}"
    );
    assert!(String::from_utf8_lossy(&quiet.stdout).contains("1 pass"));
}

#[test]
fn bench_options_before_the_command_word_are_lockstep_s() {
    let p = Project::new();
    let conv = [
        "conv", "-n", "1", "-c", "4", "-H", "6", "-W", "6", "-k", "8", "-y", "3", "-x", "3", "-F",
        "1",
    ];
    // Before the command word: lockstep's quiet flag.
    let mut args = vec!["bench", "-q", "--json", "quiet.json"];
    args.extend(conv);
    let out = p.run(&args, 0);
    assert!(String::from_utf8_lossy(&out.stdout).contains(">>> tensor("));
    let row = &p.json("quiet.json")["rows"][0];
    assert!(
        row["func_name"].as_str().unwrap().contains("_0x0p_"),
        "{row}"
    );
    // After it: MIOpen's pad width.
    let mut args = vec!["bench", "--json", "pad.json"];
    args.extend(conv);
    args.extend(["-q", "1"]);
    p.run(&args, 0);
    let row = &p.json("pad.json")["rows"][0];
    assert!(
        row["func_name"].as_str().unwrap().contains("_0x1p_"),
        "{row}"
    );
}

/// The subcommand paths under `path` (`["integrate", "loop"]` ...), from
/// the binary's own help.
fn leaves(p: &Project, path: &[String]) -> Vec<Vec<String>> {
    let mut args: Vec<&str> = path.iter().map(String::as_str).collect();
    args.push("--help");
    let help = String::from_utf8_lossy(&p.run(&args, 0).stdout).into_owned();
    let Some(commands) = help.split("Commands:\n").nth(1) else {
        return vec![path.to_vec()];
    };
    commands
        .lines()
        .take_while(|l| l.starts_with("  "))
        .filter_map(|l| l.split_whitespace().next())
        .filter(|name| *name != "help")
        .flat_map(|name| {
            let mut sub = path.to_vec();
            sub.push(name.to_string());
            leaves(p, &sub)
        })
        .collect()
}

/// The output flags a command's help lists under `Output:`, as arguments
/// that send each to standard output (`--json`, `--json -`, `-o -`).
fn stdout_outputs(help: &str) -> Vec<Vec<String>> {
    let Some(section) = help.split("\nOutput:\n").nth(1) else {
        return Vec::new();
    };
    section
        .lines()
        .take_while(|l| l.starts_with(' '))
        .filter_map(|l| {
            let words: Vec<&str> = l.split_whitespace().collect();
            // `-o, --output <OUTPUT>` or `--json <FILE>` or `--json`.
            let flag = words.iter().find(|w| w.starts_with('-'))?;
            let flag = flag.trim_end_matches(',').to_string();
            let takes_value = l.contains(" <");
            Some(match takes_value {
                true => vec![flag, "-".to_string()],
                false => vec![flag],
            })
        })
        .collect()
}

/// Dummy values for what clap says is missing (`--good <REV>`, `<DIR>`,
/// `<--run <ID>|--latest-green <BRANCH>>`).
fn missing(stderr: &str) -> Vec<String> {
    let mut args = Vec::new();
    for line in stderr.lines().filter(|l| l.starts_with("  ")) {
        let first = line
            .trim()
            .trim_start_matches('<')
            .split('|')
            .next()
            .unwrap_or("");
        let words: Vec<&str> = first.split_whitespace().collect();
        match words.as_slice() {
            // `<CMD>...` after `--`: the caller adds a command.
            ["--", ..] => {}
            [cmd] if cmd.starts_with("CMD") => {}
            [flag, _value, ..] if flag.starts_with('-') => {
                args.extend([flag.to_string(), "1".to_string()])
            }
            [flag] if flag.starts_with('-') => args.push(flag.to_string()),
            _ => args.push("1".to_string()),
        }
    }
    args
}

#[test]
fn every_command_refuses_a_second_output_on_stdout_beside_events() {
    let p = Project::new();
    let mut checked = 0;
    for path in leaves(&p, &[]) {
        let mut args: Vec<String> = path.clone();
        args.push("--help".into());
        let help = String::from_utf8_lossy(
            &p.run(&args.iter().map(String::as_str).collect::<Vec<_>>(), 0)
                .stdout,
        )
        .into_owned();
        for output in stdout_outputs(&help) {
            let mut args: Vec<String> = vec!["--events".into(), "-".into()];
            args.extend(path.iter().cloned());
            args.extend(output.iter().cloned());
            let mut out = p
                .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
                .output()
                .unwrap();
            // Fill in what clap requires (the rule is checked after parsing).
            for _ in 0..3 {
                let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
                if !stderr.contains("required arguments were not provided") {
                    break;
                }
                let extra = missing(&stderr);
                let at = args.len() - output.len();
                let mut retry = args[..at].to_vec();
                retry.extend(extra);
                retry.extend(output.iter().cloned());
                if stderr.contains("-- <CMD>") {
                    retry.extend(["--".to_string(), "true".to_string()]);
                }
                args = retry;
                out = p
                    .cmd(&args.iter().map(String::as_str).collect::<Vec<_>>())
                    .output()
                    .unwrap();
            }
            let stderr = String::from_utf8_lossy(&out.stderr);
            assert_eq!(
                out.status.code(),
                Some(2),
                "lockstep {}: {stderr}",
                args.join(" ")
            );
            assert!(
                stderr.contains("--events -")
                    && stderr.contains("cannot both write to standard output"),
                "lockstep {}: {stderr}",
                args.join(" ")
            );
            assert!(
                out.stdout.is_empty(),
                "lockstep {}: wrote to stdout",
                args.join(" ")
            );
            checked += 1;
        }
    }
    // Every query and runner with a machine output was tried.
    assert!(checked >= 28, "only {checked} outputs checked");
}
