//! The Solana mock's methods: slots, accounts, blocks, transactions.

use super::*;

// ---------------------------------------------------------------- solana

const SEED_ACCOUNT: &str = "4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ";

fn is_base58(value: &Value, bytes: usize) -> bool {
    value
        .as_str()
        .and_then(|text| bs58::decode(text).into_vec().ok())
        .is_some_and(|decoded| decoded.len() == bytes)
}

/// A non-skipped slot in the past, found with getBlocks.
fn some_solana_block(addr: SocketAddr) -> u64 {
    let blocks = result(addr, "getBlocks", json!([900, 960]));
    let blocks = blocks.as_array().unwrap();
    assert!(blocks.len() >= 50 && blocks.len() < 61, "~5% skipped: {}", blocks.len());
    blocks[10].as_u64().unwrap()
}

#[test]
fn solana_slots_heights_and_node_info() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let slot = result(addr, "getSlot", json!([])).as_u64().unwrap();
    assert!((1000..1100).contains(&slot), "{slot}");
    let height = result(addr, "getBlockHeight", json!([{"commitment": "finalized"}])).as_u64().unwrap();
    assert!(height < slot && height > slot * 9 / 10, "{height} vs {slot}");
    assert_eq!(result(addr, "getHealth", json!([])), "ok");
    let version = result(addr, "getVersion", json!([]));
    assert!(version["solana-core"].is_string() && version["feature-set"].is_u64(), "{version}");
    let epoch = result(addr, "getEpochInfo", json!([]));
    for key in ["absoluteSlot", "blockHeight", "epoch", "slotIndex", "slotsInEpoch", "transactionCount"] {
        assert!(epoch[key].is_u64(), "{key}: {epoch}");
    }
    let latest = result(addr, "getLatestBlockhash", json!([]));
    assert!(latest["context"]["slot"].is_u64() && latest["context"]["apiVersion"].is_string());
    assert!(is_base58(&latest["value"]["blockhash"], 32), "{latest}");
    assert!(latest["value"]["lastValidBlockHeight"].as_u64().unwrap() > height);
    let (code, message) = error(addr, "getSlot", json!([{"commitment": "final"}]));
    assert_eq!(code, -32602);
    assert!(message.contains("unknown variant `final`"), "{message}");
    let (code, message) = error(addr, "getSlots", json!([]));
    assert_eq!(code, -32601);
    assert!(message.contains("getSlots"), "{message}");
}

#[test]
fn solana_slots_advance_with_slot_time() {
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = Duration::from_millis(50);
    let server = start(options);
    let first = result(server.local_addr(), "getSlot", json!([])).as_u64().unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let later = result(server.local_addr(), "getSlot", json!([])).as_u64().unwrap();
    assert!(later >= first + 4, "{first} -> {later}");
}

#[test]
fn solana_accounts() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let balance = result(addr, "getBalance", json!([SEED_ACCOUNT]));
    assert!(balance["context"]["slot"].is_u64());
    assert!(balance["value"].as_u64().unwrap() > 0, "{balance}");

    let info = result(addr, "getAccountInfo", json!([SEED_ACCOUNT, {"encoding": "base64"}]));
    let value = &info["value"];
    assert_eq!(value["lamports"], balance["value"]);
    assert_eq!(value["owner"], "11111111111111111111111111111111");
    assert_eq!(value["executable"], false);
    assert_eq!(value["data"], json!(["", "base64"]));
    assert!(value["rentEpoch"].is_u64() && value["space"].is_u64());

    let unknown = bs58::encode([9u8; 32]).into_string();
    assert_eq!(result(addr, "getAccountInfo", json!([unknown]))["value"], Value::Null);
    assert_eq!(result(addr, "getBalance", json!([unknown]))["value"], 0);
    let many = result(addr, "getMultipleAccounts", json!([[SEED_ACCOUNT, unknown], {"encoding": "base64"}]));
    assert_eq!(many["value"][0]["lamports"], balance["value"]);
    assert_eq!(many["value"][1], Value::Null);

    assert_eq!(
        error(addr, "getBalance", json!(["0OIl-not-base58"])),
        (-32602, "Invalid param: Invalid".into())
    );
    assert_eq!(error(addr, "getBalance", json!(["abc"])), (-32602, "Invalid param: WrongSize".into()));
    let (code, message) = error(addr, "getBalance", json!([]));
    assert_eq!(code, -32602);
    assert!(message.contains("missing"), "{message}");
    let (code, message) = error(addr, "getBalance", json!([42]));
    assert_eq!(code, -32602);
    assert!(message.contains("invalid type"), "{message}");
}

#[test]
fn solana_blocks_and_their_errors() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let slot = some_solana_block(addr);
    let block =
        result(addr, "getBlock", json!([slot, {"encoding": "json", "maxSupportedTransactionVersion": 0}]));
    assert!(is_base58(&block["blockhash"], 32) && is_base58(&block["previousBlockhash"], 32), "{block}");
    assert!(block["blockTime"].is_u64() && block["blockHeight"].is_u64());
    let parent = block["parentSlot"].as_u64().unwrap();
    assert!(parent < slot);
    let parent_block =
        result(addr, "getBlock", json!([parent, {"transactionDetails": "none", "rewards": false}]));
    assert_eq!(parent_block["blockhash"], block["previousBlockhash"]);
    assert!(parent_block.get("transactions").is_none() && parent_block.get("rewards").is_none());

    let transactions = block["transactions"].as_array().unwrap();
    assert!((10..=60).contains(&transactions.len()), "{}", transactions.len());
    let tx = &transactions[0];
    assert_eq!(tx["version"], "legacy");
    assert!(is_base58(&tx["transaction"]["signatures"][0], 64));
    let message = &tx["transaction"]["message"];
    assert!(message["accountKeys"].as_array().unwrap().iter().all(|k| is_base58(k, 32)));
    assert_eq!(message["header"]["numRequiredSignatures"], 1);
    assert!(message["instructions"][0]["programIdIndex"].is_u64());
    assert!(is_base58(&message["recentBlockhash"], 32));
    let meta = &tx["meta"];
    assert_eq!(meta["status"], json!({"Ok": null}));
    assert_eq!(meta["err"], Value::Null);
    assert!(meta["fee"].is_u64());
    let (pre, post) = (meta["preBalances"].as_array().unwrap(), meta["postBalances"].as_array().unwrap());
    assert_eq!(pre.len(), post.len());
    assert!(post[0].as_u64().unwrap() < pre[0].as_u64().unwrap());
    assert!(meta["logMessages"].as_array().unwrap().iter().all(Value::is_string));
    assert!(block["rewards"].is_array());

    // Same block, other encodings and details.
    let base64 = result(addr, "getBlock", json!([slot, {"encoding": "base64"}]));
    let encoded = &base64["transactions"][0]["transaction"];
    assert_eq!(encoded[1], "base64");
    use base64::Engine as _;
    let wire = base64::engine::general_purpose::STANDARD.decode(encoded[0].as_str().unwrap()).unwrap();
    let signature = bs58::decode(tx["transaction"]["signatures"][0].as_str().unwrap()).into_vec().unwrap();
    assert_eq!(&wire[1..65], &signature[..], "the wire format starts with the signature");
    let signatures = result(addr, "getBlock", json!([slot, {"transactionDetails": "signatures"}]));
    assert_eq!(signatures["signatures"].as_array().unwrap().len(), transactions.len());
    assert_eq!(signatures["signatures"][0], tx["transaction"]["signatures"][0]);
    assert_eq!(
        result(addr, "getBlock", json!([slot, "base58"]))["transactions"][0]["transaction"][1],
        "base58"
    );

    // A skipped slot, a future slot, bad params.
    let blocks = result(addr, "getBlocks", json!([900, 960]));
    let produced: Vec<u64> = blocks.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    let skipped = (900..=960).find(|s| !produced.contains(s)).unwrap();
    let (code, message) = error(addr, "getBlock", json!([skipped]));
    assert_eq!(code, -32007);
    assert_eq!(
        message,
        format!("Slot {skipped} was skipped, or missing due to ledger jump to recent snapshot")
    );
    let (code, message) = error(addr, "getBlock", json!([1_000_000]));
    assert_eq!((code, message.as_str()), (-32004, "Block not available for slot 1000000"));
    let (code, message) = error(addr, "getBlock", json!([slot, {"transactionDetails": "most"}]));
    assert_eq!(code, -32602);
    assert!(message.contains("`most`"), "{message}");
    assert_eq!(error(addr, "getBlock", json!(["ten"])).0, -32602);
}

#[test]
fn solana_block_lists_and_range_limit() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let blocks = result(addr, "getBlocks", json!([990]));
    let blocks: Vec<u64> = blocks.as_array().unwrap().iter().map(|v| v.as_u64().unwrap()).collect();
    assert!(blocks.windows(2).all(|w| w[0] < w[1]));
    assert!(blocks.first().is_some_and(|s| *s >= 990) && blocks.len() >= 9);
    let limited = result(addr, "getBlocksWithLimit", json!([100, 25]));
    assert_eq!(limited.as_array().unwrap().len(), 25);
    assert_eq!(result(addr, "getBlocks", json!([100, 50])), json!([]));
    let (code, message) = error(addr, "getBlocks", json!([0, 500_001]));
    assert_eq!((code, message.as_str()), (-32602, "Slot range too large; max 500000"));
    assert_eq!(error(addr, "getBlocksWithLimit", json!([0, 500_001])).0, -32602);
}

#[test]
fn solana_transactions_and_signatures_for_address() {
    let server = start_chain(Chain::Solana);
    let addr = server.local_addr();
    let slot = some_solana_block(addr);
    let block = result(addr, "getBlock", json!([slot]));
    let tx = &block["transactions"][2];
    let signature = tx["transaction"]["signatures"][0].as_str().unwrap();
    let found = result(addr, "getTransaction", json!([signature, {"encoding": "json"}]));
    assert_eq!(found["slot"], slot);
    assert_eq!(found["transaction"], tx["transaction"]);
    assert_eq!(found["meta"], tx["meta"]);
    assert_eq!(found["blockTime"], block["blockTime"]);
    let unknown = bs58::encode([7u8; 64]).into_string();
    assert_eq!(result(addr, "getTransaction", json!([unknown])), Value::Null);
    assert_eq!(error(addr, "getTransaction", json!(["xyz0"])).0, -32602);

    let payer = tx["transaction"]["message"]["accountKeys"][0].as_str().unwrap();
    let history = result(addr, "getSignaturesForAddress", json!([payer, {"limit": 5}]));
    let history = history.as_array().unwrap();
    assert_eq!(history.len(), 5);
    let slots: Vec<u64> = history.iter().map(|h| h["slot"].as_u64().unwrap()).collect();
    assert!(slots.windows(2).all(|w| w[0] >= w[1]), "newest first: {slots:?}");
    for entry in history {
        assert!(is_base58(&entry["signature"], 64));
        assert_eq!(entry["err"], Value::Null);
        assert_eq!(entry["confirmationStatus"], "finalized");
        let tx = result(addr, "getTransaction", json!([entry["signature"]]));
        let keys = &tx["transaction"]["message"]["accountKeys"];
        assert!(keys[0] == payer || keys[1] == payer, "{keys}");
    }
    let older = result(
        addr,
        "getSignaturesForAddress",
        json!([payer, {"limit": 3, "before": history[1]["signature"]}]),
    );
    assert_eq!(older[0]["signature"], history[2]["signature"]);
    let until = result(addr, "getSignaturesForAddress", json!([payer, {"until": history[3]["signature"]}]));
    assert_eq!(until.as_array().unwrap().len(), 3);
    let (code, message) = error(addr, "getSignaturesForAddress", json!([payer, {"limit": 5000}]));
    assert_eq!(code, -32602);
    assert!(message.contains("1000"), "{message}");
}
