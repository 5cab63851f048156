//! One grammar for the conditions that judge a run: `[METHOD:] METRIC [pNN] OP LIMIT`, as in
//! `p99 < 500ms`, `getBlock: errors < 0.1%`, `rate >= 1000 req/s` or `lag p99 < 2s`.
//!
//! `run --threshold` and scenario `thresholds`, the SLO of `capacity --slo` and the thresholds
//! of `subscribe` all parse here. Each passes in its own [`Vocabulary`] (its metrics, the
//! comparisons it allows, whether a condition may name one call); the grammar, the units of
//! the limits and every error message are the same for all of them. A [`ConditionError`] gives
//! the character column of the fault, which a scenario file turns into `file:line:col`.

use std::fmt;
use std::time::Duration;

use crate::util::units::parse_duration;

/// A comparison between what a run measured and a condition's limit.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operator {
    /// `<`: the value must stay below the limit.
    Below,
    /// `<=`: the value may reach the limit.
    AtMost,
    /// `>`: the value must stay above the limit.
    Above,
    /// `>=`: the value may be the limit.
    AtLeast,
}

impl Operator {
    /// How the operator is written.
    pub fn symbol(self) -> &'static str {
        match self {
            Operator::Below => "<",
            Operator::AtMost => "<=",
            Operator::Above => ">",
            Operator::AtLeast => ">=",
        }
    }

    /// Whether `actual` meets the condition against `limit`.
    pub fn holds(self, actual: f64, limit: f64) -> bool {
        match self {
            Operator::Below => actual < limit,
            Operator::AtMost => actual <= limit,
            Operator::Above => actual > limit,
            Operator::AtLeast => actual >= limit,
        }
    }
}

/// Every comparison: what `--threshold` allows.
pub const ALL_OPERATORS: &[Operator] =
    &[Operator::Below, Operator::AtMost, Operator::Above, Operator::AtLeast];

/// What a metric measures, which says how its limit is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Quantity {
    /// A duration: `500us`, `500µs`, `250ms`, `2s`.
    Latency,
    /// A share of requests: `0.1%`, from 0% to 100%.
    Percent,
    /// Requests per second: `1000`, `1000/s`, `1000 req/s`, `1000rps`.
    Rate,
    /// A whole number of events: `1`.
    Count,
}

/// One metric a user of the grammar knows.
#[derive(Debug, Clone, Copy)]
pub struct MetricWord<M: 'static> {
    /// What the user calls it in code.
    pub id: M,
    /// Its spellings, the first the one shown (matched without regard to case).
    pub names: &'static [&'static str],
    /// What it measures.
    pub quantity: Quantity,
    /// The statistics it may be followed by (`p99`, `max`), lowercase; empty when none.
    pub stats: &'static [&'static str],
    /// The statistic when none is written; `None` makes one required when `stats` has any.
    pub default_stat: Option<&'static str>,
}

/// The metrics and comparisons one user of the grammar accepts.
#[derive(Debug, Clone, Copy)]
pub struct Vocabulary<M: 'static> {
    /// The metrics.
    pub metrics: &'static [MetricWord<M>],
    /// The metric whose statistics may be written alone (`p99 < 500ms` for a latency).
    pub bare_stats: Option<M>,
    /// The comparisons allowed.
    pub operators: &'static [Operator],
    /// Whether a condition may name one call (`getBlock: p99 < 800ms`).
    pub scopes: bool,
    /// Whether a limit of zero is refused (a condition `< 0` that can never hold).
    pub limits_above_zero: bool,
}

/// A condition's limit, in its metric's quantity.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Limit {
    /// A duration.
    Latency(Duration),
    /// A percentage from 0 to 100.
    Percent(f64),
    /// Requests per second.
    Rate(f64),
    /// A whole number.
    Count(u64),
}

impl Limit {
    /// The limit as a number: microseconds, percent, requests per second or a count.
    pub fn value(&self) -> f64 {
        match *self {
            Limit::Latency(duration) => duration.as_secs_f64() * 1e6,
            Limit::Percent(value) | Limit::Rate(value) => value,
            Limit::Count(count) => count as f64,
        }
    }
}

/// One parsed condition.
#[derive(Debug, Clone, PartialEq)]
pub struct Condition<M> {
    /// The condition as written, without surrounding spaces.
    pub text: String,
    /// The call it applies to, if not the whole run.
    pub scope: Option<String>,
    /// What it measures.
    pub metric: M,
    /// The statistic of the metric (`p99`, `max`, `mean`), lowercase, if it has one.
    pub stat: Option<&'static str>,
    /// The comparison.
    pub operator: Operator,
    /// The limit.
    pub limit: Limit,
}

/// What is wrong with a condition.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ConditionErrorKind {
    /// Nothing (or only spaces) where a condition belongs.
    Empty,
    /// `: p99 < 1s`: a scope with no call before the `:`.
    EmptyScope,
    /// A scope where conditions judge the whole run.
    ScopeNotAllowed {
        /// The scope written.
        scope: String,
    },
    /// No `<`, `>` or the like.
    NoComparison,
    /// A comparison this user does not allow, or `=`/`!=`.
    Operator {
        /// The comparison written.
        found: String,
        /// The comparisons allowed.
        allowed: &'static [Operator],
        /// The condition rewritten with the first allowed comparison.
        rewritten: String,
    },
    /// Nothing before the comparison.
    NoMetric {
        /// The metrics known, as a list to show.
        known: String,
    },
    /// A metric this user does not know.
    UnknownMetric {
        /// The metric written.
        name: String,
        /// The metrics known, as a list to show.
        known: String,
    },
    /// A statistic (`p98`) that is not known.
    UnknownStat {
        /// The statistic written.
        name: String,
        /// The statistics known, as a list to show.
        known: String,
    },
    /// A statistic after a metric that has none (`gaps p99`).
    NoStat {
        /// The metric.
        metric: &'static str,
    },
    /// A metric that needs a statistic written without one.
    StatRequired {
        /// The metric.
        metric: &'static str,
        /// The statistics known, as a list to show.
        known: String,
    },
    /// A word after the metric and its statistic.
    Extra {
        /// The word.
        word: String,
    },
    /// Nothing after the comparison.
    NoLimit {
        /// The comparison.
        operator: &'static str,
    },
    /// A latency limit that is not a duration.
    NotDuration {
        /// The limit written.
        given: String,
    },
    /// A percentage limit without `%` or not a number.
    NotPercentage {
        /// The limit written.
        given: String,
    },
    /// A percentage outside 0% to 100%.
    PercentRange {
        /// The limit written.
        given: String,
    },
    /// A rate limit that is not a number of requests per second.
    NotRate {
        /// The limit written.
        given: String,
    },
    /// A count limit that is not a whole number.
    NotCount {
        /// The limit written.
        given: String,
    },
    /// A limit of zero where that can never hold.
    NotAboveZero {
        /// What the limit measures.
        quantity: Quantity,
    },
}

impl fmt::Display for ConditionErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        use ConditionErrorKind::*;
        match self {
            Empty => write!(f, "an empty condition: expected {SHAPE}"),
            EmptyScope => f.write_str("the call before ':' is empty"),
            ScopeNotAllowed { scope } => {
                write!(f, "'{scope}:' names one call, but these conditions judge the whole run")
            }
            NoComparison => write!(f, "no comparison: expected {SHAPE}"),
            Operator { found, allowed, rewritten } => match allowed {
                [only] => {
                    let note = if found.starts_with(only.symbol()) { " (a value at the limit fails)" } else { "" };
                    write!(f, "only '{}' is supported here{note}, not '{found}': write '{rewritten}'", only.symbol())
                }
                _ => {
                    let symbols: Vec<&str> = allowed.iter().map(|op| op.symbol()).collect();
                    write!(f, "'{found}' is not a comparison: use {}", list(&symbols))
                }
            },
            NoMetric { known } => write!(f, "no metric before the comparison (known: {known})"),
            UnknownMetric { name, known } => write!(f, "unknown metric '{name}' (known: {known})"),
            UnknownStat { name, known } => write!(f, "unknown percentile '{name}' (known: {known})"),
            NoStat { metric } => write!(f, "'{metric}' takes no percentile"),
            StatRequired { metric, known } => write!(f, "'{metric}' needs a percentile: one of {known}"),
            Extra { word } => write!(f, "unexpected '{word}' before the comparison"),
            NoLimit { operator } => write!(f, "no limit after '{operator}'"),
            NotDuration { given } => write!(
                f,
                "the limit '{given}' is not a duration: expected a duration such as 500us, 250ms, 10s or 1m"
            ),
            NotPercentage { given } => {
                write!(f, "the limit '{given}' is not a percentage: expected a percentage such as 0.1%")
            }
            PercentRange { given } => write!(f, "the limit '{given}' is not a percentage from 0% to 100%"),
            NotRate { given } => write!(
                f,
                "the limit '{given}' is not a number of requests per second: expected a rate such as 1000 or 1000/s"
            ),
            NotCount { given } => {
                write!(f, "the limit '{given}' is not a count: expected a whole number such as 1")
            }
            NotAboveZero { quantity } => match quantity {
                Quantity::Latency => f.write_str("the limit must be longer than zero (nothing is faster)"),
                Quantity::Percent => f.write_str("the limit must be above 0% (no share is below it)"),
                Quantity::Rate | Quantity::Count => f.write_str("the limit must be above zero"),
            },
        }
    }
}

/// How a condition is written, for the messages.
const SHAPE: &str = "METRIC [pNN] < LIMIT, such as 'p99 < 500ms'";

/// A condition that cannot be parsed: what is wrong, and where.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConditionError {
    text: String,
    offset: usize,
    kind: ConditionErrorKind,
}

impl ConditionError {
    /// What is wrong.
    pub fn kind(&self) -> &ConditionErrorKind {
        &self.kind
    }

    /// The text parsed (for an SLO, all its clauses).
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Byte offset of the fault in [`ConditionError::text`].
    pub fn offset(&self) -> usize {
        self.offset
    }

    /// Character column of the fault in [`ConditionError::text`], from 1.
    pub fn column(&self) -> usize {
        self.text[..self.offset.min(self.text.len())].chars().count() + 1
    }
}

impl fmt::Display for ConditionError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "at character {} of '{}': {}", self.column(), self.text, self.kind)
    }
}

impl std::error::Error for ConditionError {}

/// Parses one condition.
pub fn parse<M: Copy + PartialEq>(
    text: &str,
    vocabulary: &Vocabulary<M>,
) -> Result<Condition<M>, ConditionError> {
    parse_part(text, 0..text.len(), vocabulary)
}

/// Parses the condition in `text[part]` (one clause of a list), with errors placed in the whole
/// `text`.
pub fn parse_part<M: Copy + PartialEq>(
    text: &str,
    part: std::ops::Range<usize>,
    vocabulary: &Vocabulary<M>,
) -> Result<Condition<M>, ConditionError> {
    let error =
        |offset: usize, kind: ConditionErrorKind| ConditionError { text: text.to_string(), offset, kind };
    let raw = &text[part.clone()];
    let start = part.start + (raw.len() - raw.trim_start().len());
    let body = raw.trim();
    let end = start + body.len();
    if body.is_empty() {
        return Err(error(start, ConditionErrorKind::Empty));
    }
    let operator_at = text[start..end].find(['<', '>', '=', '!', '≤', '≥']).map(|at| start + at);
    let (scope, metric_start) = match text[start..operator_at.unwrap_or(end)].split_once(':') {
        Some((scope, _)) => {
            let name = scope.trim();
            if name.is_empty() {
                return Err(error(start, ConditionErrorKind::EmptyScope));
            }
            if !vocabulary.scopes {
                return Err(error(start, ConditionErrorKind::ScopeNotAllowed { scope: name.to_string() }));
            }
            (Some(name.to_string()), start + scope.len() + 1)
        }
        None => (None, start),
    };
    let Some(operator_at) = operator_at else {
        return Err(error(end, ConditionErrorKind::NoComparison));
    };
    let (operator, operator_len) = read_operator(&text[operator_at..end]);
    let operator = match operator {
        Some(operator) if vocabulary.operators.contains(&operator) => operator,
        _ => {
            let allowed = vocabulary.operators;
            let rewritten = format!(
                "{}{}{}",
                &text[start..operator_at],
                allowed[0].symbol(),
                &text[operator_at + operator_len..end]
            );
            return Err(error(
                operator_at,
                ConditionErrorKind::Operator {
                    found: text[operator_at..operator_at + operator_len].to_string(),
                    allowed,
                    rewritten,
                },
            ));
        }
    };
    let (metric, stat) =
        read_metric(text, metric_start, operator_at, vocabulary).map_err(|(at, kind)| error(at, kind))?;
    let after = &text[operator_at + operator_len..end];
    let value_at = operator_at + operator_len + (after.len() - after.trim_start().len());
    let given = after.trim();
    if given.is_empty() {
        return Err(error(value_at, ConditionErrorKind::NoLimit { operator: operator.symbol() }));
    }
    let limit = read_limit(given, metric.quantity).map_err(|kind| error(value_at, kind))?;
    if vocabulary.limits_above_zero && limit.value() == 0.0 {
        return Err(error(value_at, ConditionErrorKind::NotAboveZero { quantity: metric.quantity }));
    }
    Ok(Condition { text: body.to_string(), scope, metric: metric.id, stat, operator, limit })
}

/// The operator at the start of `text` (which starts with one of `<>=!≤≥`) and its length in
/// bytes; `None` for `=`, `==` and `!=`, which are not comparisons of a measure.
fn read_operator(text: &str) -> (Option<Operator>, usize) {
    let first = text.chars().next().unwrap_or('=');
    let equals = text[first.len_utf8()..].starts_with('=');
    match (first, equals) {
        ('<', true) => (Some(Operator::AtMost), 2),
        ('<', false) => (Some(Operator::Below), 1),
        ('>', true) => (Some(Operator::AtLeast), 2),
        ('>', false) => (Some(Operator::Above), 1),
        ('≤', _) => (Some(Operator::AtMost), first.len_utf8()),
        ('≥', _) => (Some(Operator::AtLeast), first.len_utf8()),
        (_, true) => (None, 2),
        (_, false) => (None, 1),
    }
}

type Fault = (usize, ConditionErrorKind);

/// The metric and statistic written in `text[start..end]`.
fn read_metric<M: Copy + PartialEq>(
    text: &str,
    start: usize,
    end: usize,
    vocabulary: &Vocabulary<M>,
) -> Result<(MetricWord<M>, Option<&'static str>), Fault> {
    let words: Vec<(usize, &str)> = words(&text[start..end]).map(|(at, word)| (start + at, word)).collect();
    let Some(&(first_at, first)) = words.first() else {
        return Err((end, ConditionErrorKind::NoMetric { known: known_metrics(vocabulary) }));
    };
    // A percentile nobody knows is named as such, whatever the vocabulary.
    for &(at, word) in &words {
        if looks_like_percentile(word) && !all_stats(vocabulary).any(|stat| stat.eq_ignore_ascii_case(word)) {
            let known: Vec<&str> = all_stats(vocabulary).filter(|stat| looks_like_percentile(stat)).collect();
            return Err((
                at,
                ConditionErrorKind::UnknownStat { name: word.to_string(), known: list(&known) },
            ));
        }
    }
    let named = vocabulary
        .metrics
        .iter()
        .find(|metric| metric.names.iter().any(|name| name.eq_ignore_ascii_case(first)));
    let (metric, stat, next) = match named {
        Some(metric) => match words.get(1) {
            Some(&(at, word)) => {
                if metric.stats.is_empty() {
                    return Err((at, ConditionErrorKind::NoStat { metric: metric.names[0] }));
                }
                match find_stat(metric, word) {
                    Some(stat) => (*metric, Some(stat), 2),
                    None => {
                        return Err((
                            at,
                            ConditionErrorKind::UnknownStat {
                                name: word.to_string(),
                                known: list(metric.stats),
                            },
                        ))
                    }
                }
            }
            None if !metric.stats.is_empty() && metric.default_stat.is_none() => {
                return Err((
                    first_at,
                    ConditionErrorKind::StatRequired { metric: metric.names[0], known: list(metric.stats) },
                ))
            }
            None => (*metric, metric.default_stat, 1),
        },
        None => {
            let bare = vocabulary
                .bare_stats
                .and_then(|id| vocabulary.metrics.iter().find(|metric| metric.id == id))
                .and_then(|metric| find_stat(metric, first).map(|stat| (*metric, stat)));
            match bare {
                Some((metric, stat)) => (metric, Some(stat), 1),
                None => {
                    return Err((
                        first_at,
                        ConditionErrorKind::UnknownMetric {
                            name: first.to_string(),
                            known: known_metrics(vocabulary),
                        },
                    ))
                }
            }
        }
    };
    if let Some(&(at, word)) = words.get(next) {
        return Err((at, ConditionErrorKind::Extra { word: word.to_string() }));
    }
    Ok((metric, stat))
}

fn find_stat<M>(metric: &MetricWord<M>, word: &str) -> Option<&'static str> {
    metric.stats.iter().copied().find(|stat| stat.eq_ignore_ascii_case(word))
}

fn all_stats<M>(vocabulary: &Vocabulary<M>) -> impl Iterator<Item = &'static str> + '_ {
    let mut seen: Vec<&'static str> = Vec::new();
    vocabulary.metrics.iter().flat_map(|metric| metric.stats.iter().copied()).filter(move |stat| {
        let new = !seen.contains(stat);
        seen.push(stat);
        new
    })
}

/// `p` followed by digits and dots: the shape of a percentile's name.
fn looks_like_percentile(word: &str) -> bool {
    let mut chars = word.chars();
    matches!(chars.next(), Some('p' | 'P'))
        && word.len() > 1
        && chars.clone().all(|c| c.is_ascii_digit() || c == '.')
        && chars.any(|c| c.is_ascii_digit())
}

/// The metrics of a vocabulary as a list to show: the bare statistics, `lag pNN`, `errors`.
fn known_metrics<M: Copy + PartialEq>(vocabulary: &Vocabulary<M>) -> String {
    let mut names: Vec<String> = Vec::new();
    for metric in vocabulary.metrics {
        if vocabulary.bare_stats.is_some_and(|id| id == metric.id) {
            names.extend(metric.stats.iter().map(|stat| stat.to_string()));
        } else if metric.stats.is_empty() {
            names.push(metric.names[0].to_string());
        } else {
            names.push(format!("{} pNN", metric.names[0]));
        }
    }
    let names: Vec<&str> = names.iter().map(String::as_str).collect();
    list(&names)
}

/// `a, b or c`.
fn list(items: &[&str]) -> String {
    match items {
        [] => String::new(),
        [only] => only.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

/// The words of `text` (split at whitespace) with their byte offsets.
fn words(text: &str) -> impl Iterator<Item = (usize, &str)> {
    let mut rest = 0;
    std::iter::from_fn(move || {
        let tail = &text[rest..];
        let start = rest + tail.find(|c: char| !c.is_whitespace())?;
        let end = text[start..].find(char::is_whitespace).map_or(text.len(), |len| start + len);
        rest = end;
        Some((start, &text[start..end]))
    })
}

/// The limit `given` (trimmed, not empty) for a metric measuring `quantity`.
fn read_limit(given: &str, quantity: Quantity) -> Result<Limit, ConditionErrorKind> {
    let owned = || given.to_string();
    match quantity {
        Quantity::Latency => match parse_duration(given) {
            Ok(limit) => Ok(Limit::Latency(limit)),
            Err(_) => Err(ConditionErrorKind::NotDuration { given: owned() }),
        },
        Quantity::Percent => {
            let number = given
                .strip_suffix('%')
                .ok_or_else(|| ConditionErrorKind::NotPercentage { given: owned() })?;
            let value: f64 =
                number.trim().parse().map_err(|_| ConditionErrorKind::NotPercentage { given: owned() })?;
            if !(0.0..=100.0).contains(&value) {
                return Err(ConditionErrorKind::PercentRange { given: owned() });
            }
            Ok(Limit::Percent(value))
        }
        Quantity::Rate => {
            let number = ["req/s", "rps", "/s"]
                .iter()
                .find_map(|unit| given.strip_suffix(unit))
                .unwrap_or(given)
                .trim();
            match number.parse::<f64>() {
                Ok(value) if value.is_finite() && value >= 0.0 => Ok(Limit::Rate(value)),
                _ => Err(ConditionErrorKind::NotRate { given: owned() }),
            }
        }
        Quantity::Count => given
            .parse::<u64>()
            .map(Limit::Count)
            .map_err(|_| ConditionErrorKind::NotCount { given: owned() }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Word {
        Latency,
        Lag,
        Errors,
        Rate,
        Gaps,
    }

    const WORDS: Vocabulary<Word> = Vocabulary {
        metrics: &[
            MetricWord {
                id: Word::Latency,
                names: &["latency"],
                quantity: Quantity::Latency,
                stats: &["p50", "p99", "max"],
                default_stat: None,
            },
            MetricWord {
                id: Word::Lag,
                names: &["lag"],
                quantity: Quantity::Latency,
                stats: &["p50", "p99"],
                default_stat: Some("p99"),
            },
            MetricWord {
                id: Word::Errors,
                names: &["errors"],
                quantity: Quantity::Percent,
                stats: &[],
                default_stat: None,
            },
            MetricWord {
                id: Word::Rate,
                names: &["rate"],
                quantity: Quantity::Rate,
                stats: &[],
                default_stat: None,
            },
            MetricWord {
                id: Word::Gaps,
                names: &["gaps"],
                quantity: Quantity::Count,
                stats: &[],
                default_stat: None,
            },
        ],
        bare_stats: Some(Word::Latency),
        operators: ALL_OPERATORS,
        scopes: true,
        limits_above_zero: false,
    };

    #[test]
    fn conditions_read_metric_statistic_comparison_and_limit_in_their_units() {
        let c = parse(" getBlock: P99 <= 800ms ", &WORDS).unwrap();
        assert_eq!(c.text, "getBlock: P99 <= 800ms");
        assert_eq!(c.scope.as_deref(), Some("getBlock"));
        assert_eq!((c.metric, c.stat, c.operator), (Word::Latency, Some("p99"), Operator::AtMost));
        assert_eq!(c.limit, Limit::Latency(Duration::from_millis(800)));
        let c = parse("lag < 2s", &WORDS).unwrap();
        assert_eq!((c.metric, c.stat), (Word::Lag, Some("p99")));
        let c = parse("latency max<500µs", &WORDS).unwrap();
        assert_eq!((c.stat, c.limit), (Some("max"), Limit::Latency(Duration::from_micros(500))));
        assert_eq!(parse("errors < 0.1 %", &WORDS).unwrap().limit, Limit::Percent(0.1));
        for rate in ["rate > 1000", "rate > 1000/s", "rate > 1000 req/s", "rate > 1000rps"] {
            assert_eq!(parse(rate, &WORDS).unwrap().limit, Limit::Rate(1000.0), "{rate}");
        }
        assert_eq!(parse("gaps ≥ 3", &WORDS).unwrap().operator, Operator::AtLeast);
        assert_eq!(parse("gaps < 3", &WORDS).unwrap().limit, Limit::Count(3));
    }

    #[test]
    fn a_bad_condition_names_the_character_column_of_its_fault() {
        for (text, column, message) in [
            ("p99 500ms", 10, "no comparison"),
            ("  ", 3, "an empty condition"),
            (": p99 < 1s", 1, "the call before ':' is empty"),
            ("p99 = 1s", 5, "'=' is not a comparison: use <, <=, > or >="),
            ("p99 != 1s", 5, "'!=' is not a comparison"),
            (
                "< 1s",
                1,
                "no metric before the comparison (known: p50, p99, max, lag pNN, errors, rate or gaps)",
            ),
            ("speed < 1", 1, "unknown metric 'speed' (known: p50, p99, max, lag pNN, errors, rate or gaps)"),
            ("lag p42 < 1s", 5, "unknown percentile 'p42' (known: p50 or p99)"),
            ("lag max < 1s", 5, "unknown percentile 'max' (known: p50 or p99)"),
            ("gaps p99 < 1", 6, "'gaps' takes no percentile"),
            ("latency < 1s", 1, "'latency' needs a percentile: one of p50, p99 or max"),
            ("lag p99 now < 1s", 9, "unexpected 'now'"),
            ("p99 <", 6, "no limit after '<'"),
            ("µ: p99 < soon", 10, "the limit 'soon' is not a duration"),
            ("errors < 1", 10, "expected a percentage such as 0.1%"),
            ("errors < 120%", 10, "not a percentage from 0% to 100%"),
            ("rate > -5", 8, "not a number of requests per second"),
            ("gaps < 1.5", 8, "not a count"),
        ] {
            let err = parse(text, &WORDS).unwrap_err();
            assert_eq!(err.column(), column, "{text:?}: {err}");
            assert!(err.kind().to_string().contains(message), "{text:?}: {err}");
            assert_eq!(err.to_string(), format!("at character {column} of '{text}': {}", err.kind()));
        }
    }

    #[test]
    fn a_vocabulary_limits_the_comparisons_scopes_and_zero_limits() {
        const STRICT: Vocabulary<Word> =
            Vocabulary { operators: &[Operator::Below], scopes: false, limits_above_zero: true, ..WORDS };
        let err = parse("p99 >= 5ms", &STRICT).unwrap_err();
        assert_eq!(err.column(), 5);
        assert_eq!(err.kind().to_string(), "only '<' is supported here, not '>=': write 'p99 < 5ms'");
        let err = parse("p99<=5ms", &STRICT).unwrap_err();
        assert!(err.kind().to_string().contains("(a value at the limit fails)"), "{err}");
        let err = parse("getSlot: p99 < 5ms", &STRICT).unwrap_err();
        assert_eq!((err.column(), err.kind().to_string().contains("the whole run")), (1, true), "{err}");
        assert!(parse("errors < 0%", &STRICT).unwrap_err().kind().to_string().contains("above 0%"));
        assert!(parse("errors < 0%", &WORDS).is_ok());
        let err = parse_part("p99<1s, speed<1", 7..15, &STRICT).unwrap_err();
        assert_eq!(err.column(), 9, "{err}");
    }
}
