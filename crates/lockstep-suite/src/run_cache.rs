//! Passing runs remembered, so that a rerun of an unchanged suite reads
//! its results instead of starting `iree-run-module` again.
//!
//! A run that passed is recorded in the cache's compile area under what it
//! depends on: the compile's key (compiler identity, source bytes, every
//! compile flag), the runtime's identity (the `iree-run-module` binary's
//! sha256: a `--iree-bin` build tree's compiler identity does not cover its
//! runtime), every run flag, the bytes of every file the run reads (its
//! input and expected-output files, each `@FILE` a flag names, parameter
//! files beside the suite) and the sha256 of each parameter file named by
//! URL (files by their path relative to the case and their bytes, so a
//! checkout elsewhere finds the same entries). Any change to one of them is a new key: exactly the tests it
//! touches run again. Only passes are remembered (a failure is always run
//! again); torch_ops cases are not (their expected outputs are named by URL
//! alone) nor are benchmarks (they are timed every run). `--no-cache` runs
//! everything.

use std::path::Path;

use lockstep_cache::{Area, Bucket, Key, KeyBuilder};

use crate::plan::{Source, Test};

/// The format of run entries (bump when what they hold changes).
const VERSION: u32 = 1;

/// The sha256 of a file's bytes (remembered per file version), or `None`
/// when it cannot be read (the run is then not remembered).
fn file_sha256(path: &Path) -> Option<String> {
    lockstep_core::hash::sha256_file_memo(path, &lockstep_core::paths::file_hashes()).ok()
}

/// The runtime's identity: `iree-run-module`'s sha256.
pub(crate) fn runtime_identity(toolchain: &lockstep_iree::Toolchain) -> Option<String> {
    file_sha256(&toolchain.tool("iree-run-module").ok()?)
}

/// The key of `t`'s run of the module compiled under `compile_key`;
/// `None` when the run is not remembered (a torch_ops case, a file that
/// cannot be read).
pub(crate) fn key(runtime: &str, compile_key: &str, t: &Test) -> Option<Key> {
    if t.torch.is_some() {
        return None;
    }
    let spec = t.run.as_ref()?;
    let mut files: Vec<String> = Vec::new();
    for file in &spec.files {
        // Relative to the case: a checkout elsewhere keys the same.
        let name = file.strip_prefix(&spec.cwd).unwrap_or(file);
        files.push(format!("{}={}", name.display(), file_sha256(file)?));
    }
    // `--input=@x.npy`, `--expected_output=@y.npy`, `--flagfile=f`: what a
    // flag names is read by the run too.
    for flag in &spec.flags {
        if let Some((_, value)) = flag.split_once('=') {
            let named = value.strip_prefix('@').unwrap_or(value);
            let path = spec.cwd.join(named);
            if (value.starts_with('@') || flag.starts_with("--flagfile")) && path.is_file() {
                files.push(format!("{named}={}", file_sha256(&path)?));
            }
        }
    }
    for (scope, source) in &t.parameters {
        match source {
            Source::File(path) => files.push(format!("{scope}:{}", file_sha256(path)?)),
            Source::Url { url, sha256 } => files.push(format!("{scope}:{url}={sha256}")),
        }
    }
    Some(
        KeyBuilder::new(Area::Compile, VERSION)
            .part("kind", "run")
            .part("compile", compile_key)
            .part("runtime", runtime)
            .parts("flags", &spec.flags)
            .parts("files", &files)
            .finish(),
    )
}

/// Whether a pass is remembered under `key`.
pub(crate) fn passed(bucket: &Bucket, key: &Key) -> bool {
    bucket.slot(key, None).get().is_some()
}

/// Remembers a pass under `key` (best effort: a cache that cannot be
/// written only costs a rerun).
pub(crate) fn remember(bucket: &Bucket, key: &Key) {
    let slot = bucket.slot(key, None);
    if let Ok(lock) = slot.lock() {
        if lock.get().is_none() {
            let _ = lock.stage().commit(serde_json::json!({"run": "PASS"}));
        }
    }
}
