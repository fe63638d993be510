//! A run's results document as the history's readers load it: every key
//! kept, except inside test rows (`tests[*]`, their `steps[*]` and the
//! steps' `metrics`), where only the keys [`crate::views::test_rows`]
//! reads are kept (and of the steps, the benchmark step) and the rest are
//! skipped while parsing.
//!
//! Why: test rows are most of a history (1,000 runs of 1,000 tests), and
//! each row carries keys no reader looks at (commands, log paths, output
//! tails, markers, other metrics). Building a JSON tree of them cost a
//! third of `report site`'s time and memory; skipping them costs a scan.
//! The kept keys are listed beside the reader that reads them (views.rs),
//! and a test checks that every view reads the same from a trimmed
//! document as from the whole one.

use std::fmt;

use serde::de::{DeserializeSeed, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use serde::Deserialize;
use serde_json::{Map, Value};

use crate::views::{METRIC_KEYS, STEP_KEYS, TEST_KEYS};

/// A results document with its test rows trimmed (see the module doc).
#[derive(Debug, Clone, PartialEq)]
pub struct Trimmed(pub Value);

impl<'de> Deserialize<'de> for Trimmed {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        Shape::Results.deserialize(deserializer).map(Trimmed)
    }
}

/// Where in the document a value is, as far as trimming cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Shape {
    /// Anywhere else: kept whole.
    Any,
    /// The document itself: its `tests` are rows.
    Results,
    /// `tests`: an array of rows.
    Tests,
    /// One test row.
    Test,
    /// A row's `steps`.
    Steps,
    /// One step.
    Step,
    /// A step's `metrics`.
    Metrics,
}

impl Shape {
    /// The keys kept in an object here (`None`: all of them).
    fn kept(self) -> Option<&'static [&'static str]> {
        match self {
            Shape::Test => Some(TEST_KEYS),
            Shape::Step => Some(STEP_KEYS),
            Shape::Metrics => Some(METRIC_KEYS),
            _ => None,
        }
    }

    /// The shape of the value under `key` of an object here.
    fn member(self, key: &str) -> Shape {
        match (self, key) {
            (Shape::Results, "tests") => Shape::Tests,
            (Shape::Test, "steps") => Shape::Steps,
            (Shape::Step, "metrics") => Shape::Metrics,
            _ => Shape::Any,
        }
    }

    /// The shape of an array's elements here.
    fn element(self) -> Shape {
        match self {
            Shape::Tests => Shape::Test,
            Shape::Steps => Shape::Step,
            _ => Shape::Any,
        }
    }
}

impl<'de> DeserializeSeed<'de> for Shape {
    type Value = Value;

    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Value, D::Error> {
        if self == Shape::Any {
            return Value::deserialize(deserializer);
        }
        deserializer.deserialize_any(self)
    }
}

impl<'de> Visitor<'de> for Shape {
    type Value = Value;

    fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
        f.write_str("any JSON value")
    }

    fn visit_bool<E>(self, v: bool) -> Result<Value, E> {
        Ok(Value::Bool(v))
    }

    fn visit_i64<E>(self, v: i64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_u64<E>(self, v: u64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_f64<E>(self, v: f64) -> Result<Value, E> {
        Ok(Value::from(v))
    }

    fn visit_str<E>(self, v: &str) -> Result<Value, E> {
        Ok(Value::String(v.to_owned()))
    }

    fn visit_string<E>(self, v: String) -> Result<Value, E> {
        Ok(Value::String(v))
    }

    fn visit_unit<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_none<E>(self) -> Result<Value, E> {
        Ok(Value::Null)
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Value, A::Error> {
        let mut out = Vec::with_capacity(seq.size_hint().unwrap_or(0).min(4096));
        while let Some(v) = seq.next_element_seed(self.element())? {
            // Of a row's steps only its benchmark step is read.
            if self == Shape::Steps && v.get("kind").and_then(Value::as_str) != Some("benchmark") {
                continue;
            }
            out.push(v);
        }
        Ok(Value::Array(out))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Value, A::Error> {
        let mut out = Map::new();
        let kept = self.kept();
        while let Some(key) = map.next_key::<String>()? {
            if kept.is_some_and(|k| !k.contains(&key.as_str())) {
                map.next_value::<IgnoredAny>()?;
                continue;
            }
            let value = map.next_value_seed(self.member(&key))?;
            out.insert(key, value);
        }
        Ok(Value::Object(out))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::views::{bench_kernels, integrate_loop, test_rows};
    use serde_json::json;

    fn trimmed(v: &Value) -> Value {
        serde_json::from_str::<Trimmed>(&v.to_string()).unwrap().0
    }

    #[test]
    fn test_rows_lose_only_what_no_reader_reads() {
        let doc = json!({
            "schema": 1, "summary": {"pass": 1}, "changes": [{"id": "x", "command": "kept"}],
            "tests": [
                {"id": "s/a [cpu]", "case": "s/a", "group": "cpu", "outcome": "fail", "reason": "boom",
                 "seconds": 1.5, "markers": ["slow"], "log": "/tmp/x",
                 "steps": [
                    {"kind": "compile", "status": "passed", "command": "iree-compile ...", "output_tail": "..."},
                    {"kind": "benchmark", "status": "failed", "message": "slower",
                     "metrics": {"time_ms": 2.5, "golden_time_ms": 2.0, "dispatch_count": 3}}
                 ]},
                {"id": 7}, "odd", null
            ]
        });
        let small = trimmed(&doc);
        assert_eq!(test_rows(&small), test_rows(&doc));
        assert!(!test_rows(&doc).is_empty());
        // Outside the rows nothing is trimmed.
        assert_eq!(small["summary"], doc["summary"]);
        assert_eq!(small["changes"], doc["changes"]);
        let row = &small["tests"][0];
        assert!(row.get("markers").is_none() && row.get("log").is_none());
        assert!(row.get("reason").is_none());
        // `--shard` balances by a row's seconds (crate::durations).
        assert_eq!(row["seconds"], 1.5);
        // The compile step is gone; the benchmark step keeps its metrics.
        assert_eq!(row["steps"].as_array().unwrap().len(), 1);
        assert!(row["steps"][0].get("message").is_none());
        assert!(row["steps"][0]["metrics"].get("dispatch_count").is_none());
        assert_eq!(small["tests"][1], json!({"id": 7}));
        assert_eq!(small["tests"][2], json!("odd"));
    }

    #[test]
    fn other_documents_are_kept_whole() {
        for doc in [
            json!({"rows": [{"arguments": "conv -n 1", "status": "ok", "stats": {"times_us": [1.0, 2.0]}, "gflops": 3.5}]}),
            json!({"advances": [{"to": "abc"}], "end": {"halted": {"kind": "smoke"}}}),
            json!([1, "two", null, {"tests": 3}]),
            json!("text"),
            json!(-3),
        ] {
            let small = trimmed(&doc);
            assert_eq!(small, doc);
            assert_eq!(bench_kernels(&small), bench_kernels(&doc));
            assert_eq!(integrate_loop(&small), integrate_loop(&doc));
        }
    }
}
