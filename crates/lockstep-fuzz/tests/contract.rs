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

/// The seeds of the targets over hostile trees and answers say what they
/// are: a seed named `valid*` is accepted, every other one refused (a
/// refusal that names the bundle, suite, path or answer), so the corpus
/// reaches both sides of each check.
#[test]
fn the_seeds_of_the_tree_and_answer_targets_are_what_their_names_say() {
    let mut wrong = Vec::new();
    for name in [
        "bench-bundle",
        "test-bundle",
        "init-repo",
        "lit-config",
        "ready-answer",
    ] {
        let target = lockstep_fuzz::find(name).expect("a target");
        let mut files: Vec<_> = std::fs::read_dir(corpus_dir().join(name))
            .unwrap()
            .flatten()
            .map(|e| e.path())
            .collect();
        files.sort();
        for file in files {
            let seed = file.file_name().unwrap().to_string_lossy().into_owned();
            if seed.len() == 16 && seed.chars().all(|c| c.is_ascii_hexdigit()) {
                // Saved by `scripts/fuzz --save`: a new outcome, either way.
                continue;
            }
            let outcome = (target.run)(&std::fs::read(&file).unwrap());
            let fine = match &outcome {
                lockstep_fuzz::Outcome::Accepted => seed.starts_with("valid"),
                lockstep_fuzz::Outcome::Refused(_) => !seed.starts_with("valid"),
                lockstep_fuzz::Outcome::Unnamed(_) => false,
            };
            if !fine {
                wrong.push(format!("{name}/{seed}: {outcome:?}"));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
