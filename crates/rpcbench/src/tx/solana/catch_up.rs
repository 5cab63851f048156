//! What a Solana watch does after it reconnected: the signatures it still looks for may have
//! landed while no connection was open (a subscription made after its landing may never be
//! notified; a block stream does not send again the blocks of the gap), so they are checked
//! once with `getSignatureStatuses`, on a helper thread (the watch goes on reading its feed).
//! What landed is handed on as a landing seen at the answer's arrival (the time it was seen)
//! and counted in the watch's health as caught up, and its index is left for the watch
//! ([`FoundInCatchUp`]), which then looks for it no more: a later reconnect does not subscribe
//! it, check it or count it again.

use std::sync::mpsc::Sender;
use std::sync::{Arc, Mutex};
use std::time::Instant;

use super::landing::StatusFound;
use super::lookup::look_up_statuses;
use super::status::{Commitment, Landing};
use crate::client::Endpoint;
use crate::tx::feed_watch::WatchHealth;

/// The indexes a watch's checks found landed, not yet taken by the watch (at most one check's
/// worth: the watch takes them before its next check).
#[derive(Debug, Default, Clone)]
pub(super) struct FoundInCatchUp(Arc<Mutex<Vec<u64>>>);

impl FoundInCatchUp {
    /// What was found since the last call.
    pub(super) fn take(&self) -> Vec<u64> {
        self.0.lock().map(|mut found| std::mem::take(&mut *found)).unwrap_or_default()
    }

    pub(super) fn add(&self, found: Vec<u64>) {
        if let Ok(mut all) = self.0.lock() {
            all.extend(found);
        }
    }
}

/// Checks `looked_for` (index, signature) once at `commitment` on `node`, on a thread of its
/// own, and sends what landed to `seen` (and its index to `found_to`). Nothing to check, a check of the watch's still under
/// way (one at a time: a node that closes the connection again and again does not pile up
/// checks) or no thread: nothing is done (the landing book's lookup settles them when they
/// come due).
pub(super) fn check_once(
    node: &Endpoint,
    commitment: Commitment,
    looked_for: Vec<(u64, [u8; 64])>,
    seen: &Sender<Landing>,
    health: &Arc<WatchHealth>,
    found_to: &FoundInCatchUp,
) {
    if looked_for.is_empty() || !health.begin_catch_up() {
        return;
    }
    let (node, seen, health, found_to) = (node.clone(), seen.clone(), health.clone(), found_to.clone());
    let done = health.clone();
    let started = crate::util::thread_class::spawn_helper("rpcbench-catch-up", move || {
        let signatures: Vec<[u8; 64]> = looked_for.iter().map(|(_, signature)| *signature).collect();
        let (found, _failed_calls) = look_up_statuses(&node, &signatures, commitment);
        let arrived = Instant::now();
        let mut caught_up = Vec::new();
        for ((index, _), found) in looked_for.iter().zip(found) {
            if let StatusFound::Landed { slot, failed } = found {
                caught_up.push(*index);
                let _ = seen.send(Landing { index: *index, slot, arrived, failed });
            }
        }
        let count = caught_up.len() as u64;
        // Left for the watch before the health says the check is over: its next check
        // (possible from then on) never looks for these again.
        found_to.add(caught_up);
        health.caught_up_with(count);
    });
    if started.is_err() {
        done.caught_up_with(0);
    }
}
