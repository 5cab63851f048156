//! Ethereum subscriptions (`eth_subscribe`): `newHeads` (a sequence of block numbers), `logs`
//! (ordered by block and log index) and `newPendingTransactions` (hashes, no order).

use std::time::{Duration, UNIX_EPOCH};

use serde::Deserialize;
use serde_json::{json, Value};

use super::{exact, fields, fingerprint, json_argument, no_argument, Item, Key, Kind, Order, Produced};
use crate::transport::feed::{JsonRpcSubscribe, SubscribeCall};
use crate::util::units::parse_hex_quantity;

/// How these kinds are written, for messages.
pub(super) const SPELLINGS: &str = "newHeads, logs[:FILTER], newPendingTransactions";

/// The Ethereum kind `name` (with its argument), if it is one.
pub(super) fn parse(name: &str, argument: Option<&str>) -> Option<Result<Box<dyn Kind>, String>> {
    Some(match name {
        "newHeads" => no_argument(name, argument, Box::new(NewHeads)),
        "logs" => json_argument(name, argument, Value::Object(Default::default()))
            .map(|filter| Box::new(EthLogs { filter }) as Box<dyn Kind>),
        "newPendingTransactions" => no_argument(name, argument, Box::new(NewPendingTransactions)),
        _ => return None,
    })
}

fn eth_subscribe(params: Value) -> SubscribeCall {
    SubscribeCall::JsonRpc(JsonRpcSubscribe {
        method: "eth_subscribe",
        params,
        unsubscribe: "eth_unsubscribe",
    })
}

/// `eth_subscribe ["newHeads"]`: one header per block.
#[derive(Debug)]
struct NewHeads;

#[derive(Deserialize, Default)]
struct HeaderFields<'a> {
    #[serde(default)]
    number: Option<&'a str>,
    #[serde(default)]
    timestamp: Option<&'a str>,
    #[serde(default, rename = "rpcbenchProducedAt")]
    produced_at: Option<u64>,
}

impl Kind for NewHeads {
    fn name(&self) -> &'static str {
        "newHeads"
    }

    fn call(&self) -> SubscribeCall {
        eth_subscribe(json!(["newHeads"]))
    }

    fn order(&self) -> Order {
        Order::Sequence
    }

    fn item(&self, payload: &[u8]) -> Item {
        let header: HeaderFields<'_> = fields(payload);
        let key = header.number.and_then(parse_hex_quantity).map_or(Key::Unnumbered, Key::Number);
        let produced = exact(header.produced_at).or_else(|| {
            // A header's own time: whole seconds.
            let seconds = header.timestamp.and_then(parse_hex_quantity)?;
            Some(Produced { at: UNIX_EPOCH.checked_add(Duration::from_secs(seconds))?, seconds: true })
        });
        Item { key, produced }
    }
}

/// `eth_subscribe ["logs", FILTER]`.
#[derive(Debug)]
struct EthLogs {
    filter: Value,
}

#[derive(Deserialize, Default)]
#[serde(rename_all = "camelCase")]
struct LogFields<'a> {
    #[serde(default)]
    block_number: Option<&'a str>,
    #[serde(default)]
    log_index: Option<&'a str>,
    #[serde(default, rename = "rpcbenchProducedAt")]
    produced_at: Option<u64>,
}

/// Log indexes below this share a key with their block number.
const LOG_INDEXES: u64 = 1 << 20;

impl Kind for EthLogs {
    fn name(&self) -> &'static str {
        "logs"
    }

    fn call(&self) -> SubscribeCall {
        eth_subscribe(json!(["logs", self.filter]))
    }

    fn order(&self) -> Order {
        Order::Ordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        let log: LogFields<'_> = fields(payload);
        let block = log.block_number.and_then(parse_hex_quantity);
        let index = log.log_index.and_then(parse_hex_quantity).filter(|&index| index < LOG_INDEXES);
        let key = match (block.and_then(|block| block.checked_mul(LOG_INDEXES)), index) {
            (Some(block), Some(index)) => Key::Number(block | index),
            _ => Key::Unnumbered,
        };
        Item { key, produced: exact(log.produced_at) }
    }
}

/// `eth_subscribe ["newPendingTransactions"]`: transaction hashes, in no order.
#[derive(Debug)]
struct NewPendingTransactions;

impl Kind for NewPendingTransactions {
    fn name(&self) -> &'static str {
        "newPendingTransactions"
    }

    fn call(&self) -> SubscribeCall {
        eth_subscribe(json!(["newPendingTransactions"]))
    }

    fn order(&self) -> Order {
        Order::Unordered
    }

    fn item(&self, payload: &[u8]) -> Item {
        #[derive(Deserialize, Default)]
        struct Stamp {
            #[serde(default, rename = "rpcbenchProducedAt")]
            produced_at: Option<u64>,
        }
        let stamp: Stamp = fields(payload);
        Item { key: Key::Identity(fingerprint(payload)), produced: exact(stamp.produced_at) }
    }
}
