//! The tables shared by the Markdown, HTML and comparison renderers: the headline metrics
//! with ratios against the first run, the latency distribution, outcomes by class, the
//! per-method figures and the resources of the target process(es) and of the generator. Each table has a column per run, so one run and a comparison of
//! several lay out the same way.

use super::{LatencyReport, RunReport, PERCENTILES};
use crate::monitor::{format_bytes, ResourceReport};
use crate::record::Totals;
use crate::results::SavedRun;
use crate::util::units::format_micros;
pub use crate::util::units::{percent, trim_float};

/// How a metric's values are shown.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unit {
    /// A count.
    Count,
    /// A rate or a percentage, two decimals.
    Decimal,
    /// Microseconds, shown as `812us`, `1.91ms`, `2.00s`.
    Micros,
    /// A percentage, one decimal: `42.5%`.
    Percent,
    /// Bytes, shown as `812B`, `12.3MiB`.
    Bytes,
}

impl Unit {
    /// The value as shown; a value that was not measured (NaN) is `n/a`.
    pub fn format(self, value: f64) -> String {
        if value.is_nan() {
            return "n/a".into();
        }
        match self {
            Unit::Count => format!("{value:.0}"),
            Unit::Decimal => format!("{value:.2}"),
            Unit::Micros => format_micros(value),
            Unit::Percent => format!("{value:.1}%"),
            Unit::Bytes => format_bytes(value.max(0.0).round() as u64),
        }
    }
}

/// One row of a table with a column per run.
#[derive(Debug, Clone, PartialEq)]
pub struct MetricRow {
    /// What the row shows (`req/s`, `p99`).
    pub metric: String,
    /// How values are shown.
    pub unit: Unit,
    /// One value per run.
    pub values: Vec<f64>,
}

impl MetricRow {
    /// Each value against the first run's, `None` when the first is zero or either was not
    /// measured.
    pub fn ratios(&self) -> Vec<Option<f64>> {
        let base = self.values.first().copied().unwrap_or(0.0);
        self.values.iter().map(|v| (base > 0.0 && v.is_finite()).then(|| v / base)).collect()
    }

    /// The value of run `index` as shown.
    pub fn cell(&self, index: usize) -> String {
        self.unit.format(self.values[index])
    }

    /// The value of run `index` with its ratio to the first run (`5.20ms (4.68x)`); the first
    /// run's cell has no ratio.
    pub fn cell_with_ratio(&self, index: usize) -> String {
        let value = self.cell(index);
        if index == 0 {
            return value;
        }
        match self.ratios()[index] {
            Some(ratio) => format!("{value} ({})", format_ratio(ratio)),
            None => format!("{value} (-)"),
        }
    }
}

/// `1.20x`.
pub fn format_ratio(ratio: f64) -> String {
    if ratio >= 100.0 {
        format!("{ratio:.0}x")
    } else {
        format!("{ratio:.2}x")
    }
}

/// The comparison metrics: req/s, ok %, errors, p50, p75, p90, p95, p99, max, MB/s and the
/// mean bytes per response.
pub fn summary_rows(reports: &[&RunReport]) -> Vec<MetricRow> {
    let row = |metric: &str, unit: Unit, value: &dyn Fn(&RunReport) -> f64| MetricRow {
        metric: metric.to_string(),
        unit,
        values: reports.iter().map(|r| value(r)).collect(),
    };
    vec![
        row("req/s", Unit::Decimal, &|r| r.requests.rate),
        row("ok %", Unit::Decimal, &|r| percent(r.requests.ok, r.requests.total)),
        row("errors", Unit::Count, &|r| r.requests.errors as f64),
        row("p50", Unit::Micros, &|r| r.latency.percentile("p50") as f64),
        row("p75", Unit::Micros, &|r| r.latency.percentile("p75") as f64),
        row("p90", Unit::Micros, &|r| r.latency.percentile("p90") as f64),
        row("p95", Unit::Micros, &|r| r.latency.percentile("p95") as f64),
        row("p99", Unit::Micros, &|r| r.latency.percentile("p99") as f64),
        row("max", Unit::Micros, &|r| r.latency.max_us as f64),
        row("MB/s", Unit::Decimal, &|r| r.bytes.received_per_sec / 1e6),
        row("bytes/response", Unit::Bytes, &|r| r.mean_response_bytes().unwrap_or(f64::NAN)),
    ]
}

/// What the monitored target process(es) used, seed 003's resource table: CPU average and
/// peak (percent of one core), RSS average and peak, disk read and write over the run, and
/// established TCP connections (average and peak). Empty when no run was monitored; a run
/// that was not monitored shows `n/a`.
pub fn resource_rows(resources: &[Option<&ResourceReport>]) -> Vec<MetricRow> {
    if resources.iter().all(Option::is_none) {
        return Vec::new();
    }
    let row = |metric: &str, unit: Unit, value: &dyn Fn(&ResourceReport) -> Option<f64>| MetricRow {
        metric: metric.to_string(),
        unit,
        values: resources.iter().map(|r| r.and_then(value).unwrap_or(f64::NAN)).collect(),
    };
    vec![
        row("target CPU avg", Unit::Percent, &|r| Some(r.cpu_percent_avg)),
        row("target CPU peak", Unit::Percent, &|r| Some(r.cpu_percent_peak)),
        row("target RSS avg", Unit::Bytes, &|r| Some(r.rss_bytes_avg as f64)),
        row("target RSS peak", Unit::Bytes, &|r| Some(r.rss_bytes_peak as f64)),
        row("target disk read", Unit::Bytes, &|r| r.disk_read_bytes.map(|b| b as f64)),
        row("target disk write", Unit::Bytes, &|r| r.disk_write_bytes.map(|b| b as f64)),
        row("target conns avg", Unit::Decimal, &|r| r.tcp_connections_avg),
        row("target conns peak", Unit::Count, &|r| r.tcp_connections_peak.map(|n| n as f64)),
    ]
}

/// What the generator itself used: its worker threads' CPU (percent of their capacity) and the
/// process's peak memory; `n/a` where it could not be measured.
pub fn generator_rows(reports: &[&RunReport]) -> Vec<MetricRow> {
    let row = |metric: &str, unit: Unit, value: &dyn Fn(&RunReport) -> Option<f64>| MetricRow {
        metric: metric.to_string(),
        unit,
        values: reports.iter().map(|r| value(r).unwrap_or(f64::NAN)).collect(),
    };
    vec![
        row("generator CPU", Unit::Percent, &|r| r.generator.cpu_percent),
        row("generator RSS peak", Unit::Bytes, &|r| r.generator.peak_rss_bytes.map(|b| b as f64)),
    ]
}

/// The resource rows of the runs: the target's when any was monitored, then the generator's.
pub fn usage_rows(reports: &[&RunReport]) -> Vec<MetricRow> {
    let resources: Vec<Option<&ResourceReport>> =
        reports.iter().map(|r| r.target_resources.as_ref()).collect();
    let mut rows = resource_rows(&resources);
    rows.extend(generator_rows(reports));
    rows
}

/// The latency distribution: p50 … p99.99, max, mean.
pub fn distribution_rows(latencies: &[&LatencyReport]) -> Vec<MetricRow> {
    let mut rows: Vec<MetricRow> = PERCENTILES
        .iter()
        .map(|(name, _)| MetricRow {
            metric: name.to_string(),
            unit: Unit::Micros,
            values: latencies.iter().map(|l| l.percentile(name) as f64).collect(),
        })
        .collect();
    rows.push(MetricRow {
        metric: "max".into(),
        unit: Unit::Micros,
        values: latencies.iter().map(|l| l.max_us as f64).collect(),
    });
    rows.push(MetricRow {
        metric: "mean".into(),
        unit: Unit::Micros,
        values: latencies.iter().map(|l| l.mean_us as f64).collect(),
    });
    rows
}

/// One outcome class and its count per run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OutcomeRow {
    /// `ok`, `JSON-RPC -32005: limit exceeded`, `HTTP 503`, `invalid: not_json`, `timeout`.
    pub outcome: String,
    /// Whether the class is a success.
    pub ok: bool,
    /// Count per run.
    pub counts: Vec<u64>,
}

/// Responses by HTTP status, one row per status some run saw (whatever the outcome: a JSON-RPC
/// error inside a 200 counts under 200).
pub fn status_rows(reports: &[&RunReport]) -> Vec<OutcomeRow> {
    let mut statuses: Vec<&String> = reports.iter().flat_map(|r| r.http_status.keys()).collect();
    statuses.sort_by_key(|status| (status.parse::<u32>().unwrap_or(u32::MAX), status.as_str()));
    statuses.dedup();
    statuses
        .into_iter()
        .map(|status| OutcomeRow {
            outcome: format!("HTTP {status}"),
            ok: status.starts_with('2'),
            counts: reports.iter().map(|r| r.http_status.get(status).copied().unwrap_or(0)).collect(),
        })
        .collect()
}

/// Outcomes by class: `ok` always, then every error class some run saw.
pub fn outcome_rows(reports: &[&RunReport]) -> Vec<OutcomeRow> {
    let mut rows = vec![OutcomeRow {
        outcome: "ok".into(),
        ok: true,
        counts: reports.iter().map(|r| r.outcomes.ok).collect(),
    }];
    let mut codes: Vec<i64> = Vec::new();
    for report in reports {
        for (text, error) in report.outcomes.rpc_errors_by_text() {
            let Ok(code) = text.parse::<i64>() else { continue };
            if !codes.contains(&code) {
                let message = error.first_message.clone().unwrap_or_default();
                let label = if message.is_empty() {
                    format!("JSON-RPC {code}")
                } else {
                    format!("JSON-RPC {code}: {}", shorten(&message, 80))
                };
                codes.push(code);
                rows.push(OutcomeRow {
                    outcome: label,
                    ok: false,
                    counts: reports
                        .iter()
                        .map(|r| r.outcomes.rpc_errors.get(&code).map_or(0, |e| e.count))
                        .collect(),
                });
            }
        }
    }
    if reports.iter().any(|r| r.outcomes.rpc_errors_other > 0) {
        rows.push(OutcomeRow {
            outcome: format!("JSON-RPC, other codes (past {})", crate::outcome::MAX_RPC_CODES),
            ok: false,
            counts: reports.iter().map(|r| r.outcomes.rpc_errors_other).collect(),
        });
    }
    let mut statuses: Vec<u16> =
        reports.iter().flat_map(|r| r.outcomes.http_errors.keys().copied()).collect();
    statuses.sort();
    statuses.dedup();
    for status in statuses {
        rows.push(OutcomeRow {
            outcome: format!("HTTP {status}"),
            ok: false,
            counts: reports
                .iter()
                .map(|r| r.outcomes.http_errors.get(&status).copied().unwrap_or(0))
                .collect(),
        });
    }
    let mut kinds: Vec<crate::outcome::InvalidKind> =
        reports.iter().flat_map(|r| r.outcomes.invalid.keys().copied()).collect();
    kinds.sort_by_key(|kind| kind.name());
    kinds.dedup();
    for kind in kinds {
        rows.push(OutcomeRow {
            outcome: format!("invalid: {kind}"),
            ok: false,
            counts: reports.iter().map(|r| r.outcomes.invalid.get(&kind).copied().unwrap_or(0)).collect(),
        });
    }
    for (class, name) in crate::outcome::labelled_classes() {
        let counts: Vec<u64> = reports.iter().map(|r| r.outcomes.class_total(class)).collect();
        if counts.iter().any(|&n| n > 0) {
            rows.push(OutcomeRow { outcome: name.into(), ok: false, counts });
        }
    }
    let mut codes: Vec<crate::outcome::ResetCode> =
        reports.iter().flat_map(|r| r.outcomes.stream_reset.keys().copied()).collect();
    codes.sort();
    codes.dedup();
    for code in codes {
        rows.push(OutcomeRow {
            outcome: format!("stream reset: {}", crate::outcome::reset_code_name(code.0)),
            ok: false,
            counts: reports
                .iter()
                .map(|r| r.outcomes.stream_reset.get(&code).copied().unwrap_or(0))
                .collect(),
        });
    }
    let mut close_codes: Vec<u16> =
        reports.iter().flat_map(|r| r.outcomes.ws_closed.keys().copied()).collect();
    close_codes.sort_unstable();
    close_codes.dedup();
    for code in close_codes {
        rows.push(OutcomeRow {
            outcome: format!("websocket closed: {}", crate::outcome::close_code_text(code)),
            ok: false,
            counts: reports.iter().map(|r| r.outcomes.ws_closed.get(&code).copied().unwrap_or(0)).collect(),
        });
    }
    let mut grpc_codes: Vec<crate::outcome::GrpcStatusCode> =
        reports.iter().flat_map(|r| r.outcomes.grpc_status.keys().copied()).collect();
    grpc_codes.sort_unstable();
    grpc_codes.dedup();
    for code in grpc_codes {
        rows.push(OutcomeRow {
            outcome: format!("grpc status: {}", crate::outcome::grpc_status_name(code.0)),
            ok: false,
            counts: reports.iter().map(|r| r.outcomes.grpc_status.get(&code).copied().unwrap_or(0)).collect(),
        });
    }
    let mut signs: Vec<crate::outcome::RateLimitSign> =
        reports.iter().flat_map(|r| r.outcomes.rate_limited.keys().copied()).collect();
    signs.sort_unstable();
    signs.dedup();
    for sign in signs {
        rows.push(OutcomeRow {
            outcome: format!("rate limited: {}", sign.label()),
            ok: false,
            counts: reports
                .iter()
                .map(|r| r.outcomes.rate_limited.get(&sign).copied().unwrap_or(0))
                .collect(),
        });
    }
    rows
}

/// A count with its share of the run's requests: `200 (40.00%)`.
pub fn count_with_share(count: u64, total: u64) -> String {
    format!("{count} ({:.2}%)", percent(count, total))
}

/// A call's or a stage's rows in a comparison: its name and a row per metric (req/s, ok %,
/// p50, p90, p99, max), a value per run, so each cell can carry its ratio against the first
/// run. A run without that call or stage has `n/a` (NaN).
#[derive(Debug, Clone, PartialEq)]
pub struct RowGroup {
    /// The call's label (`eth_call`) or the stage (`stage 2 (16 conns)`).
    pub name: String,
    /// The metrics, a value per run.
    pub rows: Vec<MetricRow>,
}

/// The figures of one call or stage of one run, as the grouped rows take them.
struct GroupFigures<'a> {
    requests: u64,
    ok: u64,
    rate: f64,
    latency: &'a LatencyReport,
}

/// The rows of one group, from each run's figures (`None`: the run has no such call or stage).
fn group_rows(figures: &[Option<GroupFigures<'_>>]) -> Vec<MetricRow> {
    let row = |metric: &str, unit: Unit, value: &dyn Fn(&GroupFigures<'_>) -> f64| MetricRow {
        metric: metric.to_string(),
        unit,
        values: figures.iter().map(|f| f.as_ref().map_or(f64::NAN, value)).collect(),
    };
    vec![
        row("req/s", Unit::Decimal, &|f| f.rate),
        row("ok %", Unit::Decimal, &|f| percent(f.ok, f.requests)),
        row("p50", Unit::Micros, &|f| f.latency.percentile("p50") as f64),
        row("p90", Unit::Micros, &|f| f.latency.percentile("p90") as f64),
        row("p99", Unit::Micros, &|f| f.latency.percentile("p99") as f64),
        row("max", Unit::Micros, &|f| f.latency.max_us as f64),
    ]
}

/// A group per call of the runs' workloads (in the first run's order, then any call only later
/// runs made), matched by label; empty when every run made a single call.
pub fn method_groups(reports: &[&RunReport]) -> Vec<RowGroup> {
    if reports.iter().all(|r| r.methods.len() <= 1) {
        return Vec::new();
    }
    let mut names: Vec<&str> = Vec::new();
    for name in reports.iter().flat_map(|r| r.methods.iter().map(|m| m.name.as_str())) {
        if !names.contains(&name) {
            names.push(name);
        }
    }
    names
        .into_iter()
        .map(|name| {
            let figures: Vec<Option<GroupFigures<'_>>> = reports
                .iter()
                .map(|r| {
                    r.methods.iter().find(|m| m.name == name).map(|m| GroupFigures {
                        requests: m.requests,
                        ok: m.ok,
                        rate: m.rate,
                        latency: &m.latency,
                    })
                })
                .collect();
            RowGroup { name: name.to_string(), rows: group_rows(&figures) }
        })
        .collect()
}

/// A group per stage of a staged load, matched by position (every target of a comparison runs
/// the same stages) and named after the first run's level; empty when no run was staged.
pub fn stage_groups(reports: &[&RunReport]) -> Vec<RowGroup> {
    let count = reports.iter().map(|r| r.stages.len()).max().unwrap_or(0);
    (0..count)
        .map(|index| {
            let figures: Vec<Option<GroupFigures<'_>>> = reports
                .iter()
                .map(|r| {
                    r.stages.get(index).map(|s| GroupFigures {
                        requests: s.requests,
                        ok: s.ok,
                        rate: s.rate,
                        latency: &s.latency,
                    })
                })
                .collect();
            let level = reports.iter().find_map(|r| {
                let stage = r.stages.get(index)?;
                let unit = match (r.is_open_loop(), stage.level == 1.0) {
                    (true, _) => "req/s",
                    (false, true) => "conn",
                    (false, false) => "conns",
                };
                Some(format!(" ({} {unit})", trim_float(stage.level)))
            });
            RowGroup {
                name: format!("stage {}{}", index + 1, level.unwrap_or_default()),
                rows: group_rows(&figures),
            }
        })
        .collect()
}

/// One method of one run.
#[derive(Debug, Clone, PartialEq)]
pub struct MethodRow {
    /// The run's label.
    pub run: String,
    /// The method.
    pub method: String,
    /// Requests with an outcome.
    pub requests: u64,
    /// Successes.
    pub ok: u64,
    /// Everything else.
    pub errors: u64,
    /// Requests per second over the run's measured time.
    pub rate: f64,
    /// Latency of the method's requests.
    pub latency: LatencyReport,
}

impl MethodRow {
    fn new(run: &str, method: &str, totals: &Totals, elapsed_secs: f64) -> Self {
        let requests = totals.counts.total();
        Self {
            run: run.to_string(),
            method: method.to_string(),
            requests,
            ok: totals.counts.ok,
            errors: totals.counts.errors(),
            rate: if elapsed_secs > 0.0 { requests as f64 / elapsed_secs } else { 0.0 },
            latency: LatencyReport::from_histogram(&totals.latency),
        }
    }

    /// Successes as a percentage of requests.
    pub fn ok_percent(&self) -> f64 {
        percent(self.ok, self.requests)
    }
}

/// A row per method of every run.
pub fn method_rows(runs: &[SavedRun]) -> Vec<MethodRow> {
    runs.iter()
        .flat_map(|run| {
            // The report's measured time (the one rate definition), in the workload's order.
            let elapsed = match run.report.requests.measured_us {
                0 => run.record.elapsed.as_secs_f64(),
                measured => measured as f64 / 1e6,
            };
            run.report
                .methods
                .iter()
                .filter_map(|row| run.methods.get_key_value(&row.name))
                .map(move |(method, totals)| MethodRow::new(&run.label, method, totals, elapsed))
        })
        .collect()
}

/// A staged load's levels in a few words, `3 stages, 20..50` (`3 stages, 50` when every stage
/// holds the same level); `None` for a load of one level. A staged run is told by its stages,
/// not by the level of its busiest one.
pub fn stage_levels(report: &RunReport) -> Option<String> {
    let stages = &report.stages;
    if stages.is_empty() {
        return None;
    }
    let low = stages.iter().map(|s| s.level).fold(f64::INFINITY, f64::min);
    let high = stages.iter().map(|s| s.level).fold(0.0, f64::max);
    let levels =
        if low == high { trim_float(high) } else { format!("{}..{}", trim_float(low), trim_float(high)) };
    Some(format!("{} stages, {levels}", stages.len()))
}

/// `closed loop, 8 connection(s), 2.00s` or `open loop, 3 stages, 20..50 req/s uniform
/// arrivals, 6.00s` (with the warmup, if any), as the text report's second line says it.
pub fn describe_load(report: &RunReport) -> String {
    let load = &report.load;
    let levels = stage_levels(report);
    let shape = match (load.connections, load.rate) {
        (Some(connections), _) => {
            format!("closed loop, {} connection(s)", levels.unwrap_or_else(|| connections.to_string()))
        }
        (None, Some(rate)) => {
            let held = match (load.held_connections, load.max_connections) {
                (true, Some(connections)) => format!(" over {connections} connection(s) held open"),
                _ => String::new(),
            };
            format!(
                "open loop, {} req/s {} arrivals{held}",
                levels.unwrap_or_else(|| trim_float(rate)),
                load.arrivals.as_deref().unwrap_or("uniform")
            )
        }
        _ => String::new(),
    };
    let us = |v: u64| format_micros(v as f64);
    let length = match (report.duration_us, report.requests_limit) {
        (Some(d), Some(n)) => format!("{} or {n} requests", us(d)),
        (Some(d), None) => us(d),
        (None, Some(n)) => format!("{n} requests"),
        (None, None) => String::new(),
    };
    let warmup =
        if report.warmup_us > 0 { format!(" after {} warmup", us(report.warmup_us)) } else { String::new() };
    let protocol = match &report.http2 {
        Some(http2) => format!(
            ", {} with {} stream(s) per connection (server's limit: {})",
            http2.protocol,
            http2.streams_per_connection,
            http2.server_max_streams.map_or("none".to_string(), |n| n.to_string())
        ),
        None => match &report.websocket {
            Some(websocket) => {
                format!(", websocket with {} request(s) in flight per socket", websocket.in_flight_per_socket)
            }
            None => String::new(),
        },
    };
    format!("{shape}{protocol}, {length}{warmup}")
}

/// The text on one line, cut to `limit` characters, its other control characters escaped
/// (server text must not reach a terminal raw).
pub fn shorten(text: &str, limit: usize) -> String {
    let single_line = crate::util::printable::escape_controls(&text.replace(['\n', '\r'], " ")).into_owned();
    if single_line.chars().count() <= limit {
        single_line
    } else {
        let cut: String = single_line.chars().take(limit).collect();
        format!("{cut}…")
    }
}

/// The methods of the runs for a comparison's title, each once, in the order first seen
/// ("a, b", not "a, b, a").
pub fn distinct_methods<'a>(reports: impl IntoIterator<Item = &'a RunReport>) -> Vec<&'a str> {
    let mut methods: Vec<&str> = Vec::new();
    for report in reports {
        if !methods.contains(&report.method.as_str()) {
            methods.push(&report.method);
        }
    }
    methods
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::StageReport;

    /// The report of a committed results file (tests/golden).
    fn golden(name: &str) -> RunReport {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
        SavedRun::load(&path).expect("a committed results file").report
    }

    fn staged(mut report: RunReport, levels: &[f64]) -> RunReport {
        report.stages = levels
            .iter()
            .enumerate()
            .map(|(index, &level)| StageReport {
                stage: index as u64 + 1,
                level,
                start_s: index as f64 * 2.0,
                duration_s: 2.0,
                ramp_s: 0.0,
                requests: 100,
                ok: 100,
                errors: 0,
                rate: 50.0,
                latency: report.latency.clone(),
            })
            .collect();
        report
    }

    #[test]
    fn a_comparison_title_names_each_method_once_in_the_order_first_seen() {
        let base = golden("closed.results.json");
        let named = |method: &str| RunReport { method: method.to_owned(), ..base.clone() };
        let runs = [named("eth_blockNumber"), named("eth_gasPrice"), named("eth_blockNumber")];
        assert_eq!(distinct_methods(&runs), ["eth_blockNumber", "eth_gasPrice"]);
    }

    #[test]
    fn a_staged_open_loop_is_described_by_its_stages_not_its_busiest_rate() {
        let open = staged(golden("open.results.json"), &[20.0, 30.0, 50.0]);
        let described = describe_load(&open);
        assert!(described.starts_with("open loop, 3 stages, 20..50 req/s poisson arrivals, "), "{described}");
        // As a staged closed loop reads, and as the text report says it.
        let closed = staged(golden("closed.results.json"), &[16.0, 64.0]);
        assert!(describe_load(&closed).starts_with("closed loop, 2 stages, 16..64 connection(s), "));
        for report in [&open, &closed] {
            let first_lines = crate::report::render_text(report);
            let shape = describe_load(report);
            let shape = &shape[..shape.find(" arrivals").or_else(|| shape.find(" connection(s)")).unwrap()];
            assert!(first_lines.contains(shape), "{shape}\n{first_lines}");
        }
        // Stages of one level, and loads of one stage, read as before.
        let even = staged(golden("open.results.json"), &[40.0, 40.0]);
        assert!(
            describe_load(&even).starts_with("open loop, 2 stages, 40 req/s"),
            "{}",
            describe_load(&even)
        );
        assert!(
            describe_load(&golden("open.results.json")).starts_with("open loop, 2000 req/s poisson arrivals")
        );
        assert!(describe_load(&golden("closed.results.json")).starts_with("closed loop, 64 connection(s)"));
    }
}
