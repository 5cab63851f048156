//! Solana Yellowstone Geyser subscriptions over gRPC (`grpc://`, `grpcs://`): each kind is one
//! named filter of a `SubscribeRequest`, and its items are protobuf `SubscribeUpdate`s.
//!
//! - `geyser-slot[:COMMITMENT]`: one update per slot at that commitment (processed, the default;
//!   confirmed; finalized): a sequence, so gaps are judged.
//! - `geyser-stages`: every slot status (first shred, created bank, completed, processed,
//!   confirmed, finalized): each (slot, status) once, duplicates judged.
//! - `geyser-tx[:FILTER]`: transactions, FILTER being `;`-separated `include=K1,K2`,
//!   `exclude=K`, `required=K`, `vote=true|false`, `failed=true|false`, `commitment=C`; no order,
//!   duplicates judged by signature.
//! - `geyser-account:PUBKEY[,PUBKEY]` or `geyser-account:owner=PUBKEY`: account writes, ordered
//!   by write version.
//! - `geyser-blocks-meta`: one block meta per slot, a sequence.

use prost::Message as _;
use yellowstone_grpc_proto::geyser::{
    subscribe_update::UpdateOneof, CommitmentLevel, SubscribeRequest, SubscribeRequestFilterAccounts,
    SubscribeRequestFilterBlocksMeta, SubscribeRequestFilterSlots, SubscribeRequestFilterTransactions,
    SubscribeUpdate,
};

use super::{fingerprint, no_argument, Item, Key, Kind, Order};
use crate::transport::feed::SubscribeCall;
use crate::transport::grpc::{slot_update, transaction_update, TransactionUpdate};

/// How these kinds are written, for messages.
pub(super) const SPELLINGS: &str = "geyser-slot[:COMMITMENT], geyser-stages, geyser-tx[:FILTER], \
                                    geyser-account:PUBKEY|owner=PUBKEY, geyser-blocks-meta";

/// The Geyser kind `name` (with its argument), if it is one.
pub(super) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Box<dyn Kind>, String>> {
    Some(match name {
        "geyser-slot" => commitment(argument.unwrap_or("processed"))
            .map(|commitment| Box::new(GeyserSlot { commitment }) as Box<dyn Kind>),
        "geyser-stages" => no_argument(name, argument, Box::new(GeyserStages)),
        "geyser-tx" => transaction_filter(argument.unwrap_or(""))
            .map(|(filter, commitment)| Box::new(GeyserTransactions { filter, commitment }) as Box<dyn Kind>),
        "geyser-account" => account_filter(argument.unwrap_or(""))
            .map(|filter| Box::new(GeyserAccounts { filter }) as Box<dyn Kind>),
        "geyser-blocks-meta" => no_argument(name, argument, Box::new(GeyserBlocksMeta)),
        _ => return None,
    })
}

/// A commitment's name as a level (`processed`, `confirmed`, `finalized`).
pub(crate) fn commitment(text: &str) -> Result<CommitmentLevel, String> {
    match text {
        "processed" => Ok(CommitmentLevel::Processed),
        "confirmed" => Ok(CommitmentLevel::Confirmed),
        "finalized" => Ok(CommitmentLevel::Finalized),
        other => Err(format!("unknown commitment '{other}' (processed, confirmed, finalized)")),
    }
}

fn boolean(key: &str, text: &str) -> Result<bool, String> {
    match text {
        "true" => Ok(true),
        "false" => Ok(false),
        other => Err(format!("'geyser-tx': {key}={other}: give true or false")),
    }
}

fn keys(text: &str) -> Vec<String> {
    text.split(',').map(str::trim).filter(|key| !key.is_empty()).map(str::to_string).collect()
}

/// `include=K1,K2;exclude=K;required=K;vote=false;failed=false;commitment=confirmed`.
fn transaction_filter(text: &str) -> Result<(SubscribeRequestFilterTransactions, CommitmentLevel), String> {
    let mut filter = SubscribeRequestFilterTransactions::default();
    let mut level = CommitmentLevel::Processed;
    for part in text.split(';').map(str::trim).filter(|part| !part.is_empty()) {
        let Some((key, value)) = part.split_once('=') else {
            return Err(format!("'geyser-tx': '{part}' is not KEY=VALUE"));
        };
        match key.trim() {
            "include" => filter.account_include = keys(value),
            "exclude" => filter.account_exclude = keys(value),
            "required" => filter.account_required = keys(value),
            "vote" => filter.vote = Some(boolean(key, value.trim())?),
            "failed" => filter.failed = Some(boolean(key, value.trim())?),
            "commitment" => level = commitment(value.trim())?,
            other => {
                return Err(format!(
                    "'geyser-tx': unknown filter '{other}' (include, exclude, required, vote, failed, commitment)"
                ))
            }
        }
    }
    Ok((filter, level))
}

/// `PUBKEY[,PUBKEY]` or `owner=PUBKEY[,PUBKEY]`.
fn account_filter(text: &str) -> Result<SubscribeRequestFilterAccounts, String> {
    let mut filter = SubscribeRequestFilterAccounts::default();
    match text.split_once('=') {
        Some(("owner", owners)) => filter.owner = keys(owners),
        Some((other, _)) => return Err(format!("'geyser-account': unknown filter '{other}' (owner)")),
        None => filter.account = keys(text),
    }
    if filter.account.is_empty() && filter.owner.is_empty() {
        return Err(
            "'geyser-account' needs accounts or an owner: geyser-account:PUBKEY or owner=PUBKEY".into()
        );
    }
    Ok(filter)
}

/// What a filter file's table (`crate::subscribe::filter_file`) asks for, as a kind.
#[derive(Debug, Clone)]
pub(crate) enum GeyserFilter {
    /// `[slots]`: one update per slot at the commitment, or (`stages`) every status.
    Slots { stages: bool, commitment: CommitmentLevel },
    /// `[blocks_meta]`.
    BlocksMeta,
    /// `[transactions]`.
    Transactions { filter: SubscribeRequestFilterTransactions, commitment: CommitmentLevel },
    /// `[accounts]`: by pubkey and/or owner.
    Accounts { filter: SubscribeRequestFilterAccounts },
}

impl GeyserFilter {
    /// The kind it is.
    pub(crate) fn kind(self) -> super::SubscriptionKind {
        let kind: Box<dyn Kind> = match self {
            GeyserFilter::Slots { stages: true, .. } => Box::new(GeyserStages),
            GeyserFilter::Slots { stages: false, commitment } => Box::new(GeyserSlot { commitment }),
            GeyserFilter::BlocksMeta => Box::new(GeyserBlocksMeta),
            GeyserFilter::Transactions { filter, commitment } => {
                Box::new(GeyserTransactions { filter, commitment })
            }
            GeyserFilter::Accounts { filter } => Box::new(GeyserAccounts { filter }),
        };
        super::SubscriptionKind(std::sync::Arc::from(kind))
    }
}

/// The name every kind gives its filter in the request.
const FILTER_NAME: &str = "rpcbench";

fn request(commitment: CommitmentLevel, fill: impl FnOnce(&mut SubscribeRequest)) -> SubscribeCall {
    let mut request = SubscribeRequest { commitment: Some(commitment as i32), ..Default::default() };
    fill(&mut request);
    SubscribeCall::Geyser(Box::new(request))
}

/// An update's decoded payload, or `None` when it is not protobuf.
fn decode(payload: &[u8]) -> Option<UpdateOneof> {
    SubscribeUpdate::decode(payload).ok().and_then(|update| update.update_oneof)
}

/// `geyser-slot`: slots at one commitment.
#[derive(Debug)]
struct GeyserSlot {
    commitment: CommitmentLevel,
}

impl Kind for GeyserSlot {
    fn name(&self) -> &'static str {
        "geyser-slot"
    }

    fn call(&self) -> SubscribeCall {
        request(self.commitment, |request| {
            request.slots.insert(
                FILTER_NAME.into(),
                SubscribeRequestFilterSlots {
                    filter_by_commitment: Some(true),
                    interslot_updates: Some(false),
                },
            );
        })
    }

    fn order(&self) -> Order {
        Order::Sequence
    }

    fn item(&self, payload: &[u8]) -> Item {
        let key = match decode(payload) {
            Some(UpdateOneof::Slot(slot)) => Key::Number(slot.slot),
            _ => Key::Unnumbered,
        };
        Item { key, produced: None }
    }
}

/// `geyser-stages`: every status of every slot.
#[derive(Debug)]
struct GeyserStages;

impl Kind for GeyserStages {
    fn name(&self) -> &'static str {
        "geyser-stages"
    }

    fn call(&self) -> SubscribeCall {
        request(CommitmentLevel::Processed, |request| {
            request.slots.insert(
                FILTER_NAME.into(),
                SubscribeRequestFilterSlots {
                    filter_by_commitment: Some(false),
                    interslot_updates: Some(true),
                },
            );
        })
    }

    fn order(&self) -> Order {
        Order::Unordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        // The slot and status read from the wire (this kind's every update is one: decoding it
        // whole, twice with the stage, was most of its cost).
        let key = match slot_update(payload) {
            // Each (slot, status) once: the identity is the slot and the status.
            Some((slot, status)) => {
                let mut identity = [0u8; 12];
                identity[..8].copy_from_slice(&slot.to_le_bytes());
                identity[8..].copy_from_slice(&status.to_le_bytes());
                Key::Identity(fingerprint(&identity))
            }
            None => Key::Identity(fingerprint(payload)),
        };
        Item { key, produced: None }
    }

    fn slot_stage(&self, payload: &[u8]) -> Option<(u64, usize)> {
        let (slot, status) = slot_update(payload)?;
        crate::subscribe::slot_stages::stage_index(status).map(|stage| (slot, stage))
    }

    fn has_stages(&self) -> bool {
        true
    }
}

/// `geyser-tx`: transactions matching a filter.
#[derive(Debug)]
struct GeyserTransactions {
    filter: SubscribeRequestFilterTransactions,
    commitment: CommitmentLevel,
}

impl Kind for GeyserTransactions {
    fn name(&self) -> &'static str {
        "geyser-tx"
    }

    fn call(&self) -> SubscribeCall {
        request(self.commitment, |request| {
            request.transactions.insert(FILTER_NAME.into(), self.filter.clone());
        })
    }

    fn order(&self) -> Order {
        Order::Unordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        // The signature read from the wire: the transaction's message and meta are not
        // decoded (nothing here counts them).
        let key = match transaction_update(payload) {
            Some(TransactionUpdate::Signed(signature)) => Key::Identity(fingerprint(signature)),
            Some(TransactionUpdate::NoInfo) | None => Key::Identity(fingerprint(payload)),
        };
        Item { key, produced: None }
    }
}

/// `geyser-account`: writes to accounts by key or owner.
#[derive(Debug)]
struct GeyserAccounts {
    filter: SubscribeRequestFilterAccounts,
}

impl Kind for GeyserAccounts {
    fn name(&self) -> &'static str {
        "geyser-account"
    }

    fn call(&self) -> SubscribeCall {
        request(CommitmentLevel::Processed, |request| {
            request.accounts.insert(FILTER_NAME.into(), self.filter.clone());
        })
    }

    fn order(&self) -> Order {
        Order::Ordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        let key = match decode(payload) {
            Some(UpdateOneof::Account(update)) => {
                update.account.map_or(Key::Unnumbered, |account| Key::Number(account.write_version))
            }
            _ => Key::Unnumbered,
        };
        Item { key, produced: None }
    }
}

/// `geyser-blocks-meta`: one block meta per slot.
#[derive(Debug)]
struct GeyserBlocksMeta;

impl Kind for GeyserBlocksMeta {
    fn name(&self) -> &'static str {
        "geyser-blocks-meta"
    }

    fn call(&self) -> SubscribeCall {
        request(CommitmentLevel::Processed, |request| {
            request.blocks_meta.insert(FILTER_NAME.into(), SubscribeRequestFilterBlocksMeta {});
        })
    }

    fn order(&self) -> Order {
        Order::Sequence
    }

    fn item(&self, payload: &[u8]) -> Item {
        let key = match decode(payload) {
            Some(UpdateOneof::BlockMeta(meta)) => Key::Number(meta.slot),
            _ => Key::Unnumbered,
        };
        Item { key, produced: None }
    }
}

#[cfg(test)]
mod tests {
    use super::super::SubscriptionKind;
    use super::*;

    fn geyser_request(text: &str) -> SubscribeRequest {
        match SubscriptionKind::parse(text).unwrap().call() {
            SubscribeCall::Geyser(request) => *request,
            other => panic!("{text}: {other:?}"),
        }
    }

    #[test]
    fn geyser_kinds_build_their_filters() {
        let slot = geyser_request("geyser-slot:confirmed");
        assert_eq!(slot.commitment, Some(CommitmentLevel::Confirmed as i32));
        assert_eq!(slot.slots[FILTER_NAME].filter_by_commitment, Some(true));
        let tx = geyser_request("geyser-tx:include=A,B;exclude=C;vote=false;failed=false");
        let filter = &tx.transactions[FILTER_NAME];
        assert_eq!(filter.account_include, ["A", "B"]);
        assert_eq!(filter.account_exclude, ["C"]);
        assert_eq!((filter.vote, filter.failed), (Some(false), Some(false)));
        assert_eq!(geyser_request("geyser-account:owner=O").accounts[FILTER_NAME].owner, ["O"]);
        assert!(geyser_request("geyser-stages").slots[FILTER_NAME].interslot_updates == Some(true));
    }

    #[test]
    fn keys_read_from_the_wire_are_the_keys_a_whole_decode_gives() {
        use yellowstone_grpc_proto::geyser::{
            SubscribeUpdateSlot, SubscribeUpdateTransaction, SubscribeUpdateTransactionInfo,
        };
        use yellowstone_grpc_proto::prost_types::Timestamp;
        let update = |oneof| SubscribeUpdate {
            filters: vec![FILTER_NAME.into()],
            update_oneof: Some(oneof),
            created_at: Some(Timestamp { seconds: 1_700_000_000, nanos: 5 }),
        };
        let stages = SubscriptionKind::parse("geyser-stages").unwrap();
        for (slot, status) in [(0u64, 0i32), (1, 1), (u64::MAX, 5), (7, -1), (9, 6)] {
            let bytes = update(UpdateOneof::Slot(SubscribeUpdateSlot {
                slot,
                parent: Some(slot.saturating_sub(1)),
                status,
                dead_error: Some("dead".into()),
                ..Default::default()
            }))
            .encode_to_vec();
            let mut identity = [0u8; 12];
            identity[..8].copy_from_slice(&slot.to_le_bytes());
            identity[8..].copy_from_slice(&status.to_le_bytes());
            assert_eq!(stages.item(&bytes).key, Key::Identity(fingerprint(&identity)), "{slot} {status}");
            let stage = crate::subscribe::slot_stages::stage_index(status).map(|stage| (slot, stage));
            assert_eq!(stages.slot_stage(&bytes), stage, "{slot} {status}");
        }
        let transactions = SubscriptionKind::parse("geyser-tx").unwrap();
        let signed = update(UpdateOneof::Transaction(SubscribeUpdateTransaction {
            transaction: Some(SubscribeUpdateTransactionInfo {
                signature: vec![7; 64],
                is_vote: true,
                index: 3,
                ..Default::default()
            }),
            slot: 12,
            ..Default::default()
        }))
        .encode_to_vec();
        assert_eq!(transactions.item(&signed).key, Key::Identity(fingerprint(&[7; 64])));
        let no_info = update(UpdateOneof::Transaction(SubscribeUpdateTransaction {
            transaction: None,
            slot: 12,
            ..Default::default()
        }))
        .encode_to_vec();
        assert_eq!(transactions.item(&no_info).key, Key::Identity(fingerprint(&no_info)));
        // Another kind of update, and bytes that are not protobuf: the payload's fingerprint,
        // and no stage.
        let slot =
            update(UpdateOneof::Slot(SubscribeUpdateSlot { slot: 3, ..Default::default() })).encode_to_vec();
        assert_eq!(transactions.item(&slot).key, Key::Identity(fingerprint(&slot)));
        for garbage in [&[0x1a, 0x7f, 1][..], &[0x0b], &[0x22, 0x02, 0x0a, 0x7f]] {
            assert_eq!(stages.item(garbage).key, Key::Identity(fingerprint(garbage)));
            assert_eq!(stages.slot_stage(garbage), None);
            assert_eq!(transactions.item(garbage).key, Key::Identity(fingerprint(garbage)));
        }
    }

    #[test]
    fn an_unknown_geyser_filter_is_named() {
        let err = SubscriptionKind::parse("geyser-tx:signer=A").unwrap_err();
        assert!(err.to_string().contains("unknown filter 'signer'"), "{err}");
        assert!(SubscriptionKind::parse("geyser-slot:fast")
            .unwrap_err()
            .to_string()
            .contains("unknown commitment 'fast'"));
        assert!(SubscriptionKind::parse("geyser-account")
            .unwrap_err()
            .to_string()
            .contains("needs accounts"));
        assert!(SubscriptionKind::parse("geyser-tx:vote=maybe").is_err());
    }
}
