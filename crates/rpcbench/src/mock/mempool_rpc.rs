//! The JSON-RPC face of the mock Ethereum node's mempool ([`super::mempool`]):
//! `eth_sendRawTransaction`, and the answers that change once the node keeps real accounts
//! (`eth_getTransactionCount`, `eth_getBalance`) or has included the pool's transactions
//! (`eth_getTransactionByHash`, `eth_getTransactionReceipt`, the pool's part of a block).
//! Shaped as geth answers them. `rpcbench_mempoolStatus` tells tests the mock's own truth
//! (the head produced, transactions dropped, reorgs).

use std::io::Write as _;

use serde_json::{json, Value};

use crate::tx::keys::{hex_pair, Address};
use crate::tx::sign::{contract_address, DecodedTx, Fees};

use super::mempool::{Included, Lookup, Mempool};
use super::prng::{hex_data, hex_quantity, parse_hex_vec};
use super::rpc::{RpcError, INTERNAL_ERROR};

fn address_param(params: &[Value], index: usize) -> Result<Address, RpcError> {
    params.get(index).and_then(Value::as_str).and_then(Address::parse).ok_or_else(|| {
        RpcError::invalid_params(format!("invalid argument {index}: hex string of 20 bytes expected"))
    })
}

fn hash_param(params: &[Value]) -> Result<[u8; 32], RpcError> {
    hash_text(params.first().and_then(Value::as_str))
}

fn hash_text(text: Option<&str>) -> Result<[u8; 32], RpcError> {
    text.and_then(parse_hex_vec)
        .and_then(|bytes| bytes.try_into().ok())
        .ok_or_else(|| RpcError::invalid_params("invalid argument 0: hex string of 32 bytes expected"))
}

/// Answers `method` from the pool when it is one the pool owns; `None` leaves it to the
/// synthetic chain. `block_hash` names a block's hash.
pub(crate) fn answer(
    pool: &mut Mempool,
    method: &str,
    params: &[Value],
    block_hash: impl Fn(u64) -> [u8; 32],
) -> Option<Result<Value, RpcError>> {
    Some(match method {
        "eth_sendRawTransaction" | "eth_getTransactionReceipt" => {
            let mut out = Vec::new();
            let text = params.first().and_then(Value::as_str);
            return write_answer(pool, method, text, block_hash, &mut out).map(|wrote| {
                wrote.and_then(|()| {
                    serde_json::from_slice(&out).map_err(|err| RpcError::new(INTERNAL_ERROR, err.to_string()))
                })
            });
        }
        "eth_getTransactionCount" => address_param(params, 0).map(|address| {
            let pending = params.get(1).and_then(Value::as_str) == Some("pending");
            json!(hex_quantity(pool.nonce(&address, pending).into()))
        }),
        "eth_getBalance" => {
            address_param(params, 0).map(|address| json!(hex_quantity(pool.balance(&address))))
        }
        "eth_getTransactionByHash" => {
            let hash = match hash_param(params) {
                Ok(hash) => hash,
                Err(err) => return Some(Err(err)),
            };
            match pool.lookup(&hash)? {
                Lookup::Pending(decoded) => Ok(tx_json(decoded, None, &block_hash)),
                Lookup::Included(included) => Ok(tx_json(&included.decoded, Some(included), &block_hash)),
            }
        }
        // The mock's own truth, for tests: what it dropped and took back.
        "rpcbench_mempoolStatus" => Ok(json!({
            "head": pool.head(),
            "dropped": pool.dropped(),
            "reorgs": pool.reorgs(),
        })),
        _ => return None,
    })
}

/// The pool's transactions of block `number` as a block lists them: hashes, or full objects.
pub(crate) fn block_transactions(
    pool: &Mempool,
    number: u64,
    full: bool,
    block_hash: impl Fn(u64) -> [u8; 32],
) -> Vec<Value> {
    let hashes = pool.block_hashes(number);
    if !full {
        // A block's hashes are of transactions it included: no lookup each.
        return hashes.iter().map(|hash| Value::String(hex_data(hash))).collect();
    }
    hashes
        .iter()
        .filter_map(|hash| match pool.lookup(hash) {
            Some(Lookup::Included(included)) => Some(tx_json(&included.decoded, Some(included), &block_hash)),
            _ => None,
        })
        .collect()
}

fn tx_json(decoded: &DecodedTx, included: Option<&Included>, block_hash: &impl Fn(u64) -> [u8; 32]) -> Value {
    let tx = &decoded.tx;
    let mut object = json!({
        "hash": hex_data(&decoded.hash),
        "from": decoded.sender.to_string(),
        "to": tx.to.map(|to| to.to_string()),
        "nonce": hex_quantity(tx.nonce.into()),
        "gas": hex_quantity(tx.gas_limit.into()),
        "value": hex_quantity(tx.value),
        "input": hex_data(&tx.data),
        "chainId": hex_quantity(tx.chain_id.into()),
        "blockNumber": included.map(|i| hex_quantity(i.block.into())),
        "blockHash": included.map(|i| hex_data(&block_hash(i.block))),
        "transactionIndex": included.map(|i| hex_quantity(i.index.into())),
    });
    if let Value::Object(fields) = &mut object {
        match tx.fees {
            Fees::Legacy { gas_price } => {
                fields.insert("type".into(), json!("0x0"));
                fields.insert("gasPrice".into(), json!(hex_quantity(gas_price)));
            }
            Fees::Eip1559 { max_fee_per_gas, max_priority_fee_per_gas } => {
                fields.insert("type".into(), json!("0x2"));
                fields.insert("gasPrice".into(), json!(hex_quantity(max_fee_per_gas)));
                fields.insert("maxFeePerGas".into(), json!(hex_quantity(max_fee_per_gas)));
                fields.insert("maxPriorityFeePerGas".into(), json!(hex_quantity(max_priority_fee_per_gas)));
            }
        }
    }
    object
}

/// Appends the answer of the pool's `eth_sendRawTransaction` or `eth_getTransactionReceipt`
/// to `out`, its one param `text` (the raw transaction, or the hash); `None` leaves it to the
/// synthetic chain (a receipt the pool never saw), as [`answer`].
pub(crate) fn write_answer(
    pool: &mut Mempool,
    method: &str,
    text: Option<&str>,
    block_hash: impl Fn(u64) -> [u8; 32],
    out: &mut Vec<u8>,
) -> Option<Result<(), RpcError>> {
    if method == "eth_sendRawTransaction" {
        let raw = text
            .and_then(parse_hex_vec)
            .ok_or_else(|| RpcError::invalid_params("invalid argument 0: hex string expected"));
        return Some(raw.and_then(|raw| pool.submit(&raw)).map(|hash| write_hex(out, &hash)));
    }
    let hash = match hash_text(text) {
        Ok(hash) => hash,
        Err(err) => return Some(Err(err)),
    };
    match pool.lookup(&hash)? {
        Lookup::Pending(_) => out.extend_from_slice(b"null"),
        Lookup::Included(included) => write_receipt(out, included, &block_hash),
    }
    Some(Ok(()))
}

/// `"0x…"`, the hex of `data`.
fn write_hex(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(data.len() * 2 + 4);
    out.extend_from_slice(b"\"0x");
    for &byte in data {
        out.extend_from_slice(&hex_pair(byte));
    }
    out.push(b'"');
}

/// `"0x…"`, the minimal hex of a quantity.
fn write_quantity(out: &mut Vec<u8>, value: u128) {
    // Writing to a Vec cannot fail.
    let _ = write!(out, "\"{value:#x}\"");
}

/// `"name":`, after a comma unless it opens the object.
fn write_key(out: &mut Vec<u8>, name: &str) {
    if out.last() != Some(&b'{') {
        out.push(b',');
    }
    out.push(b'"');
    out.extend_from_slice(name.as_bytes());
    out.extend_from_slice(b"\":");
}

/// An included transaction's receipt, as geth answers it.
fn write_receipt(out: &mut Vec<u8>, included: &Included, block_hash: &impl Fn(u64) -> [u8; 32]) {
    let decoded = &included.decoded;
    let kind: &[u8] = match decoded.tx.fees {
        Fees::Legacy { .. } => b"\"0x0\"",
        Fees::Eip1559 { .. } => b"\"0x2\"",
    };
    out.push(b'{');
    write_key(out, "transactionHash");
    write_hex(out, &decoded.hash);
    write_key(out, "transactionIndex");
    write_quantity(out, included.index.into());
    write_key(out, "blockHash");
    write_hex(out, &block_hash(included.block));
    write_key(out, "blockNumber");
    write_quantity(out, included.block.into());
    write_key(out, "from");
    write_hex(out, &decoded.sender.0);
    write_key(out, "to");
    match decoded.tx.to {
        Some(to) => write_hex(out, &to.0),
        None => out.extend_from_slice(b"null"),
    }
    write_key(out, "cumulativeGasUsed");
    write_quantity(out, included.gas_used.into());
    write_key(out, "gasUsed");
    write_quantity(out, included.gas_used.into());
    write_key(out, "effectiveGasPrice");
    write_quantity(out, decoded.tx.fees.max_price());
    // A deploy's contract gets the address its sender and nonce give it (nothing runs).
    write_key(out, "contractAddress");
    match decoded.tx.to {
        None => write_hex(out, &contract_address(decoded.sender, decoded.tx.nonce).0),
        Some(_) => out.extend_from_slice(b"null"),
    }
    write_key(out, "logs");
    out.extend_from_slice(b"[]");
    write_key(out, "logsBloom");
    write_hex(out, &[0u8; 256]);
    write_key(out, "status");
    write_quantity(out, included.status.into());
    write_key(out, "type");
    out.extend_from_slice(kind);
    out.push(b'}');
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::value::to_raw_value;

    use super::super::ethereum::EthereumNode;
    use super::*;
    use crate::tx::keys::{keys_from_mnemonic, DEV_MNEMONIC};
    use crate::tx::sign::{sign, SignedTx, UnsignedTx};

    fn call(node: &EthereumNode, method: &str, params: Value) -> Result<Value, RpcError> {
        node.call(method, Some(&to_raw_value(&params).unwrap()))
    }

    const RECIPIENT: &str = "0x3535353535353535353535353535353535353535";

    /// A node with a pool, blocks every 5 ms, and a transfer of 5 wei to [`RECIPIENT`] signed by
    /// the first dev key (named by its address).
    fn node_and_transfer() -> (EthereumNode, String, SignedTx) {
        let options = crate::mock::mempool::TxPoolOptions::default();
        let node = EthereumNode::new(0, Duration::from_millis(5), 31337, Instant::now(), 1_700_000_000)
            .with_mempool(Some(&options));
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
        let tx = UnsignedTx {
            chain_id: 31337,
            nonce: 0,
            fees: Fees::Eip1559 { max_fee_per_gas: 3_000_000_000, max_priority_fee_per_gas: 1_000_000_000 },
            gas_limit: 21_000,
            to: Address::parse(RECIPIENT),
            value: 5,
            data: Vec::new(),
        };
        (node, keys[0].address().to_string(), sign(&tx, &keys[0]))
    }

    /// Blocks come every 5 ms: the receipt `read` gives, read a bounded number of times until
    /// it is not null.
    fn wait_for_receipt(read: impl Fn() -> Value) -> Value {
        let mut receipt = Value::Null;
        for _ in 0..2_000 {
            receipt = read();
            if !receipt.is_null() {
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        receipt
    }

    #[test]
    fn a_sent_transfer_is_included_in_a_following_block_and_served_by_receipt_block_and_nonce() {
        let (node, sender, signed) = node_and_transfer();
        let to = Address::parse(RECIPIENT);
        let hash = call(&node, "eth_sendRawTransaction", json!([hex_data(&signed.raw)])).unwrap();
        assert_eq!(hash, json!(hex_data(&signed.hash)));
        assert_eq!(call(&node, "eth_getTransactionCount", json!([sender, "pending"])).unwrap(), json!("0x1"));
        let refused = call(&node, "eth_sendRawTransaction", json!([hex_data(&signed.raw)])).unwrap_err();
        assert_eq!((refused.code, refused.message.as_str()), (-32000, "already known"));
        let receipt = wait_for_receipt(|| call(&node, "eth_getTransactionReceipt", json!([hash])).unwrap());
        assert_eq!(receipt["status"], json!("0x1"), "{receipt}");
        let block = receipt["blockNumber"].clone();
        let listed = call(&node, "eth_getBlockByNumber", json!([block, false])).unwrap();
        assert!(listed["transactions"].as_array().unwrap().contains(&hash), "{listed}");
        assert_eq!(call(&node, "eth_getTransactionCount", json!([sender, "latest"])).unwrap(), json!("0x1"));
        assert_eq!(
            call(&node, "eth_getBalance", json!([to.unwrap().to_string(), "latest"])).unwrap(),
            json!("0x5")
        );
        let found = call(&node, "eth_getTransactionByHash", json!([hash])).unwrap();
        assert_eq!(found["from"], json!(sender));
        assert_eq!(found["blockNumber"], block);
    }

    fn call_into(node: &EthereumNode, method: &str, params: Value) -> Result<Value, RpcError> {
        let mut out = Vec::new();
        node.call_into(method, Some(&to_raw_value(&params).unwrap()), &mut out)?;
        Ok(serde_json::from_slice(&out).unwrap())
    }

    #[test]
    fn sends_and_receipts_written_straight_answer_as_the_general_calls_do() {
        let (node, sender, signed) = node_and_transfer();
        let bad = call_into(&node, "eth_sendRawTransaction", json!(["0xzz"])).unwrap_err();
        let general = call(&node, "eth_sendRawTransaction", json!(["0xzz"])).unwrap_err();
        assert_eq!((bad.code, bad.message), (general.code, general.message));
        let hash = call_into(&node, "eth_sendRawTransaction", json!([hex_data(&signed.raw)])).unwrap();
        assert_eq!(hash, json!(hex_data(&signed.hash)));
        // The same send again: the pool's own refusal, as the general call gives it.
        let again = call_into(&node, "eth_sendRawTransaction", json!([hex_data(&signed.raw)])).unwrap_err();
        assert_eq!((again.code, again.message.as_str()), (-32000, "already known"));
        let receipt =
            wait_for_receipt(|| call_into(&node, "eth_getTransactionReceipt", json!([hash])).unwrap());
        assert_eq!(receipt, call(&node, "eth_getTransactionReceipt", json!([hash])).unwrap());
        assert_eq!(receipt["status"], json!("0x1"), "{receipt}");
        assert_eq!(receipt["from"], json!(sender));
        assert_eq!(receipt["to"], json!(RECIPIENT));
        assert_eq!(receipt["contractAddress"], Value::Null);
        assert_eq!(receipt["gasUsed"], json!("0x5208"));
        assert_eq!(receipt["type"], json!("0x2"));
        assert_eq!(receipt["logs"], json!([]));
        assert_eq!(receipt["logsBloom"].as_str().map(str::len), Some(2 + 512));
        assert_eq!(receipt.as_object().map(|fields| fields.len()), Some(14));
        // A hash the pool never saw is left to the synthetic chain, as before.
        let unknown = json!([hex_data(&[7u8; 32])]);
        assert_eq!(
            call_into(&node, "eth_getTransactionReceipt", unknown.clone()).unwrap(),
            call(&node, "eth_getTransactionReceipt", unknown).unwrap()
        );
    }
}
