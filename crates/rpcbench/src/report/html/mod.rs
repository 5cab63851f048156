//! The HTML report: one self-contained page that opens offline (no script, no font, no
//! request). A summary; throughput and latency (p50, p99) over time from the time series
//! (100 ms points for a run under 3 s, seconds for longer ones); the HDR percentile spectrum on
//! a log "1/(1-q)" axis; a latency histogram; the per-method table; the latency distribution;
//! errors by class; the resources used by the target process (when monitored) and by the
//! generator; the run details. Several runs (a comparison) are overlaid on every chart, one
//! colour per run, with ratios against the first in the tables.
//!
//! Charts are drawn by plotters into inline SVG; its SVG backend writes text as `<text>`
//! elements, so no font file is loaded and the browser lays the labels out.
//!
//! The page is put together here; its parts live beside it: `kit` (colours, escaping, the
//! chart helpers, legends, the style sheet; shared with the capacity and subscribe pages),
//! `charts` (the time charts, the spectrum, the histogram), `run_tables` (the run tables),
//! `thresholds` (the thresholds' verdicts, on every page), `verdicts` (the verdicts of a comparison in rounds) and `heads` (the heads beside the load).

mod charts;
mod heads;
mod kit;
mod run_tables;
mod thresholds;
mod verdicts;

use std::fmt::Write;

use charts::{
    histogram_chart, latency_over_time_chart, series_plot, spectrum_chart, stage_boundaries,
    throughput_chart, MIN_POINTS_FOR_LINE,
};
pub(super) use charts::{percentile_curves, spectrum};
use heads::heads_section;
use kit::legend;
pub(super) use kit::{
    color, esc, house_style, legend_items, nice_max, page_start, seconds_label, svg, Area, DrawResult,
    LatencyScale, TickedAxis, FONT,
};
use run_tables::{
    cards, details_table, distribution_table, errors_table, methods_table, resources_table, same_target,
    stages_section, summary_table,
};
pub(super) use thresholds::{measured, thresholds_html};
use verdicts::verdicts_section;

use super::generator_warnings;
use super::tables::{describe_load, distinct_methods};
use crate::results::SavedRun;
use crate::util::units::format_micros;

/// Renders the runs as one self-contained HTML page; several runs are overlaid as a
/// comparison against the first.
pub fn render_html(runs: &[SavedRun]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let title = if runs.len() == 1 {
        format!("rpcbench: {} against {}", first.report.method, first.report.target)
    } else {
        let methods = distinct_methods(runs.iter().map(|r| &r.report));
        format!("rpcbench comparison: {}", methods.join(", "))
    };
    page_start(&mut out, &title);
    let _ = writeln!(out, "<h1 title=\"{0}\">{0}</h1>", esc(&title));
    if runs.len() == 1 {
        let _ = writeln!(
            out,
            "<p class=\"sub\">{} · {} requests in {} · started {}{}</p>",
            esc(&describe_load(&first.report)),
            first.report.requests.total,
            esc(&format_micros(first.report.elapsed_us as f64)),
            esc(&first.file.started_at),
            if first.report.interrupted { " · <b>interrupted</b>" } else { "" }
        );
        out.push_str(&cards(&first.report));
    } else {
        let target =
            if same_target(runs) { format!(" against {}", esc(&first.report.target)) } else { String::new() };
        let _ = writeln!(
            out,
            "<p class=\"sub\">{} runs{target}; ratios against {}</p>",
            runs.len(),
            esc(&first.label)
        );
    }
    let warnings: Vec<String> = runs
        .iter()
        .flat_map(|run| {
            let several = runs.len() > 1;
            generator_warnings(&run.report).into_iter().map(move |w| {
                if several {
                    format!("{}: {w}", run.label)
                } else {
                    w
                }
            })
        })
        .collect();
    if !warnings.is_empty() {
        out.push_str("<section class=\"warning\"><h2>Warnings</h2><ul>");
        for warning in warnings {
            let _ = write!(out, "<li>{}</li>", esc(&warning));
        }
        out.push_str("</ul></section>");
    }
    let _ = writeln!(out, "<section><h2>Summary</h2>{}</section>", summary_table(runs));
    if let Some(verdicts) = crate::compare::comparison_verdicts(runs) {
        let _ = writeln!(out, "<section><h2>Verdicts</h2>{}</section>", verdicts_section(&verdicts));
    }
    for run in runs {
        let heading = (runs.len() > 1).then_some(run.label.as_str());
        out.push_str(&thresholds_html(&run.report.thresholds, heading));
    }
    if let Some(heads) = heads_section(runs) {
        let _ = writeln!(out, "<section><h2>Heads beside the load</h2>{heads}</section>");
    }
    if runs.iter().any(|run| !run.report.stages.is_empty()) {
        let _ = writeln!(out, "<section><h2>Per stage</h2>{}</section>", stages_section(runs));
    }
    // Hints shared by the two time charts: stage boundaries, runs too short for a line.
    let mut time_hints: Vec<&str> = Vec::new();
    if !stage_boundaries(runs).is_empty() {
        time_hints.push("thin dashed verticals: stage boundaries");
    }
    if runs.iter().any(|run| series_plot(run).len() < MIN_POINTS_FOR_LINE) {
        time_hints.push("runs with fewer than 3 points: not joined by a line");
    }
    let mut throughput_hints = time_hints.clone();
    if runs.len() == 1 && runs[0].report.requests.errors > 0 {
        throughput_hints.insert(0, "red dashed: errors per second");
    }
    let mut latency_hints = vec!["solid: p50 · dashed: p99 (per interval)"];
    latency_hints.extend(&time_hints);
    let _ = writeln!(
        out,
        "<section><h2>Throughput over time</h2>{}{}</section>",
        legend(runs, &throughput_hints.join(" · ")),
        throughput_chart(runs)
    );
    let _ = writeln!(
        out,
        "<section><h2>Latency over time</h2>{}{}</section>",
        legend(runs, &latency_hints.join(" · ")),
        latency_over_time_chart(runs)
    );
    let corrected = if runs.iter().any(|r| r.report.is_open_loop()) {
        "latency from the intended send time (corrected)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<section><h2>Latency by percentile</h2>{}{}</section>",
        legend(runs, corrected),
        spectrum_chart(runs)
    );
    let _ = writeln!(
        out,
        "<section><h2>Latency histogram</h2>{}{}</section>",
        legend(runs, "10 buckets per decade"),
        histogram_chart(runs)
    );
    let _ = writeln!(out, "<section><h2>Per method</h2>{}</section>", methods_table(runs));
    let _ = writeln!(out, "<section><h2>Latency distribution</h2>{}</section>", distribution_table(runs));
    let _ = writeln!(out, "<section><h2>Outcomes and errors by class</h2>{}</section>", errors_table(runs));
    // The target's CPU is explained only when a target process was monitored.
    let cpu_note = if runs.iter().any(|run| run.report.target_resources.is_some()) {
        "Target CPU is a percentage of one core; the generator's, of its worker threads' capacity."
    } else {
        "The generator's CPU is a percentage of its worker threads' capacity."
    };
    let _ = writeln!(
        out,
        "<section><h2>Resources</h2>{}<p class=\"note\">{cpu_note}</p></section>",
        resources_table(runs)
    );
    let _ = writeln!(out, "<section><h2>Run details</h2>{}</section>", details_table(runs));
    let _ = writeln!(
        out,
        "<footer>{} · rpcbench results format {}</footer>\n</main>\n</body>\n</html>",
        esc(&first.file.tool),
        first.file.version
    );
    out
}

#[cfg(test)]
mod tests {
    use super::charts::{nines, percentile_label};
    use super::kit::{css_color, dash, p99_dash, swatch_background};
    use super::run_tables::{like_for_like, ratio_span};
    use super::*;
    use crate::report::tables::MetricRow;

    #[test]
    fn percentile_axis_labels() {
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(percentile_label(1.0), "90%");
        assert_eq!(percentile_label(2.0), "99%");
        assert_eq!(percentile_label(3.0), "99.9%");
        assert_eq!(percentile_label(5.0), "99.999%");
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
    }

    /// A committed results file (tests/golden), decoded.
    fn golden(name: &str) -> SavedRun {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
        SavedRun::load(&path).expect("a committed results file")
    }

    #[test]
    fn twelve_runs_get_twelve_colours_and_later_runs_a_dash_pattern() {
        let colours: std::collections::HashSet<String> = (0..12).map(css_color).collect();
        assert_eq!(colours.len(), 12, "the demo's twelve steps share no colour");
        assert!((0..12).all(|index| dash(index).is_none()), "the first twelve lines are solid");
        for index in 12..36 {
            assert_eq!(css_color(index), css_color(index % 12));
            assert!(dash(index).is_some(), "run {index} repeats a colour, so it is dashed");
            assert_ne!(dash(index), dash(index - 12), "run {index} is told from run {}", index - 12);
            assert_ne!(dash(index), Some(p99_dash(index)), "a p50 line does not look like a p99 line");
        }
        assert!(swatch_background(13).starts_with("repeating-linear-gradient("));
    }

    #[test]
    fn ratios_between_unlike_loads_are_shown_uncoloured_with_a_note() {
        // A closed loop at 64 connections against an open loop offered 2000/s.
        let table = summary_table(&[golden("closed.results.json"), golden("open.results.json")]);
        assert!(table.contains("ratio unlike"), "{table}");
        assert!(!table.contains("ratio up") && !table.contains("ratio down"), "{table}");
        assert!(table.contains("not coloured better or worse"), "{table}");
        // Two closed loops at the same connections are compared, in colour.
        let mut faster = golden("closed.results.json");
        faster.report.requests.rate *= 2.0;
        let table = summary_table(&[golden("closed.results.json"), faster]);
        assert!(table.contains("ratio up") && !table.contains("ratio unlike"), "{table}");
        // Other connections: another kind of load.
        let mut wider = golden("closed.results.json");
        wider.report.load.connections = Some(256);
        assert!(!like_for_like(&golden("closed.results.json").report, &wider.report));
    }

    #[test]
    fn ratios_are_coloured_only_like_against_like_and_never_for_the_generator() {
        // The same load on another method (the demo's getBlocks against getBalance): grey.
        let mut other_method = golden("closed.results.json");
        other_method.label = "other".into();
        other_method.report.method = "getSlot".into();
        other_method.report.requests.rate *= 2.0;
        assert!(!like_for_like(&golden("closed.results.json").report, &other_method.report));
        let table = summary_table(&[golden("closed.results.json"), other_method]);
        assert!(table.contains("ratio unlike") && !table.contains("ratio up"), "{table}");
        // The generator's figures are never better or worse, even like against like.
        let row = MetricRow {
            metric: "generator CPU".into(),
            unit: super::super::tables::Unit::Percent,
            values: vec![10.0, 50.0],
        };
        let span = ratio_span(&row, 1, true);
        assert!(span.starts_with("<span class=\"ratio\" title=\"rpcbench's own"), "{span}");
    }

    #[test]
    fn long_labels_are_cut_with_the_full_text_in_a_tooltip() {
        let long = format!("mix of {}", "getBalance 10%, getBlock 20%, ".repeat(12));
        let mut run = golden("closed.results.json");
        run.label = long.clone();
        run.report.method = long.clone();
        let mut other = golden("closed.results.json");
        other.label = "b".into();
        let html = render_html(&[run, other]);
        let tooltip = format!("<span class=\"clip\" title=\"{0}\">{0}</span>", esc(&long));
        // In the summary, the legends, the per-method table and the details.
        assert!(html.matches(&tooltip).count() >= 5, "{html}");
        assert!(html.contains(".clip { display: inline-block; max-width:"), "ellipsized by the style");
        assert!(html.contains(&format!("<h1 title=\"rpcbench comparison: {}", esc(&long))), "{html}");
    }

    fn three_stages(run: &mut SavedRun) {
        let stage = |stage: u64, level: f64, start_s: f64| crate::report::StageReport {
            stage,
            level,
            start_s,
            duration_s: 3.0,
            ramp_s: 0.0,
            requests: 1000 * stage,
            ok: 1000 * stage - stage,
            errors: stage,
            rate: 333.0 * stage as f64,
            latency: run.report.latency.clone(),
        };
        run.report.stages = vec![stage(1, 16.0, 0.0), stage(2, 32.0, 3.0), stage(3, 64.0, 6.0)];
    }

    #[test]
    fn staged_runs_get_a_per_stage_table_and_their_boundaries_on_the_time_charts() {
        let mut run = golden("closed.results.json");
        three_stages(&mut run);
        let runs = [run];
        assert_eq!(stage_boundaries(&runs), vec![(0, 3.0), (0, 6.0)]);
        let html = render_html(&runs);
        let section = &html[html.find("<h2>Per stage</h2>").expect("a per-stage section")..];
        let table = &section[..section.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr>").count(), 4, "a header and one row per stage: {table}");
        assert!(table.contains("<th>connections</th>") && table.contains("<td>64</td>"), "{table}");
        assert!(table.contains("<td>3 (0.10%)</td>"), "errors with their share: {table}");
        assert!(html.contains("stage boundaries"), "the charts say what the verticals are");
        // The boundaries are drawn: the throughput chart has two more lines than without them.
        let plain = throughput_chart(&[golden("closed.results.json")]);
        let staged = throughput_chart(&runs);
        assert!(drawn_lines(&staged) > drawn_lines(&plain), "the boundaries are drawn");
        assert!(!render_html(&[golden("closed.results.json")]).contains("Per stage"));
    }

    /// The first table of the section headed `heading`.
    fn first_table<'a>(html: &'a str, heading: &str) -> &'a str {
        let section = &html[html.find(heading).unwrap_or_else(|| panic!("no {heading}"))..];
        &section[..section.find("</table>").unwrap()]
    }

    #[test]
    fn a_comparison_of_staged_runs_has_a_per_stage_table_with_ratios_against_the_first() {
        let mut first = golden("closed.results.json");
        three_stages(&mut first);
        let mut second = golden("closed.results.json");
        second.label = "second".into();
        three_stages(&mut second);
        for stage in &mut second.report.stages {
            stage.rate /= 2.0;
        }
        let html = render_html(&[first, second]);
        let table = first_table(&html, "<h2>Per stage</h2>");
        assert!(table.contains("<th>stage</th><th class=\"text\">run</th>"), "{table}");
        assert_eq!(table.matches("<tr").count(), 7, "a header and a row per stage and run: {table}");
        assert_eq!(table.matches("rowspan=\"2\"").count(), 3, "each stage named once: {table}");
        assert!(table.contains(">stage 3 (64 conns)</td>"), "{table}");
        // Half the rate in every stage: worse, in colour, as the runs ran the same stages.
        assert_eq!(table.matches("<span class=\"ratio down\">0.50x</span>").count(), 3, "{table}");
        assert!(html.contains("Ratios are against closed's same stage."));
        assert!(
            html.contains(">closed, 3 stages, 16..64 conns</td>"),
            "the load cell says the stages' levels"
        );
        // The runs share their stages: one schedule.
        assert!(html.contains("<h3>Stages</h3>") && !html.contains("Each run's stages"));

        // Against a run of another kind of load, the ratios are grey.
        let mut open = golden("open.results.json");
        three_stages(&mut open);
        let mut closed = golden("closed.results.json");
        three_stages(&mut closed);
        closed.report.stages.pop();
        let html = render_html(&[open, closed]);
        let table = first_table(&html, "<h2>Per stage</h2>");
        assert!(table.contains("ratio unlike") && !table.contains("ratio down"), "{table}");
        assert!(table.contains("rowspan=\"1\""), "a stage only the first run had: {table}");
        assert!(html.contains("Each run's stages"), "stages that differ are shown run by run");
    }

    /// The number of cells of the widest row of a table.
    fn widest_row(table: &str) -> usize {
        table
            .split("<tr")
            .skip(1)
            .map(|row| row.matches("<td").count() + row.matches("<th").count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn the_summary_fits_a_narrow_window_without_hiding_a_column() {
        let metrics =
            ["req/s", "ok %", "errors", "p50", "p75", "p90", "p95", "p99", "max", "MB/s", "bytes/response"];
        // Up to four runs: a row per figure, a column per run.
        let two = [golden("closed.results.json"), golden("open.results.json")];
        let summary = summary_table(&two);
        assert_eq!(summary.matches("<table").count(), 1);
        assert_eq!(widest_row(&summary), 3, "{summary}");
        for metric in metrics.iter().chain(&["method", "load"]) {
            assert!(summary.contains(&format!("<tr><td>{}</td>", esc(metric))), "{metric}: {summary}");
        }
        // More runs: a row each, the figures over two tables of ten columns at most.
        let six: Vec<SavedRun> = (0..6)
            .map(|index| {
                let mut run =
                    golden(if index % 2 == 0 { "closed.results.json" } else { "open.results.json" });
                run.label = format!("run {index}");
                run
            })
            .collect();
        let summary = summary_table(&six);
        let tables: Vec<&str> = summary.split("</table>").filter(|t| t.contains("<table")).collect();
        assert_eq!(tables.len(), 2, "{summary}");
        for table in &tables {
            assert!(widest_row(table) <= 10, "{table}");
            assert_eq!(table.matches("<tr").count(), 7, "a header and a row per run: {table}");
        }
        for metric in metrics {
            assert_eq!(summary.matches(&format!("<th>{}</th>", esc(metric))).count(), 1, "{metric}");
        }
    }

    /// The lines of a chart other than its black axes and ticks.
    fn drawn_lines(svg: &str) -> usize {
        svg.split("<polyline")
            .skip(1)
            .filter(|tag| !tag.split('>').next().unwrap_or("").contains("stroke=\"#000000\""))
            .count()
    }

    /// The x of every point of every drawn line of a chart, line by line.
    fn line_xs(svg: &str) -> Vec<Vec<f64>> {
        svg.split("<polyline")
            .skip(1)
            .map(|tag| tag.split('>').next().unwrap_or(""))
            .filter(|tag| !tag.contains("stroke=\"#000000\""))
            .filter_map(|tag| tag.split("points=\"").nth(1)?.split('"').next())
            .map(|points| {
                points
                    .split_whitespace()
                    .filter_map(|pair| pair.split(',').next()?.parse::<f64>().ok())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn a_comparison_in_rounds_draws_its_lines_forward_in_time() {
        // Three rounds of 10 s, each with the drain of its last requests in a sliver of an
        // interval after its end, appended as a comparison appends them.
        let round = || {
            let mut run = golden("closed.results.json");
            let last = *run.record.series.last().expect("points");
            run.record.series.push(crate::record::SeriesPoint { start_ms: 10_000, requests: 3, ..last });
            run.record.series_latency.clear();
            run.record.elapsed = std::time::Duration::from_micros(10_002_300);
            run
        };
        let mut total = round();
        for _ in 0..2 {
            crate::rounds::append_round(&mut total.record, round().record);
        }
        let mids: Vec<f64> = series_plot(&total).iter().map(|p| p.mid).collect();
        assert!(mids.windows(2).all(|pair| pair[0] < pair[1]), "{mids:?}");
        // The drains are left out, not drawn as a dip at each boundary.
        assert_eq!(mids.len(), 30, "{mids:?}");
        for chart in [throughput_chart(std::slice::from_ref(&total)), latency_over_time_chart(&[total])] {
            let lines = line_xs(&chart);
            assert!(!lines.is_empty(), "{chart}");
            for xs in lines {
                assert!(xs.windows(2).all(|pair| pair[0] <= pair[1]), "a line goes back: {xs:?}");
            }
        }
    }

    #[test]
    fn series_of_one_or_two_points_are_drawn_as_markers_not_lines() {
        // A run of 2 s read from a file of whole seconds (newer runs that short have 100 ms
        // points, and a line).
        let mut short = golden("closed.results.json");
        short.record.series.truncate(2);
        short.record.elapsed = std::time::Duration::from_secs(2);
        assert_eq!(series_plot(&short).len(), 2);
        for chart in [
            throughput_chart(&[golden("closed.results.json")]),
            latency_over_time_chart(&[golden("closed.results.json")]),
        ] {
            assert!(drawn_lines(&chart) > 0, "a 10 s run is drawn as lines");
        }
        for chart in [
            throughput_chart(std::slice::from_ref(&short)),
            latency_over_time_chart(std::slice::from_ref(&short)),
        ] {
            assert_eq!(drawn_lines(&chart), 0, "two points are not joined: {chart}");
            assert!(chart.contains("<circle"), "but drawn as markers");
        }
        assert!(render_html(&[short]).contains("runs with fewer than 3 points: not joined by a line"));
    }

    #[test]
    fn the_target_cpu_note_needs_a_monitored_target() {
        let html = render_html(&[golden("closed.results.json")]);
        assert!(!html.contains("Target CPU"), "nothing was monitored");
        assert!(html.contains("The generator's CPU is a percentage"));
        let html = render_html(&[golden("monitored.results.json")]);
        assert!(html.contains("Target CPU is a percentage of one core"));
    }

    #[test]
    fn narrow_windows_shrink_the_tables_instead_of_cutting_columns() {
        let html = render_html(&[golden("closed.results.json"), golden("open.results.json")]);
        assert!(html.contains("@media (max-width: 1000px)"));
        // The load cell is short, the whole description in its tooltip.
        assert!(html.contains(">closed, 64 conns</td>") && html.contains(">open, 2000/s</td>"), "{html}");
        assert!(html.contains("title=\"closed loop, 64 connection(s)"), "{html}");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }

    #[test]
    fn heads_beside_the_load_get_a_table_with_the_stale_target_marked() {
        let mut runs = vec![golden("closed.results.json"), golden("closed.results.json")];
        runs[0].label = "tip".into();
        runs[1].label = "thirty".into();
        // No run followed heads: no section.
        assert!(!render_html(&runs).contains("Heads beside the load"));
        let row = |name: &str, lag: u64, stale: u64| crate::heads::TargetHeads {
            name: name.into(),
            samples: 40,
            failed: 0,
            lag_p50: lag,
            lag_p99: lag,
            lag_max: lag,
            at_tip: if lag == 0 { 1.0 } else { 0.0 },
            stale,
            first_seen: 1.0,
            delay_ms_p50: 0.0,
            delay_ms_p90: 0.0,
            delay_ms_p99: 0.0,
            phantom: 0,
            reorgs: 0,
            gaps: 0,
        };
        for (run, target) in runs.iter_mut().zip([row("tip", 0, 0), row("thirty", 30, 40)]) {
            run.report.heads = Some(crate::heads::HeadsReport {
                interval_ms: 200.0,
                stale_after: 20,
                targets: vec![target],
            });
        }
        let html = render_html(&runs);
        let section = first_table(&html, "Heads beside the load");
        assert!(section.contains("more than 20 behind"), "{section}");
        let rows: Vec<&str> = section.split("<tr>").skip(2).collect();
        assert_eq!(rows.len(), 2, "{section}");
        assert!(rows[0].contains("tip") && !rows[0].contains("#c62828"), "{}", rows[0]);
        assert!(rows[1].contains("thirty") && rows[1].contains("<td>30</td>"), "{}", rows[1]);
        assert!(
            rows[1].contains("color:#c62828;font-weight:bold\">40</td>"),
            "the stale count is marked: {}",
            rows[1]
        );
    }
}
