//! Against a real node: anvil (Foundry's local Ethereum node) on a free port of 127.0.0.1.
//! A few transactions are sent from its prefunded accounts, then both Ethereum suites sample
//! it and run with zero errors, over HTTP and over WebSocket. The binary is named by `RPCBENCH_ANVIL` (`.ci/run` installs it
//! from npm); without it the test is skipped locally and fails in CI.

use std::io::Write;
use std::path::PathBuf;
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::{Duration, Instant};

use rpcbench::client;
use serde_json::{json, Value};

/// Kills anvil when the test ends, however it ends.
struct Anvil {
    child: Child,
    url: String,
}

impl Drop for Anvil {
    fn drop(&mut self) {
        self.child.kill().ok();
        self.child.wait().ok();
    }
}

fn anvil_binary() -> Option<PathBuf> {
    match std::env::var_os("RPCBENCH_ANVIL") {
        Some(path) if !path.is_empty() => {
            let path = PathBuf::from(path);
            assert!(path.is_file(), "RPCBENCH_ANVIL names {}, which is not a file", path.display());
            Some(path)
        }
        _ => {
            assert!(
                std::env::var_os("CI").is_none(),
                "CI is set but RPCBENCH_ANVIL is not: .ci/run installs anvil and sets it"
            );
            // Written past the test harness's capture, so that the skip shows in `cargo test`.
            writeln!(
                std::io::stderr(),
                "SKIPPED both_ethereum_suites_run_clean_against_anvil: set RPCBENCH_ANVIL to an anvil binary \
                 (bash .ci/run installs one) to run the suites against a real node"
            )
            .ok();
            None
        }
    }
}

fn call(url: &str, method: &str, params: Value) -> Value {
    client::call(url, method, Some(&params), Duration::from_secs(10))
        .unwrap_or_else(|err| panic!("{method} {params}: {err}"))
}

fn start(binary: &PathBuf) -> Anvil {
    start_with(binary, &[])
}

/// Starts anvil with `extra` arguments (e.g. `--block-time 1`).
fn start_with(binary: &PathBuf, extra: &[&str]) -> Anvil {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let child = Command::new(binary)
        .args(["--host", "127.0.0.1", "--port", &port.to_string(), "--quiet"])
        .args(extra)
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap_or_else(|err| panic!("cannot start {}: {err}", binary.display()));
    let mut anvil = Anvil { child, url: format!("http://127.0.0.1:{port}/") };
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if client::call(&anvil.url, "eth_chainId", None, Duration::from_secs(1)).is_ok() {
            return anvil;
        }
        if let Ok(Some(status)) = anvil.child.try_wait() {
            panic!("anvil exited before answering: {status}");
        }
        assert!(Instant::now() < deadline, "anvil did not answer within 30s");
        std::thread::sleep(Duration::from_millis(100));
    }
}

/// Init code that logs (LOG0) and deploys a contract answering every call with 32 zero bytes:
/// it answers `totalSupply()` and `name()`, as a token does.
const CONTRACT: &str = "0x60006000a06460206000f36000526005601bf3";
/// Init code that logs (LOG0) and deploys a contract reverting every call: it emits logs but is
/// no token, so it must not be called as one.
const NOT_A_TOKEN: &str = "0x60006000a06460006000fd6000526005601bf3";

/// Sends a contract creation from `from` and waits for its receipt.
fn deploy(url: &str, from: &str, init_code: &str) -> Value {
    let creation = call(url, "eth_sendTransaction", json!([{"from": from, "data": init_code}]));
    // Anvil mines right after answering, not before: the receipt may be null for a moment.
    let deadline = Instant::now() + Duration::from_secs(10);
    let receipt = loop {
        let receipt = call(url, "eth_getTransactionReceipt", json!([creation]));
        if !receipt.is_null() || Instant::now() > deadline {
            break receipt;
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(receipt["status"], "0x1", "{receipt}");
    assert!(receipt["contractAddress"].is_string(), "{receipt}");
    receipt
}

fn lowercase_list(value: &Value) -> Vec<String> {
    value.as_array().unwrap().iter().filter_map(Value::as_str).map(str::to_ascii_lowercase).collect()
}

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

#[test]
fn both_ethereum_suites_run_clean_against_anvil() {
    let Some(binary) = anvil_binary() else { return };
    let anvil = start(&binary);
    let url = anvil.url.clone();
    assert_eq!(call(&url, "eth_chainId", json!([])), json!("0x7a69"), "anvil's chain id is 31337");
    let accounts = call(&url, "eth_accounts", json!([]));
    let accounts: Vec<&str> = accounts.as_array().unwrap().iter().filter_map(Value::as_str).collect();
    assert!(accounts.len() >= 4, "{accounts:?}");
    for i in 0..6 {
        let transfer =
            json!({"from": accounts[i % 4], "to": accounts[(i + 1) % 4], "value": "0xde0b6b3a7640000"});
        call(&url, "eth_sendTransaction", json!([transfer]));
    }
    let receipt = deploy(&url, accounts[0], CONTRACT);
    let not_a_token = deploy(&url, accounts[1], NOT_A_TOKEN);
    let not_a_token = not_a_token["contractAddress"].as_str().unwrap().to_ascii_lowercase();
    let reverted = client::call(
        &url,
        "eth_call",
        Some(&json!([{"to": not_a_token, "data": "0x18160ddd"}])),
        Duration::from_secs(10),
    );
    assert!(reverted.is_err(), "the log emitter reverts every call: {reverted:?}");
    // The contract that answers is called by a transaction too: its address is a `to`.
    let last = call(
        &url,
        "eth_sendTransaction",
        json!([{"from": accounts[2], "to": receipt["contractAddress"], "data": "0x18160ddd"}]),
    );
    // Anvil mines right after answering: the head is read once the last one is in a block.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while call(&url, "eth_getTransactionReceipt", json!([last])).is_null()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }

    // Nine transactions, one block each unless anvil, on a busy machine, mined two together:
    // the head is what the node says once the last is mined.
    let head = call(&url, "eth_blockNumber", json!([]));
    let head = u64::from_str_radix(head.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    assert!((1..=9).contains(&head), "{head}");
    let dir = std::env::temp_dir().join(format!("rpcbench-anvil-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    for suite in ["ethereum-relay", "ethereum-dapp"] {
        let pools = dir.join(format!("{suite}.json"));
        let pools_arg = pools.to_str().unwrap();
        let args = ["run", &url, "--suite", suite, "--pools", pools_arg, "-c", "4", "-d", "1s", "-f", "json"];
        let output = rpcbench(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{suite}: {stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(report["requests"]["total"].as_u64().unwrap() > 0, "{suite}");
        assert_eq!(report["requests"]["errors"], 0, "{suite}: {}", report["outcomes"]);

        let sampled: Value = serde_json::from_str(&std::fs::read_to_string(&pools).unwrap()).unwrap();
        assert_eq!(sampled["chain_id"], 31337, "{sampled}");
        assert_eq!(sampled["head"], head, "{sampled}");
        assert_eq!(sampled["pools"]["tx_hashes"].as_array().unwrap().len(), 9, "{sampled}");
        let blocks = sampled["pools"]["blocks"].as_array().unwrap().len() as u64;
        assert_eq!(blocks, head + 1, "blocks 0..=head: {sampled}");
        let contract = receipt["contractAddress"].as_str().unwrap().to_ascii_lowercase();
        // The four accounts, and the contract a transaction called.
        let addresses = lowercase_list(&sampled["pools"]["addresses"]);
        assert_eq!(addresses.len(), 5, "{sampled}");
        assert!(addresses.contains(&contract), "{sampled}");
        let contracts = lowercase_list(&sampled["pools"]["contracts"]);
        assert!(contracts.contains(&contract) && contracts.contains(&not_a_token), "{sampled}");
        // Value moves only between funded accounts without code; token calls go only to the
        // contract that answers them.
        let funded = lowercase_list(&sampled["pools"]["funded_accounts"]);
        let mut expected: Vec<String> = accounts[..4].iter().map(|a| a.to_ascii_lowercase()).collect();
        expected.sort();
        let mut funded_sorted = funded.clone();
        funded_sorted.sort();
        assert_eq!(funded_sorted, expected, "{sampled}");
        assert_eq!(lowercase_list(&sampled["pools"]["tokens"]), vec![contract.clone()], "{sampled}");

        // The same suite over WebSocket (anvil serves it on its HTTP port), from the same pools.
        let ws_url = url.replace("http://", "ws://");
        let args = [
            "run",
            &ws_url,
            "--suite",
            suite,
            "--pools",
            pools_arg,
            "-c",
            "2",
            "--in-flight",
            "4",
            "-d",
            "1s",
            "-f",
            "json",
        ];
        let output = rpcbench(&args);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(0), "{suite} over ws: {stderr}");
        let report: Value = serde_json::from_slice(&output.stdout).unwrap();
        assert_eq!(report["protocol"], "websocket", "{suite}");
        assert!(report["requests"]["total"].as_u64().unwrap() > 0, "{suite} over ws");
        assert_eq!(report["requests"]["errors"], 0, "{suite} over ws: {}", report["outcomes"]);
    }
    std::fs::remove_dir_all(&dir).ok();
}

/// The address of the live metrics `child` prints first on its stderr (`--metrics-listen`),
/// and the rest of its stderr, to be read (kept open: the child writes to it to the end).
fn metrics_address(child: &mut Child) -> (String, std::io::Lines<std::io::BufReader<ChildStderr>>) {
    use std::io::{BufRead, BufReader};
    let mut lines = BufReader::new(child.stderr.take().expect("a piped stderr")).lines();
    let first = lines.next().expect("a line on stderr").unwrap();
    let addr = first
        .strip_prefix("metrics: http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in '{first}'"))
        .to_string();
    (addr, lines)
}

/// The value of the unlabelled metric `name` at `addr` now, if it shows one.
fn scrape_gauge(addr: &str, name: &str) -> Option<f64> {
    use std::io::Read;
    let mut stream = std::net::TcpStream::connect(addr).ok()?;
    write!(stream, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").ok()?;
    let mut response = String::new();
    stream.read_to_string(&mut response).ok()?;
    let prefix = format!("{name} ");
    response.lines().find_map(|line| line.strip_prefix(&prefix)).and_then(|value| value.trim().parse().ok())
}

#[test]
fn new_heads_from_anvil_arrive_for_every_mined_block() {
    let Some(binary) = anvil_binary() else { return };
    let anvil = start(&binary);
    let url = anvil.url.clone();
    let accounts = call(&url, "eth_accounts", json!([]));
    let accounts: Vec<String> =
        accounts.as_array().unwrap().iter().filter_map(Value::as_str).map(str::to_string).collect();
    let ws_url = url.replace("http://", "ws://");
    // The blocks are mined once the three subscriptions are active, as the subscriber's live
    // metrics say (a fixed 500 ms wait was a bet on how soon the process started and
    // subscribed), and well before its 10 s are up.
    let mut subscriber = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["subscribe", &ws_url, "--sub", "newHeads", "--subscribers", "3", "-d", "10s", "-f", "json"])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let (metrics, stderr) = metrics_address(&mut subscriber);
    let waited = Instant::now();
    while scrape_gauge(&metrics, "rpcbench_subscribe_active") != Some(3.0) {
        assert!(waited.elapsed() < Duration::from_secs(60), "the 3 subscriptions never showed active");
        std::thread::sleep(Duration::from_millis(100));
    }
    // Anvil mines a block per transaction: 10 blocks while the subscribers listen.
    for i in 0..10 {
        let transfer = json!({"from": accounts[i % 4], "to": accounts[(i + 1) % 4], "value": "0x1"});
        call(&url, "eth_sendTransaction", json!([transfer]));
        std::thread::sleep(Duration::from_millis(100));
    }
    let output = subscriber.wait_with_output().expect("the output is read");
    let stderr: Vec<String> = stderr.map_while(Result::ok).collect();
    assert_eq!(output.status.code(), Some(0), "{}", stderr.join("\n"));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["subscribed"], 3, "{report}");
    assert_eq!(report["notifications"], 30, "every block at every subscriber: {report}");
    assert_eq!(report["unsubscribed"], 3, "anvil answers eth_unsubscribe at the end: {report}");
    assert_eq!(report["gaps"], 0, "{report}");
    assert_eq!(report["duplicates"], 0, "{report}");
    assert_eq!(report["produced_lag_precision"], "seconds", "anvil's timestamps are whole seconds");
}

#[test]
fn a_hundred_transfers_from_ten_dev_senders_are_each_included_once_within_a_block_time() {
    let Some(binary) = anvil_binary() else { return };
    let anvil = start_with(&binary, &["--block-time", "1"]);
    let url = anvil.url.clone();
    let accounts = call(&url, "eth_accounts", json!([]));
    let accounts: Vec<String> =
        accounts.as_array().unwrap().iter().filter_map(Value::as_str).map(str::to_ascii_lowercase).collect();
    assert_eq!(accounts.len(), 10, "anvil funds the dev mnemonic's first 10 accounts");
    let quantity =
        |value: Value| u64::from_str_radix(value.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let head_before = quantity(call(&url, "eth_blockNumber", json!([])));
    let output = rpcbench(&[
        "tx",
        &url,
        "--dev",
        "--senders",
        "10",
        "--rate",
        "50",
        "-n",
        "100",
        "--inclusion-timeout",
        "30s",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let count = |key: &str| report[key].as_u64().unwrap_or_else(|| panic!("{key} in {report}"));
    assert_eq!(count("sent"), 100, "{report}");
    assert_eq!(count("included"), 100, "{report}");
    assert_eq!(count("included") + count("dropped") + count("rejected") + count("pending"), count("sent"));
    // Sends spread over two seconds, a block every second: half land within one block time.
    let p50 = report["send_to_included_ms"]["p50"].as_f64().unwrap();
    assert!(p50 <= 1000.0, "inclusion p50 {p50} ms is more than a block time: {report}");
    // The chain itself: each transfer in exactly one block, each sender's nonces 0..10 without gaps.
    let head_after = quantity(call(&url, "eth_blockNumber", json!([])));
    let mut seen = std::collections::HashSet::new();
    let mut nonces: std::collections::HashMap<String, Vec<u64>> = std::collections::HashMap::new();
    for number in head_before + 1..=head_after {
        let block = call(&url, "eth_getBlockByNumber", json!([format!("0x{number:x}"), true]));
        for tx in block["transactions"].as_array().unwrap() {
            assert!(
                seen.insert(tx["hash"].as_str().unwrap().to_string()),
                "a transaction in two blocks: {tx}"
            );
            let from = tx["from"].as_str().unwrap().to_ascii_lowercase();
            nonces.entry(from).or_default().push(quantity(tx["nonce"].clone()));
        }
    }
    assert_eq!(seen.len(), 100, "100 transfers on chain");
    for account in &accounts {
        let mut sent = nonces.remove(account).unwrap_or_default();
        sent.sort_unstable();
        assert_eq!(sent, (0..10).collect::<Vec<u64>>(), "{account}'s nonces");
    }
}

#[test]
fn senders_past_anvils_ten_funded_accounts_are_funded_from_the_first_and_every_transfer_lands() {
    let Some(binary) = anvil_binary() else { return };
    let anvil = start_with(&binary, &["--block-time", "1"]);
    let url = anvil.url.clone();
    let children = rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 10, 2).unwrap();
    let balance = |address: String| call(&url, "eth_getBalance", json!([address, "latest"]));
    for child in &children {
        assert_eq!(balance(child.address().to_string()), json!("0x0"), "anvil funds only the first 10");
    }
    let output = rpcbench(&[
        "tx",
        &url,
        "--dev",
        "--senders",
        "12",
        "--rate",
        "60",
        "-n",
        "120",
        "--inclusion-timeout",
        "30s",
        "-f",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(0), "{stderr}");
    // The nine other prefunded accounts hold enough: only the two fresh ones get a transfer.
    assert!(stderr.contains("funding senders: 2/2 transfers sent"), "{stderr}");
    assert!(stderr.contains("funding senders: 2/2 included"), "{stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let count = |key: &str| report[key].as_u64().unwrap_or_else(|| panic!("{key} in {report}"));
    assert_eq!(count("sent"), 120, "{report}");
    assert_eq!(count("included"), 120, "{report}");
    for child in &children {
        let nonce = call(&url, "eth_getTransactionCount", json!([child.address().to_string(), "latest"]));
        assert_eq!(nonce, json!("0xa"), "each fresh sender sent its 10 transfers");
    }
}

#[test]
fn the_relay_suite_against_a_fresh_anvil_runs_the_calls_it_can_and_says_which_it_left_out() {
    // A fresh anvil is at block 0: no transactions, no tokens, no funded accounts seen in a
    // block. The suite's calls on those pools are left out with a warning; the rest run clean.
    let Some(binary) = anvil_binary() else { return };
    let anvil = start(&binary);
    let output = rpcbench(&[
        "run",
        &anvil.url,
        "--suite",
        "ethereum-relay",
        "-n",
        "200",
        "-c",
        "2",
        "--no-tui",
        "-f",
        "json",
    ]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(output.status.success(), "{stderr}");
    assert!(stderr.contains("warning: call 'eth_getTransactionByHash' left out"), "{stderr}");
    assert!(
        stderr.contains("pool 'tx_hashes', which is empty: the node had none in ethereum blocks 0..=0"),
        "{stderr}"
    );
    let report: Value = serde_json::from_slice(&output.stdout).unwrap();
    let methods: Vec<String> = report["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["method"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(report["outcomes"]["ok"], report["requests"]["total"], "{}", report["outcomes"]);
    assert!(methods.contains(&"eth_blockNumber".to_string()), "{methods:?}");
    assert!(!methods.contains(&"eth_getTransactionByHash".to_string()), "{methods:?}");
}
