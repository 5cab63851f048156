//! A split run played on loopback as a Kubernetes Indexed Job would play it: N processes of
//! the real binary, `--shard i/N --start-at`, against one server, then `merge`. The merged
//! totals are the whole workload exactly, no request id is sent twice, and the merged
//! histograms are the union of the shards'.

use std::collections::HashSet;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Command, Output, Stdio};
use std::sync::{Arc, Mutex};

use rpcbench::record::Totals;
use rpcbench::results::ResultsFile;

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

/// The manifests `k8s-job` printed: JSON documents separated by `---`.
fn printed_manifests(stdout: &[u8]) -> Vec<serde_json::Value> {
    String::from_utf8_lossy(stdout)
        .split("---\n")
        .filter(|doc| !doc.trim().is_empty())
        .map(|doc| serde_json::from_str(doc).unwrap())
        .collect()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

/// A JSON-RPC server on 127.0.0.1:0 that answers every call and keeps every id it was sent.
fn id_recording_server() -> (SocketAddr, Arc<Mutex<Vec<u64>>>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    let ids = Arc::new(Mutex::new(Vec::new()));
    let seen = ids.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let seen = seen.clone();
            std::thread::spawn(move || serve(stream, &seen));
        }
    });
    (addr, ids)
}

fn serve(stream: TcpStream, ids: &Mutex<Vec<u64>>) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut length = 0usize;
        loop {
            let mut line = String::new();
            if reader.read_line(&mut line).unwrap_or(0) == 0 {
                return;
            }
            let line = line.trim_end();
            if line.is_empty() {
                break;
            }
            if let Some((name, value)) = line.split_once(':') {
                if name.eq_ignore_ascii_case("content-length") {
                    length = value.trim().parse().unwrap_or(0);
                }
            }
        }
        let mut body = vec![0; length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        let request: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
        let id = request["id"].as_u64().unwrap_or(u64::MAX);
        ids.lock().unwrap().push(id);
        let answer = format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"0x1"}}"#);
        let reply = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{answer}", answer.len());
        if writer.write_all(reply.as_bytes()).is_err() {
            return;
        }
    }
}

#[test]
fn shards_of_a_split_run_merge_into_exactly_the_whole_workload() {
    let (addr, ids) = id_recording_server();
    let url = format!("http://{addr}/");
    let dir = std::env::temp_dir().join(format!("rpcbench-shards-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    // Every shard waits for the same instant, two seconds from now.
    let start = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs() + 2;
    let start = start.to_string();
    // 1000 requests over 3 shards of different thread counts: 334 + 333 + 333.
    let children: Vec<_> = (1..=3)
        .map(|shard| {
            let save = dir.join(format!("shard-{shard}.json"));
            Command::new(env!("CARGO_BIN_EXE_rpcbench"))
                .args(["run", &url, "-m", "getSlot", "-c", "4", "-n", "1000", "-q", "-f", "json"])
                .args([
                    "--threads",
                    &shard.to_string(),
                    "--shard",
                    &format!("{shard}/3"),
                    "--start-at",
                    &start,
                ])
                .args(["--save", save.to_str().unwrap()])
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .expect("the binary runs")
        })
        .collect();
    let mut shard_counts = Vec::new();
    for child in children {
        let output = child.wait_with_output().unwrap();
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
        shard_counts.push(report["requests"]["total"].as_u64().unwrap());
    }
    shard_counts.sort_unstable();
    assert_eq!(shard_counts, vec![333, 333, 334]);
    // The server saw the whole workload, no id twice.
    let seen = ids.lock().unwrap().clone();
    assert_eq!(seen.len(), 1000);
    assert_eq!(seen.iter().collect::<HashSet<_>>().len(), 1000, "an id was sent twice");

    // A missing shard is named; --partial merges what is there.
    let shard = |n: u32| dir.join(format!("shard-{n}.json")).to_str().unwrap().to_string();
    let merged = dir.join("merged.json").to_str().unwrap().to_string();
    let output = rpcbench(&["merge", &shard(1), &shard(2), "-o", &merged]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("shard(s) 3/3 missing"), "{}", stderr(&output));
    let output = rpcbench(&["merge", &shard(1), &shard(2), &shard(1), "-o", &merged]);
    assert_eq!(output.status.code(), Some(2));
    let output = rpcbench(&["merge", &shard(1), &shard(2), "-o", &merged, "--partial"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));

    // All three: the whole workload, thresholds judged after the merge.
    let output =
        rpcbench(&["merge", &shard(1), &shard(2), &shard(3), "-o", &merged, "--threshold", "errors < 1%"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let output =
        rpcbench(&["merge", &shard(1), &shard(2), &shard(3), "-o", &merged, "--threshold", "p99 < 1us"]);
    assert_eq!(output.status.code(), Some(1), "a breach of the fleet's figures exits 1: {}", stderr(&output));
    let output = rpcbench(&["report", &merged, "--format", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["requests"]["total"], 1000);
    assert_eq!(report["requests_limit"], 1000, "the whole run's count, not three times it");
    assert_eq!(report["load"]["connections"], 4, "the whole run's connections");
    // The merged histograms are the union of the shards'.
    let mut union = Totals::default();
    for n in 1..=3 {
        union.merge(&ResultsFile::load(std::path::Path::new(&shard(n))).unwrap().to_record().unwrap().totals);
    }
    let whole = ResultsFile::load(std::path::Path::new(&merged)).unwrap().to_record().unwrap().totals;
    assert_eq!(whole.latency, union.latency);
    assert_eq!(whole.counts, union.counts);
    // Every merged second's percentiles are those of the union of the shards' seconds.
    let decode = |text: &str| {
        use base64::Engine as _;
        let bytes = base64::engine::general_purpose::STANDARD.decode(text).unwrap();
        rpcbench::record::deserialize_histogram(&bytes)
    };
    let merged_file = ResultsFile::load(std::path::Path::new(&merged)).unwrap();
    assert_eq!(merged_file.series.latency.len(), merged_file.series.points.len());
    for point in &merged_file.series.points {
        let mut second: Option<hdrhistogram::Histogram<u64>> = None;
        for n in 1..=3 {
            let file = ResultsFile::load(std::path::Path::new(&shard(n))).unwrap();
            for (theirs, text) in file.series.points.iter().zip(&file.series.latency) {
                if theirs[0] == point[0] {
                    if let Some(histogram) = decode(text) {
                        second
                            .get_or_insert_with(rpcbench::record::new_coarse_histogram)
                            .add(&histogram)
                            .unwrap();
                    }
                }
            }
        }
        if let Some(second) = second {
            assert_eq!(point[3], second.value_at_quantile(0.5), "p50 of second {}", point[0]);
            assert_eq!(point[4], second.value_at_quantile(0.99), "p99 of second {}", point[0]);
        }
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn bad_shard_flags_exit_2_naming_the_flag() {
    for (args, flag) in [
        (&["run", "http://127.0.0.1:1/", "-m", "getSlot", "--shard", "3/2"][..], "--shard"),
        (&["run", "http://127.0.0.1:1/", "-m", "getSlot", "--shard", "0/0"], "--shard"),
        (&["run", "http://127.0.0.1:1/", "-m", "getSlot", "--shard", "one"], "--shard"),
        (&["run", "http://127.0.0.1:1/", "-m", "getSlot", "--start-at", "tomorrow"], "--start-at"),
    ] {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(flag), "{args:?}: {}", stderr(&output));
    }
    let output = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["run", "http://127.0.0.1:1/", "-m", "getSlot", "--shards", "4"])
        .env_remove("JOB_COMPLETION_INDEX")
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("JOB_COMPLETION_INDEX"), "{}", stderr(&output));
}

#[test]
fn a_start_time_no_clock_holds_exits_2_instead_of_a_panic() {
    for at in ["1e20", "18446744073709551616", "9999-12-31T23:59:59Z"] {
        let output = rpcbench(&["run", "http://127.0.0.1:1/", "-m", "getSlot", "--start-at", at]);
        assert_eq!(output.status.code(), Some(2), "{at}: {}", stderr(&output));
        assert!(stderr(&output).contains("--start-at"), "{at}: {}", stderr(&output));
    }
    let output = rpcbench(&[
        "k8s-job",
        "--shards",
        "4",
        "--image",
        "x",
        "--start-at",
        "1e20",
        "--",
        "run",
        "http://n:1/",
        "-m",
        "getSlot",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--start-at"), "{}", stderr(&output));
}

#[test]
fn k8s_job_refuses_a_run_every_pod_would_fail_naming_the_flag() {
    for (run, named) in [
        (&["run", "node:8545", "-m", "getSlot"][..], "has no scheme"),
        (&["run", "http://node:8545", "-m", "getSlot", "-d", "6O"], "--duration"),
        (&["run", "http://node:8545", "-m", "getSlot", "--save="], "--save"),
        (&["run", "http://node:8545", "-m", "getSlot", "--save=/tmp/x.json"], "--save is set by k8s-job"),
        (&["run", "http://node:8545", "-m", "getSlot", "--frobnicate"], "--frobnicate"),
        (&["run", "http://node:8545", "-m", "getSlot", "--rate", "0"], "--rate"),
        (&["run", "http://node:8545", "--suite", "ethereum-relay", "--threshold", "p99 <"], "--threshold"),
        (&["serve", "--chain", "solana"], "-- run URL"),
    ] {
        let mut args = vec!["k8s-job", "--shards", "4", "--image", "x", "--"];
        args.extend(run);
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{run:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(named), "{run:?}: {}", stderr(&output));
        assert!(output.stdout.is_empty(), "{run:?}: manifests printed");
    }
    for shards in ["0", "1001", "4294967295"] {
        let output = rpcbench(&[
            "k8s-job",
            "--shards",
            shards,
            "--image",
            "x",
            "--",
            "run",
            "http://n:1/",
            "-m",
            "getSlot",
        ]);
        assert_eq!(output.status.code(), Some(2), "{shards}: {}", stderr(&output));
        assert!(stderr(&output).contains("--shards: must be from 1 to 1000"), "{}", stderr(&output));
    }
    // A suite's run is checked as far as this machine can: the pods sample the node.
    let output = rpcbench(&[
        "k8s-job",
        "--shards",
        "2",
        "--image",
        "x",
        "--merge-deadline",
        "90m",
        "--",
        "run",
        "http://node:8545",
        "--suite",
        "ethereum-relay",
        "-d",
        "1m",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(String::from_utf8_lossy(&output.stdout).contains("\"activeDeadlineSeconds\": 5400"));
}

/// The manifests `k8s-job` prints for the README's command, which deploy/k8s/split-run.yaml
/// holds; validated against the Kubernetes schemas when RPCBENCH_K8S_VALIDATE names the
/// `kubernetes-validate` program (CI installs it; there a missing one fails).
#[test]
fn the_kubernetes_manifests_are_printed_committed_and_valid() {
    let output = rpcbench(&[
        "k8s-job",
        "--shards",
        "4",
        "--image",
        "rpcbench:0.1.0",
        "--name",
        "getslot",
        "--start-at",
        "2026-11-23T10:00:00Z",
        "--threshold",
        "p99 < 5ms",
        "--threshold",
        "errors < 0.1%",
        "--",
        "run",
        "http://node.default.svc:8545",
        "-m",
        "getSlot",
        "--rate",
        "40000",
        "-d",
        "60s",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let printed = String::from_utf8(output.stdout).unwrap();
    let committed = concat!(env!("CARGO_MANIFEST_DIR"), "/../../deploy/k8s/split-run.yaml");
    assert_eq!(
        printed,
        std::fs::read_to_string(committed).unwrap(),
        "deploy/k8s/split-run.yaml is out of date"
    );
    match std::env::var("RPCBENCH_K8S_VALIDATE") {
        Ok(validator) => {
            let checked = Command::new(&validator).args(["--strict", "--quiet", committed]).output().unwrap();
            assert!(
                checked.status.success(),
                "{}{}",
                String::from_utf8_lossy(&checked.stdout),
                stderr(&checked)
            );
        }
        Err(_) if std::env::var_os("CI").is_some() => panic!("CI must set RPCBENCH_K8S_VALIDATE"),
        Err(_) => eprintln!("skipped: RPCBENCH_K8S_VALIDATE is not set (the schemas check)"),
    }
    // Bad input names the flag.
    for (args, flag) in [
        (&["k8s-job", "--shards", "0", "--image", "x", "--", "run", "http://x/"][..], "--shards"),
        (
            &["k8s-job", "--shards", "2", "--image", "x", "--name", "Bad_Name", "--", "run", "http://x/"],
            "--name",
        ),
        (
            &["k8s-job", "--shards", "2", "--image", "x", "--", "run", "http://x/", "--shard", "1/2"],
            "--shard",
        ),
    ] {
        let output = rpcbench(args);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(stderr(&output).contains(flag), "{args:?}: {}", stderr(&output));
    }
}

/// Shards whose requests ended in the HTTP/2 and WebSocket classes (GOAWAY, refused and reset
/// streams, closed sockets, cut-off runs) merge to totals that count them, and `merge` says so.
#[test]
fn merged_totals_count_every_outcome_class_of_http2_and_websocket_runs() {
    let (addr, _ids) = id_recording_server();
    let url = format!("http://{addr}/");
    let dir = std::env::temp_dir().join(format!("rpcbench-shard-classes-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let mut paths = Vec::new();
    for (shard, moved) in [
        (1, serde_json::json!({"goaway": 7, "refused_stream": 3, "stream_reset": {"CANCEL": 2}})),
        (2, serde_json::json!({"ws_closed": {"1006": 5}, "ws_protocol": 1, "unfinished": 4})),
    ] {
        let save = dir.join(format!("classes-{shard}.json"));
        let output = rpcbench(&[
            "run",
            &url,
            "-m",
            "getSlot",
            "-c",
            "2",
            "-n",
            "100",
            "-q",
            "--shard",
            &format!("{shard}/2"),
            "--save",
            save.to_str().unwrap(),
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
        // Turn some successes into the classes an HTTP/2 or WebSocket run has: the totals stay 50.
        let mut file: serde_json::Value = serde_json::from_slice(&std::fs::read(&save).unwrap()).unwrap();
        let methods = file["methods"].as_object_mut().unwrap();
        let outcomes = &mut methods.values_mut().next().unwrap()["outcomes"];
        let mut taken = 0;
        for (class, value) in moved.as_object().unwrap() {
            taken += match value {
                serde_json::Value::Object(codes) => codes.values().map(|n| n.as_u64().unwrap()).sum(),
                n => n.as_u64().unwrap(),
            };
            outcomes[class] = value.clone();
        }
        outcomes["ok"] = (outcomes["ok"].as_u64().unwrap() - taken).into();
        std::fs::write(&save, serde_json::to_vec(&file).unwrap()).unwrap();
        paths.push(save.to_str().unwrap().to_string());
    }
    let merged = dir.join("classes-merged.json").to_str().unwrap().to_string();
    let output = rpcbench(&["merge", &paths[0], &paths[1], "-o", &merged]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("merged 2 shard(s), 100 requests"), "{}", stderr(&output));
    let output = rpcbench(&["report", &merged, "--format", "json"]);
    let report: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(report["requests"]["total"], 100);
    assert_eq!(report["outcomes"]["goaway"], 7);
    assert_eq!(report["outcomes"]["ws_closed"]["1006"], 5);
}

/// A split `tx` run: its keys come from a Secret mounted in the shards' pods, by reference;
/// no key, phrase or local key path is ever written into the manifests.
#[test]
fn k8s_job_splits_a_tx_run_with_its_keys_from_a_secret_never_in_the_manifests() {
    let output = rpcbench(&[
        "k8s-job",
        "--shards",
        "3",
        "--image",
        "rpcbench:0.1.0",
        "--name",
        "transfers",
        "--key-secret",
        "tx-keys",
        "--start-at",
        "2026-11-23T10:00:00Z",
        "--threshold",
        "included > 99%",
        "--",
        "tx",
        "http://node.default.svc:8545",
        "--key-file",
        "/keys/senders.txt",
        "--senders",
        "10",
        "--rate",
        "300",
        "-d",
        "60s",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifests = printed_manifests(&output.stdout);
    assert_eq!(manifests.len(), 3);
    let pod = &manifests[1]["spec"]["template"]["spec"];
    let command = pod["containers"][0]["command"][2].as_str().unwrap();
    assert!(
        command.starts_with("exec rpcbench tx http://node.default.svc:8545 --key-file /keys/senders.txt"),
        "{command}"
    );
    assert!(
        command.ends_with(
            "--shards 3 --start-at 2026-11-23T10:00:00Z --save /results/shard-${JOB_COMPLETION_INDEX}.json"
        ),
        "{command}"
    );
    assert_eq!(pod["volumes"][1]["secret"]["secretName"], "tx-keys");
    assert_eq!(pod["containers"][0]["volumeMounts"][1]["mountPath"], "/keys");
    let merge = manifests[2]["spec"]["template"]["spec"]["containers"][0]["command"][2].as_str().unwrap();
    assert!(merge.contains("--threshold 'included > 99%'"), "{merge}");
    // 60 s of sends, the 30 s inclusion timeout and the 600 s of slack after the start.
    let deadline = manifests[2]["spec"]["activeDeadlineSeconds"].as_u64().unwrap();
    assert!(deadline >= 690, "{deadline}");

    let tx = ["tx", "http://node:8545", "--rate", "10", "-d", "10s"];
    for (extra, secret, named) in [
        (
            &["--mnemonic", "test test test test test test test test test test test junk"][..],
            true,
            "--mnemonic would write the phrase",
        ),
        (&["--key-file", "/home/me/keys.txt"], true, "--key-file /home/me/keys.txt"),
        (&["--key-file", "/keys/senders.txt"], false, "--key-secret"),
        (&["--dev", "--save", "/tmp/x.json"], false, "--save is set by k8s-job"),
        (&["--dev", "--shard", "1/2"], false, "--shard is set by k8s-job"),
    ] {
        let mut args = vec!["k8s-job", "--shards", "2", "--image", "x"];
        if secret {
            args.extend(["--key-secret", "tx-keys"]);
        }
        args.push("--");
        args.extend(tx);
        args.extend(extra);
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{extra:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(named), "{extra:?}: {}", stderr(&output));
        assert!(output.stdout.is_empty(), "{extra:?}: manifests printed");
        assert!(!stderr(&output).contains("test test test"), "the phrase is never echoed");
    }
    // The merge judges thresholds in the grammar of the run it merges.
    let output = rpcbench(&[
        "k8s-job",
        "--shards",
        "2",
        "--image",
        "x",
        "--threshold",
        "included > 99%",
        "--",
        "run",
        "http://n:1/",
        "-m",
        "getSlot",
    ]);
    assert_eq!(output.status.code(), Some(2), "a tx threshold on a run: {}", stderr(&output));
    let mut args = vec!["k8s-job", "--shards", "2", "--image", "x", "--threshold", "included > 99ms", "--"];
    args.extend(tx);
    args.push("--dev");
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--threshold"), "{}", stderr(&output));
    let output = rpcbench(&[
        "k8s-job",
        "--shards",
        "2",
        "--image",
        "x",
        "--key-secret",
        "k",
        "--",
        "run",
        "http://n:1/",
        "-m",
        "getSlot",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--key-secret: only a tx run has keys"), "{}", stderr(&output));
}

/// An API key in the run's URL or an Authorization header would be in every pod's command,
/// readable by anyone who can read the Jobs: `k8s-job` refuses it (the message shows it
/// redacted), and with `--env-secret` the run names it from a Secret the pods' shell expands.
#[test]
fn k8s_job_never_writes_a_url_key_or_auth_header_into_the_manifests() {
    let job = ["k8s-job", "--shards", "2", "--image", "x", "--start-at", "2026-11-23T10:00:00Z"];
    let refused = [
        (
            &["--", "run", "https://eth.example/v2/SECRET123abc", "-m", "eth_blockNumber"][..],
            "https://eth.example/v2/***",
        ),
        (&["--", "run", "https://sol.example/?api-key=SECRET123", "-m", "getSlot"][..], "api-key=***"),
        (
            &["--", "run", "http://node:8545", "-H", "Authorization: Bearer SECRET123", "-m", "getSlot"][..],
            "Authorization: ***",
        ),
        (&["--", "tx", "http://node:8545", "--ws", "ws://node:8546/?key=SECRET123", "--dev"][..], "key=***"),
    ];
    for (run, shown) in refused {
        let args: Vec<&str> = job.iter().chain(run).copied().collect();
        let output = rpcbench(&args);
        let (out, err) = (String::from_utf8_lossy(&output.stdout), stderr(&output));
        assert_eq!(output.status.code(), Some(2), "{run:?}: {err}");
        assert!(err.contains(shown) && err.contains("--env-secret"), "{run:?}: {err}");
        assert!(!out.contains("SECRET123") && !err.contains("SECRET123"), "{run:?}: {out}{err}");
    }
    // A reference without the Secret that holds it would reach the node as '$RPC_URL'.
    let args: Vec<&str> = job.iter().chain(&["--", "run", "$RPC_URL", "-m", "getSlot"]).copied().collect();
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("--env-secret"), "{}", stderr(&output));

    let args: Vec<&str> = job
        .iter()
        .chain(&[
            "--env-secret",
            "rpc",
            "--",
            "run",
            "$RPC_URL",
            "-H",
            "Authorization: Bearer ${TOKEN}",
            "-m",
            "getSlot",
            "--rate",
            "100",
            "-d",
            "10s",
        ])
        .copied()
        .collect();
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let manifests = printed_manifests(&output.stdout);
    let container = &manifests[1]["spec"]["template"]["spec"]["containers"][0];
    assert_eq!(container["envFrom"][0]["secretRef"]["name"], "rpc");
    // Valid against the Kubernetes schemas (when the validator is there; CI has it).
    if let Ok(validator) = std::env::var("RPCBENCH_K8S_VALIDATE") {
        let file = std::env::temp_dir().join(format!("rpcbench-env-secret-{}.yaml", std::process::id()));
        std::fs::write(&file, &output.stdout).unwrap();
        let checked = Command::new(&validator).arg("--strict").arg("--quiet").arg(&file).output().unwrap();
        std::fs::remove_file(&file).ok();
        assert!(checked.status.success(), "{}{}", String::from_utf8_lossy(&checked.stdout), stderr(&checked));
    }
    let command = container["command"][2].as_str().unwrap();
    assert!(
        command
            .starts_with(r#"exec rpcbench run "${RPC_URL}" -H "Authorization: Bearer ${TOKEN}" -m getSlot"#),
        "{command}"
    );
    // The run after '--' is still checked, with a stand-in for the URL: a bad flag exits 2.
    let args: Vec<&str> =
        job.iter().chain(&["--env-secret", "rpc", "--", "run", "$RPC_URL", "-d", "6O"]).copied().collect();
    let output = rpcbench(&args);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let args: Vec<&str> =
        job.iter().chain(&["--env-secret", "Bad_Name", "--", "run", "$RPC_URL"]).copied().collect();
    assert_eq!(rpcbench(&args).status.code(), Some(2));
}
