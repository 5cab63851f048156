//! The WebSocket side of a mock server's shared state: its knobs, counters and the broadcast
//! of produced items, held by the dispatch's `Shared` and used by the WebSocket wire (`ws.rs`).

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::broadcast;

use super::faults::unit_float;
use super::{prng, MockOptions};

/// Notifications a connection may have queued unsent when `ws_max_queue` is not set.
pub(super) const DEFAULT_MAX_QUEUE: usize = 4096;
/// Items the broadcast channel holds for a connection that has not taken them yet.
pub(super) const BROADCAST_CAPACITY: usize = 1024;
/// Generator streams of the WebSocket knobs.
pub(super) const S_DROP: u64 = 0x7773_6472_6f70;
pub(super) const S_DUPLICATE: u64 = 0x0077_7364_7570;
pub(super) const S_SUBSCRIPTION_ID: u64 = 0x0077_7373_7562_6964;

/// What a [`super::MockServer`] counted on its WebSocket connections so far.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct WsStats {
    /// Notifications handed to a connection's writer (each counted once, duplicates apart).
    pub notifications_sent: u64,
    /// Notifications not sent because of `ws_drop`.
    pub notifications_dropped: u64,
    /// Of those, the ones of a block or slot subscription (newHeads, slot) that fell between
    /// two notifications sent to the same subscription: what a client sees as gaps in the
    /// numbers. A subscription's dropped first notifications (nothing sent before them) and
    /// its dropped last ones (nothing sent after them before it ended) are not among them.
    pub drops_between_sent: u64,
    /// Second copies sent because of `ws_duplicate`.
    pub duplicates_sent: u64,
    /// Successful subscribe calls.
    pub subscriptions_opened: u64,
    /// Connections closed (1008) for having too many notifications queued unsent.
    pub subscribers_closed_slow: u64,
    /// Connections closed (1001 "going away") by `ws_close_after`.
    pub closed_on_schedule: u64,
    /// Upgrades refused (503) past `ws_max_upgrades`.
    pub upgrades_refused: u64,
}

/// The WebSocket side of a server: knobs, counters, open connections and the item broadcast.
#[derive(Debug)]
pub(crate) struct WsState {
    pub(super) drop: f64,
    pub(super) duplicate: f64,
    pub(super) delay: Option<Duration>,
    pub(super) max_queue: usize,
    pub(super) max_connections: Option<usize>,
    /// Each connection is closed (1001) this long after it opened.
    pub(super) close_after: Option<Duration>,
    /// Upgrades accepted at most over the server's life.
    pub(super) max_upgrades: Option<u64>,
    pub(super) upgrades: AtomicU64,
    pub(super) upgrades_refused: AtomicU64,
    pub(super) closed_on_schedule: AtomicU64,
    /// Most subscriptions open at once on one connection; one more is refused.
    pub(super) max_subscriptions: Option<usize>,
    pub(super) seed: u64,
    pub(super) slot_time: Duration,
    pub(super) started: Instant,
    /// Heads sent this many behind the true one.
    pub(super) head_lag: u64,
    pub(super) open: AtomicUsize,
    pub(super) items: broadcast::Sender<Arc<Item>>,
    pub(super) next_subscription: AtomicU64,
    pub(super) sent: AtomicU64,
    pub(super) dropped: AtomicU64,
    pub(super) dropped_between: AtomicU64,
    pub(super) duplicates: AtomicU64,
    pub(super) opened: AtomicU64,
    pub(super) closed_slow: AtomicU64,
}

impl WsState {
    pub(crate) fn new(options: &MockOptions, started: Instant) -> Self {
        WsState {
            drop: options.ws_drop,
            duplicate: options.ws_duplicate,
            delay: options.ws_delay.filter(|delay| !delay.is_zero()),
            max_queue: options.ws_max_queue.unwrap_or(DEFAULT_MAX_QUEUE),
            max_connections: options.ws_max_connections,
            close_after: options.ws_close_after,
            max_upgrades: options.ws_max_upgrades,
            upgrades: AtomicU64::new(0),
            upgrades_refused: AtomicU64::new(0),
            closed_on_schedule: AtomicU64::new(0),
            max_subscriptions: options.ws_max_subscriptions,
            seed: options.seed,
            slot_time: options.slot_time,
            // A node whose heads show late produces them late.
            started: started + options.head_delay,
            head_lag: options.head_lag,
            open: AtomicUsize::new(0),
            items: broadcast::channel(BROADCAST_CAPACITY).0,
            next_subscription: AtomicU64::new(0),
            sent: AtomicU64::new(0),
            dropped: AtomicU64::new(0),
            dropped_between: AtomicU64::new(0),
            duplicates: AtomicU64::new(0),
            opened: AtomicU64::new(0),
            closed_slow: AtomicU64::new(0),
        }
    }

    pub(crate) fn stats(&self) -> WsStats {
        WsStats {
            notifications_sent: self.sent.load(Ordering::Relaxed),
            notifications_dropped: self.dropped.load(Ordering::Relaxed),
            drops_between_sent: self.dropped_between.load(Ordering::Relaxed),
            duplicates_sent: self.duplicates.load(Ordering::Relaxed),
            subscriptions_opened: self.opened.load(Ordering::Relaxed),
            subscribers_closed_slow: self.closed_slow.load(Ordering::Relaxed),
            closed_on_schedule: self.closed_on_schedule.load(Ordering::Relaxed),
            upgrades_refused: self.upgrades_refused.load(Ordering::Relaxed),
        }
    }

    pub(super) fn draw(&self, stream: u64, share: f64, subscription: u64, index: u64) -> bool {
        share > 0.0 && unit_float(prng::draw(self.seed, stream, subscription, index)) < share
    }
}

/// One produced block or slot, with everything its notifications carry.
#[derive(Debug)]
pub(crate) struct Item {
    /// The block number or slot.
    pub(super) number: u64,
    /// Unix microseconds when it was produced.
    pub(super) produced_at_us: u64,
    pub(super) data: ItemData,
}

#[derive(Debug)]
pub(super) enum ItemData {
    Ethereum {
        /// The `newHeads` result, serialized.
        head: String,
        /// The block's logs, each with `rpcbenchProducedAt`.
        logs: Vec<Value>,
        /// The `newPendingTransactions` results.
        pending: Vec<String>,
    },
    Solana {
        /// The `slotNotification` result, serialized.
        slot: String,
        /// The `logsNotification` value.
        logs: Value,
    },
}
