//! What both chains' `tx` commands do with a finished run's report: add what every tx report
//! holds (its version and chain, the stages, sent and included per second, the latency
//! histograms losslessly, the send lag), judge the `--threshold` conditions, write `--save`,
//! render the `-f` format and choose the exit status (1 on a breached threshold or outcomes
//! that do not add up, as `run` exits on its thresholds).

use std::process::ExitCode;
use std::time::Duration;

use hdrhistogram::Histogram;
use rpcbench::report::tx::{TxThreshold, TxTimeline, TX_REPORT_VERSION};
use rpcbench::results::encode_histogram;
use serde_json::{json, Value};

use crate::args::tx::{TxArgs, TxFormat};
use crate::output;

/// The `--threshold` conditions, parsed before anything is sent; a bad one exits 2 naming it.
pub(super) fn thresholds(args: &TxArgs) -> Result<Vec<TxThreshold>, ExitCode> {
    args.thresholds
        .iter()
        .map(|text| {
            TxThreshold::parse(text).map_err(|err| output::usage_error(format!("--threshold: {err}")))
        })
        .collect()
}

/// How the run's helper threads were scheduled, as the report names it (`--helper-threads`).
pub(super) fn helper_threads_name() -> &'static str {
    match rpcbench::helper_threads() {
        rpcbench::HelperThreads::StepAside => "aside",
        rpcbench::HelperThreads::Ordinary => "ordinary",
    }
}

/// `count` a second over `window`; 0 over an empty window.
pub(super) fn per_second(count: u64, window: Duration) -> f64 {
    if window.is_zero() {
        0.0
    } else {
        count as f64 / window.as_secs_f64()
    }
}

/// The figures of the run beside the chain's own.
pub(super) struct TxRunFigures<'a> {
    /// Sends and inclusions per second.
    pub timeline: TxTimeline,
    /// Send -> acknowledgement, microseconds.
    pub ack_us: &'a Histogram<u64>,
    /// Send -> inclusion (Solana: landing), microseconds.
    pub inclusion_us: &'a Histogram<u64>,
    /// How late each send left against its schedule, microseconds.
    pub send_lag_us: &'a Histogram<u64>,
    /// Blocks (Ethereum) or slots (Solana) from the head at send to the one that carried it.
    pub after: &'a Histogram<u64>,
}

impl<'a> TxRunFigures<'a> {
    /// The figures of a run: its timeline and its four histograms.
    pub fn new(
        timeline: TxTimeline,
        ack_us: &'a Histogram<u64>,
        inclusion_us: &'a Histogram<u64>,
        send_lag_us: &'a Histogram<u64>,
        after: &'a Histogram<u64>,
    ) -> Self {
        TxRunFigures { timeline, ack_us, inclusion_us, send_lag_us, after }
    }
}

/// Completes the chain's report, judges it, saves it and prints it in the format asked for.
/// `outcomes_add_up` false (a defect) exits 1 with `identity` as the message.
pub(super) fn finish(
    args: &TxArgs,
    mut report: Value,
    figures: TxRunFigures<'_>,
    thresholds: &[TxThreshold],
    shard: rpcbench::engine::Slice,
    outcomes_add_up: bool,
    identity: &str,
) -> ExitCode {
    report["tx_report_version"] = json!(TX_REPORT_VERSION);
    report["stages"] = json!(args
        .stages
        .iter()
        .map(|stage| json!({"duration_ms": stage.duration.as_millis() as u64, "rate": stage.level}))
        .collect::<Vec<_>>());
    report["per_second"] = json!(figures.timeline.seconds());
    // 1-based, as --shard says it; one of one when the run is whole.
    report["shard"] = json!({"index": shard.index + 1, "count": shard.count});
    let lag_ms = |q: f64| {
        if figures.send_lag_us.is_empty() {
            Value::Null
        } else {
            json!(figures.send_lag_us.value_at_quantile(q) as f64 / 1000.0)
        }
    };
    report["send_lag_ms"] = json!({"p50": lag_ms(0.5), "p99": lag_ms(0.99), "max": lag_ms(1.0)});
    report["histograms"] = json!({
        "ack": encode_histogram(figures.ack_us),
        "inclusion": encode_histogram(figures.inclusion_us),
        "send_lag": encode_histogram(figures.send_lag_us),
        "after": encode_histogram(figures.after),
    });
    let verdicts: Vec<_> = thresholds.iter().map(|threshold| threshold.judge(&report)).collect();
    let passed = verdicts.iter().all(|verdict| verdict.passed);
    report["thresholds"] = json!(verdicts);
    if let Some(path) = &args.save {
        let bytes = serde_json::to_string_pretty(&report).expect("the report serializes") + "\n";
        if let Err(err) = rpcbench::results::write_atomically(path, bytes.as_bytes()) {
            return output::failure(format!("--save {}: {err}", path.display()));
        }
    }
    let text = match args.format {
        TxFormat::Json => serde_json::to_string_pretty(&report).expect("the report serializes") + "\n",
        TxFormat::Text => rpcbench::report::tx::render_tx_text(&report),
        TxFormat::Markdown => rpcbench::report::render_tx_markdown(&report),
        TxFormat::Html => rpcbench::report::render_tx_html(&report),
    };
    let code = output::emit(&text, args.output.as_deref(), true);
    if !outcomes_add_up {
        return output::failure(identity);
    }
    if !passed {
        return ExitCode::from(1);
    }
    code
}

/// The send rate as the dashboard shows it: `100/s`, or the stages' peak.
pub(super) fn rate_text(args: &TxArgs) -> String {
    match args.rate {
        Some(rate) => format!("{rate}/s"),
        None => format!(
            "{} stages up to {}/s",
            args.stages.len(),
            args.stages.iter().map(|stage| stage.level).fold(0.0, f64::max)
        ),
    }
}
