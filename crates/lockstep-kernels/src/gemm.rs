//! Gemm kernels (`gemm`, `gemmfp16`): the MLIR of each mode and its f64
//! reference, kept side by side so that one file defines what the op computes.
//!
//! Every mode is one contraction over the three gemm dimensions M, K, N (as
//! BOO's parser makes them: M from `-k`, K from `-m`, see
//! [`GemmCommand`]), with each operand addressed in its storage order
//! (`trans_a` stores A as K×M, `trans_b` stores B as N×K, and a gradient is
//! stored like the matrix it is the gradient of), the operands in the order
//! of BOO's modules:
//!
//! - forward `(A, B)`: `C[m,n] = sum_k A[m,k]·B[k,n]`;
//! - `a_backward` `(dC, B)`: `dA[m,k] = sum_n dC[m,n]·B[k,n]` (dC·Bᵀ);
//! - `b_backward` `(dC, A)`: `dB[k,n] = sum_m dC[m,n]·A[m,k]` (Aᵀ·dC).
//!
//! The MLIR is a `linalg.generic` whose iteration dimensions are the result's
//! two dimensions (parallel) then the summed one (reduction), so IREE sees a
//! plain matmul whatever the transposition. Operands are extended to the
//! signature's accumulator type (f32) inside the body, products summed there,
//! and the sum truncated to the output type by a second generic (f16 only):
//! the same accumulation that MIOpen and BOO do.
//!
//! Verification: inputs are exact in their type, so the f64 reference is the
//! exact result, and each element's `S` is the sum of the absolute values of
//! its products: the tolerance `rtol·|ref| + atol·S` then covers the final
//! rounding to the output type (rtol) and the rounding of every partial sum
//! (atol·S, as for convolutions).

use crate::compare::Expected;
use crate::miopen::{ElemType, GemmCommand, GemmMode};
use crate::mlir_text::{convert, list, multiply_accumulate, tensor_type, Body};
use crate::signature::{OpSignature, SignatureDetails};

/// One of the three gemm dimensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Dim {
    M,
    K,
    N,
}

/// A gemm mode as `out[o0, o1] = sum_r lhs[..]·rhs[..]`, each operand given
/// by the dimensions of its storage order.
#[derive(Debug, Clone, Copy)]
struct Contraction {
    lhs: [Dim; 2],
    rhs: [Dim; 2],
    out: [Dim; 2],
    reduced: Dim,
}

impl Contraction {
    fn of(gemm: &GemmCommand) -> Contraction {
        let a = if gemm.trans_a {
            [Dim::K, Dim::M]
        } else {
            [Dim::M, Dim::K]
        };
        let b = if gemm.trans_b {
            [Dim::N, Dim::K]
        } else {
            [Dim::K, Dim::N]
        };
        let c = [Dim::M, Dim::N];
        let (lhs, rhs, out, reduced) = match gemm.mode {
            GemmMode::Forward => (a, b, c, Dim::K),
            GemmMode::ABackward => (c, b, a, Dim::N),
            GemmMode::BBackward => (c, a, b, Dim::M),
        };
        Contraction {
            lhs,
            rhs,
            out,
            reduced,
        }
    }

    /// The iteration dimensions: the result's two, then the summed one.
    fn loops(&self) -> [Dim; 3] {
        [self.out[0], self.out[1], self.reduced]
    }

    /// The element stride of each loop in an operand stored (row-major) as
    /// `dims`; zero for the loop the operand does not depend on.
    fn strides(&self, gemm: &GemmCommand, dims: [Dim; 2]) -> [usize; 3] {
        self.loops().map(|l| {
            if l == dims[0] {
                size(gemm, dims[1]) as usize
            } else if l == dims[1] {
                1
            } else {
                0
            }
        })
    }

    /// The affine map reading an operand stored as `dims`.
    fn map(&self, dims: [Dim; 2]) -> String {
        let loops = self.loops();
        let position = |d: Dim| loops.iter().position(|&l| l == d).unwrap_or(0);
        format!(
            "affine_map<(d0, d1, d2) -> (d{}, d{})>",
            position(dims[0]),
            position(dims[1])
        )
    }
}

fn size(gemm: &GemmCommand, dim: Dim) -> u64 {
    match dim {
        Dim::M => gemm.m,
        Dim::K => gemm.k,
        Dim::N => gemm.n,
    }
}

fn shape(gemm: &GemmCommand, dims: [Dim; 2]) -> Vec<u64> {
    vec![size(gemm, dims[0]), size(gemm, dims[1])]
}

/// The gemm behind `sig`, once its operands are checked to be the ones the
/// contraction reads and writes, in order, all of the signature's type.
fn checked(sig: &OpSignature) -> Result<(&GemmCommand, Contraction), String> {
    let name = &sig.func_name;
    let SignatureDetails::Gemm(gemm) = &sig.details else {
        return Err(sig.not_a("gemm"));
    };
    sig.require_float_in_f32("gemm", "accumulated")?;
    let c = Contraction::of(gemm);
    let expected = |dims: &[[Dim; 2]]| -> Vec<(Vec<u64>, ElemType)> {
        dims.iter().map(|d| (shape(gemm, *d), sig.dtype)).collect()
    };
    let actual = |operands: &[crate::signature::Operand]| -> Vec<(Vec<u64>, ElemType)> {
        operands.iter().map(|o| (o.shape.clone(), o.elem)).collect()
    };
    if actual(&sig.inputs) != expected(&[c.lhs, c.rhs])
        || actual(&sig.outputs) != expected(&[c.out])
    {
        return Err(format!(
            "{name}: operands do not match the gemm ({:?} -> {:?})",
            actual(&sig.inputs),
            actual(&sig.outputs)
        ));
    }
    Ok((gemm, c))
}

/// The MLIR module of a gemm signature.
pub fn module(sig: &OpSignature) -> Result<String, String> {
    let (gemm, c) = checked(sig)?;
    let (dtype, acc) = (sig.dtype, sig.accumulator);
    let out_shape = shape(gemm, c.out);
    let mut body = Body::default();
    let sum = contract(&mut body, gemm, &c, dtype, acc)?;
    let result = truncate(&mut body, &sum, &out_shape, acc, dtype)?;
    let result_type = tensor_type(&out_shape, dtype);
    body.line(&format!("return {result} : {result_type}"));
    let args = list(
        [c.lhs, c.rhs]
            .iter()
            .enumerate()
            .map(|(i, dims)| format!("%arg{i}: {}", tensor_type(&shape(gemm, *dims), dtype))),
    );
    Ok(format!(
        "module {{\n  func.func @{}({args}) -> {result_type} {{\n{}  }}\n}}\n",
        sig.func_name, body.text
    ))
}

/// `out = sum lhs·rhs` in the accumulator type, from a zero-filled tensor.
fn contract(
    body: &mut Body,
    gemm: &GemmCommand,
    c: &Contraction,
    dtype: ElemType,
    acc: ElemType,
) -> Result<String, String> {
    let acc_type = tensor_type(&shape(gemm, c.out), acc);
    let init = body.zeros(&shape(gemm, c.out), acc);
    let result = body.fresh("gemm");
    body.line(&format!(
        "{result} = linalg.generic {{indexing_maps = [{}, {}, {}], iterator_types = [\"parallel\", \"parallel\", \"reduction\"]}} ins(%arg0, %arg1 : {}, {}) outs({init} : {acc_type}) {{",
        c.map(c.lhs),
        c.map(c.rhs),
        c.map(c.out),
        tensor_type(&shape(gemm, c.lhs), dtype),
        tensor_type(&shape(gemm, c.rhs), dtype),
    ));
    multiply_accumulate(body, dtype, acc, &acc_type)?;
    Ok(result)
}

/// Converts a 2-D accumulator-typed result to the output type (nothing to do
/// for f32).
fn truncate(
    body: &mut Body,
    value: &str,
    shape: &[u64],
    acc: ElemType,
    out: ElemType,
) -> Result<String, String> {
    if acc == out {
        return Ok(value.to_string());
    }
    let identity = "affine_map<(d0, d1) -> (d0, d1)>";
    let out_type = tensor_type(shape, out);
    let empty = body.fresh("empty");
    body.line(&format!("{empty} = tensor.empty() : {out_type}"));
    let result = body.fresh("result");
    body.line(&format!(
        "{result} = linalg.generic {{indexing_maps = [{identity}, {identity}], iterator_types = [\"parallel\", \"parallel\"]}} ins({value} : {}) outs({empty} : {out_type}) {{",
        tensor_type(shape, acc)
    ));
    body.line(&format!(
        "^bb0(%sum: {}, %unused: {}):",
        acc.mlir(),
        out.mlir()
    ));
    let converted = convert(body, "%sum", acc, out)?;
    body.line(&format!("  linalg.yield {converted} : {}", out.mlir()));
    body.line(&format!("}} -> {out_type}"));
    Ok(result)
}

/// The reference of a gemm signature's output: the exact sums and, per
/// element, the sum of the absolute values of its products.
pub fn reference(sig: &OpSignature, inputs: &[Vec<f64>]) -> Result<Vec<Expected>, String> {
    let (gemm, c) = checked(sig)?;
    let name = &sig.func_name;
    if inputs.len() != 2 {
        return Err(format!(
            "{name}: {} input vectors for 2 operands",
            inputs.len()
        ));
    }
    for (i, (values, dims)) in inputs.iter().zip([c.lhs, c.rhs]).enumerate() {
        let elements = size(gemm, dims[0]).saturating_mul(size(gemm, dims[1]));
        if values.len() as u64 != elements {
            return Err(format!(
                "{name}: input {i} has {} values, its operand {elements} elements",
                values.len()
            ));
        }
    }
    let [o0, o1, r] = c.loops().map(|d| size(gemm, d) as usize);
    let (lhs, rhs) = (c.strides(gemm, c.lhs), c.strides(gemm, c.rhs));
    let elements = size(gemm, c.out[0]).saturating_mul(size(gemm, c.out[1]));
    let mut values = crate::compare::zeros(elements, name)?;
    let mut sums = crate::compare::zeros(elements, name)?;
    for i in 0..o0 {
        for j in 0..o1 {
            let (mut value, mut sum) = (0.0, 0.0);
            for k in 0..r {
                let product = inputs[0][i * lhs[0] + j * lhs[1] + k * lhs[2]]
                    * inputs[1][i * rhs[0] + j * rhs[1] + k * rhs[2]];
                value += product;
                sum += product.abs();
            }
            values[i * o1 + j] = value;
            sums[i * o1 + j] = sum;
        }
    }
    Ok(vec![Expected { values, sums }])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::compare::{compare_as, OutputCheck};
    use crate::tensor_data::inputs;
    use crate::testing::sig;

    fn run(line: &str, inputs: &[Vec<f64>]) -> Expected {
        let mut all = reference(&sig(line), inputs).unwrap_or_else(|e| panic!("{line}: {e}"));
        assert_eq!(all.len(), 1);
        all.remove(0)
    }

    /// M = 2, K = 3, N = 2: BOO takes M from `-k` and K from `-m`.
    const SMALL: &str = "gemm -k 2 -m 3 -n 2";

    /// A (2×3) = [[1, 2, 3], [4, 5, -6]], B (3×2) = [[1, 0], [0, 1], [1, -1]].
    const A: [f64; 6] = [1.0, 2.0, 3.0, 4.0, 5.0, -6.0];
    const A_T: [f64; 6] = [1.0, 4.0, 2.0, 5.0, 3.0, -6.0];
    const B: [f64; 6] = [1.0, 0.0, 0.0, 1.0, 1.0, -1.0];
    const B_T: [f64; 6] = [1.0, 0.0, 1.0, 0.0, 1.0, -1.0];

    #[test]
    fn forward_by_hand() {
        let c = run(&format!("{SMALL} -F 1"), &[A.to_vec(), B.to_vec()]);
        // [[1 + 3, 2 - 3], [4 - 6, 5 + 6]]
        assert_eq!(c.values, [4.0, -1.0, -2.0, 11.0]);
        assert_eq!(c.sums, [4.0, 5.0, 10.0, 11.0]);
        // Transposed storage reads the same matrices.
        for (flags, a, b) in [
            ("-u 1", &A_T, &B),
            ("-v 1", &A, &B_T),
            ("-u 1 -v 1", &A_T, &B_T),
        ] {
            let line = format!("{SMALL} {flags} -F 1");
            assert_eq!(run(&line, &[a.to_vec(), b.to_vec()]), c, "{flags}");
        }
    }

    #[test]
    fn a_backward_by_hand() {
        // dA = dC·Bᵀ with dC (2×2) = [[1, 2], [3, 4]].
        let dc = vec![1.0, 2.0, 3.0, 4.0];
        let da = run(&format!("{SMALL} -F 2"), &[dc.clone(), B.to_vec()]);
        assert_eq!(da.values, [1.0, 2.0, -1.0, 3.0, 4.0, -1.0]);
        assert_eq!(da.sums, [1.0, 2.0, 3.0, 3.0, 4.0, 7.0]);
        // A transposed A is given its gradient transposed (K×M).
        let da_t = run(&format!("{SMALL} -u 1 -v 1 -F 2"), &[dc, B_T.to_vec()]);
        assert_eq!(da_t.values, [1.0, 3.0, 2.0, 4.0, -1.0, -1.0]);
    }

    #[test]
    fn b_backward_by_hand() {
        // dB = Aᵀ·dC with dC (2×2) = [[1, 0], [0, 1]]: dB = Aᵀ. The
        // inputs are (dC, A), as BOO's GEMMBackwardB takes them.
        let dc = vec![1.0, 0.0, 0.0, 1.0];
        let db = run(&format!("{SMALL} -F 3"), &[dc.clone(), A.to_vec()]);
        assert_eq!(db.values, A_T);
        assert_eq!(db.sums, A_T.map(f64::abs));
        // Stored N×K, the gradient is Aᵀ transposed: A itself.
        let db_t = run(&format!("{SMALL} -u 1 -v 1 -F 3"), &[dc, A_T.to_vec()]);
        assert_eq!(db_t.values, A);
        // A non-symmetric dC tells the operands apart: dC = [[1, 2], [0, 0]]
        // keeps row 0 of A: dB[k, n] = A[0, k]·dC[0, n].
        let db = run(
            &format!("{SMALL} -F 3"),
            &[vec![1.0, 2.0, 0.0, 0.0], A.to_vec()],
        );
        assert_eq!(db.values, [1.0, 2.0, 2.0, 4.0, 3.0, 6.0]);
    }

    /// The backward modes are the adjoints of the forward one: for any A, B
    /// and dC, <A·B, dC> = <A, dA> = <B, dB>, whatever the storage.
    #[test]
    fn backward_modes_are_adjoints_in_every_storage() {
        let inner = |a: &[f64], b: &[f64]| a.iter().zip(b).map(|(p, q)| p * q).sum::<f64>();
        for flags in ["", "-u 1", "-v 1", "-u 1 -v 1"] {
            let base = format!("gemm -k 5 -m 7 -n 3 {flags}");
            let fwd = sig(&format!("{base} -F 1"));
            let ab = inputs(&fwd, 1);
            let dc = inputs(&sig(&format!("{base} -F 2")), 2).remove(0);
            let c = run(&format!("{base} -F 1"), &ab).values;
            let da = run(&format!("{base} -F 2"), &[dc.clone(), ab[1].clone()]).values;
            let db = run(&format!("{base} -F 3"), &[dc.clone(), ab[0].clone()]).values;
            assert_eq!(inner(&c, &dc), inner(&ab[0], &da), "{flags}");
            assert_eq!(inner(&c, &dc), inner(&ab[1], &db), "{flags}");
            assert!(inner(&c, &dc) != 0.0);
        }
    }

    #[test]
    fn module_text() {
        let text = module(&sig("gemmfp16 -k 6 -m 9 -n 4 -u 1 -v 1 -F 1")).unwrap();
        assert!(text.contains(
            "func.func @gemm_float16_forward_6x9x4_transA_transB(%arg0: tensor<9x6xf16>, %arg1: tensor<4x9xf16>) -> tensor<6x4xf16>"
        ));
        // Loops (m, n, k): A is read as (k, m), B as (n, k).
        assert!(text.contains("affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>"));
        assert!(text.contains("arith.extf %lhs : f16 to f32"));
        assert!(text.contains("arith.truncf %sum : f32 to f16"));
        // b_backward with A transposed: loops (k, n, m), dC (M×N) then A
        // (stored K×M) in, dB stored K×N out.
        let text = module(&sig("gemm -k 6 -m 9 -n 4 -u 1 -F 3")).unwrap();
        assert!(text.contains(
            "func.func @gemm_float32_b_backward_6x9x4_transA(%arg0: tensor<6x4xf32>, %arg1: tensor<9x6xf32>) -> tensor<9x4xf32>"
        ));
        assert!(text.contains(
            "affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>"
        ));
        assert!(!text.contains("truncf") && !text.contains("extf"));
    }

    #[test]
    fn wrong_signatures_and_inputs_are_errors() {
        let s = sig(SMALL);
        let err = reference(&s, &[A.to_vec()]).unwrap_err();
        assert!(err.contains("input vectors"), "{err}");
        let err = reference(&s, &[A.to_vec(), vec![1.0; 5]]).unwrap_err();
        assert!(err.contains("5 values"), "{err}");
        let mut bad = s.clone();
        bad.inputs[1].shape = vec![2, 3];
        assert!(module(&bad).unwrap_err().contains("do not match"));
        assert!(reference(&bad, &[A.to_vec(), B.to_vec()]).is_err());
        let conv = sig("conv -n 1 -c 1 -H 3 -W 3 -k 1 -y 2 -x 2 -F 1");
        assert!(module(&conv).unwrap_err().contains("not a gemm"));
    }

    /// Compiles and runs `line` on `inputs(sig, seed)` with the real tools;
    /// returns its output, the reference and their verdict.
    fn execute(line: &str, seed: u64) -> (OpSignature, Vec<f64>, Expected, OutputCheck) {
        let sig = sig(line);
        let text = module(&sig).unwrap_or_else(|e| panic!("{line}: {e}"));
        let data = inputs(&sig, seed);
        let got = crate::testing::execute(&sig, &text, &data).remove(0);
        let want = run(line, &data);
        let verdict = compare_as(sig.outputs[0].elem, &got, &want.values, &want.sums);
        (sig, got, want, verdict)
    }

    /// Every mode and storage, f32 and f16, M, K, N all different (M from
    /// `-k`, K from `-m`).
    const MATRIX: &[&str] = &[
        "gemm -k 5 -m 7 -n 3 -F 1",
        "gemm -k 5 -m 7 -n 3 -u 1 -F 1",
        "gemm -k 5 -m 7 -n 3 -v 1 -F 2",
        "gemm -k 5 -m 7 -n 3 -u 1 -v 1 -F 2",
        "gemm -k 5 -m 7 -n 3 -u 1 -F 3",
        "gemm -k 5 -m 7 -n 3 -v 1 -F 3",
        "gemmfp16 -k 6 -m 300 -n 4 -u 1 -v 1 -F 1",
        "gemmfp16 -k 6 -m 4 -n 300 -F 2",
        "gemmfp16 -k 300 -m 6 -n 4 -u 1 -v 1 -F 3",
    ];

    #[test]
    fn the_matrix_runs_and_passes() {
        let mut rounded = false;
        std::thread::scope(|scope| {
            let jobs: Vec<_> = MATRIX
                .iter()
                .map(|line| scope.spawn(move || (line, execute(line, 42))))
                .collect();
            for job in jobs {
                let (line, (sig, got, want, verdict)) = job.join().unwrap();
                assert!(verdict.passed, "{line}: {verdict:?}");
                assert!(want.values.iter().any(|v| *v != 0.0), "{line}: trivial");
                if sig.dtype == ElemType::F32 {
                    // Exact inputs, short f32 sums: exact results.
                    assert_eq!(got, want.values, "{line}");
                } else {
                    rounded |= verdict.max_abs > 0.0;
                }
            }
        });
        // Sums of 300 products reach past 32, where f16's quantum (1/32) is
        // coarser than the products' (1/64): some results were rounded, so
        // the f16 tolerance was really exercised.
        assert!(rounded);
    }

    /// A kernel's real output fails against a wrong reference (the wrong
    /// storage of A, a missing product) and when perturbed past its bound.
    #[test]
    fn wrong_results_fail() {
        let line = "gemmfp16 -k 6 -m 40 -n 4 -u 1 -F 1";
        let (sig, got, want, verdict) = execute(line, 7);
        assert!(verdict.passed, "{verdict:?}");
        let elem = sig.outputs[0].elem;
        let data = inputs(&sig, 7);

        let untransposed = run("gemmfp16 -k 6 -m 40 -n 4 -F 1", &data);
        let v = compare_as(elem, &got, &untransposed.values, &untransposed.sums);
        assert!(!v.passed, "{v:?}");

        // Zeroing row 39 of A (stored K×M) drops the products of k = 39.
        let mut short = data.clone();
        short[0][39 * 6..].fill(0.0);
        let missing = run(line, &short);
        let v = compare_as(elem, &got, &missing.values, &missing.sums);
        assert!(!v.passed, "{v:?}");

        let (rtol, atol) = crate::compare::tolerance(elem);
        let bound = rtol * want.values[5].abs() + atol * want.sums[5];
        let mut off = got.clone();
        off[5] = want.values[5] + 2.0 * bound;
        assert!(!compare_as(elem, &off, &want.values, &want.sums).passed);
        off[5] = want.values[5] - 0.5 * bound;
        assert!(compare_as(elem, &off, &want.values, &want.sums).passed);
    }
}
