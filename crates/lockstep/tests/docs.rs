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
