//! Test bundles: compile a suite here (for a GPU target, on a machine
//! without the GPU), run it where only the IREE runtime is, as IREE's own
//! package CI splits its jobs.
//!
//! `lockstep test --bundle DIR` compiles the selected tests (no runs) into
//! the bundle's own compile cache and writes:
//!
//! - `bundle.json`: the compiler (version line, identity, packages), the
//!   targets and the ids of the tests it holds;
//! - `lockstep.toml`: the project's `[test]` table, its `paths` pointing at
//!   the copied suites and every selected target pinned as it was resolved
//!   here (a GPU's detected chip included), so the keys agree there;
//! - `suites/NAME/`: a copy of each suite directory (sources, inputs and
//!   expected outputs);
//! - `cache/compile/`: the compiled modules, sealed (the keys cover the
//!   compiler identity, the source's sha256 and the flags, never a path).
//!
//! `lockstep test --from-bundle DIR` plans the same tests from the copied
//! suites, computes their keys with the bundle's compiler identity and
//! refuses (before anything runs) when one is not in the bundle: made by
//! another compiler than its manifest says, or for other flags. Nothing is
//! compiled there; the runtime here must be the compiler's IREE version.

use std::path::{Path, PathBuf};

use lockstep_cache::{Area, Cache, Key};
use lockstep_core::Error;
use lockstep_iree::Toolchain;
use serde::{Deserialize, Serialize};

use crate::plan::{Target, Test};

/// The manifest's name in a bundle.
pub const MANIFEST: &str = "bundle.json";
const SCHEMA: u32 = 1;
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

/// What a test bundle says about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    /// `test` (a `lockstep bench` bundle says `bench`).
    pub kind: String,
    pub lockstep: String,
    pub compiler_version: String,
    pub identity: String,
    /// The key identity of host-CPU builds (the compiling machine's CPU
    /// included): another CPU gives another one.
    #[serde(default)]
    pub host_key_identity: String,
    pub packages: Vec<(String, String)>,
    pub targets: Vec<String>,
    pub tests: Vec<String>,
}

/// The cache a bundle's compiles go to (and are read from).
pub fn cache(dir: &Path) -> Cache {
    Cache::at(dir.join("cache"))
}

/// Writes the rest of a bundle whose compiles are already in
/// [`cache`]`(dir)`: the suites, the configuration and the manifest (last).
pub fn write(
    dir: &Path,
    suite_dirs: &[PathBuf],
    test_table: Option<toml::Table>,
    tests: &[Test],
    targets: &[Target],
    toolchain: &Toolchain,
) -> Result<Manifest, Error> {
    let mut paths = Vec::new();
    for (i, suite) in suite_dirs.iter().enumerate() {
        let base = suite
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_else(|| "suite".into());
        let name = if paths
            .iter()
            .any(|p: &String| p.ends_with(&format!("/{base}")))
        {
            format!("{base}-{i}")
        } else {
            base
        };
        copy_tree(suite, &dir.join("suites").join(&name))?;
        paths.push(format!("suites/{name}"));
    }
    let mut table = test_table.unwrap_or_default();
    table.insert(
        "paths".into(),
        toml::Value::Array(paths.into_iter().map(toml::Value::String).collect()),
    );
    // Each target as it was resolved here (a GPU's detected chip, say):
    // the machine that runs the bundle computes the same keys.
    let strings =
        |v: &[String]| toml::Value::Array(v.iter().cloned().map(toml::Value::String).collect());
    let mut pinned = match table.remove("targets") {
        Some(toml::Value::Table(t)) => t,
        _ => toml::Table::new(),
    };
    for target in targets {
        let mut t = toml::Table::new();
        t.insert("compile-flags".into(), strings(&target.compile_flags));
        t.insert("run-flags".into(), strings(&target.run_flags));
        t.insert("markers".into(), strings(&target.markers));
        if let Some(toml::Value::Table(old)) = pinned.get(&target.name) {
            for (k, v) in old {
                t.entry(k.clone()).or_insert_with(|| v.clone());
            }
        }
        pinned.insert(target.name.clone(), toml::Value::Table(t));
    }
    table.insert("targets".into(), toml::Value::Table(pinned));
    let mut top = toml::Table::new();
    top.insert("test".into(), toml::Value::Table(table));
    let text = toml::to_string(&top).map_err(|e| {
        Error::failed("cannot write the bundle's lockstep.toml").cause(e.to_string())
    })?;
    lockstep_core::fs::write_atomic(
        &dir.join("lockstep.toml"),
        format!("# lockstep test --from-bundle reads this: the [test] table of the project the bundle was made in\n{text}").as_bytes(),
    )?;
    let manifest = Manifest {
        schema: SCHEMA,
        kind: "test".into(),
        lockstep: env!("CARGO_PKG_VERSION").into(),
        compiler_version: toolchain.compiler_version.clone(),
        identity: toolchain.identity.clone(),
        host_key_identity: host_key_identity(&toolchain.identity),
        packages: toolchain.packages.clone(),
        targets: targets.iter().map(|t| t.name.clone()).collect(),
        tests: tests.iter().map(|t| t.id.clone()).collect(),
    };
    let json = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::failed("cannot encode the bundle manifest").cause(e.to_string()))?;
    lockstep_core::fs::write_atomic(&dir.join(MANIFEST), format!("{json}\n").as_bytes())?;
    Ok(manifest)
}

/// The `[test]` table of the configuration file at `path`, if any: what a
/// bundle's own lockstep.toml starts from.
pub fn test_table(path: Option<&Path>) -> Result<Option<toml::Table>, Error> {
    let Some(path) = path else { return Ok(None) };
    let text = lockstep_core::fs::read_input_text("the configuration", path, 16 << 20)?;
    let mut top: toml::Table =
        toml::from_str(&text).map_err(|e| Error::usage(format!("{}: {e}", path.display())))?;
    Ok(match top.remove("test") {
        Some(toml::Value::Table(t)) => Some(t),
        _ => None,
    })
}

/// The key identity a host-CPU build on this machine gets.
fn host_key_identity(identity: &str) -> String {
    let host: Vec<String> = lockstep_iree::HOST_CPU_FLAGS
        .iter()
        .map(|f| f.to_string())
        .collect();
    lockstep_iree::key_identity(identity, &host)
}

/// Copies a directory tree (regular files and directories; links are
/// copied as the files they name, within the tree's size).
fn copy_tree(from: &Path, to: &Path) -> Result<(), Error> {
    fs_err::create_dir_all(to)?;
    for entry in fs_err::read_dir(from)? {
        let entry = entry?;
        let path = entry.path();
        let target = to.join(entry.file_name());
        let meta = fs_err::metadata(&path)?;
        if meta.is_dir() {
            copy_tree(&path, &target)?;
        } else if meta.is_file() {
            fs_err::copy(&path, &target)?;
        }
    }
    Ok(())
}

/// Reads a test bundle's manifest (refusals are usage errors naming it).
pub fn load(dir: &Path) -> Result<Manifest, Error> {
    let refuse = |what: String| Error::usage(format!("--from-bundle {}: {what}", dir.display()));
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        return Err(refuse(format!("no {MANIFEST}: not a bundle"))
            .hint("make one with `lockstep test --bundle DIR` on a machine with the compiler"));
    }
    let text = lockstep_core::fs::read_input_text("--from-bundle", &path, MAX_MANIFEST_BYTES)?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    if value.get("kind").and_then(|k| k.as_str()) != Some("test") {
        return Err(refuse(format!("{MANIFEST} is not a test bundle's"))
            .hint("run a bench bundle with `lockstep bench --from-bundle`; make a test bundle with `lockstep test --bundle DIR`"));
    }
    let manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    if manifest.schema != SCHEMA {
        return Err(refuse(format!(
            "{MANIFEST} is a {} bundle of schema {}; `lockstep test` reads test bundles of schema {SCHEMA}",
            manifest.kind, manifest.schema
        ))
        .hint("run a bench bundle with `lockstep bench --from-bundle`, or use the lockstep that made it"));
    }
    Ok(manifest)
}

/// Checks, before anything runs, that every planned test's module is in
/// the bundle under the key its manifest's compiler gives, and that the
/// runtime here is that compiler's IREE version.
pub fn check(
    dir: &Path,
    manifest: &Manifest,
    tests: &[Test],
    toolchain: &Toolchain,
) -> Result<(), Error> {
    let refuse = |what: String| Error::usage(format!("--from-bundle {}: {what}", dir.display()));
    if let Some((built, here)) =
        lockstep_iree::toolchain::runtime_mismatch(&manifest.packages, &toolchain.packages)
    {
        return Err(refuse(format!(
            "its modules were compiled by IREE {built}, the runtime here is IREE {here}"
        ))
        .hint(format!(
            "run it with iree-base-runtime {built} (--iree-bin DIR)"
        )));
    }
    let bucket = cache(dir).bucket(Area::Compile);
    let mut missing = Vec::new();
    for t in tests {
        let Some(spec) = &t.compile else { continue };
        let crate::plan::Source::File(source) = &spec.source else {
            continue;
        };
        let digest = lockstep_core::hash::sha256_file(source)
            .ok()
            .and_then(|hex| hex::decode(hex).ok())
            .ok_or_else(|| refuse(format!("cannot read {}", source.display())))?;
        let identity = lockstep_iree::key_identity(&manifest.identity, &spec.flags);
        let key: Key = crate::cache::key(&identity, &digest, &spec.flags, spec.statistics);
        if bucket.slot(&key, None).peek().is_none() {
            missing.push(t.id.clone());
        }
    }
    let host_cpu = host_key_identity(&manifest.identity) != manifest.host_key_identity
        && tests.iter().any(|t| {
            missing.contains(&t.id)
                && t.compile.as_ref().is_some_and(|c| {
                    c.flags
                        .iter()
                        .any(|f| f == "--iree-llvmcpu-target-cpu=host")
                })
        });
    if host_cpu {
        return Err(refuse(
            "its modules for the host CPU were compiled on another CPU (--iree-llvmcpu-target-cpu=host)".into(),
        )
        .hint("make the bundle on a machine like this one, or for a target with an explicit CPU (--iree-llvmcpu-target-cpu=NAME in [test.targets.NAME] compile-flags)"));
    }
    if !missing.is_empty() {
        let shown: Vec<&str> = missing.iter().take(5).map(String::as_str).collect();
        return Err(refuse(format!(
            "{} not in the bundle under the keys its compiler ({}) gives: {}{}",
            lockstep_core::words::count(missing.len(), "test's module is", "tests' modules are"),
            manifest.compiler_version,
            shown.join(", "),
            if missing.len() > shown.len() { ", ..." } else { "" }
        ))
        .hint("the bundle was made by another compiler than it says, or altered: make it again with `lockstep test --bundle`"));
    }
    Ok(())
}
