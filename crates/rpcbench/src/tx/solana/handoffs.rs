//! What a signature watch handed to the pacer and how it counted each (subscribed, refused,
//! unwatched, or not yet answered), so that the counts are of transactions *sent*: a
//! duration-bound run ends with transactions still in the ready queue, never sent. The watch
//! counts a transaction when it is handed over (or when the node answers, or the watch gives
//! up on, a subscription it handed over unanswered); when it stops, after sending is over,
//! what is left in the queue is taken off what it was counted. Bounded: the unanswered are as
//! many as the watch keeps, and of the counted it remembers only the handoffs the ready queue
//! may still hold.

use std::collections::{BTreeMap, HashSet};

/// How a handed-over transaction was counted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Counted {
    /// The node confirmed its subscription.
    Subscribed,
    /// The node refused its subscription.
    Refused,
    /// Never subscribed.
    Unwatched,
}

/// What was counted of the transactions the pacer never took: to be taken off the counts.
#[derive(Debug, Default, PartialEq, Eq)]
pub(super) struct NeverSent {
    pub(super) subscribed: u64,
    pub(super) refused: u64,
    pub(super) unwatched: u64,
}

/// The watch's handoffs to the ready queue, in order.
#[derive(Debug)]
pub(super) struct Handoffs {
    /// Handed over so far: the handoff number of the latest.
    handed: u64,
    /// Handed over without the node's answer to the subscription: index -> handoff number.
    unanswered: BTreeMap<u64, u64>,
    /// Counted and maybe still in the ready queue: handoff number -> index, how.
    recent: BTreeMap<u64, (u64, Counted)>,
    /// How many of the latest handoffs the ready queue may hold at most (it holds the latest
    /// ones: the watch is its only pusher and the pacer takes the oldest first).
    window: u64,
}

impl Handoffs {
    /// Handoffs to a ready queue holding at most `queue_holds` transactions at once.
    pub(super) fn new(queue_holds: usize) -> Self {
        Handoffs {
            handed: 0,
            unanswered: BTreeMap::new(),
            recent: BTreeMap::new(),
            window: queue_holds as u64,
        }
    }

    /// `index` handed over, counted `how` (the caller counts it).
    pub(super) fn counted(&mut self, index: u64, how: Counted) {
        self.handed += 1;
        self.remember(self.handed, index, how);
    }

    /// `index` handed over before the node answered its subscription (it may still).
    pub(super) fn unanswered(&mut self, index: u64) {
        self.handed += 1;
        self.unanswered.insert(index, self.handed);
    }

    /// The node answered the subscription of `index`, counted `how`: whether it was handed
    /// over unanswered (then this is its first answer, and the caller counts it).
    pub(super) fn answer(&mut self, index: u64, how: Counted) -> bool {
        let Some(handoff) = self.unanswered.remove(&index) else {
            return false;
        };
        self.remember(handoff, index, how);
        true
    }

    /// `index` will not be subscribed any more: whether it was handed over unanswered (then
    /// the caller counts it unwatched).
    pub(super) fn give_up(&mut self, index: u64) -> bool {
        self.answer(index, Counted::Unwatched)
    }

    /// None of the unanswered will be subscribed any more: how many (the caller counts them
    /// unwatched).
    pub(super) fn give_up_all(&mut self) -> u64 {
        let unanswered = std::mem::take(&mut self.unanswered);
        for (index, handoff) in &unanswered {
            self.remember(*handoff, *index, Counted::Unwatched);
        }
        unanswered.len() as u64
    }

    /// Sending is over and `left` were never taken from the ready queue: what was counted of
    /// them (to be taken off the counts: they were never sent); the unanswered among them are
    /// forgotten.
    pub(super) fn never_sent(&mut self, left: impl IntoIterator<Item = u64>) -> NeverSent {
        let mut left: HashSet<u64> = left.into_iter().collect();
        left.retain(|index| self.unanswered.remove(index).is_none());
        let mut never = NeverSent::default();
        self.recent.retain(|_, (index, how)| {
            if !left.contains(index) {
                return true;
            }
            *match how {
                Counted::Subscribed => &mut never.subscribed,
                Counted::Refused => &mut never.refused,
                Counted::Unwatched => &mut never.unwatched,
            } += 1;
            false
        });
        never
    }

    /// Whether any handed over still waits for its subscription's answer.
    #[cfg(test)]
    pub(super) fn none_unanswered(&self) -> bool {
        self.unanswered.is_empty()
    }

    fn remember(&mut self, handoff: u64, index: u64, how: Counted) {
        // Only the latest `window` handoffs can still be in the queue.
        let oldest_queued = self.handed.saturating_sub(self.window);
        if handoff > oldest_queued {
            self.recent.insert(handoff, (index, how));
        }
        while self.recent.first_key_value().is_some_and(|(handoff, _)| *handoff <= oldest_queued) {
            self.recent.pop_first();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handoffs_left_in_the_queue_are_taken_off_what_they_were_counted_and_the_rest_stay() {
        let mut handoffs = Handoffs::new(8);
        handoffs.counted(0, Counted::Subscribed);
        handoffs.counted(1, Counted::Unwatched);
        handoffs.unanswered(2);
        handoffs.unanswered(3);
        handoffs.counted(4, Counted::Unwatched);
        handoffs.counted(5, Counted::Refused);
        handoffs.counted(6, Counted::Subscribed);
        assert!(handoffs.answer(3, Counted::Subscribed), "3's first answer");
        assert!(!handoffs.answer(3, Counted::Subscribed), "answered once");
        // 3 to 6 were not taken by the pacer; 0 to 2 were sent.
        let never = handoffs.never_sent([3, 4, 5, 6]);
        assert_eq!(never, NeverSent { subscribed: 2, refused: 1, unwatched: 1 });
        assert_eq!(handoffs.give_up_all(), 1, "2 was sent and never answered");
        assert!(handoffs.none_unanswered());
    }

    #[test]
    fn unanswered_left_in_the_queue_are_never_counted() {
        let mut handoffs = Handoffs::new(8);
        for index in 0..5 {
            handoffs.unanswered(index);
        }
        assert!(handoffs.give_up(0));
        assert!(!handoffs.give_up(0), "given up once");
        assert_eq!(handoffs.never_sent([3, 4]), NeverSent::default());
        assert_eq!(handoffs.give_up_all(), 2, "1 and 2 were sent unwatched");
    }

    #[test]
    fn handoffs_the_queue_cannot_hold_any_more_are_forgotten() {
        let mut handoffs = Handoffs::new(3);
        for index in 0..100 {
            handoffs.counted(index, Counted::Unwatched);
        }
        assert_eq!(handoffs.recent.len(), 3, "only the latest three may be queued");
        // An unanswered one given up long after its handoff cannot be queued: not remembered.
        handoffs.unanswered(100);
        for index in 101..110 {
            handoffs.counted(index, Counted::Unwatched);
        }
        assert!(handoffs.give_up(100));
        assert!(handoffs.recent.values().all(|(index, _)| *index > 100));
        // A queue that says it held one the window forgot takes off only what is remembered.
        assert_eq!(handoffs.never_sent([5, 107, 108, 109]).unwatched, 3);
    }
}
