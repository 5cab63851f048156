//! Subscription kinds: what a subscription asks for and how its items are read. Each kind is a
//! `Kind`; each chain's kinds live in one file (`ethereum`, `solana`) with its own
//! `parse`. A new kind is one type in its chain's file; a new chain is one new file and one
//! entry in `CHAINS`.

mod ethereum;
pub(crate) mod geyser;
mod solana;

use std::fmt;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use serde::Deserialize;

use crate::transport::feed::SubscribeCall;

/// Whether a kind's items come in an order, and whether that order skips nothing.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Order {
    /// Numbered with none skipped (blocks, slots): a missing number is a gap, a smaller one a
    /// reorder.
    Sequence,
    /// Numbered in order but not every number comes (logs by block and index, account updates
    /// by slot): a smaller number is a reorder; nothing is a gap.
    Ordered,
    /// No order on the wire (pending transactions, Solana log lines): only duplicates are
    /// judged, by the item's identity; gaps and reorders are not applicable.
    Unordered,
}

impl Order {
    /// Whether gaps are judged.
    pub(crate) fn has_gaps(self) -> bool {
        self == Order::Sequence
    }

    /// Whether reorders are judged.
    pub(crate) fn has_order(self) -> bool {
        self != Order::Unordered
    }
}

/// What an item is.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub(crate) enum Key {
    /// Its number (block, slot, block and log index).
    Number(u64),
    /// A numbered kind's item whose number is missing or does not parse: counted apart,
    /// never judged for gaps, duplicates or reorders.
    Unnumbered,
    /// An unordered kind's item: a 64-bit hash of its identity (duplicates only).
    Identity(u64),
}

/// When an item says it was produced.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Produced {
    /// The time.
    pub(crate) at: SystemTime,
    /// Whether it is whole seconds (a block header's `timestamp`) rather than exact.
    pub(crate) seconds: bool,
}

/// One notification's item.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Item {
    pub(crate) key: Key,
    pub(crate) produced: Option<Produced>,
}

/// One kind of subscription.
pub(crate) trait Kind: fmt::Debug + Send + Sync {
    /// The name reports use.
    fn name(&self) -> &'static str;
    /// What to ask the server for.
    fn call(&self) -> SubscribeCall;
    /// How its items are judged.
    fn order(&self) -> Order;
    /// The item a notification's payload (its `result`) carries.
    fn item(&self, payload: &[u8]) -> Item;
    /// The slot and stage (an index into `crate::subscribe::slot_stages::STAGE_NAMES`) a
    /// payload reports, for kinds that follow slots through their stages.
    fn slot_stage(&self, _payload: &[u8]) -> Option<(u64, usize)> {
        None
    }
    /// Whether its items are slot stages ([`Kind::slot_stage`] answers).
    fn has_stages(&self) -> bool {
        false
    }
}

/// A chain's parser: `Some` when `name` is one of its kinds.
type ChainParser = fn(name: &str, argument: Option<&str>) -> Option<Result<Box<dyn Kind>, String>>;

/// Every chain's kinds, and their spellings for messages.
const CHAINS: [(ChainParser, &str); 3] = [
    (ethereum::parse, ethereum::SPELLINGS),
    (solana::parse, solana::SPELLINGS),
    (geyser::parse, geyser::SPELLINGS),
];

/// A subscription that cannot be parsed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SubscriptionKindError {
    /// No chain has a subscription of that name.
    Unknown {
        /// The name given.
        name: String,
        /// Every chain's spellings, for the message.
        known: String,
    },
    /// The kind is known but its argument is not usable: what its chain says.
    Argument(String),
}

impl std::fmt::Display for SubscriptionKindError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SubscriptionKindError::Unknown { name, known } => {
                write!(f, "unknown subscription '{name}' ({known})")
            }
            SubscriptionKindError::Argument(message) => f.write_str(message),
        }
    }
}

impl std::error::Error for SubscriptionKindError {}

/// What a subscription asks for: one `Kind`, parsed from `--sub`.
#[derive(Clone)]
pub struct SubscriptionKind(Arc<dyn Kind>);

impl SubscriptionKind {
    /// Parses `newHeads`, `logs:{"address":"0x…"}`, `newPendingTransactions`, `slot`,
    /// `account:PUBKEY` or `logs-solana[:FILTER]`.
    pub fn parse(text: &str) -> Result<Self, SubscriptionKindError> {
        let (name, argument) = match text.split_once(':') {
            Some((name, argument)) => (name.trim(), Some(argument.trim())),
            None => (text.trim(), None),
        };
        for (parse, _) in CHAINS {
            if let Some(kind) = parse(name, argument) {
                return kind
                    .map(|kind| SubscriptionKind(Arc::from(kind)))
                    .map_err(SubscriptionKindError::Argument);
            }
        }
        let known: Vec<&str> = CHAINS.iter().map(|(_, spellings)| *spellings).collect();
        Err(SubscriptionKindError::Unknown { name: name.to_string(), known: known.join(", ") })
    }

    /// The name reports use.
    pub fn name(&self) -> &'static str {
        self.0.name()
    }

    /// Whether its gaps are judged (its items are a sequence: blocks, slots).
    pub fn judges_gaps(&self) -> bool {
        self.0.order().has_gaps()
    }

    /// Whether its reorders are judged (its items are numbered in order).
    pub fn judges_order(&self) -> bool {
        self.0.order().has_order()
    }

    /// Whether it is a Yellowstone Geyser kind (a gRPC feed's), not a JSON-RPC one.
    pub fn is_geyser(&self) -> bool {
        matches!(self.0.call(), SubscribeCall::Geyser(_))
    }

    pub(crate) fn call(&self) -> SubscribeCall {
        self.0.call()
    }

    pub(crate) fn order(&self) -> Order {
        self.0.order()
    }

    pub(crate) fn item(&self, payload: &[u8]) -> Item {
        self.0.item(payload)
    }

    pub(crate) fn slot_stage(&self, payload: &[u8]) -> Option<(u64, usize)> {
        self.0.slot_stage(payload)
    }

    /// Whether its items are the stages of slots (`geyser-stages`).
    pub fn has_stages(&self) -> bool {
        self.0.has_stages()
    }
}

impl fmt::Debug for SubscriptionKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt(f)
    }
}

impl PartialEq for SubscriptionKind {
    fn eq(&self, other: &Self) -> bool {
        self.name() == other.name() && self.call() == other.call()
    }
}

/// JSON params given after the kind's name, or `default`.
fn json_argument(
    name: &str,
    argument: Option<&str>,
    default: serde_json::Value,
) -> Result<serde_json::Value, String> {
    match argument {
        None | Some("") => Ok(default),
        Some(text) => serde_json::from_str(text)
            .map_err(|err| format!("'{name}': the params are not JSON ({err}): {text}")),
    }
}

/// A kind that takes no params.
fn no_argument(name: &str, argument: Option<&str>, kind: Box<dyn Kind>) -> Result<Box<dyn Kind>, String> {
    match argument {
        Some(_) => Err(format!("'{name}' takes no params")),
        None => Ok(kind),
    }
}

/// The members of a payload a kind reads (the rest is skipped); the default when the payload
/// is not a JSON object of that shape.
fn fields<'a, T: Deserialize<'a> + Default>(payload: &'a [u8]) -> T {
    if payload.first() == Some(&b'{') {
        serde_json::from_slice(payload).unwrap_or_default()
    } else {
        T::default()
    }
}

/// The mock nodes' exact production stamp (`rpcbenchProducedAt`, unix microseconds).
fn exact(micros: Option<u64>) -> Option<Produced> {
    micros.map(|micros| Produced { at: UNIX_EPOCH + Duration::from_micros(micros), seconds: false })
}

/// A stable 64-bit identity for items without a number (FNV-1a).
fn fingerprint(bytes: &[u8]) -> u64 {
    bytes
        .iter()
        .fold(0xcbf2_9ce4_8422_2325u64, |hash, byte| (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn subscription_kinds_parse_and_bad_ones_are_named() {
        assert_eq!(SubscriptionKind::parse("newHeads").unwrap().name(), "newHeads");
        assert_eq!(SubscriptionKind::parse("slot").unwrap().name(), "slot");
        let logs = SubscriptionKind::parse(r#"logs:{"address":"0xaa"}"#).unwrap();
        assert_eq!(logs.call().json_rpc().unwrap().params, serde_json::json!(["logs", {"address": "0xaa"}]));
        let account = SubscriptionKind::parse("account:Abc").unwrap();
        assert_eq!(account.name(), "account");
        assert_eq!(account.call().json_rpc().unwrap().params[0], "Abc");
        assert!(SubscriptionKind::parse("newBlocks")
            .unwrap_err()
            .to_string()
            .contains("unknown subscription 'newBlocks'"));
        assert!(SubscriptionKind::parse("logs:{nope").unwrap_err().to_string().contains("not JSON"));
        assert!(SubscriptionKind::parse("account").is_err());
        assert!(SubscriptionKind::parse("slot:3").is_err());
    }

    #[test]
    fn items_carry_their_key_and_production_time() {
        let heads = SubscriptionKind::parse("newHeads").unwrap();
        let parsed = heads.item(br#"{"number":"0x3e9","timestamp":"0x10","rpcbenchProducedAt":5000000}"#);
        assert_eq!(parsed.key, Key::Number(1001));
        assert_eq!(
            parsed.produced,
            Some(Produced { at: UNIX_EPOCH + Duration::from_secs(5), seconds: false })
        );
        assert_eq!(
            heads.item(br#"{"number":"0x3e9","timestamp":"0x10"}"#).produced,
            Some(Produced { at: UNIX_EPOCH + Duration::from_secs(16), seconds: true })
        );
        let slot = SubscriptionKind::parse("slot").unwrap();
        assert_eq!(slot.item(br#"{"parent":1,"root":0,"slot":2}"#).key, Key::Number(2));
    }

    #[test]
    fn a_head_whose_number_does_not_parse_is_unnumbered_not_a_hash() {
        let heads = SubscriptionKind::parse("newHeads").unwrap();
        for payload in
            [&br#"{"number":"latest"}"#[..], br#"{"hash":"0x12"}"#, br#"{"number":"0x1ffffffffffffffff"}"#]
        {
            assert_eq!(heads.item(payload).key, Key::Unnumbered, "{}", String::from_utf8_lossy(payload));
        }
        let logs = SubscriptionKind::parse("logs").unwrap();
        // A block number too large to share a key with its log index.
        assert_eq!(logs.item(br#"{"blockNumber":"0xffffffffffffff","logIndex":"0x1"}"#).key, Key::Unnumbered);
        assert_eq!(logs.item(br#"{"blockNumber":"0x2","logIndex":"0x1"}"#).key, Key::Number(2 << 20 | 1));
    }

    #[test]
    fn pending_transactions_and_solana_logs_have_no_order_to_judge() {
        for text in ["newPendingTransactions", "logs-solana"] {
            let kind = SubscriptionKind::parse(text).unwrap();
            assert_eq!(kind.order(), Order::Unordered, "{text}");
            assert!(matches!(kind.item(br#""0xabc""#).key, Key::Identity(_)));
        }
        assert_eq!(SubscriptionKind::parse("logs").unwrap().order(), Order::Ordered);
        assert_eq!(SubscriptionKind::parse("newHeads").unwrap().order(), Order::Sequence);
    }
}
