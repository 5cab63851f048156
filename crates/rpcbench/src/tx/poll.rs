//! The head watch without WebSocket: polls `eth_blockNumber` at a stated interval on a thread
//! of its own and hands on each new head with the instant the poll saw it, so an inclusion time
//! read from it is late by up to one interval (the resolution the report prints beside every
//! figure that depends on it). [`HeadSource`] lets the driver read either watch the same way.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{channel, Receiver};
use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use super::watch::{HeadWatch, SeenHead};
use crate::client::Endpoint;

/// Heads handed on at most for one poll (a node far ahead is not walked block by block).
const MAX_HEADS_PER_POLL: u64 = 64;

/// A running poll of the node's head.
#[derive(Debug)]
pub struct HeadPoll {
    heads: Receiver<SeenHead>,
    stop: Arc<AtomicBool>,
    thread: Option<JoinHandle<()>>,
    interval: Duration,
}

impl HeadPoll {
    /// Polls `node`'s head every `interval` from `head_now` on (heads after it are handed on).
    pub fn start(node: Endpoint, interval: Duration, head_now: u64) -> std::io::Result<HeadPoll> {
        let interval = interval.max(Duration::from_millis(1));
        let (heads_in, heads) = channel();
        let stop = Arc::new(AtomicBool::new(false));
        let stopping = stop.clone();
        let thread = crate::util::thread_class::spawn_helper("rpcbench-head-poll", move || {
            let mut last = head_now;
            let mut next = Instant::now();
            while !stopping.load(Ordering::Relaxed) {
                if let Some(number) = super::watch::block_number(&node) {
                    let arrived = Instant::now();
                    if number > last {
                        let first = (last + 1).max(number.saturating_sub(MAX_HEADS_PER_POLL - 1));
                        for number in first..=number {
                            if heads_in
                                .send(SeenHead { number, arrived, produced_at_us: None, polled: true })
                                .is_err()
                            {
                                return;
                            }
                        }
                        last = number;
                    }
                }
                next += interval;
                let now = Instant::now();
                if next > now {
                    std::thread::sleep(next - now);
                } else {
                    next = now;
                }
            }
        })?;
        Ok(HeadPoll { heads, stop, thread: Some(thread), interval })
    }

    /// The polling interval: the resolution of every inclusion time read from this watch.
    pub fn interval(&self) -> Duration {
        self.interval
    }

    /// The heads seen since the last call.
    pub fn drain(&self) -> Vec<SeenHead> {
        self.heads.try_iter().collect()
    }

    /// Stops polling and returns the heads not yet drained.
    pub fn stop(mut self) -> Vec<SeenHead> {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
        self.drain()
    }
}

/// Where a run's heads come from: `newHeads` over WebSocket, or a poll.
#[derive(Debug)]
pub enum HeadSource {
    /// Subscribed over WebSocket: each head's own arrival.
    Subscribed(HeadWatch),
    /// Polled at an interval.
    Polled(HeadPoll),
}

impl HeadSource {
    /// The resolution of inclusion times: `None` for a subscription (each head's arrival),
    /// the interval for a poll.
    pub fn resolution(&self) -> Option<Duration> {
        match self {
            HeadSource::Subscribed(_) => None,
            HeadSource::Polled(poll) => Some(poll.interval()),
        }
    }

    /// The subscription's connection's ends and reconnects (`None`: polled).
    pub fn health(&self) -> Option<&super::watch::WatchHealth> {
        match self {
            HeadSource::Subscribed(watch) => Some(watch.health()),
            HeadSource::Polled(_) => None,
        }
    }

    /// The heads seen since the last call.
    pub fn drain(&self) -> Vec<SeenHead> {
        match self {
            HeadSource::Subscribed(watch) => watch.drain(),
            HeadSource::Polled(poll) => poll.drain(),
        }
    }

    /// Stops and returns the heads not yet drained.
    pub fn stop(self) -> Vec<SeenHead> {
        match self {
            HeadSource::Subscribed(watch) => watch.stop(),
            HeadSource::Polled(poll) => poll.stop(),
        }
    }
}
