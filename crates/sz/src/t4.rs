//! T4-adaptive's tensor-core / CUDA-core fusion (seed 001 §II-C, §III-B): the two-stage
//! linear model of a fused kernel's time, its turning point P_M, and the split of an
//! item's tiles between the two kinds of warps.
//!
//! The profile (run on the device at preparation, `device.rs`) holds the tensor-core load
//! fixed (`a` tiles an item) and varies the CUDA-core load (`c` tiles): the time of the
//! fused kernel, normalised by the tensor-core kernel alone, against the *load ratio*
//! `r = T_cc(c) / T_tc(a)` (each kernel alone), first grows slowly while both kinds of
//! warps run side by side, then with slope about 1 once the CUDA cores alone set the time.
//! [`fit_two_stage`] fits the two lines; P_M is the task ratio `c / a` at the turning
//! point. An item of `g` tiles then gives the CUDA-core warps the most tiles `c` with
//! `c ≤ P_M · (g − c)`, and none (tensor-core solo) when that is zero ([`split_for`]).

use serde::{Deserialize, Serialize};

/// Tensor-core tiles per item in the profile (`a`).
pub const PROFILE_TC_TILES: usize = 4;
/// The largest CUDA-core load profiled, in tiles (`c` runs 0..=this).
pub const PROFILE_MAX_CC_TILES: usize = 12;

/// One profiled load.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct ProfilePoint {
    /// CUDA-core tiles per item (`c`).
    pub cc_tiles: usize,
    /// `c / a`.
    pub task_ratio: f64,
    /// `T_cc(c) / T_tc(a)`: the paper's load ratio.
    pub load_ratio: f64,
    /// The fused kernel's time over `T_tc(a)`.
    pub normalized: f64,
}

/// Two lines meeting at the turning point: `y = co_intercept + co_slope·x` before it,
/// `y = solo_intercept + solo_slope·x` after.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct TwoStage {
    /// The turning point (in the fitted `x`).
    pub turning: f64,
    /// The co-running stage's slope.
    pub co_slope: f64,
    /// Its intercept.
    pub co_intercept: f64,
    /// The solo-running stage's slope.
    pub solo_slope: f64,
    /// Its intercept.
    pub solo_intercept: f64,
}

/// A profile of one kernel shape on one device, as cached.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Profile {
    /// The device's name.
    pub device: String,
    /// The kernel profiled (`sz_layer_r…_t…_c…`).
    pub kernel: String,
    /// `T_tc(a)` in ms.
    pub tc_ms: f64,
    /// Every load, by increasing `c`.
    pub points: Vec<ProfilePoint>,
    /// The fit over (load ratio, normalised time).
    pub model: TwoStage,
    /// P_M: the task ratio at the turning point.
    pub ratio: f64,
}

/// Least squares line through `(x, y)`: (intercept, slope, squared error). A single point
/// or equal `x` give a flat line.
fn line(x: &[f64], y: &[f64]) -> (f64, f64, f64) {
    let n = x.len() as f64;
    let (mx, my) = (x.iter().sum::<f64>() / n, y.iter().sum::<f64>() / n);
    let sxx: f64 = x.iter().map(|v| (v - mx) * (v - mx)).sum();
    let sxy: f64 = x.iter().zip(y).map(|(a, b)| (a - mx) * (b - my)).sum();
    let slope = if sxx > 0.0 { sxy / sxx } else { 0.0 };
    let intercept = my - slope * mx;
    let error = x
        .iter()
        .zip(y)
        .map(|(a, b)| (b - intercept - slope * a).powi(2))
        .sum();
    (intercept, slope, error)
}

/// Fits the two-stage model to points sorted by `x` (at least two): every split into two
/// runs of at least two points is fitted by two lines, the split with the least squared
/// error wins if the second line is steeper; the turning point is where the lines meet,
/// kept between the runs. Without a steeper second stage (or with fewer than four points)
/// one line is the model: its turning point is the last `x` when its slope is under ½
/// (co-running throughout), else the first (solo from the start).
pub fn fit_two_stage(x: &[f64], y: &[f64]) -> Option<TwoStage> {
    let n = x.len();
    if n < 2 || n != y.len() || x.iter().chain(y).any(|v| !v.is_finite()) {
        return None;
    }
    let (b, m, single_error) = line(x, y);
    let mut best: Option<(f64, TwoStage)> = None;
    for split in 2..n.saturating_sub(1) {
        let (b1, m1, e1) = line(&x[..split], &y[..split]);
        let (b2, m2, e2) = line(&x[split..], &y[split..]);
        if m2 <= m1 {
            continue;
        }
        let meet = (b1 - b2) / (m2 - m1);
        let turning = meet.clamp(x[split - 1], x[split]);
        let error = e1 + e2;
        if best.as_ref().is_none_or(|(e, _)| error < *e) {
            best = Some((
                error,
                TwoStage {
                    turning,
                    co_slope: m1,
                    co_intercept: b1,
                    solo_slope: m2,
                    solo_intercept: b2,
                },
            ));
        }
    }
    match best {
        // A kink must explain the data clearly better than one line.
        Some((error, model)) if error < 0.5 * single_error || single_error == 0.0 => Some(model),
        _ => Some(TwoStage {
            turning: if m < 0.5 { x[n - 1] } else { x[0] },
            co_slope: m,
            co_intercept: b,
            solo_slope: m,
            solo_intercept: b,
        }),
    }
}

/// The task ratio `c / a` at load ratio `r`, interpolated between the profiled points
/// (sorted by load ratio as by `c`).
pub fn task_ratio_at(points: &[ProfilePoint], r: f64) -> f64 {
    let Some(first) = points.first() else {
        return 0.0;
    };
    if r <= first.load_ratio {
        return first.task_ratio;
    }
    for pair in points.windows(2) {
        let (p, q) = (pair[0], pair[1]);
        if r <= q.load_ratio {
            let span = q.load_ratio - p.load_ratio;
            let t = if span > 0.0 {
                (r - p.load_ratio) / span
            } else {
                1.0
            };
            return p.task_ratio + t * (q.task_ratio - p.task_ratio);
        }
    }
    points[points.len() - 1].task_ratio
}

/// P_M from profiled points: the two-stage fit over (load ratio, normalised time), its
/// turning point turned into a task ratio. `None` without a usable fit.
pub fn ratio_from(points: &[ProfilePoint]) -> Option<(TwoStage, f64)> {
    let x: Vec<f64> = points.iter().map(|p| p.load_ratio).collect();
    let y: Vec<f64> = points.iter().map(|p| p.normalized).collect();
    let model = fit_two_stage(&x, &y)?;
    Some((model, task_ratio_at(points, model.turning)))
}

/// Tensor-core tiles of an item of `group` tiles at ratio P_M = `ratio`: `group − c` for
/// the largest `c` with `c ≤ ratio · (group − c)`; `group` (tensor-core solo) when no
/// CUDA-core tile fits.
pub fn split_for(group: usize, ratio: f64) -> usize {
    let group = group.max(1);
    (0..group)
        .rev()
        .map(|c| (c, group - c))
        .find(|&(c, tc)| c as f64 <= ratio * tc as f64)
        .map_or(group, |(_, tc)| tc)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_kinked_profile_gives_its_turning_point() {
        // Co-running (slope 0.1) up to r = 1, then solo (slope 1).
        let x: Vec<f64> = (0..=12).map(|i| i as f64 * 0.25).collect();
        let y: Vec<f64> = x
            .iter()
            .map(|&r| if r <= 1.0 { 1.0 + 0.1 * r } else { 0.2 + r })
            .collect();
        let m = fit_two_stage(&x, &y).unwrap();
        assert!((m.turning - 1.0).abs() < 0.01, "{m:?}");
        assert!((m.co_slope - 0.1).abs() < 1e-9 && (m.solo_slope - 1.0).abs() < 1e-9);
    }

    #[test]
    fn straight_profiles_are_one_stage() {
        let x: Vec<f64> = (0..8).map(f64::from).collect();
        let flat: Vec<f64> = x.iter().map(|v| 1.0 + 0.05 * v).collect();
        assert_eq!(fit_two_stage(&x, &flat).unwrap().turning, 7.0);
        let steep: Vec<f64> = x.iter().map(|v| 1.0 + v).collect();
        assert_eq!(fit_two_stage(&x, &steep).unwrap().turning, 0.0);
        assert!(fit_two_stage(&[1.0], &[1.0]).is_none());
        assert!(fit_two_stage(&[1.0, f64::NAN], &[1.0, 2.0]).is_none());
    }

    #[test]
    fn turning_points_become_task_ratios() {
        let points: Vec<ProfilePoint> = (0..=4)
            .map(|c| ProfilePoint {
                cc_tiles: c,
                task_ratio: c as f64 / 4.0,
                load_ratio: c as f64 * 0.5,
                normalized: 1.0,
            })
            .collect();
        assert_eq!(task_ratio_at(&points, 0.0), 0.0);
        assert_eq!(task_ratio_at(&points, 1.0), 0.5);
        assert_eq!(task_ratio_at(&points, 0.75), 0.375);
        assert_eq!(task_ratio_at(&points, 9.0), 1.0);
        assert_eq!(task_ratio_at(&[], 1.0), 0.0);
    }

    #[test]
    fn splits_keep_the_ratio() {
        assert_eq!(split_for(4, 0.0), 4, "solo");
        assert_eq!(split_for(4, 0.3), 4, "1/3 > 0.3: solo");
        assert_eq!(split_for(4, 1.0 / 3.0), 3);
        assert_eq!(split_for(4, 1.0), 2);
        assert_eq!(split_for(4, 3.0), 1);
        assert_eq!(split_for(4, 100.0), 1, "at least one tensor-core tile");
        assert_eq!(split_for(1, 5.0), 1);
        assert_eq!(split_for(0, 5.0), 1);
    }
}
