//! JSON-RPC calls sent in batches through an [`Endpoint`]: [`LookupBatches`] sends many calls
//! of one method at most `size` a batch, and halves the size for the rest of its life whenever
//! the node refuses a batch as too large (geth's array of one error, erigon's bare error
//! object, HTTP 413): the one halving loop of the code base ([`LookupBatches::answers_with`]:
//! each call's whole answer, result or error; the lookups take the results, funding names the
//! first refused transfer). [`read_batch_answer_as`] is the one reading of a batch's answer,
//! each result read as the type asked for (the `limits` probe's
//! [`crate::limits::batch_accepted`] is built on it, at [`Value`]).

use std::cell::Cell;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Endpoint, RawAnswer};

/// One call's whole answer in a batch, its result read as a `T` (a whole [`Value`] unless
/// asked otherwise).
#[derive(Debug, Clone, PartialEq)]
pub enum CallAnswer<T = Value> {
    /// Its result.
    Result(T),
    /// Its own error object (the node refused this call).
    Error(Value),
    /// No answer for it: the batch failed, or its answer left the call out (or its result was
    /// not a `T`).
    Missing,
}

impl<T> CallAnswer<T> {
    /// Its result, if it has one.
    pub fn into_result(self) -> Option<T> {
        match self {
            CallAnswer::Result(result) => Some(result),
            CallAnswer::Error(_) | CallAnswer::Missing => None,
        }
    }
}

/// What one JSON-RPC batch post gave (each call's result read as a `T`).
#[derive(Debug, PartialEq)]
pub enum BatchAnswer<T = Value> {
    /// An array of `items` answers: each call's, in the order of the calls. Calls carry ids 0,
    /// 1, ...
    Results {
        /// Answers in the array (the batch was answered call by call when it is the number of
        /// calls).
        items: usize,
        /// Each call's answer by id.
        answers: Vec<CallAnswer<T>>,
    },
    /// The node refused the batch as a whole: one error for all of it (geth's array of one
    /// error, erigon's bare error object) or 413. A smaller batch may pass.
    Refused,
    /// No answer, or one that is neither.
    Failed,
}

/// Reads a node's answer to a batch of `calls` calls (ids `first_id`, `first_id + 1`, ...).
pub fn read_batch_answer(answer: &RawAnswer, calls: usize, first_id: u64) -> BatchAnswer {
    read_batch_answer_as(answer, calls, first_id)
}

/// One answer of a batch's array, its result read as a `T` (`Some` whenever the member is
/// there, even `null`: a `T` of `Option` tells a null result apart).
#[derive(Deserialize)]
#[serde(bound = "T: Deserialize<'de>")]
struct BatchItem<T> {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default = "absent", deserialize_with = "present")]
    result: Option<T>,
    #[serde(default = "absent", deserialize_with = "present")]
    error: Option<Value>,
}

fn absent<T>() -> Option<T> {
    None
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// [`read_batch_answer`], each result read as a `T` (typed and borrowing reads skip what a
/// `T` does not hold, without building a [`Value`] of it). An array member that is not an
/// answer object, or whose result is not a `T`, leaves its call [`CallAnswer::Missing`].
pub fn read_batch_answer_as<T: DeserializeOwned>(
    answer: &RawAnswer,
    calls: usize,
    first_id: u64,
) -> BatchAnswer<T> {
    if answer.status == 413 {
        return BatchAnswer::Refused;
    }
    if !(200..300).contains(&answer.status) {
        return BatchAnswer::Failed;
    }
    let answers = match answer.body.iter().find(|byte| !byte.is_ascii_whitespace()) {
        Some(b'[') => match serde_json::from_slice::<Vec<&RawValue>>(&answer.body) {
            Ok(answers) => answers,
            Err(_) => return BatchAnswer::Failed,
        },
        Some(b'{') => match serde_json::from_slice::<Value>(&answer.body) {
            Ok(Value::Object(answer)) if answer.contains_key("error") => return BatchAnswer::Refused,
            _ => return BatchAnswer::Failed,
        },
        _ => return BatchAnswer::Failed,
    };
    let items = answers.len();
    let mut slots: Vec<CallAnswer<T>> = std::iter::repeat_with(|| CallAnswer::Missing).take(calls).collect();
    for (index, answer) in answers.into_iter().enumerate() {
        let Ok(answer) = serde_json::from_str::<BatchItem<T>>(answer.get()) else { continue };
        // One error for a batch of several: refused whole (geth names the first call's id).
        if calls > 1 && items == 1 && index == 0 && answer.error.is_some() {
            return BatchAnswer::Refused;
        }
        let Some(id) = answer.id.and_then(|id| id.as_u64()).and_then(|id| id.checked_sub(first_id)) else {
            continue;
        };
        let Some(slot) = usize::try_from(id).ok().and_then(|id| slots.get_mut(id)) else { continue };
        match (answer.result, answer.error) {
            (Some(result), _) => *slot = CallAnswer::Result(result),
            (None, Some(error)) => *slot = CallAnswer::Error(error),
            (None, None) => {}
        }
    }
    BatchAnswer::Results { items, answers: slots }
}

/// One call of a batch, as written.
#[derive(Serialize)]
struct BatchCall<'a, P> {
    jsonrpc: &'static str,
    id: usize,
    method: &'a str,
    params: &'a P,
}

/// Posts `params.len()` calls of `method` as one batch (ids 0, 1, ...).
pub fn post_batch(node: &Endpoint, method: &str, params: &[Value]) -> BatchAnswer {
    post_batch_as(node, method, params)
}

/// [`post_batch`] with any parameters and each result read as a `T`.
pub fn post_batch_as<P: Serialize, T: DeserializeOwned>(
    node: &Endpoint,
    method: &str,
    params: &[P],
) -> BatchAnswer<T> {
    let calls: Vec<BatchCall<P>> = params
        .iter()
        .enumerate()
        .map(|(id, params)| BatchCall { jsonrpc: "2.0", id, method, params })
        .collect();
    let Ok(body) = serde_json::to_vec(&calls) else { return BatchAnswer::Failed };
    let Ok(answer) = node.post(&body) else { return BatchAnswer::Failed };
    read_batch_answer_as(&answer, params.len(), 0)
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
        self.call_as(node, method, params)
    }

    /// [`LookupBatches::call`] with any parameters, each result read as a `T`
    /// ([`read_batch_answer_as`]).
    pub fn call_as<P: Serialize, T: DeserializeOwned>(
        &self,
        node: &Endpoint,
        method: &str,
        params: &[P],
    ) -> Vec<Option<T>> {
        self.call_with(method, params, |method, chunk| post_batch_as(node, method, chunk))
    }

    /// [`LookupBatches::call`] with the post given (tests, other transports).
    pub fn call_with<P, T>(
        &self,
        method: &str,
        params: &[P],
        post: impl FnMut(&str, &[P]) -> BatchAnswer<T>,
    ) -> Vec<Option<T>> {
        self.answers_with(method, params, post).into_iter().map(CallAnswer::into_result).collect()
    }

    /// Each call's whole answer, in order, the batches posted by `post` (which may post
    /// nothing more and answer [`BatchAnswer::Failed`]: its calls are then
    /// [`CallAnswer::Missing`]): a batch refused as too large is posted again halved, and the
    /// size stays halved.
    pub fn answers_with<P, T>(
        &self,
        method: &str,
        params: &[P],
        mut post: impl FnMut(&str, &[P]) -> BatchAnswer<T>,
    ) -> Vec<CallAnswer<T>> {
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
    use serde_json::json;

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
            BatchAnswer::<Value>::Refused
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

    /// A result read as a typed status, as `rpcbench tx` reads receipts.
    #[derive(Debug, PartialEq, Deserialize)]
    struct Status {
        status: Option<Value>,
    }

    #[test]
    fn typed_batch_results_skip_what_they_do_not_hold_and_tell_null_from_missing() {
        let body = br#"[{"jsonrpc":"2.0","id":2,"result":{"logsBloom":"0x00","logs":[],"status":"0x0"}},
            7, {"jsonrpc":"2.0","id":0,"result":null}, {"jsonrpc":"2.0","id":1,"result":"0x1"},
            {"jsonrpc":"2.0","id":3,"error":{"code":-32000,"message":"x"}}]"#;
        let answer = RawAnswer { status: 200, body: body.to_vec() };
        let BatchAnswer::Results { items, answers } = read_batch_answer_as::<Option<Status>>(&answer, 4, 0)
        else {
            panic!("not read as results")
        };
        assert_eq!(items, 5);
        // Null: a result of None; not an object: missing; its own error: that error.
        assert_eq!(
            answers,
            vec![
                CallAnswer::Result(None),
                CallAnswer::Missing,
                CallAnswer::Result(Some(Status { status: Some(json!("0x0")) })),
                CallAnswer::Error(json!({"code": -32000, "message": "x"})),
            ]
        );
        // The same answer read whole, as before.
        let BatchAnswer::Results { answers, .. } = read_batch_answer(&answer, 4, 0) else { panic!() };
        assert_eq!(answers[0], CallAnswer::Result(Value::Null));
        assert_eq!(answers[1], CallAnswer::Result(json!("0x1")));
        let geth = br#"[{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"batch too large"}}]"#;
        let refused = RawAnswer { status: 200, body: geth.to_vec() };
        assert_eq!(read_batch_answer_as::<Option<Status>>(&refused, 3, 0), BatchAnswer::Refused);
    }
}
