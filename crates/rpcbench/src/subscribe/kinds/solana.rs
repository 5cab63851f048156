//! Solana subscriptions: `slotSubscribe` (a sequence of slots), `accountSubscribe` (updates
//! ordered by their context slot) and `logsSubscribe` (log lines, no order).

use serde::Deserialize;
use serde_json::{json, Value};

use super::{exact, fields, fingerprint, json_argument, no_argument, Item, Key, Kind, Order};
use crate::transport::feed::{JsonRpcSubscribe, SubscribeCall};

/// How these kinds are written, for messages.
pub(super) const SPELLINGS: &str = "slot, account:PUBKEY, logs-solana[:FILTER]";

/// The Solana kind `name` (with its argument), if it is one.
pub(super) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Box<dyn Kind>, String>> {
    Some(match name {
        "slot" => no_argument(name, argument, Box::new(Slot)),
        "account" => match argument {
            Some(key) if !key.is_empty() => Ok(Box::new(Account { key: key.to_string() }) as Box<dyn Kind>),
            _ => Err("'account' needs the account: account:PUBKEY".into()),
        },
        "logs-solana" => match argument {
            Some(text) if text.starts_with('{') => json_argument(name, Some(text), Value::Null),
            Some(text) if !text.is_empty() => Ok(Value::String(text.to_string())),
            _ => Ok(Value::String("all".into())),
        }
        .map(|filter| Box::new(SolanaLogs { filter }) as Box<dyn Kind>),
        _ => return None,
    })
}

/// The members of a Solana notification's `result` these kinds read.
#[derive(Deserialize, Default)]
struct SolanaFields<'a> {
    #[serde(default)]
    slot: Option<u64>,
    #[serde(default)]
    context: Option<Context>,
    #[serde(borrow, default)]
    value: Option<&'a serde_json::value::RawValue>,
    #[serde(default, rename = "rpcbenchProducedAt")]
    produced_at: Option<u64>,
}

#[derive(Deserialize, Default)]
struct Context {
    slot: u64,
}

/// `slotSubscribe`: one notification per slot.
#[derive(Debug)]
struct Slot;

impl Kind for Slot {
    fn name(&self) -> &'static str {
        "slot"
    }

    fn call(&self) -> SubscribeCall {
        SubscribeCall::JsonRpc(JsonRpcSubscribe {
            method: "slotSubscribe",
            params: json!([]),
            unsubscribe: "slotUnsubscribe",
        })
    }

    fn order(&self) -> Order {
        Order::Sequence
    }

    fn item(&self, payload: &[u8]) -> Item {
        let slot: SolanaFields<'_> = fields(payload);
        Item { key: slot.slot.map_or(Key::Unnumbered, Key::Number), produced: exact(slot.produced_at) }
    }
}

/// `accountSubscribe [PUBKEY]`: the account after each change.
#[derive(Debug)]
struct Account {
    key: String,
}

impl Kind for Account {
    fn name(&self) -> &'static str {
        "account"
    }

    fn call(&self) -> SubscribeCall {
        SubscribeCall::JsonRpc(JsonRpcSubscribe {
            method: "accountSubscribe",
            params: json!([self.key, {"encoding": "base64", "commitment": "confirmed"}]),
            unsubscribe: "accountUnsubscribe",
        })
    }

    fn order(&self) -> Order {
        Order::Ordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        let update: SolanaFields<'_> = fields(payload);
        let key = update.context.map_or(Key::Unnumbered, |context| Key::Number(context.slot));
        Item { key, produced: exact(update.produced_at) }
    }
}

/// `logsSubscribe [FILTER]`: log lines, in no order.
#[derive(Debug)]
struct SolanaLogs {
    filter: Value,
}

impl Kind for SolanaLogs {
    fn name(&self) -> &'static str {
        "logs-solana"
    }

    fn call(&self) -> SubscribeCall {
        SubscribeCall::JsonRpc(JsonRpcSubscribe {
            method: "logsSubscribe",
            params: json!([self.filter]),
            unsubscribe: "logsUnsubscribe",
        })
    }

    fn order(&self) -> Order {
        Order::Unordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        let logs: SolanaFields<'_> = fields(payload);
        let identity = logs.value.map_or(payload, |value| value.get().as_bytes());
        Item { key: Key::Identity(fingerprint(identity)), produced: exact(logs.produced_at) }
    }
}
