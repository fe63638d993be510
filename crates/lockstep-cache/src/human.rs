//! The human form of what `lockstep cache info` and `lockstep cache prune`
//! return (printed without `--json`): the cache says how its areas read,
//! the binary only prints them.

use std::path::PathBuf;

use lockstep_core::words::count;

use crate::maintain::{format_size, Info, Pruned};

/// `cache info`: the root, one line per area, and what is not lockstep's.
pub fn info(info: &Info) -> String {
    let mut text = format!("cache: {}\n", info.root.display());
    for area in &info.areas {
        // Right-aligned as a whole ("1 entry" ends where "12 entries" does):
        // the column keeps its width of a six-digit count and "entries".
        text.push_str(&format!(
            "{:<11} {:>14} {:>8}  {}{}\n",
            area.name,
            count(area.entries, "entry", "entries"),
            format_size(area.bytes),
            area.path.display(),
            if area.enabled {
                ""
            } else {
                " (off: LOCKSTEP_KERNEL_CACHE=0 or BOO_CACHE_ON=0)"
            }
        ));
    }
    text + &foreign(&info.foreign)
}

/// `cache prune`: what each area lost and kept, and what is not lockstep's.
pub fn pruned(pruned: &Pruned) -> String {
    let mut text = String::new();
    for area in &pruned.areas {
        text.push_str(&format!(
            "{}: removed {} ({}); kept {} ({}{}) in {}\n",
            area.name,
            count(area.removed, "entry", "entries"),
            format_size(area.freed_bytes),
            area.kept,
            format_size(area.kept_bytes),
            if area.busy > 0 {
                format!(", {} in use", area.busy)
            } else {
                String::new()
            },
            area.path.display()
        ));
    }
    text + &foreign(&pruned.foreign)
}

/// Names what lockstep found but did not create (and so leaves alone).
fn foreign(foreign: &[PathBuf]) -> String {
    if foreign.is_empty() {
        return String::new();
    }
    let mut text = format!(
        "{} not lockstep's; left alone:\n",
        count(
            foreign.len(),
            "file in the cache areas is",
            "files in the cache areas are"
        )
    );
    for path in foreign {
        text.push_str(&format!("  {}\n", path.display()));
    }
    text
}
