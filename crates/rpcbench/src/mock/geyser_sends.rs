//! What the mock Geyser feed records of its own sends, port by port: the instant each update
//! was handed to a subscriber's stream on each port, so that a race between ports can be
//! checked against the offsets the mock really produced rather than the delays it was asked
//! for (a loaded machine sends late, by more than a race tells apart).

use std::collections::BTreeMap;
use std::sync::Mutex;
use std::time::SystemTime;

/// Updates kept per port; past it the oldest are forgotten (a race of a few seconds sends a few
/// hundred).
const KEPT_PER_PORT: usize = 100_000;

/// The first send of each update (by its sequence number) on each port: port 0 is the main
/// one, then the mirrors in [`super::GeyserMockOptions::mirrors`]' order.
#[derive(Debug, Default)]
pub struct GeyserSends {
    ports: Mutex<Vec<BTreeMap<u64, SystemTime>>>,
}

impl GeyserSends {
    /// Records that `port` handed update `sequence` to a subscriber at `at` (the first time
    /// only: a port's later subscribers do not move it).
    pub(crate) fn record(&self, port: usize, sequence: u64, at: SystemTime) {
        let mut ports = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if ports.len() <= port {
            ports.resize_with(port + 1, BTreeMap::new);
        }
        let sends = &mut ports[port];
        if sends.len() >= KEPT_PER_PORT && !sends.contains_key(&sequence) {
            sends.pop_first();
        }
        sends.entry(sequence).or_insert(at);
    }

    /// For every update both `port` and `against` sent, in sequence order: when `port` sent it
    /// less when `against` did, microseconds (positive: `port` sent it later).
    pub fn offsets_us(&self, port: usize, against: usize) -> Vec<i64> {
        let ports = self.ports.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        let (Some(sends), Some(others)) = (ports.get(port), ports.get(against)) else { return Vec::new() };
        sends
            .iter()
            .filter_map(|(sequence, at)| {
                let other = others.get(sequence)?;
                Some(match at.duration_since(*other) {
                    Ok(later) => later.as_micros() as i64,
                    Err(earlier) => -(earlier.duration().as_micros() as i64),
                })
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn offsets_pair_each_update_sent_on_both_ports_by_its_sequence() {
        let sends = GeyserSends::default();
        let base = SystemTime::UNIX_EPOCH + Duration::from_secs(1_000);
        let at = |us: u64| base + Duration::from_micros(us);
        sends.record(0, 1, at(0));
        sends.record(1, 1, at(5_200));
        sends.record(0, 2, at(10_000));
        sends.record(1, 2, at(9_000));
        sends.record(1, 2, at(20_000));
        sends.record(0, 3, at(30_000));
        assert_eq!(sends.offsets_us(1, 0), vec![5_200, -1_000], "the first send of each, both ports");
        assert!(sends.offsets_us(2, 0).is_empty());
    }
}
