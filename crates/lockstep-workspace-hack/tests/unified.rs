//! The binary's build, the wheels' builds and the test build resolve every
//! crate they share with the same features (what this crate is for): read
//! from `cargo tree` over the lock file, offline. A crate that drifts (a new
//! dev-dependency turning on a feature) is named with the features to add
//! to crates/lockstep-workspace-hack/Cargo.toml.
#![allow(clippy::disallowed_methods)]

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::process::Command;

/// Each crate of a build (`name vVERSION`) and the feature sets it is built
/// with (two where a proc-macro's side resolves its own).
type Graph = BTreeMap<String, BTreeSet<String>>;

fn graph(args: &[&str]) -> Graph {
    let workspace = Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .current_dir(&workspace)
        .args(["tree", "--locked", "--offline", "--prefix", "none"])
        .args(["--format", "{p}|{f}"])
        .args(args)
        .output()
        .expect("cargo tree");
    assert!(
        out.status.success(),
        "cargo tree {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut graph = Graph::new();
    for line in String::from_utf8_lossy(&out.stdout).lines() {
        let Some((package, features)) = line.split_once('|') else {
            continue;
        };
        // `serde v1.0.229 (proc-macro)` and `... (/path)`: the name and version.
        let package: Vec<&str> = package.split_whitespace().take(2).collect();
        let features = features.trim_end_matches(" (*)").trim();
        graph
            .entry(package.join(" "))
            .or_default()
            .insert(features.to_string());
    }
    graph
}

/// The crates of `small` that `big` builds with other features.
fn drift(small: &Graph, big: &Graph) -> Vec<String> {
    let mut drifted = Vec::new();
    for (package, sets) in small {
        let Some(theirs) = big.get(package) else {
            continue;
        };
        for set in sets.difference(theirs) {
            drifted.push(format!("{package}: [{set}], there {theirs:?}"));
        }
    }
    drifted
}

#[test]
fn the_binary_the_wheels_and_the_tests_build_shared_crates_alike() {
    let binary = graph(&["-p", "lockstep", "-e", "normal,build"]);
    let tests = graph(&["--workspace", "-e", "normal,build,dev"]);
    let kernels = graph(&["-p", "lockstep-kernels-py", "-e", "normal,build"]);
    assert!(
        binary.keys().any(|k| k.starts_with("serde v")),
        "{binary:?}"
    );
    let drifted = drift(&binary, &tests);
    assert!(
        drifted.is_empty(),
        "`cargo run` and `cargo test` would compile these crates twice; add the test build's features to crates/lockstep-workspace-hack/Cargo.toml:\n{}",
        drifted.join("\n")
    );
    // scripts/test runs the binary crate's tests beside every other
    // crate's, both from one build: neither may find a crate to compile.
    let others = graph(&[
        "--workspace",
        "--exclude",
        "lockstep",
        "-e",
        "normal,build,dev",
    ]);
    let drifted = drift(&others, &tests);
    assert!(
        drifted.is_empty(),
        "scripts/test's run of every crate but lockstep would compile these crates again, while the binary crate's suite waits for cargo's lock; give them the whole test build's features (in a dev-only crate):\n{}",
        drifted.join("\n")
    );
    let drifted = drift(&kernels, &binary);
    assert!(
        drifted.is_empty(),
        "the lockstep-kernels and lockstep-cli wheels would compile these crates twice; add the binary's features to crates/lockstep-workspace-hack/Cargo.toml:\n{}",
        drifted.join("\n")
    );
}

#[test]
fn a_drifted_crate_is_named() {
    let one = |features: &str| -> Graph {
        BTreeMap::from([(
            "serde v1".to_string(),
            BTreeSet::from([features.to_string()]),
        )])
    };
    assert!(drift(&one("std"), &one("std")).is_empty());
    let named = drift(&one("std"), &one("alloc,std"));
    assert_eq!(named.len(), 1);
    assert!(named[0].starts_with("serde v1: [std]"), "{named:?}");
}
