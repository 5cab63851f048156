//! Inclusion bookkeeping: which sent transaction landed in which block, and when. Fed with the
//! run's sends (from the ledger of `crate::protocol::send_raw`) and with each block as its head
//! arrives (number, hash and parent hash where known, arrival stamp, transaction hashes), it
//! measures send -> included as the head's arrival minus the send instant (an HDR histogram in
//! microseconds) and blocks after the head at send. Every transaction sent gets exactly ONE
//! final outcome: included, reverted (included with receipt status 0), rejected (refused by the
//! node or never answered), dropped (accepted but not included within the inclusion timeout)
//! or pending (unfinished at the end, with its age).
//!
//! Bounded: a transaction is folded into the counters and histograms the moment its outcome is
//! final and forgotten; the book holds only the unfinished ones (accepted and waiting, bounded by
//! the rate times the inclusion timeout) and the inclusions of the last `confirm_depth` blocks,
//! which a reorg can still take back. Every call costs what it is handed (a block's hashes, the
//! transactions that time out), never the number sent so far.
//!
//! Reorgs: a block number seen again with another hash, or a block whose parent hash is not the
//! hash kept for the number below, replaces the kept blocks from there up: their transactions go
//! back to waiting (each counted `reorged_out` once per time it happens) until a block carries
//! them again. A transaction found in a block other than the kept one that carried it (a node
//! that moves transactions without new hashes, as the mock's reorg knob does) left its old
//! block the same way. Inclusions deeper than `confirm_depth` are final and no longer watched.
//!
//! No clock and no socket here: the driver watching the feed passes the instants in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use super::block_shares::BlockShares;
use crate::outcome::{TxFinalCounts, TxFinalOutcome};

/// Blocks an inclusion is kept (and can be taken back by a reorg) before it is final: 8, more
/// than the reorgs of Ethereum's proof of stake (1-2 blocks) and the mock's usual knob values.
pub const DEFAULT_CONFIRM_DEPTH: u64 = 8;

/// The final outcome of one sent transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxFinal {
    /// In a block with a successful (or unread) receipt: how long after its send the head
    /// carrying it arrived, and how many blocks after the head at send it was.
    Included {
        /// Send -> the head's arrival.
        latency: Duration,
        /// The block's number minus the head's at send.
        blocks_after: u64,
    },
    /// In a block, receipt status 0: landed (and paid) but its execution failed.
    Reverted {
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

/// One transaction's final outcome as the book settled it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Settled {
    /// The transaction's hash.
    pub hash: [u8; 32],
    /// The tag the driver gave it at [`InclusionBook::sent`] (e.g. its index in the ledger).
    pub tag: u64,
    /// When it was sent.
    pub sent: Instant,
    /// Its outcome.
    pub outcome: TxFinal,
}

/// A transaction that timed out (now dropped), to look up: its hash and its tag.
pub type TimedOut = ([u8; 32], u64);

pub use crate::outcome::DropCause;

/// What happened to a run's transactions;
/// `included + reverted + rejected + dropped + pending == sent`.
#[derive(Debug, Clone)]
pub struct InclusionTally {
    /// Transactions sent.
    pub sent: u64,
    /// Included in a block (receipt status 1, or not read).
    pub included: u64,
    /// Included with receipt status 0.
    pub reverted: u64,
    /// Refused or never acknowledged.
    pub rejected: u64,
    /// Not included within the timeout.
    pub dropped: u64,
    /// The dropped ones by what the lookup after the timeout found.
    pub dropped_by: BTreeMap<DropCause, u64>,
    /// Still waiting at the end.
    pub pending: u64,
    /// The oldest pending transaction's age.
    pub oldest_pending: Duration,
    /// Inclusions a reorg took back (a transaction counts once each time it happens).
    pub reorged_out: u64,
    /// Reorgs seen (a replaced block hash, a parent that did not match, a moved transaction).
    pub reorgs: u64,
    /// Included transactions whose receipt status was read.
    pub receipts_read: u64,
    /// Send -> included (reverted too), microseconds.
    pub latency_us: Histogram<u64>,
    /// Blocks after the head at send (reverted too).
    pub blocks_after: Histogram<u64>,
    /// Per block with any of ours, as it was when final: the share of it that was ours (a
    /// table of bounded size however many blocks the run sees).
    pub shares: BlockShares,
}

impl InclusionTally {
    fn empty() -> Self {
        InclusionTally {
            sent: 0,
            included: 0,
            reverted: 0,
            rejected: 0,
            dropped: 0,
            dropped_by: BTreeMap::new(),
            pending: 0,
            oldest_pending: Duration::ZERO,
            reorged_out: 0,
            reorgs: 0,
            receipts_read: 0,
            // Fixed bounds (an hour; a million blocks), so memory is bounded and larger values
            // are recorded at the bound; valid bounds, so creation cannot fail.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            blocks_after: Histogram::new_with_bounds(1, 1_000_000, 3).expect("valid bounds"),
            shares: BlockShares::new(),
        }
    }

    /// The count of each final outcome, as the one table of them lists it.
    pub fn finals(&self) -> TxFinalCounts {
        let mut finals = TxFinalCounts::new();
        finals
            .set(TxFinalOutcome::Included, self.included)
            .set(TxFinalOutcome::Reverted, self.reverted)
            .set(TxFinalOutcome::Dropped, self.dropped)
            .set(TxFinalOutcome::Rejected, self.rejected)
            .set(TxFinalOutcome::Pending, self.pending);
        finals
    }

    /// Whether `included + reverted + rejected + dropped + pending == sent` (the identity
    /// over every row of the table of final outcomes).
    pub fn adds_up(&self) -> bool {
        self.finals().adds_up(self.sent)
    }

    fn fold(&mut self, outcome: TxFinal) {
        match outcome {
            TxFinal::Included { latency, blocks_after } | TxFinal::Reverted { latency, blocks_after } => {
                if matches!(outcome, TxFinal::Reverted { .. }) {
                    self.reverted += 1;
                } else {
                    self.included += 1;
                }
                self.latency_us.saturating_record(latency.as_micros().min(u128::from(u64::MAX)) as u64);
                self.blocks_after.saturating_record(blocks_after);
            }
            TxFinal::Rejected => self.rejected += 1,
            TxFinal::Dropped => self.dropped += 1,
            TxFinal::Pending(age) => {
                self.pending += 1;
                self.oldest_pending = self.oldest_pending.max(age);
            }
        }
    }
}

/// The live counts, read in constant time (kept inclusions count as included).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InclusionCounts {
    /// Sent.
    pub sent: u64,
    /// Included or reverted, final or still within the confirm depth.
    pub included: u64,
    /// Refused or never acknowledged.
    pub rejected: u64,
    /// Dropped.
    pub dropped: u64,
    /// Accepted and waiting.
    pub pending: u64,
    /// Of the included, those final with receipt status 0.
    pub reverted: u64,
    /// Inclusions a reorg took back so far.
    pub reorged_out: u64,
}

/// An accepted transaction not in any kept block.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    tag: u64,
    sent: Instant,
    head_at_send: u64,
    /// The node answered the send (accepted it). A send never answered (a timeout, a lost
    /// connection) is waited for too, since the node may have taken it: included if a block
    /// carries it, rejected (never acknowledged) if none does.
    answered: bool,
}

/// Whether an included transaction's receipt was read, and what it said.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Receipt {
    Unread,
    Succeeded,
    Reverted,
}

/// A transaction in a kept block.
#[derive(Debug, Clone, Copy)]
struct Carried {
    waiting: Waiting,
    block: u64,
    arrived: Instant,
    receipt: Receipt,
}

/// A block within the confirm depth: its hash where known, and our transactions in it.
#[derive(Debug, Default)]
struct KeptBlock {
    hash: Option<[u8; 32]>,
    ours: Vec<[u8; 32]>,
    all: u64,
}

/// What one block did to the book.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct BlockNews {
    /// Our transactions this block carried (now included): the ones whose receipts to read.
    pub included: Vec<[u8; 32]>,
    /// Inclusions this block's arrival took back.
    pub reorged_out: u64,
    /// The lowest block replaced by a reorg this block revealed: blocks from there to below this
    /// one are to be fetched again.
    pub replaced_from: Option<u64>,
}

/// The unfinished transactions of a run, the blocks that can still be taken back, and the
/// tally of everything already final.
#[derive(Debug)]
pub struct InclusionBook {
    confirm_depth: u64,
    waiting: HashMap<[u8; 32], Waiting>,
    /// The waiting ones by send instant: the next to time out first.
    by_send: BTreeSet<(Instant, [u8; 32])>,
    carried: HashMap<[u8; 32], Carried>,
    kept: BTreeMap<u64, KeptBlock>,
    highest: u64,
    tally: InclusionTally,
    settled_log: Option<Vec<Settled>>,
}

impl Default for InclusionBook {
    fn default() -> Self {
        Self::new()
    }
}

impl InclusionBook {
    /// An empty book keeping inclusions [`DEFAULT_CONFIRM_DEPTH`] blocks.
    pub fn new() -> Self {
        Self::with_confirm_depth(DEFAULT_CONFIRM_DEPTH)
    }

    /// An empty book keeping inclusions `confirm_depth` blocks (at least 1) before they are
    /// final.
    pub fn with_confirm_depth(confirm_depth: u64) -> Self {
        InclusionBook {
            confirm_depth: confirm_depth.max(1),
            waiting: HashMap::new(),
            by_send: BTreeSet::new(),
            carried: HashMap::new(),
            kept: BTreeMap::new(),
            highest: 0,
            tally: InclusionTally::empty(),
            settled_log: None,
        }
    }

    /// Keeps each final outcome until [`InclusionBook::take_settled`] takes it (for a driver
    /// that draws a timeline or looks dropped transactions up; it must drain them).
    pub fn log_settled(mut self) -> Self {
        self.settled_log = Some(Vec::new());
        self
    }

    /// The final outcomes since the last call (empty unless [`InclusionBook::log_settled`]).
    pub fn take_settled(&mut self) -> Vec<Settled> {
        self.settled_log.as_mut().map(std::mem::take).unwrap_or_default()
    }

    /// Transactions the book holds: waiting, or in a block that can still be taken back.
    pub fn unfinished(&self) -> usize {
        self.waiting.len() + self.carried.len()
    }

    fn settle(&mut self, hash: [u8; 32], tag: u64, sent: Instant, outcome: TxFinal) {
        self.tally.fold(outcome);
        if let Some(log) = &mut self.settled_log {
            log.push(Settled { hash, tag, sent, outcome });
        }
    }

    /// Notes a send: its hash, a tag to know it by again, its instant, the head number then,
    /// and whether the node accepted it. A refused send is final at once (rejected). The same
    /// transaction sent twice (signed again with the same nonce after a nonce resync) is
    /// tracked by its accepted send: a refused copy ("already known") is rejected, and a
    /// second accepted copy of one already tracked is rejected too (a chain carries it once).
    pub fn sent(&mut self, hash: [u8; 32], tag: u64, sent: Instant, head_at_send: u64, accepted: bool) {
        self.tally.sent += 1;
        if !accepted || self.waiting.contains_key(&hash) || self.carried.contains_key(&hash) {
            self.settle(hash, tag, sent, TxFinal::Rejected);
            return;
        }
        self.waiting.insert(hash, Waiting { tag, sent, head_at_send, answered: true });
        self.by_send.insert((sent, hash));
    }

    /// Notes a send the node never answered: waited for like an accepted one, since it may
    /// have landed; included if a block carries it, otherwise rejected (never acknowledged)
    /// when it times out or the run ends, never dropped or pending.
    pub fn sent_unanswered(&mut self, hash: [u8; 32], tag: u64, sent: Instant, head_at_send: u64) {
        self.tally.sent += 1;
        if self.waiting.contains_key(&hash) || self.carried.contains_key(&hash) {
            self.settle(hash, tag, sent, TxFinal::Rejected);
            return;
        }
        self.waiting.insert(hash, Waiting { tag, sent, head_at_send, answered: false });
        self.by_send.insert((sent, hash));
    }

    /// Notes a block without its hashes (a node whose blocks are not checked for reorgs by
    /// hash): see [`InclusionBook::block_with_hash`].
    pub fn block(&mut self, number: u64, arrived: Instant, hashes: &[[u8; 32]]) -> BlockNews {
        self.block_with_hash(number, None, None, arrived, hashes)
    }

    /// Notes a block: its number, hash and parent hash (where known), when its head arrived,
    /// and its transaction hashes. A reorg it reveals is undone first; then each waiting
    /// transaction it carries is included; inclusions `confirm_depth` below the highest block
    /// become final.
    pub fn block_with_hash(
        &mut self,
        number: u64,
        hash: Option<[u8; 32]>,
        parent: Option<[u8; 32]>,
        arrived: Instant,
        hashes: &[[u8; 32]],
    ) -> BlockNews {
        let mut news = BlockNews::default();
        let replaced_here = matches!(
            (self.kept.get(&number).and_then(|kept| kept.hash), hash),
            (Some(kept), Some(new)) if kept != new
        );
        let parent_differs = number > 0
            && matches!(
                (self.kept.get(&(number - 1)).and_then(|kept| kept.hash), parent),
                (Some(kept), Some(parent)) if kept != parent
            );
        let replaced_from = if parent_differs {
            Some(number - 1)
        } else if replaced_here {
            Some(number)
        } else {
            None
        };
        if let Some(from) = replaced_from {
            self.tally.reorgs += 1;
            news.reorged_out += self.unwind_from(from);
            news.replaced_from = (from < number).then_some(from);
        }
        let mut moved = false;
        for tx in hashes {
            if let Some(waiting) = self.waiting.remove(tx) {
                self.by_send.remove(&(waiting.sent, *tx));
                self.carry(*tx, waiting, number, arrived);
                news.included.push(*tx);
            } else if let Some(carried) = self.carried.get(tx).copied() {
                if carried.block != number {
                    // It left the block that carried it: that block was reorged.
                    moved = true;
                    if let Some(kept) = self.kept.get_mut(&carried.block) {
                        kept.ours.retain(|ours| ours != tx);
                    }
                    self.tally.reorged_out += 1;
                    news.reorged_out += 1;
                    self.carry(*tx, carried.waiting, number, arrived);
                    news.included.push(*tx);
                }
            }
        }
        if moved && replaced_from.is_none() {
            self.tally.reorgs += 1;
        }
        let kept = self.kept.entry(number).or_default();
        if hash.is_some() {
            kept.hash = hash;
        }
        kept.all = hashes.len() as u64;
        self.highest = self.highest.max(number);
        self.settle_deep();
        news
    }

    fn carry(&mut self, tx: [u8; 32], waiting: Waiting, block: u64, arrived: Instant) {
        self.carried.insert(tx, Carried { waiting, block, arrived, receipt: Receipt::Unread });
        self.kept.entry(block).or_default().ours.push(tx);
    }

    /// Takes back the kept blocks from `from` up: their transactions wait again. Returns how
    /// many inclusions were taken back.
    fn unwind_from(&mut self, from: u64) -> u64 {
        let replaced: Vec<u64> = self.kept.range(from..).map(|(number, _)| *number).collect();
        let mut taken = 0;
        for number in replaced {
            let Some(block) = self.kept.remove(&number) else { continue };
            for tx in block.ours {
                if let Some(carried) = self.carried.remove(&tx) {
                    self.waiting.insert(tx, carried.waiting);
                    self.by_send.insert((carried.waiting.sent, tx));
                    taken += 1;
                }
            }
        }
        self.tally.reorged_out += taken;
        taken
    }

    /// Notes what the receipt of included transaction `tx` said (status 1: `succeeded`).
    pub fn receipt(&mut self, tx: &[u8; 32], succeeded: bool) {
        if let Some(carried) = self.carried.get_mut(tx) {
            carried.receipt = if succeeded { Receipt::Succeeded } else { Receipt::Reverted };
        }
    }

    /// Makes final the inclusions of the blocks `confirm_depth` or more below the highest.
    fn settle_deep(&mut self) {
        let Some(final_below) = self.highest.checked_sub(self.confirm_depth - 1) else { return };
        let deep: Vec<u64> = self.kept.range(..final_below).map(|(number, _)| *number).collect();
        for number in deep {
            self.finish_block(number);
        }
    }

    fn finish_block(&mut self, number: u64) {
        let Some(block) = self.kept.remove(&number) else { return };
        if !block.ours.is_empty() {
            self.tally.shares.record(block.ours.len() as u64, block.all);
        }
        for tx in block.ours {
            let Some(carried) = self.carried.remove(&tx) else { continue };
            let latency = carried.arrived.saturating_duration_since(carried.waiting.sent);
            let blocks_after = carried.block.saturating_sub(carried.waiting.head_at_send);
            let outcome = match carried.receipt {
                Receipt::Reverted => TxFinal::Reverted { latency, blocks_after },
                Receipt::Succeeded | Receipt::Unread => TxFinal::Included { latency, blocks_after },
            };
            if carried.receipt != Receipt::Unread {
                self.tally.receipts_read += 1;
            }
            self.settle(tx, carried.waiting.tag, carried.waiting.sent, outcome);
        }
    }

    /// Settles as dropped every waiting transaction sent `timeout` or more before `now`, and
    /// returns them (hash and tag) for the driver to look up ([`InclusionBook::drop_cause`]).
    pub fn expire(&mut self, now: Instant, timeout: Duration) -> Vec<TimedOut> {
        let mut expired = Vec::new();
        while let Some(&(sent, tx)) = self.by_send.first() {
            if now.saturating_duration_since(sent) < timeout {
                break;
            }
            self.by_send.pop_first();
            if let Some(waiting) = self.waiting.remove(&tx) {
                if waiting.answered {
                    self.settle(tx, waiting.tag, waiting.sent, TxFinal::Dropped);
                    expired.push((tx, waiting.tag));
                } else {
                    self.settle(tx, waiting.tag, waiting.sent, TxFinal::Rejected);
                }
            }
        }
        expired
    }

    /// Counts what the lookup of one dropped transaction found.
    pub fn drop_cause(&mut self, cause: DropCause) {
        *self.tally.dropped_by.entry(cause).or_default() += 1;
    }

    /// The live counts, in constant time.
    pub fn counts(&self) -> InclusionCounts {
        let t = &self.tally;
        InclusionCounts {
            sent: t.sent,
            included: t.included + t.reverted + self.carried.len() as u64,
            rejected: t.rejected,
            dropped: t.dropped,
            pending: self.waiting.len() as u64,
            reverted: t.reverted,
            reorged_out: t.reorged_out,
        }
    }

    /// Ends the run at `now`: what times out with `timeout` is dropped (the expired returned as
    /// [`InclusionBook::expire`] does), the kept inclusions are final, and the rest is pending
    /// with its age. The tally has every transaction sent exactly once.
    pub fn finish(
        mut self,
        now: Instant,
        timeout: Duration,
    ) -> (InclusionTally, Vec<TimedOut>, Vec<Settled>) {
        let expired = self.expire(now, timeout);
        let blocks: Vec<u64> = self.kept.keys().copied().collect();
        for number in blocks {
            self.finish_block(number);
        }
        let waiting: Vec<([u8; 32], Waiting)> = self.waiting.drain().collect();
        for (tx, waiting) in waiting {
            let age = now.saturating_duration_since(waiting.sent);
            let outcome = if waiting.answered { TxFinal::Pending(age) } else { TxFinal::Rejected };
            self.settle(tx, waiting.tag, waiting.sent, outcome);
        }
        self.by_send.clear();
        let settled = self.take_settled();
        (self.tally, expired, settled)
    }

    /// The tally of what is final so far (kept inclusions and waiting ones not in it).
    pub fn tally_so_far(&self) -> &InclusionTally {
        &self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hash(n: u8) -> [u8; 32] {
        [n; 32]
    }

    fn finals_by_tag(settled: &[Settled]) -> BTreeMap<u64, TxFinal> {
        let mut by_tag = BTreeMap::new();
        for s in settled {
            assert!(by_tag.insert(s.tag, s.outcome).is_none(), "tag {} settled twice", s.tag);
        }
        by_tag
    }

    #[test]
    fn a_refused_resend_of_the_same_transaction_does_not_hide_the_accepted_one() {
        let start = Instant::now();
        let mut book = InclusionBook::new().log_settled();
        book.sent([1; 32], 0, start, 0, true);
        book.sent([1; 32], 1, start, 0, false);
        book.sent([2; 32], 2, start, 0, false);
        book.sent([2; 32], 3, start, 0, true);
        book.block(1, start + Duration::from_millis(5), &[[1; 32], [2; 32]]);
        let (tally, _, settled) = book.finish(start, Duration::from_secs(60));
        let finals = finals_by_tag(&settled);
        assert!(matches!(finals[&0], TxFinal::Included { .. }));
        assert_eq!(finals[&1], TxFinal::Rejected);
        assert_eq!(finals[&2], TxFinal::Rejected);
        assert!(matches!(finals[&3], TxFinal::Included { .. }));
        assert!(tally.adds_up());
    }

    #[test]
    fn a_send_never_answered_that_a_block_carries_is_included_and_one_none_carries_is_rejected() {
        let start = Instant::now();
        let mut book = InclusionBook::new().log_settled();
        book.sent_unanswered(hash(1), 0, start, 0);
        book.sent_unanswered(hash(2), 1, start, 0);
        book.sent_unanswered(hash(3), 2, start + Duration::from_secs(30), 0);
        book.block(1, start + Duration::from_millis(50), &[hash(1)]);
        // hash(2) times out: rejected (never acknowledged), not dropped, and not looked up.
        let expired = book.expire(start + Duration::from_secs(20), Duration::from_secs(20));
        assert!(expired.is_empty(), "{expired:?}");
        // hash(3) is still young at the end: rejected too, never pending.
        let (tally, _, settled) = book.finish(start + Duration::from_secs(31), Duration::from_secs(20));
        let finals = finals_by_tag(&settled);
        assert!(matches!(finals[&0], TxFinal::Included { .. }), "{finals:?}");
        assert_eq!(finals[&1], TxFinal::Rejected);
        assert_eq!(finals[&2], TxFinal::Rejected);
        assert_eq!((tally.included, tally.rejected, tally.dropped, tally.pending), (1, 2, 0, 0));
        assert!(tally.adds_up());
    }

    #[test]
    fn every_sent_transaction_gets_exactly_one_final_outcome_and_the_sum_holds() {
        let start = Instant::now();
        let mut book = InclusionBook::new().log_settled();
        for n in 0..6u8 {
            book.sent(hash(n), u64::from(n), start + Duration::from_millis(u64::from(n) * 10), 100, n != 1);
        }
        // Block 101 carries 0 and 2 (and a stranger), arriving 1 s after the start; a re-sent
        // head of 101 counts nothing twice.
        book.block(101, start + Duration::from_secs(1), &[hash(0), hash(2), hash(99)]);
        book.block(101, start + Duration::from_secs(2), &[hash(0), hash(2), hash(99)]);
        book.block(103, start + Duration::from_secs(3), &[hash(3)]);
        let (tally, expired, settled) =
            book.finish(start + Duration::from_secs(10), Duration::from_secs(9) + Duration::from_millis(955));
        assert_eq!(
            (tally.sent, tally.included, tally.rejected, tally.dropped, tally.pending),
            (6, 3, 1, 1, 1)
        );
        assert_eq!(finals_by_tag(&settled).len(), 6);
        assert_eq!(expired, [(hash(4), 4)]);
        assert!(tally.adds_up());
        assert_eq!(tally.oldest_pending, Duration::from_millis(9_950));
        assert_eq!(tally.shares.blocks(), 2);
        assert_eq!((tally.shares.min(), tally.shares.max()), (Some(2.0 / 3.0), Some(1.0)));
        assert_eq!(tally.blocks_after.max(), 3);
        // Send -> included is the head's arrival minus the send: 1000, 980 and 2970 ms.
        assert_eq!(tally.latency_us.min(), tally.latency_us.lowest_equivalent(980_000));
        assert_eq!(tally.latency_us.max(), tally.latency_us.highest_equivalent(2_970_000));
    }

    #[test]
    fn the_books_size_follows_the_unfinished_transactions_not_the_sent_ones() {
        let start = Instant::now();
        let mut book = InclusionBook::with_confirm_depth(2);
        let mut most = 0;
        // 100 blocks of 50 transactions each, each included by the next block.
        for block in 0..100u64 {
            let at = start + Duration::from_secs(block);
            let hashes: Vec<[u8; 32]> = (0..50u64)
                .map(|i| {
                    let mut h = [0u8; 32];
                    h[..8].copy_from_slice(&(block * 50 + i).to_le_bytes());
                    h
                })
                .collect();
            for (i, h) in hashes.iter().enumerate() {
                book.sent(*h, block * 50 + i as u64, at, block, true);
            }
            most = most.max(book.unfinished());
            book.block(block + 1, at + Duration::from_millis(500), &hashes);
            book.expire(at, Duration::from_secs(30));
            most = most.max(book.unfinished());
        }
        assert_eq!(book.counts().sent, 5_000);
        // At most the last two blocks' inclusions and one block of waiting sends are held.
        assert!(most <= 150, "{most} held");
        let (tally, _, _) = book.finish(start + Duration::from_secs(100), Duration::from_secs(30));
        assert_eq!(tally.included, 5_000);
        assert!(tally.adds_up());
    }

    #[test]
    fn the_share_of_block_table_stays_bounded_after_many_blocks() {
        let start = Instant::now();
        let mut book = InclusionBook::with_confirm_depth(2);
        let stranger = |n: u64| {
            let mut h = [0xffu8; 32];
            h[..8].copy_from_slice(&n.to_le_bytes());
            h
        };
        // 3,000 blocks, each carrying 1 to 3 of ours among 0 to 299 strangers: more distinct
        // shares than the table keeps.
        let mut tag = 0u64;
        let mut least = f64::MAX;
        for number in 1..=3_000u64 {
            let at = start + Duration::from_millis(number * 100);
            let mut hashes: Vec<[u8; 32]> = (0..1 + (number / 300) % 3)
                .map(|_| {
                    tag += 1;
                    let mut h = [0u8; 32];
                    h[..8].copy_from_slice(&tag.to_le_bytes());
                    book.sent(h, tag, at, number - 1, true);
                    h
                })
                .collect();
            let ours = hashes.len() as f64;
            hashes.extend((0..(number * 7_919) % 300).map(stranger));
            least = least.min(ours / hashes.len() as f64);
            book.block(number, at, &hashes);
        }
        let (tally, _, _) = book.finish(start + Duration::from_secs(400), Duration::from_secs(60));
        assert_eq!(tally.included, tag);
        assert_eq!(tally.shares.blocks(), 3_000);
        assert_eq!(tally.shares.rows(), crate::tx::block_shares::SHARES_KEPT, "merged down to the bound");
        assert_eq!((tally.shares.min(), tally.shares.max()), (Some(least), Some(1.0)));
    }

    #[test]
    fn a_block_replaced_by_a_reorg_sends_its_transactions_back_to_waiting_and_counts_them_once() {
        let start = Instant::now();
        let mut book = InclusionBook::with_confirm_depth(4).log_settled();
        for n in 0..3u8 {
            book.sent(hash(n), u64::from(n), start, 10, true);
        }
        let at = |s| start + Duration::from_secs(s);
        book.block_with_hash(11, Some(hash(111)), Some(hash(110)), at(1), &[hash(0), hash(1)]);
        book.block_with_hash(12, Some(hash(112)), Some(hash(111)), at(2), &[hash(2)]);
        // 12 is replaced (same number, another hash) and carries none of ours: 2 waits again.
        // 11 is untouched (the new 12's parent is 11's hash), so 0 and 1 stay included.
        let news = book.block_with_hash(12, Some(hash(212)), Some(hash(111)), at(3), &[]);
        assert_eq!(news.reorged_out, 1);
        assert_eq!(book.counts().pending, 1);
        let news = book.block_with_hash(13, Some(hash(113)), Some(hash(212)), at(4), &[hash(2)]);
        assert_eq!(news.included, [hash(2)]);
        // 14's parent is not the kept 13: 13 was replaced too, and 2 waits again.
        let news = book.block_with_hash(14, Some(hash(114)), Some(hash(99)), at(5), &[]);
        assert_eq!((news.reorged_out, news.replaced_from), (1, Some(13)));
        let (tally, _, settled) = book.finish(at(6), Duration::from_secs(60));
        assert_eq!((tally.included, tally.pending, tally.reorged_out, tally.reorgs), (2, 1, 2, 2));
        assert_eq!(finals_by_tag(&settled).len(), 3);
        assert!(tally.adds_up());
    }

    #[test]
    fn a_transaction_that_moves_to_a_later_block_counts_as_reorged_out_and_is_included_there() {
        let start = Instant::now();
        let mut book = InclusionBook::new().log_settled();
        book.sent(hash(1), 0, start, 10, true);
        book.block(11, start + Duration::from_secs(1), &[hash(1)]);
        book.block(12, start + Duration::from_secs(2), &[hash(1)]);
        let (tally, _, settled) = book.finish(start + Duration::from_secs(3), Duration::from_secs(60));
        assert_eq!((tally.included, tally.reorged_out, tally.reorgs), (1, 1, 1));
        assert_eq!(
            settled[0].outcome,
            TxFinal::Included { latency: Duration::from_secs(2), blocks_after: 2 }
        );
        assert_eq!((tally.shares.blocks(), tally.shares.median()), (1, Some(1.0)));
    }

    #[test]
    fn a_receipt_with_status_zero_makes_the_inclusion_reverted() {
        let start = Instant::now();
        let mut book = InclusionBook::new();
        book.sent(hash(1), 0, start, 10, true);
        book.sent(hash(2), 1, start, 10, true);
        let news = book.block(11, start + Duration::from_secs(1), &[hash(1), hash(2)]);
        assert_eq!(news.included, [hash(1), hash(2)]);
        book.receipt(&hash(1), false);
        book.receipt(&hash(2), true);
        let (tally, _, _) = book.finish(start + Duration::from_secs(2), Duration::from_secs(60));
        assert_eq!((tally.included, tally.reverted, tally.receipts_read), (1, 1, 2));
        assert_eq!(tally.latency_us.len(), 2);
        assert!(tally.adds_up());
    }
}
