//! What every watch of a run shares ([`super::watch`]'s new heads, Solana's signature watch
//! and block stream): a thread of its own opening one WebSocket feed on a current-thread
//! runtime, a start handshake (the caller returns once the watch says it started, or with why
//! not), what the watch sees handed back over a channel, the stop, and the one reconnect
//! policy ([`ReconnectPolicy`]): a connection that ends before the run stops the watch is
//! opened again after a capped backoff and the chain's watch subscribes again, until a stated
//! number of failed attempts in a row or the run's end. Each end and reconnect is counted in
//! the watch's [`WatchHealth`]. The chain's part is a [`WatchOnFeed`]: what it does on an
//! opened feed, between connections, and once the attempts ran out.

use std::cell::Cell;
use std::fmt;
use std::future::Future;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::Duration;

use crate::engine::config::HttpVersion;
use crate::engine::select::{FeedWire, UseFeed, WireSettings};
use crate::settings::{Target, TlsOptions};
use crate::transport::feed::{Feed, FeedEnd, FeedOpener};

/// How often a watch waiting between connections (or for one to open) looks at the stop flag.
const STOP_CHECK: Duration = Duration::from_millis(20);
/// The ends whose reasons are kept word for word (the later ones only counted).
pub const ENDS_KEPT: usize = 3;

/// When a watch whose connection ended opens it again: `first_wait` after the end, doubled
/// after each failed attempt up to `longest_wait`; after `attempts` failed attempts in a row
/// it gives up (a connection that subscribed again starts the count anew).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReconnectPolicy {
    /// The wait before the first attempt after an end.
    pub first_wait: Duration,
    /// The longest wait between two attempts.
    pub longest_wait: Duration,
    /// Failed attempts in a row after which the watch gives up.
    pub attempts: u32,
}

/// The policy of every watch of a run: 50 ms doubling to 2 s, 8 failed attempts in a row
/// (about 7 s without a connection).
pub const RECONNECT: ReconnectPolicy = ReconnectPolicy {
    first_wait: Duration::from_millis(50),
    longest_wait: Duration::from_secs(2),
    attempts: 8,
};

impl ReconnectPolicy {
    /// The wait before the next attempt after `failed` failed attempts in a row since the end,
    /// or `None`: give up.
    pub fn wait_after(&self, failed: u32) -> Option<Duration> {
        if failed >= self.attempts {
            return None;
        }
        let doubled = self.first_wait.saturating_mul(1u32.checked_shl(failed).unwrap_or(u32::MAX));
        Some(doubled.min(self.longest_wait))
    }
}

/// What a watch's connections went through, for the report: the ends before the run stopped
/// it (the first [`ENDS_KEPT`] reasons kept, and the last), the reconnects that subscribed
/// again, whether it gave up, and what was found by a catch-up after a reconnect.
#[derive(Debug, Default)]
pub struct WatchHealth {
    ends: AtomicU64,
    reconnects: AtomicU64,
    caught_up: AtomicU64,
    /// A catch-up is under way (one at a time).
    catching_up: AtomicBool,
    gave_up: AtomicBool,
    reasons: Mutex<EndReasons>,
}

#[derive(Debug, Default)]
struct EndReasons {
    first: Vec<String>,
    last: Option<String>,
    /// Why the last attempt to reconnect failed, if none succeeded since the last end.
    failed_since: Option<String>,
}

impl WatchHealth {
    /// Connections that ended before the run stopped the watch (failed reconnects apart).
    pub fn ends(&self) -> u64 {
        self.ends.load(Ordering::Relaxed)
    }

    /// Connections opened again whose subscriptions the node took again.
    pub fn reconnects(&self) -> u64 {
        self.reconnects.load(Ordering::Relaxed)
    }

    /// What a catch-up after a reconnect found (Solana: landings a status check found).
    pub fn caught_up(&self) -> u64 {
        self.caught_up.load(Ordering::Relaxed)
    }

    /// Whether the watch ran out of reconnect attempts.
    pub fn gave_up(&self) -> bool {
        self.gave_up.load(Ordering::Relaxed)
    }

    /// The reasons of the first [`ENDS_KEPT`] ends.
    pub fn first_ends(&self) -> Vec<String> {
        self.reasons.lock().map(|reasons| reasons.first.clone()).unwrap_or_default()
    }

    /// The reason of the last end, if any, and why the last attempt to reconnect failed if
    /// none succeeded since.
    pub fn last_end(&self) -> Option<String> {
        let reasons = self.reasons.lock().ok()?;
        let last = reasons.last.clone()?;
        Some(match &reasons.failed_since {
            Some(failed) => format!("{last}; reconnecting failed: {failed}"),
            None => last,
        })
    }

    fn note_end(&self, reason: String) {
        self.ends.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut reasons) = self.reasons.lock() {
            if reasons.first.len() < ENDS_KEPT {
                reasons.first.push(reason.clone());
            }
            reasons.last = Some(reason);
            reasons.failed_since = None;
        }
    }

    fn note_failed_attempt(&self, reason: String) {
        if let Ok(mut reasons) = self.reasons.lock() {
            reasons.failed_since = Some(reason);
        }
    }

    fn note_reconnect(&self) {
        self.reconnects.fetch_add(1, Ordering::Relaxed);
        if let Ok(mut reasons) = self.reasons.lock() {
            reasons.failed_since = None;
        }
    }

    /// Whether a catch-up may start now (none is under way); then it is, until
    /// [`WatchHealth::caught_up_with`].
    pub(crate) fn begin_catch_up(&self) -> bool {
        !self.catching_up.swap(true, Ordering::AcqRel)
    }

    /// The catch-up under way is over: it found `found`.
    pub(crate) fn caught_up_with(&self, found: u64) {
        self.caught_up.fetch_add(found, Ordering::Relaxed);
        self.catching_up.store(false, Ordering::Release);
    }
}

/// What a watch's end says, for the run's stderr and report.
pub(crate) fn ended_text(end: FeedEnd, detail: Option<&str>) -> String {
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

/// The reasons common to every watch that could not start.
pub(crate) trait WatchStartError: fmt::Display + Send + 'static {
    /// The URL is not a WebSocket URL this build can open.
    fn url(reason: String) -> Self;
    /// The connection could not be opened.
    fn connect(reason: String) -> Self;
    /// The watch's thread could not start.
    fn thread(err: std::io::Error) -> Self;
    /// The watch ended before it said whether it started.
    fn ended_early() -> Self;
}

/// How a watch's time on one connection ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum FeedRound {
    /// The run stopped the watch, or the first connection could not start it (said on
    /// `started`): nothing more to do.
    Over,
    /// The connection ended after the watch subscribed on it: why.
    Ended(String),
    /// A connection opened again could not subscribe again (refused, or it ended first): why.
    Failed(String),
}

/// The watch's ends inside its thread.
pub(crate) struct WatchEnds<T, E> {
    /// Where what it sees goes.
    pub(crate) seen: Sender<T>,
    /// Where it says it started (once), or why not.
    started: Sender<Result<(), E>>,
    /// Whether it said it started.
    said_started: Cell<bool>,
    /// Set when the run stops it.
    pub(crate) stop: Arc<AtomicBool>,
    /// Its connections' ends and reconnects.
    pub(crate) health: Arc<WatchHealth>,
}

impl<T, E: WatchStartError> WatchEnds<T, E> {
    /// The ends of a watch reporting on `seen` and `started`, stopped by `stop`.
    pub(crate) fn new(seen: Sender<T>, started: Sender<Result<(), E>>, stop: Arc<AtomicBool>) -> Self {
        WatchEnds { seen, started, said_started: Cell::new(false), stop, health: Arc::default() }
    }

    /// Whether the run stopped the watch.
    pub(crate) fn stopped(&self) -> bool {
        self.stop.load(Ordering::Relaxed)
    }

    /// Whether this connection is one opened again after an end.
    pub(crate) fn reconnecting(&self) -> bool {
        self.said_started.get()
    }

    /// The node took the watch's subscription on this connection: on the first, the watch
    /// started; on one opened again, a reconnect.
    pub(crate) fn subscribed(&self) {
        if self.said_started.replace(true) {
            self.health.note_reconnect();
        } else {
            let _ = self.started.send(Ok(()));
        }
    }

    /// The watch could not subscribe on this connection (`err`): on the first, it did not
    /// start (the caller hears why); on one opened again, a failed attempt.
    pub(crate) fn not_subscribed(&self, err: E) -> FeedRound {
        if self.said_started.get() {
            FeedRound::Failed(err.to_string())
        } else {
            let _ = self.started.send(Err(err));
            FeedRound::Over
        }
    }

    /// Waits until `until` or the stop, whichever is first.
    pub(crate) async fn wait_until(&self, until: tokio::time::Instant) {
        while !self.stopped() {
            let now = tokio::time::Instant::now();
            if now >= until {
                return;
            }
            tokio::time::sleep((until - now).min(STOP_CHECK)).await;
        }
    }

    /// Resolves once the run stopped the watch.
    async fn stopping(&self) {
        while !self.stopped() {
            tokio::time::sleep(STOP_CHECK).await;
        }
    }
}

/// A chain's watch: what it does on each feed opened, between connections and at the end.
pub(crate) trait WatchOnFeed: Send + 'static {
    /// What it sees (a head, a landing).
    type Seen: Send + 'static;
    /// Why it could not start.
    type Error: WatchStartError;

    /// Subscribes on `feed` (says so with [`WatchEnds::subscribed`], or why not with
    /// [`WatchEnds::not_subscribed`]) and watches until stopped or the feed ends.
    fn watch<F: Feed>(
        &mut self,
        feed: F,
        ends: &WatchEnds<Self::Seen, Self::Error>,
    ) -> impl Future<Output = FeedRound>;

    /// Without a connection, until `until` (or the stop): by default it only waits.
    fn between(
        &mut self,
        ends: &WatchEnds<Self::Seen, Self::Error>,
        until: tokio::time::Instant,
    ) -> impl Future<Output = ()> {
        ends.wait_until(until)
    }

    /// The reconnect attempts ran out: what it does until the run stops it (by default it
    /// waits).
    fn gave_up(&mut self, ends: &WatchEnds<Self::Seen, Self::Error>) -> impl Future<Output = ()> {
        ends.stopping()
    }
}

/// A running watch: its thread, what it saw not yet drained, its connections' health.
#[derive(Debug)]
pub(crate) struct FeedWatch<T> {
    seen: Receiver<T>,
    stop: Arc<AtomicBool>,
    health: Arc<WatchHealth>,
    thread: Option<JoinHandle<()>>,
}

impl<T: Send + 'static> FeedWatch<T> {
    /// Opens `ws_url` on a thread named `name` and runs `watch` on it, reconnecting by
    /// [`RECONNECT`]; returns once the watch said it started.
    pub(crate) fn start<W: WatchOnFeed<Seen = T>>(
        name: &str,
        ws_url: &str,
        headers: &[(String, String)],
        connect_timeout: Duration,
        watch: W,
    ) -> Result<FeedWatch<T>, W::Error> {
        let headers = headers.to_vec();
        let target = Target::parse(ws_url).map_err(|err| W::Error::url(err.to_string()))?;
        let (seen_in, seen) = channel();
        let (started_in, started) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let ends = WatchEnds::new(seen_in, started_in, stop.clone());
        let health = ends.health.clone();
        // A watch reads in the core's free time (arrivals keep the kernel's receive stamp).
        let thread = crate::util::thread_class::spawn_helper(name, move || {
            let tls = TlsOptions::default();
            let settings = WireSettings {
                target: &target,
                headers: &headers,
                tls: &tls,
                connect_timeout,
                http: HttpVersion::Http1,
                keepalive: true,
                streams: 1,
                in_flight: 1,
                max_body: 1 << 20,
            };
            match FeedWire::select(&settings, None) {
                Ok(wire) => wire.with(OnFeed { watch, ends, policy: RECONNECT }),
                Err(err) => {
                    let _ = ends.started.send(Err(W::Error::url(err.to_string())));
                }
            }
        })
        .map_err(W::Error::thread)?;
        match started.recv() {
            Ok(Ok(())) => Ok(FeedWatch { seen, stop, health, thread: Some(thread) }),
            Ok(Err(err)) => Err(err),
            Err(_) => Err(W::Error::ended_early()),
        }
    }

    /// What it saw since the last call.
    pub(crate) fn drain(&self) -> Vec<T> {
        self.seen.try_iter().collect()
    }

    /// Its connections' ends and reconnects so far.
    pub(crate) fn health(&self) -> &Arc<WatchHealth> {
        &self.health
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
    policy: ReconnectPolicy,
}

impl<W: WatchOnFeed> UseFeed for OnFeed<W> {
    type Output = ();

    fn use_feed<O: FeedOpener + Clone + 'static>(self, opener: &O) {
        let OnFeed { mut watch, ends, policy } = self;
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            let _ = ends.started.send(Err(W::Error::connect("no runtime".into())));
            return;
        };
        runtime.block_on(watch_reconnecting(&mut watch, &ends, policy, || opener.open()));
    }
}

/// Runs `watch` on the feeds `open` gives: the first (whose failure to open is the watch's
/// failure to start), then, each time one ends before the run stops the watch, another after
/// `policy`'s wait, until the attempts run out or the run stops it.
async fn watch_reconnecting<W, F, E, O, Opening>(
    watch: &mut W,
    ends: &WatchEnds<W::Seen, W::Error>,
    policy: ReconnectPolicy,
    open: O,
) where
    W: WatchOnFeed,
    F: Feed,
    E: fmt::Display,
    O: Fn() -> Opening,
    Opening: Future<Output = Result<F, E>>,
{
    let mut round = match open().await {
        Ok(feed) => watch.watch(feed, ends).await,
        Err(err) => {
            let _ = ends.started.send(Err(W::Error::connect(err.to_string())));
            return;
        }
    };
    let mut failed = 0u32;
    loop {
        match round {
            FeedRound::Over => return,
            FeedRound::Ended(reason) => {
                ends.health.note_end(reason);
                failed = 0;
            }
            FeedRound::Failed(reason) => {
                ends.health.note_failed_attempt(reason);
                failed += 1;
            }
        }
        if ends.stopped() {
            return;
        }
        let Some(wait) = policy.wait_after(failed) else {
            ends.health.gave_up.store(true, Ordering::Relaxed);
            watch.gave_up(ends).await;
            return;
        };
        watch.between(ends, tokio::time::Instant::now() + wait).await;
        if ends.stopped() {
            return;
        }
        // The stop is heard while the connection opens (a Ctrl-C does not wait for it).
        let opened = tokio::select! {
            opened = open() => opened,
            () = ends.stopping() => return,
        };
        round = match opened {
            Ok(feed) => watch.watch(feed, ends).await,
            Err(err) => FeedRound::Failed(format!("cannot connect again: {err}")),
        };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::transport::feed::{FeedEvent, SubscribeCall};
    use std::collections::VecDeque;

    #[test]
    fn the_reconnect_wait_doubles_to_its_cap_and_gives_up_after_the_stated_attempts() {
        let waits: Vec<Option<u64>> =
            (0..10).map(|failed| RECONNECT.wait_after(failed).map(|wait| wait.as_millis() as u64)).collect();
        assert_eq!(
            waits,
            [
                Some(50),
                Some(100),
                Some(200),
                Some(400),
                Some(800),
                Some(1600),
                Some(2000),
                Some(2000),
                None,
                None
            ]
        );
        let huge = ReconnectPolicy { attempts: u32::MAX, ..RECONNECT };
        assert_eq!(huge.wait_after(40), Some(Duration::from_secs(2)), "no overflow past 32 doublings");
    }

    #[test]
    fn one_catch_up_at_a_time_and_what_each_found_is_added() {
        let health = WatchHealth::default();
        assert!(health.begin_catch_up());
        assert!(!health.begin_catch_up(), "a second waits for the first");
        health.caught_up_with(3);
        assert!(health.begin_catch_up());
        health.caught_up_with(2);
        assert_eq!(health.caught_up(), 5);
    }

    #[derive(Debug)]
    struct Refusal(String);

    impl fmt::Display for Refusal {
        fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
            f.write_str(&self.0)
        }
    }

    impl WatchStartError for Refusal {
        fn url(reason: String) -> Self {
            Refusal(reason)
        }
        fn connect(reason: String) -> Self {
            Refusal(reason)
        }
        fn thread(err: std::io::Error) -> Self {
            Refusal(err.to_string())
        }
        fn ended_early() -> Self {
            Refusal("ended early".into())
        }
    }

    /// A feed that ends at once (its watch subscribes, then sees the end).
    struct EndingFeed;

    impl Feed for EndingFeed {
        async fn subscribe(&mut self, _position: usize, _call: &SubscribeCall) -> Result<(), FeedEnd> {
            Ok(())
        }
        async fn unsubscribe(&mut self, _position: usize) -> Result<bool, FeedEnd> {
            Ok(false)
        }
        async fn next(&mut self) -> FeedEvent {
            FeedEvent::Ended(FeedEnd::Closed(1001))
        }
        async fn close(&mut self) {}
    }

    /// Subscribes on every feed, and counts its rounds and waits between them.
    #[derive(Default)]
    struct CountingWatch {
        rounds: u32,
        waits: u32,
        gave_up: bool,
    }

    impl WatchOnFeed for CountingWatch {
        type Seen = ();
        type Error = Refusal;

        async fn watch<F: Feed>(&mut self, mut feed: F, ends: &WatchEnds<(), Refusal>) -> FeedRound {
            self.rounds += 1;
            ends.subscribed();
            match feed.next().await {
                FeedEvent::Ended(end) => FeedRound::Ended(ended_text(end, None)),
                _ => FeedRound::Over,
            }
        }

        async fn between(&mut self, ends: &WatchEnds<(), Refusal>, until: tokio::time::Instant) {
            self.waits += 1;
            ends.wait_until(until).await;
        }

        async fn gave_up(&mut self, _ends: &WatchEnds<(), Refusal>) {
            self.gave_up = true;
        }
    }

    fn run(opens: VecDeque<bool>, policy: ReconnectPolicy) -> (CountingWatch, Arc<WatchHealth>, bool) {
        let (seen, _seen_out) = channel();
        let (started, said) = channel();
        let ends = WatchEnds::new(seen, started, Arc::new(AtomicBool::new(false)));
        let opens = std::sync::Mutex::new(opens);
        let mut watch = CountingWatch::default();
        let runtime = tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap();
        let open = || {
            let next = opens.lock().unwrap().pop_front();
            async move {
                match next {
                    Some(true) => Ok(EndingFeed),
                    Some(false) | None => Err("refused"),
                }
            }
        };
        runtime.block_on(watch_reconnecting(&mut watch, &ends, policy, open));
        let started = matches!(said.try_recv(), Ok(Ok(())));
        (watch, ends.health.clone(), started)
    }

    #[test]
    fn a_watch_whose_connections_end_reconnects_then_gives_up_after_the_failed_attempts_in_a_row() {
        let policy = ReconnectPolicy {
            first_wait: Duration::from_millis(1),
            longest_wait: Duration::from_millis(2),
            attempts: 3,
        };
        // Opens: the first, two reconnects that subscribe again, then every attempt refused.
        let (watch, health, started) = run([true, true, true].into(), policy);
        assert!(started);
        assert_eq!((watch.rounds, health.ends(), health.reconnects()), (3, 3, 2));
        assert_eq!(watch.waits, 3 + 2, "a wait after each end, and after each failed attempt but the last");
        assert!(watch.gave_up && health.gave_up());
        assert_eq!(health.first_ends().len(), 3);
        assert_eq!(
            health.last_end().as_deref(),
            Some("the node closed the connection with code 1001; reconnecting failed: cannot connect again: refused")
        );
    }

    #[test]
    fn a_watch_whose_first_connection_fails_does_not_start_and_does_not_retry() {
        let (watch, health, started) = run([false, true].into(), RECONNECT);
        assert!(!started);
        assert_eq!((watch.rounds, watch.waits, health.ends(), health.reconnects()), (0, 0, 0, 0));
    }
}
