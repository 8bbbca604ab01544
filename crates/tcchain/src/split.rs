//! The fp16 split of scaled fp32 values, as the kernel computes it
//! (`kernels-cu/tcchain.cu`: `tc_split2`), and the power-of-two scales that keep every
//! value within fp16's range.
//!
//! A value `x` with `|x| ≤ 2^15` is written as `hi = fp16(x)` and `lo = fp16(x − hi)`,
//! both rounded to nearest even. `x − hi` is exact in fp32 (`hi` is `x` rounded to 11
//! bits), so what the two terms miss is `lo`'s own rounding:
//! `|x − hi − lo| ≤ max(2^-22·|x|, 2^-25)` (2^-25 is half the spacing of fp16's
//! subnormals).

/// The largest magnitude a scaled value may have: `2^15`, below fp16's largest finite
/// value (65504), so no rounding to fp16 overflows.
pub const SCALED_LIMIT: f32 = 32768.0;

/// `x` rounded to the nearest fp16 (ties to even), as its bit pattern, the way
/// `cvt.rn.f16.f32` rounds: subnormals kept, too large a magnitude becomes infinity,
/// NaN stays NaN.
pub fn f16_bits(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exponent = ((bits >> 23) & 0xff) as i32;
    let mantissa = bits & 0x007f_ffff;
    if exponent == 0xff {
        return sign | 0x7c00 | if mantissa != 0 { 0x0200 } else { 0 };
    }
    // The value's exponent, unbiased; fp32 subnormals are far below fp16's smallest
    // subnormal and round to zero.
    let unbiased = exponent - 127;
    if unbiased > 15 {
        return sign | 0x7c00;
    }
    if exponent == 0 {
        return sign;
    }
    // The significand with its leading one: 24 bits.
    let significand = mantissa | 0x0080_0000;
    // Bits of the significand fp16 keeps: 11 for normals, fewer for subnormals.
    let shift = if unbiased >= -14 {
        13
    } else {
        13 + (-14 - unbiased) as u32
    };
    if shift > 24 {
        return sign;
    }
    let kept = significand >> shift;
    let rest = significand & ((1u32 << shift) - 1);
    let half = 1u32 << (shift - 1);
    let rounded = if rest > half || (rest == half && kept & 1 == 1) {
        kept + 1
    } else {
        kept
    };
    if unbiased >= -14 {
        // kept has its leading one at bit 10; rounding may carry into bit 11.
        let (rounded, unbiased) = if rounded == 0x800 {
            (0x400, unbiased + 1)
        } else {
            (rounded, unbiased)
        };
        if unbiased > 15 {
            return sign | 0x7c00;
        }
        sign | (((unbiased + 15) as u16) << 10) | (rounded as u16 & 0x03ff)
    } else {
        // A subnormal (a carry into bit 10 makes it the smallest normal, which the same
        // bit pattern encodes).
        sign | rounded as u16
    }
}

/// The fp16 bit pattern `h` as an fp32 value.
pub fn f16_value(h: u16) -> f32 {
    let sign = if h & 0x8000 != 0 { -1.0f32 } else { 1.0 };
    let exponent = ((h >> 10) & 0x1f) as i32;
    let mantissa = (h & 0x03ff) as f32;
    match exponent {
        0 => sign * mantissa * 2f32.powi(-24),
        0x1f if mantissa == 0.0 => sign * f32::INFINITY,
        0x1f => f32::NAN,
        _ => sign * (1.0 + mantissa / 1024.0) * 2f32.powi(exponent - 15),
    }
}

/// `x` (already scaled, `|x| ≤` [`SCALED_LIMIT`]) as its two fp16 terms `(hi, lo)`.
pub fn split(x: f32) -> (u16, u16) {
    let hi = f16_bits(x);
    (hi, f16_bits(x - f16_value(hi)))
}

/// `hi + lo` of [`split`]`(x)`, in f64 (exact): what the tensor cores multiply.
pub fn split_value(x: f32) -> f64 {
    let (hi, lo) = split(x);
    f64::from(f16_value(hi)) + f64::from(f16_value(lo))
}

/// The exponent `e` of the power-of-two scale `2^e` for values of magnitude at most
/// `max_abs`: the largest `e` with `max_abs · 2^e ≤ 2^15` (0 for `max_abs = 0`).
pub fn scale_exponent(max_abs: f32) -> i32 {
    if max_abs.is_nan() || max_abs <= 0.0 || !max_abs.is_finite() {
        return 0;
    }
    // The smallest k with max_abs ≤ 2^k.
    let mut k = max_abs.log2().ceil() as i32;
    while 2f64.powi(k - 1) >= f64::from(max_abs) {
        k -= 1;
    }
    while 2f64.powi(k) < f64::from(max_abs) {
        k += 1;
    }
    15 - k
}

/// `2^e` as an f32 (`e` within f32's normal exponents, which the callers check).
pub fn power_of_two(e: i32) -> f32 {
    2f64.powi(e) as f32
}

/// Whether `2^e` is a normal f32 (so it and its inverse are exact).
pub fn is_normal_exponent(e: i32) -> bool {
    (-126..=127).contains(&e)
}

/// The largest magnitude of `values` (0 for none).
pub fn max_abs(values: &[f32]) -> f32 {
    values.iter().fold(0.0f32, |m, v| m.max(v.abs()))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The fp16 nearest to `x` by search over every finite pattern (ties to the even one).
    fn nearest_by_search(x: f32) -> u16 {
        let mut best: Option<(f64, u16)> = None;
        for h in 0..=0xffffu16 {
            let v = f16_value(h);
            if !v.is_finite() || (v == 0.0 && h == 0x8000) {
                continue;
            }
            let d = (f64::from(v) - f64::from(x)).abs();
            let better = match best {
                None => true,
                Some((bd, bh)) => d < bd || (d == bd && h & 1 == 0 && bh & 1 == 1),
            };
            if better {
                best = Some((d, h));
            }
        }
        let (_, h) = best.unwrap();
        // Zero keeps the sign of x.
        if f16_value(h) == 0.0 && x.is_sign_negative() {
            0x8000
        } else {
            h
        }
    }

    #[test]
    fn every_finite_fp16_round_trips() {
        for h in 0..=0xffffu16 {
            let v = f16_value(h);
            if v.is_nan() {
                assert!(f16_bits(v).trailing_zeros() < 10 && f16_bits(v) & 0x7c00 == 0x7c00);
                continue;
            }
            assert_eq!(f16_bits(v), h, "{h:#06x} = {v}");
        }
    }

    #[test]
    fn rounding_matches_a_search_at_hand_picked_values() {
        for x in [
            0.0f32,
            -0.0,
            1.0,
            1.0 + 2f32.powi(-11),
            1.0 + 3.0 * 2f32.powi(-11),
            65504.0,
            65519.0,
            2f32.powi(-24),
            2f32.powi(-25),
            3.0 * 2f32.powi(-26),
            2f32.powi(-14) - 2f32.powi(-25),
            0.1,
            -37.0 / 255.0,
            1.0 / 3.0,
        ] {
            assert_eq!(f16_bits(x), nearest_by_search(x), "{x}");
        }
        assert_eq!(f16_bits(65520.0), 0x7c00);
        assert_eq!(f16_bits(f32::INFINITY), 0x7c00);
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        #[test]
        fn rounding_matches_a_search(x in -70000.0f32..70000.0) {
            let want = nearest_by_search(x);
            if f16_value(want).abs() <= 65504.0 && x.abs() < 65520.0 {
                prop_assert_eq!(f16_bits(x), want);
            }
        }

        #[test]
        fn small_rounding_matches_a_search(x in -0.01f32..0.01) {
            prop_assert_eq!(f16_bits(x), nearest_by_search(x));
        }

        #[test]
        fn the_split_misses_at_most_its_bound(x in -32768.0f32..32768.0, shift in 0i32..40) {
            let x = x * 2f32.powi(-shift);
            let error = (split_value(x) - f64::from(x)).abs();
            let bound = (2f64.powi(-22) * f64::from(x.abs())).max(2f64.powi(-25));
            prop_assert!(error <= bound, "x {x}: error {error} > {bound}");
            // x − hi is exact in fp32.
            let (hi, _) = split(x);
            prop_assert_eq!(f64::from(x - f16_value(hi)), f64::from(x) - f64::from(f16_value(hi)));
        }

        #[test]
        fn scales_bring_values_to_the_limit(m in 1e-30f32..1e30) {
            let e = scale_exponent(m);
            let scaled = f64::from(m) * 2f64.powi(e);
            prop_assert!(scaled <= 32768.0 && scaled > 16384.0, "{m}: 2^{e} gives {scaled}");
        }
    }

    #[test]
    fn exact_powers_scale_to_the_limit() {
        assert_eq!(scale_exponent(1.0), 15);
        assert_eq!(scale_exponent(32.0), 10);
        assert_eq!(scale_exponent(0.0625), 19);
        assert_eq!(scale_exponent(0.0), 0);
        assert_eq!(scale_exponent(1.5), 14);
    }
}
