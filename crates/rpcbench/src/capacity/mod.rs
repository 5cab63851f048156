//! Capacity search: the highest request rate a target serves within a service-level objective,
//! or (connections mode, [`SearchMode::Connections`]) the most concurrent connections it serves
//! within it.
//!
//! The search runs open-loop steps (uniform arrivals, each with its own warmup, a cool-down
//! between them) and judges each against the [`Slo`]:
//!
//! 1. Coarse phase: from the start rate, double while steps pass, up to the maximum rate.
//!    If the very first step fails, halve instead until one passes (down to 1 req/s).
//! 2. Bisection between the highest passing rate and the lowest failing rate, until the
//!    bracket is narrower than the precision (relative to the passing rate).
//!
//! The next rate is a pure function of the steps so far ([`next_step`]), tested with tables.
//! A step fails on an SLO breach, or when the generator did not achieve its rate (achieved
//! below 95% of the target, or more than 1% of the due requests never sent). A shortfall is
//! blamed on the generator ([`Verdict::GeneratorLimited`]) when the requests that did go out
//! were served within the SLO measured from their actual send time; otherwise on the target.
//!
//! In connections mode each step is a closed-loop run (every connection sends its next request
//! when the previous one is answered) with that many connections; the search doubles and
//! bisects the same way over whole connection counts ([`next_connections`]), and a step is
//! judged on the SLO alone (a closed loop has no rate to fall short of).
//!
//! The result ([`CapacityReport`]) has every step, the answer (highest passing rate) with its
//! margin to the first failing rate, and the knee: the last rate before p99 more than doubles
//! over the lowest-rate step's p99.

use std::fmt::{self, Write};
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::engine::config::{Arrivals, Field, Length, Load, RunConfig, SettingError};
use crate::engine::{EngineError, Run, StopHandle};
use crate::monitor::{Monitor, ResourceReport};
use crate::record::RunRecord;
use crate::report::{GeneratorReport, LatencyReport, RunReport};
use crate::results::{GeneratorData, MethodResults};
use crate::util::units::percent;
use crate::util::units::{format_duration, format_micros};

/// A step that sent less than this share of its target rate did not achieve it.
pub const ACHIEVED_MIN: f64 = 0.95;
/// A step that left more than this share of its due requests unsent did not achieve its rate.
pub const UNSENT_MAX: f64 = 0.01;
/// The knee is where p99 first exceeds this multiple of the lowest-rate step's p99.
pub const KNEE_FACTOR: f64 = 2.0;

mod judge;
mod render;
mod run;
mod search;
mod slo;

pub use judge::*;
use render::*;
pub use run::*;
pub use search::*;
pub use slo::*;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_slo_with_the_wrong_comparison_points_at_it() {
        let err = Slo::parse("p99>5ms").unwrap_err();
        assert_eq!(err.column(), 4, "{err:?}");
        assert!(err.kind().to_string().contains("p99<5ms"), "{err:?}");
        let err = Slo::parse("p50<1s, errors>=1%").unwrap_err();
        assert_eq!(err.column(), 15, "{err:?}");
    }
    use crate::record::new_histogram;

    #[test]
    fn slos_parse() {
        let slo = Slo::parse("p99<500ms,errors<0.1%").unwrap();
        assert_eq!(
            slo.clauses,
            vec![
                SloClause {
                    text: "p99<500ms".into(),
                    bound: SloBound::Latency(LatencyStat::Percentile("p99"), Duration::from_millis(500))
                },
                SloClause { text: "errors<0.1%".into(), bound: SloBound::ErrorPercent(0.1) },
            ]
        );
        let slo = Slo::parse(" P99.9 < 1s , max<2s, p50<800us ").unwrap();
        assert_eq!(slo.to_string(), "P99.9<1s, max<2s, p50<800us");
        assert_eq!(
            slo.clauses[0].bound,
            SloBound::Latency(LatencyStat::Percentile("p99.9"), Duration::from_secs(1))
        );
        assert_eq!(slo.clauses[1].bound, SloBound::Latency(LatencyStat::Max, Duration::from_secs(2)));
    }

    #[test]
    fn bad_slos_name_the_position() {
        // Messages are those of every condition (crate::conditions); `<=` is pointed at its
        // start, like any comparison.
        for (text, position, message) in [
            ("p98<5ms", 1, "unknown percentile 'p98'"),
            ("p99<500ms,errors<0.1", 18, "expected a percentage"),
            ("p99<5x", 5, "a duration such as"),
            ("p99 500ms", 10, "no comparison"),
            ("p99<500ms,", 11, "an empty condition"),
            ("p99<500ms, errors<0%", 19, "above 0%"),
            ("p99<=5ms", 4, "only '<'"),
            ("<5ms", 1, "no metric"),
            ("p99<0", 5, "longer than zero"),
            ("", 1, "an empty condition"),
            ("p99<1µs,p9<1s", 9, "unknown percentile 'p9'"),
            ("mean<1s", 1, "unknown metric 'mean'"),
            ("errors<101%", 8, "from 0% to 100%"),
            ("getSlot: p99<1s", 1, "the whole run"),
        ] {
            let err = Slo::parse(text).unwrap_err();
            assert_eq!(err.column(), position, "{text:?}: {err}");
            assert!(err.kind().to_string().contains(message), "{text:?}: {err}");
        }
    }

    fn latency(us: &[u64]) -> LatencyReport {
        let mut histogram = new_histogram();
        for value in us {
            histogram.record(*value).unwrap();
        }
        LatencyReport::from_histogram(&histogram)
    }

    fn figures(requests: u64, errors: u64, unsent: u64, corrected_us: u64, actual_us: u64) -> StepFigures {
        StepFigures {
            target_rate: 100.0,
            duration: Duration::from_secs(1),
            requests,
            errors,
            unsent,
            send_lag_mean_us: corrected_us.saturating_sub(actual_us) / 2,
            late: 0,
            late_at_cap: 0,
            latency: latency(&vec![corrected_us; requests.max(1) as usize]),
            latency_uncorrected: latency(&vec![actual_us; requests.max(1) as usize]),
        }
    }

    #[test]
    fn steps_are_judged() {
        let slo = Slo::parse("p99<50ms,errors<1%").unwrap();
        // (requests, errors, unsent, corrected, actual) -> verdict, breached clauses
        let table = [
            (figures(100, 0, 0, 2_000, 2_000), Verdict::Pass, vec![]),
            (figures(100, 0, 0, 80_000, 80_000), Verdict::SloBreach, vec!["p99<50ms"]),
            (figures(100, 5, 0, 2_000, 2_000), Verdict::SloBreach, vec!["errors<1%"]),
            // Saturated target: sent less, and what was sent was slow.
            (figures(90, 0, 10, 900_000, 600_000), Verdict::SloBreach, vec!["p99<50ms"]),
            // The tool was late, the target fast: the generator's fault.
            (figures(90, 0, 10, 900_000, 2_000), Verdict::GeneratorLimited, vec!["p99<50ms"]),
            // Everything sent, but the sends slipped steadily to 0.9 s behind: 100 in 1.9 s.
            (figures(100, 0, 0, 900_000, 2_000), Verdict::GeneratorLimited, vec!["p99<50ms"]),
            // A 30 ms slip is within 95%.
            (figures(100, 0, 0, 32_000, 2_000), Verdict::Pass, vec![]),
            (figures(93, 0, 0, 2_000, 2_000), Verdict::GeneratorLimited, vec![]),
            // 2% unsent is a shortfall even though 98% were sent.
            (figures(98, 0, 2, 2_000, 2_000), Verdict::GeneratorLimited, vec![]),
            (figures(99, 0, 1, 2_000, 2_000), Verdict::Pass, vec![]),
            (figures(0, 0, 100, 0, 0), Verdict::SloBreach, vec![]),
            // A dead target: every request a connect error, no latency recorded.
            (figures(100, 100, 0, 0, 0), Verdict::SloBreach, vec!["errors<1%", "successes>0"]),
        ];
        for (i, (figures, verdict, clauses)) in table.into_iter().enumerate() {
            let (got, breaches) = figures.judge(&slo);
            assert_eq!(got, verdict, "row {i}");
            let names: Vec<&str> = breaches.iter().map(|b| b.clause.as_str()).collect();
            assert_eq!(names, clauses, "row {i}");
        }
        // Without an errors clause, a dead target still fails.
        let latency_only = Slo::parse("p99<50ms").unwrap();
        let (verdict, breaches) = figures(100, 100, 0, 0, 0).judge(&latency_only);
        assert_eq!(verdict, Verdict::SloBreach);
        assert_eq!(breaches[0].describe(), "no successful response");
    }

    #[test]
    fn breaches_say_by_how_much() {
        let slo = Slo::parse("p99<50ms,errors<1%").unwrap();
        let breaches = slo.breaches(&latency(&[812_000]), 25, 200);
        let texts: Vec<String> = breaches.iter().map(Breach::describe).collect();
        assert_eq!(texts.len(), 2);
        assert!(texts[0].starts_with("p99 81"), "{texts:?}");
        assert!(texts[0].ends_with(">= 50.00ms (16.2x)"), "{texts:?}");
        assert_eq!(texts[1], "errors 12.50% >= 1% (12.5x)");
    }

    /// Plays a search against a target that passes every rate up to `capacity`.
    fn play(bounds: &SearchBounds, capacity: f64) -> Vec<f64> {
        let mut history = Vec::new();
        while let NextStep::Run(rate) = next_step(bounds, &history) {
            history.push((rate, rate <= capacity));
            assert!(history.len() <= bounds.max_steps);
        }
        history.into_iter().map(|(rate, _)| rate).collect()
    }

    #[test]
    fn the_search_doubles_then_bisects() {
        let bounds = SearchBounds::new(100.0, 1_000_000.0, 0.05);
        assert_eq!(play(&bounds, 400.0), vec![100.0, 200.0, 400.0, 800.0, 600.0, 500.0, 450.0, 425.0, 413.0]);
        assert_eq!(play(&bounds, 250.0), vec![100.0, 200.0, 400.0, 300.0, 250.0, 275.0, 263.0, 257.0]);
        let steps = play(&bounds, 3_333.0);
        let (pass, fail) = bracket(&steps.iter().map(|r| (*r, *r <= 3_333.0)).collect::<Vec<_>>());
        let (pass, fail) = (pass.unwrap(), fail.unwrap());
        assert!(pass <= 3_333.0 && fail > 3_333.0 && fail - pass <= 0.05 * pass, "{steps:?}");
    }

    #[test]
    fn the_search_table() {
        let bounds = SearchBounds::new(100.0, 1000.0, 0.05);
        // (history, next)
        let table: [(&[(f64, bool)], NextStep); 10] = [
            (&[], NextStep::Run(100.0)),
            (&[(100.0, true)], NextStep::Run(200.0)),
            (&[(100.0, true), (200.0, true), (400.0, true), (800.0, true)], NextStep::Run(1000.0)),
            (&[(100.0, true), (200.0, true), (400.0, true), (800.0, true), (1000.0, true)], NextStep::Done),
            (&[(100.0, true), (200.0, false)], NextStep::Run(150.0)),
            (&[(100.0, true), (200.0, false), (150.0, false)], NextStep::Run(125.0)),
            (
                &[(100.0, true), (200.0, false), (150.0, true), (175.0, true), (188.0, true), (194.0, false)],
                NextStep::Done,
            ),
            // The start rate fails: halve until a pass, then bisect.
            (&[(100.0, false)], NextStep::Run(50.0)),
            (&[(100.0, false), (50.0, true)], NextStep::Run(75.0)),
            (
                &[
                    (100.0, false),
                    (50.0, false),
                    (25.0, false),
                    (13.0, false),
                    (6.5, false),
                    (3.25, false),
                    (1.63, false),
                    (1.0, false),
                ],
                NextStep::Done,
            ),
        ];
        for (i, (history, next)) in table.into_iter().enumerate() {
            assert_eq!(next_step(&bounds, history), next, "row {i}: {history:?}");
        }
        let capped = SearchBounds { max_steps: 2, ..bounds };
        assert_eq!(next_step(&capped, &[(100.0, true), (200.0, true)]), NextStep::Done);
    }

    /// Plays a search over connections against a target that passes up to `capacity`.
    fn play_connections(bounds: &ConnectionBounds, capacity: f64) -> Vec<f64> {
        let mut history = Vec::new();
        while let NextStep::Run(connections) = next_connections(bounds, &history) {
            assert_eq!(connections.fract(), 0.0, "whole connections: {history:?}");
            history.push((connections, connections <= capacity));
            assert!(history.len() <= bounds.max_steps);
        }
        history.into_iter().map(|(connections, _)| connections).collect()
    }

    #[test]
    fn the_connections_search_doubles_then_bisects_whole_counts() {
        let bounds = ConnectionBounds::new(16, 4096, 0.05);
        assert_eq!(play_connections(&bounds, 48.0), vec![16.0, 32.0, 64.0, 48.0, 56.0, 52.0, 50.0]);
        // Small counts bisect down to neighbours.
        let small = ConnectionBounds::new(1, 64, 0.05);
        assert_eq!(play_connections(&small, 4.0), vec![1.0, 2.0, 4.0, 8.0, 6.0, 5.0]);
        assert_eq!(play_connections(&small, 1.0), vec![1.0, 2.0]);
        // The start fails: halve down to one.
        assert_eq!(play_connections(&bounds, 3.0), vec![16.0, 8.0, 4.0, 2.0, 3.0]);
        assert_eq!(play_connections(&bounds, 0.0), vec![16.0, 8.0, 4.0, 2.0, 1.0]);
        // Everything passes: up to the maximum, which need not be a power of two.
        let capped = ConnectionBounds::new(16, 100, 0.05);
        assert_eq!(play_connections(&capped, 1e9), vec![16.0, 32.0, 64.0, 100.0]);
        let (pass, fail) = bracket(
            &play_connections(&bounds, 2800.0).iter().map(|c| (*c, *c <= 2800.0)).collect::<Vec<_>>(),
        );
        let (pass, fail) = (pass.unwrap(), fail.unwrap());
        assert!(pass <= 2800.0 && fail > 2800.0 && fail - pass <= 0.05 * pass, "{pass} {fail}");
    }

    #[test]
    fn the_connections_search_table() {
        let bounds = ConnectionBounds::new(16, 256, 0.05);
        // (history, next)
        let table: [(&[(f64, bool)], NextStep); 9] = [
            (&[], NextStep::Run(16.0)),
            (&[(16.0, true)], NextStep::Run(32.0)),
            (&[(16.0, true), (32.0, true), (64.0, true), (128.0, true)], NextStep::Run(256.0)),
            (&[(16.0, true), (32.0, true), (64.0, true), (128.0, true), (256.0, true)], NextStep::Done),
            (&[(16.0, true), (32.0, false)], NextStep::Run(24.0)),
            (&[(16.0, true), (32.0, false), (24.0, true), (28.0, true), (30.0, false)], NextStep::Run(29.0)),
            // Neighbours: nothing left between them.
            (&[(16.0, true), (32.0, false), (24.0, true), (28.0, true), (29.0, false)], NextStep::Done),
            (&[(16.0, false)], NextStep::Run(8.0)),
            (&[(16.0, false), (8.0, false), (4.0, false), (2.0, false), (1.0, false)], NextStep::Done),
        ];
        for (i, (history, next)) in table.into_iter().enumerate() {
            assert_eq!(next_connections(&bounds, history), next, "row {i}: {history:?}");
        }
        // A start above the maximum starts at the maximum.
        let low = ConnectionBounds::new(16, 10, 0.05);
        assert_eq!(next_connections(&low, &[]), NextStep::Run(10.0));
        let capped = ConnectionBounds { max_steps: 2, ..bounds };
        assert_eq!(next_connections(&capped, &[(16.0, true), (32.0, true)]), NextStep::Done);
    }

    #[test]
    fn a_connections_summary_says_the_most_that_kept_the_slo_and_the_first_that_broke_it() {
        let settings = CapacitySettings::connections(Slo::parse("p99<100ms").unwrap(), 16, 4096);
        let at = |number: usize, connections: u64, verdict: Verdict, p99_us: u64| {
            let mut step = step(number, 500.0, verdict, p99_us);
            step.connections = Some(connections);
            if verdict == Verdict::SloBreach {
                step.breaches = settings.slo.breaches(&latency(&[p99_us]), 0, 1);
            }
            step
        };
        let steps = vec![
            at(1, 16, Verdict::Pass, 20_000),
            at(2, 32, Verdict::Pass, 45_000),
            at(3, 64, Verdict::SloBreach, 130_000),
            at(4, 48, Verdict::Pass, 80_000),
            at(5, 56, Verdict::SloBreach, 101_000),
        ];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(30));
        assert_eq!((report.capacity, report.first_failing_rate), (Some(48.0), Some(56.0)));
        assert_eq!(report.limited_by, "slo");
        assert_eq!(report.knee, Some(16.0));
        assert_eq!(report.settings.mode, SearchMode::Connections);
        let text = report.render_text();
        assert!(text.contains("closed-loop steps"), "{text}");
        assert!(text.contains("Step      Conns Achieved/s"), "{text}");
        assert!(
            text.contains(
                "Capacity: 48 connections within the SLO; the first that broke it, 56 connections, had p99 "
            ),
            "{text}"
        );
        assert!(text.contains("margin 8 connections (16.67%)"), "{text}");
        assert!(text.contains("the most concurrent connections"), "{text}");
        assert!(text.contains("Knee: 16 connections"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["settings"]["mode"], "connections");
        assert_eq!(json["steps"][3]["connections"], 48);
        // Everything passing up to the cap says so.
        let all = vec![at(1, 16, Verdict::Pass, 1_000), at(2, 32, Verdict::Pass, 1_000)];
        let mut capped = settings.clone();
        capped.connection_bounds.max = 32;
        let report = summarize(&base(), &capped, all, false, Duration::ZERO);
        assert_eq!(report.limited_by, "max_connections");
        assert!(
            report.render_text().contains("Capacity: at least 32 connections"),
            "{}",
            report.render_text()
        );
    }

    #[test]
    fn a_rate_report_has_no_mode_in_its_json() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let report =
            summarize(&base(), &settings, vec![step(1, 100.0, Verdict::Pass, 1)], false, Duration::ZERO);
        let json = report.to_json();
        assert!(!json.contains("\"mode\""), "{json}");
        assert!(!json.contains("\"connections\""), "{json}");
        let back: CapacityReport = serde_json::from_str(&json).unwrap();
        assert_eq!(back.settings.mode, SearchMode::Rate);
    }

    #[test]
    fn a_closed_loop_step_is_judged_on_the_slo_alone() {
        let slo = Slo::parse("p99<50ms").unwrap();
        // 93% of a (meaningless) rate and late sends: no shortfall in a closed loop.
        let fast = figures(93, 0, 0, 900_000, 2_000);
        assert_eq!(fast.judge(&slo).0, Verdict::GeneratorLimited);
        let mut closed = fast.clone();
        closed.latency = closed.latency_uncorrected.clone();
        assert_eq!(closed.judge_closed(&slo).0, Verdict::Pass);
        assert_eq!(figures(100, 0, 0, 80_000, 80_000).judge_closed(&slo).0, Verdict::SloBreach);
        let (verdict, breaches) = figures(0, 0, 0, 0, 0).judge_closed(&slo);
        assert_eq!((verdict, breaches[0].clause.as_str()), (Verdict::SloBreach, NO_SUCCESS));
    }

    #[test]
    fn the_knee_is_the_last_rate_before_p99_doubles() {
        assert_eq!(knee(&[]), None);
        assert_eq!(knee(&[(100.0, 1_000)]), None);
        assert_eq!(knee(&[(100.0, 1_000), (200.0, 1_500), (400.0, 1_900)]), None);
        // Out of order, as a bisection runs them.
        assert_eq!(knee(&[(100.0, 1_000), (400.0, 9_000), (200.0, 1_800), (300.0, 2_500)]), Some(200.0));
        assert_eq!(knee(&[(100.0, 1_000), (200.0, 2_001)]), Some(100.0));
    }

    #[test]
    fn a_knee_from_one_noisy_step_is_not_headlined() {
        // One slow step at 200/s, then fast again up to 6400/s: noise, not a knee.
        let noisy = [(100.0, 1_000), (200.0, 30_000), (400.0, 1_100), (6_400.0, 1_900)];
        assert_eq!(knee(&noisy), None);
        // The same noise below a real knee: the knee is where p99 rises for good.
        let rising = [
            (100.0, 1_000),
            (200.0, 30_000),
            (400.0, 1_100),
            (800.0, 1_300),
            (1_600.0, 9_000),
            (3_200.0, 90_000),
        ];
        assert_eq!(knee(&rising), Some(800.0));
        // A step above the knee that recovers takes the knee back up, out of order too.
        assert_eq!(
            knee(&[(1_600.0, 9_000), (100.0, 1_000), (800.0, 1_300), (1_200.0, 1_500)]),
            Some(1_200.0)
        );
    }

    fn step(number: usize, rate: f64, verdict: Verdict, p99_us: u64) -> StepResult {
        StepResult {
            step: number,
            target_rate: rate,
            connections: None,
            achieved_rate: rate,
            requests: rate as u64,
            errors: 0,
            error_percent: 0.0,
            unsent: 0,
            p50_us: p99_us / 2,
            p90_us: p99_us * 3 / 4,
            p99_us,
            p99_uncorrected_us: p99_us,
            send_lag_mean_us: 0,
            verdict,
            breaches: Vec::new(),
            generator_shortfall: verdict == Verdict::GeneratorLimited,
            target_resources: None,
            generator: None,
            connect_causes: Default::default(),
            heads: None,
        }
    }

    fn base() -> RunConfig {
        let target =
            crate::engine::config::Target::parse("http://127.0.0.1:8899/v3/0123456789abcdef0123456789abcdef")
                .unwrap();
        RunConfig::new(target, crate::jsonrpc::RequestTemplate::from_method("getSlot", None).unwrap())
    }

    #[test]
    fn the_heads_line_names_the_reference_followed_and_the_note_without_one_is_one_clean_sentence() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let heads = |name: &str| -> crate::heads::TargetHeads {
            serde_json::from_value(serde_json::json!({
                "name": name, "samples": 10, "failed": 0, "lag_p50": 0, "lag_p99": 0, "lag_max": 0,
                "at_tip": 1.0, "stale": 0, "first_seen": 0.5, "delay_ms_p50": 0.0, "delay_ms_p90": 0.0,
                "delay_ms_p99": 0.0
            }))
            .unwrap()
        };
        let mut report = summarize(
            &base(),
            &settings,
            vec![step(1, 100.0, Verdict::Pass, 2_000)],
            false,
            Duration::from_secs(5),
        );
        let with = |names: &[&str]| crate::heads::HeadsReport {
            interval_ms: 200.0,
            stale_after: 20,
            targets: names.iter().map(|name| heads(name)).collect(),
        };
        report.heads = Some(with(&["target", "http://127.0.0.1:8902/"]));
        let lines = report.heads_lines();
        assert_eq!(lines.len(), 1, "{lines:?}");
        assert!(lines[0].contains("across the target and http://127.0.0.1:8902/;"), "{lines:?}");
        report.heads = Some(with(&["target"]));
        let lines = report.heads_lines();
        assert!(lines[0].contains("across the target alone;"), "{lines:?}");
        assert!(lines[1].contains("its own highest head, so falling behind"), "{lines:?}");
        assert!(!lines[1].trim().contains("  "), "no run of spaces inside the note: {lines:?}");
        // Every format prints the answer's lines, the reference with them.
        assert!(report.summary_lines().iter().any(|line| line.contains("across the target alone")));
    }

    #[test]
    fn the_summary_has_the_answer_margin_and_knee() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let steps = vec![
            step(1, 100.0, Verdict::Pass, 2_000),
            step(2, 200.0, Verdict::Pass, 3_000),
            step(3, 400.0, Verdict::SloBreach, 90_000),
            step(4, 300.0, Verdict::Pass, 5_000),
            step(5, 350.0, Verdict::SloBreach, 60_000),
        ];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(30));
        assert_eq!(report.capacity, Some(300.0));
        assert_eq!(report.first_failing_rate, Some(350.0));
        assert_eq!(report.margin, Some(50.0));
        assert_eq!(report.margin_percent, Some(16.67));
        assert_eq!(report.limited_by, "slo");
        assert_eq!(report.knee, Some(200.0));
        let text = report.render_text();
        assert!(text.contains("Capacity: 300 req/s within the SLO; margin 50 req/s (16.67%)"), "{text}");
        assert!(text.contains("Knee: 200 req/s"), "{text}");
        assert!(text.contains("/v3/***"), "{text}");
        assert!(!text.contains("0123456789abcdef"), "{text}");
        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["steps"][2]["verdict"], "slo_breach");
        assert_eq!(json["capacity"], 300.0);
    }

    #[test]
    fn a_shortfall_at_the_connection_cap_is_not_called_generator_limited() {
        let slo = Slo::parse("p99<50ms").unwrap();
        // Sends slipped behind while what went out was served fast: a shortfall either way.
        let mut capped = figures(100, 0, 0, 900_000, 2_000);
        capped.late = 80;
        capped.late_at_cap = 70;
        assert_eq!(capped.judge(&slo).0, Verdict::ConnectionCap);
        let mut cpu = capped.clone();
        cpu.late_at_cap = 10;
        assert_eq!(cpu.judge(&slo).0, Verdict::GeneratorLimited);
        // What went out was slow: the target's fault, capped or not.
        let mut slow = figures(90, 0, 10, 900_000, 600_000);
        slow.late = 80;
        slow.late_at_cap = 80;
        assert_eq!(slow.judge(&slo).0, Verdict::SloBreach);

        let settings = CapacitySettings::new(slo);
        let steps =
            vec![step(1, 100.0, Verdict::Pass, 2_000), step(2, 200.0, Verdict::ConnectionCap, 200_000)];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(10));
        assert_eq!(report.limited_by, "connection_cap");
        let text = report.render_text();
        assert!(text.contains("CONNECTION CAP reached"), "{text}");
        assert!(!text.contains("GENERATOR LIMITED"), "{text}");
        assert!(text.contains("Raise --max-connections"), "{text}");
        assert!(!text.contains("--threads"), "advice that does not help: {text}");
    }

    #[test]
    fn a_generator_limited_failure_is_told_apart() {
        let settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        let steps = vec![
            step(1, 100.0, Verdict::Pass, 2_000),
            step(2, 200.0, Verdict::GeneratorLimited, 200_000),
            step(3, 150.0, Verdict::Pass, 2_100),
        ];
        let report = summarize(&base(), &settings, steps, false, Duration::from_secs(10));
        assert_eq!(report.limited_by, "generator");
        assert_eq!(report.knee, None, "generator-limited steps do not count for the knee");
        let text = report.render_text();
        assert!(text.contains("GENERATOR LIMITED: sent 100.0% of the rate"), "{text}");
        assert!(text.contains("WARNING: the generator, not the target"), "{text}");
        assert!(text.contains("Knee: none"), "{text}");
        let no_pass =
            summarize(&base(), &settings, vec![step(1, 1.0, Verdict::SloBreach, 1)], false, Duration::ZERO);
        assert_eq!((no_pass.capacity, no_pass.limited_by.as_str()), (None, "no_pass"));
        assert!(no_pass.render_text().contains("Capacity: none"));
    }

    #[test]
    fn settings_are_checked() {
        let mut settings = CapacitySettings::new(Slo::parse("p99<50ms").unwrap());
        assert!(settings.validate().is_ok());
        settings.bounds.max_rate = 50.0;
        assert_eq!(settings.validate().unwrap_err().field, Field::MaxRate);
        settings.bounds.max_rate = 1000.0;
        settings.bounds.precision = 0.0;
        assert_eq!(settings.validate().unwrap_err().field, Field::Precision);
        settings.bounds.precision = 0.05;
        settings.step = Duration::ZERO;
        assert_eq!(settings.validate().unwrap_err().field, Field::Step);
        let mut settings = CapacitySettings::connections(Slo::parse("p99<50ms").unwrap(), 16, 8);
        assert_eq!(settings.validate().unwrap_err().field, Field::MaxConnections);
        settings.connection_bounds.start = 0;
        assert_eq!(settings.validate().unwrap_err().field, Field::StartConnections);
        settings.connection_bounds = ConnectionBounds::new(1, 8, 0.05);
        assert!(settings.validate().is_ok());
    }
}
