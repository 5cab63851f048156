//! Replayed requests: ticket i of the run sends request i of a [`Replay`] byte for byte (its
//! JSON-RPC id as recorded, so answers are not matched by id), and its answer is judged as a
//! single call, a batch or a plain HTTP request by its shape. With response checks on, the
//! answer's digest is compared with the recorded one; the body is parsed for that only then.

use std::sync::Arc;

use super::{rest, CallSlot, Draw, Protocol};
use crate::jsonrpc::{self, CheckMode, ScannedId};
use crate::outcome::{InvalidKind, Outcome};
use crate::replay::Replay;
use crate::transport::Outgoing;

/// The requests of a replay, one per ticket.
#[derive(Debug, Clone)]
pub(crate) struct Replayed {
    replay: Arc<Replay>,
    check: CheckMode,
}

impl Replayed {
    /// Sends `replay`'s requests, checked as `check` says.
    pub(crate) fn new(replay: Arc<Replay>, check: CheckMode) -> Self {
        Self { replay, check }
    }
}

/// The outcome of one scanned answer; any id but none is the recorded one's (a string id
/// included).
fn classify_item(item: &[u8]) -> Outcome {
    match jsonrpc::scan_response(item) {
        Ok(mut scanned) => {
            if scanned.id != ScannedId::Missing {
                scanned.id = ScannedId::Number(0);
            }
            jsonrpc::classify_scanned(&scanned, |_| true)
        }
        Err(kind) => Outcome::Invalid(kind),
    }
}

/// The outcome of a JSON-RPC answer to a recorded body (ids as recorded: any id is its own).
fn classify_jsonrpc(status: u16, body: &[u8], check: CheckMode) -> Outcome {
    if !(200..300).contains(&status) {
        return Outcome::HttpStatus(status);
    }
    if check == CheckMode::Full && !jsonrpc::is_valid_json(body) {
        return Outcome::Invalid(InvalidKind::NotJson);
    }
    match jsonrpc::first_byte(body) {
        Some(b'[') => {
            // A batch is one request: its first item that is not a result is its outcome.
            let mut outcome = Outcome::Ok;
            let walked = jsonrpc::each_array_item(body, |start, end| {
                if outcome.is_ok() {
                    outcome = classify_item(&body[start..end]);
                }
            });
            match walked {
                Ok(()) => outcome,
                Err(kind) => Outcome::Invalid(kind),
            }
        }
        _ => classify_item(body),
    }
}

impl Protocol for Replayed {
    const USES_TICKETS: bool = true;

    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing) {
        let index = draw.ticket % self.replay.len() as u64;
        let entry = self.replay.entry_for(index);
        if let Some(http) = &entry.http {
            out.method = http.method;
            out.path.extend_from_slice(&http.path);
            out.headers.extend_from_slice(&http.headers);
        }
        out.body.extend_from_slice(&entry.body);
        // The slot's id is the entry's index: the recorded digest is looked up by it.
        slots.push(CallSlot { call: entry.call, id: index });
    }

    fn classify(
        &self,
        status: u16,
        body: &[u8],
        slots: &[CallSlot],
        mut each: impl FnMut(usize, Outcome, &[u8]),
    ) {
        let Some(slot) = slots.first() else { return };
        let entry = self.replay.entry_for(slot.id);
        let mut outcome = match entry.http {
            Some(_) => rest::classify(status, body, false),
            None => classify_jsonrpc(status, body, self.check),
        };
        if self.replay.check_responses && outcome.is_ok() {
            if let Some(recorded) = &entry.digest {
                if crate::traffic::response_digest(body, self.replay.ignored_fields()) != *recorded {
                    outcome = Outcome::Invalid(InvalidKind::ChangedResponse);
                }
            }
        }
        each(0, outcome, body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn recorded_ids_and_batches_are_judged_by_shape() {
        let cases: [(u16, &str, Outcome); 6] = [
            (200, r#"{"jsonrpc":"2.0","id":"abc","result":1}"#, Outcome::Ok),
            (
                200,
                r#"{"jsonrpc":"2.0","id":99,"error":{"code":-32000,"message":"x"}}"#,
                Outcome::RpcError(-32000),
            ),
            (
                200,
                r#"[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"result":2}]"#,
                Outcome::Ok,
            ),
            (
                200,
                r#"[{"jsonrpc":"2.0","id":1,"result":1},{"jsonrpc":"2.0","id":2,"error":{"code":-1,"message":"x"}}]"#,
                Outcome::RpcError(-1),
            ),
            (503, "", Outcome::HttpStatus(503)),
            (200, "<html>", Outcome::Invalid(InvalidKind::NotJson)),
        ];
        for (status, body, expected) in cases {
            assert_eq!(classify_jsonrpc(status, body.as_bytes(), CheckMode::Scan), expected, "{body}");
        }
    }
}
