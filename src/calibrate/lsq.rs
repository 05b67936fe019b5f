//! Weighted linear least squares for a handful of parameters: columns
//! scaled to unit size, then a QR factorisation (modified Gram-Schmidt), so
//! terms of very different magnitudes (one per step, tokens, token pairs) do
//! not swamp each other. Plain functions, no I/O.

/// A least-squares answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Solution {
    /// The coefficients, in column order.
    pub coef: Vec<f64>,
    /// Standard error of each coefficient (from the weighted residual
    /// variance); `f64::INFINITY` when the column cannot be told apart from
    /// the others.
    pub std_err: Vec<f64>,
    /// Weighted residual sum of squares.
    pub rss: f64,
}

/// Relative size under which a column counts as a combination of the
/// others (after scaling).
const RANK_TOLERANCE: f64 = 1e-9;

/// Minimises `sum_i w_i (y_i - x_i . coef)^2`. `None` when there are no rows
/// or no columns. A column that is (numerically) a combination of earlier
/// ones gets coefficient 0 and an infinite standard error.
pub fn weighted_least_squares(x: &[Vec<f64>], y: &[f64], w: &[f64]) -> Option<Solution> {
    let n = x.len();
    let p = x.first().map(Vec::len)?;
    if n == 0 || p == 0 || y.len() != n || w.len() != n {
        return None;
    }
    let sw: Vec<f64> = w.iter().map(|v| v.max(0.0).sqrt()).collect();
    // Columns of the weighted design, each scaled to unit norm.
    let mut cols: Vec<Vec<f64>> = (0..p)
        .map(|j| (0..n).map(|i| x[i][j] * sw[i]).collect())
        .collect();
    let scale: Vec<f64> = cols.iter().map(|c| norm(c)).collect();
    for (c, s) in cols.iter_mut().zip(&scale) {
        if *s > 0.0 {
            c.iter_mut().for_each(|v| *v /= s);
        }
    }
    let yw: Vec<f64> = (0..n).map(|i| y[i] * sw[i]).collect();
    let (q, r, dependent) = gram_schmidt(cols);
    let qty: Vec<f64> = q.iter().map(|qj| dot(qj, &yw)).collect();
    let z = back_substitute(&r, &qty, &dependent);
    let fitted: Vec<f64> = (0..n)
        .map(|i| (0..p).map(|j| q[j][i] * qty[j]).sum::<f64>())
        .collect();
    let rss: f64 = yw.iter().zip(&fitted).map(|(a, b)| (a - b).powi(2)).sum();
    let free = dependent.iter().filter(|d| !**d).count();
    let dof = n.saturating_sub(free).max(1) as f64;
    let sigma2 = rss / dof;
    let rinv_rows = inverse_row_norms(&r, &dependent);
    let coef = (0..p)
        .map(|j| if scale[j] > 0.0 { z[j] / scale[j] } else { 0.0 })
        .collect();
    let std_err = (0..p)
        .map(|j| {
            if dependent[j] || scale[j] == 0.0 {
                f64::INFINITY
            } else {
                (sigma2 * rinv_rows[j]).sqrt() / scale[j]
            }
        })
        .collect();
    Some(Solution { coef, std_err, rss })
}

fn dot(a: &[f64], b: &[f64]) -> f64 {
    a.iter().zip(b).map(|(x, y)| x * y).sum()
}

fn norm(a: &[f64]) -> f64 {
    dot(a, a).sqrt()
}

/// Modified Gram-Schmidt: Q (as columns), R (upper, row-major), and which
/// columns were dependent on earlier ones (their Q column is zero).
fn gram_schmidt(mut cols: Vec<Vec<f64>>) -> (Vec<Vec<f64>>, Vec<Vec<f64>>, Vec<bool>) {
    let p = cols.len();
    let n = cols.first().map_or(0, Vec::len);
    let mut q = vec![vec![0.0; n]; p];
    let mut r = vec![vec![0.0; p]; p];
    let mut dependent = vec![false; p];
    for j in 0..p {
        let original = norm(&cols[j]);
        for k in 0..j {
            let proj = dot(&q[k], &cols[j]);
            r[k][j] = proj;
            for i in 0..n {
                cols[j][i] -= proj * q[k][i];
            }
        }
        let left = norm(&cols[j]);
        if original == 0.0 || left <= RANK_TOLERANCE.sqrt() * original.max(1e-300) {
            dependent[j] = true;
            continue;
        }
        r[j][j] = left;
        q[j] = cols[j].iter().map(|v| v / left).collect();
    }
    (q, r, dependent)
}

fn back_substitute(r: &[Vec<f64>], qty: &[f64], dependent: &[bool]) -> Vec<f64> {
    let p = qty.len();
    let mut z = vec![0.0; p];
    for j in (0..p).rev() {
        if dependent[j] {
            continue;
        }
        let s: f64 = (j + 1..p).map(|k| r[j][k] * z[k]).sum();
        z[j] = (qty[j] - s) / r[j][j];
    }
    z
}

/// Squared norms of the rows of R⁻¹ (the diagonal of (RᵀR)⁻¹), with the
/// dependent columns left out.
fn inverse_row_norms(r: &[Vec<f64>], dependent: &[bool]) -> Vec<f64> {
    let p = r.len();
    let mut out = vec![f64::INFINITY; p];
    // Solve R X = I column by column (upper triangular).
    let mut inv = vec![vec![0.0; p]; p];
    for c in 0..p {
        if dependent[c] {
            continue;
        }
        for j in (0..p).rev() {
            if dependent[j] {
                continue;
            }
            let rhs = if j == c { 1.0 } else { 0.0 };
            let s: f64 = (j + 1..p).map(|k| r[j][k] * inv[k][c]).sum();
            inv[j][c] = (rhs - s) / r[j][j];
        }
    }
    for j in 0..p {
        if !dependent[j] {
            out[j] = inv[j].iter().map(|v| v * v).sum();
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recovers_exact_coefficients_of_very_different_sizes() {
        // y = 0.017 + 2e-7 * ctx + 1.4e-8 * pairs
        let mut x = Vec::new();
        let mut y = Vec::new();
        for i in 0..40 {
            let ctx = 1_000.0 * f64::from(i);
            let pairs = 1e6 * f64::from((i * 7) % 13);
            x.push(vec![1.0, ctx, pairs]);
            y.push(0.017 + 2e-7 * ctx + 1.4e-8 * pairs);
        }
        let w = vec![1.0; x.len()];
        let s = weighted_least_squares(&x, &y, &w).expect("solves");
        for (got, want) in s.coef.iter().zip([0.017, 2e-7, 1.4e-8]) {
            assert!((got - want).abs() <= want * 1e-9, "{got} vs {want}");
        }
        assert!(s.rss < 1e-20);
    }

    #[test]
    fn a_dependent_column_is_named_by_an_infinite_error() {
        let x: Vec<Vec<f64>> = (0..10).map(|i| vec![1.0, 2.0, f64::from(i)]).collect();
        let y: Vec<f64> = (0..10).map(|i| 1.0 + 0.5 * f64::from(i)).collect();
        let s = weighted_least_squares(&x, &y, &[1.0; 10]).expect("solves");
        assert!(s.std_err[1].is_infinite());
        assert!(s.std_err[0].is_finite() && s.std_err[2].is_finite());
        assert!((s.coef[2] - 0.5).abs() < 1e-12);
    }

    #[test]
    fn standard_error_shrinks_with_more_rows() {
        let make = |n: usize| {
            let x: Vec<Vec<f64>> = (0..n).map(|i| vec![1.0, i as f64]).collect();
            // Deterministic "noise": alternating ±0.1.
            let y: Vec<f64> = (0..n)
                .map(|i| 3.0 + 0.2 * i as f64 + if i % 2 == 0 { 0.1 } else { -0.1 })
                .collect();
            weighted_least_squares(&x, &y, &vec![1.0; n]).expect("solves")
        };
        let small = make(10);
        let large = make(1_000);
        assert!(large.std_err[1] < small.std_err[1] / 10.0);
    }

    #[test]
    fn empty_input_has_no_answer() {
        assert!(weighted_least_squares(&[], &[], &[]).is_none());
    }
}
