//! What a Solana signature's status says, for every way a run sees its transactions land
//! (the watch, the block stream, the status poll and lookups): the commitment levels, one
//! transaction seen landed, and the node's limit of signatures per `getSignatureStatuses`.

use std::time::Instant;

/// Signatures per `getSignatureStatuses` call (the node's limit).
pub const STATUS_BATCH: usize = 256;

/// The commitment a transaction must reach to count as landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Commitment {
    /// In a block the node processed.
    Processed,
    /// Voted on by a supermajority.
    Confirmed,
    /// Rooted.
    Finalized,
}

impl Commitment {
    /// The name the RPC API uses.
    pub fn name(self) -> &'static str {
        match self {
            Commitment::Processed => "processed",
            Commitment::Confirmed => "confirmed",
            Commitment::Finalized => "finalized",
        }
    }

    /// Reads a `confirmationStatus`.
    pub fn parse(text: &str) -> Option<Commitment> {
        match text {
            "processed" => Some(Commitment::Processed),
            "confirmed" => Some(Commitment::Confirmed),
            "finalized" => Some(Commitment::Finalized),
            _ => None,
        }
    }
}

/// One transaction seen landed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Landing {
    /// The transaction's index in send order.
    pub index: u64,
    /// The slot it landed in.
    pub slot: u64,
    /// When it was seen.
    pub arrived: Instant,
    /// It landed with an error (fee paid, instructions failed).
    pub failed: bool,
}
