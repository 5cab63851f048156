//! What both chains' send protocols (`super::send_raw`, `super::send_solana`) share: the
//! ledger of the transactions a run sent, by request id, each with the node's answer; the
//! reading of an answer into a [`TxAck`]; and the opening of the request body. The chain's
//! own parts (what a sent transaction records, the params after the transaction) stay in
//! each protocol.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};
use std::time::Instant;

use serde::Deserialize;

use super::send_raw::TxAck;
use crate::jsonrpc::{self, CheckMode};
use crate::outcome::Outcome;
use crate::transport::Outgoing;
use crate::tx::refusal::TxRefusal;

/// A transaction a ledger keeps: it takes the node's answer.
pub trait AckedSend {
    /// Records what the node said.
    fn set_ack(&mut self, ack: TxAck);
}

/// Hashes request ids (unique numbers the engine hands out) with one multiplication: the
/// ledger is touched twice per transaction, SipHash cost more than the rest of the lookup.
#[derive(Debug, Default, Clone, Copy)]
pub(crate) struct RequestIdHasher(u64);

impl Hasher for RequestIdHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 = (self.0.rotate_left(8) ^ u64::from(*byte)).wrapping_mul(0x9E37_79B9_7F4A_7C15);
        }
    }
    fn write_u64(&mut self, id: u64) {
        self.0 = id.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
}

/// Every transaction a run sent, in send order, found again by its request's id.
#[derive(Debug)]
pub struct SendLedger<T> {
    by_id: HashMap<u64, usize, BuildHasherDefault<RequestIdHasher>>,
    sent: Vec<T>,
}

impl<T> Default for SendLedger<T> {
    fn default() -> Self {
        SendLedger { by_id: HashMap::default(), sent: Vec::new() }
    }
}

impl<T: AckedSend> SendLedger<T> {
    /// The transactions sent, in send order.
    pub fn sent(&self) -> &[T] {
        &self.sent
    }

    /// Records `tx`, sent as request `id`.
    pub(crate) fn record_send(&mut self, id: u64, tx: T) {
        self.by_id.insert(id, self.sent.len());
        self.sent.push(tx);
    }

    /// Records the answer to request `id`; the transaction it was, if one was sent under it.
    pub(crate) fn record_ack(&mut self, id: u64, ack: TxAck) -> Option<&T> {
        let &index = self.by_id.get(&id)?;
        let tx = &mut self.sent[index];
        tx.set_ack(ack);
        Some(tx)
    }
}

#[derive(Deserialize)]
struct ErrorAnswer<'a> {
    #[serde(borrow)]
    error: ErrorObject<'a>,
}

#[derive(Deserialize)]
struct ErrorObject<'a> {
    code: i64,
    #[serde(borrow, default)]
    message: std::borrow::Cow<'a, str>,
}

/// The outcome of the answer to a send (request `id`), a refusal counted in its reason's row, and
/// what the answer says of the transaction.
pub(crate) fn read_ack(status: u16, body: &[u8], id: u64, check: CheckMode) -> (Outcome, TxAck) {
    let outcome = jsonrpc::classify(status, body, id, check);
    let ack = match outcome {
        Outcome::Ok => TxAck::Accepted(Instant::now()),
        Outcome::RpcError(code) => {
            let (code, message) = serde_json::from_slice::<ErrorAnswer<'_>>(body)
                .map(|answer| (answer.error.code, answer.error.message.into_owned()))
                .unwrap_or((code, String::new()));
            TxAck::Refused(TxRefusal::classify(code, &message))
        }
        other => TxAck::Failed(other),
    };
    // A refusal is counted in its reason's row of the outcome table.
    let outcome = if let TxAck::Refused(reason) = ack { reason.counted(outcome) } else { outcome };
    (outcome, ack)
}

/// Writes `{"jsonrpc":"2.0","id":ID,"method":"METHOD","params":["`: what follows is the
/// transaction, then the chain's own params.
pub(crate) fn open_send_body(out: &mut Outgoing, id: u64, method: &str) {
    out.body.extend_from_slice(b"{\"jsonrpc\":\"2.0\",\"id\":");
    out.body.extend_from_slice(itoa::Buffer::new().format(id).as_bytes());
    out.body.extend_from_slice(b",\"method\":\"");
    out.body.extend_from_slice(method.as_bytes());
    out.body.extend_from_slice(b"\",\"params\":[\"");
}
