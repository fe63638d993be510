//! The kernel of any op signature: its MLIR module ([`module`]) and the
//! reference values of its outputs ([`reference()`]), whichever op it is.
//!
//! This is the one place that matches on the op to reach its generator and
//! its reference (convolutions in [`crate::conv_mlir`] and
//! [`crate::conv_reference`], gemm in [`crate::gemm`], layer norm in
//! [`crate::layernorm`]), so the op modules never depend on each other and
//! the runner on none of them.

use crate::compare::Expected;
use crate::conv_mlir::conv_module;
use crate::conv_reference::conv_reference;
use crate::signature::{OpSignature, SignatureDetails};

/// The MLIR module of any signature: a convolution, a gemm or a layer norm.
pub fn module(sig: &OpSignature) -> Result<String, String> {
    match &sig.details {
        SignatureDetails::Conv(_) => conv_module(sig),
        SignatureDetails::Gemm(_) => crate::gemm::module(sig),
        SignatureDetails::LayerNorm(_) => crate::layernorm::module(sig),
    }
}

/// The reference of every output of `sig` (in `sig.outputs` order) from its
/// `inputs` (one vector per operand of `sig.inputs`).
pub fn reference(sig: &OpSignature, inputs: &[Vec<f64>]) -> Result<Vec<Expected>, String> {
    match &sig.details {
        SignatureDetails::Conv(_) => {
            let (values, sums) = conv_reference(sig, inputs)?;
            Ok(vec![Expected { values, sums }])
        }
        SignatureDetails::Gemm(_) => crate::gemm::reference(sig, inputs),
        SignatureDetails::LayerNorm(_) => crate::layernorm::reference(sig, inputs),
    }
}
