//! `rpcbench report FILE...`: renders saved results files again, as text, JSON, Markdown,
//! HTML or CSV, or compares them (`--compare`). Text and JSON are exactly what the live run
//! printed. A capacity file (`capacity --save`) renders the same way, and several compare side
//! by side with `--compare` (searches of one kind: rates, or connections).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rpcbench::capacity_file::{is_capacity_file, CapacityFile};
use rpcbench::report::subscribe::{is_subscribe_report, SubscribeReport};
use rpcbench::report::{
    capacity_comparison_json, check_comparable, render_capacity_comparison_csv,
    render_capacity_comparison_html, render_capacity_comparison_markdown, render_capacity_comparison_text,
    LabelledSearch,
};
use rpcbench::report::{render_subscribe_html, render_subscribe_markdown};
use rpcbench::results::SavedRun;

use crate::output;
use crate::output::emit;
use crate::render::{render, unique_labels, ReportFormat};
use crate::render::{render_capacity, CapacityFormat};

/// Options of `rpcbench report`.
#[derive(clap::Args, Debug)]
pub struct ReportArgs {
    /// Results files (written by run --save, compare --save-dir or merge), or capacity files
    /// (capacity --save): one, or several with --compare.
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Output format. HTML always puts every file on one page, overlaid.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<ReportFormat>::new(), default_value = "text", value_name = "FORMAT")]
    pub format: ReportFormat,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file)]
    pub output: Option<PathBuf>,
    /// Compare the files: a row per metric, a column per file, ratios against the first. With
    /// capacity files: the answers side by side, each search's steps and one chart of both.
    #[arg(long)]
    pub compare: bool,
}

/// Renders one capacity file, or compares several (`--compare`); they do not mix with runs.
fn run_capacity(args: &ReportArgs) -> ExitCode {
    if args.compare {
        return compare_capacity(args);
    }
    if args.files.len() > 1 {
        return output::usage_error(
            "FILE: a capacity file (capacity --save) renders on its own; compare several with --compare",
        );
    }
    let file = match CapacityFile::load(&args.files[0]) {
        Ok(file) => file,
        Err(err) => return output::usage_error(err),
    };
    let format = match args.format {
        ReportFormat::Text => CapacityFormat::Text,
        ReportFormat::Json => CapacityFormat::Json,
        ReportFormat::Markdown => CapacityFormat::Markdown,
        ReportFormat::Html => CapacityFormat::Html,
        ReportFormat::Csv => CapacityFormat::Csv,
    };
    emit(&render_capacity(&file.report, &file, format), args.output.as_deref(), false)
}

/// Capacity files side by side: the answers, each search's steps and one chart of both curves.
fn compare_capacity(args: &ReportArgs) -> ExitCode {
    if args.files.len() < 2 {
        return output::usage_error("--compare: needs at least two capacity files");
    }
    let mut searches = Vec::with_capacity(args.files.len());
    for path in &args.files {
        if !is_capacity_file(path) {
            return output::usage_error(format!(
                "{}: not a capacity file; --compare takes capacity files (capacity --save) or results files, not both",
                path.display()
            ));
        }
        match CapacityFile::load(path) {
            Ok(file) => searches.push(LabelledSearch { label: file_label(path), file }),
            Err(err) => return output::usage_error(err),
        }
    }
    unique_search_labels(&mut searches);
    if let Err(err) = check_comparable(&searches) {
        return output::usage_error(format!("--compare: {err}"));
    }
    let text = match args.format {
        ReportFormat::Text => render_capacity_comparison_text(&searches),
        ReportFormat::Json => capacity_comparison_json(&searches) + "\n",
        ReportFormat::Markdown => render_capacity_comparison_markdown(&searches),
        ReportFormat::Html => render_capacity_comparison_html(&searches),
        ReportFormat::Csv => render_capacity_comparison_csv(&searches),
    };
    emit(&text, args.output.as_deref(), false)
}

/// A search's label: its file's name without the extension.
fn file_label(path: &Path) -> String {
    path.file_stem().map_or_else(|| path.display().to_string(), |stem| stem.to_string_lossy().into_owned())
}

/// Gives searches with the same label distinct ones (`search`, `search#2`).
fn unique_search_labels(searches: &mut [LabelledSearch]) {
    let mut seen: Vec<String> = Vec::new();
    for search in searches.iter_mut() {
        let mut label = search.label.clone();
        let mut n = 1;
        while seen.contains(&label) {
            n += 1;
            label = format!("{}#{n}", search.label);
        }
        seen.push(label.clone());
        search.label = label;
    }
}

/// A subscription report (`subscribe --save` or `-f json`) rendered again.
fn run_subscribe(args: &ReportArgs) -> ExitCode {
    if args.files.len() > 1 || args.compare {
        return output::usage_error(
            "FILE: a subscription report renders on its own (merge several with `rpcbench merge` first)",
        );
    }
    let report = match SubscribeReport::load(&args.files[0]) {
        Ok(report) => report,
        Err(message) => return output::usage_error(message),
    };
    let text = match args.format {
        ReportFormat::Text => report.render_text(),
        ReportFormat::Json => report.to_json() + "\n",
        ReportFormat::Markdown => render_subscribe_markdown(&report),
        ReportFormat::Html => render_subscribe_html(&report),
        ReportFormat::Csv => return output::usage_error("--format csv: not for a subscription report"),
    };
    emit(&text, args.output.as_deref(), false)
}

/// A tx report (`tx --save` or `tx -f json`) rendered again, in any format.
fn run_tx(args: &ReportArgs) -> ExitCode {
    if args.files.len() > 1 || args.compare {
        return output::usage_error("FILE: a tx report renders on its own");
    }
    let report = match rpcbench::report::tx::read_tx_report(&args.files[0]) {
        Ok(report) => report,
        Err(err) => return output::usage_error(err),
    };
    let text = match args.format {
        ReportFormat::Text => rpcbench::report::tx::render_tx_text(&report),
        ReportFormat::Json => serde_json::to_string_pretty(&report).expect("the report serializes") + "\n",
        ReportFormat::Markdown => rpcbench::report::render_tx_markdown(&report),
        ReportFormat::Html => rpcbench::report::render_tx_html(&report),
        ReportFormat::Csv => return output::usage_error("--format csv: not for a tx report"),
    };
    emit(&text, args.output.as_deref(), false)
}

pub fn run(args: ReportArgs) -> ExitCode {
    if args.files.iter().any(|path| rpcbench::report::tx::is_tx_report(path)) {
        return run_tx(&args);
    }
    if args.files.iter().any(|path| is_capacity_file(path)) {
        return run_capacity(&args);
    }
    if args.files.iter().any(|path| is_subscribe_report(path)) {
        return run_subscribe(&args);
    }
    if args.compare && args.files.len() < 2 {
        return output::usage_error("--compare: needs at least two results files");
    }
    let mut runs = Vec::with_capacity(args.files.len());
    for path in &args.files {
        match SavedRun::load(path) {
            Ok(run) => runs.push(run),
            Err(err) => return output::usage_error(err),
        }
    }
    unique_labels(&mut runs);
    let text = render(&runs, args.format, args.compare);
    emit(&text, args.output.as_deref(), false)
}
