//! Task counts as polynomials of the parameters, for hover: values on a
//! grid of parameter values, their mixed forward differences (Newton's
//! form, one axis per parameter), and the polynomial written out with
//! integer coefficients over one denominator. Exact: `i128`, every
//! operation checked (an overflow is no polynomial, never a wrong one).

use std::collections::BTreeMap;

/// The leading forward differences Δ^j f(first), j = 0.. of `values`.
fn forward_differences(values: &[i128]) -> Option<Vec<i128>> {
    let mut row = values.to_vec();
    let mut out = Vec::with_capacity(values.len());
    while let Some(&head) = row.first() {
        out.push(head);
        row = row
            .windows(2)
            .map(|w| w[1].checked_sub(w[0]))
            .collect::<Option<Vec<_>>>()?;
    }
    Some(out)
}

/// The mixed forward differences of a grid of values: `values` row-major
/// over `axes` axes of `len` points each; entry `j` of the result is
/// Δ^{j_1} ... Δ^{j_k} f at the grid's first point.
fn mixed_differences(values: &[i128], axes: usize, len: usize) -> Option<Vec<i128>> {
    let mut d = values.to_vec();
    for axis in 0..axes {
        // Points one step apart along `axis`.
        let stride = len.pow((axes - 1 - axis) as u32);
        for start in 0..d.len() {
            if !(start / stride).is_multiple_of(len) {
                continue;
            }
            let line: Vec<i128> = (0..len).map(|i| d[start + i * stride]).collect();
            for (i, v) in forward_differences(&line)?.into_iter().enumerate() {
                d[start + i * stride] = v;
            }
        }
    }
    Some(d)
}

/// `(x − first)(x − first − 1)...(x − first − j + 1)` as coefficients of
/// `x^0, x^1, ...`.
fn falling(first: i64, j: usize) -> Option<Vec<i128>> {
    let mut poly = vec![1i128];
    for m in 0..j as i128 {
        let shift = -(i128::from(first).checked_add(m)?);
        let mut next = vec![0i128; poly.len() + 1];
        for (k, &c) in poly.iter().enumerate() {
            next[k + 1] = next[k + 1].checked_add(c)?;
            next[k] = next[k].checked_add(c.checked_mul(shift)?)?;
        }
        poly = next;
    }
    Some(poly)
}

fn factorial(n: usize) -> Option<i128> {
    (1..=n as i128).try_fold(1i128, |a, b| a.checked_mul(b))
}

/// A polynomial: terms (exponent per variable → numerator) over one
/// positive denominator, reduced.
#[derive(Debug, PartialEq)]
pub(crate) struct Polynomial {
    terms: BTreeMap<Vec<usize>, i128>,
    denominator: i128,
}

/// The polynomial of degree at most `degree` in each of `first.len()`
/// variables through a grid of values (row-major, `len` points per axis
/// from `first`), when one fits: every mixed difference of an order above
/// `degree` on some axis is zero (the grid needs `len > degree + 1` for
/// that to be a check).
pub(crate) fn fit(values: &[i128], first: &[i64], len: usize, degree: usize) -> Option<Polynomial> {
    let axes = first.len();
    if len.checked_pow(axes as u32)? != values.len() || degree >= len {
        return None;
    }
    let d = mixed_differences(values, axes, len)?;
    let scale = factorial(degree)?.checked_pow(axes as u32)?;
    let mut terms: BTreeMap<Vec<usize>, i128> = BTreeMap::new();
    for (flat, &delta) in d.iter().enumerate() {
        let j: Vec<usize> = (0..axes)
            .map(|a| (flat / len.pow((axes - 1 - a) as u32)) % len)
            .collect();
        if j.iter().any(|&ja| ja > degree) {
            if delta != 0 {
                return None;
            }
            continue;
        }
        if delta == 0 {
            continue;
        }
        let divisor = j
            .iter()
            .try_fold(1i128, |a, &ja| a.checked_mul(factorial(ja)?))?;
        // Σ over the product of each axis' falling factorial.
        let mut product: BTreeMap<Vec<usize>, i128> =
            BTreeMap::from([(vec![0; axes], delta.checked_mul(scale / divisor)?)]);
        for (a, &ja) in j.iter().enumerate() {
            let f = falling(first[a], ja)?;
            let mut next = BTreeMap::new();
            for (e, c) in &product {
                for (k, &fk) in f.iter().enumerate().filter(|(_, &fk)| fk != 0) {
                    let mut e = e.clone();
                    e[a] += k;
                    let v: &mut i128 = next.entry(e).or_insert(0);
                    *v = v.checked_add(c.checked_mul(fk)?)?;
                }
            }
            product = next;
        }
        for (e, c) in product {
            let v = terms.entry(e).or_insert(0);
            *v = v.checked_add(c)?;
        }
    }
    terms.retain(|_, c| *c != 0);
    let g = terms.values().fold(scale, |g, &c| gcd(g, c)).max(1);
    Some(Polynomial {
        terms: terms.into_iter().map(|(e, c)| (e, c / g)).collect(),
        denominator: scale / g,
    })
}

impl Polynomial {
    /// The polynomial in `vars`: `(N^3 + 3N^2 + 2N) / 6`, `M·N·K`,
    /// highest total degree first.
    pub(crate) fn text(&self, vars: &[&str]) -> String {
        let mut terms: Vec<(&Vec<usize>, i128)> = self.terms.iter().map(|(e, &c)| (e, c)).collect();
        terms.sort_by(|a, b| {
            let total = |e: &Vec<usize>| e.iter().sum::<usize>();
            total(b.0).cmp(&total(a.0)).then_with(|| b.0.cmp(a.0))
        });
        let poly: String = terms
            .iter()
            .enumerate()
            .map(|(i, (e, c))| monomial(i == 0, *c, e, vars))
            .collect();
        match (poly.is_empty(), self.denominator, terms.len()) {
            (true, _, _) => "0".to_string(),
            (false, 1, _) => poly,
            (false, d, n) if n > 1 => format!("({poly}) / {d}"),
            (false, d, _) => format!("{poly} / {d}"),
        }
    }
}

/// One term, with its sign as the `first` term or a later one.
fn monomial(first: bool, c: i128, e: &[usize], vars: &[&str]) -> String {
    let sign = match (first, c < 0) {
        (true, true) => "-",
        (true, false) => "",
        (false, true) => " - ",
        (false, false) => " + ",
    };
    let powers: Vec<String> = e
        .iter()
        .zip(vars)
        .filter(|(&k, _)| k > 0)
        .map(|(&k, v)| {
            if k == 1 {
                v.to_string()
            } else {
                format!("{v}^{k}")
            }
        })
        .collect();
    let a = c.abs();
    let coefficient = if a == 1 && !powers.is_empty() {
        String::new()
    } else {
        a.to_string()
    };
    format!("{sign}{coefficient}{}", powers.join("·"))
}

fn gcd(a: i128, b: i128) -> i128 {
    let (mut a, mut b) = (a.abs(), b.abs());
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The values of `f` on the grid of `len` points per axis from `first`.
    fn grid(first: &[i64], len: usize, f: impl Fn(&[i64]) -> i128) -> Vec<i128> {
        let axes = first.len();
        (0..len.pow(axes as u32))
            .map(|flat| {
                let x: Vec<i64> = (0..axes)
                    .map(|a| first[a] + ((flat / len.pow((axes - 1 - a) as u32)) % len) as i64)
                    .collect();
                f(&x)
            })
            .collect()
    }

    #[test]
    fn one_variable_as_before() {
        // N (N + 1) (N + 2) / 6 at N = 1..: 1, 4, 10, 20, ...
        let v = grid(&[1], 6, |x| {
            let n = i128::from(x[0]);
            n * (n + 1) * (n + 2) / 6
        });
        let p = fit(&v, &[1], 6, 3).expect("fits");
        assert_eq!(p.text(&["N"]), "(N^3 + 3N^2 + 2N) / 6");
        let p = fit(
            &grid(&[0], 5, |x| i128::from(x[0] * (x[0] - 1) / 2)),
            &[0],
            5,
            2,
        );
        assert_eq!(p.expect("fits").text(&["N"]), "(N^2 - N) / 2");
        assert_eq!(fit(&[5, 5, 5], &[3], 3, 0).expect("fits").text(&["N"]), "5");
    }

    #[test]
    fn several_variables() {
        let v = grid(&[1, 1, 1], 5, |x| i128::from(x[0] * x[1] * x[2]));
        assert_eq!(
            fit(&v, &[1, 1, 1], 5, 3)
                .expect("fits")
                .text(&["M", "N", "K"]),
            "M·N·K"
        );
        // A triangle in one variable times a line in the other.
        let v = grid(&[1, 2], 6, |x| {
            i128::from(x[0] * (x[0] + 1) / 2 * (2 * x[1] - 1))
        });
        assert_eq!(
            fit(&v, &[1, 2], 6, 3).expect("fits").text(&["N", "M"]),
            "(2N^2·M - N^2 + 2N·M - N) / 2"
        );
    }

    #[test]
    fn what_no_polynomial_of_the_degree_fits_is_refused() {
        // 2^N is no polynomial of degree 3 on six points.
        let v = grid(&[0], 6, |x| 1i128 << x[0]);
        assert_eq!(fit(&v, &[0], 6, 3), None);
        // M·N² has degree 2 in N: refused at degree 1.
        let v = grid(&[1, 1], 4, |x| i128::from(x[0] * x[1] * x[1]));
        assert_eq!(fit(&v, &[1, 1], 4, 1), None);
        assert!(fit(&v, &[1, 1], 4, 2).is_some());
    }
}
