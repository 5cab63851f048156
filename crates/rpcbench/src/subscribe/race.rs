//! Races between feeds (`subscribe --race a=URL b=URL`): the same subscriptions to every
//! endpoint at once, on one thread, and for each item (a slot at a stage, a transaction, an
//! account write) which endpoint delivered it first. Per kind and endpoint: the share of items
//! it saw first (a tie at the same instant is shared, never broken by name), its delay behind
//! the first (p50/p90/p99, 0 when it won), and how many items every endpoint saw; per pair
//! against the first endpoint, a verdict from the per-item differences: the mean difference
//! with its 95% interval (`crate::verdict`'s bootstrap), and "faster", "slower", "no
//! difference" (the interval inside the tie band) or "not enough data".
//!
//! A kind that follows slots through their stages (`geyser-stages`) is also raced stage by
//! stage: one more row set per stage (`geyser-stages: first shred received`...), each with its
//! own first-seen shares, delays behind the first and verdicts.
//!
//! Items are matched by the kind's key (`kinds::Key`), in a table bounded to
//! [`MAX_TRACKED`] items (the oldest leave first and are judged as they leave), so a flood
//! cannot grow memory.

use std::cell::RefCell;
use std::collections::{HashMap, VecDeque};
use std::rc::Rc;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use serde::Serialize;

use super::kinds::{Key, SubscriptionKind};
use crate::engine::StopHandle;
use crate::field::{Field, SettingError};
use crate::settings::{Target, TlsOptions};
use crate::transport::connect::{Alpn, Connector};
use crate::transport::feed::{Feed, FeedEvent, FeedOpener};
use crate::transport::grpc::{GeyserOpener, XToken};

/// Items tracked at once, over all kinds.
pub const MAX_TRACKED: usize = 65_536;

/// The tie band unless told otherwise: a mean difference within 1 ms either way is no
/// difference.
pub const DEFAULT_RACE_TIE: Duration = Duration::from_millis(1);

/// A race's settings.
#[derive(Debug, Clone)]
pub struct RaceConfig {
    /// The endpoints by name (`a=grpc://...`); the first is the one the others are judged
    /// against.
    pub endpoints: Vec<(String, Target)>,
    /// What each endpoint is subscribed to (Geyser kinds).
    pub kinds: Vec<SubscriptionKind>,
    /// How long to race.
    pub duration: Duration,
    /// The `x-token` sent to every endpoint.
    pub x_token: Option<XToken>,
    /// TLS settings (grpcs).
    pub tls: TlsOptions,
    /// Time allowed to connect.
    pub connect_timeout: Duration,
    /// The largest update accepted.
    pub max_message: usize,
    /// The tie band of the verdict.
    pub tie: Duration,
}

impl RaceConfig {
    /// A race of `duration` between `endpoints` over `kinds`.
    pub fn new(endpoints: Vec<(String, Target)>, kinds: Vec<SubscriptionKind>, duration: Duration) -> Self {
        Self {
            endpoints,
            kinds,
            duration,
            x_token: None,
            tls: TlsOptions::default(),
            connect_timeout: Duration::from_secs(3),
            max_message: 16 * 1024 * 1024,
            tie: DEFAULT_RACE_TIE,
        }
    }
}

/// Why a race could not run.
#[derive(Debug)]
pub enum RaceError {
    /// Fewer than two endpoints, a name used twice, a URL that is not a gRPC feed, a kind
    /// that is not a Geyser kind, an x-token that cannot be sent, a CA file not usable.
    Config(SettingError),
    /// An endpoint could not be resolved or its TLS prepared.
    Setup(String),
    /// The runtime could not start.
    Runtime(std::io::Error),
}

impl std::fmt::Display for RaceError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RaceError::Config(err) => err.fmt(f),
            RaceError::Setup(message) => f.write_str(message),
            RaceError::Runtime(err) => write!(f, "cannot start: {err}"),
        }
    }
}

impl std::error::Error for RaceError {}

/// One endpoint's figures for one kind.
#[derive(Debug, Clone, Serialize)]
pub struct RaceRow {
    /// The endpoint's name.
    pub endpoint: String,
    /// Items it delivered.
    pub seen: u64,
    /// Items it delivered first (a tie shared).
    pub first: f64,
    /// `first` over the items judged.
    pub first_share: f64,
    /// Delay behind the first, microseconds (0 when it won): p50, p90, p99.
    pub delay_p50_us: u64,
    /// p90.
    pub delay_p90_us: u64,
    /// p99.
    pub delay_p99_us: u64,
    /// Its connection or subscription failed (the first reason).
    pub failure: Option<String>,
}

/// The verdict of one endpoint against the first.
#[derive(Debug, Clone, Serialize)]
pub struct RaceVerdict {
    /// The endpoint judged.
    pub endpoint: String,
    /// The endpoint it is judged against (the first).
    pub against: String,
    /// Items both delivered.
    pub items: u64,
    /// The mean of (its arrival − the first endpoint's), microseconds: positive is slower.
    pub mean_us: f64,
    /// The 95% interval of that mean, microseconds.
    pub interval_us: Option<(f64, f64)>,
    /// What can be said.
    pub judgement: String,
}

/// One kind's race.
#[derive(Debug, Clone, Serialize)]
pub struct RaceKind {
    /// The kind's name.
    pub kind: String,
    /// Items judged (seen by at least one endpoint).
    pub items: u64,
    /// Items every endpoint delivered.
    pub seen_by_all: u64,
    /// Per endpoint.
    pub rows: Vec<RaceRow>,
    /// Per endpoint after the first.
    pub verdicts: Vec<RaceVerdict>,
}

/// What a race found.
#[derive(Debug, Clone, Serialize)]
pub struct RaceReport {
    /// The endpoints' names, in order.
    pub endpoints: Vec<String>,
    /// The race's length.
    pub duration_us: u64,
    /// The tie band, microseconds.
    pub tie_us: u64,
    /// Per kind.
    pub kinds: Vec<RaceKind>,
}

/// Arrivals of one item at each endpoint.
struct Arrivals {
    at: Vec<Option<Instant>>,
}

/// Per-kind accumulators.
struct KindTally {
    items: u64,
    seen_by_all: u64,
    seen: Vec<u64>,
    first: Vec<f64>,
    delay: Vec<Histogram<u64>>,
    /// Per endpoint after the first: the differences to the first endpoint, microseconds
    /// (bounded like the table).
    differences: Vec<VecDeque<f64>>,
}

struct Table {
    endpoints: usize,
    items: HashMap<(usize, Key), Arrivals>,
    order: VecDeque<(usize, Key)>,
    tallies: Vec<KindTally>,
    failures: Vec<Option<String>>,
}

impl Table {
    fn new(endpoints: usize, kinds: usize) -> Self {
        let histogram = || Histogram::new_with_bounds(1, 3_600_000_000, 3).expect("valid bounds");
        Self {
            endpoints,
            items: HashMap::new(),
            order: VecDeque::new(),
            tallies: (0..kinds)
                .map(|_| KindTally {
                    items: 0,
                    seen_by_all: 0,
                    seen: vec![0; endpoints],
                    first: vec![0.0; endpoints],
                    delay: (0..endpoints).map(|_| histogram()).collect(),
                    differences: vec![VecDeque::new(); endpoints],
                })
                .collect(),
            failures: vec![None; endpoints],
        }
    }

    fn arrived(&mut self, kind: usize, key: Key, endpoint: usize, at: Instant) {
        if matches!(key, Key::Unnumbered) {
            return;
        }
        let endpoints = self.endpoints;
        let entry = self.items.entry((kind, key)).or_insert_with(|| Arrivals { at: vec![None; endpoints] });
        if entry.at[endpoint].is_none() {
            entry.at[endpoint] = Some(at);
        }
        if entry.at.iter().all(Option::is_some) {
            if let Some(arrivals) = self.items.remove(&(kind, key)) {
                self.judge(kind, &arrivals);
            }
            return;
        }
        if self.order.back() != Some(&(kind, key)) {
            self.order.push_back((kind, key));
        }
        while self.items.len() > MAX_TRACKED {
            let Some(oldest) = self.order.pop_front() else { break };
            if let Some(arrivals) = self.items.remove(&oldest) {
                self.judge(oldest.0, &arrivals);
            }
        }
    }

    /// Counts an item: who saw it, who first, how far behind the others were.
    fn judge(&mut self, kind: usize, arrivals: &Arrivals) {
        let Some(first) = arrivals.at.iter().flatten().min().copied() else { return };
        let tally = &mut self.tallies[kind];
        tally.items += 1;
        if arrivals.at.iter().all(Option::is_some) {
            tally.seen_by_all += 1;
        }
        let winners = arrivals.at.iter().filter(|at| **at == Some(first)).count() as f64;
        for (endpoint, at) in arrivals.at.iter().enumerate() {
            let Some(at) = at else { continue };
            tally.seen[endpoint] += 1;
            if *at == first {
                tally.first[endpoint] += 1.0 / winners;
            }
            let behind = at.duration_since(first).as_micros() as u64;
            crate::record::record_us(&mut tally.delay[endpoint], behind);
            if endpoint > 0 {
                if let Some(baseline) = arrivals.at[0] {
                    let difference = if *at >= baseline {
                        at.duration_since(baseline).as_micros() as f64
                    } else {
                        -(baseline.duration_since(*at).as_micros() as f64)
                    };
                    let differences = &mut tally.differences[endpoint];
                    if differences.len() == MAX_TRACKED {
                        differences.pop_front();
                    }
                    differences.push_back(difference);
                }
            }
        }
    }

    fn finish(mut self) -> Self {
        let left: Vec<(usize, Key)> = self.order.drain(..).collect();
        for key in left {
            if let Some(arrivals) = self.items.remove(&key) {
                self.judge(key.0, &arrivals);
            }
        }
        self
    }
}

/// Judges a mean difference with its interval against the tie band.
fn judgement(interval: Option<(f64, f64)>, tie_us: f64) -> String {
    match interval {
        None => "not enough data".into(),
        Some((low, high)) if low > tie_us => format!("slower by {:.2} to {:.2} ms", low / 1e3, high / 1e3),
        Some((low, high)) if high < -tie_us => {
            format!("faster by {:.2} to {:.2} ms", -high / 1e3, -low / 1e3)
        }
        Some((low, high)) if low >= -tie_us && high <= tie_us => "no difference".into(),
        Some(_) => "not enough data".into(),
    }
}

/// A race's endpoints or kinds that are not usable.
fn race_setting(message: String) -> RaceError {
    RaceError::Config(SettingError::new(Field::Race, message))
}

/// Races the endpoints until the duration is over (or `stop`), then reports.
pub fn run(config: &RaceConfig, stop: &StopHandle) -> Result<RaceReport, RaceError> {
    if config.endpoints.len() < 2 {
        return Err(race_setting("give at least two endpoints, NAME=grpc://HOST:PORT".into()));
    }
    for (index, (name, target)) in config.endpoints.iter().enumerate() {
        if config.endpoints[..index].iter().any(|(other, _)| other == name) {
            return Err(race_setting(format!("the name '{name}' is given twice")));
        }
        if !target.grpc {
            return Err(race_setting(format!("'{name}': a race takes grpc:// or grpcs:// feeds")));
        }
    }
    if let Some(kind) = config.kinds.iter().find(|kind| !kind.is_geyser()) {
        return Err(race_setting(format!("'{}' is not a Geyser kind", kind.name())));
    }
    let mut openers = Vec::with_capacity(config.endpoints.len());
    for (name, target) in &config.endpoints {
        let connector = Connector::with_alpn(target, &config.tls, config.connect_timeout, Alpn::Http2)
            .map_err(|err| match err.as_setting() {
                Some(setting) => RaceError::Config(setting),
                None => RaceError::Setup(format!("{name}: {err}")),
            })?;
        let tls = target.scheme == crate::settings::Scheme::Https;
        let opener = GeyserOpener::new(
            connector,
            tls,
            &target.host,
            target.port,
            config.x_token.as_ref(),
            config.max_message,
        )
        .map_err(|err| RaceError::Config(err.as_setting()))?;
        openers.push(opener);
    }
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(RaceError::Runtime)?;
    let local = tokio::task::LocalSet::new();
    let lanes = Lanes::new(&config.kinds);
    let table = Rc::new(RefCell::new(Table::new(config.endpoints.len(), lanes.names.len())));
    let start = Instant::now();
    let end = start + config.duration;
    local.block_on(&runtime, async {
        let mut tasks = Vec::new();
        for (endpoint, opener) in openers.into_iter().enumerate() {
            tasks.push(tokio::task::spawn_local(race_one(
                endpoint,
                opener,
                config.kinds.clone(),
                lanes.first_stage.clone(),
                table.clone(),
                end,
            )));
        }
        while Instant::now() < end && !stop.is_stopped() {
            tokio::time::sleep(Duration::from_millis(20).min(end.saturating_duration_since(Instant::now())))
                .await;
        }
        for task in tasks {
            task.abort();
        }
    });
    drop(local);
    let table =
        Rc::try_unwrap(table).map_err(|_| RaceError::Setup("internal: the race is still held".into()))?;
    let table = table.into_inner().finish();
    let tie_us = config.tie.as_micros() as f64;
    let names: Vec<String> = config.endpoints.iter().map(|(name, _)| name.clone()).collect();
    let kinds = lanes
        .names
        .iter()
        .zip(&table.tallies)
        .map(|(lane, tally)| RaceKind {
            kind: lane.clone(),
            items: tally.items,
            seen_by_all: tally.seen_by_all,
            rows: names
                .iter()
                .enumerate()
                .map(|(endpoint, name)| RaceRow {
                    endpoint: name.clone(),
                    seen: tally.seen[endpoint],
                    first: tally.first[endpoint],
                    first_share: if tally.items == 0 {
                        0.0
                    } else {
                        tally.first[endpoint] / tally.items as f64
                    },
                    delay_p50_us: tally.delay[endpoint].value_at_quantile(0.5),
                    delay_p90_us: tally.delay[endpoint].value_at_quantile(0.9),
                    delay_p99_us: tally.delay[endpoint].value_at_quantile(0.99),
                    failure: table.failures[endpoint].clone(),
                })
                .collect(),
            verdicts: (1..names.len())
                .map(|endpoint| {
                    let differences: Vec<f64> = tally.differences[endpoint].iter().copied().collect();
                    let interval = crate::verdict::bootstrap_mean_interval(
                        &differences,
                        crate::verdict::RESAMPLES,
                        crate::verdict::BOOTSTRAP_SEED,
                    );
                    let mean = if differences.is_empty() {
                        0.0
                    } else {
                        differences.iter().sum::<f64>() / differences.len() as f64
                    };
                    RaceVerdict {
                        endpoint: names[endpoint].clone(),
                        against: names[0].clone(),
                        items: differences.len() as u64,
                        mean_us: mean,
                        interval_us: interval,
                        judgement: judgement(if differences.len() < 2 { None } else { interval }, tie_us),
                    }
                })
                .collect(),
        })
        .collect();
    Ok(RaceReport {
        endpoints: names,
        duration_us: config.duration.as_micros() as u64,
        tie_us: tie_us as u64,
        kinds,
    })
}

/// What is raced: each kind, then each stage of the kinds that follow slots through stages.
struct Lanes {
    /// The rows' names, kinds first.
    names: Vec<String>,
    /// Per kind, the lane of its first stage (the stages' lanes follow it in order).
    first_stage: Vec<Option<usize>>,
}

impl Lanes {
    fn new(kinds: &[SubscriptionKind]) -> Self {
        let mut names: Vec<String> = kinds.iter().map(|kind| kind.name().to_string()).collect();
        let first_stage = kinds
            .iter()
            .map(|kind| {
                kind.has_stages().then(|| {
                    let first = names.len();
                    names.extend(
                        super::slot_stages::STAGE_NAMES
                            .iter()
                            .map(|stage| format!("{}: {stage}", kind.name())),
                    );
                    first
                })
            })
            .collect();
        Self { names, first_stage }
    }
}

/// One endpoint: subscribe every kind, record each item's arrival until the end.
async fn race_one(
    endpoint: usize,
    opener: GeyserOpener,
    kinds: Vec<SubscriptionKind>,
    first_stage: Vec<Option<usize>>,
    table: Rc<RefCell<Table>>,
    end: Instant,
) {
    let fail = |reason: String| {
        table.borrow_mut().failures[endpoint].get_or_insert(reason);
    };
    let mut feed = match opener.open().await {
        Ok(feed) => feed,
        Err(err) => return fail(format!("cannot connect: {err}")),
    };
    for (position, kind) in kinds.iter().enumerate() {
        if feed.subscribe(position, &kind.call()).await.is_err() {
            return fail("the subscription could not be sent".into());
        }
    }
    while Instant::now() < end {
        let event = tokio::select! {
            event = feed.next() => event,
            () = tokio::time::sleep_until(end.into()) => break,
        };
        match event {
            FeedEvent::Item(delivery) => {
                let Some(kind) = kinds.get(delivery.position) else { continue };
                let key = kind.item(delivery.payload()).key;
                let mut table = table.borrow_mut();
                table.arrived(delivery.position, key, endpoint, delivery.arrived);
                if let Some(first) = first_stage.get(delivery.position).copied().flatten() {
                    if let Some((_, stage)) = kind.slot_stage(delivery.payload()) {
                        table.arrived(first + stage, key, endpoint, delivery.arrived);
                    }
                }
            }
            FeedEvent::Refused { message, .. } => fail(message),
            FeedEvent::Ended(end) => return fail(format!("the feed ended: {end:?}")),
            _ => {}
        }
    }
    feed.close().await;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_tie_is_shared_and_the_delay_behind_the_first_is_zero_for_the_winner() {
        let mut table = Table::new(2, 1);
        let t0 = Instant::now();
        table.arrived(0, Key::Number(1), 0, t0);
        table.arrived(0, Key::Number(1), 1, t0 + Duration::from_millis(5));
        table.arrived(0, Key::Number(2), 1, t0);
        table.arrived(0, Key::Number(2), 0, t0);
        table.arrived(0, Key::Number(3), 1, t0);
        let table = table.finish();
        let tally = &table.tallies[0];
        assert_eq!((tally.items, tally.seen_by_all), (3, 2));
        assert_eq!(tally.first, [1.5, 1.5]);
        assert_eq!(tally.delay[0].max(), 0);
        assert_eq!(tally.differences[1].iter().copied().collect::<Vec<_>>(), [5000.0, 0.0]);
    }

    #[test]
    fn the_verdict_needs_the_whole_interval_beyond_the_tie_band() {
        assert_eq!(judgement(Some((4_000.0, 6_000.0)), 1_000.0), "slower by 4.00 to 6.00 ms");
        assert_eq!(judgement(Some((-6_000.0, -4_000.0)), 1_000.0), "faster by 4.00 to 6.00 ms");
        assert_eq!(judgement(Some((-500.0, 800.0)), 1_000.0), "no difference");
        assert_eq!(judgement(Some((500.0, 1_500.0)), 1_000.0), "not enough data");
        assert_eq!(judgement(None, 1_000.0), "not enough data");
    }
}
