//! Subscriptions (`rpcbench subscribe`): many subscribers to newHeads, logs, pending
//! transactions, slots or accounts, and what they received: subscribe latency, notifications
//! and bytes per second, delivery lag, and per-subscription correctness (gaps, duplicates,
//! reorders, closes by the server).
//!
//! Delivery lag is measured two ways. **Fan-out lag**: the time from the earliest arrival of an
//! item (the same block number, slot, log or transaction) at any subscriber to its arrival at
//! this one; it needs no clock on the node. **Production lag**: arrival minus the time the item
//! says it was produced: the mock nodes' `rpcbenchProducedAt` (unix microseconds, exact), else an
//! Ethereum header's `timestamp` (whole seconds, so second precision). An item produced after
//! it arrived by our clock (the node's clock runs ahead) is counted apart.
//!
//! The rooms: this file is the driver (settings, the socket schedule, one thread with a
//! current-thread runtime running one task per socket); [`kinds`] says what each subscription
//! asks for and how its items are read, one file per chain; `collector` counts and makes the
//! report. The wire is a `Feed` (`crate::transport::feed`): the driver is generic over it, and
//! WebSocket is the one it opens today.

mod collector;
pub mod filter_file;
pub mod kinds;
pub mod race;
pub mod slot_stages;

use std::cell::RefCell;
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::engine::select::{FeedWire, SelectError, UseFeed, WireSettings};
use crate::engine::stages::{LevelCurve, Stage};
use crate::engine::StopHandle;
use crate::record::record_us;
use crate::report::subscribe::SubscribeReport;
use crate::settings::{Field, SettingError, Target, TlsOptions};
use crate::transport::feed::{Feed, FeedEnd, FeedEvent, FeedOpener, Stray, SubscribeCall};

use collector::{Collector, ServerClose};
pub use kinds::SubscriptionKind;

/// Everything a subscription run needs.
#[derive(Debug, Clone)]
pub struct SubscribeConfig {
    /// The `ws://` or `wss://` endpoint.
    pub target: Target,
    /// What each subscriber subscribes to (one subscription of each).
    pub kinds: Vec<SubscriptionKind>,
    /// Subscribers.
    pub subscribers: usize,
    /// Subscriptions per socket.
    pub subs_per_socket: usize,
    /// How long to listen after the subscriptions are requested.
    pub duration: Duration,
    /// Headers sent with every upgrade.
    pub headers: Vec<(String, String)>,
    /// TLS settings (wss).
    pub tls: TlsOptions,
    /// Time allowed to connect and upgrade.
    pub connect_timeout: Duration,
    /// Time allowed for a subscribe request's answer.
    pub timeout: Duration,
    /// Re-open a socket the server closed, and subscribe again.
    pub reconnect: bool,
    /// Largest message accepted.
    pub max_message: usize,
    /// Where to publish live figures once a second (`--metrics-listen`).
    pub live: Option<crate::metrics::LiveMetrics>,
    /// Spread the sockets' subscriptions evenly over this long from the start (`--ramp`)
    /// instead of requesting them all at once.
    pub ramp: Duration,
    /// Subscribers over time instead (`--stage DUR:N`, each a linear ramp to its level, as k6
    /// stages go): sockets open as the level climbs and unsubscribe and close as it falls,
    /// the last opened first. The duration is then the stages' total, and `subscribers` their
    /// highest level.
    pub stages: Vec<Stage>,
    /// The `x-token` header of a Geyser feed (a secret: never printed).
    pub x_token: Option<crate::transport::grpc::XToken>,
    /// A connection that receives nothing for this long is a stall: closed, counted, and
    /// opened again with `reconnect` (`None`: wait for ever).
    pub idle_timeout: Option<Duration>,
    /// After a reconnect, resubscribe a Geyser feed from the slot after the last one seen
    /// (`from_slot`): what the server replays is backfill. A server that refuses it is asked
    /// again without it.
    pub from_slot: bool,
}

/// The most subscriptions one run may hold.
pub const MAX_SUBSCRIPTIONS: usize = 1_000_000;

impl SubscribeConfig {
    /// A run of `duration` with one subscriber and one subscription per socket.
    pub fn new(target: Target, kinds: Vec<SubscriptionKind>, duration: Duration) -> Self {
        Self {
            target,
            kinds,
            subscribers: 1,
            subs_per_socket: 1,
            duration,
            headers: Vec::new(),
            tls: TlsOptions::default(),
            connect_timeout: Duration::from_secs(3),
            timeout: Duration::from_secs(5),
            reconnect: false,
            max_message: 16 * 1024 * 1024,
            live: None,
            ramp: Duration::ZERO,
            stages: Vec::new(),
            x_token: None,
            idle_timeout: None,
            from_slot: true,
        }
    }

    /// Checks the settings, naming the flag at fault.
    pub fn validate(&self) -> Result<(), SettingError> {
        if !self.target.websocket && !self.target.grpc {
            return Err(SettingError::new(
                Field::Url,
                "subscriptions need a ws:// or wss:// URL (or grpc:// or grpcs:// for a Geyser feed)",
            ));
        }
        if let Some(kind) = self.kinds.iter().find(|kind| kind.is_geyser() != self.target.grpc) {
            let wanted =
                if self.target.grpc { "a Geyser kind (geyser-slot, geyser-tx...)" } else { "a ws:// kind" };
            return Err(SettingError::new(
                Field::Subscriptions,
                format!("'{}' does not fit this URL: give {wanted}", kind.name()),
            ));
        }
        if self.x_token.is_some() && !self.target.grpc {
            return Err(SettingError::new(
                Field::XToken,
                "an x-token goes to grpc:// or grpcs:// feeds only",
            ));
        }
        if self.kinds.is_empty() {
            return Err(SettingError::mentioning(
                Field::Subscriptions,
                "give at least one subscription, such as {} newHeads",
                &[Field::Subscriptions],
            ));
        }
        if self.subscribers == 0 {
            return Err(SettingError::new(Field::Subscribers, "must be at least 1"));
        }
        if self.subs_per_socket == 0 {
            return Err(SettingError::new(Field::SubscriptionsPerSocket, "must be at least 1"));
        }
        if self.subscribers.saturating_mul(self.kinds.len()) > MAX_SUBSCRIPTIONS {
            return Err(SettingError::new(
                Field::Subscribers,
                format!("at most {MAX_SUBSCRIPTIONS} subscriptions in all"),
            ));
        }
        if self.duration.is_zero() {
            return Err(SettingError::new(Field::Duration, "must be longer than zero"));
        }
        if self.idle_timeout.is_some_and(|idle| idle.is_zero()) {
            return Err(SettingError::new(Field::IdleTimeout, "must be longer than zero"));
        }
        if self.ramp >= self.duration {
            return Err(SettingError::new(Field::Ramp, "must be shorter than the duration"));
        }
        if !self.stages.is_empty() {
            if !self.ramp.is_zero() {
                return Err(SettingError::mentioning(
                    Field::Stages,
                    "give stages or {}, not both",
                    &[Field::Ramp],
                ));
            }
            let total: Duration = self.stages.iter().map(|stage| stage.duration).sum();
            if total != self.duration {
                return Err(SettingError::new(
                    Field::Stages,
                    "the stages' durations must add up to the duration",
                ));
            }
            let highest = self.stages.iter().map(|stage| stage.level).fold(0.0, f64::max);
            if highest < 1.0 || highest.ceil() as usize > self.subscribers {
                return Err(SettingError::new(
                    Field::Stages,
                    format!("the highest stage must be between 1 and {} subscribers", self.subscribers),
                ));
            }
        }
        Ok(())
    }

    /// When each socket is open: for socket i, the (open, close) offsets from the start, `None`
    /// meaning "until the end" (a close at the duration is a planned leave at the end: a stage
    /// down to 0 leaves nothing active). A pure function of the settings.
    fn socket_windows(&self) -> Vec<Vec<(Duration, Option<Duration>)>> {
        let sockets = self.subscriptions().div_ceil(self.subs_per_socket);
        if self.stages.is_empty() {
            // Socket i of n opens at i/n of the ramp.
            return (0..sockets)
                .map(|socket| vec![(self.ramp.mul_f64(socket as f64 / sockets as f64), None)])
                .collect();
        }
        let curve = LevelCurve::from_stages(&self.stages, Duration::ZERO);
        let per_subscriber = self.kinds.len() as f64 / self.subs_per_socket as f64;
        let mut windows: Vec<Vec<(Duration, Option<Duration>)>> = vec![Vec::new(); sockets];
        let mut open = 0usize;
        let mut opened_at = vec![Duration::ZERO; sockets];
        let mut time = Duration::ZERO;
        loop {
            let level = curve.level_at(time.as_secs_f64()) * per_subscriber;
            let wanted = ((level - 1e-9).ceil().max(0.0) as usize).min(sockets);
            if wanted > open {
                opened_at[open..wanted].fill(time);
            }
            for socket in wanted..open {
                windows[socket].push((opened_at[socket], Some(time)));
            }
            open = wanted;
            if time >= self.duration {
                break;
            }
            time = (time + SCHEDULE_STEP).min(self.duration);
        }
        for socket in 0..open {
            windows[socket].push((opened_at[socket], None));
        }
        windows
    }

    /// Every subscription of the run, in order: subscriber by subscriber, kind by kind.
    pub(crate) fn subscriptions(&self) -> usize {
        self.subscribers * self.kinds.len()
    }
}

/// The resolution of the stages' socket schedule.
const SCHEDULE_STEP: Duration = Duration::from_millis(10);

/// Why a subscription run could not start.
#[derive(Debug)]
pub enum SubscribeError {
    /// A setting is not usable.
    Config(SettingError),
    /// The target could not be resolved or TLS prepared.
    Setup(String),
    /// The runtime could not start.
    Runtime(std::io::Error),
}

impl fmt::Display for SubscribeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            SubscribeError::Config(err) => err.fmt(f),
            SubscribeError::Setup(message) => f.write_str(message),
            SubscribeError::Runtime(err) => write!(f, "cannot start: {err}"),
        }
    }
}

impl std::error::Error for SubscribeError {}

/// Runs the subscriptions until the duration is over (or `stop`), then reports.
pub fn run(config: &SubscribeConfig, stop: &StopHandle) -> Result<SubscribeReport, SubscribeError> {
    config.validate().map_err(SubscribeError::Config)?;
    let settings = WireSettings {
        target: &config.target,
        headers: &config.headers,
        tls: &config.tls,
        connect_timeout: config.connect_timeout,
        http: crate::engine::config::HttpVersion::Http1,
        keepalive: true,
        streams: 1,
        in_flight: 1,
        max_body: config.max_message as u64,
    };
    let wire = FeedWire::select(&settings, config.x_token.as_ref()).map_err(|err| match err {
        SelectError::Setting(err) => SubscribeError::Config(err),
        SelectError::Setup(err) => match err.as_setting() {
            Some(setting) => SubscribeError::Config(setting),
            None => SubscribeError::Setup(err.to_string()),
        },
        other => SubscribeError::Setup(other.to_string()),
    })?;
    wire.with(Feeds { config, stop })
}

/// The subscriptions of a run over whichever feed wire was chosen.
struct Feeds<'a> {
    config: &'a SubscribeConfig,
    stop: &'a StopHandle,
}

impl UseFeed for Feeds<'_> {
    type Output = Result<SubscribeReport, SubscribeError>;

    fn use_feed<O: FeedOpener + Clone + 'static>(self, opener: &O) -> Self::Output {
        run_feeds(self.config, self.stop, opener)
    }
}

/// [`run`] over the feeds `opener` opens.
fn run_feeds<O>(
    config: &SubscribeConfig,
    stop: &StopHandle,
    opener: &O,
) -> Result<SubscribeReport, SubscribeError>
where
    O: FeedOpener + Clone + 'static,
{
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SubscribeError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    let started_at = crate::results::rfc3339(SystemTime::now());
    let start = Instant::now();
    let collector = Rc::new(RefCell::new(Collector::new(config, start)));
    let end = start + config.duration;
    let windows = config.socket_windows();
    let shared = Arc::new(config.clone());
    let (wind_down, winding) = tokio::sync::watch::channel(false);
    let mut measured_end = end;
    local.block_on(&runtime, async {
        let mut tasks = Vec::with_capacity(windows.len());
        for (socket, windows) in windows.into_iter().enumerate().filter(|(_, windows)| !windows.is_empty()) {
            let first = socket * config.subs_per_socket;
            let last = (first + config.subs_per_socket).min(config.subscriptions());
            let windows = windows
                .into_iter()
                .map(|(open, close)| (start + open, close.map(|close| start + close)))
                .collect();
            tasks.push(tokio::task::spawn_local(socket_task(
                shared.clone(),
                opener.clone(),
                first..last,
                collector.clone(),
                windows,
                winding.clone(),
            )));
        }
        let mut published = Instant::now();
        while Instant::now() < end && !stop.is_stopped() {
            tokio::time::sleep(Duration::from_millis(20).min(end.saturating_duration_since(Instant::now())))
                .await;
            if published.elapsed() >= crate::engine::PUBLISH_INTERVAL {
                published = Instant::now();
                publish(config, &collector.borrow());
            }
        }
        measured_end = Instant::now().min(end);
        collector.borrow_mut().end_measuring(measured_end);
        // Every socket unsubscribes and reads what was sent before its answers (bounded).
        let _ = wind_down.send(true);
        let _ = tokio::time::timeout(UNSUBSCRIBE_WAIT + CLOSE_GRACE * 2, async {
            for task in tasks {
                let _ = task.await;
            }
        })
        .await;
    });
    publish(config, &collector.borrow());
    drop(local);
    let elapsed = measured_end.saturating_duration_since(start);
    let collector = collector.borrow();
    Ok(collector::report(config, &collector, elapsed, stop.is_stopped(), started_at))
}

/// Publishes the figures so far to the live metrics, if any.
fn publish(config: &SubscribeConfig, collector: &Collector) {
    if let Some(live) = &config.live {
        live.publish_subscription(collector.live_figures());
    }
}

/// How long, at the end of a run, a socket waits for the answers to its unsubscribe requests
/// (reading the notifications sent before them).
const UNSUBSCRIBE_WAIT: Duration = Duration::from_secs(2);
/// How long a socket keeps reading after its last unsubscribe answer, for notifications a
/// server sends late (fan-out delays), before it closes.
const CLOSE_GRACE: Duration = Duration::from_millis(100);

/// Whether the run is winding down (`true` once its measured time is over).
type WindDown = tokio::sync::watch::Receiver<bool>;

fn winding_down(wind_down: &WindDown) -> bool {
    *wind_down.borrow()
}

/// One socket: in each of its windows (open, close: `None` is the end of the run), connect,
/// subscribe its share, read, then unsubscribe and read what was sent before the answers; with
/// `reconnect`, open it again after the server closes it.
async fn socket_task<O: FeedOpener>(
    config: Arc<SubscribeConfig>,
    opener: O,
    share: std::ops::Range<usize>,
    collector: Rc<RefCell<Collector>>,
    windows: Vec<(Instant, Option<Instant>)>,
    mut wind_down: WindDown,
) {
    let mut reopening = false;
    for (opens_at, leaves_at) in windows {
        tokio::select! {
            () = tokio::time::sleep_until(opens_at.into()) => {}
            _ = wind_down.wait_for(|down| *down) => return,
        }
        {
            let mut counts = collector.borrow_mut();
            for index in share.clone() {
                counts.subscriptions[index].planned_leave = leaves_at;
            }
        }
        loop {
            if winding_down(&wind_down) {
                return;
            }
            let ended = serve_socket(
                &config,
                &opener,
                share.clone(),
                &collector,
                wind_down.clone(),
                leaves_at,
                reopening,
            )
            .await;
            reopening = true;
            {
                let mut counts = collector.borrow_mut();
                for index in share.clone() {
                    counts.set_active(index, false);
                }
                match ended {
                    SocketEnd::Closed(code) => {
                        *counts.closed_by_server.entry(ServerClose::WebSocket(code)).or_default() += 1;
                    }
                    SocketEnd::Status(code) => {
                        *counts.closed_by_server.entry(ServerClose::Grpc(code)).or_default() += 1;
                    }
                    SocketEnd::NotReading => counts.closed_not_reading += 1,
                    SocketEnd::Stalled => counts.stalls += 1,
                    SocketEnd::Fault(fault) => {
                        *counts.closed_by_server.entry(ServerClose::Fault(fault)).or_default() += 1;
                    }
                    SocketEnd::NotOpened => {}
                    SocketEnd::TimeUp => return,
                    SocketEnd::Left => {
                        // A planned leave: the next window's subscriptions start a new sequence.
                        let now = Instant::now();
                        for index in share.clone() {
                            counts.subscriptions[index].leave(now);
                        }
                    }
                }
            }
            if matches!(ended, SocketEnd::Left) {
                // Re-opening in a later window is not a reconnect.
                reopening = false;
                break;
            }
            if !config.reconnect || leaves_at.is_some_and(|at| Instant::now() >= at) {
                break;
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(50)) => {}
                _ = wind_down.wait_for(|down| *down) => return,
            }
        }
    }
}

/// How a socket's life ended.
enum SocketEnd {
    /// The run's time was up.
    TimeUp,
    /// The server closed it, with this close code (1006: without a close frame or on a broken
    /// frame).
    Closed(u16),
    /// A gRPC stream ended with this status code.
    Status(u8),
    /// The server stopped reading (its PINGs' answers backed up): rpcbench closed it.
    NotReading,
    /// It could not be opened (connect or upgrade failed; counted as a connect error).
    NotOpened,
    /// Its window of the stages closed: it unsubscribed and closed.
    Left,
    /// Nothing arrived for the idle timeout: rpcbench closed it.
    Stalled,
    /// A gRPC connection ended by a fault of the server's: a GOAWAY, a message over the
    /// limit, a frame that is not gRPC's or an update that is not protobuf.
    Fault(GrpcFault),
}

/// How a gRPC server broke a stream, as reports count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum GrpcFault {
    /// An HTTP/2 GOAWAY ended it.
    GoAway,
    /// The connection closed or reset under it, without a status.
    Lost,
    /// A message longer than `--max-message` (refused from its length prefix).
    TooLarge,
    /// Not gRPC framing, or an update that is not protobuf.
    Malformed,
}

impl fmt::Display for GrpcFault {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            GrpcFault::GoAway => "grpc goaway",
            GrpcFault::Lost => "grpc connection lost mid-stream",
            GrpcFault::TooLarge => "grpc message too large",
            GrpcFault::Malformed => "grpc malformed message",
        })
    }
}

/// How a feed's end is counted: a gRPC fault by its cause, the rest as before the gRPC feed
/// (a broken or oversized WebSocket message ends the socket as 1006).
fn socket_end(end: FeedEnd, grpc: bool) -> SocketEnd {
    match (end, grpc) {
        (FeedEnd::GoAway, _) => SocketEnd::Fault(GrpcFault::GoAway),
        (FeedEnd::Lost, true) => SocketEnd::Fault(GrpcFault::Lost),
        (FeedEnd::TooLarge, true) => SocketEnd::Fault(GrpcFault::TooLarge),
        (FeedEnd::Protocol, true) => SocketEnd::Fault(GrpcFault::Malformed),
        (end, _) => end.into(),
    }
}

impl From<FeedEnd> for SocketEnd {
    fn from(end: FeedEnd) -> Self {
        match end {
            FeedEnd::Closed(code) => SocketEnd::Closed(code),
            FeedEnd::NotReading => SocketEnd::NotReading,
            FeedEnd::Status(code) => SocketEnd::Status(code),
            // As before the feed seam: a broken or oversized message ends the socket as 1006.
            FeedEnd::Protocol | FeedEnd::TooLarge => SocketEnd::Closed(1006),
            FeedEnd::GoAway => SocketEnd::Fault(GrpcFault::GoAway),
            FeedEnd::Lost => SocketEnd::Closed(1006),
        }
    }
}

/// Connects, subscribes and reads until the run's end or the server closes the socket. At the
/// end it unsubscribes every subscription the server confirmed and reads until the answers:
/// a server writes a subscription's notifications before the answer that ends it, so every
/// notification it sent is judged, and a notification it dropped between two sent ones is a
/// gap however close to the end.
async fn serve_socket<O: FeedOpener>(
    config: &SubscribeConfig,
    opener: &O,
    share: std::ops::Range<usize>,
    collector: &Rc<RefCell<Collector>>,
    mut wind_down: WindDown,
    leaves_at: Option<Instant>,
    reopening: bool,
) -> SocketEnd {
    let opened = tokio::select! {
        opened = opener.open() => opened,
        _ = wind_down.wait_for(|down| *down) => return SocketEnd::TimeUp,
    };
    let mut feed = match opened {
        Ok(feed) => feed,
        Err(reason) => {
            {
                let mut counts = collector.borrow_mut();
                counts.connect_errors += 1;
                counts.first_connect_error.get_or_insert(reason.to_string());
            }
            tokio::select! {
                () = tokio::time::sleep(Duration::from_millis(100)) => {}
                _ = wind_down.wait_for(|down| *down) => return SocketEnd::TimeUp,
            }
            return if winding_down(&wind_down) { SocketEnd::TimeUp } else { SocketEnd::NotOpened };
        }
    };
    {
        let mut counts = collector.borrow_mut();
        counts.sockets_opened += 1;
        // A re-open is counted once it succeeded (attempts that failed are connect errors).
        counts.reconnects += u64::from(reopening);
    }
    let grpc = config.target.grpc;
    // Position on the feed = position in the share.
    let mut sent_at: Vec<Option<Instant>> = vec![None; share.len()];
    // Per position, when a resubscription `from_slot` was sent: what was produced before is
    // the server's replay (backfill).
    let mut resumed_at: Vec<Option<SystemTime>> = vec![None; share.len()];
    for (position, index) in share.clone().enumerate() {
        let (mut call, last_slot) = {
            let counts = collector.borrow();
            let state = &counts.subscriptions[index];
            (config.kinds[state.kind].call(), state.last_slot)
        };
        if let (true, true, Some(last), SubscribeCall::Geyser(request)) =
            (reopening, config.from_slot, last_slot, &mut call)
        {
            request.from_slot = Some(last.saturating_add(1));
            resumed_at[position] = Some(SystemTime::now());
        }
        sent_at[position] = Some(Instant::now());
        if let Err(end) = feed.subscribe(position, &call).await {
            return socket_end(end, grpc);
        }
    }
    let idle = tokio::time::sleep(config.idle_timeout.unwrap_or(Duration::MAX / 4));
    tokio::pin!(idle);
    // Unsubscribe requests not answered yet, once winding down.
    let mut unanswered = 0usize;
    let mut draining = false;
    let closing = tokio::time::sleep(Duration::ZERO);
    tokio::pin!(closing);
    let mut closing_armed = false;
    // Resolves when the socket should unsubscribe: its window closes (false) or the run ends (true).
    let leave = async {
        match leaves_at {
            Some(at) => tokio::select! {
                () = tokio::time::sleep_until(at.into()) => false,
                _ = wind_down.wait_for(|down| *down) => true,
            },
            None => {
                let _ = wind_down.wait_for(|down| *down).await;
                true
            }
        }
    };
    tokio::pin!(leave);
    let mut run_over = true;
    loop {
        let event = tokio::select! {
            over = &mut leave, if !draining => {
                run_over = over;
                draining = true;
                if !run_over {
                    // Items due from now on are not this subscription's to miss.
                    let now = Instant::now();
                    let mut counts = collector.borrow_mut();
                    for index in share.clone() {
                        counts.subscriptions[index].begin_leave(now);
                    }
                }
                for position in 0..share.len() {
                    match feed.unsubscribe(position).await {
                        Ok(true) => unanswered += 1,
                        Ok(false) => {}
                        Err(end) => {
                            return if run_over { SocketEnd::TimeUp } else { end.into() };
                        }
                    }
                }
                let wait = if unanswered == 0 { Duration::ZERO } else { UNSUBSCRIBE_WAIT };
                closing.as_mut().reset((Instant::now() + wait).into());
                closing_armed = true;
                continue;
            }
            () = &mut idle, if config.idle_timeout.is_some() && !draining => {
                feed.close().await;
                return SocketEnd::Stalled;
            }
            () = &mut closing, if closing_armed => {
                collector.borrow_mut().unsubscribe_failed += unanswered as u64;
                feed.close().await;
                return if run_over { SocketEnd::TimeUp } else { SocketEnd::Left };
            }
            event = feed.next() => event,
        };
        if let Some(idle_timeout) = config.idle_timeout {
            idle.as_mut().reset((Instant::now() + idle_timeout).into());
        }
        let wall = SystemTime::now();
        let mut resubscribe = None;
        {
            let mut counts = collector.borrow_mut();
            match event {
                FeedEvent::Item(delivery) => {
                    let Some(index) = share.clone().nth(delivery.position) else { continue };
                    let kind = counts.kinds[counts.subscriptions[index].kind].clone();
                    let payload = delivery.payload();
                    let mut item = kind.item(payload);
                    if let Some(at) = delivery.produced {
                        item.produced = Some(kinds::Produced { at, seconds: false });
                    }
                    if grpc {
                        if let Some(slot) = crate::transport::grpc::update_slot(payload) {
                            let last = &mut counts.subscriptions[index].last_slot;
                            *last = Some(last.map_or(slot, |last| last.max(slot)));
                        }
                    }
                    let resumed = resumed_at[delivery.position];
                    if resumed
                        .is_some_and(|resumed| delivery.produced.is_some_and(|produced| produced < resumed))
                    {
                        counts.backfill(index, item, delivery.message.len());
                        continue;
                    }
                    if kind.has_stages() {
                        if let Some((slot, stage)) = kind.slot_stage(payload) {
                            counts.slot_stage(slot, stage, delivery.arrived, delivery.produced);
                        }
                    }
                    counts.notification(index, item, delivery.message.len(), delivery.arrived, wall);
                }
                FeedEvent::Confirmed { position, arrived } => {
                    let Some(sent) = sent_at.get_mut(position).and_then(Option::take) else {
                        counts.unknown_subscription += 1;
                        continue;
                    };
                    let latency = arrived.saturating_duration_since(sent).as_micros() as u64;
                    record_us(&mut counts.subscribe_latency, latency);
                    counts.set_active(share.start + position, true);
                }
                FeedEvent::Refused { position, class, message } => {
                    if resumed_at.get_mut(position).and_then(Option::take).is_some() {
                        // A server without replay (or without that slot) refused `from_slot`: asked
                        // again without it; what it missed meanwhile is gaps.
                        counts.from_slot_refused += 1;
                        let call = counts.kinds[counts.subscriptions[share.start + position].kind].call();
                        resubscribe = Some((position, call));
                    } else if sent_at.get_mut(position).and_then(Option::take).is_some() {
                        counts.refused(share.start + position, class, &message);
                    } else {
                        counts.unknown_subscription += 1;
                    }
                }
                FeedEvent::Unsubscribed { confirmed, .. } => {
                    if !draining {
                        counts.unknown_subscription += 1;
                        continue;
                    }
                    unanswered = unanswered.saturating_sub(1);
                    if confirmed {
                        counts.unsubscribed += 1;
                    } else {
                        counts.unsubscribe_failed += 1;
                    }
                    if unanswered == 0 {
                        closing.as_mut().reset((Instant::now() + CLOSE_GRACE).into());
                    }
                }
                FeedEvent::Stray(Stray::NotJson) => counts.not_json += 1,
                FeedEvent::Stray(Stray::Unknown) => counts.unknown_subscription += 1,
                FeedEvent::Ended(end) => return socket_end(end, grpc),
            }
        }
        if let Some((position, call)) = resubscribe {
            sent_at[position] = Some(Instant::now());
            if let Err(end) = feed.subscribe(position, &call).await {
                return socket_end(end, grpc);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows_ms(config: &SubscribeConfig) -> Vec<Vec<(u64, u64)>> {
        let end = config.duration;
        config
            .socket_windows()
            .iter()
            .map(|w| {
                w.iter().map(|(a, b)| (a.as_millis() as u64, b.unwrap_or(end).as_millis() as u64)).collect()
            })
            .collect()
    }

    fn kind(text: &str) -> SubscriptionKind {
        SubscriptionKind::parse(text).unwrap()
    }

    #[test]
    fn stages_open_sockets_as_the_level_climbs_and_close_the_last_opened_first() {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let stage = |seconds: u64, level: f64| Stage {
            level,
            duration: Duration::from_secs(seconds),
            ramp: Duration::from_secs(seconds),
        };
        let mut config = SubscribeConfig::new(target, vec![kind("newHeads")], Duration::from_secs(4));
        config.subscribers = 4;
        config.subs_per_socket = 2;
        // Up to 4 subscribers (2 sockets) in 1 s, hold 2 s, down to 0 in 1 s.
        config.stages = vec![stage(1, 4.0), stage(2, 4.0), stage(1, 0.0)];
        config.validate().unwrap();
        assert_eq!(windows_ms(&config), [vec![(10, 4000)], vec![(510, 3500)]]);
        // Without stages: socket i of n opens at i/n of the ramp and stays to the end.
        config.stages.clear();
        config.ramp = Duration::from_secs(2);
        assert_eq!(windows_ms(&config), [vec![(0, 4000)], vec![(1000, 4000)]]);
        // Down and up again: the socket comes back in a second window.
        config.ramp = Duration::ZERO;
        config.stages = vec![stage(1, 4.0), stage(1, 2.0), stage(1, 4.0), stage(1, 4.0)];
        assert_eq!(windows_ms(&config), [vec![(10, 4000)], vec![(510, 2000), (2010, 4000)]]);
        // Stages must add up to the duration and fit the subscribers.
        config.duration = Duration::from_secs(5);
        assert_eq!(config.validate().unwrap_err().field, Field::Stages);
        config.duration = Duration::from_secs(4);
        config.subscribers = 3;
        assert_eq!(config.validate().unwrap_err().field, Field::Stages);
    }

    #[test]
    fn a_stage_down_to_zero_plans_a_leave_at_the_end_not_a_stay() {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let stage = |seconds: u64, level: f64| Stage {
            level,
            duration: Duration::from_secs(seconds),
            ramp: Duration::from_secs(seconds),
        };
        let mut config = SubscribeConfig::new(target, vec![kind("newHeads")], Duration::from_secs(6));
        config.subscribers = 20;
        config.subs_per_socket = 2;
        config.stages = vec![stage(2, 20.0), stage(2, 20.0), stage(2, 0.0)];
        config.validate().unwrap();
        let windows = config.socket_windows();
        assert_eq!(windows.len(), 10);
        // Every socket's last window closes by plan, the first opened at the very end.
        assert!(windows.iter().all(|w| w.last().unwrap().1.is_some()), "{windows:?}");
        assert_eq!(windows[0].last().unwrap().1, Some(Duration::from_secs(6)));
        // Held to the end, a socket stays: no planned close.
        config.stages = vec![stage(2, 20.0), stage(4, 20.0)];
        assert!(config.socket_windows().iter().all(|w| w.last().unwrap().1.is_none()));
    }
}
