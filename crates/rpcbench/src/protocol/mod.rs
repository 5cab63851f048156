//! Protocols: how the calls of one request become bytes, and how its reply becomes one
//! [`Outcome`] per call. A protocol writes into the transport's [`Outgoing`] and reads the
//! reply's body; it never touches a socket. The engine's worker loop is generic over the
//! protocol, chosen once per run:
//! - [`single::SingleCall`]: one call per request, a JSON-RPC call (the scanning classifier of
//!   `crate::jsonrpc`) or a plain HTTP call ([`rest`]);
//! - [`batch::JsonRpcBatch`]: N JSON-RPC calls per request, answered as an array in any order;
//! - [`replay::Replayed`]: the recorded requests of a replay, one per ticket, byte for byte;
//! - [`send_raw::SendRawTx`]: one signed transaction per request (`rpcbench tx`);
//! - [`send_solana::SendSolanaTx`]: one signed Solana transaction per request (`rpcbench tx`);
//! - [`geyser_unary::GeyserUnary`]: one unary Yellowstone Geyser call per request (gRPC).

pub(crate) mod batch;
pub(crate) mod geyser_unary;
pub(crate) mod replay;
pub(crate) mod rest;
pub(crate) mod send_ledger;
pub(crate) mod send_raw;
pub(crate) mod send_solana;
pub(crate) mod single;

use rand::rngs::SmallRng;

use crate::outcome::Outcome;
use crate::transport::Outgoing;
use crate::workload::Workload;

/// One call carried by a request: which call of the workload, with which id.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct CallSlot {
    /// The call's index in the workload.
    pub call: usize,
    /// The JSON-RPC id sent with it (unused for HTTP calls).
    pub id: u64,
}

/// What a worker's requests draw from: the random source of the mix and of generated
/// values, the next fresh id, and the turn of an in-turn workload.
#[derive(Debug)]
pub(crate) struct Draw {
    /// Picks calls and generates params; seeded per worker from the run's seed.
    pub rng: SmallRng,
    /// The next fresh id (ids are unique per run: the worker's index sits in the high bits).
    pub next_id: u64,
    /// Every call carries this id instead of a fresh one (`--fixed-id`).
    pub fixed_id: Option<u64>,
    /// This worker's next turn: turns are dealt round robin over the workers (worker i of W
    /// takes i, i + W, i + 2W, ...), so that a workload in file order is taken in file order by
    /// the run as a whole.
    pub turn: u64,
    /// How far apart this worker's turns are (the number of workers).
    pub turn_stride: u64,
    /// The global index of the ticket being encoded (ticket i of the whole run, whichever
    /// worker and connection took it), set by the engine before each request: a replay sends
    /// request i of its file with ticket i, exactly, however the connections interleave.
    pub ticket: u64,
}

impl Draw {
    /// The id of the next call.
    pub(crate) fn id(&mut self) -> u64 {
        match self.fixed_id {
            Some(id) => id,
            None => {
                let id = self.next_id;
                self.next_id += 1;
                id
            }
        }
    }

    /// The next call of `workload`.
    pub(crate) fn pick(&mut self, workload: &Workload) -> usize {
        self.pick_with_turn(workload).0
    }

    /// The next call of `workload` and the turn it was picked at.
    #[inline]
    pub(crate) fn pick_with_turn(&mut self, workload: &Workload) -> (usize, u64) {
        let turn = self.turn;
        let call = workload.pick(&mut self.rng, turn);
        self.turn += self.turn_stride;
        (call, turn)
    }
}

/// How calls become a request and a reply becomes outcomes.
pub(crate) trait Protocol {
    /// Whether [`Draw::ticket`] must be set before each [`Protocol::encode`] (a replay's); the
    /// other protocols leave the hot path without it.
    const USES_TICKETS: bool = false;

    /// Writes the next request into `out` (already cleared) and the calls it carries into
    /// `slots` (already cleared; at least one).
    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing);

    /// Classifies a complete reply with HTTP `status` and `body`: calls `each(slot, outcome,
    /// detail)` exactly once for every slot, `detail` being the part of the body that answered
    /// it (for the first message of a JSON-RPC error code).
    fn classify(&self, status: u16, body: &[u8], slots: &[CallSlot], each: impl FnMut(usize, Outcome, &[u8]));
}
