//! Refilling a sender that runs dry mid-run: a send refused for "insufficient funds" is
//! handed back to the signer (through the resync line), which, when the run was funded from
//! its first sender, signs a transfer of [`TopUpPlan::amount`] from that funder with the
//! funder's next nonce, sends it ahead of the next load transaction, and restarts the dry
//! sender's nonces from the node. Every request is counted, and so is every top-up not sent
//! and why ([`TopUpTally`]).

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// How the signer refills dry senders.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TopUpPlan {
    /// Wei sent to a dry sender.
    pub amount: u128,
    /// A sender is topped up at most once within this long (the refusals of the transactions
    /// signed before its top-up landed do not each send another).
    pub cooldown: Duration,
}

/// Why a top-up was not sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TopUpDecision {
    /// Send one.
    Send,
    /// The run has no funder (`--no-fund`, or no plan).
    NoFunder,
    /// The dry sender is the funder itself.
    FunderDry,
    /// The sender was topped up within the cooldown.
    Recent,
}

/// When each sender was last topped up, and the plan.
#[derive(Debug)]
pub(crate) struct TopUpGate {
    plan: Option<TopUpPlan>,
    last: Vec<Option<Instant>>,
}

impl TopUpGate {
    pub(crate) fn new(plan: Option<TopUpPlan>, senders: usize) -> Self {
        TopUpGate { plan, last: vec![None; senders] }
    }

    pub(crate) fn plan(&self) -> Option<TopUpPlan> {
        self.plan
    }

    /// Whether `sender`, refused for its funds at `now`, gets a top-up (marked sent if so).
    pub(crate) fn decide(&mut self, sender: usize, now: Instant) -> TopUpDecision {
        let Some(plan) = self.plan else { return TopUpDecision::NoFunder };
        if sender == 0 {
            return TopUpDecision::FunderDry;
        }
        let Some(last) = self.last.get_mut(sender) else { return TopUpDecision::NoFunder };
        if last.is_some_and(|at| now.saturating_duration_since(at) < plan.cooldown) {
            return TopUpDecision::Recent;
        }
        *last = Some(now);
        TopUpDecision::Send
    }
}

/// The top-up counts, shared by the sending side and the signer.
#[derive(Debug, Default)]
pub struct TopUpCounts {
    requested: AtomicU64,
    sent: AtomicU64,
    no_funder: AtomicU64,
    funder_dry: AtomicU64,
    recent: AtomicU64,
    same_burst: AtomicU64,
}

/// What the top-ups did in a run.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TopUpTally {
    /// "Insufficient funds" refusals handed back.
    pub requested: u64,
    /// Top-ups signed and queued to send (each also counts among the run's transactions).
    pub sent: u64,
    /// Not sent: the run has no funder (`--no-fund`).
    pub no_funder: u64,
    /// Not sent: the dry sender is the funder itself.
    pub funder_dry: u64,
    /// Not sent: the sender was topped up within the cooldown.
    pub recent: u64,
    /// Not sent: the refused transaction was signed before the sender's last restart (the
    /// same dry spell, already handled).
    pub same_burst: u64,
}

impl TopUpCounts {
    pub(crate) fn requested(&self) {
        self.requested.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn same_burst(&self) {
        self.same_burst.fetch_add(1, Ordering::Relaxed);
    }

    pub(crate) fn decided(&self, decision: TopUpDecision) {
        let slot = match decision {
            TopUpDecision::Send => &self.sent,
            TopUpDecision::NoFunder => &self.no_funder,
            TopUpDecision::FunderDry => &self.funder_dry,
            TopUpDecision::Recent => &self.recent,
        };
        slot.fetch_add(1, Ordering::Relaxed);
    }

    /// The counts so far.
    pub fn tally(&self) -> TopUpTally {
        TopUpTally {
            requested: self.requested.load(Ordering::Relaxed),
            sent: self.sent.load(Ordering::Relaxed),
            no_funder: self.no_funder.load(Ordering::Relaxed),
            funder_dry: self.funder_dry.load(Ordering::Relaxed),
            recent: self.recent.load(Ordering::Relaxed),
            same_burst: self.same_burst.load(Ordering::Relaxed),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_dry_sender_is_topped_up_once_per_cooldown_and_never_from_itself() {
        let plan = TopUpPlan { amount: 5, cooldown: Duration::from_secs(2) };
        let mut gate = TopUpGate::new(Some(plan), 3);
        let now = Instant::now();
        assert_eq!(gate.decide(1, now), TopUpDecision::Send);
        assert_eq!(gate.decide(1, now + Duration::from_secs(1)), TopUpDecision::Recent);
        assert_eq!(gate.decide(2, now), TopUpDecision::Send);
        assert_eq!(gate.decide(1, now + Duration::from_secs(2)), TopUpDecision::Send);
        assert_eq!(gate.decide(0, now), TopUpDecision::FunderDry);
        assert_eq!(gate.decide(7, now), TopUpDecision::NoFunder);
        assert_eq!(TopUpGate::new(None, 3).decide(1, now), TopUpDecision::NoFunder);
    }
}
