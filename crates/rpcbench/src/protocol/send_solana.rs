//! Solana's `sendTransaction` as a protocol of the one engine: each request takes the next
//! transaction of the Solana signed-ahead pipeline (`crate::tx::solana::ahead`; with a
//! signature watch, already subscribed), base64 encoded, `skipPreflight` as asked; the answer
//! (accepted, refused with a reason, or the wire's failure) goes into a shared
//! [`SolanaLedger`] keyed by the request's id, which the landing figures read afterwards.

use std::sync::{Arc, MutexGuard};
use std::time::Instant;

use super::send_ledger::TxAck;
use super::send_ledger::{open_send_body, read_ack, AckedSend, SendLedger, SharedLedger};
use super::{CallSlot, Draw, Protocol};
use crate::jsonrpc::CheckMode;
use crate::outcome::Outcome;
use crate::transport::Outgoing;
use crate::tx::solana::ahead::ReadyQueue;

/// One Solana transaction sent.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SolanaSent {
    /// Its index in send order (the signer's).
    pub index: u64,
    /// Its signature.
    pub signature: [u8; 64],
    /// Index of its payer.
    pub payer: usize,
    /// Its blockhash's last valid block height.
    pub last_valid_block_height: u64,
    /// When its request was written.
    pub sent: Instant,
    /// What the node said.
    pub ack: TxAck,
}

impl AckedSend for SolanaSent {
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

/// Every Solana transaction a run sent, by request id.
pub type SolanaLedger = SendLedger<SolanaSent>;

/// What the workers of one Solana run share: the ready queue and the ledger.
#[derive(Debug)]
pub struct SolanaSends {
    ready: Arc<ReadyQueue>,
    ledger: SharedLedger<SolanaSent>,
    skip_preflight: bool,
    preflight_commitment: &'static str,
}

impl SolanaSends {
    /// Sends what `ready` gives, with `skipPreflight` as `skip_preflight` says (and the
    /// preflight at `preflight_commitment` otherwise).
    pub fn new(
        ready: Arc<ReadyQueue>,
        skip_preflight: bool,
        preflight_commitment: &'static str,
    ) -> Arc<Self> {
        Arc::new(SolanaSends { ready, ledger: SharedLedger::default(), skip_preflight, preflight_commitment })
    }

    /// The ledger as it stands.
    pub fn ledger(&self) -> MutexGuard<'_, SolanaLedger> {
        self.ledger.lock()
    }
}

/// The protocol: one `sendTransaction` per request.
#[derive(Debug, Clone)]
pub(crate) struct SendSolanaTx {
    sends: Arc<SolanaSends>,
    check: CheckMode,
}

impl SendSolanaTx {
    /// Sends from `sends`, checking answers as `check` says.
    pub(crate) fn new(sends: Arc<SolanaSends>, check: CheckMode) -> Self {
        SendSolanaTx { sends, check }
    }
}

impl Protocol for SendSolanaTx {
    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing) {
        let id = draw.id();
        slots.push(CallSlot { call: 0, id });
        // The pipeline ends only when the run stops taking (or a count was reached); were it
        // empty, an empty transaction is sent and refused, so the request still has its outcome.
        let next = self.sends.ready.pop();
        open_send_body(out, id, "sendTransaction");
        if let Some(prepared) = &next {
            out.body.extend_from_slice(prepared.base64.as_bytes());
        }
        out.body.extend_from_slice(b"\",{\"encoding\":\"base64\",\"skipPreflight\":");
        out.body.extend_from_slice(if self.sends.skip_preflight { b"true" } else { b"false" });
        out.body.extend_from_slice(b",\"preflightCommitment\":\"");
        out.body.extend_from_slice(self.sends.preflight_commitment.as_bytes());
        out.body.extend_from_slice(b"\"}]}");
        if let Some(prepared) = next {
            let sent = SolanaSent {
                index: prepared.index,
                signature: prepared.signature,
                payer: prepared.payer,
                last_valid_block_height: prepared.last_valid_block_height,
                sent: Instant::now(),
                ack: TxAck::Unanswered,
            };
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
        self.sends.ledger.record_ack(slot.id, ack);
        each(0, outcome, body);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::refusal::TxRefusal;
    use crate::tx::solana::ahead::PreparedSolanaTx;
    use rand::SeedableRng;

    #[test]
    fn each_solana_send_is_one_request_and_its_answer_lands_in_the_ledger_by_reason() {
        let ready = ReadyQueue::new(4);
        for index in 0..3 {
            ready.push(PreparedSolanaTx {
                index,
                payer: 0,
                signature: [index as u8; 64],
                base64: format!("AQ{index}"),
                last_valid_block_height: 150,
            });
        }
        let sends = SolanaSends::new(ready, true, "processed");
        let protocol = SendSolanaTx::new(sends.clone(), CheckMode::Full);
        let mut draw = Draw {
            rng: rand::rngs::SmallRng::seed_from_u64(1),
            next_id: 7,
            fixed_id: None,
            turn: 0,
            turn_stride: 1,
            ticket: 0,
        };
        let answers: [&[u8]; 3] = [
            br#"{"jsonrpc":"2.0","id":7,"result":"5Vf"}"#,
            br#"{"jsonrpc":"2.0","id":8,"error":{"code":-32002,"message":"Transaction simulation failed: Blockhash not found"}}"#,
            br#"{"jsonrpc":"2.0","id":9,"error":{"code":-32002,"message":"Transaction simulation failed: This transaction has already been processed"}}"#,
        ];
        for (n, answer) in answers.into_iter().enumerate() {
            let (mut slots, mut out) = (Vec::new(), Outgoing::default());
            protocol.encode(&mut draw, &mut slots, &mut out);
            let body: serde_json::Value = serde_json::from_slice(&out.body).unwrap();
            assert_eq!(body["method"], "sendTransaction");
            assert_eq!(body["params"][0], format!("AQ{n}"));
            assert_eq!(body["params"][1]["encoding"], "base64");
            assert_eq!(body["params"][1]["skipPreflight"], true);
            protocol.classify(200, answer, &slots, |_, _, _| {});
        }
        let ledger = sends.ledger();
        let acks: Vec<TxAck> = ledger.sent().iter().map(|tx| tx.ack).collect();
        assert!(matches!(acks[0], TxAck::Accepted(_)));
        assert_eq!(
            acks[1..],
            [TxAck::Refused(TxRefusal::BlockhashNotFound), TxAck::Refused(TxRefusal::AlreadyProcessed)]
        );
    }

    #[test]
    fn the_solana_send_ledger_s_size_follows_the_unanswered_sends_not_the_sent_ones() {
        let ready = ReadyQueue::new(1_000);
        for index in 0..300u64 {
            ready.push(PreparedSolanaTx {
                index,
                payer: 0,
                signature: [(index % 251) as u8; 64],
                base64: format!("AQ{index}"),
                last_valid_block_height: 150,
            });
        }
        let sends = SolanaSends::new(ready, true, "processed");
        // A watch follows the sends (the block stream, the status poll).
        sends.ledger().follow();
        let protocol = SendSolanaTx::new(sends.clone(), CheckMode::Full);
        let mut draw = Draw {
            rng: rand::rngs::SmallRng::seed_from_u64(1),
            next_id: 1,
            fixed_id: None,
            turn: 0,
            turn_stride: 1,
            ticket: 0,
        };
        let (mut landed, mut followed, mut most_held) = (0, 0, 0);
        let start = Instant::now();
        for n in 0..300u64 {
            let (mut slots, mut out) = (Vec::new(), Outgoing::default());
            protocol.encode(&mut draw, &mut slots, &mut out);
            let answer = format!(r#"{{"jsonrpc":"2.0","id":{},"result":"5Vf"}}"#, slots[0].id);
            protocol.classify(200, answer.as_bytes(), &slots, |_, _, _| {});
            if n % 10 == 9 {
                landed += sends.ledger().take_answered(false, start).len();
            }
            if n % 25 == 24 {
                let (news, finished) = sends.ledger().take_followed(|tx| tx.index);
                followed += news.len();
                assert!(finished.is_empty());
            }
            most_held = most_held.max(sends.ledger().held());
        }
        // The landing book told the follower which ones are final; it takes them once.
        sends.ledger().finished([3, 4]);
        assert_eq!(sends.ledger().take_followed(|tx| tx.index).1, [3, 4]);
        let ledger = sends.ledger();
        assert_eq!((ledger.sent_count(), landed, followed), (300, 300, 300));
        assert_eq!(ledger.held(), 0);
        assert!(most_held <= 25, "held {most_held} of 300 sent: what both have taken is gone");
        drop(ledger);
        // Once the follower is gone, sends no longer wait for it.
        sends.ledger().unfollow();
        assert_eq!(sends.ledger().take_followed(|tx| tx.index), (Vec::new(), Vec::new()));
    }
}
