//! The synthetic Solana node (work in progress).

use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::Value;

use super::server::{method_not_found, RpcError};

#[derive(Debug)]
pub(crate) struct SolanaNode {}

impl SolanaNode {
    pub(crate) fn new(_seed: u64, _slot_time: Duration, _started: Instant, _unix_now: u64) -> Self {
        SolanaNode {}
    }

    pub(crate) fn call(&self, method: &str, _params: Option<&RawValue>) -> Result<Value, RpcError> {
        Err(method_not_found(method))
    }
}
