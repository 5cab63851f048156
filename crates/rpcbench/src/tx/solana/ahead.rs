//! The Solana signed-ahead pipeline: a signer thread builds and signs transfers in send order
//! (payers round robin, each with the newest blockhash and a memo unique to the run and the
//! transaction) ahead of the pacer. With a signature watch, each signed transaction goes to the
//! watch first and becomes ready only once the node confirmed its `signatureSubscribe`, so no
//! transaction is sent before its landing can be seen; without one (polling) it is ready at
//! once. The [`ReadyQueue`] is bounded: memory stays flat and the signer waits when far ahead.
//! Without a watch it holds up to a second of the schedule ([`ahead_capacity`]: at most
//! [`SIGN_AHEAD_SECONDS`] of the rate, [`SIGN_AHEAD_BYTES`] of prepared transactions), filled
//! before the schedule starts ([`ReadyQueue::wait_filled`]), so that the pacer does not wait
//! for a signature when the signer falls behind for a moment.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard};
use std::thread::JoinHandle;
use std::time::Instant;

use base64::Engine as _;

use super::keys::SolanaKeypair;
use super::recent::BlockhashReader;
use super::wire::{transfer, TransferSpec};

/// One transaction ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedSolanaTx {
    /// Its place in send order (from 0).
    pub index: u64,
    /// Index of its payer in the run's keypairs.
    pub payer: usize,
    /// Its signature.
    pub signature: [u8; 64],
    /// The wire bytes in base64, ready for `sendTransaction`'s params.
    pub base64: String,
    /// Valid until this block height (its blockhash's).
    pub last_valid_block_height: u64,
}

/// What the signer makes: transfers of `lamports` to `to` (`None`: each payer to itself),
/// optionally at a compute unit price, with memos `"<memo_prefix> <index>"`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferPlan {
    /// The recipient, or each payer itself.
    pub to: Option<[u8; 32]>,
    /// Lamports per transfer.
    pub lamports: u64,
    /// SetComputeUnitPrice in micro-lamports.
    pub cu_price: Option<u64>,
    /// What every memo starts with (unique to the run).
    pub memo_prefix: String,
}

#[derive(Debug, Default)]
struct Items {
    queue: VecDeque<PreparedSolanaTx>,
    /// No more will come.
    closed: bool,
    /// Threads waiting in [`ReadyQueue::pop`] (a push wakes one only when there is one: the
    /// standard condition variable makes a system call for every notification otherwise).
    poppers_waiting: u32,
    /// Threads waiting in [`ReadyQueue::push_waiting`].
    pushers_waiting: u32,
    /// Threads waiting in [`ReadyQueue::wait_filled`].
    fillers_waiting: u32,
    /// Takes that found the queue empty (not closed) and waited for the signer.
    taker_waits: u64,
}

/// Seconds of the schedule the signed-ahead queue holds at most (without a signature watch).
pub const SIGN_AHEAD_SECONDS: f64 = 1.0;
/// Bytes of prepared transactions the signed-ahead queue holds at most: 64 MiB.
pub const SIGN_AHEAD_BYTES: usize = 64 << 20;
/// What one prepared transfer takes at most in the queue, counted generously: the record
/// itself, its base64 wire bytes (a transfer with a price and a memo of a few dozen bytes is
/// under 330 bytes on the wire, 440 in base64) and the allocator's share.
pub const PREPARED_TX_BYTES: usize = 640;
/// The smallest signed-ahead queue (low rates, and runs with a signature watch).
pub const SIGN_AHEAD_MIN: usize = 256;

/// How many transactions to sign ahead of a schedule of `rate` per second that sends at most
/// `planned`: [`SIGN_AHEAD_SECONDS`] of the rate, within [`SIGN_AHEAD_BYTES`], never more
/// than the run sends, never fewer than [`SIGN_AHEAD_MIN`] (or the run's count when smaller).
pub fn ahead_capacity(rate: f64, planned: u64) -> usize {
    let by_time =
        if rate.is_finite() && rate > 0.0 { (rate * SIGN_AHEAD_SECONDS).ceil() as usize } else { 0 };
    let by_bytes = SIGN_AHEAD_BYTES / PREPARED_TX_BYTES;
    let planned = usize::try_from(planned).unwrap_or(usize::MAX).max(1);
    by_time.clamp(SIGN_AHEAD_MIN, by_bytes).min(planned)
}

/// A bounded queue of ready transactions between threads. A side that finds the other
/// waiting wakes it; one that finds no one waiting makes no system call.
#[derive(Debug)]
pub struct ReadyQueue {
    items: Mutex<Items>,
    not_empty: Condvar,
    not_full: Condvar,
    /// Wakes [`ReadyQueue::wait_filled`] once full or closed.
    filled: Condvar,
    capacity: usize,
}

impl ReadyQueue {
    /// A queue holding at most `capacity`.
    pub fn new(capacity: usize) -> Arc<Self> {
        Arc::new(ReadyQueue {
            items: Mutex::new(Items::default()),
            not_empty: Condvar::new(),
            not_full: Condvar::new(),
            filled: Condvar::new(),
            capacity: capacity.max(1),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Items> {
        self.items.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
    }

    /// Adds one, waiting while full; `false` once the queue is closed.
    pub fn push_waiting(&self, tx: PreparedSolanaTx) -> bool {
        let mut items = self.lock();
        while items.queue.len() >= self.capacity && !items.closed {
            items.pushers_waiting += 1;
            items = self.not_full.wait(items).unwrap_or_else(|poisoned| poisoned.into_inner());
            items.pushers_waiting -= 1;
        }
        if items.closed {
            return false;
        }
        items.queue.push_back(tx);
        self.wake_popper(&items);
        true
    }

    /// Adds one whatever the length (the caller keeps it bounded with [`ReadyQueue::room`]).
    pub fn push(&self, tx: PreparedSolanaTx) {
        let mut items = self.lock();
        items.queue.push_back(tx);
        self.wake_popper(&items);
    }

    /// Adds all of `txs` in their order under one lock, whatever the length (the caller keeps
    /// it bounded with [`ReadyQueue::room`]); one wake for the batch.
    pub fn push_all(&self, txs: impl IntoIterator<Item = PreparedSolanaTx>) {
        let mut items = self.lock();
        let before = items.queue.len();
        items.queue.extend(txs);
        if items.queue.len() > before {
            self.wake_popper(&items);
        }
    }

    fn wake_popper(&self, items: &Items) {
        if items.poppers_waiting > 0 {
            self.not_empty.notify_one();
        }
        if items.fillers_waiting > 0 && items.queue.len() >= self.capacity {
            self.filled.notify_all();
        }
    }

    /// Waits until the queue is full or closed (the signer signed all it will), or until
    /// `deadline`; how many are ready then. Called before the schedule starts, so that the
    /// first [`ReadyQueue::capacity`] sends never wait for a signature.
    pub fn wait_filled(&self, deadline: Instant) -> usize {
        let mut items = self.lock();
        while items.queue.len() < self.capacity && !items.closed {
            let Some(left) = deadline.checked_duration_since(Instant::now()).filter(|d| !d.is_zero()) else {
                break;
            };
            items.fillers_waiting += 1;
            items = self.filled.wait_timeout(items, left).unwrap_or_else(|poisoned| poisoned.into_inner()).0;
            items.fillers_waiting -= 1;
        }
        items.queue.len()
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
    pub fn pop(&self) -> Option<PreparedSolanaTx> {
        let mut items = self.lock();
        loop {
            if let Some(tx) = items.queue.pop_front() {
                // A signer waiting for room wakes once half the queue is free and refills it
                // in one go, instead of once per transaction taken.
                if items.pushers_waiting > 0 && items.queue.len() <= self.capacity / 2 {
                    self.not_full.notify_one();
                }
                return Some(tx);
            }
            if items.closed {
                return None;
            }
            items.taker_waits += 1;
            items.poppers_waiting += 1;
            items = self.not_empty.wait(items).unwrap_or_else(|poisoned| poisoned.into_inner());
            items.poppers_waiting -= 1;
        }
    }

    /// How many takes so far found nothing ready and waited for the signer (a send held back
    /// by signing, not by the schedule).
    pub fn taker_waits(&self) -> u64 {
        self.lock().taker_waits
    }

    /// No more will be added (waiters wake).
    pub fn close(&self) {
        self.lock().closed = true;
        self.not_empty.notify_all();
        self.not_full.notify_all();
        self.filled.notify_all();
    }

    /// Whether [`ReadyQueue::close`] was called.
    pub fn is_closed(&self) -> bool {
        self.lock().closed
    }
}

/// Transactions the signer hands to the signature watch at once: the watch wakes once per
/// batch and the signer once per batch taken, not each per transaction.
pub const HANDOFF_BATCH: usize = 16;

/// The signer's sending end towards the signature watch (batches of [`HANDOFF_BATCH`]).
pub type SignedSender = tokio::sync::mpsc::Sender<Vec<PreparedSolanaTx>>;
/// The signature watch's receiving end from the signer.
pub type SignedReceiver = tokio::sync::mpsc::Receiver<Vec<PreparedSolanaTx>>;

/// The channel from the signer to the signature watch, holding about `depth` transactions.
pub fn signed_channel(depth: usize) -> (SignedSender, SignedReceiver) {
    tokio::sync::mpsc::channel(depth.div_ceil(HANDOFF_BATCH).max(1))
}

/// Where the signer puts what it signed.
#[derive(Debug)]
pub enum SignedTo {
    /// Straight into the ready queue (polling: nothing to subscribe first).
    Ready(Arc<ReadyQueue>),
    /// To the signature watch, which makes each ready once subscribed.
    Watch(SignedSender),
}

/// The signer thread.
#[derive(Debug)]
pub struct SolanaSigner {
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl SolanaSigner {
    /// Signs `count` transfers of `plan` paid by `payers` in turn, with the newest blockhash of
    /// `blockhash`, into `out`.
    pub fn start(
        payers: Vec<SolanaKeypair>,
        plan: TransferPlan,
        blockhash: BlockhashReader,
        count: u64,
        out: SignedTo,
    ) -> Self {
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        // The signer steps aside for the pacer: it signs in the core's free time and is
        // preempted the moment the engine's timer fires (at the engine's own priority, a
        // refill of the queue held the core for as long as it took).
        let thread = crate::util::thread_class::spawn_helper("rpcbench-signer", move || {
            let mut memo = Vec::with_capacity(plan.memo_prefix.len() + 21);
            let mut handoff: Vec<PreparedSolanaTx> = Vec::with_capacity(HANDOFF_BATCH);
            for index in 0..count {
                if stopping.load(Ordering::Relaxed) {
                    break;
                }
                let payer = (index % payers.len().max(1) as u64) as usize;
                let Some(keypair) = payers.get(payer) else { break };
                let recent = blockhash.latest();
                memo.clear();
                memo.extend_from_slice(plan.memo_prefix.as_bytes());
                memo.push(b' ');
                memo.extend_from_slice(itoa::Buffer::new().format(index).as_bytes());
                let spec = TransferSpec {
                    to: plan.to.unwrap_or_else(|| keypair.pubkey()),
                    lamports: plan.lamports,
                    memo: memo.clone(),
                    cu_price: plan.cu_price,
                    blockhash: recent.blockhash,
                };
                let signed = transfer(keypair, &spec);
                let prepared = PreparedSolanaTx {
                    index,
                    payer,
                    signature: signed.signature,
                    base64: base64::engine::general_purpose::STANDARD.encode(&signed.wire),
                    last_valid_block_height: recent.last_valid_block_height,
                };
                let delivered = match &out {
                    SignedTo::Ready(queue) => queue.push_waiting(prepared),
                    SignedTo::Watch(watch) => {
                        handoff.push(prepared);
                        // The last one goes at once: nothing else will fill its batch.
                        if handoff.len() < HANDOFF_BATCH && index + 1 < count {
                            continue;
                        }
                        let full = std::mem::replace(&mut handoff, Vec::with_capacity(HANDOFF_BATCH));
                        watch.blocking_send(full).is_ok()
                    }
                };
                if !delivered {
                    break;
                }
            }
            if let SignedTo::Ready(queue) = &out {
                queue.close();
            }
            // Stopped mid-batch: what was signed still goes (the watch may take it or not).
            if let (SignedTo::Watch(watch), false) = (&out, handoff.is_empty()) {
                let _ = watch.try_send(handoff);
            }
        })
        .ok();
        SolanaSigner { stop, thread }
    }

    /// Stops signing (after the transaction in hand).
    pub fn finish(mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_ready_queue_is_bounded_and_ends_when_closed() {
        let queue = ReadyQueue::new(2);
        let tx = |index| PreparedSolanaTx {
            index,
            payer: 0,
            signature: [0; 64],
            base64: String::new(),
            last_valid_block_height: 0,
        };
        assert!(queue.push_waiting(tx(0)));
        queue.push(tx(1));
        assert_eq!(queue.room(), 0);
        assert_eq!(queue.pop().map(|t| t.index), Some(0));
        assert_eq!(queue.room(), 1);
        queue.close();
        assert!(!queue.push_waiting(tx(2)));
        assert_eq!(queue.pop().map(|t| t.index), Some(1));
        assert_eq!(queue.pop(), None);
    }

    fn tx(index: u64) -> PreparedSolanaTx {
        PreparedSolanaTx {
            index,
            payer: 0,
            signature: [0; 64],
            base64: String::new(),
            last_valid_block_height: 0,
        }
    }

    #[test]
    fn a_take_that_finds_nothing_signed_is_counted_as_a_wait_for_the_signer() {
        let queue = ReadyQueue::new(4);
        queue.push(tx(0));
        assert_eq!(queue.pop().map(|t| t.index), Some(0));
        assert_eq!(queue.taker_waits(), 0, "a take that found one ready did not wait");
        let taker = {
            let queue = queue.clone();
            std::thread::spawn(move || queue.pop().map(|t| t.index))
        };
        while queue.lock().poppers_waiting == 0 {
            std::thread::yield_now();
        }
        queue.push(tx(1));
        assert_eq!(taker.join().unwrap(), Some(1));
        assert_eq!(queue.taker_waits(), 1);
        queue.close();
        assert_eq!(queue.pop(), None);
        assert_eq!(queue.taker_waits(), 1, "the end of the queue is not a wait for the signer");
    }

    #[test]
    fn a_batch_pushed_at_once_keeps_its_order_and_wakes_a_waiting_taker() {
        let queue = ReadyQueue::new(8);
        let taker = {
            let queue = queue.clone();
            std::thread::spawn(move || {
                std::iter::from_fn(|| queue.pop()).map(|t| t.index).collect::<Vec<_>>()
            })
        };
        queue.push_all((0..5).map(tx));
        queue.push_all(Vec::new());
        queue.push_all((5..7).map(tx));
        queue.close();
        assert_eq!(taker.join().unwrap(), [0, 1, 2, 3, 4, 5, 6]);
    }

    #[test]
    fn a_signer_waiting_for_room_is_woken_once_half_the_queue_is_free() {
        let queue = ReadyQueue::new(4);
        let signer = {
            let queue = queue.clone();
            std::thread::spawn(move || (0..8).all(|index| queue.push_waiting(tx(index))))
        };
        let taken: Vec<u64> = (0..8).filter_map(|_| queue.pop()).map(|t| t.index).collect();
        assert!(signer.join().unwrap());
        assert_eq!(taken, [0, 1, 2, 3, 4, 5, 6, 7]);
    }

    #[test]
    fn the_signed_ahead_queue_holds_a_second_of_sends_within_its_byte_bound() {
        let by_bytes = SIGN_AHEAD_BYTES / PREPARED_TX_BYTES;
        for (rate, planned, expected) in [
            (40_000.0, 80_000, 40_000),
            (40_000.0, 10_000, 10_000),
            (1_000_000.0, u64::MAX, by_bytes),
            (100.0, 1_000, SIGN_AHEAD_MIN),
            (100.0, 50, 50),
            (f64::NAN, 1_000, SIGN_AHEAD_MIN),
            (0.0, 0, 1),
        ] {
            assert_eq!(ahead_capacity(rate, planned), expected, "rate {rate}, planned {planned}");
        }
        assert!(by_bytes * PREPARED_TX_BYTES <= SIGN_AHEAD_BYTES);
    }

    #[test]
    fn waiting_for_the_queue_to_fill_ends_once_full_or_closed_or_at_the_deadline() {
        let far = Instant::now() + std::time::Duration::from_secs(600);
        let queue = ReadyQueue::new(4);
        let signer = {
            let queue = queue.clone();
            std::thread::spawn(move || (0..6).all(|index| queue.push_waiting(tx(index))))
        };
        assert_eq!(queue.wait_filled(far), 4);
        assert_eq!(queue.pop().map(|t| t.index), Some(0));
        queue.close();
        assert!(!signer.join().unwrap(), "a signer still waiting for room stops at the close");
        // Closed with fewer than it holds: nothing more will come, so no wait.
        let short = ReadyQueue::new(8);
        short.push(tx(0));
        short.close();
        assert_eq!(short.wait_filled(far), 1);
        // Neither full nor closed: the deadline ends the wait.
        let slow = ReadyQueue::new(8);
        slow.push(tx(0));
        assert_eq!(slow.wait_filled(Instant::now()), 1);
    }

    /// Threads of this process named `name`, by id.
    #[cfg(target_os = "linux")]
    fn threads_named(name: &str) -> Vec<i32> {
        let Ok(tasks) = std::fs::read_dir("/proc/self/task") else { return Vec::new() };
        tasks
            .filter_map(|task| {
                let task = task.ok()?;
                let comm = std::fs::read_to_string(task.path().join("comm")).ok()?;
                (comm.trim_end() == name).then(|| task.file_name().to_str()?.parse().ok())?
            })
            .collect()
    }

    /// A thread's scheduling policy: field 41 of its `stat` (counted after the name's `)`).
    #[cfg(target_os = "linux")]
    fn policy_of(stat_path: &str) -> Option<i32> {
        let stat = std::fs::read_to_string(stat_path).ok()?;
        stat.rsplit_once(')')?.1.split_whitespace().nth(38)?.parse().ok()
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn the_solana_signer_steps_aside_for_the_pacer() {
        if policy_of("/proc/thread-self/stat") != Some(libc::SCHED_OTHER) {
            return; // Under chrt the helper takes one priority below: thread_class's tests.
        }
        let before = threads_named("rpcbench-signer");
        let state = super::super::recent::State {
            latest: super::super::recent::RecentBlockhash {
                blockhash: [7; 32],
                last_valid_block_height: 150,
                slot: 1,
            },
            seen: Vec::new(),
            failures: 0,
        };
        let reader = BlockhashReader::new(Arc::new(Mutex::new(state)));
        let plan = TransferPlan { to: None, lamports: 1, cu_price: None, memo_prefix: "t".into() };
        let queue = ReadyQueue::new(1);
        let payers = vec![SolanaKeypair::from_seed(&[1; 32])];
        let signer = SolanaSigner::start(payers, plan, reader, 3, SignedTo::Ready(queue.clone()));
        // It signed one and waits for room: it has taken its class by now.
        assert_eq!(queue.wait_filled(Instant::now() + std::time::Duration::from_secs(60)), 1);
        let ours: Vec<i32> =
            threads_named("rpcbench-signer").into_iter().filter(|tid| !before.contains(tid)).collect();
        let policies: Vec<Option<i32>> =
            ours.iter().map(|tid| policy_of(&format!("/proc/self/task/{tid}/stat"))).collect();
        assert!(policies.contains(&Some(libc::SCHED_IDLE)), "signer threads {ours:?}, policies {policies:?}");
        let taken: Vec<u64> = std::iter::from_fn(|| queue.pop()).map(|t| t.index).collect();
        signer.finish();
        assert_eq!(taken, [0, 1, 2]);
    }

    #[test]
    fn the_signer_hands_the_watch_whole_batches_and_the_last_short_one_still_arrives() {
        let state = super::super::recent::State {
            latest: super::super::recent::RecentBlockhash {
                blockhash: [7; 32],
                last_valid_block_height: 150,
                slot: 1,
            },
            seen: Vec::new(),
            failures: 0,
        };
        let reader = BlockhashReader::new(Arc::new(Mutex::new(state)));
        let plan = TransferPlan { to: None, lamports: 1, cu_price: None, memo_prefix: "t".into() };
        let count = 2 * HANDOFF_BATCH as u64 + 3;
        let (to_watch, mut from_signer) = signed_channel(64);
        let payers = vec![SolanaKeypair::from_seed(&[1; 32]), SolanaKeypair::from_seed(&[2; 32])];
        let signer = SolanaSigner::start(payers, plan, reader, count, SignedTo::Watch(to_watch));
        let mut sizes = Vec::new();
        let mut indexes = Vec::new();
        while let Some(batch) = from_signer.blocking_recv() {
            sizes.push(batch.len());
            indexes.extend(batch.iter().map(|t| (t.index, t.payer)));
        }
        signer.finish();
        assert_eq!(sizes, [HANDOFF_BATCH, HANDOFF_BATCH, 3]);
        let expected: Vec<(u64, usize)> = (0..count).map(|index| (index, (index % 2) as usize)).collect();
        assert_eq!(indexes, expected);
    }
}
