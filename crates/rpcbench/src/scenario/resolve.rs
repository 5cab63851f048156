//! Turning a checked scenario file into runs: the targets, the mix, the load and its stages,
//! thresholds and a replay source, every mistake named by the file's `file:line:col`.

use super::*;
use crate::field::Field;

impl ScenarioDraft {
    /// Builds the scenario: `url` replaces the file's (one of them is needed), `pools` feeds
    /// the generators that draw from pools.
    pub fn resolve(&self, url: Option<&str>, pools: Option<&Pools>) -> Result<Scenario, ScenarioError> {
        let text = self.text.as_str();
        let file = &self.file;
        let at = |span: Range<usize>, message: String| self.at(span, message);

        let targets = self.targets(url)?;
        let target = targets[0].target.clone();
        let mut generators = BTreeMap::new();
        // Generators whose pool is empty on this node, with the pool's name.
        let mut empty = BTreeMap::new();
        for (name, spec) in &file.generators {
            let built = match (&spec.get_ref().pool, spec.get_ref().head_range()) {
                (Some(pool), _) => match pool_generator(name, pool, spec.get_ref(), pools) {
                    Ok(None) => {
                        empty.insert(name.clone(), (pool.clone(), spec.span()));
                        continue;
                    }
                    Ok(Some(built)) => Ok(built),
                    Err(message) => Err(message),
                },
                (None, Some((text, hex))) => {
                    let window = self.sample_options().map(|options| options.window).unwrap_or(u64::MAX);
                    head_generator(name, text, hex, spec.get_ref(), pools, window)
                }
                (None, None) => generator(name, spec.get_ref()),
            };
            generators.insert(name.clone(), built.map_err(|message| at(spec.span(), message))?);
        }
        let sampled = pools.map_or(String::new(), |pools| {
            let unit = if pools.chain == SampleChain::Solana { "slots" } else { "blocks" };
            format!("{} {unit} {}..={}", pools.chain, pools.oldest, pools.head)
        });
        let mut left_out = Vec::new();

        let mut replay = self.replay_source()?;
        let workload = match (&replay, &file.calls) {
            (Some(_), Some(calls)) => {
                return Err(at(
                    calls.span(),
                    "a scenario with [source] replay sends the recorded requests: no [[call]]".into(),
                ))
            }
            (Some(read), None) => read.replay.workload(),
            (None, Some(calls)) if !calls.get_ref().is_empty() => {
                let mut built = Vec::new();
                for call in calls.get_ref() {
                    let drawn = generators_drawn(call);
                    if let Some((generator, (pool, _))) = empty.iter().find(|(name, _)| drawn.contains(*name))
                    {
                        let label = call
                            .name
                            .clone()
                            .or_else(|| call.method.as_ref().map(|method| method.get_ref().clone()))
                            .or_else(|| call.http.as_ref().map(|http| http.get_ref().clone()))
                            .unwrap_or_default();
                        left_out.push(LeftOutCall {
                            call: label,
                            generator: generator.clone(),
                            pool: pool.clone(),
                            sampled: sampled.clone(),
                        });
                        continue;
                    }
                    built.push(self.build_call(call, &generators)?);
                }
                if let (true, Some(first)) = (built.is_empty(), left_out.first()) {
                    let (pool, span) = &empty[&first.generator];
                    return Err(at(
                        span.clone(),
                        format!(
                            "generator '{}' draws from pool '{pool}', which is empty: the node had none in {sampled}, and every [[call]] draws on an empty pool (a chain without transactions?)",
                            first.generator
                        ),
                    ));
                }
                Workload::new(built).map_err(|err| at(calls.span(), err.0))?
            }
            (None, calls) => {
                let span = calls.as_ref().map_or(0..0, Spanned::span);
                return Err(at(span, "a scenario needs at least one [[call]] (or a [source] replay)".into()));
            }
        };

        let mut config = RunConfig::new(target, workload);
        let section = &file.target;
        config.headers = self.checked_headers(&section.headers)?;
        let shared_headers = config.headers.len();
        config.headers.extend(targets[0].headers.iter().cloned());
        if let Some(timeout) = section.timeout {
            config.timeout = timeout.0;
        }
        if let Some(timeout) = section.connect_timeout {
            config.connect_timeout = timeout.0;
        }
        config.keepalive = section.keepalive.unwrap_or(true);
        config.tls =
            TlsOptions { insecure: section.insecure.unwrap_or(false), ca_file: section.cacert.clone() };
        if let Some(max_body) = section.max_body {
            config.max_body = max_body.0;
        }
        config.fixed_id = section.fixed_id;
        config.check = match section.check {
            Some(CheckValue::Full) => CheckMode::Full,
            _ => CheckMode::Scan,
        };

        let load = &file.load;
        config.load = match (&load.connections, &load.rate) {
            (Some(connections), Some(_)) if load.max_connections.is_some() => {
                return Err(at(
                    connections.span(),
                    "with a rate, give connections (opened at the start and held) or max_connections (opened as the rate needs), not both".into(),
                ))
            }
            (Some(connections), Some(rate)) => {
                // As wrk2 -c N -R R: N connections opened at the start, the rate paced across them.
                config.hold_connections = true;
                Load::Open {
                    rate: rate.get_ref().0,
                    arrivals: match load.arrivals {
                        Some(ArrivalsValue::Poisson) => Arrivals::Poisson,
                        _ => Arrivals::Uniform,
                    },
                    max_connections: connections.get_ref().0 as usize,
                }
            }
            (_, Some(rate)) => Load::Open {
                rate: rate.get_ref().0,
                arrivals: match load.arrivals {
                    Some(ArrivalsValue::Poisson) => Arrivals::Poisson,
                    _ => Arrivals::Uniform,
                },
                max_connections: load.max_connections.map_or(1024, |m| m.0 as usize),
            },
            (connections, None) => {
                Load::Closed { connections: connections.as_ref().map_or(50, |c| c.get_ref().0 as usize) }
            }
        };
        if !file.stages.is_empty() {
            let first = &file.stages[0];
            let open = first.get_ref().rate.is_some();
            if let Some(level) =
                load.connections.as_ref().map(Spanned::span).or(load.rate.as_ref().map(Spanned::span))
            {
                return Err(at(level, "with [[stage]] tables, give the load's levels in the stages".into()));
            }
            let mut stages = Vec::new();
            for stage in &file.stages {
                let section = stage.get_ref();
                let level = match (section.connections, section.rate, open) {
                    (Some(connections), None, false) => connections as f64,
                    (None, Some(rate), true) => rate.0,
                    (None, None, _) => return Err(at(stage.span(), "a stage needs connections or rate".into())),
                    _ => {
                        return Err(at(
                            stage.span(),
                            "every stage gives the same kind of level: connections (closed loop) or rate (open loop)"
                                .into(),
                        ))
                    }
                };
                let ramp = section.ramp.map_or(Duration::ZERO, |ramp| ramp.0);
                if ramp > section.duration.0 {
                    return Err(at(stage.span(), "the ramp must fit in the stage's duration".into()));
                }
                stages.push(Stage { level, duration: section.duration.0, ramp });
            }
            let most = stages.iter().map(|stage| stage.level).fold(0.0, f64::max);
            config.load = match config.load {
                Load::Open { arrivals, max_connections, .. } => {
                    Load::Open { rate: most, arrivals, max_connections }
                }
                Load::Closed { .. } if open => Load::Open {
                    rate: most,
                    arrivals: match load.arrivals {
                        Some(ArrivalsValue::Poisson) => Arrivals::Poisson,
                        _ => Arrivals::Uniform,
                    },
                    max_connections: load.max_connections.map_or(1024, |m| m.0 as usize),
                },
                Load::Closed { .. } => Load::Closed { connections: (most.ceil() as usize).max(1) },
            };
            config.stages = stages;
            if load.duration.is_some() {
                return Err(at(
                    find_key(text, "duration"),
                    "with [[stage]] tables the run lasts as long as its stages".into(),
                ));
            }
        }
        config.length = match (load.duration, load.requests) {
            _ if !config.stages.is_empty() => Length { duration: None, requests: load.requests.map(|r| r.0) },
            (None, None) => Length { duration: Some(Duration::from_secs(10)), requests: None },
            (duration, requests) => {
                Length { duration: duration.map(|d| d.0), requests: requests.map(|r| r.0) }
            }
        };
        if let Some(warmup) = load.warmup {
            config.warmup = warmup.0;
        }
        if let Some(seed) = load.seed {
            config.seed = seed;
        }
        if let Some(threads) = load.threads {
            config.threads = threads.0 as usize;
        }
        if let Some(batch) = &load.batch {
            let most = crate::protocol::batch::MAX_BATCH as u64;
            if *batch.get_ref() == 0 || *batch.get_ref() > most {
                return Err(at(batch.span(), format!("batch: must be from 1 to {most} calls")));
            }
            if config.workload.has_http_calls() && *batch.get_ref() > 1 {
                return Err(at(batch.span(), "batch: batches carry JSON-RPC calls, not HTTP calls".into()));
            }
            config.batch = *batch.get_ref() as usize;
        }

        let thresholds = file
            .thresholds
            .iter()
            .map(|spanned| {
                Threshold::parse(spanned.get_ref()).map_err(|err| {
                    // Point inside the string, past the opening quote, at the fault; a string
                    // written with escapes is not the text parsed: point at its start.
                    let span = spanned.span();
                    let written = text.get(span.start + 1..span.end.saturating_sub(1));
                    let start = match written == Some(spanned.get_ref().as_str()) {
                        true => span.start + 1 + err.offset(),
                        false => span.start,
                    };
                    at(start..start, format!("threshold: {}", err.kind()))
                })
            })
            .collect::<Result<Vec<_>, _>>()?;
        if let (Some(read), Some(source)) = (replay.take(), &file.source) {
            let source = source.get_ref();
            let mut replay = read.replay;
            replay.check_responses = source.check_responses;
            if replay.check_responses && replay.entries().iter().all(|entry| entry.digest.is_none()) {
                return Err(at(
                    find_key(text, "check_responses"),
                    "check_responses: this file has no recorded responses (only a traffic file has)".into(),
                ));
            }
            replay.set_looped(source.looped);
            let load_key = match (&load.rate, &load.connections) {
                (Some(_), _) => Some(Field::Rate),
                (_, Some(_)) => Some(Field::Connections),
                _ => None,
            };
            let speed_span = source.speed.as_ref().map_or(source.replay.span(), Spanned::span);
            replay
                .pace(source.speed.as_ref().map(|speed| speed.get_ref().0), load_key)
                .map_err(|err| at(speed_span, format!("speed: {}", super::place::replay_message(&err))))?;
            if !file.stages.is_empty() {
                return Err(at(file.stages[0].span(), "a replay has no [[stage]] tables".into()));
            }
            let (duration, requests) = (load.duration, load.requests);
            let load = config.load.clone();
            let mut replayed = RunConfig::for_replay(replay, config.target.clone());
            if load_key.is_some() {
                replayed.load = load;
            }
            if duration.is_some() || requests.is_some() {
                replayed.length = config.length;
            }
            replayed.bound_to_one_pass();
            config.load = replayed.load;
            config.length = replayed.length;
            config.replay = replayed.replay;
        }
        if !file.rate_limit_codes.is_empty() {
            config.rate_limits = crate::ratelimit::signs::RateLimitRules::with_codes(&file.rate_limit_codes);
        }
        let cooldown = load.cooldown.map_or(DEFAULT_COOLDOWN, |cooldown| cooldown.0);
        Ok(Scenario { config, thresholds, targets, cooldown, shared_headers, left_out })
    }

    /// The targets the file itself names (`[target] url` or the `[[targets]]` list), read
    /// without sampling any pool: for a command that runs against a URL of its own and
    /// follows the file's targets beside it (`capacity --url URL --heads`).
    pub fn listed_targets(&self) -> Result<Vec<ScenarioTarget>, ScenarioError> {
        self.targets(None)
    }

    /// The targets: `url` (from the command line) replaces the file's; otherwise `[target] url`
    /// or the `[[targets]]` list, one of which is needed.
    fn targets(&self, url: Option<&str>) -> Result<Vec<ScenarioTarget>, ScenarioError> {
        let file = &self.file;
        let whole_file = |message: &str| ScenarioError {
            path: self.path.clone(),
            line: 0,
            column: 0,
            message: message.to_string(),
        };
        if let (Some(single), Some(_)) = (&file.target.url, file.targets.first()) {
            return Err(self.at(
                single.span(),
                "give the URL either as [target] url or in [[targets]], not both".into(),
            ));
        }
        if let Some(url) = url {
            let target = Target::parse(url).map_err(|err| whole_file(&format!("URL: {}", err.message())))?;
            return Ok(vec![ScenarioTarget {
                name: default_target_name(&target),
                target,
                headers: Vec::new(),
            }]);
        }
        if let Some(url) = &file.target.url {
            let target = Target::parse(url.get_ref()).map_err(|err| self.at(url.span(), err.message()))?;
            return Ok(vec![ScenarioTarget {
                name: default_target_name(&target),
                target,
                headers: Vec::new(),
            }]);
        }
        if file.targets.is_empty() {
            return Err(whole_file(
                "no URL: give one on the command line, as [target] url or as [[targets]] in the scenario",
            ));
        }
        let mut targets: Vec<ScenarioTarget> = Vec::with_capacity(file.targets.len());
        for entry in &file.targets {
            let entry_ref = entry.get_ref();
            let target = Target::parse(entry_ref.url.get_ref())
                .map_err(|err| self.at(entry_ref.url.span(), err.message()))?;
            let (name, span) = match &entry_ref.name {
                Some(name) if name.get_ref().trim().is_empty() => {
                    return Err(self.at(name.span(), "a target's name cannot be empty".into()))
                }
                Some(name) => (name.get_ref().clone(), name.span()),
                None => (default_target_name(&target), entry.span()),
            };
            if targets.iter().any(|seen| seen.name == name) {
                return Err(self.at(
                    span,
                    format!("two targets are named '{name}': give each [[targets]] a distinct name"),
                ));
            }
            let headers = self.checked_headers(&entry_ref.headers)?;
            targets.push(ScenarioTarget { name, target, headers });
        }
        Ok(targets)
    }
}

impl ScenarioDraft {
    /// A `headers` table as (name, value) pairs, each checked as the run checks `-H` headers,
    /// a bad one named at its place in the file (not as the CLI's `--header`).
    fn checked_headers(
        &self,
        headers: &Option<Spanned<BTreeMap<String, String>>>,
    ) -> Result<Vec<(String, String)>, ScenarioError> {
        let Some(headers) = headers else { return Ok(Vec::new()) };
        for (name, value) in headers.get_ref() {
            let (valid_name, problem) = match crate::settings::header_problem(name, value) {
                None => (true, None),
                Some(HeaderProblem::BadName) => {
                    (false, Some("is not a valid header name (visible ASCII characters other than ':')"))
                }
                Some(HeaderProblem::LineBreak) => (true, Some("has a line break in its value")),
                Some(HeaderProblem::SetByRpcbench) => (true, Some("is set by rpcbench")),
            };
            if let Some(problem) = problem {
                let shown = if valid_name { name.as_str() } else { "(not shown: it may hold a secret)" };
                return Err(self.at(headers.span(), format!("header '{shown}' {problem}")));
            }
        }
        Ok(headers.get_ref().iter().map(|(k, v)| (k.clone(), v.clone())).collect())
    }
}

/// A target's name when the file gives none: its host and port (never the path, which may
/// hold a key).
fn default_target_name(target: &Target) -> String {
    format!("{}:{}", target.host, target.port)
}

pub(super) fn error_at(text: &str, path: &Path, span: Range<usize>, message: String) -> ScenarioError {
    let (line, column) = if span == (0..0) && text.is_empty() { (0, 0) } else { line_col(text, span.start) };
    ScenarioError { path: path.to_path_buf(), line, column, message }
}
