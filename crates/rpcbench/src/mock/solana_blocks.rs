//! `blockSubscribe` on the Solana mock node when it takes transactions: one `blockNotification`
//! per block at the commitment asked for, in Agave's wire format, with the block's
//! transactions as `transactionDetails: "signatures"` lists them (base58, in landing order).
//! As Agave, only `"all"`, and only `confirmed` or `finalized` (a real node refuses
//! `processed`); only the `"signatures"` details are served here. A block's list is written
//! as its transactions land (`solana_block_signatures.rs`), so a block's notification does not stall
//! the mock's one thread for milliseconds (a scan of the statuses and a base58 text for each
//! of ~4,000 signatures every 100 ms at 40,000/s) while the sends wait for their answers.

use serde_json::Value;

use super::rpc::RpcError;
use super::solana::SolanaNode;
use super::solana_tx::{SlotChain, SolanaTxPool, FINALIZED_DEPTH};

/// How many slots after a block its notification comes, from `blockSubscribe`'s params.
pub(crate) fn block_depth(params: &[Value]) -> Result<u64, RpcError> {
    match params.first() {
        Some(Value::String(filter)) if filter == "all" => {}
        _ => {
            return Err(RpcError::invalid_params("Invalid params: this node serves the filter \"all\" only"))
        }
    }
    let config = params.get(1);
    let text = |name: &str| config.and_then(|config| config.get(name)).and_then(Value::as_str);
    if text("transactionDetails") != Some("signatures") {
        return Err(RpcError::invalid_params(
            "Invalid params: this node serves transactionDetails \"signatures\" only",
        ));
    }
    match text("commitment") {
        None | Some("finalized") => Ok(FINALIZED_DEPTH),
        Some("confirmed") => Ok(1),
        Some("processed") => {
            Err(RpcError::invalid_params("Method does not support commitment below `confirmed`"))
        }
        Some(other) => Err(RpcError::invalid_params(format!("unknown commitment `{other}`"))),
    }
}

/// The `result` of `slot`'s `blockNotification` (`None`: the slot has no block).
pub(crate) fn block_notification_result(
    node: &SolanaNode,
    pool: &SolanaTxPool,
    slot: u64,
    produced_at_us: u64,
) -> Option<String> {
    if SlotChain::is_skipped(node, slot) {
        return None;
    }
    let signatures = pool.block_signatures().of(slot);
    let mut text = String::with_capacity(320 + signatures.len());
    let (parent, _) = node.slot_parent_root(slot);
    let blockhash = |slot| bs58::encode(SlotChain::blockhash_bytes(node, slot)).into_string();
    text.push_str(&format!(
        r#"{{"context":{{"slot":{slot}}},"value":{{"slot":{slot},"block":{{"previousBlockhash":"{}","blockhash":"{}","parentSlot":{parent},"signatures":["#,
        blockhash(parent),
        blockhash(slot),
    ));
    text.push_str(signatures);
    text.push_str(&format!(
        r#"],"blockTime":null,"blockHeight":{}}},"err":null}},"rpcbenchProducedAt":{produced_at_us}}}"#,
        SlotChain::block_height(node, slot)
    ));
    Some(text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn block_subscribe_takes_all_with_signatures_at_confirmed_or_finalized_and_refuses_processed() {
        let signatures = json!({"transactionDetails": "signatures"});
        assert_eq!(block_depth(&[json!("all"), signatures.clone()]).ok(), Some(FINALIZED_DEPTH));
        let at = |commitment: &str| {
            block_depth(&[
                json!("all"),
                json!({"transactionDetails": "signatures", "commitment": commitment}),
            ])
        };
        assert_eq!(at("confirmed").ok(), Some(1));
        assert_eq!(at("finalized").ok(), Some(FINALIZED_DEPTH));
        let refused = at("processed").unwrap_err();
        assert!(refused.message.contains("below `confirmed`"), "{}", refused.message);
        assert!(block_depth(&[json!({"mentionsAccountOrProgram": "x"}), signatures]).is_err());
        assert!(block_depth(&[json!("all"), json!({"transactionDetails": "full"})]).is_err());
        assert!(block_depth(&[]).is_err());
    }
}
