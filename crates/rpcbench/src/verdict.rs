//! Verdicts of a comparison run in rounds: for each figure of the table (req/s, p50, p95, p99,
//! error share, and the target's CPU and memory when monitored), the ratio of a target to the
//! baseline with a 95% confidence interval, and what that allows one to say: faster or slower
//! by X%, no difference (the whole interval inside the tie band), or not enough data (with
//! about how many rounds it would take). Pure functions of the per-round figures: no clock.
//!
//! The method, two statistics, each with a percentile bootstrap over rounds (rounds drawn with
//! replacement [`RESAMPLES`] times from a fixed seed; a target's round r always drawn with the
//! baseline's round r, so that drift of the machine or network that hits both cancels out):
//!
//! - **req/s, error share, target CPU and memory**: each round gives one ratio (the target's
//!   round against the baseline's round of the same number); the estimate is the geometric
//!   mean of those ratios (the mean of their logarithms, so 2x and 0.5x are equally far from
//!   1x), and the interval the percentiles of the resampled means.
//! - **p50, p95, p99** (when the rounds keep their latency histograms, as every comparison
//!   since they were kept does): the ratio of the target's **pooled** percentile to the
//!   baseline's, where a pooled percentile is that of every round's histogram merged (the
//!   table's p99 is that figure), and the interval the percentiles of the same ratio over
//!   resampled rounds ([`crate::pooled`]). A per-round p99 is the 99th percentile of a few
//!   hundred milliseconds: one scheduler hiccup on a busy machine doubles it, and the mean of
//!   per-round ratios then moves by that round's whole log-ratio over the rounds run, so the
//!   interval spans the hiccup. Pooled, a hiccup round adds its samples to the tail as one
//!   round among many, weighed by its samples, so its slow few move the pooled p99 by what
//!   they are: a share of all the samples. Files written before rounds kept histograms are
//!   judged per round, as before, and each verdict says which statistic it used.
//!
//! Rounds rather than per-second windows: seconds within one round share that round's
//! conditions (the other processes of a busy machine, the connection pool, the server's
//! caches), so they are not independent, and treating them as such gives intervals that are
//! too narrow. With few rounds the percentile bootstrap is itself somewhat narrow, hence the
//! expanded percentiles ([`expanded_tail`]), and a difference is only claimed when the whole
//! interval lies beyond the tie band.
//!
//! A round's req/s is the responses completed within its measured duration over that
//! duration ([`crate::rounds::window_rate`]), not over its elapsed time, whose tail (the
//! requests still in flight coming back) is erratic in short rounds. What is left is the
//! machine's own drift between two turns: on a shared machine whose load moves by the second,
//! two identical CPU-bound nodes measured in turn differ from round to round by tens of
//! percent, and their verdict is then honestly "not enough data", with the rounds it would
//! take. Identical nodes whose figures are steadier than the band (nodes whose latency is
//! their own, not the machine's) come out "no difference" at the default 5 rounds and 3%.
//!
//! Each figure is judged against its own tie band ([`VerdictRule`]): `--tie` for req/s, p50,
//! error share, CPU and memory, `--tail-tie` for p95 and p99, whose rounds spread more; and the
//! intervals of an adaptive comparison are widened for its looks ([`crate::sequential`]).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};
use serde::{Deserialize, Serialize};

pub use crate::sequential::LookBoundary;

/// Rounds of a comparison unless `--rounds` says otherwise (a load of stages runs whole in
/// each round, so there it is one).
pub const DEFAULT_ROUNDS: u32 = crate::defaults::ROUNDS;
/// The tie band unless `--tie` says otherwise: a ratio within 3% of 1 either way is no
/// difference.
pub const DEFAULT_TIE: f64 = crate::defaults::TIE;
/// The tie band of p95 and p99 unless `--tail-tie` says otherwise.
pub const DEFAULT_TAIL_TIE: f64 = crate::defaults::TAIL_TIE;
/// Bootstrap resamples.
pub const RESAMPLES: u32 = 2000;
/// The bootstrap's seed, fixed so that the same rounds always give the same interval.
pub const BOOTSTRAP_SEED: u64 = 0x7e57_ab1e;
/// The confidence of the intervals.
pub const CONFIDENCE: f64 = 0.95;
/// The method, as the methodology states it.
pub const CI_METHOD: &str = "expanded percentile bootstrap over rounds drawn in pairs, 2000 resamples, of the ratio of pooled percentiles for p50, p95 and p99 (each target's round histograms merged) and of the geometric mean of per-round ratios for req/s, error share, CPU and memory";
/// The most rounds an estimate names; beyond, "more than" this.
const MAX_ROUNDS_NEEDED: u32 = 10_000;
/// The normal quantile of a two-sided 95% interval, for the rounds-needed estimate.
const Z_95: f64 = 1.959_964;

/// How the targets took turns.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum RoundOrder {
    /// Round r starts with target r (A B C, B C A, C A B, ...).
    Rotated,
    /// Each round's order shuffled from the seed.
    Shuffled,
    /// All targets at once, each on its own worker threads (sharing the generator's CPU).
    Simultaneous,
}

impl RoundOrder {
    /// The order's name as printed.
    pub fn as_str(self) -> &'static str {
        match self {
            RoundOrder::Rotated => "rotated",
            RoundOrder::Shuffled => "shuffled",
            RoundOrder::Simultaneous => "simultaneous",
        }
    }
}

/// How a comparison was run, kept in each target's results file and printed under the table,
/// so that a comparison can be checked later.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Methodology {
    /// Rounds run (fewer than asked if interrupted).
    pub rounds: u32,
    /// How targets took turns.
    pub order: RoundOrder,
    /// Each round's order of the targets, by name.
    pub orders: Vec<Vec<String>>,
    /// Each round's own warm-up, per target, milliseconds.
    pub warmup_ms: u64,
    /// Pause between two runs, milliseconds.
    pub cooldown_ms: u64,
    /// The measured length of one round per target: `2s`, `400 requests`, or `all stages`.
    pub round_length: String,
    /// The tie band: ratios within this share of 1 either way are no difference.
    pub tie: f64,
    /// How the intervals are computed.
    pub ci_method: String,
    /// Their confidence.
    pub confidence: f64,
    /// The bootstrap's seed.
    pub bootstrap_seed: u64,
    /// The seed of the requests (and of a shuffled order).
    pub seed: u64,
    /// Each round and target drew its own parameter sequence from the pools (`--vary-params`).
    pub varied_params: bool,
    /// Request bodies (apart from the id) repeated within a run, so a response cache could
    /// answer them; absent when it could not be told.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cacheable: Option<bool>,
    /// Adaptive rounds: the most rounds the comparison could run; it looked at its verdicts
    /// after every [`Methodology::look_every`] rounds and stopped once none was "not enough
    /// data". Absent: the rounds were fixed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub max_rounds: Option<u32>,
    /// Adaptive rounds: rounds between two looks (the least rounds run).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub look_every: Option<u32>,
    /// Looks the comparison could take at its rounds (1: fixed rounds); each interval is at
    /// widened for them as [`Methodology::boundary`] says, so that the one reported is a 95%
    /// interval.
    #[serde(default = "one_look", skip_serializing_if = "is_one_look")]
    pub looks: u32,
    /// How each look's interval was widened for the looks ([`LookBoundary`]); files written
    /// before it was kept used Bonferroni.
    #[serde(default)]
    pub boundary: LookBoundary,
    /// The tie band of p95 and p99 (`--tail-tie`), when it is not [`Methodology::tie`]: a
    /// loaded node's tail moves more from round to round than its throughput or median, and
    /// what difference in it matters is a band of its own. Absent: the tie band.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tail_tie: Option<f64>,
    /// Warm-up before each target's later rounds, when shorter than its first round's
    /// ([`Methodology::warmup_ms`]), milliseconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub later_warmup_ms: Option<u64>,
}

fn one_look() -> u32 {
    1
}

fn is_one_look(looks: &u32) -> bool {
    *looks == 1
}

/// What one target measured in one round.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundFigures {
    /// The round, from 1.
    pub round: u32,
    /// The target's place in the round's order, from 1 (all 1 when simultaneous).
    pub position: u32,
    /// Measured time, microseconds.
    pub elapsed_us: u64,
    /// Requests with an outcome.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Responses per second of measured time.
    pub rate: f64,
    /// Latency percentiles, microseconds.
    pub p50_us: u64,
    /// 95th percentile.
    pub p95_us: u64,
    /// 99th percentile.
    pub p99_us: u64,
    /// The monitored target's mean CPU, percent of one core.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cpu_percent: Option<f64>,
    /// The monitored target's peak resident memory, bytes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rss_bytes: Option<u64>,
    /// The round's latency histogram at 2 significant digits (HdrHistogram V2, base64; about
    /// 1 to 2 KB), for the pooled percentiles of the verdicts; absent in files written before
    /// rounds kept it (their percentiles are then judged per round).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub latency: Option<String>,
}

/// What a comparison in rounds keeps in each target's results file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RoundsRecord {
    /// How the comparison was run.
    pub methodology: Methodology,
    /// This target's rounds.
    pub rounds: Vec<RoundFigures>,
}

/// A figure a verdict is given for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Figure {
    /// Responses per second.
    Rate,
    /// Median latency.
    P50,
    /// 95th percentile latency.
    P95,
    /// 99th percentile latency.
    P99,
    /// Errors over requests.
    ErrorShare,
    /// The monitored target's mean CPU.
    TargetCpu,
    /// The monitored target's peak memory.
    TargetRss,
}

impl Figure {
    /// Every figure, in the table's order.
    pub const ALL: [Figure; 7] = [
        Figure::Rate,
        Figure::P50,
        Figure::P95,
        Figure::P99,
        Figure::ErrorShare,
        Figure::TargetCpu,
        Figure::TargetRss,
    ];

    /// The figure's name, as its table row names it.
    pub fn name(self) -> &'static str {
        match self {
            Figure::Rate => "req/s",
            Figure::P50 => "p50",
            Figure::P95 => "p95",
            Figure::P99 => "p99",
            Figure::ErrorShare => "error share",
            Figure::TargetCpu => "target CPU avg",
            Figure::TargetRss => "target RSS peak",
        }
    }

    /// The words for a ratio above 1 and below 1.
    fn words(self) -> (&'static str, &'static str) {
        match self {
            Figure::Rate => ("faster", "slower"),
            Figure::P50 | Figure::P95 | Figure::P99 => ("slower", "faster"),
            Figure::ErrorShare => ("more errors", "fewer errors"),
            Figure::TargetCpu | Figure::TargetRss => ("uses more", "uses less"),
        }
    }

    /// The latency quantile this figure is (0.99 for p99); `None` for the others.
    pub fn quantile(self) -> Option<f64> {
        match self {
            Figure::P50 => Some(0.5),
            Figure::P95 => Some(0.95),
            Figure::P99 => Some(0.99),
            _ => None,
        }
    }

    /// The round's value of this figure; `None` when it was not measured.
    pub fn value(self, round: &RoundFigures) -> Option<f64> {
        match self {
            Figure::Rate => Some(round.rate),
            Figure::P50 => Some(round.p50_us as f64),
            Figure::P95 => Some(round.p95_us as f64),
            Figure::P99 => Some(round.p99_us as f64),
            Figure::ErrorShare => Some(round.errors as f64 / round.requests.max(1) as f64),
            Figure::TargetCpu => round.cpu_percent,
            Figure::TargetRss => round.rss_bytes.map(|b| b as f64),
        }
    }

    /// One round's ratio of `target` to `baseline`. Two zeros are equal (no errors in either);
    /// error shares are compared with one error added to each side's count, so that a round
    /// without errors against one with a few gives a large but finite ratio. `None` when the
    /// figure was not measured in either round, or the baseline's is 0 and the target's not.
    pub fn round_ratio(self, baseline: &RoundFigures, target: &RoundFigures) -> Option<f64> {
        if self == Figure::ErrorShare {
            if baseline.errors == 0 && target.errors == 0 {
                return Some(1.0);
            }
            let share = |r: &RoundFigures| (r.errors + 1) as f64 / (r.requests + 1) as f64;
            return Some(share(target) / share(baseline));
        }
        let (b, t) = (self.value(baseline)?, self.value(target)?);
        if !(b.is_finite() && t.is_finite()) || b < 0.0 || t < 0.0 {
            return None;
        }
        match (b == 0.0, t == 0.0) {
            (true, true) => Some(1.0),
            (true, false) | (false, true) => None,
            (false, false) => Some(t / b),
        }
    }
}

/// What the interval allows one to say.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Judgement {
    /// The whole interval is above the tie band.
    Higher,
    /// The whole interval is below the tie band.
    Lower,
    /// The whole interval is inside the tie band.
    NoDifference,
    /// The interval reaches across an edge of the tie band.
    NotEnoughData,
}

/// How a verdict's ratio and interval were computed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Statistic {
    /// The geometric mean of per-round ratios, bootstrapped over rounds.
    #[default]
    RoundRatioMean,
    /// The ratio of the pooled percentiles (every round's latency histogram merged per
    /// target), bootstrapped over rounds drawn in pairs.
    PooledPercentile,
}

/// The verdict on one figure of one target against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FigureVerdict {
    /// The figure, as its table row names it.
    pub metric: String,
    /// Rounds that gave a ratio.
    pub rounds: u32,
    /// How the ratio and its interval were computed (files before it: per-round ratios).
    #[serde(default)]
    pub statistic: Statistic,
    /// The estimated ratio (the geometric mean of the per-round ratios, or the ratio of the
    /// pooled percentiles, as `statistic` says); null without rounds.
    pub ratio: Option<f64>,
    /// The interval's lower bound.
    pub ci_low: Option<f64>,
    /// Its upper bound.
    pub ci_high: Option<f64>,
    /// The per-round ratios, in round order (each round's own figures, also with pooled
    /// percentiles: they show the rounds' spread).
    pub round_ratios: Vec<f64>,
    /// What can be said.
    pub judgement: Judgement,
    /// With not enough data: about how many rounds would tell (from the spread seen); absent
    /// when it cannot be estimated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rounds_needed: Option<u32>,
    /// The verdict in words: `slower by 98.0% (CI 94.1%..102.3%)`.
    pub text: String,
}

/// What a comparison's verdicts are judged by: the tie bands, and the looks the comparison
/// could take at its rounds with the boundary that widens each look's interval.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct VerdictRule {
    /// The tie band of req/s, p50, error share, CPU and memory.
    pub tie: f64,
    /// The tie band of p95 and p99.
    pub tail_tie: f64,
    /// Looks the comparison could take (1: fixed rounds).
    pub looks: u32,
    /// The most rounds it could run (the last look's).
    pub budget: u32,
    /// How each look's interval is widened.
    pub boundary: LookBoundary,
}

impl VerdictRule {
    /// The rule a comparison was run with, as its methodology keeps it.
    pub fn of(methodology: &Methodology) -> VerdictRule {
        VerdictRule {
            tie: methodology.tie,
            tail_tie: methodology.tail_tie.unwrap_or(methodology.tie),
            looks: methodology.looks,
            budget: methodology.max_rounds.unwrap_or(methodology.rounds),
            boundary: methodology.boundary,
        }
    }

    /// The share an interval from `rounds` rounds leaves out (both tails together): 5% for
    /// fixed rounds, less at each look of adaptive ones ([`LookBoundary::look_alpha`]).
    pub fn alpha(&self, rounds: u32) -> f64 {
        self.boundary.look_alpha(1.0 - CONFIDENCE, self.looks, rounds, self.budget)
    }
}

/// The tie band a figure is judged against, and whether it is the tail's.
#[derive(Debug, Clone, Copy, PartialEq)]
struct TieBand {
    /// Ratios within this share of 1 either way are no difference.
    share: f64,
    /// The band of p95 and p99, when it is not the tie band.
    tail: bool,
}

impl TieBand {
    /// `figure`'s band: `tail_tie` for p95 and p99, `tie` for the others.
    fn of(figure: Figure, tie: f64, tail_tie: f64) -> TieBand {
        let tail = matches!(figure, Figure::P95 | Figure::P99) && tail_tie != tie;
        TieBand { share: if tail { tail_tie } else { tie }, tail }
    }

    /// The band as a verdict names it: `±3% tie band`, `±10% tail tie band`.
    fn name(self) -> String {
        format!(
            "±{}% {}tie band",
            crate::util::units::trim_float(self.share * 100.0),
            if self.tail { "tail " } else { "" }
        )
    }
}

/// The mean of `values`.
fn mean(values: &[f64]) -> f64 {
    values.iter().sum::<f64>() / values.len() as f64
}

/// The sample standard deviation of `values` (0 for fewer than two).
fn std_dev(values: &[f64]) -> f64 {
    if values.len() < 2 {
        return 0.0;
    }
    let m = mean(values);
    (values.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (values.len() - 1) as f64).sqrt()
}

/// The standard normal distribution function (Abramowitz and Stegun 7.1.26, error < 1.5e-7).
fn normal_cdf(x: f64) -> f64 {
    let t = 1.0 / (1.0 + 0.327_591_1 * x.abs() / std::f64::consts::SQRT_2);
    let poly = t
        * (0.254_829_592
            + t * (-0.284_496_736 + t * (1.421_413_741 + t * (-1.453_152_027 + t * 1.061_405_429))));
    let erf = 1.0 - poly * (-(x * x) / 2.0).exp();
    if x >= 0.0 {
        (1.0 + erf) / 2.0
    } else {
        (1.0 - erf) / 2.0
    }
}

/// The share of Student's t distribution with `df` degrees of freedom within `-t..t`
/// (Abramowitz and Stegun 26.7.3 and 26.7.4: closed sums for whole degrees of freedom).
fn t_within(t: f64, df: usize) -> f64 {
    let theta = (t / (df as f64).sqrt()).atan();
    let (sin, cos) = theta.sin_cos();
    if df % 2 == 1 {
        // (2/pi) (theta + sin (cos + 2/3 cos^3 + (2*4)/(3*5) cos^5 + ... up to cos^(df-2)))
        let mut sum = 0.0;
        let (mut term, mut power) = (cos, 1);
        while df > 1 && power <= df - 2 {
            sum += term;
            term *= cos * cos * (power + 1) as f64 / (power + 2) as f64;
            power += 2;
        }
        2.0 / std::f64::consts::PI * (theta + sin * sum)
    } else {
        // sin (1 + 1/2 cos^2 + (1*3)/(2*4) cos^4 + ... up to cos^(df-2))
        let mut sum = 0.0;
        let (mut term, mut power) = (1.0, 0);
        while power <= df - 2 {
            sum += term;
            term *= cos * cos * (power + 1) as f64 / (power + 2) as f64;
            power += 2;
        }
        sin * sum
    }
}

/// Student's t quantile for a two-sided interval that leaves out `alpha` (0.05: 95%) with
/// `df` degrees of freedom, by bisection of [`t_within`]; beyond 400 degrees the normal
/// quantile's first correction.
fn t_quantile(alpha: f64, df: usize) -> f64 {
    if df == 0 {
        return f64::INFINITY;
    }
    let within = 1.0 - alpha;
    if df > 400 {
        let z = normal_quantile(1.0 - alpha / 2.0);
        return z + (z.powi(3) + z) / (4.0 * df as f64);
    }
    let (mut low, mut high) = (0.0f64, 1.0f64);
    while t_within(high, df) < within && high < 1e12 {
        high *= 2.0;
    }
    for _ in 0..200 {
        let middle = (low + high) / 2.0;
        if t_within(middle, df) < within {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

/// The standard normal quantile of `p`, by bisection of [`normal_cdf`].
fn normal_quantile(p: f64) -> f64 {
    let (mut low, mut high) = (-40.0f64, 40.0f64);
    for _ in 0..200 {
        let middle = (low + high) / 2.0;
        if normal_cdf(middle) < p {
            low = middle;
        } else {
            high = middle;
        }
    }
    (low + high) / 2.0
}

/// The lower tail share the expanded percentile bootstrap reads for `n` values at 95%:
/// `Phi(-sqrt(n / (n - 1)) * t(n - 1))` instead of 2.5%, which corrects the plain percentile
/// interval's narrowness with few values (Hesterberg, "What teachers should know about the
/// bootstrap", 2015). With 5 rounds it is about 0.1%; with many it tends to 2.5%.
pub fn expanded_tail(n: usize) -> f64 {
    expanded_tail_at(n, 1.0 - CONFIDENCE)
}

/// [`expanded_tail`] for an interval that leaves out `alpha` (both tails together): an
/// interval of a comparison that looked at its rounds `looks` times is read at
/// `alpha = 0.05 / looks` ([`look_alpha`]).
pub fn expanded_tail_at(n: usize, alpha: f64) -> f64 {
    if n < 2 {
        return 0.0;
    }
    let factor = (n as f64 / (n - 1) as f64).sqrt() * t_quantile(alpha, n - 1);
    normal_cdf(-factor)
}

/// The share left out of each look's interval when a comparison may stop at any of `looks`
/// looks at its rounds (Bonferroni): each interval at `1 - 0.05 / looks`, so that the chance
/// that the interval reported (whichever look it came from) misses the true ratio stays at
/// most 5%: the reported interval is a 95% interval even though the rounds were looked at
/// before the comparison stopped.
pub fn look_alpha(looks: u32) -> f64 {
    (1.0 - CONFIDENCE) / f64::from(looks.max(1))
}

/// The expanded percentile bootstrap interval (95%) of the mean of `values`: `resamples`
/// draws with replacement from a generator seeded with `seed`, and the [`expanded_tail`]
/// quantiles of their means at either end. `None` for no values.
pub fn bootstrap_mean_interval(values: &[f64], resamples: u32, seed: u64) -> Option<(f64, f64)> {
    bootstrap_mean_interval_at(values, resamples, seed, 1.0 - CONFIDENCE)
}

/// [`bootstrap_mean_interval`] leaving out `alpha` (both tails together) rather than 5%.
pub fn bootstrap_mean_interval_at(
    values: &[f64],
    resamples: u32,
    seed: u64,
    alpha: f64,
) -> Option<(f64, f64)> {
    if values.is_empty() {
        return None;
    }
    if values.len() == 1 || resamples == 0 {
        let m = mean(values);
        return Some((m, m));
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut means: Vec<f64> = (0..resamples)
        .map(|_| {
            let sum: f64 = (0..values.len()).map(|_| values[rng.gen_range(0..values.len())]).sum();
            sum / values.len() as f64
        })
        .collect();
    means.sort_by(f64::total_cmp);
    let at = |q: f64| {
        let index = (q * (means.len() - 1) as f64).round() as usize;
        means[index.min(means.len() - 1)]
    };
    let tail = expanded_tail_at(values.len(), alpha);
    Some((at(tail), at(1.0 - tail)))
}

/// About how many rounds would make an interval of the log-ratios (mean `mean`, spread
/// `spread` per round) clear of the tie band's edge `edge` (ln(1 + tie)): the normal
/// approximation `n = (z * spread / distance)^2`, where distance is how far the mean is from
/// the edge. `None` when the mean sits on the edge (no number of rounds decides it) or the
/// spread is unknown.
pub fn rounds_needed(mean: f64, spread: f64, edge: f64, rounds_so_far: u32) -> Option<u32> {
    let distance = (edge - mean.abs()).abs();
    if !(spread.is_finite() && spread > 0.0) || distance < 1e-9 {
        return None;
    }
    let needed = (Z_95 * spread / distance).powi(2).ceil();
    let needed = if needed >= f64::from(MAX_ROUNDS_NEEDED) { MAX_ROUNDS_NEEDED } else { needed as u32 };
    Some(needed.max(rounds_so_far + 1))
}

/// A change as a signed percentage: `+2.0%`, `-1.5%`.
fn signed_percent(ratio: f64) -> String {
    format!("{:+.1}%", (ratio - 1.0) * 100.0)
}

/// Judges a figure from its per-round ratios (each round's target against the baseline's).
pub fn judge(figure: Figure, ratios: &[f64], tie: f64, seed: u64) -> FigureVerdict {
    judge_at(figure, ratios, tie, seed, 1)
}

/// [`judge`] for a comparison that may have stopped at any of `looks` looks at its rounds:
/// the interval at `1 - 0.05 / looks` ([`look_alpha`]).
pub fn judge_at(figure: Figure, ratios: &[f64], tie: f64, seed: u64, looks: u32) -> FigureVerdict {
    judge_in_band(figure, ratios, TieBand::of(figure, tie, tie), seed, look_alpha(looks))
}

/// [`judge`] by `rule`: the figure's tie band, the interval at the confidence of the look its
/// rounds are.
#[cfg(test)]
pub(crate) fn judge_for_rule(figure: Figure, ratios: &[f64], rule: &VerdictRule) -> FigureVerdict {
    let band = TieBand::of(figure, rule.tie, rule.tail_tie);
    judge_in_band(figure, ratios, band, BOOTSTRAP_SEED, rule.alpha(ratios.len() as u32))
}

/// [`judge`] against `band`, the interval leaving out `alpha` (both tails together).
fn judge_in_band(figure: Figure, ratios: &[f64], band: TieBand, seed: u64, alpha: f64) -> FigureVerdict {
    let ratios: Vec<f64> = ratios.iter().copied().filter(|r| r.is_finite() && *r > 0.0).collect();
    let mut verdict = FigureVerdict {
        metric: figure.name().to_string(),
        rounds: ratios.len() as u32,
        statistic: Statistic::RoundRatioMean,
        ratio: None,
        ci_low: None,
        ci_high: None,
        round_ratios: ratios.clone(),
        judgement: Judgement::NotEnoughData,
        rounds_needed: None,
        text: String::new(),
    };
    if ratios.len() < 2 {
        verdict.text = format!(
            "not enough data ({} round: the spread needs {} or more; --rounds {DEFAULT_ROUNDS})",
            ratios.len(),
            2
        );
        if let Some(only) = ratios.first() {
            verdict.ratio = Some(*only);
        }
        return verdict;
    }
    let logs: Vec<f64> = ratios.iter().map(|r| r.ln()).collect();
    let m = mean(&logs);
    let interval = bootstrap_mean_interval_at(&logs, RESAMPLES, seed, alpha).unwrap_or((m, m));
    settle(&mut verdict, figure, m, interval, std_dev(&logs), band);
    verdict
}

/// Fills in a verdict from its estimate and interval (natural logarithms of ratios) and the
/// spread of one round's log-ratio (for the rounds that would tell): the ratio, the bounds,
/// the judgement against the tie band and the text.
fn settle(
    verdict: &mut FigureVerdict,
    figure: Figure,
    m: f64,
    (low, high): (f64, f64),
    spread: f64,
    band: TieBand,
) {
    let tie = band.share;
    let edge = (1.0 + tie).ln();
    let (ratio, ci_low, ci_high) = (m.exp(), low.exp(), high.exp());
    verdict.ratio = Some(ratio);
    verdict.ci_low = Some(ci_low);
    verdict.ci_high = Some(ci_high);
    let (up, down) = figure.words();
    verdict.judgement = if low >= -edge && high <= edge {
        Judgement::NoDifference
    } else if low > edge {
        Judgement::Higher
    } else if high < -edge {
        Judgement::Lower
    } else {
        Judgement::NotEnoughData
    };
    verdict.text = match verdict.judgement {
        Judgement::Higher => format!(
            "{up} by {:.1}% (CI {:.1}%..{:.1}%)",
            (ratio - 1.0) * 100.0,
            (ci_low - 1.0) * 100.0,
            (ci_high - 1.0) * 100.0
        ),
        Judgement::Lower => format!(
            "{down} by {:.1}% (CI {:.1}%..{:.1}%)",
            (1.0 - ratio) * 100.0,
            (1.0 - ci_high) * 100.0,
            (1.0 - ci_low) * 100.0
        ),
        Judgement::NoDifference => format!(
            "no difference (CI {}..{}, inside the {})",
            signed_percent(ci_low),
            signed_percent(ci_high),
            band.name()
        ),
        Judgement::NotEnoughData => {
            verdict.rounds_needed = rounds_needed(m, spread, edge, verdict.rounds);
            let more = match verdict.rounds_needed {
                Some(MAX_ROUNDS_NEEDED) => format!("more than {MAX_ROUNDS_NEEDED} rounds would be needed"),
                Some(n) => format!("about {n} rounds would tell"),
                None => "the estimate sits on the tie band's edge".into(),
            };
            format!(
                "not enough data (CI {}..{} reaches across the {}; {more})",
                signed_percent(ci_low),
                signed_percent(ci_high),
                band.name()
            )
        }
    };
}

/// The pooled-percentile interval of `quantile`: the log of the target's pooled percentile
/// over the baseline's, for the rounds as run (the estimate) and over [`RESAMPLES`] resamples
/// of the round pairs drawn with replacement from `seed` (round i of both drawn together),
/// whose [`expanded_tail_at`] percentiles are the bounds, widened if need be to hold the
/// estimate. Returns the estimate, the bounds, and the resampled spread scaled to one round
/// (for the rounds that would tell); `None` when the rounds hold no sample.
fn pooled_interval(
    baseline: &crate::pooled::PooledRounds,
    target: &crate::pooled::PooledRounds,
    quantile: f64,
    seed: u64,
    alpha: f64,
) -> Option<(f64, (f64, f64), f64)> {
    let n = baseline.len().min(target.len());
    let log_ratio = |weights: &[u32]| -> Option<f64> {
        let (b, t) = (baseline.quantile(weights, quantile)?, target.quantile(weights, quantile)?);
        (b > 0 && t > 0).then(|| (t as f64).ln() - (b as f64).ln())
    };
    let estimate = log_ratio(&vec![1; n])?;
    if n < 2 {
        return Some((estimate, (estimate, estimate), 0.0));
    }
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut weights = vec![0u32; n];
    let mut resampled: Vec<f64> = Vec::with_capacity(RESAMPLES as usize);
    for _ in 0..RESAMPLES {
        weights.iter_mut().for_each(|w| *w = 0);
        (0..n).for_each(|_| weights[rng.gen_range(0..n)] += 1);
        resampled.extend(log_ratio(&weights));
    }
    if resampled.is_empty() {
        return Some((estimate, (estimate, estimate), 0.0));
    }
    let spread = std_dev(&resampled) * (n as f64).sqrt();
    resampled.sort_by(f64::total_cmp);
    let at =
        |q: f64| resampled[((q * (resampled.len() - 1) as f64).round() as usize).min(resampled.len() - 1)];
    let tail = expanded_tail_at(n, alpha);
    Some((estimate, (at(tail).min(estimate), at(1.0 - tail).max(estimate)), spread))
}

/// [`judge_at`] of a latency percentile from the rounds' histograms: the ratio of pooled
/// percentiles ([`pooled_interval`]); `ratios` are the per-round ratios, kept to show the
/// rounds' spread. `None` when the rounds hold no sample.
fn judge_pooled(
    figure: Figure,
    quantile: f64,
    (baseline, target): (&crate::pooled::PooledRounds, &crate::pooled::PooledRounds),
    ratios: &[f64],
    band: TieBand,
    alpha: f64,
) -> Option<FigureVerdict> {
    let (m, interval, spread) = pooled_interval(baseline, target, quantile, BOOTSTRAP_SEED, alpha)?;
    let rounds = baseline.len().min(target.len()) as u32;
    let mut verdict = FigureVerdict {
        metric: figure.name().to_string(),
        rounds,
        statistic: Statistic::PooledPercentile,
        ratio: None,
        ci_low: None,
        ci_high: None,
        round_ratios: ratios.iter().copied().filter(|r| r.is_finite() && *r > 0.0).collect(),
        judgement: Judgement::NotEnoughData,
        rounds_needed: None,
        text: String::new(),
    };
    if rounds < 2 {
        verdict.ratio = Some(m.exp());
        verdict.text = format!(
            "not enough data ({rounds} round: the spread needs 2 or more; --rounds {DEFAULT_ROUNDS})"
        );
        return Some(verdict);
    }
    settle(&mut verdict, figure, m, interval, spread, band);
    Some(verdict)
}

/// Each target's rounds as pooled latencies, when every paired round keeps a histogram that
/// decodes; `None` otherwise (the percentiles are then judged per round).
fn pooled_pairs(
    pairs: &[(&RoundFigures, &RoundFigures)],
) -> Option<(crate::pooled::PooledRounds, crate::pooled::PooledRounds)> {
    let decode = |round: &RoundFigures| crate::pooled::RoundLatency::from_text(round.latency.as_deref()?);
    let mut baseline = Vec::with_capacity(pairs.len());
    let mut target = Vec::with_capacity(pairs.len());
    for (b, t) in pairs {
        baseline.push(decode(b)?);
        target.push(decode(t)?);
    }
    Some((crate::pooled::PooledRounds::new(baseline), crate::pooled::PooledRounds::new(target)))
}

/// The verdicts on every figure measured in both: `target`'s rounds against `baseline`'s of
/// the same number. Figures not measured in every paired round (a target not monitored) are
/// left out.
pub fn verdicts(baseline: &[RoundFigures], target: &[RoundFigures], tie: f64) -> Vec<FigureVerdict> {
    verdicts_at(baseline, target, tie, 1)
}

/// [`verdicts`] of a comparison that may have stopped at any of `looks` looks at its rounds
/// (each interval at `1 - 0.05 / looks`, [`look_alpha`]: Bonferroni, one tie band for every
/// figure, as comparisons were judged before [`verdicts_by`]).
pub fn verdicts_at(
    baseline: &[RoundFigures],
    target: &[RoundFigures],
    tie: f64,
    looks: u32,
) -> Vec<FigureVerdict> {
    let rule = VerdictRule { tie, tail_tie: tie, looks, budget: looks, boundary: LookBoundary::Bonferroni };
    verdicts_by(baseline, target, &rule)
}

/// The verdicts on every figure measured in both, judged by `rule`: each figure against its
/// own tie band, every interval at the confidence of the look the rounds gathered so far are
/// ([`VerdictRule::alpha`]).
pub fn verdicts_by(
    baseline: &[RoundFigures],
    target: &[RoundFigures],
    rule: &VerdictRule,
) -> Vec<FigureVerdict> {
    let pairs: Vec<(&RoundFigures, &RoundFigures)> =
        baseline.iter().filter_map(|b| target.iter().find(|t| t.round == b.round).map(|t| (b, t))).collect();
    let pooled = if pairs.is_empty() { None } else { pooled_pairs(&pairs) };
    let alpha = rule.alpha(pairs.len() as u32);
    Figure::ALL
        .iter()
        .filter_map(|figure| {
            let measured = |r: &RoundFigures| figure.value(r).is_some();
            if pairs.is_empty() || !pairs.iter().all(|(b, t)| measured(b) && measured(t)) {
                return None;
            }
            let ratios: Vec<f64> = pairs.iter().filter_map(|(b, t)| figure.round_ratio(b, t)).collect();
            let band = TieBand::of(*figure, rule.tie, rule.tail_tie);
            let by_pooling = figure
                .quantile()
                .zip(pooled.as_ref())
                .and_then(|(quantile, (b, t))| judge_pooled(*figure, quantile, (b, t), &ratios, band, alpha));
            Some(by_pooling.unwrap_or_else(|| judge_in_band(*figure, &ratios, band, BOOTSTRAP_SEED, alpha)))
        })
        .collect()
}

/// The methodology in lines of text, as printed under the table.
pub fn methodology_lines(methodology: &Methodology) -> Vec<String> {
    let mut lines = Vec::new();
    let orders: Vec<String> = methodology.orders.iter().map(|order| order.join(" ")).collect();
    let order = match methodology.order {
        RoundOrder::Simultaneous => {
            "all targets at once on their own worker threads (they share the generator's CPU)".to_string()
        }
        other => format!("{} ({})", other.as_str(), shorten_orders(&orders)),
    };
    lines.push(format!(
        "{} round(s) of {} per target, order {order}",
        methodology.rounds, methodology.round_length
    ));
    if let (Some(most), Some(every)) = (methodology.max_rounds, methodology.look_every) {
        lines.push(format!(
            "adaptive: the verdicts looked at after every {every} rounds, up to {most}; {}",
            if methodology.rounds < most {
                format!("stopped after {}: no verdict was left at not enough data", methodology.rounds)
            } else {
                "the round budget was spent".to_string()
            }
        ));
    }
    let warmup = match methodology.later_warmup_ms {
        Some(later) => format!(
            "warm-up {} ms before each target's first round, {later} ms before its later ones",
            methodology.warmup_ms
        ),
        None => format!("warm-up {} ms before each round", methodology.warmup_ms),
    };
    lines.push(format!(
        "{warmup}, cool-down {} ms between runs; request seed {}{}",
        methodology.cooldown_ms,
        methodology.seed,
        if methodology.varied_params {
            ", params varied per round and target (--vary-params)"
        } else {
            ", the same params for every target"
        }
    ));
    lines.push(format!(
        "{}% CI: {} (seed {:#x}); {}",
        crate::util::units::trim_float(methodology.confidence * 100.0),
        methodology.ci_method,
        methodology.bootstrap_seed,
        tie_bands_text(methodology)
    ));
    let rule = VerdictRule::of(methodology);
    if methodology.looks > 1 {
        let percent = |alpha: f64| format!("{:.2}%", (1.0 - alpha) * 100.0).replace(".00%", "%");
        let at = match (methodology.boundary, methodology.look_every) {
            (LookBoundary::ObrienFleming, Some(every)) => {
                let each: Vec<String> =
                    (1..=methodology.looks).map(|look| percent(rule.alpha(look * every))).collect();
                format!(
                    "each look's interval at {} after {every}, {}, ... rounds; these after {}: {}",
                    each.join(", "),
                    2 * every,
                    methodology.rounds,
                    percent(rule.alpha(methodology.rounds))
                )
            }
            _ => format!("each look's interval at {}", percent(rule.alpha(methodology.rounds))),
        };
        lines.push(format!(
            "  {at} ({} looks, {}), so the one reported, whichever look stopped the comparison, is a 95% interval",
            methodology.looks,
            methodology.boundary.name()
        ));
    }
    match methodology.cacheable {
        Some(true) => lines.push(
            "answers were cacheable: request bodies repeated (apart from the id); a response cache could favour a target"
                .into(),
        ),
        Some(false) => lines.push("answers were not cacheable: no request body repeated (apart from the id)".into()),
        None => {}
    }
    lines
}

/// The tie bands as the methodology and the verdicts' heading name them: `tie band ±3%`, and
/// the tail's when it differs (`tie band ±3%, p95 and p99 ±10%`).
pub fn tie_bands_text(methodology: &Methodology) -> String {
    let percent = |share: f64| crate::util::units::trim_float(share * 100.0);
    match methodology.tail_tie.filter(|tail| *tail != methodology.tie) {
        Some(tail) => format!("tie band ±{}%, p95 and p99 ±{}%", percent(methodology.tie), percent(tail)),
        None => format!("tie band ±{}%", percent(methodology.tie)),
    }
}

/// The tie band a verdict on `metric` (a figure's name, `p99`) was judged against.
pub fn metric_tie(methodology: &Methodology, metric: &str) -> f64 {
    match Figure::ALL.iter().find(|figure| figure.name() == metric) {
        Some(figure) => {
            TieBand::of(*figure, methodology.tie, methodology.tail_tie.unwrap_or(methodology.tie)).share
        }
        None => methodology.tie,
    }
}

/// Round orders as `A B | B A | ...`, the first four.
fn shorten_orders(orders: &[String]) -> String {
    let mut shown: Vec<&str> = orders.iter().take(4).map(String::as_str).collect();
    if orders.len() > 4 {
        shown.push("...");
    }
    shown.join(" | ")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn round(round: u32, rate: f64, p50_us: u64, errors: u64) -> RoundFigures {
        RoundFigures {
            round,
            position: 1,
            elapsed_us: 1_000_000,
            requests: 1000,
            errors,
            rate,
            p50_us,
            p95_us: p50_us * 2,
            p99_us: p50_us * 3,
            cpu_percent: None,
            rss_bytes: None,
            latency: None,
        }
    }

    #[test]
    fn verdicts_follow_the_interval_and_the_tie_band() {
        // (figure, per-round ratios, tie, expected judgement, text starts with)
        let table: [(Figure, Vec<f64>, f64, Judgement, &str); 8] = [
            (Figure::P50, vec![1.0; 5], 0.03, Judgement::NoDifference, "no difference"),
            (Figure::Rate, vec![1.01, 0.99, 1.0, 1.02, 0.98], 0.03, Judgement::NoDifference, "no difference"),
            (Figure::P50, vec![2.0, 1.98, 2.02, 2.01, 1.99], 0.03, Judgement::Higher, "slower by 100.0%"),
            (Figure::Rate, vec![0.5, 0.51, 0.49, 0.5, 0.5], 0.03, Judgement::Lower, "slower by 50.0%"),
            (Figure::Rate, vec![1.2, 1.21, 1.19, 1.2, 1.2], 0.03, Judgement::Higher, "faster by 20.0%"),
            (Figure::P99, vec![0.8, 0.8, 0.8], 0.03, Judgement::Lower, "faster by 20.0%"),
            (Figure::Rate, vec![0.8, 1.25, 0.9, 1.1, 1.0], 0.03, Judgement::NotEnoughData, "not enough data"),
            // A wider band takes the same spread as no difference.
            (
                Figure::Rate,
                vec![1.01, 0.99, 1.0, 1.02, 0.98],
                0.01,
                Judgement::NotEnoughData,
                "not enough data",
            ),
        ];
        for (figure, ratios, tie, judgement, start) in table {
            let verdict = judge(figure, &ratios, tie, BOOTSTRAP_SEED);
            assert_eq!(verdict.judgement, judgement, "{figure:?} {ratios:?}: {}", verdict.text);
            assert!(verdict.text.starts_with(start), "{figure:?} {ratios:?}: {}", verdict.text);
            let (low, high) = (verdict.ci_low.unwrap(), verdict.ci_high.unwrap());
            assert!(low <= verdict.ratio.unwrap() && verdict.ratio.unwrap() <= high, "{verdict:?}");
        }
    }

    #[test]
    fn the_interval_contains_the_true_ratio_of_steady_rounds() {
        let verdict = judge(Figure::P50, &[2.0, 1.98, 2.02, 2.01, 1.99], 0.03, BOOTSTRAP_SEED);
        assert!(verdict.ci_low.unwrap() <= 2.0 && 2.0 <= verdict.ci_high.unwrap(), "{verdict:?}");
        // The interval is no wider than the rounds' own range.
        assert!(verdict.ci_low.unwrap() >= 1.98 && verdict.ci_high.unwrap() <= 2.02, "{verdict:?}");
    }

    #[test]
    fn the_bootstrap_is_the_same_for_the_same_rounds() {
        let values = [0.1, -0.2, 0.05, 0.3, -0.1, 0.0];
        let a = bootstrap_mean_interval(&values, RESAMPLES, 1).unwrap();
        let b = bootstrap_mean_interval(&values, RESAMPLES, 1).unwrap();
        assert_eq!(a, b);
        assert!(a.0 < mean(&values) && mean(&values) < a.1);
        // Within the values' range.
        assert!(a.0 >= -0.2 && a.1 <= 0.3);
        assert_eq!(bootstrap_mean_interval(&[], RESAMPLES, 1), None);
        assert_eq!(bootstrap_mean_interval(&[0.5], RESAMPLES, 1), Some((0.5, 0.5)));
    }

    #[test]
    fn few_rounds_widen_the_interval_as_students_t_does() {
        // Phi(-sqrt(5/4) * 2.776) = Phi(-3.104) = 0.00095.
        assert!((expanded_tail(5) - 0.00095).abs() < 0.00005, "{}", expanded_tail(5));
        // Many rounds: close to the plain 2.5%.
        assert!((expanded_tail(1000) - 0.025).abs() < 0.001, "{}", expanded_tail(1000));
        assert!(expanded_tail(3) < expanded_tail(10) && expanded_tail(10) < expanded_tail(30));
        assert!((normal_cdf(0.0) - 0.5).abs() < 1e-7 && (normal_cdf(1.959_964) - 0.975).abs() < 1e-6);
        // Two identical nodes, on a busy machine: 5 rounds this far apart are no verdict
        // either way (the plain percentile interval called this "faster by 26%").
        let noisy = judge(Figure::P50, &[0.55, 0.51, 1.0, 0.75, 1.04], 0.03, BOOTSTRAP_SEED);
        assert_eq!(noisy.judgement, Judgement::NotEnoughData, "{}", noisy.text);
    }

    #[test]
    fn students_t_quantiles_match_the_table_at_any_confidence() {
        // (alpha, degrees of freedom, the table's quantile)
        for (alpha, df, table) in [
            (0.05, 1, 12.706),
            (0.05, 2, 4.303),
            (0.05, 4, 2.776),
            (0.05, 9, 2.262),
            (0.05, 30, 2.042),
            (0.01, 4, 4.604),
            (0.01, 10, 3.169),
            (0.0125, 19, 2.759),
        ] {
            let t = t_quantile(alpha, df);
            assert!((t - table).abs() < 0.002, "t({alpha}, {df}) = {t}, not {table}");
        }
        assert!((t_quantile(0.05, 1000) - 1.962).abs() < 0.002);
        assert!((normal_quantile(0.975) - Z_95).abs() < 1e-5);
    }

    #[test]
    fn a_comparison_that_may_stop_at_any_of_four_looks_reads_each_interval_at_98_75_percent() {
        assert!((look_alpha(4) - 0.0125).abs() < 1e-12);
        assert_eq!(look_alpha(1), look_alpha(0));
        let ratios = [1.01, 0.97, 1.04, 0.99, 1.02, 0.98, 1.03, 1.0, 0.96, 1.01];
        let once = judge_at(Figure::Rate, &ratios, 0.03, BOOTSTRAP_SEED, 1);
        let four = judge_at(Figure::Rate, &ratios, 0.03, BOOTSTRAP_SEED, 4);
        assert_eq!(once.ratio, four.ratio);
        assert!(four.ci_low.unwrap() < once.ci_low.unwrap() && four.ci_high.unwrap() > once.ci_high.unwrap());
        assert!(expanded_tail_at(10, look_alpha(4)) < expanded_tail(10));
        // Kept in the methodology, old files without it are one look.
        let text = r#"{"rounds":5,"order":"rotated","orders":[],"warmup_ms":0,"cooldown_ms":0,"round_length":"1s","tie":0.03,"ci_method":"","confidence":0.95,"bootstrap_seed":1,"seed":1,"varied_params":false}"#;
        let old: Methodology = serde_json::from_str(text).unwrap();
        assert_eq!((old.looks, old.max_rounds, old.later_warmup_ms), (1, None, None));
        let lines = methodology_lines(&Methodology {
            rounds: 10,
            max_rounds: Some(20),
            look_every: Some(5),
            looks: 4,
            later_warmup_ms: Some(200),
            warmup_ms: 2000,
            ..old
        });
        let text = lines.join("\n");
        assert!(text.contains("up to 20; stopped after 10"), "{text}");
        assert!(text.contains("98.75% (4 looks, Bonferroni)"), "{text}");
        assert!(
            text.contains("2000 ms before each target's first round, 200 ms before its later ones"),
            "{text}"
        );
    }

    #[test]
    fn not_enough_data_says_how_many_rounds_would_tell() {
        let edge = 1.03f64.ln();
        // Mean 0, spread 0.1 a round: (1.96 * 0.1 / 0.0296)^2 = 43.9.
        assert_eq!(rounds_needed(0.0, 0.1, edge, 5), Some(44));
        // A mean beyond the band: the distance to the edge decides.
        assert_eq!(rounds_needed(0.1, 0.1, edge, 5), Some(8));
        // Never fewer than one more than run so far.
        assert_eq!(rounds_needed(0.0, 0.001, edge, 5), Some(6));
        // On the edge, or without a spread: cannot be told.
        assert_eq!(rounds_needed(edge, 0.1, edge, 5), None);
        assert_eq!(rounds_needed(0.0, 0.0, edge, 5), None);
        assert_eq!(rounds_needed(0.0, 100.0, edge, 5), Some(MAX_ROUNDS_NEEDED));
        let verdict = judge(Figure::Rate, &[0.8, 1.25, 0.9, 1.1, 1.0], 0.03, BOOTSTRAP_SEED);
        assert!(verdict.rounds_needed.unwrap() > 5, "{verdict:?}");
        assert!(verdict.text.contains("rounds would tell"), "{}", verdict.text);
        // One round has no spread at all.
        let one = judge(Figure::Rate, &[1.0], 0.03, BOOTSTRAP_SEED);
        assert_eq!(one.judgement, Judgement::NotEnoughData);
        assert_eq!(one.rounds_needed, None);
    }

    #[test]
    fn rounds_pair_by_number_and_zeros_compare_equal() {
        let baseline: Vec<RoundFigures> = (1..=5).map(|r| round(r, 1000.0, 1000, 0)).collect();
        // Listed in another order: paired by round number, not place.
        let target: Vec<RoundFigures> = (1..=5).rev().map(|r| round(r, 500.0, 2000, 0)).collect();
        let verdicts = verdicts(&baseline, &target, DEFAULT_TIE);
        let names: Vec<&str> = verdicts.iter().map(|v| v.metric.as_str()).collect();
        // Not monitored: no CPU or memory verdicts.
        assert_eq!(names, ["req/s", "p50", "p95", "p99", "error share"]);
        assert_eq!(verdicts[0].judgement, Judgement::Lower);
        assert_eq!(verdicts[1].judgement, Judgement::Higher);
        assert_eq!(verdicts[1].ratio, Some(2.0));
        // No errors on either side: no difference.
        assert_eq!(verdicts[4].judgement, Judgement::NoDifference, "{}", verdicts[4].text);
        // Errors on one side only: a large finite ratio (one error added to each).
        let failing: Vec<RoundFigures> = (1..=5).map(|r| round(r, 1000.0, 1000, 99)).collect();
        let errors = &super::verdicts(&baseline, &failing, DEFAULT_TIE)[4];
        assert_eq!(errors.judgement, Judgement::Higher);
        assert!(errors.text.starts_with("more errors by"), "{}", errors.text);
        assert!((errors.ratio.unwrap() - 100.0).abs() < 1e-9, "{errors:?}");
    }

    /// Rounds of `samples` latencies each, 500 us plus an exponential of mean 300 us drawn from
    /// `seed`; in round `hiccup` (if any) every latency from the round's own p99 up doubled, as
    /// a scheduler hiccup stretches a round's tail. Each round keeps its histogram.
    fn synthetic_rounds(seed: u64, rounds: u32, samples: u32, hiccup: Option<u32>) -> Vec<RoundFigures> {
        let draw = |rng: &mut SmallRng| 500 + (-300.0 * (1.0 - rng.gen::<f64>()).ln()) as u64;
        (1..=rounds)
            .map(|r| {
                let round_seed = seed ^ u64::from(r).wrapping_mul(0x9E37_79B9_7F4A_7C15);
                let mut plain = crate::record::new_histogram();
                let mut rng = SmallRng::seed_from_u64(round_seed);
                (0..samples).for_each(|_| plain.record(draw(&mut rng)).unwrap());
                let mut latency = plain.clone();
                if hiccup == Some(r) {
                    let p99 = plain.value_at_quantile(0.99);
                    latency.reset();
                    let mut rng = SmallRng::seed_from_u64(round_seed);
                    for _ in 0..samples {
                        let us = draw(&mut rng);
                        latency.record(if us >= p99 { 2 * us } else { us }).unwrap();
                    }
                }
                RoundFigures {
                    p50_us: latency.value_at_quantile(0.5),
                    p95_us: latency.value_at_quantile(0.95),
                    p99_us: latency.value_at_quantile(0.99),
                    requests: u64::from(samples),
                    latency: Some(crate::pooled::round_histogram_text(&latency)),
                    ..round(r, 1000.0, 0, 0)
                }
            })
            .collect()
    }

    #[test]
    fn one_rounds_doubled_p99_leaves_identical_targets_inside_the_tie_band_when_pooled() {
        // Two identical targets, 20 rounds of 20,000 requests, the baseline's round 7 with its
        // p99 doubled; read as after four looks (the adaptive default's 98.75% intervals).
        let baseline = synthetic_rounds(1, 20, 20_000, Some(7));
        let target = synthetic_rounds(2, 20, 20_000, None);
        assert!(baseline[6].p99_us >= 2 * target[6].p99_us * 9 / 10, "{:?} {:?}", baseline[6], target[6]);
        let pooled = verdicts_at(&baseline, &target, DEFAULT_TIE, 4);
        let p99 = pooled.iter().find(|v| v.metric == "p99").unwrap();
        assert_eq!(p99.statistic, Statistic::PooledPercentile);
        assert_eq!(p99.judgement, Judgement::NoDifference, "{}", p99.text);
        // The per-round ratios are still kept, the hiccup among them.
        assert_eq!(p99.round_ratios.len(), 20);
        assert!(p99.round_ratios.iter().any(|r| *r < 0.6), "{:?}", p99.round_ratios);
        for name in ["p50", "p95"] {
            let verdict = pooled.iter().find(|v| v.metric == name).unwrap();
            assert_eq!(verdict.judgement, Judgement::NoDifference, "{name}: {}", verdict.text);
        }
        // The same rounds without their histograms: the mean of per-round ratios, which the
        // one round moves by its whole log-ratio over 20, leaves the band.
        let strip = |rounds: &[RoundFigures]| -> Vec<RoundFigures> {
            rounds.iter().map(|r| RoundFigures { latency: None, ..r.clone() }).collect()
        };
        let per_round = verdicts_at(&strip(&baseline), &strip(&target), DEFAULT_TIE, 4);
        let old = per_round.iter().find(|v| v.metric == "p99").unwrap();
        assert_eq!(old.statistic, Statistic::RoundRatioMean);
        assert_ne!(old.judgement, Judgement::NoDifference, "{}", old.text);
        // Pooled, the estimate is the ratio of the merged histograms' p99 (the table's figure).
        let merged = |rounds: &[RoundFigures]| {
            let mut all = crate::record::new_coarse_histogram();
            for round in rounds {
                all.add(crate::util::hdr_codec::decode_histogram(round.latency.as_deref().unwrap()).unwrap())
                    .unwrap();
            }
            all.value_at_quantile(0.99) as f64
        };
        let expected = merged(&target) / merged(&baseline);
        assert!((p99.ratio.unwrap() - expected).abs() < 1e-9, "{p99:?} against {expected}");
    }

    #[test]
    fn a_pooled_percentile_finds_a_real_difference_and_holds_the_true_ratio() {
        // The target's every latency doubled: slower by 100%, the interval around 2x.
        let baseline = synthetic_rounds(3, 5, 5_000, None);
        let target: Vec<RoundFigures> = synthetic_rounds(3, 5, 5_000, None)
            .into_iter()
            .map(|round| {
                let histogram =
                    crate::util::hdr_codec::decode_histogram(round.latency.as_deref().unwrap()).unwrap();
                let mut doubled = crate::record::new_histogram();
                for bucket in histogram.iter_recorded() {
                    doubled.record_n(2 * bucket.value_iterated_to(), bucket.count_at_value()).unwrap();
                }
                RoundFigures { latency: Some(crate::pooled::round_histogram_text(&doubled)), ..round }
            })
            .collect();
        for verdict in verdicts(&baseline, &target, DEFAULT_TIE).iter().filter(|v| v.metric.starts_with('p'))
        {
            assert_eq!(verdict.judgement, Judgement::Higher, "{}", verdict.text);
            let (low, high) = (verdict.ci_low.unwrap(), verdict.ci_high.unwrap());
            assert!(low <= 2.0 * 1.02 && 2.0 * 0.98 <= high, "{verdict:?}");
        }
    }

    #[test]
    fn monitored_rounds_get_cpu_and_memory_verdicts() {
        let monitored = |r: u32, cpu: f64| RoundFigures {
            cpu_percent: Some(cpu),
            rss_bytes: Some(1 << 20),
            ..round(r, 1.0, 1, 0)
        };
        let baseline: Vec<RoundFigures> = (1..=4).map(|r| monitored(r, 50.0)).collect();
        let target: Vec<RoundFigures> = (1..=4).map(|r| monitored(r, 100.0)).collect();
        let verdicts = verdicts(&baseline, &target, DEFAULT_TIE);
        let cpu = verdicts.iter().find(|v| v.metric == "target CPU avg").unwrap();
        assert!(cpu.text.starts_with("uses more by 100.0%"), "{}", cpu.text);
        let rss = verdicts.iter().find(|v| v.metric == "target RSS peak").unwrap();
        assert_eq!(rss.judgement, Judgement::NoDifference);
    }
}
