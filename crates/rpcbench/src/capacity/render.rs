//! A capacity report as JSON and as text: the table of steps, the answer with its margin, the
//! knee, and the generator's usage.

use super::*;

impl CapacityReport {
    /// Pretty JSON.
    pub fn to_json(&self) -> String {
        serde_json::to_string_pretty(self).expect("a report always serializes")
    }

    /// The text report: the steps as a table, then the answer and the knee.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let _ = writeln!(out, "{} capacity {} against {}", self.tool, self.method, self.target);
        let _ = writeln!(out, "{}", self.settings_text());
        let level_header = if self.connections_mode() { "Conns" } else { "Target/s" };
        let monitored = self.steps.iter().any(|s| s.target_resources.is_some());
        let mut header = format!(
            "  {:>4} {:>10} {:>10} {:>10} {:>10} {:>8}",
            "Step", level_header, "Achieved/s", "p50", "p99", "Errors"
        );
        if monitored {
            let _ = write!(header, " {:>8} {:>10}", "CPU", "RSS");
        }
        let heads = self.steps.iter().any(|s| s.heads.is_some());
        if heads {
            let _ = write!(header, " {:>11} {:>6}", "Lag p50/max", "Stale");
        }
        let _ = writeln!(out, "{header}  Verdict");
        for step in &self.steps {
            let mut row = format!(
                "  {:>4} {:>10} {:>10.1} {:>10} {:>10} {:>7.2}%",
                step.step,
                trim(step.level()),
                step.achieved_rate,
                format_micros(step.p50_us as f64),
                format_micros(step.p99_us as f64),
                step.error_percent
            );
            if monitored {
                match &step.target_resources {
                    Some(r) => {
                        let _ = write!(
                            row,
                            " {:>8} {:>10}",
                            format!("{:.1}%", r.cpu_percent_avg),
                            crate::monitor::format_bytes(r.rss_bytes_peak)
                        );
                    }
                    None => {
                        let _ = write!(row, " {:>8} {:>10}", "", "");
                    }
                }
            }
            if heads {
                let (lag, stale) = step.heads_cells();
                let _ = write!(row, " {lag:>11} {stale:>6}");
            }
            let _ = writeln!(out, "{row}  {}", step.verdict_text());
        }
        for line in self.summary_lines() {
            let _ = writeln!(out, "{line}");
        }
        out
    }

    /// Whether the search climbed connections (closed loop) rather than the rate.
    pub fn connections_mode(&self) -> bool {
        self.settings.mode == SearchMode::Connections
    }

    /// `300 req/s` or `48 connections`, in this search's unit.
    pub fn amount(&self, level: f64) -> String {
        self.settings.mode.amount(level)
    }

    /// How the search ran, in one line: the SLO, the steps, where it started and its limits.
    pub fn settings_text(&self) -> String {
        let settings = &self.settings;
        if self.connections_mode() {
            return format!(
                "SLO {}; closed-loop steps of {} after {} warmup, {} cool-down; from {} up to {}, precision {}%",
                settings.slo,
                format_micros(settings.step_us as f64),
                format_micros(settings.warmup_us as f64),
                format_micros(settings.cooldown_us as f64),
                self.amount(settings.start_connections.unwrap_or(1) as f64),
                self.amount(settings.max_connections as f64),
                trim(settings.precision_percent),
            );
        }
        format!(
            "SLO {}; open-loop steps of {} after {} warmup, {} cool-down; from {}/s up to {}/s, precision {}%",
            settings.slo,
            format_micros(settings.step_us as f64),
            format_micros(settings.warmup_us as f64),
            format_micros(settings.cooldown_us as f64),
            trim(settings.start_rate),
            trim(settings.max_rate),
            trim(settings.precision_percent),
        )
    }

    /// The lines under the steps table: the answer and its margin, what ended the climb, the
    /// knee, what the generator used and how long the search took.
    pub fn summary_lines(&self) -> Vec<String> {
        let mut lines = Vec::new();
        if self.connections_mode() {
            self.connections_answer(&mut lines);
        } else {
            self.rate_answer(&mut lines);
        }
        match self.limited_by.as_str() {
            "generator" => {
                lines.push(
                    "  WARNING: the generator, not the target, failed the first failing step (it could not \
                     send at the rate); the target's capacity may be higher. Raise --max-connections or \
                     --threads, or run the generator on another machine."
                        .to_string(),
                );
            }
            "connection_cap" => {
                lines.push(format!(
                    "  WARNING: the connection cap, not the generator's CPU, failed the first failing step: \
                     every one of the {} allowed connections was busy when requests fell due (the \
                     target held them that long, so it is saturated at this rate or needs more \
                     concurrency). Raise --max-connections to tell which.",
                    self.settings.max_connections
                ));
            }
            "max_rate" => {
                lines.push("  The search stopped at --max-rate.".to_string());
            }
            "max_connections" => {
                lines.push(format!(
                    "  The search stopped at its most connections, {} (--max-connections, or what the open-file limit allows).",
                    self.settings.max_connections
                ));
            }
            "interrupted" => {
                lines.push(
                    "  INTERRUPTED: the search was stopped; the figures cover the steps that ran."
                        .to_string(),
                );
            }
            "max_steps" => {
                lines.push("  The search stopped after its step limit.".to_string());
            }
            _ => {}
        }
        let lowest = if self.connections_mode() { "fewest-connections" } else { "lowest-rate" };
        match (self.knee, self.knee_baseline_p99_us) {
            (Some(knee), Some(baseline)) => {
                lines.push(format!(
                    "Knee: {} (above it p99 exceeds {}x the {lowest} step's {})",
                    self.amount(knee),
                    trim(KNEE_FACTOR),
                    format_micros(baseline as f64)
                ));
            }
            _ => {
                lines.push(format!(
                    "Knee: none (p99 never exceeded {}x the {lowest} step's)",
                    trim(KNEE_FACTOR)
                ));
            }
        }
        lines.extend(self.heads_lines());
        if let Some(usage) = self.generator_usage_text() {
            lines.push(usage);
        }
        lines.push(format!(
            "Search took {} over {} steps",
            format_duration(Duration::from_micros(self.elapsed_us)),
            self.steps.len()
        ));
        lines
    }

    /// The answer of a search over connections: the most that kept the SLO, the first that
    /// broke it with its failing figure, and what that means.
    fn connections_answer(&self, lines: &mut Vec<String>) {
        let failing =
            self.first_failing_rate.and_then(|level| self.steps.iter().find(|s| s.level() == level));
        match (self.capacity, failing) {
            (Some(capacity), Some(fail)) => {
                let level = fail.level();
                let figure = fail.breaches.iter().map(Breach::describe).collect::<Vec<_>>().join(", ");
                lines.push(format!(
                    "Capacity: {} within the SLO; the first that broke it, {}, had {}; margin {} ({}%)",
                    self.amount(capacity),
                    self.amount(level),
                    if figure.is_empty() { "no figure".to_string() } else { figure },
                    self.amount(level - capacity),
                    trim(self.margin_percent.unwrap_or(0.0)),
                ));
            }
            (Some(capacity), None) => {
                lines.push(format!(
                    "Capacity: at least {} within the SLO (no step failed)",
                    self.amount(capacity)
                ));
            }
            (None, _) => {
                lines
                    .push("Capacity: none; no step met the SLO, not even the fewest connections".to_string());
            }
        }
        lines.push(
            "  Each step is a closed loop: every connection sends its next request as soon as the previous \
             one is answered. The answer is the most concurrent connections (requests in flight) the \
             target served within the SLO."
                .to_string(),
        );
    }

    fn rate_answer(&self, lines: &mut Vec<String>) {
        match (self.capacity, self.first_failing_rate) {
            (Some(capacity), Some(fail)) => {
                lines.push(format!(
                    "Capacity: {} req/s within the SLO; margin {} req/s ({}%) to the first failing rate, {} req/s",
                    trim(capacity),
                    trim(fail - capacity),
                    trim(self.margin_percent.unwrap_or(0.0)),
                    trim(fail)
                ));
            }
            (Some(capacity), None) => {
                lines.push(format!(
                    "Capacity: at least {} req/s within the SLO (no step failed)",
                    trim(capacity)
                ));
            }
            (None, _) => {
                lines.push("Capacity: none; no step met the SLO".to_string());
            }
        }
    }
}

impl StepResult {
    /// The step's head lag cells: `p50/max` in blocks (slots) and the stale share; `-` when
    /// the heads were not followed or no poll answered.
    pub fn heads_cells(&self) -> (String, String) {
        match &self.heads {
            Some(heads) if heads.samples > 0 => {
                (format!("{}/{}", heads.lag_p50, heads.lag_max), format!("{:.1}%", heads.stale_share * 100.0))
            }
            _ => ("-".into(), "-".into()),
        }
    }
}

impl CapacityReport {
    /// With `--heads`: what the lags are measured against, and the target's lag over the
    /// whole search; a note when no reference node was followed.
    pub fn heads_lines(&self) -> Vec<String> {
        let Some(heads) = &self.heads else { return Vec::new() };
        let Some(target) = heads.targets.first() else { return Vec::new() };
        let mut lines = vec![format!(
            "Heads: polled every {:.0} ms; lag in blocks (slots) behind the highest head seen across {}; stale: more than {} behind. Over the search: lag p50 {}, max {}, {} of {} samples stale",
            heads.interval_ms,
            if heads.targets.len() > 1 {
                let names: Vec<String> =
                    heads.targets.iter().skip(1).map(|t| crate::util::printable::one_line(&t.name).into_owned()).collect();
                format!("the target and {}", names.join(", "))
            } else {
                "the target alone".to_string()
            },
            heads.stale_after,
            target.lag_p50,
            target.lag_max,
            target.stale,
            target.samples,
        )];
        if heads.targets.len() < 2 {
            lines.push(
                "  note: no reference node (--heads-ref URL): with the target alone its lag is against its own highest head, so falling behind the chain does not show, only stalls and heads going back"
                    .to_string(),
            );
        }
        lines
    }

    /// `Generator: 2 worker thread(s), CPU up to 41.5% of their capacity (at 800 req/s), peak
    /// memory 9.4MB`: the busiest step's worker CPU and the process's peak memory; `None` when
    /// no step measured the generator.
    pub fn generator_usage_text(&self) -> Option<String> {
        let measured: Vec<(&StepResult, &GeneratorReport)> =
            self.steps.iter().filter_map(|s| s.generator.as_ref().map(|g| (s, g))).collect();
        let threads = measured.iter().map(|(_, g)| g.threads).max()?;
        let mut text = format!("Generator: {threads} worker thread(s)");
        let busiest = measured
            .iter()
            .filter_map(|(s, g)| g.cpu_percent.map(|cpu| (s.level(), cpu)))
            .max_by(|a, b| a.1.total_cmp(&b.1));
        if let Some((level, cpu)) = busiest {
            let _ = write!(text, ", CPU up to {cpu:.1}% of their capacity (at {})", self.amount(level));
        }
        if let Some(rss) = measured.iter().filter_map(|(_, g)| g.peak_rss_bytes).max() {
            let _ = write!(text, ", peak memory {:.1}MB", rss as f64 / 1e6);
        }
        Some(text)
    }
}

pub(super) fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

pub(super) fn micros(duration: Duration) -> u64 {
    u64::try_from(duration.as_micros()).unwrap_or(u64::MAX)
}

/// `400`, `412.5`, `0.25`.
pub(super) fn trim(value: f64) -> String {
    if value.fract() == 0.0 {
        format!("{value:.0}")
    } else {
        let text = format!("{value:.2}");
        text.trim_end_matches('0').trim_end_matches('.').to_string()
    }
}
