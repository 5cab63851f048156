//! The built `rpcbench` binary: exit codes, one-line usage errors naming the flag at fault,
//! and reports on standard output. Servers are mock nodes started in-process on 127.0.0.1:0.

use std::process::{Command, Output};

use rpcbench::mock::{Chain, MockOptions, MockServer};

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Exit status 2 and a message naming `flag`, never a panic.
fn assert_usage_error(args: &[&str], flag: &str) {
    let output = rpcbench(args);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
    assert!(message.contains(flag), "{args:?} should name {flag}: {message}");
    assert!(!message.contains("panicked"), "{message}");
}

fn static_node() -> MockServer {
    MockServer::start(MockOptions::new(Chain::Static)).expect("the static node starts")
}

#[test]
fn bad_usage_exits_2_naming_the_flag() {
    let cases: [(&[&str], &str); 9] = [
        (&["run", "127.0.0.1:1", "--method", "getSlot"], "URL"),
        (&["run", "ftp://127.0.0.1/", "--method", "getSlot"], "scheme 'ftp'"),
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "-d", "10x"], "--duration"),
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "-c", "0"], "--connections"),
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "--rate", "fast"], "--rate"),
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "--params", "[1,"], "--params"),
        (&["run", "http://127.0.0.1:1/", "--body", "[]"], "--body"),
        (
            &[
                "run",
                "http://127.0.0.1:1/",
                "--method",
                "getSlot",
                "-c",
                "5",
                "--rate",
                "10",
                "--max-connections",
                "8",
            ],
            "--max-connections",
        ),
        (&["run", "http://127.0.0.1:1/"], "--method"),
    ];
    for (args, flag) in cases {
        assert_usage_error(args, flag);
    }
}

#[test]
fn http2_and_websocket_flags_are_checked_naming_the_flag() {
    let m = ["--method", "getSlot"];
    let cases: [(Vec<&str>, &str); 10] = [
        ([&["run", "ws://127.0.0.1:1/"][..], &m, &["--http2"]].concat(), "--http2"),
        ([&["run", "ws://127.0.0.1:1/"][..], &m, &["--batch", "5"]].concat(), "--batch"),
        ([&["run", "http://127.0.0.1:1/"][..], &m, &["--in-flight", "4"]].concat(), "--in-flight"),
        ([&["run", "ws://127.0.0.1:1/"][..], &m, &["--in-flight", "0"]].concat(), "--in-flight"),
        ([&["run", "http://127.0.0.1:1/"][..], &m, &["--h2c", "--streams", "0"]].concat(), "--streams"),
        ([&["run", "http://127.0.0.1:1/"][..], &m, &["--h2c", "--streams", "65536"]].concat(), "--streams"),
        ([&["run", "http://127.0.0.1:1/"][..], &m, &["--streams", "8"]].concat(), "--streams"),
        ([&["run", "https://127.0.0.1:1/"][..], &m, &["--h2c"]].concat(), "--h2c"),
        ([&["run", "http://127.0.0.1:1/"][..], &m, &["--http2"]].concat(), "--http2"),
        (
            [&["compare", "a=http://127.0.0.1:1/", "b=http://127.0.0.1:2/"][..], &m, &["--h2-for", "c"]]
                .concat(),
            "--h2-for c",
        ),
    ];
    for (args, flag) in cases {
        assert_usage_error(&args, flag);
    }
}

#[test]
fn http1_against_http2_on_one_mock_in_one_comparison() {
    let node = static_node();
    let url = node.url();
    let h1 = format!("h1={url}");
    let h2 = format!("h2={url}");
    let output = rpcbench(&[
        "compare",
        &h1,
        &h2,
        "--h2-for",
        "h2",
        "--method",
        "getSlot",
        "-c",
        "2",
        "--streams",
        "8",
        "-n",
        "400",
        "--cooldown",
        "0s",
        "--format",
        "json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let comparison: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let runs = comparison["runs"].as_array().expect("runs");
    assert_eq!(runs[0]["report"]["protocol"], "http/1.1");
    assert_eq!(runs[1]["report"]["protocol"], "h2c");
    assert_eq!(runs[1]["report"]["http2"]["streams_per_connection"], 8);
    for run in runs {
        assert_eq!(run["report"]["outcomes"]["ok"], 400, "{run}");
    }
    let text = rpcbench(&[
        "compare",
        &h1,
        &h2,
        "--h2-for",
        "h2",
        "--method",
        "getSlot",
        "-c",
        "2",
        "--streams",
        "8",
        "-n",
        "200",
        "--cooldown",
        "0s",
        "-q",
    ]);
    let table = String::from_utf8_lossy(&text.stdout);
    assert!(table.contains("h2c with 8 stream(s) per connection"), "{table}");
}

#[test]
fn run_http2_over_tls_against_the_mock_with_its_certificate() {
    let dir = std::env::temp_dir().join(format!("rpcbench-h2-tls-{}", std::process::id()));
    let mut options = MockOptions::new(Chain::Static);
    options.tls = Some(rpcbench::mock::MockTls { dir: Some(dir.clone()) });
    let node = MockServer::start(options).expect("the TLS mock starts");
    let cert = node.certificate_path().unwrap().to_str().unwrap().to_string();
    let output = rpcbench(&[
        "run",
        &node.url(),
        "--method",
        "getSlot",
        "--http2",
        "--cacert",
        &cert,
        "-c",
        "2",
        "--streams",
        "4",
        "-n",
        "200",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["protocol"], "h2");
    assert_eq!(report["outcomes"]["ok"], 200);
    drop(node);
    let mut http1_only = MockOptions::new(Chain::Static);
    http1_only.tls = Some(rpcbench::mock::MockTls { dir: Some(dir.clone()) });
    http1_only.http2 = false;
    let node = MockServer::start(http1_only).expect("the TLS mock starts");
    let output = rpcbench(&["run", &node.url(), "--method", "getSlot", "--http2", "--insecure", "-n", "10"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--http2: the server does not offer HTTP/2"), "{}", stderr(&output));
    let _ = std::fs::remove_dir_all(dir);
}

#[test]
fn a_connect_failure_says_its_cause_and_what_to_try() {
    // A self-signed certificate (rcgen) that the run was not told to trust.
    let dir = std::env::temp_dir().join(format!("rpcbench-tls-cause-{}", std::process::id()));
    let mut options = MockOptions::new(Chain::Static);
    options.tls = Some(rpcbench::mock::MockTls { dir: Some(dir.clone()) });
    let node = MockServer::start(options).expect("the TLS mock starts");
    let output = rpcbench(&["run", &node.url(), "-m", "getSlot", "-c", "1", "-n", "5"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("connect errors, certificate not trusted (5): "), "{err}");
    assert!(err.contains("--cacert FILE") && err.contains("--insecure"), "{err}");
    assert_eq!(err.matches("connect errors,").count(), 1, "one example per kind: {err}");
    drop(node);
    let _ = std::fs::remove_dir_all(dir);
    // Nothing listens on a port just freed.
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let output =
        rpcbench(&["run", &format!("http://127.0.0.1:{port}/"), "-m", "getSlot", "-c", "1", "-n", "3"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("connect errors, connection refused (3)"), "{}", stderr(&output));
    // A comparison names the target whose connections failed.
    let node = static_node();
    let dead = format!("dead=http://127.0.0.1:{port}/");
    let output = rpcbench(&[
        "compare",
        &format!("live={}", node.url()),
        &dead,
        "-m",
        "getSlot",
        "-c",
        "1",
        "-n",
        "3",
        "-q",
    ]);
    assert!(
        stderr(&output).contains("rpcbench: dead: connect errors, connection refused (3)"),
        "{}",
        stderr(&output)
    );
    assert!(!stderr(&output).contains("live: connect errors"), "{}", stderr(&output));
    // A capacity search names the step whose connections failed, and why.
    let output = rpcbench(&[
        "capacity",
        &format!("http://127.0.0.1:{port}/"),
        "-m",
        "getSlot",
        "--slo",
        "p99<1s,errors<1%",
        "--start-rate",
        "20",
        "--max-rate",
        "40",
        "--step",
        "300ms",
        "--warmup",
        "0s",
        "--cooldown",
        "0s",
        "-q",
    ]);
    assert!(
        stderr(&output).contains("rpcbench: step 1: connect errors, connection refused ("),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_rate_with_connections_holds_them_open_as_wrk2_does() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let output = rpcbench(&[
        "run",
        &node.url(),
        "-m",
        "getSlot",
        "--rate",
        "50",
        "-c",
        "4",
        "-d",
        "300ms",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["load"]["held_connections"], true, "{}", report["load"]);
    assert_eq!(report["load"]["max_connections"], 4);
    let text = rpcbench(&["run", &node.url(), "-m", "getSlot", "--rate", "50", "-c", "4", "-d", "300ms"]);
    assert!(String::from_utf8_lossy(&text.stdout).contains("over 4 connection(s) held open"));
}

#[test]
fn subscribe_checks_its_flags_naming_the_flag() {
    let cases: [(&[&str], &str); 12] = [
        (&["subscribe", "http://127.0.0.1:1/", "--sub", "newHeads"], "ws:// or wss://"),
        (
            &["subscribe", "ws://127.0.0.1:1/", "--sub", "newBlocks"],
            "--sub: unknown subscription 'newBlocks'",
        ),
        (
            &["subscribe", "ws://127.0.0.1:1/", "--sub", "logs:{nope"],
            "--sub: 'logs': the params are not JSON",
        ),
        (
            &["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--threshold", "lag p42 < 1s"],
            "--threshold",
        ),
        (&["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--subscribers", "0"], "--subscribers"),
        (&["subscribe", "ws://127.0.0.1:1/"], "--sub"),
        (&["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--stage", "10s"], "--stage"),
        (&["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--stage", "0s:5"], "--stage"),
        (&["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--stage", "1s:many"], "--stage"),
        (&["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--stage", "1s:5", "-d", "5s"], "--stage"),
        (
            &["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--stage", "1s:5", "--ramp", "500ms"],
            "--stage",
        ),
        (
            &["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "--stage", "1s:5", "--subscribers", "2"],
            "--stage",
        ),
    ];
    for (args, flag) in cases {
        assert_usage_error(args, flag);
    }
}

#[test]
fn subscribe_reports_new_heads_and_a_breached_threshold_exits_1() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = std::time::Duration::from_millis(50);
    let node = MockServer::start(options).expect("the ethereum node starts");
    let url = format!("ws://{}/", node.local_addr());
    let output =
        rpcbench(&["subscribe", &url, "--sub", "newHeads", "--subscribers", "5", "-d", "1s", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["subscribed"], 5);
    assert_eq!(report["gaps"], 0);
    assert!(report["notifications"].as_u64().unwrap() >= 5 * 10, "{report}");
    let output = rpcbench(&[
        "subscribe",
        &url,
        "--sub",
        "newHeads",
        "-d",
        "300ms",
        "--threshold",
        "produced-lag p50 < 0ms",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("FAILED  produced-lag p50 < 0ms"));
}

#[test]
fn a_subscription_page_shows_a_failed_threshold_in_red_and_values_beside_their_labels() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = std::time::Duration::from_millis(50);
    let node = MockServer::start(options).expect("the ethereum node starts");
    let url = format!("ws://{}/", node.local_addr());
    let args = [
        "subscribe",
        &url,
        "--sub",
        "newHeads",
        "-d",
        "300ms",
        "--threshold",
        "produced-lag p50 < 0ms",
        "-f",
        "html",
    ];
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let html = String::from_utf8_lossy(&output.stdout);
    assert!(html.contains("<span class=\"verdict-fail\">FAILED</span>"), "{html}");
    assert!(html.contains(".verdict-fail { color: #c62828;"), "red by the style");
    assert!(html.contains("<h2>Summary</h2><table class=\"kv\">"), "{html}");
    assert!(html.contains("table.kv td { text-align: left; }"), "values beside their labels");
}

#[test]
fn saved_subscription_reports_render_again_and_merge() {
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = std::time::Duration::from_millis(20);
    let node = MockServer::start(options).expect("the solana node starts");
    let url = format!("ws://{}/", node.local_addr());
    let dir = std::env::temp_dir().join(format!("rpcbench-subscribe-files-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let a = dir.join("a.json");
    let b = dir.join("b.json");
    for (path, subscribers) in [(&a, "2"), (&b, "3")] {
        let output = rpcbench(&[
            "subscribe",
            &url,
            "--sub",
            "slot",
            "--subscribers",
            subscribers,
            "-d",
            "500ms",
            "--save",
            path.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    // Rendered again from the file: the same text the run printed, and the other formats.
    let live: serde_json::Value = serde_json::from_slice(&std::fs::read(&a).unwrap()).unwrap();
    let text = rpcbench(&["report", a.to_str().unwrap()]);
    assert_eq!(text.status.code(), Some(0), "{}", stderr(&text));
    assert!(String::from_utf8_lossy(&text.stdout).contains("subscribe slot against"));
    let html = rpcbench(&["report", a.to_str().unwrap(), "-f", "html"]);
    assert!(String::from_utf8_lossy(&html.stdout).contains("<h2>Lag by percentile</h2>"));
    let merged = dir.join("merged.json");
    let output = rpcbench(&[
        "merge",
        a.to_str().unwrap(),
        b.to_str().unwrap(),
        "-o",
        merged.to_str().unwrap(),
        "--threshold",
        "gaps < 1",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let merged: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    let part_b: serde_json::Value = serde_json::from_slice(&std::fs::read(&b).unwrap()).unwrap();
    assert_eq!(merged["subscriptions"], 5);
    assert_eq!(
        merged["notifications"].as_u64().unwrap(),
        live["notifications"].as_u64().unwrap() + part_b["notifications"].as_u64().unwrap()
    );
    assert_eq!(
        merged["lag"]["count"].as_u64().unwrap(),
        merged["notifications"].as_u64().unwrap() - merged["notifications_after_end"].as_u64().unwrap()
    );
    assert_eq!(merged["thresholds"][0]["passed"], true);
    // A file that is not one is refused by name.
    let bad = dir.join("bad.json");
    std::fs::write(&bad, r#"{"subscribe_report_version":1,"tool":3}"#).unwrap();
    let output = rpcbench(&["report", bad.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("bad.json"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn subscribe_with_nothing_subscribed_exits_1_with_the_servers_reason() {
    // The Solana node has no eth_subscribe: the slot subscriptions work, the newHeads ones do
    // not, and a kind with nothing subscribed fails the run.
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = std::time::Duration::from_millis(20);
    let node = MockServer::start(options).expect("the solana node starts");
    let url = format!("ws://{}/", node.local_addr());
    let output = rpcbench(&[
        "subscribe",
        &url,
        "--sub",
        "slot",
        "--sub",
        "newHeads",
        "--subscribers",
        "2",
        "-d",
        "300ms",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("nothing subscribed for newHeads: newHeads: -32601"),
        "{}",
        stderr(&output)
    );
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(text.contains("Subscribed: 2 of 4 (errors 2)"), "{text}");
    assert!(text.contains("First subscribe error: newHeads: -32601"), "{text}");
    // Every kind subscribed: exit 0.
    let output = rpcbench(&["subscribe", &url, "--sub", "slot", "-d", "300ms"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // A closed port: nothing subscribed, the connect error is the reason.
    let closed = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let port = closed.local_addr().unwrap().port();
    drop(closed);
    let output = rpcbench(&["subscribe", &format!("ws://127.0.0.1:{port}/"), "--sub", "slot", "-d", "300ms"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("nothing subscribed for slot: cannot connect"), "{}", stderr(&output));
}

#[test]
fn a_threshold_on_reorders_of_unordered_items_is_refused_naming_the_flag() {
    let output = rpcbench(&[
        "subscribe",
        "ws://127.0.0.1:1/",
        "--sub",
        "newPendingTransactions",
        "--threshold",
        "reorders < 1",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--threshold: 'reorders < 1': reorders are judged only"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn a_malformed_condition_gets_one_message_and_column_from_threshold_slo_and_subscribe() {
    // Refused before any load; the node is there so nothing could reach another address.
    let node = static_node();
    let http = node.url();
    let ws = http.replacen("http://", "ws://", 1);
    for condition in ["p99 500ms", "p42 < 1s", "   "] {
        let outputs = [
            rpcbench(&["run", &http, "-m", "getSlot", "-d", "1s", "--threshold", condition]),
            rpcbench(&["capacity", &http, "-m", "getSlot", "--slo", condition]),
            rpcbench(&["subscribe", &ws, "--sub", "slot", "-d", "1s", "--threshold", condition]),
        ];
        let messages: Vec<String> = outputs
            .iter()
            .map(|output| {
                assert_eq!(output.status.code(), Some(2), "{condition:?}: {}", stderr(output));
                let text = stderr(output);
                let at = text.find("at character").unwrap_or_else(|| panic!("{condition:?}: {text}"));
                text[at..].trim_end().to_string()
            })
            .collect();
        assert_eq!(messages[0], messages[1], "{condition:?}: --threshold and --slo");
        assert_eq!(messages[0], messages[2], "{condition:?}: run and subscribe --threshold");
        let flags = ["--threshold #1", "--slo", "--threshold"];
        for (output, flag) in outputs.iter().zip(flags) {
            assert!(stderr(output).contains(&format!("{flag}: at character")), "{flag}: {}", stderr(output));
        }
    }
}

#[test]
fn a_format_a_command_does_not_write_exits_2_naming_format_and_what_it_writes() {
    // Refused while parsing, before any connection.
    let output = rpcbench(&["subscribe", "ws://127.0.0.1:1/", "--sub", "slot", "-f", "csv"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains(
            "invalid value 'csv' for '--format <FORMAT>': `subscribe` does not write csv; \
             `subscribe` writes text, json, markdown or html"
        ),
        "{}",
        stderr(&output)
    );
    let output = rpcbench(&["heads", "a=http://127.0.0.1:1/", "b=http://127.0.0.1:1/", "--format", "html"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("`heads` writes text or json"), "{}", stderr(&output));
    // Every spelling that worked before still does, in any case.
    let output = rpcbench(&["report", "--help"]);
    assert!(String::from_utf8_lossy(&output.stdout).contains("csv"));
    let output = rpcbench(&["run", "http://127.0.0.1:1/", "-m", "getSlot", "-f", "YAML"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("'YAML' is not a format; `run` writes text, json or markdown"),
        "{}",
        stderr(&output)
    );
}

#[test]
fn merge_refuses_the_same_subscription_report_twice() {
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = std::time::Duration::from_millis(20);
    let node = MockServer::start(options).expect("the solana node starts");
    let url = format!("ws://{}/", node.local_addr());
    let dir = std::env::temp_dir().join(format!("rpcbench-subscribe-twice-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b, merged, again) =
        (dir.join("a.json"), dir.join("b.json"), dir.join("m.json"), dir.join("m2.json"));
    for path in [&a, &b] {
        let output =
            rpcbench(&["subscribe", &url, "--sub", "slot", "-d", "300ms", "--save", path.to_str().unwrap()]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let copy = dir.join("copy-of-a.json");
    std::fs::copy(&a, &copy).unwrap();
    let output =
        rpcbench(&["merge", a.to_str().unwrap(), copy.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("copy-of-a.json: the run started"), "{}", stderr(&output));
    assert!(stderr(&output).contains("the same run given twice"), "{}", stderr(&output));
    // A part already inside a merged report is the same run too.
    let output =
        rpcbench(&["merge", a.to_str().unwrap(), b.to_str().unwrap(), "-o", merged.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output =
        rpcbench(&["merge", merged.to_str().unwrap(), b.to_str().unwrap(), "-o", again.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("b.json: the run started"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_missing_body_file_names_the_file() {
    let output = rpcbench(&["run", "http://127.0.0.1:1/", "--body-file", "/nonexistent/body.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("/nonexistent/body.json"));
}

#[test]
fn a_run_prints_a_json_report_and_exits_0() {
    let node = static_node();
    let output =
        rpcbench(&["run", &node.url(), "--method", "getSlot", "-c", "4", "-n", "300", "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["requests"]["total"], 300);
    assert_eq!(report["outcomes"]["ok"], 300);
    assert_eq!(report["method"], "getSlot");
}

#[test]
fn a_run_prints_a_text_report_with_redacted_secrets() {
    let node = static_node();
    let url = format!("{}v3/0123456789abcdef0123456789abcdef", node.url());
    let output = rpcbench(&[
        "run",
        &url,
        "--rate",
        "200",
        "-d",
        "500ms",
        "-H",
        "Authorization: Bearer topsecret",
        "--body",
        r#"{"jsonrpc":"2.0","id":1,"method":"getBalance","params":["4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"]}"#,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("getBalance against"), "{text}");
    assert!(text.contains("/v3/***"), "{text}");
    assert!(text.contains("Rate: target 200 req/s"), "{text}");
    let everything = format!("{text}{}", stderr(&output));
    assert!(!everything.contains("0123456789abcdef0123456789abcdef"));
    assert!(!everything.contains("topsecret"));
}

#[test]
fn a_dead_target_says_so_first_shows_no_latency_and_exits_1() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    // A failure at run time (1), not bad usage (2).
    let output = rpcbench(&["run", &url, "--method", "getSlot", "-n", "3", "-c", "1", "-f", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["outcomes"]["connect"], 3);
    assert_eq!(report["requests"]["responded"], 0);
    assert!(report["latency"].is_null(), "{}", report["latency"]);
    let output = rpcbench(&["run", &url, "--method", "getSlot", "--rate", "200", "-d", "1s"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    let lines: Vec<&str> = text.lines().collect();
    assert!(lines[2].starts_with("NO RESPONSE: none of the"), "{text}");
    assert!(text.contains("  Latency          n/a        n/a        n/a"), "{text}");
    assert!(!text.contains(" 0us"), "no latency figure for a dead target: {text}");
}

#[test]
fn the_demo_prints_every_step_without_errors() {
    let dir = std::env::temp_dir().join(format!("rpcbench-demo-test-{}", std::process::id()));
    let out_dir = dir.display().to_string();
    let output = rpcbench(&["demo", "--step-duration", "200ms", "--rate", "500", "--out-dir", &out_dir]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The HTML report and the Markdown summary are written, and where is said.
    assert!(stderr(&output).contains(&dir.join("report.html").display().to_string()), "{}", stderr(&output));
    // The closing search says what it does; its live steps are for terminals only.
    let progress = stderr(&output);
    assert!(progress.contains("capacity search of getBlock within p99<25ms, errors<0.1%"), "{progress}");
    assert!(!progress.contains("step  1:"), "no live lines off a terminal: {progress}");
    let html = std::fs::read_to_string(dir.join("report.html")).expect("the demo's HTML report");
    // Three charts, and latency over time as small multiples, one per step (was one chart
    // overlaying 24 lines).
    assert_eq!(html.matches("<svg").count(), 3 + 12);
    assert_eq!(html.matches("<figure>").count(), 12);
    assert!(html.contains("getBlock 256 conns"));
    let summary = std::fs::read_to_string(dir.join("summary.md")).expect("the demo's Markdown summary");
    assert_eq!(summary, String::from_utf8_lossy(&output.stdout));
    std::fs::remove_dir_all(&dir).ok();
    let table = String::from_utf8_lossy(&output.stdout);
    let rows: Vec<&str> = table.lines().filter(|line| line.starts_with("| get")).collect();
    assert_eq!(rows.len(), 12, "{table}");
    for method in ["getBalance", "getBlocks", "getBlock", "getSlot"] {
        assert_eq!(rows.iter().filter(|row| row.starts_with(&format!("| {method} |"))).count(), 3, "{table}");
    }
    assert!(
        table.contains("Capacity of getBlock (full transactions) within p99<25ms, errors<0.1%:"),
        "{table}"
    );
    // Only the open-loop rows carry the corrected-latency note's mark; the note is said once.
    assert_eq!(rows.iter().filter(|row| row.contains("| 500/s (a) |")).count(), 4, "{table}");
    assert_eq!(table.matches("intended send time").count(), 1, "{table}");
    assert!(!table.lines().any(|line| line.trim_end().ends_with(';')), "{table}");
    for row in rows {
        let cells: Vec<&str> = row.split('|').map(str::trim).collect();
        assert_eq!(cells[4], "100.00", "every response is a success: {row}");
        assert_eq!(cells[5], "0", "no errors: {row}");
    }
}

#[test]
fn serve_rejects_bad_knobs_with_exit_2() {
    for (args, flag) in [
        (&["serve", "--chain", "bitcoin"][..], "--chain"),
        (&["serve", "--chain", "solana", "--latency", "fast"][..], "--latency"),
        (&["serve", "--chain", "solana", "--stall", "2s"][..], "--stall"),
        (
            &["serve", "--chain", "static", "--listen", "127.0.0.1:0", "--max-streams", "0"][..],
            "--max-streams",
        ),
        (
            &["serve", "--chain", "static", "--listen", "127.0.0.1:0", "--refuse-stream-rate", "2"][..],
            "--refuse-stream-rate",
        ),
        (
            &["serve", "--chain", "static", "--listen", "127.0.0.1:0", "--goaway-after", "0"][..],
            "--goaway-after",
        ),
        (&["serve", "--chain", "ethereum", "--listen", "127.0.0.1:0", "--ws-drop", "2"][..], "--ws-drop"),
        (
            &["serve", "--chain", "ethereum", "--listen", "127.0.0.1:0", "--ws-duplicate", "1.5"][..],
            "--ws-duplicate",
        ),
        (
            &["serve", "--chain", "solana", "--listen", "127.0.0.1:0", "--ws-max-queue", "0"][..],
            "--ws-max-queue",
        ),
        (
            &["serve", "--chain", "solana", "--listen", "127.0.0.1:0", "--ws-max-connections", "0"][..],
            "--ws-max-connections",
        ),
    ] {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(stderr(&output).contains(flag), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn serve_tls_writes_its_certificate_into_tls_dir_and_prints_the_path() {
    use std::io::{BufRead, BufReader};
    use std::process::Stdio;
    let dir = std::env::temp_dir().join(format!("rpcbench-cli-serve-tls-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["serve", "--chain", "static", "--listen", "127.0.0.1:0", "--tls", "--tls-dir"])
        .arg(&dir)
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let mut seen = Vec::new();
    let certificate = loop {
        let Some(Ok(line)) = lines.next() else { panic!("no certificate path in {seen:?}") };
        if let Some(path) = line.strip_prefix("rpcbench serve: TLS certificate (self-signed): ") {
            break std::path::PathBuf::from(path);
        }
        seen.push(line);
    };
    assert!(seen.iter().any(|line| line.contains("listening on https://127.0.0.1:")), "{seen:?}");
    assert_eq!(certificate, dir.join("cert.pem"));
    let pem = std::fs::read_to_string(&certificate).expect("the certificate is written");
    assert!(pem.starts_with("-----BEGIN CERTIFICATE-----"), "{pem}");
    assert!(dir.join("key.pem").exists());
    let kill = Command::new("kill").args(["-s", "INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    assert_eq!(child.wait().expect("the server exits").code(), Some(0));
    let _ = std::fs::remove_dir_all(&dir);
}

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_example_scenario_runs_clean_against_its_mock_node() {
    let solana = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let ethereum = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let node = static_node();
    let cases = [
        ("seed-000-solana-validator.toml", solana.url(), &["-c", "8", "-d", "1s", "--warmup", "0"][..]),
        ("seed-001-blocking-handlers.toml", solana.url(), &["-c", "20", "-n", "100"][..]),
        // The seed's first rate: the debug-built mock answers its wide eth_getLogs slowly, and at
        // 100/s its queue broke the 500 ms p99 on a loaded two-core machine now and then.
        ("seed-002-dapp-constant-rate.toml", ethereum.url(), &["--rate", "20", "-d", "2s"][..]),
        ("seed-002-rest-api.toml", ethereum.url(), &["--rate", "20", "-d", "2s"][..]),
        ("seed-003-json-rpc-relay.toml", ethereum.url(), &["-c", "8", "-d", "1s"][..]),
        ("seed-004-static-baseline.toml", node.url(), &["--rate", "500", "-c", "8", "-d", "1s"][..]),
    ];
    for (file, url, overrides) in cases {
        let path = example(file);
        let mut args = vec!["run", path.as_str(), "--url", url.as_str(), "-f", "json"];
        args.extend_from_slice(overrides);
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(0), "{file}: {}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        assert!(report["requests"]["total"].as_u64().unwrap() > 0, "{file}");
        // The only error allowed: getBlock on a slot the leader skipped (seed 000 draws slots).
        let skipped = report["outcomes"]["rpc_errors"]["-32007"]["count"].as_u64().unwrap_or(0);
        assert_eq!(report["requests"]["errors"].as_u64().unwrap(), skipped, "{file}: {}", report["outcomes"]);
        for threshold in report["thresholds"].as_array().unwrap() {
            assert_eq!(threshold["passed"], true, "{file}: {threshold}");
        }
    }
}

#[test]
fn a_duration_scales_a_scenarios_stages_instead_of_flattening_them() {
    let node = static_node();
    let dir = std::env::temp_dir().join(format!("rpcbench-stages-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("staged.toml");
    let scenario = "[target]\nurl = \"http://127.0.0.1:1/\"\n[[stage]]\nrate = 20\nduration = \"10s\"\n\
                    [[stage]]\nrate = 40\nduration = \"10s\"\n[[call]]\nmethod = \"getSlot\"\n";
    std::fs::write(&path, scenario).unwrap();
    let path = path.to_str().unwrap();
    let url = node.url();
    for flags in [["-d", "1s"], ["--stage-scale", "0.05"]] {
        let mut args = vec!["run", path, "--url", url.as_str(), "-f", "json", "--warmup", "0"];
        args.extend_from_slice(&flags);
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(0), "{flags:?}: {}", stderr(&output));
        assert!(stderr(&output).contains("the stages (20"), "{flags:?}: {}", stderr(&output));
        assert!(stderr(&output).contains("scaled by 0.05"), "{flags:?}: {}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        // Both stages, half a second each: 10 + 20 requests, not 40 at the last stage's rate.
        let stages = report["stages"].as_array().expect("per-stage figures");
        assert_eq!(stages.len(), 2, "{flags:?}: {report}");
        assert_eq!(stages[1]["start_s"].as_f64(), Some(0.5), "{flags:?}");
        let total = report["requests"]["total"].as_u64().unwrap();
        assert!((28..=32).contains(&total), "{flags:?}: {total} requests");
    }
    for (flags, message) in [
        (vec!["--stage-scale", "0"], "--stage-scale"),
        (vec!["--stage-scale", "0.5", "-d", "1s"], "not both"),
        (vec!["--stage-scale", "0.5", "--rate", "10"], "--stage-scale"),
    ] {
        let mut args = vec!["run", path, "--url", url.as_str()];
        args.extend_from_slice(&flags);
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{flags:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(message), "{flags:?}: {}", stderr(&output));
    }
    let output = rpcbench(&["run", url.as_str(), "--method", "getSlot", "--stage-scale", "0.5", "-n", "1"]);
    assert_eq!(output.status.code(), Some(2), "no stages to scale: {}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_bad_scenario_exits_2_with_file_line_and_column() {
    let dir = std::env::temp_dir().join(format!("rpcbench-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("bad.toml");
    std::fs::write(&path, "[target]\nurl = \"http://127.0.0.1:1/\"\n[load]\nduration = \"soon\"\n[[call]]\nmethod = \"getSlot\"\n")
        .unwrap();
    let output = rpcbench(&["run", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    let message = stderr(&output);
    assert!(message.contains("bad.toml:4:12:"), "{message}");
    assert!(message.contains("expected a duration"), "{message}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_breached_threshold_exits_1_and_says_by_how_much() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.error_rate = 1.0;
    let node = MockServer::start(options).unwrap();
    let output = rpcbench(&[
        "run",
        &node.url(),
        "--method",
        "getSlot",
        "-n",
        "50",
        "-c",
        "2",
        "--threshold",
        "errors < 1%",
        "--threshold",
        "p99 < 10s",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("FAILED  errors < 1% (measured 100.000%, past the limit by 99.000 percentage points)"),
        "{text}"
    );
    assert!(text.contains("ok      p99 < 10s"), "{text}");
}

/// Runs the binary through `sh` after `ulimit_args` (e.g. `-n 64`) lowered the open-file limit
/// of that shell, and so of the binary it execs.
fn rpcbench_with_ulimit(ulimit_args: &str, args: &[&str]) -> (Output, std::time::Duration) {
    let started = std::time::Instant::now();
    let output = Command::new("sh")
        .arg("-c")
        .arg(format!("ulimit {ulimit_args} && exec \"$0\" \"$@\""))
        .arg(env!("CARGO_BIN_EXE_rpcbench"))
        .args(args)
        .output()
        .expect("sh runs");
    (output, started.elapsed())
}

/// The hard open-file limit of a child shell.
fn hard_open_file_limit() -> u64 {
    let output = Command::new("sh").arg("-c").arg("ulimit -Hn").output().expect("sh runs");
    String::from_utf8_lossy(&output.stdout).trim().parse().unwrap_or(u64::MAX)
}

#[test]
fn more_connections_than_the_hard_open_file_limit_fail_fast_naming_the_limit() {
    let node = static_node();
    let url = node.url();
    let cases: [(&[&str], &str); 3] = [
        (&["run", &url, "--method", "getSlot", "-c", "100", "-d", "30s"], "--connections"),
        (&["run", &url, "--method", "getSlot", "--rate", "100", "-d", "30s"], "--max-connections"),
        // capacity said 1 (a failure at run time) for the same usage error.
        (
            &["capacity", &url, "--method", "getSlot", "--slo", "p99<1s", "--max-connections", "1000"],
            "--max-connections",
        ),
    ];
    for (args, flag) in cases {
        let (output, took) = rpcbench_with_ulimit("-n 64", args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(flag), "{message}");
        assert!(message.contains("open-file limit (ulimit -n) of 64"), "{message}");
        assert!(message.contains("raise it or use fewer connections"), "{message}");
        if args[0] == "run" {
            assert_eq!(message.trim().lines().count(), 1, "one line: {message}");
        }
        assert!(output.stdout.is_empty());
        assert!(took < std::time::Duration::from_secs(5), "failed fast, not after the run: {took:?}");
    }
}

#[test]
fn a_low_soft_open_file_limit_is_raised_to_the_hard_limit() {
    if hard_open_file_limit() < 1024 {
        eprintln!("skipped: the hard open-file limit is below 1024");
        return;
    }
    let node = static_node();
    let (output, took) = rpcbench_with_ulimit(
        "-Sn 64",
        &["run", &node.url(), "--method", "getSlot", "-c", "100", "-n", "2000", "-f", "json"],
    );
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["outcomes"]["ok"], 2000, "no connection failed for want of descriptors");
    assert_eq!(report["requests"]["total"], 2000);
    assert!(took < std::time::Duration::from_secs(20), "{took:?}");
}

#[test]
fn a_run_within_a_low_open_file_limit_still_works() {
    let node = static_node();
    let (output, _) =
        rpcbench_with_ulimit("-n 64", &["run", &node.url(), "--method", "getSlot", "-c", "8", "-n", "500"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("ok 500 (100.00%)"));
}

const PATH_KEY: &str = "9aa3d95b3bc440fa88ea12eaa4456161";
const QUERY_KEY: &str = "qk4Secret";
const DASH_KEY: &str = "dk5Secret";
const BEARER: &str = "bearer6Secret";
const HEADER_KEY: &str = "hk7Secret";

/// Everything the process printed, on both streams.
fn everything(output: &Output) -> String {
    format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(output))
}

fn assert_no_secret(output: &Output, context: &str) {
    let printed = everything(output);
    for secret in [PATH_KEY, QUERY_KEY, DASH_KEY, BEARER, HEADER_KEY, "sk_live"] {
        assert!(!printed.contains(secret), "{context}: {secret} was printed:\n{printed}");
    }
    assert!(!printed.contains("panicked"), "{context}: {printed}");
}

fn keyed_url(base: &str) -> String {
    format!("{base}v3/{PATH_KEY}?apikey={QUERY_KEY}&api-key={DASH_KEY}&chain=1")
}

#[test]
fn secrets_never_reach_text_or_json_reports_or_stderr() {
    let node = static_node();
    let url = keyed_url(&node.url());
    let auth = format!("Authorization: Bearer {BEARER}");
    let api_key = format!("x-api-key: {HEADER_KEY}");
    for format in ["text", "json"] {
        let output = rpcbench(&[
            "run", &url, "-m", "getSlot", "-n", "50", "-c", "2", "-H", &auth, "-H", &api_key, "-f", format,
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        assert_no_secret(&output, format);
        let stdout = String::from_utf8_lossy(&output.stdout);
        assert!(stdout.contains("/v3/***?apikey=***&api-key=***&chain=***"), "{format}: {stdout}");
    }
}

#[test]
fn secrets_never_reach_error_messages() {
    let dead_port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let auth = format!("Authorization Bearer {BEARER}");
    let bad_name = format!("Authorization Bearer sk_live_{BEARER}: x");
    let bad_port = keyed_url("http://rpc.example.com:99999/");
    let unresolvable = keyed_url("http://rpcbench-test.invalid/");
    let dead = keyed_url(&format!("http://127.0.0.1:{dead_port}/"));
    let second_url = keyed_url("https://rpc.example.com/");
    let cases: [(&[&str], i32, &str); 6] = [
        (&["run", &bad_port, "-m", "getSlot"], 2, "not a valid URL"),
        (
            &["run", &unresolvable, "-m", "getSlot", "-n", "1"],
            1,
            "cannot resolve host 'rpcbench-test.invalid'",
        ),
        (&["run", &dead, "-m", "getSlot", "-n", "1", "-H", &auth], 2, "--header"),
        (&["run", &dead, "-m", "getSlot", "-n", "1", "-H", &bad_name], 2, "--header"),
        (&["run", &dead, &second_url, "-m", "getSlot"], 2, "unexpected argument"),
        (
            &[
                "run",
                "ftp://user:pass@127.0.0.1/",
                "-m",
                "getSlot",
                "-H",
                &format!("x-api-key: {HEADER_KEY}"),
            ],
            2,
            "scheme 'ftp'",
        ),
    ];
    for (args, code, message) in cases {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(code), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(message), "{args:?}: {}", stderr(&output));
        assert_no_secret(&output, &format!("{args:?}"));
    }
}

#[test]
fn secrets_never_reach_output_when_tls_fails() {
    // An https URL against a plain-HTTP node: every TLS handshake fails.
    let node = static_node();
    let url = keyed_url(&node.url().replace("http://", "https://"));
    let auth = format!("Authorization: Bearer {BEARER}");
    for format in ["text", "json"] {
        let output = rpcbench(&[
            "run",
            &url,
            "-m",
            "getSlot",
            "-n",
            "3",
            "-c",
            "1",
            "--insecure",
            "-H",
            &auth,
            "-f",
            format,
        ]);
        // Every connect failed: a dead target, exit 1 (a failure at run time, not usage).
        assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
        assert_no_secret(&output, format);
        if format == "json" {
            let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
            assert_eq!(report["outcomes"]["connect"], 3);
        }
    }
}

/// Starts the binary with `args`, sends `signal` after a second, and returns what the process
/// printed once it exited, with how long it took to exit after the signal.
fn interrupt(args: &[&str], signal: &str) -> (Output, std::time::Duration) {
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    std::thread::sleep(Duration::from_secs(1));
    let signalled = Instant::now();
    let kill =
        Command::new("kill").args(["-s", signal, &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    while child.try_wait().expect("the child can be waited for").is_none() {
        if signalled.elapsed() > Duration::from_secs(10) {
            child.kill().ok();
            panic!("rpcbench did not exit within 10 s of SIG{signal}");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = signalled.elapsed();
    (child.wait_with_output().expect("the output is read"), took)
}

/// Starts a 30 s run against a mock Solana node, sends `signal` after a second, and returns
/// what the process printed once it exited, with how long it took to exit after the signal.
fn interrupt_a_run(signal: &str, format: &str) -> (Output, std::time::Duration) {
    let node = MockServer::start(MockOptions::new(Chain::Solana)).expect("the mock node starts");
    interrupt(&["run", &node.url(), "--method", "getSlot", "-c", "4", "-d", "30s", "-f", format], signal)
}

fn assert_interrupted_report(output: &Output, took: std::time::Duration, signal: &str) {
    assert!(took < std::time::Duration::from_secs(3), "SIG{signal}: exited {took:?} after the signal");
    assert_eq!(output.status.code(), Some(0), "SIG{signal}: {}", stderr(output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("INTERRUPTED: figures cover the"), "SIG{signal}: {text}");
    let requests: u64 = text
        .lines()
        .find_map(|line| line.trim().strip_prefix("Requests: "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("SIG{signal}: no request count in {text}"));
    assert!(requests > 0, "SIG{signal}: {text}");
    assert!(stderr(output).contains("stopping; the report covers what completed"), "{}", stderr(output));
}

#[test]
fn sigterm_during_a_run_prints_the_report_of_what_completed() {
    let (output, took) = interrupt_a_run("TERM", "text");
    assert_interrupted_report(&output, took, "TERM");
}

#[test]
fn sigint_during_a_run_prints_the_report_of_what_completed() {
    let (output, took) = interrupt_a_run("INT", "text");
    assert_interrupted_report(&output, took, "INT");
    let (output, _) = interrupt_a_run("INT", "json");
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert_eq!(report["interrupted"], true);
    assert!(report["requests"]["total"].as_u64().unwrap() > 0, "{report}");
    assert!(report["elapsed_us"].as_u64().unwrap() < 10_000_000, "{report}");
}

#[test]
fn a_bad_metrics_listen_address_exits_2_naming_the_flag() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").expect("a port to occupy");
    let taken = taken.local_addr().unwrap().to_string();
    let url = "http://127.0.0.1:1/";
    let cases: [&[&str]; 5] = [
        &["run", url, "--method", "getSlot", "--metrics-listen", "nonsense"],
        &["run", url, "--method", "getSlot", "--metrics-listen", "127.0.0.1:99999"],
        &["run", url, "--method", "getSlot", "--metrics-listen", &taken],
        &["capacity", url, "--method", "getSlot", "--slo", "p99<1s", "--metrics-listen", "x:y"],
        &["demo", "--metrics-listen", &taken],
    ];
    for args in cases {
        let output = rpcbench(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains("--metrics-listen"), "{args:?}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
}

#[test]
fn a_run_serves_metrics_at_the_address_it_prints() {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::process::Stdio;
    use std::time::{Duration, Instant};
    let node = static_node();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["run", &node.url(), "--method", "getSlot", "-c", "2", "-d", "30s", "--threads", "1"])
        .args(["--metrics-listen", "127.0.0.1:0", "-f", "json"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    let mut stderr_lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let first = stderr_lines.next().expect("a line on stderr").unwrap();
    let addr = first
        .strip_prefix("metrics: http://")
        .and_then(|rest| rest.strip_suffix("/metrics"))
        .unwrap_or_else(|| panic!("no metrics address in '{first}'"))
        .to_string();
    let scrape = || {
        let mut stream = std::net::TcpStream::connect(&addr).expect("the endpoint accepts");
        write!(stream, "GET /metrics HTTP/1.1\r\nHost: {addr}\r\nConnection: close\r\n\r\n").unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).unwrap();
        response
    };
    let waited = Instant::now();
    let requests = loop {
        let response = scrape();
        assert!(response.starts_with("HTTP/1.1 200"), "{response}");
        let requests: u64 = response
            .lines()
            .find_map(|line| line.strip_prefix("rpcbench_requests_total{method=\"getSlot\"} "))
            .and_then(|count| count.parse().ok())
            .unwrap_or(0);
        if requests > 0 {
            break requests;
        }
        assert!(waited.elapsed() < Duration::from_secs(60), "no requests published: {response}");
        std::thread::sleep(Duration::from_millis(100));
    };
    let kill = Command::new("kill").args(["-s", "INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    let output = child.wait_with_output().expect("the output is read");
    assert_eq!(output.status.code(), Some(0));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert!(report["requests"]["total"].as_u64().unwrap() >= requests);
}

/// Requests' heads as a test server received them.
type Heads = std::sync::Arc<std::sync::Mutex<Vec<String>>>;

/// A node on 127.0.0.1:0 that answers every request with a JSON-RPC error whose message is
/// `message` of the request's head (request line and headers), and keeps the heads. It serves
/// until the test process ends.
fn echoing_node(message: fn(&str) -> String) -> (String, Heads) {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a port");
    let url = format!("http://{}/", listener.local_addr().unwrap());
    let heads = Heads::default();
    let seen = heads.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || answer_with_errors(stream, message, &seen));
        }
    });
    (url, heads)
}

fn read_more(stream: &mut std::net::TcpStream, buf: &mut Vec<u8>) -> bool {
    use std::io::Read;
    let mut chunk = [0u8; 4096];
    match stream.read(&mut chunk) {
        Ok(0) | Err(_) => false,
        Ok(n) => {
            buf.extend_from_slice(&chunk[..n]);
            true
        }
    }
}

fn answer_with_errors(mut stream: std::net::TcpStream, message: fn(&str) -> String, seen: &Heads) {
    use std::io::Write;
    stream.set_read_timeout(Some(std::time::Duration::from_secs(10))).ok();
    let mut buf = Vec::new();
    loop {
        let head_end = loop {
            if let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
                break end + 4;
            }
            if !read_more(&mut stream, &mut buf) {
                return;
            }
        };
        let head = String::from_utf8_lossy(&buf[..head_end]).into_owned();
        let length: usize = head
            .lines()
            .find_map(|line| {
                let (name, value) = line.split_once(':')?;
                name.eq_ignore_ascii_case("content-length").then(|| value.trim().parse().ok())?
            })
            .unwrap_or(0);
        while buf.len() < head_end + length {
            if !read_more(&mut stream, &mut buf) {
                return;
            }
        }
        let body: serde_json::Value =
            serde_json::from_slice(&buf[head_end..head_end + length]).unwrap_or_default();
        buf.drain(..head_end + length);
        seen.lock().unwrap().push(head.clone());
        let reply = serde_json::json!({
            "jsonrpc": "2.0",
            "id": body["id"],
            "error": { "code": -32001, "message": message(&head) },
        })
        .to_string();
        let response = format!(
            "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{reply}",
            reply.len()
        );
        if stream.write_all(response.as_bytes()).is_err() {
            return;
        }
        stream.flush().ok();
    }
}

#[test]
fn secrets_echoed_by_a_server_never_reach_any_output_or_saved_file() {
    let (url, heads) = echoing_node(|head| format!("denied {head}"));
    let url = keyed_url(&url.replace("http://", "http://carol:pw-secret-9@"));
    // The URL's credentials are the Authorization header; the token goes in a header of its own.
    let auth = format!("X-Session: Bearer {BEARER}");
    let api_key = format!("x-api-key: {HEADER_KEY}");
    let dir = std::env::temp_dir().join(format!("rpcbench-secrets-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let saved = dir.join("run.json");
    let saved_arg = saved.display().to_string();
    let output = rpcbench(&[
        "run", &url, "-m", "getSlot", "-n", "5", "-c", "1", "-H", &auth, "-H", &api_key, "--save", &saved_arg,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    // The credentials in the URL were sent, as curl sends them: base64("carol:pw-secret-9").
    let basic = "Y2Fyb2w6cHctc2VjcmV0LTk=";
    assert!(heads.lock().unwrap().iter().all(|head| head.contains(&format!("Authorization: Basic {basic}"))));
    let hidden = [PATH_KEY, QUERY_KEY, DASH_KEY, BEARER, HEADER_KEY, "carol", "pw-secret-9", basic];
    let check = |context: &str, printed: &str| {
        for secret in hidden {
            assert!(!printed.contains(secret), "{context}: {secret} was shown:\n{printed}");
        }
    };
    check("run", &everything(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("denied POST /v3/***"),
        "{}",
        everything(&output)
    );
    check("results file", &std::fs::read_to_string(&saved).unwrap());
    for format in ["text", "json", "markdown", "html", "csv"] {
        let output = rpcbench(&["report", &saved_arg, "--format", format]);
        assert_eq!(output.status.code(), Some(0), "{format}: {}", stderr(&output));
        check(format, &everything(&output));
    }
    // Sampling the node for a suite fails on its errors, and says so without the secrets.
    let output = rpcbench(&["run", &url, "--suite", "solana-rpc", "-n", "5", "-H", &auth, "-H", &api_key]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("denied POST"), "{}", stderr(&output));
    check("sampling", &everything(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn server_control_characters_are_escaped_on_the_terminal() {
    let (url, _) = echoing_node(|_| "boom \u{1b}[2J\u{1b}[H\u{7}gone\rover\u{9b}31m".to_string());
    let raw_controls =
        |text: &str| text.chars().filter(|c| c.is_control() && *c != '\n').collect::<Vec<char>>();
    let output = rpcbench(&["run", &url, "-m", "getSlot", "-n", "3", "-c", "1"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed = everything(&output);
    assert!(raw_controls(&printed).is_empty(), "{printed:?}");
    assert!(printed.contains("boom \\u001b[2J"), "{printed}");
    // An error quoting the server (sampling for a suite) is escaped too.
    let output = rpcbench(&["run", &url, "--suite", "solana-rpc", "-n", "3"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let printed = everything(&output);
    assert!(raw_controls(&printed).is_empty(), "{printed:?}");
    assert!(printed.contains("boom \\u001b[2J"), "{printed}");
}

#[test]
fn batches_and_http_calls_run_from_the_command_line() {
    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).expect("the ethereum node starts");
    let output = rpcbench(&[
        "run",
        &node.url(),
        "--method",
        "eth_blockNumber",
        "--batch",
        "10",
        "-c",
        "2",
        "-n",
        "20",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["outcomes"]["ok"], 200, "{report}");
    assert_eq!(report["batch"]["http_requests"], 20, "{report}");
    assert_eq!(report["batch"]["calls_per_request"], 10, "{report}");
    // A plain HTTP request: the mock answers a GET of its JSON-RPC path with a status.
    let output = rpcbench(&["run", &node.url(), "--http", "GET", "-n", "5", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(report["requests"]["total"], 5, "{report}");
    assert_eq!(report["method"], "GET /", "{report}");
}

#[test]
fn bad_batch_and_http_flags_exit_2_naming_the_flag() {
    let cases: [(&[&str], &str); 5] = [
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "--batch", "0"], "--batch"),
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "--batch", "10001"], "--batch"),
        (&["run", "http://127.0.0.1:1/", "--http", "GET", "--batch", "2"], "--batch"),
        (&["run", "http://127.0.0.1:1/", "--http", "FETCH"], "--http"),
        (
            &["run", "http://127.0.0.1:1/", "--method", "getSlot", "--batch", "2", "--fixed-id", "1"],
            "--batch",
        ),
    ];
    for (args, flag) in cases {
        let output = rpcbench(args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(flag), "{args:?} should name {flag}: {message}");
    }
}

#[test]
fn a_vegeta_targets_file_runs_round_robin_against_the_rest_api() {
    let node = MockServer::start(MockOptions::new(Chain::Ethereum)).expect("the ethereum node starts");
    let dir = std::env::temp_dir().join(format!("rpcbench-targets-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // The example file, pointed at the in-process node.
    let text = std::fs::read_to_string(example("seed-002-dapp-targets.txt"))
        .unwrap()
        .replace("http://127.0.0.1:8545/", &node.url());
    let path = dir.join("targets.txt");
    std::fs::write(&path, text).unwrap();
    let output = rpcbench(&[
        "run",
        "--targets",
        path.to_str().unwrap(),
        "-c",
        "1",
        "-n",
        "10",
        "--threads",
        "1",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["outcomes"]["ok"], 10, "{}", report["outcomes"]);
    // Five targets, ten requests: each target twice, in file order.
    let methods: Vec<(String, u64)> = report["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().to_string(), m["requests"].as_u64().unwrap()))
        .collect();
    assert_eq!(
        methods,
        vec![
            ("GET /gasprice".to_string(), 2),
            ("GET /block/last".to_string(), 2),
            ("GET /block/last/full".to_string(), 2),
            ("GET /balance/{hex}".to_string(), 2),
            ("GET /call?to={v}&data={v}".to_string(), 2),
        ]
    );
    // A malformed line is named by file, line and column; a URL as well as --targets is refused.
    std::fs::write(&path, "GET http://127.0.0.1:1/\nX-Bad header\n").unwrap();
    let output = rpcbench(&["run", "--targets", path.to_str().unwrap(), "-n", "1"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("targets.txt:2:1"), "{}", stderr(&output));
    let output = rpcbench(&["run", &node.url(), "--targets", path.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--targets"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn endless_input_files_are_refused_with_a_clear_error() {
    // /dev/zero used to be read until memory ran out (6.8 GB).
    for args in [
        &["run", "http://127.0.0.1:1/", "--body-file", "/dev/zero"][..],
        &["run", "http://127.0.0.1:1/", "--http", "POST", "--body-file", "/dev/zero"],
        &["run", "--targets", "/dev/zero"],
        &["report", "/dev/zero"],
        &["merge", "/dev/zero", "/dev/zero", "-o", "/dev/null"],
    ] {
        let started = std::time::Instant::now();
        let output = rpcbench(args);
        let message = stderr(&output);
        assert_ne!(output.status.code(), Some(0), "{args:?}");
        assert!(message.contains("larger than") && message.contains("/dev/zero"), "{args:?}: {message}");
        assert!(started.elapsed() < std::time::Duration::from_secs(20), "{args:?}");
    }
}

#[test]
fn smaller_usage_errors_name_what_is_at_fault_before_any_load() {
    let node = static_node();
    // A threshold on a call the run does not make: refused up front, not after the load.
    let started = std::time::Instant::now();
    let output =
        rpcbench(&["run", &node.url(), "-m", "getSlot", "-d", "30s", "--threshold", "nosuch: p99 < 1s"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("nosuch"), "{}", stderr(&output));
    assert!(started.elapsed() < std::time::Duration::from_secs(10));
    // An empty method names --method, not --params.
    let output = rpcbench(&["run", &node.url(), "-m", ""]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("--method"), "{}", stderr(&output));
    // The SLO's wrong comparison is pointed at.
    let output = rpcbench(&["capacity", &node.url(), "-m", "getSlot", "--slo", "p99>5ms"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("at character 4"), "{}", stderr(&output));
}

#[test]
fn an_interrupt_while_sampling_a_slow_node_exits_at_once_saying_so() {
    use std::time::Duration;
    // A node that takes 5 s per call: sampling its pools would take minutes.
    let mut options = MockOptions::new(Chain::Ethereum);
    options.faults.latency = Some(rpcbench::mock::Latency::fixed(Duration::from_secs(5)));
    let node = MockServer::start(options).expect("the mock node starts");
    let scenario = example("seed-002-rest-api.toml");
    let (output, took) = interrupt(&["run", &scenario, "--url", &node.url(), "-d", "1s"], "INT");
    assert!(took < Duration::from_secs(3), "{took:?}");
    assert_eq!(output.status.code(), Some(130), "{}", stderr(&output));
    assert!(stderr(&output).contains("rpcbench: interrupted"), "{}", stderr(&output));
}

#[test]
fn a_scenarios_connection_count_over_the_open_file_limit_is_named_in_the_file() {
    let node = static_node();
    let dir = std::env::temp_dir().join(format!("rpcbench-ulimit-scenario-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("many.toml");
    std::fs::write(
        &path,
        format!("[target]\nurl = \"{}\"\n[load]\nconnections = 100\nduration = \"30s\"\n[[call]]\nmethod = \"getSlot\"\n", node.url()),
    )
    .unwrap();
    let (output, _) = rpcbench_with_ulimit("-n 64", &["run", path.to_str().unwrap()]);
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(2), "{message}");
    assert!(message.contains("many.toml:4:15:"), "named at the file's key, not as --connections: {message}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_save_into_a_missing_folder_is_refused_before_any_target_runs() {
    // A multi-target scenario used to run every target, then print nothing and exit 1.
    let first = static_node();
    let second = static_node();
    let dir = std::env::temp_dir().join(format!("rpcbench-save-check-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("two.toml");
    std::fs::write(
        &path,
        format!(
            "[load]\nconnections = 1\nduration = \"20s\"\n[[targets]]\nname = \"a\"\nurl = \"{}\"\n\
             [[targets]]\nname = \"b\"\nurl = \"{}\"\n[[call]]\nmethod = \"getSlot\"\n",
            first.url(),
            second.url()
        ),
    )
    .unwrap();
    let missing = dir.join("no-such-folder").join("out.json");
    let started = std::time::Instant::now();
    let output = rpcbench(&["run", path.to_str().unwrap(), "--save", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("does not exist"), "{}", stderr(&output));
    assert!(started.elapsed() < std::time::Duration::from_secs(10), "refused before the 2 x 20 s of runs");
    // A single run is checked the same way.
    let output =
        rpcbench(&["run", &first.url(), "-m", "getSlot", "-d", "20s", "--save", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

/// The studies of examples/README.md, each its one command at a small scale against mock nodes.
#[test]
fn the_example_studies_run_at_a_small_scale() {
    use rpcbench::mock::{Faults, Latency};
    use std::time::Duration;
    let mock = |faults: Faults| {
        let mut options = MockOptions::new(Chain::Solana);
        options.faults = faults;
        MockServer::start(options).unwrap()
    };
    // Study 2: async, blocking and mixed handlers side by side.
    let ms = Duration::from_millis;
    let tokio = mock(Faults { latency: Some(Latency::fixed(ms(200))), ..Faults::default() });
    let native = mock(Faults { blocking_latency: Some(ms(200)), ..Faults::default() });
    let mixed = mock(Faults {
        latency: Some(Latency::fixed(ms(1))),
        latency_by_method: vec![("getBlock".into(), Latency::fixed(ms(200)))],
        ..Faults::default()
    });
    let output = rpcbench(&[
        "compare",
        &format!("tokio={}", tokio.url()),
        &format!("native={}", native.url()),
        &format!("mixed={}", mixed.url()),
        "-m",
        "getSlot",
        "-c",
        "5",
        "-n",
        "5",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Metric") && text.contains("bytes/response") && text.contains("Outcome"), "{text}");
    // The blocking server answers one request at a time: its p50 is several times the async one's.
    assert!(text.lines().any(|line| line.starts_with("p50") && line.contains('x')), "{text}");
    // Study 1: two builds side by side with the study's mix, then the connection limit.
    let (master, branch) = (mock(Faults::default()), mock(Faults::default()));
    let output = rpcbench(&[
        "compare",
        &format!("master={}", master.url()),
        &format!("branch={}", branch.url()),
        "--scenario",
        &example("seed-000-solana-validator.toml"),
        "-c",
        "4",
        "-d",
        "500ms",
        "--warmup",
        "0",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Per method") && text.contains("getBlock"), "{text}");
    let output = rpcbench(&[
        "capacity",
        &master.url(),
        "--connections",
        "--suite",
        "solana-seed",
        "--slo",
        "errors<0.1%",
        "--start-connections",
        "2",
        "--max-connections",
        "4",
        "--step",
        "300ms",
        "--warmup",
        "0s",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("connections"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
    // Study 4: two relays with the study's scenario, the second slowed on eth_call as the
    // study starts it, each one's process monitored by id (here, both live in this process).
    let relay_a = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let mut slowed = MockOptions::new(Chain::Ethereum);
    slowed.faults.latency_by_method = vec![("eth_call".into(), Latency::fixed(ms(2)))];
    let relay_b = MockServer::start(slowed).unwrap();
    let me = std::process::id().to_string();
    let output = rpcbench(&[
        "compare",
        &format!("relay-a={}", relay_a.url()),
        &format!("relay-b={}", relay_b.url()),
        "--scenario",
        &example("seed-003-json-rpc-relay.toml"),
        "-c",
        "2",
        "-d",
        "500ms",
        "--warmup",
        "0",
        "--monitor-pid",
        &format!("relay-a={me}"),
        "--monitor-pid",
        &format!("relay-b={me}"),
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("eth_call") && text.contains("target CPU avg"), "{text}");
    // Study 3: the four constant rates as stages, shortened as the small-scale form does (with
    // sed there), the SLA as thresholds.
    let api = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let scenario = std::fs::read_to_string(example("seed-002-dapp-constant-rate.toml")).unwrap();
    assert_eq!(scenario.matches("duration = \"4m\"").count(), 4, "the form's sed finds the stages");
    let short = std::env::temp_dir().join(format!("rpcbench-study3-{}.toml", std::process::id()));
    std::fs::write(&short, scenario.replace("duration = \"4m\"", "duration = \"300ms\"")).unwrap();
    let output = rpcbench(&["run", short.to_str().unwrap(), "--url", &api.url(), "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Per stage") && text.contains("Thresholds"), "{text}");
    std::fs::remove_file(&short).ok();
    // Study 5: a rate over connections held open, then the relay in front.
    let node = static_node();
    let output = rpcbench(&[
        "run",
        &example("seed-004-static-baseline.toml"),
        "--url",
        &node.url(),
        "--rate",
        "200",
        "-c",
        "4",
        "-d",
        "500ms",
        "--via-proxy",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(
        String::from_utf8_lossy(&output.stdout).contains("p50"),
        "{}",
        String::from_utf8_lossy(&output.stdout)
    );
}

#[test]
fn a_comparison_of_fewer_requests_than_rounds_sends_exactly_the_requests_asked_for() {
    let (a, b) = (static_node(), static_node());
    let output = rpcbench(&[
        "compare",
        &format!("a={}", a.url()),
        &format!("b={}", b.url()),
        "-m",
        "getSlot",
        "-c",
        "1",
        "-n",
        "3",
        "-q",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    for run in json["runs"].as_array().unwrap() {
        assert_eq!(run["report"]["requests"]["total"], 3, "{run}");
    }
}

/// A Solana mock node whose slots are an hour apart (its head does not move), `lag` behind.
fn solana_behind(lag: u64) -> MockServer {
    let mut options = MockOptions::new(Chain::Solana);
    options.slot_time = std::time::Duration::from_secs(3600);
    options.head_lag = lag;
    MockServer::start(options).expect("the solana node starts")
}

#[test]
fn a_comparison_of_chain_nodes_follows_their_heads_and_classes_the_far_one_stale() {
    let nodes = [solana_behind(0), solana_behind(3), solana_behind(30)];
    let targets: Vec<String> = ["tip", "three", "thirty"]
        .iter()
        .zip(&nodes)
        .map(|(name, node)| format!("{name}={}", node.url()))
        .collect();
    let mut args: Vec<&str> = vec!["compare"];
    args.extend(targets.iter().map(String::as_str));
    args.extend([
        "-m",
        "getSlot",
        "-n",
        "200",
        "-c",
        "2",
        "--rounds",
        "2",
        "--heads-interval",
        "5ms",
        "-q",
        "-f",
        "json",
    ]);
    let output = rpcbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let rows: Vec<&serde_json::Value> =
        json["runs"].as_array().unwrap().iter().map(|run| &run["report"]["heads"]["targets"][0]).collect();
    let lags: Vec<(u64, u64, u64)> = rows
        .iter()
        .map(|row| {
            (
                row["lag_p50"].as_u64().unwrap(),
                row["lag_p99"].as_u64().unwrap(),
                row["lag_max"].as_u64().unwrap(),
            )
        })
        .collect();
    assert_eq!(lags, [(0, 0, 0), (3, 3, 3), (30, 30, 30)], "{rows:?}");
    let samples = rows[2]["samples"].as_u64().unwrap();
    assert!(samples >= 1, "{rows:?}");
    assert_eq!(rows[2]["stale"].as_u64(), Some(samples), "{rows:?}");
    assert_eq!((rows[0]["stale"].as_u64(), rows[1]["stale"].as_u64()), (Some(0), Some(0)), "{rows:?}");
    // --no-heads turns it off; the text report names the stale threshold when it is on.
    let mut off = args.clone();
    off.push("--no-heads");
    let output = rpcbench(&off);
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert!(json["runs"][0]["report"].get("heads").is_none());
    let text_args: Vec<&str> = args.iter().copied().filter(|a| *a != "json" && *a != "-f").collect();
    let text = String::from_utf8(rpcbench(&text_args).stdout).unwrap();
    assert!(text.contains("Heads beside the load") && text.contains("stale: more than 20 behind"), "{text}");
}

#[test]
fn limits_reports_the_batch_limit_found_and_what_it_spent() {
    let mut options = MockOptions::new(Chain::Static);
    options.max_batch_len = 50;
    let node = MockServer::start(options).expect("the static node starts");
    let output = rpcbench(&["limits", &node.url(), "--max-requests", "40", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(json["batch"]["largest_accepted"], 50, "{json}");
    assert_eq!(json["batch"]["refusal"]["code"], -32600, "{json}");
    assert!(json["budget"]["requests"].as_u64().unwrap() <= 40, "{json}");
    assert_usage_error(&["limits", &node.url(), "--max-requests", "0"], "--max-requests");
    assert_usage_error(&["limits", "ftp://127.0.0.1:1/"], "scheme 'ftp'");
    assert_usage_error(&["limits", &node.url(), "--ws", "http://127.0.0.1:1/"], "--ws");
    assert_usage_error(
        &["limits", &node.url(), "--ws", "ws://127.0.0.1:1/", "--subscribe-params", "{"],
        "--subscribe-params",
    );
    node.stop();
    let mut options = MockOptions::new(Chain::Ethereum);
    options.ws_max_subscriptions = Some(12);
    options.ws_max_connections = Some(3);
    let node = MockServer::start(options).expect("the Ethereum node starts");
    let output = rpcbench(&["limits", &node.ws_url(), "--max-requests", "40"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(
        text.contains("12 subscriptions per socket, 3 WebSocket connections, 17 of 40 requests spent"),
        "{text}"
    );
    node.stop();
}

#[test]
fn limits_reports_the_largest_response_body_a_node_sends_whole() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.max_response_bytes = Some(2_000);
    let node = MockServer::start(options).expect("the Ethereum node starts");
    let args = ["limits", &node.url(), "-m", "eth_chainId", "--max-requests", "150"];
    let output = rpcbench(&[&args[..], &["-f", "json"]].concat());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    assert_eq!(json["response"]["largest_accepted"], 2_000, "{json}");
    assert_eq!(json["response"]["exact"], true, "{json}");
    assert!(json["budget"]["requests"].as_u64().unwrap() <= 150, "{json}");
    let output = rpcbench(&args);
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("largest response body") && text.contains("largest request body"), "{text}");
    assert!(text.contains("responses up to 2000 bytes"), "{text}");
    node.stop();
}

#[test]
fn a_run_against_several_targets_follows_their_heads_with_heads() {
    let nodes = [solana_behind(0), solana_behind(30)];
    let dir = std::env::temp_dir().join(format!("rpcbench-run-targets-heads-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("two.toml");
    let text = format!(
        "[[targets]]\nname = \"tip\"\nurl = \"{}\"\n[[targets]]\nname = \"thirty\"\nurl = \"{}\"\n[[call]]\nmethod = \"getSlot\"\n",
        nodes[0].url(),
        nodes[1].url()
    );
    std::fs::write(&scenario, text).unwrap();
    let path = scenario.to_str().unwrap();
    let args =
        ["run", path, "-n", "100", "-c", "2", "--heads", "--heads-interval", "5ms", "-q", "-f", "json"];
    let output = rpcbench(&args);
    assert!(output.status.success(), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let rows: Vec<&serde_json::Value> =
        json["runs"].as_array().unwrap().iter().map(|run| &run["report"]["heads"]["targets"][0]).collect();
    let named: Vec<(&str, u64, u64)> = rows
        .iter()
        .map(|row| {
            (row["name"].as_str().unwrap(), row["lag_max"].as_u64().unwrap(), row["stale"].as_u64().unwrap())
        })
        .collect();
    assert_eq!(named.len(), 2, "{rows:?}");
    assert_eq!((named[0].0, named[0].1, named[0].2), ("tip", 0, 0), "{rows:?}");
    assert_eq!((named[1].0, named[1].1), ("thirty", 30), "{rows:?}");
    assert_eq!(
        Some(named[1].2),
        rows[1]["samples"].as_u64(),
        "every sample of the far one is stale: {rows:?}"
    );
    // Without --heads, none.
    let quiet: Vec<&str> =
        args.iter().copied().filter(|a| !a.starts_with("--heads") && *a != "5ms").collect();
    let json: serde_json::Value = serde_json::from_slice(&rpcbench(&quiet).stdout).expect("JSON");
    assert!(json["runs"][0]["report"].get("heads").is_none(), "{json}");
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a_geyser_feed_with_a_wrong_x_token_exits_1_unauthenticated_and_the_token_is_never_printed() {
    let options = rpcbench::mock::GeyserMockOptions {
        slot_time: std::time::Duration::from_millis(30),
        x_token: Some("feed-secret-91d2".into()),
        ..Default::default()
    };
    let feed = rpcbench::mock::GeyserMock::start(options).expect("the gRPC feed starts");
    let url = feed.url();
    let output = rpcbench(&[
        "subscribe",
        &url,
        "--sub",
        "geyser-slot",
        "--x-token",
        "wrong-secret-5e0b",
        "-d",
        "300ms",
    ]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert!(printed.contains("grpc unauthenticated"), "{printed}");
    assert!(!printed.contains("wrong-secret-5e0b") && !printed.contains("feed-secret"), "{printed}");
    // The right token: slots without gaps, exit 0.
    let output = rpcbench(&[
        "subscribe",
        &url,
        "--sub",
        "geyser-slot",
        "--x-token",
        "feed-secret-91d2",
        "--subscribers",
        "4",
        "--subs-per-connection",
        "2",
        "-d",
        "400ms",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(text.contains("Subscribed: 4 of 4"), "{text}");
    assert!(!text.contains("feed-secret-91d2"), "{text}");
    // A Geyser kind on a ws:// URL, and a JSON-RPC kind on a gRPC feed, are refused by flag.
    assert_usage_error(&["subscribe", "ws://127.0.0.1:1/", "--sub", "geyser-slot"], "--sub");
    assert_usage_error(&["subscribe", &url, "--sub", "slot"], "--sub");
    assert_usage_error(&["subscribe", &url, "--sub", "geyser-tx:signer=A"], "--sub");
}

#[test]
fn subscribe_race_names_the_feed_behind_by_its_handicap() {
    let options = rpcbench::mock::GeyserMockOptions {
        slot_time: std::time::Duration::from_millis(30),
        transactions_per_slot: 0,
        mirrors: vec![std::time::Duration::from_millis(5)],
        ..Default::default()
    };
    let feed = rpcbench::mock::GeyserMock::start(options).expect("the gRPC feed starts");
    let fast = format!("fast={}", feed.url());
    let slow = format!("slow={}", feed.mirror_url(0).unwrap());
    let output = rpcbench(&["subscribe", "--race", &fast, &slow, "--sub", "geyser-stages", "-d", "800ms"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(text.contains("slow against fast: slower by"), "{text}");
    // One endpoint is no race; a ws:// endpoint is not a feed to race.
    assert_usage_error(&["subscribe", "--race", &fast, "--sub", "geyser-stages"], "--race");
    assert_usage_error(
        &["subscribe", "--race", &fast, "b=ws://127.0.0.1:1/", "--sub", "geyser-stages"],
        "--race",
    );
}

#[test]
fn capacity_heads_gives_every_step_its_lag_and_says_when_there_is_no_reference() {
    let hour = std::time::Duration::from_secs(3600);
    let start = |lag: u64| {
        let mut options = MockOptions::new(Chain::Solana);
        options.slot_time = hour;
        options.head_lag = lag;
        MockServer::start(options).expect("the mock node starts")
    };
    let (target, reference) = (start(2), start(0));
    let (url, reference_url) = (target.url(), reference.url());
    let search = [
        "capacity",
        &url,
        "-m",
        "getSlot",
        "--slo",
        "p99<1s",
        "--start-rate",
        "20",
        "--max-rate",
        "40",
        "--step",
        "300ms",
        "--warmup",
        "100ms",
        "--cooldown",
        "100ms",
        "--heads-interval",
        "20ms",
        "-q",
    ];
    let with_reference = [&search[..], &["--heads-ref", &reference_url, "-f", "json"]].concat();
    let output = rpcbench(&with_reference);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let steps = report["steps"].as_array().expect("steps");
    assert!(!steps.is_empty(), "{report}");
    for step in steps {
        // The target stays exactly 2 slots behind the reference.
        assert_eq!(
            (step["heads"]["lag_p50"].as_u64(), step["heads"]["lag_max"].as_u64()),
            (Some(2), Some(2))
        );
    }
    assert_eq!(report["heads"]["targets"].as_array().map(Vec::len), Some(2), "{report}");
    // Alone, the target is never behind itself: the report says lags cannot show falling behind.
    let alone = [&search[..], &["--heads"]].concat();
    let output = rpcbench(&alone);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("Lag p50/max") && text.contains("no reference node (--heads-ref URL)"), "{text}");
    target.stop();
    reference.stop();
    assert_usage_error(
        &["capacity", "http://127.0.0.1:1/", "-m", "getSlot", "--slo", "p99<1s", "--heads-ref", "x"],
        "--heads-ref",
    );
    assert_usage_error(
        &["serve", "--listen", "127.0.0.1:0", "--head-lag-under-load", "5"],
        "--head-lag-under-load",
    );
}

#[test]
fn a_geyser_filter_file_subscribes_its_tables_and_its_mistakes_exit_2_naming_file_line_and_column() {
    let options = rpcbench::mock::GeyserMockOptions {
        slot_time: std::time::Duration::from_millis(30),
        ..Default::default()
    };
    let feed = rpcbench::mock::GeyserMock::start(options).expect("the gRPC feed starts");
    let url = feed.url();
    let dir = std::env::temp_dir().join(format!("rpcbench-geyser-filters-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("filters.toml");
    std::fs::write(
        &good,
        format!(
            "commitment = \"processed\"\n[slots]\nstages = true\n[transactions]\ninclude = [\"{}\"]\nvote = false\n",
            rpcbench::mock::mock_account(1)
        ),
    )
    .unwrap();
    let good = good.to_str().unwrap().to_string();
    // The file's two tables, and a --sub added beside them.
    let output =
        rpcbench(&["subscribe", &url, "--filters", &good, "--sub", "geyser-blocks-meta", "-d", "400ms"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout).to_string();
    assert!(text.contains("geyser-stages, geyser-tx, geyser-blocks-meta"), "{text}");
    assert!(text.contains("Subscribed: 3 of 3") && text.contains("Slot stages:"), "{text}");
    let bad = dir.join("bad.toml");
    std::fs::write(&bad, "[slots]\ncommitment = \"fast\"\n").unwrap();
    let bad = bad.to_str().unwrap().to_string();
    assert_usage_error(&["subscribe", &url, "--filters", &bad], &format!("{bad}:2:14"));
    assert_usage_error(
        &["subscribe", &url, "--filters", &dir.join("none.toml").to_string_lossy()],
        "--filters",
    );
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn run_grpc_sends_unary_geyser_calls_at_a_rate_and_an_unknown_method_exits_2() {
    let options = rpcbench::mock::GeyserMockOptions {
        slot_time: std::time::Duration::from_millis(50),
        x_token: Some("unary-secret-7c1a".into()),
        ..Default::default()
    };
    let feed = rpcbench::mock::GeyserMock::start(options).expect("the gRPC feed starts");
    let url = feed.url();
    let output = rpcbench(&[
        "run",
        &url,
        "--method",
        "GetSlot",
        "--rate",
        "500",
        "-n",
        "100",
        "--x-token",
        "unary-secret-7c1a",
        "-f",
        "json",
        "-q",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["protocol"], "grpc", "{json}");
    assert_eq!(json["outcomes"]["ok"], 100, "{json}");
    assert_eq!(feed.truth().unary.load(std::sync::atomic::Ordering::Relaxed), 100);
    // A wrong token: every call fails as UNAUTHENTICATED, and no token is printed.
    let output =
        rpcbench(&["run", &url, "-m", "Ping", "-n", "20", "-c", "2", "--x-token", "wrong-secret-3f9e"]);
    let printed = format!("{}{}", String::from_utf8_lossy(&output.stdout), stderr(&output));
    assert!(printed.contains("grpc status: UNAUTHENTICATED"), "{printed}");
    assert!(!printed.contains("wrong-secret-3f9e") && !printed.contains("unary-secret-7c1a"), "{printed}");
    // A JSON-RPC method is no unary Geyser call: exit 2 naming --method, before any load.
    assert_usage_error(&["run", &url, "-m", "getSlot", "-n", "5"], "--method");
    assert_usage_error(&["run", "grpc://127.0.0.1:1", "-m", "GetBlock", "-n", "5"], "--method");
}
