//! Which answers mean "over the rate limit": HTTP 429, and JSON-RPC errors by code or by a
//! message that speaks of a rate. Providers answer over-limit calls in all these ways (inside
//! HTTP 200 too, and per call inside a batch); the engine asks [`RateLimitRules::judge`] about
//! every 429 and every JSON-RPC error, so they are counted as [`Outcome::RateLimited`], apart
//! from other errors.
//!
//! The codes recognised by default are -32029 and 429 (codes providers use for nothing but
//! rate limits). -32005 "limit exceeded" is not among them: geth answers it for query limits
//! too (too many logs), so it counts as rate limited only when its message speaks of a rate;
//! a run adds codes of its own (`--rate-limit-code -32005`, or a scenario's
//! `rate_limit_codes`).

use crate::outcome::{Outcome, RateLimitSign};

/// JSON-RPC codes that mean "rate limited" whatever their message.
pub(crate) const DEFAULT_RATE_LIMIT_CODES: [i64; 2] = [-32029, 429];

/// Words in an error message that mean "rate limited" (compared in ASCII lower case).
pub(crate) const RATE_LIMIT_WORDS: [&str; 6] =
    ["rate limit", "ratelimit", "rate-limit", "too many requests", "request rate", "exceeded the rate"];

/// The rules of one run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RateLimitRules {
    codes: Vec<i64>,
}

impl Default for RateLimitRules {
    fn default() -> Self {
        Self { codes: DEFAULT_RATE_LIMIT_CODES.to_vec() }
    }
}

impl RateLimitRules {
    /// The default rules and the codes `extra`.
    pub fn with_codes(extra: &[i64]) -> Self {
        let mut rules = Self::default();
        for code in extra {
            if !rules.codes.contains(code) {
                rules.codes.push(*code);
            }
        }
        rules
    }

    /// The codes recognised whatever their message.
    pub fn codes(&self) -> &[i64] {
        &self.codes
    }

    /// The outcome of an answer after the rules: an HTTP 429, or a JSON-RPC error whose code
    /// is listed or whose message (in `body`, the call's own answer) speaks of a rate, is
    /// [`Outcome::RateLimited`]; every other outcome is returned as it is.
    #[inline]
    pub fn judge(&self, outcome: Outcome, body: &[u8]) -> Outcome {
        match outcome {
            Outcome::HttpStatus(429) => Outcome::RateLimited(RateLimitSign::Http(429)),
            Outcome::RpcError(code) if self.codes.contains(&code) || speaks_of_a_rate(body) => {
                Outcome::RateLimited(RateLimitSign::Rpc(code))
            }
            other => other,
        }
    }
}

/// Whether the error message in `body` says "rate limit" or alike. Only the first 4 KiB are
/// searched: an error answer is short, and a hostile one cannot make this slow.
fn speaks_of_a_rate(body: &[u8]) -> bool {
    let head = &body[..body.len().min(4096)];
    let lower: Vec<u8> = head.iter().map(u8::to_ascii_lowercase).collect();
    RATE_LIMIT_WORDS.iter().any(|word| memchr::memmem::find(&lower, word.as_bytes()).is_some())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_judged_rate_limited_by_status_code_or_message() {
        let rules = RateLimitRules::default();
        let error = |code: i64, message: &str| {
            format!(r#"{{"jsonrpc":"2.0","id":1,"error":{{"code":{code},"message":"{message}"}}}}"#)
        };
        let cases: [(Outcome, String, Outcome); 8] = [
            (Outcome::HttpStatus(429), String::new(), Outcome::RateLimited(RateLimitSign::Http(429))),
            (Outcome::HttpStatus(503), String::new(), Outcome::HttpStatus(503)),
            (
                Outcome::RpcError(-32029),
                error(-32029, "slow down"),
                Outcome::RateLimited(RateLimitSign::Rpc(-32029)),
            ),
            (Outcome::RpcError(429), error(429, "x"), Outcome::RateLimited(RateLimitSign::Rpc(429))),
            (
                Outcome::RpcError(-32005),
                error(-32005, "Request Rate Limited: 25/s"),
                Outcome::RateLimited(RateLimitSign::Rpc(-32005)),
            ),
            // geth's query limit is not a rate limit.
            (Outcome::RpcError(-32005), error(-32005, "limit exceeded"), Outcome::RpcError(-32005)),
            (
                Outcome::RpcError(-32000),
                error(-32000, "Too Many Requests"),
                Outcome::RateLimited(RateLimitSign::Rpc(-32000)),
            ),
            (Outcome::Ok, error(-1, "rate limit"), Outcome::Ok),
        ];
        for (outcome, body, judged) in cases {
            assert_eq!(rules.judge(outcome, body.as_bytes()), judged, "{outcome:?} {body}");
        }
        let rules = RateLimitRules::with_codes(&[-32005]);
        assert_eq!(
            rules.judge(Outcome::RpcError(-32005), error(-32005, "limit exceeded").as_bytes()),
            Outcome::RateLimited(RateLimitSign::Rpc(-32005))
        );
    }
}
