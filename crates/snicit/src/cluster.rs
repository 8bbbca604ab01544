//! The host side of the conversion: the bins of the sum downsampling and the sample
//! pruning of the paper's Algorithm 1.

use std::ops::Range;

/// The positions summed into bin `bin` of `bins` over `n` neurons:
/// `[bin·n/bins, (bin+1)·n/bins)`. The bins cover every position exactly once for every
/// `n` and `bins` (the published kernel's index is right only for N = 1024); with more
/// bins than neurons some bins are empty. `snicit_sum_bins` computes the same bounds.
pub fn bin_range(bin: usize, n: usize, bins: usize) -> Range<usize> {
    let bound = |b: usize| ((b as u128 * n as u128) / bins as u128) as usize;
    bound(bin)..bound(bin + 1)
}

/// Sum downsampling of one row into `bins` sums (the CPU twin of `snicit_sum_bins`, for
/// tests; the order of additions may differ from the GPU's).
pub fn sum_bins(row: &[f32], bins: usize) -> Vec<f32> {
    (0..bins)
        .map(|b| row[bin_range(b, row.len(), bins)].iter().sum())
        .collect()
}

/// Sample pruning (Algorithm 1): `sums` holds `samples` rows of `bins` sums. Going
/// through the samples in order, each one still kept becomes a base, and every later or
/// earlier kept sample with fewer than `epsilon·bins` bins that differ from the base's by
/// more than `eta` is pruned. Returns the kept samples, ascending: the centroids. The
/// first sample is always kept.
///
/// The published code prunes a sample when its count of bins differing by more than η is
/// below ε·n; the paper's listing states the comparison the other way round, which would
/// prune the dissimilar samples. We follow the code.
pub fn prune_samples(
    sums: &[f32],
    samples: usize,
    bins: usize,
    epsilon: f32,
    eta: f32,
) -> Vec<usize> {
    let mut kept = vec![true; samples];
    let row = |s: usize| &sums[s * bins..(s + 1) * bins];
    let limit = epsilon * bins as f32;
    for base in 0..samples {
        if !kept[base] {
            continue;
        }
        for other in (0..samples).filter(|&other| other != base) {
            if !kept[other] {
                continue;
            }
            let differing = row(other)
                .iter()
                .zip(row(base))
                .filter(|(a, b)| (*a - *b).abs() > eta)
                .count();
            if (differing as f32) < limit {
                kept[other] = false;
            }
        }
    }
    (0..samples).filter(|&s| kept[s]).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn bins_cover_every_position_once(n in 1usize..5000, bins in 1usize..100) {
            let mut next = 0;
            for b in 0..bins {
                let range = bin_range(b, n, bins);
                prop_assert_eq!(range.start, next);
                prop_assert!(range.end >= range.start);
                next = range.end;
            }
            prop_assert_eq!(next, n);
        }

        #[test]
        fn bins_are_balanced(n in 1usize..100_000, bins in 1usize..64) {
            let sizes: Vec<usize> = (0..bins).map(|b| bin_range(b, n, bins).len()).collect();
            let (min, max) = (sizes.iter().min().unwrap(), sizes.iter().max().unwrap());
            prop_assert!(max - min <= 1);
        }
    }

    #[test]
    fn large_n_bins_do_not_overlap() {
        // N = 65536, 16 bins: 4096 positions each (the published kernel overlaps here).
        assert_eq!(bin_range(15, 65536, 16), 61440..65536);
        assert_eq!(sum_bins(&vec![1.0; 65536], 16), vec![4096.0; 16]);
    }

    #[test]
    fn identical_samples_collapse_to_the_first() {
        let sums = [
            1.0, 2.0, 3.0, /**/ 1.0, 2.0, 3.0, /**/ 9.0, 2.0, 3.0, /**/ 9.0, 2.0,
            3.01,
        ];
        assert_eq!(prune_samples(&sums, 4, 3, 0.03, 0.03), vec![0, 2]);
    }

    #[test]
    fn distinct_samples_all_survive_and_the_first_always() {
        let sums = [0.0, 1.0, 2.0, 3.0];
        assert_eq!(prune_samples(&sums, 4, 1, 0.03, 0.03), vec![0, 1, 2, 3]);
        assert_eq!(prune_samples(&[5.0; 4], 4, 1, 0.03, 0.03), vec![0]);
        // ε = 0 prunes nothing (no count is below 0).
        assert_eq!(prune_samples(&[5.0; 4], 4, 1, 0.0, 0.03), vec![0, 1, 2, 3]);
    }
}
