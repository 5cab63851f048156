//! Reading what `rpcbench tx` checks of its included Ethereum transactions: their receipts'
//! status, read in batches as typed answers (the rest of each receipt, logs bloom and all,
//! skipped without building a `serde_json::Value` of it), and the hashes written as the
//! node takes them.

use serde::Deserialize;
use serde_json::Value;

use crate::client::batches::LookupBatches;
use crate::client::Endpoint;

/// `0x` and the 64 hex digits of `hash`.
pub fn hash_hex(hash: &[u8; 32]) -> String {
    crate::tx::keys::hex_0x(hash)
}

/// Which included transactions' receipts `rpcbench tx` reads (`--receipts`), in parts per
/// million of the included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ReceiptSample {
    per_million: u32,
}

impl ReceiptSample {
    /// Every included transaction's receipt.
    pub const ALL: ReceiptSample = ReceiptSample { per_million: 1_000_000 };
    /// No receipt.
    pub const NONE: ReceiptSample = ReceiptSample { per_million: 0 };

    /// `per_million` of the included transactions' receipts (a million or more: all).
    pub const fn per_million(per_million: u32) -> ReceiptSample {
        ReceiptSample { per_million }
    }

    /// Whether the receipt of the transaction with `hash` is read: the hash's first eight bytes
    /// (uniform for a Keccak-256 hash) against the share, so a sample is the same on every run.
    pub fn reads(&self, hash: &[u8; 32]) -> bool {
        let mut first = [0u8; 8];
        first.copy_from_slice(&hash[..8]);
        let position = u64::from_be_bytes(first) % 1_000_000;
        position < u64::from(self.per_million)
    }

    /// Whether every receipt is read.
    pub fn is_all(&self) -> bool {
        self.per_million >= 1_000_000
    }

    /// What the report says was checked: `all`, `none` or `a 10% sample`.
    pub fn label(&self) -> String {
        match self.per_million {
            0 => "none".into(),
            share if share >= 1_000_000 => "all".into(),
            share => format!("a {}% sample", share as f64 / 10_000.0),
        }
    }
}

/// What a receipt is read for: its status.
#[derive(Debug, Deserialize)]
struct ReceiptStatus {
    #[serde(default)]
    status: Option<Value>,
}

/// Whether a receipt (a batch's result: `None` when the call had none, `Some(None)` for a
/// `null` receipt) says its transaction succeeded (`0x1`) or reverted (`0x0`); `None` for
/// anything else.
fn succeeded(receipt: Option<Option<ReceiptStatus>>) -> Option<bool> {
    match receipt??.status?.as_str()? {
        "0x1" => Some(true),
        "0x0" => Some(false),
        _ => None,
    }
}

/// The status of each of `hashes`' receipts, in order (`eth_getTransactionReceipt` in
/// `batches`): `Some(true)` succeeded, `Some(false)` reverted, `None` not read (no answer, no
/// receipt, or no status of either kind).
pub fn read_statuses(batches: &LookupBatches, node: &Endpoint, hashes: &[[u8; 32]]) -> Vec<Option<bool>> {
    let params: Vec<[String; 1]> = hashes.iter().map(|hash| [hash_hex(hash)]).collect();
    let receipts: Vec<Option<Option<ReceiptStatus>>> =
        batches.call_as(node, "eth_getTransactionReceipt", &params);
    receipts.into_iter().map(succeeded).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::client::batches::{read_batch_answer_as, BatchAnswer, CallAnswer};
    use crate::client::RawAnswer;

    #[test]
    fn a_hash_is_written_as_0x_and_64_lowercase_digits() {
        let mut hash = [0u8; 32];
        hash[0] = 0xab;
        hash[31] = 0x0f;
        let text = hash_hex(&hash);
        assert_eq!(text.len(), 66);
        assert!(text.starts_with("0xab00"), "{text}");
        assert!(text.ends_with("000f"), "{text}");
    }

    #[test]
    fn receipts_read_typed_give_success_revert_and_unread_as_the_whole_reading_did() {
        let body = br#"[{"jsonrpc":"2.0","id":0,"result":{"logs":[],"logsBloom":"0x00","status":"0x1","type":"0x2"}},
            {"jsonrpc":"2.0","id":1,"result":{"status":"0x0","contractAddress":null}},
            {"jsonrpc":"2.0","id":2,"result":null},
            {"jsonrpc":"2.0","id":3,"result":{"status":1}},
            {"jsonrpc":"2.0","id":4,"result":{"gasUsed":"0x5208"}},
            {"jsonrpc":"2.0","id":5,"error":{"code":-32000,"message":"x"}},
            {"jsonrpc":"2.0","id":6,"result":"0x1"}]"#;
        let answer = RawAnswer { status: 200, body: body.to_vec() };
        let BatchAnswer::Results { answers, .. } =
            read_batch_answer_as::<Option<ReceiptStatus>>(&answer, 8, 0)
        else {
            panic!("not read as results")
        };
        let statuses: Vec<Option<bool>> =
            answers.into_iter().map(CallAnswer::into_result).map(succeeded).collect();
        assert_eq!(statuses, [Some(true), Some(false), None, None, None, None, None, None]);
    }
}
