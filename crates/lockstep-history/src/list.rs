//! `lockstep history list`: one summary per run (when, what, from which
//! commit and toolchain, and a line saying how it went), read from each
//! kind's results document.

use lockstep_core::words::count;
use serde::Serialize;
use serde_json::Value;

use crate::record::{Kind, RunRecord};
use crate::store::{Loaded, Skipped};

/// `history list --json`: every run's summary, oldest first, and the
/// files that were skipped.
#[derive(Debug, Serialize)]
pub struct Listed {
    pub runs: Vec<RunSummary>,
    pub skipped: Vec<Skipped>,
}

impl Listed {
    /// The listing of a loaded history.
    pub fn of(loaded: Loaded) -> Listed {
        Listed {
            runs: loaded.runs.iter().map(summarize).collect(),
            skipped: loaded.skipped,
        }
    }
}

/// One run as `history list` shows it (and prints with `--json`).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RunSummary {
    pub id: String,
    pub kind: Kind,
    pub started: String,
    pub finished: String,
    pub commit: Option<String>,
    pub branch: Option<String>,
    pub dirty: bool,
    pub toolchain: Option<String>,
    /// The machine's host name and CPU.
    pub host: String,
    pub cpu: String,
    /// How the run went, in one line (`3 passed, 1 failed`, `12 kernels`, `halted`).
    pub summary: String,
    /// Whether the run found failures (a failed test or row, an integrate halt).
    pub failed: bool,
}

/// The summary of `run`.
pub fn summarize(run: &RunRecord) -> RunSummary {
    let (summary, failed) = outcome(run.kind, &run.results);
    RunSummary {
        id: run.id.clone(),
        kind: run.kind,
        started: run.started.clone(),
        finished: run.finished.clone(),
        commit: run.source.commit.clone(),
        branch: run.source.branch.clone(),
        dirty: run.source.dirty,
        toolchain: run.toolchain.clone(),
        host: run.machine.host.clone(),
        cpu: run.machine.cpu.clone(),
        summary,
        failed,
    }
}

/// `summary`'s line: started, kind, id, short commit, short toolchain, how it went.
pub fn line(s: &RunSummary) -> String {
    let commit = s
        .commit
        .as_deref()
        .map(|c| format!("{}{}", short(c), if s.dirty { "+" } else { "" }))
        .unwrap_or_else(|| "-".into());
    let toolchain = s.toolchain.as_deref().map(short).unwrap_or("-");
    format!(
        "{}  {:<9}  {}  {:<13}  {:<12}  {}",
        s.started,
        s.kind.name(),
        s.id,
        commit,
        toolchain,
        s.summary
    )
}

/// The first 12 characters.
fn short(text: &str) -> &str {
    text.char_indices()
        .nth(12)
        .map_or(text, |(i, _)| &text[..i])
}

/// One line and whether the run failed, from a results document.
fn outcome(kind: Kind, doc: &Value) -> (String, bool) {
    let field = |v: &Value, key: &str| v.get(key).and_then(Value::as_u64).unwrap_or(0);
    match kind {
        Kind::Test => {
            let Some(s) = doc.get("summary") else {
                return ("no summary".into(), false);
            };
            let mut parts = vec![
                format!("{} passed", field(s, "pass")),
                format!("{} failed", field(s, "fail")),
            ];
            for (key, name) in [("xfail", "xfail"), ("xpass", "xpass"), ("skip", "skipped")] {
                let n = field(s, key);
                if n > 0 {
                    parts.push(format!("{n} {name}"));
                }
            }
            let failed = s.get("failed").and_then(Value::as_bool).unwrap_or(false);
            (parts.join(", "), failed)
        }
        Kind::Bench => {
            let rows = doc
                .get("rows")
                .and_then(Value::as_array)
                .map(Vec::as_slice)
                .unwrap_or_default();
            let bad = rows
                .iter()
                .filter(|r| {
                    r.get("status").and_then(Value::as_str) != Some("ok")
                        || r.get("verify").and_then(Value::as_str) == Some("FAIL")
                })
                .count();
            let mut text = count(rows.len(), "kernel", "kernels");
            if bad > 0 {
                text.push_str(&format!(", {bad} failed"));
            }
            (text, bad > 0)
        }
        Kind::Speed => {
            let rows = crate::speed::rows(doc);
            let over = rows.iter().filter(|r| r.over_target()).count();
            let mut text = count(rows.len(), "benchmark row", "benchmark rows");
            if over > 0 {
                text.push_str(&format!(", {over} over target"));
            }
            (text, over > 0)
        }
        Kind::Integrate => {
            let end = doc
                .pointer("/end/result")
                .and_then(Value::as_str)
                .unwrap_or("unknown");
            let advances = doc
                .get("advances")
                .and_then(Value::as_array)
                .map_or(0, Vec::len);
            (
                format!("{end}, {}", count(advances, "advance", "advances")),
                end == "halted",
            )
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn each_kind_says_how_it_went() {
        let test = json!({"summary": {"pass": 3, "fail": 1, "skip": 2, "failed": true}});
        assert_eq!(
            outcome(Kind::Test, &test),
            ("3 passed, 1 failed, 2 skipped".into(), true)
        );
        let bench = json!({"rows": [{"status": "ok"}, {"status": "ok", "verify": "FAIL"}]});
        assert_eq!(
            outcome(Kind::Bench, &bench),
            ("2 kernels, 1 failed".into(), true)
        );
        let ig = json!({"end": {"result": "halted"}, "advances": [{}]});
        assert_eq!(
            outcome(Kind::Integrate, &ig),
            ("halted, 1 advance".into(), true)
        );
        assert_eq!(outcome(Kind::Bench, &json!(null)).0, "0 kernels");
        assert_eq!(short("abcdefabcdefabcdef"), "abcdefabcdef");
        assert_eq!(short("é"), "é");
    }
}
