//! `subscribe` over WebSocket and gRPC (Geyser): flags, reports, saved reports, thresholds,
//! races, filter files and a wrong token.

use super::*;

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
