//! Inclusion bookkeeping: which sent transaction landed in which block, and when. Fed with the
//! run's sends (from the ledger of `crate::protocol::send_raw`) and with each new head as it
//! arrives (its number, its arrival stamp and its transaction hashes), it measures send ->
//! included as the head's arrival minus the send instant (an HDR histogram in microseconds)
//! and blocks after the head at send; at the end every transaction sent gets exactly ONE final
//! outcome: included, rejected (refused by the node or never answered), dropped (accepted but
//! not included within the inclusion timeout) or pending (younger than the timeout).
//! No clock and no socket here: the driver watching the feed passes the instants in.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// The final outcome of one sent transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxFinal {
    /// In a block: how long after its send the head carrying it arrived, and how many blocks
    /// after the head at send it was.
    Included {
        /// Send -> the head's arrival.
        latency: Duration,
        /// The block's number minus the head's at send.
        blocks_after: u64,
    },
    /// Refused by the node, or never acknowledged.
    Rejected,
    /// Accepted but not included within the inclusion timeout.
    Dropped,
    /// Accepted, not included, younger than the inclusion timeout at the end: its age.
    Pending(Duration),
}

/// What happened to a run's transactions; `included + rejected + dropped + pending == sent`.
#[derive(Debug, Clone)]
pub struct InclusionTally {
    /// Transactions sent.
    pub sent: u64,
    /// Included in a block.
    pub included: u64,
    /// Refused or never acknowledged.
    pub rejected: u64,
    /// Not included within the timeout.
    pub dropped: u64,
    /// Still waiting at the end.
    pub pending: u64,
    /// The oldest pending transaction's age.
    pub oldest_pending: Duration,
    /// Send -> included, microseconds.
    pub latency_us: Histogram<u64>,
    /// Blocks after the head at send.
    pub blocks_after: Histogram<u64>,
    /// Per block with any of ours: (number, ours, all transactions in it).
    pub shares: Vec<(u64, u64, u64)>,
}

#[derive(Debug, Clone, Copy)]
struct Tracked {
    sent: Instant,
    head_at_send: u64,
    accepted: bool,
    included: Option<(u64, Instant)>,
}

/// The transactions a run sent and the blocks seen so far.
#[derive(Debug, Default)]
pub struct InclusionBook {
    by_hash: HashMap<[u8; 32], usize>,
    tracked: Vec<Tracked>,
    shares: Vec<(u64, u64, u64)>,
    /// Blocks already seen by number (a re-sent head, a reorg's replacement) with our count.
    seen: HashMap<u64, u64>,
}

impl InclusionBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes a send: its hash, instant, the head number then, and whether the node accepted it.
    /// The same transaction sent twice (signed again with the same nonce after a nonce resync)
    /// is looked up by its accepted send: a refused copy ("already known") stays rejected and
    /// the accepted one is the one a block includes.
    pub fn sent(&mut self, hash: [u8; 32], sent: Instant, head_at_send: u64, accepted: bool) {
        let shadowed =
            self.by_hash.get(&hash).is_some_and(|&index| self.tracked[index].accepted || !accepted);
        if !shadowed {
            self.by_hash.insert(hash, self.tracked.len());
        }
        self.tracked.push(Tracked { sent, head_at_send, accepted, included: None });
    }

    /// Notes a block: its number, when its head arrived, and its transaction hashes. A
    /// transaction is included once, at the first head that carried it.
    pub fn block(&mut self, number: u64, arrived: Instant, hashes: &[[u8; 32]]) {
        let mut ours = 0;
        for hash in hashes {
            if let Some(&index) = self.by_hash.get(hash) {
                let tracked = &mut self.tracked[index];
                if tracked.included.is_none() {
                    tracked.included = Some((number, arrived));
                    ours += 1;
                }
            }
        }
        if ours > 0 && self.seen.insert(number, ours).is_none() {
            self.shares.push((number, ours, hashes.len() as u64));
        }
    }

    /// The final outcome of each transaction at `now` with `timeout`, in send order.
    pub fn finals(&self, now: Instant, timeout: Duration) -> Vec<TxFinal> {
        self.tracked
            .iter()
            .map(|tracked| match (tracked.accepted, tracked.included) {
                (_, Some((number, arrived))) => TxFinal::Included {
                    latency: arrived.saturating_duration_since(tracked.sent),
                    blocks_after: number.saturating_sub(tracked.head_at_send),
                },
                (false, None) => TxFinal::Rejected,
                (true, None) => {
                    let age = now.saturating_duration_since(tracked.sent);
                    if age >= timeout {
                        TxFinal::Dropped
                    } else {
                        TxFinal::Pending(age)
                    }
                }
            })
            .collect()
    }

    /// The tally at `now` with `timeout`.
    pub fn tally(&self, now: Instant, timeout: Duration) -> InclusionTally {
        let mut tally = InclusionTally {
            sent: self.tracked.len() as u64,
            included: 0,
            rejected: 0,
            dropped: 0,
            pending: 0,
            oldest_pending: Duration::ZERO,
            // Fixed bounds (an hour; a million blocks), so memory is bounded and larger values
            // are recorded at the bound; valid bounds, so creation cannot fail.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            blocks_after: Histogram::new_with_bounds(1, 1_000_000, 3).expect("valid bounds"),
            shares: self.shares.clone(),
        };
        for outcome in self.finals(now, timeout) {
            match outcome {
                TxFinal::Included { latency, blocks_after } => {
                    tally.included += 1;
                    tally.latency_us.saturating_record(latency.as_micros().min(u128::from(u64::MAX)) as u64);
                    tally.blocks_after.saturating_record(blocks_after);
                }
                TxFinal::Rejected => tally.rejected += 1,
                TxFinal::Dropped => tally.dropped += 1,
                TxFinal::Pending(age) => {
                    tally.pending += 1;
                    tally.oldest_pending = tally.oldest_pending.max(age);
                }
            }
        }
        tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refused_resend_of_the_same_transaction_does_not_hide_the_accepted_one() {
        let start = Instant::now();
        let mut book = InclusionBook::new();
        book.sent([1; 32], start, 0, true);
        book.sent([1; 32], start, 0, false);
        book.sent([2; 32], start, 0, false);
        book.sent([2; 32], start, 0, true);
        book.block(1, start + Duration::from_millis(5), &[[1; 32], [2; 32]]);
        let finals = book.finals(start, Duration::from_secs(60));
        assert!(matches!(finals[0], TxFinal::Included { .. }));
        assert_eq!(finals[1], TxFinal::Rejected);
        assert_eq!(finals[2], TxFinal::Rejected);
        assert!(matches!(finals[3], TxFinal::Included { .. }));
    }

    fn hash(n: u8) -> [u8; 32] {
        [n; 32]
    }

    #[test]
    fn every_sent_transaction_gets_exactly_one_final_outcome_and_the_sum_holds() {
        let start = Instant::now();
        let mut book = InclusionBook::new();
        for n in 0..6u8 {
            book.sent(hash(n), start + Duration::from_millis(u64::from(n) * 10), 100, n != 1);
        }
        // Block 101 carries 0 and 2 (and a stranger), arriving 1 s after the start; a re-sent
        // head of 101 counts nothing twice.
        book.block(101, start + Duration::from_secs(1), &[hash(0), hash(2), hash(99)]);
        book.block(101, start + Duration::from_secs(2), &[hash(0), hash(2), hash(99)]);
        book.block(103, start + Duration::from_secs(3), &[hash(3)]);
        let tally =
            book.tally(start + Duration::from_secs(10), Duration::from_secs(9) + Duration::from_millis(955));
        assert_eq!(
            (tally.sent, tally.included, tally.rejected, tally.dropped, tally.pending),
            (6, 3, 1, 1, 1)
        );
        assert_eq!(tally.included + tally.rejected + tally.dropped + tally.pending, tally.sent);
        assert_eq!(tally.oldest_pending, Duration::from_millis(9_950));
        assert_eq!(tally.shares, [(101, 2, 3), (103, 1, 1)]);
        assert_eq!(tally.blocks_after.max(), 3);
        // Send -> included is the head's arrival minus the send: 1000, 980 and 2970 ms.
        assert_eq!(tally.latency_us.min(), tally.latency_us.lowest_equivalent(980_000));
        assert_eq!(tally.latency_us.max(), tally.latency_us.highest_equivalent(2_970_000));
    }
}
