//! Every fuzz target keeps the contract for its corpus and a bounded number
//! of mutations (a few seconds each, inside `scripts/test`); `scripts/fuzz`
//! runs them for longer.

use std::path::PathBuf;
use std::time::Duration;

use lockstep_fuzz::run::{load_corpus, Limits};

fn corpus_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../fuzz/corpus")
}

#[test]
fn every_target_keeps_the_contract() {
    let mut broken = Vec::new();
    for target in lockstep_fuzz::all() {
        let corpus = load_corpus(&corpus_dir(), target.name);
        assert!(!corpus.is_empty(), "fuzz/corpus/{} has seeds", target.name);
        let limits = Limits {
            inputs: Some(corpus.len() as u64 + if target.heavy { 40 } else { 1500 }),
            duration: None,
            per_input: Duration::from_secs(20),
            seed: 20261124,
        };
        let report = lockstep_fuzz::fuzz(&target, &corpus, &limits);
        assert_eq!(
            report.tried,
            limits.inputs.unwrap_or(0) - report.hangs.len() as u64
        );
        assert!(
            report.accepted > 0,
            "{}: some input is accepted",
            target.name
        );
        assert!(report.refused > 0, "{}: some input is refused", target.name);
        for f in report
            .panics
            .iter()
            .chain(&report.hangs)
            .chain(&report.unnamed)
        {
            broken.push(format!(
                "{}: {} on {:?}",
                target.name,
                f.message,
                String::from_utf8_lossy(&f.input)
            ));
        }
    }
    assert!(broken.is_empty(), "{}", broken.join("\n"));
}
