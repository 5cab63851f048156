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

    /// The slot last seen at or before `at` (the first one seen when none was).
    pub fn slot_at(&self, at: Instant) -> u64 {
        let state = lock(&self.state);
        let seen = &state.seen;
        let after = seen.partition_point(|head| head.at <= at);
        seen[after.saturating_sub(1)].slot
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

impl Drop for BlockhashFeed {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
