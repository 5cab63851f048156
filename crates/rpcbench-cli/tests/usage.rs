//! The built binary explains itself: one meaning per flag across subcommands (`-f/--format`
//! the format, `-o/--output FILE` a file), help with worked examples and defaults, completion
//! scripts and a man page, clear errors for URLs without a scheme, progress only on a terminal,
//! and an interrupted comparison that names what it did not run. Servers are mock nodes
//! started in-process on 127.0.0.1:0.

use std::path::PathBuf;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use rpcbench::mock::{Chain, MockOptions, MockServer};

fn rpcbench(args: &[&str]) -> Output {
    Command::new(env!("CARGO_BIN_EXE_rpcbench")).args(args).output().expect("the binary runs")
}

fn stdout(output: &Output) -> String {
    String::from_utf8_lossy(&output.stdout).into_owned()
}

fn stderr(output: &Output) -> String {
    String::from_utf8_lossy(&output.stderr).into_owned()
}

fn static_node() -> MockServer {
    MockServer::start(MockOptions::new(Chain::Static)).expect("the static node starts")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-usage-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The subcommands whose help must end with worked examples.
const WITH_EXAMPLES: [&str; 5] = ["run", "compare", "capacity", "subscribe", "serve"];

fn help(subcommand: &str) -> String {
    let output = rpcbench(&[subcommand, "--help"]);
    assert_eq!(output.status.code(), Some(0), "{subcommand} --help: {}", stderr(&output));
    stdout(&output)
}

#[test]
fn a_format_given_to_o_says_to_use_f_and_exits_2() {
    let url = "http://127.0.0.1:1/";
    let cases: [Vec<&str>; 7] = [
        vec!["run", url, "-m", "getSlot", "-o", "json"],
        vec!["run", url, "-m", "getSlot", "--output", "text"],
        vec!["capacity", url, "-m", "getSlot", "--slo", "p99<1s", "-o", "markdown"],
        vec!["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "-o", "html"],
        vec!["compare", "a=http://127.0.0.1:1/", "b=http://127.0.0.1:2/", "-m", "getSlot", "-o", "json"],
        vec!["report", "x.json", "-o", "csv"],
        vec!["merge", "x.json", "y.json", "-o", "json"],
    ];
    for args in cases {
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        let format = args.last().unwrap();
        assert!(message.contains(&format!("use -f {format}")), "{args:?}: {message}");
        assert!(message.contains("--output"), "{args:?}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
}

#[test]
fn every_subcommand_takes_f_for_the_format_and_o_for_a_file() {
    for subcommand in ["run", "capacity", "compare", "report", "subscribe"] {
        let text = help(subcommand);
        assert!(text.contains("-f, --format <FORMAT>"), "{subcommand}: {text}");
        assert!(text.contains("-o, --output <FILE>"), "{subcommand}: {text}");
    }
    assert!(help("merge").contains("-o, --output <FILE>"));
}

#[test]
fn run_writes_its_report_to_the_output_file_and_keeps_stdout_clean() {
    let node = static_node();
    let dir = temp_dir("output");
    let file = dir.join("run.json");
    let output = rpcbench(&[
        "run",
        &node.url(),
        "-m",
        "getSlot",
        "-c",
        "1",
        "-n",
        "20",
        "-f",
        "json",
        "-o",
        file.to_str().unwrap(),
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(output.stdout.is_empty(), "{}", stdout(&output));
    let report: serde_json::Value = serde_json::from_slice(&std::fs::read(&file).unwrap()).unwrap();
    assert_eq!(report["requests"]["total"], 20, "{report}");
    let missing =
        rpcbench(&["run", &node.url(), "-m", "getSlot", "-n", "1", "-o", "/nonexistent/dir/run.txt"]);
    assert_eq!(missing.status.code(), Some(2), "{}", stderr(&missing));
    assert!(stderr(&missing).contains("--output /nonexistent/dir/run.txt"), "{}", stderr(&missing));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn help_ends_with_worked_examples_against_loopback() {
    for subcommand in WITH_EXAMPLES {
        let text = help(subcommand);
        let (_, examples) = text.rsplit_once("Examples:\n").unwrap_or_else(|| panic!("{subcommand}: {text}"));
        let count =
            examples.lines().filter(|line| line.starts_with(&format!("  rpcbench {subcommand} "))).count();
        assert!((3..=5).contains(&count), "{subcommand}: {count} examples: {examples}");
        for (index, _) in examples.match_indices("://") {
            assert!(examples[index + 3..].starts_with("127.0.0.1"), "{subcommand}: {examples}");
        }
    }
}

#[test]
fn help_shows_the_defaults() {
    let run = help("run");
    assert!(run.contains("back to back [default: 50]"), "{run}");
    assert!(run.contains("[default: text]"), "{run}");
    assert!(help("compare").contains("[default: 50]"));
    assert!(help("capacity").contains("[default: 5%]"));
    let serve = help("serve");
    assert!(serve.contains("127.0.0.1:8545 for") && serve.contains("127.0.0.1:8899 for"), "{serve}");
}

#[test]
fn the_top_level_help_says_what_rpcbench_is() {
    let output = rpcbench(&["--help"]);
    let text = stdout(&output);
    assert!(
        text.contains("load testing and benchmarking for the JSON-RPC endpoints of blockchain nodes"),
        "{text}"
    );
    for subcommand in ["`run`", "`capacity`", "`compare`", "`subscribe`"] {
        assert!(text.contains(subcommand), "{subcommand}: {text}");
    }
    let short = stdout(&rpcbench(&["-h"]));
    assert!(short.starts_with("Load testing and benchmarking"), "{short}");
}

#[test]
fn no_help_mentions_the_numbered_seed_scenarios() {
    let top = stdout(&rpcbench(&["--help"]));
    let subcommands: Vec<String> = top
        .split("Commands:\n")
        .nth(1)
        .unwrap()
        .lines()
        .take_while(|line| !line.trim().is_empty())
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next().map(str::to_string))
        .filter(|name| name != "help")
        .collect();
    assert!(subcommands.len() >= 12, "{subcommands:?}");
    for (name, text) in std::iter::once(("rpcbench".to_string(), top.clone()))
        .chain(subcommands.iter().map(|name| (name.clone(), help(name))))
    {
        let lower = text.to_lowercase();
        for (index, _) in lower.match_indices("seed") {
            let after = lower[index + 4..].trim_start_matches([' ', '-', '\'', 's']);
            assert!(!after.starts_with(|c: char| c.is_ascii_digit()), "{name}: {text}");
        }
    }
}

#[test]
fn completions_for_every_shell_name_the_subcommands() {
    for shell in ["bash", "zsh", "fish", "powershell"] {
        let output = rpcbench(&["completions", shell]);
        assert_eq!(output.status.code(), Some(0), "{shell}: {}", stderr(&output));
        let script = stdout(&output);
        assert!(script.contains("capacity") && script.contains("subscribe"), "{shell}: {script}");
        assert!(script.contains("format"), "{shell}");
    }
    let bad = rpcbench(&["completions", "tcsh"]);
    assert_eq!(bad.status.code(), Some(2), "{}", stderr(&bad));
}

#[test]
fn the_man_page_is_roff() {
    let output = rpcbench(&["man"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let page = stdout(&output);
    assert!(page.contains(".TH rpcbench 1"), "{page}");
    assert!(page.contains(".SH NAME") && page.contains("capacity"), "{page}");
}

#[test]
fn a_url_without_a_scheme_says_to_add_one() {
    let cases: [(Vec<&str>, &str, &str); 5] = [
        (vec!["run", "127.0.0.1:8545", "-m", "getSlot"], "URL", "add http:// or https://"),
        (vec!["run", "localhost:8545", "-m", "getSlot"], "URL", "add http:// or https://"),
        (vec!["capacity", "127.0.0.1:8545", "-m", "getSlot", "--slo", "p99<1s"], "URL", "add http://"),
        (
            vec!["compare", "a=127.0.0.1:1", "b=http://127.0.0.1:2/", "-m", "getSlot"],
            "target 'a'",
            "add http://",
        ),
        (vec!["subscribe", "localhost:8545", "--sub", "newHeads"], "URL", "add ws:// or wss://"),
    ];
    for (args, names, says) in cases {
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(names) && message.contains(says), "{args:?}: {message}");
        assert!(!message.contains("relative URL without a base"), "{args:?}: {message}");
    }
}

/// Runs `command` under `script`, so that its standard error is a terminal; `None` where
/// `script` (util-linux) is not installed.
fn on_a_terminal(command: &str) -> Option<String> {
    let output =
        Command::new("script").args(["-qec", command, "/dev/null"]).stdin(Stdio::null()).output().ok()?;
    Some(String::from_utf8_lossy(&output.stdout).into_owned())
}

#[test]
fn merge_shows_files_read_only_on_a_terminal_and_not_with_q() {
    let node = static_node();
    let dir = temp_dir("merge-progress");
    let shards: Vec<String> =
        (1..=2).map(|i| dir.join(format!("shard{i}.json")).display().to_string()).collect();
    for (index, shard) in shards.iter().enumerate() {
        let slice = format!("{}/2", index + 1);
        let output = rpcbench(&[
            "run",
            &node.url(),
            "-m",
            "getSlot",
            "-c",
            "2",
            "-n",
            "20",
            "--shard",
            &slice,
            "--save",
            shard,
        ]);
        assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    }
    let merged = dir.join("merged.json").display().to_string();
    let plain = rpcbench(&["merge", &shards[0], &shards[1], "-o", &merged]);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(!stderr(&plain).contains("files read"), "{}", stderr(&plain));
    let binary = env!("CARGO_BIN_EXE_rpcbench");
    let command = format!("{binary} merge {} {} -o {merged}", shards[0], shards[1]);
    if let Some(shown) = on_a_terminal(&command) {
        assert!(shown.contains("merge: files read 0 of 2"), "{shown}");
        let quiet = on_a_terminal(&format!("{command} -q")).unwrap();
        assert!(!quiet.contains("files read"), "{quiet}");
        assert!(quiet.contains("merged 2 shard(s)"), "{quiet}");
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_interrupted_compare_names_the_targets_it_did_not_run() {
    let node = static_node();
    let url = node.url();
    let targets: Vec<String> = ["a", "b", "c"].iter().map(|name| format!("{name}={url}")).collect();
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["compare", &targets[0], &targets[1], &targets[2], "-m", "getSlot", "-c", "2", "-d", "30s"])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("the binary runs");
    // Interrupted once the first target's run is under way (its progress line is out).
    std::thread::sleep(Duration::from_secs(1));
    let kill = Command::new("kill").args(["-s", "INT", &child.id().to_string()]).status().expect("kill runs");
    assert!(kill.success());
    let signalled = Instant::now();
    while child.try_wait().expect("the child can be waited for").is_none() {
        if signalled.elapsed() > Duration::from_secs(20) {
            child.kill().ok();
            panic!("compare did not exit after SIGINT");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let message = stderr(&output);
    assert_eq!(output.status.code(), Some(0), "{message}");
    assert!(message.contains("[1/3] a"), "{message}");
    assert!(message.contains("interrupted after 1 of 3 targets; cut short: a; not run: b, c"), "{message}");
    assert!(stdout(&output).contains("a"), "the report covers what ran: {}", stdout(&output));
}

#[test]
fn sampling_shows_blocks_and_request_rate_only_on_a_terminal() {
    let node = MockServer::start(MockOptions::new(Chain::Solana)).expect("the mock node starts");
    let args = ["run", &node.url(), "--suite", "solana-rpc", "-c", "2", "-n", "20"];
    let plain = rpcbench(&args);
    assert_eq!(plain.status.code(), Some(0), "{}", stderr(&plain));
    assert!(!stderr(&plain).contains("sampling the target"), "{}", stderr(&plain));
    assert!(stdout(&plain).contains("Requests:"), "the report stays on stdout: {}", stdout(&plain));
    let command = format!("{} {}", env!("CARGO_BIN_EXE_rpcbench"), args.join(" "));
    if let Some(shown) = on_a_terminal(&command) {
        assert!(shown.contains("sampling the target: finding its head"), "{shown}");
        let quiet = on_a_terminal(&format!("{command} -q")).unwrap();
        assert!(!quiet.contains("sampling the target"), "{quiet}");
    }
}

#[test]
fn an_output_file_in_a_missing_folder_is_refused_before_any_load() {
    let out = "/nonexistent/dir/report.txt";
    let dead = "http://127.0.0.1:1/";
    let cases: [Vec<&str>; 4] = [
        vec!["run", dead, "-m", "getSlot", "-d", "30s", "-o", out],
        vec!["capacity", dead, "-m", "getSlot", "--slo", "p99<1s", "-o", out],
        vec![
            "compare",
            "a=http://127.0.0.1:1/",
            "b=http://127.0.0.1:2/",
            "-m",
            "getSlot",
            "-d",
            "30s",
            "-o",
            out,
        ],
        vec!["subscribe", "ws://127.0.0.1:1/", "--sub", "newHeads", "-d", "30s", "-o", out],
    ];
    for args in cases {
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(&format!("--output {out}")), "{args:?}: {message}");
    }
}

#[test]
fn a_setting_refused_while_setting_up_is_bad_usage_naming_its_flag() {
    let dir = temp_dir("setup-settings");
    let not_pem = dir.join("not.pem");
    std::fs::write(&not_pem, "not a certificate\n").unwrap();
    let not_pem = not_pem.to_str().unwrap();
    let traffic_less = dir.join("bodies.jsonl");
    std::fs::write(&traffic_less, "{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"getSlot\"}\n").unwrap();
    let traffic_less = traffic_less.to_str().unwrap();
    let node = static_node();
    let url = node.url();
    let control = "a\u{1}b";
    for (args, says) in [
        // A CA file that holds no certificate: found when the engine prepares TLS, and bad usage
        // (it exited 1 as a run-time failure before).
        (
            vec!["run", "https://127.0.0.1:1/", "-m", "getSlot", "--cacert", not_pem, "-n", "1"],
            format!("--cacert: {not_pem}: "),
        ),
        (
            vec![
                "proxy",
                "--listen",
                "127.0.0.1:0",
                "--upstream",
                "https://127.0.0.1:1/",
                "--cacert",
                not_pem,
            ],
            format!("--cacert: {not_pem}: "),
        ),
        // A mock feed's slot time out of range (it exited 1 before).
        (
            vec!["serve", "--chain", "solana", "--grpc", "--slot-time", "1ms", "--listen", "127.0.0.1:0"],
            "--slot-time: must be at least 6ms".to_string(),
        ),
        (
            vec!["subscribe", "grpc://127.0.0.1:1", "--sub", "geyser-slot", "--x-token", control, "-d", "1s"],
            "--x-token: must be printable ASCII".to_string(),
        ),
        (
            vec!["replay", traffic_less, &url, "--speed", "2x"],
            "--speed: this file has no recorded offsets (vegeta targets, bodies): use --rate R".to_string(),
        ),
        (
            vec!["replay", traffic_less, &url, "--ignore-field", "result.slot"],
            "--ignore-field: goes with a traffic file's recorded digests".to_string(),
        ),
    ] {
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(&says), "{args:?}: {}", stderr(&output));
    }
}

#[test]
fn messages_point_at_what_is_wrong_and_usage_errors_exit_2() {
    let dir = temp_dir("messages");
    let node = static_node();
    let url = node.url();
    let vegeta = dir.join("targets.txt");
    std::fs::write(&vegeta, format!("# a vegeta targets file\nPOST {url}\n@body.json\n")).unwrap();
    let empty = dir.join("empty.jsonl");
    std::fs::write(&empty, "").unwrap();
    let pools = dir.join("pools.json");
    std::fs::write(&pools, "{{{ not a pools file").unwrap();
    let (vegeta, empty, pools) = (vegeta.to_str().unwrap(), empty.to_str().unwrap(), pools.to_str().unwrap());
    let dir_text = dir.to_str().unwrap();
    for (args, says, not_says) in [
        (vec!["run", vegeta], format!("give it as --targets {vegeta}"), "expected"),
        (vec!["run", "--targets", empty, "-n", "1"], "the file is empty".to_string(), "expected"),
        (vec!["replay", empty, &url], "the file is empty: nothing to replay".to_string(), "no target"),
        (
            vec!["record", "-o", dir_text, "--upstream", &url, "--listen", "127.0.0.1:0"],
            "-o/--output: cannot create".to_string(),
            "--record",
        ),
        (
            vec!["run", &url, "--suite", "solana-rpc", "--pools", pools, "-n", "1"],
            "--pools:".to_string(),
            "sampling",
        ),
    ] {
        let output = rpcbench(&args);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {}", stderr(&output));
        assert!(stderr(&output).contains(&says), "{args:?}: {}", stderr(&output));
        assert!(!stderr(&output).contains(not_says), "{args:?}: {}", stderr(&output));
    }
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn a_shard_with_nothing_to_do_exits_0_with_a_note() {
    let node = static_node();
    let output = rpcbench(&["run", &node.url(), "-m", "getSlot", "-n", "1", "--shard", "2/2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("shard 2/2 has no share"), "{}", stderr(&output));
    let output = rpcbench(&["run", &node.url(), "-m", "getSlot", "-n", "1", "--shard", "1/2"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(!stderr(&output).contains("no share"), "{}", stderr(&output));
}

/// Every subcommand (the top help's list) ends its help with worked examples, and `replay`'s
/// are its own: none of `run`'s, and none of the flags it refuses.
#[test]
fn every_subcommand_help_ends_with_its_own_worked_examples() {
    let top = stdout(&rpcbench(&["--help"]));
    let listed = top.split_once("Commands:\n").unwrap().1.split("\n\n").next().unwrap();
    let names: Vec<&str> = listed
        .lines()
        // A name opens its line; a description's further lines are indented deeper.
        .filter(|line| line.starts_with("  ") && !line.starts_with("   "))
        .filter_map(|line| line.split_whitespace().next())
        .filter(|name| *name != "help")
        .collect();
    assert!(names.len() >= 15, "{names:?}");
    for name in names {
        let text = help(name);
        let (_, examples) = text.rsplit_once("Examples:\n").unwrap_or_else(|| panic!("{name}: {text}"));
        let count = examples.lines().filter(|line| line.starts_with("  rpcbench ")).count();
        assert!(count >= 2, "{name}: {examples}");
    }
    let replay = help("replay");
    assert!(!replay.contains("rpcbench run "), "{replay}");
    for refused in ["--method", "--body-file", "--targets", "--suite", "--pools", "--batch"] {
        assert!(!replay.contains(refused), "replay --help shows {refused}");
    }
}

#[test]
fn man_gives_each_subcommands_page_that_the_top_page_names() {
    let top = stdout(&rpcbench(&["man"]));
    assert!(top.contains("rpcbench\\-run(1)"), "{top}");
    for name in ["run", "replay", "k8s-job", "serve"] {
        let output = rpcbench(&["man", name]);
        assert_eq!(output.status.code(), Some(0), "{name}: {}", stderr(&output));
        let page = stdout(&output);
        assert!(page.contains(&format!(".TH rpcbench-{name} 1")), "{name}: {page}");
        assert!(page.contains(".SH SYNOPSIS") && page.contains("Examples:"), "{name}: {page}");
    }
    let output = rpcbench(&["man", "nope"]);
    assert_eq!(output.status.code(), Some(2));
    assert!(stderr(&output).contains("no subcommand 'nope'"), "{}", stderr(&output));
}

#[test]
fn serve_refuses_a_latency_for_a_method_its_chain_lacks_and_completes_chain_names() {
    let output =
        rpcbench(&["serve", "--chain", "ethereum", "--latency", "getBlock=50ms", "--listen", "127.0.0.1:0"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    let err = stderr(&output);
    assert!(err.contains("--latency: the ethereum node has no method 'getBlock'"), "{err}");
    assert!(err.contains("eth_getBlockByNumber"), "{err}");
    let output = rpcbench(&[
        "serve",
        "--chain",
        "solana",
        "--blocking-latency",
        "eth_call=5ms",
        "--listen",
        "127.0.0.1:0",
    ]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(
        stderr(&output).contains("--blocking-latency: the solana node has no method 'eth_call'"),
        "{}",
        stderr(&output)
    );
    for shell in ["bash", "zsh", "fish"] {
        let script = stdout(&rpcbench(&["completions", shell]));
        for chain in ["static", "solana", "ethereum"] {
            assert!(script.contains(chain), "{shell} completion lacks {chain}");
        }
    }
    let bash = stdout(&rpcbench(&["completions", "bash"]));
    assert!(
        bash.contains("--chain)\n                    COMPREPLY=($(compgen -W \"static solana ethereum\""),
        "completes chains, not files"
    );
}
