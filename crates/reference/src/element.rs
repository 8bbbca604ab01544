use std::fmt::Debug;
use std::ops::{Add, Mul};

mod sealed {
    pub trait Sealed {}
    impl Sealed for f32 {}
    impl Sealed for f64 {}
}

/// The number type activations are accumulated and stored in: `f32` (as the challenge
/// does) or `f64` (a tighter oracle).
pub trait Element:
    Copy
    + Send
    + Sync
    + PartialOrd
    + Debug
    + 'static
    + Add<Output = Self>
    + Mul<Output = Self>
    + sealed::Sealed
{
    /// Zero.
    const ZERO: Self;
    /// The value of an `f32` (weights, bias and bound are `f32`).
    fn from_f32(value: f32) -> Self;
    /// The value as `f64` (exact for both types).
    fn to_f64(self) -> f64;
}

impl Element for f32 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn from_f32(value: f32) -> Self {
        value
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f64::from(self)
    }
}

impl Element for f64 {
    const ZERO: Self = 0.0;
    #[inline(always)]
    fn from_f32(value: f32) -> Self {
        f64::from(value)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self
    }
}
