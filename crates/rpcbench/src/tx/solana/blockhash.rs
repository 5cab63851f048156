//! The recent blockhash, kept fresh in the background: a thread asks the node
//! `getLatestBlockhash` and `getBlockHeight` at an interval and keeps the newest answer (for the
//! signer) and every (instant, slot, block height) it saw (for "slot at send" and for deciding
//! that a transaction's blockhash has expired: the block height passed its
//! `lastValidBlockHeight`). The observations are bounded by the run's length, one per interval.

use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::recent::{lock, State};
pub use super::recent::{BlockhashReader, HeadSeen, RecentBlockhash};
use crate::client::Endpoint;

/// Why the node's blockhash could not be had.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlockhashError(pub String);

impl fmt::Display for BlockhashError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "getLatestBlockhash: {}", self.0)
    }
}

impl std::error::Error for BlockhashError {}

/// The background refresher.
#[derive(Debug)]
pub struct BlockhashFeed {
    state: Arc<Mutex<State>>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
}

/// Asks `node` once: the newest blockhash and the head.
pub fn fetch(node: &Endpoint, commitment: &str) -> Result<(RecentBlockhash, HeadSeen), BlockhashError> {
    let config = json!([{"commitment": commitment}]);
    let answer =
        node.call("getLatestBlockhash", Some(&config)).map_err(|err| BlockhashError(err.to_string()))?;
    let at = Instant::now();
    let read = |answer: &Value| -> Option<RecentBlockhash> {
        let text = answer["value"]["blockhash"].as_str()?;
        let bytes = bs58::decode(text).into_vec().ok()?;
        Some(RecentBlockhash {
            blockhash: bytes.try_into().ok()?,
            last_valid_block_height: answer["value"]["lastValidBlockHeight"].as_u64()?,
            slot: answer["context"]["slot"].as_u64()?,
        })
    };
    let latest = read(&answer).ok_or_else(|| BlockhashError(format!("not a blockhash answer: {answer}")))?;
    let height = node
        .call("getBlockHeight", Some(&config))
        .map_err(|err| BlockhashError(format!("getBlockHeight: {err}")))?;
    let block_height = height.as_u64().ok_or_else(|| BlockhashError(format!("getBlockHeight: {height}")))?;
    Ok((latest, HeadSeen { at, slot: latest.slot, block_height }))
}

impl BlockhashFeed {
    /// Fetches the first blockhash (an error if the node gives none), then refreshes it every
    /// `every` on a thread of its own.
    pub fn start(node: Endpoint, commitment: &'static str, every: Duration) -> Result<Self, BlockhashError> {
        let (latest, seen) = fetch(&node, commitment)?;
        let state = Arc::new(Mutex::new(State { latest, seen: vec![seen], failures: 0 }));
        let stop = Arc::new(AtomicBool::new(false));
        let (shared, stopping) = (state.clone(), stop.clone());
        let thread = std::thread::Builder::new()
            .name("rpcbench-blockhash".into())
            .spawn(move || {
                while !stopping.load(Ordering::Relaxed) {
                    std::thread::sleep(every);
                    let answer = fetch(&node, commitment);
                    let mut state = lock(&shared);
                    match answer {
                        Ok((latest, seen)) => {
                            state.latest = latest;
                            state.seen.push(seen);
                        }
                        Err(_) => state.failures += 1,
                    }
                }
            })
            .map_err(|err| BlockhashError(format!("cannot start the refresher: {err}")))?;
        Ok(BlockhashFeed { state, stop, thread: Some(thread) })
    }

    /// The newest blockhash.
    pub fn latest(&self) -> RecentBlockhash {
        lock(&self.state).latest
    }

    /// A handle the signer thread reads the newest blockhash through.
    pub fn reader(&self) -> BlockhashReader {
        BlockhashReader::new(self.state.clone())
    }

    /// The node's slot at `at`: the slot last seen at or before it, moved on by the slots
    /// that passed since at the slot time the observations show (the refresh interval is
    /// several slots; without this the slot at send lagged by up to that many), never past
    /// the next slot seen. The first slot seen when none was seen before `at`.
    pub fn slot_at(&self, at: Instant) -> u64 {
        slot_estimate(&lock(&self.state).seen, at)
    }

    /// The newest head seen.
    pub fn head(&self) -> HeadSeen {
        let state = lock(&self.state);
        state.seen[state.seen.len() - 1]
    }

    /// Refreshes that failed.
    pub fn failures(&self) -> u64 {
        lock(&self.state).failures
    }
}

/// [`BlockhashFeed::slot_at`] over the heads `seen` (in the order they came, at least one).
fn slot_estimate(seen: &[HeadSeen], at: Instant) -> u64 {
    let after = seen.partition_point(|head| head.at <= at);
    let Some(base) = after.checked_sub(1).and_then(|i| seen.get(i)) else {
        return seen.first().map_or(0, |head| head.slot);
    };
    let (first, last) = (seen[0], seen[seen.len() - 1]);
    if last.slot <= first.slot || last.at <= first.at {
        return base.slot;
    }
    let slot_time = last.at.duration_since(first.at).as_secs_f64() / (last.slot - first.slot) as f64;
    let passed = (at.duration_since(base.at).as_secs_f64() / slot_time).floor() as u64;
    let estimate = base.slot.saturating_add(passed);
    match seen.get(after) {
        Some(next) => estimate.min(next.slot.max(base.slot)),
        None => estimate,
    }
}

impl Drop for BlockhashFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_slot_at_a_send_between_two_refreshes_counts_the_slots_passed_since_the_last() {
        // Slots of 100 ms, a refresh every 400 ms.
        let start = Instant::now();
        let head =
            |ms: u64, slot: u64| HeadSeen { at: start + Duration::from_millis(ms), slot, block_height: slot };
        let seen = [head(0, 1000), head(400, 1004), head(800, 1008)];
        let at = |ms: u64| start + Duration::from_millis(ms);
        assert_eq!(slot_estimate(&seen, at(0)), 1000);
        assert_eq!(slot_estimate(&seen, at(250)), 1002, "two slots after the refresh at 0");
        assert_eq!(slot_estimate(&seen, at(399)), 1003);
        assert_eq!(slot_estimate(&seen, at(1050)), 1010, "past the last refresh, at the same pace");
        // A late refresh: the estimate never passes the next slot seen.
        let late = [head(0, 1000), head(100, 1001), head(900, 1003)];
        assert_eq!(slot_estimate(&late, at(800)), 1003);
        assert_eq!(slot_estimate(&[head(100, 7)], at(0)), 7, "before the first: the first");
    }
}
