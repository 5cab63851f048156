//! The service-level objective of a capacity search: its clauses (`p99<50ms`,
//! `errors<0.1%`), parsed with the position of a mistake, and what a breach is.

use super::*;
use crate::conditions::{self, ConditionError, Limit, MetricWord, Operator, Quantity, Vocabulary};

/// A latency figure an SLO clause can bound.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LatencyStat {
    /// A percentile by its report name (`p99`).
    Percentile(&'static str),
    /// The largest latency.
    Max,
}

/// What one SLO clause bounds.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum SloBound {
    /// The latency figure must stay below the duration.
    Latency(LatencyStat, Duration),
    /// The share of requests that are errors must stay below this percentage.
    ErrorPercent(f64),
}

/// One clause of an SLO, such as `p99<500ms`.
#[derive(Debug, Clone, PartialEq)]
pub struct SloClause {
    /// The clause as written, without spaces.
    pub text: String,
    /// What it bounds.
    pub bound: SloBound,
}

/// A service-level objective: every clause must hold for a step to pass.
#[derive(Debug, Clone, PartialEq)]
pub struct Slo {
    /// The clauses, in the order written.
    pub clauses: Vec<SloClause>,
}

/// What an SLO clause measures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum SloMetric {
    /// A latency statistic.
    Latency,
    /// Errors as a percentage of requests.
    Errors,
}

/// The metrics of `capacity --slo`: only `<`, and a limit of zero is refused (no step could
/// pass).
const SLO_WORDS: Vocabulary<SloMetric> = Vocabulary {
    metrics: &[
        MetricWord {
            id: SloMetric::Latency,
            names: &["latency"],
            quantity: Quantity::Latency,
            stats: &["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max"],
            default_stat: None,
        },
        MetricWord {
            id: SloMetric::Errors,
            names: &["errors"],
            quantity: Quantity::Percent,
            stats: &[],
            default_stat: None,
        },
    ],
    bare_stats: Some(SloMetric::Latency),
    operators: &[Operator::Below],
    scopes: false,
    limits_above_zero: true,
};

impl Slo {
    /// Parses comma-separated clauses: `p50|p75|p90|p95|p99|p99.9|p99.99|max < DURATION` and
    /// `errors < PCT%`, for example `p99<500ms, errors<0.1%` (the grammar of
    /// [`crate::conditions`]).
    pub fn parse(text: &str) -> Result<Slo, ConditionError> {
        let mut clauses = Vec::new();
        let mut offset = 0;
        for part in text.split(',') {
            clauses.push(parse_clause(text, offset..offset + part.len())?);
            offset += part.len() + 1;
        }
        Ok(Slo { clauses })
    }

    /// The clauses that do not hold for these figures, each with what was observed.
    pub fn breaches(&self, latency: &LatencyReport, errors: u64, total: u64) -> Vec<Breach> {
        let error_percent = percent(errors, total);
        self.clauses
            .iter()
            .filter_map(|clause| {
                let (observed, limit, unit) = match clause.bound {
                    SloBound::Latency(stat, limit) => {
                        let value = match stat {
                            LatencyStat::Percentile(name) => latency.percentile(name),
                            LatencyStat::Max => latency.max_us,
                        };
                        (value as f64, limit.as_secs_f64() * 1e6, "us")
                    }
                    SloBound::ErrorPercent(limit) => (error_percent, limit, "%"),
                };
                (observed >= limit).then(|| Breach {
                    clause: clause.text.clone(),
                    observed,
                    limit,
                    unit: unit.to_string(),
                })
            })
            .collect()
    }
}

impl fmt::Display for Slo {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let texts: Vec<&str> = self.clauses.iter().map(|c| c.text.as_str()).collect();
        f.write_str(&texts.join(", "))
    }
}

fn parse_clause(text: &str, part: std::ops::Range<usize>) -> Result<SloClause, ConditionError> {
    let condition = conditions::parse_part(text, part, &SLO_WORDS)?;
    let bound = match condition.limit {
        Limit::Latency(limit) => {
            let stat = match condition.stat {
                Some("max") => LatencyStat::Max,
                stat => LatencyStat::Percentile(stat.unwrap_or("p99")),
            };
            SloBound::Latency(stat, limit)
        }
        limit => SloBound::ErrorPercent(limit.value()),
    };
    let text: String = condition.text.chars().filter(|c| !c.is_whitespace()).collect();
    Ok(SloClause { text, bound })
}

/// The pseudo-clause a step breaches when no response at all was a success.
pub const NO_SUCCESS: &str = "successes>0";

/// A clause that did not hold, and by how much.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Breach {
    /// The clause, such as `p99<50ms`.
    pub clause: String,
    /// What the step measured: microseconds or percent.
    pub observed: f64,
    /// The clause's limit, in the same unit.
    pub limit: f64,
    /// `us` or `%`.
    pub unit: String,
}

impl Breach {
    /// `p99 812.00ms >= 50ms (16.2x)`.
    pub fn describe(&self) -> String {
        let name = self.clause.split('<').next().unwrap_or("");
        let ratio = if self.limit > 0.0 { self.observed / self.limit } else { f64::INFINITY };
        if self.clause == NO_SUCCESS {
            "no successful response".to_string()
        } else if self.unit == "%" {
            format!("{name} {:.2}% >= {}% ({ratio:.1}x)", self.observed, trim(self.limit))
        } else {
            format!("{name} {} >= {} ({ratio:.1}x)", format_micros(self.observed), format_micros(self.limit))
        }
    }
}
