//! The rate-limit headers servers announce (`Retry-After`, `X-RateLimit-Limit/Remaining/Reset`,
//! the IETF draft's `RateLimit-Limit/Remaining/Reset`, `RateLimit` and `RateLimit-Policy`): read
//! from each answer's head into a small [`RateHeaders`] (no allocation; values are parsed only
//! when a header of those names is there), and summarised over a run in a bounded
//! [`RateHeaderSummary`]: the limit announced, the remaining count at its lowest, the resets
//! and the Retry-After values.

use serde::{Deserialize, Serialize};

/// The rate-limit figures one answer carried. `u32::MAX` stands for "absent" so that the whole
/// stays 16 bytes in every [`crate::transport::Reply`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RateHeaders {
    limit: u32,
    remaining: u32,
    reset: u32,
    retry_after: u32,
}

const ABSENT: u32 = u32::MAX;

impl Default for RateHeaders {
    fn default() -> Self {
        Self::NONE
    }
}

impl RateHeaders {
    /// No rate-limit header.
    pub const NONE: RateHeaders =
        RateHeaders { limit: ABSENT, remaining: ABSENT, reset: ABSENT, retry_after: ABSENT };

    /// Whether any of the headers was there.
    #[inline]
    pub fn any(&self) -> bool {
        *self != Self::NONE
    }

    fn get(value: u32) -> Option<u64> {
        (value != ABSENT).then_some(u64::from(value))
    }

    /// The limit announced.
    pub fn limit(&self) -> Option<u64> {
        Self::get(self.limit)
    }

    /// The requests remaining in the window.
    pub fn remaining(&self) -> Option<u64> {
        Self::get(self.remaining)
    }

    /// The reset, as the server gave it (seconds to go, or a Unix time).
    pub fn reset(&self) -> Option<u64> {
        Self::get(self.reset)
    }

    /// `Retry-After` in seconds (the delta-seconds form; an HTTP date is not read).
    pub fn retry_after(&self) -> Option<u64> {
        Self::get(self.retry_after)
    }

    /// Takes one header if it is a rate-limit header; names are compared by length first,
    /// then without case, so other headers cost one length switch. Returns whether it was one.
    #[inline]
    pub fn add(&mut self, name: &[u8], value: &[u8]) -> bool {
        let field = match name.len() {
            11 if name.eq_ignore_ascii_case(b"retry-after") => &mut self.retry_after,
            17 if name.eq_ignore_ascii_case(b"x-ratelimit-limit") => &mut self.limit,
            17 if name.eq_ignore_ascii_case(b"x-ratelimit-reset") => &mut self.reset,
            21 if name.eq_ignore_ascii_case(b"x-ratelimit-remaining") => &mut self.remaining,
            15 if name.eq_ignore_ascii_case(b"ratelimit-limit") => &mut self.limit,
            15 if name.eq_ignore_ascii_case(b"ratelimit-reset") => &mut self.reset,
            19 if name.eq_ignore_ascii_case(b"ratelimit-remaining") => &mut self.remaining,
            9 if name.eq_ignore_ascii_case(b"ratelimit") => {
                self.add_structured(value);
                return true;
            }
            16 if name.eq_ignore_ascii_case(b"ratelimit-policy") => {
                // `100;w=10` or `"default";q=100;w=10`: the quota.
                if let Some(quota) = param(value, b"q").or_else(|| leading_number(value)) {
                    self.limit = quota;
                }
                return true;
            }
            _ => return false,
        };
        if let Some(number) = leading_number(value) {
            *field = number;
        }
        true
    }

    /// `RateLimit: limit=100, remaining=50, reset=5` (draft 07) or `"default";r=50;t=5`.
    fn add_structured(&mut self, value: &[u8]) {
        if let Some(limit) = param(value, b"limit") {
            self.limit = limit;
        }
        if let Some(remaining) = param(value, b"remaining").or_else(|| param(value, b"r")) {
            self.remaining = remaining;
        }
        if let Some(reset) = param(value, b"reset").or_else(|| param(value, b"t")) {
            self.reset = reset;
        }
    }
}

/// The decimal number a value starts with (after spaces), below `u32::MAX`; a larger one is
/// capped there minus one.
fn leading_number(value: &[u8]) -> Option<u32> {
    let digits = value.trim_ascii_start();
    let count = digits.iter().take_while(|b| b.is_ascii_digit()).count();
    if count == 0 {
        return None;
    }
    let mut number: u64 = 0;
    for &byte in &digits[..count] {
        number = (number * 10 + u64::from(byte - b'0')).min(u64::from(ABSENT - 1));
    }
    Some(number as u32)
}

/// The number after `key=` among the `,`/`;`-separated parameters of a value.
fn param(value: &[u8], key: &[u8]) -> Option<u32> {
    value.split(|&b| b == b',' || b == b';').find_map(|part| {
        let part = part.trim_ascii();
        let (name, rest) = part.split_at(part.iter().position(|&b| b == b'=')?);
        name.trim_ascii().eq_ignore_ascii_case(key).then(|| leading_number(&rest[1..])).flatten()
    })
}

/// The most distinct limit values a summary keeps (the rest are counted, not kept).
const MAX_LIMITS: usize = 8;

/// What a run's answers announced, summed over answers (bounded: at most [`MAX_LIMITS`] distinct
/// limits are kept).
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RateHeaderSummary {
    /// Answers that carried at least one rate-limit header.
    pub answers: u64,
    /// The limits announced and how many answers announced each, most common first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub limits: Vec<LimitSeen>,
    /// The last limit announced (by the worker that saw one last, after a merge).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_limit: Option<u64>,
    /// The remaining count at its lowest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub remaining_min: Option<u64>,
    /// Answers with a reset, and the lowest and highest reset given (as the server gave it:
    /// seconds to go, or a Unix time).
    #[serde(default)]
    pub resets: u64,
    /// The shortest reset announced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_min: Option<u64>,
    /// The longest reset announced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reset_max: Option<u64>,
    /// Answers with a `Retry-After` in seconds, the longest and the sum of the values.
    #[serde(default)]
    pub retry_after: u64,
    /// The longest `Retry-After`, seconds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub retry_after_max_s: Option<u64>,
    /// The sum of the `Retry-After` values, seconds.
    #[serde(default)]
    pub retry_after_total_s: u64,
}

/// One limit value and the answers that announced it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct LimitSeen {
    /// The limit announced.
    pub limit: u64,
    /// The answers that announced it.
    pub answers: u64,
}

fn min_of(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.into_iter().chain(b).min()
}

fn max_of(a: Option<u64>, b: Option<u64>) -> Option<u64> {
    a.into_iter().chain(b).max()
}

impl RateHeaderSummary {
    /// Whether no answer carried a rate-limit header.
    pub fn is_empty(&self) -> bool {
        self.answers == 0
    }

    /// Counts one answer's headers.
    pub fn note(&mut self, headers: &RateHeaders) {
        if !headers.any() {
            return;
        }
        self.answers += 1;
        if let Some(limit) = headers.limit() {
            self.count_limit(limit, 1);
            self.last_limit = Some(limit);
        }
        self.remaining_min = min_of(self.remaining_min, headers.remaining());
        if let Some(reset) = headers.reset() {
            self.resets += 1;
            self.reset_min = min_of(self.reset_min, Some(reset));
            self.reset_max = max_of(self.reset_max, Some(reset));
        }
        if let Some(seconds) = headers.retry_after() {
            self.retry_after += 1;
            self.retry_after_max_s = max_of(self.retry_after_max_s, Some(seconds));
            self.retry_after_total_s = self.retry_after_total_s.saturating_add(seconds);
        }
    }

    fn count_limit(&mut self, limit: u64, answers: u64) {
        if let Some(seen) = self.limits.iter_mut().find(|seen| seen.limit == limit) {
            seen.answers += answers;
        } else if self.limits.len() < MAX_LIMITS {
            self.limits.push(LimitSeen { limit, answers });
        }
        self.limits.sort_by(|a, b| b.answers.cmp(&a.answers).then(a.limit.cmp(&b.limit)));
    }

    /// Adds another summary (another worker's, another run's).
    pub fn merge(&mut self, other: &RateHeaderSummary) {
        self.answers += other.answers;
        for seen in &other.limits {
            self.count_limit(seen.limit, seen.answers);
        }
        self.last_limit = other.last_limit.or(self.last_limit);
        self.remaining_min = min_of(self.remaining_min, other.remaining_min);
        self.resets += other.resets;
        self.reset_min = min_of(self.reset_min, other.reset_min);
        self.reset_max = max_of(self.reset_max, other.reset_max);
        self.retry_after += other.retry_after;
        self.retry_after_max_s = max_of(self.retry_after_max_s, other.retry_after_max_s);
        self.retry_after_total_s = self.retry_after_total_s.saturating_add(other.retry_after_total_s);
    }

    /// The limit announced: the most common value.
    pub fn limit(&self) -> Option<u64> {
        self.limits.first().map(|seen| seen.limit)
    }

    /// One line for reports: `limit 100 (announced on 40 answers), remaining at lowest 0,
    /// 12 resets (1-10), Retry-After on 5 answers (max 1 s)`.
    pub fn line(&self) -> String {
        let mut parts = Vec::new();
        if let Some(limit) = self.limit() {
            parts.push(format!("limit {limit}"));
        }
        if let Some(remaining) = self.remaining_min {
            parts.push(format!("remaining at lowest {remaining}"));
        }
        if let (Some(low), Some(high)) = (self.reset_min, self.reset_max) {
            let range = if low == high { low.to_string() } else { format!("{low}-{high}") };
            parts.push(format!("{} resets ({range})", self.resets));
        }
        if let Some(max) = self.retry_after_max_s {
            parts.push(format!("Retry-After on {} answers (max {max} s)", self.retry_after));
        }
        format!("{} (on {} answers)", parts.join(", "), self.answers)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn read(headers: &[(&str, &str)]) -> RateHeaders {
        let mut rate = RateHeaders::NONE;
        for (name, value) in headers {
            rate.add(name.as_bytes(), value.as_bytes());
        }
        rate
    }

    #[test]
    fn rate_limit_headers_of_every_spelling_are_read_and_others_ignored() {
        let rate = read(&[
            ("Content-Length", "12"),
            ("X-RateLimit-Limit", "100"),
            ("x-ratelimit-remaining", " 7"),
            ("X-Ratelimit-Reset", "1700000000"),
            ("Retry-After", "3"),
        ]);
        assert_eq!(
            (rate.limit(), rate.remaining(), rate.reset(), rate.retry_after()),
            (Some(100), Some(7), Some(1_700_000_000), Some(3))
        );
        let rate = read(&[("RateLimit-Limit", "50"), ("RateLimit-Remaining", "0"), ("RateLimit-Reset", "9")]);
        assert_eq!((rate.limit(), rate.remaining(), rate.reset()), (Some(50), Some(0), Some(9)));
        let rate = read(&[("RateLimit", "limit=10, remaining=4, reset=2")]);
        assert_eq!((rate.limit(), rate.remaining(), rate.reset()), (Some(10), Some(4), Some(2)));
        let rate =
            read(&[("RateLimit-Policy", "\"default\";q=25;w=1"), ("RateLimit", "\"default\";r=3;t=1")]);
        assert_eq!((rate.limit(), rate.remaining(), rate.reset()), (Some(25), Some(3), Some(1)));
        // An HTTP date, garbage and huge numbers: no value, or capped; never a panic.
        let rate = read(&[
            ("Retry-After", "Wed, 21 Oct 2015 07:28:00 GMT"),
            ("X-RateLimit-Limit", "99999999999999999999"),
        ]);
        assert_eq!((rate.retry_after(), rate.limit()), (None, Some(u64::from(u32::MAX - 1))));
        assert!(!read(&[("Content-Type", "application/json"), ("Connection", "close")]).any());
    }

    #[test]
    fn the_summary_keeps_the_most_common_limit_the_lowest_remaining_and_retry_afters() {
        let mut first = RateHeaderSummary::default();
        first.note(&RateHeaders::NONE);
        assert!(first.is_empty());
        first.note(&read(&[
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "5"),
            ("X-RateLimit-Reset", "2"),
        ]));
        first.note(&read(&[
            ("X-RateLimit-Limit", "100"),
            ("X-RateLimit-Remaining", "0"),
            ("X-RateLimit-Reset", "1"),
        ]));
        let mut second = RateHeaderSummary::default();
        second.note(&read(&[("X-RateLimit-Limit", "50"), ("Retry-After", "1")]));
        second.note(&read(&[("Retry-After", "4")]));
        first.merge(&second);
        assert_eq!(first.answers, 4);
        assert_eq!(first.limit(), Some(100));
        assert_eq!(first.last_limit, Some(50));
        assert_eq!(first.remaining_min, Some(0));
        assert_eq!((first.resets, first.reset_min, first.reset_max), (2, Some(1), Some(2)));
        assert_eq!((first.retry_after, first.retry_after_max_s, first.retry_after_total_s), (2, Some(4), 5));
        assert_eq!(
            first.line(),
            "limit 100, remaining at lowest 0, 2 resets (1-2), Retry-After on 2 answers (max 4 s) (on 4 answers)"
        );
        // Bounded: many distinct limits keep at most MAX_LIMITS entries.
        let mut many = RateHeaderSummary::default();
        for limit in 0..100 {
            many.note(&read(&[("X-RateLimit-Limit", &limit.to_string())]));
        }
        assert_eq!((many.limits.len(), many.answers), (MAX_LIMITS, 100));
    }
}
