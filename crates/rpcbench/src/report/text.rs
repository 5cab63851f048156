//! The text report, in the spirit of bombardier's (seed 000): requests per second, latency,
//! the distribution, HTTP codes, then what rpcbench adds: JSON-RPC errors by code, the other
//! error classes, and in open loop the corrected and uncorrected latency side by side with the
//! achieved rate against the target.

use std::fmt::Write;

use super::tables::{percent, shorten, stage_levels, trim_float};
use super::{LatencyReport, RunReport, PERCENTILES};
use crate::util::units::format_micros;

fn us(value: u64) -> String {
    format_micros(value as f64)
}

/// Renders the report as text.
pub fn render_text(report: &RunReport) -> String {
    let mut out = String::new();
    let load = &report.load;
    // A staged load is described as its stages, not as the level of its busiest stage.
    let levels = stage_levels(report);
    let shape = match (load.connections, load.rate, levels) {
        (Some(_), _, Some(levels)) => format!("closed loop, {levels} connection(s)"),
        (Some(connections), _, None) => format!("closed loop, {connections} connection(s)"),
        (None, Some(rate), levels) => format!(
            "open loop, {} req/s {} arrivals, {} {} connection(s){}",
            levels.unwrap_or_else(|| trim_float(rate)),
            load.arrivals.as_deref().unwrap_or("uniform"),
            if load.held_connections { "over" } else { "up to" },
            load.max_connections.unwrap_or(0),
            if load.held_connections { " held open" } else { "" }
        ),
        _ => String::new(),
    };
    let length = match (report.duration_us, report.requests_limit) {
        (Some(d), Some(n)) => format!("{} or {n} requests", us(d)),
        (Some(d), None) => us(d),
        (None, Some(n)) => format!("{n} requests"),
        (None, None) => String::new(),
    };
    let warmup =
        if report.warmup_us > 0 { format!(" after {} warmup", us(report.warmup_us)) } else { String::new() };
    // Names from a file or a client (a replay's calls) on one line each: a line feed in one
    // cannot forge a line of the report.
    let line = crate::util::printable::one_line;
    let _ = writeln!(out, "{} {} against {}", line(&report.tool), line(&report.method), line(&report.target));
    let _ = writeln!(out, "{shape}, {length}{warmup}");
    if let Some(http2) = &report.http2 {
        let limit = http2.server_max_streams.map_or("no limit".to_string(), |n| n.to_string());
        let _ = writeln!(
            out,
            "protocol {}: {} streams per connection (server's limit: {limit}); {} connections opened, {} GOAWAYs received, {} requests retried after GOAWAY",
            report.protocol,
            http2.streams_per_connection,
            http2.connections_opened,
            http2.goaways_received,
            http2.retried_after_goaway
        );
    }
    if let Some(websocket) = &report.websocket {
        let _ = writeln!(
            out,
            "protocol websocket: {} request(s) in flight per socket; {} sockets opened; messages that answered no request: {} not JSON, {} with an unknown id, {} notifications",
            websocket.in_flight_per_socket,
            websocket.sockets_opened,
            websocket.stray_not_json,
            websocket.stray_unknown_id,
            websocket.stray_notifications
        );
    }
    if let Some(headers) = &report.rate_limit_headers {
        let _ = writeln!(out, "rate-limit headers: {}", headers.line());
    }
    if let Some(pauses) = &report.rate_limit_pauses {
        let _ = writeln!(
            out,
            "on rate limit: {}: {} pauses, {:.1} s paused in all (summed over connections; the rate counts the whole measured time)",
            pauses.mode,
            pauses.pauses,
            pauses.paused_ms as f64 / 1000.0
        );
    }
    if let Some(batch) = &report.batch {
        let _ = writeln!(
            out,
            "batches of {} calls: {} HTTP requests ({:.2} req/s) carried {} calls ({:.2} calls/s); figures count calls",
            batch.calls_per_request,
            batch.http_requests,
            batch.http_requests_per_sec,
            report.requests.total,
            batch.calls_per_sec
        );
    }
    if report.interrupted {
        let _ = writeln!(
            out,
            "INTERRUPTED: figures cover the {} measured before the stop",
            us(report.elapsed_us)
        );
    }
    let dead = report.requests.responded == 0;
    if dead {
        let outcomes = &report.outcomes;
        let _ = writeln!(
            out,
            "NO RESPONSE: none of the {} requests got a response (connect errors {}, timeouts {}, closed {}, unfinished {}); there is no latency to report",
            report.requests.total, outcomes.connect, outcomes.timeout, outcomes.closed, outcomes.unfinished
        );
    }
    let elapsed =
        us(if report.requests.measured_us > 0 { report.requests.measured_us } else { report.elapsed_us });
    let us = |value: u64| if dead { "n/a".to_string() } else { us(value) };
    let requests = &report.requests;
    let _ = writeln!(out, "Statistics        Avg      Stdev        Max");
    let _ = writeln!(
        out,
        "  Reqs/sec  {:>10.2} {:>10.2} {:>10.2}",
        requests.per_second_mean, requests.per_second_stdev, requests.per_second_max
    );
    let latency = &report.latency;
    let _ = writeln!(
        out,
        "  Latency   {:>10} {:>10} {:>10}",
        us(latency.mean_us),
        us(latency.stdev_us),
        us(latency.max_us)
    );
    if dead {
        let _ = writeln!(out, "  Latency Distribution   n/a");
    } else if report.is_open_loop() {
        let _ = writeln!(out, "  Latency Distribution   corrected  uncorrected");
        write_distribution(&mut out, latency, Some(&report.latency_uncorrected));
    } else {
        let _ = writeln!(out, "  Latency Distribution");
        write_distribution(&mut out, latency, None);
    }
    let _ = writeln!(
        out,
        "  Requests: {} in {}, {:.2} req/s; ok {} ({:.2}%), errors {}",
        requests.total,
        elapsed,
        requests.rate,
        requests.ok,
        percent(requests.ok, requests.total),
        requests.errors
    );
    if requests.measured_us > 0 {
        let _ = writeln!(
            out,
            "  Window: {elapsed}, {}; rates are responses over it",
            super::window_description(report)
        );
    }
    if let (Some(target), Some(late), Some(unsent)) = (load.rate, requests.late, requests.unsent) {
        let lag = report.send_lag.as_ref();
        let _ = writeln!(
            out,
            "  Rate: target {} req/s, achieved {:.2} req/s ({}); sent late (>2ms) {late}, not sent {unsent}; send lag p50 {} p99 {}",
            trim_float(requests.offered_rate.unwrap_or(target)),
            requests.rate,
            versus_offered(requests, target),
            us(lag.map(|l| l.percentile("p50")).unwrap_or(0)),
            us(lag.map(|l| l.percentile("p99")).unwrap_or(0)),
        );
    }
    if !report.stages.is_empty() {
        let unit = if report.load.mode == "open" { "req/s" } else { "conns" };
        let _ = writeln!(out, "  Per stage:");
        let _ = writeln!(
            out,
            "    {:>5} {:>12} {:>9} {:>9} {:>10} {:>8} {:>9} {:>9} {:>9}",
            "stage", unit, "from", "requests", "req/s", "errors", "p50", "p99", "max"
        );
        for stage in &report.stages {
            let _ = writeln!(
                out,
                "    {:>5} {:>12} {:>9} {:>9} {:>10.2} {:>8} {:>9} {:>9} {:>9}",
                stage.stage,
                trim_float(stage.level),
                format!("{:.0}s", stage.start_s),
                stage.requests,
                stage.rate,
                stage.errors,
                us(stage.latency.percentile("p50")),
                us(stage.latency.percentile("p99")),
                us(stage.latency.max_us)
            );
        }
    }
    if report.methods.len() > 1 {
        let _ = writeln!(out, "  Per method:");
        let _ = writeln!(
            out,
            "    {:<24} {:>9} {:>10} {:>8} {:>9} {:>9} {:>9} {:>9}",
            "method", "requests", "req/s", "errors", "p50", "p90", "p99", "max"
        );
        for method in &report.methods {
            let _ = writeln!(
                out,
                "    {:<24} {:>9} {:>10.2} {:>8} {:>9} {:>9} {:>9} {:>9}",
                shorten(&crate::util::printable::one_line(&method.name), 24),
                method.requests,
                method.rate,
                method.errors,
                us(method.latency.percentile("p50")),
                us(method.latency.percentile("p90")),
                us(method.latency.percentile("p99")),
                us(method.latency.max_us)
            );
        }
    }
    let changed: Vec<String> = report
        .methods
        .iter()
        .filter(|method| method.changed_responses > 0)
        .map(|method| {
            format!("{} {}", crate::util::printable::one_line(&method.name), method.changed_responses)
        })
        .collect();
    if !changed.is_empty() {
        let _ = writeln!(out, "  Changed responses (digest not the recorded one): {}", changed.join(", "));
    }
    if !report.phases.is_empty() {
        let _ = writeln!(
            out,
            "  Phases (p50 / p99):        connect             send             wait          receive"
        );
        for class in &report.phases {
            let cell = |stat: &super::PhaseStat| {
                if stat.count == 0 {
                    "-".to_string()
                } else {
                    format!("{} / {}", us(stat.p50_us), us(stat.p99_us))
                }
            };
            let _ = writeln!(
                out,
                "    {:<16} {:>16} {:>16} {:>16} {:>16}",
                class.class,
                cell(&class.connect),
                cell(&class.send),
                cell(&class.wait),
                cell(&class.receive)
            );
        }
    }
    let websocket = report.websocket.is_some();
    if !websocket {
        let _ = writeln!(out, "  HTTP codes:");
    }
    let class_count = |class: char| -> u64 {
        report
            .http_status
            .iter()
            .filter(|(status, _)| status.starts_with(class) && status.len() == 3)
            .map(|(_, n)| n)
            .sum()
    };
    let others: u64 = report.outcomes.wire_failures();
    if websocket {
        // A WebSocket answer has no HTTP status: the messages that answered, and the rest.
        let _ = writeln!(out, "  Answers: {}, none - {others}", report.requests.responded);
    } else {
        let _ = writeln!(
            out,
            "    1xx - {}, 2xx - {}, 3xx - {}, 4xx - {}, 5xx - {}",
            class_count('1'),
            class_count('2'),
            class_count('3'),
            class_count('4'),
            class_count('5')
        );
        let _ = writeln!(out, "    others - {others}");
    }
    let outcomes = &report.outcomes;
    if !outcomes.rpc_errors.is_empty() {
        let _ = writeln!(out, "  JSON-RPC errors (in HTTP 2xx):");
        for (code, error) in outcomes.rpc_errors_by_text() {
            let message = error.first_message.as_deref().unwrap_or("");
            let _ = writeln!(out, "    {code:>7} - {:<10} {}", error.count, shorten(message, 100));
        }
        if outcomes.rpc_errors_other > 0 {
            let _ = writeln!(
                out,
                "    {:>7} - {:<10} (codes past the first {})",
                crate::outcome::OTHER_CODE,
                outcomes.rpc_errors_other,
                crate::outcome::MAX_RPC_CODES
            );
        }
    }
    let mut other_errors: Vec<(String, u64)> = Vec::new();
    for (status, count) in &outcomes.http_errors {
        other_errors.push((format!("http {status}"), *count));
    }
    for (kind, count) in outcomes.invalid_by_name() {
        other_errors.push((format!("invalid response: {}", kind.name().replace('_', " ")), count));
    }
    for (class, name) in crate::outcome::labelled_classes() {
        let count = outcomes.class_total(class);
        if count > 0 {
            other_errors.push((name.to_string(), count));
        }
    }
    for (code, count) in &outcomes.stream_reset {
        other_errors.push((format!("stream reset: {}", crate::outcome::reset_code_name(code.0)), *count));
    }
    for (code, count) in &outcomes.ws_closed {
        other_errors.push((format!("websocket closed: {}", crate::outcome::close_code_text(*code)), *count));
    }
    for (sign, count) in &outcomes.rate_limited {
        other_errors.push((format!("rate limited: {}", sign.label()), *count));
    }
    for (code, count) in &outcomes.grpc_status {
        other_errors.push((format!("grpc status: {}", crate::outcome::grpc_status_name(code.0)), *count));
    }
    if !other_errors.is_empty() {
        let _ = writeln!(out, "  Errors:");
        for (name, count) in other_errors {
            let _ = writeln!(out, "    {name:>30} - {count}");
        }
    }
    match report.mean_response_bytes() {
        Some(bytes) => {
            let _ = writeln!(
                out,
                "  Throughput: {:>10.2}MB/s, {} per response",
                report.bytes.received_per_sec / 1e6,
                crate::monitor::format_bytes(bytes.round() as u64)
            );
        }
        None => {
            let _ = writeln!(out, "  Throughput: {:>10.2}MB/s", report.bytes.received_per_sec / 1e6);
        }
    }
    if !report.thresholds.is_empty() {
        let _ = writeln!(out, "  Thresholds:");
        for result in &report.thresholds {
            if result.passed {
                let _ = writeln!(out, "    ok      {} (measured {})", result.threshold, result.actual);
            } else {
                let _ = writeln!(
                    out,
                    "    FAILED  {} (measured {}, past the limit by {})",
                    result.threshold, result.actual, result.exceeded_by
                );
            }
        }
    }
    if let Some(resources) = &report.target_resources {
        out.push_str(&resources.render_text());
    }
    if let Some(heads) = &report.heads {
        out.push_str(&heads.render_text());
    }
    let generator = &report.generator;
    let mut usage = format!("  Generator: {} worker thread(s)", generator.threads);
    if let Some(cpu) = generator.cpu_percent {
        let _ = write!(usage, ", CPU {cpu:.1}% of their capacity");
        if let Some(per_request) = generator.cpu_us_per_request {
            let _ = write!(usage, " ({} per request)", format_micros(per_request));
        }
    }
    if let Some(rss) = generator.peak_rss_bytes {
        let _ = write!(usage, ", peak memory {:.1}MB", rss as f64 / 1e6);
    }
    let _ = writeln!(out, "{usage}");
    for warning in generator_warnings(report) {
        let _ = writeln!(out, "  WARNING: {warning}");
    }
    out
}

/// Signs that the generator, not the target, limited the run: a user must not mistake a slow
/// tool for a slow node.
pub fn generator_warnings(report: &RunReport) -> Vec<String> {
    let mut warnings = Vec::new();
    let requests = &report.requests;
    if let (Some(late), Some(unsent)) = (requests.late, requests.unsent) {
        let due = requests.total + unsent;
        if unsent > 0 {
            warnings.push(format!(
                "{unsent} of {due} requests due were never sent: no connection was free in time \
                 (raise --max-connections, or the target cannot keep up with the rate)"
            ));
        }
        if due > 0 && late * 100 > due {
            warnings.push(format!(
                "{late} requests ({:.1}%) were sent more than 2 ms after their intended time; \
                 corrected latency includes that wait. {}",
                late as f64 * 100.0 / due as f64,
                lateness_cause(report, late)
            ));
        }
    }
    if let Some(cpu) = report.generator.cpu_percent {
        if cpu >= SATURATED_CPU_PERCENT && report.elapsed_us >= MIN_ELAPSED_FOR_CPU_US {
            warnings.push(format!(
                "the generator's CPU was saturated ({cpu:.0}% of {} worker thread(s)): the results \
                 may show the tool's limit, not the target's (use more --threads if cores are idle, \
                 or run rpcbench on another machine)",
                report.generator.threads
            ));
        }
    }
    warnings
}

/// What made requests late, by what the run saw: every allowed connection busy when they were
/// due (the connection cap), the worker threads' CPU saturated (the generator), or neither
/// (connections were free and the CPU idle: the machine delayed the threads).
fn lateness_cause(report: &RunReport, late: u64) -> String {
    let at_cap = report.requests.late_at_cap.unwrap_or(0).min(late);
    let cap = report.load.max_connections.unwrap_or(0);
    let mut causes = Vec::new();
    if at_cap > 0 {
        causes.push(format!(
            "{at_cap} were due while all {cap} allowed connections were busy (the connection cap: \
             the target held them that long; raise --max-connections to send them on time)"
        ));
    }
    let rest = late - at_cap;
    if rest > 0 {
        match report.generator.cpu_percent {
            Some(cpu) if cpu >= SATURATED_CPU_PERCENT => {
                causes.push(format!("{rest} waited for the generator, its CPU saturated ({cpu:.0}%)"))
            }
            cpu => causes.push(format!(
                "{rest} were late with a connection free and the worker CPU at {}: the machine \
                 delayed the worker threads (other load, a burst of replies) or opening connections",
                cpu.map_or("an unknown share".to_string(), |cpu| format!("{cpu:.0}%"))
            )),
        }
    }
    let label = if causes.len() > 1 { "Causes" } else { "Cause" };
    format!("{label}: {}", causes.join("; "))
}

/// Worker CPU use, as a percentage of the workers' capacity, from which the generator counts as
/// saturated.
pub const SATURATED_CPU_PERCENT: f64 = 90.0;

/// CPU times come in 10 ms clock ticks: shorter runs are too coarse to judge.
const MIN_ELAPSED_FOR_CPU_US: u64 = 500_000;

/// The achieved rate against the offered one, as a signed percentage; with fewer than ten
/// requests due in the window a percentage says nothing (one request early or late is ±10%),
/// so the counts are given instead.
fn versus_offered(requests: &super::RequestsReport, target: f64) -> String {
    let offered = requests.offered_rate.unwrap_or(target);
    let seconds = requests.measured_us as f64 / 1e6;
    let due = offered * seconds;
    if due < 10.0 {
        return format!("{} sent, {} due", requests.total, trim_float((due * 100.0).round() / 100.0));
    }
    format!("{:+.2}%", (requests.rate / offered.max(f64::MIN_POSITIVE) - 1.0) * 100.0)
}

fn write_distribution(out: &mut String, corrected: &LatencyReport, uncorrected: Option<&LatencyReport>) {
    for (name, _) in PERCENTILES {
        let label = format!("{}%", &name[1..]);
        match uncorrected {
            Some(uncorrected) => {
                let _ = writeln!(
                    out,
                    "    {label:>7} {:>12} {:>12}",
                    us(corrected.percentile(name)),
                    us(uncorrected.percentile(name))
                );
            }
            None => {
                let _ = writeln!(out, "    {label:>7} {:>10}", us(corrected.percentile(name)));
            }
        }
    }
}
