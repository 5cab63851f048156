//! Running a capacity search: its settings, one open-loop (or closed-loop) step at a level,
//! the search loop with its cool-downs, and the report it ends with.

use super::*;

/// Everything a capacity search needs besides the request.
#[derive(Debug, Clone)]
pub struct CapacitySettings {
    /// The objective.
    pub slo: Slo,
    /// Rates and precision.
    pub bounds: SearchBounds,
    /// Measured length of each step.
    pub step: Duration,
    /// Warmup of each step, sent but not measured.
    pub warmup: Duration,
    /// Pause between steps, so that one step's backlog does not leak into the next.
    pub cooldown: Duration,
    /// The most connections a step opens.
    pub max_connections: usize,
    /// Processes whose resources are sampled during each step.
    pub monitor_pids: Vec<u32>,
    /// What the search climbs: the rate (default) or the connections.
    pub mode: SearchMode,
    /// Connections of the first step and the most tried, in connections mode (the most is
    /// also capped by the open-file limit when the search starts).
    pub connection_bounds: ConnectionBounds,
}

impl CapacitySettings {
    /// Settings with the defaults of `rpcbench capacity` (5 s steps, 1 s warmup, 1 s cool-down,
    /// from 100 req/s up to 1,000,000, 5% precision, 1024 connections).
    pub fn new(slo: Slo) -> Self {
        Self {
            slo,
            bounds: SearchBounds::new(100.0, 1_000_000.0, 0.05),
            step: Duration::from_secs(5),
            warmup: Duration::from_secs(1),
            cooldown: Duration::from_secs(1),
            max_connections: 1024,
            monitor_pids: Vec::new(),
            mode: SearchMode::Rate,
            connection_bounds: ConnectionBounds::new(16, 1024, 0.05),
        }
    }

    /// Settings of a search over connections from `start` up to `max` (defaults otherwise).
    pub fn connections(slo: Slo, start: usize, max: usize) -> Self {
        let mut settings = Self::new(slo);
        settings.mode = SearchMode::Connections;
        settings.connection_bounds = ConnectionBounds::new(start, max, settings.bounds.precision);
        settings.max_connections = max;
        settings
    }

    /// The next step's level (rate or connections), given (level, passed) of the steps so far.
    pub fn next(&self, history: &[(f64, bool)]) -> NextStep {
        match self.mode {
            SearchMode::Rate => next_step(&self.bounds, history),
            SearchMode::Connections => next_connections(&self.connection_bounds, history),
        }
    }

    /// Checks the settings, naming the flag at fault.
    pub fn validate(&self) -> Result<(), SettingError> {
        let bounds = &self.bounds;
        let rate_ok = |rate: f64| rate.is_finite() && rate > 0.0 && rate <= 10_000_000.0;
        if !rate_ok(bounds.start_rate) {
            return Err(SettingError::new(Field::StartRate, "must be a positive rate of at most 10000000/s"));
        }
        if !rate_ok(bounds.max_rate) {
            return Err(SettingError::new(Field::MaxRate, "must be a positive rate of at most 10000000/s"));
        }
        if bounds.max_rate < bounds.start_rate {
            return Err(SettingError::mentioning(Field::MaxRate, "must be at least {}", &[Field::StartRate]));
        }
        if !(bounds.precision > 0.0 && bounds.precision < 1.0) {
            return Err(SettingError::new(Field::Precision, "must be above 0% and below 100%"));
        }
        if self.step.is_zero() {
            return Err(SettingError::new(Field::Step, "must be longer than zero"));
        }
        if self.max_connections == 0 {
            return Err(SettingError::new(Field::MaxConnections, "must be at least 1"));
        }
        if self.slo.clauses.is_empty() {
            return Err(SettingError::new(Field::Slo, "needs at least one clause"));
        }
        if self.mode == SearchMode::Connections {
            let connections = &self.connection_bounds;
            if connections.start == 0 {
                return Err(SettingError::new(Field::StartConnections, "must be at least 1"));
            }
            if connections.max < connections.start {
                return Err(SettingError::mentioning(
                    Field::MaxConnections,
                    "must be at least {}",
                    &[Field::StartConnections],
                ));
            }
            if !(connections.precision > 0.0 && connections.precision < 1.0) {
                return Err(SettingError::new(Field::Precision, "must be above 0% and below 100%"));
            }
        }
        Ok(())
    }
}

/// One step of the search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepResult {
    /// Order of the step, from 1.
    pub step: usize,
    /// The rate asked for, requests per second; in connections mode (closed loop, no rate is
    /// asked for) the rate the connections achieved.
    pub target_rate: f64,
    /// The connections of a closed-loop step (connections mode); absent in rate mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub connections: Option<u64>,
    /// The rate the generator kept up: requests sent over the step length plus twice the mean
    /// send lag (see [`StepFigures::achieved_rate`]).
    pub achieved_rate: f64,
    /// Requests sent in the measured time.
    pub requests: u64,
    /// Of which errors.
    pub errors: u64,
    /// Errors as a percentage of requests.
    pub error_percent: f64,
    /// Requests due but never sent.
    pub unsent: u64,
    /// Median latency (from the intended send time), microseconds.
    pub p50_us: u64,
    /// 90th percentile latency (from the intended send time), microseconds.
    #[serde(default)]
    pub p90_us: u64,
    /// 99th percentile latency (from the intended send time), microseconds.
    pub p99_us: u64,
    /// 99th percentile latency from the actual send time, microseconds.
    pub p99_uncorrected_us: u64,
    /// Mean send lag, microseconds.
    pub send_lag_mean_us: u64,
    /// Pass, SLO breach or generator limited.
    pub verdict: Verdict,
    /// The clauses breached (measured from the intended send time).
    pub breaches: Vec<Breach>,
    /// The generator fell short of the rate (achieved < 95% or unsent > 1%).
    pub generator_shortfall: bool,
    /// Resources of the monitored processes during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub target_resources: Option<ResourceReport>,
    /// What the generator itself used during the step.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub generator: Option<GeneratorReport>,
    /// Why connections of the step failed: a count and the first message of each kind (not
    /// kept in capacity files).
    #[serde(skip)]
    pub connect_causes: crate::connect_causes::ConnectCauses,
    /// With `--heads`: the target's head lag during the step (its warm-up included), behind
    /// the highest head seen across the followed nodes.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<crate::heads_lag::HeadLagWindow>,
}

impl StepResult {
    /// What the search climbed at this step: its connections in connections mode, otherwise
    /// the rate asked for.
    pub fn level(&self) -> f64 {
        self.connections.map_or(self.target_rate, |connections| connections as f64)
    }

    /// The verdict column: `pass`, `FAIL p99 812.00ms >= 50ms (16.2x)`, `GENERATOR LIMITED …`.
    pub fn verdict_text(&self) -> String {
        let breaches: Vec<String> = self.breaches.iter().map(Breach::describe).collect();
        match self.verdict {
            Verdict::Pass => "pass".into(),
            Verdict::SloBreach => {
                let mut text = format!("FAIL {}", breaches.join(", "));
                if breaches.is_empty() {
                    text = format!("FAIL {}", self.shortfall_text());
                } else if self.generator_shortfall {
                    text.push_str("; ");
                    text.push_str(&self.shortfall_text());
                }
                text
            }
            Verdict::GeneratorLimited => format!("GENERATOR LIMITED: {}", self.shortfall_text()),
            Verdict::ConnectionCap => {
                format!("CONNECTION CAP reached, every connection busy: {}", self.shortfall_text())
            }
            Verdict::Interrupted => "interrupted".into(),
        }
    }

    fn shortfall_text(&self) -> String {
        let due = self.requests + self.unsent;
        format!(
            "sent {:.1}% of the rate, {} of {due} not sent",
            self.achieved_rate * 100.0 / self.target_rate.max(f64::MIN_POSITIVE),
            self.unsent
        )
    }
}

/// What a step recorded, losslessly: kept in capacity files (`capacity --save`) so that a
/// search can be rendered again.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct StepData {
    /// Order of the step, from 1.
    pub step: usize,
    /// Measured time of the step, nanoseconds.
    pub elapsed_ns: u64,
    /// Outcomes by class, HTTP statuses, bytes, pacing counts and the four HDR histograms.
    pub results: MethodResults,
    /// What the generator used.
    pub generator: GeneratorData,
}

/// Runs one step at `level`: an open-loop run at that rate (or, in connections mode, a
/// closed-loop run with that many connections) of `settings.step` after `settings.warmup`.
pub fn run_step(
    base: &RunConfig,
    settings: &CapacitySettings,
    level: f64,
    number: usize,
    stop: &StopHandle,
) -> Result<StepResult, EngineError> {
    run_step_recorded(base, settings, level, number, stop).map(|(step, _)| step)
}

/// [`run_step`], with what the step recorded.
pub fn run_step_recorded(
    base: &RunConfig,
    settings: &CapacitySettings,
    level: f64,
    number: usize,
    stop: &StopHandle,
) -> Result<(StepResult, StepData), EngineError> {
    let config = step_config(base, settings, level);
    let run = Run::with_stop(config, stop.clone())?;
    let monitor = (!settings.monitor_pids.is_empty()).then(|| Monitor::start(&settings.monitor_pids));
    let record = run.execute();
    let resources = monitor.map(Monitor::stop);
    Ok(judge_step(base, settings, level, number, &record?, resources))
}

/// The run of one step at `level`: a rate, or connections in connections mode.
pub(super) fn step_config(base: &RunConfig, settings: &CapacitySettings, level: f64) -> RunConfig {
    let mut config = base.clone();
    config.load = match settings.mode {
        SearchMode::Rate => {
            Load::Open { rate: level, arrivals: Arrivals::Uniform, max_connections: settings.max_connections }
        }
        SearchMode::Connections => Load::Closed { connections: level as usize },
    };
    config.length = Length { duration: Some(settings.step), requests: None };
    config.warmup = settings.warmup;
    // A scenario's stages give way to the step's constant rate.
    config.stages.clear();
    config
}

/// The result of step `number` at `level` (a rate, or connections in connections mode) from
/// what it recorded (and what the monitor saw of the target meanwhile), judged against the
/// SLO, and its data for a capacity file.
pub fn judge_step(
    base: &RunConfig,
    settings: &CapacitySettings,
    level: f64,
    number: usize,
    record: &RunRecord,
    resources: Option<ResourceReport>,
) -> (StepResult, StepData) {
    let report = RunReport::new(&step_config(base, settings, level), record);
    let closed = settings.mode == SearchMode::Connections;
    let mut figures = StepFigures::from_report(level, settings.step, &report);
    if closed {
        figures.target_rate = round2(figures.achieved_rate());
    }
    let (mut verdict, breaches) =
        if closed { figures.judge_closed(&settings.slo) } else { figures.judge(&settings.slo) };
    if record.interrupted {
        verdict = Verdict::Interrupted;
    }
    let mut results = MethodResults::new(base.workload.sample_request(0), &record.totals);
    base.secrets().scrub_outcomes(&mut results.outcomes);
    let data = StepData {
        step: number,
        elapsed_ns: u64::try_from(record.elapsed.as_nanos()).unwrap_or(u64::MAX),
        results,
        generator: GeneratorData::new(&record.generator),
    };
    let result = StepResult {
        step: number,
        target_rate: figures.target_rate,
        connections: closed.then_some(level as u64),
        achieved_rate: round2(figures.achieved_rate()),
        requests: figures.requests,
        errors: figures.errors,
        error_percent: round2(percent(figures.errors, figures.requests)),
        unsent: figures.unsent,
        p50_us: report.latency.percentile("p50"),
        p90_us: report.latency.percentile("p90"),
        p99_us: report.latency.percentile("p99"),
        p99_uncorrected_us: report.latency_uncorrected.percentile("p99"),
        send_lag_mean_us: figures.send_lag_mean_us,
        verdict,
        breaches,
        generator_shortfall: !closed && figures.shortfall(),
        target_resources: resources,
        generator: Some(report.generator),
        connect_causes: record.connect_causes.clone(),
        heads: None,
    };
    (result, data)
}

/// The settings of a search as the report shows them.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SearchSettingsReport {
    /// What the search climbed: `rate`, or `connections` (closed-loop steps); files without
    /// it are rate searches.
    #[serde(default, skip_serializing_if = "SearchMode::is_rate")]
    pub mode: SearchMode,
    /// Connections of the first step, in connections mode.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_connections: Option<u64>,
    /// The SLO as given.
    pub slo: String,
    /// First rate tried.
    pub start_rate: f64,
    /// Highest rate allowed.
    pub max_rate: f64,
    /// Relative width of the final bracket, percent.
    pub precision_percent: f64,
    /// Measured length of each step, microseconds.
    pub step_us: u64,
    /// Warmup of each step, microseconds.
    pub warmup_us: u64,
    /// Pause between steps, microseconds.
    pub cooldown_us: u64,
    /// Connection cap of each step; in connections mode the most connections tried (after
    /// the open-file limit).
    pub max_connections: u64,
}

/// The result of a capacity search.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct CapacityReport {
    /// The tool that made it.
    pub tool: String,
    /// The target URL with secrets redacted.
    pub target: String,
    /// The JSON-RPC method called.
    pub method: String,
    /// How the search was run.
    pub settings: SearchSettingsReport,
    /// Every step, in the order run.
    pub steps: Vec<StepResult>,
    /// The highest rate that passed, requests per second (in connections mode the most
    /// connections); null if none did.
    pub capacity: Option<f64>,
    /// The lowest rate (or connections) above it that failed; null if none did.
    pub first_failing_rate: Option<f64>,
    /// `first_failing_rate - capacity`, requests per second (or connections).
    pub margin: Option<f64>,
    /// The margin as a percentage of the capacity.
    pub margin_percent: Option<f64>,
    /// What ended the climb: `slo` (the target), `generator`, `connection_cap` (every allowed
    /// connection busy), `max_rate` (`max_connections` in
    /// connections mode), `no_pass` (even the lowest rate failed), `interrupted` or
    /// `max_steps`.
    pub limited_by: String,
    /// The last rate before p99 more than doubles over the lowest-rate step's p99; null: none.
    pub knee: Option<f64>,
    /// The p99 of the lowest-rate step the knee compares to, microseconds.
    pub knee_baseline_p99_us: Option<u64>,
    /// The search was stopped before the end (Ctrl-C).
    pub interrupted: bool,
    /// Wall time of the whole search, microseconds.
    pub elapsed_us: u64,
    /// With `--heads`: the heads of the target (first) and of the reference nodes over the
    /// whole search; each step has its own lags.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub heads: Option<crate::heads::HeadsReport>,
}

/// Runs the whole search. `on_step` sees every step as it finishes (for progress output).
/// Stopping `stop` ends the step that is running; the report covers the steps before it.
pub fn search(
    base: &RunConfig,
    settings: &CapacitySettings,
    stop: &StopHandle,
    on_step: impl FnMut(&StepResult),
) -> Result<CapacityReport, EngineError> {
    search_recorded(base, settings, stop, on_step).map(|(report, _)| report)
}

/// [`search`], with what each step recorded (in the order of the report's steps), for
/// `capacity --save`.
pub fn search_recorded(
    base: &RunConfig,
    settings: &CapacitySettings,
    stop: &StopHandle,
    on_step: impl FnMut(&StepResult),
) -> Result<(CapacityReport, Vec<StepData>), EngineError> {
    search_following_heads(base, settings, stop, None, on_step)
}

/// [`search_recorded`] with the head monitor `heads` (following the target first, then any
/// reference nodes) snapshotted at every step boundary: each step gets the target's head lag
/// during it (warm-up included; what the cool-down before it saw is left out).
pub fn search_following_heads(
    base: &RunConfig,
    settings: &CapacitySettings,
    stop: &StopHandle,
    heads: Option<&crate::heads::HeadMonitor>,
    mut on_step: impl FnMut(&StepResult),
) -> Result<(CapacityReport, Vec<StepData>), EngineError> {
    settings.validate().map_err(EngineError::Config)?;
    base.validate().map_err(EngineError::Config)?;
    let settings = &capped_by_open_files(base, settings);
    let started = Instant::now();
    let mut steps: Vec<StepResult> = Vec::new();
    let mut recorded: Vec<StepData> = Vec::new();
    let mut interrupted = false;
    loop {
        let history: Vec<(f64, bool)> = steps.iter().map(|s| (s.level(), s.verdict.passed())).collect();
        let NextStep::Run(level) = settings.next(&history) else {
            break;
        };
        if !steps.is_empty() && !pause(settings.cooldown, stop) {
            interrupted = true;
            break;
        }
        if stop.is_stopped() {
            interrupted = true;
            break;
        }
        // The cool-down's lags belong to no step.
        heads.map(crate::heads::HeadMonitor::take_window);
        let (mut step, data) = run_step_recorded(base, settings, level, steps.len() + 1, stop)?;
        step.heads = heads.and_then(|monitor| monitor.take_window().into_iter().next());
        on_step(&step);
        if step.verdict == Verdict::Interrupted {
            interrupted = true;
            break;
        }
        steps.push(step);
        recorded.push(data);
    }
    Ok((summarize(base, settings, steps, interrupted, started.elapsed()), recorded))
}

/// In connections mode, the settings with the most connections lowered to what the open-file
/// limit allows (raised as far as it may be first), so that the climb stops there rather than
/// failing a step; otherwise the settings as they are.
pub(super) fn capped_by_open_files(base: &RunConfig, settings: &CapacitySettings) -> CapacitySettings {
    let mut settings = settings.clone();
    if settings.mode == SearchMode::Connections {
        let widest = step_config(base, &settings, settings.connection_bounds.max as f64);
        if let Some(allowed) = crate::engine::limits::connections_allowed(&widest) {
            let allowed = usize::try_from(allowed).unwrap_or(usize::MAX).max(1);
            let bounds = &mut settings.connection_bounds;
            bounds.max = bounds.max.min(allowed);
            bounds.start = bounds.start.min(bounds.max);
            settings.max_connections = bounds.max;
        }
    }
    settings
}

/// Sleeps for `length` unless stopped first; false if stopped.
pub(super) fn pause(length: Duration, stop: &StopHandle) -> bool {
    let until = Instant::now() + length;
    while Instant::now() < until {
        if stop.is_stopped() {
            return false;
        }
        std::thread::sleep(until.saturating_duration_since(Instant::now()).min(Duration::from_millis(50)));
    }
    !stop.is_stopped()
}

/// The report of a finished (or stopped) search.
pub fn summarize(
    base: &RunConfig,
    settings: &CapacitySettings,
    steps: Vec<StepResult>,
    interrupted: bool,
    elapsed: Duration,
) -> CapacityReport {
    let history: Vec<(f64, bool)> = steps.iter().map(|s| (s.level(), s.verdict.passed())).collect();
    let (capacity, first_fail) = bracket(&history);
    let fail_step = first_fail.and_then(|level| steps.iter().find(|s| s.level() == level));
    let closed = settings.mode == SearchMode::Connections;
    let max_level = if closed { settings.connection_bounds.max as f64 } else { settings.bounds.max_rate };
    let limited_by = if interrupted {
        "interrupted"
    } else if let Some(step) = fail_step.filter(|_| capacity.is_some()) {
        if step.verdict == Verdict::GeneratorLimited {
            "generator"
        } else if step.verdict == Verdict::ConnectionCap {
            "connection_cap"
        } else {
            "slo"
        }
    } else if capacity.is_some_and(|level| level >= max_level) {
        if closed {
            "max_connections"
        } else {
            "max_rate"
        }
    } else if capacity.is_none() && first_fail.is_some() {
        "no_pass"
    } else {
        "max_steps"
    };
    // Generator-limited steps say nothing about the target's latency.
    let latencies: Vec<(f64, u64)> = steps
        .iter()
        .filter(|s| s.verdict != Verdict::GeneratorLimited)
        .map(|s| (s.level(), s.p99_us))
        .collect();
    let baseline = latencies.iter().min_by(|a, b| a.0.total_cmp(&b.0)).map(|(_, p99)| *p99);
    let margin = capacity.zip(first_fail).map(|(pass, fail)| fail - pass);
    CapacityReport {
        tool: concat!("rpcbench ", env!("CARGO_PKG_VERSION")).into(),
        target: base.target.redacted(),
        method: base.workload.label(),
        settings: SearchSettingsReport {
            mode: settings.mode,
            start_connections: closed.then_some(settings.connection_bounds.start as u64),
            slo: settings.slo.to_string(),
            start_rate: settings.bounds.start_rate,
            max_rate: settings.bounds.max_rate,
            precision_percent: round2(settings.bounds.precision * 100.0),
            step_us: micros(settings.step),
            warmup_us: micros(settings.warmup),
            cooldown_us: micros(settings.cooldown),
            max_connections: settings.max_connections as u64,
        },
        capacity,
        first_failing_rate: first_fail.filter(|_| capacity.is_some()),
        margin,
        margin_percent: margin.zip(capacity).map(|(margin, pass)| round2(margin * 100.0 / pass)),
        limited_by: limited_by.into(),
        knee: knee(&latencies),
        knee_baseline_p99_us: baseline,
        steps,
        interrupted,
        elapsed_us: micros(elapsed),
        heads: None,
    }
}
