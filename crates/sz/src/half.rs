//! bfloat16 as the tensor cores see it, and the exact three-term split.
//!
//! A value `x` (already scaled by a power of two, [`scale_exponent`]) becomes three
//! bfloat16 terms ([`split`]): `b1 = bf16(x)`, `b2 = bf16(x − b1)`, `b3 = bf16(x − b1 − b2)`,
//! each rounded toward zero, which for bf16 is keeping the upper 16 bits of the fp32
//! pattern (the kernel's `sz_split2` does the same with integer operations). Every
//! difference is exact in fp32, and `b1 + b2 + b3 = x` exactly whenever `x` is a multiple
//! of 2^-133 (bf16's smallest subnormal), which every `|x| ≥ 2^-110` is: `b1` takes the
//! top 8 of x's 24 significand bits, `b2` the top 8 of the at most 16 left, `b3` the at
//! most 8 left (docs/sz.md, "Error analysis"). bf16 has fp32's exponent range, so unlike
//! the low half of the former fp16 hi/lo split (22 bits, its low half subnormal or zero
//! for small activations) no term of a scaled value is subnormal unless `|x| < 2^-103`.
//! A bf16 × bf16 product (8 × 8 significand bits) is exact in fp32. Weights take as many
//! terms as their values need ([`terms`]).

/// The largest power of two a scaled value may reach: `|x|·2^s ≤ 2^15`. bf16 would allow
/// far more; the bound keeps every product of two scaled values (and a sum of many) far
/// from fp32's overflow and, with [`SCALE_LIMIT`], every product of terms of values near
/// the largest far from its underflow.
pub const SCALED_MAX_EXPONENT: i32 = 15;

/// Scale exponents are kept within ±this, so that `2^s`, `2^t` and `2^-(s+t)` are normal
/// fp32 numbers.
pub const SCALE_LIMIT: i32 = 60;

/// Terms of the split: three bf16 values carry fp32's 24 significand bits.
pub const TERMS: usize = 3;

/// `x` rounded toward zero to bf16 (the upper 16 bits of its fp32 pattern): exact for
/// every finite `x` that is a bf16 value, and a finite `x` never becomes infinite. (A NaN
/// whose payload lies in the lower 16 bits would become an infinity; values are checked
/// to be finite before they reach the split.)
pub fn f32_to_bf16(x: f32) -> u16 {
    (x.to_bits() >> 16) as u16
}

/// The value of bf16 bits `b` (exact).
pub fn bf16_to_f32(b: u16) -> f32 {
    f32::from_bits(u32::from(b) << 16)
}

/// Whether `x` is exactly a bf16 value.
pub fn is_bf16(x: f32) -> bool {
    x.to_bits() & 0xffff == 0
}

/// `[b1, b2, b3]` as bf16 bits: `b1 = bf16(x)`, `b2 = bf16(x − b1)`,
/// `b3 = bf16(x − b1 − b2)`, each toward zero, the differences in fp32 (exact: each
/// subtracts the leading bits of the value). The kernel's `sz_split2`.
pub fn split(x: f32) -> [u16; TERMS] {
    let b1 = f32_to_bf16(x);
    let r1 = x - bf16_to_f32(b1);
    let b2 = f32_to_bf16(r1);
    let r2 = r1 - bf16_to_f32(b2);
    [b1, b2, f32_to_bf16(r2)]
}

/// `b1 + b2 + b3` of [`split`]`(x)` in f64 (exact): what the tensor cores multiply.
pub fn split_value(x: f32) -> f64 {
    split(x).iter().map(|&b| f64::from(bf16_to_f32(b))).sum()
}

/// How many leading terms of [`split`]`(x)` are needed: 0 for zero, 1 for a bf16 value,
/// up to [`TERMS`] (the terms after are zero).
pub fn terms(x: f32) -> usize {
    let parts = split(x);
    parts
        .iter()
        .rposition(|&b| bf16_to_f32(b) != 0.0)
        .map_or(0, |i| i + 1)
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

    /// Whether `x` is a multiple of 2^-133, bf16's smallest subnormal (in f64, exact).
    fn on_bf16_grid(x: f32) -> bool {
        (f64::from(x) * 2f64.powi(133)).fract() == 0.0
    }

    #[test]
    fn known_values() {
        assert_eq!(f32_to_bf16(1.0), 0x3f80);
        assert_eq!(f32_to_bf16(-2.0), 0xc000);
        assert_eq!(f32_to_bf16(0.0625), 0x3d80);
        assert_eq!(f32_to_bf16(f32::MAX), 0x7f7f, "toward zero: no overflow");
        assert_eq!(f32_to_bf16(-0.0), 0x8000);
        assert!(is_bf16(1.0 / 16.0) && is_bf16(-0.75) && !is_bf16(0.3));
        assert!(is_bf16(f32::MIN_POSITIVE) && !is_bf16(f32::from_bits(1)));
        // 1 + 2^-7 + 2^-15 + 2^-23: b1 takes bits 2^0..2^-7, b2 2^-15..2^-22, b3 the last.
        let x = 1.0 + pow2(-7) + pow2(-15) + pow2(-23);
        assert_eq!(
            split(x).map(bf16_to_f32),
            [1.0 + pow2(-7), pow2(-15), pow2(-23)]
        );
        assert_eq!(split_value(x), f64::from(x));
        assert_eq!((terms(0.0), terms(0.0625), terms(0.3)), (0, 1, 3));
        assert_eq!(terms(1.0 + pow2(-10)), 2);
        // 0.1's significand 0xcccccd: 8 + 8 + 8 bits, all terms needed.
        assert_eq!(split_value(0.1), f64::from(0.1f32));
        // The tiniest subnormal is below bf16's grid: its split is zero.
        assert_eq!(split_value(f32::from_bits(1)), 0.0);
        let smallest = pow2(-126) + f32::from_bits(1 << 16);
        assert_eq!(split_value(smallest), f64::from(smallest));
    }

    proptest! {
        #[test]
        fn the_split_is_exact_on_the_bf16_grid(bits in any::<u32>()) {
            // Every finite fp32 value: the three terms are exactly x when x is a multiple
            // of 2^-133 (every |x| ≥ 2^-110 is), and each term is a bf16 value with at
            // most 8 significand bits; the terms shrink by at least 2^8.
            let x = f32::from_bits(bits);
            prop_assume!(x.is_finite());
            let v = split_value(x);
            if on_bf16_grid(x) {
                prop_assert_eq!(v, f64::from(x), "{:e} = {:?}", x, split(x));
            } else {
                prop_assert!(x.abs() < pow2(-110));
                prop_assert!((v - f64::from(x)).abs() < 2f64.powi(-133));
            }
            let t = split(x).map(|b| f64::from(bf16_to_f32(b)));
            prop_assert!(t[1].abs() < t[0].abs() * 2f64.powi(-7) || t[1] == 0.0);
            prop_assert!(t[2].abs() < t[1].abs() * 2f64.powi(-7) || t[2] == 0.0);
        }

        #[test]
        fn tiny_and_huge_values_split_exactly(m in 0u32..(1 << 23), e in 0u32..255, sign in any::<bool>()) {
            // Every exponent field, subnormals (e = 0) and the largest binade included.
            let x = f32::from_bits(u32::from(sign) << 31 | e << 23 | m);
            prop_assert_eq!(split_value(x) == f64::from(x), on_bf16_grid(x), "{:e}", x);
            if e >= 17 {
                prop_assert_eq!(split_value(x), f64::from(x));
            }
        }

        #[test]
        fn products_of_terms_are_exact_in_fp32(a in any::<u16>(), b in any::<u16>()) {
            let (x, y) = (bf16_to_f32(a), bf16_to_f32(b));
            prop_assume!(x.is_finite() && y.is_finite());
            let p = f64::from(x) * f64::from(y);
            prop_assume!(p.abs() >= f64::from(f32::MIN_POSITIVE) && p.abs() <= f64::from(f32::MAX));
            prop_assert_eq!(f64::from(x * y), p);
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
