//! Each Solana transaction's one final outcome, keyed by its index in send order (the landing
//! watch names it so): landed (seen by the watch, or found by the lookup after the watch missed
//! it), failed (landed with `err`: fee paid, instructions failed), expired (not seen, the
//! lookup found nothing and its blockhash's last valid block height has passed: it never can
//! land), dropped (not seen within the inclusion timeout, and the lookup found it gone, below
//! the commitment asked, or could not ask), rejected (refused by the node or never answered)
//! or pending. `landed + failed + expired + dropped + rejected + pending == sent`.
//!
//! Bounded like the Ethereum book (`crate::tx::inclusion`): a transaction is folded into the
//! counters and histograms the moment its outcome is final and forgotten; the book holds only
//! the unfinished ones (waiting for their landing, bounded by the rate times the inclusion
//! timeout, or awaiting their lookup) and the landings that came before their send was noted
//! (held at most `early_hold`). Every call costs what it is handed, never the number sent.
//!
//! A waiting transaction is due for a lookup once the inclusion timeout has passed since its
//! send or the node's block height has passed its blockhash's last valid height; at most
//! [`MAX_SOLANA_LOOKUPS`] are handed out per run, the rest are dropped "not looked up". No
//! clock and no socket here: the driver passes the instants and the lookups' findings in.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

use crate::outcome::{DropCause, TxFinalCounts, TxFinalOutcome};

/// Transactions looked up at most per run (the rest are dropped "not looked up"): a node that
/// lost everything is not asked about each of a million transactions.
pub const MAX_SOLANA_LOOKUPS: u64 = 10_000;

/// What the node said of one transaction asked about (`getSignatureStatuses`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StatusFound {
    /// At (or past) the commitment asked for, in `slot`; `failed`: with an error.
    Landed {
        /// Its slot.
        slot: u64,
        /// It landed with an error.
        failed: bool,
    },
    /// Known, but below the commitment asked for.
    BelowCommitment,
    /// Unknown to the node.
    Unknown,
    /// The lookup failed.
    NotLookedUp,
}

/// What the node answered to a send, as the book needs it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SendAnswer {
    /// Accepted.
    Accepted,
    /// Refused.
    Refused,
    /// Never answered, or the answer was lost (a timeout, a closed connection): it may have
    /// landed all the same, so it is waited for; rejected unless it lands.
    Unanswered,
}

/// The final outcome of one Solana transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolanaFinal {
    /// Landed without error, seen by the watch: send -> landing seen, and slots after the slot
    /// at send.
    Landed {
        /// Send -> its landing was seen.
        latency: Duration,
        /// Its slot minus the slot at send.
        slots_after: u64,
    },
    /// Landed without error, found by the lookup (the watch missed it): its slot is known, its
    /// latency is not.
    LandedUnseen {
        /// Its slot minus the slot at send.
        slots_after: u64,
    },
    /// Landed with an error.
    Failed,
    /// Not landed, unknown to the node, and its blockhash expired.
    Expired,
    /// Not landed within the inclusion timeout, by what its lookup found.
    Dropped(DropCause),
    /// Refused, or never answered.
    Rejected,
    /// Neither landed nor due at the end: its age.
    Pending(Duration),
}

/// What happened to a run's Solana transactions.
#[derive(Debug, Clone)]
pub struct SolanaTally {
    /// Sent.
    pub sent: u64,
    /// Landed without error (seen, or found by the lookup).
    pub landed: u64,
    /// Of the landed, those the lookup found (not in the latency histogram).
    pub landed_unseen: u64,
    /// Landed with an error.
    pub failed: u64,
    /// Expired unlanded.
    pub expired: u64,
    /// Dropped (not landed within the inclusion timeout, not expired).
    pub dropped: u64,
    /// The dropped ones by what their lookup found.
    pub dropped_by: BTreeMap<DropCause, u64>,
    /// Transactions handed out for a lookup.
    pub looked_up: u64,
    /// Refused or unanswered.
    pub rejected: u64,
    /// Still open at the end.
    pub pending: u64,
    /// The oldest pending one's age.
    pub oldest_pending: Duration,
    /// Send -> landed, microseconds (landed without error, seen by the watch).
    pub latency_us: Histogram<u64>,
    /// Slots after the slot at send (landed without error, seen or found).
    pub slots_after: Histogram<u64>,
}

impl SolanaTally {
    pub(crate) fn empty() -> Self {
        SolanaTally {
            sent: 0,
            landed: 0,
            landed_unseen: 0,
            failed: 0,
            expired: 0,
            dropped: 0,
            dropped_by: BTreeMap::new(),
            looked_up: 0,
            rejected: 0,
            pending: 0,
            oldest_pending: Duration::ZERO,
            // Fixed bounds (an hour; a million slots): bounded memory; valid, so no failure.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            slots_after: Histogram::new_with_bounds(1, 1_000_000, 3).expect("valid bounds"),
        }
    }

    /// The tally as rows of the table of final outcomes: landed is included, failed (landed
    /// with an error) reverted, expired its own row; dropped, rejected and pending as they are.
    pub fn finals(&self) -> TxFinalCounts {
        let mut finals = TxFinalCounts::new();
        finals
            .set(TxFinalOutcome::Included, self.landed)
            .set(TxFinalOutcome::Reverted, self.failed)
            .set(TxFinalOutcome::Expired, self.expired)
            .set(TxFinalOutcome::Dropped, self.dropped)
            .set(TxFinalOutcome::Rejected, self.rejected)
            .set(TxFinalOutcome::Pending, self.pending);
        finals
    }

    /// Whether `landed + failed + expired + dropped + rejected + pending == sent`.
    pub fn adds_up(&self) -> bool {
        self.landed + self.failed + self.expired + self.dropped + self.rejected + self.pending == self.sent
    }

    fn fold(&mut self, outcome: SolanaFinal) {
        match outcome {
            SolanaFinal::Landed { latency, slots_after } => {
                self.landed += 1;
                self.latency_us.saturating_record(latency.as_micros().min(u128::from(u64::MAX)) as u64);
                self.slots_after.saturating_record(slots_after);
            }
            SolanaFinal::LandedUnseen { slots_after } => {
                self.landed += 1;
                self.landed_unseen += 1;
                self.slots_after.saturating_record(slots_after);
            }
            SolanaFinal::Failed => self.failed += 1,
            SolanaFinal::Expired => self.expired += 1,
            SolanaFinal::Dropped(cause) => {
                self.dropped += 1;
                *self.dropped_by.entry(cause).or_default() += 1;
            }
            SolanaFinal::Rejected => self.rejected += 1,
            SolanaFinal::Pending(age) => {
                self.pending += 1;
                self.oldest_pending = self.oldest_pending.max(age);
            }
        }
    }
}

/// The live counts, in constant time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SolanaCounts {
    /// Sent (noted so far).
    pub sent: u64,
    /// Landed or failed.
    pub landed: u64,
    /// Refused or unanswered.
    pub rejected: u64,
    /// Expired or dropped.
    pub lost: u64,
    /// Waiting, or awaiting their lookup.
    pub pending: u64,
}

/// A transaction due for a lookup.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DueLookup {
    /// Its index in send order.
    pub index: u64,
    /// Its signature.
    pub signature: [u8; 64],
}

/// A transaction sent, not yet final.
#[derive(Debug, Clone, Copy)]
struct Waiting {
    signature: [u8; 64],
    sent: Instant,
    slot_at_send: u64,
    last_valid: u64,
    /// The node accepted it (else it was never answered: rejected unless it lands).
    accepted: bool,
}

/// A landing that came before its send was noted.
#[derive(Debug, Clone, Copy)]
struct EarlyLanding {
    slot: u64,
    arrived: Instant,
    failed: bool,
}

/// The unfinished Solana transactions of a run and the tally of everything already final.
#[derive(Debug)]
pub struct LandingBook {
    timeout: Duration,
    early_hold: Duration,
    waiting: HashMap<u64, Waiting>,
    /// The waiting ones by send instant: the next to time out first.
    by_send: BTreeSet<(Instant, u64)>,
    /// The waiting ones by their blockhash's last valid height: the next to expire first.
    by_last_valid: BTreeSet<(u64, u64)>,
    /// Handed out for a lookup, not yet answered.
    looking: HashMap<u64, Waiting>,
    early: HashMap<u64, EarlyLanding>,
    lookups_left: u64,
    /// Arrivals of the landings seen since the last [`LandingBook::take_landed_at`].
    landed_at: Vec<Instant>,
    /// With [`LandingBook::log_finished`]: the indexes no longer watched for since the last
    /// [`LandingBook::take_finished`].
    finished: Option<Vec<u64>>,
    tally: SolanaTally,
}

impl LandingBook {
    /// An empty book: a transaction not seen landed `timeout` after its send is due for a
    /// lookup; a landing that comes before its send is noted is held `early_hold` at most
    /// (more than the longest a send can wait for its answer).
    pub fn new(timeout: Duration, early_hold: Duration) -> Self {
        LandingBook {
            timeout,
            early_hold,
            waiting: HashMap::new(),
            by_send: BTreeSet::new(),
            by_last_valid: BTreeSet::new(),
            looking: HashMap::new(),
            early: HashMap::new(),
            lookups_left: MAX_SOLANA_LOOKUPS,
            landed_at: Vec::new(),
            finished: None,
            tally: SolanaTally::empty(),
        }
    }

    /// Keeps the index of each transaction that leaves the book's watch (refused, or due for
    /// its lookup: final then, or looked up again when due) until [`LandingBook::take_finished`]
    /// takes it: for a driver whose watch looks for the sent signatures (the status poll, the
    /// block stream), so it stops looking for them. The driver must drain them.
    pub fn log_finished(mut self) -> Self {
        self.finished = Some(Vec::new());
        self
    }

    /// The indexes that left the book's watch since the last call (empty unless
    /// [`LandingBook::log_finished`]).
    pub fn take_finished(&mut self) -> Vec<u64> {
        self.finished.as_mut().map(std::mem::take).unwrap_or_default()
    }

    fn note_finished(&mut self, index: u64) {
        if let Some(finished) = &mut self.finished {
            finished.push(index);
        }
    }

    /// Notes send `index`: its signature, instant, the slot then, what the node answered and
    /// its blockhash's last valid block height. A refused send is final at once (rejected)
    /// unless its landing was already seen: the chain says it landed.
    pub fn sent(
        &mut self,
        index: u64,
        signature: &[u8; 64],
        sent: Instant,
        slot_at_send: u64,
        answer: SendAnswer,
        last_valid: u64,
    ) {
        self.tally.sent += 1;
        let waiting = Waiting {
            signature: *signature,
            sent,
            slot_at_send,
            last_valid,
            accepted: answer == SendAnswer::Accepted,
        };
        if let Some(early) = self.early.remove(&index) {
            self.settle_landing(waiting, early.slot, early.arrived, early.failed);
            return;
        }
        if answer == SendAnswer::Refused {
            self.tally.fold(SolanaFinal::Rejected);
            self.note_finished(index);
            return;
        }
        self.waiting.insert(index, waiting);
        self.by_send.insert((sent, index));
        self.by_last_valid.insert((last_valid, index));
    }

    /// Notes that transaction `index` landed in `slot`, seen at `arrived` (the first sighting
    /// counts; one of a transaction already final is ignored once `early_hold` has passed).
    pub fn landed(&mut self, index: u64, slot: u64, arrived: Instant, failed: bool) {
        if let Some(waiting) = self.waiting.remove(&index) {
            self.by_send.remove(&(waiting.sent, index));
            self.by_last_valid.remove(&(waiting.last_valid, index));
            self.settle_landing(waiting, slot, arrived, failed);
        } else if let Some(waiting) = self.looking.remove(&index) {
            self.settle_landing(waiting, slot, arrived, failed);
        } else {
            self.early.entry(index).or_insert(EarlyLanding { slot, arrived, failed });
        }
    }

    fn settle_landing(&mut self, waiting: Waiting, slot: u64, arrived: Instant, failed: bool) {
        if failed {
            self.tally.fold(SolanaFinal::Failed);
            return;
        }
        self.landed_at.push(arrived);
        self.tally.fold(SolanaFinal::Landed {
            latency: arrived.saturating_duration_since(waiting.sent),
            slots_after: slot.saturating_sub(waiting.slot_at_send),
        });
    }

    /// The transactions due at `now` with the node at `block_height`, to look up (then
    /// [`LandingBook::looked_up`]): those sent `timeout` or more before `now` and those whose
    /// blockhash has expired. A due one never answered is rejected; past the run's
    /// [`MAX_SOLANA_LOOKUPS`] a due one is dropped "not looked up". Landings held longer than
    /// `early_hold` are forgotten.
    pub fn take_due(&mut self, now: Instant, block_height: u64) -> Vec<DueLookup> {
        if !self.early.is_empty() {
            let hold = self.early_hold;
            self.early.retain(|_, early| now.saturating_duration_since(early.arrived) < hold);
        }
        let mut due_indexes = Vec::new();
        while let Some(&(sent, index)) = self.by_send.first() {
            if now.saturating_duration_since(sent) < self.timeout {
                break;
            }
            self.by_send.pop_first();
            due_indexes.push(index);
        }
        while let Some(&(last_valid, index)) = self.by_last_valid.first() {
            if block_height <= last_valid {
                break;
            }
            self.by_last_valid.pop_first();
            due_indexes.push(index);
        }
        let mut due = Vec::new();
        for index in due_indexes {
            let Some(waiting) = self.waiting.remove(&index) else { continue };
            self.by_send.remove(&(waiting.sent, index));
            self.by_last_valid.remove(&(waiting.last_valid, index));
            self.note_finished(index);
            if !waiting.accepted {
                self.tally.fold(SolanaFinal::Rejected);
            } else if self.lookups_left == 0 {
                self.tally.fold(SolanaFinal::Dropped(DropCause::NotLookedUp));
            } else {
                self.lookups_left -= 1;
                self.tally.looked_up += 1;
                self.looking.insert(index, waiting);
                due.push(DueLookup { index, signature: waiting.signature });
            }
        }
        due
    }

    /// Settles transaction `index` (handed out by [`LandingBook::take_due`]) by what its
    /// lookup at `now` found, the node being at `block_height`. One the node has below the
    /// commitment asked for (its blockhash expired, but it landed) waits again until the
    /// inclusion timeout, then is due for another lookup.
    pub fn looked_up(&mut self, index: u64, found: StatusFound, block_height: u64, now: Instant) {
        let Some(waiting) = self.looking.remove(&index) else { return };
        if found == StatusFound::BelowCommitment && now.saturating_duration_since(waiting.sent) < self.timeout
        {
            self.waiting.insert(index, waiting);
            self.by_send.insert((waiting.sent, index));
            return;
        }
        let outcome = match found {
            StatusFound::Landed { failed: true, .. } => SolanaFinal::Failed,
            StatusFound::Landed { slot, failed: false } => {
                SolanaFinal::LandedUnseen { slots_after: slot.saturating_sub(waiting.slot_at_send) }
            }
            StatusFound::BelowCommitment => SolanaFinal::Dropped(DropCause::BelowCommitment),
            StatusFound::Unknown if block_height > waiting.last_valid => SolanaFinal::Expired,
            StatusFound::Unknown => SolanaFinal::Dropped(DropCause::Gone),
            StatusFound::NotLookedUp => SolanaFinal::Dropped(DropCause::NotLookedUp),
        };
        self.tally.fold(outcome);
    }

    /// Transactions not final yet: waiting, or awaiting their lookup.
    pub fn unfinished(&self) -> usize {
        self.waiting.len() + self.looking.len()
    }

    /// Entries the book holds in all its tables (what its memory follows).
    pub fn held(&self) -> usize {
        self.waiting.len()
            + self.by_send.len()
            + self.by_last_valid.len()
            + self.looking.len()
            + self.early.len()
            + self.landed_at.len()
            + self.finished.as_ref().map_or(0, Vec::len)
    }

    /// The arrivals of the landings seen since the last call (for a timeline).
    pub fn take_landed_at(&mut self) -> Vec<Instant> {
        std::mem::take(&mut self.landed_at)
    }

    /// The live counts.
    pub fn counts(&self) -> SolanaCounts {
        let t = &self.tally;
        SolanaCounts {
            sent: t.sent,
            landed: t.landed + t.failed,
            rejected: t.rejected,
            lost: t.expired + t.dropped,
            pending: self.unfinished() as u64,
        }
    }

    /// The tally of what is final so far.
    pub fn tally_so_far(&self) -> &SolanaTally {
        &self.tally
    }

    /// Ends the run at `now`: a lookup not answered is dropped "not looked up", a waiting
    /// transaction never answered is rejected, the rest is pending with its age. The tally has
    /// every transaction noted exactly once.
    pub fn finish(mut self, now: Instant) -> SolanaTally {
        for (_, _) in self.looking.drain() {
            self.tally.fold(SolanaFinal::Dropped(DropCause::NotLookedUp));
        }
        for (_, waiting) in self.waiting.drain() {
            let outcome = if waiting.accepted {
                SolanaFinal::Pending(now.saturating_duration_since(waiting.sent))
            } else {
                SolanaFinal::Rejected
            };
            self.tally.fold(outcome);
        }
        self.tally
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn signature(n: u8) -> [u8; 64] {
        [n; 64]
    }

    const TIMEOUT: Duration = Duration::from_secs(30);
    const HOLD: Duration = Duration::from_secs(40);

    #[test]
    fn every_solana_transaction_gets_one_outcome_and_landed_failed_expired_rejected_pending_add_up() {
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        // 0 lands, 1 is refused, 2 fails, 3 expires (valid to height 105), 4 is pending.
        for n in 0..5u8 {
            let last_valid = if n == 3 { 105 } else { 300 };
            let answer = if n == 1 { SendAnswer::Refused } else { SendAnswer::Accepted };
            book.sent(
                u64::from(n),
                &signature(n),
                start + Duration::from_millis(u64::from(n)),
                1000,
                answer,
                last_valid,
            );
        }
        book.landed(0, 1002, start + Duration::from_millis(400), false);
        book.landed(0, 1003, start + Duration::from_millis(800), false);
        book.landed(2, 1001, start + Duration::from_millis(402), true);
        book.landed(99, 1001, start, false);
        // Before the height passed 105, 3 was still pending.
        assert!(book.take_due(start + Duration::from_secs(1), 105).is_empty());
        assert_eq!(book.unfinished(), 2);
        let due = book.take_due(start + Duration::from_secs(1), 110);
        assert_eq!(due, [DueLookup { index: 3, signature: signature(3) }]);
        book.looked_up(3, StatusFound::Unknown, 110, start + Duration::from_secs(1));
        let tally = book.finish(start + Duration::from_secs(1));
        assert_eq!(
            (tally.sent, tally.landed, tally.failed, tally.expired, tally.rejected, tally.pending),
            (5, 1, 1, 1, 1, 1)
        );
        assert!(tally.adds_up());
        assert_eq!(tally.latency_us.max(), tally.latency_us.highest_equivalent(400_000));
        assert_eq!(tally.slots_after.max(), 2);
        assert_eq!(tally.oldest_pending, Duration::from_millis(996));
    }

    #[test]
    fn a_solana_tally_s_finals_put_each_count_in_its_row_of_the_table() {
        let mut tally = SolanaTally::empty();
        (tally.landed, tally.failed, tally.expired, tally.dropped, tally.rejected, tally.pending) =
            (1, 2, 3, 4, 5, 6);
        tally.sent = 21;
        let finals = tally.finals();
        let rows = [
            (TxFinalOutcome::Included, 1),
            (TxFinalOutcome::Reverted, 2),
            (TxFinalOutcome::Expired, 3),
            (TxFinalOutcome::Dropped, 4),
            (TxFinalOutcome::Rejected, 5),
            (TxFinalOutcome::Pending, 6),
        ];
        for (outcome, count) in rows {
            assert_eq!(finals.get(outcome), count, "{outcome:?}");
        }
        assert!(finals.adds_up(tally.sent) && tally.adds_up());
        tally.sent = 22;
        assert!(!finals.adds_up(tally.sent));
    }

    #[test]
    fn a_lookup_settles_what_the_watch_did_not_see_by_what_the_node_knows() {
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        let founds = [
            StatusFound::Landed { slot: 1003, failed: false },
            StatusFound::Landed { slot: 1004, failed: true },
            StatusFound::BelowCommitment,
            StatusFound::Unknown,
            StatusFound::NotLookedUp,
        ];
        for n in 0..founds.len() as u8 {
            book.sent(u64::from(n), &signature(n), start, 1000, SendAnswer::Accepted, 300);
        }
        // One never answered: rejected when due, not looked up.
        book.sent(9, &signature(9), start, 1000, SendAnswer::Unanswered, 300);
        assert!(book.take_due(start + TIMEOUT - Duration::from_millis(1), 200).is_empty());
        let due = book.take_due(start + TIMEOUT, 200);
        assert_eq!(due.len(), founds.len());
        for (lookup, found) in due.iter().zip(founds) {
            assert_eq!(lookup.signature, signature(lookup.index as u8));
            book.looked_up(lookup.index, found, 200, start + TIMEOUT);
        }
        // The one unknown is gone, not expired: the node's height 200 is below its 300.
        let tally = book.finish(start + TIMEOUT);
        assert_eq!((tally.landed, tally.landed_unseen, tally.failed, tally.expired), (1, 1, 1, 0));
        assert_eq!((tally.dropped, tally.rejected, tally.pending, tally.looked_up), (3, 1, 0, 5));
        assert_eq!(
            tally.dropped_by,
            BTreeMap::from([
                (DropCause::Gone, 1),
                (DropCause::BelowCommitment, 1),
                (DropCause::NotLookedUp, 1)
            ])
        );
        // Its slot counts, its latency is not known: not in the histogram.
        assert!(tally.latency_us.is_empty());
        assert_eq!(tally.slots_after.max(), 3);
        assert!(tally.adds_up());
    }

    #[test]
    fn one_landed_below_the_commitment_when_its_blockhash_expired_waits_for_its_landing_again() {
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        book.sent(0, &signature(0), start, 1000, SendAnswer::Accepted, 105);
        let due = book.take_due(start + Duration::from_secs(1), 106);
        assert_eq!(due.len(), 1, "its blockhash expired");
        book.looked_up(0, StatusFound::BelowCommitment, 106, start + Duration::from_secs(1));
        assert_eq!(book.unfinished(), 1, "it landed: it waits to reach the commitment");
        assert!(book.take_due(start + Duration::from_secs(2), 107).is_empty());
        book.landed(0, 1001, start + Duration::from_secs(2), false);
        let tally = book.finish(start + Duration::from_secs(2));
        assert_eq!((tally.landed, tally.dropped, tally.expired), (1, 0, 0));
        assert!(tally.adds_up());
    }

    #[test]
    fn a_send_whose_answer_was_lost_counts_landed_if_it_lands_and_rejected_if_not() {
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        book.sent(0, &signature(0), start, 1000, SendAnswer::Unanswered, 300);
        book.sent(1, &signature(1), start, 1000, SendAnswer::Unanswered, 300);
        book.landed(0, 1001, start + Duration::from_millis(500), false);
        assert!(book.take_due(start + TIMEOUT, 200).is_empty(), "never answered: not looked up");
        let tally = book.finish(start + TIMEOUT);
        assert_eq!((tally.landed, tally.rejected, tally.looked_up), (1, 1, 0));
        assert!(tally.adds_up());
    }

    #[test]
    fn past_the_run_s_lookups_a_due_transaction_is_dropped_not_looked_up() {
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        let count = MAX_SOLANA_LOOKUPS + 5;
        for index in 0..count {
            book.sent(index, &signature(1), start, 1000, SendAnswer::Accepted, 300);
        }
        let due = book.take_due(start + TIMEOUT, 200);
        assert_eq!(due.len() as u64, MAX_SOLANA_LOOKUPS);
        for lookup in &due {
            book.looked_up(lookup.index, StatusFound::Unknown, 200, start + TIMEOUT);
        }
        let tally = book.finish(start + TIMEOUT);
        assert_eq!(tally.dropped_by[&DropCause::NotLookedUp], 5);
        assert_eq!(tally.dropped_by[&DropCause::Gone], MAX_SOLANA_LOOKUPS);
        assert_eq!(tally.looked_up, MAX_SOLANA_LOOKUPS);
        assert!(tally.adds_up());
    }

    #[test]
    fn a_landing_seen_before_its_send_is_noted_counts_once_and_a_stray_one_is_forgotten() {
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        book.landed(0, 1002, start + Duration::from_millis(300), false);
        book.sent(0, &signature(0), start, 1000, SendAnswer::Accepted, 300);
        // A second sighting of a final one, then one of nothing sent: held, then forgotten.
        book.landed(0, 1003, start + Duration::from_millis(400), false);
        book.landed(7, 1003, start + Duration::from_millis(400), false);
        assert_eq!(book.held(), 3, "two held landings and one landing arrival");
        assert_eq!(book.take_landed_at(), [start + Duration::from_millis(300)]);
        book.take_due(start + HOLD + Duration::from_secs(1), 200);
        assert_eq!(book.held(), 0);
        let tally = book.finish(start + HOLD);
        assert_eq!((tally.sent, tally.landed), (1, 1));
        assert!(tally.adds_up());
    }

    #[test]
    fn the_solana_book_s_size_follows_the_unfinished_transactions_not_the_sent_ones() {
        // 200,000 sends at 1,000/s, each landing 400 ms after its send and every 50th never:
        // at most 400 wait for a landing and 30 s worth of never-landing ones time out, so the
        // book's tables stay near (400 + 30,000/50) entries each however many are sent.
        let start = Instant::now();
        let mut book = LandingBook::new(TIMEOUT, HOLD);
        let ms = |n: u64| start + Duration::from_millis(n);
        let sends = 200_000u64;
        let mut most_held = 0;
        for index in 0..sends {
            book.sent(
                index,
                &signature(index as u8),
                ms(index),
                1000 + index / 400,
                SendAnswer::Accepted,
                u64::MAX,
            );
            if index >= 400 && (index - 400) % 50 != 0 {
                book.landed(index - 400, 1000 + index / 400, ms(index), false);
            }
            for lookup in book.take_due(ms(index), 0) {
                book.looked_up(lookup.index, StatusFound::Unknown, 0, ms(index));
            }
            book.take_landed_at();
            most_held = most_held.max(book.held());
        }
        assert!(book.unfinished() <= 400 + 30_000 / 50 + 1, "{}", book.unfinished());
        // Three tables per waiting transaction.
        assert!(most_held <= 3 * (400 + 30_000 / 50 + 2), "{most_held}");
        let tally = book.finish(ms(sends));
        assert_eq!(tally.sent, sends);
        assert!(tally.adds_up());
        assert_eq!(tally.landed + tally.dropped + tally.pending, sends);
        assert!(tally.dropped > 3000, "the never-landing ones timed out: {}", tally.dropped);
    }
}
