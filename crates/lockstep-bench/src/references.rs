//! The f64 reference outputs `--verify` compares kernels with, kept in the
//! cache's `references` area: computing one is the slow part of a verified
//! run (seconds for a large convolution, single-threaded), and it depends only
//! on the signature, the input seed and the reference code, so a warm run
//! reads it back instead. Missing references are computed by the run's
//! workers beside the compiles ([`ensure`]); the check loads one at a time
//! ([`load_or_compute`]), so a batch never holds every reference in memory.
//!
//! An entry holds, per kernel output `i`, `out{i}.f64` (the values) and
//! `sums{i}.f64` (each element's tolerance scale), little-endian f64.

use lockstep_cache::{Area, Bucket, Key, KeyBuilder, SlotLock};
use lockstep_core::Error;

use lockstep_kernels::compare::Expected;
use lockstep_kernels::signature::OpSignature;
use lockstep_kernels::{kernel, tensor_data};

/// The version of the reference code: bump it whenever a reference (or the
/// seeded inputs it is computed from) would come out differently.
pub const REFERENCE_VERSION: u32 = 1;

/// The key of `sig`'s reference on the inputs of `seed`.
pub fn key(sig: &OpSignature, seed: u64) -> Key {
    let signature = serde_json::to_vec(sig).unwrap_or_default();
    KeyBuilder::new(Area::References, REFERENCE_VERSION)
        .part("signature", signature)
        .part("seed", seed.to_le_bytes())
        .finish()
}

/// Makes sure the reference of `sig` is in the area, computing and storing
/// it when it is not (another process computing it holds the lock: this
/// waits and finds it).
pub fn ensure(bucket: &Bucket, sig: &OpSignature, seed: u64) -> Result<(), String> {
    let slot = bucket.slot(&key(sig, seed), None);
    if slot.get().is_some() {
        return Ok(());
    }
    let lock = slot.lock().map_err(|e| e.render())?;
    if lock.get().is_some() {
        return Ok(());
    }
    let expected = compute(sig, seed)?;
    store(&lock, &expected).map_err(|e| e.render())
}

/// The reference of `sig`: from the area when it is there, else computed
/// (and stored, when there is an area).
pub fn load_or_compute(
    bucket: Option<&Bucket>,
    sig: &OpSignature,
    seed: u64,
) -> Result<Vec<Expected>, String> {
    let Some(bucket) = bucket else {
        return compute(sig, seed);
    };
    let slot = bucket.slot(&key(sig, seed), None);
    if let Some(found) = slot.get().and_then(|entry| load(&entry, sig)) {
        return Ok(found);
    }
    let expected = compute(sig, seed)?;
    if let Ok(lock) = slot.lock() {
        if let Err(e) = store(&lock, &expected) {
            tracing::warn!("cannot keep the reference of {}: {e}", sig.func_name);
        }
    }
    Ok(expected)
}

fn compute(sig: &OpSignature, seed: u64) -> Result<Vec<Expected>, String> {
    kernel::reference(sig, &tensor_data::inputs(sig, seed))
}

fn store(lock: &SlotLock, expected: &[Expected]) -> Result<(), Error> {
    let mut stage = lock.stage();
    for (i, output) in expected.iter().enumerate() {
        stage.write(&format!("out{i}.f64"), &to_bytes(&output.values))?;
        stage.write(&format!("sums{i}.f64"), &to_bytes(&output.sums))?;
    }
    stage.commit(serde_json::json!({ "outputs": expected.len() }))?;
    Ok(())
}

/// The stored reference, when it has one vector of the right length per
/// output of `sig`.
fn load(entry: &lockstep_cache::Entry, sig: &OpSignature) -> Option<Vec<Expected>> {
    let read = |name: String, len: u64| -> Option<Vec<f64>> {
        // A bundle's references are a tree lockstep did not write here.
        let want = len.saturating_mul(8);
        let bytes =
            lockstep_core::fs::read_tree_file("the reference", entry.file(&name)?, want).ok()?;
        (bytes.len() as u64 == want).then(|| from_bytes(&bytes))
    };
    sig.outputs
        .iter()
        .enumerate()
        .map(|(i, output)| {
            Some(Expected {
                values: read(format!("out{i}.f64"), output.elements())?,
                sums: read(format!("sums{i}.f64"), output.elements())?,
            })
        })
        .collect()
}

fn to_bytes(values: &[f64]) -> Vec<u8> {
    values.iter().flat_map(|v| v.to_le_bytes()).collect()
}

fn from_bytes(bytes: &[u8]) -> Vec<f64> {
    bytes
        .chunks_exact(8)
        .map(|c| f64::from_le_bytes(c.try_into().unwrap_or([0; 8])))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use lockstep_kernels::{parse_argv, signatures};

    fn sig(line: &str) -> OpSignature {
        let argv: Vec<String> = line.split_whitespace().map(String::from).collect();
        let command = parse_argv(&argv).unwrap();
        signatures(&command.op).remove(0)
    }

    #[test]
    fn stored_references_are_read_back_exactly() {
        let dir = tempfile::tempdir().unwrap();
        let cache = lockstep_cache::Cache::at(dir.path());
        let bucket = cache.bucket(Area::References);
        let conv = sig("conv -n 1 -c 4 -H 6 -W 6 -k 8 -y 3 -x 3 -F 1");
        let computed = compute(&conv, 7).unwrap();
        ensure(&bucket, &conv, 7).unwrap();
        let slot = bucket.slot(&key(&conv, 7), None);
        let entry = slot.get().expect("stored");
        assert_eq!(load(&entry, &conv).unwrap(), computed);
        assert_eq!(load_or_compute(Some(&bucket), &conv, 7).unwrap(), computed);
        // Another seed, another signature: other keys.
        assert_ne!(key(&conv, 7), key(&conv, 8));
        let gemm = sig("gemm -m 8 -k 12 -n 4");
        assert_ne!(key(&conv, 7), key(&gemm, 7));
        // Without an area the reference is computed.
        assert_eq!(load_or_compute(None, &conv, 7).unwrap(), computed);
    }
}
