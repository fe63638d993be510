//! Bundles: compile here, run there. GPU runners are scarce and often
//! offline (IREE's own package CI compiles on CPU runners and runs on GPU
//! runners), so `lockstep bench --bundle DIR` compiles a batch for the
//! device (no GPU needed) and writes what a machine with only the IREE
//! runtime needs to run it, and `lockstep bench --from-bundle DIR` runs it
//! there, compiling nothing:
//!
//! - `bundle.json`: the compiler that built the modules (version line,
//!   identity, packages, the key identity, host CPU included for host-CPU
//!   builds), the device and every flag, the seed of the inputs, and per
//!   kernel its function, key and the sha256 of its encoded inputs;
//! - `commands.txt`: the batch's commands;
//! - `kernels/`: the kernel-cache entries (`FUNC/KEY.{vmfb,mlir,cmd,json}`,
//!   sealed with their sizes and sha256), compiled into the bundle itself
//!   (whatever the kernel cache's settings);
//! - with `--verify`, `references/`: the f64 references of the seeded
//!   inputs (a reference-cache area).
//!
//! The manifest lists every other file of the bundle with its size and
//! sha256 (`files`, a [`Listing`]; lock files left out). A bundle is read
//! only after its directory was checked against that list: a file altered
//! (a module with its seal recomputed included), missing or added, or one
//! that is a FIFO, a device or a link to one, is refused naming it, and
//! every file is read through lockstep-core's tree door, so nothing in a
//! bundle can make lockstep block or read without end. The manifest is not
//! signed: a bundle.json rewritten to match altered files passes; its
//! sha256, printed where the bundle is made and where it runs, is what to
//! compare when the way between the machines is not trusted.
//!
//! The bundle is built beside its directory and moved there whole: a
//! failed one leaves nothing behind.
//!
//! Inputs are not copied: they are generated from the seed (the same bytes
//! everywhere, which the recorded sha256 checks), so a bundle stays small.
//! A bundle is refused before anything runs when a module's key is not the
//! one its manifest's compiler, MLIR and flags give (made by another
//! compiler than it says, or altered), when this lockstep generates another
//! MLIR or other inputs for a kernel, when a host-CPU build meets another
//! CPU, or when the runtime here is another IREE version than the compiler.

use std::path::{Path, PathBuf};

use lockstep_cache::{Area, Bucket, Cache};
use lockstep_core::listing::Listing;
use lockstep_core::Error;
use lockstep_iree::Toolchain;
use lockstep_kernels::kernel;
use lockstep_kernels::signature::signatures;
use lockstep_kernels::tensor_data;
use serde::{Deserialize, Serialize};

use crate::cache;
use crate::device::Device;
use crate::jobs::Job;
use crate::run::Summary;

/// The manifest's name in a bundle.
pub const MANIFEST: &str = "bundle.json";
/// The commands file in a bundle.
pub const COMMANDS: &str = "commands.txt";
const KERNELS: &str = "kernels";
/// The manifest's format (2: `files`).
const SCHEMA: u32 = 2;
/// The largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 64 << 20;
/// The largest kernel MLIR read from a bundle.
const MAX_MLIR_BYTES: u64 = 256 << 20;
/// How much of a name or value from the manifest a refusal shows.
const SHOWN_CHARS: usize = 80;

/// A name or value from the manifest as a refusal shows it (escaped,
/// bounded: the manifest is not lockstep's).
fn shown(text: &str) -> String {
    lockstep_core::error::shown(text, SHOWN_CHARS)
}

/// What a bundle says about itself.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Manifest {
    pub schema: u32,
    /// `bench` (a `lockstep test` bundle says `test`).
    #[serde(default = "bench_kind")]
    pub kind: String,
    /// The lockstep that wrote it.
    pub lockstep: String,
    pub compiler: Compiler,
    pub device: BundleDevice,
    /// Every iree-compile flag, target flags first.
    pub flags: Vec<String>,
    /// The seed of every kernel's inputs.
    pub seed: u64,
    pub kernels: Vec<BundledKernel>,
    /// Every other file of the bundle, with its size and sha256.
    pub files: Listing,
    /// The sha256 of bundle.json as written or read (not in the file).
    #[serde(skip)]
    pub sha256: String,
}

/// What a bundle's listing leaves out: the manifest that holds it, and
/// the cache areas' lock files.
fn unlisted(rel: &str) -> bool {
    rel == MANIFEST || lockstep_cache::is_lock_path(rel)
}

fn bench_kind() -> String {
    "bench".into()
}

/// The compiler that built a bundle's modules.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Compiler {
    pub version: String,
    pub identity: String,
    /// What the keys were computed from (the identity, plus the host CPU
    /// for `--iree-llvmcpu-target-cpu=host` builds).
    pub key_identity: String,
    pub packages: Vec<(String, String)>,
}

/// The device a bundle was compiled for.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundleDevice {
    pub name: String,
    pub runtime: String,
    pub run_flags: Vec<String>,
}

/// One compiled kernel of a bundle.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct BundledKernel {
    pub func_name: String,
    pub key: String,
    /// sha256 of each input encoded in its element type, in argument order.
    pub inputs_sha256: Vec<String>,
}

/// The two cache areas of a bundle at `dir`.
pub fn areas(dir: &Path) -> (Bucket, Bucket) {
    let cache = Cache::at(dir).with_kernels_at(dir.join(KERNELS));
    (
        cache.bucket(Area::Kernels),
        Cache::at(dir).bucket(Area::References),
    )
}

/// The references area of a bundle (`dir/references`).
fn references_area(dir: &Path) -> Bucket {
    areas(dir).1
}

/// Writes the manifest and commands of a finished compile-only batch whose
/// modules were compiled into `dir/kernels` (and, with `verify`, whose
/// references are in `dir/references`): every kernel must have compiled and,
/// with `verify`, have its reference.
#[allow(clippy::too_many_arguments)]
pub fn write(
    dir: &Path,
    jobs: &[Job],
    summary: &Summary,
    toolchain: &Toolchain,
    device: &Device,
    flags: &[String],
    seed: u64,
    verify: bool,
) -> Result<Manifest, Error> {
    let failed: Vec<String> = summary
        .rows
        .iter()
        .filter(|r| r.module.is_none())
        .map(|r| format!("{}: {}", r.arguments, r.status))
        .collect();
    if !failed.is_empty() {
        return Err(Error::failed(format!(
            "no bundle written: {} did not compile",
            lockstep_core::words::count(failed.len(), "kernel", "kernels")
        ))
        .cause(failed.join("\n"))
        .hint("fix or remove those commands, then write the bundle again"));
    }
    let references = references_area(dir);
    let mut kernels = Vec::new();
    let mut seen = std::collections::HashSet::new();
    for (row, job) in summary.rows.iter().map(|r| (r, &jobs[r.command])) {
        let Some(module) = &row.module else { continue };
        let key = module
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_default();
        if !seen.insert(key.clone()) {
            continue;
        }
        let sig = match &job.parsed {
            Ok(command) => signatures(&command.op)
                .into_iter()
                .find(|s| s.func_name == row.func_name),
            Err(_) => None,
        };
        let Some(sig) = sig else { continue };
        if verify
            && references
                .slot(&crate::references::key(&sig, seed), None)
                .peek()
                .is_none()
        {
            return Err(Error::failed(format!(
                "no bundle written: the reference of {} could not be computed",
                sig.func_name
            ))
            .hint("write the bundle without --verify (a verifying run then computes it where it runs)"));
        }
        kernels.push(BundledKernel {
            func_name: row.func_name.clone(),
            key,
            inputs_sha256: inputs_sha256(&sig, seed),
        });
    }
    let commands: String = jobs.iter().map(|j| format!("{}\n", j.arguments)).collect();
    lockstep_core::fs::write_atomic(&dir.join(COMMANDS), commands.as_bytes())?;
    let files = Listing::of(dir, &unlisted, "the bundle")?;
    let mut manifest = Manifest {
        schema: SCHEMA,
        kind: bench_kind(),
        lockstep: env!("CARGO_PKG_VERSION").to_string(),
        compiler: Compiler {
            version: toolchain.compiler_version.clone(),
            identity: toolchain.identity.clone(),
            key_identity: lockstep_iree::key_identity(&toolchain.identity, flags),
            packages: toolchain.packages.clone(),
        },
        device: BundleDevice {
            name: device.name.clone(),
            runtime: device.runtime.clone(),
            run_flags: device.run_flags.clone(),
        },
        flags: flags.to_vec(),
        seed,
        kernels,
        files,
        sha256: String::new(),
    };
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::failed("cannot encode the bundle manifest").cause(e.to_string()))?;
    let text = format!("{text}\n");
    lockstep_core::fs::write_atomic(&dir.join(MANIFEST), text.as_bytes())?;
    manifest.sha256 = lockstep_core::hash::sha256_bytes(text.as_bytes());
    Ok(manifest)
}

/// The sha256 of each of `sig`'s seeded inputs, encoded.
fn inputs_sha256(sig: &lockstep_kernels::OpSignature, seed: u64) -> Vec<String> {
    tensor_data::inputs(sig, seed)
        .iter()
        .zip(&sig.inputs)
        .map(|(values, op)| {
            lockstep_core::hash::sha256_bytes(&tensor_data::encode(values, op.elem))
        })
        .collect()
}

/// A bundle read back and checked.
pub struct Loaded {
    pub dir: PathBuf,
    pub manifest: Manifest,
    pub kernels: Bucket,
    pub references: Bucket,
}

/// Reads the bundle at `dir` and checks it against this lockstep (see the
/// module doc); every refusal is a usage error naming the bundle, and
/// nothing in it is used before its files were checked against the
/// manifest's listing. The entry point for a hostile bundle directory:
/// reads files only (never blocking), starts nothing.
pub fn load(dir: &Path) -> Result<Loaded, Error> {
    let what = format!("--from-bundle {}", dir.display());
    let refuse =
        |what_is: String| Error::usage(format!("--from-bundle {}: {what_is}", dir.display()));
    let path = dir.join(MANIFEST);
    if std::fs::symlink_metadata(&path).is_err() {
        return Err(refuse(format!("no {MANIFEST}: not a bundle"))
            .hint("make one with `lockstep bench --bundle DIR` on a machine with the compiler"));
    }
    let text = lockstep_core::fs::read_tree_text("the bundle file", &path, MAX_MANIFEST_BYTES)
        .map_err(|e| {
            e.context(format!(
                "--from-bundle {}: {MANIFEST} cannot be read",
                dir.display()
            ))
        })?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    if let Some(kind) = value
        .get("kind")
        .and_then(|k| k.as_str())
        .filter(|k| *k != "bench")
    {
        return Err(refuse(format!("{MANIFEST} is a {} bundle", shown(kind)))
            .hint("run a test bundle with `lockstep test --from-bundle`"));
    }
    // The schema first: an older manifest lacks what this one reads.
    match value.get("schema").and_then(|s| s.as_u64()) {
        Some(schema) if schema == u64::from(SCHEMA) => {}
        Some(schema) => {
            return Err(refuse(format!(
                "{MANIFEST} has schema {schema}, this lockstep reads {SCHEMA}"
            ))
            .hint("run it with the lockstep version that made it"))
        }
        None => {
            return Err(refuse(format!(
                "{MANIFEST} is not a bundle manifest: no schema"
            )))
        }
    }
    let mut manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    manifest.sha256 = lockstep_core::hash::sha256_bytes(text.as_bytes());
    manifest.files.check(dir, &unlisted, &what, MANIFEST)?;
    let (kernels, references) = areas(dir);
    let host_cpu = manifest
        .flags
        .iter()
        .any(|f| f == "--iree-llvmcpu-target-cpu=host");
    if host_cpu
        && lockstep_iree::key_identity(&manifest.compiler.identity, &manifest.flags)
            != manifest.compiler.key_identity
    {
        return Err(refuse(
            "its modules were compiled for another host CPU (--iree-llvmcpu-target-cpu=host)"
                .into(),
        )
        .hint("make the bundle with an explicit CPU target (--compile-flag=--iree-llvmcpu-target-cpu=NAME) or on a machine like this one"));
    }
    for k in &manifest.kernels {
        check_kernel(&kernels, &manifest, k).map_err(refuse)?;
    }
    Ok(Loaded {
        dir: dir.to_path_buf(),
        manifest,
        kernels,
        references,
    })
}

/// One kernel's module is whole and was built from the MLIR the manifest's
/// compiler and flags say.
fn check_kernel(kernels: &Bucket, manifest: &Manifest, k: &BundledKernel) -> Result<(), String> {
    let func = shown(&k.func_name);
    let Some(key) = lockstep_cache::Key::parse(&k.key) else {
        return Err(format!(
            "kernel {func} has no valid key (`{}`)",
            shown(&k.key)
        ));
    };
    let slot = kernels.slot(&key, Some(&k.func_name));
    let entry = slot.peek().ok_or_else(|| {
        format!(
            "the module of {func} is missing or does not match its seal (sizes and sha256 in {})",
            slot.path("json").display()
        )
    })?;
    let source = entry
        .file(cache::SOURCE)
        .ok_or_else(|| format!("the MLIR of {func} is missing"))?;
    let mlir = lockstep_core::fs::read_tree_text("the bundle file", source, MAX_MLIR_BYTES)
        .map_err(|e| e.message)?;
    let expected = cache::key(&manifest.compiler.key_identity, &mlir, &manifest.flags);
    if expected != key {
        return Err(format!(
            "the module of {func} was not built by the compiler its manifest names ({}) with its flags: its key is {key}, they give {expected}",
            shown(&manifest.compiler.version)
        ));
    }
    Ok(())
}

/// Checks that this lockstep makes the same kernels and inputs the bundle
/// was made with, for every job that names a bundled kernel.
pub fn check_jobs(loaded: &Loaded, jobs: &[Job]) -> Result<(), Error> {
    let refuse = |what: String| {
        Error::usage(format!("--from-bundle {}: {what}", loaded.dir.display()))
            .hint("run the bundle with the lockstep version that made it")
    };
    for job in jobs {
        let Ok(command) = &job.parsed else { continue };
        for sig in signatures(&command.op) {
            let Some(k) = loaded
                .manifest
                .kernels
                .iter()
                .find(|k| k.func_name == sig.func_name)
            else {
                continue;
            };
            let mlir = kernel::module(&sig).unwrap_or_default();
            let key = cache::key(
                &loaded.manifest.compiler.key_identity,
                &mlir,
                &loaded.manifest.flags,
            );
            if key.as_str() != k.key {
                return Err(refuse(format!(
                    "this lockstep generates other MLIR for {} than the one that made the bundle",
                    sig.func_name
                )));
            }
            if inputs_sha256(&sig, loaded.manifest.seed) != k.inputs_sha256 {
                return Err(refuse(format!(
                    "this lockstep generates other inputs for {} than the one that made the bundle",
                    sig.func_name
                )));
            }
        }
    }
    Ok(())
}

/// The runtime here must be the IREE version that compiled the bundle
/// (a module's format follows its compiler); unknown versions pass.
pub fn check_runtime(loaded: &Loaded, toolchain: &Toolchain) -> Result<(), Error> {
    match lockstep_iree::toolchain::runtime_mismatch(&loaded.manifest.compiler.packages, &toolchain.packages) {
        Some((built, here)) => Err(Error::usage(format!(
            "--from-bundle {}: its modules were compiled by IREE {built}, the runtime here is IREE {here}",
            loaded.dir.display()
        ))
        .hint(format!("run it with iree-base-runtime {built} (--iree-bin DIR, or [toolchain] iree = \"{built}\")"))),
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A bundle of no kernels: its commands and a manifest listing them.
    fn minimal(dir: &Path, schema: u32) {
        std::fs::write(dir.join(COMMANDS), "gemm -m 2 -n 2 -k 2\n").unwrap();
        let manifest = serde_json::json!({
            "schema": schema,
            "kind": "bench",
            "lockstep": "0",
            "compiler": {"version": "v", "identity": "i", "key_identity": "i", "packages": []},
            "device": {"name": "cpu", "runtime": "local-task", "run_flags": []},
            "flags": [],
            "seed": 1,
            "kernels": [],
            "files": Listing::of(dir, &unlisted, "B").unwrap(),
        });
        std::fs::write(dir.join(MANIFEST), manifest.to_string()).unwrap();
    }

    fn mkfifo(path: &Path) {
        let _ = std::fs::remove_file(path);
        nix::unistd::mkfifo(path, nix::sys::stat::Mode::S_IRWXU).unwrap();
    }

    #[test]
    fn a_bundle_is_used_only_once_its_files_match_its_manifest() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        minimal(b, SCHEMA);
        let loaded = load(b).unwrap();
        assert_eq!(loaded.manifest.files.len(), 1);
        assert_eq!(loaded.manifest.sha256.len(), 64);
        let refused = |says: &[&str]| {
            let err = load(b).err().expect("refused");
            assert_eq!(err.exit_code(), 2);
            let text = err.render();
            for said in says {
                assert!(text.contains(said), "{said}: {text}");
            }
        };
        // Never blocking: a FIFO (nothing writes to it) or a device.
        mkfifo(&b.join(COMMANDS));
        refused(&["--from-bundle", "commands.txt cannot be used", "is a FIFO"]);
        std::fs::remove_file(b.join(COMMANDS)).unwrap();
        std::os::unix::fs::symlink("/dev/urandom", b.join(COMMANDS)).unwrap();
        refused(&[
            "commands.txt cannot be used",
            "is a device (through a link)",
        ]);
        std::fs::remove_file(b.join(COMMANDS)).unwrap();
        std::fs::write(b.join(COMMANDS), "gemm -m 4 -n 4 -k 4\n").unwrap();
        refused(&["commands.txt does not match bundle.json"]);
        mkfifo(&b.join(MANIFEST));
        refused(&["bundle.json cannot be read", "is a FIFO"]);
        // An older manifest: its schema, not a missing field.
        std::fs::remove_file(b.join(MANIFEST)).unwrap();
        std::fs::remove_file(b.join(COMMANDS)).unwrap();
        minimal(b, 1);
        refused(&["has schema 1, this lockstep reads 2"]);
    }

    /// What a hostile manifest names (its kind, a kernel's name and key, a
    /// file it lists) is shown escaped and cut: no refusal grows with it.
    #[test]
    fn a_manifest_s_names_are_shown_bounded_and_escaped() {
        let dir = tempfile::tempdir().unwrap();
        let b = dir.path();
        let long = format!("\u{1b}[2J{}", "x".repeat(20_000));
        let listed = |extra: &str| {
            minimal(b, SCHEMA);
            let mut manifest: serde_json::Value =
                serde_json::from_str(&std::fs::read_to_string(b.join(MANIFEST)).unwrap()).unwrap();
            manifest["files"][extra] = serde_json::json!({"size": 1, "sha256": long});
            manifest
        };
        let mut kind = listed("commands.txt");
        kind["kind"] = long.clone().into();
        let mut kernel = listed("commands.txt");
        kernel["files"] = serde_json::to_value(Listing::of(b, &unlisted, "B").unwrap()).unwrap();
        kernel["kernels"] =
            serde_json::json!([{"func_name": long, "key": long, "inputs_sha256": []}]);
        for manifest in [kind, kernel, listed(&long), listed("a/b")] {
            std::fs::write(b.join(MANIFEST), manifest.to_string()).unwrap();
            let err = load(b).err().expect("refused");
            assert_eq!(err.exit_code(), 2);
            let text = err.render();
            assert!(text.len() < 4_000, "{} bytes: {}", text.len(), &text[..300]);
            assert!(!text.contains('\u{1b}'), "{text}");
        }
    }
}
