//! docs/architecture.md stays true to the tree: every path it names exists,
//! and every crate of the workspace has its row in the crate table (a new
//! crate cannot land undocumented, a moved file cannot leave a stale
//! pointer).

// Test code starts its fixtures' processes directly; product code goes
// through lockstep_core::process (clippy.toml).
#![allow(clippy::disallowed_methods)]

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

#[test]
fn the_actions_emulator_is_a_dev_dependency_only() {
    let graph = crate_graph();
    let normal_users: Vec<&String> = graph
        .iter()
        .filter(|(_, (normal, _))| normal.iter().any(|d| d == "lockstep-actions"))
        .map(|(name, _)| name)
        .collect();
    assert!(
        normal_users.is_empty(),
        "lockstep-actions is a normal dependency of {normal_users:?}: the released binary would carry the emulator"
    );
    assert!(graph["lockstep"].1.iter().any(|d| d == "lockstep-actions"));
    // Nor may the engines reach lockstep-pkg sideways through bench again.
    assert!(!graph["lockstep-bench"]
        .0
        .iter()
        .any(|d| d == "lockstep-pkg"));
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
