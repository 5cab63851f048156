//! The Geyser feed's harder figures against the mock's truth: per-slot stage timings (the mock
//! stamps each stage on a fixed schedule, a sixth of the slot time apart), resubscribing
//! `from_slot` after a disconnect (replayed items are backfill, gaps across the reconnect
//! counted right), and per-stage race rows.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rpcbench::engine::config::Target;
use rpcbench::engine::StopHandle;
use rpcbench::mock::{GeyserMock, GeyserMockOptions};
use rpcbench::report::subscribe::SubscribeReport;
use rpcbench::subscribe::{run, SubscribeConfig, SubscriptionKind};

fn feed(options: impl FnOnce(&mut GeyserMockOptions)) -> GeyserMock {
    let mut settings = GeyserMockOptions {
        slot_time: Duration::from_millis(30),
        transactions_per_slot: 0,
        ..Default::default()
    };
    options(&mut settings);
    GeyserMock::start(settings).expect("the mock feed starts")
}

fn config(mock: &GeyserMock, kinds: &[&str], millis: u64) -> SubscribeConfig {
    let target = Target::parse(&mock.url()).unwrap();
    let kinds = kinds.iter().map(|kind| SubscriptionKind::parse(kind).unwrap()).collect();
    SubscribeConfig::new(target, kinds, Duration::from_millis(millis))
}

fn subscribe(config: &SubscribeConfig) -> SubscribeReport {
    run(config, &StopHandle::new()).expect("the subscriptions run")
}

/// Within the histograms' resolution (three significant digits) and the microsecond the
/// stamps are cut to: a bound that does not depend on the machine's speed.
fn near(value: u64, expected: u64) -> bool {
    value.abs_diff(expected) <= expected / 1_000 + 1
}

#[test]
fn stage_timings_by_the_servers_stamps_match_the_mocks_schedule_exactly() {
    // Stages a sixth of 30 ms apart: download (first shred -> completed) and replay (created
    // bank -> processed) two ticks, 10 ms; processed -> confirmed -> finalized one tick each.
    let mock = feed(|_| {});
    let mut config = config(&mock, &["geyser-stages"], 600);
    config.subscribers = 2;
    let report = subscribe(&config);
    let text = report.render_text();
    let stages = report.slot_stages.as_ref().expect("stage timings");
    assert!(stages.slots >= 10, "{text}");
    assert_eq!(stages.backwards, 0, "{text}");
    for (interval, expected) in stages.intervals.iter().zip([10_000, 10_000, 5_000, 5_000]) {
        let server = interval.by_server.as_ref().expect("the mock stamps every stage");
        assert!(server.count >= 5, "{}: {text}", interval.interval);
        assert!(near(server.min_us, expected) && near(server.max_us, expected), "{interval:?}");
        // Every slot timed by the stamps is timed by arrival too.
        assert_eq!(interval.by_arrival.count, server.count, "{interval:?}");
    }
    assert!(text.contains("Slot stages:") && text.contains("download"), "{text}");
}

#[test]
fn a_reconnect_resubscribes_from_slot_and_the_replay_is_backfill_without_gaps() {
    let mock = feed(|options| {
        options.disconnect_every = Some(Duration::from_millis(200));
        options.from_slot_history = 4_096;
    });
    let mut config = config(&mock, &["geyser-slot"], 900);
    config.reconnect = true;
    let report = subscribe(&config);
    let text = report.render_text();
    assert!(report.reconnects >= 2, "{text}");
    assert_eq!(report.from_slot_refused, 0, "{text}");
    // The reconnect pause is 50 ms, the slot time 30 ms: each reconnect missed a slot, which
    // the replay delivered.
    assert!(report.backfill >= report.reconnects, "{text}");
    // Backfill is what was made before the resubscription: the replay, and what a late tick of
    // the mock (a busy machine) broadcast after the subscriber came, stamped when it was due.
    let truth = mock.truth();
    let made_before = truth.replayed.load(Ordering::Relaxed)
        + truth.live_stamped_before_subscribing.load(Ordering::Relaxed);
    assert!(report.backfill <= made_before, "{text}");
    assert_eq!((report.gaps, report.duplicates), (0, 0), "{text}");
    // Backfill is never a lag sample: the items measured are the lag samples and the backfill
    // that arrived in the measured time. That is all the backfill but what arrived after the
    // end, counted there too (a reconnect near the end, on a busy machine, replays after it).
    let produced = report.produced_lag.as_ref().expect("a lag behind production");
    let measured = report.notifications - report.notifications_after_end;
    let measured_backfill = measured.checked_sub(produced.count).expect("no more lag samples than items");
    assert!(measured_backfill >= 1, "the first reconnect's replay arrived in the measured time\n{text}");
    assert!(measured_backfill <= report.backfill, "lag samples {}\n{text}", produced.count);
    assert!(
        measured_backfill + report.notifications_after_end >= report.backfill,
        "lag samples {}\n{text}",
        produced.count
    );
    assert!(text.contains("backfilled"), "{text}");
}

#[test]
fn a_server_that_refuses_from_slot_is_asked_again_without_it_and_the_missed_slots_are_gaps() {
    let mock = feed(|options| options.disconnect_every = Some(Duration::from_millis(200)));
    let mut config = config(&mock, &["geyser-slot"], 900);
    config.reconnect = true;
    let report = subscribe(&config);
    let text = report.render_text();
    assert!(report.reconnects >= 2, "{text}");
    assert_eq!(report.from_slot_refused, report.reconnects, "{text}");
    assert_eq!(report.backfill, 0, "{text}");
    assert_eq!(report.subscribed, 1, "{text}");
    // At least the slot due during each 50 ms pause is missing, unless a late tick of the mock
    // (a busy machine) broadcast it after the subscriber came back.
    let late = mock.truth().live_stamped_before_subscribing.load(Ordering::Relaxed);
    assert!(report.gaps + late >= report.reconnects, "late ticks {late}\n{text}");
    assert_eq!(report.duplicates, 0, "{text}");
}

#[test]
fn a_race_over_stages_has_rows_for_every_stage() {
    use rpcbench::subscribe::race::{self, RaceConfig};
    let mock = feed(|options| options.mirrors = vec![Duration::from_millis(5)]);
    let endpoints = vec![
        ("fast".to_string(), Target::parse(&mock.url()).unwrap()),
        ("slow".to_string(), Target::parse(&mock.mirror_url(0).unwrap()).unwrap()),
    ];
    let kinds = vec![SubscriptionKind::parse("geyser-stages").unwrap()];
    let report =
        race::run(&RaceConfig::new(endpoints, kinds, Duration::from_millis(700)), &StopHandle::new())
            .expect("the race runs");
    let names: Vec<&str> = report.kinds.iter().map(|kind| kind.kind.as_str()).collect();
    assert_eq!(
        names,
        [
            "geyser-stages",
            "geyser-stages: first shred received",
            "geyser-stages: created bank",
            "geyser-stages: completed",
            "geyser-stages: processed",
            "geyser-stages: confirmed",
            "geyser-stages: finalized"
        ]
    );
    let all = &report.kinds[0];
    // The stages partition the kind's items.
    assert_eq!(report.kinds[1..].iter().map(|stage| stage.items).sum::<u64>(), all.items, "{report:?}");
    for stage in &report.kinds[1..] {
        assert!(stage.seen_by_all >= 5, "{report:?}");
        assert_eq!(stage.rows[0].delay_p50_us, 0, "{stage:?}");
        assert!(stage.rows[1].delay_p50_us > 0, "{stage:?}");
    }
}

#[test]
fn many_subscribers_report_the_lag_per_second_and_whether_the_feed_keeps_up() {
    let mock = feed(|_| {});
    let mut config = config(&mock, &["geyser-slot"], 2_400);
    config.subscribers = 40;
    config.subs_per_socket = 10;
    let report = subscribe(&config);
    let text = report.render_text();
    assert_eq!(report.subscribed, 40, "{text}");
    // The whole seconds 0 and 1 each carry a p99 lag behind production; the growth compares them.
    let whole: Vec<Option<u64>> = report
        .series
        .iter()
        .filter(|point| point.second < 2)
        .map(|point| point.produced_lag_p99_us)
        .collect();
    assert_eq!(whole.len(), 2, "{:?}", report.series);
    assert!(whole.iter().all(Option::is_some), "{:?}", report.series);
    let growth = report.lag_growth.as_ref().expect("a lag growth verdict");
    assert_eq!((growth.first_second, growth.last_second), (0, 1), "{growth:?}");
    assert_eq!(Some(growth.first_p99_us), whole[0]);
    assert!(text.contains("Lag growth:"), "{text}");
}
