//! Comparisons against mock Solana nodes: a node five times slower shows five times the
//! latency and a fifth of the throughput; the equality check tells nodes with different
//! ledgers apart and finds nodes with the same ledger equal.

use std::time::{Duration, Instant};

use rpcbench::client::Endpoint;
use rpcbench::compare::{
    check_equal, comparison_verdicts, render_comparison_text, run_comparison, CompareEvent, CompareTarget,
    EqualOptions, FieldPath,
};
use rpcbench::demo::SEED_ACCOUNT;
use rpcbench::engine::StopHandle;
use rpcbench::mock::{Chain, Latency, MockOptions, MockServer};
use rpcbench::rounds::{run_rounds, RoundsPlan};
use rpcbench::verdict::{Judgement, RoundOrder, DEFAULT_ROUNDS, DEFAULT_TAIL_TIE, DEFAULT_TIE};
use serde_json::json;

use crate::util::{closed_loop, seconds};

fn solana(latency: Option<Duration>, seed: u64) -> MockServer {
    let mut options = MockOptions::new(Chain::Solana);
    options.seed = seed;
    options.faults.latency = latency.map(Latency::fixed);
    MockServer::start(options).expect("the mock node starts")
}

#[test]
fn a_node_five_times_slower_compares_as_such() {
    // Latencies large against what a debug build on a busy 2-core machine adds per request
    // (a median of 5-10 ms, up to 20 ms, with other builds and tests running; 10 ms and 50 ms
    // measured as 18.6 ms and 51.9 ms, 2.8x, under such load), so the ratio stays near 5x:
    // (250 + 20) / (50 + 20) is still 3.9x.
    let fast = solana(Some(Duration::from_millis(50)), 0);
    let slow = solana(Some(Duration::from_millis(250)), 0);
    let target = |name: &str, url: String| {
        let mut config = closed_loop(&url, 8, seconds(1.5));
        config.threads = 1;
        // The nodes serve from this process: the slow one's run samples it.
        let monitor_pids = if name == "slow" { vec![std::process::id()] } else { Vec::new() };
        CompareTarget { name: name.into(), config, monitor_pids }
    };
    let targets = [target("fast", fast.url()), target("slow", slow.url())];
    let mut events = 0;
    let runs =
        run_comparison(&targets, Duration::from_millis(200), &StopHandle::new(), |_| events += 1).unwrap();
    assert_eq!(runs.len(), 2);
    assert_eq!(events, 5, "started, finished, cooling down, started, finished");
    let (a, b) = (&runs[0].report, &runs[1].report);
    assert_eq!(a.requests.errors + b.requests.errors, 0);
    let p50_ratio = b.latency.percentile("p50") as f64 / a.latency.percentile("p50") as f64;
    let rate_ratio = b.requests.rate / a.requests.rate;
    let table = render_comparison_text(&runs);
    assert!((3.0..=6.5).contains(&p50_ratio), "p50 ratio {p50_ratio:.2}\n{table}");
    assert!((0.15..=0.35).contains(&rate_ratio), "req/s ratio {rate_ratio:.2}\n{table}");
    // The table says the same: one row per metric, one column per target, ratios.
    let p50_row = table.lines().find(|line| line.starts_with("p50 ")).expect("a p50 row");
    assert!(p50_row.contains(&format!("({p50_ratio:.2}x)")), "{p50_row}");
    let rate_row = table.lines().find(|line| line.starts_with("req/s ")).expect("a req/s row");
    assert!(rate_row.contains(&format!("({rate_ratio:.2}x)")), "{rate_row}");
    for metric in ["ok %", "errors", "p90", "p99", "max", "MB/s"] {
        assert!(table.lines().any(|line| line.starts_with(metric)), "{metric}\n{table}");
    }
    assert_eq!(runs[1].file.label.as_deref(), Some("slow"));
    // Seed 003's resource block: the monitored target's figures, n/a for the other; the
    // generator's own CPU and memory for both.
    assert!(runs[0].report.target_resources.is_none());
    let resources = runs[1].report.target_resources.as_ref().expect("the slow target was monitored");
    assert!(resources.samples >= 3 && resources.rss_bytes_peak > 1 << 20, "{resources:?}");
    for metric in
        ["target CPU avg", "target CPU peak", "target RSS avg", "target RSS peak", "target disk read"]
    {
        let row = table
            .lines()
            .find(|line| line.starts_with(metric))
            .unwrap_or_else(|| panic!("{metric}\n{table}"));
        assert!(row.contains("n/a"), "the fast target was not monitored: {row}");
    }
    let rss = table.lines().find(|line| line.starts_with("target RSS peak")).unwrap();
    assert!(rss.contains("MiB"), "{rss}");
    assert!(table.lines().any(|line| line.starts_with("generator CPU")), "{table}");
    assert!(table.lines().any(|line| line.starts_with("generator RSS peak")), "{table}");
    let markdown = rpcbench::report::render_markdown(&runs);
    assert!(markdown.contains("| target CPU avg | n/a |"), "{markdown}");
    let html = rpcbench::report::render_html(&runs);
    assert!(html.contains("target RSS peak"), "the HTML page has the resources too");
}

#[test]
fn a_stopped_comparison_skips_the_remaining_targets() {
    let node = solana(None, 0);
    let targets: Vec<CompareTarget> = ["a", "b", "c"]
        .into_iter()
        .map(|name| CompareTarget {
            name: name.into(),
            config: closed_loop(&node.url(), 1, seconds(0.3)),
            monitor_pids: Vec::new(),
        })
        .collect();
    let stop = StopHandle::new();
    let stopper = stop.clone();
    let runs = run_comparison(&targets, Duration::from_secs(30), &stop, |event| {
        if matches!(event, rpcbench::compare::CompareEvent::CoolingDown(_)) {
            stopper.stop();
        }
    })
    .unwrap();
    assert_eq!(runs.len(), 1);
}

#[test]
fn the_equality_check_tells_different_ledgers_apart() {
    let a = solana(None, 1);
    let same = solana(None, 1);
    let other = solana(None, 2);
    let endpoint = |node: &MockServer| Endpoint::parse(&node.url(), Duration::from_secs(5)).unwrap();
    let targets = vec![
        ("a".to_string(), endpoint(&a)),
        ("same".to_string(), endpoint(&same)),
        ("other".to_string(), endpoint(&other)),
    ];
    let options = EqualOptions {
        rounds: 5,
        ignore: vec![FieldPath::parse("result.context.slot").unwrap()],
        timeout: Duration::from_secs(5),
    };
    let params = json!([SEED_ACCOUNT]);
    let report = check_equal(&targets, "getBalance", Some(&params), &options, &StopHandle::new());
    assert_eq!(report.rounds, 5);
    assert_eq!(report.targets[0].name, "same");
    assert_eq!(report.targets[0].differing_rounds, 0, "{report:?}");
    assert_eq!(report.targets[1].differing_rounds, 5, "{report:?}");
    assert_eq!(report.targets[1].examples[0].path, "result.value");
    assert!(!report.all_equal());

    // Without ignoring the slot, even the same ledger may differ as slots advance; with only
    // the equal node, everything is equal.
    let report = check_equal(&targets[..2], "getBalance", Some(&params), &options, &StopHandle::new());
    assert!(report.all_equal(), "{report:?}");
    let text = rpcbench::compare::render_equal_text(&report);
    assert!(text.contains("all 5 response(s) equal"), "{text}");
    assert!(text.ends_with("EQUAL\n"), "{text}");

    // Errors compare too: the same invalid params give the same error.
    let report = check_equal(
        &targets[..2],
        "getBalance",
        Some(&json!(["not-base58-0OIl"])),
        &options,
        &StopHandle::new(),
    );
    assert!(report.all_equal(), "{report:?}");
}

#[test]
fn the_equality_check_fails_answers_that_run_counts_as_invalid() {
    // The same result, but with another id, or without "jsonrpc":"2.0": run counts these as
    // invalid, so they are not EQUAL to a correct answer.
    let good = crate::util::TestServer::start(|request| {
        crate::util::json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id))
    });
    let wrong_id = crate::util::TestServer::start(|request| {
        crate::util::json_200(&format!(r#"{{"jsonrpc":"2.0","id":{},"result":"0x1"}}"#, request.id + 7))
    });
    let no_version = crate::util::TestServer::start(|request| {
        crate::util::json_200(&format!(r#"{{"id":{},"result":"0x1"}}"#, request.id))
    });
    let endpoint =
        |server: &crate::util::TestServer| Endpoint::parse(&server.url(), Duration::from_secs(5)).unwrap();
    let targets = vec![
        ("good".to_string(), endpoint(&good)),
        ("wrong-id".to_string(), endpoint(&wrong_id)),
        ("no-version".to_string(), endpoint(&no_version)),
    ];
    let options = EqualOptions { rounds: 2, ignore: Vec::new(), timeout: Duration::from_secs(5) };
    let report = check_equal(&targets, "eth_chainId", None, &options, &StopHandle::new());
    assert!(!report.all_equal(), "{report:?}");
    assert_eq!(report.targets[0].differing_rounds, 2, "{report:?}");
    assert_eq!(report.targets[1].differing_rounds, 2, "{report:?}");
    let text = rpcbench::compare::render_equal_text(&report);
    assert!(text.contains("id_mismatch") && text.contains("not_jsonrpc"), "{text}");
}

/// Each node's comparison in rounds: `rounds` rounds of `round_length` each, closed loop.
fn compare_in_rounds(
    nodes: &[(&str, &MockServer)],
    connections: usize,
    round_length: f64,
    rounds: u32,
) -> Vec<rpcbench::results::SavedRun> {
    compare_in_rounds_within(nodes, connections, round_length, rounds, DEFAULT_TIE).0
}

/// When each target's round ran, by (target name, round number as its figures have it): from
/// its start to its end, on the clock the mocks keep their reads on (the same process).
type RoundSpans = std::collections::HashMap<(String, u32), (Instant, Instant)>;

/// [`compare_in_rounds`] with the tie band `tie` for the rate and the median, and when each
/// round ran.
fn compare_in_rounds_within(
    nodes: &[(&str, &MockServer)],
    connections: usize,
    round_length: f64,
    rounds: u32,
    tie: f64,
) -> (Vec<rpcbench::results::SavedRun>, RoundSpans) {
    let targets: Vec<CompareTarget> = nodes
        .iter()
        .map(|(name, node)| {
            let mut config = closed_loop(&node.url(), connections, seconds(round_length * f64::from(rounds)));
            config.threads = 1;
            config.warmup = Duration::from_millis(100);
            CompareTarget { name: name.to_string(), config, monitor_pids: Vec::new() }
        })
        .collect();
    let plan = RoundsPlan {
        rounds,
        order: RoundOrder::Rotated,
        cooldown: Duration::from_millis(50),
        tie,
        tail_tie: DEFAULT_TAIL_TIE,
        vary_params: false,
        whole_rounds: false,
        max_rounds: 0,
        later_warmup: None,
    };
    let mut started = std::collections::HashMap::new();
    let mut spans = RoundSpans::new();
    let runs = run_rounds(&targets, &plan, &StopHandle::new(), |event| match event {
        CompareEvent::RoundStarted { name, .. } => {
            started.insert(name.to_string(), Instant::now());
        }
        CompareEvent::RoundFinished { name, figures } => {
            let from = started.remove(name).expect("a round ends after it starts");
            spans.insert((name.to_string(), figures.round), (from, Instant::now()));
        }
        _ => {}
    })
    .unwrap();
    (runs, spans)
}

/// Whether `node` went at least `at_least` without reading a request during `span`, or held
/// one it read then that long before answering: its process was stopped (or starved of a
/// core) while a closed loop kept it busy (a stop after a round's last read shows only in how
/// long its answers took).
fn kept_from_serving(node: &MockServer, span: (Instant, Instant), at_least: Duration) -> bool {
    let log = node.read_log().expect("a mock with a latency keeps its reads");
    log.longest_gap_between(span.0, span.1) >= at_least
        || log.longest_hold_between(span.0, span.1) >= at_least
}

#[test]
fn two_identical_nodes_are_never_called_different_and_their_median_is_no_difference() {
    // Each round's rate is a count, the same for both whatever the machine's speed: every
    // connection's first request (sent in the 100 ms warmup) answers at 250 ms plus an
    // overhead, its next one (measured) at 500 ms plus two, in the 600 ms window whenever
    // each overhead is under 100 ms, and its third after the window: one response per
    // connection per round. (Rates of 8 connections at 50 ms, which a busy machine moves by
    // whole responses from round to round, called identical nodes 18-23% apart.)
    // The median is 250 ms plus the machine's overhead, a median of 5-20 ms that moves from
    // round to round with other builds running: its interval spans -4%..+4% of it, across
    // the default 3% band; within 10% (the tail's band) it is known on a busy machine too.
    let latency = Some(Duration::from_millis(250));
    let (one, two) = (solana(latency, 0), solana(latency, 0));
    let (runs, spans) =
        compare_in_rounds_within(&[("one", &one), ("two", &two)], 4, 0.6, DEFAULT_ROUNDS, DEFAULT_TAIL_TIE);
    let table = render_comparison_text(&runs);
    let verdicts = comparison_verdicts(&runs).expect("rounds give verdicts");
    assert_eq!(verdicts.methodology.rounds, DEFAULT_ROUNDS, "{table}");
    assert_eq!(verdicts.methodology.orders[1], ["two", "one"], "the order rotates");
    // A round in which a node answered nothing in its window (a rate of zero) has no rate
    // ratio to judge, unless the other did not either: that takes the answers of every
    // connection past 600 ms, which a 250 ms node does only when it went 350 ms without
    // reading or held a request that long (the process stopped: its reads come every 250 ms
    // plus the client's turn-around, under 20 ms on a busy machine, otherwise). Each such round
    // is held to the mock's record; the rate is judged on the rest, the latencies on all.
    let rates: Vec<Vec<(u32, f64)>> = runs
        .iter()
        .map(|run| run.file.rounds.as_ref().unwrap().rounds.iter().map(|r| (r.round, r.rate)).collect())
        .collect();
    for ((run, node), rounds) in runs.iter().zip([&one, &two]).zip(&rates) {
        for (round, _) in rounds.iter().filter(|(_, rate)| *rate == 0.0) {
            let span = spans[&(run.label.clone(), *round)];
            let label = &run.label;
            assert!(
                kept_from_serving(node, span, Duration::from_millis(350)),
                "{label} round {round}\n{table}"
            );
        }
    }
    let one_sided =
        rates[0].iter().zip(&rates[1]).filter(|(a, b)| (a.1 == 0.0) != (b.1 == 0.0)).count() as u32;
    let two = &verdicts.targets[0];
    assert_eq!(two.name, "two");
    for verdict in &two.verdicts {
        assert!(
            matches!(verdict.judgement, Judgement::NoDifference | Judgement::NotEnoughData),
            "identical nodes called different: {}: {}\n{table}",
            verdict.metric,
            verdict.text
        );
        let judged = if verdict.metric == "req/s" { DEFAULT_ROUNDS - one_sided } else { DEFAULT_ROUNDS };
        assert_eq!(verdict.rounds, judged, "{}\n{table}", verdict.metric);
    }
    let p50 = two.verdicts.iter().find(|v| v.metric == "p50").unwrap();
    assert_eq!(p50.judgement, Judgement::NoDifference, "{}\n{table}", p50.text);
    // The rounds add up to the totals the table shows.
    for run in &runs {
        let rounds = &run.file.rounds.as_ref().unwrap().rounds;
        assert_eq!(rounds.iter().map(|r| r.requests).sum::<u64>(), run.report.requests.total);
        let elapsed_us: u64 = rounds.iter().map(|r| r.elapsed_us).sum();
        assert!(elapsed_us.abs_diff(run.report.elapsed_us) <= DEFAULT_ROUNDS as u64, "{elapsed_us}");
    }
    assert!(table.contains("Verdicts against one") && table.contains("Method:"), "{table}");
}

#[test]
fn a_node_twice_as_slow_comes_out_slower_with_an_interval_around_the_ratio() {
    // 200 ms and 400 ms, large against what a busy machine adds to a request: a thread that
    // waits 2 ms or more for an answer may get a core back one scheduler slice late (about
    // 4 ms with CPU-bound builds on both cores), one that waits 1 ms mostly not. With delays
    // of 1 ms and 2 ms the slow node's median came out 5.8 ms against the fast one's 1.1 ms
    // (a true ratio of 5x, which the interval held), not the 2x that equal overheads make.
    // Here a slice late on one node and not the other moves the ratio by 2% at most, inside
    // the tie band's slack. Four connections give a dozen samples or more per round.
    let node = |delay_ms: u64| solana(Some(Duration::from_millis(delay_ms)), 0);
    let (fast, slow) = (node(200), node(400));
    let (runs, spans) =
        compare_in_rounds_within(&[("fast", &fast), ("slow", &slow)], 4, 1.2, DEFAULT_ROUNDS, DEFAULT_TIE);
    let table = render_comparison_text(&runs);
    let verdicts = comparison_verdicts(&runs).expect("rounds give verdicts");
    let p50 = verdicts.targets[0].verdicts.iter().find(|v| v.metric == "p50").unwrap();
    assert_eq!(p50.judgement, Judgement::Higher, "{}\n{table}", p50.text);
    assert!(p50.text.starts_with("slower by"), "{}", p50.text);
    // Both nodes add the same overhead to their delay, so the true ratio is
    // (200 ms + fast's median) / fast's median: 2x less what the overhead takes off.
    let fast_p50 = runs[0].report.latency.percentile("p50") as f64;
    let truth = (200_000.0 + fast_p50) / fast_p50;
    let (low, high) = (p50.ci_low.unwrap(), p50.ci_high.unwrap());
    assert!(truth <= 2.0, "{}\n{table}", p50.text);
    // The interval's top is at most 2x (1 + 3%), the most equal overheads make of the delays,
    // and it holds the true ratio within the tie band's slack (the median itself is a
    // measurement of a busy machine), unless a round was stopped: a request a node held past
    // its delay while the process was stopped really took longer, which moves the ratio up (a
    // slow round) or down (a fast one) and the fast median the truth is made of. Such a round
    // is held to the mock's record: it went its delay plus 10 ms without reading, or held a
    // request that long. (Its reads come every delay plus the client's turn-around: a slow
    // round's median 3% over 2x the fast node's, ~205 ms, is 12 ms or more over what equal
    // overheads give, which a stop makes by holding a wave of answers, and so the next wave's
    // reads, as long. A slow turn-around read as a stop only leaves the looser bounds below.)
    // Every round over 2x (1 + 3%) must be a stopped slow one; with stopped rounds, the
    // interval lies between what the rounds give: the pooled medians of any resample of them
    // lie between the rounds' own.
    let medians = |run: &rpcbench::results::SavedRun| -> Vec<(u32, f64)> {
        let rounds = &run.file.rounds.as_ref().unwrap().rounds;
        rounds.iter().map(|r| (r.round, r.p50_us as f64)).collect()
    };
    let (fast_rounds, slow_rounds) = (medians(&runs[0]), medians(&runs[1]));
    let stopped = |node: &MockServer, name: &str, delay_ms: u64| -> Vec<u32> {
        let at_least = Duration::from_millis(delay_ms + 10);
        let rounds = fast_rounds.iter().map(|(round, _)| *round);
        rounds.filter(|round| kept_from_serving(node, spans[&(name.to_string(), *round)], at_least)).collect()
    };
    let (fast_stopped, slow_stopped) = (stopped(&fast, "fast", 200), stopped(&slow, "slow", 400));
    for ((round, fast_p50), (_, slow_p50)) in fast_rounds.iter().zip(&slow_rounds) {
        if slow_p50 / fast_p50 > 2.0 * (1.0 + DEFAULT_TIE) {
            assert!(slow_stopped.contains(round), "round {round} over 2x unstopped: {}\n{table}", p50.text);
        }
    }
    if fast_stopped.is_empty() && slow_stopped.is_empty() {
        assert!(high <= 2.0 * (1.0 + DEFAULT_TIE), "{}\n{table}", p50.text);
        assert!(
            low / (1.0 + DEFAULT_TIE) <= truth && truth <= high * (1.0 + DEFAULT_TIE),
            "true ratio {truth:.3} against {}\n{table}",
            p50.text
        );
    } else {
        let most = |rounds: &[(u32, f64)]| rounds.iter().map(|r| r.1).fold(0.0, f64::max);
        let least = |rounds: &[(u32, f64)]| rounds.iter().map(|r| r.1).fold(f64::INFINITY, f64::min);
        let (top, bottom) =
            (most(&slow_rounds) / least(&fast_rounds), least(&slow_rounds) / most(&fast_rounds));
        // Within the tie band's slack too: the pooled medians are read off the rounds'
        // histograms, not their recorded medians (2.010 against 2.006 once).
        let slack = 1.0 + DEFAULT_TIE;
        assert!(
            bottom / slack <= low && high <= top * slack,
            "{} against the rounds' {bottom:.3}..{top:.3}\n{table}",
            p50.text
        );
    }
    let rate = verdicts.targets[0].verdicts.iter().find(|v| v.metric == "req/s").unwrap();
    assert_eq!(rate.judgement, Judgement::Lower, "{}\n{table}", rate.text);
}

#[test]
fn an_adaptive_comparison_runs_whole_looks_and_its_widened_interval_still_holds_the_true_ratio() {
    let node = |delay_ms: u64| {
        let mut options = MockOptions::new(Chain::Solana);
        options.faults.blocking_latency = Some(Duration::from_millis(delay_ms));
        MockServer::start(options).expect("the mock node starts")
    };
    let (fast, slow) = (node(1), node(2));
    let targets: Vec<CompareTarget> = [("fast", &fast), ("slow", &slow)]
        .iter()
        .map(|(name, node)| {
            let mut config = closed_loop(&node.url(), 1, seconds(0.3 * 3.0));
            config.threads = 1;
            config.warmup = Duration::from_millis(300);
            CompareTarget { name: name.to_string(), config, monitor_pids: Vec::new() }
        })
        .collect();
    let plan = RoundsPlan {
        rounds: 3,
        order: RoundOrder::Rotated,
        cooldown: Duration::from_millis(20),
        tie: DEFAULT_TIE,
        tail_tie: DEFAULT_TAIL_TIE,
        vary_params: false,
        whole_rounds: false,
        max_rounds: 9,
        later_warmup: Some(Duration::from_millis(50)),
    };
    let runs = run_rounds(&targets, &plan, &StopHandle::new(), |_| {}).unwrap();
    let table = render_comparison_text(&runs);
    let verdicts = comparison_verdicts(&runs).expect("rounds give verdicts");
    let methodology = &verdicts.methodology;
    // Stopped at a look: after 3, 6 or 9 rounds, each round as long as the first ones.
    assert!([3, 6, 9].contains(&methodology.rounds), "{table}");
    assert_eq!((methodology.looks, methodology.max_rounds, methodology.look_every), (3, Some(9), Some(3)));
    assert_eq!(methodology.round_length, "300.00ms");
    assert_eq!((methodology.warmup_ms, methodology.later_warmup_ms), (300, Some(50)));
    assert!(table.contains("(3 looks, O'Brien-Fleming)"), "{table}");
    let p50 = verdicts.targets[0].verdicts.iter().find(|v| v.metric == "p50").unwrap();
    assert_eq!(p50.judgement, Judgement::Higher, "{}\n{table}", p50.text);
    assert_eq!(p50.rounds, methodology.rounds);
    // The truth: the fast node's median with what the slow node held its requests longer, by
    // each mock's own record. 1 ms more is asked, but a loaded machine's sleeps overshoot, the
    // longer one more: once the slow median was 1.09 ms over the fast one's 1.157 ms, an
    // interval of 1.946..1.959, and a truth taken as 1 ms more (1.865) fell outside it.
    let fast_p50 = runs[0].report.latency.percentile("p50") as f64;
    let held_us = |node: &MockServer| {
        let log = node.read_log().expect("a mock with a latency keeps its reads");
        log.median_hold().expect("requests were answered").as_secs_f64() * 1e6
    };
    let truth = (fast_p50 - held_us(&fast) + held_us(&slow)) / fast_p50;
    let (low, high) = (p50.ci_low.unwrap(), p50.ci_high.unwrap());
    assert!(
        low / (1.0 + DEFAULT_TIE) <= truth && truth <= high * (1.0 + DEFAULT_TIE),
        "true ratio {truth:.3} (held: fast {:.0}us, slow {:.0}us) against {}\n{table}",
        held_us(&fast),
        held_us(&slow),
        p50.text
    );
}

/// Validates `value` against the committed schema `name`.
fn assert_matches_schema(name: &str, value: &serde_json::Value) {
    let path = format!("{}/../../schema/{name}", env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    let schema = jsonschema::JSONSchema::compile(&schema).expect("the schema compiles");
    let messages: Vec<String> = match schema.validate(value) {
        Ok(()) => Vec::new(),
        Err(errors) => errors.map(|e| format!("{}: {e}", e.instance_path)).collect(),
    };
    assert!(messages.is_empty(), "does not match {name}:\n{}", messages.join("\n"));
}

#[test]
fn a_comparison_in_rounds_keeps_its_methodology_in_json_matching_the_schema_and_in_results_files() {
    let (one, two) = (solana(None, 0), solana(None, 0));
    let runs = compare_in_rounds(&[("one", &one), ("two", &two)], 2, 0.2, 3);
    let json: serde_json::Value = serde_json::from_str(&rpcbench::compare::comparison_json(&runs)).unwrap();
    assert_matches_schema("comparison.schema.json", &json);
    for run in json["runs"].as_array().unwrap() {
        assert_matches_schema("report.schema.json", &run["report"]);
        assert_eq!(run["rounds"].as_array().unwrap().len(), 3);
    }
    assert_eq!(json["methodology"]["rounds"], 3);
    assert_eq!(json["methodology"]["order"], "rotated");
    assert_eq!(json["verdicts"][0]["name"], "two");
    assert_eq!(json["verdicts"][0]["verdicts"][0]["metric"], "req/s");
    // A single run's comparison (no rounds) has neither, and still matches.
    let single = run_comparison(
        &[
            CompareTarget {
                name: "a".into(),
                config: closed_loop(&one.url(), 1, seconds(0.1)),
                monitor_pids: vec![],
            },
            CompareTarget {
                name: "b".into(),
                config: closed_loop(&two.url(), 1, seconds(0.1)),
                monitor_pids: vec![],
            },
        ],
        Duration::ZERO,
        &StopHandle::new(),
        |_| {},
    )
    .unwrap();
    let json: serde_json::Value = serde_json::from_str(&rpcbench::compare::comparison_json(&single)).unwrap();
    assert_matches_schema("comparison.schema.json", &json);
    assert!(json.get("methodology").is_none() && json.get("verdicts").is_none());
    // The results file keeps the rounds and the methodology, and reads back the same verdicts.
    let text = serde_json::to_string(&runs[1].file).unwrap();
    let again: rpcbench::results::ResultsFile = serde_json::from_str(&text).unwrap();
    assert_eq!(again.rounds, runs[1].file.rounds);
    let reread: Vec<rpcbench::results::SavedRun> = runs
        .iter()
        .map(|run| {
            let file = serde_json::from_str(&serde_json::to_string(&run.file).unwrap()).unwrap();
            rpcbench::results::SavedRun::new(file, &run.label).unwrap()
        })
        .collect();
    assert_eq!(comparison_verdicts(&reread), comparison_verdicts(&runs));
    // A file written before rounds (no `rounds`) still loads, without verdicts.
    let mut older: serde_json::Value = serde_json::from_str(&text).unwrap();
    older.as_object_mut().unwrap().remove("rounds");
    let older: rpcbench::results::ResultsFile = serde_json::from_value(older).unwrap();
    assert_eq!(older.rounds, None);
    let mixed = vec![
        rpcbench::results::SavedRun::new(runs[0].file.clone(), "one").unwrap(),
        rpcbench::results::SavedRun::new(older, "two").unwrap(),
    ];
    assert_eq!(comparison_verdicts(&mixed), None);
}

#[test]
fn the_heads_of_a_comparison_match_the_comparison_schema_in_real_output() {
    use rpcbench::heads::{HeadMonitor, HeadSource, PolledHead};
    let behind = |lag: u64| {
        let mut options = MockOptions::new(Chain::Solana);
        options.slot_time = Duration::from_secs(3600);
        options.head_lag = lag;
        MockServer::start(options).expect("the mock node starts")
    };
    let (tip, thirty) = (behind(0), behind(30));
    let sources: Vec<Box<dyn HeadSource>> = [&tip, &thirty]
        .iter()
        .map(|node| {
            let endpoint = Endpoint::parse(&node.url(), Duration::from_secs(2)).expect("a URL");
            Box::new(PolledHead::new(endpoint)) as Box<dyn HeadSource>
        })
        .collect();
    let names = vec!["tip".to_string(), "thirty".to_string()];
    let monitor =
        HeadMonitor::start(names, sources, Duration::from_millis(5), 20).expect("the monitor starts");
    let mut runs = compare_in_rounds(&[("tip", &tip), ("thirty", &thirty)], 2, 0.1, 2);
    let heads = monitor.stop();
    for (run, row) in runs.iter_mut().zip(heads.split()) {
        run.report.heads = Some(row);
    }
    let json: serde_json::Value = serde_json::from_str(&rpcbench::compare::comparison_json(&runs)).unwrap();
    assert_matches_schema("comparison.schema.json", &json);
    let rows: Vec<&serde_json::Value> =
        json["runs"].as_array().unwrap().iter().map(|run| &run["report"]["heads"]["targets"][0]).collect();
    assert_eq!((rows[0]["name"].as_str(), rows[0]["lag_max"].as_u64()), (Some("tip"), Some(0)), "{rows:?}");
    assert_eq!(
        (rows[1]["name"].as_str(), rows[1]["lag_max"].as_u64()),
        (Some("thirty"), Some(30)),
        "{rows:?}"
    );
    assert_eq!(rows[1]["stale"], rows[1]["samples"], "{rows:?}");
    // The schema does check the heads: a lag that is not a count is refused.
    let mut broken = json.clone();
    broken["runs"][0]["report"]["heads"]["targets"][0]["lag_max"] = json!("far");
    let path = format!("{}/../../schema/comparison.schema.json", env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap();
    assert!(!jsonschema::JSONSchema::compile(&schema).unwrap().is_valid(&broken));
}
