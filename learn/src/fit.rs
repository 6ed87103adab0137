//! The fit: least absolute deviations with non-negative coefficients, solved as a linear program
//! through the project's solver layer (docs/ARCHITECTURE.md, "learn/"), and the R² of a fit on
//! per-configuration medians.
//!
//! `min Σ u_r` subject to `-u_r ≤ Σ_k a_rk p_k - t_r ≤ u_r`, `p_k ≥ 0`. Columns are scaled to
//! a largest entry of 1 and times are taken in microseconds, so the LP's numbers are of order
//! one to a few thousand whatever the machine.

use absinthe_model::encodings::lp::{LinExpr, Milp, Sense};
use absinthe_solvers::{SolveOptions, Solver};

use absinthe_measure::runner::median;

use crate::LearnError;

/// One sample of a fit: the model's counts (one per coefficient) and the measured seconds.
#[derive(Clone, Debug, PartialEq)]
pub struct Sample {
    /// Which configuration it measures (samples of one configuration share their counts).
    pub configuration: usize,
    pub counts: Vec<f64>,
    pub seconds: f64,
}

impl Sample {
    /// The sample with coefficient `column` held at `value`: what that coefficient explains
    /// leaves the time, and the column is zeroed (a zero column's coefficient is fitted as 0).
    pub fn holding(mut self, column: usize, value: f64) -> Sample {
        self.seconds -= value * self.counts[column];
        self.counts[column] = 0.0;
        self
    }
}

/// Non-negative coefficients minimising the sum of absolute deviations of
/// `Σ_k counts_k * coefficient_k` from the measured seconds.
pub fn lad_fit(samples: &[Sample], solver: &dyn Solver) -> Result<Vec<f64>, LearnError> {
    let k = samples.first().map_or(0, |s| s.counts.len());
    if samples.is_empty() || k == 0 {
        return Err(LearnError::Fit("no samples to fit".into()));
    }
    if samples.iter().any(|s| s.counts.len() != k) {
        return Err(LearnError::Fit(
            "samples have different numbers of counts".into(),
        ));
    }
    if samples
        .iter()
        .any(|s| !s.seconds.is_finite() || s.counts.iter().any(|c| !c.is_finite() || *c < 0.0))
    {
        return Err(LearnError::Fit(
            "a sample has a non-finite time or count".into(),
        ));
    }
    // Column scales: the largest count of each column (a zero column's coefficient stays 0).
    let scale: Vec<f64> = (0..k)
        .map(|j| samples.iter().map(|s| s.counts[j]).fold(0.0, f64::max))
        .collect();
    let mut lp = Milp::new("lad_fit");
    let coef: Vec<_> = (0..k)
        .map(|j| {
            let upper = if scale[j] > 0.0 { f64::INFINITY } else { 0.0 };
            lp.add_var(format!("p{j}"), 0.0, upper, false)
        })
        .collect();
    let mut objective = LinExpr::new();
    for (r, s) in samples.iter().enumerate() {
        let u = lp.add_var(format!("u{r}"), 0.0, f64::INFINITY, false);
        objective.add(u, 1.0);
        let mut pred = LinExpr::new();
        for j in 0..k {
            if scale[j] > 0.0 {
                pred.add(coef[j], s.counts[j] / scale[j]);
            }
        }
        let micros = s.seconds * 1e6;
        lp.add_constraint(
            format!("hi{r}"),
            &pred.clone().plus(&LinExpr::var(u), -1.0),
            Sense::Le,
            micros,
        );
        lp.add_constraint(
            format!("lo{r}"),
            &pred.plus(&LinExpr::var(u), 1.0),
            Sense::Ge,
            micros,
        );
    }
    lp.set_objective(&objective);
    let solution = solver
        .solve(&lp, &SolveOptions::default())
        .map_err(|e| LearnError::Fit(format!("the LAD linear program: {e}")))?;
    if !solution.status.has_values() {
        return Err(LearnError::Fit(format!(
            "the LAD linear program ended {}",
            solution.status
        )));
    }
    Ok((0..k)
        .map(|j| {
            if scale[j] > 0.0 {
                (solution.values[coef[j].0] / scale[j] * 1e-6).max(0.0)
            } else {
                0.0
            }
        })
        .collect())
}

/// The prediction of `coefficients` for some counts.
pub fn predict(coefficients: &[f64], counts: &[f64]) -> f64 {
    coefficients.iter().zip(counts).map(|(p, c)| p * c).sum()
}

/// Per configuration: (predicted, median measured) seconds, in configuration order.
pub fn medians(samples: &[Sample], coefficients: &[f64]) -> Vec<(f64, f64)> {
    let mut configurations: Vec<usize> = samples.iter().map(|s| s.configuration).collect();
    configurations.sort_unstable();
    configurations.dedup();
    configurations
        .into_iter()
        .map(|c| {
            let of: Vec<&Sample> = samples.iter().filter(|s| s.configuration == c).collect();
            let times: Vec<f64> = of.iter().map(|s| s.seconds).collect();
            (predict(coefficients, &of[0].counts), median(&times))
        })
        .collect()
}
