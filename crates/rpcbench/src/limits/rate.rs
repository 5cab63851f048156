//! The rate half of `rpcbench limits`: the sustained request rate a node or plan allows before
//! rate-limit answers appear (open-loop steps climbed as `capacity` climbs them, with
//! `rate_limited` as the failure), the burst it lets through at once and the window after which
//! that budget comes back, and whether the calls of a batch count one by one against the rate.
//! Every request is taken from the probe's [`ProbeBudget`].
//!
//! The sustained rate is what a step answered per second *after its first refusal* (counted in
//! the step's 100 ms series, from the interval after the refusal's to the last interval with a
//! refusal): the budget (a token bucket) is empty from the first refusal on, so a budget
//! refilled during the pause before the step, up to a whole burst, is not counted as rate
//! sustained over it. Counting the whole step did: a loaded machine's pause of 2 s between
//! steps read 50/s as 72/s. The burst is given as the bracket of bucket sizes its timing allows
//! (see [`burst_of`]): a bucket refills from its first admission, which a loaded machine's late
//! first answer does not time.
//!
//! The order matters and is the caller's: the burst is probed first (the budget is full only
//! after a quiet spell), the sustained rate next (its last step leaves the budget empty), the
//! batch counting right after it (it needs an empty budget), and the window last.

use std::time::{Duration, Instant};

use serde::Serialize;
use serde_json::Value;

use super::probe::{batch_body, ProbeBudget, Refusal};
use crate::capacity::{next_step, NextStep, SearchBounds};
use crate::client::{Endpoint, RawAnswer};
use crate::engine::config::{Arrivals, Length, Load, RunConfig, Target};
use crate::engine::{EngineError, LiveSink, Run};
use crate::jsonrpc::RequestTemplate;
use crate::outcome::{Outcome, OutcomeClass};
use crate::ratelimit::signs::RateLimitRules;

/// How the sustained search climbs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateSearch {
    /// The first rate tried, requests per second; doubled while no answer is rate limited.
    pub start_rate: f64,
    /// The highest rate tried.
    pub max_rate: f64,
    /// Measured length of each step.
    pub step: Duration,
    /// Warm-up of each step, sent at the step's rate and not measured.
    pub warmup: Duration,
}

impl Default for RateSearch {
    /// From 10 req/s up to 100,000, steps of 2 s after 0.5 s of warm-up.
    fn default() -> Self {
        RateSearch {
            start_rate: 10.0,
            max_rate: 100_000.0,
            step: Duration::from_secs(2),
            warmup: Duration::from_millis(500),
        }
    }
}

/// Requests sent one after the other until the first rate-limited answer.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BurstProbe {
    /// Requests answered before the first refusal.
    pub accepted: u64,
    /// From the first request's send to the refusal's answer, microseconds: the longest the
    /// budget can have refilled in (it refills from the first admission to the refusal, and
    /// each happened somewhere between its request's send and its answer).
    pub elapsed_us: u64,
    /// From the first answer to the refusal's send, microseconds: the shortest it can have
    /// refilled in.
    pub elapsed_min_us: u64,
    /// The rate-limited answer that ended it; `None` when the ceiling or the budget came first
    /// or the endpoint failed otherwise (then `failure` says how).
    pub refusal: Option<Refusal>,
    /// How the endpoint failed, when it was not a rate limit.
    pub failure: Option<Refusal>,
}

/// One open-loop step of the sustained search.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateStep {
    /// The rate offered, requests per second.
    pub offered_rate: f64,
    /// Requests in the measured time.
    pub requests: u64,
    /// Of which answered (class ok).
    pub answered: u64,
    /// Of which rate limited.
    pub rate_limited: u64,
    /// The step's length (the time its requests were due in), milliseconds.
    pub elapsed_ms: u64,
    /// Answered requests over the step's length, requests per second: the length is the time
    /// the requests were due in, and so admitted in; the measured time adds the wait for the
    /// last answers, which a loaded machine makes long enough to lower the rate by percents.
    pub answered_rate: f64,
    /// The part of the step after the interval (100 ms) its first refusal fell in, up to the end
    /// of the last with a refusal, milliseconds: the budget is empty from then on, so what is answered in it is the rate the limit
    /// sustains, whatever the budget held when the step began. `None` without a refusal, or
    /// when no whole interval of the step came after it.
    pub after_refusal_ms: Option<u64>,
    /// Answered (class ok) in that part.
    pub answered_after_refusal: Option<u64>,
    /// `answered_after_refusal` per second of `after_refusal_ms`: the step's sustained rate.
    pub limited_rate: Option<f64>,
    /// Where that part begins, milliseconds after [`RateStep::measured_from`] (not reported).
    #[serde(skip)]
    pub after_refusal_from_ms: Option<u64>,
    /// The instant the step's measured time began (its series' zero), on this process's
    /// clock: with it the part after the refusal lines up with another clock's record of the
    /// same process, a mock limiter's (not reported).
    #[serde(skip)]
    pub measured_from: Option<Instant>,
}

/// Notes the instant a run's measured time begins, passing everything on to the sink the run
/// already had.
#[derive(Debug)]
struct MeasureStart {
    inner: Option<std::sync::Arc<dyn LiveSink>>,
    at: std::sync::Mutex<Option<Instant>>,
}

impl MeasureStart {
    fn at(&self) -> Option<Instant> {
        *self.at.lock().unwrap_or_else(|poison| poison.into_inner())
    }
}

impl LiveSink for MeasureStart {
    fn begin_run(&self, config: &RunConfig, workers: usize, start: Instant, measure_start: Instant) {
        *self.at.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(measure_start);
        if let Some(inner) = &self.inner {
            inner.begin_run(config, workers, start, measure_start);
        }
    }

    fn publish(&self, worker: usize, calls: &[crate::record::Totals], in_flight: u64) {
        if let Some(inner) = &self.inner {
            inner.publish(worker, calls, in_flight);
        }
    }

    fn end_run(&self) {
        if let Some(inner) = &self.inner {
            inner.end_run();
        }
    }
}

/// What the sustained search found for one method.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SustainedFinding {
    /// The method called.
    pub method: String,
    /// The climbing steps, in order.
    pub steps: Vec<RateStep>,
    /// The measuring step: at the first rate that met rate limits, run again (twice when the
    /// first left too little after its first refusal).
    pub measured: Option<RateStep>,
    /// The sustained rate: the measuring step's rate after its first refusal
    /// ([`RateStep::limited_rate`]); `None` when no step met a rate limit (then the highest
    /// rate passed is a lower bound).
    pub sustained_rate: Option<f64>,
    /// The highest rate offered with no rate-limited answer.
    pub highest_passed: Option<f64>,
    /// Why the search stopped before measuring, when it did ("budget", "max rate").
    pub stopped: Option<String>,
}

/// How a node counts a batch against its rate.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum BatchCounting {
    /// A batch takes one request of the budget, whatever its length.
    OneRequest,
    /// Each call takes its own share: the calls past the budget were refused inside the batch.
    CallByCall,
    /// Each call takes its own share: the whole batch was refused.
    WholeBatchRefused,
    /// The batch was refused for another reason (its length, an error): not known.
    Unknown,
}

/// The evidence of the batch counting probe.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchCountingFinding {
    /// What the probe concluded.
    pub counting: BatchCounting,
    /// Calls in the batch sent.
    pub calls: u64,
    /// Requests' worth of budget the node had (the wait after an empty budget, times the rate).
    pub budget_then: u64,
    /// Calls of the batch answered with a result.
    pub answered: u64,
    /// Calls of the batch refused as rate limited.
    pub rate_limited: u64,
    /// How the batch was refused, when it was as a whole.
    pub refusal: Option<Refusal>,
}

/// Everything the rate half found.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct RateFinding {
    /// The first burst (sent after a quiet spell).
    pub burst_probe: Option<BurstProbe>,
    /// The sustained rate, per method.
    pub sustained: Vec<SustainedFinding>,
    /// The burst: requests let through at once from a full budget, the refill during the
    /// burst taken away; the smallest consistent with what was seen (see [`burst_of`]).
    pub burst: Option<u64>,
    /// The largest burst consistent with what was seen: the burst is `burst..=burst_max`.
    pub burst_max: Option<u64>,
    /// The window after which the burst's budget is surely back (`burst_max` / rate, to 2
    /// significant digits), milliseconds.
    pub window_ms: Option<u64>,
    /// The burst sent again after waiting the window: the evidence that the budget came back.
    pub window_check: Option<BurstProbe>,
    /// Whether batch calls count one by one.
    pub batch_counting: Option<BatchCountingFinding>,
}

/// Whether an answer is a rate limit as a whole: HTTP 429, or a bare JSON-RPC error the rules
/// call rate limited.
pub fn answer_is_rate_limited(answer: &RawAnswer, rules: &RateLimitRules) -> bool {
    if answer.status == 429 {
        return true;
    }
    match serde_json::from_slice::<Value>(&answer.body) {
        Ok(value @ Value::Object(_)) => item_is_rate_limited(&value, rules),
        _ => false,
    }
}

fn item_is_rate_limited(item: &Value, rules: &RateLimitRules) -> bool {
    let Some(error) = item.get("error") else { return false };
    let code = error.get("code").and_then(Value::as_i64).unwrap_or(0);
    let text = error.to_string();
    matches!(rules.judge(Outcome::RpcError(code), text.as_bytes()), Outcome::RateLimited(_))
}

/// Sends single calls of `method` one after the other, at most `ceiling` and within the
/// budget, until the first rate-limited answer.
pub fn probe_burst(endpoint: &Endpoint, method: &str, ceiling: u64, budget: &mut ProbeBudget) -> BurstProbe {
    let rules = RateLimitRules::default();
    let body = super::probe::padded_body(method, 0);
    let mut first: Option<(Instant, Instant)> = None;
    let mut probe =
        BurstProbe { accepted: 0, elapsed_us: 0, elapsed_min_us: 0, refusal: None, failure: None };
    let micros = |from: Instant, to: Instant| u64::try_from((to - from).as_micros()).unwrap_or(u64::MAX);
    while probe.accepted < ceiling && budget.allows_one_more() {
        budget.spend(1);
        let sent = Instant::now();
        let Some(posted) = budget.post(endpoint, &body) else { break };
        let answered = Instant::now();
        let (first_sent, first_answered) = *first.get_or_insert((sent, answered));
        probe.elapsed_us = micros(first_sent, answered);
        probe.elapsed_min_us = micros(first_answered, sent.max(first_answered));
        match posted {
            Ok(answer) if answer_is_rate_limited(&answer, &rules) => {
                probe.refusal = Some(Refusal::from_answer(&answer));
                break;
            }
            Ok(answer) if (200..300).contains(&answer.status) => probe.accepted += 1,
            Ok(answer) => {
                probe.failure = Some(Refusal::from_answer(&answer));
                break;
            }
            Err(error) => {
                probe.failure = Some(Refusal::from_error(&error));
                break;
            }
        }
    }
    probe
}

/// The bursts a [`BurstProbe`] is consistent with at a sustained rate known to lie in
/// `rates` (requests per second), smallest and largest: a bucket of `b` that was full at the
/// first admission let `a` through and refused the next at `t` after it when
/// `a - rate x t <= b < a + 1 - rate x t`, and `t` lies between
/// [`BurstProbe::elapsed_min_us`] and [`BurstProbe::elapsed_us`]. `None` when the probe did not
/// end in a rate limit.
pub fn burst_of(probe: &BurstProbe, rates: (f64, f64)) -> Option<(u64, u64)> {
    probe.refusal.as_ref()?;
    let (slowest, fastest) = (rates.0.min(rates.1).max(0.0), rates.0.max(rates.1).max(0.0));
    let accepted = probe.accepted as f64;
    // A hair below each bound so that a figure landing on a whole number by arithmetic alone
    // is not pushed to the next one.
    let smallest = (accepted - fastest * probe.elapsed_us as f64 / 1e6 - 1e-6).ceil().max(0.0);
    let largest = (accepted + 1.0 - slowest * probe.elapsed_min_us as f64 / 1e6 - 1e-6).ceil() - 1.0;
    Some((smallest as u64, largest.max(smallest) as u64))
}

/// The window of a burst at a rate, milliseconds, to 2 significant digits: the rate is known
/// to about a percent, so more digits would be noise.
pub fn window_ms(burst: u64, rate: f64) -> Option<u64> {
    if burst == 0 || rate.is_nan() || rate <= 0.0 {
        return None;
    }
    let ms = burst as f64 / rate * 1000.0;
    let magnitude = 10f64.powi(ms.log10().floor() as i32 - 1).max(1.0);
    Some(((ms / magnitude).round() * magnitude) as u64)
}

/// Requests an open-loop step at `rate` sends, warm-up included.
fn step_cost(rate: f64, search: &RateSearch) -> u64 {
    (rate * (search.step + search.warmup).as_secs_f64()).ceil() as u64
}

/// Runs one open-loop step at `rate` (the calls of `base`, `search`'s warm-up and length) and
/// spends what it sent.
pub fn run_rate_step(
    base: &RunConfig,
    search: &RateSearch,
    rate: f64,
    budget: &mut ProbeBudget,
) -> Result<RateStep, EngineError> {
    let mut config = base.clone();
    config.load = Load::Open { rate, arrivals: Arrivals::Uniform, max_connections: 256 };
    config.length = Length { duration: Some(search.step), requests: None };
    config.warmup = search.warmup;
    config.stages.clear();
    let start = std::sync::Arc::new(MeasureStart { inner: config.metrics.take(), at: Default::default() });
    config.metrics = Some(start.clone());
    let record = Run::with_stop(config, budget.stop_handle())?.execute()?;
    let counts = &record.totals.counts;
    let requests = counts.total();
    // The warm-up's requests are not in the totals: counted at their schedule.
    let warmup = (rate * search.warmup.as_secs_f64()).ceil() as u64;
    budget.spend_singles(requests + warmup);
    let length = search.step.as_secs_f64().max(1e-9);
    let answered = counts.class_total(OutcomeClass::Ok);
    let elapsed_ms = search.step.as_millis() as u64;
    let after = answered_after_first_refusal(&record.series, record.series_interval_ms, elapsed_ms);
    Ok(RateStep {
        offered_rate: rate,
        requests,
        answered,
        rate_limited: counts.class_total(OutcomeClass::RateLimited),
        elapsed_ms,
        answered_rate: round_rate(answered as f64 / length),
        after_refusal_ms: after.map(|(_, ms, _)| ms),
        answered_after_refusal: after.map(|(_, _, answered)| answered),
        limited_rate: after.map(|(_, ms, answered)| round_rate(answered as f64 * 1000.0 / ms as f64)),
        after_refusal_from_ms: after.map(|(from, _, _)| from),
        measured_from: start.at(),
    })
}

fn round_rate(rate: f64) -> f64 {
    (rate * 100.0).round() / 100.0
}

/// From a step's series (`interval_ms` wide points, by completion since the step's measured
/// start), the whole intervals inside its `length_ms` after the one its first failure fell in,
/// up to the last with a failure:
/// where they begin and their length in milliseconds, and the answers they hold that were not
/// failures. The budget
/// is empty at the first refusal and, at an offered rate above the limit, stays so: what these
/// intervals admitted is the sustained rate (to one request), with no part of a budget refilled
/// before the step counted in it. `None` when no interval failed or none whole came after.
pub fn answered_after_first_refusal(
    series: &[crate::record::SeriesPoint],
    interval_ms: u64,
    length_ms: u64,
) -> Option<(u64, u64, u64)> {
    let interval_ms = interval_ms.max(1);
    let first = series.iter().position(|point| point.errors > 0)?;
    let from = series[first].start_ms + interval_ms;
    // Up to the end of the last interval inside the step with a refusal: the budget was empty
    // then too, so a sender that stalled near the step's end (its requests sent, and counted,
    // after it) does not lower the figure.
    let last =
        series.iter().rev().find(|point| point.errors > 0 && point.start_ms + interval_ms <= length_ms)?;
    let until = last.start_ms + interval_ms;
    let whole: Vec<_> = series
        .iter()
        .filter(|point| point.start_ms >= from && point.start_ms + interval_ms <= until)
        .collect();
    let ms = until.saturating_sub(from) / interval_ms * interval_ms;
    if ms == 0 {
        return None;
    }
    Some((from, ms, whole.iter().map(|point| point.requests - point.errors).sum()))
}

/// Finds the sustained rate of the calls `base` sends: open-loop steps from `search.start_rate`,
/// doubled (as `capacity` climbs) until one meets rate-limited answers; that rate is then run
/// once more, from the empty budget the first left behind, and what it answered per second is
/// the sustained rate. If the limit does not hold when measured (no refusal after the first
/// interval: a stray refusal, or sends a stall bunched), that rate passed and the climb goes
/// on. Stops, saying why, when the next step would overrun the budget or at an interrupt.
pub fn probe_sustained(
    base: &RunConfig,
    method: &str,
    search: &RateSearch,
    budget: &mut ProbeBudget,
) -> Result<SustainedFinding, EngineError> {
    let bounds = SearchBounds::new(search.start_rate, search.max_rate, 0.05);
    let mut finding = SustainedFinding {
        method: method.to_string(),
        steps: Vec::new(),
        measured: None,
        sustained_rate: None,
        highest_passed: None,
        stopped: None,
    };
    let mut history: Vec<(f64, bool)> = Vec::new();
    loop {
        let limited_rate = loop {
            let rate = match next_step(&bounds, &history) {
                NextStep::Run(rate) => rate,
                NextStep::Done => {
                    finding.stopped = Some("the highest rate passed".into());
                    return Ok(finding);
                }
            };
            if !budget.affords(step_cost(rate, search)) {
                finding.stopped =
                    Some(budget.ended_by(format!("the budget (a step at {rate}/s would overrun it)")));
                return Ok(finding);
            }
            let step = run_rate_step(base, search, rate, budget)?;
            if !budget.affords(0) {
                // Cut short: its figures are not a step's (its requests are counted spent).
                finding.stopped = Some(budget.ended_by(String::new()));
                return Ok(finding);
            }
            let limited = step.rate_limited > 0;
            finding.steps.push(step);
            history.push((rate, !limited));
            if limited {
                break rate;
            }
            finding.highest_passed = Some(rate);
        };
        if !budget.affords(step_cost(limited_rate, search)) {
            finding.stopped = Some(budget.ended_by("the budget (before the measuring step)".into()));
            return Ok(finding);
        }
        let mut measured = run_rate_step(base, search, limited_rate, budget)?;
        if !budget.affords(0) {
            finding.stopped = Some(budget.ended_by(String::new()));
            return Ok(finding);
        }
        // A budget refilled during the pause before the step may take most of it to empty:
        // then the part after the refusal is short, and the step is run once more (the budget
        // empty).
        let short =
            |step: &RateStep| step.after_refusal_ms.unwrap_or(0) < (search.step.as_millis() / 4) as u64;
        if short(&measured) && budget.affords(step_cost(limited_rate, search)) {
            let again = run_rate_step(base, search, limited_rate, budget)?;
            if budget.affords(0) && again.after_refusal_ms > measured.after_refusal_ms {
                measured = again;
            }
        }
        if measured.limited_rate.is_some() {
            finding.sustained_rate = measured.limited_rate;
            finding.measured = Some(measured);
            return Ok(finding);
        }
        // The limit did not hold at this rate when measured: the first step's refusals were a
        // burst of sends bunched by a stall of the sender (or of the machine), not the rate. The
        // rate passed; the climb goes on to one that is limited all along.
        finding.steps.push(measured);
        if let Some(last) = history.last_mut() {
            last.1 = true;
        }
        finding.highest_passed =
            Some(finding.highest_passed.map_or(limited_rate, |passed| passed.max(limited_rate)));
    }
}

/// Whether a batch counts as one request or call by call: from an empty budget, waits for a
/// few requests' worth to come back at `rate`, then sends a batch three times as long (at most
/// `max_calls`). Passed whole, the batch counted as one; refused past the budget (inside the
/// batch or as a whole), its calls counted one by one.
pub fn probe_batch_counting(
    endpoint: &Endpoint,
    method: &str,
    rate: f64,
    burst: Option<u64>,
    max_calls: u64,
    budget: &mut ProbeBudget,
) -> Option<BatchCountingFinding> {
    if !budget.allows_one_more() || rate.is_nan() || rate <= 0.0 {
        return None;
    }
    let budget_then = burst.map_or(2, |burst| (burst / 4).clamp(2, 10)).min(max_calls.max(2) / 3).max(1);
    let calls = (budget_then * 3).min(max_calls).max(2);
    if !budget.pause(Duration::from_secs_f64(budget_then as f64 / rate)) {
        return None;
    }
    budget.spend(calls);
    let rules = RateLimitRules::default();
    let mut finding = BatchCountingFinding {
        counting: BatchCounting::Unknown,
        calls,
        budget_then,
        answered: 0,
        rate_limited: 0,
        refusal: None,
    };
    let answer = match budget.post(endpoint, &batch_body(method, calls))? {
        Ok(answer) => answer,
        Err(error) => {
            finding.refusal = Some(Refusal::from_error(&error));
            return Some(finding);
        }
    };
    if answer_is_rate_limited(&answer, &rules) {
        finding.counting = BatchCounting::WholeBatchRefused;
        finding.refusal = Some(Refusal::from_answer(&answer));
        return Some(finding);
    }
    match serde_json::from_slice::<Vec<Value>>(&answer.body) {
        Ok(items) if items.len() as u64 == calls && (200..300).contains(&answer.status) => {
            finding.answered = items.iter().filter(|item| item.get("result").is_some()).count() as u64;
            finding.rate_limited =
                items.iter().filter(|item| item_is_rate_limited(item, &rules)).count() as u64;
            finding.counting = if finding.rate_limited > 0 {
                BatchCounting::CallByCall
            } else if finding.answered == calls {
                BatchCounting::OneRequest
            } else {
                BatchCounting::Unknown
            };
        }
        _ => finding.refusal = Some(Refusal::from_answer(&answer)),
    }
    Some(finding)
}

/// What the whole rate half may do.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateProbe {
    /// How the sustained search climbs.
    pub search: RateSearch,
    /// The longest burst sent.
    pub max_burst: u64,
    /// The longest batch the batch counting probe may send.
    pub max_batch: u64,
}

/// Why the rate half could not run.
#[derive(Debug)]
pub enum RateProbeError {
    /// A method name that makes no request.
    Method(crate::jsonrpc::BodyError),
    /// A step's run could not start or failed.
    Run(EngineError),
}

impl std::fmt::Display for RateProbeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RateProbeError::Method(err) => write!(f, "{err}"),
            RateProbeError::Run(err) => write!(f, "{err}"),
        }
    }
}

impl std::error::Error for RateProbeError {}

/// The rate half, in the order its probes need: the burst from a full budget (so run it on a
/// quiet key), the sustained rate per method, the batch counting from the empty budget that
/// leaves, then the window, waited out with the burst sent again as its evidence, and one more
/// window so that whatever probes come next start from a full budget. `methods[0]` is used for
/// all but the per-method sustained rates.
pub fn probe_rate_limits(
    endpoint: &Endpoint,
    target: &Target,
    methods: &[String],
    limits: &RateProbe,
    budget: &mut ProbeBudget,
) -> Result<RateFinding, RateProbeError> {
    let first = methods.first().map_or("eth_blockNumber", String::as_str);
    let mut per_method = Vec::new();
    for method in methods {
        let template = RequestTemplate::from_method(method, None).map_err(RateProbeError::Method)?;
        per_method.push((method.clone(), RunConfig::new(target.clone(), template)));
    }
    probe_rate_limits_per_call(endpoint, first, &per_method, limits, budget)
}

/// One run config per call of `base`'s mix (a suite's, with the params it draws from its
/// sampled pools), each named after its call: what `limits --rate --suite` probes one by one.
pub fn configs_per_call(base: &RunConfig) -> Vec<(String, RunConfig)> {
    base.workload
        .calls()
        .iter()
        .filter_map(|call| {
            let workload = crate::workload::Workload::new(vec![call.clone()]).ok()?;
            let mut config = base.clone();
            config.workload = workload;
            Some((call.name().to_string(), config))
        })
        .collect()
}

/// [`probe_rate_limits`] with the sustained rate found for each named config in turn (a method,
/// or one call of a suite with its params); `first`, a method called without params, is used
/// for the burst, the batch counting and the window.
pub fn probe_rate_limits_per_call(
    endpoint: &Endpoint,
    first: &str,
    per_method: &[(String, RunConfig)],
    limits: &RateProbe,
    budget: &mut ProbeBudget,
) -> Result<RateFinding, RateProbeError> {
    let burst_probe = probe_burst(endpoint, first, limits.max_burst, budget);
    let mut sustained = Vec::new();
    for (name, config) in per_method {
        sustained.push(probe_sustained(config, name, &limits.search, budget).map_err(RateProbeError::Run)?);
    }
    let mut found = RateFinding {
        burst_probe: Some(burst_probe),
        sustained,
        burst: None,
        burst_max: None,
        window_ms: None,
        window_check: None,
        batch_counting: None,
    };
    let Some(rate) = found.rate() else { return Ok(found) };
    let bracket = found.burst_probe.as_ref().and_then(|probe| burst_of(probe, found.rate_bounds(rate)));
    (found.burst, found.burst_max) = (bracket.map(|(low, _)| low), bracket.map(|(_, high)| high));
    found.batch_counting = probe_batch_counting(endpoint, first, rate, found.burst, limits.max_batch, budget);
    found.window_ms = found.burst_max.and_then(|burst| window_ms(burst, rate));
    if let (Some(burst), Some(window)) = (found.burst_max, found.window_ms) {
        let window = Duration::from_millis(window);
        if budget.pause(window) {
            found.window_check = Some(probe_burst(endpoint, first, burst.saturating_mul(2).max(1), budget));
            budget.pause(window);
        }
    }
    Ok(found)
}

/// How much the sustained rate's count may be off by its window's ends, as a share: 5% (100
/// ms, one interval, of a 2 s step). 3% was too little: under a load of 7 on 2 cores the
/// bracket of a bucket of 100 read 98-99 in 2 runs of 20, the rate a few percent high and the
/// burst's 100 requests taking long enough to turn that into more than a request.
pub const RATE_SLACK: f64 = 0.05;

/// A rate as the report gives it: "50.2 req/s", whole numbers above 100.
fn rate_text(rate: f64) -> String {
    if rate >= 100.0 {
        format!("{rate:.0} req/s")
    } else {
        format!("{rate:.1} req/s")
    }
}

fn window_text(ms: u64) -> String {
    if ms >= 1000 && ms % 1000 == 0 {
        format!("{} s", ms / 1000)
    } else if ms >= 1000 {
        format!("{:.1} s", ms as f64 / 1000.0)
    } else {
        format!("{ms} ms")
    }
}

fn burst_evidence(probe: &BurstProbe) -> String {
    let format = |us: u64| crate::util::units::format_micros(us as f64);
    let took = if probe.elapsed_min_us < probe.elapsed_us {
        format!("{}-{}", format(probe.elapsed_min_us), format(probe.elapsed_us))
    } else {
        format(probe.elapsed_us)
    };
    match (&probe.refusal, &probe.failure) {
        (Some(refusal), _) => {
            format!("{} answered in {took}, then {}", probe.accepted, super::probe::refusal_text(refusal))
        }
        (None, Some(failure)) => {
            format!("{} answered, then a failure: {}", probe.accepted, super::probe::refusal_text(failure))
        }
        (None, None) => {
            format!("{} answered in {took} with no refusal (the ceiling or the budget)", probe.accepted)
        }
    }
}

impl RateFinding {
    /// The rate the window and the batch counting use: the first method's sustained rate.
    pub fn rate(&self) -> Option<f64> {
        self.sustained.first().and_then(|found| found.sustained_rate)
    }

    /// The sustained rate `rate` as the bounds its count allows: the answers after the first
    /// refusal are the rate times their time to one request either way, and their time is
    /// counted by completion, whose latency can move either end by tens of milliseconds on a
    /// loaded machine: [`RATE_SLACK`] more either way.
    fn rate_bounds(&self, rate: f64) -> (f64, f64) {
        let measured = self.sustained.first().and_then(|found| found.measured.as_ref());
        match measured.and_then(|step| Some((step.answered_after_refusal?, step.after_refusal_ms?))) {
            Some((answered, ms)) if ms > 0 => {
                let seconds = ms as f64 / 1000.0;
                let low = answered.saturating_sub(1) as f64 / seconds * (1.0 - RATE_SLACK);
                (low, (answered + 1) as f64 / seconds * (1.0 + RATE_SLACK))
            }
            _ => (rate * (1.0 - RATE_SLACK), rate * (1.0 + RATE_SLACK)),
        }
    }

    /// The burst as the report gives it: "100", or the bracket "100-104" the timing allows.
    pub fn burst_text(&self) -> Option<String> {
        let low = self.burst?;
        Some(match self.burst_max {
            Some(high) if high > low => format!("{low}-{high}"),
            _ => low.to_string(),
        })
    }

    /// The parts of the one-line summary: "~50.0 req/s sustained", "bursts of 100 per 2 s
    /// window", "batch calls count one by one".
    pub fn summary_parts(&self) -> Vec<String> {
        let mut parts = Vec::new();
        for found in &self.sustained {
            let method =
                if self.sustained.len() > 1 { format!(" ({})", found.method) } else { String::new() };
            parts.push(match (found.sustained_rate, found.highest_passed) {
                (Some(rate), _) => format!("~{} sustained{method}", rate_text(rate)),
                (None, Some(passed)) => format!("at least {} sustained{method}", rate_text(passed)),
                (None, None) => format!("no sustained rate found{method}"),
            });
        }
        match (self.burst_text(), self.window_ms) {
            (Some(burst), Some(window)) => {
                parts.push(format!("bursts of {burst} per {} window", window_text(window)))
            }
            (Some(burst), None) => parts.push(format!("bursts of {burst}")),
            _ => {}
        }
        if let Some(batch) = &self.batch_counting {
            parts.push(
                match batch.counting {
                    BatchCounting::OneRequest => "a batch counts as one request",
                    BatchCounting::CallByCall | BatchCounting::WholeBatchRefused => {
                        "batch calls count one by one"
                    }
                    BatchCounting::Unknown => "batch counting unknown",
                }
                .to_string(),
            );
        }
        parts
    }

    /// The rows of the report's table: (limit, found, evidence).
    pub fn rows(&self) -> Vec<(String, String, String)> {
        let mut rows = Vec::new();
        for found in &self.sustained {
            let name = if self.sustained.len() > 1 {
                format!("sustained rate ({})", found.method)
            } else {
                "sustained rate".to_string()
            };
            let value = match (found.sustained_rate, found.highest_passed) {
                (Some(rate), _) => rate_text(rate),
                (None, Some(passed)) => format!("at least {}", rate_text(passed)),
                (None, None) => "not found".to_string(),
            };
            let steps: Vec<String> = found
                .steps
                .iter()
                .map(|step| {
                    let mark = if step.rate_limited > 0 { "✗" } else { "✓" };
                    format!("{}/s{mark}", trim_rate(step.offered_rate))
                })
                .collect();
            let mut evidence = format!("offered {}", steps.join(" "));
            if let Some(measured) = &found.measured {
                let _ = std::fmt::Write::write_fmt(
                    &mut evidence,
                    format_args!(
                        "; again at {}/s for {} ms: {} answered, {} rate limited",
                        trim_rate(measured.offered_rate),
                        measured.elapsed_ms,
                        measured.answered,
                        measured.rate_limited
                    ),
                );
                if let (Some(ms), Some(answered)) =
                    (measured.after_refusal_ms, measured.answered_after_refusal)
                {
                    let _ = std::fmt::Write::write_fmt(
                        &mut evidence,
                        format_args!(", {answered} answered in the {ms} ms after the first refusal"),
                    );
                }
            }
            if let Some(stopped) = &found.stopped {
                evidence.push_str(&format!("; stopped at {stopped}"));
            }
            rows.push((name, value, evidence));
        }
        if let Some(probe) = &self.burst_probe {
            let value = match self.burst_text() {
                Some(burst) => format!("{burst} requests"),
                None => format!("at least {} requests", probe.accepted),
            };
            let mut evidence = burst_evidence(probe);
            if let (Some(low), Some(rate)) = (self.burst, self.rate()) {
                let high = self.burst_max.unwrap_or(low);
                let (least, most) = (probe.accepted.saturating_sub(high), probe.accepted.saturating_sub(low));
                if most > 0 {
                    let refilled = if least < most { format!("{least}-{most}") } else { most.to_string() };
                    evidence.push_str(&format!("; {refilled} refilled at {} meanwhile", rate_text(rate)));
                }
            }
            rows.push(("burst".to_string(), value, evidence));
        }
        if let Some(window) = self.window_ms {
            let mut evidence = "largest burst ÷ sustained rate".to_string();
            if let Some(check) = &self.window_check {
                evidence.push_str(&format!("; after waiting it, {}", burst_evidence(check)));
            }
            rows.push(("window".to_string(), window_text(window), evidence));
        }
        if let Some(batch) = &self.batch_counting {
            let value = match batch.counting {
                BatchCounting::OneRequest => "as one request",
                BatchCounting::CallByCall => "call by call",
                BatchCounting::WholeBatchRefused => "call by call (whole batch refused)",
                BatchCounting::Unknown => "unknown",
            };
            let mut evidence = format!(
                "{} calls sent with about {} requests of budget: {} answered, {} rate limited",
                batch.calls, batch.budget_then, batch.answered, batch.rate_limited
            );
            if let Some(refusal) = &batch.refusal {
                evidence.push_str(&format!("; {}", super::probe::refusal_text(refusal)));
            }
            rows.push(("batch counting".to_string(), value.to_string(), evidence));
        }
        rows
    }
}

fn trim_rate(rate: f64) -> String {
    if rate.fract() == 0.0 {
        format!("{rate:.0}")
    } else {
        format!("{rate:.2}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn probe(accepted: u64, elapsed_ms: u64, limited: bool) -> BurstProbe {
        BurstProbe {
            accepted,
            elapsed_us: elapsed_ms * 1000,
            elapsed_min_us: elapsed_ms * 1000,
            refusal: limited.then(|| Refusal { status: 429, code: None, message: String::new() }),
            failure: None,
        }
    }

    #[test]
    fn the_burst_is_what_got_through_less_the_refill_meanwhile() {
        let rate = (50.0, 50.0);
        assert_eq!(burst_of(&probe(100, 10, true), rate), Some((100, 100)), "half a token refilled");
        assert_eq!(burst_of(&probe(103, 70, true), rate), Some((100, 100)), "3.5 tokens refilled");
        assert_eq!(burst_of(&probe(100, 10, false), rate), None, "no refusal: not a burst");
    }

    /// Under load the first answer came late (the bucket refilled from the first admission,
    /// before it) and the refusal's send was late: 104 through, refused between 78 ms (from the
    /// first answer to the refusal's send) and 320 ms (from the first send to the refusal's
    /// answer) after the first admission. Timed from the first answer alone, 104 - 3 = 101
    /// read as the burst of a bucket of 100.
    #[test]
    fn a_burst_timed_loosely_is_the_bracket_of_bursts_the_timing_allows() {
        let loose = BurstProbe { elapsed_us: 320_000, elapsed_min_us: 78_000, ..probe(104, 0, true) };
        assert_eq!(burst_of(&loose, (50.0, 50.0)), Some((88, 101)));
        let tight = BurstProbe { elapsed_us: 80_000, elapsed_min_us: 78_000, ..probe(104, 0, true) };
        assert_eq!(burst_of(&tight, (49.5, 50.5)), Some((100, 101)), "the rate's own uncertainty");
        assert_eq!(burst_of(&probe(0, 0, true), (50.0, 50.0)), Some((0, 0)), "refused at once");
    }

    #[test]
    fn the_window_is_burst_over_rate_to_two_significant_digits() {
        assert_eq!(window_ms(100, 50.0), Some(2000));
        assert_eq!(window_ms(100, 49.3), Some(2000));
        assert_eq!(window_ms(500, 250.6), Some(2000));
        assert_eq!(window_ms(2500, 250.0), Some(10_000));
        assert_eq!(window_ms(3, 250.0), Some(12));
        assert_eq!(window_ms(0, 250.0), None);
    }

    #[test]
    fn rate_limited_answers_are_told_from_other_errors() {
        let rules = RateLimitRules::default();
        let answer = |status, body: &str| RawAnswer { status, body: body.as_bytes().to_vec() };
        assert!(answer_is_rate_limited(&answer(429, ""), &rules));
        let jsonrpc =
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32005,"message":"rate limit exceeded"}}"#;
        assert!(answer_is_rate_limited(&answer(200, jsonrpc), &rules));
        let other = r#"{"jsonrpc":"2.0","id":1,"error":{"code":-32005,"message":"query returned more than 10000 results"}}"#;
        assert!(!answer_is_rate_limited(&answer(200, other), &rules));
        assert!(!answer_is_rate_limited(&answer(200, r#"{"jsonrpc":"2.0","id":1,"result":"0x1"}"#), &rules));
    }
}
