//! What every limits probe shares: the request budget, a refusal and its evidence, the
//! bodies probes send (batches, padded calls) and the search step of doubling then bisection.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::client::{CallError, Endpoint, RawAnswer};
use crate::engine::StopHandle;
use crate::util::printable::one_line;

/// The default of `--max-requests`: the most HTTP requests a probe may send.
pub const DEFAULT_MAX_REQUESTS: u64 = 2_000;
/// What the probe may spend, and what it has spent so far; and whether it was interrupted
/// (Ctrl-C): then it allows nothing more, and every probe ends with what it found so far.
#[derive(Debug, Clone, Serialize)]
pub struct ProbeBudget {
    /// The most HTTP requests (a batch is one) the probe may send.
    pub max_requests: u64,
    /// HTTP requests sent.
    pub requests: u64,
    /// JSON-RPC calls sent (a batch of n is n): what a provider usually counts.
    pub calls: u64,
    /// Whether the probe was stopped before its end (the findings are what it found by then).
    pub interrupted: bool,
    /// What stops it (and the open-loop step running then).
    #[serde(skip)]
    stop: StopHandle,
}

impl PartialEq for ProbeBudget {
    /// Equal when they spent and allow the same (whatever stops them).
    fn eq(&self, other: &Self) -> bool {
        (self.max_requests, self.requests, self.calls, self.interrupted)
            == (other.max_requests, other.requests, other.calls, other.interrupted)
    }
}

impl ProbeBudget {
    /// A budget of `max_requests` with nothing spent.
    pub fn new(max_requests: u64) -> Self {
        Self::with_stop(max_requests, StopHandle::new())
    }

    /// A budget of `max_requests` that allows nothing more once `stop` is stopped.
    pub fn with_stop(max_requests: u64, stop: StopHandle) -> Self {
        ProbeBudget { max_requests, requests: 0, calls: 0, interrupted: false, stop }
    }

    /// Whether one more request may be sent.
    pub fn allows_one_more(&mut self) -> bool {
        self.affords(1)
    }

    /// Whether `requests` more may be sent: within the budget, and not stopped (which is
    /// noted: the report says it was interrupted).
    pub fn affords(&mut self, requests: u64) -> bool {
        if self.stop.is_stopped() {
            self.interrupted = true;
            return false;
        }
        self.requests.saturating_add(requests) <= self.max_requests
    }

    /// Sends `body` to `endpoint` (spent by the caller), abandoned at once at an interrupt
    /// rather than at the end of the timeout: `None` then, and the report says it was
    /// interrupted. Blocking.
    pub fn post(&mut self, endpoint: &Endpoint, body: &[u8]) -> Option<Result<RawAnswer, CallError>> {
        let posted = endpoint.post_unless_stopped(body, &self.stop);
        if posted.is_none() {
            self.interrupted = true;
        }
        posted
    }

    /// What stops the probe, for a run it starts.
    pub(crate) fn stop_handle(&self) -> StopHandle {
        self.stop.clone()
    }

    /// Waits `wait` unless stopped first (then at once): whether the wait was whole.
    pub fn pause(&mut self, wait: std::time::Duration) -> bool {
        let until = std::time::Instant::now() + wait;
        while let Some(left) = until.checked_duration_since(std::time::Instant::now()) {
            if !self.affords(0) {
                return false;
            }
            std::thread::sleep(left.min(std::time::Duration::from_millis(20)));
        }
        self.affords(0)
    }

    /// Why a probe ends early: the interrupt, or else `budget_text`.
    pub fn ended_by(&self, budget_text: String) -> String {
        if self.interrupted {
            "an interrupt".to_string()
        } else {
            budget_text
        }
    }

    pub(crate) fn spend(&mut self, calls: u64) {
        self.requests += 1;
        self.calls += calls;
    }

    /// Spends `requests` single calls at once (an open-loop step's).
    pub(crate) fn spend_singles(&mut self, requests: u64) {
        self.requests += requests;
        self.calls += requests;
    }
}

/// How the server answered a request it refused: the evidence of a limit.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Refusal {
    /// The HTTP status.
    pub status: u16,
    /// The JSON-RPC error code, when the answer held one (as a bare object or a batch's item).
    pub code: Option<i64>,
    /// The error message, or the start of the body when there was none (at most 200 bytes).
    pub message: String,
}

impl Refusal {
    pub(crate) fn from_answer(answer: &RawAnswer) -> Self {
        let value: Option<Value> = serde_json::from_slice(&answer.body).ok();
        let error = value.as_ref().and_then(|value| match value {
            Value::Array(items) => items.iter().find_map(|item| item.get("error")),
            other => other.get("error"),
        });
        let code = error.and_then(|error| error.get("code")).and_then(Value::as_i64);
        let message = match error.and_then(|error| error.get("message")).and_then(Value::as_str) {
            Some(message) => message.to_string(),
            None => String::from_utf8_lossy(&answer.body[..answer.body.len().min(200)]).into_owned(),
        };
        Refusal { status: answer.status, code, message: truncate(message, 200) }
    }

    pub(crate) fn from_error(error: &CallError) -> Self {
        match error {
            CallError::Status(status) => Refusal { status: *status, code: None, message: String::new() },
            other => Refusal { status: 0, code: None, message: truncate(other.to_string(), 200) },
        }
    }
}

impl Refusal {
    /// Whether this refusal is a rate limit (HTTP 429, or an error the default rules call rate
    /// limited) rather than the limit a probe looks for: then the probe waits and asks again.
    pub fn is_rate_limit(&self) -> bool {
        use crate::outcome::Outcome;
        if self.status == 429 {
            return true;
        }
        let Some(code) = self.code else { return false };
        let judged = crate::ratelimit::signs::RateLimitRules::default()
            .judge(Outcome::RpcError(code), self.message.as_bytes());
        matches!(judged, Outcome::RateLimited(_))
    }
}

/// How long a probe waits after a rate-limited answer before it asks again.
pub const RATE_LIMIT_RETRY_PAUSE: std::time::Duration = std::time::Duration::from_millis(250);
/// How many times a probe asks again after rate-limited answers before it gives up.
pub const RATE_LIMIT_RETRIES: u32 = 20;

pub(crate) fn truncate(mut text: String, max: usize) -> String {
    if text.len() > max {
        let mut end = max;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        text.truncate(end);
    }
    text
}

/// The next batch length to try, given the longest accepted so far (`accepted`, 0 for none),
/// the shortest refused so far (`refused`) and the ceiling; `None` when the search is over.
/// Doubles from 1 until a refusal (or the ceiling), then bisects.
pub fn next_batch_len(accepted: u64, refused: Option<u64>, ceiling: u64) -> Option<u64> {
    match refused {
        None if accepted >= ceiling => None,
        None if accepted == 0 => Some(1),
        None => Some(accepted.saturating_mul(2).min(ceiling)),
        Some(refused) if refused <= accepted + 1 => None,
        Some(refused) => Some(accepted + (refused - accepted) / 2),
    }
}

/// A batch body of `calls` calls of `method` (no params), ids 1..=calls.
pub fn batch_body(method: &str, calls: u64) -> Vec<u8> {
    let method = serde_json::to_string(method).unwrap_or_else(|_| "\"\"".to_string());
    let mut body = Vec::with_capacity(calls as usize * (40 + method.len()) + 2);
    body.push(b'[');
    for id in 1..=calls {
        if id > 1 {
            body.push(b',');
        }
        let _ = write!(Bytes(&mut body), "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"method\":{method}}}");
    }
    body.push(b']');
    body
}

/// `fmt::Write` into a byte buffer.
struct Bytes<'a>(&'a mut Vec<u8>);

impl std::fmt::Write for Bytes<'_> {
    fn write_str(&mut self, text: &str) -> std::fmt::Result {
        self.0.extend_from_slice(text.as_bytes());
        Ok(())
    }
}

/// The default ceiling of the request body search, in bytes.
pub const DEFAULT_BODY_CEILING: u64 = 16 * 1024 * 1024;

/// One call of `method` padded with trailing whitespace to `bytes` (at least the call itself).
pub fn padded_body(method: &str, bytes: u64) -> Vec<u8> {
    let mut body = batch_body(method, 1);
    body.remove(0);
    body.pop();
    if (body.len() as u64) < bytes {
        body.resize(bytes as usize, b' ');
    }
    body
}

pub(crate) fn refusal_text(refusal: &Refusal) -> String {
    let mut text = format!("HTTP {}", refusal.status);
    if let Some(code) = refusal.code {
        let _ = write!(text, ", {code}");
    }
    if !refusal.message.is_empty() {
        let _ = write!(text, " \"{}\"", one_line(&refusal.message));
    }
    text
}
