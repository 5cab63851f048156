//! What both chains' send protocols (`super::send_raw`, `super::send_solana`) share: the
//! ledger of the transactions a run sent, by request id, each with the node's answer; the
//! reading of an answer into a [`TxAck`]; and the opening of the request body. The chain's
//! own parts (what a sent transaction records, the params after the transaction) stay in
//! each protocol.

use std::collections::HashMap;
use std::sync::{Mutex, MutexGuard};
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
        // A node answering each send with another error code cannot grow the table: past
        // MAX_RPC_CODES reasons, a new one is counted under one row.
        let reason = if self.rejected_by.len() >= crate::outcome::MAX_RPC_CODES
            && !self.rejected_by.contains_key(&reason)
        {
            OTHER_REASONS.to_string()
        } else {
            reason
        };
        *self.rejected_by.entry(reason).or_default() += 1;
        false
    }
}

/// The row of the refusals whose reason came after [`crate::outcome::MAX_RPC_CODES`] others.
pub(crate) const OTHER_REASONS: &str = "other_reasons";

/// A transaction a ledger keeps: it takes the node's answer.
pub trait AckedSend {
    /// Records what the node said.
    fn set_ack(&mut self, ack: TxAck);
    /// What the node said so far.
    fn ack(&self) -> TxAck;
    /// When its request was written.
    fn sent_at(&self) -> Instant;
}

/// The transactions of a run not yet handed on, in send order, found again by their request's
/// id. A send leaves once the landing watch took it ([`SendLedger::take_answered`]) and, while
/// a watch follows the sends ([`SendLedger::follow`]), that watch saw it; an id is forgotten
/// once answered or taken. So what the ledger holds follows the unfinished sends (those in
/// flight, and those not yet handed on), never the number sent: with nobody taking, it holds
/// every send of the run.
#[derive(Debug)]
pub struct SendLedger<T> {
    /// Touched twice per transaction: hashed with one multiplication, not SipHash (the ids are
    /// the engine's own). Request id -> position (in send order) of an unanswered send.
    by_id: HashMap<u64, u64, MultiplyHasherBuilder>,
    /// The sends from position `first` on, and their request ids (same length).
    open: Vec<T>,
    ids: Vec<u64>,
    /// Entries of `open` before this index are gone (dropped in bulk, see `compact`).
    skip: usize,
    /// Position of `open[skip]`.
    first: u64,
    /// Positions below this one were handed to the landing watch.
    taken: u64,
    /// While a watch follows: positions below this one were seen by it, and the keys it is
    /// told are final since it last looked.
    follower: Option<Follower>,
    /// Capacity of the last news a [`SharedLedger`] moved in (the next inbox's).
    inbox_capacity: usize,
}

#[derive(Debug, Default)]
struct Follower {
    seen: u64,
    finished: Vec<u64>,
}

impl<T> Default for SendLedger<T> {
    fn default() -> Self {
        SendLedger {
            by_id: HashMap::default(),
            open: Vec::new(),
            ids: Vec::new(),
            skip: 0,
            first: 0,
            taken: 0,
            follower: None,
            inbox_capacity: 0,
        }
    }
}

impl<T: AckedSend> SendLedger<T> {
    /// The sends the ledger holds, in send order: those not yet handed on (every send of a run
    /// whose sends nobody took).
    pub fn sent(&self) -> &[T] {
        &self.open[self.skip..]
    }

    /// Transactions sent so far, handed on or not.
    pub fn sent_count(&self) -> u64 {
        self.first + self.sent().len() as u64
    }

    /// Entries held: sends not handed on, ids awaiting an answer, keys a follower has not taken.
    pub fn held(&self) -> usize {
        self.sent().len() + self.by_id.len() + self.follower.as_ref().map_or(0, |f| f.finished.len())
    }

    /// Records `tx`, sent as request `id`.
    pub(crate) fn record_send(&mut self, id: u64, tx: T) {
        self.by_id.insert(id, self.sent_count());
        self.open.push(tx);
        self.ids.push(id);
    }

    /// Records the answer to request `id`; the transaction it was, if one was sent under it and
    /// not yet handed on unanswered.
    pub(crate) fn record_ack(&mut self, id: u64, ack: TxAck) -> Option<&T> {
        let position = self.by_id.remove(&id)?;
        let index = self.skip + usize::try_from(position.checked_sub(self.first)?).ok()?;
        let tx = self.open.get_mut(index)?;
        tx.set_ack(ack);
        Some(tx)
    }

    /// Hands on (copies) the sends not yet taken, in send order: while sending, up to the
    /// first one not yet answered that was written at or after `answer_by` (one written
    /// earlier has had the longest a request may wait: it is handed on unanswered, and its
    /// id forgotten); with `all`, every one.
    pub fn take_answered(&mut self, all: bool, answer_by: Instant) -> Vec<T>
    where
        T: Clone,
    {
        let from = self.skip + (self.taken - self.first) as usize;
        let tail = &self.open[from..];
        let count = if all {
            tail.len()
        } else {
            tail.iter()
                .position(|tx| tx.ack() == TxAck::Unanswered && tx.sent_at() >= answer_by)
                .unwrap_or(tail.len())
        };
        let taken = tail[..count].to_vec();
        for (tx, id) in taken.iter().zip(&self.ids[from..from + count]) {
            if tx.ack() == TxAck::Unanswered {
                self.by_id.remove(id);
            }
        }
        self.taken += count as u64;
        self.compact();
        taken
    }

    /// The first send not yet handed on.
    pub fn next_untaken(&self) -> Option<&T> {
        self.open.get(self.skip + (self.taken - self.first) as usize)
    }

    /// From now on, sends stay until the follower (a watch looking for them) saw them too.
    pub fn follow(&mut self) {
        let seen = self.taken.min(self.sent_count());
        self.follower = Some(Follower { seen, finished: Vec::new() });
    }

    /// The follower is gone: sends no longer wait for it.
    pub fn unfollow(&mut self) {
        self.follower = None;
        self.compact();
    }

    /// For the follower: what each send since its last look gives (`of`), and the keys told
    /// final since ([`SendLedger::finished`]). Nothing without [`SendLedger::follow`].
    pub fn take_followed<R>(&mut self, of: impl Fn(&T) -> R) -> (Vec<R>, Vec<u64>) {
        let Some(follower) = self.follower.as_mut() else { return (Vec::new(), Vec::new()) };
        let from = self.skip + (follower.seen - self.first) as usize;
        let news: Vec<R> = self.open[from..].iter().map(of).collect();
        follower.seen += news.len() as u64;
        let finished = std::mem::take(&mut follower.finished);
        self.compact();
        (news, finished)
    }

    /// Tells the follower, if there is one, that the sends known by `keys` are final.
    pub fn finished(&mut self, keys: impl IntoIterator<Item = u64>) {
        if let Some(follower) = self.follower.as_mut() {
            follower.finished.extend(keys);
        }
    }

    /// Drops the sends both the landing and the follower have, in bulk once they are half of
    /// what the vectors hold (amortised constant time per send).
    fn compact(&mut self) {
        let done = self.follower.as_ref().map_or(self.taken, |f| f.seen.min(self.taken));
        let drop = (done - self.first) as usize;
        self.skip += drop;
        self.first = done;
        if self.skip > 0 && self.skip >= self.open.len() / 2 {
            self.open.drain(..self.skip);
            self.ids.drain(..self.skip);
            self.skip = 0;
        }
    }
}

/// What the engine tells a [`SharedLedger`]: a send, or the answer to one.
#[derive(Debug)]
enum LedgerNews<T> {
    Sent(u64, T),
    Answered(u64, TxAck),
}

/// A [`SendLedger`] the engine writes and helper threads (the landing watch, a follower) read,
/// without the engine ever waiting for them. The engine's sends and answers go into an inbox
/// whose lock is held only for one push or one swap of the vector; the ledger itself is locked
/// only by its readers, which first move the inbox's news into it ([`SharedLedger::lock`]). A
/// helper thread runs at idle priority: were the engine to wait on a lock it holds while
/// preempted, the core would go to another idle thread for a whole slice (~1 ms of send lag).
#[derive(Debug)]
pub(crate) struct SharedLedger<T> {
    inbox: Mutex<Vec<LedgerNews<T>>>,
    ledger: Mutex<SendLedger<T>>,
}

impl<T> Default for SharedLedger<T> {
    fn default() -> Self {
        SharedLedger { inbox: Mutex::new(Vec::new()), ledger: Mutex::new(SendLedger::default()) }
    }
}

impl<T: AckedSend> SharedLedger<T> {
    /// Records `tx`, sent as request `id` (for the engine: never waits for a reader).
    pub(crate) fn record_send(&self, id: u64, tx: T) {
        self.push(LedgerNews::Sent(id, tx));
    }

    /// Records the answer to request `id` (for the engine: never waits for a reader).
    pub(crate) fn record_ack(&self, id: u64, ack: TxAck) {
        self.push(LedgerNews::Answered(id, ack));
    }

    fn push(&self, news: LedgerNews<T>) {
        self.inbox.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).push(news);
    }

    /// The ledger, up to date with every send and answer recorded so far.
    pub(crate) fn lock(&self) -> MutexGuard<'_, SendLedger<T>> {
        let mut ledger = self.ledger.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        // The new vector is allocated outside the inbox's lock, as large as the last one taken,
        // so that the engine's pushes seldom grow it; under the lock, only a swap.
        let mut news = Vec::with_capacity(ledger.inbox_capacity);
        std::mem::swap(&mut news, &mut *self.inbox.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        ledger.inbox_capacity = news.capacity().max(news.len());
        for item in news {
            match item {
                LedgerNews::Sent(id, tx) => ledger.record_send(id, tx),
                LedgerNews::Answered(id, ack) => {
                    ledger.record_ack(id, ack);
                }
            }
        }
        ledger
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

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, PartialEq)]
    struct Probe {
        n: u64,
        sent: Instant,
        ack: TxAck,
    }

    impl AckedSend for Probe {
        fn set_ack(&mut self, ack: TxAck) {
            self.ack = ack;
        }
        fn ack(&self) -> TxAck {
            self.ack
        }
        fn sent_at(&self) -> Instant {
            self.sent
        }
    }

    #[test]
    fn the_engine_records_while_a_reader_holds_the_ledger_and_every_send_gets_one_outcome_in_order() {
        let shared: SharedLedger<Probe> = SharedLedger::default();
        let start = Instant::now();
        let mut taken = Vec::new();
        for n in 0..1_000u64 {
            // The reader holds the ledger while the engine records: the engine never waits.
            let reader = shared.lock();
            shared.record_send(n, Probe { n, sent: start, ack: TxAck::Unanswered });
            if n % 3 != 2 {
                shared.record_ack(n, TxAck::Accepted(start));
            }
            drop(reader);
            if n % 7 == 0 {
                taken.extend(shared.lock().take_answered(false, start));
            }
        }
        taken.extend(shared.lock().take_answered(true, start));
        assert_eq!(taken.iter().map(|tx| tx.n).collect::<Vec<_>>(), (0..1_000).collect::<Vec<_>>());
        for tx in &taken {
            let expected = if tx.n % 3 == 2 { TxAck::Unanswered } else { TxAck::Accepted(start) };
            assert_eq!(tx.ack, expected, "send {}", tx.n);
        }
        let ledger = shared.lock();
        assert_eq!(ledger.sent_count(), 1_000);
        assert_eq!(ledger.held(), 0, "every send handed on, and its id forgotten");
    }

    #[test]
    fn a_send_answered_before_the_reader_looks_is_taken_with_its_answer() {
        let shared: SharedLedger<Probe> = SharedLedger::default();
        let start = Instant::now();
        shared.record_send(7, Probe { n: 0, sent: start, ack: TxAck::Unanswered });
        shared.record_send(8, Probe { n: 1, sent: start, ack: TxAck::Unanswered });
        shared.record_ack(8, TxAck::Refused(TxRefusal::Other(-1)));
        // Send 0 is unanswered and not yet overdue: nothing is handed on past it.
        assert!(shared.lock().take_answered(false, start).is_empty());
        shared.record_ack(7, TxAck::Accepted(start));
        let taken = shared.lock().take_answered(false, start);
        assert_eq!(
            taken.iter().map(|tx| (tx.n, tx.ack)).collect::<Vec<_>>(),
            [(0, TxAck::Accepted(start)), (1, TxAck::Refused(TxRefusal::Other(-1)))]
        );
        assert_eq!(shared.lock().held(), 0);
    }

    #[test]
    fn a_node_answering_each_send_with_another_error_code_does_not_grow_the_refusal_table() {
        let mut tally = AckTally::default();
        let sent = Instant::now();
        for code in 0..10_000i64 {
            tally.add(sent, TxAck::Refused(TxRefusal::Other(-40_000 - code)));
        }
        tally.add(sent, TxAck::Refused(TxRefusal::Other(-40_000)));
        assert!(tally.rejected_by.len() <= crate::outcome::MAX_RPC_CODES + 1, "{}", tally.rejected_by.len());
        assert_eq!(tally.rejected_by.values().sum::<u64>(), 10_001, "every refusal counted once");
        assert_eq!(tally.rejected_by["rpc_-40000"], 2, "a reason already in the table keeps its row");
        assert_eq!(tally.rejected_by[OTHER_REASONS], 10_000 - crate::outcome::MAX_RPC_CODES as u64);
    }
}
