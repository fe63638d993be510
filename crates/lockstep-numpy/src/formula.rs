//! A torch_ops input formula, `(coeff * numpy.random.rand(*shape) +
//! offset).astype(dtype)`, evaluated as numpy evaluates it: the product and
//! the sum in float64, then one cast. numpy rounds float64 to float16 to
//! nearest even ([`crate::float16`]), and ml_dtypes casts to bfloat16 through float32 (Eigen's
//! conversion), both of which are what happens here. Casting to an integer
//! type truncates toward zero; a value outside the type's range has no
//! portable result in numpy (it is the C compiler's), so it is refused.

use crate::dtype::DType;
use crate::npy::Array;
use crate::random::LegacyRandom;
use crate::NumpyError;

/// The most bytes one formula may produce (4 GiB): bounds what a suite file
/// can make lockstep allocate.
pub const MAX_BYTES: u64 = 4 << 30;

/// `(coeff * rand(*shape) + offset).astype(dtype)`.
#[derive(Debug, Clone, PartialEq)]
pub struct Formula {
    pub shape: Vec<u64>,
    pub dtype: DType,
    pub coeff: f64,
    pub offset: f64,
}

impl Formula {
    /// The number of elements, checked against [`MAX_BYTES`].
    pub fn elements(&self) -> Result<u64, NumpyError> {
        if self.shape.is_empty() {
            return Err(NumpyError::new(
                "a formula needs a shape of at least one dimension (numpy.random.rand() alone is a Python float, which the reference runner cannot cast)",
            ));
        }
        let count = self
            .shape
            .iter()
            .try_fold(1u64, |n, &d| n.checked_mul(d))
            .filter(|&n| {
                n.checked_mul(self.dtype.size() as u64)
                    .is_some_and(|b| b <= MAX_BYTES)
            })
            .ok_or_else(|| {
                NumpyError::new(format!(
                    "shape {:?} of {} is larger than {} GiB",
                    self.shape,
                    self.dtype.name(),
                    MAX_BYTES >> 30
                ))
            })?;
        if !self.coeff.is_finite() || !self.offset.is_finite() {
            return Err(NumpyError::new(format!(
                "coeff {} and offset {} must be finite numbers",
                self.coeff, self.offset
            )));
        }
        Ok(count)
    }

    /// Draws the formula's values from `random` (which advances as numpy's
    /// would) and casts them.
    pub fn generate(&self, random: &mut LegacyRandom) -> Result<Array, NumpyError> {
        let count = self.elements()?;
        let mut data = Vec::with_capacity(count as usize * self.dtype.size());
        for _ in 0..count {
            let value = self.coeff * random.next_double() + self.offset;
            push_cast(&mut data, value, self.dtype)?;
        }
        Ok(Array {
            dtype: self.dtype,
            shape: self.shape.clone(),
            data,
        })
    }
}

/// Appends `value` cast to `dtype` (little-endian) as numpy's `astype`.
fn push_cast(data: &mut Vec<u8>, value: f64, dtype: DType) -> Result<(), NumpyError> {
    match dtype {
        DType::F64 => data.extend_from_slice(&value.to_le_bytes()),
        DType::F32 => data.extend_from_slice(&(value as f32).to_le_bytes()),
        DType::F16 => data.extend_from_slice(&crate::float16::bits_from_f64(value).to_le_bytes()),
        DType::BF16 => data.extend_from_slice(&half::bf16::from_f32(value as f32).to_le_bytes()),
        DType::Bool => data.push(u8::from(value != 0.0)),
        int => {
            let truncated = value.trunc();
            let (lo, hi) = int.int_range().unwrap_or((0.0, 0.0));
            if !(lo..=hi).contains(&truncated)
                || (int == DType::I64 && truncated >= 2f64.powi(63))
                || (int == DType::U64 && truncated >= 2f64.powi(64))
            {
                return Err(NumpyError::new(format!(
                    "the formula gives {value}, outside {}'s range: numpy's cast of it is undefined",
                    int.name()
                )));
            }
            let bytes = &(if int.is_signed_int() {
                (truncated as i64).to_le_bytes()
            } else {
                (truncated as u64).to_le_bytes()
            })[..int.size()];
            data.extend_from_slice(bytes);
        }
    }
    Ok(())
}

/// The inputs of one test: numpy seeded once with `seed`, then each
/// formula in order.
pub fn generate_all(seed: u32, formulas: &[Formula]) -> Result<Vec<Array>, NumpyError> {
    let mut random = LegacyRandom::seed(seed);
    formulas.iter().map(|f| f.generate(&mut random)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn formula(shape: &[u64], dtype: DType, coeff: f64, offset: f64) -> Formula {
        Formula {
            shape: shape.to_vec(),
            dtype,
            coeff,
            offset,
        }
    }

    #[test]
    fn float32_inputs_are_numpys_for_seed_zero() {
        // numpy.random.seed(0); numpy.random.rand(2).astype("float32")
        let a = generate_all(0, &[formula(&[2], DType::F32, 1.0, 0.0)]).unwrap();
        let values: Vec<f32> = a[0]
            .data
            .chunks(4)
            .map(|c| f32::from_le_bytes(c.try_into().unwrap()))
            .collect();
        assert_eq!(values, [0.548_813_5_f32, 0.715_189_34_f32]);
    }

    #[test]
    fn bad_formulas_are_refused_by_name() {
        let mut r = LegacyRandom::seed(0);
        for (f, needle) in [
            (formula(&[], DType::F32, 1.0, 0.0), "at least one dimension"),
            (formula(&[u64::MAX, 2], DType::F32, 1.0, 0.0), "larger than"),
            (formula(&[1 << 30, 2], DType::F64, 1.0, 0.0), "larger than"),
            (formula(&[2], DType::F32, f64::INFINITY, 0.0), "finite"),
            (
                formula(&[4], DType::I8, 1000.0, 0.0),
                "outside int8's range",
            ),
            (formula(&[4], DType::U8, 1.0, -5.0), "outside uint8's range"),
        ] {
            let e = f.generate(&mut r).unwrap_err();
            assert!(e.0.contains(needle), "{e}");
        }
    }

    #[test]
    fn integers_truncate_toward_zero() {
        let a = generate_all(3, &[formula(&[64], DType::I8, 10.0, -5.0)]).unwrap();
        let mut r = LegacyRandom::seed(3);
        for byte in &a[0].data {
            let v = 10.0 * r.next_double() - 5.0;
            assert_eq!(*byte as i8, v.trunc() as i8);
        }
    }
}
