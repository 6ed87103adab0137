//! The statistics the calibrations decide by: timings compared round by round, where a shared
//! machine's moves between rounds cancel.

/// Student's t at 95%, one-sided, for 1 to 10 degrees of freedom (beyond, the last: a little
/// wider than the true value, so never more confident).
const T_95: [f64; 10] = [
    6.314, 2.920, 2.353, 2.132, 2.015, 1.943, 1.895, 1.860, 1.833, 1.812,
];

/// A ratio of two timings measured side by side in rounds (`ratios`, one per round): its
/// geometric mean, and the upper end of its one-sided 95% confidence interval (Student's t on
/// the logarithms). None with fewer than two rounds or a ratio that is not a positive number.
pub fn paired(ratios: &[f64]) -> Option<(f64, f64)> {
    if ratios.len() < 2 || ratios.iter().any(|r| !r.is_finite() || *r <= 0.0) {
        return None;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let n = logs.len() as f64;
    let mean = logs.iter().sum::<f64>() / n;
    let variance = logs.iter().map(|l| (l - mean).powi(2)).sum::<f64>() / (n - 1.0);
    let t = T_95[(logs.len() - 2).min(T_95.len() - 1)];
    Some((mean.exp(), (mean + t * (variance / n).sqrt()).exp()))
}

/// The geometric mean of `times`, None when one is not a positive finite time (or there are
/// none).
pub fn geometric_mean(times: &[f64]) -> Option<f64> {
    if times.is_empty() || times.iter().any(|t| !t.is_finite() || *t <= 0.0) {
        return None;
    }
    Some((times.iter().map(|t| t.ln()).sum::<f64>() / times.len() as f64).exp())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_bound_is_students_t_on_the_logarithms() {
        let (mean, upper) = paired(&[0.9, 1.0]).unwrap();
        assert!((mean - 0.9f64.sqrt()).abs() < 1e-12);
        let logs = [0.9f64.ln(), 0.0];
        let m = logs.iter().sum::<f64>() / 2.0;
        let sd = ((logs[0] - m).powi(2) + (logs[1] - m).powi(2)).sqrt();
        assert!((upper - (m + 6.314 * sd / 2f64.sqrt()).exp()).abs() < 1e-12);
        assert_eq!(paired(&[0.9]), None);
        assert_eq!(paired(&[0.9, f64::NAN]), None);
        assert_eq!(paired(&[0.9, 0.0]), None);
    }

    #[test]
    fn the_geometric_mean_refuses_a_missing_time() {
        assert!((geometric_mean(&[2.0, 8.0]).unwrap() - 4.0).abs() < 1e-12);
        assert_eq!(geometric_mean(&[2.0, f64::NAN]), None);
        assert_eq!(geometric_mean(&[2.0, f64::INFINITY]), None);
        assert_eq!(geometric_mean(&[]), None);
    }
}
