//! The figures of `scripts/bench-pipeline` (ignored by the suite: the
//! script runs it with `--ignored`): three lockstep commands a nightly
//! pipeline at real scale runs, each timed three times and the median
//! printed beside its target, side by side in one run:
//!
//! - a night with nothing new: `release cut --if-new-commit` on a commit
//!   already cut (what the release workflow's cut job runs before every
//!   other job is skipped);
//! - `release index` of 365 snapshots x 4 wheels x 2 Pythons (2,920 files,
//!   hosted on GitHub: records only);
//! - `release sync --from-github` of 365 Releases from the loopback GitHub
//!   into an empty store (the night after the Actions cache was evicted).
//!
//! `LOCKSTEP_BENCH_PIPELINE_OUT=FILE` also writes the figures there.

use std::path::Path;
use std::time::{Duration, Instant};

use crate::common::*;
use lockstep_testkit::github::FakeGithub;

const TOKEN: &str = "ghs_bench_token";
const SNAPSHOTS: usize = 365;

fn median(mut runs: Vec<Duration>) -> Duration {
    runs.sort();
    runs[runs.len() / 2]
}

/// Runs `cmd` three times (`prepare` before each), each must exit 0; the
/// median wall time.
fn timed(mut prepare: impl FnMut(), mut cmd: impl FnMut() -> std::process::Command) -> Duration {
    let runs = (0..3)
        .map(|_| {
            prepare();
            let mut c = cmd();
            let started = Instant::now();
            expect(&mut c, 0);
            started.elapsed()
        })
        .collect();
    median(runs)
}

/// One snapshot's record and its files' bytes: 2 packages x 2 Pythons x
/// (a release and an asserts variant) = 8 wheels, hosted at `base`.
fn snapshot(n: usize, base: &str) -> (String, serde_json::Value, Vec<(String, Vec<u8>)>) {
    let version = format!("0.3.0rc{:04}{:04}", 2026, n);
    let mut files = Vec::new();
    let mut records = Vec::new();
    for package in [
        "demo_compiler",
        "demo_compiler_asserts",
        "demo_native",
        "demo_native_asserts",
    ] {
        for py in ["cp311", "cp312"] {
            let name = format!("{package}-{version}-{py}-{py}-manylinux_2_28_x86_64.whl");
            let bytes = format!("{name} bytes").into_bytes();
            records.push(serde_json::json!({
                "filename": name,
                "project": package.replace('_', "-"),
                "sha256": sha256_hex(&bytes),
                "size": bytes.len(),
                "requires_python": ">=3.9",
                "metadata_sha256": sha256_hex(name.as_bytes()),
                "upload_time": "2026-11-27T05:00:00Z",
            }));
            files.push((name, bytes));
        }
    }
    let tag = format!("snapshot-{version}");
    let record = serde_json::json!({
        "version": version,
        "tag": tag,
        "channel": "snapshot",
        "pins": {},
        "hosted": format!("{base}/lockstep-dev/demo/releases/download/{tag}/"),
        "files": records,
    });
    (version, record, files)
}

fn write_store(index: &Path, records: &[(String, serde_json::Value)]) {
    for (version, record) in records {
        let dir = index.join("files").join(version);
        std::fs::create_dir_all(&dir).expect("create");
        std::fs::write(dir.join("release.json"), record.to_string()).expect("write");
    }
}

#[test]
#[ignore = "a benchmark: scripts/bench-pipeline runs it"]
fn bench_pipeline_figures() {
    let github = FakeGithub::start("lockstep-dev/demo", TOKEN).expect("loopback GitHub");
    let base = github.url();
    let mut records = Vec::new();
    for n in 1..=SNAPSHOTS {
        let (version, record, files) = snapshot(n, &base);
        let mut assets = files;
        assets.push(("release.json".into(), record.to_string().into_bytes()));
        github.add_release(&format!("snapshot-{version}"), true, assets);
        records.push((version, record));
    }
    let p = Project::new();
    p.write(
        "lockstep.toml",
        "[release]\nname = \"demo\"\nversion-base = \"0.3.0\"\ntag = \"snapshot-{version}\"\nhosting = \"github-releases\"\n",
    );
    git(&p.path(), &["init", "-q", "-b", "main"]);
    commit_as_tester(&p.path(), "demo", true);
    let origin = p.root().join("origin.git");
    git(
        p.root(),
        &["init", "-q", "--bare", origin.to_str().expect("utf-8")],
    );
    git(
        &p.path(),
        &["remote", "add", "origin", origin.to_str().expect("utf-8")],
    );
    git(&p.path(), &["push", "-q", "origin", "HEAD:main"]);
    let index = p.path().join("release/index");

    // A night with nothing new: HEAD has its snapshot already.
    p.run(&["release", "cut"], 0);
    let idle = timed(
        || {},
        || p.cmd(&["release", "cut", "--if-new-commit", "--json"]),
    );

    // The index of 365 hosted snapshots.
    write_store(&index, &records);
    let indexed = timed(|| {}, || p.cmd(&["release", "index"]));
    let page =
        std::fs::read_to_string(index.join("simple/demo-compiler/index.html")).expect("page");
    assert_eq!(page.matches("<a ").count(), SNAPSHOTS * 2);

    // The store rebuilt from 365 Releases.
    let synced = timed(
        || {
            let _ = std::fs::remove_dir_all(&index);
        },
        || {
            let mut cmd = p.cmd(&["release", "sync", "--from-github", "--json"]);
            cmd.env("GITHUB_API_URL", github.url())
                .env("GITHUB_REPOSITORY", "lockstep-dev/demo")
                .env("GITHUB_TOKEN", TOKEN);
            cmd
        },
    );
    let versions = std::fs::read_dir(index.join("files"))
        .expect("store")
        .count();
    assert_eq!(versions, SNAPSHOTS);

    let rows = [
        (
            "a night with nothing new (release cut --if-new-commit)",
            idle,
            1.0,
        ),
        (
            "release index: 365 snapshots x 4 wheels x 2 Pythons",
            indexed,
            1.0,
        ),
        ("release sync --from-github: 365 Releases", synced, 10.0),
    ];
    let mut text = format!(
        "{:<58} {:>9} {:>8} {:>6}\n",
        "median of 3", "seconds", "target", "ratio"
    );
    for (what, took, target) in rows {
        let secs = took.as_secs_f64();
        text.push_str(&format!(
            "{what:<58} {secs:>9.3} {target:>8.1} {:>6.2}\n",
            secs / target
        ));
    }
    eprintln!("{text}");
    if let Ok(file) = std::env::var("LOCKSTEP_BENCH_PIPELINE_OUT") {
        std::fs::write(file, &text).expect("write the figures");
    }
}
