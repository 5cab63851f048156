//! Solana transactions under load (`rpcbench tx` on a Solana node): keypairs ([`keys`]), the
//! legacy wire format built and read by hand ([`wire`]), the recent blockhash kept fresh in
//! the background ([`blockhash`]), the signed-ahead pipeline that subscribes each signature
//! before it may be sent ([`ahead`]), the `signatureSubscribe` watch and the
//! `getSignatureStatuses` poll ([`watch`], signatures written as base58 by `base58`; what a status says: `status`), and each transaction's one final outcome
//! ([`landing`], bounded like `crate::tx::inclusion`), and the `getSignatureStatuses` lookup
//! of the ones not seen land in time ([`lookup`]). The mock node's `sendTransaction` reads
//! transactions with [`wire`] too.

pub mod ahead;
pub(crate) mod base58;
pub mod blockhash;
mod blocks;
mod catch_up;
mod handoffs;
pub mod keys;
pub mod landing;
pub mod landing_thread;
pub mod lookup;
mod recent;
mod status;
mod status_poll;
pub mod watch;
pub mod wire;

pub use blocks::BlockStreamEnd;
