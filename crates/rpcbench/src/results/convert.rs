//! Converting between a run and its results file: a finished run's record into the file, and
//! the file back into a record and the report the live run printed (from the run's shape as
//! the file gives it, never from a made-up configuration).

use super::*;

impl ResultsFile {
    /// The results of a finished (or stopped) run that started at `started`.
    pub fn from_run(config: &RunConfig, record: &RunRecord, started: SystemTime) -> Self {
        let mut methods = BTreeMap::new();
        // A server's error message may quote the key or the Authorization header it was sent.
        let secrets = config.secrets();
        for (index, call) in record.calls.iter().enumerate() {
            let request = config.workload.sample_request(index);
            let mut entry = MethodResults::new(request, &call.totals);
            secrets.scrub_outcomes(&mut entry.outcomes);
            methods.insert(call.name.clone(), entry);
        }
        Self {
            format: RESULTS_FORMAT.into(),
            version: RESULTS_VERSION,
            tool: concat!("rpcbench ", env!("CARGO_PKG_VERSION")).into(),
            label: None,
            started_at: rfc3339(started),
            machine: Machine::current(),
            target: config.target.redacted(),
            workload: RunSettings {
                load: LoadSpec::of(&config.load, config.hold_connections),
                duration_us: config.length.duration.map(micros),
                requests: config.length.requests,
                warmup_us: micros(config.warmup),
                timeout_us: micros(config.timeout),
                connect_timeout_us: micros(config.connect_timeout),
                keepalive: config.keepalive,
                headers: config
                    .headers
                    .iter()
                    .map(|(name, value)| format!("{name}: {}", redact::header_value(name, value)))
                    .collect(),
                tls_insecure: config.tls.insecure,
                check: match config.check {
                    CheckMode::Scan => "scan".into(),
                    CheckMode::Full => "full".into(),
                },
                threads: config.worker_threads() as u64,
                max_body: config.max_body,
                seed: config.seed,
                batch: config.batch,
                shard: (config.shard.count > 1).then(|| ShardSpec {
                    index: config.shard.index as u64,
                    count: config.shard.count as u64,
                    late_start_ms: u64::try_from(record.late_start.as_millis()).unwrap_or(u64::MAX),
                }),
            },
            elapsed_ns: u64::try_from(record.elapsed.as_nanos()).unwrap_or(u64::MAX),
            interrupted: record.interrupted,
            methods,
            series: SeriesData {
                latency: record
                    .series_latency
                    .iter()
                    .map(|bytes| match bytes.is_empty() {
                        true => String::new(),
                        false => base64::engine::general_purpose::STANDARD.encode(bytes),
                    })
                    .collect(),
                interval_ms: record.series_interval_ms,
                points: record
                    .series
                    .iter()
                    .map(|p| [p.start_ms, p.requests, p.errors, p.p50_us, p.p99_us])
                    .collect(),
            },
            generator: Some(GeneratorData::new(&record.generator)),
            phases: record
                .phases
                .iter()
                .any(|class| !class.send.is_empty())
                .then(|| [PhaseData::new(&record.phases[0]), PhaseData::new(&record.phases[1])]),
            merged_from: Vec::new(),
            target_resources: None,
            exchanges: record.exchanges,
            http2: Http2Figures::of(config, record),
            websocket: WebSocketFigures::of(config, record),
            rounds: None,
            rate_headers: record.rate_headers.clone(),
            heads: None,
            method_order: record.calls.iter().map(|call| call.name.clone()).collect(),
            stages: config
                .stages
                .iter()
                .zip(&record.stages)
                .map(|(stage, totals)| {
                    let mut data = StageData::new(stage, totals);
                    secrets.scrub_outcomes(&mut data.outcomes);
                    data
                })
                .collect(),
            thresholds: Vec::new(),
        }
    }

    /// The run record: every method's totals added up, the series, the elapsed time.
    pub fn to_record(&self) -> Result<RunRecord, super::DecodeError> {
        let mut totals = Totals::default();
        let mut calls = Vec::new();
        for (name, method) in self.methods_in_order() {
            let call_totals = method.totals()?;
            totals.merge(&call_totals);
            let method_name =
                method.request.get("method").and_then(Value::as_str).unwrap_or(name).to_string();
            calls.push(CallTotals { name: name.clone(), method: method_name, totals: call_totals });
        }
        Ok(RunRecord {
            totals,
            calls,
            stages: self.stages.iter().map(StageData::totals).collect::<Result<_, _>>()?,
            generator: self.generator.map(|data| data.usage()).unwrap_or_default(),
            phases: match &self.phases {
                Some([ok, error]) => [ok.totals()?, error.totals()?],
                None => Default::default(),
            },
            elapsed: self.elapsed(),
            series_interval_ms: self.series.interval_ms,
            series: self
                .series
                .points
                .iter()
                .map(|p| SeriesPoint {
                    start_ms: p[0],
                    requests: p[1],
                    errors: p[2],
                    p50_us: p[3],
                    p99_us: p[4],
                })
                .collect(),
            interrupted: self.interrupted,
            exchanges: self.exchanges,
            wire: match (&self.http2, &self.websocket) {
                (Some(http2), _) => http2.wire(),
                (None, Some(websocket)) => websocket.wire(),
                (None, None) => crate::transport::WireStats::default(),
            },
            // Not saved: the causes are said when the run ends.
            connect_causes: Default::default(),
            rate_headers: self.rate_headers.clone(),
            // Not saved: the pauses are said in the run's report.
            rate_pauses: 0,
            rate_paused: Duration::ZERO,
            late_start: Duration::from_millis(self.workload.shard.map_or(0, |shard| shard.late_start_ms)),
            series_latency: self
                .series
                .latency
                .iter()
                .map(|text| base64::engine::general_purpose::STANDARD.decode(text).unwrap_or_default())
                .collect(),
        })
    }

    /// The run's shape as far as the file says it: target, load (of all shards together),
    /// length, warmup, stages and wire.
    fn report_shape(&self) -> RunShape {
        // Side by side copies of one workload add up their loads; the shards of a split run
        // each recorded the whole run's load already.
        let shards = if self.workload.shard.is_some() { 1 } else { self.shards() };
        let target = Target::parse(&self.target).ok();
        let stages: Vec<_> = self.stages.iter().map(StageData::stage).collect();
        let duration = match stages.is_empty() {
            true => self.workload.duration_us.map(Duration::from_micros),
            false => None,
        };
        RunShape {
            target: self.target.clone(),
            method: self.method_names(),
            load: self.workload.load.to_load(shards),
            recorded_pace: false,
            hold_connections: matches!(self.workload.load, LoadSpec::Open { held: true, .. }),
            length: Length { duration, requests: self.workload.requests.map(|n| n * shards) },
            warmup: Duration::from_micros(self.workload.warmup_us),
            stages,
            http: match &self.http2 {
                Some(http2) if http2.protocol == "h2" => crate::engine::config::HttpVersion::Http2,
                Some(_) => crate::engine::config::HttpVersion::H2c,
                None => crate::engine::config::HttpVersion::Http1,
            },
            streams: self
                .http2
                .as_ref()
                .map_or(1, |http2| usize::try_from(http2.streams_per_connection).unwrap_or(1).max(1)),
            websocket: target.as_ref().is_some_and(|target| target.websocket),
            grpc: target.as_ref().is_some_and(|target| target.grpc),
            in_flight: self
                .websocket
                .as_ref()
                .map_or(1, |websocket| usize::try_from(websocket.in_flight_per_socket).unwrap_or(1).max(1)),
            on_rate_limit: crate::ratelimit::pause::OnRateLimit::Continue,
            batch: self.workload.batch,
            secrets: target.map(|target| target.secrets()).unwrap_or_default(),
        }
    }

    /// The methods in the workload's order when the file says it, else by name.
    pub(super) fn methods_in_order(&self) -> Vec<(&String, &MethodResults)> {
        let ordered: Vec<(&String, &MethodResults)> =
            self.method_order.iter().filter_map(|name| self.methods.get_key_value(name)).collect();
        if ordered.len() == self.methods.len() {
            ordered
        } else {
            self.methods.iter().collect()
        }
    }

    /// The report of the run, equal to the one the live run printed.
    pub fn to_report(&self) -> Result<RunReport, super::DecodeError> {
        let record = self.to_record()?;
        Ok(self.report_of(&record))
    }

    pub(super) fn report_of(&self, record: &RunRecord) -> RunReport {
        let mut report = RunReport::of_shape(&self.report_shape(), record);
        report.tool.clone_from(&self.tool);
        report.target.clone_from(&self.target);
        report.method = self.method_names();
        report.target_resources.clone_from(&self.target_resources);
        report.heads.clone_from(&self.heads);
        report.thresholds.clone_from(&self.thresholds);
        report
    }
}
