//! What a `rpcbench tx` run gives as any other run does, on both chains, against the mock
//! nodes started in-process on 127.0.0.1:0: stages of the send rate, thresholds judged with
//! the run's exit status, `--save` read back by `rpcbench report` in every format, the JSON
//! checked against schema/tx.schema.json, and the live metrics endpoint.

use std::path::PathBuf;
use std::process::Command;
use std::time::Duration;

use common::{count, report_of, rpcbench, solana_node, tx};
use rpcbench::mock::{MockServer, SolanaTxOptions, TxPoolOptions};
use serde_json::Value;

mod common;

fn ethereum() -> MockServer {
    common::ethereum_node(Duration::from_millis(100), TxPoolOptions::default())
}

fn solana() -> MockServer {
    solana_node(Some(SolanaTxOptions::default()))
}

fn scratch(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-tx-report-{}-{name}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn assert_matches_schema(report: &Value) {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/../../schema/tx.schema.json");
    let schema: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    if let Err(errors) = schema.validate(report) {
        let messages: Vec<String> = errors.map(|e| format!("{}: {e}", e.instance_path)).collect();
        panic!("the report does not match tx.schema.json:\n{}\n{report}", messages.join("\n"));
    };
}

/// The per-second counts add up to the totals.
fn seconds_add_up(report: &Value, included: &str) {
    let seconds = report["per_second"].as_array().expect("per_second");
    let sum = |key: &str| seconds.iter().map(|s| s[key].as_u64().unwrap()).sum::<u64>();
    assert_eq!(sum("sent"), count(report, "sent"), "{report}");
    assert_eq!(sum("included"), count(report, included), "{report}");
}

#[test]
fn a_staged_tx_run_judges_its_thresholds_exits_1_on_a_breach_and_saves_a_report_report_renders() {
    let node = ethereum();
    let url = node.url();
    let dir = scratch("staged");
    let saved = dir.join("tx.json");
    let output = tx(
        &url,
        &[
            "--dev",
            "--senders",
            "2",
            "--stage",
            "1s:40,1s:80",
            "--inclusion-timeout",
            "20s",
            "--threshold",
            "included > 99%",
            // No answer comes back within a microsecond of its send: certain to fail.
            "--threshold",
            "ack p99 < 1us",
            "--save",
            saved.to_str().unwrap(),
            "-f",
            "json",
        ],
    );
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "a breached threshold exits 1: {stderr}");
    let report: Value = serde_json::from_slice(&output.stdout).expect("a JSON report");
    assert_matches_schema(&report);
    // A ramp from 0 to 40/s over 1 s, then from 40 to 80/s over 1 s: 20 + 60 sends.
    assert_eq!(count(&report, "sent"), 80, "{report}");
    assert_eq!(report["stages"].as_array().unwrap().len(), 2);
    seconds_add_up(&report, "included");
    let verdicts = report["thresholds"].as_array().unwrap();
    assert_eq!(verdicts[0]["passed"], true, "every send is included: {report}");
    assert_eq!(verdicts[1]["passed"], false, "{report}");
    let saved_report: Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(saved_report, report, "--save writes the JSON report");

    let render = |format: &str| {
        let output = rpcbench(&["report", saved.to_str().unwrap(), "-f", format]);
        assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
        String::from_utf8(output.stdout).unwrap()
    };
    let text = render("text");
    assert!(text.contains("included + reverted + dropped + rejected + pending = 80 == sent 80"), "{text}");
    assert!(text.contains("'ack p99 < 1us'") && text.contains("FAILED"), "{text}");
    assert!(render("markdown").contains("| included | 80 |"));
    let html = render("html");
    assert_eq!(html.matches("<svg").count(), 2, "sent vs included, and the latency distribution");
    let json: Value = serde_json::from_str(&render("json")).unwrap();
    assert_eq!(json, report);
    std::fs::remove_dir_all(dir).ok();
}

#[test]
fn a_tx_threshold_outside_the_grammar_exits_2_naming_the_flag_before_anything_is_sent() {
    let node = ethereum();
    let url = node.url();
    let output = tx(&url, &["--dev", "--rate", "10", "-n", "5", "--threshold", "blocks p99 < 3"]);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("--threshold"), "{stderr}");
    let output = tx(&url, &["--dev", "--rate", "10", "--stage", "1s:10"]);
    assert_eq!(output.status.code(), Some(2), "--rate and --stage together");
}

#[test]
fn a_solana_tx_run_that_meets_its_thresholds_exits_0_with_a_report_matching_the_schema() {
    let node = solana();
    let url = node.url();
    let args = [
        "--senders",
        "2",
        "--rate",
        "100",
        "-n",
        "60",
        "--threshold",
        "landed > 99%",
        "--threshold",
        "pending < 1",
    ];
    let output = tx(&url, &[&args[..], &["-f", "json", "--metrics-listen", "127.0.0.1:0"]].concat());
    let report = report_of(&output);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(stderr.contains("metrics: http://127.0.0.1:"), "the endpoint is announced: {stderr}");
    assert_matches_schema(&report);
    assert_eq!(count(&report, "landed"), 60, "{report}");
    seconds_add_up(&report, "landed");
    assert!(report["thresholds"].as_array().unwrap().iter().all(|v| v["passed"] == true), "{report}");
}

#[test]
fn two_shards_of_a_tx_run_send_disjoint_halves_from_their_own_senders_and_merge_into_the_whole() {
    let node = ethereum();
    let url = node.url();
    let dir = scratch("shards");
    let shard = |which: &str| {
        let path = dir.join(format!("shard-{}.json", &which[..1]));
        let child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
            .args(["tx", &url, "--dev", "--senders", "2", "--rate", "100", "-n", "80", "--shard", which])
            .args(["--inclusion-timeout", "20s", "--save", path.to_str().unwrap(), "-f", "json"])
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("the binary runs");
        (child, path)
    };
    // Side by side against one node: a sender shared by the shards would see its nonces
    // refused (too low, or replacement underpriced).
    let (mut one, one_path) = shard("1/2");
    let (mut two, two_path) = shard("2/2");
    assert!(one.wait().unwrap().success() && two.wait().unwrap().success());
    for path in [&one_path, &two_path] {
        let part: Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
        assert_eq!((count(&part, "sent"), count(&part, "rejected")), (40, 0), "{part}");
        assert_eq!(part["shard"]["count"], 2);
    }
    let merged_path = dir.join("merged.json");
    let output = rpcbench(&[
        "merge",
        one_path.to_str().unwrap(),
        two_path.to_str().unwrap(),
        "-o",
        merged_path.to_str().unwrap(),
        "--threshold",
        "included > 99%",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", String::from_utf8_lossy(&output.stderr));
    let merged: Value = serde_json::from_str(&std::fs::read_to_string(&merged_path).unwrap()).unwrap();
    assert_matches_schema(&merged);
    assert_eq!((count(&merged, "sent"), count(&merged, "included")), (80, 80), "{merged}");
    assert_eq!(count(&merged, "senders"), 4);
    assert_eq!(merged["shard"]["merged_from"], 2);
    seconds_add_up(&merged, "included");
    let missing = rpcbench(&["merge", one_path.to_str().unwrap(), "-o", merged_path.to_str().unwrap()]);
    assert_eq!(missing.status.code(), Some(2), "a missing shard is refused");
    assert!(String::from_utf8_lossy(&missing.stderr).contains("2/2 missing"));
    std::fs::remove_dir_all(dir).ok();
}
