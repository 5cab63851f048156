//! Each Solana transaction's one final outcome, by its index in send order (the landing watch
//! names it so): landed, failed (landed with `err`: fee
//! paid, instructions failed), expired (its blockhash's last valid block height passed before
//! it landed: it never can), rejected (refused by the node or never answered) or pending.
//! `landed + failed + expired + rejected + pending == sent`.

use std::time::{Duration, Instant};

use hdrhistogram::Histogram;

/// The final outcome of one Solana transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SolanaFinal {
    /// Landed without error: send -> landing seen, and slots after the slot at send.
    Landed {
        /// Send -> its landing was seen.
        latency: Duration,
        /// Its slot minus the slot at send.
        slots_after: u64,
    },
    /// Landed with an error.
    Failed,
    /// Its blockhash expired before it landed.
    Expired,
    /// Refused, or never answered.
    Rejected,
    /// Neither landed nor expired at the end: its age.
    Pending(Duration),
}

/// What happened to a run's Solana transactions.
#[derive(Debug, Clone)]
pub struct SolanaTally {
    /// Sent.
    pub sent: u64,
    /// Landed without error.
    pub landed: u64,
    /// Landed with an error.
    pub failed: u64,
    /// Expired unlanded.
    pub expired: u64,
    /// Refused or unanswered.
    pub rejected: u64,
    /// Still open at the end.
    pub pending: u64,
    /// The oldest pending one's age.
    pub oldest_pending: Duration,
    /// Send -> landed, microseconds (landed without error).
    pub latency_us: Histogram<u64>,
    /// Slots after the slot at send.
    pub slots_after: Histogram<u64>,
}

impl SolanaTally {
    /// Whether `landed + failed + expired + rejected + pending == sent`.
    pub fn adds_up(&self) -> bool {
        self.landed + self.failed + self.expired + self.rejected + self.pending == self.sent
    }
}

/// One Solana transaction as the book keeps it.
#[derive(Debug, Clone, Copy)]
struct SolanaEntry {
    sent: Instant,
    slot_at_send: u64,
    accepted: bool,
    last_valid: u64,
    /// Its slot, when its landing was seen, and whether it landed with an error.
    landed: Option<(u64, Instant, bool)>,
}

/// The book of a run's Solana transactions, in send order (the landing watch names a
/// transaction by its index).
#[derive(Debug, Default)]
pub struct LandingBook {
    entries: Vec<SolanaEntry>,
}

impl LandingBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// Notes the next send (indexes follow send order): its signature, instant, the slot
    /// then, whether the node accepted it and its blockhash's last valid block height.
    pub fn sent(
        &mut self,
        _signature: &[u8; 64],
        sent: Instant,
        slot_at_send: u64,
        accepted: bool,
        last_valid: u64,
    ) {
        self.entries.push(SolanaEntry { sent, slot_at_send, accepted, last_valid, landed: None });
    }

    /// Notes that transaction `index` landed in `slot`, seen at `arrived` (the first sighting
    /// counts).
    pub fn landed(&mut self, index: u64, slot: u64, arrived: Instant, failed: bool) {
        let Some(entry) = self.entries.get_mut(index as usize) else { return };
        if entry.landed.is_none() {
            entry.landed = Some((slot, arrived, failed));
        }
    }

    /// The final outcome of each transaction at `now`, the node's block height being
    /// `block_height`.
    pub fn finals(&self, now: Instant, block_height: u64) -> Vec<SolanaFinal> {
        self.entries
            .iter()
            // A send never answered that landed anyway is landed: the chain says so.
            .map(|entry| match (entry.accepted, entry.landed) {
                (_, Some((_, _, true))) => SolanaFinal::Failed,
                (_, Some((slot, arrived, false))) => SolanaFinal::Landed {
                    latency: arrived.saturating_duration_since(entry.sent),
                    slots_after: slot.saturating_sub(entry.slot_at_send),
                },
                (false, None) => SolanaFinal::Rejected,
                (true, None) if block_height > entry.last_valid => SolanaFinal::Expired,
                (true, None) => SolanaFinal::Pending(now.saturating_duration_since(entry.sent)),
            })
            .collect()
    }

    /// The tally at `now` with the node at `block_height`.
    pub fn tally(&self, now: Instant, block_height: u64) -> SolanaTally {
        let mut tally = SolanaTally {
            sent: self.entries.len() as u64,
            landed: 0,
            failed: 0,
            expired: 0,
            rejected: 0,
            pending: 0,
            oldest_pending: Duration::ZERO,
            // Fixed bounds (an hour; a million slots): bounded memory; valid, so no failure.
            latency_us: Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds"),
            slots_after: Histogram::new_with_bounds(1, 1_000_000, 3).expect("valid bounds"),
        };
        for outcome in self.finals(now, block_height) {
            match outcome {
                SolanaFinal::Landed { latency, slots_after } => {
                    tally.landed += 1;
                    tally.latency_us.saturating_record(latency.as_micros().min(u128::from(u64::MAX)) as u64);
                    tally.slots_after.saturating_record(slots_after);
                }
                SolanaFinal::Failed => tally.failed += 1,
                SolanaFinal::Expired => tally.expired += 1,
                SolanaFinal::Rejected => tally.rejected += 1,
                SolanaFinal::Pending(age) => {
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

    fn signature(n: u8) -> [u8; 64] {
        [n; 64]
    }

    #[test]
    fn every_solana_transaction_gets_one_outcome_and_landed_failed_expired_rejected_pending_add_up() {
        let start = Instant::now();
        let mut book = LandingBook::new();
        // 0 lands, 1 is refused, 2 fails, 3 expires (valid to height 105), 4 is pending.
        for n in 0..5u8 {
            let last_valid = if n == 3 { 105 } else { 300 };
            book.sent(&signature(n), start + Duration::from_millis(u64::from(n)), 1000, n != 1, last_valid);
        }
        book.landed(0, 1002, start + Duration::from_millis(400), false);
        book.landed(0, 1003, start + Duration::from_millis(800), false);
        book.landed(2, 1001, start + Duration::from_millis(402), true);
        book.landed(99, 1001, start, false);
        let tally = book.tally(start + Duration::from_secs(1), 110);
        assert_eq!(
            (tally.sent, tally.landed, tally.failed, tally.expired, tally.rejected, tally.pending),
            (5, 1, 1, 1, 1, 1)
        );
        assert!(tally.adds_up());
        assert_eq!(tally.latency_us.max(), tally.latency_us.highest_equivalent(400_000));
        assert_eq!(tally.slots_after.max(), 2);
        assert_eq!(tally.oldest_pending, Duration::from_millis(996));
        // Before the height passed 105, 3 was still pending.
        assert_eq!(book.tally(start + Duration::from_secs(1), 105).pending, 2);
    }
}
