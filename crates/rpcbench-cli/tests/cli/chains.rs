//! Comparisons of chain nodes and their heads, `limits`, and `capacity --heads`.

use super::*;

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
fn capacity_of_a_scenario_follows_its_other_targets_as_head_references() {
    // The searched node 2 slots behind, the scenario's other target at the tip.
    let (target, reference) = (solana_behind(2), solana_behind(0));
    let dir = std::env::temp_dir().join(format!("rpcbench-capacity-references-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let scenario = dir.join("two.toml");
    std::fs::write(
        &scenario,
        format!(
            "[[targets]]\nname = \"behind\"\nurl = \"{}\"\n[[targets]]\nname = \"tip\"\nurl = \"{}\"\n[[call]]\nmethod = \"getSlot\"\n",
            target.url(),
            reference.url()
        ),
    )
    .unwrap();
    let path = scenario.to_str().unwrap();
    let search = |extra: &[&str]| -> Vec<String> {
        let mut args: Vec<String> = [
            "capacity",
            path,
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
        ]
        .iter()
        .map(|a| a.to_string())
        .collect();
        args.extend(extra.iter().map(|a| a.to_string()));
        args
    };
    let lags = |json: &serde_json::Value| -> Vec<(Option<u64>, Option<u64>)> {
        let steps = json["steps"].as_array().expect("steps");
        steps.iter().map(|s| (s["heads"]["lag_p50"].as_u64(), s["heads"]["lag_max"].as_u64())).collect()
    };
    // Several targets and --heads: the first searched, the other followed as its reference.
    let args = search(&["--heads", "-f", "json"]);
    let output = rpcbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("the scenario's other target(s) tip"), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    let followed = json["heads"]["targets"].as_array().expect("heads");
    assert_eq!(followed.len(), 2, "{json}");
    assert_eq!(followed[1]["name"], "tip", "{json}");
    let steps = lags(&json);
    assert!(!steps.is_empty() && steps.iter().all(|lag| *lag == (Some(2), Some(2))), "{steps:?}");
    // The text names the reference, and says nothing of a missing one.
    let args = search(&["--heads", "-q"]);
    let output = rpcbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("across the target and tip"), "{text}");
    assert!(!text.contains("no reference node"), "{text}");
    // --url replaces the targets: the scenario's other one is still the reference.
    let url = target.url();
    let args = search(&["--url", &url, "--heads", "-q", "-f", "json"]);
    let output = rpcbench(&args.iter().map(String::as_str).collect::<Vec<_>>());
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON");
    assert_eq!(json["heads"]["targets"].as_array().map(Vec::len), Some(2), "{json}");
    assert!(lags(&json).iter().all(|lag| *lag == (Some(2), Some(2))), "{json}");
    // Without --heads, several targets are still one too many for a search.
    let args = search(&["-q"]);
    assert_usage_error(&args.iter().map(String::as_str).collect::<Vec<_>>(), "--heads to search the first");
    target.stop();
    reference.stop();
    std::fs::remove_dir_all(&dir).unwrap();
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
