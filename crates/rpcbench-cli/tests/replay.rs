//! `rpcbench replay` as a user runs it: traffic files (whole, cut by a killed recorder, with an
//! edited line), bad flags and empty files refused with exit 2 naming the flag or the place,
//! response checks in the report and the results file. Servers are mock nodes started
//! in-process on 127.0.0.1:0.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use rpcbench::mock::{Chain, Dispatcher, MockOptions, MockServer};
use rpcbench::traffic::{response_digest, TrafficEntry, TrafficHeader};

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-cli-replay-{name}-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn static_node() -> MockServer {
    MockServer::start(MockOptions::new(Chain::Static)).expect("the static node starts")
}

/// A traffic file's text: `methods` recorded 1 ms apart with the static node's real answers
/// (or, for the indexes in `edited`, another answer's digest), ignoring `ignored`.
fn traffic_text(methods: &[&str], edited: &[usize], ignored: &[&str]) -> String {
    let dispatcher = Dispatcher::new(&MockOptions::new(Chain::Static)).unwrap();
    let ignored: Vec<_> =
        ignored.iter().map(|path| rpcbench::compare::FieldPath::parse(path).unwrap()).collect();
    let mut text =
        serde_json::to_string(&TrafficHeader::new("http://127.0.0.1:1/?key=SECRET", &ignored)).unwrap();
    text.push('\n');
    for (index, method) in methods.iter().enumerate() {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{index},"method":"{method}"}}"#);
        let answer = dispatcher.answer(body.as_bytes()).unwrap();
        let mut entry = TrafficEntry::for_request(index as u64 * 1000, body.as_bytes());
        entry.status = 200;
        entry.response_hash = match edited.contains(&index) {
            true => response_digest(b"{\"result\":\"something else\"}", &ignored),
            false => response_digest(&answer, &ignored),
        };
        text += &serde_json::to_string(&entry).unwrap();
        text.push('\n');
    }
    text
}

fn write(dir: &Path, name: &str, text: &str) -> String {
    let path = dir.join(name);
    std::fs::write(&path, text).unwrap();
    path.display().to_string()
}

fn json_report(output: &Output) -> serde_json::Value {
    assert_eq!(output.status.code(), Some(0), "{}", stderr(output));
    serde_json::from_slice(&output.stdout).expect("JSON on stdout")
}

fn method_counts(report: &serde_json::Value) -> Vec<(String, u64)> {
    report["methods"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| (m["name"].as_str().unwrap().to_string(), m["requests"].as_u64().unwrap()))
        .collect()
}

#[test]
fn replay_refuses_bad_flags_and_files_with_exit_2_naming_them() {
    let dir = temp_dir("usage");
    let good = write(&dir, "good.jsonl", &traffic_text(&["getSlot", "getHealth"], &[], &[]));
    let header_only = traffic_text(&[], &[], &[]);
    let empty = write(&dir, "empty.jsonl", &header_only);
    let bodies = write(&dir, "bodies.jsonl", "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSlot\"}\n");
    let url = "http://127.0.0.1:1/";
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["replay", &good, url, "--speed", "0"], "--speed"),
        (vec!["replay", &good, url, "--speed", "-1"], "--speed"),
        (vec!["replay", &good, url, "--speed", "fast"], "--speed"),
        (vec!["replay", &good, url, "--rate", "0"], "--rate"),
        (vec!["replay", &good, url, "--speed", "2x", "--rate", "10"], "--speed"),
        (vec!["replay", &empty, url], "nothing to replay"),
        (vec!["replay", &bodies, url, "--speed", "2x"], "--speed"),
        (vec!["replay", &bodies, url, "--from", "bodies", "--check-responses"], "--check-responses"),
        (
            vec!["replay", &good, url, "--ignore-field", "result.slot"],
            "record with --ignore-field result.slot",
        ),
        (vec!["replay", &good, url, "--method", "getSlot"], "--method"),
        (vec!["replay", "/nonexistent/t.jsonl", url], "/nonexistent/t.jsonl"),
        (vec!["replay", &good, "ws://127.0.0.1:1/"], "URL"),
    ];
    for (args, expected) in cases {
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(expected), "{args:?} should say {expected}: {message}");
        assert!(!message.contains("panicked") && !message.contains("SECRET"), "{message}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_cut_last_line_is_named_and_the_complete_lines_replayed() {
    let node = static_node();
    let dir = temp_dir("cut");
    let text = traffic_text(&["getSlot", "getHealth", "getSlot", "getSlot"], &[], &[]);
    let cut = write(&dir, "cut.jsonl", &text[..text.len() - 20]);
    let output = rpcbench(&["replay", &cut, &node.url(), "--speed", "4x", "-f", "json"]);
    let report = json_report(&output);
    assert!(stderr(&output).contains("cut.jsonl:5: the last line was cut"), "{}", stderr(&output));
    assert_eq!(report["requests"]["total"], 3);
    assert_eq!(method_counts(&report), [("getSlot".to_string(), 2), ("getHealth".to_string(), 1)]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_edited_line_is_refused_with_its_place_or_skipped() {
    let node = static_node();
    let dir = temp_dir("edited");
    let text = traffic_text(&["getSlot", "getHealth", "getSlot", "getSlot"], &[], &[]);
    let mut lines: Vec<&str> = text.lines().collect();
    lines[2] = "{\"offset_us\": oops}";
    let edited = write(&dir, "edited.jsonl", &(lines.join("\n") + "\n"));
    let output = rpcbench(&["replay", &edited, &node.url()]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("edited.jsonl:3:15"), "{}", stderr(&output));

    let output = rpcbench(&["replay", &edited, &node.url(), "--skip-bad-lines", "-c", "2", "-f", "json"]);
    let report = json_report(&output);
    assert!(stderr(&output).contains("skipped 1 line(s) that do not parse (line 3)"), "{}", stderr(&output));
    assert_eq!(method_counts(&report), [("getSlot".to_string(), 3)]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn changed_responses_show_in_the_report_the_results_file_and_thresholds() {
    let node = static_node();
    let dir = temp_dir("check");
    let file =
        write(&dir, "t.jsonl", &traffic_text(&["getSlot", "getHealth", "getSlot", "getSlot"], &[0, 2], &[]));
    let saved = dir.join("results.json").display().to_string();
    let args = ["replay", &file, &node.url(), "--check-responses", "-c", "1", "-f", "json", "--save", &saved];
    let report = json_report(&rpcbench(&args));
    let get_slot = &report["methods"][0];
    assert_eq!(get_slot["name"], "getSlot");
    assert_eq!(get_slot["changed_responses"], 2, "{get_slot}");
    assert_eq!(get_slot["errors"], 2, "{get_slot}");
    assert!(report["methods"][1].get("changed_responses").is_none(), "none for getHealth");
    assert_eq!(report["outcomes"]["invalid"]["changed_response"], 2);
    assert_eq!(report["outcomes"]["ok"], 2);
    let results = std::fs::read_to_string(&saved).unwrap();
    assert!(results.contains("changed_response"), "the results file keeps them");
    let rendered = rpcbench(&["report", &saved, "-f", "markdown"]);
    let markdown = String::from_utf8_lossy(&rendered.stdout);
    assert!(
        rendered.status.success() && markdown.contains("changed_response"),
        "{markdown}{}",
        stderr(&rendered)
    );

    // The same file without the check: nothing changed.
    let report = json_report(&rpcbench(&["replay", &file, &node.url(), "-f", "json"]));
    assert_eq!(report["outcomes"]["ok"], 4);
    // A threshold on errors catches changed answers.
    let output =
        rpcbench(&["replay", &file, &node.url(), "--check-responses", "-q", "--threshold", "errors < 1%"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_ignored_field_of_the_recording_may_be_named_at_replay() {
    let node = static_node();
    let dir = temp_dir("ignore");
    let file = write(&dir, "t.jsonl", &traffic_text(&["getSlot", "getHealth"], &[], &["id"]));
    let report = json_report(&rpcbench(&[
        "replay",
        &file,
        &node.url(),
        "--check-responses",
        "--ignore-field",
        "id",
        "-f",
        "json",
    ]));
    assert_eq!(report["outcomes"]["ok"], 2, "{}", report["outcomes"]);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_replays_one_recording_against_every_target() {
    let (a, b) = (static_node(), static_node());
    let dir = temp_dir("compare");
    let file = write(&dir, "t.jsonl", &traffic_text(&["getSlot", "getHealth", "getSlot"], &[], &[]));
    let saved = dir.join("runs");
    let output = rpcbench(&[
        "compare",
        &format!("a={}", a.url()),
        &format!("b={}", b.url()),
        "--replay",
        &file,
        "--cooldown",
        "0s",
        "-q",
        "--save-dir",
        &saved.display().to_string(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    for name in ["a.json", "b.json"] {
        let results: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(saved.join(name)).unwrap()).unwrap();
        let text = results.to_string();
        assert!(text.contains("getHealth") && text.contains("getSlot"), "{name}");
    }
    let report = rpcbench(&["report", &saved.join("a.json").display().to_string(), "-f", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&report.stdout).unwrap();
    assert_eq!(report["requests"]["total"], 3, "one pass of the file per target");
    std::fs::remove_dir_all(&dir).ok();
}
