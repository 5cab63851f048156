//! Watches new heads over the feed seam while transactions are sent: subscribes `newHeads`
//! (`eth_subscribe`) on a thread of its own and returns only once the node confirmed the
//! subscription, so a head that carries a transaction is never missed because the watch
//! started late. Each head is handed on with its number and arrival stamp (the kernel's receive
//! stamp where the feed has one); the driver fetches the block's transaction hashes and feeds
//! `super::inclusion::InclusionBook`.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use crate::engine::config::HttpVersion;
use crate::engine::select::{FeedWire, UseFeed, WireSettings};
use crate::settings::{Target, TlsOptions};
use crate::transport::feed::{Feed, FeedEvent, FeedOpener, JsonRpcSubscribe, SubscribeCall};

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

/// A running head watch.
#[derive(Debug)]
pub struct HeadWatch {
    heads: Receiver<SeenHead>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl HeadWatch {
    /// Subscribes `newHeads` at `ws_url` and returns once the node confirmed it.
    pub fn start(ws_url: &str, connect_timeout: Duration) -> Result<HeadWatch, WatchError> {
        let target = Target::parse(ws_url).map_err(|err| WatchError::Url(err.to_string()))?;
        let (heads_in, heads) = channel();
        let (ready_in, ready) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = std::thread::Builder::new()
            .name("rpcbench-heads".into())
            .spawn(move || {
                let tls = TlsOptions::default();
                let settings = WireSettings {
                    target: &target,
                    headers: &[],
                    tls: &tls,
                    connect_timeout,
                    http: HttpVersion::Http1,
                    keepalive: true,
                    streams: 1,
                    in_flight: 1,
                    max_body: 1 << 20,
                };
                match FeedWire::select(&settings, None) {
                    Ok(wire) => wire.with(Watch { heads: heads_in, ready: ready_in, stop: stopping }),
                    Err(err) => {
                        let _ = ready_in.send(Err(WatchError::Url(err.to_string())));
                    }
                }
            })
            .map_err(WatchError::Thread)?;
        match ready.recv() {
            Ok(Ok(())) => Ok(HeadWatch { heads, stop, thread: Some(thread) }),
            Ok(Err(err)) => Err(err),
            Err(_) => Err(WatchError::Refused("the watch ended before the answer".into())),
        }
    }

    /// The heads that arrived since the last call.
    pub fn drain(&self) -> Vec<SeenHead> {
        self.heads.try_iter().collect()
    }

    /// Stops watching and returns the heads not yet drained.
    pub fn stop(mut self) -> Vec<SeenHead> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.drain()
    }
}

struct Watch {
    heads: Sender<SeenHead>,
    ready: Sender<Result<(), WatchError>>,
    stop: Arc<AtomicBool>,
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

impl UseFeed for Watch {
    type Output = ();

    fn use_feed<O: FeedOpener + Clone + 'static>(self, opener: &O) {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            let _ = self.ready.send(Err(WatchError::Connect("no runtime".into())));
            return;
        };
        runtime.block_on(async {
            let mut feed = match opener.open().await {
                Ok(feed) => feed,
                Err(err) => {
                    let _ = self.ready.send(Err(WatchError::Connect(err.to_string())));
                    return;
                }
            };
            let call = SubscribeCall::JsonRpc(JsonRpcSubscribe {
                method: "eth_subscribe",
                params: serde_json::json!(["newHeads"]),
                unsubscribe: "eth_unsubscribe",
            });
            if feed.subscribe(0, &call).await.is_err() {
                let _ = self.ready.send(Err(WatchError::Refused("the connection ended".into())));
                return;
            }
            let mut confirmed = false;
            while !self.stop.load(Ordering::Relaxed) {
                let Ok(event) = tokio::time::timeout(Duration::from_millis(20), feed.next()).await else {
                    continue;
                };
                match event {
                    FeedEvent::Confirmed { .. } => {
                        confirmed = true;
                        let _ = self.ready.send(Ok(()));
                    }
                    FeedEvent::Refused { message, .. } => {
                        let _ = self.ready.send(Err(WatchError::Refused(message)));
                        return;
                    }
                    FeedEvent::Item(delivery) => {
                        if let Some((number, produced_at_us)) = head_number(delivery.payload()) {
                            let seen = SeenHead { number, arrived: delivery.arrived, produced_at_us };
                            let _ = self.heads.send(seen);
                        }
                    }
                    FeedEvent::Ended(end) => {
                        if !confirmed {
                            let _ = self.ready.send(Err(WatchError::Refused(format!("{end:?}"))));
                        }
                        return;
                    }
                    FeedEvent::Unsubscribed { .. } | FeedEvent::Stray(_) => {}
                }
            }
            feed.close().await;
        });
    }
}
