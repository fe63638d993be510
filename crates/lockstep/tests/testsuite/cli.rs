//! The command-line surface, pinned by snapshots: help texts and the shape of
//! error reports. A change here is a change users see.

use crate::common::Project;

/// `lockstep ARGS` in a fresh project: its exit code, stdout and stderr.
fn lockstep(p: &Project, args: &[&str]) -> (i32, String, String) {
    let out = crate::common::output(p.cmd(args).env("NO_COLOR", "1"));
    (
        out.status.code().unwrap_or(-1),
        crate::common::stdout(&out),
        crate::common::stderr(&out),
    )
}

#[test]
fn top_level_help() {
    let (code, stdout, _) = lockstep(&Project::new(), &["--help"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn integrate_help() {
    let (code, stdout, _) = lockstep(&Project::new(), &["integrate", "--help"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn loop_help() {
    let (code, stdout, _) = lockstep(&Project::new(), &["integrate", "loop", "--help"]);
    assert_eq!(code, 0);
    insta::assert_snapshot!(stdout);
}

#[test]
fn unknown_config_key_names_file_line_and_key() {
    let p = Project::new();
    p.write(
        "lockstep.toml",
        "[integrate]\nsubmodule = \"deps/llvm\"\nsmoke-timout = \"2h\"\n",
    );
    let (code, _, stderr) = lockstep(&p, &["integrate", "status"]);
    assert_eq!(code, 2);
    let stderr = stderr.replace(&p.path().display().to_string(), "[DIR]");
    insta::assert_snapshot!(stderr);
}

#[test]
fn outside_a_repository_is_a_usage_error_with_a_hint() {
    let (code, _, stderr) = lockstep(&Project::new(), &["integrate", "status"]);
    assert_eq!(code, 2);
    assert!(stderr.starts_with("error: "), "{stderr}");
    assert!(stderr.contains("hint: "), "{stderr}");
}

/// The README's first command: the whole demo, end to end, with the real
/// tools (provisioned on first use) and a cache of its own.
#[test]
fn demo_runs_end_to_end() {
    let p = Project::new();
    let demo = p.root().join("demo");
    let exchanges = p.root().join("github.jsonl");
    let out = crate::common::output(
        p.cmd(&["demo", "--dir"])
            .arg(&demo)
            .env("LOCKSTEP_DEMO_GITHUB_LOG", &exchanges),
    );
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert_eq!(
        out.status.code(),
        Some(0),
        "{stdout}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        stdout.contains("halts: 3 (3 expected culprits named exactly: yes)"),
        "{stdout}"
    );
    // The smoke suite's 24 tests and the lit suite's 21, one run.
    assert!(stdout.contains("45 tests: 45 pass, 0 fail"), "{stdout}");
    assert!(
        stdout.contains("PASS") && !stdout.contains("FAIL ("),
        "{stdout}"
    );
    // The site links the pull request the integrate loops opened and
    // updated, and lists the release the demo published.
    let integrate = std::fs::read_to_string(demo.join("site/integrate.html")).unwrap();
    assert!(
        integrate.contains("<td class=\"pull\"><a") && integrate.contains("#1</a>"),
        "the integrate page does not link PR #1"
    );
    let releases = std::fs::read_to_string(demo.join("site/releases.html")).unwrap();
    assert!(!releases.contains("No release store"), "{releases}");
    // The demo's own loopback GitHub, held to GitHub's description as the
    // tests' servers are: every exchange it had.
    let (operations, departures) =
        lockstep_testkit::github::check_exchange_log(&exchanges).expect("the exchange log");
    assert!(
        departures.is_empty(),
        "the demo's loopback GitHub departed from GitHub's description:\n{}",
        departures.join("\n")
    );
    for op in ["pulls/create", "pulls/update", "pulls/list"] {
        assert!(
            operations.iter().any(|o| o == op),
            "{op} not among {operations:?}"
        );
    }
    // The README's account of the demo's end is the demo's.
    let readme = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../README.md"))
        .expect("README.md");
    let ending = stdout
        .lines()
        .find_map(|l| l.trim().split(';').next().filter(|s| s.starts_with("all ")))
        .unwrap_or_else(|| panic!("no `all N steps passed` line:\n{stdout}"));
    assert!(
        readme.contains(&format!("`{ending}`")),
        "README.md does not say `{ending}`, what the demo printed"
    );
}

/// The demo's exchange log where it cannot be written: a usage error
/// naming the variable, before the demo writes anything.
#[test]
fn an_unwritable_demo_exchange_log_is_refused_before_anything_is_written() {
    let p = Project::new();
    let demo = p.root().join("demo");
    let out = crate::common::output(p.cmd(&["demo", "--dir"]).arg(&demo).env(
        "LOCKSTEP_DEMO_GITHUB_LOG",
        p.root().join("missing/github.jsonl"),
    ));
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("LOCKSTEP_DEMO_GITHUB_LOG="), "{stderr}");
    assert!(!demo.exists(), "the demo wrote before refusing");
}

/// Subcommand paths of `lockstep` (`["bench", "compare"]` ...), from the
/// help texts themselves.
fn commands(p: &Project, prefix: &[&str]) -> Vec<Vec<String>> {
    let mut args: Vec<&str> = prefix.to_vec();
    args.push("--help");
    let (_, help, _) = lockstep(p, &args);
    let mut found = Vec::new();
    let listed = help
        .split("\nCommands:\n")
        .nth(1)
        .map(|rest| rest.split("\n\n").next().unwrap_or_default().to_string())
        .unwrap_or_default();
    for line in listed.lines() {
        let Some(name) = line.split_whitespace().next() else {
            continue;
        };
        if name == "help" {
            continue;
        }
        let mut path: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
        path.push(name.to_string());
        found.push(path);
    }
    found
}

/// Every command's help has its headings in one order (clap puts its
/// default `Options` first: then Input, Output, Global options), and every
/// top-level command names the docs page that says the rest.
#[test]
fn help_headings_in_one_order_and_every_command_names_its_docs() {
    let p = Project::new();
    let (_, top, _) = lockstep(&p, &["--help"]);
    let listed = top.split("\nCommands:\n").nth(1).unwrap();
    for line in listed.split("\n\n").next().unwrap().lines() {
        let name = line.split_whitespace().next().unwrap();
        if name != "help" {
            assert!(
                line.contains("docs/") || line.contains("README.md"),
                "`lockstep {name}` names no docs page: {line}"
            );
        }
    }
    let order = [
        "Arguments:",
        "Options:",
        "Input:",
        "Output:",
        "Global options:",
    ];
    let mut checked = 0;
    let mut queue = commands(&p, &[]);
    while let Some(path) = queue.pop() {
        let args: Vec<&str> = path.iter().map(String::as_str).collect();
        let children = commands(&p, &args);
        if !children.is_empty() {
            queue.extend(children);
            continue;
        }
        let mut with_help = args.clone();
        with_help.push("--help");
        let (code, help, _) = lockstep(&p, &with_help);
        assert_eq!(code, 0, "{path:?}");
        let headings: Vec<usize> = help
            .lines()
            .filter_map(|l| order.iter().position(|h| l == *h))
            .collect();
        assert!(
            headings.windows(2).all(|w| w[0] < w[1]),
            "`lockstep {}`: headings out of order:\n{help}",
            path.join(" ")
        );
        checked += 1;
    }
    assert!(checked > 40, "only {checked} commands found");
}
