//! The nonce book: the next nonce of every sender, kept locally so that sending never waits
//! for the node. A refusal that says the node disagrees (nonce too low, a gap) resynchronises
//! that sender from `eth_getTransactionCount(address, "pending")`; each resync is counted and
//! bumps the sender's generation, so transactions signed ahead with the old nonces are known
//! stale and signed again instead of sent.

/// Next nonces of a run's senders, by sender index.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NonceBook {
    next: Vec<u64>,
    generation: Vec<u32>,
    resyncs: u64,
}

impl NonceBook {
    /// A book whose senders start at the given nonces (each sender's pending count).
    pub fn new(starting: Vec<u64>) -> Self {
        let generation = vec![0; starting.len()];
        NonceBook { next: starting, generation, resyncs: 0 }
    }

    /// How many senders.
    pub fn senders(&self) -> usize {
        self.next.len()
    }

    /// Takes the next nonce of `sender`, with the sender's generation to stamp the
    /// transaction signed with it.
    pub fn take(&mut self, sender: usize) -> (u64, u32) {
        let nonce = self.next[sender];
        self.next[sender] += 1;
        (nonce, self.generation[sender])
    }

    /// The nonce `sender` will use next.
    pub fn peek(&self, sender: usize) -> u64 {
        self.next[sender]
    }

    /// The generation of `sender`'s nonces (bumped by each resync).
    pub fn generation(&self, sender: usize) -> u32 {
        self.generation[sender]
    }

    /// Whether a transaction of `sender` stamped with `generation` still fits the book.
    pub fn is_current(&self, sender: usize, generation: u32) -> bool {
        self.generation[sender] == generation
    }

    /// The node says `sender`'s pending nonce is `pending`: starts there again, marks what was
    /// signed ahead stale, and counts the resync.
    pub fn resync(&mut self, sender: usize, pending: u64) {
        self.next[sender] = pending;
        self.generation[sender] = self.generation[sender].wrapping_add(1);
        self.resyncs += 1;
    }

    /// How many resyncs there were.
    pub fn resyncs(&self) -> u64 {
        self.resyncs
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nonces_count_up_per_sender_without_gaps() {
        let mut book = NonceBook::new(vec![5, 0]);
        assert_eq!(book.take(0), (5, 0));
        assert_eq!(book.take(1), (0, 0));
        assert_eq!(book.take(0), (6, 0));
        assert_eq!(book.peek(0), 7);
        assert_eq!(book.senders(), 2);
    }

    #[test]
    fn a_resync_restarts_the_sender_marks_its_signed_ahead_stale_and_is_counted() {
        let mut book = NonceBook::new(vec![0, 0]);
        let (_, before) = book.take(0);
        book.take(0);
        book.resync(0, 1);
        assert!(!book.is_current(0, before));
        assert!(book.is_current(1, 0));
        assert_eq!(book.take(0), (1, 1));
        assert_eq!(book.resyncs(), 1);
    }
}
