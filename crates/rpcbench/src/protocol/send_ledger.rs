//! What both chains' send protocols (`super::send_raw`, `super::send_solana`) share: the
//! ledger of the transactions a run sent, by request id, each with the node's answer; the
//! reading of an answer into a [`TxAck`]; and the opening of the request body. The chain's
//! own parts (what a sent transaction records, the params after the transaction) stay in
//! each protocol.

use std::collections::HashMap;
use std::time::Instant;

use serde::Deserialize;

use crate::jsonrpc::{self, CheckMode};
use crate::outcome::Outcome;
use crate::transport::Outgoing;
use crate::tx::refusal::TxRefusal;
use crate::util::fast_hash::MultiplyHasherBuilder;

/// How the node answered one send.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxAck {
    /// Sent, no answer yet (or the run ended before it).
    Unanswered,
    /// Taken into the node's pool: the instant the answer came.
    Accepted(Instant),
    /// Refused by the node, with its reason.
    Refused(TxRefusal),
    /// Not answered as JSON-RPC (a timeout, a closed connection, an HTTP error...).
    Failed(Outcome),
}

/// The answers to a run's sends, on any chain: how long each accepted one took to be answered
/// (µs, HDR), and the others by reason (the node's refusal, `no_answer_<class>` when no JSON-RPC
/// answer came, `unanswered` when the run ended first).
#[derive(Debug, Clone)]
pub struct AckTally {
    /// Send -> answer of the accepted sends, µs.
    pub ack_us: hdrhistogram::Histogram<u64>,
    /// The sends not accepted, by reason.
    pub rejected_by: std::collections::BTreeMap<String, u64>,
}

impl Default for AckTally {
    fn default() -> Self {
        AckTally {
            ack_us: hdrhistogram::Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            rejected_by: Default::default(),
        }
    }
}

impl AckTally {
    /// Counts the answer `ack` to a send at `sent`; true when the node accepted it.
    pub fn add(&mut self, sent: Instant, ack: TxAck) -> bool {
        let reason = match ack {
            TxAck::Accepted(at) => {
                self.ack_us.saturating_record(at.saturating_duration_since(sent).as_micros() as u64);
                return true;
            }
            TxAck::Refused(reason) => reason.name(),
            TxAck::Failed(outcome) => format!("no_answer_{}", outcome.class()),
            TxAck::Unanswered => "unanswered".to_string(),
        };
        *self.rejected_by.entry(reason).or_default() += 1;
        false
    }
}

/// A transaction a ledger keeps: it takes the node's answer.
pub trait AckedSend {
    /// Records what the node said.
    fn set_ack(&mut self, ack: TxAck);
}

/// Every transaction a run sent, in send order, found again by its request's id.
#[derive(Debug)]
pub struct SendLedger<T> {
    /// Touched twice per transaction: hashed with one multiplication, not SipHash (the ids are
    /// the engine's own, and the ledger holds one entry per send).
    by_id: HashMap<u64, usize, MultiplyHasherBuilder>,
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
