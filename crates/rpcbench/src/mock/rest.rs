//! The REST API of the mock Ethereum node: the endpoints of seed 002's study, answered from
//! the same synthetic chain as the JSON-RPC methods (each route asks the node's own method),
//! so a vegeta targets file or a scenario of `http` calls runs against it end to end:
//! - `GET /gasprice`: `{"gasPrice": "0x…"}`;
//! - `GET /block/{number|last}[/full]`: the block (transaction hashes, or full transactions);
//! - `GET /tx/{hash}`: the transaction;
//! - `GET /balance/{address}`: `{"address": …, "balance": "0x…"}`;
//! - `GET /log/{blockHash}` and `GET /log/{from}/{to}/{topic}`: `{"logs": […]}`;
//! - `GET /call?to=…&data=…`: `{"result": "0x…"}`.
//!
//! An unknown block or transaction is a 404, a malformed parameter a 400 (with the node's own
//! message), and an unknown path a 404; every body is JSON.

use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::ethereum::EthereumNode;

/// An answer: the status line's code and text, and a JSON body.
pub(crate) type RestAnswer = (&'static [u8], Vec<u8>);

const OK: &[u8] = b"200 OK";
const BAD_REQUEST: &[u8] = b"400 Bad Request";
const NOT_FOUND: &[u8] = b"404 Not Found";

/// Answers `GET path_and_query`.
pub(crate) fn answer(node: &EthereumNode, path_and_query: &str) -> RestAnswer {
    let (path, query) = path_and_query.split_once('?').unwrap_or((path_and_query, ""));
    let segments: Vec<&str> = path.trim_matches('/').split('/').filter(|s| !s.is_empty()).collect();
    match segments.as_slice() {
        ["gasprice"] => wrap(call(node, "eth_gasPrice", json!([])), |v| json!({ "gasPrice": v })),
        ["block", number] => block(node, number, false),
        ["block", number, "full"] => block(node, number, true),
        ["tx", hash] => found(call(node, "eth_getTransactionByHash", json!([hash])), "unknown transaction"),
        ["balance", address] => wrap(
            call(node, "eth_getBalance", json!([address, "latest"])),
            |v| json!({ "address": address, "balance": v }),
        ),
        ["log", block_hash] => {
            wrap(call(node, "eth_getLogs", json!([{ "blockHash": block_hash }])), |v| json!({ "logs": v }))
        }
        ["log", from, to, topic] => wrap(
            call(node, "eth_getLogs", json!([{ "fromBlock": from, "toBlock": to, "topics": [topic] }])),
            |v| json!({ "logs": v }),
        ),
        ["call"] => {
            let value = |key: &str| {
                query
                    .split('&')
                    .find_map(|pair| pair.split_once('=').filter(|(k, _)| *k == key).map(|(_, v)| v))
            };
            match (value("to"), value("data")) {
                (Some(to), data) => wrap(
                    call(node, "eth_call", json!([{ "to": to, "data": data.unwrap_or("0x") }, "latest"])),
                    |v| json!({ "result": v }),
                ),
                (None, _) => error(BAD_REQUEST, "/call needs ?to=ADDRESS (and &data=0x…)"),
            }
        }
        _ => error(NOT_FOUND, "no such endpoint"),
    }
}

/// `/block/{number|last}`: a decimal number, a `0x` quantity or `last`.
fn block(node: &EthereumNode, number: &str, full: bool) -> RestAnswer {
    let tag = if number == "last" || number == "latest" {
        "latest".to_string()
    } else if number.starts_with("0x") {
        number.to_string()
    } else {
        match number.parse::<u64>() {
            Ok(n) => format!("{n:#x}"),
            Err(_) => return error(BAD_REQUEST, &format!("'{number}' is not a block number")),
        }
    };
    found(call(node, "eth_getBlockByNumber", json!([tag, full])), "unknown block")
}

/// Calls one of the node's JSON-RPC methods.
fn call(node: &EthereumNode, method: &str, params: Value) -> Result<Value, String> {
    let params = RawValue::from_string(params.to_string()).map_err(|err| err.to_string())?;
    node.call(method, Some(&params)).map_err(|err| err.message)
}

/// 200 with the result, 404 when it is null, 400 for an error of the node.
fn found(result: Result<Value, String>, missing: &str) -> RestAnswer {
    match result {
        Ok(Value::Null) => error(NOT_FOUND, missing),
        Ok(value) => (OK, value.to_string().into_bytes()),
        Err(message) => error(BAD_REQUEST, &message),
    }
}

/// 200 with the result shaped by `shape`, 400 for an error of the node.
fn wrap(result: Result<Value, String>, shape: impl FnOnce(Value) -> Value) -> RestAnswer {
    match result {
        Ok(value) => (OK, shape(value).to_string().into_bytes()),
        Err(message) => error(BAD_REQUEST, &message),
    }
}

fn error(status: &'static [u8], message: &str) -> RestAnswer {
    (status, json!({ "error": message }).to_string().into_bytes())
}

#[cfg(test)]
mod tests {
    use std::time::{Duration, Instant};

    use super::*;

    fn node() -> EthereumNode {
        EthereumNode::new(1, Duration::from_secs(2), 1337, Instant::now(), 1_700_000_000)
    }

    fn get(node: &EthereumNode, path: &str) -> (u16, Value) {
        let (status, body) = answer(node, path);
        let code = std::str::from_utf8(&status[..3]).unwrap().parse().unwrap();
        (code, serde_json::from_slice(&body).expect("every REST body is JSON"))
    }

    #[test]
    fn seed_002s_endpoints_answer_from_the_chain() {
        let node = node();
        let (status, gas) = get(&node, "/gasprice");
        assert_eq!(status, 200);
        assert!(gas["gasPrice"].as_str().unwrap().starts_with("0x"));
        let (status, last) = get(&node, "/block/last");
        assert_eq!(status, 200);
        let number =
            u64::from_str_radix(last["number"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        let (status, block) = get(&node, &format!("/block/{}/full", number - 1));
        assert_eq!(status, 200, "{block}");
        assert_eq!(block["number"], format!("{:#x}", number - 1));
        let hash = last["hash"].as_str().unwrap().to_string();
        let (status, logs) = get(&node, &format!("/log/{hash}"));
        assert_eq!(status, 200);
        assert!(logs["logs"].is_array());
        if let Some(tx) = block["transactions"].as_array().and_then(|txs| txs.first()) {
            let (status, found) = get(&node, &format!("/tx/{}", tx["hash"].as_str().unwrap()));
            assert_eq!(status, 200);
            assert_eq!(found["hash"], tx["hash"]);
            let (status, balance) = get(&node, &format!("/balance/{}", tx["from"].as_str().unwrap()));
            assert_eq!(status, 200);
            assert!(balance["balance"].as_str().unwrap().starts_with("0x"));
        }
    }

    #[test]
    fn unknown_and_malformed_are_404_and_400() {
        let node = node();
        assert_eq!(get(&node, "/block/99999999").0, 404);
        assert_eq!(get(&node, &format!("/tx/0x{}", "ab".repeat(32))).0, 404);
        assert_eq!(get(&node, "/block/twelve").0, 400);
        assert_eq!(get(&node, "/balance/nope").0, 400);
        assert_eq!(get(&node, "/call").0, 400);
        assert_eq!(get(&node, "/nothing/here").0, 404);
    }
}
