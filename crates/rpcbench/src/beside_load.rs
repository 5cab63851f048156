//! Figures published beside a load into the live metrics store ([`crate::metrics`]), by
//! something other than the load's workers: each target's head lag (the head monitor of
//! `--heads`) and the transactions of `rpcbench tx` (sent, accepted, included). The endpoint
//! exports them and the dashboard shows them: one source for both. A leaf: it names no
//! driver.

use std::fmt;

use prometheus_client::encoding::{DescriptorEncoder, NoLabelSet};
use prometheus_client::metrics::MetricType;

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

/// The transactions of `rpcbench tx` so far.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct TransactionFigures {
    /// Transactions sent.
    pub sent: u64,
    /// Accepted by the node (a hash back).
    pub accepted: u64,
    /// Refused by the node, or never answered.
    pub rejected: u64,
    /// Found in a block.
    pub included: u64,
    /// Accepted, not included within the inclusion timeout.
    pub dropped: u64,
    /// Accepted, neither included nor dropped yet.
    pub pending: u64,
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
        for (name, help, value) in [
            ("tx_sent", "Transactions sent.", tx.sent),
            ("tx_accepted", "Transactions the node accepted.", tx.accepted),
            ("tx_rejected", "Transactions the node refused or never answered.", tx.rejected),
            ("tx_included", "Transactions found in a block.", tx.included),
            ("tx_dropped", "Accepted transactions not included within the inclusion timeout.", tx.dropped),
        ] {
            encoder
                .encode_descriptor(name, help, None, MetricType::Counter)?
                .encode_counter::<NoLabelSet, _, u64>(&value, None)?;
        }
        encoder
            .encode_descriptor(
                "tx_pending",
                "Accepted transactions not yet included nor dropped.",
                None,
                MetricType::Gauge,
            )?
            .encode_gauge(&(tx.pending as i64))?;
    }
    Ok(())
}
