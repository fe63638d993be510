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
//! The manifest lists every other file with its size and sha256 (`files`,
//! a [`Listing`]; lock files left out): a bundle is used only after its
//! directory was checked against that list, so a file altered (a module
//! with its seal recomputed, an expected output, the configuration),
//! missing or added, or one that is a FIFO, a device or a link to one, is
//! refused naming it; every file is read through lockstep-core's tree
//! door. The manifest is not signed: its sha256, printed where the bundle
//! is made and where it runs, is what to compare when the way between the
//! machines is not trusted. The manifest's test ids are the selection the
//! bundle was made with (`-k`, `-m`, `--shard`): it runs those, and `-k`
//! or `-m` there narrow them.
//!
//! `lockstep test --from-bundle DIR` plans the same tests from the copied
//! suites, computes their keys with the bundle's compiler identity and
//! refuses (before anything runs) when one is not in the bundle: made by
//! another compiler than its manifest says, or for other flags. Nothing is
//! compiled there; the runtime here must be the compiler's IREE version.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};

use lockstep_cache::{Area, Cache, Key};
use lockstep_core::events::Sink;
use lockstep_core::listing::Listing;
use lockstep_core::Error;
use lockstep_iree::Toolchain;
use serde::{Deserialize, Serialize};

use crate::plan::{Target, Test};

/// The manifest's name in a bundle.
pub const MANIFEST: &str = "bundle.json";
/// The configuration a bundle runs with.
pub const CONFIG: &str = "lockstep.toml";
/// The manifest's format (2: `files`).
const SCHEMA: u32 = 2;
const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// The largest lockstep.toml read from a bundle (a real one is a few KB).
const MAX_CONFIG_BYTES: u64 = 1 << 20;

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
    /// The ids of the tests it holds: the selection it was made with.
    pub tests: Vec<String>,
    /// Every other file of the bundle, with its size and sha256.
    pub files: Listing,
    /// The sha256 of bundle.json as written or read (not in the file).
    #[serde(skip)]
    pub sha256: String,
}

/// What a bundle's listing leaves out: the manifest that holds it, and
/// the cache's lock files.
fn unlisted(rel: &str) -> bool {
    rel == MANIFEST || lockstep_cache::is_lock_path(rel)
}

/// The tests a bundle holds, by id: what `--from-bundle` selects from.
pub fn held(manifest: &Manifest) -> HashSet<String> {
    manifest.tests.iter().cloned().collect()
}

/// `--bundle DIR` must not be inside a suite it copies (the copy would
/// take in the bundle being built): refused before anything is written,
/// links resolved on both sides.
pub fn check_destination(dir: &Path, suite_dirs: &[PathBuf]) -> Result<(), Error> {
    let real = lockstep_core::fs::real_path(dir);
    match suite_dirs
        .iter()
        .find(|suite| real.starts_with(lockstep_core::fs::real_path(suite)))
    {
        Some(suite) => Err(Error::usage(format!(
            "--bundle {} is inside the suite {}",
            dir.display(),
            suite.display()
        ))
        .cause("the bundle copies that suite: it would be copied into itself")
        .hint("write the bundle to a directory outside the suites (e.g. beside the project)")),
        None => Ok(()),
    }
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
    sink: &dyn Sink,
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
        copy_suite(suite, &dir.join("suites").join(&name), sink)?;
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
        &dir.join(CONFIG),
        format!("# lockstep test --from-bundle reads this: the [test] table of the project the bundle was made in\n{text}").as_bytes(),
    )?;
    let files = Listing::of(dir, &unlisted, "the bundle")?;
    let mut manifest = Manifest {
        schema: SCHEMA,
        kind: "test".into(),
        lockstep: env!("CARGO_PKG_VERSION").into(),
        compiler_version: toolchain.compiler_version.clone(),
        identity: toolchain.identity.clone(),
        host_key_identity: host_key_identity(&toolchain.identity),
        packages: toolchain.packages.clone(),
        targets: targets.iter().map(|t| t.name.clone()).collect(),
        tests: tests.iter().map(|t| t.id.clone()).collect(),
        files,
        sha256: String::new(),
    };
    let json = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::failed("cannot encode the bundle manifest").cause(e.to_string()))?;
    let json = format!("{json}\n");
    lockstep_core::fs::write_atomic(&dir.join(MANIFEST), json.as_bytes())?;
    manifest.sha256 = lockstep_core::hash::sha256_bytes(json.as_bytes());
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

/// Copies the suite directory `from` to `to` as discovery sees it: its
/// directories (a link to one followed once, never into a loop, an
/// ancestor or the kernel's filesystems: [`crate::walk::Walk`]) and its
/// regular files, each read as a file of a tree lockstep did not write
/// (never blocking); what is neither (a FIFO, a device, a dangling link)
/// is left out with a warning naming it.
fn copy_suite(from: &Path, to: &Path, sink: &dyn Sink) -> Result<(), Error> {
    let mut walk = crate::walk::Walk::new(from, sink)?;
    while let Some((dir, depth, entries)) = walk.next_dir()? {
        let into = to.join(dir.strip_prefix(from).unwrap_or(Path::new("")));
        fs_err::create_dir_all(&into)?;
        for entry in entries {
            let Some(name) = entry.path.file_name() else {
                continue;
            };
            if entry.is_dir {
                walk.descend(&entry, depth);
            } else if entry.is_file {
                copy_file(&entry.path, &into.join(name))?;
            } else {
                sink.warn(format!(
                    "not copied into the bundle: {} is not a regular file (a FIFO, a device or a dangling link)",
                    lockstep_core::error::printable_line(&entry.path.display().to_string())
                ));
            }
        }
    }
    Ok(())
}

/// Copies one regular file of a suite (at most
/// [`crate::sources::MAX_SOURCE_BYTES`]), keeping its permissions.
fn copy_file(from: &Path, to: &Path) -> Result<(), Error> {
    let max = crate::sources::MAX_SOURCE_BYTES;
    let (file, _) = lockstep_core::fs::open_tree_file("the suite file", from, max)?;
    let permissions = file.metadata().map(|m| m.permissions()).ok();
    let mut out = fs_err::File::create(to)?;
    let copied = std::io::copy(&mut file.take(max.saturating_add(1)), &mut out).map_err(|e| {
        Error::failed(format!("cannot copy {} into the bundle", from.display()))
            .cause(e.to_string())
    })?;
    if copied > max {
        return Err(Error::usage(format!(
            "the suite file {} is larger than {max} bytes, the most a bundle copies",
            from.display()
        )));
    }
    if let Some(permissions) = permissions {
        out.set_permissions(permissions)?;
    }
    Ok(())
}

/// Reads a test bundle's manifest and checks the bundle's files against
/// its listing (refusals are usage errors naming the bundle and the file).
/// The entry point for a hostile bundle directory: reads files only (never
/// blocking), starts nothing.
pub fn load(dir: &Path) -> Result<Manifest, Error> {
    let what = format!("--from-bundle {}", dir.display());
    let refuse =
        |what_is: String| Error::usage(format!("--from-bundle {}: {what_is}", dir.display()));
    let path = dir.join(MANIFEST);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(refuse(format!("no {MANIFEST}: not a bundle"))
            .hint("make one with `lockstep test --bundle DIR` on a machine with the compiler"));
    }
    let text = lockstep_core::fs::read_tree_text("the bundle file", &path, MAX_MANIFEST_BYTES)
        .map_err(|e| e.context(format!("{what}: {MANIFEST} cannot be read")))?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    let kind = value.get("kind").and_then(|k| k.as_str());
    if kind != Some("test") {
        return Err(refuse(format!("{MANIFEST} is not a test bundle's"))
            .hint("run a bench bundle with `lockstep bench --from-bundle`; make a test bundle with `lockstep test --bundle DIR`"));
    }
    // The schema first: an older manifest lacks what this one reads.
    let schema = value.get("schema").and_then(|s| s.as_u64());
    if schema != Some(u64::from(SCHEMA)) {
        let schema = schema.map_or_else(|| "none".to_string(), |s| s.to_string());
        return Err(refuse(format!(
            "{MANIFEST} is a test bundle of schema {schema}; `lockstep test` reads test bundles of schema {SCHEMA}"
        ))
        .hint("run it with the lockstep version that made it"));
    }
    let mut manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    manifest.sha256 = lockstep_core::hash::sha256_bytes(text.as_bytes());
    manifest.files.check(dir, &unlisted, &what, MANIFEST)?;
    Ok(manifest)
}

/// The bundle's lockstep.toml (its path and text), read through the tree
/// door: what `lockstep test --from-bundle` loads its `[test]` table from.
pub fn config(dir: &Path) -> Result<(PathBuf, String), Error> {
    let path = dir.join(CONFIG);
    let text = lockstep_core::fs::read_tree_text("the bundle file", &path, MAX_CONFIG_BYTES)
        .map_err(|e| {
            e.context(format!(
                "--from-bundle {}: {CONFIG} cannot be read",
                dir.display()
            ))
        })?;
    Ok((path, text))
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
        let (hex_digest, _) = lockstep_core::fs::sha256_tree_file(
            "the bundle file",
            source,
            crate::sources::MAX_SOURCE_BYTES,
        )
        .map_err(|e| {
            e.context(format!(
                "--from-bundle {}: the source of {} cannot be read",
                dir.display(),
                t.id
            ))
        })?;
        let digest = hex::decode(hex_digest)
            .map_err(|e| refuse(format!("cannot hash {}: {e}", source.display())))?;
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
            lockstep_core::error::shown(&manifest.compiler_version, 80),
            shown.join(", "),
            if missing.len() > shown.len() { ", ..." } else { "" }
        ))
        .hint("the bundle was made by another compiler than it says, or altered: make it again with `lockstep test --bundle`"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_bundle_inside_a_suite_it_copies_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let suite = dir.path().join("s");
        std::fs::create_dir_all(&suite).unwrap();
        let link = dir.path().join("link");
        std::os::unix::fs::symlink(&suite, &link).unwrap();
        let suites = [suite.clone()];
        for inside in [suite.join("b"), suite.join("x/../b"), link.join("new/b")] {
            let err = check_destination(&inside, &suites).unwrap_err();
            assert_eq!(err.exit_code(), 2);
            assert!(
                err.message.contains("is inside the suite") && err.message.contains("--bundle"),
                "{inside:?}: {}",
                err.message
            );
        }
        for outside in [
            dir.path().join("b"),
            suite.join("../b"),
            dir.path().join("s2"),
        ] {
            check_destination(&outside, &suites).unwrap();
        }
    }

    #[test]
    fn a_test_bundle_s_files_are_checked_before_anything_reads_them() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        std::fs::create_dir_all(b.join("suites/s")).unwrap();
        std::fs::write(b.join("suites/s/add.mlir"), "func").unwrap();
        std::fs::write(b.join(CONFIG), "[test]\n").unwrap();
        let manifest = serde_json::json!({
            "schema": SCHEMA, "kind": "test", "lockstep": "0", "compiler_version": "v",
            "identity": "i", "packages": [], "targets": ["cpu"], "tests": ["s/add [cpu]"],
            "files": Listing::of(b, &unlisted, "B").unwrap(),
        });
        std::fs::write(b.join(MANIFEST), manifest.to_string()).unwrap();
        let loaded = load(b).unwrap();
        assert_eq!(held(&loaded), HashSet::from(["s/add [cpu]".to_string()]));
        assert_eq!(config(b).unwrap().1, "[test]\n");
        std::fs::remove_file(b.join("suites/s/add.mlir")).unwrap();
        std::os::unix::fs::symlink("/dev/zero", b.join("suites/s/add.mlir")).unwrap();
        let err = load(b).expect_err("refused");
        assert_eq!(err.exit_code(), 2);
        assert!(
            err.message.contains("suites/s/add.mlir cannot be used")
                && err.message.contains("is a device"),
            "{}",
            err.message
        );
    }
}
