//! Pass/fail conditions on a finished run, for gating CI: `p99 < 500ms`, `errors < 0.1%`,
//! `rate > 1000`, optionally for one call of the mix (`getBlock: p99 < 800ms`). A breach
//! makes `rpcbench run` exit 1, and the report says which threshold failed and by how much.

use crate::conditions::{self, Condition, ConditionError, MetricWord, Quantity, Vocabulary, ALL_OPERATORS};
pub use crate::report::ThresholdResult;
use crate::report::{LatencyReport, RunReport};
use crate::util::units::format_micros;

/// What a threshold measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Metric {
    /// A latency statistic: `p50` … `p99.99`, `max`, `mean`; microseconds.
    Latency,
    /// Errors as a percentage of requests.
    Errors,
    /// Calls refused for the server's rate limit, as a percentage of requests.
    RateLimited,
    /// Requests per second.
    Rate,
}

/// The metrics of `--threshold` and a scenario's `thresholds`.
const THRESHOLD_WORDS: Vocabulary<Metric> = Vocabulary {
    metrics: &[
        MetricWord {
            id: Metric::Latency,
            names: &["latency"],
            quantity: Quantity::Latency,
            stats: &["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max", "mean"],
            default_stat: None,
        },
        MetricWord {
            id: Metric::Errors,
            names: &["errors", "error_rate"],
            quantity: Quantity::Percent,
            stats: &[],
            default_stat: None,
        },
        MetricWord {
            id: Metric::RateLimited,
            names: &["rate_limited"],
            quantity: Quantity::Percent,
            stats: &[],
            default_stat: None,
        },
        MetricWord {
            id: Metric::Rate,
            names: &["rate", "rps"],
            quantity: Quantity::Rate,
            stats: &[],
            default_stat: None,
        },
    ],
    bare_stats: Some(Metric::Latency),
    operators: ALL_OPERATORS,
    scopes: true,
    limits_above_zero: false,
};

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    condition: Condition<Metric>,
}

impl Threshold {
    /// Parses `[METHOD:] METRIC OP VALUE` (the grammar of [`crate::conditions`]).
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        conditions::parse(text, &THRESHOLD_WORDS).map(|condition| Self { condition })
    }

    /// The method this threshold applies to, if not the whole run.
    pub fn scope(&self) -> Option<&str> {
        self.condition.scope.as_deref()
    }

    /// The threshold as written.
    pub fn text(&self) -> &str {
        &self.condition.text
    }

    /// Checks the threshold against a report. A scope naming no call of the run fails.
    pub fn evaluate(&self, report: &RunReport) -> ThresholdResult {
        let rate_limited = report.outcomes.class_total(crate::outcome::OutcomeClass::RateLimited);
        let (latency, requests, errors, rate_limited, rate): (&LatencyReport, u64, u64, u64, f64) =
            match &self.condition.scope {
                None => (
                    &report.latency,
                    report.requests.total,
                    report.requests.errors,
                    rate_limited,
                    report.requests.rate,
                ),
                Some(name) => match report.methods.iter().find(|m| &m.name == name || &m.method == name) {
                    Some(method) => {
                        (&method.latency, method.requests, method.errors, method.rate_limited, method.rate)
                    }
                    None => {
                        return ThresholdResult {
                            threshold: self.condition.text.clone(),
                            passed: false,
                            actual: format!("no call named '{name}' in this run"),
                            exceeded_by: String::new(),
                        }
                    }
                },
            };
        let metric = self.condition.metric;
        let limit = self.condition.limit.value();
        let actual = match metric {
            Metric::Latency => match self.condition.stat.unwrap_or("p99") {
                "max" => latency.max_us as f64,
                "mean" => latency.mean_us as f64,
                percentile => latency.percentile(percentile) as f64,
            },
            Metric::Errors | Metric::RateLimited => {
                let count = if metric == Metric::Errors { errors } else { rate_limited };
                if requests == 0 {
                    0.0
                } else {
                    count as f64 * 100.0 / requests as f64
                }
            }
            Metric::Rate => rate,
        };
        let passed = self.condition.operator.holds(actual, limit);
        let format = |value: f64| match metric {
            Metric::Latency => format_micros(value),
            Metric::Errors | Metric::RateLimited => format!("{value:.3}%"),
            Metric::Rate => format!("{value:.2} req/s"),
        };
        let exceeded_by = if passed {
            String::new()
        } else {
            let gap = (actual - limit).abs();
            match metric {
                Metric::Errors | Metric::RateLimited => format!("{gap:.3} percentage points"),
                _ => format(gap),
            }
        };
        ThresholdResult {
            threshold: self.condition.text.clone(),
            passed,
            actual: format(actual),
            exceeded_by,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::conditions::{Limit, Operator};

    #[test]
    fn thresholds_parse_with_scopes_and_operators() {
        let t = Threshold::parse("getBlock: p99 <= 800ms").unwrap();
        assert_eq!(t.scope(), Some("getBlock"));
        assert_eq!(t.condition.operator, Operator::AtMost);
        assert_eq!(t.condition.limit.value(), 800_000.0);
        let t = Threshold::parse("errors < 0.1%").unwrap();
        assert_eq!((t.condition.metric, t.condition.limit), (Metric::Errors, Limit::Percent(0.1)));
        let t = Threshold::parse("rate_limited < 1%").unwrap();
        assert_eq!((t.condition.metric, t.condition.limit), (Metric::RateLimited, Limit::Percent(1.0)));
        let t = Threshold::parse("rate > 1000").unwrap();
        assert_eq!((t.condition.operator, t.condition.limit), (Operator::Above, Limit::Rate(1000.0)));
        let t = Threshold::parse("rate >= 1000 req/s").unwrap();
        assert_eq!((t.condition.operator, t.condition.limit), (Operator::AtLeast, Limit::Rate(1000.0)));
        let t = Threshold::parse("latency p99.9 < 1s").unwrap();
        assert_eq!((t.condition.metric, t.condition.stat), (Metric::Latency, Some("p99.9")));
    }

    #[test]
    fn bad_thresholds_point_at_the_fault() {
        // Offsets are bytes into the text; "no comparison" points where one was expected.
        let cases = [
            ("p99 500ms", 9, "no comparison"),
            ("p98 < 5ms", 0, "unknown percentile 'p98'"),
            ("speed < 5ms", 0, "unknown metric 'speed'"),
            ("p99 < fast", 6, "expected a duration"),
            ("errors < 1", 9, "percentage"),
            (": p99 < 5ms", 0, "empty"),
            ("m: rate > x", 10, "not a number"),
            ("p99 = 5ms", 4, "'=' is not a comparison"),
        ];
        for (text, offset, message) in cases {
            let err = Threshold::parse(text).unwrap_err();
            assert!(err.kind().to_string().contains(message), "{text}: {err}");
            assert_eq!(err.offset(), offset, "{text}: {err}");
        }
    }
}
