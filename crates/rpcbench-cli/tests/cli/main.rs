//! The built `rpcbench` binary: exit codes, one-line usage errors naming the flag at fault,
//! and reports on standard output. Servers are mock nodes started in-process on 127.0.0.1:0.

use std::process::{Command, Output};

use rpcbench::mock::{Chain, MockOptions, MockServer};

mod chains;
mod grpc_targets;
mod open_files;
mod runs;
mod scenarios;
mod secrets;
mod subscriptions;
mod usage_errors;

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

fn example(name: &str) -> String {
    format!("{}/../../examples/{name}", env!("CARGO_MANIFEST_DIR"))
}
