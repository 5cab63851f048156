//! Who is fresh: a head race between targets with no load. Each target's chain head is
//! followed through a [`HeadSource`] (today by polling `eth_blockNumber` or `getSlot` at a
//! stated interval; a subscription-based source can plug in behind the same seam), and
//! [`analyse`] reports per target, from the samples alone (no clock): the lag behind the
//! highest head seen across targets (p50, p99, max), the share of samples at the tip, the
//! samples more than `stale_after` behind (OpenChainBench's "stale"), and the block-visibility
//! delay (when each target first showed a block, against the earliest target, in ms).

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use crate::client::Endpoint;
use crate::engine::StopHandle;

/// Where a target's head comes from.
pub trait HeadSource: Send {
    /// The newest head the target shows now: its block number or slot.
    fn head(&mut self) -> Result<u64, String>;
}

/// A head read by polling: `eth_blockNumber` (hex) or `getSlot` (a number), whichever the
/// target answers first.
#[derive(Debug)]
pub struct PolledHead {
    endpoint: Endpoint,
    method: Option<&'static str>,
}

impl PolledHead {
    /// Polls `endpoint`.
    pub fn new(endpoint: Endpoint) -> Self {
        Self { endpoint, method: None }
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
        let methods: &[&'static str] = match self.method {
            Some(ref method) => std::slice::from_ref(method),
            None => &["eth_blockNumber", "getSlot"],
        };
        let mut last = String::new();
        for method in methods {
            match self.endpoint.call(method, None) {
                Ok(value) => {
                    let head =
                        head_of(&value).ok_or_else(|| format!("{method} answered {value}, not a head"))?;
                    self.method = Some(method);
                    return Ok(head);
                }
                Err(err) => last = format!("{method}: {err}"),
            }
        }
        Err(last)
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// first (ties count for each).
    pub first_seen: f64,
    /// Block-visibility delay behind the earliest target to show the same block, ms: median,
    /// 90th and 99th percentile, over the blocks another target showed too.
    pub delay_ms_p50: f64,
    /// 90th percentile.
    pub delay_ms_p90: f64,
    /// 99th percentile.
    pub delay_ms_p99: f64,
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
/// tick, times in µs from a common start): lags behind the highest head seen by then across
/// targets, stale samples more than `stale_after` behind, and block-visibility delays.
pub fn analyse(names: &[String], samples: &[Vec<HeadSample>], stale_after: u64) -> Vec<TargetHeads> {
    // Every reading in time order, to know the highest head seen by each moment.
    let mut readings: Vec<(u64, usize, u64)> = samples
        .iter()
        .enumerate()
        .flat_map(|(target, list)| list.iter().filter_map(move |(at, head)| head.map(|h| (*at, target, h))))
        .collect();
    readings.sort_by_key(|(at, target, _)| (*at, *target));
    let mut highest = 0u64;
    let mut lags: Vec<Vec<u64>> = vec![Vec::new(); names.len()];
    // When each target first showed each block, for the visibility delays.
    let mut first_shown: Vec<std::collections::BTreeMap<u64, u64>> = vec![Default::default(); names.len()];
    let mut shown_up_to: Vec<Option<u64>> = vec![None; names.len()];
    for (at, target, head) in readings {
        highest = highest.max(head);
        lags[target].push(highest - head);
        // Blocks newly shown (from the last head shown; the first reading only marks where it
        // started, so that a target's start is no "delay").
        if let Some(from) = shown_up_to[target] {
            for block in from + 1..=head {
                first_shown[target].entry(block).or_insert(at);
            }
        }
        shown_up_to[target] = Some(shown_up_to[target].map_or(head, |h| h.max(head)));
    }
    // Blocks that two or more targets showed: the delay of each behind the earliest of them.
    let mut blocks: std::collections::BTreeSet<u64> = Default::default();
    first_shown.iter().for_each(|shown| blocks.extend(shown.keys().copied()));
    let mut delays: Vec<Vec<u64>> = vec![Vec::new(); names.len()];
    let mut firsts = vec![0u64; names.len()];
    let mut raced = vec![0u64; names.len()];
    for block in blocks {
        let times: Vec<(usize, u64)> = first_shown
            .iter()
            .enumerate()
            .filter_map(|(target, shown)| shown.get(&block).map(|at| (target, *at)))
            .collect();
        if times.len() < 2 {
            continue;
        }
        let earliest = times.iter().map(|(_, at)| *at).min().unwrap_or(0);
        for (target, at) in times {
            delays[target].push(at - earliest);
            raced[target] += 1;
            if at == earliest {
                firsts[target] += 1;
            }
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
                first_seen: firsts[target] as f64 / raced[target].max(1) as f64,
                delay_ms_p50: ms(percentile(&delay, 0.5)),
                delay_ms_p90: ms(percentile(&delay, 0.9)),
                delay_ms_p99: ms(percentile(&delay, 0.99)),
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
        crate::units::format_duration(interval)
    );
    let width = heads.iter().map(|h| h.name.chars().count()).max().unwrap_or(0).max(6);
    let _ = writeln!(
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
    for h in heads {
        let _ = writeln!(
            out,
            "{:<width$}  {:>7}  {:>7}  {:>7}  {:>7}  {:>5.1}%  {:>7}  {:>8.1}%  {:>7.1}ms  {:>7.1}ms",
            crate::printable::escape_controls(&h.name),
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

    #[test]
    fn heads_read_from_both_chains_answers() {
        assert_eq!(head_of(&serde_json::json!("0x3e8")), Some(1000));
        assert_eq!(head_of(&serde_json::json!(1000)), Some(1000));
        assert_eq!(head_of(&serde_json::json!("1000")), None);
        assert_eq!(head_of(&serde_json::json!(null)), None);
    }
}
