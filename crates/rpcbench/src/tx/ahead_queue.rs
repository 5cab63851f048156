//! The bounded queue of signed-ahead transactions between a chain's signer thread and the
//! sending side, one for both chains (Ethereum's [`super::ahead`], Solana's
//! [`super::solana::ahead`]): the signer pushes what it signed in send order, the pacer pops
//! the next ready one. Its bound keeps memory flat; a side that finds the other waiting wakes
//! it and one that finds no one waiting makes no system call (the standard condition variable
//! makes one for every notification otherwise); a signer waiting for room is woken once half
//! the queue is free, so it signs a burst per wake instead of one transaction per take. Closed
//! (the signer ended, or the sending side is gone), pushes are refused and pops end once empty.

use std::collections::VecDeque;
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::time::{Duration, Instant};

#[derive(Debug)]
struct Held<T> {
    queue: VecDeque<T>,
    /// No more will come (or none will be taken).
    closed: bool,
    /// Threads waiting in [`AheadQueue::pop`].
    poppers_waiting: u32,
    /// Threads waiting for room in [`AheadQueue::push_waiting`] or [`AheadQueue::push_within`].
    pushers_waiting: u32,
    /// Threads waiting in [`AheadQueue::wait_filled`].
    fillers_waiting: u32,
    /// Pops that found the queue empty and waited for a push.
    pop_waits: u64,
}

/// What a push with patience came to ([`AheadQueue::push_within`]).
#[derive(Debug, PartialEq, Eq)]
pub enum Pushed<T> {
    /// Queued.
    Yes,
    /// Still full after the wait: the transaction comes back.
    Full(T),
    /// The queue is closed.
    Closed,
}

/// A bounded queue of ready transactions between threads.
#[derive(Debug)]
pub struct AheadQueue<T> {
    held: Mutex<Held<T>>,
    not_empty: Condvar,
    not_full: Condvar,
    /// Wakes [`AheadQueue::wait_filled`] once full or closed.
    filled: Condvar,
    capacity: usize,
}

impl<T> AheadQueue<T> {
    /// A queue holding at most `capacity` (at least one).
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(AheadQueue {
            held: Mutex::new(Held {
                queue: VecDeque::new(),
                closed: false,
                poppers_waiting: 0,
                pushers_waiting: 0,
                fillers_waiting: 0,
                pop_waits: 0,
            }),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            filled: Condvar::new(),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Held<T>> {
        self.held.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds one, waiting while full; `false` once the queue is closed.
    pub fn push_waiting(&self, tx: T) -> bool {
        let mut held = self.lock();
        while held.queue.len() >= self.capacity && !held.closed {
            held.pushers_waiting += 1;
            held = self.not_full.wait(held).unwrap_or_else(|poisoned| poisoned.into_inner());
            held.pushers_waiting -= 1;
        }
        if held.closed {
            return false;
        }
        held.queue.push_back(tx);
        self.wake_popper(&held);
        true
    }

    /// Adds one if there is room; when full, waits once (at most `patience`, or until half the
    /// queue is free or [`AheadQueue::wake_pusher`]) and hands `tx` back, so that the signer can
    /// serve what woke it before it tries again.
    pub fn push_within(&self, tx: T, patience: Duration) -> Pushed<T> {
        let mut held = self.lock();
        if held.closed {
            return Pushed::Closed;
        }
        if held.queue.len() < self.capacity {
            held.queue.push_back(tx);
            self.wake_popper(&held);
            return Pushed::Yes;
        }
        held.pushers_waiting += 1;
        let (mut held, _) =
            self.not_full.wait_timeout(held, patience).unwrap_or_else(|poisoned| poisoned.into_inner());
        held.pushers_waiting -= 1;
        if held.closed {
            return Pushed::Closed;
        }
        Pushed::Full(tx)
    }

    /// Adds one whatever the length (the caller keeps it bounded with [`AheadQueue::room`]).
    pub fn push(&self, tx: T) {
        let mut held = self.lock();
        held.queue.push_back(tx);
        self.wake_popper(&held);
    }

    /// Adds all of `txs` in their order under one lock, whatever the length (the caller keeps
    /// it bounded with [`AheadQueue::room`]); one wake for the batch.
    pub fn push_all(&self, txs: impl IntoIterator<Item = T>) {
        let mut held = self.lock();
        let before = held.queue.len();
        held.queue.extend(txs);
        if held.queue.len() > before {
            self.wake_popper(&held);
        }
    }

    fn wake_popper(&self, held: &Held<T>) {
        if held.poppers_waiting > 0 {
            self.not_empty.notify_one();
        }
        if held.fillers_waiting > 0 && held.queue.len() >= self.capacity {
            self.filled.notify_all();
        }
    }

    /// Wakes a signer waiting for room (something else is waiting for it).
    pub fn wake_pusher(&self) {
        if self.lock().pushers_waiting > 0 {
            self.not_full.notify_one();
        }
    }

    /// Waits until the queue is full or closed (the signer signed all it will), or until
    /// `deadline`; how many are ready then. Called before the schedule starts, so that the
    /// first [`AheadQueue::capacity`] sends never wait for a signature.
    pub fn wait_filled(&self, deadline: Instant) -> usize {
        let mut held = self.lock();
        while held.queue.len() < self.capacity && !held.closed {
            let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                break;
            };
            held.fillers_waiting += 1;
            held = self.filled.wait_timeout(held, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
            held.fillers_waiting -= 1;
        }
        held.queue.len()
    }

    /// How many it holds at most.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// How many more fit.
    pub fn room(&self) -> usize {
        self.capacity.saturating_sub(self.lock().queue.len())
    }

    /// The next one, waiting while empty; `None` once closed and empty.
    pub fn pop(&self) -> Option<T> {
        let mut held = self.lock();
        loop {
            if let Some(tx) = held.queue.pop_front() {
                // A signer waiting for room wakes once half the queue is free and refills it
                // in one go, instead of once per transaction taken.
                if held.pushers_waiting > 0 && held.queue.len() <= self.capacity / 2 {
                    self.not_full.notify_one();
                }
                return Some(tx);
            }
            if held.closed {
                return None;
            }
            held.poppers_waiting += 1;
            held.pop_waits += 1;
            held = self.not_empty.wait(held).unwrap_or_else(|poisoned| poisoned.into_inner());
            held.poppers_waiting -= 1;
        }
    }

    /// Pops so far that found the queue empty and waited (a send held back by signing, not by
    /// the schedule).
    pub fn pop_waits(&self) -> u64 {
        self.lock().pop_waits
    }

    /// No more will be added, or none taken (waiters wake).
    pub fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
        self.filled.notify_all();
    }

    /// Whether [`AheadQueue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_push_within_patience_hands_back_what_does_not_fit_and_is_refused_once_closed() {
        let queue = AheadQueue::new(2);
        assert_eq!(queue.push_within(1, Duration::ZERO), Pushed::Yes);
        assert_eq!(queue.push_within(2, Duration::ZERO), Pushed::Yes);
        assert_eq!(queue.push_within(3, Duration::from_millis(1)), Pushed::Full(3));
        assert_eq!(queue.pop(), Some(1));
        assert_eq!(queue.push_within(3, Duration::ZERO), Pushed::Yes);
        queue.close();
        assert_eq!(queue.push_within(4, Duration::ZERO), Pushed::Closed);
        // What was queued before the close is still taken, then the end.
        assert_eq!((queue.pop(), queue.pop(), queue.pop()), (Some(2), Some(3), None));
        assert_eq!(queue.pop_waits(), 0);
    }

    #[test]
    fn a_pusher_waiting_with_patience_is_woken_by_a_nudge_and_a_pop_that_waited_is_counted() {
        let queue = AheadQueue::new(1);
        assert_eq!(queue.push_within(0u64, Duration::ZERO), Pushed::Yes);
        let pusher = {
            let queue = queue.clone();
            // Patience far beyond the test: only the nudge ends the wait.
            std::thread::spawn(move || queue.push_within(1, Duration::from_secs(600)))
        };
        while queue.lock().pushers_waiting == 0 {
            std::thread::yield_now();
        }
        queue.wake_pusher();
        assert_eq!(pusher.join().unwrap(), Pushed::Full(1));
        assert_eq!(queue.pop(), Some(0));
        let popper = {
            let queue = queue.clone();
            std::thread::spawn(move || queue.pop())
        };
        while queue.lock().poppers_waiting == 0 {
            std::thread::yield_now();
        }
        queue.push(7);
        assert_eq!(popper.join().unwrap(), Some(7));
        assert_eq!(queue.pop_waits(), 1);
    }
}
