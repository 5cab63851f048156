//! A new user's trial of `rpcbench tx` on both chains against the mocks on 127.0.0.1:0: what
//! the trial found wrong (bad input that was taken, a fallback that sent nothing), each
//! behaviour kept by a test of counts and exit codes, never of timing.

use std::io::{Read, Write};
use std::net::{Shutdown, SocketAddr, TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use common::{count, ethereum_node, nothing_was_sent, solana_node, solana_outcomes_add_up, tx, tx_report};
use rpcbench::mock::{SolanaTxOptions, TxPoolOptions};
use serde_json::Value;

mod common;

/// A ws:// URL on 127.0.0.1 where nothing listens (a port taken from the system, then freed).
fn closed_ws_url() -> String {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    drop(listener);
    format!("ws://127.0.0.1:{port}/")
}

/// With no WebSocket at `--ws`, Solana's `tx` says so and polls getSignatureStatuses instead:
/// it must still send every transaction (the watch that could not start closed the queue the
/// signer fills, and the run sent none).
#[test]
fn a_solana_run_whose_signature_watch_cannot_connect_polls_and_still_sends_every_transaction() {
    let node = solana_node(Some(SolanaTxOptions::default()));
    let ws = closed_ws_url();
    let report: Value = tx_report(&node.url(), &["--ws", &ws, "--rate", "50", "-n", "20"]);
    assert_eq!(report["landing_seen_by"], "getSignatureStatuses every 100 ms", "{report}");
    assert_eq!(count(&report, "sent"), 20, "{report}");
    assert_eq!(count(&report, "landed"), 20, "{report}");
    solana_outcomes_add_up(&report);
}

/// The exit status and the one line on standard error of a run that must be refused.
fn refused(url: &str, args: &[&str]) -> (Option<i32>, String) {
    let output = tx(url, args);
    let stderr = String::from_utf8_lossy(&output.stderr).trim().to_string();
    assert!(!stderr.contains("panicked"), "{stderr}");
    (output.status.code(), stderr)
}

/// `--ws` that is no WebSocket URL is a mistake in the flag: exit 2 naming it, before anything
/// is sent, on either chain (it fell back to polling, exit 0, the typo unseen).
#[test]
fn a_ws_flag_that_is_not_a_websocket_url_exits_2_naming_it_before_anything_is_sent() {
    let node = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    let url = node.url();
    for ws in ["notaurl", "http://127.0.0.1:1/?api-key=SECRET123", "ws://"] {
        let (code, stderr) = refused(&url, &["--dev", "--rate", "10", "-n", "5", "--ws", ws]);
        assert_eq!(code, Some(2), "--ws {ws}: {stderr}");
        assert!(stderr.starts_with("error: --ws: "), "--ws {ws}: {stderr}");
        assert!(!stderr.contains("SECRET123"), "{stderr}");
    }
    nothing_was_sent(&url);
    let solana = solana_node(Some(SolanaTxOptions::default()));
    let (code, stderr) = refused(&solana.url(), &["--rate", "10", "-n", "5", "--ws", "https://127.0.0.1:1/"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--ws: ") && stderr.contains("not a ws:// or wss:// URL"), "{stderr}");
}

/// A `--max-fee` below the priority fee (given or the node's) is the flag's fault: exit 2
/// naming both, before anything is sent (it exited 1, as a node failure does).
#[test]
fn a_max_fee_below_the_priority_fee_exits_2_before_anything_is_sent() {
    let node = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    let url = node.url();
    let given = ["--dev", "--rate", "10", "-n", "5", "--max-fee", "1gwei", "--priority-fee", "2gwei"];
    let (code, stderr) = refused(&url, &given);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("--max-fee 1.000 gwei is below the priority fee 2.000 gwei"), "{stderr}");
    let (code, stderr) = refused(&url, &["--dev", "--rate", "10", "-n", "5", "--max-fee", "0"]);
    assert_eq!(code, Some(2), "{stderr}");
    assert!(stderr.contains("(eth_maxPriorityFeePerGas)"), "{stderr}");
    nothing_was_sent(&url);
}

/// Every byte clients sent through a relay on 127.0.0.1:0 to a node, to see the headers that
/// reached it.
struct Recorded {
    url: String,
    sent: Arc<Mutex<Vec<u8>>>,
}

/// A relay to the node at `url` (each connection copied both ways, the client's side kept).
fn recording_relay(url: &str) -> Recorded {
    let upstream: SocketAddr = url.trim_start_matches("http://").trim_end_matches('/').parse().unwrap();
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let sent = Arc::new(Mutex::new(Vec::new()));
    let keep = sent.clone();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let (Ok(client), Ok(server)) = (client, TcpStream::connect(upstream)) else { continue };
            let (mut from_client, mut to_server) = (client.try_clone().unwrap(), server.try_clone().unwrap());
            let keep = keep.clone();
            std::thread::spawn(move || {
                let mut buffer = [0u8; 16384];
                while let Ok(read @ 1..) = from_client.read(&mut buffer) {
                    keep.lock().unwrap().extend_from_slice(&buffer[..read]);
                    if to_server.write_all(&buffer[..read]).is_err() {
                        break;
                    }
                }
                let _ = to_server.shutdown(Shutdown::Write);
            });
            let (mut from_server, mut to_client) = (server, client);
            std::thread::spawn(move || {
                let _ = std::io::copy(&mut from_server, &mut to_client);
                let _ = to_client.shutdown(Shutdown::Both);
            });
        }
    });
    Recorded { url: format!("http://127.0.0.1:{port}/"), sent }
}

impl Recorded {
    /// How many HTTP/1.1 request heads went through, how many WebSocket upgrades among them,
    /// and how many carried `header` (the client's side of WebSocket is masked: no false hits).
    fn heads(&self, header: &str) -> (usize, usize, usize) {
        let text = String::from_utf8_lossy(&self.sent.lock().unwrap()).to_ascii_lowercase();
        let header = format!("\r\n{}\r\n", header.to_ascii_lowercase());
        (
            text.matches(" http/1.1\r\n").count(),
            text.matches("upgrade: websocket").count(),
            text.matches(&header).count(),
        )
    }
}

/// `tx -H 'Name: value'` (as `run` and `subscribe` take it: providers want their key on writes
/// too) goes with every HTTP request of the run (setup, funding or airdrops, the sends, block,
/// receipt and status reads) and every WebSocket upgrade of its watches, on both chains; its
/// value is in no output. Before, `tx` had no `-H` (exit 2, unknown argument).
#[test]
fn a_tx_header_goes_with_every_request_and_websocket_upgrade_and_is_never_printed() {
    let header = "X-Api-Key: SECRETHDR";
    let dir = std::env::temp_dir().join(format!("rpcbench-tx-header-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let ethereum = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    let solana = solana_node(Some(SolanaTxOptions::default()));
    for (node, keys, landed) in
        [(ethereum.url(), &["--dev"][..], "included"), (solana.url(), &[][..], "landed")]
    {
        let relay = recording_relay(&node);
        let saved = dir.join(format!("{landed}.json"));
        let saved_path = saved.to_str().unwrap();
        let args =
            [keys, &["--rate", "50", "-n", "20", "-H", header, "--save", saved_path, "-f", "json"][..]]
                .concat();
        let output = tx(&relay.url, &args);
        let stderr = String::from_utf8_lossy(&output.stderr).to_string();
        let report = common::report_of(&output);
        assert_eq!(count(&report, "sent"), 20, "{report}");
        assert_eq!(count(&report, landed), 20, "{report}");
        let (requests, upgrades, with_header) = relay.heads(header);
        assert!(upgrades >= 1, "the watch's upgrade went through the relay: {requests} requests");
        assert!(requests > 20, "the sends and the reads: {requests}");
        assert_eq!(with_header, requests, "every request head carried the header ({landed})");
        let saved_text = std::fs::read_to_string(&saved).unwrap();
        for text in [String::from_utf8_lossy(&output.stdout).to_string(), stderr, saved_text] {
            assert!(!text.contains("SECRETHDR"), "{text}");
        }
    }
    std::fs::remove_dir_all(&dir).unwrap();
}

/// A flag only the other chain reads is refused by name, exit 2, before anything is sent: a
/// `--key-file` on a Solana node sent from generated payers instead, and a `--keypair` (even
/// a bad one) on an Ethereum node was never read, both exiting 0.
#[test]
fn a_flag_of_the_other_chain_is_refused_by_name_before_anything_is_sent() {
    let ethereum = ethereum_node(Duration::from_millis(100), TxPoolOptions::default());
    for flags in [&["--keypair", "id.json"][..], &["--commitment", "finalized"], &["--landing", "blocks"]] {
        let args = [&["--dev", "--rate", "10", "-n", "5"][..], flags].concat();
        let (code, stderr) = refused(&ethereum.url(), &args);
        assert_eq!(code, Some(2), "{flags:?}: {stderr}");
        assert!(stderr.starts_with(&format!("error: {}: for Solana nodes", flags[0])), "{stderr}");
    }
    nothing_was_sent(&ethereum.url());
    let solana = solana_node(Some(SolanaTxOptions::default()));
    for flags in
        [&["--key-file", "keys.txt"][..], &["--dev"], &["--to", "0x000000000000000000000000000000000000dEaD"]]
    {
        let args = [&["--rate", "10", "-n", "5"][..], flags].concat();
        let (code, stderr) = refused(&solana.url(), &args);
        assert_eq!(code, Some(2), "{flags:?}: {stderr}");
        assert!(stderr.starts_with(&format!("error: {}: for Ethereum nodes", flags[0])), "{stderr}");
    }
}

/// Solana's payers: more `--senders` than a key source gives on Ethereum (each an airdrop
/// before the first send: a million ran on silently), `--senders` beside `--keypair` (ignored)
/// and a zero `--blockhash-refresh` (the node asked without a pause) are refused by name, exit 2.
#[test]
fn solana_payer_counts_and_a_zero_blockhash_refresh_are_refused_by_name() {
    let solana = solana_node(Some(SolanaTxOptions::default()));
    let dir = std::env::temp_dir().join(format!("rpcbench-tx-payers-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let keypair = dir.join("id.json");
    let seed = [7u8; 32];
    let public = rpcbench::tx::solana::keys::SolanaKeypair::from_seed(&seed).pubkey();
    std::fs::write(&keypair, format!("{:?}", [seed, public].concat())).unwrap();
    let keypair = keypair.to_str().unwrap();
    let cases: [(&[&str], &str); 3] = [
        (&["--senders", "1000000"], "error: --senders 1000000: at most 100000 payers"),
        (&["--keypair", keypair, "--senders", "3"], "error: --senders: the payers are the --keypair files"),
        (&["--blockhash-refresh", "0s"], "error: --blockhash-refresh: must be longer than zero"),
    ];
    for (flags, said) in cases {
        let (code, stderr) = refused(&solana.url(), &[&["--rate", "10", "-n", "5"][..], flags].concat());
        assert_eq!(code, Some(2), "{flags:?}: {stderr}");
        assert!(stderr.starts_with(said), "{flags:?}: {stderr}");
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
