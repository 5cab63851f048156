//! Bad input on the command line and in files: exit 2 and one line naming the flag, file place
//! or setting at fault, before any load.

use super::*;

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
fn a_missing_body_file_names_the_file() {
    let output = rpcbench(&["run", "http://127.0.0.1:1/", "--body-file", "/nonexistent/body.json"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("/nonexistent/body.json"));
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
