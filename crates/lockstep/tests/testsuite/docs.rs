//! docs/architecture.md stays true to the tree: every path it names exists,
//! and every crate of the workspace has its row in the crate table (a new
//! crate cannot land undocumented, a moved file cannot leave a stale
//! pointer).

use std::path::{Path, PathBuf};

fn top() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn architecture() -> String {
    std::fs::read_to_string(top().join("docs/architecture.md")).expect("docs/architecture.md")
}

/// Every `crates/...` path written in backticks.
fn named_paths(text: &str) -> Vec<String> {
    text.split('`')
        .skip(1)
        .step_by(2)
        .filter(|span| span.starts_with("crates/"))
        .map(|span| span.trim_end_matches('/').to_string())
        .collect()
}

#[test]
fn every_path_the_architecture_names_exists() {
    let text = architecture();
    let paths = named_paths(&text);
    assert!(paths.len() >= 20, "only {} paths named", paths.len());
    let missing: Vec<&String> = paths.iter().filter(|p| !top().join(p).exists()).collect();
    assert!(
        missing.is_empty(),
        "named in docs/architecture.md but not in the tree: {missing:?}"
    );
}

#[test]
fn every_crate_has_its_row() {
    let text = architecture();
    let mut crates: Vec<String> = std::fs::read_dir(top().join("crates"))
        .expect("crates/")
        .flatten()
        .filter(|e| e.path().join("Cargo.toml").is_file())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    crates.sort();
    assert!(crates.len() >= 20, "{crates:?}");
    let undocumented: Vec<&String> = crates
        .iter()
        .filter(|name| !text.contains(&format!("| `{name}` |")))
        .collect();
    assert!(
        undocumented.is_empty(),
        "crates without a row in docs/architecture.md: {undocumented:?}"
    );
}

/// Each crate's lockstep dependencies as `cargo metadata` has them:
/// `(normal, dev)`.
fn crate_graph() -> std::collections::BTreeMap<String, (Vec<String>, Vec<String>)> {
    let out = std::process::Command::new(env!("CARGO"))
        .args([
            "metadata",
            "--format-version",
            "1",
            "--no-deps",
            "--offline",
        ])
        .current_dir(top())
        .output()
        .expect("cargo metadata");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let meta: serde_json::Value = serde_json::from_slice(&out.stdout).expect("metadata JSON");
    let mut graph = std::collections::BTreeMap::new();
    for package in meta["packages"].as_array().expect("packages") {
        let name = package["name"].as_str().expect("name").to_string();
        let (mut normal, mut dev) = (Vec::new(), Vec::new());
        for dep in package["dependencies"].as_array().expect("dependencies") {
            let dep_name = dep["name"].as_str().expect("dependency name");
            if !dep_name.starts_with("lockstep") {
                continue;
            }
            match dep["kind"].as_str() {
                None => normal.push(dep_name.to_string()),
                Some("dev") => dev.push(dep_name.to_string()),
                Some(_) => {}
            }
        }
        normal.sort();
        dev.sort();
        graph.insert(name, (normal, dev));
    }
    graph
}

/// The `uses` column of the crate table: crate -> the lockstep crates it names.
fn claimed_uses(text: &str) -> std::collections::BTreeMap<String, Vec<String>> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split(" | ").collect();
            let name = cells.first()?.strip_prefix("| `")?.strip_suffix('`')?;
            let mut uses: Vec<String> = cells
                .get(1)?
                .split(',')
                .map(str::trim)
                .filter(|u| u.starts_with("lockstep"))
                .map(str::to_string)
                .collect();
            uses.sort();
            Some((name.to_string(), uses))
        })
        .collect()
}

#[test]
fn the_crate_table_draws_every_arrow_and_no_other() {
    let claimed = claimed_uses(&architecture());
    let graph = crate_graph();
    assert!(graph.len() >= 20, "{graph:?}");
    let mut wrong = Vec::new();
    for (name, (normal, _)) in &graph {
        match claimed.get(name) {
            None => wrong.push(format!("{name}: no row")),
            Some(uses) if uses != normal => {
                let missing: Vec<&String> = normal.iter().filter(|d| !uses.contains(d)).collect();
                let extra: Vec<&String> = uses.iter().filter(|d| !normal.contains(d)).collect();
                wrong.push(format!(
                    "{name}: arrows not in the doc {missing:?}, arrows the doc claims that do not exist {extra:?}"
                ));
            }
            Some(_) => {}
        }
    }
    assert!(
        wrong.is_empty(),
        "docs/architecture.md's `uses` column disagrees with cargo metadata:\n{}",
        wrong.join("\n")
    );
}

/// The crates the released `lockstep` binary links: its normal (not dev,
/// not build) dependencies, followed transitively, and itself; each with
/// the chain of crates that pulls it in.
fn released_closure(
    graph: &std::collections::BTreeMap<String, (Vec<String>, Vec<String>)>,
) -> std::collections::BTreeMap<String, Vec<String>> {
    let mut seen = std::collections::BTreeMap::new();
    let mut todo = vec![vec!["lockstep".to_string()]];
    while let Some(chain) = todo.pop() {
        let name = chain.last().expect("a chain names a crate").clone();
        if seen.contains_key(&name) {
            continue;
        }
        if let Some((normal, _)) = graph.get(&name) {
            for dep in normal {
                let mut longer = chain.clone();
                longer.push(dep.clone());
                todo.push(longer);
            }
        }
        seen.insert(name, chain);
    }
    seen
}

/// The crates whose row in docs/architecture.md says "dev-only" (what only
/// tests, benchmarks and examples use).
fn dev_only_crates(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|line| {
            let cells: Vec<&str> = line.split(" | ").collect();
            let name = cells.first()?.strip_prefix("| `")?.strip_suffix('`')?;
            cells
                .get(2)?
                .starts_with("dev-only")
                .then(|| name.to_string())
        })
        .collect()
}

/// Each dev-only crate of `dev_only` that the released binary would link,
/// with the chain of normal dependencies that pulls it in.
fn dev_only_problems(
    graph: &std::collections::BTreeMap<String, (Vec<String>, Vec<String>)>,
    dev_only: &[String],
) -> Vec<String> {
    let closure = released_closure(graph);
    dev_only
        .iter()
        .filter_map(|name| {
            closure.get(name).map(|chain| {
                format!(
                    "{name} is in the released binary: {} (make the last arrow a dev-dependency)",
                    chain.join(" -> ")
                )
            })
        })
        .collect()
}

/// The released binary carries no test-only code: no crate the
/// architecture calls dev-only (the Actions emulator, the testkit's
/// fixtures, releases and CI of the loopback GitHub) is in the normal
/// dependency closure of the `lockstep` package.
#[test]
fn no_dev_only_crate_is_in_the_released_binary() {
    let dev_only = dev_only_crates(&architecture());
    for must in ["lockstep-actions", "lockstep-testkit"] {
        assert!(
            dev_only.iter().any(|d| d == must),
            "docs/architecture.md's row for {must} must say dev-only: {dev_only:?}"
        );
    }
    let graph = crate_graph();
    let problems = dev_only_problems(&graph, &dev_only);
    assert!(
        problems.is_empty(),
        "test-only code would ship:\n{}",
        problems.join("\n")
    );
    let closure = released_closure(&graph);
    assert!(
        closure.contains_key("lockstep-sandbox") && closure.contains_key("lockstep-core"),
        "the closure walk found too little: {closure:?}"
    );
    for name in ["lockstep-actions", "lockstep-testkit"] {
        assert!(
            graph["lockstep"].1.iter().any(|d| d == name),
            "{name}: the binary's tests use it as a dev-dependency"
        );
    }
}

/// The check above fails on a planted normal edge, however deep, naming
/// the chain; a crate outside the binary (the fuzz runner) may use it.
#[test]
fn the_dev_only_check_finds_a_planted_edge() {
    let dev_only = vec!["lockstep-testkit".to_string()];
    let edge = |normal: &[&str]| -> (Vec<String>, Vec<String>) {
        (normal.iter().map(|s| s.to_string()).collect(), Vec::new())
    };
    let mut graph = std::collections::BTreeMap::new();
    graph.insert("lockstep".to_string(), edge(&["lockstep-demo"]));
    graph.insert("lockstep-demo".to_string(), edge(&["lockstep-sandbox"]));
    graph.insert("lockstep-sandbox".to_string(), edge(&[]));
    graph.insert("lockstep-testkit".to_string(), edge(&["lockstep-sandbox"]));
    graph.insert("lockstep-fuzz".to_string(), edge(&["lockstep-testkit"]));
    assert!(dev_only_problems(&graph, &dev_only).is_empty());
    graph.insert("lockstep-sandbox".to_string(), edge(&["lockstep-testkit"]));
    let problems = dev_only_problems(&graph, &dev_only);
    assert_eq!(
        problems,
        ["lockstep-testkit is in the released binary: lockstep -> lockstep-demo -> lockstep-sandbox -> lockstep-testkit (make the last arrow a dev-dependency)"]
    );
}

/// The engines do not reach lockstep-pkg sideways through bench again.
#[test]
fn bench_does_not_use_pkg() {
    let graph = crate_graph();
    assert!(!graph["lockstep-bench"]
        .0
        .iter()
        .any(|d| d == "lockstep-pkg"));
}

/// The binary parses and prints; engines hold the logic (docs/architecture.md's
/// rule for `lockstep`). Its sources stay at or under 2,300 lines, counted as
/// `wc -l` counts them, so engine logic creeping into a handler shows here.
#[test]
fn the_binary_crate_stays_thin() {
    const MOST: usize = 2_300;
    let mut files = Vec::new();
    let mut dirs = vec![top().join("crates/lockstep/src")];
    while let Some(dir) = dirs.pop() {
        for entry in std::fs::read_dir(&dir).expect("crates/lockstep/src") {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                let rel = path
                    .strip_prefix(top())
                    .unwrap_or(&path)
                    .display()
                    .to_string();
                files.push((text.matches('\n').count(), rel));
            }
        }
    }
    let total: usize = files.iter().map(|(n, _)| n).sum();
    files.sort_by(|a, b| b.cmp(a));
    let listed: Vec<String> = files.iter().map(|(n, f)| format!("{n:>6} {f}")).collect();
    assert!(
        total <= MOST,
        "the binary crate has {total} lines, more than {MOST}: move engine logic (flag checks beyond clap, decisions, composed results, their human form) to its engine\n{}",
        listed.join("\n")
    );
}

/// The README's layout lists every crate `cargo metadata` knows, each as
/// `crates/NAME`, and no other.
#[test]
fn the_readme_layout_lists_every_crate() {
    let readme = std::fs::read_to_string(top().join("README.md")).expect("README.md");
    let layout = readme
        .split("## Layout")
        .nth(1)
        .and_then(|rest| rest.split("```").nth(1))
        .expect("a ``` block under ## Layout");
    let listed: std::collections::BTreeSet<String> = layout
        .lines()
        .filter_map(|l| l.split_whitespace().next())
        .filter_map(|p| p.strip_prefix("crates/"))
        .map(str::to_string)
        .collect();
    let crates: std::collections::BTreeSet<String> = crate_graph().into_keys().collect();
    assert_eq!(
        listed, crates,
        "README.md's layout and cargo metadata disagree"
    );
}

/// Every `.rs` file under `dir`, with its text.
fn sources(dir: &Path) -> Vec<(PathBuf, String)> {
    let mut out = Vec::new();
    let mut dirs = vec![dir.to_path_buf()];
    while let Some(dir) = dirs.pop() {
        let Ok(entries) = std::fs::read_dir(&dir) else {
            continue;
        };
        for entry in entries.flatten() {
            let path = entry.path();
            if path.is_dir() {
                dirs.push(path);
            } else if path.extension().is_some_and(|e| e == "rs") {
                let text = std::fs::read_to_string(&path).expect("a source file");
                out.push((path, text));
            }
        }
    }
    out
}

/// Integrate is operations over a small context: no type of
/// lockstep-integrate has more than 40 methods.
#[test]
fn no_integrate_type_has_more_than_40_methods() {
    let impl_start = regex::Regex::new(
        r"(?m)^impl(?:<[^>]*>)? (?:[\w:]+(?:<[^>]*>)? for )?(\w+)(?:<[^>]*>)? \{\n",
    )
    .unwrap();
    let method = regex::Regex::new(r"(?m)^    (?:pub(?:\([\w:]+\))? )?(?:const )?fn ").unwrap();
    let mut counts: std::collections::BTreeMap<String, usize> = Default::default();
    for (path, text) in sources(&top().join("crates/lockstep-integrate/src")) {
        for caps in impl_start.captures_iter(&text) {
            let body_start = caps.get(0).unwrap().end();
            let body_end = text[body_start..]
                .find("\n}\n")
                .map(|e| body_start + e)
                .unwrap_or_else(|| panic!("an impl block of {} ends", path.display()));
            *counts.entry(caps[1].to_string()).or_default() +=
                method.find_iter(&text[body_start..body_end]).count();
        }
    }
    assert!(counts["Integrate"] > 10, "{counts:?}");
    let big: Vec<_> = counts.iter().filter(|(_, n)| **n > 40).collect();
    assert!(big.is_empty(), "types with more than 40 methods: {big:?}");
}

/// No crate but lockstep-pin (and lockstep-git, which wraps git's
/// gitlinks) names a kind of pin: what a submodule or a pin file does is
/// asked of the `Pin`, never decided by its kind elsewhere.
#[test]
fn no_crate_but_lockstep_pin_names_a_pin_kind() {
    let kinds = [
        "stage_gitlink(",
        ".gitlink(",
        "pin_file()",
        "file_pin()",
        "is_whole_file",
        "submodule_pin(",
        "\"LOCKSTEP_PIN_FILE\"",
        "\"LOCKSTEP_SUBMODULE\"",
    ];
    let mut found = Vec::new();
    for entry in std::fs::read_dir(top().join("crates")).expect("crates") {
        let dir = entry.expect("a crate").path();
        let name = dir.file_name().unwrap().to_string_lossy().into_owned();
        if ["lockstep-pin", "lockstep-git"].contains(&name.as_str()) {
            continue;
        }
        for (path, text) in sources(&dir.join("src")) {
            for kind in kinds {
                if text.contains(kind) {
                    found.push(format!("{} names `{kind}`", path.display()));
                }
            }
        }
    }
    assert!(found.is_empty(), "{}", found.join("\n"));
}
