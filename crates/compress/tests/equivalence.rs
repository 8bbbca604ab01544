//! Compressed ≡ original under the CPU reference, on random networks with planted classes
//! (random class sizes, random weights of both signs) and without classes.

mod common;

use common::{
    Problem, Values, classless_problem, compressed, first_difference, planted_problem, run_both,
};
use proptest::prelude::*;
use spdnn_compress::{CompressReport, Compressed};
use spdnn_formats::SparseMatrix;

/// Every planted class lies inside one found class, so the compressed widths are at most
/// the planted class counts; widths and rows chain.
fn check_classes(problem: &Problem, c: &Compressed) -> Result<(), TestCaseError> {
    prop_assert_eq!(c.layers().len(), problem.layers.len());
    prop_assert_eq!(c.layers()[0].nrows(), problem.layers[0].nrows());
    for (l, planted) in problem.planted.iter().enumerate() {
        let found = c.classes(l).expect("classes per layer");
        prop_assert_eq!(found.width(), planted.len());
        prop_assert_eq!(c.layers()[l].ncols(), found.len());
        if l > 0 {
            prop_assert_eq!(c.layers()[l].nrows(), c.classes(l - 1).unwrap().len());
        }
        for a in 0..planted.len() {
            for b in a + 1..planted.len() {
                if planted[a] == planted[b] {
                    prop_assert_eq!(found.class_of(a), found.class_of(b), "layer {}", l + 1);
                }
            }
        }
        // Members of one found class have identical merged columns: compressing the
        // compressed network again finds nothing more.
        for j in 0..found.len() {
            let members = found.members(j).unwrap();
            prop_assert_eq!(members[0], found.representative(j).unwrap());
            prop_assert!(members.windows(2).all(|w| w[0] < w[1]));
        }
    }
    let again = compressed(c.layers());
    prop_assert!(again.is_identity(), "compression is idempotent");
    prop_assert_eq!(again.layers(), c.layers());
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    /// Dyadic values: every partial sum is exact, so compressed and original agree bit for
    /// bit (values and categories), in f32 and in f64.
    #[test]
    fn planted_dyadic_is_bit_exact(seed in any::<u64>()) {
        let problem = planted_problem(seed, Values::Dyadic);
        let c = compressed(&problem.layers);
        check_classes(&problem, &c)?;
        let both = run_both::<f32>(&problem, &c);
        prop_assert_eq!(&both.compressed.categories, &both.original.categories);
        prop_assert!(first_difference(&both.expanded, &both.original_values, both.width, 0.0).is_none(),
            "{:?}", first_difference(&both.expanded, &both.original_values, both.width, 0.0));
        let both = run_both::<f64>(&problem, &c);
        prop_assert_eq!(&both.compressed.categories, &both.original.categories);
        prop_assert!(first_difference(&both.expanded, &both.original_values, both.width, 0.0).is_none());
    }

    /// Positive real weights (the GPU tests' general problems): categories exact, values
    /// within the GPU tests' tolerance (1e-5 relative to max(|v|, 1)), in f32 and in f64 (the
    /// merged weights are f32 sums, so f64 inference inherits their rounding).
    #[test]
    fn planted_positive_real_within_tolerance(seed in any::<u64>()) {
        let problem = planted_problem(seed, Values::PositiveReal);
        let c = compressed(&problem.layers);
        check_classes(&problem, &c)?;
        let both = run_both::<f32>(&problem, &c);
        prop_assert_eq!(&both.compressed.categories, &both.original.categories);
        let diff = first_difference(&both.expanded, &both.original_values, both.width, 1e-5);
        prop_assert!(diff.is_none(), "{:?}", diff);
        let both = run_both::<f64>(&problem, &c);
        prop_assert_eq!(&both.compressed.categories, &both.original.categories);
        let diff = first_difference(&both.expanded, &both.original_values, both.width, 1e-5);
        prop_assert!(diff.is_none(), "{:?}", diff);
    }

    /// Weights of both signs: values within 1e-4 relative (cancellation makes the absolute
    /// rounding error of a small value scale with the magnitudes summed); categories equal
    /// except for a row that is all 0 on one side and within that tolerance of 0 on the
    /// other (which rounding may decide either way).
    #[test]
    fn planted_mixed_sign_real_within_tolerance(seed in any::<u64>()) {
        let problem = planted_problem(seed, Values::MixedReal);
        let c = compressed(&problem.layers);
        check_classes(&problem, &c)?;
        let both = run_both::<f32>(&problem, &c);
        let tolerance = 1e-4;
        let diff = first_difference(&both.expanded, &both.original_values, both.width, tolerance);
        prop_assert!(diff.is_none(), "{:?}", diff);
        let row_max = |values: &[f32], row: u32| {
            let start = (row as usize - 1) * both.width;
            values[start..start + both.width].iter().fold(0f32, |m, &v| m.max(v))
        };
        let (a, b) = (&both.compressed.categories, &both.original.categories);
        for &row in a.iter().filter(|r| !b.contains(r)) {
            prop_assert!(f64::from(row_max(&both.expanded, row)) <= tolerance, "row {}", row);
        }
        for &row in b.iter().filter(|r| !a.contains(r)) {
            prop_assert!(f64::from(row_max(&both.original_values, row)) <= tolerance, "row {}", row);
        }
        let both = run_both::<f64>(&problem, &c);
        let diff = first_difference(&both.expanded, &both.original_values, both.width, tolerance);
        prop_assert!(diff.is_none(), "{:?}", diff);
    }

    /// No two identical columns anywhere: the network compresses to itself, says so, and
    /// runs identically.
    #[test]
    fn classless_networks_compress_to_themselves(seed in any::<u64>(), mixed in any::<bool>()) {
        let values = if mixed { Values::MixedReal } else { Values::Dyadic };
        let problem = classless_problem(seed, values);
        let c = compressed(&problem.layers);
        prop_assert!(c.is_identity());
        prop_assert_eq!(c.layers(), &problem.layers[..]);
        let report = CompressReport::new(c.summary(), None);
        prop_assert!(report.identity);
        prop_assert_eq!(report.width_ratio, 1.0);
        prop_assert_eq!(report.nnz_ratio, 1.0);
        let both = run_both::<f32>(&problem, &c);
        prop_assert_eq!(&both.compressed.categories, &both.original.categories);
        prop_assert!(first_difference(&both.expanded, &both.original_values, both.width, 0.0).is_none());
    }
}

#[test]
fn the_report_serialises() {
    let problem = planted_problem(5, Values::Dyadic);
    let c = compressed(&problem.layers);
    let retirement = c.retirement(problem.bias, problem.upper).unwrap();
    let report = CompressReport::new(c.summary(), Some(&retirement));
    let json = serde_json::to_value(&report).unwrap();
    assert_eq!(
        json["layers"].as_array().unwrap().len(),
        problem.layers.len()
    );
    assert!(json["compress_ms"].as_f64().unwrap() >= 0.0);
    assert!(json["suffix_start"].as_u64().is_some());
    assert!(json["layers"][0]["preserves"].is_boolean());
}
