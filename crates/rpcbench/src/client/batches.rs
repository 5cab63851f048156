//! JSON-RPC calls sent in batches through an [`Endpoint`]: [`LookupBatches`] sends many calls
//! of one method at most `size` a batch, and halves the size for the rest of its life whenever
//! the node refuses a batch as too large (geth's array of one error, erigon's bare error
//! object, HTTP 413): the one halving loop of the code base ([`LookupBatches::answers_with`]:
//! each call's whole answer, result or error; the lookups take the results, funding names the
//! first refused transfer). [`read_batch_answer`] is the one reading of a batch's answer (the
//! `limits` probe's [`crate::limits::batch_accepted`] is built on it).

use std::cell::Cell;

use serde_json::{json, Value};

use super::{Endpoint, RawAnswer};

/// One call's whole answer in a batch.
#[derive(Debug, Clone, PartialEq)]
pub enum CallAnswer {
    /// Its result.
    Result(Value),
    /// Its own error object (the node refused this call).
    Error(Value),
    /// No answer for it: the batch failed, or its answer left the call out.
    Missing,
}

impl CallAnswer {
    /// Its result, if it has one.
    pub fn into_result(self) -> Option<Value> {
        match self {
            CallAnswer::Result(result) => Some(result),
            CallAnswer::Error(_) | CallAnswer::Missing => None,
        }
    }
}

/// What one JSON-RPC batch post gave.
#[derive(Debug, PartialEq)]
pub enum BatchAnswer {
    /// An array of `items` answers: each call's, in the order of the calls. Calls carry ids 0,
    /// 1, ...
    Results {
        /// Answers in the array (the batch was answered call by call when it is the number of
        /// calls).
        items: usize,
        /// Each call's answer by id.
        answers: Vec<CallAnswer>,
    },
    /// The node refused the batch as a whole: one error for all of it (geth's array of one
    /// error, erigon's bare error object) or 413. A smaller batch may pass.
    Refused,
    /// No answer, or one that is neither.
    Failed,
}

/// Reads a node's answer to a batch of `calls` calls (ids `first_id`, `first_id + 1`, ...).
pub fn read_batch_answer(answer: &RawAnswer, calls: usize, first_id: u64) -> BatchAnswer {
    if answer.status == 413 {
        return BatchAnswer::Refused;
    }
    if !(200..300).contains(&answer.status) {
        return BatchAnswer::Failed;
    }
    let answers = match serde_json::from_slice::<Value>(&answer.body) {
        Ok(Value::Array(answers)) => answers,
        Ok(Value::Object(answer)) if answer.contains_key("error") => return BatchAnswer::Refused,
        _ => return BatchAnswer::Failed,
    };
    // One error for a batch of several: refused whole (geth names the first call's id).
    if calls > 1 && answers.len() == 1 && answers[0].get("error").is_some() {
        return BatchAnswer::Refused;
    }
    let items = answers.len();
    let mut calls = vec![CallAnswer::Missing; calls];
    for mut answer in answers {
        let Some(id) = answer["id"].as_u64().and_then(|id| id.checked_sub(first_id)) else { continue };
        let Some(slot) = usize::try_from(id).ok().and_then(|id| calls.get_mut(id)) else { continue };
        if let Some(result) = answer.get_mut("result") {
            *slot = CallAnswer::Result(result.take());
        } else if let Some(error) = answer.get_mut("error") {
            *slot = CallAnswer::Error(error.take());
        }
    }
    BatchAnswer::Results { items, answers: calls }
}

/// Posts `params.len()` calls of `method` as one batch (ids 0, 1, ...).
pub fn post_batch(node: &Endpoint, method: &str, params: &[Value]) -> BatchAnswer {
    let calls: Vec<Value> = params
        .iter()
        .enumerate()
        .map(|(id, params)| json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
        .collect();
    let Ok(body) = serde_json::to_vec(&calls) else { return BatchAnswer::Failed };
    let Ok(answer) = node.post(&body) else { return BatchAnswer::Failed };
    read_batch_answer(&answer, params.len(), 0)
}

/// Batched calls: at most `size` calls a batch, halved (down to one call) whenever the node
/// refuses a batch as too large, for the rest of this value's life.
#[derive(Debug)]
pub struct LookupBatches {
    size: Cell<usize>,
}

impl LookupBatches {
    /// Batches of `size` calls at first (at least one).
    pub fn new(size: usize) -> Self {
        LookupBatches { size: Cell::new(size.max(1)) }
    }

    /// The calls a batch holds now.
    pub fn size(&self) -> usize {
        self.size.get()
    }

    /// Each call's result, in order: `None` for a call without one (its own error, or a batch
    /// that failed).
    pub fn call(&self, node: &Endpoint, method: &str, params: &[Value]) -> Vec<Option<Value>> {
        self.call_with(method, params, |method, chunk| post_batch(node, method, chunk))
    }

    /// [`LookupBatches::call`] with the post given (tests, other transports).
    pub fn call_with(
        &self,
        method: &str,
        params: &[Value],
        post: impl FnMut(&str, &[Value]) -> BatchAnswer,
    ) -> Vec<Option<Value>> {
        self.answers_with(method, params, post).into_iter().map(CallAnswer::into_result).collect()
    }

    /// Each call's whole answer, in order, the batches posted by `post` (which may post
    /// nothing more and answer [`BatchAnswer::Failed`]: its calls are then
    /// [`CallAnswer::Missing`]): a batch refused as too large is posted again halved, and the
    /// size stays halved.
    pub fn answers_with(
        &self,
        method: &str,
        params: &[Value],
        mut post: impl FnMut(&str, &[Value]) -> BatchAnswer,
    ) -> Vec<CallAnswer> {
        let mut answers = Vec::with_capacity(params.len());
        let mut rest = params;
        while !rest.is_empty() {
            let chunk = &rest[..rest.len().min(self.size.get())];
            match post(method, chunk) {
                BatchAnswer::Results { answers: answered, .. } => answers.extend(answered),
                BatchAnswer::Refused if chunk.len() > 1 => {
                    self.size.set(chunk.len() / 2);
                    continue;
                }
                BatchAnswer::Refused | BatchAnswer::Failed => {
                    answers.extend(chunk.iter().map(|_| CallAnswer::Missing))
                }
            }
            rest = &rest[chunk.len()..];
        }
        answers
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answered(answers: Vec<CallAnswer>) -> BatchAnswer {
        BatchAnswer::Results { items: answers.len(), answers }
    }

    fn read(body: &[u8], calls: usize) -> BatchAnswer {
        read_batch_answer(&RawAnswer { status: 200, body: body.to_vec() }, calls, 0)
    }

    #[test]
    fn a_batch_refused_as_too_large_is_halved_until_it_passes_and_every_call_gets_its_answer() {
        let batches = LookupBatches::new(100);
        let params: Vec<Value> = (0..250).map(|n| json!([n])).collect();
        let mut posted = Vec::new();
        let results = batches.call_with("eth_getTransactionReceipt", &params, |_, chunk| {
            posted.push(chunk.len());
            if chunk.len() > 30 {
                return BatchAnswer::Refused;
            }
            answered(chunk.iter().map(|params| CallAnswer::Result(params[0].clone())).collect())
        });
        assert_eq!(results, (0..250).map(|n| Some(json!(n))).collect::<Vec<_>>());
        // 100 refused, 50 refused, then 25 a batch for the rest of the run.
        assert_eq!(posted[..3], [100, 50, 25]);
        assert!(posted[2..].iter().all(|&len| len <= 25), "{posted:?}");
        assert_eq!(batches.size(), 25);
    }

    #[test]
    fn a_node_refusing_even_one_call_leaves_each_call_without_an_answer_and_stops_halving() {
        let batches = LookupBatches::new(100);
        let params: Vec<Value> = (0..3).map(|n| json!([n])).collect();
        let mut posts = 0;
        let results = batches.call_with("eth_getTransactionByHash", &params, |_, _| {
            posts += 1;
            BatchAnswer::Refused
        });
        assert_eq!(results, vec![None, None, None]);
        // 3 refused, then 1 a call: three refused, each left without an answer.
        assert_eq!(posts, 4);
    }

    #[test]
    fn geth_and_erigon_refusals_of_a_batch_are_told_apart_from_answers() {
        let geth = br#"[{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"batch too large"}}]"#;
        assert_eq!(read(geth, 3), BatchAnswer::Refused);
        let erigon =
            br#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"batch limit 100 exceeded"}}"#;
        assert_eq!(read(erigon, 3), BatchAnswer::Refused);
        // A batch of one whose call failed is that call's answer, not a refusal.
        let too_large = json!({"code": -32600, "message": "batch too large"});
        assert_eq!(read(geth, 1), answered(vec![CallAnswer::Error(too_large)]));
        let both = br#"[{"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":0,"result":null}]"#;
        let results = vec![CallAnswer::Result(Value::Null), CallAnswer::Result(json!("0x1"))];
        assert_eq!(read(both, 2), answered(results));
        assert_eq!(read(b"<html>", 2), BatchAnswer::Failed);
    }

    #[test]
    fn an_http_413_refuses_a_batch_and_other_statuses_fail_it() {
        let answer = |status| RawAnswer { status, body: b"too large".to_vec() };
        assert_eq!(read_batch_answer(&answer(413), 2, 0), BatchAnswer::Refused);
        assert_eq!(read_batch_answer(&answer(500), 2, 0), BatchAnswer::Failed);
    }

    #[test]
    fn each_call_s_whole_answer_comes_back_in_order_through_the_halving() {
        let batches = LookupBatches::new(4);
        let params: Vec<Value> = (0..6).map(|n| json!([n])).collect();
        let mut posts = Vec::new();
        // Refuses batches of more than 2; call 3 gets its own error, call 5 no answer; the
        // third post (calls 4 and 5) fails whole.
        let answers = batches.answers_with("eth_sendRawTransaction", &params, |_, chunk| {
            posts.push(chunk.len());
            match (chunk.len(), chunk[0][0].as_u64()) {
                (len, _) if len > 2 => BatchAnswer::Refused,
                (_, Some(4)) => BatchAnswer::Failed,
                _ => answered(
                    chunk
                        .iter()
                        .map(|params| match params[0].as_u64() {
                            Some(3) => CallAnswer::Error(json!({"message": "nonce too low"})),
                            _ => CallAnswer::Result(params[0].clone()),
                        })
                        .collect(),
                ),
            }
        });
        assert_eq!(posts, [4, 2, 2, 2]);
        assert_eq!(
            answers,
            [
                CallAnswer::Result(json!(0)),
                CallAnswer::Result(json!(1)),
                CallAnswer::Result(json!(2)),
                CallAnswer::Error(json!({"message": "nonce too low"})),
                CallAnswer::Missing,
                CallAnswer::Missing,
            ]
        );
        // The results alone, as the lookups take them.
        let results: Vec<Option<Value>> = answers.into_iter().map(CallAnswer::into_result).collect();
        assert_eq!(results, [Some(json!(0)), Some(json!(1)), Some(json!(2)), None, None, None]);
    }
}
