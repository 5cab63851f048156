//! What a Solana watch does after it reconnected: the signatures it still looks for may have
//! landed while no connection was open (a subscription made after its landing may never be
//! notified; a block stream does not send again the blocks of the gap), so they are checked
//! once with `getSignatureStatuses`, on a helper thread (the watch goes on reading its feed).
//! What landed is handed on as a landing seen at the answer's arrival (the time it was seen)
//! and counted in the watch's health as caught up.

use std::sync::mpsc::Sender;
use std::sync::Arc;
use std::time::Instant;

use super::landing::StatusFound;
use super::lookup::look_up_statuses;
use super::status::{Commitment, Landing};
use crate::client::Endpoint;
use crate::tx::feed_watch::WatchHealth;

/// Checks `looked_for` (index, signature) once at `commitment` on `node`, on a thread of its
/// own, and sends what landed to `seen`. Nothing to check, a check of the watch's still under
/// way (one at a time: a node that closes the connection again and again does not pile up
/// checks) or no thread: nothing is done (the landing book's lookup settles them when they
/// come due).
pub(super) fn check_once(
    node: &Endpoint,
    commitment: Commitment,
    looked_for: Vec<(u64, [u8; 64])>,
    seen: &Sender<Landing>,
    health: &Arc<WatchHealth>,
) {
    if looked_for.is_empty() || !health.begin_catch_up() {
        return;
    }
    let (node, seen, health) = (node.clone(), seen.clone(), health.clone());
    let done = health.clone();
    let started = crate::util::thread_class::spawn_helper("rpcbench-catch-up", move || {
        let signatures: Vec<[u8; 64]> = looked_for.iter().map(|(_, signature)| *signature).collect();
        let (found, _failed_calls) = look_up_statuses(&node, &signatures, commitment);
        let arrived = Instant::now();
        let mut caught_up = 0;
        for ((index, _), found) in looked_for.iter().zip(found) {
            if let StatusFound::Landed { slot, failed } = found {
                caught_up += 1;
                let _ = seen.send(Landing { index: *index, slot, arrived, failed });
            }
        }
        health.caught_up_with(caught_up);
    });
    if started.is_err() {
        done.caught_up_with(0);
    }
}
