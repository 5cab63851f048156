//! The report of `rpcbench tx` as a results kind of its own: the JSON object the command
//! writes (`-f json`, `--save`; schema/tx.schema.json, marked by `tx_report_version`), read
//! back by `rpcbench report FILE` and rendered as text here, as Markdown and HTML in
//! `tx_html`. Also what the command builds it from: the per-second counts of sent and
//! included transactions ([`TxTimeline`]) and the thresholds judged on it ([`TxThreshold`]:
//! `inclusion p99 < 3s`, `included > 99%`, `ack p99 < 50ms`, in the one condition grammar).
//!
//! The report holds either chain's figures: Ethereum's `included`/`dropped` and
//! `send_to_included_ms`, Solana's `landed`/`failed`/`expired` and `send_to_landed_ms`.
//! [`TxChainWords`] names them once for every renderer and the thresholds.

use std::fmt::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use hdrhistogram::Histogram;
use serde::Serialize;
use serde_json::Value;

use super::ThresholdResult;
use crate::conditions::{
    self, ConditionError, Limit, MetricWord, Operator, Quantity, Vocabulary, ALL_OPERATORS,
};
use crate::outcome::{drop_cause_label, tx_finals_of, TxFinalOutcome, TxFinalSpec};
use crate::util::units::format_micros;

/// The version of the tx report's JSON this build writes and reads.
pub const TX_REPORT_VERSION: u64 = 1;

/// The most seconds the timeline holds; a send or inclusion later than this lands in the last.
pub const MAX_TIMELINE_SECONDS: usize = 86_400;

/// One second of a tx run: transactions sent and included (Solana: landed) in it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct TxSecond {
    /// Seconds since the first send.
    pub second: u64,
    /// Transactions sent in this second.
    pub sent: u64,
    /// Transactions whose inclusion was seen in this second.
    pub included: u64,
}

/// Counts of sends and inclusions per second since the first send, bounded by
/// [`MAX_TIMELINE_SECONDS`].
#[derive(Debug, Default, Clone)]
pub struct TxTimeline {
    seconds: Vec<TxSecond>,
}

impl TxTimeline {
    /// An empty timeline.
    pub fn new() -> Self {
        Self::default()
    }

    fn at(&mut self, since_first_send: Duration) -> &mut TxSecond {
        let index = (since_first_send.as_secs() as usize).min(MAX_TIMELINE_SECONDS - 1);
        while self.seconds.len() <= index {
            let second = self.seconds.len() as u64;
            self.seconds.push(TxSecond { second, sent: 0, included: 0 });
        }
        &mut self.seconds[index]
    }

    /// A send this long after the first.
    pub fn sent(&mut self, since_first_send: Duration) {
        self.at(since_first_send).sent += 1;
    }

    /// An inclusion seen this long after the first send.
    pub fn included(&mut self, since_first_send: Duration) {
        self.at(since_first_send).included += 1;
    }

    /// The seconds, from the first send's.
    pub fn seconds(&self) -> &[TxSecond] {
        &self.seconds
    }
}

/// The names under which a chain's report holds its figures.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxChainWords {
    /// The chain, as the report's `chain` says it.
    pub chain: &'static str,
    /// The count of transactions included (Ethereum) or landed (Solana).
    pub included: &'static str,
    /// The count of those never included in time: dropped (Ethereum), expired (Solana).
    pub lost: &'static str,
    /// The send -> inclusion latency table, in ms.
    pub latency: &'static str,
    /// The inclusion rate over the time inclusions were seen.
    pub per_second: &'static str,
    /// The polling resolution in ms, when inclusions were polled.
    pub resolution: &'static str,
}

/// Ethereum's names.
pub const ETHEREUM_WORDS: TxChainWords = TxChainWords {
    chain: "ethereum",
    included: TxFinalOutcome::Included.spec().ethereum_key,
    lost: TxFinalOutcome::Dropped.spec().ethereum_key,
    latency: "send_to_included_ms",
    per_second: "included_per_second",
    resolution: "inclusion_resolution_ms",
};

/// Solana's names.
pub const SOLANA_WORDS: TxChainWords = TxChainWords {
    chain: "solana",
    included: TxFinalOutcome::Included.spec().solana_key,
    lost: TxFinalOutcome::Expired.spec().solana_key,
    latency: "send_to_landed_ms",
    per_second: "landed_per_second",
    resolution: "resolution_ms",
};

impl TxChainWords {
    /// The names of the report's chain.
    pub fn of(report: &Value) -> Self {
        if report["chain"].as_str() == Some("solana") {
            SOLANA_WORDS
        } else {
            ETHEREUM_WORDS
        }
    }

    /// The key of a final outcome's count in this chain's reports (its row of
    /// [`crate::outcome::TX_FINALS`]).
    pub fn final_key(&self, outcome: TxFinalOutcome) -> &'static str {
        if self.is_solana() {
            outcome.spec().solana_key
        } else {
            outcome.spec().ethereum_key
        }
    }

    /// What a final outcome's count means in this chain's reports.
    pub fn final_meaning(&self, outcome: TxFinalOutcome) -> &'static str {
        if self.is_solana() {
            outcome.spec().solana_meaning
        } else {
            outcome.spec().ethereum_meaning
        }
    }

    fn is_solana(&self) -> bool {
        self.chain == SOLANA_WORDS.chain
    }
}

/// What a final outcome's count means in `report`, with the report's own figures: the
/// commitment landed at, the inclusion timeout and the causes of the dropped, the age of the
/// oldest pending (the Markdown and HTML rows' meaning; the text report's note).
pub(super) fn final_meaning(report: &Value, outcome: TxFinalOutcome) -> String {
    let words = TxChainWords::of(report);
    let meaning = words.final_meaning(outcome);
    match outcome {
        TxFinalOutcome::Included if words == SOLANA_WORDS => {
            let reached = match report["commitment"].as_str() {
                Some(commitment) => format!("reached {commitment} commitment"),
                None => meaning.to_string(),
            };
            match count(report, "landed_unseen") {
                0 => reached,
                unseen => format!("{reached} ({unseen} found by lookup, not in the latency)"),
            }
        }
        // A reverted count read from a sample of receipts says so (`--receipts 10%`).
        TxFinalOutcome::Reverted if words == ETHEREUM_WORDS => format!("{meaning}{}", sampled_note(report)),
        TxFinalOutcome::Dropped => {
            let verb = if words == SOLANA_WORDS { "landed" } else { "included" };
            format!("not {verb} within {} ms{}", count(report, "inclusion_timeout_ms"), drop_causes(report))
        }
        TxFinalOutcome::Pending => format!("{meaning} (oldest {} ms)", count(report, "oldest_pending_ms")),
        _ => meaning.to_string(),
    }
}

/// The rows of the final outcomes `report` holds, in the table's order, with their counts: a
/// row newer than the report (no key in it) is left out.
pub(super) fn final_rows(report: &Value) -> Vec<(&'static TxFinalSpec, &'static str, u64)> {
    let words = TxChainWords::of(report);
    tx_finals_of(words.chain)
        .map(|spec| (spec, words.final_key(spec.outcome)))
        .filter(|(spec, key)| {
            !spec.missing_from_older_reports_of.contains(&words.chain) || report[*key].is_u64()
        })
        .map(|(spec, key)| (spec, key, count(report, key)))
        .collect()
}

/// A count of the report, 0 when absent.
pub(super) fn count(report: &Value, key: &str) -> u64 {
    report[key].as_u64().unwrap_or(0)
}

/// A histogram the report keeps losslessly (`histograms.ack` or `histograms.inclusion`), in
/// microseconds; `None` when absent or empty.
pub fn tx_histogram(report: &Value, which: &str) -> Option<Histogram<u64>> {
    let text = report["histograms"][which].as_str()?;
    crate::util::hdr_codec::decode_histogram(text).ok().filter(|histogram| !histogram.is_empty())
}

/// What a tx condition measures, as the grammar names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum TxWord {
    Inclusion,
    Ack,
    Included,
    Rejected,
    Dropped,
    Pending,
    SentRate,
    IncludedRate,
}

const TX_STATS: &[&str] = &["p50", "p75", "p90", "p95", "p99", "p99.9", "p99.99", "max"];

/// The metrics of `tx --threshold`: the two latencies with a percentile (p99 when none is
/// written), shares of the sent, the pending count and the two rates.
const TX_WORDS: Vocabulary<TxWord> = {
    const fn latency(id: TxWord, names: &'static [&'static str]) -> MetricWord<TxWord> {
        MetricWord { id, names, quantity: Quantity::Latency, stats: TX_STATS, default_stat: Some("p99") }
    }
    const fn share(id: TxWord, names: &'static [&'static str]) -> MetricWord<TxWord> {
        MetricWord { id, names, quantity: Quantity::Percent, stats: &[], default_stat: None }
    }
    const fn rate(id: TxWord, names: &'static [&'static str]) -> MetricWord<TxWord> {
        MetricWord { id, names, quantity: Quantity::Rate, stats: &[], default_stat: None }
    }
    Vocabulary {
        metrics: &[
            latency(TxWord::Inclusion, &["inclusion", "landing"]),
            latency(TxWord::Ack, &["ack"]),
            share(TxWord::Included, &["included", "landed"]),
            share(TxWord::Rejected, &["rejected"]),
            share(TxWord::Dropped, &["dropped", "expired"]),
            MetricWord {
                id: TxWord::Pending,
                names: &["pending"],
                quantity: Quantity::Count,
                stats: &[],
                default_stat: None,
            },
            rate(TxWord::SentRate, &["sent-rate"]),
            rate(TxWord::IncludedRate, &["included-rate", "landed-rate"]),
        ],
        bare_stats: None,
        operators: ALL_OPERATORS,
        scopes: false,
        limits_above_zero: false,
    }
};

/// A condition on a tx run.
#[derive(Debug, Clone, PartialEq)]
pub struct TxThreshold {
    text: String,
    word: TxWord,
    stat: Option<&'static str>,
    operator: Operator,
    limit: Limit,
}

impl TxThreshold {
    /// Parses `inclusion p99 < 3s`, `ack p99 < 50ms`, `included > 99%`, `rejected < 1%`,
    /// `dropped < 1%`, `pending < 1`, `sent-rate >= 100/s` or `included-rate >= 100/s` (the
    /// grammar of [`crate::conditions`]; Solana's `landing`, `landed`, `expired` and
    /// `landed-rate` are the same metrics).
    pub fn parse(text: &str) -> Result<Self, ConditionError> {
        let condition = conditions::parse(text, &TX_WORDS)?;
        Ok(Self {
            text: condition.text,
            word: condition.metric,
            stat: condition.stat,
            operator: condition.operator,
            limit: condition.limit,
        })
    }

    /// The condition as written.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The verdict on a tx report.
    pub fn judge(&self, report: &Value) -> ThresholdResult {
        let words = TxChainWords::of(report);
        let sent = count(report, "sent");
        let share = |key: &str| {
            let part = count(report, key);
            (sent > 0).then(|| part as f64 * 100.0 / sent as f64)
        };
        let latency = |which: &str| {
            let histogram = tx_histogram(report, which)?;
            let stat = self.stat.unwrap_or("p99");
            Some(match stat {
                "max" => histogram.max() as f64,
                _ => {
                    let quantile = stat.trim_start_matches('p').parse::<f64>().unwrap_or(99.0) / 100.0;
                    histogram.value_at_quantile(quantile) as f64
                }
            })
        };
        let actual = match self.word {
            TxWord::Inclusion => latency("inclusion"),
            TxWord::Ack => latency("ack"),
            TxWord::Included => share(words.final_key(TxFinalOutcome::Included)),
            TxWord::Rejected => share(words.final_key(TxFinalOutcome::Rejected)),
            // Solana's lost are the expired and, in reports that look them up, the dropped.
            TxWord::Dropped => {
                let lost = [TxFinalOutcome::Expired, TxFinalOutcome::Dropped]
                    .into_iter()
                    .filter(|outcome| outcome.spec().chains.contains(&words.chain))
                    .map(|outcome| count(report, words.final_key(outcome)))
                    .sum::<u64>();
                (sent > 0).then(|| lost as f64 * 100.0 / sent as f64)
            }
            TxWord::Pending => Some(count(report, words.final_key(TxFinalOutcome::Pending)) as f64),
            TxWord::SentRate => report["sent_per_second"].as_f64(),
            TxWord::IncludedRate => report[words.per_second].as_f64(),
        };
        // Latencies are judged in whole microseconds, as they are recorded.
        let limit = match self.limit {
            Limit::Latency(limit) => limit.as_micros() as f64,
            other => other.value(),
        };
        let shown = |value: f64| match self.limit {
            Limit::Latency(_) => format_micros(value),
            Limit::Percent(_) => format!("{value:.2}%"),
            Limit::Rate(_) => format!("{value:.1}/s"),
            Limit::Count(_) => format!("{value:.0}"),
        };
        let Some(actual) = actual else {
            let why =
                if sent == 0 { "no value (nothing was sent)" } else { "no value (nothing was measured)" };
            return ThresholdResult {
                threshold: self.text.clone(),
                passed: false,
                actual: why.into(),
                exceeded_by: "no value".into(),
            };
        };
        let passed = self.operator.holds(actual, limit);
        let exceeded_by = if passed { String::new() } else { shown((actual - limit).abs()) };
        ThresholdResult { threshold: self.text.clone(), passed, actual: shown(actual), exceeded_by }
    }
}

/// Whether the file at `path` is a tx report (`tx -f json` or `tx --save`).
pub fn is_tx_report(path: &Path) -> bool {
    crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
        .ok()
        .and_then(|text| serde_json::from_str::<Value>(&text).ok())
        .is_some_and(|report| report["tx_report_version"].is_u64())
}

/// A saved tx report that cannot be read, with its file.
#[derive(Debug)]
pub enum TxReportError {
    /// The file cannot be read.
    Read(PathBuf, std::io::Error),
    /// The file is not JSON.
    NotJson(PathBuf, serde_json::Error),
    /// The JSON is not a tx report of a version this build knows.
    Version(PathBuf, Option<u64>),
    /// One of its histograms does not decode.
    Histogram(PathBuf, crate::util::hdr_codec::HistogramTextError),
}

impl std::fmt::Display for TxReportError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TxReportError::Read(path, err) => write!(f, "{}: {err}", path.display()),
            TxReportError::NotJson(path, err) => write!(f, "{}: not a tx report: {err}", path.display()),
            TxReportError::Version(path, None) => {
                write!(f, "{}: not a tx report (no tx_report_version)", path.display())
            }
            TxReportError::Version(path, Some(version)) => write!(
                f,
                "{}: tx report version {version}; this build reads version {TX_REPORT_VERSION}",
                path.display()
            ),
            TxReportError::Histogram(path, err) => {
                write!(f, "{}: a histogram does not decode: {err}", path.display())
            }
        }
    }
}

impl std::error::Error for TxReportError {}

/// Reads a saved tx report, checking its version and that its histograms decode.
pub fn read_tx_report(path: &Path) -> Result<Value, TxReportError> {
    let text = crate::util::files::read_text_limited(path, crate::util::files::MAX_RESULTS)
        .map_err(|err| TxReportError::Read(path.to_path_buf(), err))?;
    let report: Value =
        serde_json::from_str(&text).map_err(|err| TxReportError::NotJson(path.to_path_buf(), err))?;
    match report["tx_report_version"].as_u64() {
        Some(TX_REPORT_VERSION) => {}
        other => return Err(TxReportError::Version(path.to_path_buf(), other)),
    }
    for which in ["ack", "inclusion", "send_lag", "after"] {
        if let Some(text) = report["histograms"][which].as_str() {
            crate::util::hdr_codec::decode_histogram(text)
                .map_err(|err| TxReportError::Histogram(path.to_path_buf(), err))?;
        }
    }
    Ok(report)
}

/// A figure in ms with three decimals, `-` when there is none.
pub(super) fn figure(value: &Value) -> String {
    value.as_f64().map_or("-".to_string(), |v| format!("{v:.3}"))
}

/// A whole number, `-` when there is none.
pub(super) fn number(value: &Value) -> String {
    value.as_u64().map_or("-".into(), |v| v.to_string())
}

/// The stages line: `stages 10s:100/s 20s:500/s`, empty without stages.
pub(super) fn stages_text(report: &Value) -> Option<String> {
    let stages = report["stages"].as_array().filter(|stages| !stages.is_empty())?;
    let parts: Vec<String> = stages
        .iter()
        .map(|stage| {
            format!(
                "{}:{}/s",
                crate::util::units::format_duration(Duration::from_millis(
                    stage["duration_ms"].as_u64().unwrap_or(0)
                )),
                stage["rate"].as_f64().unwrap_or(0.0)
            )
        })
        .collect();
    Some(parts.join(" "))
}

/// Which shard the report is of (`2 of 4`) or how many it merges (`merged from 4 shards`);
/// `None` for a whole run.
pub(super) fn shard_text(report: &Value) -> Option<String> {
    let shard = &report["shard"];
    if let Some(from) = shard["merged_from"].as_u64() {
        return Some(format!("merged from {from} shards"));
    }
    match (shard["index"].as_u64(), shard["count"].as_u64()) {
        (Some(index), Some(count)) if count > 1 => Some(format!("{index} of {count}")),
        _ => None,
    }
}

/// The dropped transactions by what the lookup after the timeout found, `; 2 gone, 1
/// replaced` (empty when none were dropped or the report has no causes).
pub(super) fn drop_causes(report: &Value) -> String {
    let causes: Vec<String> = report["dropped_by_cause"]
        .as_object()
        .into_iter()
        .flatten()
        .filter(|(_, n)| n.as_u64().unwrap_or(0) > 0)
        .map(|(cause, n)| format!("{} {}", n.as_u64().unwrap_or(0), drop_cause_label(cause)))
        .collect();
    if causes.is_empty() {
        String::new()
    } else {
        format!("; {}", causes.join(", "))
    }
}

/// The verdicts the report holds.
pub(super) fn verdicts(report: &Value) -> Vec<ThresholdResult> {
    report["thresholds"]
        .as_array()
        .map(|list| list.iter().filter_map(|v| serde_json::from_value(v.clone()).ok()).collect())
        .unwrap_or_default()
}

/// The report as text, for either chain.
pub fn render_tx_text(report: &Value) -> String {
    let mut text =
        if TxChainWords::of(report) == SOLANA_WORDS { solana_text(report) } else { ethereum_text(report) };
    if let Some(stages) = stages_text(report) {
        let _ = writeln!(text, "stages                 {stages}");
    }
    if let Some(shard) = shard_text(report) {
        let _ = writeln!(text, "shard                  {shard}");
    }
    if let Some(waits) = signer_waits_text(report) {
        let _ = writeln!(text, "signer waits           {waits}");
    }
    let verdicts = verdicts(report);
    if !verdicts.is_empty() {
        text.push('\n');
        for verdict in &verdicts {
            let _ = write!(
                text,
                "threshold {:<28} {}  ({})",
                format!("'{}'", verdict.threshold),
                if verdict.passed { "passed" } else { "FAILED" },
                verdict.actual
            );
            if !verdict.passed {
                let _ = write!(text, "  exceeded by {}", verdict.exceeded_by);
            }
            text.push('\n');
        }
    }
    text
}

/// How often a send found nothing signed ahead and waited for the signer, if ever, and the
/// sends that left late besides those taken at the connection cap; with a hint when those
/// are 1% of the sends or more and the helper threads ran aside (below every other process's
/// threads: on a machine whose cores other work keeps busy they get no CPU).
fn signer_waits_text(report: &Value) -> Option<String> {
    let late = &report["late_sends"];
    let waited = late["waited_for_signer"].as_u64().filter(|waited| *waited > 0)?;
    let over = late["over_2ms"].as_u64().unwrap_or(0);
    let not_at_cap = over.saturating_sub(late["at_connection_cap"].as_u64().unwrap_or(0));
    let mut text = format!(
        "{} a send found nothing signed ahead and waited; {not_at_cap} sends left over 2 ms late \
         with a connection free",
        times(waited)
    );
    if late["helper_threads"] == "aside" && not_at_cap.saturating_mul(100) >= count(report, "sent") {
        text.push_str(
            " (the signer's threads ran below every other process's: if other work kept the \
             cores busy, run with --helper-threads ordinary)",
        );
    }
    Some(text)
}

/// What a chain's text report has of its own; [`chain_text`] writes the lines both share.
struct ChainText<'a> {
    /// The heading, with its blank line.
    heading: String,
    /// What follows the included (landed) count: its rate, and the polling resolution.
    included_note: String,
    /// The two latency lines: label, report key, note.
    latencies: [(&'a str, &'a str, String); 2],
    /// The blocks or slots line: label, report key, note.
    after: (&'a str, &'a str, String),
    /// The lines after it, before the interruption's line.
    extra: String,
    /// The line said when the run was interrupted.
    interrupted: &'a str,
}

/// The text both chains' reports share, around what `chain` has of its own.
fn chain_text(report: &Value, chain: ChainText<'_>) -> String {
    let n = |key: &str| count(report, key);
    let mut text = chain.heading;
    let line = |text: &mut String, name: &str, key: &str, note: &str| {
        let _ = writeln!(text, "{name:<12}{:>8}{note}", n(key));
    };
    line(
        &mut text,
        "sent",
        "sent",
        &format!("   {:.1}/s", report["sent_per_second"].as_f64().unwrap_or(0.0)),
    );
    line(&mut text, "accepted", "accepted", "");
    // One line per final outcome, in the table's order; their sum is the identity's.
    let rows = final_rows(report);
    for (spec, key, _) in &rows {
        let note = match spec.outcome {
            TxFinalOutcome::Included => chain.included_note.clone(),
            TxFinalOutcome::Rejected => String::new(),
            TxFinalOutcome::Pending => format!("   (oldest {} ms)", n("oldest_pending_ms")),
            outcome => format!("   ({})", final_meaning(report, outcome)),
        };
        line(&mut text, key, key, &note);
        if spec.outcome == TxFinalOutcome::Rejected {
            if let Some(reasons) = report["rejected_by_reason"].as_object() {
                for (reason, count) in reasons {
                    let _ = writeln!(text, "  {reason:<22}{}", count.as_u64().unwrap_or(0));
                }
            }
        }
    }
    let summed: Vec<&str> =
        rows.iter().filter(|(spec, _, _)| spec.in_identity).map(|(_, key, _)| *key).collect();
    let holds = report["identity_holds"].as_bool().unwrap_or(false);
    let _ = writeln!(
        text,
        "{} = {} {} sent {}\n",
        summed.join(" + "),
        summed.iter().map(|key| n(key)).sum::<u64>(),
        if holds { "==" } else { "!=" },
        n("sent")
    );
    for (label, key, note) in &chain.latencies {
        let row = &report[*key];
        let _ = writeln!(
            text,
            "{label:<22} p50 {}  p90 {}  p99 {}  max {}{note}",
            figure(&row["p50"]),
            figure(&row["p90"]),
            figure(&row["p99"]),
            figure(&row["max"])
        );
    }
    let (label, key, note) = &chain.after;
    let after = &report[*key];
    let _ = writeln!(
        text,
        "{label:<22} p50 {}  p99 {}  max {}{note}",
        number(&after["p50"]),
        number(&after["p99"]),
        number(&after["max"])
    );
    text.push_str(&chain.extra);
    if report["interrupted"].as_bool() == Some(true) {
        let _ = writeln!(text, "interrupted: sending stopped; {}", chain.interrupted);
    }
    text
}

fn ethereum_text(report: &Value) -> String {
    let n = |key: &str| count(report, key);
    // Inclusion read from a poll is late by up to one interval: said beside the figures.
    let polled = report["inclusion_resolution_ms"]
        .as_u64()
        .map_or(String::new(), |poll| format!("   (polled: resolution {poll} ms)"));
    // Receipts checked (`--receipts`): reports written before it have no field (all read).
    let checked = receipts_checked(report);
    let heading = format!(
        "rpcbench tx {}  chain {}  {} senders\n{}  gas limit {}  fees {}{}\n\n",
        report["target"].as_str().unwrap_or(""),
        n("chain_id"),
        n("senders"),
        report["kind"].as_str().unwrap_or(""),
        n("gas_limit"),
        report["fees"]["source"].as_str().unwrap_or(""),
        checked.map_or(String::new(), |checked| format!("\nreceipts checked: {checked}"))
    );
    let resync = &report["nonce_resyncs"];
    let mut extra = String::new();
    if resync["refusals_handed_back"].as_u64().unwrap_or(0) > 0 {
        let _ = writeln!(
            extra,
            "nonce resyncs          {} from {} refusals ({} lookups failed, {} signed ahead dropped unsent)",
            resync["resynced"].as_u64().unwrap_or(0),
            resync["refusals_handed_back"].as_u64().unwrap_or(0),
            resync["lookup_failures"].as_u64().unwrap_or(0),
            resync["stale_dropped_unsent"].as_u64().unwrap_or(0)
        );
    }
    // Reports written before these figures have none: no line.
    if let Some(gas_per_second) = report["gas_per_second"].as_f64() {
        let share = &report["share_of_block_ours"];
        let share_of =
            |key: &str| share[key].as_f64().map_or("-".to_string(), |v| format!("{:.1}%", v * 100.0));
        let _ = writeln!(
            extra,
            "gas/s                  {gas_per_second:.0}   ({} gas included, by the gas limit)",
            n("included_gas")
        );
        // A merged report has none: shards share blocks.
        if share.is_object() {
            let _ = writeln!(
                extra,
                "share of block ours    min {}  p50 {}  max {}   ({} blocks)",
                share_of("min"),
                share_of("p50"),
                share_of("max"),
                n("blocks_with_ours")
            );
        }
    }
    extra.push_str(&top_up_line(&report["top_ups"]));
    extra.push_str(&watch_ended_line(report, "head watch ended", "included_by_catch_up"));
    if n("blocks_unread_at_end") > 0 {
        let _ = writeln!(
            extra,
            "blocks unread at end   {}   (revealed by the heads, not read within the grace: what they hold is pending)",
            n("blocks_unread_at_end")
        );
    }
    if n("reorged_out") > 0 || n("reorgs") > 0 {
        let _ = writeln!(
            extra,
            "reorged out            {}   ({} reorgs seen; back to waiting, counted once each time; final {} blocks deep)",
            n("reorged_out"),
            n("reorgs"),
            n("confirm_depth")
        );
    }
    if report["receipts_read"].is_u64() {
        let _ = writeln!(
            extra,
            "receipts read          {}   ({}; {} failed)",
            n("receipts_read"),
            checked.map_or("every included transaction's".to_string(), |checked| format!(
                "receipts checked: {checked}"
            )),
            n("receipt_failures")
        );
    }
    chain_text(
        report,
        ChainText {
            heading,
            included_note: format!(
                "   {:.1}/s{polled}",
                report["included_per_second"].as_f64().unwrap_or(0.0)
            ),
            latencies: [
                ("send -> ack ms", "send_to_ack_ms", String::new()),
                ("send -> included ms", "send_to_included_ms", polled.replacen("   ", "  ", 1)),
            ],
            after: ("blocks after head", "blocks_after_head_at_send", String::new()),
            extra,
            interrupted: "what was not included within the grace is pending",
        },
    )
}

/// The text report's line on top-ups, empty when no sender ran dry.
/// What `--receipts` checked when it was not every receipt ("none", "a 10% sample").
pub(super) fn receipts_checked(report: &Value) -> Option<&str> {
    report["receipts_checked"].as_str().filter(|checked| *checked != "all")
}

/// Said beside a reverted count that comes from a sample of the receipts (or none).
pub(super) fn sampled_note(report: &Value) -> String {
    receipts_checked(report).map_or(String::new(), |checked| match checked {
        "none" => "; no receipts read: a lower bound".to_string(),
        mixed if mixed.starts_with("mixed") => format!("; receipts read {mixed}: a lower bound"),
        sample => format!("; from {sample} of receipts only"),
    })
}

fn top_up_line(top_ups: &Value) -> String {
    let n = |key: &str| top_ups[key].as_u64().unwrap_or(0);
    if n("insufficient_funds_refusals") == 0 {
        return String::new();
    }
    let mut why_not = Vec::new();
    if n("not_sent_no_funder") > 0 {
        why_not.push(format!("{} not: funding is off", n("not_sent_no_funder")));
    }
    if n("not_sent_funder_itself_dry") > 0 {
        why_not.push(format!("{} not: the funder itself is dry", n("not_sent_funder_itself_dry")));
    }
    if n("not_sent_same_dry_spell") > 0 {
        why_not.push(format!("{} not: signed before the sender's last top-up", n("not_sent_same_dry_spell")));
    }
    if n("not_sent_within_cooldown") > 0 {
        why_not.push(format!("{} not: topped up within the cooldown", n("not_sent_within_cooldown")));
    }
    format!(
        "top-ups from sender 0   {} sent for {} insufficient-funds refusals{}{}\n",
        n("sent"),
        n("insufficient_funds_refusals"),
        if why_not.is_empty() { "" } else { "; " },
        why_not.join(", ")
    )
}

/// `n` as a count of times: "1 time", "3 times".
pub fn times(n: u64) -> String {
    if n == 1 {
        "1 time".to_string()
    } else {
        format!("{n} times")
    }
}

/// The landing watch's last end, if its connection ended before the run stopped it (`label`
/// says which watch): why; how many times it reconnected (or that it gave up), what its
/// catch-up found (`caught_up`: the report's key) and, on Solana, how many transactions went
/// out unwatched.
fn watch_ended_line(report: &Value, label: &str, caught_up: &str) -> String {
    let Some(why) = report["watch_ended"].as_str() else { return String::new() };
    let mut line =
        format!("{label:<22} {why}; reconnected {}", times(report["watch_reconnects"].as_u64().unwrap_or(0)));
    if report["watch_gave_up"].as_bool() == Some(true) {
        line.push_str(", then gave up");
    }
    let _ = write!(line, "; {} found by catch-up", report[caught_up].as_u64().unwrap_or(0));
    if let Some(unwatched) = report["sent_unwatched"].as_u64() {
        let _ = write!(line, "; {unwatched} sent unwatched");
    }
    line.push('\n');
    line
}

fn solana_text(report: &Value) -> String {
    let n = |key: &str| count(report, key);
    let resolution = match report["resolution_ms"].as_u64() {
        Some(ms) => format!("  (resolution {ms} ms: polled)"),
        None => String::new(),
    };
    let heading = format!(
        "rpcbench tx {}  solana  {} payers  commitment {}  landings by {}\n\n",
        report["target"].as_str().unwrap_or(""),
        n("senders"),
        report["commitment"].as_str().unwrap_or(""),
        report["landing_seen_by"].as_str().unwrap_or("")
    );
    let unseen = match count(report, "landed_unseen") {
        0 => String::new(),
        n => format!("   ({n} found by lookup: no latency)"),
    };
    chain_text(
        report,
        ChainText {
            heading,
            included_note: format!("   {:.1}/s{unseen}", report["landed_per_second"].as_f64().unwrap_or(0.0)),
            latencies: [
                ("send -> ack ms", "send_to_ack_ms", String::new()),
                ("send -> landed ms", "send_to_landed_ms", resolution.clone()),
            ],
            after: ("slots after send", "slots_after_send", resolution),
            extra: watch_ended_line(report, "landing watch ended", "landed_by_catch_up"),
            interrupted: "what did not land within the grace is pending",
        },
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn histogram(values: &[u64]) -> String {
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for &value in values {
            histogram.record(value).unwrap();
        }
        crate::util::hdr_codec::encode_histogram(&histogram)
    }

    fn report(chain: &str, included: u64) -> Value {
        let mut report = json!({
            "tx_report_version": TX_REPORT_VERSION,
            "chain": chain,
            "sent": 200,
            "rejected": 2,
            "pending": 0,
            "sent_per_second": 100.0,
            "histograms": {
                "ack": histogram(&[1_000; 100]),
                "inclusion": histogram(&[[900_000u64; 99].as_slice(), &[2_500_000]].concat()),
            },
        });
        let words = TxChainWords::of(&report);
        report[words.included] = json!(included);
        report[words.lost] = json!(200 - included - 2);
        report[words.per_second] = json!(99.0);
        report
    }

    #[test]
    fn a_count_of_one_reads_one_time_not_one_times() {
        assert_eq!((times(0), times(1), times(2)), ("0 times".into(), "1 time".into(), "2 times".into()));
    }

    #[test]
    fn the_brief_s_three_conditions_are_judged_on_either_chain_s_report() {
        for chain in ["ethereum", "solana"] {
            let report = report(chain, 197);
            let judge = |text: &str| TxThreshold::parse(text).unwrap().judge(&report);
            assert!(judge("inclusion p99 < 3s").passed, "{chain}");
            assert!(!judge("inclusion max < 2s").passed, "{chain}");
            assert!(judge("included > 98%").passed, "{chain}: 197 of 200 is 98.5%");
            let breach = judge("included > 99%");
            assert!(!breach.passed);
            assert_eq!(breach.actual, "98.50%");
            assert!(judge("ack p99 < 50ms").passed);
            assert!(!judge("dropped < 0.5%").passed, "{chain}: 1 of 200 lost is 0.5%");
            assert!(judge("pending < 1").passed);
            assert!(judge("included-rate >= 99/s").passed);
            assert!(judge("landed > 98%").passed, "Solana's words mean the same on {chain}");
        }
    }

    #[test]
    fn a_latency_condition_on_a_run_that_included_nothing_fails_with_no_value() {
        let mut report = report("ethereum", 0);
        report["histograms"]["inclusion"] = json!(histogram(&[]));
        let verdict = TxThreshold::parse("inclusion p50 < 10s").unwrap().judge(&report);
        assert!(!verdict.passed);
        assert!(verdict.actual.starts_with("no value"), "{verdict:?}");
    }

    #[test]
    fn a_tx_condition_outside_the_vocabulary_is_refused_at_its_column() {
        let err = TxThreshold::parse("blocks p99 < 3").unwrap_err();
        assert_eq!(err.column(), 1, "{err}");
        assert!(TxThreshold::parse("included > 99ms").is_err());
    }

    #[test]
    fn both_chains_text_reports_list_refusals_by_reason_and_sum_their_own_landings() {
        for (chain, identity, interrupted) in [
            ("ethereum", "included + dropped + rejected + pending = 200 == sent 200", "not included within"),
            (
                "solana",
                "landed + failed + expired + rejected + pending = 200 == sent 200",
                "did not land within",
            ),
        ] {
            let mut report = report(chain, 197);
            report["identity_holds"] = json!(true);
            report["interrupted"] = json!(true);
            report["rejected_by_reason"] = json!({"nonce_too_low": 1, "rpc_-32602": 1});
            let text = render_tx_text(&report);
            assert!(text.contains(identity), "{text}");
            assert!(
                text.contains("rejected           2\n  nonce_too_low         1\n  rpc_-32602            1\n"),
                "{text}"
            );
            assert!(text.contains(interrupted), "{text}");
        }
    }

    #[test]
    fn reverted_reorged_out_and_the_causes_of_the_dropped_are_shown_and_reverted_is_in_the_sum() {
        let mut report = report("ethereum", 190);
        report["reverted"] = json!(7);
        report["dropped"] = json!(1);
        report["dropped_by_cause"] = json!({"replaced": 0, "gone": 1, "still_pooled": 0});
        report["reorged_out"] = json!(3);
        report["reorgs"] = json!(2);
        report["confirm_depth"] = json!(8);
        report["receipts_read"] = json!(197);
        report["identity_holds"] = json!(true);
        let text = render_tx_text(&report);
        assert!(
            text.contains("included + reverted + dropped + rejected + pending = 200 == sent 200"),
            "{text}"
        );
        assert!(text.contains("reverted           7"), "{text}");
        assert!(text.contains("ms; 1 gone)"), "{text}");
        assert!(text.contains("reorged out            3   (2 reorgs seen"), "{text}");
        let markdown = super::super::render_tx_markdown(&report);
        assert!(markdown.contains("reverted") && markdown.contains("1 gone"), "{markdown}");
    }

    #[test]
    fn a_solana_report_shows_its_dropped_by_cause_and_its_landings_found_by_lookup_in_every_format() {
        let mut report = report("solana", 190);
        report["failed"] = json!(1);
        report["expired"] = json!(4);
        report["dropped"] = json!(3);
        report["dropped_by_cause"] = json!({"gone": 2, "below_commitment": 0, "not_looked_up": 1});
        report["landed_unseen"] = json!(5);
        report["inclusion_timeout_ms"] = json!(30_000);
        report["identity_holds"] = json!(true);
        let text = render_tx_text(&report);
        assert!(
            text.contains("landed + failed + expired + dropped + rejected + pending = 200 == sent 200"),
            "{text}"
        );
        assert!(
            text.contains("dropped            3   (not landed within 30000 ms; 2 gone, 1 not looked up)"),
            "{text}"
        );
        assert!(text.contains("(5 found by lookup: no latency)"), "{text}");
        let markdown = super::super::render_tx_markdown(&report);
        assert!(
            markdown.contains("| dropped | 3 | not landed within 30000 ms; 2 gone, 1 not looked up |"),
            "{markdown}"
        );
        assert!(markdown.contains("5 found by lookup"), "{markdown}");
        let html = super::super::render_tx_html(&report);
        assert!(html.contains("2 gone, 1 not looked up"), "{html}");
        // The lost share of a Solana run counts the expired and the dropped.
        let verdict = TxThreshold::parse("dropped < 3.5%").unwrap().judge(&report);
        assert!(!verdict.passed, "7 of 200 lost is 3.5%: {verdict:?}");
    }

    #[test]
    fn the_gas_line_is_shown_when_the_report_has_the_figures() {
        let mut report = report("ethereum", 197);
        assert!(!render_tx_text(&report).contains("gas/s"), "older reports have no gas figures");
        report["included_gas"] = json!(197 * 21_000);
        report["gas_per_second"] = json!(99.0 * 21_000.0);
        report["blocks_with_ours"] = json!(40);
        report["share_of_block_ours"] = json!({"min": 0.125, "p50": 0.5, "max": 1.0});
        let text = render_tx_text(&report);
        assert!(
            text.contains("gas/s                  2079000   (4137000 gas included, by the gas limit)"),
            "{text}"
        );
        assert!(
            text.contains("share of block ours    min 12.5%  p50 50.0%  max 100.0%   (40 blocks)"),
            "{text}"
        );
    }

    #[test]
    fn waits_for_the_signer_are_said_with_a_hint_when_many_sends_left_late_and_the_helpers_ran_aside() {
        let mut report = report("solana", 190);
        let late = |waited: u64, over: u64, at_cap: u64, helpers: &str| {
            json!({"over_2ms": over, "at_connection_cap": at_cap, "connection_cap": 64,
                   "waited_for_signer": waited, "helper_threads": helpers})
        };
        report["late_sends"] = late(0, 50, 0, "aside");
        assert!(!render_tx_text(&report).contains("signer waits"), "never waited: no line");
        report["late_sends"] = late(1, 1, 0, "aside");
        let text = render_tx_text(&report);
        assert!(
            text.contains("signer waits           1 time a send found nothing signed ahead and waited; 1 sends left over 2 ms late with a connection free"),
            "{text}"
        );
        assert!(!text.contains("--helper-threads"), "1 of 200 is under 1%: no hint: {text}");
        report["late_sends"] = late(2, 40, 39, "aside");
        assert!(!render_tx_text(&report).contains("--helper-threads"), "late at the connection cap: no hint");
        report["late_sends"] = late(2, 40, 0, "aside");
        assert!(render_tx_text(&report).contains("run with --helper-threads ordinary"));
        report["late_sends"] = late(2, 40, 0, "ordinary");
        let text = render_tx_text(&report);
        assert!(text.contains("2 times a send found") && !text.contains("--helper-threads"), "{text}");
    }

    #[test]
    fn the_timeline_counts_per_second_and_holds_a_bounded_number_of_seconds() {
        let mut timeline = TxTimeline::new();
        timeline.sent(Duration::from_millis(100));
        timeline.sent(Duration::from_millis(900));
        timeline.sent(Duration::from_millis(1_100));
        timeline.included(Duration::from_millis(2_050));
        timeline.included(Duration::from_secs(10 * MAX_TIMELINE_SECONDS as u64));
        let seconds = timeline.seconds();
        assert_eq!(seconds.len(), MAX_TIMELINE_SECONDS);
        assert_eq!((seconds[0].sent, seconds[1].sent, seconds[2].included), (2, 1, 1));
        assert_eq!(seconds[MAX_TIMELINE_SECONDS - 1].included, 1);
    }
}
