//! JSON-RPC calls sent in batches through an [`Endpoint`]: [`LookupBatches`] sends many calls
//! of one method at most `size` a batch, and halves the size for the rest of its life whenever
//! the node refuses a batch as too large (geth's array of one error, erigon's bare error
//! object, HTTP 413). [`read_batch_answer`] is the one reading of a batch's answer (the
//! `limits` probe's [`crate::limits::batch_accepted`] is built on it).

use std::cell::Cell;

use serde::de::{DeserializeOwned, IgnoredAny};
use serde::{Deserialize, Deserializer, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::{Endpoint, RawAnswer};

/// What one JSON-RPC batch post gave (each call's result read as a `T`, a whole
/// [`Value`] unless asked otherwise).
#[derive(Debug, PartialEq)]
pub enum BatchAnswer<T = Value> {
    /// An array of `items` answers: each call's result, in the order of the calls (`None`: no
    /// result for it, such as its own error, or one that is not a `T`). Calls carry ids 0,
    /// 1, ...
    Results {
        /// Answers in the array (the batch was answered call by call when it is the number of
        /// calls).
        items: usize,
        /// Each call's result by id.
        results: Vec<Option<T>>,
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
    error: Option<IgnoredAny>,
}

fn absent<T>() -> Option<T> {
    None
}

fn present<'de, D: Deserializer<'de>, T: Deserialize<'de>>(deserializer: D) -> Result<Option<T>, D::Error> {
    T::deserialize(deserializer).map(Some)
}

/// [`read_batch_answer`], each result read as a `T` (typed and borrowing reads skip what a
/// `T` does not hold, without building a [`Value`] of it). An array member that is not an
/// answer object, or whose result is not a `T`, leaves its call without a result.
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
    let mut results: Vec<Option<T>> = std::iter::repeat_with(|| None).take(calls).collect();
    for (index, answer) in answers.into_iter().enumerate() {
        let Ok(answer) = serde_json::from_str::<BatchItem<T>>(answer.get()) else { continue };
        // One error for a batch of several: refused whole (geth names the first call's id).
        if calls > 1 && items == 1 && index == 0 && answer.error.is_some() {
            return BatchAnswer::Refused;
        }
        let Some(id) = answer.id.and_then(|id| id.as_u64()).and_then(|id| id.checked_sub(first_id)) else {
            continue;
        };
        let Ok(id) = usize::try_from(id) else { continue };
        if let (Some(slot), Some(result)) = (results.get_mut(id), answer.result) {
            *slot = Some(result);
        }
    }
    BatchAnswer::Results { items, results }
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

    /// Each call's result, in order: `None` for a call without one (a batch that failed
    /// leaves all of its calls `None`).
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
        mut post: impl FnMut(&str, &[P]) -> BatchAnswer<T>,
    ) -> Vec<Option<T>> {
        let mut results = Vec::with_capacity(params.len());
        let mut rest = params;
        while !rest.is_empty() {
            let chunk = &rest[..rest.len().min(self.size.get())];
            match post(method, chunk) {
                BatchAnswer::Results { results: answered, .. } => results.extend(answered),
                BatchAnswer::Refused if chunk.len() > 1 => {
                    self.size.set(chunk.len() / 2);
                    continue;
                }
                BatchAnswer::Refused | BatchAnswer::Failed => results.extend(chunk.iter().map(|_| None)),
            }
            rest = &rest[chunk.len()..];
        }
        results
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn results(results: Vec<Option<Value>>) -> BatchAnswer {
        BatchAnswer::Results { items: results.len(), results }
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
            results(chunk.iter().map(|params| Some(params[0].clone())).collect())
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
        assert_eq!(read(geth, 1), results(vec![None]));
        let answered = br#"[{"jsonrpc":"2.0","id":1,"result":"0x1"},{"jsonrpc":"2.0","id":0,"result":null}]"#;
        assert_eq!(read(answered, 2), results(vec![Some(Value::Null), Some(json!("0x1"))]));
        assert_eq!(read(b"<html>", 2), BatchAnswer::Failed);
    }

    #[test]
    fn an_http_413_refuses_a_batch_and_other_statuses_fail_it() {
        let answer = |status| RawAnswer { status, body: b"too large".to_vec() };
        assert_eq!(read_batch_answer(&answer(413), 2, 0), BatchAnswer::Refused);
        assert_eq!(read_batch_answer(&answer(500), 2, 0), BatchAnswer::Failed);
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
        let BatchAnswer::Results { items, results } = read_batch_answer_as::<Option<Status>>(&answer, 4, 0)
        else {
            panic!("not read as results")
        };
        assert_eq!(items, 5);
        // Null: a result of None; not an object: no result; an error: no result.
        assert_eq!(results, vec![Some(None), None, Some(Some(Status { status: Some(json!("0x0")) })), None]);
        // The same answer read whole, as before.
        let BatchAnswer::Results { results, .. } = read_batch_answer(&answer, 4, 0) else { panic!() };
        assert_eq!(results[0], Some(Value::Null));
        assert_eq!(results[1], Some(json!("0x1")));
        let geth = br#"[{"jsonrpc":"2.0","id":0,"error":{"code":-32600,"message":"batch too large"}}]"#;
        let refused = RawAnswer { status: 200, body: geth.to_vec() };
        assert_eq!(read_batch_answer_as::<Option<Status>>(&refused, 3, 0), BatchAnswer::Refused);
    }
}
