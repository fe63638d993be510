//! The human form of what `lockstep bench compare` and `lockstep bench
//! bisect` return (printed without `--json`): bench's results say how they
//! read, the binary only prints them.

use crate::bisect::{figures, BisectReport};
use crate::regressions::{render, CompareReport};

/// `bench compare`: the table of kernels, then the counts.
pub fn compared(report: &CompareReport) -> String {
    format!("{}\n", render(report).trim_end())
}

/// `bench bisect`: BAD against GOOD, each commit probed with its verdict
/// and figures, then the first bad commit (or the candidates).
pub fn bisected(report: &BisectReport) -> String {
    let mut text = format!(
        "BAD {}: {}\n",
        report.bad,
        figures(&report.endpoint.judgement)
    );
    for step in &report.steps {
        text.push_str(&format!(
            "{} {}{}: {}\n",
            step.commit,
            step.verdict.as_str(),
            if step.cached { " (cached)" } else { "" },
            figures(&step.judgement)
        ));
    }
    let candidates = &report.candidates;
    text + &lockstep_bisect::conclusion(report.first_bad.as_deref(), candidates) + "\n"
}
