//! The per-slot stage timings of a Geyser feed in a subscription report (`geyser-stages`):
//! download, replay, processed -> confirmed and confirmed -> finalized, by arrival and by the
//! server's stamps. Counted by `crate::subscribe::slot_stages`.

use std::fmt::Write as _;

use serde::{Deserialize, Serialize};

use super::LatencyReport;

/// One interval between two stages of a slot.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct StageInterval {
    /// Its name (`download`, `replay`, `processed -> confirmed`, `confirmed -> finalized`).
    pub interval: String,
    /// The stage it starts at.
    pub from: String,
    /// The stage it ends at.
    pub to: String,
    /// By the first arrival of each stage at any subscriber.
    pub by_arrival: LatencyReport,
    /// By the server's `created_at` stamps of the two stages, when it stamps them.
    pub by_server: Option<LatencyReport>,
}

/// The stage timings of a run's slots.
#[derive(Debug, Clone, Serialize, Deserialize, PartialEq)]
pub struct SlotStagesReport {
    /// Slots seen with at least one stage.
    pub slots: u64,
    /// Intervals whose later stage came before the earlier one (by arrival or by the stamps):
    /// counted apart, not as 0.
    pub backwards: u64,
    /// Download, replay, processed -> confirmed, confirmed -> finalized.
    pub intervals: Vec<StageInterval>,
}

impl SlotStagesReport {
    /// Its lines of the text report.
    pub fn render_text(&self, out: &mut String) {
        use crate::util::units::format_micros;
        let us = |v: u64| format_micros(v as f64);
        let figures = |lag: &LatencyReport| {
            if lag.count == 0 {
                "n/a".to_string()
            } else {
                format!(
                    "p50 {} p90 {} p99 {} max {} ({} slots)",
                    us(lag.percentile("p50")),
                    us(lag.percentile("p90")),
                    us(lag.percentile("p99")),
                    us(lag.max_us),
                    lag.count
                )
            }
        };
        let _ = writeln!(
            out,
            "  Slot stages: {} slots{}",
            self.slots,
            if self.backwards > 0 {
                format!(", {} interval(s) backwards", self.backwards)
            } else {
                String::new()
            }
        );
        for interval in &self.intervals {
            let _ = writeln!(
                out,
                "    {:<22} by arrival {}; by the server's stamps {}",
                interval.interval,
                figures(&interval.by_arrival),
                interval.by_server.as_ref().map_or("n/a".to_string(), figures)
            );
        }
    }
}
