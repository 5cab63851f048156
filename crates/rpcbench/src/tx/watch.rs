//! Watches new heads over the feed seam while transactions are sent: subscribes `newHeads`
//! (`eth_subscribe`) on a thread of its own and returns only once the node confirmed the
//! subscription, so a head that carries a transaction is never missed because the watch
//! started late. Each head is handed on with its number and arrival stamp (the kernel's receive
//! stamp where the feed has one); the driver fetches the block's transaction hashes and feeds
//! `super::inclusion::InclusionBook`. A connection that ends mid-run is opened again and
//! subscribed again (`super::feed_watch`'s policy); the blocks of the gap are read by number
//! when the next head comes.

use std::fmt;
use std::time::{Duration, Instant};

use super::feed_watch::{ended_text, FeedRound, FeedWatch, WatchEnds, WatchOnFeed, WatchStartError};
pub use super::feed_watch::{ReconnectPolicy, WatchHealth, ENDS_KEPT, RECONNECT};
use crate::client::Endpoint;
use crate::transport::feed::{Feed, FeedEvent, JsonRpcSubscribe, SubscribeCall};

/// One head as it arrived.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SeenHead {
    /// The block number.
    pub number: u64,
    /// When it arrived.
    pub arrived: Instant,
    /// When the node says it produced the block, unix microseconds, where it says so exactly
    /// (the mock nodes' `rpcbenchProducedAt`; a real node's header has seconds only).
    pub produced_at_us: Option<u64>,
    /// Polled (`eth_blockNumber`) rather than notified: its arrival is known to the poll's
    /// interval only (a run without WebSocket, or a watch between two connections).
    pub polled: bool,
}

/// Why the watch could not start.
#[derive(Debug)]
pub enum WatchError {
    /// The URL is not a WebSocket URL this build can open.
    Url(String),
    /// The connection could not be opened.
    Connect(String),
    /// The node refused the `newHeads` subscription, or the connection ended first.
    Refused(String),
    /// The watch's thread could not start.
    Thread(std::io::Error),
}

impl fmt::Display for WatchError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            WatchError::Url(reason) => write!(f, "cannot watch new heads: {reason}"),
            WatchError::Connect(reason) => write!(f, "cannot connect to watch new heads: {reason}"),
            WatchError::Refused(reason) => write!(f, "the node refused the newHeads subscription: {reason}"),
            WatchError::Thread(err) => write!(f, "cannot start the head watch: {err}"),
        }
    }
}

impl std::error::Error for WatchError {}

impl WatchStartError for WatchError {
    fn url(reason: String) -> Self {
        WatchError::Url(reason)
    }
    fn connect(reason: String) -> Self {
        WatchError::Connect(reason)
    }
    fn thread(err: std::io::Error) -> Self {
        WatchError::Thread(err)
    }
    fn ended_early() -> Self {
        WatchError::Refused("the watch ended before the answer".into())
    }
}

/// A running head watch.
#[derive(Debug)]
pub struct HeadWatch {
    heads: FeedWatch<SeenHead>,
}

impl HeadWatch {
    /// Subscribes `newHeads` at `ws_url` and returns once the node confirmed it.
    pub fn start(ws_url: &str, connect_timeout: Duration) -> Result<HeadWatch, WatchError> {
        let heads = FeedWatch::start("rpcbench-heads", ws_url, &[], connect_timeout, NewHeads::default())?;
        Ok(HeadWatch { heads })
    }

    /// As [`HeadWatch::start`], and while no connection is open (between an end and the
    /// reconnect, or after it gave up) the head is polled on `node` every [`GAP_POLL`]: the
    /// blocks below a polled head are read as below any other.
    pub fn start_polling_between(
        ws_url: &str,
        connect_timeout: Duration,
        node: Endpoint,
    ) -> Result<HeadWatch, WatchError> {
        let headers = node.headers().to_vec();
        let watch = NewHeads { node: Some(node), last: None };
        let heads = FeedWatch::start("rpcbench-heads", ws_url, &headers, connect_timeout, watch)?;
        Ok(HeadWatch { heads })
    }

    /// The heads that arrived since the last call.
    pub fn drain(&self) -> Vec<SeenHead> {
        self.heads.drain()
    }

    /// Its connection's ends and reconnects so far.
    pub fn health(&self) -> &WatchHealth {
        self.heads.health()
    }

    /// Stops watching and returns the heads not yet drained.
    pub fn stop(self) -> Vec<SeenHead> {
        self.heads.stop()
    }
}

/// The `newHeads` subscription: started once the node confirmed it.
#[derive(Default)]
struct NewHeads {
    /// Polled for the head while no connection is open (`None`: not polled).
    node: Option<Endpoint>,
    /// The highest head handed on.
    last: Option<u64>,
}

/// How often the head is polled while the watch has no connection.
pub const GAP_POLL: Duration = Duration::from_millis(100);

impl NewHeads {
    /// Hands on `head` unless a higher one was handed on already.
    fn hand_on(&mut self, head: SeenHead, ends: &WatchEnds<SeenHead, WatchError>) {
        if self.last.is_some_and(|last| head.number <= last) && head.polled {
            return;
        }
        self.last = Some(self.last.map_or(head.number, |last| last.max(head.number)));
        let _ = ends.seen.send(head);
    }

    /// Polls the head every [`GAP_POLL`] until `until` (`None`: the stop), if it has a node.
    async fn poll_until(
        &mut self,
        ends: &WatchEnds<SeenHead, WatchError>,
        until: Option<tokio::time::Instant>,
    ) {
        let far = tokio::time::Instant::now() + Duration::from_secs(3600 * 24 * 365);
        let until = until.unwrap_or(far);
        let Some(node) = self.node.clone() else {
            ends.wait_until(until).await;
            return;
        };
        while !ends.stopped() && tokio::time::Instant::now() < until {
            // The endpoint blocks (and runs its own runtime): off this thread's runtime.
            let asking = node.clone();
            let answer = tokio::task::spawn_blocking(move || block_number(&asking)).await;
            if let Ok(Some(number)) = answer {
                let head = SeenHead { number, arrived: Instant::now(), produced_at_us: None, polled: true };
                self.hand_on(head, ends);
            }
            ends.wait_until(until.min(tokio::time::Instant::now() + GAP_POLL)).await;
        }
    }
}

/// The number of a `newHeads` item's header, and its exact production stamp if it has one.
fn head_number(payload: &[u8]) -> Option<(u64, Option<u64>)> {
    #[derive(serde::Deserialize)]
    struct Header<'a> {
        #[serde(borrow)]
        number: &'a str,
        #[serde(default, rename = "rpcbenchProducedAt")]
        produced_at_us: Option<u64>,
    }
    let header: Header<'_> = serde_json::from_slice(payload).ok()?;
    let number = u64::from_str_radix(header.number.strip_prefix("0x")?, 16).ok()?;
    Some((number, header.produced_at_us))
}

/// The node's head, `None` when it does not say.
pub(crate) fn block_number(node: &Endpoint) -> Option<u64> {
    let answer = node.call("eth_blockNumber", Some(&serde_json::json!([]))).ok()?;
    u64::from_str_radix(answer.as_str()?.strip_prefix("0x")?, 16).ok()
}

impl WatchOnFeed for NewHeads {
    type Seen = SeenHead;
    type Error = WatchError;

    async fn watch<F: Feed>(&mut self, mut feed: F, ends: &WatchEnds<SeenHead, WatchError>) -> FeedRound {
        // Heads are stamped by the kernel on arrival: the watch can wait for the core.
        if !ends.reconnecting() {
            crate::util::thread_class::step_aside_for_the_pacer();
        }
        let call = SubscribeCall::JsonRpc(JsonRpcSubscribe {
            method: "eth_subscribe",
            params: serde_json::json!(["newHeads"]),
            unsubscribe: "eth_unsubscribe",
        });
        if let Err(end) = feed.subscribe(0, &call).await {
            return ends.not_subscribed(WatchError::Refused(ended_text(end, feed.end_detail())));
        }
        let mut confirmed = false;
        while !ends.stopped() {
            let Ok(event) = tokio::time::timeout(Duration::from_millis(20), feed.next()).await else {
                continue;
            };
            match event {
                FeedEvent::Confirmed { .. } => {
                    confirmed = true;
                    ends.subscribed();
                }
                FeedEvent::Refused { message, .. } => {
                    feed.close().await;
                    return ends.not_subscribed(WatchError::Refused(message));
                }
                FeedEvent::Item(delivery) => {
                    if let Some((number, produced_at_us)) = head_number(delivery.payload()) {
                        let seen =
                            SeenHead { number, arrived: delivery.arrived, produced_at_us, polled: false };
                        self.hand_on(seen, ends);
                    }
                }
                FeedEvent::Ended(end) => {
                    let why = ended_text(end, feed.end_detail());
                    if !confirmed {
                        return ends.not_subscribed(WatchError::Refused(why));
                    }
                    // The landing book reads the blocks of the gap by number once the next
                    // head comes.
                    return FeedRound::Ended(why);
                }
                FeedEvent::Unsubscribed { .. } | FeedEvent::Stray(_) => {}
            }
        }
        feed.close().await;
        FeedRound::Over
    }

    async fn between(&mut self, ends: &WatchEnds<SeenHead, WatchError>, until: tokio::time::Instant) {
        self.poll_until(ends, Some(until)).await;
    }

    async fn gave_up(&mut self, ends: &WatchEnds<SeenHead, WatchError>) {
        self.poll_until(ends, None).await;
    }
}
