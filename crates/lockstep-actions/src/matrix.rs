//! `strategy.matrix` expansion as GitHub does it: the cartesian product of
//! the list axes (first axis outermost), `exclude` removing partial matches,
//! then `include` extending every combination it does not contradict on an
//! original axis, or adding a new combination when it extends none.
//!
//! Why: which cells run, and with which values, is part of what a generated
//! workflow means; tests must see the same cells GitHub would run.

use std::collections::BTreeMap;

use serde_json::{Map, Value};

/// One cell's values.
pub(crate) type Cell = Map<String, Value>;

/// The cells of an (already evaluated) `matrix` value. A job without a
/// matrix has one empty cell.
pub(crate) fn expand(matrix: &Value) -> Result<Vec<Cell>, String> {
    let map = match matrix {
        Value::Null => return Ok(vec![Cell::new()]),
        Value::Object(m) => m,
        other => return Err(format!("strategy.matrix must be a mapping, found {other}")),
    };
    let mut axes: Vec<(&String, &Vec<Value>)> = Vec::new();
    for (key, value) in map {
        if key == "include" || key == "exclude" {
            continue;
        }
        match value {
            Value::Array(items) => axes.push((key, items)),
            other => return Err(format!("matrix axis `{key}` must be a list, found {other}")),
        }
    }
    let mut cells = product(&axes);
    let excludes = entries(map.get("exclude"), "exclude")?;
    cells.retain(|cell| !excludes.iter().any(|ex| contains_all(cell, ex)));
    let axis_names: Vec<&String> = axes.iter().map(|(k, _)| *k).collect();
    // Includes extend the product's combinations, never ones added by
    // an earlier include.
    let original = cells.len();
    for inc in entries(map.get("include"), "include")? {
        include(&mut cells, original, inc, &axis_names);
    }
    if cells.is_empty() {
        return Err("the matrix has no combinations (every one was excluded)".to_string());
    }
    Ok(cells)
}

fn product(axes: &[(&String, &Vec<Value>)]) -> Vec<Cell> {
    if axes.is_empty() {
        return Vec::new();
    }
    let mut cells = vec![Cell::new()];
    for (key, values) in axes {
        let mut next = Vec::new();
        for cell in &cells {
            for v in values.iter() {
                let mut c = cell.clone();
                c.insert((*key).clone(), v.clone());
                next.push(c);
            }
        }
        cells = next;
    }
    cells
}

fn entries<'m>(value: Option<&'m Value>, what: &str) -> Result<Vec<&'m Cell>, String> {
    match value {
        None | Some(Value::Null) => Ok(Vec::new()),
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| {
                i.as_object()
                    .ok_or_else(|| format!("matrix {what} entries must be mappings, found {i}"))
            })
            .collect(),
        Some(other) => Err(format!("matrix {what} must be a list, found {other}")),
    }
}

fn contains_all(cell: &Cell, partial: &Cell) -> bool {
    partial.iter().all(|(k, v)| cell.get(k) == Some(v))
}

fn include(cells: &mut Vec<Cell>, original: usize, inc: &Cell, axes: &[&String]) {
    let mut extended = false;
    for cell in cells.iter_mut().take(original) {
        let compatible = inc
            .iter()
            .all(|(k, v)| !axes.contains(&k) || cell.get(k) == Some(v));
        if compatible {
            for (k, v) in inc {
                cell.insert(k.clone(), v.clone());
            }
            extended = true;
        }
    }
    if !extended {
        cells.push(inc.clone());
    }
}

/// The `matrix` of a report, as the public type holds it.
pub(crate) fn matrix_map(cell: &Cell) -> BTreeMap<String, Value> {
    cell.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn product_exclude_include() {
        let m = json!({
            "os": ["a", "b"], "py": ["3.11", "3.12"],
            "exclude": [{"os": "b", "py": "3.11"}],
            "include": [{"py": "3.12", "extra": true}, {"os": "c", "py": "3.13"}]
        });
        let cells = expand(&m).unwrap();
        let shown: Vec<Value> = cells.into_iter().map(Value::Object).collect();
        assert_eq!(
            shown,
            vec![
                json!({"os": "a", "py": "3.11"}),
                json!({"os": "a", "py": "3.12", "extra": true}),
                json!({"os": "b", "py": "3.12", "extra": true}),
                json!({"os": "c", "py": "3.13"}),
            ]
        );
    }

    #[test]
    fn include_only_and_errors() {
        let cells = expand(&json!({"include": [{"a": 1}, {"a": 2}]})).unwrap();
        assert_eq!(cells.len(), 2);
        assert_eq!(expand(&Value::Null).unwrap().len(), 1);
        assert!(expand(&json!({"os": "x"})).is_err());
        assert!(expand(&json!({"os": ["x"], "exclude": [{"os": "x"}]})).is_err());
    }
}
