//! `lockstep doctor`'s human form: one line per tool, per interpreter and
//! per directory.

use crate::Doctor;

/// The report as text.
pub fn report(d: &Doctor) -> String {
    let mut out = String::from("Tools lockstep would use:\n");
    for t in &d.tools {
        let at = t
            .path
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_else(|| "-".into());
        let state = match t.status {
            "found" => t
                .version
                .clone()
                .unwrap_or_else(|| "found (no version)".into()),
            "first-use" => "not installed yet (installed on first use)".into(),
            _ => "MISSING".into(),
        };
        out.push_str(&format!(
            "  {:<13} {:<40} {} [{}]\n      {}\n",
            t.name, state, at, t.source, t.note
        ));
    }
    out.push_str("\nPythons outside PATH (pyenv, asdf, mise, uv, [tools] python):\n");
    if d.pythons.is_empty() {
        out.push_str("  none\n");
    }
    for p in &d.pythons {
        out.push_str(&format!(
            "  {:<10} {} [{}]\n",
            p.version,
            p.path.display(),
            p.source
        ));
    }
    for l in &d.python_dirs {
        if let Err(why) = &l.seen {
            out.push_str(&format!(
                "  ! {} ({}) cannot be read: {why}\n",
                l.dir.display(),
                l.source
            ));
        }
    }
    out.push_str("\nIREE runtime devices (--device):\n");
    let rt = &d.devices.runtime;
    match &d.devices.error {
        Some(why) => out.push_str(&format!("  not listed: {why}\n")),
        None => {
            out.push_str(&format!("  HAL drivers: {}\n", rt.drivers.join(", ")));
            out.push_str(&format!(
                "  devices:     {}\n",
                if rt.devices.is_empty() {
                    "none".to_string()
                } else {
                    rt.devices.join(", ")
                }
            ));
        }
    }
    for g in &d.devices.gpus {
        match (&g.chip, &g.note) {
            (Some(chip), _) => out.push_str(&format!("  {:<5} GPU: {chip}\n", g.driver)),
            (None, Some(why)) => out.push_str(&format!("  {:<5} GPU: none ({why})\n", g.driver)),
            (None, None) => {}
        }
    }
    out.push_str("\nDirectories lockstep writes:\n");
    for dir in &d.dirs {
        let size = if dir.exists {
            lockstep_cache::format_size(dir.bytes)
        } else {
            "not created yet".into()
        };
        out.push_str(&format!(
            "  {:<34} {:>12}  {}\n",
            dir.name,
            size,
            dir.path.display()
        ));
    }
    out
}
