//! Tests of the verdicts' defaults against what they are for: two identical nodes measured on
//! a quiet 2-core machine (the rounds recorded in `testdata/quiet-identical-nodes-rounds.json`)
//! come out "no difference" on every figure, a shifted tail in the same rounds does not, and
//! the intervals of an adaptive comparison stay 95% intervals whichever look stops it (a
//! seeded simulation of identical targets).

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::sequential::LookBoundary;
use crate::verdict::{
    judge_for_rule, verdicts_by, Figure, FigureVerdict, Judgement, RoundFigures, VerdictRule,
    DEFAULT_TAIL_TIE, DEFAULT_TIE,
};

/// The recorded rounds: the baseline's and the target's.
fn quiet_rounds() -> (Vec<RoundFigures>, Vec<RoundFigures>) {
    #[derive(serde::Deserialize)]
    struct Recorded {
        baseline: Vec<RoundFigures>,
        target: Vec<RoundFigures>,
    }
    let recorded: Recorded =
        serde_json::from_str(include_str!("../testdata/quiet-identical-nodes-rounds.json")).unwrap();
    (recorded.baseline, recorded.target)
}

/// The defaults of an adaptive comparison: 5 rounds a look, up to 20.
fn default_rule() -> VerdictRule {
    VerdictRule {
        tie: DEFAULT_TIE,
        tail_tie: DEFAULT_TAIL_TIE,
        looks: 4,
        budget: 20,
        boundary: LookBoundary::ObrienFleming,
    }
}

fn find<'a>(verdicts: &'a [FigureVerdict], metric: &str) -> &'a FigureVerdict {
    verdicts.iter().find(|v| v.metric == metric).unwrap()
}

#[test]
fn identical_nodes_on_a_quiet_machine_are_no_difference_on_every_figure_at_the_defaults() {
    let (baseline, target) = quiet_rounds();
    assert_eq!((baseline.len(), target.len()), (20, 20));
    let verdicts = verdicts_by(&baseline, &target, &default_rule());
    let names: Vec<&str> = verdicts.iter().map(|v| v.metric.as_str()).collect();
    assert_eq!(names, ["req/s", "p50", "p95", "p99", "error share"]);
    for verdict in &verdicts {
        assert_eq!(verdict.judgement, Judgement::NoDifference, "{}: {}", verdict.metric, verdict.text);
    }
    // The text says which band applied.
    assert!(find(&verdicts, "p99").text.contains("tail tie band"), "{}", find(&verdicts, "p99").text);
    assert!(!find(&verdicts, "p50").text.contains("tail"), "{}", find(&verdicts, "p50").text);
    // The same rounds read as before (Bonferroni, one 3% band): the tails undecided.
    let before = VerdictRule { tail_tie: DEFAULT_TIE, boundary: LookBoundary::Bonferroni, ..default_rule() };
    let old = verdicts_by(&baseline, &target, &before);
    assert_eq!(find(&old, "p99").judgement, Judgement::NotEnoughData, "{}", find(&old, "p99").text);
}

/// `rounds` with every latency at or above the round's own p95 multiplied by `factor`, so
/// that its p95 and p99 move by that factor and its median stays.
fn tail_shifted(rounds: &[RoundFigures], factor: f64) -> Vec<RoundFigures> {
    rounds
        .iter()
        .map(|round| {
            let histogram =
                crate::util::hdr_codec::decode_histogram(round.latency.as_deref().unwrap()).unwrap();
            let p95 = histogram.value_at_quantile(0.95);
            let mut shifted = crate::record::new_histogram();
            for bucket in histogram.iter_recorded() {
                let value = bucket.value_iterated_to();
                let value = if value >= p95 { (value as f64 * factor).round() as u64 } else { value };
                shifted.record_n(value, bucket.count_at_value()).unwrap();
            }
            RoundFigures {
                p95_us: shifted.value_at_quantile(0.95),
                p99_us: shifted.value_at_quantile(0.99),
                latency: Some(crate::pooled::round_histogram_text(&shifted)),
                ..round.clone()
            }
        })
        .collect()
}

#[test]
fn a_tenth_slower_tail_in_the_quiet_rounds_is_not_called_no_difference() {
    let (baseline, target) = quiet_rounds();
    let slower = tail_shifted(&target, 1.10);
    let verdicts = verdicts_by(&baseline, &slower, &default_rule());
    for metric in ["p95", "p99"] {
        let verdict = find(&verdicts, metric);
        assert_ne!(verdict.judgement, Judgement::NoDifference, "{metric}: {}", verdict.text);
        assert_ne!(verdict.judgement, Judgement::Lower, "{metric}: {}", verdict.text);
        // The interval holds the shift (the recorded rounds' own ratio was within ±3%).
        assert!(
            verdict.ci_low.unwrap() < 1.10 * 1.03 && verdict.ci_high.unwrap() > 1.10 / 1.03,
            "{verdict:?}"
        );
    }
    // The median was left alone.
    assert_eq!(find(&verdicts, "p50").judgement, Judgement::NoDifference, "{}", find(&verdicts, "p50").text);
    // A fifth slower is beyond the tail band: slower.
    let much = verdicts_by(&baseline, &tail_shifted(&target, 1.20), &default_rule());
    assert_eq!(find(&much, "p99").judgement, Judgement::Higher, "{}", find(&much, "p99").text);
}

/// An adaptive comparison of two identical targets, simulated: each round's log-ratio drawn
/// from `draw`, the verdict on req/s looked at after every `every` rounds up to `budget`, the
/// comparison stopping at the first look that decides it. Returns the final verdict.
fn simulated_comparison(
    rng: &mut SmallRng,
    rule: &VerdictRule,
    every: u32,
    draw: &dyn Fn(&mut SmallRng) -> f64,
) -> FigureVerdict {
    let mut ratios = Vec::new();
    loop {
        (0..every).for_each(|_| ratios.push(draw(rng).exp()));
        let verdict = judge_for_rule(Figure::Rate, &ratios, rule);
        if verdict.judgement != Judgement::NotEnoughData || ratios.len() as u32 >= rule.budget {
            return verdict;
        }
    }
}

/// The share of `runs` simulated comparisons whose final interval misses the true ratio 1.
fn miss_share(rule: &VerdictRule, runs: u32, seed: u64, draw: &dyn Fn(&mut SmallRng) -> f64) -> f64 {
    let mut rng = SmallRng::seed_from_u64(seed);
    let misses = (0..runs)
        .filter(|_| {
            let verdict = simulated_comparison(&mut rng, rule, rule.budget / rule.looks, draw);
            !(verdict.ci_low.unwrap() <= 1.0 && 1.0 <= verdict.ci_high.unwrap())
        })
        .count();
    misses as f64 / f64::from(runs)
}

/// A normal draw by Box-Muller.
fn normal(rng: &mut SmallRng) -> f64 {
    let (u, v): (f64, f64) = (1.0 - rng.gen::<f64>(), rng.gen());
    (-2.0 * u.ln()).sqrt() * (2.0 * std::f64::consts::PI * v).cos()
}

#[test]
fn the_interval_an_adaptive_comparison_reports_stays_a_95_percent_interval_whichever_look_stops_it() {
    const RUNS: u32 = 600;
    // 5% plus three binomial standard deviations of RUNS comparisons: 7.7%.
    let bound = 0.05 + 3.0 * (0.05 * 0.95 / f64::from(RUNS)).sqrt();
    let rule = default_rule();
    // Rounds spread as the quiet machine's req/s (2.8% a round: some comparisons stop at the
    // first looks, most go on), and twice that, and with a heavy tail (a Student's t with 3
    // degrees of freedom scaled alike: one round in a few far off).
    let spread = |sd: f64| move |rng: &mut SmallRng| sd * normal(rng);
    let heavy = |rng: &mut SmallRng| {
        let z = normal(rng);
        let chi: f64 = (0..3).map(|_| normal(rng).powi(2)).sum();
        0.02 * z / (chi / 3.0).sqrt()
    };
    for (seed, draw) in
        [(1, &spread(0.028) as &dyn Fn(&mut SmallRng) -> f64), (2, &spread(0.056)), (3, &heavy)]
    {
        let share = miss_share(&rule, RUNS, seed, draw);
        assert!(share <= bound, "seed {seed}: {:.1}% of the intervals missed 1", share * 100.0);
        // Nor wider than they need be: some do miss (a 95% interval misses one time in 20).
        assert!(share >= 0.015, "seed {seed}: only {:.1}% of the intervals missed 1", share * 100.0);
    }
}

#[test]
fn the_method_line_names_the_boundary_and_each_looks_confidence() {
    let text = r#"{"rounds":20,"order":"rotated","orders":[],"warmup_ms":0,"cooldown_ms":0,"round_length":"3s","tie":0.03,"ci_method":"","confidence":0.95,"bootstrap_seed":1,"seed":1,"varied_params":false,"max_rounds":20,"look_every":5,"looks":4,"boundary":"obrien_fleming","tail_tie":0.1}"#;
    let methodology: crate::verdict::Methodology = serde_json::from_str(text).unwrap();
    let lines = crate::verdict::methodology_lines(&methodology).join("\n");
    assert!(lines.contains("tie band ±3%, p95 and p99 ±10%"), "{lines}");
    assert!(
        lines.contains("each look's interval at 99.99%, 99.58%, 98.06%, 95.71% after 5, 10, ... rounds; these after 20: 95.71% (4 looks, O'Brien-Fleming)"),
        "{lines}"
    );
    // The verdicts of a file are judged by the rule it was run with.
    let rule = VerdictRule::of(&methodology);
    assert_eq!(rule, default_rule());
    assert_eq!(crate::verdict::metric_tie(&methodology, "p99"), 0.1);
    assert_eq!(crate::verdict::metric_tie(&methodology, "p50"), 0.03);
}
