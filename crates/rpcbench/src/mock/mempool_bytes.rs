//! The mempool's two busiest answers written straight into the response buffer:
//! `eth_sendRawTransaction` (one a transaction sent) and `eth_getTransactionReceipt` (one a
//! transaction included, read in batches). Their params are read from the request's bytes
//! without a JSON tree, the raw transaction is decoded from a stack buffer, and the result is
//! written as bytes, so a transaction costs no allocation here. The checks are those of
//! [`Mempool::submit`] (every sender recovered; chain id, nonce and balance checked); the
//! answers are byte for byte those `mempool_rpc.rs` gives (its tests compare the two).
//!
//! Params of any other shape (escapes, named params, a missing or extra param) are left to
//! `mempool_rpc.rs`, which words their errors.

use std::io::Write;

use serde_json::value::RawValue;

use crate::tx::sign::Fees;

use super::mempool::{Included, Lookup, Mempool};

/// 256 zero bytes as a block's or a receipt's `logsBloom` (no logs).
const EMPTY_BLOOM: &str = concat!(
    "\"0x",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "0000000000000000000000000000000000000000000000000000000000000000",
    "\""
);

/// Raw transactions up to this many bytes are decoded on the stack (a transfer is ~110).
const STACK_RAW: usize = 1024;

const HEX: &[u8; 16] = b"0123456789abcdef";

/// The text of the only param when `params` is exactly `["..."]` (whitespace allowed around
/// the tokens) and the string has no escape; `None` for anything else.
fn only_string_param(params: Option<&RawValue>) -> Option<&str> {
    let inner = params?.get().trim().strip_prefix('[')?.strip_suffix(']')?.trim();
    let text = inner.strip_prefix('"')?.strip_suffix('"')?;
    (!text.contains(['"', '\\'])).then_some(text)
}

fn hex_digit(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

/// Decodes `0x`-prefixed hex into `into`, which must be half the digits long.
fn decode_hex(text: &str, into: &mut [u8]) -> Option<()> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?.as_bytes();
    if digits.len() != into.len() * 2 {
        return None;
    }
    for (byte, pair) in into.iter_mut().zip(digits.chunks_exact(2)) {
        *byte = hex_digit(pair[0])? << 4 | hex_digit(pair[1])?;
    }
    Some(())
}

/// `"0x..."`: the bytes as a quoted hex string.
fn push_hex_data(out: &mut Vec<u8>, data: &[u8]) {
    out.reserve(4 + data.len() * 2);
    out.extend_from_slice(b"\"0x");
    for byte in data {
        out.push(HEX[usize::from(byte >> 4)]);
        out.push(HEX[usize::from(byte & 15)]);
    }
    out.push(b'"');
}

/// `"0x..."`: a quantity as a quoted minimal hex string.
fn push_hex_quantity(out: &mut Vec<u8>, value: u128) {
    // Writing into a Vec cannot fail.
    let _ = write!(out, "\"{value:#x}\"");
}

fn push_address(out: &mut Vec<u8>, address: Option<crate::tx::keys::Address>) {
    match address {
        Some(address) => push_hex_data(out, &address.0),
        None => out.extend_from_slice(b"null"),
    }
}

/// Writes the answer of `method` into `out` when the pool answers it from bytes; `None`
/// leaves the call (and any error wording of odd params) to `mempool_rpc::answer`.
pub(crate) fn write_answer(
    pool: &mut Mempool,
    method: &str,
    params: Option<&RawValue>,
    block_hash: impl Fn(u64) -> [u8; 32],
    out: &mut Vec<u8>,
) -> Option<Result<(), super::rpc::RpcError>> {
    match method {
        "eth_sendRawTransaction" => {
            let text = only_string_param(params)?;
            let length = text.len().checked_sub(2)? / 2;
            let mut stack = [0u8; STACK_RAW];
            let mut heap = Vec::new();
            let raw = if length <= STACK_RAW {
                &mut stack[..length]
            } else {
                heap.resize(length, 0);
                heap.as_mut_slice()
            };
            decode_hex(text, raw)?;
            Some(pool.submit(raw).map(|hash| push_hex_data(out, &hash)))
        }
        "eth_getTransactionReceipt" => {
            let mut hash = [0u8; 32];
            decode_hex(only_string_param(params)?, &mut hash)?;
            match pool.lookup(&hash)? {
                Lookup::Pending(_) => out.extend_from_slice(b"null"),
                Lookup::Included(included) => push_receipt(out, included, &block_hash),
            }
            Some(Ok(()))
        }
        _ => None,
    }
}

/// A receipt as `mempool_rpc`'s `receipt_json` serializes it: the same fields, in the order
/// serde_json writes an object's keys (sorted).
fn push_receipt(out: &mut Vec<u8>, included: &Included, block_hash: &impl Fn(u64) -> [u8; 32]) {
    let decoded = &included.decoded;
    let tx = &decoded.tx;
    out.extend_from_slice(b"{\"blockHash\":");
    push_hex_data(out, &block_hash(included.block));
    out.extend_from_slice(b",\"blockNumber\":");
    push_hex_quantity(out, included.block.into());
    out.extend_from_slice(b",\"contractAddress\":");
    // A deploy's contract gets the address its sender and nonce give it (nothing runs).
    let created = tx.to.is_none().then(|| crate::tx::sign::contract_address(decoded.sender, tx.nonce));
    push_address(out, created);
    out.extend_from_slice(b",\"cumulativeGasUsed\":");
    push_hex_quantity(out, included.gas_used.into());
    out.extend_from_slice(b",\"effectiveGasPrice\":");
    push_hex_quantity(out, tx.fees.max_price());
    out.extend_from_slice(b",\"from\":");
    push_address(out, Some(decoded.sender));
    out.extend_from_slice(b",\"gasUsed\":");
    push_hex_quantity(out, included.gas_used.into());
    out.extend_from_slice(b",\"logs\":[],\"logsBloom\":");
    out.extend_from_slice(EMPTY_BLOOM.as_bytes());
    out.extend_from_slice(b",\"status\":");
    push_hex_quantity(out, included.status.into());
    out.extend_from_slice(b",\"to\":");
    push_address(out, tx.to);
    out.extend_from_slice(b",\"transactionHash\":");
    push_hex_data(out, &decoded.hash);
    out.extend_from_slice(b",\"transactionIndex\":");
    push_hex_quantity(out, included.index.into());
    out.extend_from_slice(match tx.fees {
        Fees::Legacy { .. } => b",\"type\":\"0x0\"}",
        Fees::Eip1559 { .. } => b",\"type\":\"0x2\"}",
    });
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use serde_json::{json, Value};

    use super::super::ethereum::EthereumNode;
    use super::super::mempool::TxPoolOptions;
    use super::super::prng::hex_data;
    use super::*;
    use crate::tx::keys::{keys_from_mnemonic, Address, DEV_MNEMONIC};
    use crate::tx::sign::{sign, UnsignedTx};

    fn raw(text: &str) -> Box<RawValue> {
        RawValue::from_string(text.to_string()).unwrap()
    }

    #[test]
    fn only_a_single_plain_string_param_is_read_from_bytes() {
        assert_eq!(only_string_param(Some(&raw(r#"["0xab"]"#))), Some("0xab"));
        assert_eq!(only_string_param(Some(&raw(r#" [ "0xab" ] "#))), Some("0xab"));
        // Escapes, a second param, named params and no params go to the JSON tree.
        assert_eq!(only_string_param(Some(&raw(r#"["\u0030xab"]"#))), None);
        assert_eq!(only_string_param(Some(&raw(r#"["0xab","0xcd"]"#))), None);
        assert_eq!(only_string_param(Some(&raw(r#"{"tx":"0xab"}"#))), None);
        assert_eq!(only_string_param(Some(&raw(r#"[1]"#))), None);
        assert_eq!(only_string_param(None), None);
    }

    #[test]
    fn hex_is_decoded_only_when_every_digit_is_hex_and_the_length_fits() {
        let mut two = [0u8; 2];
        assert_eq!(decode_hex("0xAb0f", &mut two), Some(()));
        assert_eq!(two, [0xab, 0x0f]);
        assert_eq!(decode_hex("ab0f", &mut two), None);
        assert_eq!(decode_hex("0xab0", &mut two), None);
        assert_eq!(decode_hex("0x+b0f", &mut two), None);
        assert_eq!(decode_hex("0xzz0f", &mut two), None);
        let mut out = Vec::new();
        push_hex_data(&mut out, &[0, 0xfe]);
        push_hex_quantity(&mut out, 0);
        push_hex_quantity(&mut out, 4096);
        assert_eq!(out, b"\"0x00fe\"\"0x0\"\"0x1000\"");
        assert_eq!(EMPTY_BLOOM.len(), 2 + 2 + 512);
    }

    /// The answer of `method` with `params` from bytes, or `None` when it was left to the tree.
    fn from_bytes(node: &EthereumNode, method: &str, params: &str) -> Option<Result<Value, (i64, String)>> {
        let mut out = Vec::new();
        let answered = node.write_pool_answer(method, Some(&raw(params)), &mut out)?;
        Some(
            answered
                .map(|()| {
                    let value: Value = serde_json::from_slice(&out).unwrap();
                    // Byte for byte what serializing the tree's answer writes.
                    assert_eq!(serde_json::to_vec(&value).unwrap(), out);
                    value
                })
                .map_err(|e| (e.code, e.message)),
        )
    }

    /// The same call through the JSON tree (the hex written with an escape, which the bytes
    /// path leaves to it).
    fn from_tree(node: &EthereumNode, method: &str, hex: &str) -> Result<Value, (i64, String)> {
        let escaped = format!("[\"\\u0030{}\"]", &hex[1..]);
        assert!(only_string_param(Some(&raw(&escaped))).is_none());
        node.call(method, Some(&raw(&escaped))).map_err(|e| (e.code, e.message))
    }

    fn transaction(nonce: u64, chain_id: u64, to: Option<Address>, fees: Fees) -> UnsignedTx {
        UnsignedTx { chain_id, nonce, fees, gas_limit: 100_000, to, value: 7, data: Vec::new() }
    }

    #[test]
    fn sends_and_receipts_written_from_bytes_are_the_answers_the_json_tree_gives() {
        let options = TxPoolOptions::default();
        let node = EthereumNode::new(0, Duration::from_millis(5), 31337, Instant::now(), 1_700_000_000)
            .with_mempool(Some(&options));
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 2).unwrap();
        let to = Address::parse("0x3535353535353535353535353535353535353535");
        let eip1559 =
            Fees::Eip1559 { max_fee_per_gas: 3_000_000_000, max_priority_fee_per_gas: 1_000_000_000 };
        let legacy = Fees::Legacy { gas_price: 2_000_000_000 };
        // A transfer of each kind and a deploy, sent through the bytes path.
        let sent = [
            sign(&transaction(0, 31337, to, eip1559), &keys[0]),
            sign(&transaction(0, 31337, to, legacy), &keys[1]),
            sign(&transaction(1, 31337, None, eip1559), &keys[0]),
        ];
        for signed in &sent {
            let hex = hex_data(&signed.raw);
            let answer = from_bytes(&node, "eth_sendRawTransaction", &format!("[\"{hex}\"]")).unwrap();
            assert_eq!(answer, Ok(json!(hex_data(&signed.hash))));
            // Sent again, both paths refuse it the same way.
            let again = from_bytes(&node, "eth_sendRawTransaction", &format!("[\"{hex}\"]")).unwrap();
            assert_eq!(again, Err((-32000, "already known".to_string())));
            assert_eq!(again, from_tree(&node, "eth_sendRawTransaction", &hex));
        }
        // Garbage is left to the tree, which words the error.
        assert!(from_bytes(&node, "eth_sendRawTransaction", r#"["0xabc"]"#).is_none());
        assert!(from_bytes(&node, "eth_sendRawTransaction", r#"[]"#).is_none());
        // Blocks come every 5 ms: wait a bounded number of times for all three receipts.
        for signed in &sent {
            let hex = hex_data(&signed.hash);
            let params = format!("[\"{hex}\"]");
            let mut receipt = Value::Null;
            for _ in 0..2_000 {
                receipt = from_bytes(&node, "eth_getTransactionReceipt", &params).unwrap().unwrap();
                if !receipt.is_null() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(1));
            }
            assert_eq!(receipt["status"], json!("0x1"), "{receipt}");
            assert_eq!(Ok(receipt), from_tree(&node, "eth_getTransactionReceipt", &hex));
        }
        // Once included, the checks still run: a wrong chain id, a nonce too low, an unfunded sender.
        let stranger = keys_from_mnemonic(DEV_MNEMONIC, 0, 12).unwrap().pop().unwrap();
        for (unsigned, key) in [
            (transaction(5, 1, to, eip1559), &keys[0]),
            (transaction(0, 31337, to, legacy), &keys[1]),
            (transaction(0, 31337, to, eip1559), &stranger),
        ] {
            let hex = hex_data(&sign(&unsigned, key).raw);
            let answer = from_bytes(&node, "eth_sendRawTransaction", &format!("[\"{hex}\"]")).unwrap();
            assert!(answer.is_err(), "{answer:?}");
            assert_eq!(answer, from_tree(&node, "eth_sendRawTransaction", &hex));
        }
        // A hash the pool never saw is left to the synthetic chain.
        assert!(
            from_bytes(&node, "eth_getTransactionReceipt", &format!("[\"0x{}\"]", "11".repeat(32))).is_none()
        );
    }
}
