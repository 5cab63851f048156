//! What either chain's landing watch notes of each send it takes from the ledger, whatever
//! becomes of it: the first and last send instants, the timeline's sent count, the node's
//! answers, and (once the watch stopped) the sends only counted ([`UnwatchedSends`]), added to
//! the end's tally and the live figures the same way on both chains.

use std::time::{Duration, Instant};

use crate::metrics::TransactionFigures;
use crate::report::tx::TxTimeline;
use crate::tx::inclusion::InclusionTally;
use crate::tx::landing_loop::UnwatchedSends;
use crate::tx::solana::landing::SolanaTally;
use crate::{AckTally, TxAck};

/// The sends a landing watch took from the ledger, noted as they were taken.
#[derive(Debug)]
pub struct SendsNoted {
    /// The node's answers, by class.
    pub acks: AckTally,
    /// Sends the node accepted.
    pub accepted: u64,
    /// Sent (and, by the watch, landed) per 100 ms from the first send.
    pub timeline: TxTimeline,
    /// The first send's instant.
    pub first_send: Option<Instant>,
    /// The latest send's instant.
    pub last_send: Option<Instant>,
    /// The sends taken after the watch stopped (its thread panicked): counted, not watched.
    unwatched: UnwatchedSends,
}

impl Default for SendsNoted {
    fn default() -> Self {
        SendsNoted {
            acks: AckTally::default(),
            accepted: 0,
            timeline: TxTimeline::new(),
            first_send: None,
            last_send: None,
            unwatched: UnwatchedSends::default(),
        }
    }
}

/// A tally of final outcomes the unwatched sends are added to.
pub trait EndsUnwatched {
    /// Its sent, rejected and pending counts, and the oldest pending one's age if it has one.
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64, Option<&mut Duration>);
}

impl EndsUnwatched for InclusionTally {
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64, Option<&mut Duration>) {
        (&mut self.sent, &mut self.rejected, &mut self.pending, Some(&mut self.oldest_pending))
    }
}

impl EndsUnwatched for SolanaTally {
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64, Option<&mut Duration>) {
        (&mut self.sent, &mut self.rejected, &mut self.pending, Some(&mut self.oldest_pending))
    }
}

impl EndsUnwatched for TransactionFigures {
    fn counts_mut(&mut self) -> (&mut u64, &mut u64, &mut u64, Option<&mut Duration>) {
        (&mut self.sent, &mut self.rejected, &mut self.pending, None)
    }
}

impl SendsNoted {
    /// Notes a send at `sent` answered `ack`: in the timeline and the answers; true when the
    /// node accepted it.
    pub fn note(&mut self, sent: Instant, ack: TxAck) -> bool {
        let first = *self.first_send.get_or_insert(sent);
        self.last_send = Some(self.last_send.map_or(sent, |last| last.max(sent)));
        self.timeline.sent(sent.saturating_duration_since(first));
        let accepted = self.acks.add(sent, ack);
        self.accepted += u64::from(accepted);
        accepted
    }

    /// Notes a send taken after the watch stopped: as [`Self::note`], and counted as what an
    /// unwatched send ends as (pending if accepted, else rejected).
    pub fn note_unwatched(&mut self, sent: Instant, ack: TxAck) {
        let accepted = self.note(sent, ack);
        self.unwatched.add(sent, accepted);
    }

    /// The sends noted unwatched so far.
    pub fn unwatched(&self) -> &UnwatchedSends {
        &self.unwatched
    }

    /// Adds the sends noted unwatched to `tally`, their pending ones aged at `end`.
    pub fn add_unwatched_to(&self, tally: &mut impl EndsUnwatched, end: Instant) {
        let unwatched = &self.unwatched;
        let (sent, rejected, pending, oldest_pending) = tally.counts_mut();
        *sent += unwatched.sent;
        *rejected += unwatched.rejected;
        *pending += unwatched.pending;
        if let Some(oldest) = oldest_pending {
            *oldest = (*oldest).max(unwatched.oldest_pending_age(end));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::TxRefusal;

    #[test]
    fn sends_noted_unwatched_end_pending_if_accepted_else_rejected_and_add_to_every_tally() {
        let start = Instant::now();
        let mut noted = SendsNoted::default();
        noted.note(start, TxAck::Accepted(start + Duration::from_millis(1)));
        noted.note_unwatched(
            start + Duration::from_millis(10),
            TxAck::Accepted(start + Duration::from_millis(11)),
        );
        noted.note_unwatched(start + Duration::from_millis(20), TxAck::Refused(TxRefusal::NonceTooLow));
        noted.note_unwatched(start + Duration::from_millis(30), TxAck::Unanswered);
        assert_eq!(
            (noted.accepted, noted.first_send, noted.last_send),
            (2, Some(start), Some(start + Duration::from_millis(30)))
        );
        let end = start + Duration::from_secs(1);
        let mut figures = TransactionFigures { sent: 1, accepted: 1, included: 1, ..Default::default() };
        noted.add_unwatched_to(&mut figures, end);
        assert_eq!((figures.sent, figures.rejected, figures.pending, figures.included), (4, 2, 1, 1));
        let mut tally = SolanaTally::empty();
        tally.oldest_pending = Duration::from_millis(5);
        noted.add_unwatched_to(&mut tally, end);
        assert_eq!((tally.sent, tally.rejected, tally.pending), (3, 2, 1));
        assert_eq!(
            tally.oldest_pending,
            Duration::from_millis(990),
            "the unwatched pending one, sent 10 ms in"
        );
    }
}
