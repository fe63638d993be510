//! Reading what `iree-benchmark-module` writes with
//! `--benchmark_format=json`: google-benchmark's `benchmarks` array, each
//! entry a repetition (`run_type` `iteration`) or an aggregate (`mean`,
//! `median`, ...) with its real time in `time_unit`.
//!
//! `lockstep test` takes a benchmark's median, `lockstep bench` every
//! repetition as one sample; both read the times here.

/// One entry of the `benchmarks` array.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// `iteration` for a repetition, `aggregate` for a statistic.
    pub run_type: String,
    /// The statistic of an aggregate (`median`, `mean`, ...).
    pub aggregate: Option<String>,
    /// Real time per iteration, in microseconds.
    pub real_time_us: f64,
}

/// The entries of a benchmark JSON report (text before the first `{`, such
/// as the tool's own banner, is skipped); entries without a real time are
/// left out.
pub fn entries(text: &str) -> Result<Vec<Entry>, String> {
    let json = text.find('{').map_or(text, |start| &text[start..]);
    let value: serde_json::Value =
        serde_json::from_str(json).map_err(|e| format!("unreadable benchmark output: {e}"))?;
    let benchmarks = value["benchmarks"]
        .as_array()
        .ok_or("benchmark output without a `benchmarks` array")?;
    Ok(benchmarks
        .iter()
        .filter_map(|b| {
            let time = b["real_time"].as_f64()?;
            let scale = match b["time_unit"].as_str().unwrap_or("ns") {
                "s" => 1e6,
                "ms" => 1e3,
                "us" => 1.0,
                _ => 1e-3,
            };
            Some(Entry {
                run_type: b["run_type"].as_str().unwrap_or("iteration").to_string(),
                aggregate: b["aggregate_name"].as_str().map(str::to_string),
                real_time_us: time * scale,
            })
        })
        .collect())
}

/// The real times of the repetitions (not the aggregates), in microseconds.
pub fn samples_us(entries: &[Entry]) -> Vec<f64> {
    entries
        .iter()
        .filter(|e| e.run_type == "iteration")
        .map(|e| e.real_time_us)
        .collect()
}

/// The median real time in microseconds: the `median` aggregate when the
/// tool computed one, else the median of every entry.
pub fn median_us(entries: &[Entry]) -> Option<f64> {
    let aggregate = entries
        .iter()
        .find(|e| e.aggregate.as_deref() == Some("median"))
        .map(|e| e.real_time_us);
    aggregate.or_else(|| {
        let mut times: Vec<f64> = entries.iter().map(|e| e.real_time_us).collect();
        times.sort_by(f64::total_cmp);
        times.get(times.len() / 2).copied()
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn times_are_microseconds_in_every_unit() {
        let text = r#"banner
{"benchmarks": [
  {"run_type": "iteration", "real_time": 500000, "time_unit": "ns"},
  {"run_type": "iteration", "real_time": 0.75, "time_unit": "us"},
  {"run_type": "aggregate", "aggregate_name": "median", "real_time": 2, "time_unit": "ms"},
  {"run_type": "iteration", "real_time": 1, "time_unit": "s"},
  {"run_type": "iteration"}
]}"#;
        let got = entries(text).unwrap();
        let times: Vec<f64> = got.iter().map(|e| e.real_time_us).collect();
        assert_eq!(times, [500.0, 0.75, 2000.0, 1e6]);
        assert_eq!(got[2].aggregate.as_deref(), Some("median"));
        assert_eq!(got[2].run_type, "aggregate");
        assert_eq!(samples_us(&got), [500.0, 0.75, 1e6]);
        assert_eq!(median_us(&got), Some(2000.0));
        assert_eq!(median_us(&got[..2]), Some(500.0));
        assert!(entries("not json").is_err());
        assert!(entries("{}").is_err());
    }
}
