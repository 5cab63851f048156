//! The service-level objective of a capacity search: its clauses (`p99<50ms`,
//! `errors<0.1%`), parsed with the position of a mistake, and what a breach is.

use super::*;

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

/// A bad SLO text: where (1-based character position) and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SloError {
    /// Character position of the fault in the SLO text, from 1.
    pub position: usize,
    /// What is wrong there.
    pub message: String,
}

impl fmt::Display for SloError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {}: {}", self.position, self.message)
    }
}

impl std::error::Error for SloError {}

pub(super) const SLO_METRICS: &str = "p50, p75, p90, p95, p99, p99.9, p99.99, max or errors";

impl Slo {
    /// Parses comma-separated clauses: `p50|p75|p90|p95|p99|p99.9|p99.99|max < DURATION` and
    /// `errors < PCT%`, for example `p99<500ms, errors<0.1%`.
    pub fn parse(text: &str) -> Result<Slo, SloError> {
        let mut clauses = Vec::new();
        let mut offset = 0;
        for part in text.split(',') {
            clauses.push(parse_clause(text, part, offset)?);
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

/// Character position (from 1) of byte `offset` in `text`.
pub(super) fn position(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())].chars().count() + 1
}

pub(super) fn parse_clause(text: &str, part: &str, offset: usize) -> Result<SloClause, SloError> {
    let error = |at: usize, message: String| SloError { position: position(text, at), message };
    let leading = part.len() - part.trim_start().len();
    let body = part.trim();
    let start = offset + leading;
    if body.is_empty() {
        return Err(error(
            start,
            format!("an empty clause (expected {SLO_METRICS} followed by '<' and a limit)"),
        ));
    }
    let Some(less) = body.find('<') else {
        // Point at the comparison that is there (`p99>5ms`, `p99=5ms`), else at the end.
        return Err(match body.find(['>', '=', '!']) {
            Some(at) => error(
                start + at,
                format!(
                    "only '<' is supported: write '{}<{}'",
                    body[..at].trim(),
                    body[at + 1..].trim_start_matches(['=', '>']).trim()
                ),
            ),
            None => error(start + body.len(), format!("expected '<' and a limit after '{body}'")),
        });
    };
    let metric = body[..less].trim();
    let value = body[less + 1..].trim();
    let value_start = start + less + 1 + (body[less + 1..].len() - body[less + 1..].trim_start().len());
    if value.starts_with('=') {
        return Err(error(value_start, "only '<' is supported (the limit itself fails)".into()));
    }
    let bound = if metric.eq_ignore_ascii_case("errors") {
        let Some(number) = value.strip_suffix('%') else {
            return Err(error(
                value_start,
                format!("expected a percentage such as 0.1% after 'errors<', got '{value}'"),
            ));
        };
        match number.trim().parse::<f64>() {
            Ok(limit) if limit.is_finite() && limit > 0.0 && limit <= 100.0 => SloBound::ErrorPercent(limit),
            _ => {
                return Err(error(
                    value_start,
                    format!("'{value}' is not a percentage above 0% and at most 100%"),
                ))
            }
        }
    } else {
        let stat = if metric.eq_ignore_ascii_case("max") {
            LatencyStat::Max
        } else {
            let name = metric.to_ascii_lowercase();
            match PERCENTILES.iter().find(|(known, _)| *known == name) {
                Some((known, _)) => LatencyStat::Percentile(known),
                None => {
                    let message = if metric.is_empty() {
                        format!("expected {SLO_METRICS} before '<'")
                    } else {
                        format!("unknown figure '{metric}' (expected {SLO_METRICS})")
                    };
                    return Err(error(start, message));
                }
            }
        };
        match parse_duration(value) {
            Ok(limit) if !limit.is_zero() => SloBound::Latency(stat, limit),
            Ok(_) => return Err(error(value_start, "the latency limit must be longer than zero".into())),
            Err(err) => return Err(error(value_start, err.to_string())),
        }
    };
    let text: String = body.chars().filter(|c| !c.is_whitespace()).collect();
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
