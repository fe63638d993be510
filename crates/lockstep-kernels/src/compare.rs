//! Comparing a kernel's output with its reference: the [`Expected`] values
//! of one output with the magnitude each element's tolerance scales with,
//! the tolerance model, and the [`OutputCheck`] of a comparison.
//!
//! An element passes when `|got - ref| <= rtol*|ref| + atol*S`, where `S` is
//! what the op's reference gives it: for a convolution the sum of the
//! absolute values of the products summed into it (plus `|bias|`), gemm and
//! layer norm define theirs likewise. `rtol` covers the final rounding to
//! the output type, `atol*S` the accumulation. Tolerances depend on the
//! output's element type: `2^-7` for bf16, `2^-10` for f16, `1e-5` for f32
//! and exact for integer results (int8 convolutions write i32).

use crate::miopen::ElemType;
use crate::signature::OpSignature;

/// What one output of a kernel should hold: the reference values and, per
/// element, the magnitude `S` its absolute tolerance scales with.
#[derive(Debug, Clone, PartialEq)]
pub struct Expected {
    pub values: Vec<f64>,
    pub sums: Vec<f64>,
}

/// `len` zeros, or an error naming `what` when they do not fit in memory:
/// a reference must fail its row, not abort the process.
pub fn zeros(len: u64, what: &str) -> Result<Vec<f64>, String> {
    let too_large = || format!("{what}: the reference needs {len} values, more than fit in memory");
    let len = usize::try_from(len).map_err(|_| too_large())?;
    let mut values = Vec::new();
    values.try_reserve_exact(len).map_err(|_| too_large())?;
    values.resize(len, 0.0);
    Ok(values)
}

/// The outcome of comparing a kernel's output with the reference.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct OutputCheck {
    /// Largest `|got - ref|` (infinite when an element is NaN).
    pub max_abs: f64,
    /// Largest `|got - ref| / |ref|` over elements with a nonzero reference.
    pub max_rel: f64,
    /// Elements outside the tolerance (missing or extra elements count too).
    pub failures: usize,
    pub passed: bool,
}

impl OutputCheck {
    /// The verdict of two outputs of one kernel taken together.
    pub fn merge(self, other: OutputCheck) -> OutputCheck {
        OutputCheck {
            max_abs: self.max_abs.max(other.max_abs),
            max_rel: self.max_rel.max(other.max_rel),
            failures: self.failures + other.failures,
            passed: self.passed && other.passed,
        }
    }
}

/// `(rtol, atol)` for results of `elem`: `2^-7` for bf16, `2^-10` for f16,
/// `1e-5` for f32, zero (exact) for integers.
pub fn tolerance(elem: ElemType) -> (f64, f64) {
    let t = match elem {
        ElemType::BF16 => 2f64.powi(-7),
        ElemType::F16 => 2f64.powi(-10),
        ElemType::F32 => 1e-5,
        ElemType::I8 | ElemType::I32 => 0.0,
    };
    (t, t)
}

/// Compares `got` with `reference` element by element: an element passes
/// when `|got - ref| <= rtol*|ref| + atol*S` (`S` from `sums`), with the
/// tolerances of the signature's output type ([`tolerance`]).
pub fn compare(sig: &OpSignature, got: &[f64], reference: &[f64], sums: &[f64]) -> OutputCheck {
    let elem = sig.outputs.first().map_or(sig.dtype, |o| o.elem);
    compare_as(elem, got, reference, sums)
}

/// [`compare`] for an output of element type `elem`.
pub fn compare_as(elem: ElemType, got: &[f64], reference: &[f64], sums: &[f64]) -> OutputCheck {
    let (rtol, atol) = tolerance(elem);
    let mut verdict = OutputCheck {
        max_abs: 0.0,
        max_rel: 0.0,
        failures: got.len().abs_diff(reference.len()),
        passed: false,
    };
    for (i, (&g, &r)) in got.iter().zip(reference).enumerate() {
        let s = sums.get(i).copied().unwrap_or(0.0);
        let err = if g.is_nan() {
            f64::INFINITY
        } else {
            (g - r).abs()
        };
        verdict.max_abs = verdict.max_abs.max(err);
        if r != 0.0 {
            verdict.max_rel = verdict.max_rel.max(err / r.abs());
        }
        if err > rtol * r.abs() + atol * s {
            verdict.failures += 1;
        }
    }
    verdict.passed = verdict.failures == 0;
    verdict
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sig;

    #[test]
    fn tolerances_bound_each_element() {
        let bf16 = sig("convbfp16 -n 1 -c 1 -H 3 -W 3 -k 1 -y 2 -x 2 -F 1");
        let bound = 2f64.powi(-7) * 1.0 + 2f64.powi(-7) * 1.0;
        let inside = compare(&bf16, &[1.0 + bound], &[1.0], &[1.0]);
        assert!(inside.passed && inside.failures == 0, "{inside:?}");
        assert_eq!(inside.max_abs, bound);
        assert_eq!(inside.max_rel, bound);
        let outside = compare(&bf16, &[1.0 + bound + 2f64.powi(-30)], &[1.0], &[1.0]);
        assert!(!outside.passed && outside.failures == 1, "{outside:?}");
        // S widens the bound: a large cancelling sum allows more.
        assert!(compare(&bf16, &[1.0 + 0.1], &[1.0], &[20.0]).passed);
        assert!(!compare(&bf16, &[1.0 + 0.1], &[1.0], &[1.0]).passed);

        let f16 = sig("convfp16 -n 1 -c 1 -H 3 -W 3 -k 1 -y 2 -x 2 -F 1");
        let t = 2f64.powi(-10);
        assert!(compare(&f16, &[4.0 + 4.0 * t + 2.0 * t], &[4.0], &[2.0]).passed);
        assert!(!compare(&f16, &[4.0 + 4.0 * t + 2.0 * t + 1e-9], &[4.0], &[2.0]).passed);

        let f32 = sig("conv -n 1 -c 1 -H 3 -W 3 -k 1 -y 2 -x 2 -F 1");
        assert!(compare(&f32, &[100.0 + 0.9e-3], &[100.0], &[0.0]).passed);
        assert!(!compare(&f32, &[100.0 + 1.1e-3], &[100.0], &[0.0]).passed);
        // bf16's tolerance is far looser than f32's.
        assert!(!compare(&f32, &[1.0 + bound], &[1.0], &[1.0]).passed);

        // int8 convolutions produce i32 and must match exactly.
        let i8 = sig("convint8 -n 1 -c 1 -H 3 -W 3 -k 1 -y 2 -x 2 -F 1");
        assert!(compare(&i8, &[5.0, -7.0], &[5.0, -7.0], &[100.0, 100.0]).passed);
        let v = compare(&i8, &[5.0, -6.0], &[5.0, -7.0], &[100.0, 100.0]);
        assert_eq!((v.failures, v.max_abs, v.passed), (1, 1.0, false));

        // NaN, zero references, missing elements.
        let v = compare(&f32, &[f64::NAN, 0.5], &[1.0, 0.0], &[1.0, 1.0]);
        assert_eq!(v.failures, 2);
        assert_eq!(v.max_abs, f64::INFINITY);
        let v = compare(&f32, &[1.0], &[1.0, 2.0], &[1.0, 1.0]);
        assert_eq!((v.failures, v.passed), (1, false));
        let v = compare(&f32, &[0.0], &[0.0], &[0.0]);
        assert_eq!(
            v,
            OutputCheck {
                max_abs: 0.0,
                max_rel: 0.0,
                failures: 0,
                passed: true
            }
        );
    }
}
