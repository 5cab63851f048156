//! Who is fresh: a head race between targets with no load. Each target's chain head is
//! followed through a [`HeadSource`] (today by polling `eth_blockNumber`, `getSlot` or a Geyser
//! endpoint's `GetSlot` at a stated interval; a subscription-based source can plug in behind
//! the same seam), and
//! [`analyse`] reports per target, from the samples alone (no clock): the lag behind the
//! highest head seen across targets (p50, p99, max), the share of samples at the tip, the
//! samples more than `stale_after` behind (OpenChainBench's "stale"), and the block-visibility
//! delay (when each target first showed a block, against the earliest target, in ms).
//!
//! Targets are polled in turn, so within one polling round the order says nothing about who
//! had a block first: targets that first showed a block in the same round tie, share the
//! "first" of it (a tie of k gives each 1/k, as the Geyser race does) and have no delay.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::client::Endpoint;
use crate::engine::StopHandle;
use crate::metrics::{HeadLagFigures, LiveMetrics};

/// Where a target's head comes from.
pub trait HeadSource: Send {
    /// The newest head the target shows now: its block number or slot.
    fn head(&mut self) -> Result<u64, String>;

    /// The heads claimed so far that the target could not serve (phantom freshness); 0 when
    /// the source does not check.
    fn phantom(&self) -> u64 {
        0
    }
}

/// A head read by polling: `eth_blockNumber` (hex) or `getSlot` (a number), whichever the
/// target answers first; a Geyser endpoint (`grpc://`) by its unary `GetSlot` call.
#[derive(Debug)]
pub struct PolledHead {
    endpoint: Endpoint,
    method: Option<&'static str>,
    /// The highest head whose block was fetched to check it.
    checked: Option<u64>,
    phantom: u64,
}

/// Solana's error for a slot whose block the node does not have (yet).
const BLOCK_NOT_AVAILABLE: i64 = -32004;

impl PolledHead {
    /// Polls `endpoint`; each new head claimed is checked by fetching its block
    /// (`eth_getBlockByNumber`, `getBlock`).
    pub fn new(endpoint: Endpoint) -> Self {
        Self { endpoint, method: None, checked: None, phantom: 0 }
    }

    /// Whether the node cannot serve the block of the head it claimed (none: the fetch failed
    /// otherwise, so nothing is known).
    fn is_phantom(&self, method: &str, head: u64) -> Option<bool> {
        if method == "eth_blockNumber" {
            let params = serde_json::json!([format!("0x{head:x}"), false]);
            return self
                .endpoint
                .call("eth_getBlockByNumber", Some(&params))
                .ok()
                .map(|block| block.is_null());
        }
        let options = serde_json::json!({"transactionDetails": "none", "rewards": false, "maxSupportedTransactionVersion": 0});
        match self.endpoint.call("getBlock", Some(&serde_json::json!([head, options]))) {
            Ok(_) => Some(false),
            Err(crate::client::CallError::Rpc { code: BLOCK_NOT_AVAILABLE, .. }) => Some(true),
            // A skipped slot or an error that says nothing about the head.
            Err(_) => None,
        }
    }
}

/// A head from a JSON-RPC result: a `0x` quantity or a number.
pub fn head_of(value: &Value) -> Option<u64> {
    match value {
        Value::String(text) => u64::from_str_radix(text.strip_prefix("0x")?, 16).ok(),
        Value::Number(number) => number.as_u64(),
        _ => None,
    }
}

impl HeadSource for PolledHead {
    fn head(&mut self) -> Result<u64, String> {
        if self.endpoint.is_grpc() {
            // Geyser has no call to fetch a block by: its heads are not checked for phantoms.
            return self.endpoint.geyser_slot().map_err(|err| format!("GetSlot: {err}"));
        }
        let chosen: [&'static str; 1];
        let methods: &[&'static str] = match self.method {
            Some(method) => {
                chosen = [method];
                &chosen
            }
            None => &["eth_blockNumber", "getSlot"],
        };
        let mut last = String::new();
        for method in methods {
            match self.endpoint.call(method, None) {
                Ok(value) => {
                    let head =
                        head_of(&value).ok_or_else(|| format!("{method} answered {value}, not a head"))?;
                    self.method = Some(method);
                    if self.checked.is_none_or(|checked| head > checked) {
                        self.checked = Some(head);
                        self.phantom += u64::from(self.is_phantom(method, head) == Some(true));
                    }
                    return Ok(head);
                }
                Err(err) => last = format!("{method}: {err}"),
            }
        }
        Err(last)
    }

    fn phantom(&self) -> u64 {
        self.phantom
    }
}

/// One reading of one target: microseconds from the start, and the head (none: the poll
/// failed).
pub type HeadSample = (u64, Option<u64>);

/// Polls every source once per `interval` (in turn) for `length` or until stopped, and
/// returns each source's samples.
pub fn follow(
    sources: &mut [Box<dyn HeadSource>],
    interval: Duration,
    length: Duration,
    stop: &StopHandle,
) -> Vec<Vec<HeadSample>> {
    let start = Instant::now();
    let mut samples: Vec<Vec<HeadSample>> = sources.iter().map(|_| Vec::new()).collect();
    let mut tick = 0u32;
    while !stop.is_stopped() && start.elapsed() < length {
        for (source, out) in sources.iter_mut().zip(samples.iter_mut()) {
            let head = source.head().ok();
            out.push((start.elapsed().as_micros() as u64, head));
        }
        tick += 1;
        let next = start + interval * tick;
        while !stop.is_stopped() && Instant::now() < next {
            std::thread::sleep(next.saturating_duration_since(Instant::now()).min(Duration::from_millis(50)));
        }
    }
    samples
}

/// What the heads of one target were like.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct TargetHeads {
    /// The target's name.
    pub name: String,
    /// Samples with a head.
    pub samples: u64,
    /// Polls that failed.
    pub failed: u64,
    /// Lag behind the highest head seen across targets so far: median, 99th percentile, max.
    pub lag_p50: u64,
    /// 99th percentile lag.
    pub lag_p99: u64,
    /// Largest lag.
    pub lag_max: u64,
    /// Share of samples exactly at the highest head seen.
    pub at_tip: f64,
    /// Samples more than `stale_after` behind.
    pub stale: u64,
    /// Share of the blocks it showed (of those another target showed too) that it showed
    /// first: a tie of k targets in the same polling round gives each 1/k.
    pub first_seen: f64,
    /// Block-visibility delay behind the earliest target to show the same block, ms: median,
    /// 90th and 99th percentile, over the blocks another target showed too.
    pub delay_ms_p50: f64,
    /// 90th percentile.
    pub delay_ms_p90: f64,
    /// 99th percentile.
    pub delay_ms_p99: f64,
    /// New heads claimed whose block the target could not serve (phantom freshness).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub phantom: u64,
    /// Readings lower than the target's previous one: a reorg or rollback.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub reorgs: u64,
    /// Jumps of more than one block between two readings while the highest head across
    /// targets advanced by less: the target stalled and caught up.
    #[serde(default, skip_serializing_if = "is_zero")]
    pub gaps: u64,
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Heads that went backwards (a reorg or rollback) and jumps the chain's progress cannot
/// explain, per target: each reading against the target's previous one.
#[derive(Debug, Clone, Default)]
struct Jumps {
    /// Per target: its previous head and the highest head seen across targets then.
    previous: Vec<Option<(u64, u64)>>,
    reorgs: Vec<u64>,
    gaps: Vec<u64>,
}

impl Jumps {
    fn new(targets: usize) -> Self {
        Self { previous: vec![None; targets], reorgs: vec![0; targets], gaps: vec![0; targets] }
    }

    /// A reading of `head` by `target` when the highest head seen across targets is `highest`.
    /// A jump of more than one block is a gap when the highest head advanced by less since the
    /// target's previous reading: the target skipped blocks the others showed one by one (it
    /// stalled, then caught up), which the time between two polls does not explain.
    fn see(&mut self, target: usize, head: u64, highest: u64) {
        if let Some((before, highest_before)) = self.previous[target] {
            if head < before {
                self.reorgs[target] += 1;
            } else if head - before > 1 && head - before > highest - highest_before {
                self.gaps[target] += 1;
            }
        }
        self.previous[target] = Some((head, highest));
    }
}

/// One block as the targets first showed it, each as (polling round, µs from the start):
/// each target's delay behind the earliest round's first reading (none for those of the
/// earliest round) and its share of the first (1/k to each of the k targets of that round).
/// None when fewer than two targets showed it.
fn race_of_block(times: &[Option<(u64, u64)>]) -> Option<Vec<Option<(u64, f64)>>> {
    if times.iter().flatten().count() < 2 {
        return None;
    }
    let first_round = times.iter().flatten().map(|(round, _)| *round).min()?;
    let earliest =
        times.iter().flatten().filter(|(round, _)| *round == first_round).map(|(_, at)| *at).min()?;
    let tied = times.iter().flatten().filter(|(round, _)| *round == first_round).count();
    Some(
        times
            .iter()
            .map(|shown| {
                shown.map(|(round, at)| {
                    if round == first_round {
                        (0, 1.0 / tied as f64)
                    } else {
                        (at.saturating_sub(earliest), 0.0)
                    }
                })
            })
            .collect(),
    )
}

/// A nearest-rank percentile of sorted values.
fn percentile<T: Copy + Default>(sorted: &[T], q: f64) -> T {
    if sorted.is_empty() {
        return T::default();
    }
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

/// Analyses the samples of each target (`samples[i]` for `names[i]`, polled in turn each
/// tick, so that the n-th sample of each list is of the n-th round; times in µs from a common
/// start): lags behind the highest head seen by then across
/// targets, stale samples more than `stale_after` behind, and block-visibility delays.
pub fn analyse(names: &[String], samples: &[Vec<HeadSample>], stale_after: u64) -> Vec<TargetHeads> {
    // Every reading in time order, to know the highest head seen by each moment.
    let mut readings: Vec<(u64, usize, u64, u64)> = samples
        .iter()
        .enumerate()
        .flat_map(|(target, list)| {
            list.iter()
                .enumerate()
                .filter_map(move |(round, (at, head))| head.map(|h| (*at, target, h, round as u64)))
        })
        .collect();
    readings.sort_by_key(|(at, target, _, _)| (*at, *target));
    let mut highest = 0u64;
    let mut lags: Vec<Vec<u64>> = vec![Vec::new(); names.len()];
    // When each target first showed each block, for the visibility delays.
    let mut first_shown: Vec<std::collections::BTreeMap<u64, (u64, u64)>> =
        vec![Default::default(); names.len()];
    let mut shown_up_to: Vec<Option<u64>> = vec![None; names.len()];
    let mut jumps = Jumps::new(names.len());
    for (at, target, head, round) in readings {
        highest = highest.max(head);
        jumps.see(target, head, highest);
        lags[target].push(highest - head);
        // Blocks newly shown (from the last head shown; the first reading only marks where it
        // started, so that a target's start is no "delay").
        // A jump of more heads than PENDING_BLOCKS times only the newest of them: a hostile
        // head cannot make this loop long or the map large.
        if let Some(from) = shown_up_to[target] {
            let first_new = (from + 1).max(head.saturating_sub(PENDING_BLOCKS as u64 - 1));
            for block in first_new..=head {
                first_shown[target].entry(block).or_insert((round, at));
            }
        }
        shown_up_to[target] = Some(shown_up_to[target].map_or(head, |h| h.max(head)));
    }
    // Blocks that two or more targets showed: the delay of each behind the earliest of them.
    let mut blocks: std::collections::BTreeSet<u64> = Default::default();
    first_shown.iter().for_each(|shown| blocks.extend(shown.keys().copied()));
    let mut delays: Vec<Vec<u64>> = vec![Vec::new(); names.len()];
    let mut firsts = vec![0f64; names.len()];
    let mut raced = vec![0u64; names.len()];
    for block in blocks {
        let times: Vec<Option<(u64, u64)>> =
            first_shown.iter().map(|shown| shown.get(&block).copied()).collect();
        let Some(race) = race_of_block(&times) else { continue };
        for (target, (delay, first)) in race.into_iter().enumerate().filter_map(|(t, r)| r.map(|r| (t, r))) {
            delays[target].push(delay);
            raced[target] += 1;
            firsts[target] += first;
        }
    }
    names
        .iter()
        .enumerate()
        .map(|(target, name)| {
            let mut lag = lags[target].clone();
            lag.sort_unstable();
            let mut delay = delays[target].clone();
            delay.sort_unstable();
            let count = lag.len() as u64;
            let ms = |us: u64| us as f64 / 1000.0;
            TargetHeads {
                name: name.clone(),
                samples: count,
                failed: samples[target].iter().filter(|(_, head)| head.is_none()).count() as u64,
                lag_p50: percentile(&lag, 0.5),
                lag_p99: percentile(&lag, 0.99),
                lag_max: lag.last().copied().unwrap_or(0),
                at_tip: lag.iter().filter(|l| **l == 0).count() as f64 / count.max(1) as f64,
                stale: lag.iter().filter(|l| **l > stale_after).count() as u64,
                first_seen: firsts[target] / raced[target].max(1) as f64,
                delay_ms_p50: ms(percentile(&delay, 0.5)),
                delay_ms_p90: ms(percentile(&delay, 0.9)),
                delay_ms_p99: ms(percentile(&delay, 0.99)),
                phantom: 0,
                reorgs: jumps.reorgs[target],
                gaps: jumps.gaps[target],
            }
        })
        .collect()
}

/// The head race as text: a row per target.
pub fn render_heads_text(heads: &[TargetHeads], interval: Duration, stale_after: u64) -> String {
    use std::fmt::Write;
    let mut out = String::new();
    let _ = writeln!(
        out,
        "rpcbench heads: polled every {}; lag behind the highest head seen; stale: more than {stale_after} behind",
        crate::util::units::format_duration(interval)
    );
    let width = heads.iter().map(|h| h.name.chars().count()).max().unwrap_or(0).max(6);
    // Phantom heads (claimed, not served) get a column when there are any.
    let phantoms = heads.iter().any(|h| h.phantom > 0);
    let jumps = heads.iter().any(|h| h.gaps > 0 || h.reorgs > 0);
    let _ = write!(
        out,
        "{:<width$}  {:>7}  {:>7}  {:>7}  {:>7}  {:>6}  {:>7}  {:>9}  {:>9}  {:>9}",
        "target",
        "samples",
        "lag p50",
        "lag p99",
        "lag max",
        "at tip",
        "stale",
        "first",
        "delay p50",
        "delay p99"
    );
    let _ = writeln!(
        out,
        "{}{}",
        if phantoms { "  phantom" } else { "" },
        if jumps { "     gaps   reorgs" } else { "" }
    );
    for h in heads {
        let _ = write!(
            out,
            "{:<width$}  {:>7}  {:>7}  {:>7}  {:>7}  {:>5.1}%  {:>7}  {:>8.1}%  {:>7.1}ms  {:>7.1}ms",
            crate::util::printable::escape_controls(&h.name),
            h.samples,
            h.lag_p50,
            h.lag_p99,
            h.lag_max,
            h.at_tip * 100.0,
            h.stale,
            h.first_seen * 100.0,
            h.delay_ms_p50,
            h.delay_ms_p99
        );
        if phantoms {
            let _ = write!(out, "  {:>7}", h.phantom);
        }
        if jumps {
            let _ = write!(out, "  {:>7}  {:>7}", h.gaps, h.reorgs);
        }
        out.push('\n');
    }
    out
}

/// Blocks whose visibility is still being timed, at most: a jump of more heads than this
/// between two polls times only the newest of them, so a hostile head cannot make memory grow.
const PENDING_BLOCKS: usize = 4096;

/// The heads of every target, tallied as they are read, in bounded memory (histograms and
/// counters, never a list of samples): what a [`HeadMonitor`] keeps while a load runs.
#[derive(Debug)]
pub struct HeadTally {
    names: Vec<String>,
    stale_after: u64,
    highest: Option<u64>,
    lag: Vec<hdrhistogram::Histogram<u64>>,
    /// Visibility delays, µs.
    delay: Vec<hdrhistogram::Histogram<u64>>,
    samples: Vec<u64>,
    failed: Vec<u64>,
    at_tip: Vec<u64>,
    stale: Vec<u64>,
    /// Blocks shown first, a tie of k counting 1/k.
    firsts: Vec<f64>,
    raced: Vec<u64>,
    shown_up_to: Vec<Option<u64>>,
    /// Each target's latest reading and its lag then.
    latest: Vec<Option<(u64, u64)>>,
    jumps: Jumps,
    /// Per block not yet timed: when each target first showed it (polling round, µs from the
    /// start).
    pending: std::collections::BTreeMap<u64, Vec<Option<(u64, u64)>>>,
}

impl HeadTally {
    /// An empty tally of the targets `names`; a sample more than `stale_after` behind is stale.
    pub fn new(names: Vec<String>, stale_after: u64) -> Self {
        let n = names.len();
        // Lags (blocks) and delays (µs) past 2^40 are recorded as 2^40.
        let histogram = || hdrhistogram::Histogram::new_with_max(1 << 40, 3).expect("valid histogram bounds");
        Self {
            names,
            stale_after,
            highest: None,
            lag: (0..n).map(|_| histogram()).collect(),
            delay: (0..n).map(|_| histogram()).collect(),
            samples: vec![0; n],
            failed: vec![0; n],
            at_tip: vec![0; n],
            stale: vec![0; n],
            firsts: vec![0.0; n],
            raced: vec![0; n],
            shown_up_to: vec![None; n],
            latest: vec![None; n],
            jumps: Jumps::new(n),
            pending: Default::default(),
        }
    }

    /// Adds a reading of target `target` in polling round `round` (every target is read once a
    /// round, in turn), at `at` µs from the start (none: the poll failed). Readings come in
    /// time order.
    pub fn add(&mut self, target: usize, round: u64, at: u64, head: Option<u64>) {
        let Some(head) = head else {
            self.failed[target] += 1;
            return;
        };
        let highest = self.highest.map_or(head, |h| h.max(head));
        self.highest = Some(highest);
        self.jumps.see(target, head, highest);
        let lag = highest - head;
        self.latest[target] = Some((head, lag));
        self.samples[target] += 1;
        self.lag[target].saturating_record(lag);
        self.at_tip[target] += u64::from(lag == 0);
        self.stale[target] += u64::from(lag > self.stale_after);
        // Blocks newly shown; the first reading only marks where the target started.
        if let Some(from) = self.shown_up_to[target] {
            let first_new = (from + 1).max(head.saturating_sub(PENDING_BLOCKS as u64 - 1));
            for block in first_new..=head {
                let targets = self.names.len();
                let times = self.pending.entry(block).or_insert_with(|| vec![None; targets]);
                times[target].get_or_insert((round, at));
            }
        }
        self.shown_up_to[target] = Some(self.shown_up_to[target].map_or(head, |h| h.max(head)));
        // Blocks every target showed are timed now; the oldest go once too many wait.
        loop {
            let too_many = self.pending.len() > PENDING_BLOCKS;
            let Some(entry) = self.pending.first_entry() else { break };
            if !(too_many || entry.get().iter().all(Option::is_some)) {
                break;
            }
            let times = entry.remove();
            self.time_block(&times);
        }
    }

    /// Times one block: each target's delay behind the earliest to show it, when two or more
    /// did.
    fn time_block(&mut self, times: &[Option<(u64, u64)>]) {
        let Some(race) = race_of_block(times) else { return };
        for (target, (delay, first)) in race.into_iter().enumerate().filter_map(|(t, r)| r.map(|r| (t, r))) {
            self.delay[target].saturating_record(delay);
            self.raced[target] += 1;
            self.firsts[target] += first;
        }
    }

    /// The highest head seen across targets so far (none before the first reading).
    pub fn highest(&self) -> Option<u64> {
        self.highest
    }

    /// Each target's head now: its latest reading and how far it was behind the highest head
    /// seen when read, with its largest lag and stale samples so far (what the live figures
    /// show).
    pub fn live(&self) -> Vec<HeadLagFigures> {
        (0..self.names.len())
            .map(|t| HeadLagFigures {
                name: self.names[t].clone(),
                head: self.latest[t].map(|(head, _)| head),
                lag: self.latest[t].map(|(_, lag)| lag),
                lag_max: if self.samples[t] == 0 { 0 } else { self.lag[t].max() },
                stale: self.stale[t],
                samples: self.samples[t],
                failed: self.failed[t],
            })
            .collect()
    }

    /// What the heads of each target were like, as [`analyse`] reports them.
    pub fn finish(mut self) -> Vec<TargetHeads> {
        for times in std::mem::take(&mut self.pending).into_values() {
            self.time_block(&times);
        }
        let ms = |us: u64| us as f64 / 1000.0;
        (0..self.names.len())
            .map(|t| {
                let (lag, delay) = (&self.lag[t], &self.delay[t]);
                let count = self.samples[t];
                TargetHeads {
                    name: self.names[t].clone(),
                    samples: count,
                    failed: self.failed[t],
                    lag_p50: if count == 0 { 0 } else { lag.value_at_quantile(0.5) },
                    lag_p99: if count == 0 { 0 } else { lag.value_at_quantile(0.99) },
                    lag_max: if count == 0 { 0 } else { lag.max() },
                    at_tip: self.at_tip[t] as f64 / count.max(1) as f64,
                    stale: self.stale[t],
                    first_seen: self.firsts[t] / self.raced[t].max(1) as f64,
                    delay_ms_p50: if delay.is_empty() { 0.0 } else { ms(delay.value_at_quantile(0.5)) },
                    delay_ms_p90: if delay.is_empty() { 0.0 } else { ms(delay.value_at_quantile(0.9)) },
                    delay_ms_p99: if delay.is_empty() { 0.0 } else { ms(delay.value_at_quantile(0.99)) },
                    phantom: 0,
                    reorgs: self.jumps.reorgs[t],
                    gaps: self.jumps.gaps[t],
                }
            })
            .collect()
    }
}

/// The head monitor beside a load (`--heads`): a thread of its own polls every target's head
/// once per interval, in turn, while the load runs, and tallies the readings in a
/// [`HeadTally`].
#[derive(Debug)]
pub struct HeadMonitor {
    stop: StopHandle,
    /// The lags since the last [`HeadMonitor::take_window`].
    windows: std::sync::Arc<std::sync::Mutex<crate::heads_lag::LagWindows>>,
    thread: std::thread::JoinHandle<(HeadTally, Vec<u64>)>,
    interval: Duration,
    stale_after: u64,
}

/// What the head monitor saw beside a load, as reports keep it.
#[derive(Debug, Clone, PartialEq, Serialize, serde::Deserialize)]
pub struct HeadsReport {
    /// Time between two polls of every target, ms.
    pub interval_ms: f64,
    /// A sample more than this many blocks (slots) behind the highest head seen is stale.
    pub stale_after: u64,
    /// Per target, in the order given.
    pub targets: Vec<TargetHeads>,
}

impl HeadsReport {
    /// The heads beside a load as lines of a run's text report.
    pub fn render_text(&self) -> String {
        let interval = Duration::from_secs_f64(self.interval_ms / 1000.0);
        let table = render_heads_text(&self.targets, interval, self.stale_after);
        let mut out = String::from("  Heads beside the load (");
        out.push_str(table.lines().next().unwrap_or("").trim_start_matches("rpcbench heads: "));
        out.push_str(")\n");
        table.lines().skip(1).for_each(|line| {
            out.push_str("    ");
            out.push_str(line);
            out.push('\n');
        });
        out
    }
}

impl HeadsReport {
    /// One report per target, each with only its own row (the lags stay those against every
    /// target's heads): what each run of a comparison keeps.
    pub fn split(&self) -> Vec<HeadsReport> {
        self.targets.iter().map(|row| HeadsReport { targets: vec![row.clone()], ..self.clone() }).collect()
    }

    /// The rows of the runs of a comparison put back together, from each run's own report
    /// (none: no run followed heads).
    pub fn gather<'a>(reports: impl IntoIterator<Item = &'a HeadsReport>) -> Option<HeadsReport> {
        let mut reports = reports.into_iter();
        let first = reports.next()?;
        let mut targets = first.targets.clone();
        reports.for_each(|report| targets.extend(report.targets.iter().cloned()));
        Some(HeadsReport { targets, ..first.clone() })
    }

    /// The heads beside a load as a Markdown section.
    pub fn render_markdown(&self) -> String {
        use std::fmt::Write;
        let mut out = String::from("### Heads beside the load\n\n");
        let _ = writeln!(
            out,
            "Polled every {:.0} ms; lag in blocks (slots) behind the highest head seen across targets; stale: more than {} behind.\n",
            self.interval_ms, self.stale_after
        );
        out.push_str("| target | samples | lag p50 | lag p99 | lag max | at tip | stale | first | delay p50 | delay p99 |\n");
        out.push_str("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
        for h in &self.targets {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {:.1}% | {} | {:.1}% | {:.1} ms | {:.1} ms |",
                crate::util::printable::one_line(&h.name).replace('|', "\\|"),
                h.samples,
                h.lag_p50,
                h.lag_p99,
                h.lag_max,
                h.at_tip * 100.0,
                h.stale,
                h.first_seen * 100.0,
                h.delay_ms_p50,
                h.delay_ms_p99
            );
        }
        out
    }
}

/// Whether a method is a chain node's (Ethereum's `eth_*`, a Solana read, or a Geyser
/// endpoint's unary call about the chain), so that its targets have a head to follow.
pub fn is_chain_method(method: &str) -> bool {
    const SOLANA: &[&str] = &[
        "getSlot",
        "getBlockHeight",
        "getBlock",
        "getBalance",
        "getAccountInfo",
        "getMultipleAccounts",
        "getProgramAccounts",
        "getLatestBlockhash",
        "getTransaction",
        "getSignaturesForAddress",
        "getSignatureStatuses",
        "getTokenAccountBalance",
        "getTokenAccountsByOwner",
        "getRecentPrioritizationFees",
        "getEpochInfo",
        "sendTransaction",
        "simulateTransaction",
        "GetSlot",
        "GetBlockHeight",
        "GetLatestBlockhash",
    ];
    method.starts_with("eth_") || SOLANA.contains(&method)
}

impl HeadMonitor {
    /// Starts following `sources` (named `names`) every `interval`.
    pub fn start(
        names: Vec<String>,
        sources: Vec<Box<dyn HeadSource>>,
        interval: Duration,
        stale_after: u64,
    ) -> std::io::Result<Self> {
        Self::start_publishing(names, sources, interval, stale_after, Vec::new())
    }

    /// Starts following as [`HeadMonitor::start`] does, and after every round of polls
    /// publishes each target's head lag into every store of `live` (the endpoint and the
    /// dashboard read them there).
    pub fn start_publishing(
        names: Vec<String>,
        mut sources: Vec<Box<dyn HeadSource>>,
        interval: Duration,
        stale_after: u64,
        live: Vec<LiveMetrics>,
    ) -> std::io::Result<Self> {
        let stop = StopHandle::new();
        let stopped = stop.clone();
        let windows = std::sync::Arc::new(std::sync::Mutex::new(crate::heads_lag::LagWindows::new(
            names.len(),
            stale_after,
        )));
        let windows_kept = windows.clone();
        let thread = std::thread::Builder::new().name("rpcbench-heads".into()).spawn(move || {
            let mut tally = HeadTally::new(names, stale_after);
            let start = Instant::now();
            let mut tick = 0u32;
            while !stopped.is_stopped() {
                for (target, source) in sources.iter_mut().enumerate() {
                    let head = source.head().ok();
                    tally.add(target, u64::from(tick), start.elapsed().as_micros() as u64, head);
                    let lag = head.zip(tally.highest()).map(|(head, highest)| highest.saturating_sub(head));
                    windows_kept.lock().unwrap_or_else(|poison| poison.into_inner()).add(target, lag);
                }
                if !live.is_empty() {
                    let figures = tally.live();
                    live.iter().for_each(|store| store.publish_heads(figures.clone()));
                }
                tick = tick.saturating_add(1);
                let next = start + interval * tick;
                while !stopped.is_stopped() && Instant::now() < next {
                    std::thread::sleep(
                        next.saturating_duration_since(Instant::now()).min(Duration::from_millis(20)),
                    );
                }
            }
            (tally, sources.iter().map(|source| source.phantom()).collect())
        })?;
        Ok(Self { stop, windows, thread, interval, stale_after })
    }

    /// Each target's lags since the last call (or the start), in the order given; the next
    /// window starts now. A capacity search takes one at each step boundary.
    pub fn take_window(&self) -> Vec<crate::heads_lag::HeadLagWindow> {
        self.windows.lock().unwrap_or_else(|poison| poison.into_inner()).take()
    }

    /// Stops following (after the poll under way) and reports.
    pub fn stop(self) -> HeadsReport {
        self.stop.stop();
        let targets = match self.thread.join() {
            Ok((tally, phantoms)) => {
                let mut targets = tally.finish();
                targets.iter_mut().zip(phantoms).for_each(|(row, phantom)| row.phantom = phantom);
                targets
            }
            Err(_) => Vec::new(),
        };
        HeadsReport {
            interval_ms: self.interval.as_secs_f64() * 1000.0,
            stale_after: self.stale_after,
            targets,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("t{i}")).collect()
    }

    #[test]
    fn lags_are_behind_the_highest_head_and_far_ones_are_stale() {
        // Three targets polled in turn each tick: heads 100, 97 and 70, then each one more.
        let samples: Vec<Vec<HeadSample>> = [0u64, 3, 30]
            .iter()
            .enumerate()
            .map(|(i, lag)| (0..10).map(|tick| (tick * 1000 + i as u64, Some(100 + tick - lag))).collect())
            .collect();
        let heads = analyse(&names(3), &samples, 20);
        let lags: Vec<(u64, u64, u64)> = heads.iter().map(|h| (h.lag_p50, h.lag_p99, h.lag_max)).collect();
        assert_eq!(lags, [(0, 0, 0), (3, 3, 3), (30, 30, 30)]);
        assert_eq!(heads.iter().map(|h| h.stale).collect::<Vec<_>>(), [0, 0, 10]);
        assert_eq!(heads[0].at_tip, 1.0);
        assert_eq!(heads[1].at_tip, 0.0);
    }

    #[test]
    fn visibility_delays_count_from_the_earliest_target() {
        // t0 shows block b at b ms, t1 at b ms + 200 ms; both polled every 100 ms.
        let poll = |offset_ms: u64| -> Vec<HeadSample> {
            (0..50u64)
                .map(|tick| (tick * 100_000, Some((tick * 100).saturating_sub(offset_ms) / 1000)))
                .collect()
        };
        let heads = analyse(&names(2), &[poll(0), poll(200)], 10);
        assert_eq!(heads[0].delay_ms_p50, 0.0);
        assert_eq!(heads[1].delay_ms_p50, 200.0);
        assert_eq!(heads[1].delay_ms_p99, 200.0);
        assert_eq!(heads[0].first_seen, 1.0);
        assert_eq!(heads[1].first_seen, 0.0);
        // Failed polls are counted, not lags.
        let heads = analyse(&names(1), &[vec![(0, Some(5)), (1, None)]], 10);
        assert_eq!((heads[0].samples, heads[0].failed), (1, 1));
    }

    /// The samples of a race fed to a tally in time order.
    fn tallied(names: &[String], samples: &[Vec<HeadSample>], stale_after: u64) -> Vec<TargetHeads> {
        let mut readings: Vec<(u64, usize, Option<u64>, u64)> = samples
            .iter()
            .enumerate()
            .flat_map(|(target, list)| {
                list.iter().enumerate().map(move |(round, (at, head))| (*at, target, *head, round as u64))
            })
            .collect();
        readings.sort_by_key(|(at, target, _, _)| (*at, *target));
        let mut tally = HeadTally::new(names.to_vec(), stale_after);
        readings.into_iter().for_each(|(at, target, head, round)| tally.add(target, round, at, head));
        tally.finish()
    }

    #[test]
    fn a_tally_kept_while_polling_reports_what_the_samples_do() {
        let samples: Vec<Vec<HeadSample>> = [0u64, 3, 30]
            .iter()
            .enumerate()
            .map(|(i, lag)| (0..10).map(|tick| (tick * 1000 + i as u64, Some(100 + tick - lag))).collect())
            .collect();
        let (kept, analysed) = (tallied(&names(3), &samples, 20), analyse(&names(3), &samples, 20));
        let figures = |heads: &[TargetHeads]| -> Vec<_> {
            heads
                .iter()
                .map(|h| (h.samples, h.lag_p50, h.lag_p99, h.lag_max, h.at_tip, h.stale, h.first_seen))
                .collect()
        };
        assert_eq!(figures(&kept), figures(&analysed));
        // t1 shows each block 3 ticks (3.001 ms) after t0.
        assert!((3.0..=3.01).contains(&kept[1].delay_ms_p50), "{kept:?}");
        let poll = |offset_ms: u64| -> Vec<HeadSample> {
            (0..50u64)
                .map(|tick| (tick * 100_000, Some((tick * 100).saturating_sub(offset_ms) / 1000)))
                .collect()
        };
        let heads = tallied(&names(2), &[poll(0), poll(200)], 10);
        // Delays are kept to three significant figures.
        assert_eq!(heads[0].delay_ms_p50, 0.0);
        for delay in [heads[1].delay_ms_p50, heads[1].delay_ms_p99] {
            assert!((200.0..=200.2).contains(&delay), "{heads:?}");
        }
        assert_eq!((heads[0].first_seen, heads[1].first_seen), (1.0, 0.0));
    }

    #[test]
    fn blocks_shown_in_the_same_polling_round_are_ties_shared_between_the_targets() {
        // Three targets polled in turn each 100 ms round (1 ms apart): t0 and t1 show every
        // block in the same round, t2 one round later.
        let poll = |target: u64, late_rounds: u64| -> Vec<HeadSample> {
            (0..40u64)
                .map(|round| (round * 100_000 + target * 1000, Some(round.saturating_sub(late_rounds) / 4)))
                .collect()
        };
        let samples = [poll(0, 0), poll(1, 0), poll(2, 1)];
        for heads in [analyse(&names(3), &samples, 20), tallied(&names(3), &samples, 20)] {
            let firsts: Vec<f64> = heads.iter().map(|h| h.first_seen).collect();
            assert_eq!(firsts, [0.5, 0.5, 0.0], "{heads:?}");
            // The tied ones have no delay (the order within a round says nothing); the late
            // one is a round behind the first reading of the round before.
            assert_eq!((heads[0].delay_ms_p50, heads[1].delay_ms_p99), (0.0, 0.0), "{heads:?}");
            assert!((102.0..=102.2).contains(&heads[2].delay_ms_p50), "{heads:?}");
        }
        // Two targets that always tie: half each, never 0% for both.
        let samples = [poll(0, 0), poll(1, 0)];
        let heads = analyse(&names(2), &samples, 20);
        assert_eq!((heads[0].first_seen, heads[1].first_seen), (0.5, 0.5), "{heads:?}");
    }

    #[test]
    fn a_head_jumping_by_billions_does_not_make_the_tally_grow() {
        let mut tally = HeadTally::new(names(2), 20);
        tally.add(0, 0, 0, Some(1));
        tally.add(1, 0, 1, Some(1));
        tally.add(0, 1, 2, Some(u64::MAX / 2));
        tally.add(1, 1, 3, Some(2));
        assert!(tally.pending.len() <= PENDING_BLOCKS, "{}", tally.pending.len());
        let heads = tally.finish();
        assert!(heads[1].lag_max >= 1 << 40, "{heads:?}");
        assert_eq!((heads[1].stale, heads[1].samples), (1, 2));
    }

    #[test]
    fn the_live_head_lag_is_the_latest_reading_behind_the_highest_head() {
        let mut tally = HeadTally::new(names(3), 2);
        tally.add(0, 0, 0, Some(100));
        tally.add(1, 0, 1, Some(96));
        tally.add(2, 0, 2, None);
        tally.add(0, 1, 3, Some(101));
        tally.add(1, 1, 4, Some(100));
        let live = tally.live();
        assert_eq!((live[0].head, live[0].lag), (Some(101), Some(0)));
        // 96 was 4 behind (stale at more than 2), 100 is 1 behind now.
        assert_eq!((live[1].head, live[1].lag, live[1].lag_max, live[1].stale), (Some(100), Some(1), 4, 1));
        assert_eq!((live[2].head, live[2].lag, live[2].failed, live[2].samples), (None, None, 1, 0));
    }

    #[test]
    fn a_head_monitor_publishes_each_targets_lag_into_the_live_store() {
        struct Fixed(u64);
        impl HeadSource for Fixed {
            fn head(&mut self) -> Result<u64, String> {
                Ok(self.0)
            }
        }
        let live = LiveMetrics::new();
        let sources: Vec<Box<dyn HeadSource>> = vec![Box::new(Fixed(50)), Box::new(Fixed(47))];
        let monitor = HeadMonitor::start_publishing(
            names(2),
            sources,
            Duration::from_millis(5),
            20,
            vec![live.clone()],
        )
        .unwrap();
        // Bounded wait for the first round (a count of polls, not a time asserted).
        let mut heads = Vec::new();
        for _ in 0..2_000 {
            heads = live.snapshot().heads;
            if heads.len() == 2 {
                break;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        monitor.stop();
        assert_eq!(heads.iter().map(|row| row.lag).collect::<Vec<_>>(), [Some(0), Some(3)], "{heads:?}");
        assert!(live.render().contains("rpcbench_head_lag_blocks{target=\"t1\"} 3"), "{}", live.render());
    }

    #[test]
    fn a_head_going_back_is_a_reorg_and_a_catch_up_jump_is_a_gap() {
        // t0 moves one block a tick; t1 stalls at 103 for 4 ticks, jumps to 108, then goes
        // back one block once.
        let t0: Vec<HeadSample> = (0..12u64).map(|tick| (tick * 1000, Some(100 + tick))).collect();
        let t1_heads = [100, 101, 102, 103, 103, 103, 103, 103, 108, 109, 108, 111];
        let t1: Vec<HeadSample> =
            t1_heads.iter().enumerate().map(|(tick, h)| (tick as u64 * 1000 + 1, Some(*h))).collect();
        for heads in [analyse(&names(2), &[t0.clone(), t1.clone()], 20), tallied(&names(2), &[t0, t1], 20)] {
            assert_eq!((heads[0].gaps, heads[0].reorgs), (0, 0), "{heads:?}");
            // 103 -> 108 while the tip moved 1; 108 -> 111 while it moved 1 (after the rollback).
            assert_eq!((heads[1].gaps, heads[1].reorgs), (2, 1), "{heads:?}");
        }
        // One target that moves by several blocks a poll on its own is no gap.
        let fast: Vec<HeadSample> = (0..10u64).map(|tick| (tick * 1000, Some(100 + 5 * tick))).collect();
        assert_eq!(analyse(&names(1), &[fast], 20)[0].gaps, 0);
    }

    #[test]
    fn heads_read_from_both_chains_answers() {
        assert_eq!(head_of(&serde_json::json!("0x3e8")), Some(1000));
        assert_eq!(head_of(&serde_json::json!(1000)), Some(1000));
        assert_eq!(head_of(&serde_json::json!("1000")), None);
        assert_eq!(head_of(&serde_json::json!(null)), None);
    }

    #[test]
    fn a_head_jumping_by_billions_is_analysed_in_bounded_time_and_memory() {
        let names = vec!["a".to_string(), "b".to_string()];
        let jump = 1u64 << 40;
        let samples = vec![vec![(0, Some(1)), (1_000, Some(jump))], vec![(10, Some(1)), (1_010, Some(jump))]];
        let heads = analyse(&names, &samples, 20);
        assert_eq!(heads.len(), 2);
        assert_eq!(heads[1].lag_max, 0);
    }
}
