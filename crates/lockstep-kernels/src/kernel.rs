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

/// The MLIR modules of every kernel of one command line given as raw text
/// (one per direction), each named by its function; errors name the line
/// or the function. Panic-free on any input, and no module's size depends
/// on the tensor sizes: the entry point for fuzzing MLIR generation.
pub fn modules_of_line(text: &str) -> Result<Vec<(String, String)>, String> {
    let command = crate::commands::parse_line(text)?;
    crate::signature::signatures(&command.op)
        .iter()
        .map(|sig| module(sig).map(|mlir| (sig.func_name.clone(), mlir)))
        .collect()
}

/// The elements of the working copies a signature's module makes beside
/// its operands (padded and dilated tensors of a convolution), which the
/// runner's byte limit counts in the signature's element type.
pub fn scratch_elements(sig: &OpSignature) -> u64 {
    match &sig.details {
        SignatureDetails::Conv(_) => crate::conv_mlir::conv_scratch_elements(sig),
        SignatureDetails::Gemm(_) | SignatureDetails::LayerNorm(_) => 0,
    }
}

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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::commands::props::{mutated_line, VALID};
    use proptest::prelude::*;

    /// Sizes at and past what the flags allow, for every op.
    const HUGE: &[&str] = &[
        "conv -m trans -n 1 -c 1 -H 1 -W 1 -k 1 -y 2147483647 -x 1 -F 0",
        "conv -n 2147483647 -c 2147483647 -H 2147483647 -W 2147483647 -k 2147483647 -y 1 -x 1 -u 2147483647 -p 2147483647 -F 0",
        "conv -m trans -n 1 -c 2 -H 2147483647 -W 2147483647 -k 2 -y 2147483647 -x 2147483647 -u 2147483647 -v 2147483647 -l 2147483647 -j 2147483647 -Y 2147483646 -F 0",
        "convint8 -_ 3 -m trans -n 1 -c 1 -! 2147483647 -H 1 -W 1 -k 1 -@ 2147483647 -y 2147483647 -x 1 -# 2147483647 -F 1",
        "gemm -m 2147483647 -k 2147483647 -n 2147483647 -u 1 -v 1 -F 3",
        "layernorm -X 2147483647x2147483647x2147483647x2147483647 -o 3 -F 4",
    ];

    const MAX_MODULE: usize = 1 << 20;

    #[test]
    fn huge_sizes_give_small_modules_or_errors() {
        for line in VALID.iter().chain(HUGE) {
            let result = modules_of_line(line);
            match result {
                Ok(modules) => {
                    for (name, mlir) in modules {
                        assert!(
                            mlir.len() < 16 * 1024,
                            "{line}: {name}: {} bytes",
                            mlir.len()
                        );
                    }
                }
                Err(e) => assert!(
                    e.contains("conv_") || e.contains("gemm_") || e.contains('`'),
                    "{line}: {e}"
                ),
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Every accepted line's modules are generated without a panic and
        /// stay under 1 MB whatever the sizes.
        #[test]
        fn modules_of_accepted_lines_are_bounded(line in mutated_line()) {
            if let Ok(modules) = modules_of_line(&line) {
                for (name, mlir) in modules {
                    prop_assert!(mlir.len() < MAX_MODULE, "{line}: {name}: {} bytes", mlir.len());
                }
            }
        }
    }
}
