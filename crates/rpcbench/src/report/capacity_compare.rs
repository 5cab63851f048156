//! Capacity searches side by side (`rpcbench report --compare A.json B.json` on capacity
//! files): a table of the answers (capacity, first failing step, margin, knee, what ended the
//! climb, each capacity against the first's), every search's steps, and in HTML one chart of
//! p99 against the rate (or the connections) with a curve and a capacity mark per search.
//! Only searches of one kind compare: rates against rates, connections against connections.

use std::fmt::Write;

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::capacity::{capacity_csv_columns, capacity_csv_rows, md_cell, steps_table};
use super::capacity_axes::{bound_line, build, by_rate, latency_bounds, mesh, short_amount, RED};
use super::html::{color, esc, legend_items, page_start, svg, LatencyScale, FONT};
use crate::capacity::{CapacityReport, SearchMode};
use crate::capacity_file::CapacityFile;
use crate::report::tables::trim_float;
use crate::util::units::format_micros;

/// A capacity search to compare and the label it goes by (its file's name).
#[derive(Debug, Clone)]
pub struct LabelledSearch {
    /// How the search is named in the comparison.
    pub label: String,
    /// The search.
    pub file: CapacityFile,
}

/// Searches of different kinds (a rate search and a connections search) do not compare.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MixedSearches {
    /// The label of the first search.
    pub first: String,
    /// The label of the first search of another kind.
    pub other: String,
    /// What the first search climbed.
    pub first_mode: SearchMode,
}

impl std::fmt::Display for MixedSearches {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (first, other) = match self.first_mode {
            SearchMode::Rate => ("a rate search", "a connections search"),
            SearchMode::Connections => ("a connections search", "a rate search"),
        };
        write!(f, "{} is {first} and {} {other}; only searches of one kind compare", self.first, self.other)
    }
}

impl std::error::Error for MixedSearches {}

/// Checks that the searches are all of one kind.
pub fn check_comparable(searches: &[LabelledSearch]) -> Result<(), MixedSearches> {
    let Some(first) = searches.first() else { return Ok(()) };
    let mode = first.file.report.settings.mode;
    match searches.iter().find(|s| s.file.report.settings.mode != mode) {
        Some(other) => {
            Err(MixedSearches { first: first.label.clone(), other: other.label.clone(), first_mode: mode })
        }
        None => Ok(()),
    }
}

fn amount(report: &CapacityReport, level: Option<f64>) -> String {
    level.map_or_else(|| "none".to_string(), |level| report.amount(level))
}

/// The answers, a row per figure and a column per search: (row name, cells).
fn answer_rows(searches: &[LabelledSearch]) -> Vec<(&'static str, Vec<String>)> {
    let first = searches.first().and_then(|s| s.file.report.capacity);
    let cells = |figure: &dyn Fn(&CapacityReport) -> String| -> Vec<String> {
        searches.iter().map(|s| figure(&s.file.report)).collect()
    };
    vec![
        ("target", cells(&|r| r.target.clone())),
        ("method", cells(&|r| r.method.clone())),
        ("SLO", cells(&|r| r.settings.slo.clone())),
        ("capacity", cells(&|r| amount(r, r.capacity))),
        ("first failing", cells(&|r| amount(r, r.first_failing_rate))),
        (
            "failing figure",
            cells(&|r| {
                r.first_failing_rate
                    .and_then(|level| r.steps.iter().find(|s| s.level() == level))
                    .map(|step| step.breaches.iter().map(|b| b.describe()).collect::<Vec<_>>().join(", "))
                    .filter(|text| !text.is_empty())
                    .unwrap_or_else(|| "-".into())
            }),
        ),
        (
            "margin",
            cells(&|r| match (r.margin, r.margin_percent) {
                (Some(margin), Some(percent)) => format!("{} ({}%)", r.amount(margin), trim_float(percent)),
                _ => "-".into(),
            }),
        ),
        ("knee", cells(&|r| amount(r, r.knee))),
        ("limited by", cells(&|r| r.limited_by.clone())),
        ("steps", cells(&|r| r.steps.len().to_string())),
        (
            "capacity vs first",
            cells(&|r| match (r.capacity, first) {
                (Some(capacity), Some(first)) if first > 0.0 => format!("{:.2}x", capacity / first),
                _ => "-".into(),
            }),
        ),
    ]
}

fn kind(searches: &[LabelledSearch]) -> &'static str {
    match searches.first().map(|s| s.file.report.settings.mode) {
        Some(SearchMode::Connections) => "connections",
        _ => "rate",
    }
}

/// The comparison as text: the answers side by side, then each search's steps.
pub fn render_capacity_comparison_text(searches: &[LabelledSearch]) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "Capacity searches compared ({}): {}", kind(searches), labels(searches));
    let rows = answer_rows(searches);
    let name_width = rows.iter().map(|(name, _)| name.len()).max().unwrap_or(0);
    let widths: Vec<usize> = (0..searches.len())
        .map(|i| {
            rows.iter()
                .map(|(_, cells)| cells[i].chars().count())
                .chain(std::iter::once(searches[i].label.chars().count()))
                .max()
                .unwrap_or(0)
        })
        .collect();
    let mut header = format!("  {:name_width$}", "");
    for (search, width) in searches.iter().zip(&widths) {
        let _ = write!(header, "  {:<width$}", search.label);
    }
    let _ = writeln!(out, "{}", header.trim_end());
    for (name, cells) in &rows {
        let mut line = format!("  {name:name_width$}");
        for (cell, width) in cells.iter().zip(&widths) {
            let _ = write!(line, "  {cell:<width$}");
        }
        let _ = writeln!(out, "{}", line.trim_end());
    }
    for search in searches {
        let report = &search.file.report;
        let _ = writeln!(out);
        let _ = writeln!(out, "{}: {}", search.label, report.settings_text());
        let level = if report.connections_mode() { "Conns" } else { "Target/s" };
        let _ = writeln!(
            out,
            "  {:>4} {:>10} {:>10} {:>10} {:>10} {:>8}  Verdict",
            "Step", level, "Achieved/s", "p50", "p99", "Errors"
        );
        for step in &report.steps {
            let _ = writeln!(
                out,
                "  {:>4} {:>10} {:>10.1} {:>10} {:>10} {:>7.2}%  {}",
                step.step,
                trim_float(step.level()),
                step.achieved_rate,
                format_micros(step.p50_us as f64),
                format_micros(step.p99_us as f64),
                step.error_percent,
                step.verdict_text()
            );
        }
    }
    out
}

fn labels(searches: &[LabelledSearch]) -> String {
    searches.iter().map(|s| s.label.as_str()).collect::<Vec<_>>().join(" vs ")
}

/// The comparison as Markdown: the answers table, then each search's steps table.
pub fn render_capacity_comparison_markdown(searches: &[LabelledSearch]) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "## rpcbench capacity searches compared ({}): {}",
        kind(searches),
        md_cell(&labels(searches))
    );
    let _ = writeln!(out);
    let mut header = String::from("| |");
    let mut align = String::from("|---|");
    for search in searches {
        let _ = write!(header, " {} |", md_cell(&search.label));
        align.push_str("---|");
    }
    let _ = writeln!(out, "{header}\n{align}");
    for (name, cells) in answer_rows(searches) {
        let cells: Vec<String> = cells.iter().map(|c| md_cell(c)).collect();
        let _ = writeln!(out, "| {name} | {} |", cells.join(" | "));
    }
    for search in searches {
        let report = &search.file.report;
        let _ = writeln!(out);
        let _ = writeln!(out, "### {}", md_cell(&search.label));
        let _ = writeln!(out);
        let _ = writeln!(out, "{}", md_cell(&report.settings_text()));
        let _ = writeln!(out);
        let level = if report.connections_mode() { "connections" } else { "offered/s" };
        let _ = writeln!(out, "| step | {level} | achieved/s | p50 | p99 | errors | verdict |");
        let _ = writeln!(out, "|---:|---:|---:|---:|---:|---:|---|");
        for step in &report.steps {
            let _ = writeln!(
                out,
                "| {} | {} | {:.1} | {} | {} | {:.2}% | {} |",
                step.step,
                trim_float(step.level()),
                step.achieved_rate,
                format_micros(step.p50_us as f64),
                format_micros(step.p99_us as f64),
                step.error_percent,
                md_cell(&step.verdict_text())
            );
        }
    }
    out
}

/// The comparison as CSV: every step of every search, a `search` column first.
pub fn render_capacity_comparison_csv(searches: &[LabelledSearch]) -> String {
    let Some(first) = searches.first() else { return String::new() };
    let mut columns = vec!["search"];
    columns.extend(capacity_csv_columns(&first.file.report));
    let rows: Vec<Vec<String>> = searches
        .iter()
        .flat_map(|search| {
            capacity_csv_rows(&search.file).into_iter().map(|row| {
                let mut cells = vec![search.label.clone()];
                cells.extend(row);
                cells
            })
        })
        .collect();
    super::csv::csv_text(&columns, &rows)
}

/// The comparison as JSON: each search's label and report.
pub fn capacity_comparison_json(searches: &[LabelledSearch]) -> String {
    let searches: Vec<serde_json::Value> =
        searches.iter().map(|s| serde_json::json!({ "label": s.label, "report": s.file.report })).collect();
    serde_json::to_string_pretty(&serde_json::json!({ "capacity_comparison": searches }))
        .expect("reports serialize")
}

/// p99 against the rate (or connections) of every search, each in its colour with its
/// capacity marked; the SLO's latency bounds (of the first search) dashed red.
fn p99_chart(searches: &[LabelledSearch]) -> String {
    let Some(first) = searches.first() else { return String::new() };
    let first = &first.file.report;
    let answered = |report: &CapacityReport| -> Vec<(f64, f64)> {
        by_rate(report)
            .into_iter()
            .filter(|s| s.requests > s.errors)
            .map(|s| (s.level(), s.p99_us as f64))
            .collect()
    };
    let curves: Vec<Vec<(f64, f64)>> = searches.iter().map(|s| answered(&s.file.report)).collect();
    let bounds = latency_bounds(first);
    let lowest = curves.iter().flatten().map(|p| p.1).filter(|v| *v > 0.0).fold(f64::INFINITY, f64::min);
    let highest = curves.iter().flatten().map(|p| p.1).chain(bounds.iter().map(|b| b.1)).fold(1.0, f64::max);
    let scale = LatencyScale::log(if lowest.is_finite() { lowest } else { 1.0 }, highest * 1.3);
    let rate = super::capacity_axes::RateAxis::for_levels(
        searches.iter().flat_map(|s| s.file.report.steps.iter().map(|step| step.level())),
    );
    svg(|root| {
        let mut chart = build(root, &rate, scale.axis())?;
        mesh(&mut chart, &rate, super::capacity_axes::x_desc(first), scale.description(), &|y| {
            scale.label(*y)
        })?;
        let (low, high) = (scale.axis().range().start, scale.axis().range().end);
        for (index, (search, curve)) in searches.iter().zip(&curves).enumerate() {
            let points: Vec<(f64, f64)> = curve.iter().map(|&(x, y)| (rate.x(x), scale.y(y))).collect();
            chart.draw_series(LineSeries::new(points.iter().copied(), color(index).stroke_width(2)))?;
            chart.draw_series(points.iter().map(|&p| Circle::new(p, 3, color(index).filled())))?;
            let report = &search.file.report;
            chart.draw_series(
                report.steps.iter().filter(|s| !s.verdict.passed() && s.requests > s.errors).map(|s| {
                    Cross::new((rate.x(s.level()), scale.y(s.p99_us as f64)), 6, RED.stroke_width(2))
                }),
            )?;
            if let Some(capacity) = report.capacity {
                let amount = short_amount(report, capacity);
                let capacity = rate.x(capacity);
                chart.draw_series(DashedLineSeries::new(
                    [(capacity, low), (capacity, high)],
                    6,
                    4,
                    color(index).stroke_width(2),
                ))?;
                let right = capacity > rate.start() + (rate.end() - rate.start()) * 0.6;
                let side = if right { HPos::Right } else { HPos::Left };
                let at = high - (high - low) * (0.04 + 0.07 * index as f64);
                chart.draw_series(std::iter::once(Text::new(
                    format!(" {}: {amount} ", search.label),
                    (capacity, at),
                    (FONT, 13).into_font().color(&color(index)).pos(Pos::new(side, VPos::Top)),
                )))?;
            }
        }
        for (label, limit) in &bounds {
            bound_line(&mut chart, &rate, scale.y(*limit), label)?;
        }
        Ok(())
    })
}

/// The comparison as one self-contained HTML page: the answers, one chart of p99 with a curve
/// per search, and each search's steps.
pub fn render_capacity_comparison_html(searches: &[LabelledSearch]) -> String {
    let title = format!("rpcbench capacity searches compared: {}", labels(searches));
    let mut out = String::new();
    page_start(&mut out, &title);
    let _ = writeln!(out, "<h1>{}</h1>", esc(&title));
    out.push_str("<section><h2>Answers</h2><table><tr><th class=\"text\"></th>");
    for search in searches {
        let _ = write!(out, "<th class=\"text\">{}</th>", esc(&search.label));
    }
    out.push_str("</tr>");
    for (name, cells) in answer_rows(searches) {
        let _ = write!(out, "<tr><td class=\"text\">{}</td>", esc(name));
        for cell in cells {
            let _ = write!(out, "<td class=\"text\">{}</td>", esc(&cell));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table></section>");
    let x = match searches.first().map(|s| s.file.report.settings.mode) {
        Some(SearchMode::Connections) => "connections",
        _ => "offered rate",
    };
    let items: Vec<(&str, usize)> = searches.iter().enumerate().map(|(i, s)| (s.label.as_str(), i)).collect();
    let _ = writeln!(
        out,
        "<section><h2>p99 against {x}</h2>{}{}</section>",
        legend_items(
            &items,
            "dashed: each search's capacity · red crosses: failing steps · red dashed: SLO bound"
        ),
        p99_chart(searches)
    );
    for search in searches {
        let report = &search.file.report;
        let _ = writeln!(
            out,
            "<section><h2>{}</h2><p class=\"sub\">{}</p>{}",
            esc(&search.label),
            esc(&report.settings_text()),
            steps_table(report)
        );
        for line in report.summary_lines() {
            let _ = write!(out, "<p>{}</p>", esc(line.trim()));
        }
        out.push_str("</section>");
    }
    let tool = searches.first().map(|s| s.file.report.tool.clone()).unwrap_or_default();
    let _ = writeln!(out, "<footer>{}</footer>\n</main>\n</body>\n</html>", esc(&tool));
    out
}
