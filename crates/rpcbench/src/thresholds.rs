//! Pass/fail conditions on a finished run, for gating CI: `p99 < 500ms`, `errors < 0.1%`,
//! `rate > 1000`, optionally for one call of the mix (`getBlock: p99 < 800ms`). A breach
//! makes `rpcbench run` exit 1, and the report says which threshold failed and by how much.

use std::fmt;

pub use crate::report::ThresholdResult;
use crate::report::{LatencyReport, RunReport};
use crate::util::units::{format_micros, parse_duration};

/// A threshold that cannot be parsed, with the byte offset in its text where it went wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ThresholdError {
    /// Byte offset into the threshold's text.
    pub offset: usize,
    /// What is wrong.
    pub message: String,
}

impl fmt::Display for ThresholdError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ThresholdError {}

/// What a threshold measures.
#[derive(Debug, Clone, PartialEq)]
enum Metric {
    /// A latency statistic: `p50` … `p99.99`, `max`, `mean`; microseconds.
    Latency(String),
    /// Errors as a percentage of requests.
    Errors,
    /// Calls refused for the server's rate limit, as a percentage of requests.
    RateLimited,
    /// Requests per second.
    Rate,
}

/// One parsed threshold.
#[derive(Debug, Clone, PartialEq)]
pub struct Threshold {
    text: String,
    scope: Option<String>,
    metric: Metric,
    /// `true` for `<`/`<=` (the value must stay below), `false` for `>`/`>=`.
    below: bool,
    inclusive: bool,
    /// Microseconds for latency, percent for errors, requests per second for rate.
    limit: f64,
}

const LATENCY_STATS: [&str; 9] = ["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max", "mean"];

impl Threshold {
    /// Parses `[METHOD:] METRIC OP VALUE`.
    pub fn parse(text: &str) -> Result<Self, ThresholdError> {
        let error = |offset: usize, message: String| ThresholdError { offset, message };
        let (scope, rest, rest_offset) = match text.split_once(':') {
            Some((scope, rest)) => (Some(scope.trim().to_string()), rest, scope.len() + 1),
            None => (None, text, 0),
        };
        if scope.as_deref() == Some("") {
            return Err(error(0, "the method before ':' is empty".into()));
        }
        let operator_at = rest.find(['<', '>']).ok_or_else(|| {
            error(rest_offset, format!("'{text}' has no comparison: write e.g. 'p99 < 500ms'"))
        })?;
        let metric_text = rest[..operator_at].trim();
        let mut operator_len = 1;
        let inclusive = rest[operator_at + 1..].starts_with('=');
        if inclusive {
            operator_len = 2;
        }
        let below = rest.as_bytes()[operator_at] == b'<';
        let after_operator = &rest[operator_at + operator_len..];
        let value_text = after_operator.trim();
        let value_offset = rest_offset
            + operator_at
            + operator_len
            + (after_operator.len() - after_operator.trim_start().len());
        let metric = match metric_text {
            "errors" | "error_rate" => Metric::Errors,
            "rate_limited" => Metric::RateLimited,
            "rate" | "rps" => Metric::Rate,
            stat if LATENCY_STATS.contains(&stat) => Metric::Latency(stat.to_string()),
            other => {
                return Err(error(
                    rest_offset,
                    format!("unknown metric '{other}': use p50, p75, p90, p95, p99, p99.9, p99.99, max, mean, errors, rate_limited or rate"),
                ))
            }
        };
        let limit = match &metric {
            Metric::Latency(_) => {
                parse_duration(value_text).map_err(|err| error(value_offset, err.to_string()))?.as_secs_f64()
                    * 1e6
            }
            Metric::Errors | Metric::RateLimited => {
                let number = value_text.strip_suffix('%').ok_or_else(|| {
                    error(
                        value_offset,
                        format!("'{value_text}': an error threshold is a percentage such as 0.1%"),
                    )
                })?;
                number
                    .trim()
                    .parse::<f64>()
                    .map_err(|_| error(value_offset, format!("'{value_text}' is not a percentage")))?
            }
            Metric::Rate => value_text.parse::<f64>().map_err(|_| {
                error(value_offset, format!("'{value_text}' is not a number of requests per second"))
            })?,
        };
        if !limit.is_finite() || limit < 0.0 {
            return Err(error(value_offset, format!("'{value_text}' is not a usable limit")));
        }
        Ok(Self { text: text.trim().to_string(), scope, metric, below, inclusive, limit })
    }

    /// The method this threshold applies to, if not the whole run.
    pub fn scope(&self) -> Option<&str> {
        self.scope.as_deref()
    }

    /// The threshold as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Checks the threshold against a report. A scope naming no call of the run fails.
    pub fn evaluate(&self, report: &RunReport) -> ThresholdResult {
        let rate_limited = report.outcomes.class_total(crate::outcome::OutcomeClass::RateLimited);
        let (latency, requests, errors, rate_limited, rate): (&LatencyReport, u64, u64, u64, f64) =
            match &self.scope {
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
                            threshold: self.text.clone(),
                            passed: false,
                            actual: format!("no call named '{name}' in this run"),
                            exceeded_by: String::new(),
                        }
                    }
                },
            };
        let actual = match &self.metric {
            Metric::Latency(stat) => match stat.as_str() {
                "max" => latency.max_us as f64,
                "mean" => latency.mean_us as f64,
                percentile => latency.percentile(percentile) as f64,
            },
            Metric::Errors | Metric::RateLimited => {
                let count = if self.metric == Metric::Errors { errors } else { rate_limited };
                if requests == 0 {
                    0.0
                } else {
                    count as f64 * 100.0 / requests as f64
                }
            }
            Metric::Rate => rate,
        };
        let passed = match (self.below, self.inclusive) {
            (true, false) => actual < self.limit,
            (true, true) => actual <= self.limit,
            (false, false) => actual > self.limit,
            (false, true) => actual >= self.limit,
        };
        let format = |value: f64| match self.metric {
            Metric::Latency(_) => format_micros(value),
            Metric::Errors | Metric::RateLimited => format!("{value:.3}%"),
            Metric::Rate => format!("{value:.2} req/s"),
        };
        let exceeded_by = if passed {
            String::new()
        } else {
            let gap = (actual - self.limit).abs();
            match self.metric {
                Metric::Errors | Metric::RateLimited => format!("{gap:.3} percentage points"),
                _ => format(gap),
            }
        };
        ThresholdResult { threshold: self.text.clone(), passed, actual: format(actual), exceeded_by }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thresholds_parse_with_scopes_and_operators() {
        let t = Threshold::parse("getBlock: p99 <= 800ms").unwrap();
        assert_eq!(t.scope(), Some("getBlock"));
        assert_eq!((t.below, t.inclusive, t.limit), (true, true, 800_000.0));
        let t = Threshold::parse("errors < 0.1%").unwrap();
        assert_eq!((t.metric.clone(), t.limit), (Metric::Errors, 0.1));
        let t = Threshold::parse("rate_limited < 1%").unwrap();
        assert_eq!((t.metric.clone(), t.limit), (Metric::RateLimited, 1.0));
        let t = Threshold::parse("rate > 1000").unwrap();
        assert_eq!((t.below, t.limit), (false, 1000.0));
    }

    #[test]
    fn bad_thresholds_point_at_the_fault() {
        let cases = [
            ("p99 500ms", 0, "no comparison"),
            ("p98 < 5ms", 0, "unknown metric 'p98'"),
            ("p99 < fast", 6, "expected a duration"),
            ("errors < 1", 9, "percentage"),
            (": p99 < 5ms", 0, "empty"),
            ("m: rate > x", 10, "not a number"),
        ];
        for (text, offset, message) in cases {
            let err = Threshold::parse(text).unwrap_err();
            assert!(err.message.contains(message), "{text}: {err}");
            assert_eq!(err.offset, offset, "{text}: {err}");
        }
    }
}
