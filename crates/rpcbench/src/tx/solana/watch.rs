//! How a Solana run sees its transactions land, at the commitment asked for:
//! - [`SignatureWatch`]: one WebSocket over the feed seam (its thread and handshake shared
//!   with the head watch: `crate::tx::feed_watch`), a `signatureSubscribe` per
//!   transaction sent (position = the transaction's index) BEFORE it is handed to the pacer;
//!   the notification's arrival (the kernel's receive stamp where the feed has one) is the
//!   landing time, its `err` says whether it failed;
//! - or, with [`SignatureWatch::start_blocks`], one `blockSubscribe` whose notifications list
//!   each block's signatures (`super::blocks`);
//! - [`SignaturePoll`]: without WebSocket, `getSignatureStatuses` in batches at a stated
//!   interval; the landing time is the answer's arrival, so it is known to that resolution.

use std::collections::HashMap;
use std::fmt;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

use serde_json::json;

use super::ahead::{PreparedSolanaTx, ReadyQueue, SignedReceiver, HANDOFF_BATCH};
use crate::transport::feed::{Feed, FeedEnd, FeedEvent, JsonRpcSubscribe, SubscribeCall};
use crate::tx::feed_watch::{FeedWatch, WatchEnds, WatchOnFeed, WatchStartError};
use crate::util::fast_hash::MultiplyHasherBuilder;

/// Signatures per `getSignatureStatuses` call (the node's limit).
pub const STATUS_BATCH: usize = 256;

/// The commitment a transaction must reach to count as landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Commitment {
    /// In a block the node processed.
    Processed,
    /// Voted on by a supermajority.
    Confirmed,
    /// Rooted.
    Finalized,
}

impl Commitment {
    /// The name the RPC API uses.
    pub fn name(self) -> &'static str {
        match self {
            Commitment::Processed => "processed",
            Commitment::Confirmed => "confirmed",
            Commitment::Finalized => "finalized",
        }
    }

    /// Reads a `confirmationStatus`.
    pub fn parse(text: &str) -> Option<Commitment> {
        match text {
            "processed" => Some(Commitment::Processed),
            "confirmed" => Some(Commitment::Confirmed),
            "finalized" => Some(Commitment::Finalized),
            _ => None,
        }
    }
}

/// One transaction seen landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Landing {
    /// The transaction's index in send order.
    pub index: u64,
    /// The slot it landed in.
    pub slot: u64,
    /// When it was seen.
    pub arrived: Instant,
    /// It landed with an error (fee paid, instructions failed).
    pub failed: bool,
}

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
    /// Subscriptions the node confirmed.
    pub subscribed: AtomicU64,
    /// Subscriptions the node refused (their transactions are sent unwatched).
    pub refused: AtomicU64,
    /// Transactions sent unwatched because the connection had ended.
    pub unwatched: AtomicU64,
    /// Why the connection ended before the run stopped the watch, once it did.
    ended: OnceLock<String>,
}

impl WatchCounts {
    /// Why the watch's connection ended before the run stopped it (the close code and reason,
    /// or the I/O error), or `None` while it is open or if the run stopped it.
    pub fn ended(&self) -> Option<&str> {
        self.ended.get().map(String::as_str)
    }
}

/// What a watch's end says, for the run's stderr and report.
fn ended_text(end: FeedEnd, detail: Option<&str>) -> String {
    let why = match end {
        FeedEnd::Closed(1006) => "the connection broke without a close frame (1006)".to_string(),
        FeedEnd::Closed(1005) => "the node closed the connection without a close code (1005)".to_string(),
        FeedEnd::Closed(code) => format!("the node closed the connection with code {code}"),
        FeedEnd::Protocol => "the node broke the WebSocket protocol".to_string(),
        FeedEnd::TooLarge => "the node sent a message larger than the limit".to_string(),
        FeedEnd::NotReading => {
            "the node stopped reading (the answers to its pings backed up); rpcbench closed it".to_string()
        }
        FeedEnd::Status(code) => format!("the stream ended with status {code}"),
        FeedEnd::GoAway => "the node sent GOAWAY".to_string(),
        FeedEnd::Lost => "the connection was lost".to_string(),
    };
    match detail {
        Some(detail) => format!("{why}: {}", detail.escape_debug()),
        None => why,
    }
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
    pub fn start(
        ws_url: &str,
        commitment: Commitment,
        connect_timeout: Duration,
        input: SignedReceiver,
        ready: Arc<ReadyQueue>,
    ) -> Result<SignatureWatch, SignatureWatchError> {
        let counts = Arc::new(WatchCounts::default());
        let watch = Watch { commitment, input, ready, counts: counts.clone() };
        let landings = FeedWatch::start("rpcbench-signatures", ws_url, connect_timeout, watch)?;
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

    /// The watch's counts.
    pub fn counts(&self) -> &WatchCounts {
        &self.counts
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
}

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

    async fn watch<F: Feed>(mut self, mut feed: F, ends: WatchEnds<Landing, SignatureWatchError>) {
        let _ = ends.started.send(Ok(()));
        // Keyed by the run's own transaction indexes, bounded by the ready queue's capacity.
        let mut awaiting: HashMap<usize, PreparedSolanaTx, MultiplyHasherBuilder> = HashMap::default();
        let mut batches: Vec<Vec<PreparedSolanaTx>> = Vec::new();
        let mut calls: Vec<(usize, SubscribeCall)> = Vec::new();
        let mut input_open = true;
        let mut feed_open = true;
        // One timer for the loop (armed again when it fires or must fire sooner), not one
        // registered and dropped per event.
        let tick = tokio::time::sleep(IDLE_CHECK);
        tokio::pin!(tick);
        while !ends.stopped() {
            // Sending is over (the run closed the queue): the signer must not wait on us.
            if input_open && self.ready.is_closed() {
                self.input.close();
                input_open = false;
            }
            if !input_open && awaiting.is_empty() && !self.ready.is_closed() {
                self.ready.close();
            }
            // Taken in batches: one wake of the signer per batch, not per transaction.
            let room = if input_open { self.ready.room().saturating_sub(awaiting.len()) } else { 0 };
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
                        input_open = false;
                    }
                    if !feed_open {
                        let unwatched: usize = batches.iter().map(Vec::len).sum();
                        self.counts.unwatched.fetch_add(unwatched as u64, Ordering::Relaxed);
                        self.ready.push_all(batches.drain(..).flatten());
                        continue;
                    }
                    // What was taken is subscribed in one write.
                    calls.clear();
                    for prepared in batches.drain(..).flatten() {
                        let position = prepared.index as usize;
                        let signature = super::base58::signature_text(&prepared.signature);
                        calls.push((position, SubscribeCall::JsonRpc(JsonRpcSubscribe {
                            method: "signatureSubscribe",
                            params: json!([signature, {"commitment": self.commitment.name()}]),
                            unsubscribe: "signatureUnsubscribe",
                        })));
                        awaiting.insert(position, prepared);
                    }
                    if let Err(end) = feed.subscribe_all(&calls).await {
                        feed_open = false;
                        self.ended(end, feed.end_detail());
                        self.release_all(&mut awaiting);
                    }
                },
                event = feed.next(), if feed_open => match event {
                    FeedEvent::Confirmed { position, .. } => {
                        if let Some(prepared) = awaiting.remove(&position) {
                            self.counts.subscribed.fetch_add(1, Ordering::Relaxed);
                            self.ready.push(prepared);
                        }
                    }
                    FeedEvent::Refused { position, .. } => {
                        feed.forget(position);
                        if let Some(prepared) = awaiting.remove(&position) {
                            self.counts.refused.fetch_add(1, Ordering::Relaxed);
                            self.ready.push(prepared);
                        }
                    }
                    FeedEvent::Item(delivery) => {
                        // A signature subscription ends with its one notification: its
                        // entries in the feed's tables go with it.
                        feed.forget(delivery.position);
                        if let Some((slot, failed)) = notification(delivery.payload()) {
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
                        feed_open = false;
                        self.ended(end, feed.end_detail());
                        self.release_all(&mut awaiting);
                    }
                    FeedEvent::Unsubscribed { .. } | FeedEvent::Stray(_) => {}
                },
                () = &mut tick => {
                    tick.as_mut().reset(tokio::time::Instant::now() + IDLE_CHECK);
                }
            }
        }
        self.ready.close();
        if feed_open {
            feed.close().await;
        }
    }
}

/// How often an idle signature watch looks at the stop flag and the ready queue.
const IDLE_CHECK: Duration = Duration::from_millis(20);
/// How soon a watch whose ready queue is full looks again for room.
const FULL_CHECK: Duration = Duration::from_millis(1);

impl Watch {
    /// Notes why the connection ended (the first end only).
    fn ended(&self, end: FeedEnd, detail: Option<&str>) {
        let _ = self.counts.ended.set(ended_text(end, detail));
    }

    /// The connection ended: what waits for a subscription is sent unwatched.
    fn release_all(&self, awaiting: &mut HashMap<usize, PreparedSolanaTx, MultiplyHasherBuilder>) {
        let mut left: Vec<PreparedSolanaTx> = awaiting.drain().map(|(_, tx)| tx).collect();
        left.sort_by_key(|tx| tx.index);
        self.counts.unwatched.fetch_add(left.len() as u64, Ordering::Relaxed);
        self.ready.push_all(left);
    }
}

pub use super::status_poll::{SentNews, SentSince, SignaturePoll};

#[cfg(test)]
mod tests {
    use super::*;

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
