//! Per-slot stage timings of a Geyser feed (`geyser-stages`): for every slot, when each of its
//! six stages (first shred received, created bank, completed, processed, confirmed, finalized)
//! first arrived at any subscriber, and when the server stamped it (`created_at`). From them,
//! per slot, the intervals the Solana latency tables quote: download (first shred -> completed),
//! replay (created bank -> processed), processed -> confirmed and confirmed -> finalized, each
//! into two HDR histograms: by our arrival times and by the server's own stamps (the latter
//! free of the network and of our scheduling, so a mock whose stages are a known time apart is
//! checked exactly).
//!
//! The table of slots is bounded ([`MAX_SLOTS`], the oldest forgotten first): a feed that sends
//! stages of ever new slots, or garbage slot numbers, cannot grow memory.

use std::collections::{HashMap, VecDeque};
use std::time::{Instant, SystemTime};

use hdrhistogram::Histogram;
use yellowstone_grpc_proto::geyser::SlotStatus;

use crate::record::{new_histogram, record_us};
use crate::report::slot_stages::{SlotStagesReport, StageInterval};
use crate::report::LatencyReport;

/// Slots remembered at once (a slot's stages span a few seconds; 4,096 slots are half an hour
/// of Solana at 400 ms).
pub const MAX_SLOTS: usize = 4_096;

/// The six stages in the order a slot goes through them, by their names in reports.
pub const STAGE_NAMES: [&str; 6] =
    ["first shred received", "created bank", "completed", "processed", "confirmed", "finalized"];

/// The intervals measured: name, from stage, to stage (indexes into [`STAGE_NAMES`]).
pub const INTERVALS: [(&str, usize, usize); 4] = [
    ("download", 0, 2),
    ("replay", 1, 3),
    ("processed -> confirmed", 3, 4),
    ("confirmed -> finalized", 4, 5),
];

/// A Geyser `SlotStatus` as a stage index (`None`: dead, or a status this version does not
/// know).
pub fn stage_index(status: i32) -> Option<usize> {
    let status = SlotStatus::try_from(status).ok()?;
    Some(match status {
        SlotStatus::SlotFirstShredReceived => 0,
        SlotStatus::SlotCreatedBank => 1,
        SlotStatus::SlotCompleted => 2,
        SlotStatus::SlotProcessed => 3,
        SlotStatus::SlotConfirmed => 4,
        SlotStatus::SlotFinalized => 5,
        SlotStatus::SlotDead => return None,
    })
}

/// What was seen of one slot.
#[derive(Debug, Default, Clone, Copy)]
struct SlotSeen {
    arrived: [Option<Instant>; 6],
    stamped: [Option<SystemTime>; 6],
}

/// The stage timings of a run.
#[derive(Debug)]
pub struct SlotStageTimings {
    slots: HashMap<u64, SlotSeen>,
    order: VecDeque<u64>,
    /// Slots seen with at least one stage.
    seen: u64,
    by_arrival: [Histogram<u64>; 4],
    by_server: [Histogram<u64>; 4],
    /// Intervals whose later stage came first (by arrival, or by the server's stamps).
    backwards: u64,
}

impl Default for SlotStageTimings {
    fn default() -> Self {
        Self::new()
    }
}

impl SlotStageTimings {
    /// An empty table.
    pub fn new() -> Self {
        Self {
            slots: HashMap::new(),
            order: VecDeque::new(),
            seen: 0,
            by_arrival: std::array::from_fn(|_| new_histogram()),
            by_server: std::array::from_fn(|_| new_histogram()),
            backwards: 0,
        }
    }

    /// Stage `stage` of `slot` arrived at `arrived`, stamped `stamped` by the server. Only its
    /// first arrival counts (the other subscribers' are the fan-out lag's business).
    pub fn arrived(&mut self, slot: u64, stage: usize, arrived: Instant, stamped: Option<SystemTime>) {
        if stage >= STAGE_NAMES.len() {
            return;
        }
        if !self.slots.contains_key(&slot) {
            if self.order.len() == MAX_SLOTS {
                if let Some(oldest) = self.order.pop_front() {
                    self.slots.remove(&oldest);
                }
            }
            self.order.push_back(slot);
            self.seen = self.seen.saturating_add(1);
        }
        let seen = self.slots.entry(slot).or_default();
        if seen.arrived[stage].is_some() {
            return;
        }
        seen.arrived[stage] = Some(arrived);
        seen.stamped[stage] = stamped;
        let seen = *seen;
        for (interval, &(_, from, to)) in INTERVALS.iter().enumerate() {
            if from != stage && to != stage {
                continue;
            }
            if let (Some(start), Some(end)) = (seen.arrived[from], seen.arrived[to]) {
                match end.checked_duration_since(start) {
                    Some(took) => record_us(&mut self.by_arrival[interval], took.as_micros() as u64),
                    None => self.backwards = self.backwards.saturating_add(1),
                }
            }
            if let (Some(start), Some(end)) = (seen.stamped[from], seen.stamped[to]) {
                match end.duration_since(start) {
                    Ok(took) => record_us(&mut self.by_server[interval], took.as_micros() as u64),
                    Err(_) => self.backwards = self.backwards.saturating_add(1),
                }
            }
        }
    }

    /// The figures, `None` when no stage was seen.
    pub fn report(&self) -> Option<SlotStagesReport> {
        (self.seen > 0).then(|| SlotStagesReport {
            slots: self.seen,
            backwards: self.backwards,
            intervals: INTERVALS
                .iter()
                .enumerate()
                .map(|(index, &(name, from, to))| StageInterval {
                    interval: name.to_string(),
                    from: STAGE_NAMES[from].to_string(),
                    to: STAGE_NAMES[to].to_string(),
                    by_arrival: LatencyReport::from_histogram(&self.by_arrival[index]),
                    by_server: (!self.by_server[index].is_empty())
                        .then(|| LatencyReport::from_histogram(&self.by_server[index])),
                })
                .collect(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn download_and_replay_times_come_from_each_slots_stages() {
        let mut timings = SlotStageTimings::new();
        let (t0, w0) = (Instant::now(), SystemTime::UNIX_EPOCH + Duration::from_secs(1_000));
        let ms = Duration::from_millis;
        // Stages 10 ms apart by the server; arrivals 10 ms apart but completed 4 ms late.
        for stage in 0..6 {
            let late = if stage == 2 { ms(4) } else { Duration::ZERO };
            let offset = ms(10 * stage as u64);
            timings.arrived(7, stage, t0 + offset + late, Some(w0 + offset));
            // A second subscriber's arrival does not count again.
            timings.arrived(7, stage, t0 + offset + ms(50), Some(w0 + offset));
        }
        let report = timings.report().unwrap();
        assert_eq!(report.slots, 1);
        // Within the histograms' resolution (three significant digits).
        let near = |value: u64, expected: u64| value.abs_diff(expected) <= expected / 1_000 + 1;
        let download = &report.intervals[0];
        assert_eq!(download.by_arrival.count, 1);
        assert!(near(download.by_arrival.max_us, 24_000), "{download:?}");
        assert!(near(download.by_server.as_ref().unwrap().max_us, 20_000), "{download:?}");
        let replay = &report.intervals[1];
        assert!(near(replay.by_server.as_ref().unwrap().max_us, 20_000), "{replay:?}");
        assert!(near(report.intervals[2].by_arrival.max_us, 10_000), "{report:?}");
        assert_eq!(report.backwards, 0);
    }

    #[test]
    fn a_stage_that_arrives_before_its_predecessor_is_counted_backwards_not_as_zero() {
        let mut timings = SlotStageTimings::new();
        let t0 = Instant::now();
        timings.arrived(1, 4, t0, None);
        timings.arrived(1, 3, t0 + Duration::from_millis(1), None);
        let report = timings.report().unwrap();
        assert_eq!(report.backwards, 1);
        assert_eq!(report.intervals[2].by_arrival.count, 0);
    }

    #[test]
    fn the_slot_table_stays_bounded_by_max_slots() {
        let mut timings = SlotStageTimings::new();
        let t0 = Instant::now();
        for slot in 0..(MAX_SLOTS as u64 * 3) {
            timings.arrived(slot, 0, t0, None);
        }
        assert_eq!(timings.slots.len(), MAX_SLOTS);
        assert_eq!(timings.order.len(), MAX_SLOTS);
        assert_eq!(timings.report().unwrap().slots, MAX_SLOTS as u64 * 3);
    }
}
