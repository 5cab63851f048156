//! How sure each look of an adaptive comparison must be, so that the interval it reports is a
//! 95% interval whichever look stopped it: a comparison that looks at its verdicts after every
//! few rounds and stops once each is decided has had several chances to be wrong, and each
//! look's interval has to be wider than a single 95% interval to pay for them.
//!
//! Two boundaries: **Bonferroni** (every look at `1 - 0.05 / looks`; what comparisons used
//! before, and what their files are read with), and **O'Brien-Fleming** repeated confidence
//! intervals (Jennison and Turnbull, "Group Sequential Methods", 2000, ch. 9), the default: the
//! interval after `n` of a budget of `N` rounds uses the normal quantile `c * sqrt(N / n)`,
//! where `c` is the constant that keeps the chance that *any* look's interval misses the true
//! ratio at 5% for `looks` equally spaced looks. Early looks, with few rounds, are very strict
//! (at the first of four, `2 * 2.024 = 4.05`, about 99.995%); the last is nearly a plain 95%
//! interval (`2.024`, 95.7%), where Bonferroni holds every look at 98.75% (`2.498`). Both are
//! valid; O'Brien-Fleming spends its 5% where the rounds are many, which is where a comparison
//! of close targets decides.
//!
//! The constant is computed, not tabled: the probability that the sums of `looks` unit normal
//! increments all stay within `c * sqrt(looks)` (the boundary is flat on the sum), by numerical
//! integration over a grid (Armitage, McPherson and Rowe, 1969), solved for 95% by bisection.
//! Beyond [`MAX_EXACT_LOOKS`] looks, the constant of continuous monitoring (a Brownian motion
//! on `[0, 1]` that must stay within `c`: 2.241), which holds for any number of looks.

use std::sync::OnceLock;

use serde::{Deserialize, Serialize};

/// The most looks whose O'Brien-Fleming constant is integrated; beyond, the continuous one.
pub const MAX_EXACT_LOOKS: u32 = 20;
/// The grid step of the integration, in units of one look's standard deviation.
const GRID_STEP: f64 = 0.05;

/// How the intervals of a comparison that may stop at any of several looks are widened.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum LookBoundary {
    /// Every look's interval at `1 - 0.05 / looks` (files written before the boundary was
    /// kept used it).
    #[default]
    Bonferroni,
    /// O'Brien-Fleming repeated confidence intervals: after `n` of `N` rounds, the normal
    /// quantile `c(looks) * sqrt(N / n)`.
    ObrienFleming,
}

impl LookBoundary {
    /// The boundary's name as the methodology prints it.
    pub fn name(self) -> &'static str {
        match self {
            LookBoundary::Bonferroni => "Bonferroni",
            LookBoundary::ObrienFleming => "O'Brien-Fleming",
        }
    }

    /// The share a look's interval leaves out (both tails together) after `rounds` rounds of
    /// a comparison that may run `budget` rounds in `looks` equally spaced looks, so that the
    /// interval it reports is a `1 - alpha` interval whichever look stopped it. One look: `alpha`
    /// itself.
    pub fn look_alpha(self, alpha: f64, looks: u32, rounds: u32, budget: u32) -> f64 {
        if looks <= 1 {
            return alpha;
        }
        match self {
            LookBoundary::Bonferroni => alpha / f64::from(looks),
            LookBoundary::ObrienFleming => {
                // The share of the budget run: a look's, or (a comparison interrupted between
                // looks) the rounds run, which is stricter than the look before it.
                let fraction = (f64::from(rounds.max(1)) / f64::from(budget.max(1))).min(1.0);
                let z = obrien_fleming_constant(looks, alpha) / fraction.sqrt();
                2.0 * (1.0 - normal_cdf(z))
            }
        }
    }
}

/// The standard normal density.
fn normal_density(x: f64) -> f64 {
    (-x * x / 2.0).exp() / (2.0 * std::f64::consts::PI).sqrt()
}

/// The standard normal distribution function (`erfc` by its continued-fraction-free
/// Chebyshev fit, Numerical Recipes' `erfcc`, relative error below 1.2e-7 everywhere, which
/// the far tails of the early looks need).
pub(crate) fn normal_cdf(x: f64) -> f64 {
    let z = x.abs() / std::f64::consts::SQRT_2;
    let t = 1.0 / (1.0 + 0.5 * z);
    let erfc = t
        * (-z * z - 1.265_512_23
            + t * (1.000_023_68
                + t * (0.374_091_96
                    + t * (0.096_784_18
                        + t * (-0.186_288_06
                            + t * (0.278_868_07
                                + t * (-1.135_203_98
                                    + t * (1.488_515_87 + t * (-0.822_152_23 + t * 0.170_872_77)))))))))
            .exp();
    if x >= 0.0 {
        1.0 - erfc / 2.0
    } else {
        erfc / 2.0
    }
}

/// The probability that the sums of `looks` independent unit normal increments all stay
/// strictly within `-bound..bound`: the density of the sum that has stayed inside, carried
/// from look to look on a grid (Simpson's rule), integrated at the last.
fn stays_within(looks: u32, bound: f64) -> f64 {
    let intervals = {
        let n = (2.0 * bound / GRID_STEP).ceil() as usize;
        n + n % 2
    };
    let h = 2.0 * bound / intervals as f64;
    let points: Vec<f64> = (0..=intervals).map(|i| -bound + i as f64 * h).collect();
    let weights: Vec<f64> = (0..=intervals)
        .map(|i| {
            let w = if i == 0 || i == intervals {
                1.0
            } else if i % 2 == 1 {
                4.0
            } else {
                2.0
            };
            w * h / 3.0
        })
        .collect();
    // The kernel by the distance between two grid points, in steps.
    let kernel: Vec<f64> = (0..=intervals).map(|d| normal_density(d as f64 * h)).collect();
    let mut density: Vec<f64> = points.iter().map(|x| normal_density(*x)).collect();
    for _ in 1..looks {
        let weighted: Vec<f64> = density.iter().zip(&weights).map(|(f, w)| f * w).collect();
        density = (0..=intervals)
            .map(|i| weighted.iter().enumerate().map(|(j, fw)| fw * kernel[i.abs_diff(j)]).sum())
            .collect();
    }
    density.iter().zip(&weights).map(|(f, w)| f * w).sum()
}

/// The probability that a Brownian motion on `[0, 1]` stays within `-c..c` throughout (the
/// series of Feller, vol. II, X.5).
fn brownian_stays_within(c: f64) -> f64 {
    let sum: f64 = (0..50)
        .map(|n| {
            let odd = f64::from(2 * n + 1);
            let sign = if n % 2 == 0 { 1.0 } else { -1.0 };
            sign / odd * (-odd * odd * std::f64::consts::PI.powi(2) / (8.0 * c * c)).exp()
        })
        .sum();
    4.0 / std::f64::consts::PI * sum
}

/// The O'Brien-Fleming constant `c` for `looks` equally spaced looks leaving out `alpha` in
/// all (two-sided): 1.960 for one look at 5%, 2.024 for four, 2.241 in the limit.
pub fn obrien_fleming_constant(looks: u32, alpha: f64) -> f64 {
    // The 95% constants, computed once per number of looks (every verdict of a comparison
    // asks for the same one).
    static AT_95: [OnceLock<f64>; MAX_EXACT_LOOKS as usize + 2] =
        [const { OnceLock::new() }; MAX_EXACT_LOOKS as usize + 2];
    if (alpha - 0.05).abs() < 1e-9 {
        let index = looks.clamp(1, MAX_EXACT_LOOKS + 1) as usize;
        return *AT_95[index].get_or_init(|| solve_obrien_fleming(looks.min(MAX_EXACT_LOOKS + 1), alpha));
    }
    solve_obrien_fleming(looks, alpha)
}

/// [`obrien_fleming_constant`], solved by bisection.
fn solve_obrien_fleming(looks: u32, alpha: f64) -> f64 {
    let within = 1.0 - alpha;
    let staying = |c: f64| -> f64 {
        if looks <= MAX_EXACT_LOOKS {
            stays_within(looks.max(1), c * f64::from(looks.max(1)).sqrt())
        } else {
            brownian_stays_within(c)
        }
    };
    let (mut low, mut high) = (0.5f64, 6.0f64);
    for _ in 0..40 {
        let middle = (low + high) / 2.0;
        if staying(middle) < within {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_obrien_fleming_constants_match_the_published_table() {
        // Jennison and Turnbull, Table 2.3 (alpha 0.05, two-sided), and one look is the plain
        // normal quantile.
        for (looks, table) in [(1, 1.960), (2, 1.977), (3, 2.004), (4, 2.024), (5, 2.040), (10, 2.087)] {
            let c = obrien_fleming_constant(looks, 0.05);
            assert!((c - table).abs() < 0.002, "{looks} looks: {c}, not {table}");
        }
        // Continuous monitoring bounds every number of looks from above.
        let limit = obrien_fleming_constant(MAX_EXACT_LOOKS + 1, 0.05);
        assert!((limit - 2.241).abs() < 0.002, "{limit}");
        assert!(obrien_fleming_constant(MAX_EXACT_LOOKS, 0.05) < limit);
    }

    #[test]
    fn obrien_fleming_is_strict_early_and_nearly_plain_at_the_last_look() {
        let of = LookBoundary::ObrienFleming;
        // Four looks of 5 rounds up to 20.
        let first = of.look_alpha(0.05, 4, 5, 20);
        let last = of.look_alpha(0.05, 4, 20, 20);
        assert!(first < 1e-4, "{first}");
        assert!((last - 0.043).abs() < 0.001, "{last}");
        assert!(of.look_alpha(0.05, 4, 10, 20) < of.look_alpha(0.05, 4, 15, 20));
        // Bonferroni: every look alike; one look: 5% either way.
        assert!((LookBoundary::Bonferroni.look_alpha(0.05, 4, 5, 20) - 0.0125).abs() < 1e-12);
        assert_eq!(of.look_alpha(0.05, 1, 3, 5), 0.05);
        assert!((normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        assert!((normal_cdf(-4.0) - 3.167e-5).abs() < 1e-8, "{}", normal_cdf(-4.0));
    }
}
