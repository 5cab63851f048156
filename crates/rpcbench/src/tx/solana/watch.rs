//! How a Solana run sees its transactions land, at the commitment asked for:
//! - [`SignatureWatch`]: one WebSocket over the feed seam (its thread and handshake shared
//!   with the head watch: `crate::tx::feed_watch`), a `signatureSubscribe` per
//!   transaction sent (position = the transaction's index) BEFORE it is handed to the pacer;
//!   the notification's arrival (the kernel's receive stamp where the feed has one) is the
//!   landing time, its `err` says whether it failed; each signature is kept until it lands
//!   (at most [`MAX_KEPT_SIGNATURES`]) so that, should the connection end, the watch
//!   reconnects, subscribes again what is kept and what was sent in the gap, and checks them
//!   once with `getSignatureStatuses` (`super::catch_up`);
//! - or, with [`SignatureWatch::start_blocks`], one `blockSubscribe` whose notifications list
//!   each block's signatures (`super::blocks`);
//! - [`SignaturePoll`]: without WebSocket, `getSignatureStatuses` in batches at a stated
//!   interval; the landing time is the answer's arrival, so it is known to that resolution.

use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;

use super::ahead::{PreparedSolanaTx, ReadyQueue, SignedReceiver, HANDOFF_BATCH};
use super::catch_up::FoundInCatchUp;
use super::handoffs::{Counted, Handoffs};
use crate::client::Endpoint;
use crate::transport::feed::{Feed, FeedEvent, JsonRpcSubscribe, SubscribeCall};
use crate::tx::feed_watch::{ended_text, FeedRound, FeedWatch, WatchEnds, WatchOnFeed, WatchStartError};
use crate::tx::watch::WatchHealth;
use crate::util::fast_hash::MultiplyHasherBuilder;

pub use super::status::{Commitment, Landing, STATUS_BATCH};

/// Why the signature watch could not start.
#[derive(Debug)]
pub enum SignatureWatchError {
    /// The URL is not a WebSocket URL this build can open.
    Url(String),
    /// The connection could not be opened.
    Connect(String),
    /// The watch's thread could not start.
    Thread(std::io::Error),
    /// The node refused the subscription (or did not answer it).
    Refused(String),
}

impl fmt::Display for SignatureWatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SignatureWatchError::Url(reason) => write!(f, "cannot watch signatures: {reason}"),
            SignatureWatchError::Connect(reason) => write!(f, "cannot connect to watch signatures: {reason}"),
            SignatureWatchError::Thread(err) => write!(f, "cannot start the signature watch: {err}"),
            SignatureWatchError::Refused(reason) => write!(f, "the node refused it: {reason}"),
        }
    }
}

impl std::error::Error for SignatureWatchError {}

impl WatchStartError for SignatureWatchError {
    fn url(reason: String) -> Self {
        SignatureWatchError::Url(reason)
    }
    fn connect(reason: String) -> Self {
        SignatureWatchError::Connect(reason)
    }
    fn thread(err: std::io::Error) -> Self {
        SignatureWatchError::Thread(err)
    }
    fn ended_early() -> Self {
        SignatureWatchError::Connect("the watch ended before connecting".into())
    }
}

/// Counts of a watch, for the report.
#[derive(Debug, Default)]
pub struct WatchCounts {
    /// Transactions sent whose subscription the node confirmed (the first of each).
    pub subscribed: AtomicU64,
    /// Transactions sent whose subscription the node refused (so they went out unwatched).
    pub refused: AtomicU64,
    /// Transactions sent unwatched: handed to the pacer without a confirmed subscription (taken
    /// while no connection was open, or awaiting the node's answer when it ended), never
    /// subscribed since (the watch gave up reconnecting, the run ended first, or a long gap
    /// made the watch forget them). With `subscribed` and `refused`, each transaction sent is
    /// counted exactly once, once the watch stopped (after sending: what the watch handed
    /// over and the pacer never took, left in the ready queue, is in none of them).
    pub unwatched: AtomicU64,
}

/// A running signature watch.
#[derive(Debug)]
pub struct SignatureWatch {
    landings: FeedWatch<Landing>,
    counts: Arc<WatchCounts>,
}

impl SignatureWatch {
    /// Opens `ws_url` and returns once connected; then subscribes each transaction coming
    /// from `input` at `commitment` and puts it into `ready` once the node confirmed, keeping
    /// `ready` and the subscriptions awaiting an answer within its capacity.
    /// Should the connection end, it is opened again and what is kept (subscribed, not yet
    /// landed: at most [`MAX_KEPT_SIGNATURES`]) is subscribed again and checked once on
    /// `node` with `getSignatureStatuses`.
    pub fn start(
        ws_url: &str,
        commitment: Commitment,
        connect_timeout: Duration,
        input: SignedReceiver,
        ready: Arc<ReadyQueue>,
        node: Endpoint,
    ) -> Result<SignatureWatch, SignatureWatchError> {
        let counts = Arc::new(WatchCounts::default());
        let handoffs = Handoffs::new(ready_holds(&ready));
        let headers = node.headers().to_vec();
        let watch = Watch {
            commitment,
            input,
            ready,
            counts: counts.clone(),
            node,
            kept: KeptSignatures::default(),
            input_open: true,
            started: false,
            handoffs,
            found_in_catch_up: FoundInCatchUp::default(),
        };
        let landings = FeedWatch::start("rpcbench-signatures", ws_url, &headers, connect_timeout, watch)?;
        Ok(SignatureWatch { landings, counts })
    }

    /// A watch whose landings come from another source (the block stream of `blocks.rs`),
    /// with no subscription of its own to count.
    pub(super) fn of_landings(landings: FeedWatch<Landing>) -> SignatureWatch {
        SignatureWatch { landings, counts: Arc::new(WatchCounts::default()) }
    }

    /// The landings seen since the last call.
    pub fn drain(&self) -> Vec<Landing> {
        self.landings.drain()
    }

    /// The watch's counts (final once it stopped).
    pub fn counts(&self) -> Arc<WatchCounts> {
        self.counts.clone()
    }

    /// Its connection's ends and reconnects (final once it stopped).
    pub fn health(&self) -> Arc<WatchHealth> {
        self.landings.health().clone()
    }

    /// Stops watching and returns the landings not yet drained.
    pub fn stop(self) -> Vec<Landing> {
        self.landings.stop()
    }
}

struct Watch {
    commitment: Commitment,
    input: SignedReceiver,
    ready: Arc<ReadyQueue>,
    counts: Arc<WatchCounts>,
    /// Where the kept signatures are checked after a reconnect.
    node: Endpoint,
    /// Subscribed (or taken while no connection was open), not yet landed.
    kept: KeptSignatures,
    /// Whether the signer may still hand over transactions.
    input_open: bool,
    /// Whether the node took a first subscription: a watch that never started leaves the
    /// ready queue to the caller, who fills it from the signer and polls instead.
    started: bool,
    /// What the reconnects' checks found landed, to keep no more.
    found_in_catch_up: FoundInCatchUp,
    /// What was handed to the pacer and how: among them the transactions whose subscription
    /// the node has not answered yet (taken while no connection was open, or awaiting its
    /// answer when the connection ended), each counted once, when it is answered or given up
    /// on. All those are kept (a signature the kept forget is counted unwatched and leaves
    /// them), so they are as bounded as the kept are.
    handoffs: Handoffs,
}

/// How many transactions the ready queue can hold at once, at most: its capacity, and what
/// the watch takes past the room it saw (up to a batch) or hands over when a connection ends
/// (what awaited an answer, taken within the room).
fn ready_holds(ready: &ReadyQueue) -> usize {
    2 * ready.capacity() + 2 * HANDOFF_BATCH
}

/// Signatures a watch subscribed, or must subscribe once it reconnects, not yet seen landed:
/// at most [`MAX_KEPT_SIGNATURES`], the oldest forgotten first (should the connection end,
/// those are left to the landing book's status lookup).
#[derive(Debug, Default)]
struct KeptSignatures {
    by_index: BTreeMap<u64, [u8; 64]>,
}

impl KeptSignatures {
    /// Keeps `signature`; returns the index of the oldest, forgotten to make room.
    fn keep(&mut self, index: u64, signature: [u8; 64]) -> Option<u64> {
        let forgotten = if self.by_index.len() >= MAX_KEPT_SIGNATURES {
            self.by_index.pop_first().map(|(index, _)| index)
        } else {
            None
        };
        self.by_index.insert(index, signature);
        forgotten
    }

    fn contains(&self, index: u64) -> bool {
        self.by_index.contains_key(&index)
    }

    fn landed(&mut self, index: u64) {
        self.by_index.remove(&index);
    }

    fn all(&self) -> Vec<(u64, [u8; 64])> {
        self.by_index.iter().map(|(index, signature)| (*index, *signature)).collect()
    }
}

/// Signatures a watch keeps at most to subscribe again after a reconnect.
pub const MAX_KEPT_SIGNATURES: usize = 65_536;
/// Subscriptions written at most in one write when a reconnect subscribes the kept again.
const RESUBSCRIBE_BATCH: usize = 1024;

/// A `signatureNotification`'s result, read without building a `Value` tree.
#[derive(serde::Deserialize)]
struct SignatureResult<'a> {
    context: SignatureContext,
    #[serde(borrow)]
    value: &'a serde_json::value::RawValue,
}

#[derive(serde::Deserialize)]
struct SignatureContext {
    slot: u64,
}

#[derive(serde::Deserialize)]
struct SignatureStatus<'a> {
    #[serde(borrow, default)]
    err: Option<&'a serde_json::value::RawValue>,
}

/// A `signatureNotification`'s result: its slot and whether `err` is set.
fn notification(payload: &[u8]) -> Option<(u64, bool)> {
    let result: SignatureResult<'_> = serde_json::from_slice(payload).ok()?;
    // A "receivedSignature" notification (not asked for) is not a landing.
    let status: SignatureStatus<'_> = serde_json::from_str(result.value.get()).ok()?;
    Some((result.context.slot, status.err.is_some_and(|err| err.get() != "null")))
}

impl WatchOnFeed for Watch {
    type Seen = Landing;
    type Error = SignatureWatchError;

    async fn watch<F: Feed>(
        &mut self,
        mut feed: F,
        ends: &WatchEnds<Landing, SignatureWatchError>,
    ) -> FeedRound {
        if ends.reconnecting() {
            // What is kept is subscribed again first, then checked once (what landed in the
            // gap may not be notified again); a notification after both is a landing too.
            // What an earlier check found landed is kept no more (one handed over unanswered
            // was found, not watched: unwatched, so that every unanswered one stays kept).
            for index in self.found_in_catch_up.take() {
                self.kept.landed(index);
                if self.handoffs.give_up(index) {
                    self.counts.unwatched.fetch_add(1, Ordering::Relaxed);
                }
            }
            let kept = self.kept.all();
            for chunk in kept.chunks(RESUBSCRIBE_BATCH) {
                let calls: Vec<(usize, SubscribeCall)> =
                    chunk.iter().map(|(index, signature)| (*index as usize, self.call(signature))).collect();
                if let Err(end) = feed.subscribe_all(&calls).await {
                    return FeedRound::Failed(ended_text(end, feed.end_detail()));
                }
            }
            ends.subscribed();
            super::catch_up::check_once(
                &self.node,
                self.commitment,
                kept,
                &ends.seen,
                &ends.health,
                &self.found_in_catch_up,
            );
        } else {
            ends.subscribed();
        }
        self.started = true;
        // Keyed by the run's own transaction indexes, bounded by the ready queue's capacity.
        let mut awaiting: HashMap<usize, PreparedSolanaTx, MultiplyHasherBuilder> = HashMap::default();
        let mut batches: Vec<Vec<PreparedSolanaTx>> = Vec::new();
        let mut calls: Vec<(usize, SubscribeCall)> = Vec::new();
        // One timer for the loop (armed again when it fires or must fire sooner), not one
        // registered and dropped per event.
        let tick = tokio::time::sleep(IDLE_CHECK);
        tokio::pin!(tick);
        while !ends.stopped() {
            self.follow_the_queue(awaiting.is_empty());
            // Taken in batches: one wake of the signer per batch, not per transaction.
            let room = if self.input_open { self.ready.room().saturating_sub(awaiting.len()) } else { 0 };
            // No room: look again soon (the pacer takes from the ready queue without telling us).
            if room == 0 {
                let soon = tokio::time::Instant::now() + FULL_CHECK;
                if tick.deadline() > soon {
                    tick.as_mut().reset(soon);
                }
            }
            tokio::select! {
                // Batches of the signer's (at most one batch past the room).
                taken = self.input.recv_many(&mut batches, room.div_ceil(HANDOFF_BATCH)), if room > 0 => {
                    if taken == 0 {
                        self.input_open = false;
                    }
                    // What was taken is subscribed in one write.
                    calls.clear();
                    for prepared in batches.drain(..).flatten() {
                        let position = prepared.index as usize;
                        calls.push((position, self.call(&prepared.signature)));
                        self.keep(prepared.index, prepared.signature);
                        awaiting.insert(position, prepared);
                    }
                    if let Err(end) = feed.subscribe_all(&calls).await {
                        self.release_all(&mut awaiting);
                        return FeedRound::Ended(ended_text(end, feed.end_detail()));
                    }
                },
                event = feed.next() => match event {
                    FeedEvent::Confirmed { position, .. } => {
                        if let Some(prepared) = awaiting.remove(&position) {
                            self.counts.subscribed.fetch_add(1, Ordering::Relaxed);
                            self.handoffs.counted(prepared.index, Counted::Subscribed);
                            self.ready.push(prepared);
                        } else if self.handoffs.answer(position as u64, Counted::Subscribed) {
                            // Sent without a subscription: this is its first.
                            self.counts.subscribed.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    FeedEvent::Refused { position, .. } => {
                        feed.forget(position);
                        self.kept.landed(position as u64);
                        if let Some(prepared) = awaiting.remove(&position) {
                            self.counts.refused.fetch_add(1, Ordering::Relaxed);
                            self.handoffs.counted(prepared.index, Counted::Refused);
                            self.ready.push(prepared);
                        } else if self.handoffs.answer(position as u64, Counted::Refused) {
                            self.counts.refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                    FeedEvent::Item(delivery) => {
                        // A signature subscription ends with its one notification: its
                        // entries in the feed's tables go with it.
                        feed.forget(delivery.position);
                        if let Some((slot, failed)) = notification(delivery.payload()) {
                            self.kept.landed(delivery.position as u64);
                            let landing = Landing {
                                index: delivery.position as u64,
                                slot,
                                arrived: delivery.arrived,
                                failed,
                            };
                            let _ = ends.seen.send(landing);
                        }
                    }
                    FeedEvent::Ended(end) => {
                        self.release_all(&mut awaiting);
                        return FeedRound::Ended(ended_text(end, feed.end_detail()));
                    }
                    FeedEvent::Unsubscribed { .. } | FeedEvent::Stray(_) => {}
                },
                () = &mut tick => {
                    tick.as_mut().reset(tokio::time::Instant::now() + IDLE_CHECK);
                }
            }
        }
        feed.close().await;
        FeedRound::Over
    }

    async fn between(&mut self, ends: &WatchEnds<Landing, SignatureWatchError>, until: tokio::time::Instant) {
        // Sending goes on: what the signer hands over goes to the pacer at once, kept to be
        // subscribed when the connection is back.
        self.pass_through(ends, Some(until), true).await;
    }

    async fn gave_up(&mut self, ends: &WatchEnds<Landing, SignatureWatchError>) {
        // What was handed over unanswered never will be, nor will what comes now be subscribed.
        self.give_up_unanswered();
        self.kept = KeptSignatures::default();
        self.pass_through(ends, None, false).await;
    }
}

/// How often an idle signature watch looks at the stop flag and the ready queue.
const IDLE_CHECK: Duration = Duration::from_millis(20);
/// How soon a watch whose ready queue is full looks again for room.
const FULL_CHECK: Duration = Duration::from_millis(1);

impl Watch {
    /// The subscription of `signature` at the run's commitment.
    fn call(&self, signature: &[u8; 64]) -> SubscribeCall {
        SubscribeCall::JsonRpc(JsonRpcSubscribe {
            method: "signatureSubscribe",
            params: json!([super::base58::signature_text(signature), {"commitment": self.commitment.name()}]),
            unsubscribe: "signatureUnsubscribe",
        })
    }

    /// Sending is over (the run closed the queue): the signer must not wait on us; and once
    /// nothing waits for a subscription (`none_awaiting`), the pacer need not wait either.
    fn follow_the_queue(&mut self, none_awaiting: bool) {
        if self.input_open && self.ready.is_closed() {
            self.input.close();
            self.input_open = false;
        }
        if !self.input_open && none_awaiting && !self.ready.is_closed() {
            self.ready.close();
        }
    }

    /// Without a connection, until `until` (`None`: the stop): what the signer hands over
    /// goes straight to the ready queue, kept for a reconnect's subscriptions (`keep`) or
    /// counted unwatched.
    async fn pass_through(
        &mut self,
        ends: &WatchEnds<Landing, SignatureWatchError>,
        until: Option<tokio::time::Instant>,
        keep: bool,
    ) {
        let mut batches: Vec<Vec<PreparedSolanaTx>> = Vec::new();
        while !ends.stopped() && until.is_none_or(|until| tokio::time::Instant::now() < until) {
            self.follow_the_queue(true);
            let room = if self.input_open { self.ready.room() } else { 0 };
            let mut wake = tokio::time::Instant::now() + if room == 0 { FULL_CHECK } else { IDLE_CHECK };
            if let Some(until) = until {
                wake = wake.min(until);
            }
            tokio::select! {
                taken = self.input.recv_many(&mut batches, room.div_ceil(HANDOFF_BATCH)), if room > 0 => {
                    if taken == 0 {
                        self.input_open = false;
                    }
                    let taken: Vec<PreparedSolanaTx> = batches.drain(..).flatten().collect();
                    for prepared in &taken {
                        if keep {
                            self.keep(prepared.index, prepared.signature);
                            self.handoffs.unanswered(prepared.index);
                        } else {
                            self.counts.unwatched.fetch_add(1, Ordering::Relaxed);
                            self.handoffs.counted(prepared.index, Counted::Unwatched);
                        }
                    }
                    self.ready.push_all(taken);
                },
                () = tokio::time::sleep_until(wake) => {}
            }
        }
    }

    /// The connection ended: what waits for the node's answer to its subscription goes to
    /// the pacer unanswered (it stays kept, to be subscribed again once the connection is
    /// back; what the kept already forgot never will be: unwatched).
    fn release_all(&mut self, awaiting: &mut HashMap<usize, PreparedSolanaTx, MultiplyHasherBuilder>) {
        let mut left: Vec<PreparedSolanaTx> = awaiting.drain().map(|(_, tx)| tx).collect();
        left.sort_by_key(|tx| tx.index);
        for tx in &left {
            if self.kept.contains(tx.index) {
                self.handoffs.unanswered(tx.index);
            } else {
                self.counts.unwatched.fetch_add(1, Ordering::Relaxed);
                self.handoffs.counted(tx.index, Counted::Unwatched);
            }
        }
        self.ready.push_all(left);
    }

    /// Keeps a signature to subscribe again after a reconnect; one the kept forget to make
    /// room, if handed over unanswered, will never be subscribed: unwatched.
    fn keep(&mut self, index: u64, signature: [u8; 64]) {
        if let Some(forgotten) = self.kept.keep(index, signature) {
            if self.handoffs.give_up(forgotten) {
                self.counts.unwatched.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    /// What was handed over unanswered will not be subscribed any more: unwatched.
    fn give_up_unanswered(&mut self) {
        self.counts.unwatched.fetch_add(self.handoffs.give_up_all(), Ordering::Relaxed);
    }
}

impl Drop for Watch {
    /// However the watch ends, the pacer no longer waits for it. The watch stops once sending
    /// is over: what is left in the ready queue was never sent, so it is counted in none of
    /// the counts; what was sent and the node never answered a subscription of went out
    /// unwatched.
    fn drop(&mut self) {
        if !self.started {
            return;
        }
        self.ready.close();
        let left = std::iter::from_fn(|| self.ready.pop()).map(|tx| tx.index).collect::<Vec<u64>>();
        let never = self.handoffs.never_sent(left);
        self.counts.subscribed.fetch_sub(never.subscribed, Ordering::Relaxed);
        self.counts.refused.fetch_sub(never.refused, Ordering::Relaxed);
        self.counts.unwatched.fetch_sub(never.unwatched, Ordering::Relaxed);
        self.give_up_unanswered();
    }
}

pub use super::status_poll::{SentNews, SentSince, SignaturePoll};

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::feed::FeedEnd;

    #[test]
    fn the_kept_signatures_forget_the_oldest_past_their_cap_and_the_landed_at_once() {
        let mut kept = KeptSignatures::default();
        for index in 0..MAX_KEPT_SIGNATURES as u64 + 10 {
            kept.keep(index, [index as u8; 64]);
        }
        let all = kept.all();
        assert_eq!(all.len(), MAX_KEPT_SIGNATURES);
        assert_eq!(all.first().map(|(index, _)| *index), Some(10), "the ten oldest are forgotten");
        kept.landed(11);
        kept.landed(3);
        assert_eq!(kept.all().len(), MAX_KEPT_SIGNATURES - 1);
        assert!(!kept.all().iter().any(|(index, _)| *index == 11));
    }

    /// A feed that plays its events one a few milliseconds apart (so that what the watch
    /// takes from the signer comes first), then waits forever.
    struct PacedFeed {
        events: std::collections::VecDeque<FeedEvent>,
        subscribed: Arc<std::sync::Mutex<Vec<usize>>>,
    }

    impl PacedFeed {
        fn playing(events: impl IntoIterator<Item = FeedEvent>) -> Self {
            PacedFeed { events: events.into_iter().collect(), subscribed: Arc::default() }
        }
    }

    impl Feed for PacedFeed {
        async fn subscribe(&mut self, position: usize, _call: &SubscribeCall) -> Result<(), FeedEnd> {
            self.subscribed.lock().unwrap().push(position);
            Ok(())
        }

        async fn unsubscribe(&mut self, _position: usize) -> Result<bool, FeedEnd> {
            Ok(false)
        }

        async fn next(&mut self) -> FeedEvent {
            tokio::time::sleep(Duration::from_millis(20)).await;
            match self.events.pop_front() {
                Some(event) => event,
                None => std::future::pending().await,
            }
        }

        async fn close(&mut self) {}
    }

    fn confirmed(position: usize) -> FeedEvent {
        FeedEvent::Confirmed { position, arrived: std::time::Instant::now() }
    }

    fn prepared(index: u64) -> PreparedSolanaTx {
        PreparedSolanaTx {
            index,
            payer: 0,
            signature: [index as u8; 64],
            base64: String::new(),
            last_valid_block_height: 0,
        }
    }

    /// Subscribed + refused + unwatched of a watch's counts.
    fn counted(counts: &WatchCounts) -> (u64, u64, u64) {
        let load = |count: &AtomicU64| count.load(Ordering::Relaxed);
        (load(&counts.subscribed), load(&counts.refused), load(&counts.unwatched))
    }

    /// A watch of the signer's `input`, its ready queue and counts.
    fn watch_of(input: SignedReceiver) -> (Watch, Arc<ReadyQueue>, Arc<WatchCounts>) {
        let ready = ReadyQueue::new(64);
        let counts = Arc::new(WatchCounts::default());
        let watch = Watch {
            commitment: Commitment::Processed,
            input,
            ready: ready.clone(),
            counts: counts.clone(),
            node: Endpoint::parse("http://127.0.0.1:9/", Duration::from_secs(1)).unwrap(),
            kept: KeptSignatures::default(),
            input_open: true,
            started: true,
            handoffs: Handoffs::new(ready_holds(&ready)),
            found_in_catch_up: FoundInCatchUp::default(),
        };
        (watch, ready, counts)
    }

    /// A watch whose first connection failed is dropped before it subscribed anything: the
    /// caller falls back to polling and the signer fills the same ready queue, which must stay
    /// open (it was closed, and the run sent nothing); one that started closes it as before.
    #[test]
    fn a_signature_watch_that_never_started_leaves_the_ready_queue_open() {
        let (_signer, input) = super::super::ahead::signed_channel(64);
        let (mut watch, ready, _) = watch_of(input);
        watch.started = false;
        drop(watch);
        assert!(!ready.is_closed(), "the fallback's signer still fills it");
        let (_signer, input) = super::super::ahead::signed_channel(64);
        let (watch, ready, _) = watch_of(input);
        drop(watch);
        assert!(ready.is_closed(), "a watch that ran hands the end of sending on");
    }

    #[test]
    fn what_a_reconnect_s_check_found_landed_is_not_subscribed_or_checked_again() {
        use std::sync::atomic::AtomicBool;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (signer, input) = super::super::ahead::signed_channel(64);
        signer.try_send((0..4).map(prepared).collect()).unwrap();
        let (mut watch, _ready, counts) = watch_of(input);
        let (seen, _landings) = std::sync::mpsc::channel();
        let (started, _said) = std::sync::mpsc::channel();
        let ends = WatchEnds::new(seen, started, Arc::new(AtomicBool::new(false)));
        let ended = || FeedEvent::Ended(FeedEnd::Closed(1001));
        // 3's subscription is not answered before the connection ends: sent unanswered.
        let events = [confirmed(0), confirmed(1), confirmed(2), ended()];
        runtime.block_on(watch.watch(PacedFeed::playing(events), &ends));
        assert_eq!(counted(&counts), (3, 0, 0));
        // The check after the first reconnect found 1 and 3 landed (no notification came).
        ends.health.begin_catch_up();
        watch.found_in_catch_up.add(vec![1, 3]);
        let second = PacedFeed::playing([ended()]);
        let subscribed = second.subscribed.clone();
        runtime.block_on(watch.watch(second, &ends));
        assert_eq!(*subscribed.lock().unwrap(), [0, 2], "1 and 3 landed: not subscribed (nor checked) again");
        assert_eq!(watch.kept.all().iter().map(|(index, _)| *index).collect::<Vec<_>>(), [0, 2]);
        assert_eq!(counted(&counts), (3, 0, 1), "3 was found, never watched: unwatched, once");
        assert!(watch.handoffs.none_unanswered());
    }

    #[test]
    fn subscriptions_awaiting_their_answer_when_the_connection_ends_are_counted_once() {
        use std::sync::atomic::AtomicBool;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (signer, input) = super::super::ahead::signed_channel(64);
        signer.try_send((0..6).map(prepared).collect()).unwrap();
        let (mut watch, ready, counts) = watch_of(input);
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, _landings) = std::sync::mpsc::channel();
        let (started, _said) = std::sync::mpsc::channel();
        let ends = WatchEnds::new(seen, started, stop.clone());
        // Six subscribed in one write; the node answers one, then the connection ends.
        let first = PacedFeed::playing([confirmed(0), FeedEvent::Ended(FeedEnd::Closed(1001))]);
        let round = runtime.block_on(watch.watch(first, &ends));
        assert!(matches!(round, FeedRound::Ended(_)), "{round:?}");
        assert_eq!(counted(&counts), (1, 0, 0));
        let handed: Vec<u64> = std::iter::from_fn(|| (ready.room() < 64).then(|| ready.pop()).flatten())
            .map(|tx| tx.index)
            .collect();
        assert_eq!(handed, [0, 1, 2, 3, 4, 5], "the five unanswered go to the pacer too");
        // The reconnect subscribes the kept again: the node confirms 1 and 2 (their first
        // answers), refuses 3, and confirms 0 again (not a second subscription); then it ends.
        ends.health.begin_catch_up();
        let second = PacedFeed::playing([
            confirmed(1),
            confirmed(2),
            FeedEvent::Refused { position: 3, class: "-32602".into(), message: "invalid".into() },
            confirmed(0),
            FeedEvent::Ended(FeedEnd::Closed(1001)),
        ]);
        let round = runtime.block_on(watch.watch(second, &ends));
        assert!(matches!(round, FeedRound::Ended(_)), "{round:?}");
        assert_eq!(counted(&counts), (3, 1, 0));
        // No reconnect succeeds: 4 and 5 were never answered.
        stop.store(true, Ordering::Relaxed);
        runtime.block_on(watch.gave_up(&ends));
        assert_eq!(counted(&counts), (3, 1, 2), "each of the six counted exactly once");
        drop(watch);
        assert_eq!(counted(&counts), (3, 1, 2), "the end counts none twice");
    }

    #[test]
    fn sends_left_in_the_ready_queue_when_the_watch_stops_are_not_counted_sent_unwatched() {
        use std::sync::atomic::AtomicBool;
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let (signer, input) = super::super::ahead::signed_channel(64);
        let (mut watch, ready, counts) = watch_of(input);
        let stop = Arc::new(AtomicBool::new(false));
        let (seen, _landings) = std::sync::mpsc::channel();
        let (started, _said) = std::sync::mpsc::channel();
        let ends = WatchEnds::new(seen, started, stop.clone());
        // Between connections: 0 to 3 go to the pacer unanswered, kept for the reconnect (if
        // this runs too late for that, the watch gives up on them below: the same counts).
        signer.try_send((0..4).map(prepared).collect()).unwrap();
        let until = tokio::time::Instant::now() + Duration::from_millis(100);
        runtime.block_on(watch.between(&ends, until));
        // The watch gives up reconnecting: 4 to 7 go straight to the pacer, unwatched.
        signer.try_send((4..8).map(prepared).collect()).unwrap();
        // Stopped once all eight are in the queue (however late this thread runs).
        let stopper = {
            let (stop, ready) = (stop.clone(), ready.clone());
            std::thread::spawn(move || {
                let deadline = std::time::Instant::now() + Duration::from_secs(30);
                while ready.room() > 64 - 8 && std::time::Instant::now() < deadline {
                    std::thread::sleep(Duration::from_millis(5));
                }
                stop.store(true, Ordering::Relaxed);
            })
        };
        runtime.block_on(watch.gave_up(&ends));
        stopper.join().unwrap();
        // The pacer sends 0 to 5; the run ends with 6 and 7 still in the queue.
        let sent: Vec<u64> = (0..6).filter_map(|_| ready.pop()).map(|tx| tx.index).collect();
        assert_eq!(sent, [0, 1, 2, 3, 4, 5]);
        drop(watch);
        assert_eq!(counted(&counts), (0, 0, 6), "0 to 5 sent unwatched; 6 and 7 never sent");
        assert!(ready.pop().is_none(), "the watch took back what the pacer never did");
    }

    #[test]
    fn a_signature_notification_says_its_slot_and_whether_it_failed() {
        assert_eq!(notification(br#"{"context":{"slot":5},"value":{"err":null}}"#), Some((5, false)));
        assert_eq!(
            notification(br#"{"context":{"slot":6},"value":{"err":{"InstructionError":[0,"Custom"]}}}"#),
            Some((6, true))
        );
        assert_eq!(notification(br#"{"context":{"slot":6},"value":"receivedSignature"}"#), None);
        assert_eq!(notification(b"garbage"), None);
        assert!(
            Commitment::Finalized > Commitment::Confirmed && Commitment::Confirmed > Commitment::Processed
        );
    }
}
