//! Comparisons in rounds: the targets take turns in short rounds (A B C, then B C A, ...; or an
//! order shuffled from the seed; or all at once on disjoint worker threads), each round after
//! its own warm-up, so that drift of the machine or the network hits every target alike. Each
//! target's rounds add up into its total (its histograms and counts merged, its measured time
//! the sum of its rounds'), so the table's figures stay the totals; each round's own figures
//! are kept for the verdicts ([`crate::verdict`]) and stored with the methodology in the
//! target's results file.

use std::collections::HashSet;
use std::time::{Duration, Instant, SystemTime};

use rand::rngs::SmallRng;
use rand::seq::SliceRandom;
use rand::SeedableRng;

use crate::compare::{CompareError, CompareEvent, CompareTarget};
use crate::engine::config::RunConfig;
use crate::engine::{EngineError, Run, StopHandle};
use crate::monitor::{Monitor, ResourceReport};
use crate::record::{RunRecord, SeriesPoint};
use crate::report::RunReport;
use crate::results::{ResultsFile, SavedRun};
use crate::verdict::{
    LookBoundary, Methodology, RoundFigures, RoundOrder, RoundsRecord, VerdictRule, BOOTSTRAP_SEED,
    CI_METHOD, CONFIDENCE,
};
use crate::workload::Workload;

/// How a comparison in rounds runs.
#[derive(Debug, Clone)]
pub struct RoundsPlan {
    /// Rounds (at least 1).
    pub rounds: u32,
    /// How targets take turns.
    pub order: RoundOrder,
    /// Pause between two runs (none when simultaneous, between rounds only).
    pub cooldown: Duration,
    /// The tie band of the verdicts.
    pub tie: f64,
    /// The tie band of the p95 and p99 verdicts.
    pub tail_tie: f64,
    /// Each round and target draws its own parameter sequence (its seed varied).
    pub vary_params: bool,
    /// Each round runs the whole length rather than a share of it (a replay of a file once
    /// through; a load of stages always runs whole).
    pub whole_rounds: bool,
    /// Adaptive rounds: after `rounds` rounds, and after every `rounds` more, the verdicts are
    /// looked at, and the comparison goes on while any of them is "not enough data", up to
    /// this many rounds (rounded down to a multiple of `rounds`; each further round as long as
    /// the first ones). Every interval is then widened for the looks (O'Brien-Fleming,
    /// [`crate::sequential`]), so that the one reported is a 95% interval although the
    /// comparison chose when to stop. 0, or no more than `rounds`: exactly `rounds` rounds.
    pub max_rounds: u32,
    /// The warm-up of each target's rounds after its first, when shorter than the run's own:
    /// the targets have been warmed and loaded by then, and a short warm-up only opens the
    /// connections again, so that the targets' turns lie close together in time (the machine's
    /// drift between them is what makes the per-round ratios spread). `None`: every round
    /// the run's own warm-up.
    pub later_warmup: Option<Duration>,
}

impl RoundsPlan {
    /// Looks at the verdicts the comparison may take (1: fixed rounds).
    pub fn looks(&self) -> u32 {
        let rounds = self.rounds.max(1);
        (self.max_rounds / rounds).max(1)
    }

    /// The most rounds the comparison runs.
    pub fn budget(&self) -> u32 {
        self.rounds.max(1) * self.looks()
    }

    /// What the verdicts are judged by: the tie bands, and the looks with the O'Brien-Fleming
    /// boundary.
    pub fn rule(&self) -> VerdictRule {
        VerdictRule {
            tie: self.tie,
            tail_tie: self.tail_tie,
            looks: self.looks(),
            budget: self.budget(),
            boundary: LookBoundary::ObrienFleming,
        }
    }
}

/// Whether every verdict of every target against the first (the baseline) is decided
/// (faster, slower or no difference, none "not enough data"), from the rounds gathered so far,
/// with intervals at the look's confidence.
pub fn all_decided(rounds: &[&[RoundFigures]], rule: &VerdictRule) -> bool {
    let Some((baseline, rest)) = rounds.split_first() else { return true };
    rest.iter().all(|target| {
        crate::verdict::verdicts_by(baseline, target, rule)
            .iter()
            .all(|verdict| verdict.judgement != crate::verdict::Judgement::NotEnoughData)
    })
}

/// Round `round`'s order of `targets` targets (indices): rotated by the round, or shuffled
/// from `seed`.
pub fn round_order(order: RoundOrder, round: u32, targets: usize, seed: u64) -> Vec<usize> {
    let mut indices: Vec<usize> = (0..targets).collect();
    match order {
        RoundOrder::Rotated => indices.rotate_left(round as usize % targets.max(1)),
        RoundOrder::Shuffled => {
            indices.shuffle(&mut SmallRng::seed_from_u64(seed ^ u64::from(round).wrapping_mul(0x9E37_79B9)))
        }
        RoundOrder::Simultaneous => {}
    }
    indices
}

/// The configuration of `round` (from 0) of `rounds` for target `index` of `targets`: a share
/// of the length (the duration divided, or the request count split with the remainder in the
/// first rounds; a load of stages, or any with `whole`, runs whole), and with `vary_params` a
/// seed of its own.
pub fn round_config(
    config: &RunConfig,
    round: u32,
    (rounds, whole): (u32, bool),
    index: usize,
    targets: usize,
    vary_params: bool,
) -> RunConfig {
    let mut config = config.clone();
    let rounds = rounds.max(1);
    if config.stages.is_empty() && !whole {
        if let Some(duration) = config.length.duration {
            config.length.duration = Some((duration / rounds).max(Duration::from_millis(1)));
        }
        if let Some(requests) = config.length.requests {
            let share =
                requests / u64::from(rounds) + u64::from(u64::from(round) < requests % u64::from(rounds));
            config.length.requests = Some(share.max(1));
        }
    }
    if vary_params {
        let slot = u64::from(round) * targets as u64 + index as u64 + 1;
        config.seed = config.seed.wrapping_add(slot.wrapping_mul(0x2545_F491_4F6C_DD1D));
    }
    config
}

/// The configuration a target's rounds add up to, for its total's report and results file:
/// rounds that each ran a share of a duration measured that share times the rounds run, more
/// than the duration asked for when adaptive rounds went on (20 rounds of a 3 s comparison's
/// 600 ms share measured 12 s, and their responses over the 3 s asked for read four times the
/// rate), fewer when stopped. Other lengths are unchanged: a request count is split exactly,
/// and whole rounds have no duration to share.
pub fn total_config(config: &RunConfig, (rounds, whole): (u32, bool), rounds_run: u32) -> RunConfig {
    let mut total = config.clone();
    if config.stages.is_empty() && !whole && rounds_run > 0 {
        let round = round_config(config, 0, (rounds, whole), 0, 1, false);
        if let (Some(share), Some(_)) = (round.length.duration, config.length.duration) {
            total.length.duration = Some(share * rounds_run);
        }
    }
    total
}

/// One round's length as the methodology states it.
fn round_length(config: &RunConfig, rounds: u32, whole: bool) -> String {
    if !config.stages.is_empty() {
        return "all stages".into();
    }
    let round = round_config(config, 0, (rounds, whole), 0, 1, false);
    match (round.length.duration, round.length.requests) {
        (Some(d), _) => crate::util::units::format_duration(d),
        (None, Some(n)) => format!("{n} requests"),
        (None, None) => "the whole run".into(),
    }
}

/// Whether request bodies (apart from the id) repeat among `count` drawn as a run with `seed`
/// draws them (at most 4,096 drawn): a response cache could then answer from memory. Plain
/// HTTP calls are not drawn.
pub fn bodies_repeat(workload: &Workload, seed: u64, count: u64) -> bool {
    let mut rng = SmallRng::seed_from_u64(seed);
    let mut seen = HashSet::new();
    let mut body = Vec::new();
    for turn in 0..count.min(4096) {
        let call = workload.pick(&mut rng, turn);
        if workload.calls()[call].is_http() {
            continue;
        }
        body.clear();
        workload.write_body(call, 0, &mut rng, &mut body);
        if !seen.insert(xxhash_rust::xxh3::xxh3_64(&body)) {
            return true;
        }
    }
    false
}

/// Adds a later round's record into a target's total: histograms and counts merged, measured
/// times added, the round's series after the total's (in the wider of the two intervals).
///
/// The round's points start where the measured time so far ends (to the ms), not at the next
/// whole interval: offsets rounded up to intervals add up to more than the measured time, and
/// a round's last point (the drain of the requests in flight at its end, a sliver of an
/// interval) then landed at the same start as the next round's first, so a chart's line went
/// back in time at every round boundary.
pub fn append_round(total: &mut RunRecord, round: RunRecord) {
    total.totals.merge(&round.totals);
    for (ours, theirs) in total.calls.iter_mut().zip(&round.calls) {
        ours.totals.merge(&theirs.totals);
    }
    for (ours, theirs) in total.stages.iter_mut().zip(&round.stages) {
        ours.merge(theirs);
    }
    for (ours, theirs) in total.phases.iter_mut().zip(&round.phases) {
        ours.merge(theirs);
    }
    let width = total.series_interval_ms.max(round.series_interval_ms).max(1);
    let measured_ms = u64::try_from(total.elapsed.as_micros().div_ceil(1000)).unwrap_or(u64::MAX);
    let offset = measured_ms.max(total.series.last().map_or(0, |last| last.start_ms + 1));
    if total.series_interval_ms == round.series_interval_ms {
        let keep_latency = total.series_latency.len() == total.series.len()
            && round.series_latency.len() == round.series.len();
        total.series.extend(round.series.iter().map(|p| SeriesPoint { start_ms: p.start_ms + offset, ..*p }));
        if keep_latency {
            total.series_latency.extend(round.series_latency);
        } else {
            total.series_latency.clear();
        }
    } else {
        let shifted: Vec<SeriesPoint> =
            round.series.iter().map(|p| SeriesPoint { start_ms: p.start_ms + offset, ..*p }).collect();
        let mut points: Vec<SeriesPoint> = Vec::new();
        for point in total.series.iter().chain(&shifted) {
            let start_ms = point.start_ms / width * width;
            match points.last_mut().filter(|last| last.start_ms == start_ms) {
                Some(last) => {
                    last.requests += point.requests;
                    last.errors += point.errors;
                    // Percentiles of merged intervals cannot be recomputed: the worse one.
                    last.p50_us = last.p50_us.max(point.p50_us);
                    last.p99_us = last.p99_us.max(point.p99_us);
                }
                None => points.push(SeriesPoint { start_ms, ..*point }),
            }
        }
        total.series = points;
        total.series_interval_ms = width;
        total.series_latency.clear();
    }
    total.elapsed += round.elapsed;
    total.interrupted |= round.interrupted;
    total.generator.workers.merge(&round.generator.workers);
    total.generator.peak_rss_bytes = total.generator.peak_rss_bytes.max(round.generator.peak_rss_bytes);
    total.exchanges += round.exchanges;
    total.wire.merge(&round.wire);
    total.connect_causes.merge(&round.connect_causes);
    total.late_start = total.late_start.max(round.late_start);
}

/// The resources of a target's rounds as one report: averages weighted by the time each
/// round was monitored, peaks the highest, disk I/O added up.
pub fn combine_resources(reports: &[ResourceReport]) -> Option<ResourceReport> {
    let (first, rest) = reports.split_first()?;
    let mut total = first.clone();
    for report in rest {
        let (a, b) = (total.monitored_us as f64, report.monitored_us as f64);
        let weigh = |x: f64, y: f64| if a + b > 0.0 { (x * a + y * b) / (a + b) } else { (x + y) / 2.0 };
        total.cpu_percent_avg = weigh(total.cpu_percent_avg, report.cpu_percent_avg);
        total.cpu_percent_peak = total.cpu_percent_peak.max(report.cpu_percent_peak);
        total.rss_bytes_avg = weigh(total.rss_bytes_avg as f64, report.rss_bytes_avg as f64) as u64;
        total.rss_bytes_peak = total.rss_bytes_peak.max(report.rss_bytes_peak);
        total.disk_read_bytes = total.disk_read_bytes.zip(report.disk_read_bytes).map(|(x, y)| x + y);
        total.disk_write_bytes = total.disk_write_bytes.zip(report.disk_write_bytes).map(|(x, y)| x + y);
        total.tcp_connections_avg =
            total.tcp_connections_avg.zip(report.tcp_connections_avg).map(|(x, y)| weigh(x, y));
        total.tcp_connections_peak = total.tcp_connections_peak.max(report.tcp_connections_peak);
        total.samples += report.samples;
        total.monitored_us += report.monitored_us;
        total.exited |= report.exited;
    }
    Some(total)
}

/// Responses per second within a round's measured window: the responses its time series
/// counts in the whole intervals that end by `window` (the round's duration), over those
/// intervals' time. `None` when no whole interval fits (a round bounded by a request count,
/// or shorter than one interval).
///
/// Why not responses over the round's elapsed time: the elapsed time runs until the last
/// response in flight when the duration ends has come back, a tail as long as the slowest
/// response, in which the few requests left complete. In rounds of a few hundred
/// milliseconds that tail is a large and erratic share of the round (a 600 ms round of two
/// identical mock nodes took from 602 to 724 ms on a busy machine, moving the round's rate by
/// up to 17%), which is noise in every per-round ratio and widens every rate interval.
pub fn window_rate(series: &[SeriesPoint], interval_ms: u64, window: Option<Duration>) -> Option<f64> {
    let window_ms = u64::try_from(window?.as_millis()).ok()?;
    if interval_ms == 0 {
        return None;
    }
    let whole: Vec<&SeriesPoint> = series.iter().filter(|p| p.start_ms + interval_ms <= window_ms).collect();
    // The intervals the window covers, whether or not a response completed in each.
    let covered = window_ms / interval_ms;
    if covered == 0 {
        return None;
    }
    let responses: u64 = whole.iter().map(|p| p.requests).sum();
    Some(responses as f64 * 1000.0 / (covered * interval_ms) as f64)
}

/// One round's figures of one target, from its record.
fn figures_of(
    config: &RunConfig,
    record: &RunRecord,
    round: u32,
    position: u32,
    resources: Option<&ResourceReport>,
) -> RoundFigures {
    let report = RunReport::new(config, record);
    RoundFigures {
        round,
        position,
        elapsed_us: u64::try_from(record.elapsed.as_micros()).unwrap_or(u64::MAX),
        requests: report.requests.total,
        errors: report.requests.errors,
        rate: (if config.stages.is_empty() { config.length.duration } else { None })
            .and_then(|window| window_rate(&record.series, record.series_interval_ms, Some(window)))
            .unwrap_or(report.requests.rate),
        p50_us: report.latency.percentile("p50"),
        p95_us: report.latency.percentile("p95"),
        p99_us: report.latency.percentile("p99"),
        cpu_percent: resources.map(|r| r.cpu_percent_avg),
        rss_bytes: resources.map(|r| r.rss_bytes_peak),
        latency: Some(crate::pooled::round_histogram_text(&record.totals.latency)),
    }
}

/// What one target has gathered so far.
struct Gathered {
    started: SystemTime,
    record: Option<RunRecord>,
    rounds: Vec<RoundFigures>,
    resources: Vec<ResourceReport>,
}

/// Runs one round of one target: its monitor around it when asked.
fn run_one(
    config: RunConfig,
    monitor_pids: &[u32],
    stop: &StopHandle,
) -> Result<(RunRecord, Option<ResourceReport>), EngineError> {
    let run = Run::with_stop(config, stop.clone())?;
    let monitor = (!monitor_pids.is_empty()).then(|| Monitor::start(monitor_pids));
    let record = run.execute();
    let resources = monitor.map(Monitor::stop);
    Ok((record?, resources))
}

/// Sleeps `pause`, waking early on a stop; false when stopped.
fn cool_down(pause: Duration, stop: &StopHandle) -> bool {
    let until = Instant::now() + pause;
    while !stop.is_stopped() {
        let left = until.saturating_duration_since(Instant::now());
        if left.is_zero() {
            return true;
        }
        std::thread::sleep(left.min(Duration::from_millis(50)));
    }
    false
}

/// Runs the comparison in rounds and returns each target's total, in the targets' order, each
/// with its rounds and the methodology in its results file. A stop ends the running round and
/// skips the rest; the targets that finished at least one round are returned.
pub fn run_rounds(
    targets: &[CompareTarget],
    plan: &RoundsPlan,
    stop: &StopHandle,
    mut on_event: impl FnMut(CompareEvent<'_>),
) -> Result<Vec<SavedRun>, CompareError> {
    let count = targets.len();
    let rounds = plan.rounds.max(1);
    let budget = plan.budget();
    let seed = targets.first().map_or(0, |t| t.config.seed);
    let mut gathered: Vec<Gathered> = targets
        .iter()
        .map(|_| Gathered {
            started: SystemTime::now(),
            record: None,
            rounds: Vec::new(),
            resources: Vec::new(),
        })
        .collect();
    let mut orders: Vec<Vec<String>> = Vec::new();
    let mut runs_done = 0usize;
    // A target's later rounds: the short warm-up, when it is shorter.
    let later_warmup = |config: &mut RunConfig, round: u32| {
        if let Some(later) = plan.later_warmup.filter(|_| round > 0) {
            config.warmup = config.warmup.min(later);
        }
    };
    'rounds: for round in 0..budget {
        if stop.is_stopped() {
            break;
        }
        if round >= rounds && round % rounds == 0 {
            let gathered_rounds: Vec<&[RoundFigures]> =
                gathered.iter().map(|g| g.rounds.as_slice()).collect();
            if all_decided(&gathered_rounds, &plan.rule()) {
                break;
            }
        }
        let order = round_order(plan.order, round, count, seed);
        let names: Vec<String> = order.iter().map(|&i| targets[i].name.clone()).collect();
        let mut results: Vec<(usize, SystemTime, RunConfig, RunRecord, Option<ResourceReport>)> = Vec::new();
        if plan.order == RoundOrder::Simultaneous {
            if round > 0 && !plan.cooldown.is_zero() {
                on_event(CompareEvent::CoolingDown(plan.cooldown));
                if !cool_down(plan.cooldown, stop) {
                    break;
                }
            }
            for target in targets {
                on_event(CompareEvent::RoundStarted {
                    round: round + 1,
                    rounds: budget,
                    name: &target.name,
                    target: target.config.target.redacted(),
                });
            }
            let threads = targets.first().map_or(1, |t| t.config.threads);
            let threads = if threads == 0 {
                std::thread::available_parallelism().map_or(1, |n| n.get())
            } else {
                threads
            };
            let configs: Vec<RunConfig> = targets
                .iter()
                .enumerate()
                .map(|(index, target)| {
                    let mut config = round_config(
                        &target.config,
                        round,
                        (rounds, plan.whole_rounds),
                        index,
                        count,
                        plan.vary_params,
                    );
                    // Disjoint worker threads: the generator's threads shared out.
                    config.threads = (threads / count).max(1);
                    later_warmup(&mut config, round);
                    config
                })
                .collect();
            let started = SystemTime::now();
            let outcomes: Vec<Result<(RunRecord, Option<ResourceReport>), EngineError>> =
                std::thread::scope(|scope| {
                    let handles: Vec<_> = configs
                        .iter()
                        .zip(targets)
                        .map(|(config, target)| {
                            let config = config.clone();
                            scope.spawn(move || run_one(config, &target.monitor_pids, stop))
                        })
                        .collect();
                    handles
                        .into_iter()
                        .map(|handle| {
                            handle.join().unwrap_or_else(|_| {
                                Err(EngineError::Runtime(std::io::Error::other("a run's thread panicked")))
                            })
                        })
                        .collect()
                });
            for ((index, outcome), config) in outcomes.into_iter().enumerate().zip(configs) {
                let (record, resources) =
                    outcome.map_err(|error| CompareError { name: targets[index].name.clone(), error })?;
                results.push((index, started, config, record, resources));
            }
        } else {
            for (place, &index) in order.iter().enumerate() {
                if stop.is_stopped() {
                    break 'rounds;
                }
                if runs_done > 0 && !plan.cooldown.is_zero() {
                    on_event(CompareEvent::CoolingDown(plan.cooldown));
                    if !cool_down(plan.cooldown, stop) {
                        break 'rounds;
                    }
                }
                let target = &targets[index];
                on_event(CompareEvent::RoundStarted {
                    round: round + 1,
                    rounds: budget,
                    name: &target.name,
                    target: target.config.target.redacted(),
                });
                let mut config = round_config(
                    &target.config,
                    round,
                    (rounds, plan.whole_rounds),
                    index,
                    count,
                    plan.vary_params,
                );
                later_warmup(&mut config, round);
                let started = SystemTime::now();
                let (record, resources) = run_one(config.clone(), &target.monitor_pids, stop)
                    .map_err(|error| CompareError { name: target.name.clone(), error })?;
                runs_done += 1;
                let figures = figures_of(&config, &record, round + 1, place as u32 + 1, resources.as_ref());
                on_event(CompareEvent::RoundFinished { name: &target.name, figures: &figures });
                absorb(&mut gathered[index], started, record, figures, resources);
            }
        }
        for (index, started, config, record, resources) in results {
            let figures = figures_of(&config, &record, round + 1, 1, resources.as_ref());
            on_event(CompareEvent::RoundFinished { name: &targets[index].name, figures: &figures });
            absorb(&mut gathered[index], started, record, figures, resources);
        }
        orders.push(names);
        if stop.is_stopped() {
            break;
        }
    }
    let first = targets.first().map(|t| &t.config);
    let cacheable = first.map(|config| {
        let rounds_run = orders.len().max(1) as u64;
        // Without varied params every round replays the same sequence.
        (rounds_run > 1 && !plan.vary_params)
            || bodies_repeat(
                &config.workload,
                config.seed,
                gathered.first().map_or(0, |g| g.rounds.iter().map(|r| r.requests).sum()),
            )
    });
    let methodology = Methodology {
        rounds: orders.len() as u32,
        order: plan.order,
        orders,
        warmup_ms: first.map_or(0, |c| c.warmup.as_millis() as u64),
        cooldown_ms: plan.cooldown.as_millis() as u64,
        round_length: first.map_or_else(String::new, |c| round_length(c, rounds, plan.whole_rounds)),
        tie: plan.tie,
        ci_method: CI_METHOD.into(),
        confidence: CONFIDENCE,
        bootstrap_seed: BOOTSTRAP_SEED,
        seed,
        varied_params: plan.vary_params,
        cacheable,
        max_rounds: (plan.looks() > 1).then_some(budget),
        look_every: (plan.looks() > 1).then_some(rounds),
        looks: plan.looks(),
        boundary: LookBoundary::ObrienFleming,
        tail_tie: (plan.tail_tie != plan.tie).then_some(plan.tail_tie),
        later_warmup_ms: first.and_then(|c| {
            plan.later_warmup.filter(|later| *later < c.warmup).map(|later| later.as_millis() as u64)
        }),
    };
    let mut runs = Vec::new();
    for (target, gathered) in targets.iter().zip(gathered) {
        let Some(record) = gathered.record else { continue };
        let error = |error| CompareError { name: target.name.clone(), error };
        let target_resources = combine_resources(&gathered.resources);
        let config = total_config(&target.config, (rounds, plan.whole_rounds), gathered.rounds.len() as u32);
        let mut file = ResultsFile::from_run(&config, &record, gathered.started);
        file.label = Some(target.name.clone());
        file.target_resources = target_resources.clone();
        file.rounds = Some(RoundsRecord { methodology: methodology.clone(), rounds: gathered.rounds });
        let mut saved = SavedRun::new(file, &target.name).map_err(|message| {
            error(EngineError::Runtime(std::io::Error::other(format!("results do not decode: {message}"))))
        })?;
        // The live report: it has everything the file keeps and the per-stage figures too.
        saved.report = RunReport::new(&config, &record);
        saved.report.target_resources = target_resources;
        on_event(CompareEvent::Finished(&saved));
        if !record.connect_causes.is_empty() {
            on_event(CompareEvent::ConnectFailures { name: &target.name, causes: &record.connect_causes });
        }
        runs.push(saved);
    }
    Ok(runs)
}

/// Adds a round to what a target gathered.
fn absorb(
    gathered: &mut Gathered,
    started: SystemTime,
    record: RunRecord,
    figures: RoundFigures,
    resources: Option<ResourceReport>,
) {
    if gathered.record.is_none() {
        gathered.started = started;
    }
    match gathered.record.as_mut() {
        Some(total) => append_round(total, record),
        None => gathered.record = Some(record),
    }
    gathered.rounds.push(figures);
    gathered.resources.extend(resources);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{Length, Target};
    use crate::jsonrpc::RequestTemplate;
    use crate::workload::{Call, Generator, ParamValue};

    fn config(length: Length) -> RunConfig {
        let mut config = RunConfig::new(
            Target::parse("http://127.0.0.1:1/").unwrap(),
            RequestTemplate::from_method("getSlot", None).unwrap(),
        );
        config.length = length;
        config
    }

    #[test]
    fn rounds_share_out_the_length_and_vary_the_seed_only_when_asked() {
        let by_time = config(Length { duration: Some(Duration::from_secs(10)), requests: None });
        let round = round_config(&by_time, 2, (5, false), 1, 2, false);
        assert_eq!(round.length.duration, Some(Duration::from_secs(2)));
        assert_eq!(round.seed, by_time.seed);
        assert_eq!(round_length(&by_time, 5, false), "2.00s");
        // Whole rounds: each runs the whole length.
        assert_eq!(
            round_config(&by_time, 2, (5, true), 1, 2, false).length.duration,
            Some(Duration::from_secs(10))
        );
        // 103 requests in 5 rounds: 21, 21, 21, 20, 20.
        let by_count = config(Length { duration: None, requests: Some(103) });
        let shares: Vec<u64> = (0..5)
            .map(|r| round_config(&by_count, r, (5, false), 0, 2, false).length.requests.unwrap())
            .collect();
        assert_eq!(shares, [21, 21, 21, 20, 20]);
        assert_eq!(shares.iter().sum::<u64>(), 103);
        // Varied: every round and target its own seed.
        let mut seeds: Vec<u64> = (0..5)
            .flat_map(|r| (0..3).map(move |t| (r, t)))
            .map(|(r, t)| round_config(&by_count, r, (5, false), t, 3, true).seed)
            .collect();
        seeds.sort();
        seeds.dedup();
        assert_eq!(seeds.len(), 15);
    }

    #[test]
    fn a_total_of_adaptive_rounds_measures_every_round_run_not_the_duration_asked() {
        let by_time = config(Length { duration: Some(Duration::from_secs(3)), requests: None });
        // 5 rounds of 600 ms asked, 20 run: 12 s measured.
        let total = total_config(&by_time, (5, false), 20);
        assert_eq!(total.length.duration, Some(Duration::from_secs(12)));
        assert_eq!(total_config(&by_time, (5, false), 5).length.duration, Some(Duration::from_secs(3)));
        // A report over the total: 290,000 responses in 20 rounds of 600 ms are 24,167/s.
        let mut record = round_record(Duration::from_secs(12), &[]);
        record.totals.counts.add_many(crate::outcome::Outcome::Ok, 290_000, || None);
        let rate = RunReport::new(&total, &record).requests.rate;
        assert!((rate - 290_000.0 / 12.0).abs() < 1.0, "{rate}");
        // Whole rounds and request counts are not shares of a duration.
        assert_eq!(total_config(&by_time, (5, true), 20).length.duration, Some(Duration::from_secs(3)));
        let by_count = config(Length { duration: None, requests: Some(100) });
        assert_eq!(total_config(&by_count, (5, false), 5).length, by_count.length);
    }

    fn point(start_ms: u64, requests: u64) -> SeriesPoint {
        SeriesPoint { start_ms, requests, errors: 0, p50_us: 1, p99_us: 1 }
    }

    /// A round's record measuring `elapsed`, with 100 ms points at `starts`.
    fn round_record(elapsed: Duration, starts: &[u64]) -> RunRecord {
        let series = std::sync::Arc::new(std::sync::Mutex::new(crate::record::Series::with_max_points(100)));
        let mut record = RunRecord::new(
            crate::record::Recorder::new(1, series),
            &[("a".into(), "getSlot".into())],
            elapsed,
            false,
        );
        record.series_interval_ms = 100;
        record.series = starts.iter().map(|start| point(*start, 10)).collect();
        record.series_latency.clear();
        record
    }

    #[test]
    fn rounds_appended_give_a_series_whose_times_only_go_forward() {
        // Rounds of 2,005.5 ms, each with a last point (its drain) starting at 2,000 ms: the
        // offsets add up to the measured time, so no point starts where another already did.
        let starts: Vec<u64> = (0..=20).map(|i| i * 100).collect();
        let round = || round_record(Duration::from_micros(2_005_500), &starts);
        let mut total = round();
        (1..5).for_each(|_| append_round(&mut total, round()));
        let times: Vec<u64> = total.series.iter().map(|p| p.start_ms).collect();
        assert_eq!(times.len(), 5 * 21);
        assert!(times.windows(2).all(|pair| pair[0] < pair[1]), "{times:?}");
        // Each round starts where the measured time so far ends.
        assert_eq!(&times[21..23], &[2006, 2106]);
        assert_eq!(total.elapsed, Duration::from_micros(5 * 2_005_500));
        assert!(*times.last().unwrap() < total.elapsed.as_millis() as u64, "{times:?}");
    }

    #[test]
    fn a_rounds_rate_leaves_out_the_drain_of_the_requests_in_flight_at_its_end() {
        // A 600 ms round at 1,000 responses a second, then 150 ms of drain in which 16
        // requests in flight come back: the round's rate is 1,000/s, not 616 / 0.75 s.
        let mut series: Vec<SeriesPoint> = (0..6).map(|i| point(i * 100, 100)).collect();
        series.push(point(600, 12));
        series.push(point(700, 4));
        let rate = window_rate(&series, 100, Some(Duration::from_millis(600))).unwrap();
        assert!((rate - 1000.0).abs() < 1e-9, "{rate}");
        // An interval without responses inside the window still counts as time measured.
        let stalled = [point(0, 100), point(200, 100)];
        let rate = window_rate(&stalled, 100, Some(Duration::from_millis(300))).unwrap();
        assert!((rate - 2000.0 / 3.0).abs() < 1e-9, "{rate}");
        // A window not a whole number of intervals: the whole ones only.
        let rate = window_rate(&series, 100, Some(Duration::from_millis(650))).unwrap();
        assert!((rate - 1000.0).abs() < 1e-9, "{rate}");
        // No whole interval, no duration, no series width: the elapsed-time rate is used.
        assert_eq!(window_rate(&series, 100, Some(Duration::from_millis(50))), None);
        assert_eq!(window_rate(&series, 100, None), None);
        assert_eq!(window_rate(&series, 0, Some(Duration::from_millis(600))), None);
    }

    #[test]
    fn repeated_bodies_are_told_apart_from_fresh_ones() {
        let fixed = Workload::single(&RequestTemplate::from_method("getSlot", None).unwrap());
        assert!(bodies_repeat(&fixed, 1, 2));
        assert!(!bodies_repeat(&fixed, 1, 1));
        let fresh = ParamValue::Array(vec![ParamValue::Generated(Generator::RandomHex(32))]);
        let fresh = Workload::new(vec![Call::new("getBlock", "getBlock", Some(&fresh), 1).unwrap()]).unwrap();
        assert!(!bodies_repeat(&fresh, 1, 4096));
        let few = ParamValue::Array(vec![ParamValue::Generated(Generator::IntRange { low: 1, high: 10 })]);
        let few = Workload::new(vec![Call::new("getBlock", "getBlock", Some(&few), 1).unwrap()]).unwrap();
        assert!(bodies_repeat(&few, 1, 100));
    }

    fn figures(round: u32, rate: f64) -> RoundFigures {
        RoundFigures {
            round,
            position: 1,
            elapsed_us: 1_000_000,
            requests: 1000,
            errors: 0,
            rate,
            p50_us: 1000,
            p95_us: 2000,
            p99_us: 3000,
            cpu_percent: None,
            rss_bytes: None,
            latency: None,
        }
    }

    #[test]
    fn adaptive_rounds_go_on_while_a_verdict_is_not_enough_data() {
        let plan = |rounds, max_rounds| RoundsPlan {
            rounds,
            order: RoundOrder::Rotated,
            cooldown: Duration::ZERO,
            tie: 0.03,
            tail_tie: 0.03,
            vary_params: false,
            whole_rounds: false,
            max_rounds,
            later_warmup: None,
        };
        // Up to 20 in steps of 5: four looks; a budget not a multiple of the step rounds down.
        assert_eq!((plan(5, 20).looks(), plan(5, 20).budget()), (4, 20));
        assert_eq!((plan(5, 23).looks(), plan(5, 23).budget()), (4, 20));
        assert_eq!((plan(5, 0).looks(), plan(5, 0).budget()), (1, 5));
        assert_eq!((plan(5, 3).looks(), plan(5, 3).budget()), (1, 5));
        let baseline: Vec<RoundFigures> = (1..=5).map(|r| figures(r, 1000.0)).collect();
        // Steady and equal: every verdict decided (no difference).
        let same: Vec<RoundFigures> = (1..=5).map(|r| figures(r, 1000.0)).collect();
        assert!(all_decided(&[&baseline, &same], &plan(5, 20).rule()));
        // Steady and half as fast: decided (slower).
        let half: Vec<RoundFigures> = (1..=5).map(|r| figures(r, 500.0)).collect();
        assert!(all_decided(&[&baseline, &half], &plan(5, 20).rule()));
        // Rates that spread across the band: go on.
        let spread: Vec<RoundFigures> = [800.0, 1250.0, 900.0, 1100.0, 1000.0]
            .iter()
            .zip(1..)
            .map(|(rate, r)| figures(r, *rate))
            .collect();
        assert!(!all_decided(&[&baseline, &same, &spread], &plan(5, 20).rule()));
        assert!(all_decided(&[&baseline], &plan(5, 20).rule()), "a baseline alone has nothing to decide");
    }

    #[test]
    fn rotated_rounds_give_each_target_each_place() {
        let orders: Vec<Vec<usize>> = (0..3).map(|r| round_order(RoundOrder::Rotated, r, 3, 1)).collect();
        assert_eq!(orders, [[0, 1, 2], [1, 2, 0], [2, 0, 1]]);
        assert_eq!(round_order(RoundOrder::Rotated, 3, 3, 1), [0, 1, 2]);
        // Shuffled: every target once, the same from the same seed.
        let shuffled = round_order(RoundOrder::Shuffled, 2, 5, 9);
        let mut sorted = shuffled.clone();
        sorted.sort();
        assert_eq!(sorted, [0, 1, 2, 3, 4]);
        assert_eq!(shuffled, round_order(RoundOrder::Shuffled, 2, 5, 9));
    }
}
