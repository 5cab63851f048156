//! The Ethereum mock's methods: blocks, transactions and receipts, state calls, logs, REST.

use super::*;

// ---------------------------------------------------------------- ethereum

/// A recent block with at least 4 transactions, as a full block object.
fn busy_eth_block(addr: SocketAddr) -> Value {
    for number in (900..1000u64).rev() {
        let block = result(addr, "eth_getBlockByNumber", json!([format!("{number:#x}"), true]));
        if block["transactions"].as_array().unwrap().len() >= 4 {
            return block;
        }
    }
    panic!("no block with 4 transactions between 900 and 1000");
}

#[test]
fn ethereum_node_info() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    assert_eq!(result(addr, "eth_chainId", json!([])), "0x539");
    assert_eq!(result(addr, "net_version", json!([])), "1337");
    assert!(result(addr, "web3_clientVersion", json!([])).as_str().unwrap().contains("rpcbench"));
    let number = quantity(&result(addr, "eth_blockNumber", json!([])));
    assert!((1000..1050).contains(&number), "{number}");
    assert!(quantity(&result(addr, "eth_gasPrice", json!([]))) > 1_000_000_000);
    let (code, message) = error(addr, "eth_sendBananas", json!([]));
    assert_eq!(code, -32601);
    assert!(message.contains("eth_sendBananas"), "{message}");
}

#[test]
fn ethereum_blocks() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let latest = result(addr, "eth_getBlockByNumber", json!(["latest", false]));
    for key in ["number", "timestamp", "gasLimit", "gasUsed", "baseFeePerGas", "size", "difficulty"] {
        assert!(is_quantity(&latest[key]), "{key}: {}", latest[key]);
    }
    for key in
        ["hash", "parentHash", "stateRoot", "transactionsRoot", "receiptsRoot", "sha3Uncles", "mixHash"]
    {
        assert!(is_data(&latest[key], 32), "{key}: {}", latest[key]);
    }
    assert!(is_data(&latest["miner"], 20));
    assert!(is_data(&latest["logsBloom"], 256));
    assert!(is_data(&latest["nonce"], 8));
    assert!(latest["transactions"].as_array().unwrap().iter().all(|h| is_data(h, 32)));

    let number = quantity(&latest["number"]);
    let parent = result(addr, "eth_getBlockByNumber", json!([format!("{:#x}", number - 1), false]));
    assert_eq!(parent["hash"], latest["parentHash"]);
    assert!(quantity(&parent["timestamp"]) <= quantity(&latest["timestamp"]));
    let by_hash = result(addr, "eth_getBlockByHash", json!([latest["hash"], false]));
    assert_eq!(by_hash, latest);
    assert_eq!(result(addr, "eth_getBlockByNumber", json!(["earliest", false]))["number"], "0x0");
    for tag in ["pending", "safe", "finalized"] {
        assert!(result(addr, "eth_getBlockByNumber", json!([tag, false]))["hash"].is_string(), "{tag}");
    }
    assert_eq!(result(addr, "eth_getBlockByNumber", json!(["0xffffff", false])), Value::Null);
    assert_eq!(
        result(addr, "eth_getBlockByHash", json!([format!("0x{}", "ab".repeat(32)), false])),
        Value::Null
    );

    let full = busy_eth_block(addr);
    let tx = &full["transactions"][1];
    for key in
        ["blockNumber", "gas", "gasPrice", "nonce", "transactionIndex", "value", "type", "chainId", "v"]
    {
        assert!(is_quantity(&tx[key]), "{key}: {}", tx[key]);
    }
    assert!(is_data(&tx["hash"], 32) && is_data(&tx["blockHash"], 32));
    assert!(is_data(&tx["from"], 20) && is_data(&tx["to"], 20));
    assert_eq!(tx["blockHash"], full["hash"]);
    assert!(tx["input"].as_str().unwrap().starts_with("0x"));

    let (code, message) = error(addr, "eth_getBlockByNumber", json!(["latest"]));
    assert_eq!(code, -32602);
    assert!(message.contains("argument 1"), "{message}");
    let (code, message) = error(addr, "eth_getBlockByNumber", json!(["newest", false]));
    assert_eq!(code, -32602);
    assert!(message.contains("argument 0"), "{message}");
    assert_eq!(error(addr, "eth_getBlockByHash", json!(["0x1234", false])).0, -32602);
}

#[test]
fn ethereum_transactions_and_receipts() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let block = busy_eth_block(addr);
    for tx in block["transactions"].as_array().unwrap().iter().take(4) {
        let found = result(addr, "eth_getTransactionByHash", json!([tx["hash"]]));
        assert_eq!(&found, tx);
        let receipt = result(addr, "eth_getTransactionReceipt", json!([tx["hash"]]));
        assert_eq!(receipt["transactionHash"], tx["hash"]);
        assert_eq!(receipt["blockHash"], block["hash"]);
        assert_eq!(receipt["status"], "0x1");
        assert!(is_quantity(&receipt["gasUsed"]) && is_quantity(&receipt["cumulativeGasUsed"]));
        assert!(quantity(&receipt["cumulativeGasUsed"]) >= quantity(&receipt["gasUsed"]));
        assert!(is_quantity(&receipt["effectiveGasPrice"]));
        for log in receipt["logs"].as_array().unwrap() {
            assert_eq!(log["transactionHash"], tx["hash"]);
            assert!(is_data(&log["address"], 20) && is_data(&log["data"], 32));
            assert_eq!(log["topics"].as_array().unwrap().len(), 3);
        }
    }
    let unknown = format!("0x{}", "11".repeat(32));
    assert_eq!(result(addr, "eth_getTransactionByHash", json!([unknown])), Value::Null);
    assert_eq!(result(addr, "eth_getTransactionReceipt", json!([unknown])), Value::Null);
}

#[test]
fn ethereum_state_calls() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let block = busy_eth_block(addr);
    let sender = &block["transactions"][0]["from"];
    let token = &block["transactions"][0]["to"];
    assert!(quantity(&result(addr, "eth_getBalance", json!([sender, "latest"]))) > 0);
    assert_eq!(result(addr, "eth_getBalance", json!([format!("0x{}", "00".repeat(20)), "latest"])), "0x0");
    assert!(is_quantity(&result(addr, "eth_getTransactionCount", json!([sender, "latest"]))));
    let code = result(addr, "eth_getCode", json!([token, "latest"]));
    assert!(code.as_str().unwrap().len() > 10, "token contracts have code: {code}");
    assert_eq!(result(addr, "eth_getCode", json!([sender, "latest"])), "0x");
    let call = json!({"to": token, "data": "0x70a08231000000000000000000000000aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"});
    let first = result(addr, "eth_call", json!([call, "latest"]));
    assert!(is_data(&first, 32), "{first}");
    assert_eq!(result(addr, "eth_call", json!([call, "latest"])), first, "deterministic");
    let other = json!({"to": token, "data": "0x18160ddd"});
    assert_ne!(result(addr, "eth_call", json!([other, "latest"])), first);
    assert_eq!(result(addr, "eth_estimateGas", json!([{"to": token}])), "0x5208");
    assert!(quantity(&result(addr, "eth_estimateGas", json!([call]))) > 21_000);

    let (code, message) = error(addr, "eth_getBalance", json!(["0x1234", "latest"]));
    assert_eq!(code, -32602);
    assert!(message.contains("common.Address"), "{message}");
    let (code, message) = error(addr, "eth_getBalance", json!(["1234", "latest"]));
    assert_eq!(code, -32602);
    assert!(message.contains("0x prefix"), "{message}");
    assert_eq!(
        error(addr, "eth_getBalance", json!([sender, "0xffffff"])),
        (-32000, "header not found".into())
    );
    assert_eq!(error(addr, "eth_call", json!(["nope", "latest"])).0, -32602);
}

#[test]
fn ethereum_logs_and_range_limit() {
    let server = start_chain(Chain::Ethereum);
    let addr = server.local_addr();
    let logs = result(addr, "eth_getLogs", json!([{"fromBlock": "0x352", "toBlock": "0x3e8"}]));
    let logs = logs.as_array().unwrap();
    assert!(logs.len() > 50, "{}", logs.len());
    for log in logs {
        let number = quantity(&log["blockNumber"]);
        assert!((0x352..=0x3e8).contains(&number));
        assert!(is_data(&log["transactionHash"], 32) && is_quantity(&log["logIndex"]));
    }
    // Filtering by address and by topic.
    let token = logs[0]["address"].clone();
    let by_address =
        result(addr, "eth_getLogs", json!([{"fromBlock": "0x352", "toBlock": "0x3e8", "address": token}]));
    let by_address = by_address.as_array().unwrap();
    assert!(!by_address.is_empty() && by_address.len() < logs.len());
    assert!(by_address.iter().all(|log| log["address"] == token));
    let sender_topic = logs[0]["topics"][1].clone();
    let filter = json!({"fromBlock": "0x352", "toBlock": "0x3e8", "topics": [null, [sender_topic]]});
    let by_topic = result(addr, "eth_getLogs", json!([filter]));
    assert!(by_topic.as_array().unwrap().iter().all(|log| log["topics"][1] == sender_topic));
    assert!(by_topic.as_array().unwrap().contains(&logs[0]));
    let by_hash = result(addr, "eth_getLogs", json!([{"blockHash": logs[0]["blockHash"]}]));
    assert!(by_hash.as_array().unwrap().contains(&logs[0]));

    let (code, message) = error(addr, "eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "0x2711"}]));
    assert_eq!(code, -32005);
    assert_eq!(message, "exceed maximum block range: 10000");
    assert!(result(addr, "eth_getLogs", json!([{"fromBlock": "0x0", "toBlock": "0x270f"}])).is_array());
    assert_eq!(error(addr, "eth_getLogs", json!([{"address": "0x12"}])).0, -32602);
    assert_eq!(error(addr, "eth_getLogs", json!([{"fromBlock": "0x10", "toBlock": "0x5"}])).0, -32000);
}

#[test]
fn the_ethereum_node_serves_seed_002s_rest_api_over_http() {
    let server = start_chain(Chain::Ethereum);
    let mut client = Client::connect(server.local_addr());
    client.send(b"GET /block/last HTTP/1.1\r\nHost: x\r\n\r\n");
    let last = client.read_reply();
    assert_eq!(last.status, 200);
    let hash = last.json()["hash"].as_str().unwrap().to_string();
    client.send(format!("GET /log/{hash} HTTP/1.1\r\nHost: x\r\n\r\n").as_bytes());
    let logs = client.read_reply();
    assert_eq!(logs.status, 200);
    assert!(logs.json()["logs"].is_array());
    client.send(b"GET /gasprice HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(client.read_reply().status, 200);
    // Unknown blocks are 404, and the connection stays in step for JSON-RPC after them.
    client.send(b"GET /block/999999999 HTTP/1.1\r\nHost: x\r\n\r\n");
    let missing = client.read_reply();
    assert_eq!(missing.status, 404);
    assert_eq!(missing.json()["error"], "unknown block");
    assert_eq!(client.post(br#"{"jsonrpc":"2.0","id":4,"method":"eth_blockNumber"}"#).json()["id"], 4);
    // The other nodes have no REST API.
    let solana = start_chain(Chain::Solana);
    let mut client = Client::connect(solana.local_addr());
    client.send(b"GET /gasprice HTTP/1.1\r\nHost: x\r\n\r\n");
    assert_eq!(client.read_reply().status, 405);
}
