//! Head races between mock nodes that are behind by known amounts: the monitor reports exactly
//! the lags they were given, classes the far one stale, and times the late one's heads within
//! the poll's resolution.

use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::engine::Run;
use rpcbench::engine::StopHandle;
use rpcbench::heads::{analyse, follow, HeadMonitor, HeadSource, PolledHead};
use rpcbench::mock::{Chain, MockOptions, MockServer};

fn node(chain: Chain, slot_time: Duration, lag: u64, delay: Duration) -> MockServer {
    let mut options = MockOptions::new(chain);
    options.slot_time = slot_time;
    options.head_lag = lag;
    options.head_delay = delay;
    MockServer::start(options).expect("the mock node starts")
}

fn sources(nodes: &[&MockServer]) -> Vec<Box<dyn HeadSource>> {
    nodes
        .iter()
        .map(|node| {
            let endpoint = Endpoint::parse(&node.url(), Duration::from_secs(2)).expect("a URL");
            Box::new(PolledHead::new(endpoint)) as Box<dyn HeadSource>
        })
        .collect()
}

#[test]
fn nodes_behind_by_0_3_and_30_blocks_report_exactly_those_lags_and_the_third_is_stale() {
    for chain in [Chain::Ethereum, Chain::Solana] {
        // Blocks an hour apart: the heads do not move during the race.
        let hour = Duration::from_secs(3600);
        let nodes = [
            node(chain, hour, 0, Duration::ZERO),
            node(chain, hour, 3, Duration::ZERO),
            node(chain, hour, 30, Duration::ZERO),
        ];
        let mut sources = sources(&nodes.iter().collect::<Vec<_>>());
        let samples =
            follow(&mut sources, Duration::from_millis(20), Duration::from_millis(200), &StopHandle::new());
        let names: Vec<String> = ["tip", "three", "thirty"].iter().map(|s| s.to_string()).collect();
        let heads = analyse(&names, &samples, 20);
        let lags: Vec<(u64, u64, u64)> = heads.iter().map(|h| (h.lag_p50, h.lag_p99, h.lag_max)).collect();
        assert_eq!(lags, [(0, 0, 0), (3, 3, 3), (30, 30, 30)], "{chain:?}: {heads:?}");
        assert!(heads.iter().all(|h| h.samples >= 2 && h.failed == 0), "{heads:?}");
        assert_eq!(heads[0].at_tip, 1.0);
        assert_eq!((heads[1].stale, heads[2].stale), (0, heads[2].samples), "{heads:?}");
    }
}

#[test]
fn a_node_showing_heads_late_is_timed_within_the_poll_resolution() {
    // Blocks every 300 ms; the second node shows each 120 ms late. Both chains start when
    // their servers do (a few ms apart), which the bound allows for beside the poll interval.
    let slot = Duration::from_millis(300);
    let early = node(Chain::Ethereum, slot, 0, Duration::ZERO);
    let late = node(Chain::Ethereum, slot, 0, Duration::from_millis(120));
    let interval = Duration::from_millis(10);
    let mut sources = sources(&[&early, &late]);
    let samples = follow(&mut sources, interval, Duration::from_millis(1800), &StopHandle::new());
    let names = vec!["early".to_string(), "late".to_string()];
    let heads = analyse(&names, &samples, 100);
    assert_eq!(heads[0].delay_ms_p50, 0.0, "{heads:?}");
    assert!((100.0..=160.0).contains(&heads[1].delay_ms_p50), "{heads:?}");
    assert!(heads[0].first_seen > 0.9 && heads[1].first_seen < 0.1, "{heads:?}");
}

#[test]
fn the_monitor_beside_a_load_reports_lags_of_0_3_and_30_exactly_and_the_third_stale() {
    let hour = Duration::from_secs(3600);
    let nodes = [
        node(Chain::Solana, hour, 0, Duration::ZERO),
        node(Chain::Solana, hour, 3, Duration::ZERO),
        node(Chain::Solana, hour, 30, Duration::ZERO),
    ];
    let names: Vec<String> = ["tip", "three", "thirty"].iter().map(|s| s.to_string()).collect();
    let monitor =
        HeadMonitor::start(names, sources(&nodes.iter().collect::<Vec<_>>()), Duration::from_millis(5), 20)
            .expect("the monitor starts");
    // A bounded load on every node while the monitor follows them.
    for node in &nodes {
        let config = crate::util::closed_loop(&node.url(), 2, crate::util::requests(300));
        let record = Run::new(config).unwrap().execute().unwrap();
        assert_eq!(record.totals.counts.total(), 300);
    }
    let report = monitor.stop();
    let heads = &report.targets;
    let lags: Vec<(u64, u64, u64)> = heads.iter().map(|h| (h.lag_p50, h.lag_p99, h.lag_max)).collect();
    assert_eq!(lags, [(0, 0, 0), (3, 3, 3), (30, 30, 30)], "{heads:?}");
    assert!(heads.iter().all(|h| h.samples >= 1 && h.failed == 0), "{heads:?}");
    assert_eq!((heads[0].at_tip, heads[1].at_tip), (1.0, 0.0), "{heads:?}");
    assert_eq!((heads[0].stale, heads[1].stale, heads[2].stale), (0, 0, heads[2].samples), "{heads:?}");
    assert_eq!(report.stale_after, 20);
}

#[test]
fn a_claimed_head_the_node_cannot_serve_is_counted_phantom() {
    for chain in [Chain::Ethereum, Chain::Solana] {
        let hour = Duration::from_secs(3600);
        let honest = node(chain, hour, 0, Duration::ZERO);
        let mut options = MockOptions::new(chain);
        options.slot_time = hour;
        options.head_phantom = 2;
        let phantom = MockServer::start(options).expect("the mock node starts");
        let mut sources = sources(&[&honest, &phantom]);
        let samples =
            follow(&mut sources, Duration::from_millis(10), Duration::from_millis(60), &StopHandle::new());
        // The heads do not move: one head claimed each, checked once.
        assert!(samples.iter().all(|list| list.iter().all(|(_, head)| head.is_some())), "{chain:?}");
        assert_eq!((sources[0].phantom(), sources[1].phantom()), (0, 1), "{chain:?}");
        // The phantom node claims the tip: its lag is nothing, the honest one's is 2.
        let heads = analyse(&["honest".to_string(), "phantom".to_string()], &samples, 20);
        assert_eq!((heads[0].lag_max, heads[1].lag_max), (2, 0), "{chain:?}");
    }
}

#[test]
fn a_node_whose_head_stalls_falls_behind_by_the_pause_and_its_catch_up_is_a_gap() {
    // Blocks every 50 ms; the second node's head stands still 400 ms in every 800 ms (8
    // blocks), then catches up at once.
    let slot = Duration::from_millis(50);
    let mut options = MockOptions::new(Chain::Ethereum);
    options.slot_time = slot;
    options.head_stall =
        Some(rpcbench::mock::Stall { pause: Duration::from_millis(400), every: Duration::from_millis(800) });
    let before = std::time::Instant::now();
    let steady = node(Chain::Ethereum, slot, 0, Duration::ZERO);
    let stalling = MockServer::start(options).expect("the mock node starts");
    // The chains start with their servers, at most this far apart (more than a block on a busy
    // machine): the stalling one is behind by that many blocks more.
    let apart = before.elapsed().as_micros().div_ceil(slot.as_micros()) as u64;
    let mut sources = sources(&[&steady, &stalling]);
    let samples =
        follow(&mut sources, Duration::from_millis(10), Duration::from_millis(1700), &StopHandle::new());
    let heads = analyse(&["steady".to_string(), "stalling".to_string()], &samples, 100);
    assert_eq!((heads[0].gaps, heads[0].reorgs, heads[1].reorgs), (0, 0, 0), "{heads:?}");
    assert!(heads[1].gaps >= 1, "{heads:?}");
    // At most the pause's 8 blocks behind, and the blocks between the nodes' starts.
    assert!((1..=8 + apart.max(1)).contains(&heads[1].lag_max), "{heads:?} (started {apart} blocks apart)");
    assert!(heads[0].lag_max <= 1, "{heads:?}");
}
