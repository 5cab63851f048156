//! The built binary's results files, reports, merges and comparisons: `report` prints exactly
//! what `run` printed, an interrupted run still saves, `merge` refuses strangers with exit 2,
//! `compare` prints one table and `--equal` tells ledgers apart. Servers are mock nodes
//! started in-process on 127.0.0.1:0.

use std::path::{Path, PathBuf};
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

fn node(chain: Chain, seed: u64) -> MockServer {
    let mut options = MockOptions::new(chain);
    options.seed = seed;
    MockServer::start(options).expect("the mock node starts")
}

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("rpcbench-cli-{name}-{}", std::process::id()));
    std::fs::remove_dir_all(&dir).ok();
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn path(dir: &Path, name: &str) -> String {
    dir.join(name).display().to_string()
}

#[test]
fn report_prints_exactly_what_the_run_printed() {
    let node = node(Chain::Static, 0);
    let dir = temp_dir("golden");
    for (format, name) in [("text", "text.json"), ("json", "json.json")] {
        let saved = path(&dir, name);
        let live = rpcbench(&[
            "run",
            &node.url(),
            "-m",
            "getSlot",
            "-c",
            "2",
            "-n",
            "300",
            "-f",
            format,
            "--save",
            &saved,
        ]);
        assert_eq!(live.status.code(), Some(0), "{}", stderr(&live));
        assert!(stderr(&live).contains("results saved to"), "{}", stderr(&live));
        let again = rpcbench(&["report", &saved, "--format", format]);
        assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
        assert_eq!(stdout(&again), stdout(&live), "report --format {format} equals the live output");
    }
    // The other formats render from the same file.
    let saved = path(&dir, "text.json");
    let markdown = stdout(&rpcbench(&["report", &saved, "-f", "markdown"]));
    assert!(markdown.contains("| metric | value |") && markdown.contains("| req/s |"), "{markdown}");
    let csv = stdout(&rpcbench(&["report", &saved, "-f", "csv"]));
    assert_eq!(csv.lines().count(), 2, "{csv}");
    assert!(csv.starts_with("run,target,method,"), "{csv}");
    let html_path = path(&dir, "report.html");
    let html = rpcbench(&["report", &saved, "-f", "html", "-o", &html_path]);
    assert_eq!(html.status.code(), Some(0), "{}", stderr(&html));
    let html = std::fs::read_to_string(&html_path).unwrap();
    assert_eq!(html.matches("<svg").count(), 4);
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn an_interrupted_run_still_saves_what_it_completed() {
    let node = node(Chain::Static, 0);
    let dir = temp_dir("interrupt");
    let saved = path(&dir, "partial.json");
    let mut child = Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["run", &node.url(), "-m", "getSlot", "-c", "2", "-d", "30s", "-q", "--save", &saved])
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(Duration::from_millis(1200));
    let killed = Command::new("kill").args(["-INT", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let started = Instant::now();
    let status = child.wait().unwrap();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert_eq!(status.code(), Some(0));
    let file: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(&saved).unwrap()).unwrap();
    assert_eq!(file["interrupted"], true);
    assert!(file["methods"]["getSlot"]["outcomes"]["ok"].as_u64().unwrap() > 0);
    let report = stdout(&rpcbench(&["report", &saved]));
    assert!(report.contains("INTERRUPTED"), "{report}");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn merge_adds_shards_up_writes_to_standard_output_for_a_dash_and_refuses_strangers() {
    let node = node(Chain::Static, 0);
    let dir = temp_dir("merge");
    let shard = |name: &str, connections: &str| {
        let saved = path(&dir, name);
        let run = rpcbench(&[
            "run",
            &node.url(),
            "-m",
            "getSlot",
            "-c",
            connections,
            "-n",
            "200",
            "-q",
            "--save",
            &saved,
        ]);
        assert_eq!(run.status.code(), Some(0), "{}", stderr(&run));
        saved
    };
    let (a, b, odd) = (shard("a.json", "2"), shard("b.json", "2"), shard("odd.json", "3"));
    let merged = path(&dir, "merged.json");
    let output = rpcbench(&["merge", &a, &b, "-o", &merged]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("merged 2 shard(s), 400 requests"), "{}", stderr(&output));
    let report: serde_json::Value =
        serde_json::from_slice(&rpcbench(&["report", &merged, "-f", "json"]).stdout).unwrap();
    assert_eq!(report["requests"]["total"], 400);
    assert_eq!(report["load"]["connections"], 4);

    // `-o -` is standard output, as for every other report (it wrote a file named `-`).
    let piped = std::process::Command::new(env!("CARGO_BIN_EXE_rpcbench"))
        .args(["merge", &a, &b, "-o", "-"])
        .current_dir(&dir)
        .output()
        .unwrap();
    assert_eq!(piped.status.code(), Some(0), "{}", stderr(&piped));
    assert!(!dir.join("-").exists(), "a file named '-'");
    assert!(stderr(&piped).contains("into standard output"), "{}", stderr(&piped));
    let on_stdout: serde_json::Value = serde_json::from_slice(&piped.stdout).unwrap();
    let in_file: serde_json::Value = serde_json::from_slice(&std::fs::read(&merged).unwrap()).unwrap();
    assert_eq!(on_stdout, in_file);

    let refused = rpcbench(&["merge", &a, &odd, "-o", &path(&dir, "bad.json")]);
    assert_eq!(refused.status.code(), Some(2));
    let message = stderr(&refused);
    assert!(message.contains("odd.json") && message.contains("load"), "{message}");
    assert_eq!(message.lines().count(), 1, "{message}");
    assert!(!dir.join("bad.json").exists());

    let missing = rpcbench(&["merge", &a, "/nonexistent/shard.json", "-o", &path(&dir, "bad.json")]);
    assert_eq!(missing.status.code(), Some(2));
    assert!(stderr(&missing).contains("/nonexistent/shard.json"));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_prints_one_table_and_report_compare_reprints_it() {
    let (one, two) = (node(Chain::Static, 0), node(Chain::Static, 0));
    let dir = temp_dir("compare");
    let a = format!("a={}", one.url());
    let b = format!("b={}", two.url());
    let save_dir = path(&dir, "runs");
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "-m",
        "getSlot",
        "-c",
        "2",
        "-n",
        "300",
        "--cooldown",
        "100ms",
        "--save-dir",
        &save_dir,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    let header = table.lines().find(|line| line.starts_with("Metric")).expect("a header row");
    assert!(header.contains('a') && header.contains('b'), "{table}");
    for metric in ["req/s", "ok %", "errors", "p50", "p90", "p99", "max", "MB/s"] {
        let row = table
            .lines()
            .find(|line| line.starts_with(metric))
            .unwrap_or_else(|| panic!("{metric}\n{table}"));
        assert!(row.contains("x)") || row.contains("(-)"), "ratios: {row}");
    }
    let again = rpcbench(&["report", "--compare", &path(&dir, "runs/a.json"), &path(&dir, "runs/b.json")]);
    assert_eq!(again.status.code(), Some(0), "{}", stderr(&again));
    assert_eq!(stdout(&again), table, "report --compare reprints the comparison");
    let markdown = stdout(&rpcbench(&[
        "report",
        "--compare",
        "-f",
        "markdown",
        &path(&dir, "runs/a.json"),
        &path(&dir, "runs/b.json"),
    ]));
    assert!(markdown.contains("| metric | a | b |"), "{markdown}");

    let json = rpcbench(&[
        "compare",
        &a,
        &b,
        "-m",
        "getSlot",
        "-c",
        "1",
        "-n",
        "50",
        "--cooldown",
        "0s",
        "-q",
        "-f",
        "json",
    ]);
    let json: serde_json::Value = serde_json::from_slice(&json.stdout).unwrap();
    assert_eq!(json["baseline"], "a");
    assert_eq!(json["runs"][1]["report"]["requests"]["total"], 50);
    assert_eq!(json["metrics"][0]["metric"], "req/s");
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_equal_tells_ledgers_apart() {
    let (a, same, other) = (node(Chain::Solana, 1), node(Chain::Solana, 1), node(Chain::Solana, 2));
    let account = r#"["4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ"]"#;
    let args = |second: &MockServer| {
        vec![
            "compare".to_string(),
            format!("a={}", a.url()),
            format!("b={}", second.url()),
            "-m".into(),
            "getBalance".into(),
            "-p".into(),
            account.into(),
            "--equal".into(),
            "--equal-rounds".into(),
            "4".into(),
            "--ignore-field".into(),
            "result.context.slot".into(),
            "-q".into(),
        ]
    };
    let run = |args: Vec<String>| {
        let args: Vec<&str> = args.iter().map(String::as_str).collect();
        rpcbench(&args)
    };
    let equal = run(args(&same));
    assert_eq!(equal.status.code(), Some(0), "{}{}", stdout(&equal), stderr(&equal));
    assert!(stdout(&equal).contains("all 4 response(s) equal"), "{}", stdout(&equal));
    let differ = run(args(&other));
    assert_eq!(differ.status.code(), Some(1), "{}", stdout(&differ));
    assert!(stdout(&differ).contains("4 of 4 response(s) differ"), "{}", stdout(&differ));
    assert!(stdout(&differ).contains("result.value"), "{}", stdout(&differ));
}

#[test]
fn bad_usage_of_the_new_commands_exits_2_naming_what_is_wrong() {
    let node = node(Chain::Static, 0);
    let url = node.url();
    let a = format!("a={url}");
    let cases: Vec<(Vec<&str>, &str)> = vec![
        (vec!["compare", &a, "-m", "getSlot"], "NAME=URL"),
        (vec!["compare", &url, &a, "-m", "getSlot"], "NAME=URL"),
        (vec!["compare", &a, "b=ftp://x/", "-m", "getSlot"], "target 'b'"),
        (vec!["compare", &a, "b=http://127.0.0.1:1/", "-m", "getSlot", "-c", "0"], "--connections"),
        (
            vec![
                "compare",
                &a,
                "b=http://127.0.0.1:1/",
                "-m",
                "getSlot",
                "--equal",
                "--ignore-field",
                "a..b",
            ],
            "--ignore-field",
        ),
        (vec!["compare", &a, "b=http://127.0.0.1:1/", "-m", "getSlot", "--equal", "-f", "html"], "--format"),
        (vec!["report", "/nonexistent/run.json"], "/nonexistent/run.json"),
        (vec!["report", "--compare", "/nonexistent/run.json"], "--compare"),
        (vec!["report", "x.json", "-f", "pdf"], "--format"),
        (vec!["merge", "x.json"], "--output"),
    ];
    for (args, expected) in cases {
        let output = rpcbench(&args);
        let message = stderr(&output);
        assert_eq!(output.status.code(), Some(2), "{args:?}: {message}");
        assert!(message.contains(expected), "{args:?} should name {expected}: {message}");
        assert!(!message.contains("panicked"), "{message}");
    }
}

/// The rows of `group` in a text comparison's `table` (the indented metric lines after the
/// group's own line).
fn group_lines<'a>(table: &'a str, group: &str) -> Vec<&'a str> {
    let mut lines = table.lines().skip_while(|line| line.split("  ").next() != Some(group));
    let Some(_) = lines.next() else { panic!("no group '{group}':\n{table}") };
    lines.take_while(|line| line.starts_with("  ")).collect()
}

/// A whole suite against two nodes in one command: every call of the mix gets its rows, each
/// with its ratio against the first target, in text, Markdown, JSON and HTML.
#[test]
fn compare_runs_a_suite_against_each_target_with_ratios_per_method() {
    let (one, two) = (node(Chain::Ethereum, 0), node(Chain::Ethereum, 0));
    let dir = temp_dir("compare-suite");
    let (a, b) = (format!("a={}", one.url()), format!("b={}", two.url()));
    let save_dir = path(&dir, "runs");
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "--suite",
        "ethereum-dapp",
        "-c",
        "2",
        "-n",
        "400",
        "-d",
        "10s",
        "--cooldown",
        "0s",
        "-q",
        "--save-dir",
        &save_dir,
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    assert!(table.contains("\nPer method "), "{table}");
    for method in ["eth_call", "eth_getLogs", "eth_getBalance"] {
        let rows = group_lines(&table, method);
        let metrics: Vec<&str> = rows.iter().map(|row| row.split_whitespace().next().unwrap()).collect();
        assert_eq!(metrics, ["req/s", "ok", "p50", "p90", "p99", "max"], "{method}:\n{table}");
        for row in rows {
            assert!(row.ends_with("x)") || row.ends_with("(-)"), "a ratio in {method}: {row}");
        }
    }
    let files = [path(&dir, "runs/a.json"), path(&dir, "runs/b.json")];
    let report = |format: &str| {
        let output = rpcbench(&["report", "--compare", "-f", format, &files[0], &files[1]]);
        assert_eq!(output.status.code(), Some(0), "{format}: {}", stderr(&output));
        stdout(&output)
    };
    let markdown = report("markdown");
    assert!(markdown.contains("### Per method"), "{markdown}");
    let row =
        markdown.lines().find(|l| l.starts_with("| eth_call p99 |")).unwrap_or_else(|| panic!("{markdown}"));
    assert!(row.trim_end().ends_with("x) |") || row.trim_end().ends_with("(-) |"), "{row}");
    let json: serde_json::Value = serde_json::from_str(&report("json")).unwrap();
    let methods = json["methods"].as_array().unwrap();
    assert!(methods.len() >= 3, "{methods:?}");
    for method in methods {
        let rate = &method["metrics"][0];
        assert_eq!(rate["metric"], "req/s");
        assert_eq!(rate["ratios"][0].as_f64(), Some(1.0), "{method}");
        assert!(rate["ratios"][1].as_f64().is_some_and(|r| r > 0.0), "{method}");
    }
    let html = report("html");
    let per_method = html.split("<h2>Per method</h2>").nth(1).expect("a per-method section");
    let per_method = per_method.split("</section>").next().unwrap();
    assert!(per_method.contains("<span class=\"ratio"), "ratios in the per-method table");
    std::fs::remove_dir_all(&dir).ok();
}

/// A scenario's mix and two stages against two nodes: the per-stage and per-call rows carry
/// ratios; and a scenario naming its own targets needs no NAME=URL.
#[test]
fn compare_runs_a_scenario_with_stages_against_each_target() {
    let (one, two) = (node(Chain::Static, 0), node(Chain::Static, 0));
    let dir = temp_dir("compare-scenario");
    let calls = "[[call]]\nmethod = \"eth_chainId\"\nweight = 2\n\n[[call]]\nmethod = \"eth_blockNumber\"\n";
    let stages = "[load]\nrequests = 100000\n\n[[stage]]\nconnections = 1\nduration = \"400ms\"\n\n\
                  [[stage]]\nconnections = 2\nduration = \"400ms\"\n\n";
    let scenario = path(&dir, "stages.toml");
    std::fs::write(&scenario, format!("[target]\nurl = \"{}\"\n\n{stages}{calls}", one.url())).unwrap();
    let (a, b) = (format!("a={}", one.url()), format!("b={}", two.url()));
    let output = rpcbench(&["compare", &a, &b, "--scenario", &scenario, "--cooldown", "0s", "-q"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let table = stdout(&output);
    for group in ["stage 1 (1 conn)", "stage 2 (2 conns)", "eth_chainId", "eth_blockNumber"] {
        let rows = group_lines(&table, group);
        assert_eq!(rows.len(), 6, "{group}:\n{table}");
        for row in rows {
            assert!(row.ends_with("x)") || row.ends_with("(-)"), "a ratio in {group}: {row}");
        }
    }
    let header = table.lines().find(|l| l.starts_with("Per stage")).unwrap_or_else(|| panic!("{table}"));
    assert!(header.ends_with('b'), "{header}");

    // The file's own targets, in JSON.
    let named = path(&dir, "targets.toml");
    let targets = format!(
        "[[targets]]\nname = \"x\"\nurl = \"{}\"\n\n[[targets]]\nname = \"y\"\nurl = \"{}\"\n\n",
        one.url(),
        two.url()
    );
    std::fs::write(&named, format!("{targets}{stages}{calls}")).unwrap();
    let output = rpcbench(&["compare", "--scenario", &named, "--cooldown", "0s", "-q", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["baseline"], "x");
    assert_eq!(json["runs"][1]["name"], "y");
    let stage_rows = json["stages"].as_array().unwrap();
    assert_eq!(stage_rows.len(), 2, "{stage_rows:?}");
    assert_eq!(stage_rows[1]["name"], "stage 2 (2 conns)");
    assert!(stage_rows[1]["metrics"][0]["ratios"][1].as_f64().is_some(), "{}", stage_rows[1]);
    assert_eq!(json["methods"].as_array().unwrap().len(), 2);

    // The file's thresholds hold for each target, as in `run`: a breach exits 1 naming it.
    let strict = path(&dir, "strict.toml");
    std::fs::write(&strict, format!("thresholds = [\"p50 < 1us\"]\n{targets}{stages}{calls}")).unwrap();
    let output = rpcbench(&["compare", "--scenario", &strict, "--cooldown", "0s", "-q", "-f", "json"]);
    assert_eq!(output.status.code(), Some(1), "{}", stderr(&output));
    assert!(stderr(&output).contains("x: p50 < 1us"), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(json["runs"][1]["report"]["thresholds"][0]["passed"], false, "{}", json["runs"][1]["report"]);

    // A file with one target and no NAME=URL has nothing to compare.
    let output = rpcbench(&["compare", "--scenario", &scenario, "-q"]);
    assert_eq!(output.status.code(), Some(2), "{}", stderr(&output));
    assert!(stderr(&output).contains("names one target"), "{}", stderr(&output));
    std::fs::remove_dir_all(&dir).ok();
}

#[test]
fn compare_states_its_rounds_order_and_tie_band_and_refuses_a_bad_band() {
    let (one, two) = (node(Chain::Static, 0), node(Chain::Static, 0));
    let a = format!("a={}", one.url());
    let b = format!("b={}", two.url());
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "-m",
        "getSlot",
        "-c",
        "2",
        "-n",
        "200",
        "--rounds",
        "2",
        "--simultaneous",
        "--tie",
        "5%",
        "--vary-params",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("--simultaneous: the targets share"), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let methodology = &json["methodology"];
    assert_eq!(methodology["rounds"], 2);
    assert_eq!(methodology["order"], "simultaneous");
    assert_eq!(methodology["tie"], 0.05);
    assert_eq!(methodology["varied_params"], true);
    // getSlot without params: every body is the same, whatever the seed.
    assert_eq!(methodology["cacheable"], true);
    assert_eq!(json["runs"][1]["report"]["requests"]["total"], 200);
    assert_eq!(json["verdicts"][0]["name"], "b");
    let text = stdout(&rpcbench(&[
        "compare",
        &a,
        &b,
        "-m",
        "getSlot",
        "-c",
        "1",
        "-n",
        "60",
        "--rounds",
        "3",
        "--shuffle",
        "-q",
    ]));
    assert!(
        text.contains("Verdicts against a (95% CI over 3 round(s), tie band ±3%, p95 and p99 ±10%)"),
        "{text}"
    );
    assert!(text.contains("3 round(s) of 20 requests per target, order shuffled"), "{text}");
    for (flag, value) in [("--tie", "100%"), ("--tie", "x"), ("--tail-tie", "x"), ("--rounds", "0")] {
        let output = rpcbench(&["compare", &a, &b, "-m", "getSlot", flag, value]);
        assert_eq!(output.status.code(), Some(2), "{flag} {value}");
        assert!(stderr(&output).contains(flag), "{flag} {value}: {}", stderr(&output));
    }
}

#[test]
fn compare_by_duration_runs_adaptive_rounds_up_to_max_rounds_and_refuses_them_with_a_request_count() {
    let (one, two) = (node(Chain::Static, 0), node(Chain::Static, 0));
    let (a, b) = (format!("a={}", one.url()), format!("b={}", two.url()));
    let output = rpcbench(&[
        "compare",
        &a,
        &b,
        "-m",
        "getSlot",
        "-c",
        "1",
        "-d",
        "200ms",
        "--rounds",
        "2",
        "--max-rounds",
        "4",
        "--warmup",
        "20ms",
        "-f",
        "json",
    ]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    assert!(stderr(&output).contains("(more, up to 4, while a verdict is undecided)"), "{}", stderr(&output));
    let json: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    let methodology = &json["methodology"];
    assert!(methodology["rounds"] == 2 || methodology["rounds"] == 4, "{methodology}");
    assert_eq!(
        (&methodology["max_rounds"], &methodology["look_every"], &methodology["looks"]),
        (&4.into(), &2.into(), &2.into())
    );
    // --warmup given: every round has it.
    assert_eq!(methodology.get("later_warmup_ms"), None, "{methodology}");
    for (args, says) in [
        (&["-n", "100", "--max-rounds", "10"][..], "goes with a duration"),
        (&["-d", "1s", "--rounds", "5", "--max-rounds", "4"][..], "at least --rounds (5)"),
    ] {
        let mut line = vec!["compare", &a, &b, "-m", "getSlot"];
        line.extend_from_slice(args);
        let output = rpcbench(&line);
        assert_eq!(output.status.code(), Some(2), "{args:?}");
        assert!(
            stderr(&output).contains("--max-rounds") && stderr(&output).contains(says),
            "{}",
            stderr(&output)
        );
    }
}

#[test]
fn heads_reports_each_targets_lag_and_refuses_a_zero_interval() {
    let behind = |lag: u64| {
        let mut options = MockOptions::new(Chain::Solana);
        options.slot_time = Duration::from_secs(3600);
        options.head_lag = lag;
        MockServer::start(options).expect("the node starts")
    };
    let (tip, far) = (behind(0), behind(40));
    let (a, b) = (format!("tip={}", tip.url()), format!("far={}", far.url()));
    let output = rpcbench(&["heads", &a, &b, "-d", "300ms", "--interval", "50ms", "-f", "json"]);
    assert_eq!(output.status.code(), Some(0), "{}", stderr(&output));
    let heads: serde_json::Value = serde_json::from_slice(&output.stdout).unwrap();
    assert_eq!(heads[0]["lag_max"], 0);
    assert_eq!(heads[1]["lag_p50"], 40);
    assert_eq!(heads[1]["stale"], heads[1]["samples"], "more than 20 behind: every sample stale");
    let refused = rpcbench(&["heads", &a, &b, "--interval", "0s"]);
    assert_eq!(refused.status.code(), Some(2));
    assert!(stderr(&refused).contains("--interval"), "{}", stderr(&refused));
}
