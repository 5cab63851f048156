//! Rendering saved results and capacity searches in the format asked for: shared by `report`,
//! `compare` and `capacity`.

use crate::args::format::command_format;
use rpcbench::capacity::CapacityReport;
use rpcbench::capacity_file::CapacityFile;
use rpcbench::compare::{comparison_json, render_comparison_text};
use rpcbench::report::{render_csv, render_html, render_markdown, render_text, RunReport};
use rpcbench::results::SavedRun;

/// Formats of `report` and `compare`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ReportFormat {
    /// The text report (a comparison table with --compare).
    Text,
    /// The JSON report (schema/report.schema.json); with --compare, the comparison.
    Json,
    /// GitHub-flavoured Markdown tables.
    Markdown,
    /// One self-contained HTML page with charts.
    Html,
    /// One row per method of each run.
    Csv,
}

command_format!(ReportFormat: Text, Json, Markdown, Html, Csv);
command_format!(CapacityFormat: Text, Json, Markdown, Html, Csv);

/// Gives runs with the same label distinct ones (`run`, `run#2`).
pub fn unique_labels(runs: &mut [SavedRun]) {
    let mut seen: Vec<String> = Vec::new();
    for run in runs.iter_mut() {
        let mut label = run.label.clone();
        let mut n = 1;
        while seen.contains(&label) {
            n += 1;
            label = format!("{}#{n}", run.label);
        }
        seen.push(label.clone());
        run.label = label;
    }
}

/// Renders runs in a format; `compare` lays several out as one comparison.
pub fn render(runs: &[SavedRun], format: ReportFormat, compare: bool) -> String {
    match format {
        ReportFormat::Text if compare => render_comparison_text(runs),
        ReportFormat::Text => runs.iter().map(|r| render_text(&r.report)).collect::<Vec<_>>().join("\n"),
        ReportFormat::Json if compare => comparison_json(runs) + "\n",
        ReportFormat::Json => match runs {
            [run] => run.report.to_json() + "\n",
            _ => {
                let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
                serde_json::to_string_pretty(&reports).expect("reports serialize") + "\n"
            }
        },
        ReportFormat::Markdown if compare => render_markdown(runs),
        ReportFormat::Markdown => {
            runs.iter().map(|r| render_markdown(std::slice::from_ref(r))).collect::<Vec<_>>().join("\n")
        }
        ReportFormat::Html => render_html(runs),
        ReportFormat::Csv => render_csv(runs),
    }
}

/// Formats of `capacity -f`: `run`'s text and JSON, and what `report` renders a capacity file
/// as.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CapacityFormat {
    /// The steps table, the answer and the knee.
    Text,
    /// The capacity report as JSON.
    Json,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// One self-contained HTML page with charts against the offered rate.
    Html,
    /// One row per step.
    Csv,
}

/// Renders a search in a format; text and JSON need only the report, the others the file.
pub fn render_capacity(report: &CapacityReport, file: &CapacityFile, format: CapacityFormat) -> String {
    match format {
        CapacityFormat::Text => report.render_text(),
        CapacityFormat::Json => report.to_json() + "\n",
        CapacityFormat::Markdown => rpcbench::report::render_capacity_markdown(file),
        CapacityFormat::Html => rpcbench::report::render_capacity_html(file),
        CapacityFormat::Csv => rpcbench::report::render_capacity_csv(file),
    }
}
