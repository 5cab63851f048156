//! A subscription run's report as an HTML page (notifications and lag over time, the lag
//! percentile curves drawn from the report's lossless histograms) and as Markdown.

use std::fmt::Write;

use plotters::prelude::*;

use super::html::thresholds_html;
use super::html::{
    color, esc, house_style, legend_items, nice_max, page_start, percentile_curves, seconds_label, spectrum,
    svg, LatencyScale,
};
use super::markdown::thresholds_markdown;
use super::subscribe::{count_or_na, micros_or_na, produced_micros, SubscribeReport};
use crate::util::units::format_micros;

fn card(label: &str, value: &str, bad: bool) -> String {
    let class = if bad { " bad" } else { "" };
    format!("<div class=\"card{class}\"><span>{label}</span><b>{}</b></div>", esc(value))
}

/// A line chart of one per-second figure.
fn per_second_chart(
    report: &SubscribeReport,
    y_desc: &str,
    value: impl Fn(usize) -> f64,
    latency: bool,
) -> String {
    // A last second that the run covered for less than half of it is left out (its count
    // would read as a drop).
    let covered = report.elapsed_us as f64 / 1e6;
    let points: Vec<(f64, f64)> = (0..report.series.len())
        .filter(|&i| report.series[i].second as f64 + 0.5 <= covered)
        .map(|i| (report.series[i].second as f64 + 0.5, value(i)))
        .collect();
    let x_max = points.iter().map(|p| p.0 + 0.5).fold(1.0, f64::max);
    let y_max = nice_max(points.iter().map(|p| p.1).fold(0.0, f64::max));
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(44)
            .x_label_area_size(40)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..x_max, 0.0..y_max)?;
        house_style(&mut chart.configure_mesh(), "seconds since the subscriptions were requested", y_desc)
            .x_label_formatter(&|x| seconds_label(*x))
            .y_label_formatter(&|y| match (latency, y_max < 10.0) {
                (true, _) => format_micros(*y),
                // Small counts get a decimal, so that ticks 0.5 apart do not read 0, 0, 1, 1.
                (false, true) => format!("{y:.1}"),
                (false, false) => format!("{y:.0}"),
            })
            .draw()?;
        chart.draw_series(LineSeries::new(points.iter().copied(), color(0).stroke_width(2)))?;
        Ok(())
    })
}

/// The most seconds the notification rate is averaged over.
const MAX_RATE_WINDOW: usize = 10;

/// The seconds to average a notification rate over: the fewest whole seconds that hold a
/// whole number of the stream's periods (`1 / per_subscription_rate`): 2 s for 400 ms slots,
/// 12 s for 12 s blocks (capped at [`MAX_RATE_WINDOW`]), 1 s for a period that divides a
/// second.
fn rate_window(per_subscription_rate: f64) -> usize {
    if !(per_subscription_rate.is_finite() && per_subscription_rate > 0.0) {
        return 1;
    }
    let period = 1.0 / per_subscription_rate;
    (1..=MAX_RATE_WINDOW)
        .find(|&seconds| {
            let periods = seconds as f64 / period;
            periods >= 1.0 && (periods - periods.round()).abs() < 0.05
        })
        .unwrap_or_else(|| (period.ceil() as usize).clamp(1, MAX_RATE_WINDOW))
}

/// Each value as the mean of the `window` values centred on it (fewer at the ends).
fn moving_average(values: &[f64], window: usize) -> Vec<f64> {
    let half = window / 2;
    (0..values.len())
        .map(|i| {
            let start = i.saturating_sub(half);
            let end = (start + window).min(values.len());
            let start = end.saturating_sub(window);
            let slice = &values[start..end];
            slice.iter().sum::<f64>() / slice.len().max(1) as f64
        })
        .collect()
}

/// The percentile curves of the fan-out lag and of the lag behind production.
fn lag_percentile_chart(report: &SubscribeReport) -> String {
    let lines: Vec<(usize, Vec<(f64, f64)>)> =
        [report.histograms.lag.as_deref(), report.histograms.produced_lag.as_deref()]
            .into_iter()
            .enumerate()
            .filter_map(|(index, text)| {
                let histogram = crate::util::hdr_codec::decode_histogram(text?).ok()?;
                Some((index, spectrum(&histogram)))
            })
            .filter(|(_, line)| !line.is_empty())
            .collect();
    if lines.is_empty() {
        return "<p class=\"note\">No notification arrived: no lag to draw.</p>".to_string();
    }
    let scale = LatencyScale::log(
        lines.iter().flat_map(|(_, l)| l).map(|p| p.1).fold(f64::INFINITY, f64::min),
        lines.iter().flat_map(|(_, l)| l).map(|p| p.1).fold(0.0, f64::max),
    );
    percentile_curves(&lines, &scale, "lag (log scale)")
}

/// The figures both renderers list: (name, value).
fn figures(report: &SubscribeReport) -> Vec<(&'static str, String)> {
    let us = |v: u64| format_micros(v as f64);
    let mut rows = vec![
        ("target", report.target.clone()),
        (
            "subscriptions",
            format!(
                "{} ({} subscriber(s) x {}), {} per socket",
                report.subscriptions,
                report.subscribers,
                report.kinds.join(", "),
                report.subs_per_socket
            ),
        ),
        ("duration", us(report.duration_us)),
        (
            "subscribed",
            format!("{} (errors {})", report.subscribed, report.subscribe_errors.values().sum::<u64>()),
        ),
        ("active at the end", report.active_at_end.to_string()),
        (
            "subscribe latency",
            format!(
                "p50 {} · p99 {} · max {}",
                micros_or_na(&report.subscribe_latency, report.subscribe_latency.percentile("p50")),
                micros_or_na(&report.subscribe_latency, report.subscribe_latency.percentile("p99")),
                micros_or_na(&report.subscribe_latency, report.subscribe_latency.max_us)
            ),
        ),
        (
            "notifications",
            format!(
                "{} ({:.2}/s, {:.3}/s per subscription, {:.2} KB/s)",
                report.notifications,
                report.notifications_per_sec,
                report.notifications_per_sub_per_sec,
                report.bytes_per_sec / 1e3
            ),
        ),
        (
            "fan-out lag",
            format!(
                "p50 {} · p90 {} · p99 {} · max {}",
                micros_or_na(&report.lag, report.lag.percentile("p50")),
                micros_or_na(&report.lag, report.lag.percentile("p90")),
                micros_or_na(&report.lag, report.lag.percentile("p99")),
                micros_or_na(&report.lag, report.lag.max_us)
            ),
        ),
    ];
    if let (Some(lag), Some(precision)) = (&report.produced_lag, &report.produced_lag_precision) {
        rows.push((
            "lag behind production",
            format!(
                "p50 {} · p90 {} · p99 {} · max {} ({precision})",
                produced_micros(lag.percentile("p50"), precision),
                produced_micros(lag.percentile("p90"), precision),
                produced_micros(lag.percentile("p99"), precision),
                produced_micros(lag.max_us, precision)
            ),
        ));
    }
    if report.produced_clock_ahead > 0 {
        rows.push((
            "produced after arrival",
            format!(
                "{} item(s): the node's clock runs ahead of ours (not in the lag)",
                report.produced_clock_ahead
            ),
        ));
    }
    if let Some(reason) = &report.first_subscribe_error {
        rows.push(("first subscribe error", reason.clone()));
    }
    rows.push((
        "correctness",
        format!(
            "gaps {} ({} at the edges) · duplicates {} · reorders {} · unknown subscription {} · not JSON {}",
            count_or_na(report.gaps, report.gaps_apply),
            report.gaps_at_edges,
            report.duplicates,
            count_or_na(report.reorders, report.reorders_apply),
            report.unknown_subscription,
            report.not_json
        ),
    ));
    rows.push((
        "subscriptions",
        format!(
            "{} went silent · {} unsubscribed at the end · {} unsubscribe requests failed · {} notifications while unsubscribing",
            report.went_silent, report.unsubscribed, report.unsubscribe_failed, report.notifications_after_end
        ),
    ));
    let closes: Vec<String> =
        report.closed_by_server.iter().map(|(code, n)| format!("{code}: {n}")).collect();
    rows.push((
        "sockets",
        format!(
            "{} opened · {} failed to open · closed by the server {} · reconnects {}",
            report.sockets_opened,
            report.connect_errors,
            if closes.is_empty() { "0".to_string() } else { closes.join(", ") },
            report.reconnects
        ),
    ));
    rows
}

/// The report as an HTML page.
pub fn render_subscribe_html(report: &SubscribeReport) -> String {
    let title = format!("rpcbench subscribe: {} against {}", report.kinds.join(", "), report.target);
    let mut out = String::new();
    page_start(&mut out, &title);
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    if report.interrupted {
        let _ = writeln!(
            out,
            "<p class=\"sub\"><b>interrupted</b>: figures cover {}</p>",
            esc(&format_micros(report.elapsed_us as f64))
        );
    }
    out.push_str("<section class=\"cards\">");
    out.push_str(&card(
        "subscribed",
        &format!("{} / {}", report.subscribed, report.subscriptions),
        report.subscribed < report.subscriptions,
    ));
    out.push_str(&card("notifications/s", &format!("{:.1}", report.notifications_per_sec), false));
    out.push_str(&card("fan-out lag p99", &format_micros(report.lag.percentile("p99") as f64), false));
    out.push_str(&card("gaps", &count_or_na(report.gaps, report.gaps_apply), report.gaps > 0));
    out.push_str(&card("duplicates", &report.duplicates.to_string(), report.duplicates > 0));
    out.push_str(&card(
        "closed by server",
        &report.closed_by_server.values().sum::<u64>().to_string(),
        !report.closed_by_server.is_empty(),
    ));
    out.push_str("</section>");
    // Labels and values side by side (a right-aligned value sat a window's width away).
    out.push_str("<section><h2>Summary</h2><table class=\"kv\">");
    for (name, value) in figures(report) {
        let _ = write!(out, "<tr><th>{}</th><td>{}</td></tr>", esc(name), esc(&value));
    }
    out.push_str("</table></section>");
    // Counted in whole seconds, a stream with a 400 ms period alternates 2 and 3 per second
    // per subscription: the rate is averaged over a window of whole periods instead.
    let window = rate_window(report.notifications_per_sub_per_sec);
    let averaged =
        moving_average(&report.series.iter().map(|s| s.notifications as f64).collect::<Vec<_>>(), window);
    let note = match window {
        1 => String::new(),
        w => format!(
            "<p class=\"legend\">mean over {w} s (a whole number of the stream's {} periods), so that \
             periods that do not divide a second do not alias into a zigzag</p>",
            esc(&format_micros(1e6 / report.notifications_per_sub_per_sec))
        ),
    };
    let _ = writeln!(
        out,
        "<section><h2>Notifications per second</h2>{note}{}</section>",
        per_second_chart(report, "notifications per second", |i| averaged[i], false)
    );
    let _ = writeln!(
        out,
        "<section><h2>Fan-out lag over time</h2><p class=\"legend\">the largest fan-out lag of each second</p>{}</section>",
        per_second_chart(report, "lag", |i| report.series[i].lag_max_us as f64, true)
    );
    let _ = writeln!(
        out,
        "<section><h2>Lag by percentile</h2>{}{}</section>",
        legend_items(&[("fan-out lag", 0), ("lag behind production", 1)], ""),
        lag_percentile_chart(report)
    );
    let _ = writeln!(
        out,
        "<section><h2>Active subscriptions</h2>{}</section>",
        per_second_chart(report, "active subscriptions", |i| report.series[i].active as f64, false)
    );
    if report.per_kind.len() > 1 {
        out.push_str("<section><h2>Per kind</h2><table><tr><th>kind</th><th>subscriptions</th><th>notifications</th><th>gaps</th><th>duplicates</th><th>reorders</th></tr>");
        for kind in &report.per_kind {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                esc(&kind.kind),
                kind.subscriptions,
                kind.notifications,
                count_or_na(kind.gaps, kind.gaps_apply),
                kind.duplicates,
                count_or_na(kind.reorders, kind.reorders_apply)
            );
        }
        out.push_str("</table></section>");
    }
    out.push_str(&thresholds_html(&report.thresholds, None));
    out.push_str("</main>\n</body>\n</html>\n");
    out
}

/// The report as Markdown: the figures as a table, kinds and thresholds below.
pub fn render_subscribe_markdown(report: &SubscribeReport) -> String {
    let cell = crate::util::printable::markdown;
    let mut out = format!(
        "## rpcbench subscribe: {}\n\n| figure | value |\n|---|---|\n",
        cell(&report.kinds.join(", "))
    );
    for (name, value) in figures(report) {
        let _ = writeln!(out, "| {name} | {} |", cell(&value));
    }
    if report.per_kind.len() > 1 {
        out.push_str("\n| kind | subscriptions | notifications | gaps | duplicates | reorders |\n|---|---:|---:|---:|---:|---:|\n");
        for kind in &report.per_kind {
            let _ = writeln!(
                out,
                "| {} | {} | {} | {} | {} | {} |",
                cell(&kind.kind),
                kind.subscriptions,
                kind.notifications,
                count_or_na(kind.gaps, kind.gaps_apply),
                kind.duplicates,
                count_or_na(kind.reorders, kind.reorders_apply)
            );
        }
    }
    thresholds_markdown(&mut out, &report.thresholds);
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_notification_rate_is_averaged_over_whole_periods_so_that_it_does_not_alias() {
        // 400 ms slots: 2, 3, 2, 3 per second; over 2 s (5 slots) a flat 2.5.
        assert_eq!(rate_window(2.5), 2);
        let counted = [2.0, 3.0, 2.0, 3.0, 2.0, 3.0, 2.0, 3.0];
        assert!(moving_average(&counted, rate_window(2.5)).iter().all(|&rate| rate == 2.5));
        // Periods that divide a second need no averaging; slow blocks get the longest window.
        assert_eq!(rate_window(4.0), 1);
        assert_eq!(rate_window(1.0), 1);
        assert_eq!(rate_window(1.0 / 3.0), 3);
        assert_eq!(rate_window(1.0 / 12.0), MAX_RATE_WINDOW);
        assert_eq!(rate_window(0.0), 1);
        assert_eq!(moving_average(&[1.0, 5.0], 3), [3.0, 3.0]);
    }
}
