//! `rpcbench proxy` and `rpcbench record` through the binary: the built-in suites classify
//! alike through the proxy and directly, a recorder killed with SIGKILL keeps every answered
//! request, secrets stay out of record files and output, SIGTERM prints the overhead table,
//! and bad flags exit 2 naming the flag.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::process::{Child, ChildStderr, Command, Output, Stdio};
use std::time::Duration;

use rpcbench::mock::{Chain, MockOptions, MockServer};
use rpcbench::proxy::{Proxy, ProxyOptions};
use rpcbench::traffic::{BadLines, TrafficFile};
use rpcbench::Target;

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Per method: (name, requests, ok, errors) of a `run -o json` report.
fn method_counts(report: &serde_json::Value) -> Vec<(String, u64, u64, u64)> {
    let mut counts: Vec<_> = report["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            (
                m["name"].as_str().unwrap().to_string(),
                m["requests"].as_u64().unwrap(),
                m["ok"].as_u64().unwrap(),
                m["errors"].as_u64().unwrap(),
            )
        })
        .collect();
    counts.sort();
    counts
}

fn run_suite(suite: &str, url: &str) -> serde_json::Value {
    let output = rpcbench(&[
        "run", url, "--suite", suite, "-c", "1", "-n", "120", "--seed", "5", "--warmup", "0", "-f", "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{suite}: {}", stderr(&output));
    serde_json::from_slice(&output.stdout).unwrap()
}

#[test]
fn every_suite_classifies_alike_through_the_proxy_and_directly() {
    let solana = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let ethereum = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    for (suite, node) in [
        ("solana-seed", &solana),
        ("solana-rpc", &solana),
        ("ethereum-relay", &ethereum),
        ("ethereum-dapp", &ethereum),
    ] {
        let proxy = Proxy::start(ProxyOptions::new(
            "127.0.0.1:0".parse().unwrap(),
            Target::parse(&node.url()).unwrap(),
        ))
        .unwrap();
        let direct = run_suite(suite, &node.url());
        let proxied = run_suite(suite, &proxy.url());
        // The mix draws which call each request makes, so the split between methods varies
        // from run to run; what must not change is how each call's answers are classified.
        let classes = |report: &serde_json::Value| {
            method_counts(report)
                .into_iter()
                .map(|(name, requests, ok, errors)| (name, requests == ok, errors))
                .collect::<Vec<_>>()
        };
        assert_eq!(classes(&direct), classes(&proxied), "{suite}");
        let errors_only = |report: &serde_json::Value| {
            let mut outcomes = report["outcomes"].clone();
            outcomes.as_object_mut().unwrap().remove("ok");
            outcomes
        };
        assert_eq!(errors_only(&direct), errors_only(&proxied), "{suite}");
        assert_eq!(direct["outcomes"]["ok"], 120, "{suite}: {}", direct["outcomes"]);
        assert_eq!(proxied["outcomes"]["ok"], 120, "{suite}: {}", proxied["outcomes"]);
        let stats = proxy.stop();
        assert!(stats.requests >= 120, "{suite}: {} relayed", stats.requests);
        assert!(stats.upstream_failures.is_empty(), "{suite}");
    }
}

/// Starts the binary and reads its stderr up to the line naming the listen address. The
/// caller kills and waits for the child.
#[allow(clippy::zombie_processes)]
fn spawn_proxy(args: &[&str]) -> (Child, String, BufReader<ChildStderr>) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut reader = BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).unwrap() == 0 {
            let status = child.wait().unwrap();
            panic!("the proxy exited ({status}): {seen}");
        }
        seen.push_str(&line);
        if let Some(rest) = line.split("listening on http://").nth(1) {
            let addr = rest.split('/').next().unwrap().to_string();
            return (child, addr, reader);
        }
    }
}

/// Sends `n` requests on one connection with an Authorization header and reads every answer.
fn send_requests(addr: &str, n: usize) {
    let mut stream = TcpStream::connect(addr).unwrap();
    stream.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    for id in 0..n {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#);
        let head = format!(
            "POST / HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer S3cretBearerToken\r\nContent-Length: {}\r\n\r\n",
            body.len()
        );
        stream.write_all(head.as_bytes()).unwrap();
        stream.write_all(body.as_bytes()).unwrap();
        let mut length = 0;
        loop {
            let mut line = String::new();
            reader.read_line(&mut line).unwrap();
            if line == "\r\n" {
                break;
            }
            if let Some(value) = line.to_ascii_lowercase().strip_prefix("content-length:") {
                length = value.trim().parse().unwrap();
            }
        }
        let mut answer = vec![0u8; length];
        reader.read_exact(&mut answer).unwrap();
        assert!(String::from_utf8_lossy(&answer).contains(&format!("\"id\":{id}")));
    }
}

#[test]
fn a_recorder_killed_with_sigkill_keeps_every_answered_request_and_no_secret() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let dir = std::env::temp_dir().join(format!("rpcbench-record-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("traffic.jsonl");
    let upstream = format!("{}?api-key=SECRETKEY0123456789", node.url());
    let (mut child, addr, mut errors) = spawn_proxy(&[
        "record",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &upstream,
        "-o",
        file.to_str().unwrap(),
    ]);
    send_requests(&addr, 37);
    child.kill().unwrap(); // SIGKILL
    child.wait().unwrap();
    let traffic = TrafficFile::read(&file, BadLines::Refuse).unwrap();
    assert_eq!(traffic.entries.len(), 37);
    assert!(traffic.entries.iter().all(|entry| entry.status == 200 && entry.methods == ["getSlot"]));
    let text = std::fs::read_to_string(&file).unwrap();
    let mut output = String::new();
    errors.read_to_string(&mut output).unwrap();
    child.stdout.take().unwrap().read_to_string(&mut output).unwrap();
    for secret in ["SECRETKEY0123456789", "S3cretBearerToken"] {
        assert!(!text.contains(secret), "{secret} in the record file: {text}");
        assert!(!output.contains(secret), "{secret} in the output: {output}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn sigterm_prints_the_overhead_table() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let (child, addr, errors) =
        spawn_proxy(&["proxy", "--listen", "127.0.0.1:0", "--upstream", &node.url(), "-f", "json"]);
    send_requests(&addr, 5);
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    // Kept open until the proxy has exited: it says it is stopping on stderr.
    let output = child.wait_with_output().unwrap();
    drop(errors);
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["methods"]["getSlot"]["overhead"]["count"], 5, "{report}");
    assert_eq!(report["relayed"], 5);
}

#[test]
fn bad_proxy_flags_exit_2_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let in_use = taken.local_addr().unwrap().to_string();
    for (args, flag) in [
        (vec!["--listen", "127.0.0.1:0", "--upstream", "not a url"], "--upstream"),
        (vec!["--listen", "127.0.0.1:0", "--upstream", "ftp://127.0.0.1/"], "--upstream"),
        (vec!["--listen", &in_use, "--upstream", "http://127.0.0.1:1/"], "--listen"),
        (vec!["--listen", "nowhere", "--upstream", "http://127.0.0.1:1/"], "--listen"),
        (
            vec!["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/", "--error-rate", "2"],
            "--error-rate",
        ),
        (
            vec!["--listen", "127.0.0.1:0", "--upstream", "http://127.0.0.1:1/", "--drop-rate", "-1"],
            "--drop-rate",
        ),
    ] {
        let mut all = vec!["proxy"];
        all.extend(args.iter().copied());
        let output = rpcbench(&all);
        assert_eq!(output.status.code(), Some(2), "{all:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(flag), "{all:?}: {}", stderr(&output));
    }
}

#[test]
fn run_via_proxy_prints_the_overhead_table_in_every_format() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let url = node.url();
    let base =
        ["run", url.as_str(), "-m", "getSlot", "-c", "2", "-n", "150", "--warmup", "0", "--via-proxy", "-q"];
    let text = rpcbench(&base);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    let text = String::from_utf8(text.stdout).unwrap();
    assert!(text.contains("Proxy overhead for"), "{text}");
    for percentile in ["p50", "p90", "p99", "p99.9", "max"] {
        assert!(
            text.lines().any(|line| line.starts_with("getSlot") && line.contains(&format!(" {percentile} "))),
            "{text}"
        );
    }
    let json = rpcbench(&[&base[..], &["-f", "json"]].concat());
    assert_eq!(json.status.code(), Some(0), "{}", stderr(&json));
    let table: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(table["direct_requests"], 150);
    assert_eq!(table["proxied_requests"], 150);
    let rows = table["rows"].as_array().unwrap();
    assert_eq!(rows.len(), 10, "all and getSlot, five percentiles each: {table}");
    for row in rows {
        let difference = row["proxied_us"].as_i64().unwrap() - row["direct_us"].as_i64().unwrap();
        assert_eq!(row["difference_us"].as_i64().unwrap(), difference);
        assert!(row["proxy_overhead_us"].as_f64().is_some(), "the proxy saw every method: {row}");
    }
    let markdown = rpcbench(&[&base[..], &["-f", "markdown"]].concat());
    assert_eq!(markdown.status.code(), Some(0), "{}", stderr(&markdown));
    let markdown = String::from_utf8(markdown.stdout).unwrap();
    assert!(
        markdown.contains("| method | percentile | direct | proxied | difference | proxy overhead |"),
        "{markdown}"
    );
    assert!(markdown.contains("| getSlot | p99.9 |"), "{markdown}");
}

#[test]
fn a_run_recorded_through_the_proxy_replays_with_the_same_per_method_counts() {
    // A mix run through `rpcbench record`, then the file replayed at 1x and 2x against the
    // node directly: the same calls, method by method, every answer as recorded.
    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let dir = std::env::temp_dir().join(format!("rpcbench-record-replay-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("traffic.jsonl");
    let (mut child, addr, _errors) = spawn_proxy(&[
        "record",
        "--listen",
        "127.0.0.1:0",
        "--upstream",
        &node.url(),
        "--ignore-field",
        "id",
        "-o",
        file.to_str().unwrap(),
    ]);
    let scenario = dir.join("mix.toml");
    std::fs::write(
        &scenario,
        "[load]\nconnections = 2\nrequests = 90\n\n[[call]]\nmethod = \"eth_blockNumber\"\n\n[[call]]\nmethod = \"eth_chainId\"\n\n[[call]]\nmethod = \"net_version\"\n",
    )
    .unwrap();
    let recorded = rpcbench(&[
        "run",
        scenario.to_str().unwrap(),
        "--url",
        &format!("http://{addr}/"),
        "--warmup",
        "0",
        "-f",
        "json",
    ]);
    assert_eq!(recorded.status.code(), Some(0), "{}", stderr(&recorded));
    child.kill().unwrap();
    child.wait().unwrap();
    let recorded: serde_json::Value = serde_json::from_slice(&recorded.stdout).unwrap();
    let traffic = TrafficFile::read(&file, BadLines::Refuse).unwrap();
    assert_eq!(traffic.entries.len(), 90);
    for speed in ["1x", "2x"] {
        let replayed = rpcbench(&[
            "replay",
            file.to_str().unwrap(),
            &node.url(),
            "--speed",
            speed,
            "--check-responses",
            "-f",
            "json",
        ]);
        assert_eq!(replayed.status.code(), Some(0), "{speed}: {}", stderr(&replayed));
        let replayed: serde_json::Value = serde_json::from_slice(&replayed.stdout).unwrap();
        assert_eq!(method_counts(&replayed), method_counts(&recorded), "{speed}");
        assert_eq!(replayed["requests"]["errors"], 0, "{speed}: {}", replayed["outcomes"]);
    }
    std::fs::remove_dir_all(&dir).ok();
}
