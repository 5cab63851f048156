//! The newest blockhash and the heads seen, shared between the background refresher
//! (`blockhash.rs`, which asks the node) and the signer (`ahead.rs`, which only reads): a leaf,
//! so that signing never depends on how the node is asked.

use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// A blockhash the node gave, and until which block height it is valid.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct RecentBlockhash {
    /// The blockhash.
    pub blockhash: [u8; 32],
    /// The last block height at which a transaction using it can land.
    pub last_valid_block_height: u64,
    /// The slot of the answer's context.
    pub slot: u64,
}

/// One look at the node's head.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HeadSeen {
    /// When the answer came.
    pub at: Instant,
    /// The slot.
    pub slot: u64,
    /// The block height.
    pub block_height: u64,
}

/// What the refresher shares with its readers.
#[derive(Debug)]
pub(super) struct State {
    pub(super) latest: RecentBlockhash,
    pub(super) seen: Vec<HeadSeen>,
    pub(super) failures: u64,
}

/// Reads the newest blockhash the refresher (`blockhash::BlockhashFeed`) keeps.
#[derive(Debug, Clone)]
pub struct BlockhashReader {
    state: Arc<Mutex<State>>,
}

impl BlockhashReader {
    pub(super) fn new(state: Arc<Mutex<State>>) -> Self {
        BlockhashReader { state }
    }

    /// The newest blockhash.
    pub fn latest(&self) -> RecentBlockhash {
        lock(&self.state).latest
    }
}

pub(super) fn lock(state: &Mutex<State>) -> MutexGuard<'_, State> {
    state.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}
