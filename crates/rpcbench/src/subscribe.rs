//! Subscriptions over WebSocket (`rpcbench subscribe`): many subscribers to newHeads, logs,
//! pending transactions, slots or accounts, and what they received: subscribe latency,
//! notifications and bytes per second, delivery lag, and per-subscription correctness (gaps,
//! duplicates, reorders, closes by the server).
//!
//! Delivery lag is measured two ways. **Fan-out lag**: the time from the earliest arrival of an
//! item (the same block number, slot, log or transaction) at any subscriber to its arrival at
//! this one; it needs no clock on the node. **Production lag**: arrival minus the time the item
//! says it was produced: the mock nodes' `rpcbenchProducedAt` (unix microseconds, exact), else an
//! Ethereum header's `timestamp` (whole seconds, so second precision).
//!
//! One thread with a current-thread runtime runs every socket; each socket is a task that
//! subscribes its share, then reads. Notifications are parsed with borrowed raw values (no JSON
//! tree) and counted in one [`Collector`]: HDR histograms for latencies, counters per
//! subscription, and a bounded table of first arrivals (the oldest items are forgotten first),
//! so memory stays flat however long the run and whatever the server sends.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap, VecDeque};
use std::fmt;
use std::rc::Rc;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use serde::Deserialize;
use serde_json::value::RawValue;
use serde_json::Value;
use tokio_tungstenite::tungstenite::{self, Message};

use crate::engine::stages::{LevelCurve, Stage};
use crate::engine::StopHandle;
use crate::record::{new_histogram, record_us};
use crate::report::subscribe::{
    KindFigures, SubscribeHistograms, SubscribeReport, SubscribeSecond, SILENT_AFTER_ITEMS,
};
use crate::report::LatencyReport;
use crate::settings::{ConfigError, Target, TlsOptions};
use crate::transport::connect::Connector;
use crate::transport::websocket::Upgrade;
use crate::units::parse_hex_quantity;

/// What a subscription asks for.
#[derive(Debug, Clone, PartialEq)]
pub enum SubscriptionKind {
    /// Ethereum `eth_subscribe ["newHeads"]`: one block header per block.
    NewHeads,
    /// Ethereum `eth_subscribe ["logs", FILTER]`.
    Logs(Value),
    /// Ethereum `eth_subscribe ["newPendingTransactions"]`: transaction hashes.
    NewPendingTransactions,
    /// Solana `slotSubscribe`.
    Slot,
    /// Solana `accountSubscribe [PUBKEY]`.
    Account(String),
    /// Solana `logsSubscribe [FILTER]` (`"all"` by default).
    SolanaLogs(Value),
}

impl SubscriptionKind {
    /// Parses `newHeads`, `logs:{"address":"0x…"}`, `newPendingTransactions`, `slot`,
    /// `account:PUBKEY` or `logs-solana[:FILTER]`.
    pub fn parse(text: &str) -> Result<Self, String> {
        let (name, argument) = match text.split_once(':') {
            Some((name, argument)) => (name.trim(), Some(argument.trim())),
            None => (text.trim(), None),
        };
        let json = |argument: Option<&str>, default: Value| -> Result<Value, String> {
            match argument {
                None | Some("") => Ok(default),
                Some(text) => serde_json::from_str(text)
                    .map_err(|err| format!("'{name}': the params are not JSON ({err}): {text}")),
            }
        };
        let kind = match name {
            "newHeads" => SubscriptionKind::NewHeads,
            "logs" => SubscriptionKind::Logs(json(argument, Value::Object(Default::default()))?),
            "newPendingTransactions" => SubscriptionKind::NewPendingTransactions,
            "slot" => SubscriptionKind::Slot,
            "account" => match argument {
                Some(key) if !key.is_empty() => SubscriptionKind::Account(key.to_string()),
                _ => return Err("'account' needs the account: account:PUBKEY".into()),
            },
            "logs-solana" => SubscriptionKind::SolanaLogs(match argument {
                Some(text) if text.starts_with('{') => json(Some(text), Value::Null)?,
                Some(text) if !text.is_empty() => Value::String(text.to_string()),
                _ => Value::String("all".into()),
            }),
            other => {
                return Err(format!(
                    "unknown subscription '{other}' (newHeads, logs[:FILTER], newPendingTransactions, slot, \
                     account:PUBKEY, logs-solana[:FILTER])"
                ))
            }
        };
        if matches!(name, "newHeads" | "newPendingTransactions" | "slot") && argument.is_some() {
            return Err(format!("'{name}' takes no params"));
        }
        Ok(kind)
    }

    /// The name reports use.
    pub fn name(&self) -> &'static str {
        match self {
            SubscriptionKind::NewHeads => "newHeads",
            SubscriptionKind::Logs(_) => "logs",
            SubscriptionKind::NewPendingTransactions => "newPendingTransactions",
            SubscriptionKind::Slot => "slot",
            SubscriptionKind::Account(_) => "account",
            SubscriptionKind::SolanaLogs(_) => "logs-solana",
        }
    }

    /// The subscribe request with id `id`.
    fn request(&self, id: u64) -> String {
        let (method, params) = match self {
            SubscriptionKind::NewHeads => ("eth_subscribe", serde_json::json!(["newHeads"])),
            SubscriptionKind::Logs(filter) => ("eth_subscribe", serde_json::json!(["logs", filter])),
            SubscriptionKind::NewPendingTransactions => {
                ("eth_subscribe", serde_json::json!(["newPendingTransactions"]))
            }
            SubscriptionKind::Slot => ("slotSubscribe", serde_json::json!([])),
            SubscriptionKind::Account(key) => (
                "accountSubscribe",
                serde_json::json!([key, {"encoding": "base64", "commitment": "confirmed"}]),
            ),
            SubscriptionKind::SolanaLogs(filter) => ("logsSubscribe", serde_json::json!([filter])),
        };
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}).to_string()
    }

    /// The request that ends subscription `subscription` (its id as the server gave it, raw
    /// JSON) with request id `id`.
    fn unsubscribe_request(&self, id: u64, subscription: &str) -> String {
        let method = match self {
            SubscriptionKind::NewHeads
            | SubscriptionKind::Logs(_)
            | SubscriptionKind::NewPendingTransactions => "eth_unsubscribe",
            SubscriptionKind::Slot => "slotUnsubscribe",
            SubscriptionKind::Account(_) => "accountUnsubscribe",
            SubscriptionKind::SolanaLogs(_) => "logsUnsubscribe",
        };
        format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"{method}","params":[{subscription}]}}"#)
    }

    /// Whether items come in a numbered sequence with none skipped (blocks, slots), so that a
    /// missing number is a gap.
    fn is_sequence(&self) -> bool {
        matches!(self, SubscriptionKind::NewHeads | SubscriptionKind::Slot)
    }
}

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
        }
    }

    /// Checks the settings, naming the flag at fault.
    pub fn validate(&self) -> Result<(), ConfigError> {
        if !self.target.websocket {
            return Err(ConfigError::new("URL", "subscriptions need a ws:// or wss:// URL"));
        }
        if self.kinds.is_empty() {
            return Err(ConfigError::new("--sub", "give at least one subscription, such as --sub newHeads"));
        }
        if self.subscribers == 0 {
            return Err(ConfigError::new("--subscribers", "must be at least 1"));
        }
        if self.subs_per_socket == 0 {
            return Err(ConfigError::new("--subs-per-socket", "must be at least 1"));
        }
        if self.subscribers.saturating_mul(self.kinds.len()) > MAX_SUBSCRIPTIONS {
            return Err(ConfigError::new(
                "--subscribers",
                format!("at most {MAX_SUBSCRIPTIONS} subscriptions in all"),
            ));
        }
        if self.duration.is_zero() {
            return Err(ConfigError::new("--duration", "must be longer than zero"));
        }
        if self.ramp >= self.duration {
            return Err(ConfigError::new("--ramp", "must be shorter than the duration"));
        }
        if !self.stages.is_empty() {
            if !self.ramp.is_zero() {
                return Err(ConfigError::new("--stage", "give stages or --ramp, not both"));
            }
            let total: Duration = self.stages.iter().map(|stage| stage.duration).sum();
            if total != self.duration {
                return Err(ConfigError::new("--stage", "the stages' durations must add up to the duration"));
            }
            let highest = self.stages.iter().map(|stage| stage.level).fold(0.0, f64::max);
            if highest < 1.0 || highest.ceil() as usize > self.subscribers {
                return Err(ConfigError::new(
                    "--stage",
                    format!("the highest stage must be between 1 and {} subscribers", self.subscribers),
                ));
            }
        }
        Ok(())
    }

    /// When each socket is open: for socket i, the (open, close) offsets from the start, a close
    /// at the duration meaning "until the end". A pure function of the settings.
    fn socket_windows(&self) -> Vec<Vec<(Duration, Duration)>> {
        let sockets = self.subscriptions().div_ceil(self.subs_per_socket);
        if self.stages.is_empty() {
            // Socket i of n opens at i/n of the ramp.
            return (0..sockets)
                .map(|socket| vec![(self.ramp.mul_f64(socket as f64 / sockets as f64), self.duration)])
                .collect();
        }
        let curve = LevelCurve::from_stages(&self.stages, Duration::ZERO);
        let per_subscriber = self.kinds.len() as f64 / self.subs_per_socket as f64;
        let mut windows: Vec<Vec<(Duration, Duration)>> = vec![Vec::new(); sockets];
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
                windows[socket].push((opened_at[socket], time));
            }
            open = wanted;
            if time >= self.duration {
                break;
            }
            time = (time + SCHEDULE_STEP).min(self.duration);
        }
        for socket in 0..open {
            windows[socket].push((opened_at[socket], self.duration));
        }
        windows
    }

    /// Every subscription of the run, in order: subscriber by subscriber, kind by kind.
    fn subscriptions(&self) -> usize {
        self.subscribers * self.kinds.len()
    }
}

/// The resolution of the stages' socket schedule.
const SCHEDULE_STEP: Duration = Duration::from_millis(10);

/// How many items' first arrivals are remembered for the fan-out lag (older ones are
/// forgotten first; an item arriving after that long counts from its own arrival).
const FIRST_ARRIVALS: usize = 65_536;

/// The last keys each subscription remembers, to tell a duplicate from a reorder.
const RECENT_KEYS: usize = 64;

/// One subscription's state and counts.
#[derive(Debug, Default, Clone)]
struct SubscriptionState {
    kind: usize,
    active: bool,
    /// When the server first confirmed it (`None`: never, not even after a reconnect).
    confirmed_at: Option<Instant>,
    /// When it last left by plan (a stage's socket closing), until confirmed again.
    left_at: Option<Instant>,
    /// Its next notification starts a new sequence (it left by plan and came back).
    restarted: bool,
    /// Whether it was active when the measured time ended.
    active_at_end: bool,
    /// The first key it received.
    first: Option<u64>,
    last: Option<u64>,
    recent: VecDeque<u64>,
    notifications: u64,
    gaps: u64,
    duplicates: u64,
    reorders: u64,
}

impl SubscriptionState {
    /// A planned leave: what it misses until it subscribes again is not a gap.
    fn leave(&mut self, at: Instant) {
        self.left_at = Some(at);
        self.restarted = true;
        self.recent.clear();
    }
}

/// Everything counted during a run, shared by the socket tasks of its one thread.
struct Collector {
    start: Instant,
    kinds: Vec<SubscriptionKind>,
    subscriptions: Vec<SubscriptionState>,
    subscribe_latency: Histogram<u64>,
    lag: Histogram<u64>,
    produced_lag: Histogram<u64>,
    produced_lag_seconds: bool,
    first_arrival: HashMap<(usize, u64), Instant>,
    arrival_order: VecDeque<(usize, u64)>,
    subscribe_errors: BTreeMap<String, u64>,
    unknown_subscription: u64,
    not_json: u64,
    closed_by_server: BTreeMap<u16, u64>,
    reconnects: u64,
    sockets_opened: u64,
    connect_errors: u64,
    notifications: u64,
    bytes: u64,
    series: Vec<SubscribeSecond>,
    /// Subscriptions active now.
    active: u64,
    /// Why the first socket that could not be opened was not (a refused upgrade's status).
    first_connect_error: Option<String>,
    /// False once the measured time is over: notifications that arrive while the sockets
    /// unsubscribe are judged for gaps, duplicates and reorders, but not counted in the rates,
    /// lags or series.
    measuring: bool,
    /// Notifications, bytes and active subscriptions when the measured time ended.
    at_end: MeasuredEnd,
    /// Subscriptions the server confirmed ending at the end of the run.
    unsubscribed: u64,
    /// Unsubscribe requests answered with an error or `false`, or not answered in time.
    unsubscribe_failed: u64,
}

impl Collector {
    fn new(config: &SubscribeConfig, start: Instant) -> Self {
        let kinds = config.kinds.len();
        Self {
            start,
            kinds: config.kinds.clone(),
            subscriptions: (0..config.subscriptions())
                .map(|index| SubscriptionState { kind: index % kinds, ..SubscriptionState::default() })
                .collect(),
            subscribe_latency: new_histogram(),
            lag: new_histogram(),
            produced_lag: new_histogram(),
            produced_lag_seconds: false,
            first_arrival: HashMap::new(),
            arrival_order: VecDeque::new(),
            subscribe_errors: BTreeMap::new(),
            unknown_subscription: 0,
            not_json: 0,
            closed_by_server: BTreeMap::new(),
            reconnects: 0,
            sockets_opened: 0,
            connect_errors: 0,
            notifications: 0,
            bytes: 0,
            series: Vec::new(),
            active: 0,
            first_connect_error: None,
            measuring: true,
            at_end: MeasuredEnd::default(),
            unsubscribed: 0,
            unsubscribe_failed: 0,
        }
    }

    fn second(&mut self, at: Instant) -> &mut SubscribeSecond {
        let second = at.saturating_duration_since(self.start).as_secs();
        // Bounded: one point per second of the run (and never past an hour's worth of gaps).
        while self.series.last().is_none_or(|last| last.second < second) && self.series.len() < 86_400 {
            let next = self.series.last().map_or(0, |last| last.second + 1);
            let active = self.active;
            self.series.push(SubscribeSecond { second: next, active, ..SubscribeSecond::default() });
        }
        let index = self.series.len() - 1;
        &mut self.series[index]
    }

    /// One notification for subscription `index`, arrived at `arrived`.
    fn notification(&mut self, index: usize, item: Item, bytes: usize, arrived: Instant, wall: SystemTime) {
        let kind = self.subscriptions[index].kind;
        let sequence = self.kinds[kind].is_sequence();
        let state = &mut self.subscriptions[index];
        let key = item.key;
        if state.recent.contains(&key) {
            state.duplicates += 1;
        } else {
            let last = if std::mem::take(&mut state.restarted) { None } else { state.last };
            match last {
                Some(last) if sequence && key > last + 1 => state.gaps += key - last - 1,
                Some(last) if sequence && key < last => {
                    // It arrived late, not never: the gap counted when its successor came is undone.
                    state.reorders += 1;
                    state.gaps = state.gaps.saturating_sub(1);
                }
                Some(last) if !sequence && key < last => state.reorders += 1,
                _ => {}
            }
            if state.recent.len() == RECENT_KEYS {
                state.recent.pop_front();
            }
            state.recent.push_back(key);
            if state.first.is_none_or(|first| key < first) {
                state.first = Some(key);
            }
            if state.last.is_none_or(|last| key > last) {
                state.last = Some(key);
            }
        }
        state.notifications += 1;
        self.notifications += 1;
        self.bytes += bytes as u64;
        if !self.measuring {
            return;
        }
        let first = match self.first_arrival.get(&(kind, key)) {
            Some(first) => *first,
            None => {
                if self.arrival_order.len() == FIRST_ARRIVALS {
                    if let Some(oldest) = self.arrival_order.pop_front() {
                        self.first_arrival.remove(&oldest);
                    }
                }
                self.first_arrival.insert((kind, key), arrived);
                self.arrival_order.push_back((kind, key));
                arrived
            }
        };
        let lag = arrived.saturating_duration_since(first).as_micros() as u64;
        record_us(&mut self.lag, lag);
        if let Some((produced, seconds)) = item.produced {
            let lag = wall.duration_since(produced).unwrap_or(Duration::ZERO).as_micros() as u64;
            record_us(&mut self.produced_lag, lag);
            self.produced_lag_seconds |= seconds;
        }
        let point = self.second(arrived);
        point.notifications += 1;
        point.bytes += bytes as u64;
        point.lag_max_us = point.lag_max_us.max(lag);
    }

    fn set_active(&mut self, index: usize, active: bool) {
        let state = &mut self.subscriptions[index];
        if state.active != active {
            if active {
                self.active += 1;
            } else {
                self.active -= 1;
            }
        }
        state.active = active;
        if active && state.confirmed_at.is_none() {
            state.confirmed_at = Some(Instant::now());
        }
        if active {
            state.left_at = None;
        }
        // The current second's point holds the count at its end.
        let now = self.active;
        self.second(Instant::now()).active = now;
    }
}

/// The figures that rates are computed from, taken when the measured time ends.
#[derive(Debug, Clone, Copy, Default)]
struct MeasuredEnd {
    notifications: u64,
    bytes: u64,
    active: u64,
}

impl Collector {
    /// Ends the measured time: what arrives from now on is judged but not in the rates.
    fn end_measuring(&mut self) {
        self.measuring = false;
        for state in &mut self.subscriptions {
            state.active_at_end = state.active;
        }
        self.at_end =
            MeasuredEnd { notifications: self.notifications, bytes: self.bytes, active: self.active };
    }
}

/// What a notification is about: its key (block number, slot, or a hash of its identity) and
/// when it was produced, when it says.
struct Item {
    key: u64,
    produced: Option<(SystemTime, bool)>,
}

/// The envelope of any message on a subscription socket, members borrowed raw.
#[derive(Deserialize)]
struct Envelope<'a> {
    #[serde(borrow, default)]
    id: Option<&'a RawValue>,
    #[serde(borrow, default)]
    result: Option<&'a RawValue>,
    #[serde(borrow, default)]
    error: Option<&'a RawValue>,
    #[serde(borrow, default)]
    params: Option<NotificationParams<'a>>,
}

#[derive(Deserialize)]
struct NotificationParams<'a> {
    #[serde(borrow)]
    subscription: &'a RawValue,
    #[serde(borrow)]
    result: &'a RawValue,
}

/// The members of a notification's `result` the figures need (the rest is skipped).
#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct ItemFields<'a> {
    #[serde(default)]
    number: Option<&'a str>,
    #[serde(default)]
    timestamp: Option<&'a str>,
    #[serde(default)]
    slot: Option<u64>,
    #[serde(default)]
    block_number: Option<&'a str>,
    #[serde(default)]
    log_index: Option<&'a str>,
    #[serde(default)]
    context: Option<SlotContext>,
    #[serde(default, rename = "rpcbenchProducedAt")]
    produced_at: Option<u64>,
    #[serde(borrow, default)]
    value: Option<&'a RawValue>,
}

#[derive(Deserialize, Default)]
struct SlotContext {
    slot: u64,
}

fn fingerprint(bytes: &[u8]) -> u64 {
    // FNV-1a: a stable 64-bit identity for items without a number (transactions, log lines).
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

/// The item a notification's `result` carries for `kind`.
fn item(kind: &SubscriptionKind, result: &RawValue) -> Item {
    let text = result.get();
    let fields: ItemFields<'_> = if text.starts_with('{') {
        serde_json::from_str(text).unwrap_or_default()
    } else {
        ItemFields::default()
    };
    let exact = fields.produced_at.map(|micros| (UNIX_EPOCH + Duration::from_micros(micros), false));
    let key = match kind {
        SubscriptionKind::NewHeads => fields.number.and_then(parse_hex_quantity),
        SubscriptionKind::Slot => fields.slot,
        SubscriptionKind::Logs(_) => {
            match (
                fields.block_number.and_then(parse_hex_quantity),
                fields.log_index.and_then(parse_hex_quantity),
            ) {
                (Some(block), Some(index)) => Some(block << 20 | index),
                _ => None,
            }
        }
        SubscriptionKind::Account(_) => fields.context.as_ref().map(|context| context.slot),
        SubscriptionKind::SolanaLogs(_) => fields.value.map(|value| fingerprint(value.get().as_bytes())),
        SubscriptionKind::NewPendingTransactions => None,
    };
    let produced = exact.or_else(|| match kind {
        SubscriptionKind::NewHeads => fields
            .timestamp
            .and_then(parse_hex_quantity)
            .map(|seconds| (UNIX_EPOCH + Duration::from_secs(seconds), true)),
        _ => None,
    });
    Item { key: key.unwrap_or_else(|| fingerprint(text.as_bytes())), produced }
}

/// Why a subscription run could not start.
#[derive(Debug)]
pub enum SubscribeError {
    /// A setting is not usable.
    Config(ConfigError),
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
    let connector = Connector::new(&config.target, &config.tls, config.connect_timeout)
        .map_err(|err| SubscribeError::Setup(err.to_string()))?;
    let upgrade = Upgrade::new(connector, &config.target, &config.headers, config.max_message as u64);
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(SubscribeError::Runtime)?;
    let local = tokio::task::LocalSet::new();
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
                .map(|(open, close)| (start + open, (close < config.duration).then_some(start + close)))
                .collect();
            tasks.push(tokio::task::spawn_local(socket_task(
                shared.clone(),
                upgrade.clone(),
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
        collector.borrow_mut().end_measuring();
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
    Ok(report(config, &collector, elapsed, stop.is_stopped()))
}

/// Publishes the figures so far to the live metrics, if any.
fn publish(config: &SubscribeConfig, collector: &Collector) {
    let Some(live) = &config.live else { return };
    let sum = |f: fn(&SubscriptionState) -> u64| collector.subscriptions.iter().map(f).sum::<u64>();
    live.publish_subscription(
        crate::metrics::SubscriptionFigures {
            notifications: collector.notifications,
            bytes: collector.bytes,
            gaps: sum(|s| s.gaps),
            duplicates: sum(|s| s.duplicates),
            reorders: sum(|s| s.reorders),
            active: collector.subscriptions.iter().filter(|s| s.active).count() as u64,
            ..Default::default()
        }
        .with_lag(&collector.lag),
    );
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
async fn socket_task(
    config: Arc<SubscribeConfig>,
    upgrade: Upgrade,
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
        loop {
            if winding_down(&wind_down) {
                return;
            }
            let ended = serve_socket(
                &config,
                &upgrade,
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
                    SocketEnd::Closed(code) => *counts.closed_by_server.entry(code).or_default() += 1,
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
    /// The server closed it, with this close code (1006: without a close frame).
    Closed(u16),
    /// It could not be opened (connect or upgrade failed; counted as a connect error).
    NotOpened,
    /// Its window of the stages closed: it unsubscribed and closed.
    Left,
}

/// Connects, subscribes and reads until the run's end or the server closes the socket. At the
/// end it unsubscribes every subscription the server confirmed and reads until the answers:
/// a server writes a subscription's notifications before the answer that ends it, so every
/// notification it sent is judged, and a notification it dropped between two sent ones is a
/// gap however close to the end.
async fn serve_socket(
    config: &SubscribeConfig,
    upgrade: &Upgrade,
    share: std::ops::Range<usize>,
    collector: &Rc<RefCell<Collector>>,
    mut wind_down: WindDown,
    leaves_at: Option<Instant>,
    reopening: bool,
) -> SocketEnd {
    let opened = tokio::select! {
        opened = upgrade.open() => opened,
        _ = wind_down.wait_for(|down| *down) => return SocketEnd::TimeUp,
    };
    let socket = match opened {
        Ok(socket) => socket,
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
    let (mut writer, mut reader) = socket.split();
    // Request id = position in the share + 1; answered ids map to subscription ids.
    let mut sent_at: Vec<Option<Instant>> = vec![None; share.len()];
    for (position, index) in share.clone().enumerate() {
        let kind = &config.kinds[collector.borrow().subscriptions[index].kind];
        sent_at[position] = Some(Instant::now());
        if writer.send(Message::Text(kind.request(position as u64 + 1).into())).await.is_err() {
            return SocketEnd::Closed(1006);
        }
    }
    let mut by_subscription: HashMap<Box<str>, usize> = HashMap::with_capacity(share.len());
    // The server's id of each confirmed subscription, by position, to unsubscribe at the end.
    let mut server_ids: Vec<Option<Box<str>>> = vec![None; share.len()];
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
        let message = tokio::select! {
            over = &mut leave, if !draining => {
                run_over = over;
                draining = true;
                for (position, id) in server_ids.iter().enumerate() {
                    let Some(id) = id else { continue };
                    let kind = &config.kinds[collector.borrow().subscriptions[share.start + position].kind];
                    let request = kind.unsubscribe_request((share.len() + position + 1) as u64, id);
                    if writer.send(Message::Text(request.into())).await.is_err() {
                        return if run_over { SocketEnd::TimeUp } else { SocketEnd::Closed(1006) };
                    }
                    unanswered += 1;
                }
                let wait = if unanswered == 0 { Duration::ZERO } else { UNSUBSCRIBE_WAIT };
                closing.as_mut().reset((Instant::now() + wait).into());
                closing_armed = true;
                continue;
            }
            () = &mut closing, if closing_armed => {
                collector.borrow_mut().unsubscribe_failed += unanswered as u64;
                let _ = writer.send(Message::Close(None)).await;
                return if run_over { SocketEnd::TimeUp } else { SocketEnd::Left };
            }
            message = reader.next() => message,
        };
        let arrived = Instant::now();
        let wall = SystemTime::now();
        let bytes = match message {
            None => return SocketEnd::Closed(1006),
            Some(Ok(Message::Text(text))) => tungstenite::Bytes::from(text),
            Some(Ok(Message::Binary(bytes))) => bytes,
            Some(Ok(Message::Close(frame))) => {
                return SocketEnd::Closed(frame.map_or(1005, |frame| u16::from(frame.code)))
            }
            Some(Ok(_)) => continue,
            Some(Err(_)) => return SocketEnd::Closed(1006),
        };
        let Ok(envelope) = serde_json::from_slice::<Envelope<'_>>(&bytes) else {
            collector.borrow_mut().not_json += 1;
            continue;
        };
        let mut counts = collector.borrow_mut();
        if let Some(params) = envelope.params {
            match by_subscription.get(params.subscription.get()) {
                Some(&index) => {
                    let kind = counts.subscriptions[index].kind;
                    let item = item(&counts.kinds[kind], params.result);
                    counts.notification(index, item, bytes.len(), arrived, wall);
                }
                None => counts.unknown_subscription += 1,
            }
            continue;
        }
        // An answer to a subscribe request (ids 1..=n) or an unsubscribe one (n+1..=2n).
        let position =
            envelope.id.and_then(|id| id.get().parse::<usize>().ok()).and_then(|id| id.checked_sub(1));
        if let Some(position) = position.filter(|&p| draining && p >= share.len() && p < 2 * share.len()) {
            if server_ids[position - share.len()].take().is_some() {
                unanswered -= 1;
                let confirmed =
                    envelope.error.is_none() && envelope.result.is_some_and(|r| r.get() == "true");
                if confirmed {
                    counts.unsubscribed += 1;
                } else {
                    counts.unsubscribe_failed += 1;
                }
                if unanswered == 0 {
                    closing.as_mut().reset((Instant::now() + CLOSE_GRACE).into());
                }
            }
            continue;
        }
        let Some(position) = position.filter(|&position| position < share.len()) else {
            counts.unknown_subscription += 1;
            continue;
        };
        let Some(sent) = sent_at[position].take() else { continue };
        let index = share.start + position;
        match (envelope.result, envelope.error) {
            (Some(result), None) => {
                let latency = arrived.saturating_duration_since(sent).as_micros() as u64;
                record_us(&mut counts.subscribe_latency, latency);
                by_subscription.insert(result.get().into(), index);
                server_ids[position] = Some(result.get().into());
                counts.set_active(index, true);
            }
            (_, error) => {
                let code = error
                    .and_then(|error| serde_json::from_str::<Value>(error.get()).ok())
                    .and_then(|error| error.get("code").and_then(Value::as_i64))
                    .map_or("invalid answer".to_string(), |code| code.to_string());
                if counts.subscribe_errors.len() < 32 || counts.subscribe_errors.contains_key(&code) {
                    *counts.subscribe_errors.entry(code).or_default() += 1;
                }
            }
        }
    }
}

/// A histogram for the report, `None` when empty.
fn encoded(histogram: &Histogram<u64>) -> Option<String> {
    (!histogram.is_empty()).then(|| crate::hdr_codec::encode_histogram(histogram))
}

/// A subscription's gaps before its first notification and after its last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct EdgeGaps {
    start: u64,
    end: u64,
}

/// Gaps at the edges of each subscription's numbered items (blocks, slots), which the sequence
/// alone cannot see: items that reached some subscriber after this one was confirmed but
/// before its first notification, and items that reached some subscriber before the run's end
/// (less a grace of the largest fan-out lag, at least 50 ms, for items still on their way)
/// after its last one. A subscription that received nothing misses every such item.
fn edge_gaps(collector: &Collector, end: Instant) -> Vec<EdgeGaps> {
    let grace = Duration::from_micros(collector.lag.max()).max(Duration::from_millis(50));
    let cutoff = end.checked_sub(grace).unwrap_or(collector.start);
    let mut by_kind: Vec<Vec<(Instant, u64)>> = vec![Vec::new(); collector.kinds.len()];
    for (&(kind, key), &arrived) in &collector.first_arrival {
        if collector.kinds[kind].is_sequence() {
            by_kind[kind].push((arrived, key));
        }
    }
    for arrivals in &mut by_kind {
        arrivals.sort_unstable();
    }
    collector
        .subscriptions
        .iter()
        .map(|state| {
            let arrivals = &by_kind[state.kind];
            let none = EdgeGaps::default();
            let Some(confirmed) = state.confirmed_at else { return none };
            let from = arrivals.partition_point(|&(arrived, _)| arrived < confirmed);
            // A subscription that left by plan is judged until it left.
            let cutoff =
                state.left_at.map_or(cutoff, |left| left.checked_sub(grace).unwrap_or(left).min(cutoff));
            let to = arrivals.partition_point(|&(arrived, _)| arrived <= cutoff);
            if from >= to {
                return none;
            }
            let (first_due, last_due) = (arrivals[from].1, arrivals[to - 1].1);
            if first_due > last_due {
                return none;
            }
            match (state.first, state.last) {
                (Some(first), Some(last)) => EdgeGaps {
                    start: first.saturating_sub(first_due).min(last_due - first_due + 1),
                    end: last_due.saturating_sub(last),
                },
                _ => EdgeGaps { start: 0, end: last_due - first_due + 1 },
            }
        })
        .collect()
}

/// The report of a run: `collector`'s figures over `elapsed`.
fn report(
    config: &SubscribeConfig,
    collector: &Collector,
    elapsed: Duration,
    interrupted: bool,
) -> SubscribeReport {
    let edges = edge_gaps(collector, collector.start + elapsed);
    let measured = collector.at_end;
    let seconds = elapsed.as_secs_f64().max(1e-9);
    let sum = |f: fn(&SubscriptionState) -> u64| collector.subscriptions.iter().map(f).sum::<u64>();
    let subscriptions = collector.subscriptions.len() as u64;
    let per_kind = config
        .kinds
        .iter()
        .enumerate()
        .map(|(kind, spec)| {
            let mine = collector.subscriptions.iter().zip(&edges).filter(|(s, _)| s.kind == kind);
            let mut figures = KindFigures {
                kind: spec.name().to_string(),
                subscriptions: 0,
                notifications: 0,
                gaps: 0,
                duplicates: 0,
                reorders: 0,
            };
            for (state, edge) in mine {
                figures.subscriptions += 1;
                figures.notifications += state.notifications;
                figures.gaps += state.gaps + edge.start + edge.end;
                figures.duplicates += state.duplicates;
                figures.reorders += state.reorders;
            }
            figures
        })
        .collect();
    let has_produced = !collector.produced_lag.is_empty();
    SubscribeReport {
        subscribe_report_version: 1,
        tool: concat!("rpcbench ", env!("CARGO_PKG_VERSION")).into(),
        target: config.target.redacted(),
        kinds: config.kinds.iter().map(|kind| kind.name().to_string()).collect(),
        subscribers: config.subscribers as u64,
        subscriptions,
        subs_per_socket: config.subs_per_socket as u64,
        duration_us: config.duration.as_micros() as u64,
        elapsed_us: elapsed.as_micros() as u64,
        interrupted,
        subscribed: collector.subscriptions.iter().filter(|s| s.confirmed_at.is_some()).count() as u64,
        subscribe_errors: collector.subscribe_errors.clone(),
        subscribe_latency: LatencyReport::from_histogram(&collector.subscribe_latency),
        active_at_end: measured.active,
        notifications: collector.notifications,
        notifications_after_end: collector.notifications - measured.notifications,
        notifications_per_sec: measured.notifications as f64 / seconds,
        notifications_per_sub_per_sec: measured.notifications as f64 / seconds / subscriptions.max(1) as f64,
        bytes: collector.bytes,
        bytes_per_sec: measured.bytes as f64 / seconds,
        bytes_per_sub_per_sec: measured.bytes as f64 / seconds / subscriptions.max(1) as f64,
        lag: LatencyReport::from_histogram(&collector.lag),
        produced_lag: has_produced.then(|| LatencyReport::from_histogram(&collector.produced_lag)),
        produced_lag_precision: has_produced
            .then(|| if collector.produced_lag_seconds { "seconds" } else { "exact" }.to_string()),
        gaps: sum(|s| s.gaps) + edges.iter().map(|edge| edge.start + edge.end).sum::<u64>(),
        gaps_at_edges: edges.iter().map(|edge| edge.start + edge.end).sum::<u64>(),
        went_silent: edges
            .iter()
            .zip(&collector.subscriptions)
            .filter(|(edge, state)| state.active_at_end && edge.end >= SILENT_AFTER_ITEMS)
            .count() as u64,
        unsubscribed: collector.unsubscribed,
        unsubscribe_failed: collector.unsubscribe_failed,
        duplicates: sum(|s| s.duplicates),
        reorders: sum(|s| s.reorders),
        unknown_subscription: collector.unknown_subscription,
        not_json: collector.not_json,
        closed_by_server: collector.closed_by_server.iter().map(|(code, n)| (code.to_string(), *n)).collect(),
        sockets_opened: collector.sockets_opened,
        connect_errors: collector.connect_errors,
        first_connect_error: collector
            .first_connect_error
            .as_deref()
            .map(crate::printable::escape_controls)
            .map(String::from),
        reconnects: collector.reconnects,
        per_kind,
        series: collector.series.clone(),
        histograms: SubscribeHistograms {
            subscribe: encoded(&collector.subscribe_latency),
            lag: encoded(&collector.lag),
            produced_lag: encoded(&collector.produced_lag),
        },
        thresholds: Vec::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn windows_ms(config: &SubscribeConfig) -> Vec<Vec<(u64, u64)>> {
        config
            .socket_windows()
            .iter()
            .map(|w| w.iter().map(|(a, b)| (a.as_millis() as u64, b.as_millis() as u64)).collect())
            .collect()
    }

    #[test]
    fn stages_open_sockets_as_the_level_climbs_and_close_the_last_opened_first() {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let stage = |seconds: u64, level: f64| Stage {
            level,
            duration: Duration::from_secs(seconds),
            ramp: Duration::from_secs(seconds),
        };
        let mut config =
            SubscribeConfig::new(target, vec![SubscriptionKind::NewHeads], Duration::from_secs(4));
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
        assert_eq!(config.validate().unwrap_err().setting, "--stage");
        config.duration = Duration::from_secs(4);
        config.subscribers = 3;
        assert_eq!(config.validate().unwrap_err().setting, "--stage");
    }

    #[test]
    fn subscription_kinds_parse_and_bad_ones_are_named() {
        assert_eq!(SubscriptionKind::parse("newHeads"), Ok(SubscriptionKind::NewHeads));
        assert_eq!(SubscriptionKind::parse("slot"), Ok(SubscriptionKind::Slot));
        assert_eq!(
            SubscriptionKind::parse(r#"logs:{"address":"0xaa"}"#),
            Ok(SubscriptionKind::Logs(serde_json::json!({"address": "0xaa"})))
        );
        assert_eq!(SubscriptionKind::parse("account:Abc"), Ok(SubscriptionKind::Account("Abc".into())));
        assert!(SubscriptionKind::parse("newBlocks")
            .unwrap_err()
            .contains("unknown subscription 'newBlocks'"));
        assert!(SubscriptionKind::parse("logs:{nope").unwrap_err().contains("not JSON"));
        assert!(SubscriptionKind::parse("account").is_err());
        assert!(SubscriptionKind::parse("slot:3").is_err());
    }

    #[test]
    fn gaps_duplicates_and_reorders_are_counted_exactly() {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let config = SubscribeConfig::new(target, vec![SubscriptionKind::Slot], Duration::from_secs(1));
        let start = Instant::now();
        let mut collector = Collector::new(&config, start);
        let wall = SystemTime::now();
        // 1, 2, 4 (gap 3), 4 (duplicate), 3 (late: a reorder, not a gap), 7 (gaps 5, 6).
        for key in [1, 2, 4, 4, 3, 7] {
            collector.notification(0, Item { key, produced: None }, 10, start, wall);
        }
        let state = &collector.subscriptions[0];
        assert_eq!((state.gaps, state.duplicates, state.reorders), (2, 1, 1));
        assert_eq!(collector.notifications, 6);
    }

    #[test]
    fn fan_out_lag_counts_from_the_first_arrival() {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let mut config =
            SubscribeConfig::new(target, vec![SubscriptionKind::NewHeads], Duration::from_secs(1));
        config.subscribers = 2;
        let start = Instant::now();
        let mut collector = Collector::new(&config, start);
        let wall = SystemTime::now();
        collector.notification(0, Item { key: 9, produced: None }, 10, start, wall);
        collector.notification(
            1,
            Item { key: 9, produced: None },
            10,
            start + Duration::from_millis(30),
            wall,
        );
        assert_eq!(collector.lag.len(), 2);
        assert!(collector.lag.max() >= 29_900 && collector.lag.max() <= 30_100, "{}", collector.lag.max());
    }

    #[test]
    fn items_carry_their_key_and_production_time() {
        let header = RawValue::from_string(
            r#"{"number":"0x3e9","timestamp":"0x10","rpcbenchProducedAt":5000000}"#.into(),
        )
        .unwrap();
        let parsed = item(&SubscriptionKind::NewHeads, &header);
        assert_eq!(parsed.key, 1001);
        assert_eq!(parsed.produced, Some((UNIX_EPOCH + Duration::from_secs(5), false)));
        let no_stamp = RawValue::from_string(r#"{"number":"0x3e9","timestamp":"0x10"}"#.into()).unwrap();
        assert_eq!(
            item(&SubscriptionKind::NewHeads, &no_stamp).produced,
            Some((UNIX_EPOCH + Duration::from_secs(16), true))
        );
        let slot = RawValue::from_string(r#"{"parent":1,"root":0,"slot":2}"#.into()).unwrap();
        assert_eq!(item(&SubscriptionKind::Slot, &slot).key, 2);
    }
}
