//! The signed-ahead queue: a signer thread signs transactions in send order (senders round
//! robin, each sender's nonces from its [`NonceBook`]) into a bounded queue, so the pacer
//! takes a ready raw transaction and never waits for the CPU to sign. The queue (both chains'
//! [`super::ahead_queue::AheadQueue`]) keeps memory flat; a full queue wakes its signer once
//! half of it is free (a burst of signatures per wake); the thread ends when the count is reached or the receiving side is finished.
//! Nonce refusals come back to the thread through a [`ResyncLine`] (see [`super::resync`]).

use std::collections::VecDeque;
use std::sync::mpsc::{channel, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::ahead_queue::{AheadQueue, Pushed};
use super::keys::{hex_encode, SenderKey};
use super::nonce::NonceBook;
use super::resync::{Generations, NonceSource, ResyncCounts, ResyncRequest, ResyncTally};
use super::sign::{sign, UnsignedTx};
use super::top_up::{TopUpCounts, TopUpDecision, TopUpGate, TopUpPlan, TopUpTally};

/// One transaction ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTx {
    /// Index of the sender in the run's keys.
    pub sender: usize,
    /// Its nonce.
    pub nonce: u64,
    /// The nonce book's generation it was signed in (stale after a resync of its sender).
    pub generation: u32,
    /// The transaction hash.
    pub hash: [u8; 32],
    /// The raw transaction as `0x` hex, ready for `eth_sendRawTransaction`'s params.
    pub raw_hex: String,
}

/// The receiving end of a signer thread.
#[derive(Debug)]
pub struct SignedAhead {
    ready: Arc<AheadQueue<PreparedTx>>,
    signer: Option<JoinHandle<NonceBook>>,
    resync: Sender<ResyncRequest>,
    generations: Arc<Generations>,
    counts: Arc<ResyncCounts>,
    top_ups: Arc<TopUpCounts>,
}

impl SignedAhead {
    /// Starts signing `count` transactions made from `template` (its nonce replaced) by
    /// `keys` in turn, keeping at most `depth` ready. Nonce refusals handed back are counted
    /// but not acted on (no node to ask); see [`SignedAhead::start_with_resync`].
    pub fn start(
        keys: Vec<SenderKey>,
        book: NonceBook,
        template: UnsignedTx,
        count: u64,
        depth: usize,
    ) -> Self {
        Self::start_inner(keys, book, template, count, depth, None, None)
    }

    /// As [`SignedAhead::start`], and a nonce refusal handed back with
    /// [`SignedAhead::resync_line`] restarts that sender from `source`'s pending nonce.
    pub fn start_with_resync(
        keys: Vec<SenderKey>,
        book: NonceBook,
        template: UnsignedTx,
        count: u64,
        depth: usize,
        source: Box<dyn NonceSource>,
    ) -> Self {
        Self::start_inner(keys, book, template, count, depth, Some(source), None)
    }

    /// As [`SignedAhead::start_with_resync`], and a sender refused for its funds is topped up
    /// from the first sender (the funder) as `top_up` says, the transfer signed with the
    /// funder's next nonce and queued before the next load transaction.
    pub fn start_with_top_ups(
        keys: Vec<SenderKey>,
        book: NonceBook,
        template: UnsignedTx,
        count: u64,
        depth: usize,
        source: Box<dyn NonceSource>,
        top_up: TopUpPlan,
    ) -> Self {
        Self::start_inner(keys, book, template, count, depth, Some(source), Some(top_up))
    }

    fn start_inner(
        keys: Vec<SenderKey>,
        mut book: NonceBook,
        template: UnsignedTx,
        count: u64,
        depth: usize,
        mut source: Option<Box<dyn NonceSource>>,
        top_up: Option<TopUpPlan>,
    ) -> Self {
        let ready = AheadQueue::new(depth);
        let sender = ready.clone();
        let (resync, requests) = channel::<ResyncRequest>();
        let generations = Arc::new(Generations::new(keys.len()));
        let counts = Arc::new(ResyncCounts::default());
        let top_ups = Arc::new(TopUpCounts::default());
        let (published, counted, topped) = (generations.clone(), counts.clone(), top_ups.clone());
        // The signer steps aside for the pacer: it signs in the core's free time and is
        // preempted the moment the engine's timer fires.
        let signer = crate::util::thread_class::spawn_helper("rpcbench-signer", move || {
            let senders = keys.len();
            let mut tx = template;
            let transfer =
                UnsignedTx { gas_limit: super::sign::TRANSFER_GAS, data: Vec::new(), ..tx.clone() };
            let mut gate = TopUpGate::new(top_up, senders);
            // Top-ups signed, sent before the next load transaction.
            let mut extra: VecDeque<PreparedTx> = VecDeque::new();
            let mut apply =
                |book: &mut NonceBook, request: ResyncRequest, extra: &mut VecDeque<PreparedTx>| {
                    if request.sender >= senders {
                        return;
                    }
                    if !book.is_current(request.sender, request.generation) {
                        if request.funds {
                            topped.same_burst();
                        }
                        return;
                    }
                    if request.funds {
                        let decision = gate.decide(request.sender, Instant::now());
                        topped.decided(decision);
                        if let (TopUpDecision::Send, Some(plan)) = (decision, gate.plan()) {
                            let (nonce, generation) = book.take(0);
                            let top_up = UnsignedTx {
                                nonce,
                                to: Some(keys[request.sender].address()),
                                value: plan.amount,
                                ..transfer.clone()
                            };
                            let signed = sign(&top_up, &keys[0]);
                            let raw_hex = format!("0x{}", hex_encode(&signed.raw));
                            extra.push_back(PreparedTx {
                                sender: 0,
                                nonce,
                                generation,
                                hash: signed.hash,
                                raw_hex,
                            });
                        }
                    }
                    let Some(source) = source.as_mut() else { return };
                    match source.pending_nonce(request.sender) {
                        Ok(pending) => {
                            book.resync(request.sender, pending);
                            published.set(request.sender, book.generation(request.sender));
                            counted.resynced();
                        }
                        Err(_) => counted.lookup_failed(),
                    }
                };
            let mut turn = 0u64;
            'signing: while turn < count {
                while let Ok(request) = requests.try_recv() {
                    apply(&mut book, request, &mut extra);
                }
                if let Some(mut prepared) = extra.pop_front() {
                    // A top-up goes out before the next load transaction.
                    loop {
                        match sender.push_within(prepared, RESYNC_POLL) {
                            Pushed::Yes => break,
                            Pushed::Closed => break 'signing,
                            Pushed::Full(back) => prepared = back,
                        }
                        while let Ok(request) = requests.try_recv() {
                            apply(&mut book, request, &mut extra);
                        }
                    }
                    continue 'signing;
                }
                let index = (turn % senders as u64) as usize;
                let (nonce, generation) = book.take(index);
                tx.nonce = nonce;
                let signed = sign(&tx, &keys[index]);
                let mut raw_hex = String::with_capacity(2 + signed.raw.len() * 2);
                raw_hex.push_str("0x");
                raw_hex.push_str(&hex_encode(&signed.raw));
                let mut prepared =
                    PreparedTx { sender: index, nonce, generation, hash: signed.hash, raw_hex };
                // While the queue is full, keep serving resyncs: a transaction in hand that a
                // resync made stale is signed again with the new nonce instead.
                loop {
                    match sender.push_within(prepared, RESYNC_POLL) {
                        Pushed::Yes => break,
                        Pushed::Closed => break 'signing,
                        Pushed::Full(back) => prepared = back,
                    }
                    let mut resynced = false;
                    while let Ok(request) = requests.try_recv() {
                        apply(&mut book, request, &mut extra);
                        resynced = true;
                    }
                    if resynced && !book.is_current(index, generation) {
                        continue 'signing;
                    }
                }
                turn += 1;
            }
            sender.close();
            book
        })
        .ok();
        if signer.is_none() {
            ready.close();
        }
        SignedAhead { ready, signer, resync, generations, counts, top_ups }
    }

    /// The next transaction, waiting for the signer only when it is behind; `None` once all
    /// were taken. A transaction signed with a nonce a resync has since replaced is dropped
    /// (counted) and the next one taken.
    pub fn next(&self) -> Option<PreparedTx> {
        loop {
            let prepared = self.ready.pop()?;
            if self.generations.is_current(prepared.sender, prepared.generation) {
                return Some(prepared);
            }
            self.counts.stale_dropped();
        }
    }

    /// Where the sending side hands back nonce refusals (cloned into the protocol, so it never
    /// waits on the queue's lock).
    pub fn resync_line(&self) -> ResyncLine {
        ResyncLine {
            requests: self.resync.clone(),
            queue: self.ready.clone(),
            counts: self.counts.clone(),
            top_ups: self.top_ups.clone(),
        }
    }

    /// What the resync hand-back did so far.
    pub fn resync_tally(&self) -> ResyncTally {
        self.counts.tally()
    }

    /// How many takes so far found nothing signed and waited for the signer (a send held back
    /// by signing, not by the schedule).
    pub fn waits_for_signer(&self) -> u64 {
        self.ready.pop_waits()
    }

    /// Stops the signer (after the transaction it is signing) and returns its nonce book.
    pub fn finish(mut self) -> Option<NonceBook> {
        self.ready.close();
        self.signer.take()?.join().ok()
    }
}

impl Drop for SignedAhead {
    /// The signer stops once the sending side is gone (it never waits on a queue nobody takes).
    fn drop(&mut self) {
        self.ready.close();
    }
}

/// How long a signer waiting on a full queue sleeps at most before looking again (it is woken
/// sooner once half the queue is free or a resync request is handed back).
const RESYNC_POLL: Duration = Duration::from_millis(50);

/// The sending side's end of the resync channel.
#[derive(Debug, Clone)]
pub struct ResyncLine {
    requests: Sender<ResyncRequest>,
    /// Wakes a signer waiting for room, so the request is served at once.
    queue: Arc<AheadQueue<PreparedTx>>,
    counts: Arc<ResyncCounts>,
    top_ups: Arc<TopUpCounts>,
}

impl ResyncLine {
    /// Hands back a nonce refusal of `sender`'s transaction signed in `generation`; never
    /// waits (a signer already gone is ignored).
    pub fn request(&self, sender: usize, generation: u32) {
        self.counts.requested();
        let _ = self.requests.send(ResyncRequest { sender, generation, funds: false });
        self.queue.wake_pusher();
    }

    /// Hands back a refusal of `sender`'s transaction signed in `generation` for its funds: a
    /// top-up from the funder when the run has one, and a restart from the node's nonce (the
    /// refused nonce was not used). Never waits.
    pub fn request_top_up(&self, sender: usize, generation: u32) {
        self.top_ups.requested();
        let _ = self.requests.send(ResyncRequest { sender, generation, funds: true });
        self.queue.wake_pusher();
    }

    /// What the top-ups did so far.
    pub fn top_up_tally(&self) -> TopUpTally {
        self.top_ups.tally()
    }

    /// What the resync hand-back did so far.
    pub fn tally(&self) -> ResyncTally {
        self.counts.tally()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::keys::hex_decode;
    use crate::tx::keys::{keys_from_mnemonic, Address, DEV_MNEMONIC};
    use crate::tx::sign::{decode, legacy_transfer_template, Fees};

    #[test]
    fn the_queue_gives_every_transaction_once_senders_in_turn_nonces_without_gaps() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 3).unwrap();
        let addresses: Vec<Address> = keys.iter().map(|k| k.address()).collect();
        let template = UnsignedTx {
            fees: Fees::Legacy { gas_price: 1_000_000_000 },
            to: Some(addresses[0]),
            value: 1,
            ..legacy_transfer_template(31337)
        };
        let ahead = SignedAhead::start(keys, NonceBook::new(vec![0, 4, 9]), template, 10, 2);
        let mut taken = Vec::new();
        while let Some(prepared) = ahead.next() {
            let decoded = decode(&hex_decode(&prepared.raw_hex[2..]).unwrap()).unwrap();
            assert_eq!(decoded.sender, addresses[prepared.sender]);
            assert_eq!((decoded.tx.nonce, decoded.hash), (prepared.nonce, prepared.hash));
            taken.push((prepared.sender, prepared.nonce));
        }
        assert_eq!(taken, [(0, 0), (1, 4), (2, 9), (0, 1), (1, 5), (2, 10), (0, 2), (1, 6), (2, 11), (0, 3)]);
        let book = ahead.finish().unwrap();
        assert_eq!((book.peek(0), book.peek(1), book.peek(2)), (4, 7, 12));
    }

    #[test]
    fn dropping_the_queue_early_stops_the_signer() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
        let template = legacy_transfer_template(1);
        let ahead = SignedAhead::start(keys, NonceBook::new(vec![0]), template, u64::MAX, 4);
        assert_eq!(ahead.next().map(|p| p.nonce), Some(0));
        let book = ahead.finish().unwrap();
        assert!(book.peek(0) <= 7, "at most the depth and one in hand were signed past what was taken");
    }

    /// The scheduling policy of thread `tid` of this process (field 41 of its `stat`).
    #[cfg(target_os = "linux")]
    fn policy_of(tid: &str) -> Option<i32> {
        let stat = std::fs::read_to_string(format!("/proc/self/task/{tid}/stat")).ok()?;
        // The name (field 2) is in parentheses and may hold spaces: count from after it.
        let after_name = &stat[stat.rfind(')')? + 2..];
        after_name.split(' ').nth(41 - 3)?.parse().ok()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_signer_thread_is_named_and_signs_in_the_idle_class_below_the_pacer() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
        let template = legacy_transfer_template(1);
        let ahead = SignedAhead::start(keys, NonceBook::new(vec![0]), template, 1_000, 4);
        // The signer lowers itself before it signs: once a transaction is taken, it has.
        assert_eq!(ahead.next().map(|p| p.nonce), Some(0));
        let own = policy_of(&format!("{}", std::process::id())).unwrap();
        let signers: Vec<i32> = std::fs::read_dir("/proc/self/task")
            .unwrap()
            .filter_map(|task| {
                let tid = task.ok()?.file_name().into_string().ok()?;
                let name = std::fs::read_to_string(format!("/proc/self/task/{tid}/comm")).ok()?;
                (name.trim() == "rpcbench-signer").then(|| policy_of(&tid)).flatten()
            })
            .collect();
        assert!(!signers.is_empty(), "a thread named rpcbench-signer runs");
        if own == libc::SCHED_OTHER {
            assert!(signers.iter().all(|policy| *policy == libc::SCHED_IDLE), "{signers:?}");
        }
        // The queue still hands over in order from the idle class.
        let nonces: Vec<u64> = std::iter::from_fn(|| ahead.next()).take(20).map(|p| p.nonce).collect();
        assert_eq!(nonces, (1..=20).collect::<Vec<u64>>());
        drop(ahead);
    }

    /// Answers a fixed pending nonce per sender, counting the lookups.
    struct FixedPending(Vec<u64>, std::sync::Arc<std::sync::atomic::AtomicU64>);

    impl NonceSource for FixedPending {
        fn pending_nonce(&mut self, sender: usize) -> Result<u64, crate::tx::resync::NonceLookupError> {
            self.1.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
            Ok(self.0[sender])
        }
    }

    #[test]
    fn a_nonce_refusal_handed_back_restarts_the_sender_from_the_node_and_drops_what_was_signed_stale() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 2).unwrap();
        let template = legacy_transfer_template(1);
        let lookups = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(0));
        let source = Box::new(FixedPending(vec![100, 0], lookups.clone()));
        let ahead =
            SignedAhead::start_with_resync(keys, NonceBook::new(vec![0, 0]), template, 2_000, 4, source);
        let first = ahead.next().unwrap();
        assert_eq!((first.sender, first.nonce, first.generation), (0, 0, 0));
        let line = ahead.resync_line();
        // The same refusal burst handed back three times: one lookup.
        line.request(0, 0);
        line.request(0, 0);
        line.request(0, 0);
        let mut sender0 = Vec::new();
        while let Some(prepared) = ahead.next() {
            if prepared.sender == 0 {
                sender0.push((prepared.nonce, prepared.generation));
                if prepared.generation == 1 {
                    break;
                }
            }
        }
        let (resumed, before) = sender0.split_last().unwrap();
        assert_eq!(*resumed, (100, 1), "the sender restarts at the node's pending nonce");
        assert!(before
            .iter()
            .enumerate()
            .all(|(i, &(nonce, generation))| (nonce, generation) == (i as u64 + 1, 0)));
        let next0 = std::iter::from_fn(|| ahead.next()).find(|p| p.sender == 0).unwrap();
        assert_eq!((next0.nonce, next0.generation), (101, 1), "and counts up from there");
        let tally = ahead.resync_tally();
        assert_eq!((tally.requested, tally.resynced, tally.lookup_failures), (3, 1, 0));
        assert_eq!(lookups.load(std::sync::atomic::Ordering::Relaxed), 1);
        assert!(tally.stale_dropped <= 5, "at most the depth and one in hand: {tally:?}");
        let book = ahead.finish().unwrap();
        assert_eq!(book.resyncs(), 1);
    }
}
