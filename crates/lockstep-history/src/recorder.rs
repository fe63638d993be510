//! Recording the run of a command (`test`, `bench`, `integrate loop`) from
//! values the binary resolved: the directory is checked before the run, so
//! a bad `--record DIR` is a usage error with nothing run; the run is
//! written after the command's other outputs, and a failure to write it is
//! a warning naming the directory, never a change of the exit status (the
//! run itself went as it went).

use std::path::Path;

use lockstep_core::events::Sink;
use lockstep_core::Error;

use crate::collect::{Forbidden, Recording};
use crate::record::Kind;

/// Starts recording a `kind` run in `dir` (named `flag` in messages:
/// `--record`, `[history] dir`). The directory is a usage error when it is
/// a file, lockstep.toml's directory `root`, or one of `inputs`
/// (directories the run reads, and whatever lies below them); it is
/// created; the source commit and `pins` of `root`'s repository are
/// noted now.
pub fn start(
    flag: &str,
    dir: &Path,
    kind: Kind,
    root: &Path,
    inputs: &[(&str, &Path)],
    pins: &[lockstep_pin::Pin],
) -> Result<Recording, Error> {
    let mut forbidden = vec![Forbidden {
        what: "lockstep.toml's directory",
        dir: root,
        below: false,
    }];
    forbidden.extend(inputs.iter().map(|(what, dir)| Forbidden {
        what,
        dir,
        below: true,
    }));
    Recording::start(flag, dir, kind, &forbidden, root, pins)
}

/// Writes the run being recorded, if any: `document` is the command's
/// `--json` document (as text), `toolchain` the compiler identity it used.
/// Says where it went, or warns (naming the directory) that it did not.
pub fn finish(
    recording: Option<Recording>,
    document: impl FnOnce() -> Result<String, Error>,
    toolchain: Option<String>,
    sink: &dyn Sink,
) {
    let Some(recording) = recording else {
        return;
    };
    let dir = recording.dir.clone();
    let written = document()
        .and_then(|text| {
            serde_json::from_str(&text).map_err(|e| {
                Error::failed("cannot read back the results document").cause(e.to_string())
            })
        })
        .and_then(|results| recording.finish(results, toolchain));
    match written {
        Ok(path) => sink.note(format!("recorded {}", path.display())),
        Err(e) => {
            let mut why = e.message;
            for cause in e.causes {
                why.push_str(&format!(": {cause}"));
            }
            sink.warn(format!(
                "this run was not recorded in the history {}: {why}",
                dir.display()
            ));
        }
    }
}
