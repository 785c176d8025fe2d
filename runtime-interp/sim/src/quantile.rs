//! Distribution-free upper confidence bounds of a quantile (the binomial
//! method).
//!
//! Of `n` independent samples of a continuous distribution, the number
//! below its `q`-quantile `x_q` is Binomial(n, q). So the `k`-th smallest
//! sample `x_(k)` is at least `x_q` unless `k` or more samples fell below
//! `x_q`: `P(x_(k) >= x_q) = P(Binomial(n, q) < k)`. The bound is `x_(k)`
//! for the smallest `k` with `P(Binomial(n, q) < k) >= c`; there is none
//! when even `k = n` falls short (too few samples for that `q` and `c`).

/// Why no bound exists.
#[derive(Clone, Debug, PartialEq, thiserror::Error)]
pub enum QuantileError {
    /// `q` or `c` outside (0, 1).
    #[error("quantile and confidence must lie strictly between 0 and 1 (found q = {q}, c = {c})")]
    Range {
        /// The quantile.
        q: f64,
        /// The confidence.
        c: f64,
    },
    /// Not enough samples.
    #[error(
        "{n} samples cannot bound the {q} quantile at confidence {c}: it takes at least {need} \
         (give more observations, or a lower quantile or confidence)"
    )]
    TooFew {
        /// Samples given.
        n: usize,
        /// The quantile.
        q: f64,
        /// The confidence.
        c: f64,
        /// The fewest samples that would do.
        need: usize,
    },
}

/// `P(Binomial(n, q) <= j)` for `j = 0..n`, as a vector of length `n + 1`.
fn binomial_cdf(n: usize, q: f64) -> Vec<f64> {
    // log pmf by the recurrence pmf(j+1) = pmf(j) (n-j)/(j+1) q/(1-q).
    let (lq, lp) = (q.ln(), (1.0 - q).ln());
    let mut logpmf = n as f64 * lp;
    let mut cdf = Vec::with_capacity(n + 1);
    let mut acc = 0.0f64;
    for j in 0..=n {
        acc += logpmf.exp();
        cdf.push(acc.min(1.0));
        if j < n {
            logpmf += ((n - j) as f64).ln() - ((j + 1) as f64).ln() + lq - lp;
        }
    }
    cdf
}

/// The order statistic `k` (1-based) of the bound, if `n` samples suffice.
pub(crate) fn order_statistic(n: usize, q: f64, c: f64) -> Result<usize, QuantileError> {
    if !(q > 0.0 && q < 1.0 && c > 0.0 && c < 1.0) {
        return Err(QuantileError::Range { q, c });
    }
    let cdf = binomial_cdf(n, q);
    // P(Bin < k) = cdf[k - 1].
    if let Some(k) = (1..=n).find(|&k| cdf[k - 1] >= c) {
        return Ok(k);
    }
    // The fewest samples: x_(n) works when 1 - q^n >= c.
    let need = ((1.0 - c).ln() / q.ln()).ceil().max(1.0) as usize;
    Err(QuantileError::TooFew { n, q, c, need })
}

/// The upper bound of the `q`-quantile at confidence `c` from `samples`.
pub fn upper_bound(samples: &[f64], q: f64, c: f64) -> Result<f64, QuantileError> {
    let k = order_statistic(samples.len(), q, c)?;
    let mut s = samples.to_vec();
    s.sort_by(f64::total_cmp);
    Ok(s[k - 1])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_largest_sample_needs_enough_samples() {
        // P(Bin(n, 0.9) < n) = 1 - 0.9^n >= 0.95 needs n >= 29.
        assert!(matches!(
            order_statistic(28, 0.9, 0.95),
            Err(QuantileError::TooFew { need: 29, .. })
        ));
        assert_eq!(order_statistic(29, 0.9, 0.95), Ok(29));
    }

    #[test]
    fn the_median_bound_matches_a_direct_sum() {
        // n = 10, q = 0.5: P(Bin < k) = sum_{j<k} C(10, j) / 1024.
        let c = [1u32, 10, 45, 120, 210, 252, 210, 120, 45, 10, 1];
        let cum = |k: usize| c[..k].iter().sum::<u32>() as f64 / 1024.0;
        let k = order_statistic(10, 0.5, 0.9).expect("enough");
        assert!(cum(k) >= 0.9 && cum(k - 1) < 0.9, "k = {k}");
        assert_eq!(k, 8);
    }

    #[test]
    fn bounds_cover_the_quantile_at_about_the_confidence() {
        // Uniform(0, 1) samples from a fixed LCG: the bound of the 0.9
        // quantile at 0.9 confidence is above 0.9 in about 90 % of trials.
        let mut x: u64 = 12345;
        let mut next = || {
            x = x
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (x >> 11) as f64 / (1u64 << 53) as f64
        };
        let trials = 2000;
        let mut covered = 0;
        for _ in 0..trials {
            let s: Vec<f64> = (0..50).map(|_| next()).collect();
            if upper_bound(&s, 0.9, 0.9).expect("enough") >= 0.9 {
                covered += 1;
            }
        }
        let share = covered as f64 / trials as f64;
        assert!(share >= 0.88, "coverage {share}");
        assert!(upper_bound(&[1.0], 0.0, 0.5).is_err());
    }
}
