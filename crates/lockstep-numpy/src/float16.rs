//! float64 to float16, rounded to nearest even as numpy rounds it
//! (`npy_double_to_half`), subnormals included. The `half` crate's own
//! conversions drop the sticky bits below the rounding bit for subnormal
//! results, so a value just above a halfway point rounds down there: one
//! element in a few hundred of a torch_ops input made of small numbers
//! differed from numpy's.

/// The float16 bits nearest `v` (ties to even; overflow to infinity; NaN
/// kept a quiet NaN with the sign).
pub fn bits_from_f64(v: f64) -> u16 {
    let bits = v.to_bits();
    let sign = ((bits >> 48) & 0x8000) as u16;
    let exp = ((bits >> 52) & 0x7ff) as i64;
    let man = bits & ((1 << 52) - 1);
    if exp == 0x7ff {
        let nan = if man != 0 {
            0x0200 | ((man >> 42) as u16 & 0x3ff)
        } else {
            0
        };
        return sign | 0x7c00 | nan;
    }
    let exp_eff = exp.max(1);
    let full = if exp == 0 { man } else { man | (1 << 52) };
    // The value is full * 2^(exp_eff - 1075); the float16 unit (the value
    // of its last mantissa bit) is 2^(e - 10) for a normal result of
    // exponent e, and 2^-24 for subnormals.
    let e = exp_eff - 1023;
    if e > 15 {
        return sign | 0x7c00;
    }
    let mut unit = (e - 10).max(-24);
    let shift = unit - (exp_eff - 1075);
    let mut q = if shift <= 0 {
        full << (-shift).min(11)
    } else if shift > 63 {
        0
    } else {
        let q = full >> shift;
        let rem = full & ((1u64 << shift) - 1);
        let halfway = 1u64 << (shift - 1);
        if rem > halfway || (rem == halfway && q & 1 == 1) {
            q + 1
        } else {
            q
        }
    };
    if q == 2048 {
        q = 1024;
        unit += 1;
    }
    if q < 1024 {
        return sign | q as u16;
    }
    let exponent_field = unit + 25;
    if exponent_field >= 31 {
        return sign | 0x7c00;
    }
    sign | ((exponent_field as u16) << 10) | (q as u16 - 1024)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn edges_round_as_numpy_rounds_them() {
        for (v, bits) in [
            (0.0, 0x0000),
            (-0.0, 0x8000),
            (1.0, 0x3c00),
            (65504.0, 0x7bff),
            (65519.99, 0x7bff),
            (65520.0, 0x7c00),
            (1e300, 0x7c00),
            (f64::INFINITY, 0x7c00),
            (f64::NEG_INFINITY, 0xfc00),
            (2f64.powi(-24), 0x0001),
            (2f64.powi(-25), 0x0000),
            (2f64.powi(-25) * 1.000001, 0x0001),
            (3.0 * 2f64.powi(-25), 0x0002),
            (2f64.powi(-14), 0x0400),
            (2f64.powi(-14) - 2f64.powi(-26), 0x0400),
            (1e-300, 0x0000),
            // numpy.random.seed(7) ... 1e-4 * rand: element 195 of the
            // second draw, just above 70.5 units: 71 (half's gives 70).
            (f64::from_bits(0x3ed1_a000_00ef_4ea5), 0x0047),
        ] {
            assert_eq!(bits_from_f64(v), bits, "{v:e}");
        }
        assert!(half::f16::from_bits(bits_from_f64(f64::NAN)).is_nan());
    }

    /// The float16 nearest `v`, ties to the even one: the half crate's
    /// answer or one of its two neighbours. The crate rounds through f32
    /// first, so a value less than half an f32 step above a tie comes out
    /// rounded down (33168.0017 is 12.5 steps above 32768 and a bit:
    /// 13 steps, where the crate says 12); the differences below are exact
    /// (f16 values are f64 values, and each neighbour is within a factor
    /// of two of `v`).
    fn nearest_f16(v: f64) -> u16 {
        let guess = half::f16::from_f64(v).to_bits();
        [guess.wrapping_sub(1), guess, guess.wrapping_add(1)]
            .into_iter()
            .filter(|&bits| half::f16::from_bits(bits).is_finite())
            .min_by(|&a, &b| {
                let distance = |bits: u16| (f64::from(half::f16::from_bits(bits)) - v).abs();
                distance(a)
                    .total_cmp(&distance(b))
                    .then((a & 1).cmp(&(b & 1)))
            })
            .unwrap_or(guess)
    }

    #[test]
    fn a_value_just_above_a_tie_rounds_up_where_the_half_crate_rounds_down() {
        let v = 33168.001674950676;
        assert_eq!(bits_from_f64(v), 30733);
        assert_eq!(nearest_f16(v), 30733);
        assert_eq!(half::f16::from_f64(v).to_bits(), 30732);
    }

    proptest! {
        #[test]
        fn normal_results_are_the_nearest_float16(v in -65504.0f64..65504.0) {
            prop_assume!(v.abs() >= 2f64.powi(-14));
            prop_assert_eq!(bits_from_f64(v), nearest_f16(v));
        }
    }
}
