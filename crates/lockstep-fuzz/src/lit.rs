//! The `lit-config` target: a lit suite whose `lit.cfg.py` (and test
//! files) the input is, listed and run by LLVM's real lit as `lockstep
//! test` does (`lockstep_suite::lit::discover`, then `lit::run`).
//!
//! The input is split like LLVM's `split-file`: the text before the first
//! `#--- NAME` line is `lit.cfg.py`, each `#--- NAME` line starts the file
//! NAME of the suite (a relative path; see [`crate::trees`] for what a
//! name may be). The contract, beyond no panic and no hang: a suite is
//! never "no tests" (listing gives at least one test, or an error), a run
//! gives one result per listed test or an error, and every error names the
//! suite.
//!
//! lit and FileCheck are the ones the tests use: PyPI's, installed by
//! `lockstep_python::tools::LitTools::ensure` into the toolchains directory
//! (`$LOCKSTEP_TOOLCHAINS`) on first use, with lockstep's own uv, as
//! `lockstep test` provisions them. Without the network and without that
//! venv, every input is a contract failure saying why (the target never
//! passes by skipping).

use std::path::Path;
use std::sync::OnceLock;
use std::time::Duration;

use lockstep_suite::lit::{self, LitProgram};

use crate::contract::Outcome;
use crate::trees::{Op, Tree};

/// lit, installed once per process (or why it could not be).
fn program() -> &'static Result<LitProgram, String> {
    static PROGRAM: OnceLock<Result<LitProgram, String>> = OnceLock::new();
    PROGRAM.get_or_init(|| {
        let sink = lockstep_core::events::NullSink;
        let uv = lockstep_python::uv::find_default(&sink).map_err(|e| e.render())?;
        let root = lockstep_core::paths::toolchains_dir().map_err(|e| e.render())?;
        let tools =
            lockstep_python::tools::LitTools::ensure(&uv, &root, &sink).map_err(|e| e.render())?;
        Ok(LitProgram {
            lit: tools.lit,
            path: tools.path,
            identity: tools.pins,
        })
    })
}

/// The suite's files: `lit.cfg.py`, then each `#--- NAME` part.
fn files(input: &[u8]) -> Vec<Op> {
    let mut ops = vec![Op::File(b"lit.cfg.py".to_vec(), Vec::new())];
    for line in input.split_inclusive(|b| *b == b'\n') {
        if let Some(name) = line.strip_prefix(b"#--- ") {
            let name = name.strip_suffix(b"\n").unwrap_or(name);
            ops.push(Op::File(crate::trees::unescape(name), Vec::new()));
            continue;
        }
        if let Some(Op::File(_, text)) = ops.last_mut() {
            text.extend_from_slice(line);
        }
    }
    ops
}

/// A refusal of the suite at `suite`: its first line, which must name it.
fn refusal(suite: &Path, err: &lockstep_core::Error, input: &[u8]) -> Outcome {
    let text = err.render();
    let shown = suite.display().to_string();
    let first = crate::contract::kind_of_named(&text.replace(&shown, "SUITE"), input);
    match text.contains(&shown) {
        true => Outcome::Refused(first),
        false => Outcome::Unnamed(first),
    }
}

pub fn lit_config(input: &[u8]) -> Outcome {
    let program = match program() {
        Ok(program) => program,
        Err(why) => return Outcome::Unnamed(format!("lit could not be installed: {why}")),
    };
    let Some(mut tree) = Tree::new("suite") else {
        return Outcome::Accepted;
    };
    tree.build(&files(input), None);
    let suite = tree.root.clone();
    let work = tree.temp().join("work");
    let cases = match lit::discover(program, &suite, &work.join("list")) {
        Ok(cases) => cases,
        Err(e) => return refusal(&suite, &e, input),
    };
    if cases.is_empty() {
        return Outcome::Unnamed("lit listed no tests, and that was not an error".into());
    }
    let batch = lit::Batch {
        program,
        tools: &work,
        jobs: 2,
        timeout: Duration::from_secs(3),
        work: work.join("run"),
    };
    match lit::run(&batch, &suite, &cases) {
        Ok(results) if results.len() == cases.len() => Outcome::Accepted,
        Ok(results) => Outcome::Unnamed(format!(
            "{} results for {} listed tests",
            results.len(),
            cases.len()
        )),
        Err(e) => refusal(&suite, &e, input),
    }
}
