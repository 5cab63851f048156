//! The saved reports of a sharded `rpcbench tx` run (`tx --shard I/N --save`) put together
//! into one report of the whole fleet: counts and per-second counts added, the histograms
//! (ack, inclusion, send lag, blocks or slots after the send) merged losslessly and their
//! figures computed again from the merged histograms, so that nothing is averaged.

use std::path::{Path, PathBuf};

use hdrhistogram::Histogram;
use serde_json::{json, Map, Value};

use super::tx::TxChainWords;
use super::tx_outcomes::report_adds_up;
use crate::outcome::{tx_finals_of, REORGED_OUT_KEY};
use crate::util::hdr_codec::{decode_histogram, encode_histogram};

/// Top-level counts added across shards besides the final outcomes (each row of
/// [`TX_FINALS`] is added under its chain's key) and [`REORGED_OUT_KEY`]; those a chain does
/// not have are left out.
const SUMMED_BESIDE_FINALS: &[&str] = &[
    "included_gas",
    "senders",
    "sent",
    "accepted",
    "reorgs",
    "receipts_read",
    "receipt_failures",
    "landed_unseen",
    "looked_up",
    "status_lookup_failures",
    "heads_seen",
    "block_fetch_failures",
    "blocks_unread_at_end",
    "subscriptions",
    "subscriptions_refused",
    "sent_unwatched",
    "watch_reconnects",
    "included_by_catch_up",
    "landed_by_catch_up",
    "status_poll_failures",
    "blockhash_refresh_failures",
];

/// Every count the merge adds: the final outcomes' keys of the report's chain, the reorged
/// out, and [`SUMMED_BESIDE_FINALS`].
fn summed_keys(words: TxChainWords) -> impl Iterator<Item = &'static str> {
    tx_finals_of(words.chain)
        .map(move |spec| words.final_key(spec.outcome))
        .chain([REORGED_OUT_KEY])
        .chain(SUMMED_BESIDE_FINALS.iter().copied())
}

/// Per-second rates added across shards (the shards send side by side).
const RATES: &[&str] = &["sent_per_second", "included_per_second", "landed_per_second", "gas_per_second"];

/// Figures of one shard's view of the blocks that no sum of the shards gives (shards share
/// blocks): left out of the merged report.
const PER_SHARD_ONLY: &[&str] = &["blocks_with_ours", "share_of_block_ours"];

/// Why the shards' reports cannot be merged.
#[derive(Debug)]
#[non_exhaustive]
pub enum TxMergeError {
    /// The reports are not of one chain.
    Chains(PathBuf, String, String),
    /// A report says no shard, or shards of a different split than the first.
    Shard(PathBuf, String),
    /// A shard is missing or given twice.
    Coverage(String),
    /// A report lacks one of the histograms a merge needs.
    Histogram(PathBuf, &'static str),
}

impl std::fmt::Display for TxMergeError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TxMergeError::Chains(path, first, this) => {
                write!(f, "{}: a {this} report, the first is {first}", path.display())
            }
            TxMergeError::Shard(path, why) => write!(f, "{}: {why}", path.display()),
            TxMergeError::Coverage(why) => write!(f, "{why}"),
            TxMergeError::Histogram(path, which) => {
                write!(f, "{}: no {which} histogram to merge (saved by an older build?)", path.display())
            }
        }
    }
}

impl std::error::Error for TxMergeError {}

fn shard_of(path: &Path, report: &Value) -> Result<(u64, u64), TxMergeError> {
    let shard = &report["shard"];
    match (shard["index"].as_u64(), shard["count"].as_u64()) {
        (Some(index), Some(count)) if count >= 1 && (1..=count).contains(&index) => Ok((index, count)),
        _ => Err(TxMergeError::Shard(path.to_path_buf(), "no shard I/N in the report".into())),
    }
}

fn merged_histogram(parts: &[(PathBuf, Value)], which: &'static str) -> Result<Histogram<u64>, TxMergeError> {
    let mut sum: Option<Histogram<u64>> = None;
    for (path, report) in parts {
        let text = report["histograms"][which]
            .as_str()
            .ok_or_else(|| TxMergeError::Histogram(path.clone(), which))?;
        let histogram = decode_histogram(text).map_err(|_| TxMergeError::Histogram(path.clone(), which))?;
        match &mut sum {
            Some(sum) => sum.add(&histogram).map_err(|_| TxMergeError::Histogram(path.clone(), which))?,
            None => sum = Some(histogram),
        }
    }
    sum.ok_or_else(|| TxMergeError::Coverage("no report to merge".into()))
}

/// A percentile table in ms (`keys` of p50, p90, p99, max), nulls when empty.
fn ms_table(histogram: &Histogram<u64>, keys: &[&str]) -> Value {
    table(histogram, keys, |value| json!(value as f64 / 1000.0))
}

fn table(histogram: &Histogram<u64>, keys: &[&str], shown: impl Fn(u64) -> Value) -> Value {
    let mut out = Map::new();
    for key in keys {
        let value = if histogram.is_empty() {
            Value::Null
        } else if *key == "max" {
            shown(histogram.max())
        } else {
            let quantile = key.trim_start_matches('p').parse::<f64>().unwrap_or(99.0) / 100.0;
            shown(histogram.value_at_quantile(quantile))
        };
        out.insert(key.to_string(), value);
    }
    Value::Object(out)
}

/// Whose receipts the shards read (`receipts_checked`: "all", "none", "a 10% sample"): what
/// they all say when they agree; otherwise `mixed: ` and each shard's in shard order, so a
/// merge of differently sampled shards never claims "all". A report without the field read
/// every receipt (written before `--receipts`); `None` when no shard has it.
fn merged_receipts_checked(parts: &[(PathBuf, Value)]) -> Option<String> {
    if parts.iter().all(|(_, report)| !report["receipts_checked"].is_string()) {
        return None;
    }
    let mut by_shard: Vec<(u64, &str)> = parts
        .iter()
        .map(|(_, report)| {
            let index = report["shard"]["index"].as_u64().unwrap_or(0);
            (index, report["receipts_checked"].as_str().unwrap_or("all"))
        })
        .collect();
    by_shard.sort_unstable();
    let first = by_shard[0].1;
    if by_shard.iter().all(|(_, checked)| *checked == first) {
        return Some(first.to_string());
    }
    let each: Vec<String> =
        by_shard.iter().map(|(index, checked)| format!("shard {index} {checked}")).collect();
    Some(format!("mixed: {}", each.join(", ")))
}

/// How many shards' watch ends a merged `watch_ended` names one by one; the rest are counted.
const WATCH_ENDS_NAMED: usize = 4;

/// Why the shards' landing watches ended before their runs stopped them, in shard order:
/// `shard 2: why; shard 3: why`, the first [`WATCH_ENDS_NAMED`] by name and how many more
/// after them; `None` when every shard's watch stayed open (a merge of shards one of which
/// lost its watch must not say the watch stayed open because the first shard's did).
fn merged_watch_ended(parts: &[(PathBuf, Value)]) -> Option<String> {
    let mut ended: Vec<(u64, &str)> = parts
        .iter()
        .filter_map(|(_, report)| {
            let why = report["watch_ended"].as_str()?;
            Some((report["shard"]["index"].as_u64().unwrap_or(0), why))
        })
        .collect();
    if ended.is_empty() {
        return None;
    }
    ended.sort_unstable_by_key(|(index, _)| *index);
    let named: Vec<String> =
        ended.iter().take(WATCH_ENDS_NAMED).map(|(index, why)| format!("shard {index}: {why}")).collect();
    let mut said = named.join("; ");
    if let Some(more) = ended.len().checked_sub(WATCH_ENDS_NAMED).filter(|more| *more > 0) {
        said.push_str(&format!("; and {more} more shards' watches ended"));
    }
    Some(said)
}

/// Merges the reports of every shard of one run (each `1/N` .. `N/N` exactly once) into the
/// fleet's report, marked as shard 1 of 1 with the shards it came from.
pub fn merge_tx_reports(parts: &[(PathBuf, Value)]) -> Result<Value, TxMergeError> {
    let (first_path, first) =
        parts.first().ok_or_else(|| TxMergeError::Coverage("no report to merge".into()))?;
    let words = TxChainWords::of(first);
    let (_, count) = shard_of(first_path, first)?;
    let mut seen = vec![false; count as usize];
    for (path, report) in parts {
        let chain = TxChainWords::of(report).chain;
        if chain != words.chain {
            return Err(TxMergeError::Chains(path.clone(), words.chain.into(), chain.into()));
        }
        let (index, this_count) = shard_of(path, report)?;
        if this_count != count {
            return Err(TxMergeError::Shard(
                path.clone(),
                format!("shard {index}/{this_count}, the first report is of {count} shards"),
            ));
        }
        if std::mem::replace(&mut seen[index as usize - 1], true) {
            return Err(TxMergeError::Coverage(format!("shard {index}/{count} is given twice")));
        }
    }
    let missing: Vec<String> = seen
        .iter()
        .enumerate()
        .filter(|(_, seen)| !**seen)
        .map(|(i, _)| format!("{}/{count}", i + 1))
        .collect();
    if !missing.is_empty() {
        return Err(TxMergeError::Coverage(format!("shard(s) {} missing", missing.join(", "))));
    }
    let mut merged = first.clone();
    let sum = |key: &str| parts.iter().map(|(_, report)| report[key].as_u64().unwrap_or(0)).sum::<u64>();
    // A count any shard has (a shard of a newer build may have a row the first lacks).
    for key in summed_keys(words).filter(|key| parts.iter().any(|(_, report)| report[*key].is_u64())) {
        merged[key] = json!(sum(key));
    }
    for key in RATES.iter().filter(|key| first[**key].is_number()) {
        let rate: f64 = parts.iter().map(|(_, report)| report[*key].as_f64().unwrap_or(0.0)).sum();
        merged[*key] = json!(rate);
    }
    if let Some(merged) = merged.as_object_mut() {
        for key in PER_SHARD_ONLY {
            merged.remove(*key);
        }
    }
    let max = |key: &str| parts.iter().filter_map(|(_, report)| report[key].as_f64()).fold(0.0, f64::max);
    merged["send_seconds"] = json!(max("send_seconds"));
    merged["oldest_pending_ms"] = json!(max("oldest_pending_ms") as u64);
    merged["interrupted"] = json!(parts.iter().any(|(_, report)| report["interrupted"] == true));
    // A shard whose watch ended or gave up says so in the merge too.
    if let Some((_, ended)) = parts.iter().find(|(_, report)| report["watch_ended"].is_string()) {
        merged["watch_ended"] = ended["watch_ended"].clone();
    }
    if parts.iter().any(|(_, report)| report["watch_gave_up"] == true) {
        merged["watch_gave_up"] = json!(true);
    }
    // Each shard's own verdict, and the identity over the merged counts (a shard that added up
    // but is summed without one of its rows would not).
    merged["identity_holds"] =
        json!(parts.iter().all(|(_, report)| report["identity_holds"] == true) && report_adds_up(&merged));
    let mut reasons: Map<String, Value> = Map::new();
    for (_, report) in parts {
        for (reason, n) in report["rejected_by_reason"].as_object().into_iter().flatten() {
            let before = reasons.get(reason).and_then(Value::as_u64).unwrap_or(0);
            reasons.insert(reason.clone(), json!(before + n.as_u64().unwrap_or(0)));
        }
    }
    merged["rejected_by_reason"] = Value::Object(reasons);
    if let Some(ended) = merged_watch_ended(parts) {
        merged["watch_ended"] = json!(ended);
    }
    if let Some(checked) = merged_receipts_checked(parts) {
        merged["receipts_checked"] = json!(checked);
    }
    if first["dropped_by_cause"].is_object() {
        let mut causes: Map<String, Value> = Map::new();
        for (_, report) in parts {
            for (cause, n) in report["dropped_by_cause"].as_object().into_iter().flatten() {
                let before = causes.get(cause).and_then(Value::as_u64).unwrap_or(0);
                causes.insert(cause.clone(), json!(before + n.as_u64().unwrap_or(0)));
            }
        }
        merged["dropped_by_cause"] = Value::Object(causes);
    }
    if first["nonce_resyncs"].is_object() {
        let mut resyncs = Map::new();
        for key in first["nonce_resyncs"].as_object().into_iter().flatten().map(|(key, _)| key) {
            let total: u64 =
                parts.iter().map(|(_, report)| report["nonce_resyncs"][key].as_u64().unwrap_or(0)).sum();
            resyncs.insert(key.clone(), json!(total));
        }
        merged["nonce_resyncs"] = Value::Object(resyncs);
    }
    let mut seconds: Vec<(u64, u64)> = Vec::new();
    for (_, report) in parts {
        for (i, second) in report["per_second"].as_array().into_iter().flatten().enumerate() {
            if seconds.len() <= i {
                seconds.resize(i + 1, (0, 0));
            }
            seconds[i].0 += second["sent"].as_u64().unwrap_or(0);
            seconds[i].1 += second["included"].as_u64().unwrap_or(0);
        }
    }
    merged["per_second"] = json!(seconds
        .iter()
        .enumerate()
        .map(|(i, (sent, included))| json!({"second": i, "sent": sent, "included": included}))
        .collect::<Vec<_>>());
    let ack = merged_histogram(parts, "ack")?;
    let inclusion = merged_histogram(parts, "inclusion")?;
    let send_lag = merged_histogram(parts, "send_lag")?;
    let after = merged_histogram(parts, "after")?;
    let full = ["p50", "p90", "p99", "max"];
    merged["send_to_ack_ms"] = ms_table(&ack, &full);
    merged[words.latency] = ms_table(&inclusion, &full);
    merged["send_lag_ms"] = ms_table(&send_lag, &["p50", "p99", "max"]);
    let after_key = if words.chain == "solana" { "slots_after_send" } else { "blocks_after_head_at_send" };
    merged[after_key] = table(&after, &["p50", "p99", "max"], |value| json!(value));
    merged["histograms"] = json!({
        "ack": encode_histogram(&ack),
        "inclusion": encode_histogram(&inclusion),
        "send_lag": encode_histogram(&send_lag),
        "after": encode_histogram(&after),
    });
    merged["shard"] = json!({"index": 1, "count": 1, "merged_from": count});
    // The shards' verdicts judged a part; the merge judges the whole again when asked.
    merged["thresholds"] = json!([]);
    Ok(merged)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn shard(index: u64, count: u64, sent: u64) -> (PathBuf, Value) {
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for value in 1..=sent {
            histogram.record(value * 1000).unwrap();
        }
        let text = encode_histogram(&histogram);
        let report = json!({
            "tx_report_version": 1, "chain": "ethereum", "sent": sent, "included": sent, "dropped": 0,
            "rejected": 0, "pending": 0, "accepted": sent, "senders": 2, "identity_holds": true,
            "rejected_by_reason": {}, "per_second": [{"second": 0, "sent": sent, "included": sent}],
            "shard": {"index": index, "count": count},
            "histograms": {"ack": text, "inclusion": text, "send_lag": text, "after": text},
        });
        (PathBuf::from(format!("shard{index}.json")), report)
    }

    #[test]
    fn shards_merge_into_sums_and_percentiles_of_the_merged_histograms() {
        let merged = merge_tx_reports(&[shard(2, 2, 100), shard(1, 2, 300)]).unwrap();
        assert_eq!(merged["sent"], 400);
        assert_eq!(merged["senders"], 4);
        assert_eq!(merged["per_second"][0]["included"], 400);
        // 1..=100 ms and 1..=300 ms together: 200 values up to 100 ms, so the median is
        // 100 ms (the mean of the shards' medians would say 100.5; their max, 150).
        let p50 = merged["send_to_included_ms"]["p50"].as_f64().unwrap();
        assert!((99.5..=100.5).contains(&p50), "{p50}");
        let p99 = merged["send_to_included_ms"]["p99"].as_f64().unwrap();
        assert!((295.0..=298.0).contains(&p99), "the 396th of 400: {p99}");
        assert_eq!(merged["shard"]["merged_from"], 2);
    }

    #[test]
    fn shards_gas_is_summed_and_their_views_of_shared_blocks_are_left_out() {
        let with_gas = |(path, mut report): (PathBuf, Value), gas: u64| {
            report["included_gas"] = json!(gas);
            report["gas_per_second"] = json!(gas as f64 / 2.0);
            report["blocks_with_ours"] = json!(3);
            report["share_of_block_ours"] = json!({"min": 0.5, "p50": 0.5, "max": 0.5});
            (path, report)
        };
        let merged =
            merge_tx_reports(&[with_gas(shard(1, 2, 10), 210_000), with_gas(shard(2, 2, 10), 420_000)])
                .unwrap();
        assert_eq!(merged["included_gas"], 630_000);
        assert_eq!(merged["gas_per_second"], 315_000.0);
        assert!(
            merged.get("share_of_block_ours").is_none() && merged.get("blocks_with_ours").is_none(),
            "{merged}"
        );
    }

    #[test]
    fn a_merged_tx_report_keeps_the_identity_over_every_final_outcome() {
        use crate::report::tx::{ETHEREUM_WORDS, SOLANA_WORDS};
        for words in [ETHEREUM_WORDS, SOLANA_WORDS] {
            // Each shard has a count in every row of its chain (1, 2, 3, ...: their sum sent).
            let rows = tx_finals_of(words.chain).count() as u64;
            let sent = rows * (rows + 1) / 2;
            let with_every_row = |(path, mut report): (PathBuf, Value)| {
                report["chain"] = json!(words.chain);
                for (index, spec) in tx_finals_of(words.chain).enumerate() {
                    report[words.final_key(spec.outcome)] = json!(index as u64 + 1);
                }
                report["sent"] = json!(sent);
                (path, report)
            };
            let parts = [with_every_row(shard(1, 2, sent)), with_every_row(shard(2, 2, sent))];
            let merged = merge_tx_reports(&parts).unwrap();
            for (index, spec) in tx_finals_of(words.chain).enumerate() {
                assert_eq!(merged[words.final_key(spec.outcome)], 2 * (index as u64 + 1), "{spec:?}");
            }
            assert_eq!(merged["sent"], 2 * sent);
            assert_eq!(merged["identity_holds"], true, "{} {merged}", words.chain);
            // A shard that says it adds up but does not: the merge's own count says so.
            let mut broken = parts.clone();
            broken[1].1["sent"] = json!(sent + 1);
            assert_eq!(merge_tx_reports(&broken).unwrap()["identity_holds"], false);
        }
        // A row the first shard's (older) report lacks is summed from the shards that have it.
        let mut older = shard(1, 2, 10);
        older.1.as_object_mut().unwrap().remove("reverted");
        let mut newer = shard(2, 2, 10);
        newer.1["included"] = json!(8);
        newer.1["reverted"] = json!(2);
        let merged = merge_tx_reports(&[older, newer]).unwrap();
        assert_eq!((merged["included"].as_u64(), merged["reverted"].as_u64()), (Some(18), Some(2)));
        assert_eq!(merged["identity_holds"], true, "{merged}");
    }

    #[test]
    fn a_missing_or_repeated_shard_is_refused_by_name() {
        let err = merge_tx_reports(&[shard(1, 3, 10), shard(3, 3, 10)]).unwrap_err();
        assert!(err.to_string().contains("2/3 missing"), "{err}");
        let err = merge_tx_reports(&[shard(1, 2, 10), shard(1, 2, 10)]).unwrap_err();
        assert!(err.to_string().contains("1/2 is given twice"), "{err}");
        let err = merge_tx_reports(&[shard(1, 2, 10), shard(2, 3, 10)]).unwrap_err();
        assert!(err.to_string().contains("of 2 shards"), "{err}");
    }

    #[test]
    fn a_merged_report_says_every_shards_watch_end_and_sums_the_unwatched() {
        let watched = |(path, mut report): (PathBuf, Value), ended: Option<&str>, unwatched: u64| {
            report["chain"] = json!("solana");
            report["watch_ended"] = json!(ended);
            report["sent_unwatched"] = json!(unwatched);
            (path, report)
        };
        // The first shard's watch stayed open; the second's and third's ended.
        let merged = merge_tx_reports(&[
            watched(shard(3, 3, 10), Some("close 1001 going away"), 4),
            watched(shard(1, 3, 10), None, 0),
            watched(shard(2, 3, 10), Some("connection reset"), 7),
        ])
        .unwrap();
        assert_eq!(merged["watch_ended"], "shard 2: connection reset; shard 3: close 1001 going away");
        assert_eq!(merged["sent_unwatched"], 11);
        // Every watch open: null as each shard said.
        let merged =
            merge_tx_reports(&[watched(shard(1, 2, 10), None, 0), watched(shard(2, 2, 10), None, 0)])
                .unwrap();
        assert_eq!(
            (merged["watch_ended"].clone(), merged["sent_unwatched"].as_u64()),
            (Value::Null, Some(0))
        );
        // Many ended: the first few by name, the rest counted.
        let parts: Vec<_> = (1..=7).map(|index| watched(shard(index, 7, 10), Some("eof"), 1)).collect();
        let merged = merge_tx_reports(&parts).unwrap();
        let said = merged["watch_ended"].as_str().unwrap();
        assert!(said.starts_with("shard 1: eof; shard 2: eof; shard 3: eof; shard 4: eof;"), "{said}");
        assert!(said.ends_with("and 3 more shards' watches ended"), "{said}");
        assert_eq!(merged["sent_unwatched"], 7);
    }

    #[test]
    fn a_merged_tx_report_keeps_what_receipts_were_checked() {
        let checked = |(path, mut report): (PathBuf, Value), checked: Option<&str>| {
            if let Some(checked) = checked {
                report["receipts_checked"] = json!(checked);
            }
            (path, report)
        };
        let merge = |first: Option<&str>, second: Option<&str>| {
            let merged =
                merge_tx_reports(&[checked(shard(2, 2, 10), second), checked(shard(1, 2, 10), first)])
                    .unwrap();
            merged["receipts_checked"].clone()
        };
        // Shards that agree: what they say.
        assert_eq!(merge(Some("all"), Some("all")), "all");
        assert_eq!(merge(Some("none"), Some("none")), "none");
        assert_eq!(merge(Some("a 10% sample"), Some("a 10% sample")), "a 10% sample");
        // Shards sampled differently: said so, shard by shard, never "all".
        assert_eq!(merge(Some("all"), Some("a 10% sample")), "mixed: shard 1 all, shard 2 a 10% sample");
        assert_eq!(merge(Some("none"), Some("all")), "mixed: shard 1 none, shard 2 all");
        // A shard written before --receipts read every receipt.
        assert_eq!(merge(None, Some("a 1% sample")), "mixed: shard 1 all, shard 2 a 1% sample");
        assert_eq!(merge(None, None), Value::Null);
        // The text report labels a reverted count from mixed samples as not from every receipt.
        let mixed = merge_tx_reports(&[
            checked(shard(1, 2, 10), Some("all")),
            checked(shard(2, 2, 10), Some("none")),
        ])
        .unwrap();
        assert!(crate::report::tx::sampled_note(&mixed).contains("mixed: shard 1 all, shard 2 none"));
    }
}
