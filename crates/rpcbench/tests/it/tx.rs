//! Signed transactions through the one engine against the mock node's mempool.

use std::time::Duration;

use rpcbench::client;
use rpcbench::engine::config::{Arrivals, Load};
use rpcbench::engine::Run;
use rpcbench::mock::{Chain, MockOptions, MockServer, TxPoolOptions};
use rpcbench::tx::ahead::SignedAhead;
use rpcbench::tx::inclusion::InclusionBook;
use rpcbench::tx::keys::{keys_from_mnemonic, DEV_MNEMONIC};
use rpcbench::tx::nonce::NonceBook;
use rpcbench::tx::sign::{Fees, UnsignedTx};
use rpcbench::tx::watch::HeadWatch;
use rpcbench::{TxAck, TxSends};
use serde_json::{json, Value};

use crate::util::{closed_loop, requests, transfer_template};

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[test]
fn every_transaction_sent_through_the_engine_is_included_dropped_or_pending_exactly_once() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_millis(100);
    options.chain_id = 31337;
    options.tx_pool = Some(TxPoolOptions { drop_share: 0.01, ..TxPoolOptions::default() });
    let server = MockServer::start(options).expect("the mock node starts");
    let url = server.url();
    let timeout = Duration::from_secs(5);
    let call = |method: &str, params: Value| client::call(&url, method, Some(&params), timeout).unwrap();

    let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 10).unwrap();
    let starting: Vec<u64> = keys
        .iter()
        .map(|key| {
            let count = call("eth_getTransactionCount", json!([key.address().to_string(), "pending"]));
            u64::from_str_radix(count.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
        })
        .collect();
    let template = transfer_template(Fees::Eip1559 {
        max_fee_per_gas: 30_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
    });
    let sends = TxSends::new(SignedAhead::start(keys, NonceBook::new(starting), template, u64::MAX, 256));
    // Subscribe to new heads before the first send.
    let watch = HeadWatch::start(&url.replacen("http://", "ws://", 1), timeout).expect("newHeads subscribed");
    let head_at_start = call("eth_blockNumber", json!([]));
    let head_at_start =
        u64::from_str_radix(head_at_start.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let mut config = closed_loop(&url, 1, requests(500));
    config.load = Load::Open { rate: 1000.0, arrivals: Arrivals::Uniform, max_connections: 16 };
    config.tx_sends = Some(sends.clone());
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.total() + record.totals.unsent, 500);

    let ledger = sends.ledger();
    let sent = ledger.sent();
    assert_eq!(sent.len() as u64, record.totals.counts.total());
    assert!(sent.iter().all(|tx| matches!(tx.ack, TxAck::Accepted(_))), "{:?}", &sent[..3]);
    // Blocks every 100 ms: look the transactions up until every one is included, gone, or
    // pending behind a dropped nonce of its sender (which never comes), a bounded number of
    // rounds. Settled answers are not asked again.
    let mut settled: Vec<Option<bool>> = vec![None; sent.len()];
    let (mut included, mut gone, mut pending) = (0usize, 0usize, 0usize);
    for _ in 0..100 {
        for (tx, state) in sent.iter().zip(settled.iter_mut()) {
            if state.is_some() {
                continue;
            }
            let hash = format!("0x{}", hex(&tx.hash));
            if !call("eth_getTransactionReceipt", json!([hash])).is_null() {
                *state = Some(true);
            } else if call("eth_getTransactionByHash", json!([hash])).is_null() {
                *state = Some(false);
            }
        }
        included = settled.iter().filter(|s| **s == Some(true)).count();
        gone = settled.iter().filter(|s| **s == Some(false)).count();
        pending = settled.iter().filter(|s| s.is_none()).count();
        let behind_a_gap = sent.iter().zip(&settled).filter(|(_, s)| s.is_none()).all(|(tx, _)| {
            sent.iter()
                .zip(&settled)
                .any(|(other, s)| *s == Some(false) && other.sender == tx.sender && other.nonce < tx.nonce)
        });
        if behind_a_gap {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    assert_eq!(included + gone + pending, sent.len());

    // The same answer from the heads alone: each head's block is fetched once, its hashes
    // matched to ours, the head's arrival is the inclusion time.
    let heads = watch.stop();
    let mut book = InclusionBook::new();
    for (tag, tx) in sent.iter().enumerate() {
        let head_at_send = heads.iter().filter(|head| head.arrived <= tx.sent).map(|head| head.number).max();
        book.sent(tx.hash, tag as u64, tx.sent, head_at_send.unwrap_or(head_at_start), true);
    }
    let mut fetched = std::collections::HashSet::new();
    for head in &heads {
        if !fetched.insert(head.number) {
            continue;
        }
        let block = call("eth_getBlockByNumber", json!([format!("0x{:x}", head.number), false]));
        let hashes: Vec<[u8; 32]> = block["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hash| {
                let digits = hash.as_str().unwrap().trim_start_matches("0x");
                let mut bytes = [0u8; 32];
                for (i, byte) in bytes.iter_mut().enumerate() {
                    *byte = u8::from_str_radix(&digits[i * 2..i * 2 + 2], 16).unwrap();
                }
                bytes
            })
            .collect();
        book.block(head.number, head.arrived, &hashes);
    }
    let (tally, _, _) = book.finish(std::time::Instant::now(), Duration::from_secs(3600));
    assert_eq!(tally.included + tally.rejected + tally.dropped + tally.pending, tally.sent);
    assert_eq!(tally.sent, sent.len() as u64);
    assert_eq!(tally.included, included as u64, "every receipt's transaction was seen in a head's block");
    assert_eq!(tally.pending, (gone + pending) as u64);
    assert!(tally.blocks_after.min() >= 1, "a transaction lands in a block after the head at its send");
    let status = call("rpcbench_mempoolStatus", json!([]));
    assert_eq!(status["dropped"].as_u64(), Some(gone as u64), "what the mock dropped is what is gone");
    assert!(
        included > 0 && gone > 0,
        "1% of 500 dropped: {included} included, {gone} gone, {pending} pending"
    );
}

/// The mock node's pending nonce of each sender, over HTTP, as the command's source does.
struct MockPending {
    url: String,
    addresses: Vec<String>,
}

impl rpcbench::tx::resync::NonceSource for MockPending {
    fn pending_nonce(&mut self, sender: usize) -> Result<u64, rpcbench::tx::resync::NonceLookupError> {
        let answer = client::call(
            &self.url,
            "eth_getTransactionCount",
            Some(&json!([self.addresses[sender], "pending"])),
            Duration::from_secs(5),
        )
        .map_err(|err| rpcbench::tx::resync::NonceLookupError { reason: err.to_string() })?;
        Ok(u64::from_str_radix(answer.as_str().unwrap_or("").trim_start_matches("0x"), 16).unwrap_or(0))
    }
}

#[test]
fn a_sender_whose_nonce_another_client_advanced_is_resynced_from_the_node_and_keeps_landing() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_millis(100);
    options.chain_id = 31337;
    options.tx_pool = Some(TxPoolOptions::default());
    let server = MockServer::start(options).expect("the mock node starts");
    let url = server.url();
    let timeout = Duration::from_secs(5);
    let call = |method: &str, params: Value| client::call(&url, method, Some(&params), timeout).unwrap();
    let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 2).unwrap();
    let template = transfer_template(Fees::Eip1559 {
        max_fee_per_gas: 30_000_000_000,
        max_priority_fee_per_gas: 1_000_000_000,
    });
    // Another client sends 5 transactions with sender 0's key behind our back: the book still
    // says nonce 0.
    let mut other = template.clone();
    other.value = 7;
    for nonce in 0..5 {
        other.nonce = nonce;
        let signed = rpcbench::tx::sign::sign(&other, &keys[0]);
        call("eth_sendRawTransaction", json!([format!("0x{}", hex(&signed.raw))]));
    }
    let addresses: Vec<String> = keys.iter().map(|key| key.address().to_string()).collect();
    // Until a block includes them, our nonce 0 would meet the other client's in the pool (a
    // replacement, not a nonce refusal): wait for the node's latest count to reach 5.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    loop {
        let count = call("eth_getTransactionCount", json!([addresses[0], "latest"]));
        if u64::from_str_radix(count.as_str().unwrap_or("0x0").trim_start_matches("0x"), 16) == Ok(5) {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "the mock did not include the 5 transactions: {count}");
        std::thread::sleep(Duration::from_millis(20));
    }
    let source = Box::new(MockPending { url: url.clone(), addresses: addresses.clone() });
    let sends = TxSends::new(SignedAhead::start_with_resync(
        keys,
        NonceBook::new(vec![0, 0]),
        template,
        u64::MAX,
        64,
        source,
    ));
    let mut config = closed_loop(&url, 1, requests(300));
    config.load = Load::Open { rate: 1000.0, arrivals: Arrivals::Uniform, max_connections: 8 };
    config.tx_sends = Some(sends.clone());
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.total() + record.totals.unsent, 300);

    let resyncs = sends.resync_tally();
    assert!(resyncs.resynced >= 1 && resyncs.lookup_failures == 0, "{resyncs:?}");
    let ledger = sends.ledger();
    let sent = ledger.sent();
    assert_eq!(sent.len() as u64, record.totals.counts.total(), "a dropped stale transaction is never sent");
    let of_0: Vec<_> = sent.iter().filter(|tx| tx.sender == 0).collect();
    let too_low = of_0
        .iter()
        .filter(|tx| tx.ack == TxAck::Refused(rpcbench::tx::refusal::TxRefusal::NonceTooLow))
        .count();
    assert!((1..=5).contains(&too_low), "only the nonces the other client took are refused: {too_low}");
    let mut accepted: Vec<u64> =
        of_0.iter().filter(|tx| matches!(tx.ack, TxAck::Accepted(_))).map(|tx| tx.nonce).collect();
    accepted.sort_unstable();
    assert!(accepted.len() >= 100, "sender 0 keeps landing after the resync: {} accepted", accepted.len());
    assert_eq!(
        accepted,
        (5..5 + accepted.len() as u64).collect::<Vec<_>>(),
        "nonces from the node's on, without gaps"
    );
    // Every one accepted lands: a bounded number of 100 ms blocks.
    let last =
        of_0.iter().filter(|tx| matches!(tx.ack, TxAck::Accepted(_))).max_by_key(|tx| tx.nonce).unwrap();
    let hash = format!("0x{}", hex(&last.hash));
    let landed = (0..100).any(|_| {
        let found = !call("eth_getTransactionReceipt", json!([hash])).is_null();
        if !found {
            std::thread::sleep(Duration::from_millis(100));
        }
        found
    });
    assert!(landed, "sender 0's last transaction is included");
    let count = call("eth_getTransactionCount", json!([addresses[0], "latest"]));
    assert_eq!(count, json!(format!("0x{:x}", last.nonce + 1)), "and every nonce before it");
}

#[test]
fn a_deploy_is_included_charged_gas_and_its_receipt_names_the_contract_address() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_millis(50);
    options.chain_id = 31337;
    options.tx_pool = Some(TxPoolOptions::default());
    let server = MockServer::start(options).expect("the mock node starts");
    let url = server.url();
    let call = |method: &str, params: Value| {
        client::call(&url, method, Some(&params), Duration::from_secs(5)).unwrap()
    };
    let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
    let deploy = UnsignedTx {
        chain_id: 31337,
        nonce: 0,
        fees: Fees::Legacy { gas_price: 30_000_000_000 },
        gas_limit: 60_000,
        to: None,
        value: 0,
        data: vec![0x60, 0x80, 0x60, 0x00],
    };
    let signed = rpcbench::tx::sign::sign(&deploy, &keys[0]);
    let hash = call("eth_sendRawTransaction", json!([format!("0x{}", hex(&signed.raw))]));
    let receipt = (0..200)
        .map(|_| {
            let receipt = call("eth_getTransactionReceipt", json!([hash]));
            if receipt.is_null() {
                std::thread::sleep(Duration::from_millis(50));
            }
            receipt
        })
        .find(|receipt| !receipt.is_null())
        .expect("the deploy is included");
    let expected = rpcbench::tx::sign::contract_address(keys[0].address(), 0);
    assert_eq!(receipt["contractAddress"], json!(expected.to_string()));
    assert_eq!(receipt["to"], Value::Null);
    let gas_used =
        u64::from_str_radix(receipt["gasUsed"].as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert_eq!(gas_used, 21_000 + 32_000 + 3 * 16 + 4, "a deploy is charged creation and its code");
}

/// Microseconds of a `Duration`, for the HDR histograms.
fn micros(duration: Duration) -> u64 {
    duration.as_micros() as u64
}

#[test]
fn at_a_thousand_a_second_with_one_second_blocks_and_pool_drops_outcomes_add_up_and_inclusion_matches_the_true_block_times(
) {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_secs(1);
    options.chain_id = 31337;
    options.tx_pool = Some(TxPoolOptions { drop_share: 0.01, ..TxPoolOptions::default() });
    let server = MockServer::start(options).expect("the mock node starts");
    let url = server.url();
    let timeout = Duration::from_secs(5);
    let call = |method: &str, params: Value| client::call(&url, method, Some(&params), timeout).unwrap();
    let quantity =
        |value: Value| u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    // The mock stamps each head with its production time in unix µs; one reading of both
    // clocks maps those stamps onto the send instants.
    let (anchor_instant, anchor_unix) = (std::time::Instant::now(), std::time::SystemTime::now());
    let anchor_unix_us = micros(anchor_unix.duration_since(std::time::UNIX_EPOCH).unwrap());
    let produced_instant = |unix_us: u64| {
        if unix_us >= anchor_unix_us {
            anchor_instant + Duration::from_micros(unix_us - anchor_unix_us)
        } else {
            anchor_instant - Duration::from_micros(anchor_unix_us - unix_us)
        }
    };

    let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 10).unwrap();
    let template = transfer_template(Fees::Legacy { gas_price: 30_000_000_000 });
    let sends = TxSends::new(SignedAhead::start(keys, NonceBook::new(vec![0; 10]), template, u64::MAX, 1024));
    let watch = HeadWatch::start(&url.replacen("http://", "ws://", 1), timeout).expect("newHeads subscribed");
    let head_at_start = quantity(call("eth_blockNumber", json!([])));
    // Three seconds of sends at 1,000 a second.
    let mut config = closed_loop(&url, 1, requests(3_000));
    config.load = Load::Open { rate: 1000.0, arrivals: Arrivals::Uniform, max_connections: 32 };
    config.tx_sends = Some(sends.clone());
    let record = Run::new(config).unwrap().execute().unwrap();
    let ledger = sends.ledger();
    let sent = ledger.sent();
    assert_eq!(record.totals.counts.total() + record.totals.unsent, 3_000);
    assert_eq!(sent.len() as u64, record.totals.counts.total(), "every request carried a transaction");

    // Heads until two blocks after the last send, each block fetched once.
    // A bound on the wait, from the run's end: the run itself can take minutes on a busy
    // machine (a debug build signing 3,000 transactions), so its heads are not counted in it.
    let last_send = sent.iter().map(|tx| tx.sent).max().unwrap();
    let waited = std::time::Instant::now();
    let mut heads = Vec::new();
    while heads.iter().filter(|head: &&rpcbench::tx::watch::SeenHead| head.arrived > last_send).count() < 2 {
        std::thread::sleep(Duration::from_millis(50));
        heads.extend(watch.drain());
        assert!(waited.elapsed() < Duration::from_secs(60), "the heads keep coming: {} seen", heads.len());
    }
    heads.extend(watch.stop());
    let mut book = InclusionBook::new().log_settled();
    let mut acks = rpcbench::AckTally::default();
    for (tag, tx) in sent.iter().enumerate() {
        let head_at_send = heads.iter().filter(|head| head.arrived <= tx.sent).map(|head| head.number).max();
        let accepted = acks.add(tx.sent, tx.ack);
        book.sent(tx.hash, tag as u64, tx.sent, head_at_send.unwrap_or(head_at_start), accepted);
    }
    let mut produced = std::collections::HashMap::new();
    let mut block_of = std::collections::HashMap::new();
    for head in &heads {
        if produced.insert(head.number, head.produced_at_us.expect("the mock stamps its heads")).is_some() {
            continue;
        }
        let block = call("eth_getBlockByNumber", json!([format!("0x{:x}", head.number), false]));
        let hashes: Vec<[u8; 32]> = block["transactions"]
            .as_array()
            .unwrap()
            .iter()
            .map(|hash| {
                let digits = hash.as_str().unwrap().trim_start_matches("0x");
                std::array::from_fn(|i| u8::from_str_radix(&digits[i * 2..i * 2 + 2], 16).unwrap())
            })
            .collect();
        block_of.extend(hashes.iter().map(|hash| (*hash, head.number)));
        book.block(head.number, head.arrived, &hashes);
    }
    let end = std::time::Instant::now();
    let inclusion_timeout = Duration::from_secs(30);
    let (tally, _, settled) = book.finish(end, inclusion_timeout);
    assert_eq!(tally.sent, 3_000);
    assert_eq!(tally.included + tally.dropped + tally.rejected + tally.pending, tally.sent, "{tally:?}");
    let status = call("rpcbench_mempoolStatus", json!([]));
    let dropped_by_the_pool = status["dropped"].as_u64().unwrap();
    assert!(dropped_by_the_pool > 0, "1% of 3,000 dropped: {status}");
    // The node refused none. A send it did not answer within the 5 s (a debug mock on a busy
    // machine) is fed as not accepted, so rejected here: those and only those.
    let unanswered = |reason: &str| reason.starts_with("no_answer_") || reason == "unanswered";
    let refused: u64 =
        acks.rejected_by.iter().filter(|(reason, _)| !unanswered(reason)).map(|(_, n)| n).sum();
    assert_eq!(refused, 0, "{:?}", acks.rejected_by);
    assert_eq!(tally.rejected, acks.rejected_by.values().sum::<u64>(), "{:?}", acks.rejected_by);
    assert!(tally.included > 0 && tally.included + dropped_by_the_pool <= tally.sent, "{tally:?} {status}");

    // The true inclusion latency of each included transaction: its block's production stamp
    // minus its send. What the watch measured (the head's arrival) is never earlier, and the
    // medians are a few ms apart (the head's delivery over the WebSocket).
    let mut measured = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut truth = measured.clone();
    let mut finals = vec![None; sent.len()];
    for s in &settled {
        assert!(finals[s.tag as usize].replace(s.outcome).is_none(), "one final outcome each");
    }
    for (tx, outcome) in sent.iter().zip(&finals) {
        let Some(rpcbench::tx::inclusion::TxFinal::Included { latency, .. }) = outcome else { continue };
        let block = block_of[&tx.hash];
        let true_latency = produced_instant(produced[&block]).saturating_duration_since(tx.sent);
        assert!(
            *latency + Duration::from_millis(2) >= true_latency,
            "a head arrived before its block was produced: {latency:?} < {true_latency:?}"
        );
        measured.record(micros(*latency).max(1)).unwrap();
        truth.record(micros(true_latency).max(1)).unwrap();
    }
    assert_eq!(measured.len(), tally.included);
    let (measured_p50, true_p50) = (measured.value_at_quantile(0.5), truth.value_at_quantile(0.5));
    assert!(
        measured_p50.abs_diff(true_p50) <= 50_000,
        "inclusion p50 {measured_p50} µs, the mock's true p50 {true_p50} µs"
    );
    eprintln!(
        "sent {} in {:?}; inclusion p50 {measured_p50} µs measured, {true_p50} µs by the mock's block stamps",
        tally.sent, record.elapsed
    );
}

/// A mock node on chain 31337 taking 8 calls a batch at most (geth's refusal past it), a block
/// every `block_time`, its pool `pool`; and an endpoint to it.
fn funding_node(block_time: Duration, pool: TxPoolOptions) -> (MockServer, client::Endpoint) {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = block_time;
    options.chain_id = 31337;
    options.max_batch_len = 8;
    options.tx_pool = Some(pool);
    let server = MockServer::start(options).expect("the mock node starts");
    let node = client::Endpoint::parse(&server.url(), Duration::from_secs(5)).unwrap();
    (server, node)
}

/// Funding 1 ETH a sender at 30 gwei, 25 transfers a batch at first, unpaced.
fn funding_plan() -> rpcbench::tx::fund::FundPlan {
    rpcbench::tx::fund::FundPlan {
        chain_id: 31337,
        fees: Fees::Eip1559 { max_fee_per_gas: 30_000_000_000, max_priority_fee_per_gas: 1_000_000_000 },
        amount: 1_000_000_000_000_000_000,
        batch: 25,
        rate: f64::INFINITY,
        timeout: Duration::from_secs(60),
        poll: Duration::from_millis(50),
    }
}

#[test]
fn funding_through_a_node_that_refuses_large_batches_halves_them_and_funds_every_sender() {
    use rpcbench::tx::fund::fund_senders;
    // A block every 100 ms.
    let (_server, node) = funding_node(
        Duration::from_millis(100),
        TxPoolOptions { dev_accounts: 1, ..TxPoolOptions::default() },
    );
    let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 31).unwrap();
    let plan = funding_plan();
    let summary = fund_senders(&node, &keys, &plan, &mut |_| {}).expect("the senders are funded");
    assert_eq!(summary.funded, (1..31).collect::<Vec<_>>());
    for key in &keys[1..] {
        let balance =
            node.call("eth_getBalance", Some(&json!([key.address().to_string(), "latest"]))).unwrap();
        let balance = u128::from_str_radix(balance.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
        assert!(balance >= plan.amount, "{balance}");
    }
}

#[test]
fn funding_through_halved_batches_names_the_first_transfer_the_node_refuses_and_sends_no_more() {
    use rpcbench::tx::fund::{fund_senders, FundError, FundProgress};
    // No block within the test: the pool only fills. It holds 10: the 11th transfer (to
    // sender 11) is refused as "txpool is full".
    let pool = TxPoolOptions { dev_accounts: 1, capacity: 10, ..TxPoolOptions::default() };
    let (_server, node) = funding_node(Duration::from_secs(600), pool);
    let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 31).unwrap();
    let plan = funding_plan();
    let mut sent = Vec::new();
    let mut progress = |step| {
        if let FundProgress::Sent { sent: so_far, .. } = step {
            sent.push(so_far);
        }
    };
    let error = fund_senders(&node, &keys, &plan, &mut progress).expect_err("the pool fills");
    let FundError::Refused { sender, address, message } = &error else { panic!("{error}") };
    assert_eq!((*sender, *address), (11, keys[11].address()), "{error}");
    assert!(message.contains("full"), "{error}");
    // Batches of 25 and 12 refused, then of 6: the batch holding the refusal is the last sent.
    assert_eq!(sent, [6, 12], "{error}");
}
