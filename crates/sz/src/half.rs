//! IEEE binary16 (fp16) as the tensor cores see it, and the fp32-accurate split.
//!
//! A value `x` (already scaled by a power of two, [`scale_exponent`]) becomes two fp16
//! parts, `hi = fp16(x)` and `lo = fp16(x − hi)`, both rounded to nearest even (PTX
//! `cvt.rn.f16.f32`); `x − hi` is exact in fp32. The tensor cores multiply the parts
//! exactly and accumulate in fp32, so `hi·w + lo·w` carries 22 of fp32's 24 significand
//! bits of `x` (docs/sz.md, "Error analysis"). Weights that are not exactly fp16 after
//! scaling are split the same way.

/// The largest power of two a scaled value may reach: `|x|·2^s ≤ 2^15` keeps `hi` finite
/// (fp16's largest finite value is 65504; 2^15 leaves room for the rounding).
pub const SCALED_MAX_EXPONENT: i32 = 15;

/// Scale exponents are kept within ±this, so that `2^s`, `2^t` and `2^-(s+t)` are normal
/// fp32 numbers.
pub const SCALE_LIMIT: i32 = 60;

/// `x` rounded to the nearest fp16, ties to even (overflow to infinity, NaN kept as NaN):
/// PTX `cvt.rn.f16.f32`. Returns the fp16 bits.
pub fn f32_to_f16(x: f32) -> u16 {
    let bits = x.to_bits();
    let sign = ((bits >> 16) & 0x8000) as u16;
    let exp = ((bits >> 23) & 0xff) as i32;
    let man = bits & 0x7f_ffff;
    if exp == 0xff {
        return sign | 0x7c00 | if man != 0 { 0x200 } else { 0 };
    }
    // The fp16 biased exponent of x's leading bit.
    let e = exp - 127 + 15;
    if e >= 0x1f {
        return sign | 0x7c00;
    }
    if e <= 0 {
        // A subnormal fp16 (or zero): k · 2^-24 with k = m · 2^(exp - 126), m the 24-bit
        // significand (fp32 subnormals, exp = 0, are far below 2^-25 and round to zero).
        if exp == 0 {
            return sign;
        }
        let m = man | 0x80_0000;
        let shift = (14 - e) as u32;
        if shift > 24 {
            return sign;
        }
        let mut k = m >> shift;
        let rem = m & ((1u32 << shift) - 1);
        let halfway = 1u32 << (shift - 1);
        if rem > halfway || (rem == halfway && k & 1 == 1) {
            k += 1;
        }
        return sign | k as u16;
    }
    let mut h = ((e as u32) << 10) | (man >> 13);
    let rem = man & 0x1fff;
    if rem > 0x1000 || (rem == 0x1000 && h & 1 == 1) {
        // A carry out of the significand moves into the exponent, up to infinity.
        h += 1;
    }
    sign | h as u16
}

/// The value of fp16 bits `h` (exact): PTX `cvt.f32.f16`.
pub fn f16_to_f32(h: u16) -> f32 {
    let sign = u32::from(h & 0x8000) << 16;
    let exp = u32::from((h >> 10) & 0x1f);
    let man = u32::from(h & 0x3ff);
    let magnitude = match exp {
        0 => man as f32 * pow2(-24),
        0x1f => f32::from_bits(0x7f80_0000 | (man << 13)),
        _ => f32::from_bits(((exp + 112) << 23) | (man << 13)),
    };
    f32::from_bits(sign | magnitude.to_bits())
}

/// Whether `x` is exactly an fp16 value.
pub fn is_f16(x: f32) -> bool {
    f16_to_f32(f32_to_f16(x)) == x
}

/// `(hi, lo)`: `hi = fp16(x)`, `lo = fp16(x − hi)`, as fp16 bits (the kernel's
/// `sz_split`). `|x|` must stay below 65520 (scale first) for `hi` to be finite.
pub fn split(x: f32) -> (u16, u16) {
    let hi = f32_to_f16(x);
    let rest = x - f16_to_f32(hi);
    (hi, f32_to_f16(rest))
}

/// `hi + lo` of [`split`]`(x)` in f64 (exact): what the tensor cores multiply.
pub fn split_value(x: f32) -> f64 {
    let (hi, lo) = split(x);
    f64::from(f16_to_f32(hi)) + f64::from(f16_to_f32(lo))
}

/// `2^s` as an f32, for `s` in `-126..=127` (a normal number).
pub fn pow2(s: i32) -> f32 {
    debug_assert!((-126..=127).contains(&s));
    f32::from_bits(((s + 127) as u32) << 23)
}

/// The largest `s` with `max_abs · 2^s ≤ 2^15` ([`SCALED_MAX_EXPONENT`]), or `None` when
/// `max_abs` is zero or not finite.
pub fn scale_exponent(max_abs: f32) -> Option<i32> {
    if !(max_abs.is_finite() && max_abs > 0.0) {
        return None;
    }
    // max_abs = m · 2^e with m in [1, 2): m · 2^(e + s) ≤ 2^15 iff e + s ≤ 15 (m = 1) or 14.
    let bits = f64::from(max_abs).to_bits();
    let e = ((bits >> 52) & 0x7ff) as i32 - 1023;
    let power_of_two = bits & ((1u64 << 52) - 1) == 0;
    Some(SCALED_MAX_EXPONENT - e - i32::from(!power_of_two))
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    #[test]
    fn every_fp16_value_round_trips() {
        for h in 0..=u16::MAX {
            let x = f16_to_f32(h);
            if x.is_nan() {
                assert!(f16_to_f32(f32_to_f16(x)).is_nan());
                continue;
            }
            assert_eq!(f32_to_f16(x), h, "{h:#06x} = {x}");
        }
    }

    #[test]
    fn known_values() {
        assert_eq!(f32_to_f16(1.0), 0x3c00);
        assert_eq!(f32_to_f16(-2.0), 0xc000);
        assert_eq!(f32_to_f16(0.0625), 0x2c00);
        assert_eq!(f32_to_f16(65504.0), 0x7bff);
        // 65520 is halfway to the next binade's first value: ties to even overflow.
        assert_eq!(f32_to_f16(65520.0), 0x7c00);
        assert_eq!(f32_to_f16(65519.99), 0x7bff);
        assert_eq!(f32_to_f16(f32::INFINITY), 0x7c00);
        assert_eq!(f16_to_f32(0x0001), pow2(-24));
        assert_eq!(f32_to_f16(pow2(-24)), 0x0001);
        // Half the smallest subnormal ties to even (zero); a bit more rounds up.
        assert_eq!(f32_to_f16(pow2(-25)), 0);
        assert_eq!(f32_to_f16(pow2(-25) * 1.0001), 1);
        assert_eq!(f32_to_f16(-pow2(-30)), 0x8000);
        // The largest subnormal rounds up into the smallest normal.
        assert_eq!(f32_to_f16(pow2(-14) * (1.0 - pow2(-12))), 0x0400);
        assert_eq!(f32_to_f16(1.0 + pow2(-11)), 0x3c00, "a tie to even (down)");
        assert_eq!(
            f32_to_f16(1.0 + 3.0 * pow2(-11)),
            0x3c02,
            "a tie to even (up)"
        );
        assert!(is_f16(1.0 / 16.0) && is_f16(-0.75) && !is_f16(0.3));
    }

    /// The fp16 neighbours of `h` (by bit pattern, same sign) as f64.
    fn neighbours(h: u16) -> Vec<f64> {
        [h.wrapping_sub(1), h.wrapping_add(1)]
            .into_iter()
            .filter(|n| n & 0x8000 == h & 0x8000 && (n & 0x7fff) < 0x7c00)
            .map(|n| f64::from(f16_to_f32(n)))
            .collect()
    }

    proptest! {
        #[test]
        fn conversion_rounds_to_nearest(bits in any::<u32>()) {
            let x = f32::from_bits(bits);
            prop_assume!(x.is_finite() && x.abs() < 65504.0);
            let h = f32_to_f16(x);
            let error = (f64::from(f16_to_f32(h)) - f64::from(x)).abs();
            for n in neighbours(h) {
                let other = (n - f64::from(x)).abs();
                prop_assert!(error <= other, "{x}: {h:#06x} is not nearest");
                if error == other {
                    prop_assert_eq!(h & 1, 0, "{} tie not to even", x);
                }
            }
            // Zero keeps its sign.
            prop_assert_eq!(h & 0x8000 != 0, x.is_sign_negative());
        }

        #[test]
        fn split_carries_22_bits(x in -32768.0f32..32768.0) {
            // Exact residual: x − hi; lo its rounding. |x − (hi + lo)| ≤ 2^-23·|x| for
            // normal parts, and ≤ 2^-25 (half the smallest subnormal) always.
            let error = (split_value(x) - f64::from(x)).abs();
            let bound = (f64::from(x.abs()) * 2f64.powi(-23)).max(2f64.powi(-25));
            prop_assert!(error <= bound, "{x}: error {error}, bound {bound}");
        }

        #[test]
        fn dyadic_values_split_exactly(k in 0u32..(1 << 21), shift in 0i32..17) {
            // Every multiple of 2^-16 below 32 (21 bits at most), and those with fewer
            // fractional bits: hi + lo is x.
            let x = (k >> shift) as f32 * pow2(shift - 16);
            prop_assert!(x < 32.0 && (x * 65536.0).fract() == 0.0);
            prop_assert_eq!(split_value(x), f64::from(x));
        }

        #[test]
        fn scaled_values_stay_finite(bits in any::<u32>()) {
            let m = f32::from_bits(bits).abs();
            prop_assume!(m.is_finite() && m > 0.0);
            let s = scale_exponent(m).unwrap();
            let scaled = f64::from(m) * 2f64.powi(s);
            prop_assert!(scaled <= 32768.0 && scaled > 16384.0, "{m}: 2^{s}");
        }
    }

    #[test]
    fn scale_exponents() {
        assert_eq!(scale_exponent(32.0), Some(10));
        assert_eq!(scale_exponent(31.9), Some(10));
        assert_eq!(scale_exponent(32.1), Some(9));
        assert_eq!(scale_exponent(1.0), Some(15));
        assert_eq!(scale_exponent(0.0625), Some(19));
        assert_eq!(scale_exponent(0.0), None);
        assert_eq!(scale_exponent(f32::NAN), None);
        assert_eq!(pow2(0), 1.0);
        assert_eq!(pow2(-126), f32::MIN_POSITIVE);
        assert_eq!(pow2(10), 1024.0);
    }
}
