//! `rpcbench tx` against the mock Ethereum node with its mempool on, started in-process on
//! 127.0.0.1:0: the identity of the outcomes, every accepted transaction included, the mainnet
//! guard, and keys never printed.

use std::process::Command;
use std::time::Duration;

use common::{
    count, ethereum_node, ethereum_outcomes_add_up, nothing_was_sent, report_of, rpcbench, tx, tx_report,
};
use rpcbench::mock::{Chain, MockOptions, MockServer, TxPoolOptions};
use serde_json::Value;

mod common;

/// The mock Ethereum node with its mempool on chain `chain_id`, a block every 100 ms.
/// The runs whose assertions need the landing watch to keep up in real time keep their helper
/// threads in the ordinary class: in the idle class (the default, `aside`), on a machine whose
/// cores other work keeps busy (the tests beside them on a 2-core CI), they get no CPU, the
/// blocks go unread past the inclusion timeout and what landed ends `included_unseen`. The
/// connection-cap test runs with the default.
const ORDINARY: [&str; 2] = ["--helper-threads", "ordinary"];

fn node(chain_id: u64) -> MockServer {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_millis(100);
    options.chain_id = chain_id;
    options.tx_pool = Some(TxPoolOptions::default());
    MockServer::start(options).expect("the mock node starts")
}

#[test]
fn two_hundred_transfers_from_four_dev_senders_are_all_included_and_add_up_to_what_was_sent() {
    let node = node(31337);
    let url = node.url();
    let report = tx_report(
        &url,
        &[
            "--dev",
            "--senders",
            "4",
            "--rate",
            "200",
            "-n",
            "200",
            "--inclusion-timeout",
            "20s",
            ORDINARY[0],
            ORDINARY[1],
        ],
    );
    assert_eq!(count(&report, "sent"), 200, "{report}");
    ethereum_outcomes_add_up(&report);
    assert_eq!(count(&report, "accepted"), 200, "{report}");
    assert_eq!(
        count(&report, "included"),
        count(&report, "accepted"),
        "every accepted one is included: {report}"
    );
    // A transaction lands in a block after the head at its send, and its inclusion is the
    // arrival of that head, after its acknowledgement.
    assert!(report["blocks_after_head_at_send"]["p50"].as_u64().unwrap() >= 1, "{report}");
    let included_p50 = report["send_to_included_ms"]["p50"].as_f64().unwrap();
    let ack_p50 = report["send_to_ack_ms"]["p50"].as_f64().unwrap();
    assert!(included_p50 > ack_p50, "{report}");
}

#[test]
fn a_mainnet_chain_id_is_refused_with_exit_2_and_the_cost_estimate() {
    let node = node(1);
    let url = node.url();
    let output = tx(&url, &["--dev", "--rate", "10", "-n", "100", "--gas-price", "20gwei"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("chain id 1") && stderr.contains("--mainnet"), "{stderr}");
    // 100 x 21000 gas x 20 gwei = 0.042 ETH.
    assert!(stderr.contains("0.042000 ETH"), "{stderr}");
    nothing_was_sent(&url);
}

#[test]
fn keys_from_a_key_file_are_never_printed() {
    let node = node(31337);
    let url = node.url();
    let keys = rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 0, 2).unwrap();
    let secrets: Vec<String> = keys.iter().map(|key| key.secret_hex()).collect();
    let dir = std::env::temp_dir().join(format!("rpcbench-tx-keys-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("keys.txt");
    std::fs::write(&path, format!("{}\n0x{}\n", secrets[0], secrets[1])).unwrap();
    for format in ["text", "json"] {
        let output = tx(
            &url,
            &[
                "--key-file",
                path.to_str().unwrap(),
                "--senders",
                "2",
                "--rate",
                "50",
                "-n",
                "10",
                "-f",
                format,
            ],
        );
        let all =
            format!("{}{}", String::from_utf8_lossy(&output.stdout), String::from_utf8_lossy(&output.stderr));
        assert_eq!(output.status.code(), Some(0), "{all}");
        for secret in &secrets {
            let digits = secret.trim_start_matches("0x");
            assert!(!all.to_ascii_lowercase().contains(&digits.to_ascii_lowercase()), "a key was printed");
        }
    }
    // A bad line names the file, line and column, without quoting the key.
    std::fs::write(&path, format!("{}\n{}zz\n", secrets[0], &secrets[1][..10])).unwrap();
    let output = tx(&url, &["--key-file", path.to_str().unwrap(), "--rate", "50", "-n", "10"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("keys.txt:2:"), "{stderr}");
    assert!(!stderr.contains(&secrets[1][..10]), "{stderr}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn an_unfunded_sender_is_named_before_anything_is_sent() {
    let node = node(31337);
    let url = node.url();
    // The mock funds the dev mnemonic's first 10 accounts: the 11th is not.
    let output = tx(&url, &["--dev", "--senders", "11", "--rate", "50", "-n", "20", "--no-fund"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let eleventh =
        rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 10, 1).unwrap()[0].address();
    assert!(stderr.contains("sender 10") && stderr.contains(&eleventh.to_string()), "{stderr}");
    nothing_was_sent(&url);
}

#[test]
fn an_interrupt_stops_sending_waits_the_grace_and_reports_the_rest_pending() {
    // Every transaction waits 1000 blocks before inclusion: none lands within the grace.
    let node = ethereum_node(
        Duration::from_millis(100),
        TxPoolOptions { delay_blocks: 1000, ..TxPoolOptions::default() },
    );
    let url = node.url();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args([
            "tx",
            &url,
            "--dev",
            "--senders",
            "2",
            "--rate",
            "50",
            "-d",
            "60s",
            "--grace",
            "300ms",
            "-f",
            "json",
        ])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Interrupted once the node holds some of its transactions.
    let first =
        rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 0, 1).unwrap()[0].address();
    let params = serde_json::json!([first.to_string(), "pending"]);
    for _ in 0..600 {
        let nonce =
            rpcbench::client::call(&url, "eth_getTransactionCount", Some(&params), Duration::from_secs(5))
                .unwrap();
        if nonce != "0x0" && nonce != "0x1" {
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let kill = Command::new("kill").args(["-s", "INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    let mut waited = 0;
    while child.try_wait().expect("the child can be waited for").is_none() {
        waited += 1;
        if waited > 1000 {
            child.kill().ok();
            panic!("tx did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let report = report_of(&child.wait_with_output().unwrap());
    let count = |key: &str| count(&report, key);
    assert_eq!(report["interrupted"], true, "{report}");
    assert!(count("sent") >= 2 && count("sent") < 3000, "{report}");
    ethereum_outcomes_add_up(&report);
    assert_eq!(count("included"), 0, "{report}");
    assert_eq!(count("dropped"), 0, "{report}");
    assert_eq!(count("pending"), count("accepted"), "what the node took is pending at the end: {report}");
}

#[test]
fn a_chain_id_the_node_does_not_have_is_refused_naming_the_flag() {
    let node = node(31337);
    let url = node.url();
    let output = tx(&url, &["--dev", "--chain-id", "5", "--rate", "10", "-n", "10"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--chain-id 5") && stderr.contains("31337"), "{stderr}");
}

#[test]
fn serve_refuses_a_tx_pool_on_a_chain_other_than_ethereum() {
    let output = rpcbench(&["serve", "--chain", "solana", "--tx-pool", "--listen", "127.0.0.1:0"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--tx-pool"), "{stderr}");
}

/// The report of 40 transfers at 100/s from 2 dev senders, with `extra` flags.
fn tx_json(url: &str, extra: &[&str]) -> Value {
    let args = ["--dev", "--senders", "2", "--rate", "100", "-n", "40", "--inclusion-timeout", "20s"];
    tx_report(url, &[&args[..], &ORDINARY[..], extra].concat())
}

#[test]
fn deploys_and_contract_calls_take_their_gas_limit_from_one_estimate_and_all_land() {
    let node = node(31337);
    let url = node.url();
    // Creation code of 4 bytes (3 non-zero, 1 zero): 21000 + 32000 + 3 x 16 + 4.
    let deploy = tx_json(&url, &["--deploy", "0x60806000"]);
    assert_eq!(deploy["kind"], "deploy");
    assert_eq!(deploy["gas_limit"], 53_052, "{deploy}");
    assert_eq!((deploy["included"].as_u64(), deploy["accepted"].as_u64()), (Some(40), Some(40)), "{deploy}");
    let call = tx_json(&url, &["--to", "0x3535353535353535353535353535353535353535", "--data", "a9059cbb00"]);
    assert_eq!(call["kind"], "call");
    assert_eq!(call["gas_limit"], 21_000 + 4 * 16 + 4, "{call}");
    assert_eq!(call["included"].as_u64(), Some(40), "{call}");
    // The fees: the mock's base fee from eth_feeHistory, doubled, plus its 1 gwei priority.
    let fees = &call["fees"];
    assert_eq!(fees["max_priority_fee_per_gas_wei"], "1000000000", "{fees}");
    assert!(fees["source"].as_str().unwrap().contains("eth_feeHistory"), "{fees}");
    let overridden =
        tx_json(&url, &["--gas-limit", "30000", "--max-fee", "50gwei", "--priority-fee", "2gwei"]);
    assert_eq!(overridden["gas_limit"], 30_000);
    assert_eq!(overridden["fees"]["max_fee_per_gas_wei"], "50000000000");
    assert_eq!(overridden["fees"]["source"], "max fee: --max-fee; priority: --priority-fee");
    assert_eq!(overridden["included"].as_u64(), Some(40), "{overridden}");
}

#[test]
fn the_connection_cap_follows_the_send_rate_and_the_report_says_why_sends_were_late() {
    let node = node(31337);
    let url = node.url();
    // 100/s: the floor of 64 connections; 10,000/s: the sends of 10 ms, 100.
    for (rate, cap) in [("100", 64), ("10000", 100)] {
        let report = tx_report(
            &url,
            &["--dev", "--senders", "2", "--rate", rate, "-n", "40", "--inclusion-timeout", "20s"],
        );
        let late = &report["late_sends"];
        assert_eq!(late["connection_cap"], cap, "{report}");
        assert_eq!(late["helper_threads"], "aside", "the default: {report}");
        let count = |key: &str| count(late, key);
        assert!(count("at_connection_cap") <= count("over_2ms"), "{report}");
        assert!(count("waited_for_signer") <= report["sent"].as_u64().unwrap(), "{report}");
    }
}

#[test]
fn bad_call_data_or_deploy_code_is_refused_naming_the_flag() {
    let node = node(31337);
    let url = node.url();
    for (flags, named) in [
        (vec!["--deploy", "0x6080z0"], "--deploy"),
        (vec!["--to", "0x35", "--data", "00"], "--to"),
        (vec!["--to", "0x3535353535353535353535353535353535353535", "--data", "abc"], "--data"),
    ] {
        let output = tx(&url, &[&["--dev", "--rate", "10", "-n", "1"][..], &flags].concat());
        assert_eq!(output.status.code(), Some(2));
        assert!(String::from_utf8_lossy(&output.stderr).contains(named), "{named}");
    }
}

#[test]
fn an_output_path_that_cannot_be_written_is_refused_before_anything_is_sent() {
    let node = node(31337);
    let folder = std::env::temp_dir();
    let missing = folder.join("rpcbench-no-such-folder").join("report.json");
    for (flag, path, said) in [
        ("--save", missing.to_str().unwrap(), "does not exist"),
        ("-o", folder.to_str().unwrap(), "is a folder"),
    ] {
        let output = tx(&node.url(), &["--dev", "--rate", "10", "-n", "5", flag, path]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{stderr}");
        assert!(stderr.contains(said), "{stderr}");
    }
    // Refused before the load: the node saw no transaction.
    nothing_was_sent(&node.url());
}

#[test]
fn a_zero_inclusion_timeout_poll_or_fund_timeout_is_refused_naming_the_flag() {
    let node = node(31337);
    for flag in ["--inclusion-timeout", "--poll", "--fund-timeout"] {
        let output = tx(&node.url(), &["--dev", "--rate", "10", "-n", "5", flag, "0s"]);
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert_eq!(output.status.code(), Some(2), "{flag}: {stderr}");
        assert!(stderr.contains(&format!("{flag}: must be longer than zero")), "{stderr}");
    }
    nothing_was_sent(&node.url());
}

#[test]
fn a_url_that_cannot_be_parsed_is_said_once_with_exit_2() {
    let output = tx("http://[::1", &["--dev", "--rate", "10", "-n", "1"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.starts_with("error: URL: 'http://[::1' is not a valid URL"), "{stderr}");
    assert!(!stderr.contains("request failed"), "not a failed request: {stderr}");
}

#[test]
fn without_websocket_heads_are_polled_at_the_stated_resolution_and_require_ws_refuses() {
    let node = node(31337);
    let url = node.url();
    // The watch is pointed at a ws:// URL where nothing listens: no WebSocket there (an
    // http:// --ws is refused as a mistake in the flag).
    let ws = {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("ws://127.0.0.1:{}/", listener.local_addr().unwrap().port())
    };
    let base =
        ["--ws", &ws, "--dev", "--senders", "2", "--rate", "100", "-n", "40", "--inclusion-timeout", "20s"];
    let refused = tx(&url, &[&base[..], &["--require-ws"]].concat());
    assert_eq!(refused.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&refused.stderr).contains("--ws"));

    let output = tx(&url, &[&base[..], &["-f", "json"]].concat());
    let report = report_of(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("polling eth_blockNumber every 100 ms"), "{stderr}");
    assert_eq!(report["heads_from"], "poll");
    assert_eq!(report["inclusion_resolution_ms"], 100);
    assert_eq!(report["included"].as_u64(), Some(40), "{report}");

    let text = tx(&url, &[&base[..], &["--poll", "50ms"]].concat());
    assert_eq!(text.status.code(), Some(0));
    let text = String::from_utf8_lossy(&text.stdout);
    let line = text.lines().find(|line| line.starts_with("send -> included")).unwrap();
    assert!(line.ends_with("(polled: resolution 50 ms)"), "{text}");
}

/// A mock node funding only the dev mnemonic's first account, with `balance` wei.
fn node_funding_one(balance: u128) -> MockServer {
    let pool = TxPoolOptions { dev_accounts: 1, dev_balance: balance, ..TxPoolOptions::default() };
    ethereum_node(Duration::from_millis(100), pool)
}

fn balance_of(url: &str, address: &str) -> u128 {
    let params = serde_json::json!([address, "latest"]);
    let answer =
        rpcbench::client::call(url, "eth_getBalance", Some(&params), Duration::from_secs(5)).unwrap();
    u128::from_str_radix(answer.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
}

#[test]
fn fresh_child_senders_are_funded_from_the_first_before_load_and_every_transaction_lands() {
    let node = node_funding_one(10_000 * 1_000_000_000_000_000_000);
    let url = node.url();
    let keys = rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 0, 5).unwrap();
    for key in &keys[1..] {
        assert_eq!(balance_of(&url, &key.address().to_string()), 0, "the children start empty");
    }
    let args = ["--dev", "--senders", "5", "--rate", "200", "-n", "200", "--gas-price", "1gwei"];
    let output =
        tx(&url, &[&args[..], &["--inclusion-timeout", "20s", "-f", "json"], &ORDINARY[..]].concat());
    let report = report_of(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("funding senders: 4/4 transfers sent"), "{stderr}");
    assert!(stderr.contains("funding senders: 4/4 included"), "{stderr}");
    let stdout = String::from_utf8_lossy(&output.stdout);
    for key in &keys {
        assert!(
            !stderr.contains(&key.secret_hex()) && !stdout.contains(&key.secret_hex()),
            "a key was printed"
        );
    }
    let count = |key: &str| count(&report, key);
    assert_eq!(count("sent"), 200, "{report}");
    assert_eq!(count("included"), 200, "every transaction of every funded sender lands: {report}");
    // Each child got its share of the run's cost twice over: 40 transfers of 21,000 gas at 1 gwei
    // plus 1 wei each, x 2; it spent what it sent.
    let funded = (21_000u128 * 1_000_000_000 + 1) * 40 * 2;
    let spent = (21_000u128 * 1_000_000_000 + 1) * 40;
    for key in &keys[1..] {
        assert_eq!(balance_of(&url, &key.address().to_string()), funded - spent, "{}", key.address());
    }
}

#[test]
fn children_already_holding_enough_are_not_funded_again() {
    let node = node_funding_one(10_000 * 1_000_000_000_000_000_000);
    let url = node.url();
    let args = ["--dev", "--senders", "3", "--rate", "100", "-n", "6", "--gas-price", "1gwei"];
    let first = tx(&url, &[&args[..], &["--fund-amount", "1000000gwei"]].concat());
    assert_eq!(first.status.code(), Some(0), "{}", String::from_utf8_lossy(&first.stderr));
    assert!(String::from_utf8_lossy(&first.stderr).contains("2/2 transfers sent"));
    // Each child spent two transfers' cost (42,000 gwei and 2 wei): it holds more than half.
    let second = tx(&url, &[&args[..], &["--fund-amount", "500000gwei"]].concat());
    let stderr = String::from_utf8_lossy(&second.stderr);
    assert_eq!(second.status.code(), Some(0), "{stderr}");
    assert!(!stderr.contains("transfers sent"), "{stderr}");
}

#[test]
fn a_funder_that_cannot_pay_for_the_funding_is_named_before_anything_is_sent() {
    let node = node_funding_one(1_000_000);
    let url = node.url();
    let output = tx(&url, &["--dev", "--senders", "3", "--rate", "50", "-n", "20", "--gas-price", "1gwei"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    let funder =
        rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 0, 1).unwrap()[0].address();
    assert!(stderr.contains("funder (sender 0") && stderr.contains(&funder.to_string()), "{stderr}");
    nothing_was_sent(&url);
}

#[test]
fn a_sender_that_runs_dry_mid_run_is_topped_up_from_the_funder_and_lands_again() {
    let node = node_funding_one(10_000 * 1_000_000_000_000_000_000);
    let url = node.url();
    // 100,000 gwei pays four transfers of 21,000 gwei: each child runs dry after its fourth.
    let report = tx_report(
        &url,
        &[
            "--dev",
            "--senders",
            "3",
            "--rate",
            "40",
            "-n",
            "120",
            "--gas-price",
            "1gwei",
            "--fund-amount",
            "100000gwei",
            "--inclusion-timeout",
            "3s",
            ORDINARY[0],
            ORDINARY[1],
        ],
    );
    let count = |key: &str| count(&report, key);
    assert_eq!(report["identity_holds"], true, "{report}");
    assert_eq!(count("sent"), 120, "what resyncs dropped stale was signed again: {report}");
    let top_ups = &report["top_ups"];
    let refusals = top_ups["insufficient_funds_refusals"].as_u64().unwrap();
    let sent = top_ups["sent"].as_u64().unwrap();
    assert!(refusals >= 2 && sent >= 2, "both children ran dry and were topped up: {report}");
    assert_eq!(report["rejected_by_reason"]["insufficient_funds"].as_u64(), Some(refusals), "{report}");
    assert_eq!(
        refusals,
        sent + top_ups["not_sent_within_cooldown"].as_u64().unwrap()
            + top_ups["not_sent_same_dry_spell"].as_u64().unwrap(),
        "every refusal was topped up or held back by the cooldown: {report}"
    );
    // Without top-ups the children land at most 4 transfers each; the funder sends a third of
    // the run and the top-ups. More landed: the children sent again on the top-ups' funds.
    assert!(count("included") > 40 + 2 * 4 + sent, "{report}");
}

/// `--block-gas-limit` on the mock: blocks carry at most that much of the pool's gas, the rest
/// waits. Sent faster than five transfers a block, the blocks fill, and the report's gas and
/// share of each block that was ours are what the mock's blocks hold.
#[test]
fn full_blocks_give_the_gas_and_block_share_the_mock_s_blocks_hold() {
    const PER_BLOCK: u64 = 5;
    let node = ethereum_node(
        Duration::from_millis(100),
        TxPoolOptions { block_gas_limit: PER_BLOCK * 21_000, ..TxPoolOptions::default() },
    );
    let url = node.url();
    // 100 a second, 10 a block offered: twice what a block takes.
    let report = tx_json(&url, &["--no-fund"]);
    assert_eq!(report["included"].as_u64(), Some(40), "{report}");

    // The mock's truth: each block's transactions, ours by their sender.
    let senders: Vec<String> = rpcbench::tx::keys::keys_from_mnemonic(rpcbench::tx::keys::DEV_MNEMONIC, 0, 2)
        .unwrap()
        .iter()
        .map(|key| key.address().to_string().to_ascii_lowercase())
        .collect();
    let call = |method: &str, params: Value| {
        rpcbench::client::call(&url, method, Some(&params), Duration::from_secs(5)).expect("the mock answers")
    };
    let head = call("eth_blockNumber", serde_json::json!([]));
    let head = u64::from_str_radix(head.as_str().unwrap().trim_start_matches("0x"), 16).unwrap();
    let mut ours_per_block = Vec::new();
    let mut shares = Vec::new();
    for number in 1..=head {
        let block = call("eth_getBlockByNumber", serde_json::json!([format!("0x{number:x}"), true]));
        let transactions = block["transactions"].as_array().unwrap();
        let ours = transactions
            .iter()
            .filter(|tx| senders.contains(&tx["from"].as_str().unwrap_or("").to_ascii_lowercase()))
            .count() as u64;
        if ours > 0 {
            ours_per_block.push(ours);
            shares.push(ours as f64 / transactions.len() as f64);
        }
    }
    assert_eq!(ours_per_block.iter().sum::<u64>(), 40, "{ours_per_block:?}");
    assert!(ours_per_block.iter().all(|&ours| ours <= PER_BLOCK), "over the gas limit: {ours_per_block:?}");
    assert_eq!(ours_per_block.iter().max(), Some(&PER_BLOCK), "blocks filled: {ours_per_block:?}");
    assert!(ours_per_block.len() >= 8, "{ours_per_block:?}");

    assert_eq!(report["blocks_with_ours"].as_u64(), Some(ours_per_block.len() as u64), "{report}");
    assert_eq!(report["included_gas"].as_u64(), Some(40 * 21_000), "{report}");
    shares.sort_by(f64::total_cmp);
    let share = &report["share_of_block_ours"];
    // The report's JSON keeps a float to its shortest digits; the same share to 1e-12.
    for (key, truth) in
        [("min", shares[0]), ("p50", shares[(shares.len() - 1) / 2]), ("max", shares[shares.len() - 1])]
    {
        let reported = share[key].as_f64().unwrap_or_else(|| panic!("{key} in {report}"));
        assert!((reported - truth).abs() < 1e-12, "{key}: {reported} against the mock's {truth}: {report}");
    }
    // Gas over the same window as the inclusions: 21000 per included transfer.
    let gas_per_second = report["gas_per_second"].as_f64().unwrap();
    let included_per_second = report["included_per_second"].as_f64().unwrap();
    assert!((gas_per_second - included_per_second * 21_000.0).abs() <= gas_per_second * 1e-9, "{report}");
}

#[test]
fn serve_takes_a_block_gas_limit_only_with_its_mempool() {
    let output = rpcbench(&["serve", "--chain", "ethereum", "--block-gas-limit", "105000"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--tx-pool"));
    let output = rpcbench(&["serve", "--chain", "ethereum", "--tx-pool", "--block-gas-limit", "20999"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&output.stderr).contains("--block-gas-limit"));
}

#[test]
fn every_receipt_of_a_block_holding_more_than_the_node_s_batch_limit_is_read() {
    // One-second blocks at 400/s: each block holds ~400 of ours, more than the 100 calls a
    // batch the mock (as many providers) takes; a batch refused as too large is halved.
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_secs(1);
    options.chain_id = 31337;
    options.max_batch_len = 60;
    options.tx_pool = Some(TxPoolOptions::default());
    let node = MockServer::start(options).expect("the mock node starts");
    let url = node.url();
    let report = tx_report(
        &url,
        &[
            "--dev",
            "--senders",
            "4",
            "--rate",
            "400",
            "-n",
            "800",
            "--inclusion-timeout",
            "20s",
            ORDINARY[0],
            ORDINARY[1],
        ],
    );
    let count = |key: &str| count(&report, key);
    assert_eq!(count("included"), 800, "{report}");
    assert_eq!(report["receipts_checked"], "all", "{report}");
    assert_eq!(count("receipts_read"), 800, "{report}");
    assert_eq!(count("receipt_failures"), 0, "{report}");
}

/// A node on 127.0.0.1:0 answering every JSON-RPC call with `result` (one call a connection).
fn node_answering_everything_with(result: &'static str) -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port on loopback");
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming().take(50) {
            let Ok(mut stream) = stream else { continue };
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut length = 0usize;
            let mut line = String::new();
            while reader.read_line(&mut line).unwrap_or(0) > 2 {
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                line.clear();
            }
            let mut body = vec![0u8; length];
            if reader.read_exact(&mut body).is_err() {
                continue;
            }
            let id =
                serde_json::from_slice::<Value>(&body).map(|call| call["id"].clone()).unwrap_or(Value::Null);
            let answer = serde_json::json!({"jsonrpc": "2.0", "id": id, "result": result}).to_string();
            let _ = write!(
                stream,
                "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                answer.len()
            );
        }
    });
    url
}

#[test]
fn a_chain_id_wider_than_64_bits_is_refused_not_truncated() {
    // 2^64 + 1 would be read as chain 1 if cut to 64 bits.
    let url = node_answering_everything_with("0x10000000000000001");
    let output = tx(&url, &["--dev", "--rate", "10", "-n", "10"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(stderr.contains("eth_chainId") && stderr.contains("wider than a chain id"), "{stderr}");
    assert!(!stderr.contains("mainnet"), "not taken for chain 1: {stderr}");
}
