//! Test support: the one signature of a command line. (The kernels' own
//! tests, which compile and run them, live in lockstep-kernels; the
//! verification run bench makes is covered end to end by
//! `crates/lockstep/tests/testsuite/bench.rs`.)

/// The one signature of a command line with one direction (panics otherwise).
pub fn sig(line: &str) -> lockstep_kernels::OpSignature {
    let words: Vec<&str> = line.split_whitespace().collect();
    let op = lockstep_kernels::parse_argv(&words)
        .unwrap_or_else(|e| panic!("{line}: {e}"))
        .op;
    let mut all = lockstep_kernels::signatures(&op);
    assert_eq!(all.len(), 1, "{line}: expected one direction");
    all.remove(0)
}
