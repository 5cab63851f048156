//! Built-in suites and sampled pools through the binary: every suite runs with zero errors
//! against its mock node, `suites` lists them, and mistakes exit 2 naming what is wrong.

use std::process::{Command, Output};

use rpcbench::mock::{Chain, MockOptions, MockServer};

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// Runs a suite against `url` briefly and checks that every request succeeded.
fn assert_suite_runs_clean(suite: &str, url: &str) -> serde_json::Value {
    let output =
        rpcbench(&["run", url, "--suite", suite, "-c", "4", "-d", "700ms", "--warmup", "0", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{suite}: {}", stderr(&output));
    assert!(stderr(&output).contains("rpcbench: pools sampled"), "{suite}: {}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert!(report["requests"]["total"].as_u64().unwrap() > 0, "{suite}");
    assert_eq!(report["requests"]["errors"], 0, "{suite}: {}", report["outcomes"]);
    for threshold in report["thresholds"].as_array().unwrap() {
        assert_eq!(threshold["passed"], true, "{suite}: {threshold}");
    }
    report
}

#[test]
fn every_suite_runs_with_zero_errors_against_its_mock_node() {
    let solana = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let ethereum = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    for (suite, url) in [
        ("solana-seed", solana.url()),
        ("solana-rpc", solana.url()),
        ("ethereum-relay", ethereum.url()),
        ("ethereum-dapp", ethereum.url()),
    ] {
        let report = assert_suite_runs_clean(suite, &url);
        let methods = report["methods"].as_array().map_or(0, Vec::len);
        assert!(methods >= 4, "{suite}: every call of the mix is reported: {}", report["methods"]);
    }
}

#[test]
fn suites_lists_every_suite_on_one_line() {
    let output = rpcbench(&["suites"]);
    assert_eq!(output.status.code(), Some(0));
    let text = String::from_utf8_lossy(&output.stdout);
    for name in ["solana-seed", "solana-rpc", "ethereum-relay", "ethereum-dapp"] {
        assert_eq!(text.lines().filter(|line| line.starts_with(&format!("{name} "))).count(), 1, "{text}");
    }
}

#[test]
fn suite_mistakes_exit_2_naming_the_fault() {
    let cases: [(&[&str], &str); 3] = [
        (&["run", "http://127.0.0.1:1/", "--suite", "nope"], "no suite named 'nope'"),
        (&["run", "http://127.0.0.1:1/", "--suite", "solana-rpc", "--method", "getSlot"], "--method"),
        (&["run", "http://127.0.0.1:1/", "--method", "getSlot", "--pools", "p.json"], "--pools"),
    ];
    for (args, message) in cases {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(message), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn a_target_that_cannot_be_sampled_is_a_failure_at_run_time() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let url = format!("http://127.0.0.1:{port}/");
    let output = rpcbench(&["run", &url, "--suite", "ethereum-relay", "-d", "200ms"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("sampling"), "{}", stderr(&output));
}

#[test]
fn a_scenario_without_a_url_needs_one_and_pools_are_cached_next_to_it() {
    let dir = std::env::temp_dir().join(format!("rpcbench-suites-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("pooled.toml");
    std::fs::write(
        &path,
        "[sample]\ncache = \"pools.json\"\n[generators]\nslot = { pool = \"slots\" }\n[[call]]\nmethod = \"getBlock\"\nparams = [\"{slot}\"]\n",
    )
    .unwrap();
    let scenario = path.to_str().unwrap();
    let output = rpcbench(&["run", scenario, "-n", "5"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no URL"), "{}", stderr(&output));

    let solana = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let url = solana.url();
    let output = rpcbench(&["run", scenario, "--url", &url, "-c", "2", "-n", "50", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(dir.join("pools.json").is_file(), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["requests"]["errors"], 0, "{}", report["outcomes"]);
    // The rerun reads the file.
    let output = rpcbench(&["run", scenario, "--url", &url, "-c", "2", "-n", "50", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("pools read from"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_scenario_with_several_targets_runs_each_in_turn_and_compares_them() {
    // Also pins: a multi-target --save into a missing folder is refused before the runs.
    let dir = std::env::temp_dir().join(format!("rpcbench-targets-cli-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let healthy = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.error_rate = 0.5;
    let failing = MockServer::start(options).unwrap();
    let path = dir.join("two.toml");
    // Pools are sampled from the first target and every target gets the same parameters.
    std::fs::write(
        &path,
        format!(
            "thresholds = [\"errors < 1%\"]\n\
             [load]\nconnections = 2\nrequests = 60\ncooldown = \"100ms\"\n\
             [generators]\nslot = {{ pool = \"slots\" }}\n\
             [[targets]]\nname = \"healthy\"\nurl = \"{}\"\n\
             [[targets]]\nname = \"failing\"\nurl = \"{}/v3/0123456789abcdef0123\"\nheaders = {{ \"x-api-key\" = \"hunter2-secret\" }}\n\
             [[call]]\nmethod = \"getBlock\"\nparams = [\"{{slot}}\", {{ transactionDetails = \"none\" }}]\n",
            healthy.url(),
            failing.url().trim_end_matches('/'),
        ),
    )
    .unwrap();
    let scenario = path.to_str().unwrap();
    let saved = dir.join("out.json");
    let output = rpcbench(&["run", scenario, "-f", "json", "--save", saved.to_str().unwrap()]);
    // The failing target breaches the threshold: exit 1, after both ran.
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(!stdout.contains("0123456789abcdef0123") && !stdout.contains("hunter2"), "{stdout}");
    assert!(!stderr(&output).contains("0123456789abcdef0123"), "{}", stderr(&output));
    let comparison: serde_json::Value = serde_json::from_str(&stdout).unwrap();
    assert_eq!(comparison["baseline"], "healthy");
    let runs = comparison["runs"].as_array().unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(runs[0]["name"], "healthy");
    assert_eq!(runs[1]["name"], "failing");
    for run in runs {
        assert_eq!(run["report"]["requests"]["total"], 60, "{run}");
    }
    assert_eq!(runs[0]["report"]["requests"]["errors"], 0);
    assert_eq!(runs[0]["report"]["thresholds"][0]["passed"], true);
    assert!(runs[1]["report"]["requests"]["errors"].as_u64().unwrap() > 0);
    assert_eq!(runs[1]["report"]["thresholds"][0]["passed"], false);
    assert!(dir.join("out.healthy.json").is_file() && dir.join("out.failing.json").is_file());

    // Text: each target's report, then the table with ratios; --url runs one target only.
    let output = rpcbench(&["run", scenario, "-n", "20", "--threshold", "errors < 100%"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    let text = String::from_utf8_lossy(&output.stdout);
    assert!(text.contains("== healthy ==") && text.contains("== failing =="), "{text}");
    assert!(text.contains("rpcbench comparison of 2 run(s); ratios against healthy"), "{text}");
    let output = rpcbench(&["run", scenario, "--url", &healthy.url(), "-n", "20", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["requests"]["total"], 20);
    // A --save into a folder that does not exist is refused before anything runs (it used to
    // run every target and then lose every result).
    let missing = dir.join("no-such-folder").join("out.json");
    let started = std::time::Instant::now();
    let output = rpcbench(&["run", scenario, "--save", missing.to_str().unwrap()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--save") && stderr(&output).contains("does not exist"),
        "{}",
        stderr(&output)
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(5), "refused before the runs");
    // Monitoring needs a single target.
    let output = rpcbench(&["run", scenario, "--monitor-pid", &std::process::id().to_string()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--monitor-pid"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

/// The `A..=B` of the line that says what sampling found.
fn sampled_range(stderr: &str) -> (u64, u64) {
    let line = stderr.lines().find(|line| line.contains("pools sampled")).expect("a pools line");
    let range = line.split(" (ethereum ").nth(1).and_then(|rest| rest.split([')', ',']).next()).unwrap();
    let (oldest, head) = range.split_once("..=").unwrap();
    (oldest.parse().unwrap(), head.parse().unwrap())
}

#[test]
fn the_sampling_window_is_set_from_the_command_line() {
    let ethereum = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let url = ethereum.url();
    let output =
        rpcbench(&["run", &url, "--suite", "ethereum-relay", "-c", "2", "-n", "20", "--sample-blocks", "7"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let (oldest, head) = sampled_range(&stderr(&output));
    assert_eq!(head - oldest + 1, 7, "{}", stderr(&output));
    assert!(!stderr(&output).contains("behind the head"), "run samples up to the head: {}", stderr(&output));
    let output = rpcbench(&["run", &url, "--suite", "ethereum-relay", "-n", "1", "--sample-blocks", "0"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--sample-blocks"), "{}", stderr(&output));
}

#[test]
fn compare_samples_a_margin_behind_the_first_targets_head_and_says_so() {
    let first = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let second = MockServer::start(MockOptions::new(Chain::Ethereum)).unwrap();
    let (a, b) = (format!("a={}", first.url()), format!("b={}", second.url()));
    let args =
        ["compare", &a, &b, "--suite", "ethereum-relay", "-c", "2", "-n", "20", "--sample-blocks", "7"];
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let text = stderr(&output);
    let (oldest, head) = sampled_range(&text);
    assert_eq!(head - oldest + 1, 7, "{text}");
    assert!(text.contains(&format!("5 blocks behind the head {}", head + 5)), "{text}");
}

#[test]
fn limits_rate_with_a_suite_finds_a_sustained_rate_for_each_of_its_calls() {
    let mut options = MockOptions::new(Chain::Ethereum);
    options.faults.rate_limit = Some(50.0);
    options.faults.rate_limit_burst = Some(10.0);
    let node = MockServer::start(options).unwrap();
    let output = rpcbench(&[
        "limits",
        &node.url(),
        "--rate",
        "--suite",
        "ethereum-relay",
        "--start-rate",
        "40",
        "--rate-step",
        "500ms",
        "--max-burst",
        "100",
        "--max-requests",
        "5000",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).expect("JSON on stdout");
    let sustained = report["rate"]["sustained"].as_array().expect("a sustained rate per call");
    assert!(sustained.len() >= 4, "every call of the suite is probed: {sustained:?}");
    for call in sustained {
        let rate = call["sustained_rate"].as_f64().unwrap_or_else(|| panic!("a rate is found: {call}"));
        assert!((35.0..=65.0).contains(&rate), "the node's 50/s: {call}");
    }
    assert!(report["budget"]["requests"].as_u64().unwrap() <= 5000, "{}", report["budget"]);
    let unknown = rpcbench(&["limits", &node.url(), "--rate", "--suite", "nope"]);
    assert_eq!(unknown.status.code(), Some(2), "{}", stderr(&unknown));
    assert!(stderr(&unknown).contains("--suite: no suite named 'nope'"), "{}", stderr(&unknown));
    node.stop();
}
