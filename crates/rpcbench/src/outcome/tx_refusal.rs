//! Why a node refused a transaction, as a row of the one outcome table: each reason its own
//! class, or the rate-limit row, or the JSON-RPC error row by code.

use std::fmt;

use super::{Outcome, OutcomeClass};

/// Why a node refused a transaction, read from its JSON-RPC error (`crate::tx::refusal` reads
/// the messages). Each reason is a row of [`CLASSES`] ([`TxRefusal::class`]): its own, or the
/// rate-limit row, or the JSON-RPC error row by code.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxRefusal {
    /// The nonce was already used ("nonce too low").
    NonceTooLow,
    /// The nonce leaves a gap the node will not queue ("nonce too high", "nonce gap").
    NonceGap,
    /// Same sender and nonce as a pending transaction, without enough fee bump.
    ReplacementUnderpriced,
    /// The node already has this exact transaction ("already known").
    AlreadyKnown,
    /// The sender cannot pay gas x price + value.
    InsufficientFunds,
    /// The fee is below what the pool takes ("transaction underpriced", "max fee per gas less
    /// than block base fee").
    Underpriced,
    /// The pool is full.
    PoolFull,
    /// The gas limit is wrong for the transaction or the block ("intrinsic gas too low",
    /// "exceeds block gas limit").
    Gas,
    /// The node's rate limit.
    RateLimited,
    /// Solana: the transaction's blockhash is unknown or expired ("Blockhash not found").
    BlockhashNotFound,
    /// Solana: the same transaction (signature) was already taken ("already been processed").
    AlreadyProcessed,
    /// Anything else, by JSON-RPC code.
    Other(i64),
}

impl TxRefusal {
    /// The reasons that have a row of their own in [`CLASSES`], in the table's order.
    pub const WITH_OWN_ROW: [TxRefusal; 10] = [
        TxRefusal::NonceTooLow,
        TxRefusal::NonceGap,
        TxRefusal::ReplacementUnderpriced,
        TxRefusal::AlreadyKnown,
        TxRefusal::InsufficientFunds,
        TxRefusal::Underpriced,
        TxRefusal::PoolFull,
        TxRefusal::Gas,
        TxRefusal::BlockhashNotFound,
        TxRefusal::AlreadyProcessed,
    ];

    /// The reason's row of [`CLASSES`]: a rate-limit refusal is [`OutcomeClass::RateLimited`],
    /// one of no known reason [`OutcomeClass::RpcError`].
    pub const fn class(self) -> OutcomeClass {
        match self {
            TxRefusal::NonceTooLow => OutcomeClass::TxNonceTooLow,
            TxRefusal::NonceGap => OutcomeClass::TxNonceGap,
            TxRefusal::ReplacementUnderpriced => OutcomeClass::TxReplacementUnderpriced,
            TxRefusal::AlreadyKnown => OutcomeClass::TxAlreadyKnown,
            TxRefusal::InsufficientFunds => OutcomeClass::TxInsufficientFunds,
            TxRefusal::Underpriced => OutcomeClass::TxUnderpriced,
            TxRefusal::PoolFull => OutcomeClass::TxPoolFull,
            TxRefusal::Gas => OutcomeClass::TxGas,
            TxRefusal::RateLimited => OutcomeClass::RateLimited,
            TxRefusal::BlockhashNotFound => OutcomeClass::TxBlockhashNotFound,
            TxRefusal::AlreadyProcessed => OutcomeClass::TxAlreadyProcessed,
            TxRefusal::Other(_) => OutcomeClass::RpcError,
        }
    }

    /// The reason as reports and files key it: its row's name (`nonce_too_low`,
    /// `rate_limited`), and `rpc_CODE` for the refusals of no known reason.
    pub fn name(self) -> String {
        match self {
            TxRefusal::Other(code) => format!("rpc_{code}"),
            reason => reason.class().spec().name.to_string(),
        }
    }

    /// How reports name it: its row's label (`nonce too low`), `rate limited`, `JSON-RPC CODE`.
    pub fn label(self) -> String {
        match self {
            TxRefusal::Other(code) => format!("JSON-RPC {code}"),
            TxRefusal::RateLimited => "rate limited".to_string(),
            reason => reason.class().spec().label.unwrap_or(reason.class().spec().name).to_string(),
        }
    }

    /// Reads [`TxRefusal::name`]'s form back.
    pub fn from_name(name: &str) -> Option<Self> {
        if name == OutcomeClass::RateLimited.spec().name {
            return Some(TxRefusal::RateLimited);
        }
        if let Some(code) = name.strip_prefix("rpc_") {
            return code.parse().ok().map(TxRefusal::Other);
        }
        TxRefusal::WITH_OWN_ROW.into_iter().find(|reason| reason.class().spec().name == name)
    }

    /// The outcome of the call the node refused this way, answered with JSON-RPC error `code`:
    /// [`Outcome::TxRefused`] for the reasons with a row of their own; else the JSON-RPC error,
    /// which the engine's rate-limit rules judge as for every other call.
    pub fn outcome(self, code: i64) -> Outcome {
        match self {
            TxRefusal::RateLimited | TxRefusal::Other(_) => Outcome::RpcError(code),
            reason => Outcome::TxRefused(reason),
        }
    }
}

impl fmt::Display for TxRefusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.name())
    }
}
