//! The outcome part of a tx report, for either chain, built from the one table of final
//! outcomes ([`crate::outcome::TX_FINALS`]): the sent and accepted counts, one count per final
//! outcome under the chain's key, the refusals by reason, the dropped by cause (the chain's
//! rows of [`crate::outcome::DROP_CAUSES`]), the reorged-out count where the chain has reorgs,
//! and whether the identity holds. What reads a report back (the renderers, a merge) finds the
//! counts with [`report_finals`] and judges the identity with [`report_adds_up`].

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::{json, Map, Value};

use super::tx::{count, TxChainWords};
use crate::outcome::{drop_causes_of, tx_finals_of, DropCause, TxFinalCounts, REORGED_OUT_KEY};

/// Reorgs seen while watching for inclusions (Ethereum).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct TxReorgFigures {
    /// Inclusions a reorg took back (a transaction once each time).
    pub reorged_out: u64,
    /// Reorgs seen.
    pub reorgs: u64,
}

/// What a finished run's transactions came to: the figures of the report's outcome part.
#[derive(Debug, Clone)]
pub struct TxOutcomeFigures<'a> {
    /// Transactions sent.
    pub sent: u64,
    /// Sends the node accepted.
    pub accepted: u64,
    /// Each final outcome's count.
    pub finals: TxFinalCounts,
    /// The refusals by reason (`nonce_too_low`, `rpc_-32000`).
    pub rejected_by_reason: &'a BTreeMap<String, u64>,
    /// The oldest pending transaction's age at the end.
    pub oldest_pending: Duration,
    /// The dropped by what the lookup found, for a chain that looks them up (every cause of
    /// the chain is written, 0 when none was found); `None` writes no `dropped_by_cause`.
    pub dropped_by: Option<&'a BTreeMap<DropCause, u64>>,
    /// Reorgs, for a chain that watches for them; `None` writes none.
    pub reorgs: Option<TxReorgFigures>,
}

impl TxOutcomeFigures<'_> {
    /// Whether every transaction sent has exactly one final outcome.
    pub fn adds_up(&self) -> bool {
        self.finals.adds_up(self.sent)
    }

    /// Writes the outcome part into `report` under the keys of the chain `words` names.
    pub fn write_into(&self, words: TxChainWords, report: &mut Value) {
        report["sent"] = json!(self.sent);
        report["accepted"] = json!(self.accepted);
        for (spec, n) in self.finals.rows().filter(|(spec, _)| spec.chains.contains(&words.chain)) {
            report[words.final_key(spec.outcome)] = json!(n);
        }
        report["rejected_by_reason"] = json!(self.rejected_by_reason);
        report["oldest_pending_ms"] = json!(self.oldest_pending.as_millis() as u64);
        report["identity_holds"] = json!(self.adds_up());
        if let Some(dropped_by) = self.dropped_by {
            let causes: Map<String, Value> = drop_causes_of(words.chain)
                .map(|spec| (spec.key.to_string(), json!(dropped_by.get(&spec.cause).copied().unwrap_or(0))))
                .collect();
            report["dropped_by_cause"] = Value::Object(causes);
        }
        if let Some(reorgs) = self.reorgs {
            report[REORGED_OUT_KEY] = json!(reorgs.reorged_out);
            report["reorgs"] = json!(reorgs.reorgs);
        }
    }
}

/// The counts of the final outcomes a report holds (a row an older report lacks reads 0).
pub fn report_finals(report: &Value) -> TxFinalCounts {
    let words = TxChainWords::of(report);
    let mut finals = TxFinalCounts::new();
    for spec in tx_finals_of(words.chain) {
        finals.set(spec.outcome, count(report, words.final_key(spec.outcome)));
    }
    finals
}

/// Whether the report's final outcomes add up to its sent count.
pub fn report_adds_up(report: &Value) -> bool {
    report_finals(report).adds_up(count(report, "sent"))
}

/// The identity in a chain's words, for the message of a run whose outcomes do not add up:
/// `included + reverted + dropped + rejected + pending does not equal sent`.
pub fn identity_broken_text(words: TxChainWords) -> String {
    let terms: Vec<&str> = tx_finals_of(words.chain)
        .filter(|spec| spec.in_identity)
        .map(|spec| words.final_key(spec.outcome))
        .collect();
    format!("{} does not equal sent", terms.join(" + "))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::outcome::{TxFinalOutcome, TX_FINALS};
    use crate::report::tx::{ETHEREUM_WORDS, SOLANA_WORDS};

    #[test]
    fn both_chains_write_every_row_under_their_own_keys_and_read_them_back() {
        let reasons = BTreeMap::from([("nonce_too_low".to_string(), 2)]);
        for (words, keys, expired) in [
            (ETHEREUM_WORDS, &["included", "reverted", "dropped", "rejected", "pending"][..], 0),
            (SOLANA_WORDS, &["landed", "failed", "expired", "dropped", "rejected", "pending"][..], 6),
        ] {
            let mut finals = TxFinalCounts::new();
            finals
                .set(TxFinalOutcome::Included, 5)
                .set(TxFinalOutcome::Reverted, 4)
                .set(TxFinalOutcome::Expired, expired)
                .set(TxFinalOutcome::Dropped, 3)
                .set(TxFinalOutcome::Rejected, 2)
                .set(TxFinalOutcome::Pending, 1);
            let figures = TxOutcomeFigures {
                sent: 15 + expired,
                accepted: 13 + expired,
                finals,
                rejected_by_reason: &reasons,
                oldest_pending: Duration::from_millis(7),
                dropped_by: None,
                reorgs: None,
            };
            let mut report = json!({"chain": words.chain});
            figures.write_into(words, &mut report);
            let written: Vec<u64> = keys.iter().map(|key| report[*key].as_u64().unwrap()).collect();
            let expected: Vec<u64> =
                if expired > 0 { vec![5, 4, expired, 3, 2, 1] } else { vec![5, 4, 3, 2, 1] };
            assert_eq!(written, expected, "{report}");
            assert!(words.chain == "solana" || report.get("expired").is_none(), "{report}");
            assert_eq!(report["identity_holds"], true);
            assert_eq!(report_finals(&report), finals);
            assert!(report_adds_up(&report));
            assert!(report.get("dropped_by_cause").is_none() && report.get("reorged_out").is_none());
            assert_eq!(identity_broken_text(words), format!("{} does not equal sent", keys.join(" + ")));
        }
    }

    /// A histogram text a merge can read.
    fn encoded_histogram() -> String {
        let mut histogram = hdrhistogram::Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        histogram.record(1_000).unwrap();
        crate::util::hdr_codec::encode_histogram(&histogram)
    }

    #[test]
    fn every_final_outcome_of_a_transaction_is_a_row_of_one_table_read_by_report_merge_and_metrics() {
        // A distinct count per row (10, 20, 30, ...), so a row read under another's key shows;
        // the rows of one chain, or every row.
        let finals_of = |chain: Option<&str>| {
            let mut finals = TxFinalCounts::new();
            for (index, spec) in TX_FINALS.iter().enumerate() {
                if chain.is_none_or(|chain| spec.chains.contains(&chain)) {
                    finals.set(spec.outcome, 10 * (index as u64 + 1));
                }
            }
            finals
        };
        let reasons = BTreeMap::new();
        let dropped_by = BTreeMap::from([(DropCause::Gone, finals_of(None).get(TxFinalOutcome::Dropped))]);
        let figures_of = |finals: TxFinalCounts| TxOutcomeFigures {
            sent: finals.identity_sum(),
            accepted: finals.identity_sum() - finals.get(TxFinalOutcome::Rejected),
            finals,
            rejected_by_reason: &reasons,
            oldest_pending: Duration::ZERO,
            dropped_by: Some(&dropped_by),
            reorgs: Some(TxReorgFigures { reorged_out: 7, reorgs: 2 }),
        };
        for words in [ETHEREUM_WORDS, SOLANA_WORDS] {
            let finals = finals_of(Some(words.chain));
            let figures = figures_of(finals);
            let sent = figures.sent;
            let histogram = encoded_histogram();
            let shard = |index: u64| {
                let mut report = json!({
                    "tx_report_version": crate::report::tx::TX_REPORT_VERSION,
                    "chain": words.chain,
                    "shard": {"index": index, "count": 2},
                    "histograms": {"ack": histogram, "inclusion": histogram, "send_lag": histogram, "after": histogram},
                });
                figures.write_into(words, &mut report);
                (std::path::PathBuf::from(format!("shard{index}.json")), report)
            };
            let (_, report) = shard(1);
            let merged = crate::report::tx_merge::merge_tx_reports(&[shard(1), shard(2)]).unwrap();
            let text = crate::report::tx::render_tx_text(&report);
            let markdown = crate::report::render_tx_markdown(&report);
            let mut identity_terms = Vec::new();
            for (spec, n) in finals.rows().filter(|(spec, _)| spec.chains.contains(&words.chain)) {
                let key = words.final_key(spec.outcome);
                assert_eq!(report[key], n, "{} {key}: the report's key", words.chain);
                assert_eq!(merged[key], 2 * n, "{} {key}: the merge's sum", words.chain);
                assert!(
                    text.contains(&format!("\n{key:<12}{n:>8}")),
                    "{} {key}: the text row\n{text}",
                    words.chain
                );
                assert!(
                    markdown.contains(&format!("| {key} | {n} |")),
                    "{key}: the Markdown row\n{markdown}"
                );
                identity_terms.push(key);
            }
            assert!(
                text.contains(&format!("{} = {sent} == sent {sent}", identity_terms.join(" + "))),
                "{text}"
            );
            assert_eq!(
                (report["identity_holds"].as_bool(), merged["identity_holds"].as_bool()),
                (Some(true), Some(true))
            );
            assert_eq!(merged[REORGED_OUT_KEY], 14, "{merged}");
        }
        let finals = finals_of(None);
        let figures = figures_of(finals);
        let sent = figures.sent;
        let ethereum = json!({"chain": "ethereum"});
        let mut written = ethereum.clone();
        figures.write_into(ETHEREUM_WORDS, &mut written);
        assert_eq!(written["dropped_by_cause"]["gone"], finals.get(TxFinalOutcome::Dropped));
        assert_eq!(
            written["dropped_by_cause"].as_object().map(Map::len),
            Some(drop_causes_of("ethereum").count())
        );

        let live = crate::metrics::TransactionFigures {
            sent,
            accepted: figures.accepted,
            included: finals.get(TxFinalOutcome::Included),
            reverted: finals.get(TxFinalOutcome::Reverted),
            expired: finals.get(TxFinalOutcome::Expired),
            dropped: finals.get(TxFinalOutcome::Dropped),
            rejected: finals.get(TxFinalOutcome::Rejected),
            pending: finals.get(TxFinalOutcome::Pending),
            reorged_out: 7,
        };
        let metrics = crate::metrics::render(&crate::metrics::Snapshot {
            transactions: Some(live),
            ..Default::default()
        });
        for (spec, n) in finals.rows() {
            let line = if spec.only_grows {
                format!("rpcbench_tx_outcomes_total{{outcome=\"{}\"}} {n}\n", spec.metric_label)
            } else {
                format!("rpcbench_tx_{} {n}\n", spec.metric_label)
            };
            assert!(metrics.contains(&line), "{line}in\n{metrics}");
        }
        assert!(metrics.contains("rpcbench_tx_reorged_out_total 7\n"), "{metrics}");
        // The names exported before the family are still there.
        for name in [
            "tx_sent_total",
            "tx_accepted_total",
            "tx_rejected_total",
            "tx_included_total",
            "tx_dropped_total",
        ] {
            assert!(metrics.contains(&format!("rpcbench_{name} ")), "{name}\n{metrics}");
        }
    }
}
