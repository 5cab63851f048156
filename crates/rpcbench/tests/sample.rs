//! Sampling the mock nodes: every pool is filled with values the node then answers for, the
//! pools file round-trips and is used instead of sampling, and an empty pool is a clear error
//! at the generator that draws from it.

use std::path::Path;
use std::time::Duration;

use rpcbench::client;
use rpcbench::client::Endpoint;
use rpcbench::mock::Dispatcher;
use rpcbench::mock::{Chain, MockOptions, MockServer};
use rpcbench::plan::prepare::{prepare, Access, PoolSource};
use rpcbench::plan::sample::{
    sample, Pools, SampleChain, SampleOptions, SampleProgress, ETHEREUM_POOLS, SOLANA_POOLS,
};
use rpcbench::scenario::ScenarioDraft;
use serde_json::{json, Value};

const TIMEOUT: Duration = Duration::from_secs(5);

fn call(url: &str, method: &str, params: Value) -> Result<Value, client::CallError> {
    client::call(url, method, Some(&params), TIMEOUT)
}

/// Up to `n` values spread over the pool.
fn some(values: &[Value], n: usize) -> impl Iterator<Item = &Value> {
    values.iter().step_by((values.len() / n).max(1))
}

#[test]
fn sampling_the_mock_solana_node_fills_every_pool_with_values_it_serves() {
    let node = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let url = node.url();
    let pools = sample(&endpoint(&url), &SampleOptions::default()).unwrap();
    assert_eq!(pools.chain, SampleChain::Solana, "detected");
    for name in SOLANA_POOLS {
        assert!(!pools.get(name).unwrap().is_empty(), "pool {name} is empty: {}", pools.summary());
    }
    let slots = pools.get("slots").unwrap();
    // About 5% of slots are skipped by the mock's leaders; none of them is in the pool.
    assert!(slots.len() > 150 && slots.len() < 200, "{}", slots.len());
    let config = json!({"encoding": "json", "transactionDetails": "none", "rewards": false});
    for slot in slots {
        call(&url, "getBlock", json!([slot, config])).unwrap_or_else(|err| panic!("getBlock {slot}: {err}"));
    }
    for signature in some(pools.get("signatures").unwrap(), 50) {
        let tx = call(&url, "getTransaction", json!([signature])).unwrap();
        assert!(tx.is_object(), "getTransaction {signature}: {tx}");
    }
    for account in some(pools.get("accounts").unwrap(), 50) {
        call(&url, "getBalance", json!([account])).unwrap();
        call(&url, "getSignaturesForAddress", json!([account, {"limit": 5}])).unwrap();
    }
}

#[test]
fn sampling_counts_its_blocks_window_and_calls_for_a_progress_line() {
    for chain in [Chain::Solana, Chain::Ethereum] {
        let node = MockServer::start(MockOptions::new(chain)).unwrap();
        let progress = SampleProgress::new();
        let options =
            SampleOptions { window: 30, progress: Some(progress.clone()), ..SampleOptions::default() };
        let pools = sample(&endpoint(&node.url()), &options).unwrap();
        let seen = progress.snapshot();
        assert!(seen.window > 0 && seen.window <= 30, "{chain:?}: {seen:?}");
        assert_eq!(seen.blocks, seen.window, "{chain:?}: every block of the window looked at: {seen:?}");
        // A call per block at least, plus the head (and detection).
        assert!(seen.calls > seen.blocks, "{chain:?}: {seen:?}");
        assert!(pools.head >= pools.oldest);
    }
}

#[test]
fn sampling_behind_the_head_leaves_out_the_newest_blocks_and_says_how_many() {
    for (chain, margin) in [(Chain::Ethereum, 5), (Chain::Solana, 32)] {
        let node = MockServer::start(MockOptions::new(chain)).unwrap();
        let url = node.url();
        let options = SampleOptions { window: 20, behind_head: true, ..SampleOptions::default() };
        let pools = sample(&endpoint(&url), &options).unwrap();
        assert_eq!(pools.head_margin, margin, "{chain:?}");
        // The node's head now is at least the head sampling saw, which is `margin` above what
        // was sampled: nothing newer than it is in the pools.
        let head_now = match chain {
            Chain::Ethereum => {
                let head = call(&url, "eth_blockNumber", json!([])).unwrap();
                u64::from_str_radix(head.as_str().unwrap().trim_start_matches("0x"), 16).unwrap()
            }
            _ => call(&url, "getSlot", json!([])).unwrap().as_u64().unwrap(),
        };
        assert!(pools.head + margin <= head_now, "{chain:?}: sampled to {} of {head_now}", pools.head);
        let numbers = pools.get(if chain == Chain::Ethereum { "block_numbers" } else { "slots" }).unwrap();
        assert!(!numbers.is_empty(), "{chain:?}");
        assert!(numbers.iter().all(|n| n.as_u64().unwrap() <= pools.head), "{chain:?}");
        // Without the margin, sampling goes up to the head, and the file says nothing of it.
        let pools =
            sample(&endpoint(&url), &SampleOptions { window: 20, ..SampleOptions::default() }).unwrap();
        assert_eq!(pools.head_margin, 0);
        assert!(!serde_json::to_string(&pools).unwrap().contains("head_margin"));
    }
}

#[test]
fn sampling_the_mock_ethereum_node_fills_every_pool_with_values_it_serves() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.chain_id = 31337;
    let node = MockServer::start(options).unwrap();
    let url = node.url();
    let pools = sample(&endpoint(&url), &SampleOptions::default()).unwrap();
    assert_eq!(pools.chain, SampleChain::Ethereum, "detected");
    assert_eq!(pools.chain_id, Some(31337));
    for name in ETHEREUM_POOLS {
        assert!(!pools.get(name).unwrap().is_empty(), "pool {name} is empty: {}", pools.summary());
    }
    assert_eq!(pools.get("blocks").unwrap().len(), 200);
    for block in some(pools.get("blocks").unwrap(), 40) {
        let found = call(&url, "eth_getBlockByNumber", json!([block, false])).unwrap();
        assert!(found.is_object(), "{block}");
    }
    for number in some(pools.get("block_numbers").unwrap(), 10) {
        assert!(number.is_u64(), "{number}");
    }
    for hash in some(pools.get("block_hashes").unwrap(), 40) {
        assert!(call(&url, "eth_getBlockByHash", json!([hash, false])).unwrap().is_object(), "{hash}");
    }
    for hash in some(pools.get("tx_hashes").unwrap(), 100) {
        assert!(call(&url, "eth_getTransactionByHash", json!([hash])).unwrap().is_object(), "{hash}");
    }
    for address in some(pools.get("addresses").unwrap(), 40) {
        call(&url, "eth_getBalance", json!([address, "latest"])).unwrap();
    }
    for contract in pools.get("contracts").unwrap() {
        let code = call(&url, "eth_getCode", json!([contract, "latest"])).unwrap();
        assert_ne!(code, json!("0x"), "{contract} has code");
    }
}

const POOLED: &str = r#"
[target]
url = "http://127.0.0.1:1/"

[generators]
tx = { pool = "tx_hashes" }

[[call]]
method = "eth_getTransactionByHash"
params = ["{tx}"]
"#;

#[test]
fn the_pools_file_round_trips_and_replaces_sampling() {
    let dir = std::env::temp_dir().join(format!("rpcbench-pools-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("pools.json");
    std::fs::remove_file(&file).ok();
    let draft = ScenarioDraft::parse(POOLED, &dir.join("s.toml")).unwrap();
    assert_eq!(draft.pools_needed(), ["tx_hashes"]);

    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let first = prepare(&draft, Some(&node.url()), Some(&file), &Access::default()).unwrap();
    assert_eq!(first.source, PoolSource::Sampled(Some(file.clone())));
    let saved = Pools::load(&file).unwrap();
    assert_eq!(Some(&saved), first.pools.as_ref());
    node.stop();

    // The node is gone: the file is used, and the run draws from the same values.
    let second = prepare(&draft, Some("http://127.0.0.1:1/"), Some(&file), &Access::default()).unwrap();
    assert_eq!(second.source, PoolSource::Cache(file.clone()));
    assert_eq!(second.pools, first.pools);
    assert_eq!(second.scenario.config.workload, first.scenario.config.workload);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_cache_named_in_the_scenario_is_relative_to_it() {
    let text = POOLED.replace(
        "[generators]",
        "[sample]\nchain = \"ethereum\"\ncache = \"pools/eth.json\"\n\n[generators]",
    );
    let draft = ScenarioDraft::parse(&text, Path::new("/some/dir/s.toml")).unwrap();
    assert_eq!(draft.cache().unwrap(), Path::new("/some/dir/pools/eth.json"));
    assert_eq!(draft.sample_options().unwrap().chain, Some(SampleChain::Ethereum));
}

#[test]
fn an_empty_pool_is_an_error_at_the_generator() {
    let draft = ScenarioDraft::parse(POOLED, Path::new("s.toml")).unwrap();
    let mut pools = Pools {
        chain: SampleChain::Ethereum,
        chain_id: Some(31337),
        head: 0,
        oldest: 0,
        head_margin: 0,
        pools: ETHEREUM_POOLS.iter().map(|name| (name.to_string(), Vec::new())).collect(),
    };
    pools.pools.insert("blocks".into(), vec![json!("0x0")]);
    let error = draft.resolve(None, Some(&pools)).unwrap_err().to_string();
    assert!(error.starts_with("s.toml:6:6:"), "{error}");
    assert!(error.contains("pool 'tx_hashes', which is empty"), "{error}");
}

#[test]
fn a_call_drawing_on_an_empty_pool_is_left_out_and_the_others_run() {
    // A young dev chain (anvil at block 0) has blocks but no transactions: the calls that need
    // a transaction hash are left out, with a note, and the others run.
    let text = POOLED.replace(
        "[[call]]",
        "block = { pool = \"block_hashes\" }\n\n[[call]]\nmethod = \"eth_getBlockByHash\"\nparams = [\"{block}\", false]\n\n[[call]]",
    );
    let draft = ScenarioDraft::parse(&text, Path::new("s.toml")).unwrap();
    let mut pools = Pools {
        chain: SampleChain::Ethereum,
        chain_id: Some(31337),
        head: 0,
        oldest: 0,
        head_margin: 0,
        pools: ETHEREUM_POOLS.iter().map(|name| (name.to_string(), Vec::new())).collect(),
    };
    pools.pools.insert("block_hashes".into(), vec![json!("0xabc")]);
    let scenario = draft.resolve(None, Some(&pools)).unwrap();
    assert_eq!(scenario.config.workload.sample_request(0)["method"], "eth_getBlockByHash");
    assert_eq!(scenario.left_out.len(), 1, "{:?}", scenario.left_out);
    let note = scenario.left_out[0].to_string();
    assert_eq!(
        note,
        "call 'eth_getTransactionByHash' left out: its generator 'tx' draws from pool 'tx_hashes', which is empty: the node had none in ethereum blocks 0..=0"
    );
    // With its pool filled, nothing is left out.
    pools.pools.insert("tx_hashes".into(), vec![json!("0x01")]);
    assert!(draft.resolve(None, Some(&pools)).unwrap().left_out.is_empty());
}

#[test]
fn pool_mistakes_are_reported_where_they_are() {
    let cases = [
        (POOLED.replace("tx_hashes", "txs"), "s.toml:6:6:", "no pool named 'txs'"),
        (
            POOLED.replace("tx_hashes\" }", "tx_hashes\", range = [1, 2] }"),
            "s.toml:6:6:",
            "more than one kind",
        ),
        (format!("[sample]\nchain = \"bitcoin\"\n{POOLED}"), "s.toml:2:9:", "unknown chain 'bitcoin'"),
        (POOLED.replace("url = \"http://127.0.0.1:1/\"", ""), "s.toml:", "no URL"),
    ];
    for (text, location, message) in cases {
        let error = ScenarioDraft::parse(&text, Path::new("s.toml"))
            .and_then(|draft| draft.resolve(None, None))
            .unwrap_err()
            .to_string();
        assert!(error.starts_with(location) && error.contains(message), "{error}\n---\n{text}");
    }
}

#[test]
fn a_node_that_answers_nothing_is_a_sampling_error() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let options = SampleOptions { timeout: Duration::from_secs(1), ..SampleOptions::default() };
    let error = sample(&endpoint(&format!("http://127.0.0.1:{port}/")), &options).unwrap_err().to_string();
    assert!(error.contains("neither eth_chainId nor getSlot"), "{error}");
}

/// A tiny Ethereum node on 127.0.0.1 that keeps only blocks 90..=100 (a pruned node): older
/// blocks are null. One request per connection.
fn pruned_node() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let mut length = 0;
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).ok();
            let request: Value = serde_json::from_slice(&body).unwrap_or(Value::Null);
            let result = match request["method"].as_str().unwrap_or("") {
                "eth_chainId" => json!("0x7a69"),
                "eth_blockNumber" => json!("0x64"),
                "eth_getBlockByNumber" => {
                    let number = u64::from_str_radix(
                        request["params"][0].as_str().unwrap_or("0x0").trim_start_matches("0x"),
                        16,
                    )
                    .unwrap_or(0);
                    if number >= 90 {
                        json!({"number": format!("{number:#x}"), "hash": format!("0x{number:064x}"), "transactions": []})
                    } else {
                        Value::Null
                    }
                }
                _ => json!([]),
            };
            let answer = json!({"jsonrpc": "2.0", "id": request["id"], "result": result}).to_string();
            let mut stream = reader.into_inner();
            let head = format!("HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n", answer.len());
            stream.write_all(head.as_bytes()).ok();
            stream.write_all(answer.as_bytes()).ok();
        }
    });
    url
}

#[test]
fn a_pruned_node_shrinks_the_window_and_a_chain_without_transactions_gives_empty_pools() {
    let pools = sample(&endpoint(&pruned_node()), &SampleOptions::default()).unwrap();
    assert_eq!(pools.chain_id, Some(31337));
    assert_eq!((pools.oldest, pools.head), (90, 100));
    assert_eq!(pools.get("block_numbers").unwrap(), (90..=100).rev().map(|n| json!(n)).collect::<Vec<_>>());
    assert!(pools.get("tx_hashes").unwrap().is_empty());
    assert!(pools.get("addresses").unwrap().is_empty());
    let error =
        ScenarioDraft::parse(POOLED, Path::new("s.toml")).unwrap().resolve(None, Some(&pools)).unwrap_err();
    assert!(error.to_string().contains("blocks 90..=100"), "{error}");
}

fn endpoint(url: &str) -> Endpoint {
    Endpoint::parse(url, TIMEOUT).unwrap()
}

/// A mock Solana node behind a key: without the header `x-api-key: k3y` every request gets
/// HTTP 401, as hosted providers answer. One request per connection.
fn node_behind_a_key() -> String {
    use std::io::{BufRead, BufReader, Read, Write};
    let dispatcher = Dispatcher::new(&MockOptions::new(Chain::Solana)).unwrap();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let (mut length, mut keyed) = (0, false);
            loop {
                let mut line = String::new();
                if reader.read_line(&mut line).unwrap_or(0) == 0 {
                    break;
                }
                let lower = line.to_ascii_lowercase();
                if let Some(value) = lower.strip_prefix("content-length:") {
                    length = value.trim().parse().unwrap_or(0);
                }
                keyed |= lower.trim_end() == "x-api-key: k3y";
                if line == "\r\n" {
                    break;
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).ok();
            let (status, answer) = match keyed {
                true => ("200 OK", dispatcher.answer(&body).unwrap_or_default()),
                false => ("401 Unauthorized", b"{}".to_vec()),
            };
            let mut stream = reader.into_inner();
            let head = format!(
                "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                answer.len()
            );
            stream.write_all(head.as_bytes()).ok();
            stream.write_all(&answer).ok();
        }
    });
    url
}

#[test]
fn sampling_sends_the_scenarios_headers_and_those_of_the_command_line() {
    let url = node_behind_a_key();
    let scenario = |headers: &str| {
        format!(
            "[target]\nurl = \"{url}\"\n{headers}[sample]\nchain = \"solana\"\nwindow = 20\n[generators]\nslot = {{ pool = \"slots\" }}\n[[call]]\nmethod = \"getBlock\"\nparams = [\"{{slot}}\"]\n"
        )
    };
    let keyed =
        ScenarioDraft::parse(&scenario("headers = { \"x-api-key\" = \"k3y\" }\n"), Path::new("s.toml"))
            .unwrap();
    let prepared = prepare(&keyed, None, None, &Access::default()).unwrap();
    assert!(!prepared.pools.unwrap().get("slots").unwrap().is_empty());

    let bare = ScenarioDraft::parse(&scenario(""), Path::new("s.toml")).unwrap();
    let error = prepare(&bare, None, None, &Access::default()).unwrap_err().to_string();
    assert!(error.contains("HTTP status 401"), "{error}");
    let access = Access { headers: vec![("x-api-key".into(), "k3y".into())], ..Access::default() };
    let prepared = prepare(&bare, None, None, &access).unwrap();
    assert!(!prepared.pools.unwrap().get("slots").unwrap().is_empty());
}

#[test]
fn sampling_a_rate_limited_node_backs_off_instead_of_failing() {
    let mut options = MockOptions::new(Chain::Solana);
    // Fewer calls per second than sampling makes back to back: some get 429 and are retried.
    options.faults.rate_limit = Some(40.0);
    let node = MockServer::start(options).unwrap();
    let options = SampleOptions { window: 30, ..SampleOptions::default() };
    let pools = sample(&endpoint(&node.url()), &options).unwrap();
    assert!(!pools.get("slots").unwrap().is_empty());
    assert!(!pools.get("signatures").unwrap().is_empty());
}

/// A front of `upstream` that serves WebSocket only: a plain HTTP request (a POST) gets 405,
/// an upgrade request is relayed to the upstream byte for byte, both ways.
fn websocket_only(upstream: std::net::SocketAddr) -> String {
    use std::io::{Read, Write};
    use std::net::{TcpListener, TcpStream};
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for client in listener.incoming() {
            let Ok(mut client) = client else { return };
            std::thread::spawn(move || {
                let mut head = Vec::new();
                let mut byte = [0u8; 1];
                while !head.ends_with(b"\r\n\r\n") && head.len() < 64 * 1024 {
                    if client.read(&mut byte).unwrap_or(0) == 0 {
                        return;
                    }
                    head.push(byte[0]);
                }
                if !String::from_utf8_lossy(&head).to_ascii_lowercase().contains("upgrade: websocket") {
                    let _ = client.write_all(
                        b"HTTP/1.1 405 Method Not Allowed\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    );
                    return;
                }
                let Ok(mut server) = TcpStream::connect(upstream) else { return };
                if server.write_all(&head).is_err() {
                    return;
                }
                let (mut client_in, mut server_out) =
                    (client.try_clone().unwrap(), server.try_clone().unwrap());
                std::thread::spawn(move || {
                    let _ = std::io::copy(&mut client_in, &mut server_out);
                    let _ = server_out.shutdown(std::net::Shutdown::Write);
                });
                let _ = std::io::copy(&mut server, &mut client);
            });
        }
    });
    format!("ws://{addr}/")
}

#[test]
fn sampling_and_one_off_calls_of_a_websocket_target_speak_websocket() {
    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let ws = websocket_only(node.local_addr());
    // The front refuses plain HTTP: a POST to it is not an answer.
    let http = ws.replacen("ws://", "http://", 1);
    assert!(matches!(call(&http, "eth_blockNumber", json!([])), Err(client::CallError::Status(405))));
    // Over WebSocket, one-off calls and sampling work.
    let head = call(&ws, "eth_blockNumber", json!([])).unwrap();
    assert!(head.as_str().unwrap().starts_with("0x"), "{head}");
    let pools = sample(&endpoint(&ws), &SampleOptions::default()).unwrap();
    assert_eq!(pools.chain, SampleChain::Ethereum, "detected");
    for name in ETHEREUM_POOLS {
        assert!(!pools.get(name).unwrap().is_empty(), "pool {name} is empty: {}", pools.summary());
    }
}
