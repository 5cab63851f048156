//! What a subscription run counts, and its figures: one [`Collector`] per run holds HDR
//! histograms for latencies, counters per subscription, and a bounded table of first arrivals
//! (the oldest items are forgotten first), so memory stays flat however long the run and
//! whatever the server sends. [`report`] turns it into the [`SubscribeReport`].
//!
//! Items are judged by their kind's [`Order`]: gaps only in a sequence (blocks, slots),
//! reorders only where the items are numbered, duplicates everywhere; an item whose number
//! does not parse is counted apart. All sums saturate: no count wraps.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::time::{Duration, Instant, SystemTime};

use hdrhistogram::Histogram;

use super::kinds::{Item, Key, Order, SubscriptionKind};
use super::SubscribeConfig;
use crate::record::{new_histogram, record_us};
use crate::report::subscribe::{
    KindFigures, SubscribeHistograms, SubscribeReport, SubscribeSecond, SILENT_AFTER_ITEMS,
};
use crate::report::LatencyReport;

/// How a server ended a connection, as reports count it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum ServerClose {
    /// A WebSocket close code (1006: without a close frame).
    WebSocket(u16),
    /// A gRPC stream's status code.
    Grpc(u8),
    /// A gRPC server's fault: a GOAWAY, a message over the limit, garbage.
    Fault(super::GrpcFault),
}

impl std::fmt::Display for ServerClose {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ServerClose::WebSocket(code) => write!(f, "{code}"),
            ServerClose::Grpc(code) => write!(f, "grpc {}", crate::transport::grpc::status_name(*code)),
            ServerClose::Fault(fault) => fault.fmt(f),
        }
    }
}

/// How many items' first arrivals are remembered for the fan-out lag (older ones are
/// forgotten first; an item arriving after that long counts from its own arrival).
const FIRST_ARRIVALS: usize = 65_536;

/// The first-arrival table's keys (a kind's index and an item's number or fingerprint) are
/// hashed with one multiply each instead of SipHash, which cost about 3% of a Geyser update's
/// time. The table is bounded (`FIRST_ARRIVALS`), so a server that picks colliding keys costs
/// CPU, never memory.
type KeyHasherBuilder = crate::util::fast_hash::MultiplyHasherBuilder;

/// The last keys each subscription remembers, to tell a duplicate from a reorder.
const RECENT_KEYS: usize = 64;

/// One subscription's state and counts.
#[derive(Debug, Default, Clone)]
pub(super) struct SubscriptionState {
    pub(super) kind: usize,
    pub(super) active: bool,
    /// When the server first confirmed it (`None`: never, not even after a reconnect).
    pub(super) confirmed_at: Option<Instant>,
    /// When it began to leave by plan (its socket's window closing: the unsubscribe request
    /// went out), until confirmed again.
    pub(super) left_at: Option<Instant>,
    /// When its socket's current window closes by plan (`None`: it stays to the end).
    pub(super) planned_leave: Option<Instant>,
    /// Its next notification starts a new sequence (it left by plan and came back).
    restarted: bool,
    /// Whether it was active when the measured time ended.
    active_at_end: bool,
    /// The first and last numbers it received.
    pub(super) first: Option<u64>,
    pub(super) last: Option<u64>,
    recent: VecDeque<u64>,
    pub(super) notifications: u64,
    pub(super) gaps: u64,
    pub(super) duplicates: u64,
    pub(super) reorders: u64,
    pub(super) unnumbered: u64,
    /// The last slot it received (a Geyser feed's), for resubscribing `from_slot` after a
    /// reconnect.
    pub(super) last_slot: Option<u64>,
}

impl SubscriptionState {
    /// Its socket began a planned leave at `at`: items due after that are not gaps.
    pub(super) fn begin_leave(&mut self, at: Instant) {
        self.left_at.get_or_insert(at);
    }

    /// A planned leave is over: what it misses until it subscribes again is not a gap, and
    /// its next notification starts a new sequence.
    pub(super) fn leave(&mut self, at: Instant) {
        self.left_at.get_or_insert(at);
        self.planned_leave = None;
        self.restarted = true;
        self.recent.clear();
    }
}

/// The figures that rates are computed from, taken when the measured time ends.
#[derive(Debug, Clone, Copy, Default)]
struct MeasuredEnd {
    notifications: u64,
    bytes: u64,
    active: u64,
}

/// Everything counted during a run, shared by the socket tasks of its one thread.
pub(super) struct Collector {
    pub(super) start: Instant,
    pub(super) kinds: Vec<SubscriptionKind>,
    pub(super) subscriptions: Vec<SubscriptionState>,
    pub(super) subscribe_latency: Histogram<u64>,
    pub(super) lag: Histogram<u64>,
    pub(super) produced_lag: Histogram<u64>,
    produced_lag_seconds: bool,
    /// Items whose production time was after their arrival by our clock (the node's clock
    /// runs ahead): counted apart, never recorded as a lag of 0.
    clock_ahead: u64,
    first_arrival: HashMap<(usize, u64), Instant, KeyHasherBuilder>,
    arrival_order: VecDeque<(usize, u64)>,
    pub(super) subscribe_errors: BTreeMap<String, u64>,
    /// The first refusal, by kind: `kind: code message`, as the server said it.
    pub(super) first_subscribe_error: Option<String>,
    pub(super) unknown_subscription: u64,
    pub(super) not_json: u64,
    pub(super) closed_by_server: BTreeMap<ServerClose, u64>,
    pub(super) closed_not_reading: u64,
    pub(super) reconnects: u64,
    pub(super) sockets_opened: u64,
    pub(super) connect_errors: u64,
    pub(super) notifications: u64,
    pub(super) bytes: u64,
    series: Vec<SubscribeSecond>,
    /// Subscriptions active now.
    active: u64,
    /// Why the first socket that could not be opened was not (a refused upgrade's status).
    pub(super) first_connect_error: Option<String>,
    /// False once the measured time is over: notifications that arrive while the sockets
    /// unsubscribe are judged for gaps, duplicates and reorders, but not counted in the rates,
    /// lags or series.
    measuring: bool,
    /// Notifications, bytes and active subscriptions when the measured time ended.
    at_end: MeasuredEnd,
    /// Per-slot stage timings (`geyser-stages`).
    pub(super) slot_stages: super::slot_stages::SlotStageTimings,
    /// The lag behind production of the items of the current second, for its p99.
    window_lag: Histogram<u64>,
    /// Items replayed `from_slot` after a reconnect (not in the lags or rates).
    pub(super) backfill: u64,
    /// Resubscriptions `from_slot` the server refused.
    pub(super) from_slot_refused: u64,
    /// Connections closed because nothing arrived for the idle timeout.
    pub(super) stalls: u64,
    /// Subscriptions the server confirmed ending at the end of the run.
    pub(super) unsubscribed: u64,
    /// Unsubscribe requests answered with an error or `false`, or not answered in time.
    pub(super) unsubscribe_failed: u64,
}

impl Collector {
    pub(super) fn new(config: &SubscribeConfig, start: Instant) -> Self {
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
            clock_ahead: 0,
            first_arrival: HashMap::default(),
            arrival_order: VecDeque::new(),
            subscribe_errors: BTreeMap::new(),
            first_subscribe_error: None,
            unknown_subscription: 0,
            not_json: 0,
            closed_by_server: BTreeMap::new(),
            closed_not_reading: 0,
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
            slot_stages: super::slot_stages::SlotStageTimings::new(),
            window_lag: new_histogram(),
            backfill: 0,
            from_slot_refused: 0,
            stalls: 0,
            unsubscribed: 0,
            unsubscribe_failed: 0,
        }
    }

    fn second(&mut self, at: Instant) -> &mut SubscribeSecond {
        let second = at.saturating_duration_since(self.start).as_secs();
        if self.series.last().is_some_and(|last| last.second < second) {
            self.close_window();
        }
        // Bounded: one point per second of the run (and never past a day's worth of gaps).
        while self.series.last().is_none_or(|last| last.second < second) && self.series.len() < 86_400 {
            let next = self.series.last().map_or(0, |last| last.second + 1);
            let active = self.active;
            self.series.push(SubscribeSecond { second: next, active, ..SubscribeSecond::default() });
        }
        let index = self.series.len() - 1;
        &mut self.series[index]
    }

    /// The current second is over: its p99 lag behind production goes into its point.
    fn close_window(&mut self) {
        if let Some(last) = self.series.last_mut() {
            if !self.window_lag.is_empty() {
                last.produced_lag_p99_us = Some(self.window_lag.value_at_quantile(0.99));
            }
        }
        self.window_lag.reset();
    }

    /// A subscribe request refused: counted by class (bounded), the first one's words kept.
    pub(super) fn refused(&mut self, index: usize, class: String, message: &str) {
        if self.subscribe_errors.len() < 32 || self.subscribe_errors.contains_key(&class) {
            let count = self.subscribe_errors.entry(class).or_default();
            *count = count.saturating_add(1);
        }
        if self.first_subscribe_error.is_none() {
            let kind = self.kinds[self.subscriptions[index].kind].name();
            self.first_subscribe_error = Some(format!("{kind}: {message}"));
        }
    }

    /// One notification for subscription `index`, arrived at `arrived` (`wall` by the clock).
    pub(super) fn notification(
        &mut self,
        index: usize,
        item: Item,
        bytes: usize,
        arrived: Instant,
        wall: SystemTime,
    ) {
        let key = self.judge(index, item, bytes);
        if !self.measuring {
            return;
        }
        let kind = self.subscriptions[index].kind;
        let mut lag = 0;
        if let Some(key) = key {
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
            lag = arrived.saturating_duration_since(first).as_micros() as u64;
            record_us(&mut self.lag, lag);
        }
        let mut behind_us = None;
        if let Some(produced) = item.produced {
            match wall.duration_since(produced.at) {
                Ok(behind) => {
                    let behind = behind.as_micros() as u64;
                    record_us(&mut self.produced_lag, behind);
                    behind_us = Some(behind);
                    self.produced_lag_seconds |= produced.seconds;
                }
                Err(_) => self.clock_ahead = self.clock_ahead.saturating_add(1),
            }
        }
        let point = self.second(arrived);
        point.notifications += 1;
        point.bytes += bytes as u64;
        point.lag_max_us = point.lag_max_us.max(lag);
        if let Some(behind) = behind_us {
            record_us(&mut self.window_lag, behind);
        }
    }

    /// Stage `stage` of `slot` arrived (a `geyser-stages` item), stamped `stamped` by the
    /// server: timed while the measured time runs.
    pub(super) fn slot_stage(
        &mut self,
        slot: u64,
        stage: usize,
        arrived: Instant,
        stamped: Option<SystemTime>,
    ) {
        if self.measuring {
            self.slot_stages.arrived(slot, stage, arrived, stamped);
        }
    }

    /// An item replayed `from_slot` after a reconnect: judged for gaps, duplicates and
    /// reorders and counted as backfill, never in the lags or rates (it was produced before
    /// the subscription asked).
    pub(super) fn backfill(&mut self, index: usize, item: Item, bytes: usize) {
        self.judge(index, item, bytes);
        self.backfill = self.backfill.saturating_add(1);
    }

    /// Counts an item and judges its order; its key, when it has one.
    fn judge(&mut self, index: usize, item: Item, bytes: usize) -> Option<u64> {
        let kind = self.subscriptions[index].kind;
        let order = self.kinds[kind].order();
        let state = &mut self.subscriptions[index];
        state.notifications = state.notifications.saturating_add(1);
        self.notifications = self.notifications.saturating_add(1);
        self.bytes = self.bytes.saturating_add(bytes as u64);
        match item.key {
            Key::Unnumbered => {
                state.unnumbered = state.unnumbered.saturating_add(1);
                None
            }
            Key::Identity(identity) => {
                if state.recent.contains(&identity) {
                    state.duplicates = state.duplicates.saturating_add(1);
                } else {
                    remember(&mut state.recent, identity);
                }
                Some(identity)
            }
            Key::Number(number) => {
                if state.recent.contains(&number) {
                    state.duplicates = state.duplicates.saturating_add(1);
                } else {
                    let last = if std::mem::take(&mut state.restarted) { None } else { state.last };
                    match last {
                        Some(last)
                            if order.has_gaps() && last.checked_add(1).is_some_and(|next| number > next) =>
                        {
                            state.gaps = state.gaps.saturating_add(number - last - 1);
                        }
                        Some(last) if order.has_order() && number < last => {
                            state.reorders = state.reorders.saturating_add(1);
                            if order.has_gaps() {
                                // It arrived late, not never: the gap counted when its
                                // successor came is undone.
                                state.gaps = state.gaps.saturating_sub(1);
                            }
                        }
                        _ => {}
                    }
                    remember(&mut state.recent, number);
                    if state.first.is_none_or(|first| number < first) {
                        state.first = Some(number);
                    }
                    if state.last.is_none_or(|last| number > last) {
                        state.last = Some(number);
                    }
                }
                Some(number)
            }
        }
    }

    pub(super) fn set_active(&mut self, index: usize, active: bool) {
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

    /// Ends the measured time at `end`: what arrives from now on is judged but not in the
    /// rates. A subscription whose socket's plan has it leave by `end` is not active at the
    /// end, however far its unsubscribe has got.
    pub(super) fn end_measuring(&mut self, end: Instant) {
        self.measuring = false;
        self.close_window();
        let mut active = 0;
        for state in &mut self.subscriptions {
            state.active_at_end = state.active && state.planned_leave.is_none_or(|leave| leave > end);
            active += u64::from(state.active_at_end);
        }
        self.at_end = MeasuredEnd { notifications: self.notifications, bytes: self.bytes, active };
    }

    /// What the live metrics show now.
    pub(super) fn live_figures(&self) -> crate::metrics::SubscriptionFigures {
        let sum = |f: fn(&SubscriptionState) -> u64| {
            self.subscriptions.iter().map(f).fold(0u64, u64::saturating_add)
        };
        crate::metrics::SubscriptionFigures {
            notifications: self.notifications,
            bytes: self.bytes,
            gaps: sum(|s| s.gaps),
            duplicates: sum(|s| s.duplicates),
            reorders: sum(|s| s.reorders),
            active: self.subscriptions.iter().filter(|s| s.active).count() as u64,
            ..Default::default()
        }
        .with_lag(&self.lag)
    }
}

fn remember(recent: &mut VecDeque<u64>, key: u64) {
    if recent.len() == RECENT_KEYS {
        recent.pop_front();
    }
    recent.push_back(key);
}

/// A histogram for the report, `None` when empty.
fn encoded(histogram: &Histogram<u64>) -> Option<String> {
    (!histogram.is_empty()).then(|| crate::util::hdr_codec::encode_histogram(histogram))
}

/// A subscription's gaps before its first notification and after its last.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub(super) struct EdgeGaps {
    pub(super) start: u64,
    pub(super) end: u64,
}

/// Gaps at the edges of each subscription's numbered items (blocks, slots), which the sequence
/// alone cannot see: items that reached some subscriber after this one was confirmed but
/// before its first notification, and items that reached some subscriber before the run's end
/// or its planned leave began (less a grace of the largest fan-out lag, at least 50 ms, for
/// items still on their way) after its last one. A subscription that received nothing misses
/// every such item.
pub(super) fn edge_gaps(collector: &Collector, end: Instant) -> Vec<EdgeGaps> {
    let grace = Duration::from_micros(collector.lag.max()).max(Duration::from_millis(50));
    let cutoff = end.checked_sub(grace).unwrap_or(collector.start);
    let mut by_kind: Vec<Vec<(Instant, u64)>> = vec![Vec::new(); collector.kinds.len()];
    for (&(kind, key), &arrived) in &collector.first_arrival {
        if collector.kinds[kind].order() == Order::Sequence {
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
            // A subscription that left by plan is judged until it began to leave.
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
            let due = (last_due - first_due).saturating_add(1);
            match (state.first, state.last) {
                (Some(first), Some(last)) => EdgeGaps {
                    start: first.saturating_sub(first_due).min(due),
                    end: last_due.saturating_sub(last),
                },
                _ => EdgeGaps { start: 0, end: due },
            }
        })
        .collect()
}

/// The report of a run: `collector`'s figures over `elapsed`.
pub(super) fn report(
    config: &SubscribeConfig,
    collector: &Collector,
    elapsed: Duration,
    interrupted: bool,
    started_at: String,
) -> SubscribeReport {
    let edges = edge_gaps(collector, collector.start + elapsed);
    let measured = collector.at_end;
    let seconds = elapsed.as_secs_f64().max(1e-9);
    let total = |values: &mut dyn Iterator<Item = u64>| values.fold(0u64, u64::saturating_add);
    let sum = |f: fn(&SubscriptionState) -> u64| total(&mut collector.subscriptions.iter().map(f));
    let edge_sum = total(&mut edges.iter().map(|edge| edge.start.saturating_add(edge.end)));
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
                subscribed: 0,
                notifications: 0,
                gaps: 0,
                duplicates: 0,
                reorders: 0,
                unnumbered: 0,
                gaps_apply: spec.order().has_gaps(),
                reorders_apply: spec.order().has_order(),
            };
            for (state, edge) in mine {
                figures.subscriptions += 1;
                figures.subscribed += u64::from(state.confirmed_at.is_some());
                figures.notifications = figures.notifications.saturating_add(state.notifications);
                figures.gaps = figures
                    .gaps
                    .saturating_add(state.gaps)
                    .saturating_add(edge.start)
                    .saturating_add(edge.end);
                figures.duplicates = figures.duplicates.saturating_add(state.duplicates);
                figures.reorders = figures.reorders.saturating_add(state.reorders);
                figures.unnumbered = figures.unnumbered.saturating_add(state.unnumbered);
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
        started_at,
        merged_from: Vec::new(),
        subscribers: config.subscribers as u64,
        subscriptions,
        subs_per_socket: config.subs_per_socket as u64,
        duration_us: config.duration.as_micros() as u64,
        elapsed_us: elapsed.as_micros() as u64,
        interrupted,
        subscribed: collector.subscriptions.iter().filter(|s| s.confirmed_at.is_some()).count() as u64,
        subscribe_errors: collector.subscribe_errors.clone(),
        first_subscribe_error: collector
            .first_subscribe_error
            .as_deref()
            .map(|message| crate::util::redact::text(&crate::util::printable::escape_controls(message))),
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
        produced_clock_ahead: collector.clock_ahead,
        gaps: sum(|s| s.gaps).saturating_add(edge_sum),
        gaps_at_edges: edge_sum,
        gaps_apply: config.kinds.iter().any(|kind| kind.order().has_gaps()),
        went_silent: edges
            .iter()
            .zip(&collector.subscriptions)
            .filter(|(edge, state)| state.active_at_end && edge.end >= SILENT_AFTER_ITEMS)
            .count() as u64,
        unsubscribed: collector.unsubscribed,
        unsubscribe_failed: collector.unsubscribe_failed,
        duplicates: sum(|s| s.duplicates),
        reorders: sum(|s| s.reorders),
        reorders_apply: config.kinds.iter().any(|kind| kind.order().has_order()),
        unnumbered: sum(|s| s.unnumbered),
        unknown_subscription: collector.unknown_subscription,
        not_json: collector.not_json,
        closed_by_server: collector.closed_by_server.iter().map(|(code, n)| (code.to_string(), *n)).collect(),
        closed_not_reading: collector.closed_not_reading,
        sockets_opened: collector.sockets_opened,
        connect_errors: collector.connect_errors,
        first_connect_error: collector
            .first_connect_error
            .as_deref()
            .map(crate::util::printable::escape_controls)
            .map(String::from),
        reconnects: collector.reconnects,
        per_kind,
        lag_growth: crate::report::subscribe::LagGrowth::from_series(
            &collector.series,
            elapsed.as_micros() as u64,
        ),
        series: collector.series.clone(),
        slot_stages: collector.slot_stages.report(),
        backfill: collector.backfill,
        from_slot_refused: collector.from_slot_refused,
        stalls: collector.stalls,
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
    use crate::settings::Target;
    use crate::subscribe::kinds::Produced;
    use std::time::UNIX_EPOCH;

    fn collector(kinds: &[&str], subscribers: usize) -> Collector {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let kinds = kinds.iter().map(|kind| SubscriptionKind::parse(kind).unwrap()).collect();
        let mut config = SubscribeConfig::new(target, kinds, Duration::from_secs(1));
        config.subscribers = subscribers;
        Collector::new(&config, Instant::now())
    }

    fn number(key: u64) -> Item {
        Item { key: Key::Number(key), produced: None }
    }

    #[test]
    fn gaps_duplicates_and_reorders_are_counted_exactly() {
        let mut collector = collector(&["slot"], 1);
        let (start, wall) = (collector.start, SystemTime::now());
        // 1, 2, 4 (gap 3), 4 (duplicate), 3 (late: a reorder, not a gap), 7 (gaps 5, 6).
        for key in [1, 2, 4, 4, 3, 7] {
            collector.notification(0, number(key), 10, start, wall);
        }
        let state = &collector.subscriptions[0];
        assert_eq!((state.gaps, state.duplicates, state.reorders), (2, 1, 1));
        assert_eq!(collector.notifications, 6);
    }

    #[test]
    fn block_numbers_near_the_top_of_u64_do_not_wrap_the_gaps() {
        let mut collector = collector(&["newHeads"], 1);
        let (start, wall) = (collector.start, SystemTime::now());
        for key in [u64::MAX - 1, u64::MAX, 0, 5] {
            collector.notification(0, number(key), 10, start, wall);
        }
        let state = &collector.subscriptions[0];
        // MAX-1, MAX in order; 0 and 5 come after the largest number: reorders, never a wrap.
        assert_eq!((state.gaps, state.reorders), (0, 2), "{state:?}");
        // A subscription that saw only 0, while the others saw 0 and u64::MAX: the due count
        // saturates instead of wrapping to 0.
        let mut collector = collector_with_arrivals(&[0, u64::MAX]);
        collector.subscriptions[1].first = Some(0);
        collector.subscriptions[1].last = Some(0);
        let edges = edge_gaps(&collector, collector.start + Duration::from_secs(10));
        assert_eq!(edges[1].end, u64::MAX, "{edges:?}");
        let report =
            report(&config_for(&collector), &collector, Duration::from_secs(10), false, String::new());
        assert!(report.gaps >= u64::MAX - 1, "{}", report.gaps);
    }

    fn collector_with_arrivals(keys: &[u64]) -> Collector {
        let mut collector = collector(&["newHeads"], 2);
        let wall = SystemTime::now();
        collector.subscriptions[1].confirmed_at = Some(collector.start);
        for (offset, &key) in keys.iter().enumerate() {
            let at = collector.start + Duration::from_millis(offset as u64 + 1);
            collector.notification(0, number(key), 10, at, wall);
        }
        collector
    }

    fn config_for(collector: &Collector) -> SubscribeConfig {
        let target = Target::parse("ws://127.0.0.1:1/").unwrap();
        let mut config = SubscribeConfig::new(target, collector.kinds.clone(), Duration::from_secs(10));
        config.subscribers = collector.subscriptions.len() / collector.kinds.len();
        config
    }

    #[test]
    fn a_head_whose_number_does_not_parse_is_counted_apart_not_as_gaps() {
        let mut collector = collector(&["newHeads"], 1);
        let (start, wall) = (collector.start, SystemTime::now());
        let heads = SubscriptionKind::parse("newHeads").unwrap();
        for payload in [&br#"{"number":"0x1"}"#[..], br#"{"number":"pending"}"#, br#"{"number":"0x2"}"#] {
            collector.notification(0, heads.item(payload), 10, start, wall);
        }
        let state = &collector.subscriptions[0];
        assert_eq!((state.gaps, state.unnumbered, state.reorders, state.duplicates), (0, 1, 0, 0));
        let report =
            report(&config_for(&collector), &collector, Duration::from_secs(1), false, String::new());
        assert_eq!(report.unnumbered, 1);
        assert!(report.render_text().contains("unnumbered 1"), "{}", report.render_text());
    }

    #[test]
    fn pending_transactions_out_of_hash_order_are_not_reorders() {
        let mut collector = collector(&["newPendingTransactions"], 1);
        let (start, wall) = (collector.start, SystemTime::now());
        let pending = SubscriptionKind::parse("newPendingTransactions").unwrap();
        // One sender's transactions in order; their hashes are in no order at all.
        for hash in ["\"0xff\"", "\"0x01\"", "\"0x80\"", "\"0x01\""] {
            collector.notification(0, pending.item(hash.as_bytes()), 10, start, wall);
        }
        let state = &collector.subscriptions[0];
        assert_eq!((state.reorders, state.gaps, state.duplicates), (0, 0, 1));
        let report =
            report(&config_for(&collector), &collector, Duration::from_secs(1), false, String::new());
        assert!(!report.reorders_apply && !report.gaps_apply);
        let text = report.render_text();
        assert!(text.contains("gaps n/a") && text.contains("reorders n/a"), "{text}");
    }

    #[test]
    fn production_times_ahead_of_our_clock_are_counted_apart_not_as_zero_lag() {
        let mut collector = collector(&["slot"], 1);
        let start = collector.start;
        let wall = UNIX_EPOCH + Duration::from_secs(1_000);
        let ahead = Produced { at: wall + Duration::from_millis(300), seconds: false };
        let behind = Produced { at: wall - Duration::from_millis(2), seconds: false };
        collector.notification(0, Item { key: Key::Number(1), produced: Some(ahead) }, 10, start, wall);
        collector.notification(0, Item { key: Key::Number(2), produced: Some(behind) }, 10, start, wall);
        assert_eq!(collector.produced_lag.len(), 1);
        assert!(collector.produced_lag.min() >= 1_990, "{}", collector.produced_lag.min());
        let report =
            report(&config_for(&collector), &collector, Duration::from_secs(1), false, String::new());
        assert_eq!(report.produced_clock_ahead, 1);
        assert!(
            report.render_text().contains("1 item(s) produced after they arrived"),
            "{}",
            report.render_text()
        );
    }

    #[test]
    fn whole_second_block_timestamps_print_the_lag_in_whole_seconds() {
        let mut collector = collector(&["newHeads"], 1);
        let start = collector.start;
        let wall = UNIX_EPOCH + Duration::from_micros(1_002_345_678);
        let header = Produced { at: UNIX_EPOCH + Duration::from_secs(1_000), seconds: true };
        collector.notification(0, Item { key: Key::Number(1), produced: Some(header) }, 10, start, wall);
        let report =
            report(&config_for(&collector), &collector, Duration::from_secs(1), false, String::new());
        let text = report.render_text();
        assert!(text.contains("Lag behind production (seconds): p50 2s p90 2s p99 2s max 2s"), "{text}");
        let html = crate::report::render_subscribe_html(&report);
        assert!(html.contains("p50 2s · p90 2s · p99 2s · max 2s (seconds)"), "{html}");
    }

    #[test]
    fn items_sent_after_a_planned_leave_began_are_not_gaps() {
        // Subscription 1 confirmed, received 1..=3, began to leave at 300 ms; block 4 reached
        // subscription 0 at 320 ms, while the unsubscribe was on its way; the leave ended at
        // 450 ms. Block 4 was not due.
        let mut collector = collector(&["newHeads"], 2);
        let start = collector.start;
        let wall = SystemTime::now();
        collector.set_active(0, true);
        collector.set_active(1, true);
        for key in 1..=3 {
            let at = start + Duration::from_millis(100 * key);
            collector.notification(0, number(key), 10, at, wall);
            collector.notification(1, number(key), 10, at, wall);
        }
        collector.notification(0, number(4), 10, start + Duration::from_millis(320), wall);
        collector.subscriptions[1].begin_leave(start + Duration::from_millis(300));
        collector.subscriptions[1].leave(start + Duration::from_millis(450));
        let edges = edge_gaps(&collector, start + Duration::from_secs(1));
        assert_eq!(edges[1], EdgeGaps::default(), "{edges:?}");
    }

    #[test]
    fn a_subscription_planned_to_leave_by_the_end_is_not_active_at_the_end() {
        let mut collector = collector(&["newHeads"], 2);
        let end = collector.start + Duration::from_secs(1);
        collector.set_active(0, true);
        collector.set_active(1, true);
        collector.subscriptions[0].planned_leave = Some(end);
        collector.subscriptions[1].planned_leave = Some(end + Duration::from_secs(1));
        collector.end_measuring(end);
        assert_eq!(collector.at_end.active, 1);
    }

    #[test]
    fn lag_growth_compares_the_first_whole_seconds_p99_with_the_last() {
        // Second 0: 2 ms behind production; second 1: 3 ms; second 2: 80 ms (falling behind);
        // second 3 is cut short by the end and not judged.
        let mut collector = collector(&["slot"], 1);
        let start = collector.start;
        let produced_at = UNIX_EPOCH + Duration::from_secs(1_000);
        for (second, behind_ms) in [(0u64, 2u64), (1, 3), (2, 80), (3, 500)] {
            for n in 0..10 {
                let at = start + Duration::from_millis(second * 1_000 + n * 50);
                let wall = produced_at + Duration::from_millis(behind_ms);
                let item = Item {
                    key: Key::Number(second * 10 + n),
                    produced: Some(Produced { at: produced_at, seconds: false }),
                };
                collector.notification(0, item, 10, at, wall);
            }
        }
        collector.end_measuring(start + Duration::from_millis(3_500));
        let p99: Vec<Option<u64>> = collector.series.iter().map(|point| point.produced_lag_p99_us).collect();
        assert_eq!(p99.len(), 4);
        assert!(p99.iter().all(Option::is_some), "{p99:?}");
        let report =
            report(&config_for(&collector), &collector, Duration::from_millis(3_500), false, String::new());
        let growth = report.lag_growth.clone().expect("three whole seconds with a lag");
        assert_eq!((growth.first_second, growth.last_second), (0, 2));
        assert!(growth.first_p99_us.abs_diff(2_000) <= 2 && growth.last_p99_us.abs_diff(80_000) <= 80);
        assert!(!growth.keeps_up);
        assert!(report.render_text().contains("the feed falls behind"), "{}", report.render_text());
        // Flat: it keeps up.
        let mut flat = report.series.clone();
        flat[2].produced_lag_p99_us = Some(3_000);
        assert!(crate::report::subscribe::LagGrowth::from_series(&flat, 3_500_000).unwrap().keeps_up);
    }

    #[test]
    fn fan_out_lag_counts_from_the_first_arrival() {
        let mut collector = collector(&["newHeads"], 2);
        let (start, wall) = (collector.start, SystemTime::now());
        collector.notification(0, number(9), 10, start, wall);
        collector.notification(1, number(9), 10, start + Duration::from_millis(30), wall);
        assert_eq!(collector.lag.len(), 2);
        assert!(collector.lag.max() >= 29_900 && collector.lag.max() <= 30_100, "{}", collector.lag.max());
    }
}
