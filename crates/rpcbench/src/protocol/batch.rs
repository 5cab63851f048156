//! JSON-RPC batches: each request carries N calls drawn from the mix, each with its own fresh
//! id, and every call gets its own outcome, matched by id in whatever order the items come.
//!
//! - An item for a call: that call's outcome, as for a single call.
//! - A call no item answered: `missing`. An item whose id was not sent, or a second item for
//!   the same id, answers nothing; such stray items are charged, in order, to calls left
//!   without an answer (as `id_mismatch`, or the item's own invalid kind or null-id error).
//!   A call answered twice is `id_mismatch`.
//! - The batch refused as a whole: every call of the batch is that JSON-RPC error. Either a
//!   single error object instead of an array (erigon's `-32000 "batch limit 100 exceeded"`),
//!   or, for a batch of several calls, an array of one error item with id null or the first
//!   call's id and code -32600 (geth 1.17's "batch too large": [`refused_batch`]).
//! - Memory is bounded by the calls sent, not by the items received: items are classified
//!   as the array is walked, and only as many stray items are kept as there are calls.
//! - An HTTP status other than 2xx: every call is that status. A body that is not an array of
//!   JSON values: every call is `not_json`.
//!
//! The latency of a batched call is that of the whole exchange: the engine records the one
//! figure for each call of the batch.

use std::cell::RefCell;

use super::{CallSlot, Draw, Protocol};
use crate::jsonrpc::{self, CheckMode, ScannedId};
use crate::outcome::{InvalidKind, Outcome};
use crate::transport::Outgoing;
use crate::workload::Workload;

/// The largest batch `--batch` accepts.
pub(crate) const MAX_BATCH: usize = 10_000;

/// N JSON-RPC calls per request.
#[derive(Debug)]
pub(crate) struct JsonRpcBatch {
    workload: Workload,
    check: CheckMode,
    size: usize,
    scratch: RefCell<Scratch>,
}

/// Buffers reused from reply to reply; both hold at most one entry per call sent, whatever
/// the number of items in the reply.
#[derive(Debug, Default)]
struct Scratch {
    /// Per call: its outcome and the range of the item that answered it.
    answers: Vec<Option<(Outcome, (usize, usize))>>,
    /// Items that answered no call, the first ones only (as many as there are calls).
    strays: Vec<(Outcome, (usize, usize))>,
}

/// The error code when the one item of a reply to a batch of several calls is the refusal of
/// the whole batch: geth answers a batch over its limit with
/// `[{"jsonrpc":"2.0","id":<first call's id>,"error":{"code":-32600,"message":"batch too large"}}]`.
/// Taken as a refusal: an error item with code -32600 (Invalid Request) or with id null, whose
/// id is the first call's or null.
fn refused_batch(item: &[u8], first_id: u64) -> Option<i64> {
    let scanned = jsonrpc::scan_response(item).ok()?;
    if !scanned.version_ok || scanned.has_result {
        return None;
    }
    let code = scanned.error_code?;
    match scanned.id {
        ScannedId::Null => Some(code),
        ScannedId::Number(id) if id == first_id && code == -32600 => Some(code),
        _ => None,
    }
}

impl JsonRpcBatch {
    /// Batches of `size` calls (1 to [`MAX_BATCH`]) drawn from `workload`, which must hold
    /// JSON-RPC calls only.
    pub(crate) fn new(workload: Workload, check: CheckMode, size: usize) -> Self {
        Self { workload, check, size: size.clamp(1, MAX_BATCH), scratch: RefCell::new(Scratch::default()) }
    }
}

impl Protocol for JsonRpcBatch {
    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing) {
        out.body.push(b'[');
        for index in 0..self.size {
            if index > 0 {
                out.body.push(b',');
            }
            let call = draw.pick(&self.workload);
            let id = draw.id();
            self.workload.write_body(call, id, &mut draw.rng, &mut out.body);
            slots.push(CallSlot { call, id });
        }
        out.body.push(b']');
    }

    fn classify(
        &self,
        status: u16,
        body: &[u8],
        slots: &[CallSlot],
        mut each: impl FnMut(usize, Outcome, &[u8]),
    ) {
        let all = |outcome: Outcome, detail: &[u8], each: &mut dyn FnMut(usize, Outcome, &[u8])| {
            for index in 0..slots.len() {
                each(index, outcome, detail);
            }
        };
        if !(200..300).contains(&status) {
            return all(Outcome::HttpStatus(status), b"", &mut each);
        }
        if self.check == CheckMode::Full && !jsonrpc::is_valid_json(body) {
            return all(Outcome::Invalid(InvalidKind::NotJson), b"", &mut each);
        }
        match jsonrpc::first_byte(body) {
            Some(b'{') => {
                let outcome = match jsonrpc::scan_response(body) {
                    Ok(scanned) if scanned.version_ok && !scanned.has_result => match scanned.error_code {
                        Some(code) => Outcome::RpcError(code),
                        None => Outcome::Invalid(InvalidKind::NotJsonRpc),
                    },
                    Ok(_) => Outcome::Invalid(InvalidKind::NotJsonRpc),
                    Err(kind) => Outcome::Invalid(kind),
                };
                return all(outcome, body, &mut each);
            }
            Some(b'[') => {}
            _ => return all(Outcome::Invalid(InvalidKind::NotJson), b"", &mut each),
        }
        let mut scratch = self.scratch.borrow_mut();
        let Scratch { answers, strays } = &mut *scratch;
        answers.clear();
        answers.resize(slots.len(), None);
        strays.clear();
        let first_id = slots.first().map_or(0, |slot| slot.id);
        let (mut items, mut first_item) = (0usize, (0, 0));
        let walked = jsonrpc::each_array_item(body, |start, end| {
            let span = (start, end);
            items += 1;
            if items == 1 {
                first_item = span;
            }
            // Strays are charged to calls left without an answer, in order: no more than one
            // per call is ever used, so the rest are not kept.
            let keep_stray = strays.len() < slots.len();
            let scanned = match jsonrpc::scan_response(&body[start..end]) {
                Ok(scanned) => scanned,
                Err(kind) => {
                    if keep_stray {
                        strays.push((Outcome::Invalid(kind), span));
                    }
                    return;
                }
            };
            let slot = match scanned.id {
                ScannedId::Number(id) => {
                    let index = id.wrapping_sub(first_id);
                    usize::try_from(index).ok().filter(|&index| index < slots.len() && slots[index].id == id)
                }
                _ => None,
            };
            match slot {
                Some(index) => {
                    answers[index] = Some(match answers[index] {
                        // Answered twice: which of the two is the answer cannot be told.
                        Some(_) => (Outcome::Invalid(InvalidKind::IdMismatch), span),
                        None => (jsonrpc::classify_scanned(&scanned, |_| true), span),
                    });
                }
                None if keep_stray => strays.push((jsonrpc::classify_scanned(&scanned, |_| false), span)),
                None => {}
            }
        });
        if walked.is_err() {
            return all(Outcome::Invalid(InvalidKind::NotJson), b"", &mut each);
        }
        if items == 1 && slots.len() > 1 {
            let item = &body[first_item.0..first_item.1];
            if let Some(code) = refused_batch(item, first_id) {
                return all(Outcome::RpcError(code), item, &mut each);
            }
        }
        let mut strays = strays.iter();
        for (index, answer) in answers.iter().enumerate() {
            match answer.or_else(|| strays.next().copied()) {
                Some((outcome, span)) => each(index, outcome, &body[span.0..span.1]),
                None => each(index, Outcome::Invalid(InvalidKind::Missing), b""),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use rand::SeedableRng;

    use super::*;
    use crate::jsonrpc::RequestTemplate;

    fn batch(size: usize) -> JsonRpcBatch {
        let template = RequestTemplate::from_method("getSlot", None).unwrap();
        JsonRpcBatch::new(Workload::single(&template), CheckMode::Scan, size)
    }

    fn slots(ids: std::ops::Range<u64>) -> Vec<CallSlot> {
        ids.map(|id| CallSlot { call: 0, id }).collect()
    }

    fn outcomes(protocol: &JsonRpcBatch, status: u16, body: &str, slots: &[CallSlot]) -> Vec<Outcome> {
        let mut seen = vec![None; slots.len()];
        protocol.classify(status, body.as_bytes(), slots, |index, outcome, _| {
            assert!(seen[index].is_none(), "slot {index} classified twice");
            seen[index] = Some(outcome);
        });
        seen.into_iter().map(|outcome| outcome.expect("every slot gets an outcome")).collect()
    }

    #[test]
    fn a_batch_request_is_an_array_of_calls_with_fresh_ids() {
        let protocol = batch(3);
        let mut draw = Draw {
            rng: rand::rngs::SmallRng::seed_from_u64(1),
            next_id: 7,
            fixed_id: None,
            turn: 0,
            turn_stride: 1,
            ticket: 0,
        };
        let mut slots = Vec::new();
        let mut out = Outgoing::default();
        protocol.encode(&mut draw, &mut slots, &mut out);
        let value: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
        let ids: Vec<u64> =
            value.as_array().unwrap().iter().map(|item| item["id"].as_u64().unwrap()).collect();
        assert_eq!(ids, vec![7, 8, 9]);
        assert_eq!(slots.iter().map(|slot| slot.id).collect::<Vec<_>>(), ids);
        assert!(out.is_plain_post());
    }

    #[test]
    fn batch_items_are_matched_by_id_in_any_order() {
        let protocol = batch(4);
        let slots = slots(10..14);
        let body = r#"[{"jsonrpc":"2.0","id":13,"result":1},{"jsonrpc":"2.0","id":10,"result":2},
            {"jsonrpc":"2.0","id":12,"error":{"code":-32005,"message":"behind"}},{"jsonrpc":"2.0","id":11,"result":null}]"#;
        assert_eq!(
            outcomes(&protocol, 200, body, &slots),
            vec![Outcome::Ok, Outcome::Ok, Outcome::RpcError(-32005), Outcome::Ok]
        );
    }

    #[test]
    fn missing_duplicate_and_stray_items_are_counted_per_call() {
        let protocol = batch(4);
        let slots = slots(10..14);
        // 11 answered twice, 12 never, 99 was not sent, 13 never.
        let body = r#"[{"jsonrpc":"2.0","id":10,"result":1},{"jsonrpc":"2.0","id":11,"result":1},
            {"jsonrpc":"2.0","id":11,"result":1},{"jsonrpc":"2.0","id":99,"result":1}]"#;
        assert_eq!(
            outcomes(&protocol, 200, body, &slots),
            vec![
                Outcome::Ok,
                Outcome::Invalid(InvalidKind::IdMismatch),
                Outcome::Invalid(InvalidKind::IdMismatch),
                Outcome::Invalid(InvalidKind::Missing),
            ]
        );
    }

    #[test]
    fn a_batch_refused_as_a_whole_counts_every_call_as_the_refusal_in_either_shape() {
        let protocol = batch(3);
        let slots = slots(1..4);
        // geth 1.17: an array of one -32600 error carrying the first call's id.
        let geth = r#"[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"batch too large"}}]"#;
        assert_eq!(outcomes(&protocol, 200, geth, &slots), vec![Outcome::RpcError(-32600); 3]);
        let null_id = r#"[{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch too large"}}]"#;
        assert_eq!(outcomes(&protocol, 200, null_id, &slots), vec![Outcome::RpcError(-32600); 3]);
        // A bare error object (erigon's limit, or a proxy's).
        let erigon =
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"batch limit 100 exceeded"}}"#;
        assert_eq!(outcomes(&protocol, 200, erigon, &slots), vec![Outcome::RpcError(-32000); 3]);
        let bare = r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch too large"}}"#;
        assert_eq!(outcomes(&protocol, 200, bare, &slots), vec![Outcome::RpcError(-32600); 3]);
        assert_eq!(outcomes(&protocol, 429, geth, &slots), vec![Outcome::HttpStatus(429); 3]);
        // One call's own error with the others unanswered is not a refusal of the batch.
        let one = r#"[{"jsonrpc":"2.0","id":1,"error":{"code":-32000,"message":"execution reverted"}}]"#;
        assert_eq!(
            outcomes(&protocol, 200, one, &slots),
            vec![
                Outcome::RpcError(-32000),
                Outcome::Invalid(InvalidKind::Missing),
                Outcome::Invalid(InvalidKind::Missing)
            ]
        );
        // Nor is the same item for a batch of one call anything but that call's answer.
        assert_eq!(outcomes(&batch(1), 200, geth, &slots[..1]), vec![Outcome::RpcError(-32600)]);
    }

    #[test]
    fn a_reply_of_many_small_items_keeps_nothing_past_the_calls_sent() {
        let protocol = batch(2);
        let slots = slots(1..3);
        // 200,000 scalars, then 200,000 items for ids never sent: each call is charged the
        // first stray, and nothing is kept for the rest.
        let mut body = String::from("[");
        body.push_str(&"1,".repeat(200_000));
        body.push_str(&r#"{"jsonrpc":"2.0","id":7,"result":1},"#.repeat(200_000));
        body.push_str("2]");
        assert_eq!(outcomes(&protocol, 200, &body, &slots), vec![Outcome::Invalid(InvalidKind::NotJson); 2]);
        let scratch = protocol.scratch.borrow();
        assert!(scratch.strays.capacity() <= 4, "{} strays kept", scratch.strays.capacity());
        assert!(scratch.answers.capacity() <= 4, "{} answers kept", scratch.answers.capacity());
    }

    #[test]
    fn garbage_batch_replies_are_counted_never_a_panic() {
        let protocol = batch(2);
        let slots = slots(1..3);
        for body in
            ["", "nonsense", "[", "[{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":1},", "[1,2", "]", "[\u{0}]"]
        {
            let seen = outcomes(&protocol, 200, body, &slots);
            assert!(seen.iter().all(|outcome| !outcome.is_ok()), "{body:?}: {seen:?}");
        }
        assert_eq!(outcomes(&protocol, 200, "[]", &slots), vec![Outcome::Invalid(InvalidKind::Missing); 2]);
        assert_eq!(
            outcomes(&protocol, 200, "[1, \"x\"]", &slots),
            vec![Outcome::Invalid(InvalidKind::NotJson); 2]
        );
    }
}
