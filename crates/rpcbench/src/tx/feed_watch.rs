//! What both chains' watches of a run share ([`super::watch`]'s new heads, Solana's
//! signature watch): a thread of their own opening one WebSocket feed on a current-thread
//! runtime, a start handshake (the caller returns once the watch says it started, or with why
//! not), what the watch sees handed back over a channel, and the stop. The chain's part is a
//! [`WatchOnFeed`]: what it does on the opened feed, and its error type.

use std::future::Future;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::config::HttpVersion;
use crate::engine::select::{FeedWire, UseFeed, WireSettings};
use crate::settings::{Target, TlsOptions};
use crate::transport::feed::{Feed, FeedOpener};

/// The reasons common to every watch that could not start.
pub(crate) trait WatchStartError: Send + 'static {
    /// The URL is not a WebSocket URL this build can open.
    fn url(reason: String) -> Self;
    /// The connection could not be opened.
    fn connect(reason: String) -> Self;
    /// The watch's thread could not start.
    fn thread(err: std::io::Error) -> Self;
    /// The watch ended before it said whether it started.
    fn ended_early() -> Self;
}

/// The watch's ends inside its thread.
pub(crate) struct WatchEnds<T, E> {
    /// Where what it sees goes.
    pub(crate) seen: Sender<T>,
    /// Where it says it started (once), or why not.
    pub(crate) started: Sender<Result<(), E>>,
    /// Set when the run stops it.
    pub(crate) stop: Arc<AtomicBool>,
}

impl<T, E> WatchEnds<T, E> {
    /// Whether the run stopped the watch.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }
}

/// A chain's watch: what it does on the feed once opened.
pub(crate) trait WatchOnFeed: Send + 'static {
    /// What it sees (a head, a landing).
    type Seen: Send + 'static;
    /// Why it could not start.
    type Error: WatchStartError;

    /// Watches on `feed` until stopped or the feed ends; says on `ends.started` whether it
    /// started.
    fn watch<F: Feed>(self, feed: F, ends: WatchEnds<Self::Seen, Self::Error>) -> impl Future<Output = ()>;
}

/// A running watch: its thread, what it saw not yet drained.
#[derive(Debug)]
pub(crate) struct FeedWatch<T> {
    seen: Receiver<T>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> FeedWatch<T> {
    /// Opens `ws_url` on a thread named `name` and runs `watch` on it; returns once the watch
    /// said it started.
    pub(crate) fn start<W: WatchOnFeed<Seen = T>>(
        name: &str,
        ws_url: &str,
        connect_timeout: Duration,
        watch: W,
    ) -> Result<FeedWatch<T>, W::Error> {
        let target = Target::parse(ws_url).map_err(|err| W::Error::url(err.to_string()))?;
        let (seen_in, seen) = channel();
        let (started_in, started) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let ends = WatchEnds { seen: seen_in, started: started_in, stop: stop.clone() };
        // A watch reads in the core's free time (arrivals keep the kernel's receive stamp).
        let thread = crate::util::thread_class::spawn_helper(name, move || {
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
                Ok(wire) => wire.with(OnFeed { watch, ends }),
                Err(err) => {
                    let _ = ends.started.send(Err(W::Error::url(err.to_string())));
                }
            }
        })
        .map_err(W::Error::thread)?;
        match started.recv() {
            Ok(Ok(())) => Ok(FeedWatch { seen, stop, thread: Some(thread) }),
            Ok(Err(err)) => Err(err),
            Err(_) => Err(W::Error::ended_early()),
        }
    }

    /// What it saw since the last call.
    pub(crate) fn drain(&self) -> Vec<T> {
        self.seen.try_iter().collect()
    }

    /// Stops watching and returns what it saw not yet drained.
    pub(crate) fn stop(mut self) -> Vec<T> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.drain()
    }
}

/// A watch with its ends, run over the wire's feed opener.
struct OnFeed<W: WatchOnFeed> {
    watch: W,
    ends: WatchEnds<W::Seen, W::Error>,
}

impl<W: WatchOnFeed> UseFeed for OnFeed<W> {
    type Output = ();

    fn use_feed<O: FeedOpener + Clone + 'static>(self, opener: &O) {
        let OnFeed { watch, ends } = self;
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            let _ = ends.started.send(Err(W::Error::connect("no runtime".into())));
            return;
        };
        runtime.block_on(async {
            match opener.open().await {
                Ok(feed) => watch.watch(feed, ends).await,
                Err(err) => {
                    let _ = ends.started.send(Err(W::Error::connect(err.to_string())));
                }
            }
        });
    }
}
