//! `lockstep report site` from the command line: bad history files are
//! warnings naming each (exit 0), a previous site is replaced whole,
//! anything else at `--out` is refused, a missing history is a usage error.
//! (The pages themselves are checked in a real browser by
//! crates/lockstep-site/tests/browser.rs.)

use crate::common::*;

#[test]
fn the_site_is_written_with_bad_files_named_and_refuses_to_replace_anything_else() {
    let p = Project::new();
    let hist = p.path().join("history");
    let samples: Vec<f64> = (0..20).map(|i| 100.0 + i as f64).collect();
    for id in ["1", "22"] {
        history_run(
            &hist,
            id,
            "bench",
            &"a".repeat(40),
            serde_json::json!({"schema": 1, "rows": [{"arguments": "conv -n 1", "status": "ok", "gflops": 1.5, "stats": {"times_us": samples}}]}),
        );
    }
    write(
        &hist.join("bench-truncated.json"),
        "{\"schema\": 1, \"id\": \"x",
    );
    write(&hist.join("future.json"), "{\"schema\": 99, \"id\": \"f\"}");
    std::fs::copy(hist.join("bench-1.json"), hist.join("copy-of-1.json")).unwrap();

    let out = p.run(
        &["report", "site", "--history", "history", "--out", "site"],
        0,
    );
    let err = stderr(&out);
    for name in ["bench-truncated.json", "future.json", "copy-of-1.json"] {
        assert!(err.contains(name), "{name} not named:\n{err}");
    }
    assert!(err.contains("newer lockstep"), "{err}");
    assert!(
        stdout(&out).contains("6 pages from 2 runs"),
        "{}",
        stdout(&out)
    );
    for page in ["index", "tests", "bench", "integrate", "releases", "speed"] {
        assert!(
            p.path().join(format!("site/{page}.html")).is_file(),
            "{page}"
        );
    }
    // A second run replaces the site whole.
    p.run(
        &["report", "site", "--history", "history", "--out", "site"],
        0,
    );
    // Anything else at --out is left alone.
    write(&p.path().join("docs/keep.md"), "mine\n");
    let out = p.run(
        &["report", "site", "--history", "history", "--out", "docs"],
        2,
    );
    assert!(stderr(&out).contains("docs"), "{}", stderr(&out));
    assert_eq!(p.read("docs/keep.md"), "mine\n");
    // Bad --base-url and --releases are named; nothing is written.
    for (args, expected) in [
        (vec!["--base-url", "ftp://example.org"], "ftp://example.org"),
        (vec!["--releases", "no-such-store"], "no-such-store"),
    ] {
        let mut all = vec!["report", "site", "--history", "history", "--out", "site4"];
        all.extend(args);
        let out = p.run(&all, 2);
        assert!(
            stderr(&out).contains(expected),
            "{expected}: {}",
            stderr(&out)
        );
        assert!(!p.path().join("site4").exists(), "{expected}: written");
    }
    // No history named and none configured.
    let out = p.run(&["report", "site", "--out", "site2"], 2);
    assert!(stderr(&out).contains("needs a history"), "{}", stderr(&out));
    assert!(!p.path().join("site2").exists());
    // An empty history is a site saying so, not an error.
    std::fs::create_dir_all(p.path().join("empty")).unwrap();
    let out = p.run(
        &["report", "site", "--history", "empty", "--out", "site3"],
        0,
    );
    assert!(stdout(&out).contains("from 0 runs"), "{}", stdout(&out));
}
