//! Replays of recorded traffic against mock nodes: a built-in suite's requests recorded with
//! the mock's real answers replay with the same per-method counts, at the recorded pace or
//! faster, with response checks; vegeta targets and files of bodies replay too; every file
//! request is sent exactly once, however the workers share the tickets.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use rand::rngs::SmallRng;
use rand::SeedableRng;
use rpcbench::engine::config::{Load, RunConfig, Target};
use rpcbench::engine::Run;
use rpcbench::mock::{Chain, MockOptions, MockServer};
use rpcbench::outcome::InvalidKind;
use rpcbench::plan::prepare::{prepare, Access};
use rpcbench::record::RunRecord;
use rpcbench::replay::Replay;
use rpcbench::traffic::{response_digest, BadLines, TrafficEntry, TrafficFile, TrafficHeader, TrafficWriter};

use crate::util::{json_200, TestServer};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-replay-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// One POST of `body` to `addr` on its own connection; the response body.
fn post(addr: std::net::SocketAddr, body: &[u8]) -> Vec<u8> {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let head = format!(
        "POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\
         Connection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes()).unwrap();
    stream.write_all(body).unwrap();
    let mut response = Vec::new();
    stream.read_to_end(&mut response).unwrap();
    let split = response.windows(4).position(|w| w == b"\r\n\r\n").expect("a complete response") + 4;
    response.split_off(split)
}

/// An Ethereum mock whose ledger stands still for the test (a block an hour), so that the same
/// request gets the same answer.
fn still_ethereum_node() -> MockServer {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_secs(3600);
    MockServer::start(options).unwrap()
}

/// Records `count` requests of the built-in suite `suite` as a traffic file: each body drawn
/// from the suite's mix (params from pools sampled from `node`), sent to `node`, its real
/// answer's digest kept; `gap_us` apart. Returns the file and the count per method.
fn record_suite(
    node: &MockServer,
    suite: &str,
    count: usize,
    gap_us: u64,
    path: &Path,
) -> BTreeMap<String, u64> {
    let draft = rpcbench::plan::suites::find(suite).unwrap().draft().unwrap();
    let access = Access::default();
    let prepared = prepare(&draft, Some(&node.url()), None, &access).unwrap();
    let (_, config) = prepared.scenario.configs().swap_remove(0);
    let workload = config.workload;
    let mut rng = SmallRng::seed_from_u64(9);
    let mut writer = TrafficWriter::create(path, &TrafficHeader::new(&node.url(), &[])).unwrap();
    let mut counts = BTreeMap::new();
    for index in 0..count {
        let call = workload.pick(&mut rng, index as u64);
        let mut body = Vec::new();
        workload.write_body(call, index as u64 + 1, &mut rng, &mut body);
        let answer = post(node.local_addr(), &body);
        let mut entry = TrafficEntry::for_request(1_000 + index as u64 * gap_us, &body);
        entry.status = 200;
        entry.response_bytes = answer.len() as u64;
        entry.response_hash = response_digest(&answer, &[]);
        writer.append(&entry).unwrap();
        *counts.entry(workload.calls()[call].method().to_string()).or_insert(0) += 1;
    }
    counts
}

fn replay_config(node: &MockServer, replay: Replay) -> RunConfig {
    let mut config = RunConfig::for_replay(replay, Target::parse(&node.url()).unwrap());
    config.threads = 2;
    config.timeout = Duration::from_secs(10);
    // Bounded in time too, whatever happens.
    config.length.duration = Some(Duration::from_secs(60));
    config.bound_to_one_pass();
    config
}

fn per_method(record: &RunRecord) -> BTreeMap<String, u64> {
    record
        .calls
        .iter()
        .map(|call| (call.method.clone(), call.totals.counts.total()))
        .filter(|(_, count)| *count > 0)
        .collect()
}

fn changed(record: &RunRecord) -> BTreeMap<String, u64> {
    record
        .calls
        .iter()
        .filter_map(|call| {
            let count = call.totals.counts.invalid.get(&InvalidKind::ChangedResponse).copied()?;
            Some((call.method.clone(), count))
        })
        .collect()
}

#[test]
fn a_recorded_suite_replays_with_the_same_per_method_counts_at_1x_and_2x() {
    let node = still_ethereum_node();
    let dir = temp_dir("suite");
    let path = dir.join("dapp.jsonl");
    let recorded = record_suite(&node, "ethereum-dapp", 60, 10_000, &path);
    let file = TrafficFile::read(&path, BadLines::Refuse).unwrap();
    let span = Duration::from_micros(59 * 10_000);

    for speed in [1.0, 2.0] {
        let mut replay = Replay::from_traffic(&file, &path).unwrap();
        replay.check_responses = true;
        replay.pace(Some(speed), None).unwrap();
        // The schedule: the recorded offsets from the first, divided by the speed, exactly.
        let schedule = replay.schedule.clone().unwrap();
        assert_eq!(schedule.offset_of(0), Some(Duration::ZERO));
        assert_eq!(schedule.offset_of(59), Some(span.div_f64(speed)));
        assert_eq!(schedule.offset_of(60), None, "one pass without --loop");
        let config = replay_config(&node, replay);
        assert!(matches!(config.load, Load::Open { .. }));
        let record = Run::new(config).unwrap().execute().unwrap();
        assert_eq!(per_method(&record), recorded, "speed {speed}");
        assert!(changed(&record).is_empty(), "the same node answers the same: {:?}", changed(&record));
        assert_eq!(record.totals.counts.ok, 60, "{:?}", record.totals.counts);
        // The last request is not due before the scaled span (the pacing timer may release a
        // request a little early, never by a tenth of it).
        assert!(record.elapsed >= span.div_f64(speed).mul_f64(0.9), "speed {speed}: {:?}", record.elapsed);
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn changed_answers_are_counted_per_method_exactly() {
    let node = still_ethereum_node();
    let dir = temp_dir("changed");
    let path = dir.join("t.jsonl");
    let bodies = ["eth_chainId", "net_version", "eth_chainId", "eth_gasPrice", "eth_chainId", "net_version"];
    let mut writer = TrafficWriter::create(&path, &TrafficHeader::new(&node.url(), &[])).unwrap();
    for (index, method) in bodies.iter().enumerate() {
        let body = format!(r#"{{"jsonrpc":"2.0","id":"req-{index}","method":"{method}","params":[]}}"#);
        let answer = post(node.local_addr(), body.as_bytes());
        let mut entry = TrafficEntry::for_request(index as u64 * 1000, body.as_bytes());
        entry.status = 200;
        // Entries 1 and 2 (a net_version, an eth_chainId) are edited: another answer was recorded.
        entry.response_hash = match index {
            1 | 2 => response_digest(br#"{"jsonrpc":"2.0","id":1,"result":"0x0"}"#, &[]),
            _ => response_digest(&answer, &[]),
        };
        writer.append(&entry).unwrap();
    }
    drop(writer);
    let file = TrafficFile::read(&path, BadLines::Refuse).unwrap();
    let run = |check: bool| {
        let mut replay = Replay::from_traffic(&file, &path).unwrap();
        replay.check_responses = check;
        replay.pace(None, Some(rpcbench::field::Field::Connections)).unwrap();
        let mut config = replay_config(&node, replay);
        config.load = Load::Closed { connections: 2 };
        Run::new(config).unwrap().execute().unwrap()
    };
    let checked = run(true);
    let expected: BTreeMap<String, u64> =
        [("eth_chainId".to_string(), 1), ("net_version".to_string(), 1)].into();
    assert_eq!(changed(&checked), expected);
    assert_eq!(checked.totals.counts.ok, 4);
    // Without the check, the same answers are all fine (and the body is not digested).
    let unchecked = run(false);
    assert!(changed(&unchecked).is_empty());
    assert_eq!(unchecked.totals.counts.ok, 6);

    // Another node (another chain id) answers eth_chainId and net_version differently, and
    // eth_gasPrice alike.
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = Duration::from_secs(3600);
    options.chain_id = 5;
    let other = MockServer::start(options).unwrap();
    let mut replay = Replay::from_traffic(&file, &path).unwrap();
    replay.check_responses = true;
    replay.pace(None, Some(rpcbench::field::Field::Connections)).unwrap();
    let mut config = replay_config(&other, replay);
    config.load = Load::Closed { connections: 1 };
    let record = Run::new(config).unwrap().execute().unwrap();
    // Every eth_chainId and net_version (the edited ones too), no eth_gasPrice.
    let expected: BTreeMap<String, u64> =
        [("eth_chainId".to_string(), 3), ("net_version".to_string(), 2)].into();
    assert_eq!(changed(&record), expected);
    assert_eq!(record.totals.counts.ok, 1);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn every_request_of_the_file_is_sent_once_with_its_own_ticket_across_workers() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = TestServer::start(move |request| {
        log.lock().unwrap().push(request.id);
        json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id))
    });
    let text: String =
        (0..97).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m{}\"}}\n", i % 3)).collect();
    let replay = Replay::from_bodies(&text, Path::new("bodies.jsonl")).unwrap();
    let url = format!("http://{}/", server.addr);
    for (threads, connections) in [(1, 1), (3, 4)] {
        seen.lock().unwrap().clear();
        let mut config = RunConfig::for_replay(replay.clone(), Target::parse(&url).unwrap());
        config.threads = threads;
        config.load = Load::Closed { connections };
        config.length.duration = Some(Duration::from_secs(60));
        config.bound_to_one_pass();
        let record = Run::new(config).unwrap().execute().unwrap();
        assert_eq!(record.totals.counts.ok, 97);
        let mut ids = seen.lock().unwrap().clone();
        if threads == 1 {
            assert_eq!(ids, (0..97).collect::<Vec<u64>>(), "one connection: file order");
        }
        ids.sort_unstable();
        assert_eq!(ids, (0..97).collect::<Vec<u64>>(), "{threads} workers: each request once");
        let counts = per_method(&record);
        assert_eq!(counts.values().copied().collect::<Vec<_>>(), [33, 32, 32], "{counts:?}");
    }
}

#[test]
fn vegeta_targets_and_body_files_replay_with_their_counts() {
    let node = still_ethereum_node();
    let dir = temp_dir("importers");
    std::fs::write(dir.join("chain.json"), r#"{"jsonrpc":"2.0","id":1,"method":"eth_chainId"}"#).unwrap();
    std::fs::write(dir.join("block.json"), r#"{"jsonrpc":"2.0","id":2,"method":"eth_blockNumber"}"#).unwrap();
    let url = node.url();
    let targets_text = format!(
        "POST {url}\nContent-Type: application/json\n@chain.json\n\nPOST {url}\n@block.json\n\n\
         POST {url}\n@chain.json\n"
    );
    let targets_path = dir.join("targets.txt");
    let targets = rpcbench::plan::targets::parse(&targets_text, &targets_path, |path| {
        std::fs::read(path).map_err(|err| err.to_string())
    })
    .unwrap();
    let vegeta = Replay::from_targets(&targets, &targets_path).unwrap();
    let bodies = Replay::from_bodies(
        "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\"}\n\n\
         [{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"eth_chainId\"},{\"jsonrpc\":\"2.0\",\"id\":2,\"method\":\"eth_chainId\"}]\n\
         {\"jsonrpc\":\"2.0\",\"id\":3,\"method\":\"net_version\"}\n",
        Path::new("bodies.jsonl"),
    )
    .unwrap();
    let cases = [
        (vegeta, vec![("eth_blockNumber", 1), ("eth_chainId", 2)]),
        (bodies, vec![("batch(eth_chainId x2)", 1), ("eth_chainId", 1), ("net_version", 1)]),
    ];
    for (mut replay, expected) in cases {
        assert!(!replay.has_offsets());
        assert!(replay.pace(Some(1.0), None).is_err(), "no offsets to scale");
        replay.pace(None, Some(rpcbench::field::Field::Rate)).unwrap();
        let mut config = replay_config(&node, replay);
        config.load = Load::Open { rate: 200.0, arrivals: Default::default(), max_connections: 4 };
        let record = Run::new(config).unwrap().execute().unwrap();
        let expected: BTreeMap<String, u64> =
            expected.into_iter().map(|(name, n)| (name.to_string(), n)).collect();
        assert_eq!(per_method(&record), expected);
        assert_eq!(record.totals.counts.ok, expected.values().sum::<u64>());
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_looped_replay_starts_again_at_the_end_until_its_count() {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let log = seen.clone();
    let server = TestServer::start(move |request| {
        log.lock().unwrap().push(request.id);
        json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id))
    });
    let text: String =
        (0..3).map(|i| format!("{{\"jsonrpc\":\"2.0\",\"id\":{i},\"method\":\"m\"}}\n")).collect();
    let mut replay = Replay::from_bodies(&text, Path::new("bodies.jsonl")).unwrap();
    replay.set_looped(true);
    let mut config =
        RunConfig::for_replay(replay, Target::parse(&format!("http://{}/", server.addr)).unwrap());
    config.threads = 1;
    config.load = Load::Closed { connections: 1 };
    config.length.duration = Some(Duration::from_secs(60));
    config.length.requests = Some(8);
    config.bound_to_one_pass();
    assert_eq!(config.length.requests, Some(8), "a looped replay is bounded by its count, not the file");
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 8);
    assert_eq!(*seen.lock().unwrap(), [0, 1, 2, 0, 1, 2, 0, 1]);
}
