//! The human form of what `lockstep cache info` and `lockstep cache prune`
//! return (printed without `--json`): the cache says how its areas read,
//! the binary only prints them.

use std::path::PathBuf;

use crate::maintain::{format_size, Info, Pruned};

/// `cache info`: the root, one line per area, and what is not lockstep's.
pub fn info(info: &Info) -> String {
    let mut text = format!("cache: {}\n", info.root.display());
    for area in &info.areas {
        text.push_str(&format!(
            "{:<11} {:>6} entries {:>8}  {}{}\n",
            area.name,
            area.entries,
            format_size(area.bytes),
            area.path.display(),
            if area.enabled {
                ""
            } else {
                " (off: BOO_CACHE_ON=0)"
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
            "{}: removed {} entries ({}); kept {} ({}{}) in {}\n",
            area.name,
            area.removed,
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
        "{} files in the cache areas are not lockstep's; left alone:\n",
        foreign.len()
    );
    for path in foreign {
        text.push_str(&format!("  {}\n", path.display()));
    }
    text
}
