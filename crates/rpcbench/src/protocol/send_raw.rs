//! `eth_sendRawTransaction` as a protocol of the one engine: each request takes the next
//! transaction of the signed-ahead queue (`crate::tx::ahead`), so the pacer, the recorder and
//! every report treat sends like any other call; the acknowledgement of each send (accepted,
//! or refused with a reason, or the wire's failure) goes into a shared [`TxLedger`] keyed by
//! the request's id, which the inclusion figures read afterwards. A nonce refusal is handed
//! back to the signer (`crate::tx::resync`) to restart that sender from the node.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::send_ledger::{open_send_body, read_ack, AckedSend, SendLedger, SharedLedger, TxAck};
use super::{CallSlot, Draw, Protocol};
use crate::jsonrpc::CheckMode;
use crate::outcome::Outcome;
use crate::transport::Outgoing;
use crate::tx::ahead::{ResyncLine, SignedAhead};
use crate::tx::refusal::TxRefusal;
use crate::tx::resync::ResyncTally;
use crate::util::fast_hash::MultiplyHasherBuilder;

/// One transaction sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SentTx {
    /// Its hash.
    pub hash: [u8; 32],
    /// Index of its sender.
    pub sender: usize,
    /// Its nonce.
    pub nonce: u64,
    /// The nonce book's generation it was signed in.
    pub generation: u32,
    /// When its request was written.
    pub sent: Instant,
    /// What the node said.
    pub ack: TxAck,
}

impl AckedSend for SentTx {
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

/// Every transaction a run sent, by request id.
pub(crate) type TxLedger = SendLedger<SentTx>;

/// What the workers of one run share: the signed-ahead queue and the ledger.
#[derive(Debug)]
pub struct TxSends {
    queue: Mutex<SignedAhead>,
    ledger: SharedLedger<SentTx>,
    /// Who signed each send awaiting its answer: the engine's own (no helper thread takes this
    /// lock), for the nonce refusals that go back to the signer.
    signers: Mutex<SignersAwaiting>,
    resync: ResyncLine,
}

impl TxSends {
    /// Sends the transactions of `queue`; nonce refusals go back to its signer.
    pub fn new(queue: SignedAhead) -> Arc<Self> {
        let resync = queue.resync_line();
        Arc::new(TxSends {
            queue: Mutex::new(queue),
            ledger: SharedLedger::default(),
            signers: Mutex::default(),
            resync,
        })
    }

    /// What the nonce resyncs did so far.
    pub fn resync_tally(&self) -> ResyncTally {
        self.resync.tally()
    }

    /// What the top-ups of dry senders did so far.
    pub fn top_up_tally(&self) -> crate::tx::top_up::TopUpTally {
        self.resync.top_up_tally()
    }

    /// Sends so far that found nothing signed and waited for the signer.
    pub fn waits_for_signer(&self) -> u64 {
        self.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).waits_for_signer()
    }

    /// The ledger as it stands (the run's sends once it has finished).
    pub fn ledger(&self) -> std::sync::MutexGuard<'_, TxLedger> {
        self.ledger.lock()
    }
}

impl TxSends {
    fn signers(&self) -> std::sync::MutexGuard<'_, SignersAwaiting> {
        self.signers.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }
}

/// Sends awaiting an answer kept at most in [`SignersAwaiting`]: at 20,000/s, 6.5 s of sends,
/// far longer than a request waits for its answer.
const SIGNERS_AWAITING_KEPT: usize = 1 << 17;

/// Request id -> (sender, generation, order of the send) of each send awaiting its answer.
/// A send that never gets one (a timeout, a reset: the engine does not classify those) is
/// forgotten once [`SIGNERS_AWAITING_KEPT`] newer ones are kept, so a node that answers nothing
/// cannot grow the table.
#[derive(Debug, Default)]
struct SignersAwaiting {
    by_id: HashMap<u64, (usize, u32, u64), MultiplyHasherBuilder>,
    recorded: u64,
}

impl SignersAwaiting {
    /// Keeps who signed request `id`; past the bound, the older half is forgotten.
    fn insert(&mut self, id: u64, sender: usize, generation: u32) {
        self.recorded += 1;
        self.by_id.insert(id, (sender, generation, self.recorded));
        if self.by_id.len() > SIGNERS_AWAITING_KEPT {
            let floor = self.recorded - (SIGNERS_AWAITING_KEPT / 2) as u64;
            self.by_id.retain(|_, (_, _, order)| *order > floor);
        }
    }

    /// Who signed request `id`, forgotten from here on.
    fn remove(&mut self, id: u64) -> Option<(usize, u32)> {
        self.by_id.remove(&id).map(|(sender, generation, _)| (sender, generation))
    }
}

/// The protocol: one `eth_sendRawTransaction` per request.
#[derive(Debug, Clone)]
pub(crate) struct SendRawTx {
    sends: Arc<TxSends>,
    check: CheckMode,
}

impl SendRawTx {
    /// Sends from `sends`, checking answers as `check` says.
    pub(crate) fn new(sends: Arc<TxSends>, check: CheckMode) -> Self {
        SendRawTx { sends, check }
    }
}

impl Protocol for SendRawTx {
    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing) {
        let id = draw.id();
        slots.push(CallSlot { call: 0, id });
        let next = self.sends.queue.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).next();
        // The signer never stops first (it signs until the run drops the queue); were it gone,
        // an empty raw transaction is sent and refused, so the request still has its outcome.
        let (raw, sent) = match next {
            Some(prepared) => {
                let sent = SentTx {
                    hash: prepared.hash,
                    sender: prepared.sender,
                    nonce: prepared.nonce,
                    generation: prepared.generation,
                    sent: Instant::now(),
                    ack: TxAck::Unanswered,
                };
                (prepared.raw_hex, Some(sent))
            }
            None => ("0x".to_string(), None),
        };
        open_send_body(out, id, "eth_sendRawTransaction");
        out.body.extend_from_slice(raw.as_bytes());
        out.body.extend_from_slice(b"\"]}");
        if let Some(sent) = sent {
            self.sends.signers().insert(id, sent.sender, sent.generation);
            self.sends.ledger.record_send(id, sent);
        }
    }

    fn classify(
        &self,
        status: u16,
        body: &[u8],
        slots: &[CallSlot],
        mut each: impl FnMut(usize, Outcome, &[u8]),
    ) {
        let Some(slot) = slots.first() else { return };
        let (outcome, ack) = read_ack(status, body, slot.id, self.check);
        let signed_by = self.sends.signers().remove(slot.id);
        self.sends.ledger.record_ack(slot.id, ack);
        // A nonce refusal goes back to the signer, which restarts the sender from the node;
        // posting never waits.
        if let (TxAck::Refused(reason), Some((sender, generation))) = (ack, signed_by) {
            if reason.needs_resync() {
                self.sends.resync.request(sender, generation);
            } else if reason == TxRefusal::InsufficientFunds {
                self.sends.resync.request_top_up(sender, generation);
            }
        }
        each(0, outcome, body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protocol::send_ledger::AckTally;

    #[test]
    fn the_table_of_signers_awaiting_an_answer_stays_bounded_when_no_answer_comes() {
        let mut signers = SignersAwaiting::default();
        let sends = 3 * SIGNERS_AWAITING_KEPT as u64;
        for id in 0..sends {
            signers.insert(id, (id % 10) as usize, 0);
            assert!(signers.by_id.len() <= SIGNERS_AWAITING_KEPT, "{} kept", signers.by_id.len());
        }
        // The newest sends are still known; the oldest are forgotten.
        assert_eq!(signers.remove(sends - 1), Some((((sends - 1) % 10) as usize, 0)));
        assert_eq!(signers.remove(0), None);
        assert_eq!(signers.remove(sends - 1), None, "taken once");
    }

    #[test]
    fn every_answer_to_a_send_is_counted_once_accepted_timed_or_rejected_by_reason() {
        let mut tally = AckTally::default();
        let sent = Instant::now();
        let answered = sent + std::time::Duration::from_millis(3);
        assert!(tally.add(sent, TxAck::Accepted(answered)));
        assert!(!tally.add(sent, TxAck::Refused(TxRefusal::NonceTooLow)));
        assert!(!tally.add(sent, TxAck::Refused(TxRefusal::NonceTooLow)));
        assert!(!tally.add(sent, TxAck::Failed(Outcome::Timeout)));
        assert!(!tally.add(sent, TxAck::Unanswered));
        assert_eq!(tally.ack_us.len(), 1);
        assert!(
            (2_990..=3_010).contains(&tally.ack_us.value_at_quantile(0.5)),
            "{}",
            tally.ack_us.value_at_quantile(0.5)
        );
        let reasons: Vec<(&str, u64)> =
            tally.rejected_by.iter().map(|(reason, n)| (reason.as_str(), *n)).collect();
        assert_eq!(
            reasons,
            [("no_answer_timeout", 1), (TxRefusal::NonceTooLow.name().as_str(), 2), ("unanswered", 1)]
        );
    }
    use crate::tx::keys::{keys_from_mnemonic, DEV_MNEMONIC};
    use crate::tx::nonce::NonceBook;
    use crate::tx::sign::legacy_transfer_template;
    use rand::SeedableRng;

    fn sends() -> Arc<TxSends> {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
        let template = legacy_transfer_template(31337);
        TxSends::new(SignedAhead::start(keys, NonceBook::new(vec![0]), template, 3, 2))
    }

    fn draw() -> Draw {
        Draw {
            rng: rand::rngs::SmallRng::seed_from_u64(1),
            next_id: 7,
            fixed_id: None,
            turn: 0,
            turn_stride: 1,
            ticket: 0,
        }
    }

    #[test]
    fn each_send_is_one_request_and_its_answer_lands_in_the_ledger_by_reason() {
        let sends = sends();
        let protocol = SendRawTx::new(sends.clone(), CheckMode::Full);
        let mut draw = draw();
        let answers: [&[u8]; 3] = [
            br#"{"jsonrpc":"2.0","id":7,"result":"0x01"}"#,
            br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32000,"message":"nonce too low: next nonce 5, tx nonce 1"}}"#,
            br#"{"jsonrpc":"2.0","id":9,"error":{"code":-32000,"message":"txpool is full"}}"#,
        ];
        let mut outcomes = Vec::new();
        for answer in answers {
            let (mut slots, mut out) = (Vec::new(), Outgoing::default());
            protocol.encode(&mut draw, &mut slots, &mut out);
            let body: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
            assert_eq!(body["method"], "eth_sendRawTransaction");
            assert!(body["params"][0].as_str().unwrap().starts_with("0xf8"), "{body}");
            protocol.classify(200, answer, &slots, |_, outcome, _| outcomes.push(outcome));
        }
        assert_eq!(
            outcomes,
            [
                Outcome::Ok,
                Outcome::TxRefused(TxRefusal::NonceTooLow),
                Outcome::TxRefused(TxRefusal::PoolFull)
            ]
        );
        let ledger = sends.ledger();
        let acks: Vec<TxAck> = ledger.sent().iter().map(|tx| tx.ack).collect();
        assert!(matches!(acks[0], TxAck::Accepted(_)));
        assert_eq!(acks[1..], [TxAck::Refused(TxRefusal::NonceTooLow), TxAck::Refused(TxRefusal::PoolFull)]);
        assert_eq!(ledger.sent().iter().map(|tx| tx.nonce).collect::<Vec<_>>(), [0, 1, 2]);
    }

    #[test]
    fn the_send_ledger_s_size_follows_the_unanswered_sends_not_the_sent_ones() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
        let template = crate::tx::sign::legacy_transfer_template(31337);
        let sends = TxSends::new(SignedAhead::start(keys, NonceBook::new(vec![0]), template, 400, 16));
        let protocol = SendRawTx::new(sends.clone(), CheckMode::Full);
        let mut draw = draw();
        let mut taken = 0;
        let mut most_held = 0;
        let before_any = Instant::now();
        for n in 0..400u64 {
            let (mut slots, mut out) = (Vec::new(), Outgoing::default());
            protocol.encode(&mut draw, &mut slots, &mut out);
            // Request 7 (the first) is never answered: the wire failed it.
            if slots[0].id != 7 {
                let answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x01"}}"#, slots[0].id);
                protocol.classify(200, answer.as_bytes(), &slots, |_, _, _| {});
            }
            if n % 20 == 19 {
                // The landing watch takes what is answered; the first send has waited longer
                // than a request can once 100 more were sent.
                let answer_by = if n >= 100 { Instant::now() } else { before_any };
                taken += sends.ledger().take_answered(false, answer_by).len();
            }
            let held = sends.ledger().held();
            // Until the unanswered first one is handed on, everything after it waits.
            most_held = most_held.max(if n < 120 { 0 } else { held });
            assert!(held <= 121, "held {held} after {} sent", n + 1);
        }
        let ledger = sends.ledger();
        assert_eq!(ledger.sent_count(), 400);
        assert_eq!(taken, 400, "every send handed on, the unanswered one once it waited too long");
        assert_eq!(ledger.held(), 0);
        assert!(most_held <= 20, "held {most_held} between two takes, of 400 sent");
    }
}
