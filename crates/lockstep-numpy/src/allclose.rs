//! `numpy.allclose(observed, expected, rtol, atol, equal_nan)`, as numpy 2
//! computes it (`numpy.isclose`):
//!
//! ```text
//! y = expected as result_type(expected, 1.0)      # ints become float64
//! close = (|x - y| <= atol + rtol * |y|) & isfinite(y) | (x == y)
//! close |= equal_nan & isnan(x) & isnan(y)
//! ```
//!
//! The dtypes matter: `x - y` is computed in the promoted type of the two
//! arrays, and `atol + rtol * |y|` in `y`'s type (Python floats are weak
//! scalars under NEP 50), so two float16 arrays are compared with float16
//! arithmetic, which numpy does in float32 and rounds to float16 after each
//! operation. Doing it in float64 would pass outputs numpy fails.

use crate::dtype::DType;
use crate::npy::Array;
use crate::NumpyError;

/// The tolerances of a comparison (numpy's defaults: 1e-5, 1e-8, false).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Tolerance {
    pub rtol: f64,
    pub atol: f64,
    pub equal_nan: bool,
}

impl Default for Tolerance {
    fn default() -> Tolerance {
        Tolerance {
            rtol: 1e-5,
            atol: 1e-8,
            equal_nan: false,
        }
    }
}

/// What a comparison found.
#[derive(Debug, Clone, PartialEq)]
pub enum Verdict {
    Close,
    Differ {
        /// Elements not close.
        mismatched: usize,
        total: usize,
        /// The first element not close: (flat index, observed, expected).
        first: (usize, f64, f64),
        /// The largest |observed - expected| over the mismatched elements.
        max_abs_diff: f64,
    },
}

/// The precision an operation is carried out in, and how it rounds.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Precision {
    F16,
    BF16,
    F32,
    F64,
}

impl Precision {
    fn of(dtype: DType) -> Precision {
        match dtype {
            DType::F16 => Precision::F16,
            DType::BF16 => Precision::BF16,
            DType::F32 => Precision::F32,
            _ => Precision::F64,
        }
    }

    /// A Python float taken into this precision (a weak scalar).
    fn scalar(self, value: f64) -> f64 {
        self.round32(value as f32, value)
    }

    /// The result of an operation computed exactly as `wide` in float64 or
    /// as `narrow` in float32, rounded as this precision rounds.
    fn round32(self, narrow: f32, wide: f64) -> f64 {
        match self {
            Precision::F64 => wide,
            Precision::F32 => f64::from(narrow),
            Precision::F16 => {
                half::f16::from_bits(crate::float16::bits_from_f64(f64::from(narrow))).to_f64()
            }
            Precision::BF16 => half::bf16::from_f32(narrow).to_f64(),
        }
    }

    fn sub(self, a: f64, b: f64) -> f64 {
        self.round32(a as f32 - b as f32, a - b)
    }

    fn add(self, a: f64, b: f64) -> f64 {
        self.round32(a as f32 + b as f32, a + b)
    }

    fn mul(self, a: f64, b: f64) -> f64 {
        self.round32(a as f32 * b as f32, a * b)
    }
}

/// numpy's `result_type(expected, 1.0)`: float types stay, others become float64.
fn expected_type(dtype: DType) -> DType {
    if dtype.is_float() {
        dtype
    } else {
        DType::F64
    }
}

/// The type numpy computes `x - y` in, for `x` of `a` and `y` of float type
/// `b`; `None` where numpy (with ml_dtypes) has no common type (bfloat16
/// with float16 or with integers wider than 8 bits).
fn promoted(a: DType, b: DType) -> Option<DType> {
    let rank = |d: DType| match d {
        DType::F16 | DType::BF16 => 0,
        DType::F32 => 1,
        _ => 2,
    };
    let wider = |d: DType, least: DType| if rank(d) >= rank(least) { d } else { least };
    Some(match a {
        _ if a == b => a,
        DType::F16 | DType::BF16 if rank(b) == 0 => return None,
        DType::F16 | DType::BF16 | DType::F32 | DType::F64 => wider(a, b),
        DType::Bool | DType::I8 | DType::U8 => b,
        DType::I16 | DType::U16 if b == DType::BF16 => return None,
        DType::I16 | DType::U16 => wider(b, DType::F32),
        _ if b == DType::BF16 => return None,
        _ => DType::F64,
    })
}

/// Whether `observed` is close to `expected` elementwise, as
/// `numpy.allclose`; their shapes must be equal (numpy would broadcast;
/// for a test's output a different shape is a failure to name).
pub fn allclose(observed: &Array, expected: &Array, tol: Tolerance) -> Result<Verdict, NumpyError> {
    if observed.shape != expected.shape {
        return Err(NumpyError::new(format!(
            "the output has shape {:?}, the expected output {:?}",
            observed.shape, expected.shape
        )));
    }
    let y_type = expected_type(expected.dtype);
    let compute = promoted(observed.dtype, y_type).map(Precision::of).ok_or_else(|| {
        NumpyError::new(format!(
            "an output of {} cannot be compared with an expected output of {}: numpy has no common type",
            observed.dtype.name(),
            expected.dtype.name()
        ))
    })?;
    let scalars = Precision::of(y_type);
    let (atol, rtol) = (scalars.scalar(tol.atol), scalars.scalar(tol.rtol));
    let mut verdict = Verdict::Close;
    for i in 0..observed.len() {
        let x = observed.get_f64(i);
        let y = expected.get_f64(i);
        let diff = compute.sub(x, y).abs();
        let bound = scalars.add(atol, scalars.mul(rtol, y.abs()));
        let close = (diff <= bound && y.is_finite())
            || x == y
            || (tol.equal_nan && x.is_nan() && y.is_nan());
        if close {
            continue;
        }
        match &mut verdict {
            Verdict::Close => {
                verdict = Verdict::Differ {
                    mismatched: 1,
                    total: observed.len(),
                    first: (i, x, y),
                    max_abs_diff: (x - y).abs(),
                }
            }
            Verdict::Differ {
                mismatched,
                max_abs_diff,
                ..
            } => {
                *mismatched += 1;
                if (x - y).abs() > *max_abs_diff || max_abs_diff.is_nan() {
                    *max_abs_diff = (x - y).abs();
                }
            }
        }
    }
    Ok(verdict)
}

impl Verdict {
    /// One line for a failed test.
    pub fn describe(&self, tol: Tolerance) -> String {
        match self {
            Verdict::Close => "close".into(),
            Verdict::Differ {
                mismatched,
                total,
                first: (i, x, y),
                max_abs_diff,
            } => format!(
                "{mismatched} of {total} elements not close (rtol {}, atol {}, equal_nan {}): first at flat index {i}: got {x}, expected {y}; largest |difference| {max_abs_diff}",
                tol.rtol, tol.atol, tol.equal_nan
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f32s(values: &[f32]) -> Array {
        Array {
            dtype: DType::F32,
            shape: vec![values.len() as u64],
            data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        }
    }

    fn f16s(values: &[f32]) -> Array {
        Array {
            dtype: DType::F16,
            shape: vec![values.len() as u64],
            data: values
                .iter()
                .flat_map(|v| crate::float16::bits_from_f64(f64::from(*v)).to_le_bytes())
                .collect(),
        }
    }

    #[test]
    fn numpys_rule_and_its_nan_and_inf_cases() {
        let tol = Tolerance::default();
        let close =
            |a: &[f32], b: &[f32]| allclose(&f32s(a), &f32s(b), tol).unwrap() == Verdict::Close;
        assert!(close(&[1.0, 2.0], &[1.0, 2.00001]));
        assert!(!close(&[1.0], &[1.001]));
        assert!(close(&[f32::INFINITY], &[f32::INFINITY]));
        assert!(!close(&[f32::NAN], &[f32::NAN]));
        assert!(!close(&[1.0], &[f32::INFINITY]));
        let nan_ok = Tolerance {
            equal_nan: true,
            ..tol
        };
        assert_eq!(
            allclose(&f32s(&[f32::NAN]), &f32s(&[f32::NAN]), nan_ok).unwrap(),
            Verdict::Close
        );
    }

    #[test]
    fn float16_is_compared_in_float16() {
        // atol 5e-8 is 2^-24 (5.96e-8) in float16, so the smallest
        // subnormal and zero are close for numpy, though not in float64.
        let tol = Tolerance {
            rtol: 0.0,
            atol: 5e-8,
            equal_nan: false,
        };
        let tiny = 2f32.powi(-24);
        assert_eq!(
            allclose(&f16s(&[tiny]), &f16s(&[0.0]), tol).unwrap(),
            Verdict::Close
        );
        let v = allclose(&f32s(&[tiny]), &f32s(&[0.0]), tol).unwrap();
        assert!(matches!(v, Verdict::Differ { mismatched: 1, .. }), "{v:?}");
    }

    #[test]
    fn shapes_must_agree() {
        let e = allclose(&f32s(&[1.0]), &f32s(&[1.0, 2.0]), Tolerance::default()).unwrap_err();
        assert!(e.0.contains("shape [1]"), "{e}");
    }

    #[test]
    fn promotion_follows_numpy() {
        assert_eq!(promoted(DType::F16, DType::F16), Some(DType::F16));
        assert_eq!(promoted(DType::F32, DType::F16), Some(DType::F32));
        assert_eq!(promoted(DType::F16, DType::BF16), None);
        assert_eq!(promoted(DType::BF16, DType::F32), Some(DType::F32));
        assert_eq!(promoted(DType::I8, DType::F16), Some(DType::F16));
        assert_eq!(promoted(DType::I8, DType::BF16), Some(DType::BF16));
        assert_eq!(promoted(DType::I16, DType::BF16), None);
        assert_eq!(promoted(DType::I16, DType::F16), Some(DType::F32));
        assert_eq!(promoted(DType::I32, DType::F32), Some(DType::F64));
        assert_eq!(promoted(DType::I8, DType::F64), Some(DType::F64));
    }
}
