//! Monotone integer functions of one argument whose thresholds are known
//! exactly, so that `ceil(log2(x)) >= t` can become a condition on `x`.

/// A non-decreasing integer function of one integer argument, whose
/// thresholds lint knows exactly: the smallest argument with `f(x) >= t`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Mono {
    /// `ceil(log_b(x))`, defined for `x >= 1`.
    CeilLog(i64),
    /// `floor(log_b(x))`, defined for `x >= 1`.
    FloorLog(i64),
    /// `b ** x`, defined for `x >= 0` (`b >= 2`).
    Pow(i64),
}

impl Mono {
    /// The smallest argument `x` (in the domain) with `f(x) >= t`; `None`
    /// when no 64-bit argument reaches `t`.
    pub(crate) fn threshold(self, t: i128) -> Option<i128> {
        let pow = |b: i64, e: i128| -> Option<i128> {
            let mut acc: i128 = 1;
            for _ in 0..e {
                acc = acc.checked_mul(b as i128)?;
                if acc > i64::MAX as i128 {
                    return None;
                }
            }
            Some(acc)
        };
        match self {
            Mono::CeilLog(b) => {
                if t <= 0 {
                    Some(1)
                } else {
                    Some(pow(b, t - 1)? + 1)
                }
            }
            Mono::FloorLog(b) => {
                if t <= 0 {
                    Some(1)
                } else {
                    pow(b, t)
                }
            }
            Mono::Pow(b) => {
                if t <= 1 {
                    return Some(0);
                }
                let mut e = 0i128;
                let mut acc: i128 = 1;
                while acc < t {
                    acc = acc.checked_mul(b as i128)?;
                    e += 1;
                    if e > 64 {
                        return None;
                    }
                }
                Some(e)
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use lpk_model::expr::{ceil_log, floor_log, int_pow};

    /// The threshold is the smallest argument reaching `t`, checked against
    /// the evaluator's own functions.
    #[test]
    fn thresholds_agree_with_the_evaluator() {
        for b in [2i64, 3, 4, 10] {
            type Case<'a> = (Mono, i64, &'a dyn Fn(i64) -> i64);
            let cases: [Case; 3] = [
                (Mono::CeilLog(b), 1, &|x| ceil_log(x, b).unwrap_or(i64::MIN)),
                (Mono::FloorLog(b), 1, &|x| {
                    floor_log(x, b).unwrap_or(i64::MIN)
                }),
                (Mono::Pow(b), 0, &|x| int_pow(b, x).unwrap_or(i64::MAX)),
            ];
            for (m, min, f) in cases {
                let top = if matches!(m, Mono::Pow(_)) { 40 } else { 5000 };
                for t in -3i128..=12 {
                    let brute = (min..=top).find(|&x| f(x) as i128 >= t);
                    match (m.threshold(t), brute) {
                        (Some(th), Some(x)) => assert_eq!(th, x as i128, "{m:?} t={t}"),
                        (Some(th), None) => assert!(th > top as i128, "{m:?} t={t}"),
                        (None, Some(x)) => panic!("{m:?} t={t}: none, but {x} reaches it"),
                        (None, None) => {}
                    }
                }
            }
        }
        // Beyond 64-bit arguments: never.
        assert_eq!(Mono::CeilLog(2).threshold(64), None);
        assert_eq!(Mono::CeilLog(2).threshold(63), Some((1i128 << 62) + 1));
        assert_eq!(Mono::Pow(2).threshold(1 << 62), Some(62));
    }
}
