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
/// The manifest's format.
const SCHEMA: u32 = 1;
/// The largest manifest read.
const MAX_MANIFEST_BYTES: u64 = 16 << 20;

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
    let manifest = Manifest {
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
    };
    let text = serde_json::to_string_pretty(&manifest)
        .map_err(|e| Error::failed("cannot encode the bundle manifest").cause(e.to_string()))?;
    lockstep_core::fs::write_atomic(&dir.join(MANIFEST), format!("{text}\n").as_bytes())?;
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
/// module doc); every refusal is a usage error naming the bundle.
pub fn load(dir: &Path) -> Result<Loaded, Error> {
    let refuse = |what: String| Error::usage(format!("--from-bundle {}: {what}", dir.display()));
    let path = dir.join(MANIFEST);
    if !path.is_file() {
        return Err(refuse(format!("no {MANIFEST}: not a bundle"))
            .hint("make one with `lockstep bench --bundle DIR` on a machine with the compiler"));
    }
    let text = lockstep_core::fs::read_input_text("--from-bundle", &path, MAX_MANIFEST_BYTES)?;
    let value: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    if let Some(kind) = value
        .get("kind")
        .and_then(|k| k.as_str())
        .filter(|k| *k != "bench")
    {
        return Err(refuse(format!("{MANIFEST} is a {kind} bundle"))
            .hint("run a test bundle with `lockstep test --from-bundle`"));
    }
    let manifest: Manifest = serde_json::from_value(value)
        .map_err(|e| refuse(format!("{MANIFEST} is not a bundle manifest: {e}")))?;
    if manifest.kind != "bench" {
        return Err(refuse(format!("{MANIFEST} is a {} bundle", manifest.kind))
            .hint("run a test bundle with `lockstep test --from-bundle`"));
    }
    if manifest.schema != SCHEMA {
        return Err(refuse(format!(
            "{MANIFEST} has schema {}, this lockstep reads {SCHEMA}",
            manifest.schema
        ))
        .hint("run it with the lockstep version that made it"));
    }
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
    let Some(key) = lockstep_cache::Key::parse(&k.key) else {
        return Err(format!(
            "kernel {} has no valid key ({:?})",
            k.func_name, k.key
        ));
    };
    let slot = kernels.slot(&key, Some(&k.func_name));
    let entry = slot.peek().ok_or_else(|| {
        format!(
            "the module of {} is missing or does not match its seal (sizes and sha256 in {})",
            k.func_name,
            slot.path("json").display()
        )
    })?;
    let source = entry
        .file(cache::SOURCE)
        .ok_or_else(|| format!("the MLIR of {} is missing", k.func_name))?;
    let mlir = std::fs::read_to_string(source).map_err(|e| format!("{}: {e}", source.display()))?;
    let expected = cache::key(&manifest.compiler.key_identity, &mlir, &manifest.flags);
    if expected != key {
        return Err(format!(
            "the module of {} was not built by the compiler its manifest names ({}) with its flags: its key is {key}, they give {expected}",
            k.func_name, manifest.compiler.version
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
