//! The open-file limit: connections beyond the hard limit fail fast naming it, a low soft
//! limit is raised.

use super::*;

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
