//! The hand-back of nonce refusals to the signer: the recorder side (the protocol's
//! `classify`, which reads a "nonce too low" or a gap) posts a [`ResyncRequest`] on a channel;
//! the signer thread, which alone owns the [`NonceBook`](super::nonce::NonceBook), drains it
//! between signatures, asks a [`NonceSource`] for the sender's pending nonce and restarts the
//! sender there. Each sender's generation is published in [`Generations`] so the sending side
//! can drop what was signed ahead with the old nonces instead of sending it. Every request,
//! resync, failed lookup and stale transaction dropped is counted in [`ResyncCounts`]; nothing
//! waits on the channel, so a refusal never stalls the pacer.

use std::fmt;
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};

/// A sender whose transaction was refused for its nonce (or its funds).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ResyncRequest {
    /// Index of the sender.
    pub sender: usize,
    /// The generation the refused transaction was signed in: a request for a generation that
    /// was already resynchronised is ignored (one refusal burst, one lookup).
    pub generation: u32,
    /// The refusal was for the sender's funds, not its nonce: the sender is topped up from
    /// the funder when the run has one (`super::top_up`), and restarted from the node.
    pub funds: bool,
}

/// Why the node's pending nonce of a sender could not be read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceLookupError {
    /// What went wrong, secrets already removed.
    pub reason: String,
}

impl fmt::Display for NonceLookupError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "eth_getTransactionCount pending: {}", self.reason)
    }
}

impl std::error::Error for NonceLookupError {}

/// Where the signer reads a sender's pending nonce (`eth_getTransactionCount(addr,
/// "pending")` on the node under test).
pub trait NonceSource: Send {
    /// The node's pending nonce of sender `sender`.
    fn pending_nonce(&mut self, sender: usize) -> Result<u64, NonceLookupError>;
}

/// Each sender's current nonce-book generation, shared between the signer (which writes it on
/// a resync) and the sending side (which drops transactions of an older generation).
#[derive(Debug)]
pub struct Generations {
    by_sender: Vec<AtomicU32>,
}

impl Generations {
    /// Every one of `senders` at generation 0.
    pub fn new(senders: usize) -> Self {
        Generations { by_sender: (0..senders).map(|_| AtomicU32::new(0)).collect() }
    }

    /// Publishes `sender`'s new generation.
    pub fn set(&self, sender: usize, generation: u32) {
        if let Some(slot) = self.by_sender.get(sender) {
            slot.store(generation, Ordering::Release);
        }
    }

    /// Whether a transaction of `sender` signed in `generation` still fits the book.
    pub fn is_current(&self, sender: usize, generation: u32) -> bool {
        self.by_sender.get(sender).is_none_or(|slot| slot.load(Ordering::Acquire) == generation)
    }
}

/// What the resync hand-back did in a run.
#[derive(Debug, Default)]
pub struct ResyncCounts {
    requested: AtomicU64,
    resynced: AtomicU64,
    lookup_failures: AtomicU64,
    stale_dropped: AtomicU64,
}

/// A snapshot of [`ResyncCounts`].
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ResyncTally {
    /// Nonce refusals handed back to the signer.
    pub requested: u64,
    /// Senders restarted from the node's pending nonce.
    pub resynced: u64,
    /// Lookups of the pending nonce that failed (the sender kept its book; its next refusal
    /// asks again).
    pub lookup_failures: u64,
    /// Transactions signed ahead with a nonce a resync replaced, dropped unsent.
    pub stale_dropped: u64,
}

impl ResyncCounts {
    pub(crate) fn requested(&self) {
        self.requested.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn resynced(&self) {
        self.resynced.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn lookup_failed(&self) {
        self.lookup_failures.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn stale_dropped(&self) {
        self.stale_dropped.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts as they stand.
    pub fn tally(&self) -> ResyncTally {
        ResyncTally {
            requested: self.requested.load(Ordering::Relaxed),
            resynced: self.resynced.load(Ordering::Relaxed),
            lookup_failures: self.lookup_failures.load(Ordering::Relaxed),
            stale_dropped: self.stale_dropped.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generation_published_by_the_signer_makes_older_transactions_stale() {
        let generations = Generations::new(2);
        assert!(generations.is_current(0, 0));
        generations.set(0, 1);
        assert!(!generations.is_current(0, 0));
        assert!(generations.is_current(0, 1));
        assert!(generations.is_current(1, 0), "other senders keep theirs");
        let counts = ResyncCounts::default();
        counts.requested();
        counts.resynced();
        counts.stale_dropped();
        counts.stale_dropped();
        assert_eq!(
            counts.tally(),
            ResyncTally { requested: 1, resynced: 1, lookup_failures: 0, stale_dropped: 2 }
        );
    }
}
