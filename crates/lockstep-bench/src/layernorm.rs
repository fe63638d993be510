//! Layer-norm kernels (`layernorm`, `layernormfp16`, `layernormbfp16`): MLIR
//! and the f64 reference.

use crate::signature::OpSignature;
use crate::verify::Expected;

/// The MLIR module of a layer-norm signature.
pub fn module(sig: &OpSignature) -> Result<String, String> {
    Err(format!(
        "{}: layer-norm kernels are not generated yet",
        sig.func_name
    ))
}

/// The reference of each output of a layer-norm signature.
pub fn reference(sig: &OpSignature, _inputs: &[Vec<f64>]) -> Result<Vec<Expected>, String> {
    Err(format!(
        "{}: layer-norm kernels have no reference yet",
        sig.func_name
    ))
}
