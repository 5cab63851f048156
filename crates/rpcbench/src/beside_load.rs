//! Figures published beside a load into the live metrics store ([`crate::metrics`]), by
//! something other than the load's workers: each target's head lag (the head monitor of
//! `--heads`) and the transactions of `rpcbench tx` (sent, accepted, and each final outcome of
//! [`crate::outcome::TX_FINALS`]). The endpoint exports them and the dashboard shows them: one
//! source for both. A leaf: it names no driver.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

use crate::outcome::{TxFinalOutcome, REORGED_OUT_KEY, TX_FINALS};

/// One target's head as the head monitor last read it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HeadLagFigures {
    /// The target's name.
    pub name: String,
    /// Its latest head (block number or slot), when a poll has answered.
    pub head: Option<u64>,
    /// Blocks (slots) its latest head is behind the highest head seen across targets.
    pub lag: Option<u64>,
    /// The largest lag so far.
    pub lag_max: u64,
    /// Samples more than the stale bound behind, so far.
    pub stale: u64,
    /// Polls that answered.
    pub samples: u64,
    /// Polls that failed.
    pub failed: u64,
}

/// The transactions of `rpcbench tx` so far (Solana's landed and failed are the rows included
/// and reverted of the table of final outcomes).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionFigures {
    /// Transactions sent.
    pub sent: u64,
    /// Accepted by the node (a hash back).
    pub accepted: u64,
    /// Refused by the node, or never answered.
    pub rejected: u64,
    /// Found in a block (Ethereum: reverted ones too, until their receipt is read).
    pub included: u64,
    /// In a block, execution failed (Ethereum: receipt status 0; Solana: landed with an error).
    pub reverted: u64,
    /// Accepted, its blockhash expired before it landed (Solana).
    pub expired: u64,
    /// Accepted, not included within the inclusion timeout.
    pub dropped: u64,
    /// Accepted, neither included nor dropped yet.
    pub pending: u64,
    /// Inclusions a reorg took back (each time it happens).
    pub reorged_out: u64,
}

impl TransactionFigures {
    /// The count of one final outcome so far.
    pub fn final_count(&self, outcome: TxFinalOutcome) -> u64 {
        match outcome {
            TxFinalOutcome::Included => self.included,
            TxFinalOutcome::Reverted => self.reverted,
            TxFinalOutcome::Expired => self.expired,
            TxFinalOutcome::Dropped => self.dropped,
            TxFinalOutcome::Rejected => self.rejected,
            TxFinalOutcome::Pending => self.pending,
        }
    }
}

/// Encodes the head lags (a gauge per target) and the transactions (counters) for the
/// endpoint; nothing when neither was published.
pub(crate) fn encode_beside_load(
    encoder: &mut DescriptorEncoder,
    heads: &[HeadLagFigures],
    transactions: Option<&TransactionFigures>,
) -> Result<(), fmt::Error> {
    if !heads.is_empty() {
        let mut metric = encoder.encode_descriptor(
            "head_lag_blocks",
            "Blocks (slots) a target's latest head is behind the highest head seen across targets (--heads).",
            None,
            MetricType::Gauge,
        )?;
        for row in heads {
            if let Some(lag) = row.lag {
                let labels = [("target", row.name.as_str())];
                metric.encode_family(&labels)?.encode_gauge(&(lag as i64))?;
            }
        }
    }
    if let Some(tx) = transactions {
        encode_transactions(encoder, tx)?;
    }
    Ok(())
}

/// The transactions: one counter family of the final outcomes that only grow
/// (`tx_outcomes_total{outcome}`, a row of [`TX_FINALS`] each), a gauge of their own for the
/// others (`tx_pending`), the reorged-out counter, and the names exported before the family
/// (`tx_sent`, `tx_accepted`, `tx_rejected`, `tx_included`, `tx_dropped`), kept so that
/// dashboards built on them keep working.
fn encode_transactions(encoder: &mut DescriptorEncoder, tx: &TransactionFigures) -> Result<(), fmt::Error> {
    {
        let mut family = encoder.encode_descriptor(
            "tx_outcomes",
            "Transactions by final outcome so far (included, reverted, expired, dropped, rejected).",
            None,
            MetricType::Counter,
        )?;
        for spec in TX_FINALS.iter().filter(|spec| spec.only_grows) {
            let labels = [("outcome", spec.metric_label)];
            family
                .encode_family(&labels)?
                .encode_counter::<NoLabelSet, _, u64>(&tx.final_count(spec.outcome), None)?;
        }
    }
    for spec in TX_FINALS.iter().filter(|spec| !spec.only_grows) {
        let name = format!("tx_{}", spec.metric_label);
        let help = format!("Transactions {} now (a gauge: it goes down as they finish).", spec.metric_label);
        encoder
            .encode_descriptor(&name, &help, None, MetricType::Gauge)?
            .encode_gauge(&(tx.final_count(spec.outcome) as i64))?;
    }
    let reorged_out = format!("tx_{REORGED_OUT_KEY}");
    for (name, help, value) in [
        ("tx_sent", "Transactions sent.", tx.sent),
        ("tx_accepted", "Transactions the node accepted.", tx.accepted),
        (
            "tx_rejected",
            "Transactions the node refused or never answered (also tx_outcomes_total).",
            tx.rejected,
        ),
        ("tx_included", "Transactions found in a block (also tx_outcomes_total).", tx.included),
        (
            "tx_dropped",
            "Accepted transactions not included within the inclusion timeout (also tx_outcomes_total).",
            tx.dropped,
        ),
        (
            reorged_out.as_str(),
            "Inclusions a reorg took back (a transaction each time it happens).",
            tx.reorged_out,
        ),
    ] {
        encoder
            .encode_descriptor(name, help, None, MetricType::Counter)?
            .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
    }
    Ok(())
}
