//! What lockstep reads of GitHub's answers, read against GitHub's own
//! description (api.github.com's, and GitHub Enterprise Server's newest):
//! every field of lockstep-github's answer types (traced from
//! their `Deserialize` impls by serde-reflection, so a field added to a
//! type is checked without anyone listing it) exists in the response
//! schema of each operation lockstep decodes it from. A field GitHub never
//! sends would be read as its default forever, and the loopback GitHub,
//! written by the same hands, could send it anyway.

use lockstep_github::checks::CheckRun;
use lockstep_github::pulls::PullRequest;
use lockstep_github::releases::{Asset, Release};
use lockstep_github::{Artifact, Run};
use serde_reflection::{ContainerFormat, Format, Registry, Tracer, TracerConfig};

/// Every field path of the traced type `name` (`[]` for a list's items).
fn paths(registry: &Registry, name: &str, prefix: &[String], out: &mut Vec<Vec<String>>) {
    let Some(ContainerFormat::Struct(fields)) = registry.get(name) else {
        return;
    };
    for field in fields {
        let mut path = prefix.to_vec();
        path.push(field.name.clone());
        out.push(path.clone());
        walk(registry, &field.value, &path, out);
    }
}

fn walk(registry: &Registry, format: &Format, path: &[String], out: &mut Vec<Vec<String>>) {
    match format {
        Format::TypeName(name) => paths(registry, name, path, out),
        Format::Option(inner) => walk(registry, inner, path, out),
        Format::Seq(inner) => {
            let mut items = path.to_vec();
            items.push("[]".into());
            walk(registry, inner, &items, out);
        }
        _ => {}
    }
}

/// The field paths of `T`, under `prefix`.
fn fields_of<T: for<'de> serde::Deserialize<'de>>(prefix: &[&str]) -> Vec<Vec<String>> {
    let mut tracer = Tracer::new(TracerConfig::default());
    let (format, _) = tracer.trace_simple_type::<T>().expect("trace");
    let registry = tracer.registry().expect("registry");
    let prefix: Vec<String> = prefix.iter().map(|s| s.to_string()).collect();
    let mut out = Vec::new();
    walk(&registry, &format, &prefix, &mut out);
    out
}

#[test]
fn every_field_lockstep_reads_is_one_github_describes() {
    let described = lockstep_testkit::conformance::github().expect("GitHub's description");
    let enterprise = lockstep_testkit::conformance::enterprise()
        .expect("GitHub Enterprise Server's description");
    let pulls = fields_of::<PullRequest>(&[]);
    let pulls_listed = fields_of::<PullRequest>(&["[]"]);
    let release = fields_of::<Release>(&[]);
    let releases_listed = fields_of::<Release>(&["[]"]);
    let asset = fields_of::<Asset>(&[]);
    let checks = fields_of::<CheckRun>(&["check_runs", "[]"]);
    let runs = fields_of::<Run>(&["workflow_runs", "[]"]);
    let artifacts = fields_of::<Artifact>(&["artifacts", "[]"]);
    let pages = |list: &str| vec![vec!["total_count".to_string()], vec![list.to_string()]];
    let reads: Vec<(&str, &str, Vec<Vec<String>>)> = vec![
        ("pulls/create", "201", pulls.clone()),
        ("pulls/update", "200", pulls),
        ("pulls/list", "200", pulls_listed),
        ("repos/create-release", "201", release.clone()),
        ("repos/get-release-by-tag", "200", release),
        ("repos/list-releases", "200", releases_listed),
        ("repos/upload-release-asset", "201", asset),
        (
            "checks/list-for-ref",
            "200",
            [checks, pages("check_runs")].concat(),
        ),
        ("actions/list-workflow-runs-for-repo", "200", runs.clone()),
        ("actions/list-workflow-runs", "200", runs),
        (
            "actions/list-workflow-run-artifacts",
            "200",
            [artifacts, pages("artifacts")].concat(),
        ),
    ];
    let mut missing = Vec::new();
    let mut listed = Vec::new();
    for (operation, status, paths) in &reads {
        assert!(!paths.is_empty(), "{operation}: no fields traced");
        missing.extend(
            described
                .missing_fields(operation, status, paths)
                .expect("the operation"),
        );
        // GitHub Enterprise Server (the newest in the package) has them too.
        let on_enterprise = enterprise
            .missing_fields(operation, status, paths)
            .unwrap_or_else(|e| vec![e]);
        missing.extend(on_enterprise.into_iter().map(|m| format!("GHES: {m}")));
        listed.extend(
            paths
                .iter()
                .map(|p| format!("{operation} {status}: {}", p.join("."))),
        );
    }
    // The list, for whoever reads the test's output.
    println!("{}", listed.join("\n"));
    assert!(
        missing.is_empty(),
        "fields lockstep reads that GitHub does not describe:\n{}",
        missing.join("\n")
    );
    // The check can fail: a field GitHub never sends is named.
    let invented = described
        .missing_fields(
            "pulls/create",
            "201",
            &[vec!["head".into(), "invented".into()]],
        )
        .expect("pulls/create");
    assert_eq!(invented, ["pulls/create 201: head.invented"]);
}
