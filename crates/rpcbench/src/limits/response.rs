//! `rpcbench limits`: the largest response body a server (or a proxy in front of it) answers
//! whole. The answer's size is controlled through the call's id, which JSON-RPC echoes back:
//! a string id of n bytes makes an answer n bytes longer, on any node and any method, without
//! a batch. The id's length is searched by doubling then bisection ([`next_batch_len`]), one
//! request of the budget per length; an answer is whole when it is 2xx JSON echoing the id.
//! Past the limit the evidence is how the answer came back (an HTTP error, a body cut short).

use serde::Serialize;
use serde_json::Value;

use super::probe::{
    next_batch_len, ProbeBudget, Refusal, DEFAULT_BODY_CEILING, RATE_LIMIT_RETRIES, RATE_LIMIT_RETRY_PAUSE,
};
use crate::client::{Endpoint, RawAnswer};

/// The default ceiling of the response body search, in bytes.
pub const DEFAULT_RESPONSE_CEILING: u64 = DEFAULT_BODY_CEILING;

/// What the response body search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct ResponseFinding {
    /// The largest answer received whole, in bytes (0: none).
    pub largest_accepted: u64,
    /// The size the smallest answer not received whole would have had, in bytes (the largest
    /// whole answer plus the id bytes added); `None` when every answer tried came back whole.
    pub smallest_refused: Option<u64>,
    /// How that answer came back (an HTTP status, a body cut short, a closed connection).
    pub refusal: Option<Refusal>,
    /// The ceiling of the search, in bytes of answer.
    pub ceiling: u64,
    /// Whether the search stopped at the largest request body the server accepts (the id
    /// travels in the request), with every answer whole: the limit is at least what was found.
    pub bounded_by_request: bool,
    /// Whether the limit is known exactly (false: the budget or a bound ended the search).
    pub exact: bool,
    /// Answers tried, in order: the evidence.
    pub steps: Vec<ResponseStep>,
}

/// One answer the search asked for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct ResponseStep {
    /// The answer's size in bytes, or the size it would have had when it did not come whole.
    pub bytes: u64,
    /// Whether it came back whole.
    pub whole: bool,
}

/// One call of `method` (no params) whose id is a string of `id_bytes` letters.
pub fn call_with_long_id(method: &str, id_bytes: u64) -> Vec<u8> {
    let method = serde_json::to_string(method).unwrap_or_else(|_| "\"\"".to_string());
    let mut body = Vec::with_capacity(id_bytes as usize + method.len() + 40);
    body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":\"");
    body.resize(body.len() + id_bytes as usize, b'a');
    body.extend_from_slice(b"\",\"method\":");
    body.extend_from_slice(method.as_bytes());
    body.push(b'}');
    body
}

/// How an answer to a call with an id of `id_bytes` came back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AnswerShape {
    /// Whole: 2xx, a JSON object echoing the id.
    Whole,
    /// A rate-limit answer: says nothing of the size.
    RateLimited,
    /// Not whole, with the evidence.
    Refused(Refusal),
}

/// Judges an answer to [`call_with_long_id`] with an id of `id_bytes`.
pub fn answer_shape(answer: &RawAnswer, id_bytes: u64) -> AnswerShape {
    let parsed: Option<Value> = serde_json::from_slice(&answer.body).ok();
    let refusal = Refusal::from_answer(answer);
    if refusal.is_rate_limit() {
        return AnswerShape::RateLimited;
    }
    if !(200..300).contains(&answer.status) {
        return AnswerShape::Refused(refusal);
    }
    let echoed = parsed
        .as_ref()
        .and_then(|value| value.get("id"))
        .and_then(Value::as_str)
        .is_some_and(|id| id.len() as u64 == id_bytes && id.bytes().all(|byte| byte == b'a'));
    if echoed {
        return AnswerShape::Whole;
    }
    let message = if parsed.is_none() {
        format!("answer cut short: {} bytes that are not whole JSON", answer.body.len())
    } else {
        format!("answer of {} bytes without the id sent", answer.body.len())
    };
    AnswerShape::Refused(Refusal { status: answer.status, code: refusal.code, message })
}

/// Finds the largest answer the endpoint sends whole, up to `ceiling` bytes, with calls of
/// `method` whose ids grow; `max_request` (the largest request body accepted, when known)
/// bounds the id, as it travels in the request. One request of the budget per size tried.
pub fn probe_response(
    endpoint: &Endpoint,
    method: &str,
    ceiling: u64,
    max_request: Option<u64>,
    budget: &mut ProbeBudget,
) -> ResponseFinding {
    let ceiling = ceiling.max(1);
    let request_overhead = call_with_long_id(method, 0).len() as u64;
    let id_ceiling = match max_request {
        Some(max) => ceiling.min(max.saturating_sub(request_overhead)).max(1),
        None => ceiling,
    };
    let (mut accepted_id, mut refused_id) = (0u64, None::<u64>);
    let (mut accepted_bytes, mut refusal) = (0u64, None::<Refusal>);
    let mut steps = Vec::new();
    let mut retries = 0;
    while let Some(id_bytes) = next_batch_len(accepted_id, refused_id, id_ceiling) {
        // The answer is the id plus what was around it in the last whole answer.
        let around = accepted_bytes.saturating_sub(accepted_id);
        if !budget.allows_one_more() || (accepted_bytes > 0 && around + id_bytes > ceiling) {
            break;
        }
        budget.spend(1);
        let Some(posted) = budget.post(endpoint, &call_with_long_id(method, id_bytes)) else { break };
        let shape = match posted {
            Ok(answer) => match answer_shape(&answer, id_bytes) {
                AnswerShape::Whole => {
                    accepted_bytes = answer.body.len() as u64;
                    AnswerShape::Whole
                }
                other => other,
            },
            Err(error) => AnswerShape::Refused(Refusal::from_error(&error)),
        };
        match shape {
            AnswerShape::Whole => {
                accepted_id = id_bytes;
                steps.push(ResponseStep { bytes: accepted_bytes, whole: true });
            }
            AnswerShape::RateLimited if retries < RATE_LIMIT_RETRIES => {
                retries += 1;
                budget.pause(RATE_LIMIT_RETRY_PAUSE);
            }
            AnswerShape::RateLimited => break,
            AnswerShape::Refused(refused) => {
                refused_id = Some(id_bytes);
                refusal = Some(refused);
                steps.push(ResponseStep { bytes: around + id_bytes, whole: false });
            }
        }
    }
    let searched_out = next_batch_len(accepted_id, refused_id, id_ceiling).is_none();
    let bounded_by_request = refused_id.is_none() && id_ceiling < ceiling && accepted_id == id_ceiling;
    let smallest_refused = match refused_id {
        Some(id) if accepted_id > 0 => Some(accepted_bytes + (id - accepted_id)),
        _ => None,
    };
    ResponseFinding {
        largest_accepted: accepted_bytes,
        smallest_refused,
        exact: searched_out && refused_id.is_some() && accepted_id > 0,
        refusal,
        ceiling,
        bounded_by_request,
        steps,
    }
}

impl ResponseFinding {
    /// Whether any answer was asked for: nothing when the budget or an interrupt came first.
    pub fn probed(&self) -> bool {
        !self.steps.is_empty()
    }

    /// The finding as one table row: (limit, found, evidence).
    pub fn row(&self) -> (String, String, String) {
        let size = format!("{} bytes", self.largest_accepted);
        let value = if self.exact {
            size
        } else if self.bounded_by_request {
            format!("at least {size} (the largest request body bounds the probe)")
        } else if self.smallest_refused.is_none() && self.refusal.is_none() {
            format!("at least {size} (the ceiling or the budget)")
        } else {
            format!("at least {size} (budget spent)")
        };
        let tried: Vec<String> = self
            .steps
            .iter()
            .map(|step| format!("{}{}", step.bytes, if step.whole { "✓" } else { "✗" }))
            .collect();
        let mut evidence = format!("answers of {} bytes", tried.join(" "));
        if let Some(refusal) = &self.refusal {
            let size =
                self.smallest_refused.map(|bytes| format!("{bytes} bytes")).unwrap_or("the first".into());
            evidence.push_str(&format!("; {size} came back {}", super::probe::refusal_text(refusal)));
        }
        ("largest response body".into(), value, evidence)
    }

    /// The finding for the summary line.
    pub fn summary(&self) -> String {
        if self.exact {
            format!("responses up to {} bytes", self.largest_accepted)
        } else {
            format!("responses of at least {} bytes", self.largest_accepted)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_id_call_is_json_with_an_id_of_that_length() {
        let body: Value = serde_json::from_slice(&call_with_long_id("eth_chainId", 37)).unwrap();
        assert_eq!(body["id"].as_str().unwrap().len(), 37);
        assert_eq!(body["method"], "eth_chainId");
    }

    #[test]
    fn an_answer_cut_short_or_without_its_id_is_not_whole() {
        let answer = |status, body: &str| RawAnswer { status, body: body.as_bytes().to_vec() };
        assert_eq!(answer_shape(&answer(200, r#"{"id":"aaa","result":1}"#), 3), AnswerShape::Whole);
        assert!(matches!(answer_shape(&answer(200, r#"{"id":"aaa","res"#), 3), AnswerShape::Refused(_)));
        assert!(matches!(
            answer_shape(&answer(200, r#"{"id":"aa","result":1}"#), 3),
            AnswerShape::Refused(_)
        ));
        assert!(matches!(answer_shape(&answer(502, "bad gateway"), 3), AnswerShape::Refused(_)));
        assert_eq!(answer_shape(&answer(429, ""), 3), AnswerShape::RateLimited);
    }
}
