//! The data of kernel tensors: deterministic seeded input values for each
//! operand of a signature, and the raw little-endian bytes of values for
//! `iree-run-module --input=SHAPExTYPE=@file.bin` (and back, for
//! `--output=@file.bin`), f16 and bf16 rounded to nearest, ties to even.
//!
//! Inputs are exactly representable in their element type (integers in
//! [-4, 4] for integer types, multiples of 1/8 in [-2, 2] for floats), so a
//! reference computed in f64 from them is the exact result. Every op's
//! reference and the runner share them.

use crate::miopen::ElemType;
use crate::signature::OpSignature;

/// Deterministic seeded input data for each operand of `sig.inputs`, as f64,
/// in the operand's layout order. Values are exactly representable in the
/// operand's type: integers in [-4, 4] for integer types, multiples of 1/8
/// in [-2, 2] for floating-point types.
pub fn inputs(sig: &OpSignature, seed: u64) -> Vec<Vec<f64>> {
    (0..sig.inputs.len())
        .map(|a| input_values(sig, a, seed).collect())
        .collect()
}

/// The values of input `a` of [`inputs`], one at a time (for writing large
/// timing inputs without holding them as f64).
pub fn input_values(sig: &OpSignature, a: usize, seed: u64) -> impl Iterator<Item = f64> {
    let (count, float) = sig
        .inputs
        .get(a)
        .map_or((0, true), |o| (o.elements(), is_float(o.elem)));
    let mut state = seed ^ (a as u64 + 1).wrapping_mul(0xD1B5_4A32_D192_ED03);
    (0..count).map(move |_| {
        let r = splitmix64(&mut state);
        if float {
            (r % 33) as f64 / 8.0 - 2.0
        } else {
            (r % 9) as f64 - 4.0
        }
    })
}

/// SplitMix64: a small, well-mixed deterministic generator.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn is_float(elem: ElemType) -> bool {
    matches!(elem, ElemType::F32 | ElemType::F16 | ElemType::BF16)
}

/// A binary floating-point format: exponent and explicit mantissa bits.
#[derive(Clone, Copy)]
struct Format {
    exp_bits: u32,
    man_bits: u32,
}

const F16: Format = Format {
    exp_bits: 5,
    man_bits: 10,
};
const BF16: Format = Format {
    exp_bits: 8,
    man_bits: 7,
};
#[cfg(test)]
const F32: Format = Format {
    exp_bits: 8,
    man_bits: 23,
};

impl Format {
    fn bias(self) -> i32 {
        (1 << (self.exp_bits - 1)) - 1
    }

    fn exp_all_ones(self) -> u32 {
        (1 << self.exp_bits) - 1
    }

    /// The bit pattern of `x` rounded to nearest, ties to even (overflow
    /// gives infinity, NaN a quiet NaN).
    fn bits(self, x: f64) -> u32 {
        let m = self.man_bits;
        let sign = if x.is_sign_negative() {
            1u32 << (self.exp_bits + m)
        } else {
            0
        };
        let inf = sign | (self.exp_all_ones() << m);
        if x.is_nan() {
            return (self.exp_all_ones() << m) | (1 << (m - 1));
        }
        let a = x.abs();
        if a.is_infinite() {
            return inf;
        }
        let biased = (a.to_bits() >> 52) as i32;
        if biased == 0 {
            // Zero or an f64 subnormal: far below any target's subnormals.
            return sign;
        }
        let (emin, emax) = (1 - self.bias(), self.bias());
        let mut e = (biased - 1023).max(emin);
        // Scaling by powers of two is exact; n counts quanta at exponent e.
        let quantum = 2f64.powi(e - m as i32);
        let mut n = (a / quantum).round_ties_even() as u64;
        if n >= 1 << (m + 1) {
            n >>= 1;
            e += 1;
        }
        if e > emax {
            return inf;
        }
        if n < 1 << m {
            // Subnormal (or zero): exponent field 0.
            return sign | n as u32;
        }
        sign | (((e + self.bias()) as u32) << m) | (n as u32 - (1 << m))
    }

    fn value(self, bits: u32) -> f64 {
        let m = self.man_bits;
        let negative = ((bits >> (self.exp_bits + m)) & 1) == 1;
        let field = (bits >> m) & self.exp_all_ones();
        let man = f64::from(bits & ((1 << m) - 1));
        let magnitude = if field == self.exp_all_ones() {
            if man == 0.0 {
                f64::INFINITY
            } else {
                f64::NAN
            }
        } else if field == 0 {
            man * 2f64.powi(1 - self.bias() - m as i32)
        } else {
            (man + f64::from(1u32 << m)) * 2f64.powi(field as i32 - self.bias() - m as i32)
        };
        if negative {
            -magnitude
        } else {
            magnitude
        }
    }
}

/// Raw little-endian bytes of `values` in `elem`: floats rounded to nearest
/// (ties to even), integers rounded to nearest and saturated to the type's
/// range. This is what `iree-run-module --input=SHAPExTYPE=@file.bin` reads.
pub fn encode(values: &[f64], elem: ElemType) -> Vec<u8> {
    let mut out = Vec::with_capacity(values.len() * elem.bytes() as usize);
    for &v in values {
        match elem {
            ElemType::F32 => out.extend((v as f32).to_le_bytes()),
            ElemType::F16 => out.extend((F16.bits(v) as u16).to_le_bytes()),
            ElemType::BF16 => out.extend((BF16.bits(v) as u16).to_le_bytes()),
            ElemType::I8 => out.extend((v.round() as i8).to_le_bytes()),
            ElemType::I32 => out.extend((v.round() as i32).to_le_bytes()),
        }
    }
    out
}

/// Decodes raw little-endian bytes of `elem` (e.g. `--output=@out.bin`).
pub fn decode(bytes: &[u8], elem: ElemType) -> Result<Vec<f64>, String> {
    let size = elem.bytes() as usize;
    if !bytes.len().is_multiple_of(size) {
        return Err(format!(
            "{} bytes are not a whole number of {} elements ({size} bytes each)",
            bytes.len(),
            elem.mlir()
        ));
    }
    Ok(bytes
        .chunks_exact(size)
        .map(|b| match elem {
            ElemType::F32 => f64::from(f32::from_le_bytes([b[0], b[1], b[2], b[3]])),
            ElemType::F16 => F16.value(u32::from(u16::from_le_bytes([b[0], b[1]]))),
            ElemType::BF16 => BF16.value(u32::from(u16::from_le_bytes([b[0], b[1]]))),
            ElemType::I8 => f64::from(i8::from_le_bytes([b[0]])),
            ElemType::I32 => f64::from(i32::from_le_bytes([b[0], b[1], b[2], b[3]])),
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::testing::sig;

    #[test]
    fn inputs_are_deterministic_and_representable() {
        let s = sig("convbfp16 -n 2 -c 4 -H 5 -W 5 -k 4 -y 3 -x 3 -b 1 -F 1");
        let a = inputs(&s, 1);
        assert_eq!(a, inputs(&s, 1));
        assert_ne!(a, inputs(&s, 2));
        assert_eq!(a.len(), 3);
        assert_eq!(a[0].len(), 200);
        assert_eq!(a[2].len(), 4);
        assert_ne!(a[0][..144], a[1][..]);
        for v in a.iter().flatten() {
            assert!((-2.0..=2.0).contains(v) && (v * 8.0).fract() == 0.0, "{v}");
            assert_eq!(
                decode(&encode(&[*v], ElemType::BF16), ElemType::BF16),
                Ok(vec![*v])
            );
            assert_eq!(
                decode(&encode(&[*v], ElemType::F16), ElemType::F16),
                Ok(vec![*v])
            );
        }
        let distinct: std::collections::BTreeSet<i64> =
            a[0].iter().map(|v| (v * 8.0) as i64).collect();
        assert!(distinct.len() > 20, "{distinct:?}");
        let s = sig("convint8 -n 1 -c 4 -H 8 -W 8 -k 4 -y 1 -x 1 -F 1");
        let a = inputs(&s, 5);
        for v in a.iter().flatten() {
            assert!((-4.0..=4.0).contains(v) && v.fract() == 0.0, "{v}");
        }
        assert!(a[0].contains(&-4.0) && a[0].contains(&4.0));
    }

    #[test]
    fn encode_decode_round_trips() {
        let values = [0.0, -0.0, 1.0, -2.5, 0.125, 1024.0, -3.0];
        for elem in [ElemType::F32, ElemType::F16, ElemType::BF16] {
            let bytes = encode(&values, elem);
            assert_eq!(bytes.len(), values.len() * elem.bytes() as usize);
            assert_eq!(decode(&bytes, elem).unwrap(), values, "{elem}");
        }
        let ints = [0.0, -4.0, 4.0, 127.0, -128.0];
        for elem in [ElemType::I8, ElemType::I32] {
            assert_eq!(decode(&encode(&ints, elem), elem).unwrap(), ints);
        }
        assert_eq!(encode(&[-1.0], ElemType::I8), [0xFF]);
        assert_eq!(encode(&[300.0, -300.0], ElemType::I8), [0x7F, 0x80]);
        assert_eq!(encode(&[-2.0], ElemType::I32), (-2i32).to_le_bytes());
        assert_eq!(encode(&[1.0], ElemType::F32), 1f32.to_le_bytes());
        assert!(decode(&[0, 0, 0], ElemType::F32).is_err());
        assert!(decode(&[0], ElemType::F16).is_err());
    }

    fn bits16(v: f64, elem: ElemType) -> u16 {
        let b = encode(&[v], elem);
        u16::from_le_bytes([b[0], b[1]])
    }

    #[test]
    fn bf16_rounds_to_nearest_even() {
        assert_eq!(bits16(1.0, ElemType::BF16), 0x3F80);
        assert_eq!(bits16(-2.0, ElemType::BF16), 0xC000);
        // Quantum at 1 is 2^-7: halfway cases go to the even mantissa.
        let q = 2f64.powi(-7);
        assert_eq!(bits16(1.0 + q / 2.0, ElemType::BF16), 0x3F80);
        assert_eq!(bits16(1.0 + 1.5 * q, ElemType::BF16), 0x3F82);
        assert_eq!(bits16(1.0 + 0.6 * q, ElemType::BF16), 0x3F81);
        assert_eq!(bits16(1.0 + 0.4 * q, ElemType::BF16), 0x3F80);
        // 1 + 2^-8 + 2^-20 is just above halfway: rounds up.
        assert_eq!(
            bits16(1.0 + q / 2.0 + 2f64.powi(-20), ElemType::BF16),
            0x3F81
        );
        // Carry into the exponent, overflow, infinities, NaN, subnormals.
        assert_eq!(bits16(2.0 - q / 4.0, ElemType::BF16), 0x4000);
        assert_eq!(bits16(f64::MAX, ElemType::BF16), 0x7F80);
        assert_eq!(bits16(f64::NEG_INFINITY, ElemType::BF16), 0xFF80);
        assert_eq!(bits16(2f64.powi(-133), ElemType::BF16), 0x0001);
        assert_eq!(bits16(2f64.powi(-134), ElemType::BF16), 0x0000);
        assert!(decode(&encode(&[f64::NAN], ElemType::BF16), ElemType::BF16).unwrap()[0].is_nan());
        // The same as truncating f32 bits with round-to-nearest-even.
        let mut state = 3;
        for _ in 0..20_000 {
            // Finite f32 values of every magnitude, normal and subnormal.
            let f = (splitmix64(&mut state) as u32) & 0xFF7F_FFFF;
            let x = f32::from_bits(f);
            let expected = ((f + 0x7FFF + ((f >> 16) & 1)) >> 16) as u16;
            assert_eq!(bits16(f64::from(x), ElemType::BF16), expected, "{x}");
        }
        let rounded = decode(&encode(&[1.0 + 1.5 * q], ElemType::BF16), ElemType::BF16);
        assert_eq!(rounded, Ok(vec![1.0 + 2.0 * q]));
    }

    #[test]
    fn f16_rounds_to_nearest_even() {
        assert_eq!(bits16(1.0, ElemType::F16), 0x3C00);
        assert_eq!(bits16(-2.0, ElemType::F16), 0xC000);
        assert_eq!(bits16(65504.0, ElemType::F16), 0x7BFF);
        assert_eq!(bits16(65519.0, ElemType::F16), 0x7BFF);
        // Halfway to 65536 rounds to even, i.e. overflows.
        assert_eq!(bits16(65520.0, ElemType::F16), 0x7C00);
        let q = 2f64.powi(-10);
        assert_eq!(bits16(1.0 + q / 2.0, ElemType::F16), 0x3C00);
        assert_eq!(bits16(1.0 + 1.5 * q, ElemType::F16), 0x3C02);
        // Subnormals: smallest 2^-24; 2^-25 ties to zero, 1.5 * 2^-25 up.
        assert_eq!(bits16(2f64.powi(-24), ElemType::F16), 0x0001);
        assert_eq!(bits16(2f64.powi(-25), ElemType::F16), 0x0000);
        assert_eq!(bits16(-1.5 * 2f64.powi(-25), ElemType::F16), 0x8001);
        assert_eq!(bits16(3.0 * 2f64.powi(-25), ElemType::F16), 0x0002);
        // Largest subnormal rounding into the smallest normal.
        assert_eq!(
            bits16(2f64.powi(-14) - 2f64.powi(-26), ElemType::F16),
            0x0400
        );
        for bits in 0..=u16::MAX {
            let v = F16.value(u32::from(bits));
            if !v.is_nan() {
                assert_eq!(bits16(v, ElemType::F16), bits, "{v}");
            }
        }
        assert_eq!(decode(&[0x00, 0x3C], ElemType::F16), Ok(vec![1.0]));
        assert_eq!(
            decode(&[0x01, 0x00], ElemType::F16),
            Ok(vec![2f64.powi(-24)])
        );
        assert_eq!(
            decode(&[0x00, 0xFC], ElemType::F16),
            Ok(vec![f64::NEG_INFINITY])
        );
    }

    #[test]
    fn generic_rounding_agrees_with_f32_casts() {
        let mut state = 11;
        for _ in 0..20_000 {
            let r = splitmix64(&mut state);
            let x = f64::from_bits(r & 0x8000_0000_0000_0000 | (r % 0x4800_0000_0000_0000));
            let x = if x.abs() < 1e-300 { 0.0 } else { x };
            assert_eq!(F32.bits(x), (x as f32).to_bits(), "{x:e}");
            let y = f64::from(f32::from_bits(F32.bits(x)));
            assert_eq!(y, f64::from(x as f32));
        }
    }
}
