//! A sent transaction's *final* outcome, as rows of one table beside [`super::CLASSES`]:
//! included, reverted, dropped, rejected, pending at the end. The send's own outcome (accepted,
//! or refused by reason) is a row of `CLASSES`; what became of the transaction afterwards is a
//! row of [`TX_FINALS`], and every place that lists the final outcomes reads it: the tx
//! report's JSON keys (each chain's), the identity that they add up to the sent count
//! ([`TxFinalCounts::adds_up`]), the sums of a merge of shards, the text, Markdown and HTML
//! rows (in the table's order) and the live metrics' `tx_outcomes_total{outcome}`.
//!
//! Why a dropped transaction was not included, as the lookup after the timeout found it, is a
//! second small table, [`DROP_CAUSES`]: each cause's key, label and the chains whose reports
//! list it. A chain's new causes are new [`DropCause`] variants with a row each (in the
//! enum's order) naming that chain.

/// What became of a sent transaction, finally. Every transaction sent has exactly one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum TxFinalOutcome {
    /// In a block (Solana: landed) and executed successfully (or its receipt was not read).
    Included,
    /// In a block, but its execution failed (Ethereum: receipt status 0; Solana: landed with
    /// an error). It paid its fee.
    Reverted,
    /// Accepted, its blockhash no longer valid and never landed (Solana only).
    Expired,
    /// Accepted, but never included in time (within the inclusion timeout), and a lookup did
    /// not find it included.
    Dropped,
    /// Refused by the node, or never answered.
    Rejected,
    /// Accepted, neither included nor dropped when the run ended.
    Pending,
}

impl TxFinalOutcome {
    /// The outcome's row of [`TX_FINALS`].
    pub const fn spec(self) -> &'static TxFinalSpec {
        // TX_FINALS lists the outcomes in the enum's order (a test checks it).
        &TX_FINALS[self as usize]
    }
}

/// What every part of rpcbench knows about one final outcome of a transaction.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct TxFinalSpec {
    /// The outcome.
    pub outcome: TxFinalOutcome,
    /// Its count's key in an Ethereum tx report, and its name in the Ethereum text report.
    pub ethereum_key: &'static str,
    /// Its count's key in a Solana tx report, and its name in the Solana text report.
    pub solana_key: &'static str,
    /// The live metrics' `outcome` label value (either chain).
    pub metric_label: &'static str,
    /// What the count means on Ethereum (the reports' note beside it).
    pub ethereum_meaning: &'static str,
    /// What the count means on Solana.
    pub solana_meaning: &'static str,
    /// The chains (as a report's `chain` says them) that have the outcome.
    pub chains: &'static [&'static str],
    /// Whether the count is a term of the identity `sum of the rows == sent`.
    pub in_identity: bool,
    /// Whether the count only grows during a run: exported in the counter family
    /// `tx_outcomes_total{outcome}`; otherwise as a gauge of its own, `tx_<metric_label>`.
    pub only_grows: bool,
    /// The chains (as a report's `chain` says them) whose older reports may lack the count:
    /// a row added later (Ethereum's reverted) is not shown for a saved report without its key,
    /// and reads as 0 in sums.
    pub missing_from_older_reports_of: &'static [&'static str],
}

/// The one table of a transaction's final outcomes, in [`TxFinalOutcome`]'s order, which is
/// the order reports list them and the identity's terms.
pub const TX_FINALS: [TxFinalSpec; 6] = [
    TxFinalSpec {
        outcome: TxFinalOutcome::Included,
        ethereum_key: "included",
        solana_key: "landed",
        metric_label: "included",
        ethereum_meaning: "seen in a block",
        solana_meaning: "reached the commitment asked for",
        chains: BOTH_CHAINS,
        in_identity: true,
        only_grows: true,
        missing_from_older_reports_of: &[],
    },
    TxFinalSpec {
        outcome: TxFinalOutcome::Reverted,
        ethereum_key: "reverted",
        solana_key: "failed",
        metric_label: "reverted",
        ethereum_meaning: "in a block, receipt status 0",
        solana_meaning: "landed with an error",
        chains: BOTH_CHAINS,
        in_identity: true,
        only_grows: true,
        missing_from_older_reports_of: &["ethereum"],
    },
    TxFinalSpec {
        outcome: TxFinalOutcome::Expired,
        ethereum_key: "expired",
        solana_key: "expired",
        metric_label: "expired",
        ethereum_meaning: "",
        solana_meaning: "blockhash no longer valid, never landed",
        chains: &["solana"],
        in_identity: true,
        only_grows: true,
        missing_from_older_reports_of: &[],
    },
    TxFinalSpec {
        outcome: TxFinalOutcome::Dropped,
        ethereum_key: "dropped",
        solana_key: "dropped",
        metric_label: "dropped",
        ethereum_meaning: "not included within the inclusion timeout",
        solana_meaning: "not landed within the inclusion timeout",
        chains: BOTH_CHAINS,
        in_identity: true,
        only_grows: true,
        missing_from_older_reports_of: &["solana"],
    },
    TxFinalSpec {
        outcome: TxFinalOutcome::Rejected,
        ethereum_key: "rejected",
        solana_key: "rejected",
        metric_label: "rejected",
        ethereum_meaning: "refused by the node",
        solana_meaning: "refused by the node",
        chains: BOTH_CHAINS,
        in_identity: true,
        only_grows: true,
        missing_from_older_reports_of: &[],
    },
    TxFinalSpec {
        outcome: TxFinalOutcome::Pending,
        ethereum_key: "pending",
        solana_key: "pending",
        metric_label: "pending",
        ethereum_meaning: "unfinished at the end",
        solana_meaning: "unfinished at the end",
        chains: BOTH_CHAINS,
        in_identity: true,
        only_grows: false,
        missing_from_older_reports_of: &[],
    },
];

/// The chains every chain-independent row belongs to.
const BOTH_CHAINS: &[&str] = &["ethereum", "solana"];

/// The rows a chain's reports have, in the table's order.
pub fn tx_finals_of(chain: &str) -> impl Iterator<Item = &'static TxFinalSpec> + '_ {
    TX_FINALS.iter().filter(move |spec| spec.chains.contains(&chain))
}

/// The report key (and the live metrics' counter) of the inclusions a reorg took back: not a
/// final outcome (the transaction went back to waiting), counted beside them.
pub const REORGED_OUT_KEY: &str = "reorged_out";

/// A count per final outcome: a run's tally, a report's, a merge's.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct TxFinalCounts {
    counts: [u64; TX_FINALS.len()],
}

impl TxFinalCounts {
    /// No transaction yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// The count of `outcome`.
    pub fn get(&self, outcome: TxFinalOutcome) -> u64 {
        self.counts[outcome as usize]
    }

    /// Sets the count of `outcome`.
    pub fn set(&mut self, outcome: TxFinalOutcome, count: u64) -> &mut Self {
        self.counts[outcome as usize] = count;
        self
    }

    /// Each row with its count, in the table's order.
    pub fn rows(&self) -> impl Iterator<Item = (&'static TxFinalSpec, u64)> + '_ {
        TX_FINALS.iter().map(|spec| (spec, self.get(spec.outcome)))
    }

    /// The sum of the identity's terms.
    pub fn identity_sum(&self) -> u64 {
        self.rows().filter(|(spec, _)| spec.in_identity).map(|(_, count)| count).fold(0, u64::saturating_add)
    }

    /// The identity: every transaction sent has exactly one final outcome, so the sum of the
    /// table's rows equals `sent`. Both chains' runs and a merge of shards judge it here.
    pub fn adds_up(&self, sent: u64) -> bool {
        self.identity_sum() == sent
    }
}

/// Why a dropped transaction was not included, as a lookup after the timeout found it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum DropCause {
    /// Another transaction took its nonce (the sender's mined nonce is past it).
    Replaced,
    /// The node no longer knows it and its nonce is still free.
    Gone,
    /// The node still holds it in its pool, unincluded.
    StillPooled,
    /// The node has it in a block the watch never saw carry it (after the timeout).
    IncludedUnseen,
    /// The node has it, but not yet at the commitment asked for (Solana).
    BelowCommitment,
    /// The lookup failed (or the run's lookups were used up).
    NotLookedUp,
}

impl DropCause {
    /// The cause's row of [`DROP_CAUSES`].
    pub const fn spec(self) -> &'static DropCauseSpec {
        // DROP_CAUSES lists the causes in the enum's order (a test checks it).
        &DROP_CAUSES[self as usize]
    }

    /// How reports and files key it.
    pub const fn name(self) -> &'static str {
        self.spec().key
    }
}

/// What every part of rpcbench knows about one cause of a drop.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DropCauseSpec {
    /// The cause.
    pub cause: DropCause,
    /// Its key in a report's `dropped_by_cause`.
    pub key: &'static str,
    /// How reports name it (`1 still pooled`).
    pub label: &'static str,
    /// The chains (as a report's `chain` says them) whose lookups find it: their reports list
    /// the cause, 0 when none was found.
    pub chains: &'static [&'static str],
}

/// The one table of the causes of a drop, in [`DropCause`]'s order.
pub const DROP_CAUSES: [DropCauseSpec; 6] = [
    DropCauseSpec { cause: DropCause::Replaced, key: "replaced", label: "replaced", chains: &["ethereum"] },
    DropCauseSpec { cause: DropCause::Gone, key: "gone", label: "gone", chains: BOTH_CHAINS },
    DropCauseSpec {
        cause: DropCause::StillPooled,
        key: "still_pooled",
        label: "still pooled",
        chains: &["ethereum"],
    },
    DropCauseSpec {
        cause: DropCause::IncludedUnseen,
        key: "included_unseen",
        label: "included unseen",
        chains: &["ethereum"],
    },
    DropCauseSpec {
        cause: DropCause::BelowCommitment,
        key: "below_commitment",
        label: "below commitment",
        chains: &["solana"],
    },
    DropCauseSpec {
        cause: DropCause::NotLookedUp,
        key: "not_looked_up",
        label: "not looked up",
        chains: BOTH_CHAINS,
    },
];

/// The causes a chain's reports list, in the table's order.
pub fn drop_causes_of(chain: &str) -> impl Iterator<Item = &'static DropCauseSpec> + '_ {
    DROP_CAUSES.iter().filter(move |spec| spec.chains.contains(&chain))
}

/// How reports name a cause they hold under `key`: its label, or the key with spaces for a
/// cause this build does not know (a report of a newer build).
pub fn drop_cause_label(key: &str) -> String {
    DROP_CAUSES
        .iter()
        .find(|spec| spec.key == key)
        .map_or_else(|| key.replace('_', " "), |spec| spec.label.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn the_tables_list_their_rows_in_their_enums_order_with_distinct_keys() {
        for (index, spec) in TX_FINALS.iter().enumerate() {
            assert_eq!(spec.outcome as usize, index, "{spec:?}");
            assert_eq!(spec.outcome.spec(), spec);
        }
        for keys in [
            TX_FINALS.map(|spec| spec.ethereum_key),
            TX_FINALS.map(|spec| spec.solana_key),
            TX_FINALS.map(|spec| spec.metric_label),
        ] {
            assert_eq!(keys.iter().collect::<HashSet<_>>().len(), keys.len(), "{keys:?}");
        }
        for (index, spec) in DROP_CAUSES.iter().enumerate() {
            assert_eq!(spec.cause as usize, index, "{spec:?}");
            assert_eq!(spec.cause.name(), spec.key);
        }
        assert_eq!(DROP_CAUSES.map(|spec| spec.key).iter().collect::<HashSet<_>>().len(), DROP_CAUSES.len());
    }

    #[test]
    fn the_identity_is_the_sum_of_every_row_against_sent() {
        let mut counts = TxFinalCounts::new();
        counts
            .set(TxFinalOutcome::Included, 80)
            .set(TxFinalOutcome::Reverted, 4)
            .set(TxFinalOutcome::Expired, 10)
            .set(TxFinalOutcome::Dropped, 3)
            .set(TxFinalOutcome::Rejected, 2)
            .set(TxFinalOutcome::Pending, 1);
        assert!(counts.adds_up(100));
        // Each row is a term: leave any one out and the identity breaks.
        for spec in &TX_FINALS {
            let mut without = counts;
            without.set(spec.outcome, 0);
            assert!(!without.adds_up(100), "{:?} is not in the sum", spec.outcome);
        }
        assert!(!counts.adds_up(101));
    }

    #[test]
    fn a_cause_of_a_newer_build_is_named_by_its_key() {
        assert_eq!(drop_cause_label("still_pooled"), "still pooled");
        assert_eq!(drop_cause_label("blockhash_expired"), "blockhash expired");
        assert_eq!(drop_causes_of("ethereum").count(), 5);
        assert_eq!(drop_causes_of("solana").count(), 3);
    }
}
