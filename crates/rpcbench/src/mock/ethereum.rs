//! The synthetic Ethereum node: a deterministic EVM chain derived from the seed, answered
//! with the shapes and error messages of geth's JSON-RPC API.
//!
//! Nothing is stored. Block `n` exists once `n <= latest` (1000 at start, one more every
//! `slot_time`); every block, transaction, receipt and log is a pure function of
//! (seed, number, index). Block and transaction hashes embed their position so they can
//! be looked up again. Every third transaction is an ERC-20 `transfer` on one of three
//! token contracts and emits a `Transfer` log; the others are plain value transfers.
//! Bloom filters are left empty (all zero).

use std::collections::HashSet;
use std::sync::{Mutex, MutexGuard};
use std::time::{Duration, Instant};

use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::prng::{
    bytes, draw, hex_data, hex_quantity, mix, parse_hex_bytes, parse_hex_quantity, parse_hex_vec, range,
};
use super::rpc::{
    method_not_found, positional_params, RpcError, INTERNAL_ERROR, INVALID_PARAMS, LIMIT_EXCEEDED,
};

/// The latest block when the server starts.
pub(crate) const START_BLOCK: u64 = 1000;
const ACCOUNT_COUNT: u64 = 200;
const TOKEN_COUNT: u64 = 3;
/// The widest `eth_getLogs` block range.
pub(crate) const MAX_LOG_RANGE: u64 = 10_000;
const MAX_LOGS: usize = 10_000;
const GAS_LIMIT: u64 = 30_000_000;
const GWEI: u64 = 1_000_000_000;
const TRANSFER_TOPIC: &str = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const EMPTY_UNCLES: &str = "0x1dcc4de8dec75d7aab85b567b6ccd41ad312451b948a7413f0a142fd40d49347";
const CLIENT_VERSION: &str = concat!("rpcbench-mock/v", env!("CARGO_PKG_VERSION"), "/ethereum");
/// geth's code for server-side errors such as "header not found".
const SERVER_ERROR: i64 = -32000;

const S_BLOCK: u64 = 101;
const S_ACCOUNT: u64 = 102;
const S_TOKEN: u64 = 103;
const S_TX_COUNT: u64 = 104;
const S_TX: u64 = 105;
const S_TX_HASH: u64 = 106;
const S_MASK: u64 = 107;
const S_ROOTS: u64 = 108;
const S_BALANCE: u64 = 109;
const S_CALL: u64 = 110;

/// One generated transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Tx {
    number: u64,
    index: u64,
    from: [u8; 20],
    /// The account credited (the token recipient for token transfers).
    recipient: [u8; 20],
    /// The token contract, for ERC-20 transfers.
    token: Option<[u8; 20]>,
    value: u64,
    nonce: u64,
    priority_fee: u64,
}

impl Tx {
    fn to(&self) -> [u8; 20] {
        self.token.unwrap_or(self.recipient)
    }

    fn input(&self) -> Vec<u8> {
        match self.token {
            None => Vec::new(),
            Some(_) => {
                let mut input = vec![0xa9, 0x05, 0x9c, 0xbb];
                input.extend_from_slice(&word_address(&self.recipient));
                input.extend_from_slice(&word_u64(self.value));
                input
            }
        }
    }

    fn gas_used(&self) -> u64 {
        if self.token.is_some() {
            51_234
        } else {
            21_000
        }
    }
}

fn word_address(address: &[u8; 20]) -> [u8; 32] {
    let mut word = [0u8; 32];
    word[12..].copy_from_slice(address);
    word
}

fn word_u64(value: u64) -> [u8; 32] {
    let mut word = [0u8; 32];
    word[24..].copy_from_slice(&value.to_be_bytes());
    word
}

/// How a block lists its transactions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockTxs {
    /// Not at all (a header).
    None,
    /// By hash.
    Hashes,
    /// As transaction objects.
    Full,
}

/// A block reference after tag resolution.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BlockRef {
    Number(u64),
    /// A number past the head, or an unknown hash.
    Missing,
}

/// A log filter of `eth_getLogs`.
#[derive(Debug, Default)]
struct LogFilter {
    addresses: Option<HashSet<[u8; 20]>>,
    topics: Vec<Option<HashSet<[u8; 32]>>>,
}

/// The synthetic EVM chain and its RPC methods.
#[derive(Debug)]
pub(crate) struct EthereumNode {
    seed: u64,
    slot_time: Duration,
    chain_id: u64,
    started: Instant,
    head: super::faults::HeadView,
    genesis_unix_ms: u128,
    accounts: Vec<[u8; 20]>,
    tokens: Vec<[u8; 20]>,
    mask: u64,
    /// Real accounts and the blocks' own transactions (`mempool.rs`), when asked for.
    mempool: Option<Mutex<super::mempool::Mempool>>,
}

impl EthereumNode {
    pub(crate) fn new(
        seed: u64,
        slot_time: Duration,
        chain_id: u64,
        started: Instant,
        unix_now: u64,
    ) -> Self {
        EthereumNode {
            seed,
            slot_time,
            chain_id,
            started,
            head: super::faults::HeadView::default(),
            genesis_unix_ms: (u128::from(unix_now) * 1000)
                .saturating_sub(u128::from(START_BLOCK) * slot_time.as_millis()),
            accounts: (0..ACCOUNT_COUNT).map(|i| bytes(seed, S_ACCOUNT, i, 0)).collect(),
            tokens: (0..TOKEN_COUNT).map(|i| bytes(seed, S_TOKEN, i, 0)).collect(),
            mask: mix(seed, S_MASK),
            mempool: None,
        }
    }

    /// Keeps a mempool: the dev mnemonic's first accounts funded at genesis, raw transactions
    /// checked and included in the blocks that follow (block time: the slot time).
    pub(crate) fn with_mempool(mut self, options: Option<&super::mempool::TxPoolOptions>) -> Self {
        self.mempool = options.map(|options| {
            Mutex::new(super::mempool::Mempool::from_options(
                options,
                self.chain_id,
                self.seed,
                self.latest(),
            ))
        });
        self
    }

    /// The mempool, with every block up to the head produced.
    fn pool(&self) -> Option<MutexGuard<'_, super::mempool::Mempool>> {
        let mut pool = self.mempool.as_ref()?.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let latest = self.latest();
        while pool.head() < latest {
            pool.produce();
        }
        Some(pool)
    }

    // ------------------------------------------------------------ chain

    fn latest(&self) -> u64 {
        self.head.shown(START_BLOCK, self.started.elapsed(), self.slot_time)
    }

    /// How the head is shown.
    pub(crate) fn head_view(&self) -> &super::faults::HeadView {
        &self.head
    }

    /// Shows the head as `head` says (behind, late, stalled, phantom).
    pub(crate) fn with_head(mut self, head: super::faults::HeadView) -> Self {
        self.head = head;
        self
    }

    fn block_hash(&self, number: u64) -> [u8; 32] {
        let mut hash: [u8; 32] = bytes(self.seed, S_BLOCK, number, 0);
        hash[24..].copy_from_slice(&(number ^ self.mask).to_be_bytes());
        hash
    }

    fn locate_block(&self, hash: &[u8; 32]) -> Option<u64> {
        let number = u64::from_be_bytes(hash[24..].try_into().ok()?) ^ self.mask;
        (number <= self.latest() && self.block_hash(number) == *hash).then_some(number)
    }

    fn parent_hash(&self, number: u64) -> [u8; 32] {
        if number == 0 {
            [0; 32]
        } else {
            self.block_hash(number - 1)
        }
    }

    fn tx_count(&self, number: u64) -> u64 {
        if number == 0 {
            0
        } else {
            range(draw(self.seed, S_TX_COUNT, number, 0), 0, 40)
        }
    }

    fn tx_hash(&self, number: u64, index: u64) -> [u8; 32] {
        let mut hash: [u8; 32] = bytes(self.seed, S_TX_HASH, number, index);
        hash[20..28].copy_from_slice(&(number ^ self.mask).to_be_bytes());
        hash[28..30].copy_from_slice(&((index as u16) ^ (self.mask as u16)).to_be_bytes());
        hash
    }

    fn locate_tx(&self, hash: &[u8; 32]) -> Option<(u64, u64)> {
        let number = u64::from_be_bytes(hash[20..28].try_into().ok()?) ^ self.mask;
        let index = u64::from(u16::from_be_bytes(hash[28..30].try_into().ok()?) ^ (self.mask as u16));
        if number > self.latest() || index >= self.tx_count(number) {
            return None;
        }
        (self.tx_hash(number, index) == *hash).then_some((number, index))
    }

    fn tx(&self, number: u64, index: u64) -> Tx {
        let base = draw(self.seed, S_TX, number, index);
        let n = self.accounts.len() as u64;
        let from = base % n;
        let to = (from + 1 + mix(base, 1) % (n - 1)) % n;
        let token = (index % 3 == 0).then(|| self.tokens[(mix(base, 2) % TOKEN_COUNT) as usize]);
        Tx {
            number,
            index,
            from: self.accounts[from as usize],
            recipient: self.accounts[to as usize],
            token,
            value: range(mix(base, 3), 1_000_000, 5_000_000_000_000_000_000),
            nonce: mix(base, 4) % 1000 + number / 8,
            priority_fee: range(mix(base, 5), GWEI / 10, 2 * GWEI),
        }
    }

    /// `eth_feeHistory(count, newest, percentiles)`: the base fees of the blocks asked and the
    /// next one, half-full blocks, and the priority fee `eth_maxPriorityFeePerGas` answers at
    /// every percentile.
    fn fee_history(&self, p: &[Value]) -> Result<Value, RpcError> {
        let count = match p.first() {
            Some(Value::Number(n)) => n.as_u64(),
            Some(Value::String(s)) => s.strip_prefix("0x").and_then(|d| u64::from_str_radix(d, 16).ok()),
            _ => None,
        }
        .ok_or_else(|| RpcError::invalid_params("invalid argument 0: block count expected"))?
        .clamp(1, 1024);
        let newest = match self.block_ref(p.get(1).ok_or_else(|| missing(1))?, 1)? {
            BlockRef::Number(number) => number,
            BlockRef::Missing => return Err(RpcError::new(SERVER_ERROR, "header not found")),
        };
        let oldest = newest.saturating_sub(count - 1);
        let percentiles = p.get(2).and_then(Value::as_array).map_or(0, Vec::len);
        let base: Vec<Value> =
            (oldest..=newest + 1).map(|n| json!(hex_quantity(self.base_fee(n).into()))).collect();
        let blocks = (newest + 1 - oldest) as usize;
        let mut answer = json!({
            "oldestBlock": hex_quantity(oldest.into()),
            "baseFeePerGas": base,
            "gasUsedRatio": vec![0.5; blocks],
        });
        if percentiles > 0 {
            answer["reward"] = json!(vec![vec![hex_quantity(GWEI.into()); percentiles]; blocks]);
        }
        Ok(answer)
    }

    fn base_fee(&self, number: u64) -> u64 {
        range(draw(self.seed, S_BLOCK, number, 1), GWEI, 20 * GWEI)
    }

    fn timestamp(&self, number: u64) -> u64 {
        ((self.genesis_unix_ms + u128::from(number) * self.slot_time.as_millis()) / 1000) as u64
    }

    fn tx_json(&self, tx: &Tx) -> Value {
        let base_fee = self.base_fee(tx.number);
        let signature = bytes::<64>(self.seed, S_TX_HASH, tx.number, tx.index ^ (1 << 63));
        let y_parity = u64::from(signature[0] & 1);
        json!({
            "blockHash": hex_data(&self.block_hash(tx.number)),
            "blockNumber": hex_quantity(tx.number.into()),
            "from": hex_data(&tx.from),
            "gas": hex_quantity(if tx.token.is_some() { 90_000 } else { 21_000 }),
            "gasPrice": hex_quantity((base_fee + tx.priority_fee).into()),
            "maxFeePerGas": hex_quantity((2 * base_fee + tx.priority_fee).into()),
            "maxPriorityFeePerGas": hex_quantity(tx.priority_fee.into()),
            "hash": hex_data(&self.tx_hash(tx.number, tx.index)),
            "input": hex_data(&tx.input()),
            "nonce": hex_quantity(tx.nonce.into()),
            "to": hex_data(&tx.to()),
            "transactionIndex": hex_quantity(tx.index.into()),
            "value": hex_quantity(if tx.token.is_some() { 0 } else { tx.value.into() }),
            "type": "0x2",
            "accessList": [],
            "chainId": hex_quantity(self.chain_id.into()),
            "v": hex_quantity(y_parity.into()),
            "yParity": hex_quantity(y_parity.into()),
            "r": hex_data(&signature[..32]),
            "s": hex_data(&signature[32..]),
        })
    }

    /// The log of a token transfer, with its index in the block.
    fn log_json(&self, tx: &Tx) -> Option<Value> {
        let token = tx.token?;
        Some(json!({
            "address": hex_data(&token),
            "topics": [TRANSFER_TOPIC, hex_data(&word_address(&tx.from)), hex_data(&word_address(&tx.recipient))],
            "data": hex_data(&word_u64(tx.value)),
            "blockNumber": hex_quantity(tx.number.into()),
            "blockHash": hex_data(&self.block_hash(tx.number)),
            "transactionHash": hex_data(&self.tx_hash(tx.number, tx.index)),
            "transactionIndex": hex_quantity(tx.index.into()),
            "logIndex": hex_quantity((tx.index / 3).into()),
            "removed": false,
        }))
    }

    fn receipt_json(&self, tx: &Tx) -> Value {
        let cumulative: u64 = (0..=tx.index).map(|i| self.tx(tx.number, i).gas_used()).sum();
        let logs: Vec<Value> = self.log_json(tx).into_iter().collect();
        json!({
            "blockHash": hex_data(&self.block_hash(tx.number)),
            "blockNumber": hex_quantity(tx.number.into()),
            "contractAddress": null,
            "cumulativeGasUsed": hex_quantity(cumulative.into()),
            "effectiveGasPrice": hex_quantity((self.base_fee(tx.number) + tx.priority_fee).into()),
            "from": hex_data(&tx.from),
            "gasUsed": hex_quantity(tx.gas_used().into()),
            "logs": logs,
            "logsBloom": hex_data(&[0u8; 256]),
            "status": "0x1",
            "to": hex_data(&tx.to()),
            "transactionHash": hex_data(&self.tx_hash(tx.number, tx.index)),
            "transactionIndex": hex_quantity(tx.index.into()),
            "type": "0x2",
        })
    }

    fn block_json(&self, number: u64, full: bool) -> Value {
        let listed = if full { BlockTxs::Full } else { BlockTxs::Hashes };
        self.block_json_with(number, listed)
    }

    /// Block `number` with its transactions listed as `listed` says (`None`: no list at all).
    fn block_json_with(&self, number: u64, listed: BlockTxs) -> Value {
        let count = self.tx_count(number);
        let txs: Vec<Tx> = (0..count).map(|i| self.tx(number, i)).collect();
        let gas_used: u64 = txs.iter().map(Tx::gas_used).sum();
        let mut transactions: Vec<Value> = match listed {
            BlockTxs::Full => txs.iter().map(|tx| self.tx_json(tx)).collect(),
            BlockTxs::Hashes => (0..count).map(|i| json!(hex_data(&self.tx_hash(number, i)))).collect(),
            BlockTxs::None => Vec::new(),
        };
        let mut gas_used = gas_used;
        let mut gas_limit = GAS_LIMIT;
        if let Some(pool) = self.pool() {
            // A pool's blocks hold what its gas limit lets them (`--block-gas-limit`).
            gas_limit = pool.block_gas_limit();
            if listed != BlockTxs::None {
                let full = listed == BlockTxs::Full;
                transactions.extend(super::mempool_rpc::block_transactions(&pool, number, full, |n| {
                    self.block_hash(n)
                }));
            }
            gas_used += pool.block_gas(number);
        }
        let roots: [u8; 96] = bytes(self.seed, S_ROOTS, number, 0);
        let miner = self.accounts[(draw(self.seed, S_BLOCK, number, 2) % ACCOUNT_COUNT) as usize];
        json!({
            "baseFeePerGas": hex_quantity(self.base_fee(number).into()),
            "difficulty": "0x0",
            "extraData": "0x",
            "gasLimit": hex_quantity(gas_limit.into()),
            "gasUsed": hex_quantity(gas_used.into()),
            "hash": hex_data(&self.block_hash(number)),
            "logsBloom": hex_data(&[0u8; 256]),
            "miner": hex_data(&miner),
            "mixHash": hex_data(&roots[64..96]),
            "nonce": "0x0000000000000000",
            "number": hex_quantity(number.into()),
            "parentHash": hex_data(&self.parent_hash(number)),
            "receiptsRoot": hex_data(&roots[..32]),
            "sha3Uncles": EMPTY_UNCLES,
            "size": hex_quantity((600 + 110 * count).into()),
            "stateRoot": hex_data(&roots[32..64]),
            "timestamp": hex_quantity(self.timestamp(number).into()),
            "totalDifficulty": "0x0",
            "transactions": transactions,
            "transactionsRoot": hex_data(&bytes::<32>(self.seed, S_ROOTS, number, 1)),
            "uncles": [],
            "withdrawals": [],
            "withdrawalsRoot": hex_data(&bytes::<32>(self.seed, S_ROOTS, number, 2)),
        })
    }

    // ------------------------------------------------------------ subscriptions (ws.rs)

    /// The header of block `number` as `newHeads` sends it: the block without its
    /// transactions, uncles, withdrawals, size and total difficulty, as geth's header JSON.
    pub(crate) fn head_json(&self, number: u64) -> Value {
        // Without the transactions: a head of a block of thousands is not built with their
        // hashes only to drop them.
        let mut head = self.block_json_with(number, BlockTxs::None);
        if let Value::Object(fields) = &mut head {
            for key in ["transactions", "uncles", "withdrawals", "size", "totalDifficulty"] {
                fields.remove(key);
            }
        }
        head
    }

    /// The logs of block `number` (its token transfers), in order.
    pub(crate) fn block_logs(&self, number: u64) -> Vec<Value> {
        (0..self.tx_count(number)).filter_map(|index| self.log_json(&self.tx(number, index))).collect()
    }

    /// The hashes of block `number`'s transactions, sent as `newPendingTransactions`.
    pub(crate) fn block_tx_hashes(&self, number: u64) -> Vec<String> {
        (0..self.tx_count(number)).map(|index| hex_data(&self.tx_hash(number, index))).collect()
    }

    fn balance(&self, address: &[u8; 20], number: u64) -> u128 {
        match self.accounts.iter().position(|a| a == address) {
            Some(i) => {
                let base = u128::from(draw(self.seed, S_BALANCE, i as u64, 0) % (1000 * GWEI)) * 1_000_000;
                base + u128::from(number) * 1_000_000_000_000
            }
            None if self.tokens.contains(address) => 0,
            None => 0,
        }
    }

    // ------------------------------------------------------------ params

    /// Resolves a block number or tag (`latest`, `earliest`, `pending`, `safe`, `finalized`),
    /// or a `{blockNumber}` / `{blockHash}` object.
    fn block_ref(&self, value: &Value, index: usize) -> Result<BlockRef, RpcError> {
        let latest = self.latest();
        let resolve = |number: u64| {
            if number > latest {
                BlockRef::Missing
            } else {
                BlockRef::Number(number)
            }
        };
        match value {
            Value::String(text) => match text.as_str() {
                "latest" | "pending" => Ok(BlockRef::Number(latest)),
                "earliest" => Ok(BlockRef::Number(0)),
                "safe" => Ok(BlockRef::Number(latest.saturating_sub(32))),
                "finalized" => Ok(BlockRef::Number(latest.saturating_sub(64))),
                _ => parse_hex_quantity(text).map(resolve).ok_or_else(|| {
                    invalid_argument(index, format!("hex string {text:?} is not a block number or tag"))
                }),
            },
            Value::Object(object) => {
                if let Some(hash) = object.get("blockHash") {
                    let hash = hash32(hash, index)?;
                    Ok(self.locate_block(&hash).map_or(BlockRef::Missing, BlockRef::Number))
                } else if let Some(number) = object.get("blockNumber") {
                    self.block_ref(number, index)
                } else {
                    Err(invalid_argument(index, "block object needs blockNumber or blockHash"))
                }
            }
            other => {
                Err(invalid_argument(index, format!("cannot unmarshal {} into a block number", kind(other))))
            }
        }
    }

    /// The block a state query runs at; geth answers "header not found" past the head.
    fn state_block(&self, params: &[Value], index: usize) -> Result<u64, RpcError> {
        let value = params.get(index).ok_or_else(|| missing(index))?;
        match self.block_ref(value, index)? {
            BlockRef::Number(number) => Ok(number),
            BlockRef::Missing => Err(RpcError::new(SERVER_ERROR, "header not found")),
        }
    }

    fn log_bound(&self, filter: &Map<String, Value>, key: &str) -> Result<u64, RpcError> {
        match filter.get(key).filter(|v| !v.is_null()) {
            None => Ok(self.latest()),
            Some(value) => match self.block_ref(value, 0)? {
                BlockRef::Number(number) => Ok(number),
                BlockRef::Missing => Ok(parse_hex_quantity(value.as_str().unwrap_or("")).unwrap_or(u64::MAX)),
            },
        }
    }

    fn get_logs(&self, params: &[Value]) -> Result<Value, RpcError> {
        let filter = match params.first() {
            Some(Value::Object(filter)) => filter,
            Some(other) => {
                return Err(invalid_argument(0, format!("cannot unmarshal {} into a filter", kind(other))))
            }
            None => return Err(missing(0)),
        };
        let (from, to) = if let Some(hash) = filter.get("blockHash").filter(|v| !v.is_null()) {
            if filter.contains_key("fromBlock") || filter.contains_key("toBlock") {
                return Err(invalid_argument(
                    0,
                    "cannot specify both BlockHash and FromBlock/ToBlock, choose one or the other",
                ));
            }
            match self.locate_block(&hash32(hash, 0)?) {
                Some(number) => (number, number),
                None => return Err(RpcError::new(SERVER_ERROR, "unknown block")),
            }
        } else {
            (self.log_bound(filter, "fromBlock")?, self.log_bound(filter, "toBlock")?)
        };
        if from > to {
            return Err(RpcError::new(SERVER_ERROR, "invalid block range"));
        }
        if to - from >= MAX_LOG_RANGE {
            return Err(RpcError::new(
                LIMIT_EXCEEDED,
                format!("exceed maximum block range: {MAX_LOG_RANGE}"),
            ));
        }
        let mut log_filter = LogFilter::default();
        match filter.get("address") {
            None | Some(Value::Null) => {}
            Some(Value::Array(list)) => {
                log_filter.addresses = Some(list.iter().map(|a| address(a, 0)).collect::<Result<_, _>>()?);
            }
            Some(single) => log_filter.addresses = Some(HashSet::from([address(single, 0)?])),
        }
        match filter.get("topics") {
            None | Some(Value::Null) => {}
            Some(Value::Array(positions)) => {
                if positions.len() > 4 {
                    return Err(invalid_argument(0, "too many topics in the filter (the limit is 4)"));
                }
                for position in positions {
                    log_filter.topics.push(match position {
                        Value::Null => None,
                        Value::Array(any) if any.is_empty() => None,
                        Value::Array(any) => {
                            Some(any.iter().map(|t| hash32(t, 0)).collect::<Result<_, _>>()?)
                        }
                        single => Some(HashSet::from([hash32(single, 0)?])),
                    });
                }
            }
            Some(other) => {
                return Err(invalid_argument(0, format!("cannot unmarshal {} into topics", kind(other))))
            }
        }
        let latest = self.latest();
        let mut logs = Vec::new();
        if from > latest {
            return Ok(Value::Array(logs));
        }
        for number in from..=to.min(latest) {
            for index in (0..self.tx_count(number)).step_by(3) {
                let tx = self.tx(number, index);
                let Some(token) = tx.token else { continue };
                if log_filter.addresses.as_ref().is_some_and(|set| !set.contains(&token)) {
                    continue;
                }
                let topics = [
                    parse_hex_bytes::<32>(TRANSFER_TOPIC).unwrap_or([0; 32]),
                    word_address(&tx.from),
                    word_address(&tx.recipient),
                ];
                let matches = log_filter.topics.iter().enumerate().all(|(i, wanted)| match wanted {
                    None => i < topics.len(),
                    Some(set) => topics.get(i).is_some_and(|t| set.contains(t)),
                });
                if !matches {
                    continue;
                }
                if logs.len() >= MAX_LOGS {
                    return Err(RpcError::new(
                        LIMIT_EXCEEDED,
                        format!("query returned more than {MAX_LOGS} results"),
                    ));
                }
                logs.extend(self.log_json(&tx));
            }
        }
        Ok(Value::Array(logs))
    }

    // ------------------------------------------------------------ dispatch

    /// Appends the JSON result of one call to `out`, or returns its error: the pool's sends
    /// and receipts (a generator's every call but its block reads) written straight, without
    /// a `Value` of their params or answer; everything else as [`EthereumNode::call`] answers.
    pub(crate) fn call_into(
        &self,
        method: &str,
        params: Option<&RawValue>,
        out: &mut Vec<u8>,
    ) -> Result<(), RpcError> {
        if let (Some(raw), "eth_sendRawTransaction" | "eth_getTransactionReceipt") = (params, method) {
            // One hex string, borrowed (anything else takes the general reading and its errors).
            if let Ok([text]) = serde_json::from_str::<[&str; 1]>(raw.get()) {
                if let Some(mut pool) = self.pool() {
                    let wrote = super::mempool_rpc::write_answer(
                        &mut pool,
                        method,
                        Some(text),
                        |n| self.block_hash(n),
                        out,
                    );
                    if let Some(wrote) = wrote {
                        return wrote;
                    }
                }
            }
        }
        let value = self.call(method, params)?;
        serde_json::to_writer(out, &value).map_err(|err| RpcError::new(INTERNAL_ERROR, err.to_string()))
    }

    pub(crate) fn call(&self, method: &str, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let params = positional_params(params)?;
        let p = params.as_slice();
        if let Some(mut pool) = self.pool() {
            if let Some(answer) = super::mempool_rpc::answer(&mut pool, method, p, |n| self.block_hash(n)) {
                return answer;
            }
        }
        match method {
            "eth_chainId" => Ok(json!(hex_quantity(self.chain_id.into()))),
            "net_version" => Ok(json!(self.chain_id.to_string())),
            "net_listening" => Ok(json!(true)),
            "web3_clientVersion" => Ok(json!(CLIENT_VERSION)),
            "eth_syncing" => Ok(json!(false)),
            "eth_blockNumber" => Ok(json!(hex_quantity((self.latest() + self.head.phantom).into()))),
            "eth_gasPrice" => Ok(json!(hex_quantity((self.base_fee(self.latest()) + GWEI).into()))),
            "eth_maxPriorityFeePerGas" => Ok(json!(hex_quantity(GWEI.into()))),
            "eth_feeHistory" => self.fee_history(p),
            "eth_getBalance" => {
                let address = address(p.first().ok_or_else(|| missing(0))?, 0)?;
                let number = self.state_block(p, 1)?;
                Ok(json!(hex_quantity(self.balance(&address, number))))
            }
            "eth_getTransactionCount" => {
                let address = address(p.first().ok_or_else(|| missing(0))?, 0)?;
                let number = self.state_block(p, 1)?;
                let count = match self.accounts.iter().position(|a| *a == address) {
                    Some(i) => draw(self.seed, S_BALANCE, i as u64, 1) % 500 + number / 5,
                    None => 0,
                };
                Ok(json!(hex_quantity(count.into())))
            }
            "eth_getCode" => {
                let address = address(p.first().ok_or_else(|| missing(0))?, 0)?;
                self.state_block(p, 1)?;
                match self.tokens.iter().position(|t| *t == address) {
                    Some(i) => {
                        let mut code = vec![0x60, 0x80, 0x60, 0x40, 0x52];
                        code.extend_from_slice(&bytes::<64>(self.seed, S_TOKEN, i as u64, 1));
                        Ok(json!(hex_data(&code)))
                    }
                    None => Ok(json!("0x")),
                }
            }
            "eth_call" => {
                let (to, data) = call_object(p.first().ok_or_else(|| missing(0))?)?;
                if let Some(block) = p.get(1) {
                    if let BlockRef::Missing = self.block_ref(block, 1)? {
                        return Err(RpcError::new(SERVER_ERROR, "header not found"));
                    }
                }
                let mut seed = draw(self.seed, S_CALL, data.len() as u64, 0);
                for chunk in to.iter().chain(data.iter()).collect::<Vec<_>>().chunks(8) {
                    let mut word = [0u8; 8];
                    for (slot, byte) in word.iter_mut().zip(chunk) {
                        *slot = **byte;
                    }
                    seed = mix(seed, u64::from_le_bytes(word));
                }
                Ok(json!(hex_data(&bytes::<32>(seed, S_CALL, 0, 0))))
            }
            "eth_estimateGas" => {
                let (to, data) = call_object(p.first().ok_or_else(|| missing(0))?)?;
                // A deploy (no `to`) pays contract creation as the mempool charges it.
                let create: u64 = if to.is_empty() { 32_000 } else { 0 };
                let gas: u64 =
                    21_000 + create + data.iter().map(|b| if *b == 0 { 4 } else { 16 }).sum::<u64>();
                Ok(json!(hex_quantity(gas.into())))
            }
            "eth_getBlockByNumber" => {
                let block = self.block_ref(p.first().ok_or_else(|| missing(0))?, 0)?;
                let full = full_flag(p)?;
                Ok(match block {
                    BlockRef::Number(number) => self.block_json(number, full),
                    BlockRef::Missing => Value::Null,
                })
            }
            "eth_getBlockByHash" => {
                let hash = hash32(p.first().ok_or_else(|| missing(0))?, 0)?;
                let full = full_flag(p)?;
                Ok(self.locate_block(&hash).map_or(Value::Null, |number| self.block_json(number, full)))
            }
            "eth_getBlockTransactionCountByNumber" => {
                let block = self.block_ref(p.first().ok_or_else(|| missing(0))?, 0)?;
                Ok(match block {
                    BlockRef::Number(number) => json!(hex_quantity(self.tx_count(number).into())),
                    BlockRef::Missing => Value::Null,
                })
            }
            "eth_getTransactionByHash" => {
                let hash = hash32(p.first().ok_or_else(|| missing(0))?, 0)?;
                Ok(self.locate_tx(&hash).map_or(Value::Null, |(n, i)| self.tx_json(&self.tx(n, i))))
            }
            "eth_getTransactionReceipt" => {
                let hash = hash32(p.first().ok_or_else(|| missing(0))?, 0)?;
                Ok(self.locate_tx(&hash).map_or(Value::Null, |(n, i)| self.receipt_json(&self.tx(n, i))))
            }
            "eth_getLogs" => self.get_logs(p),
            _ => Err(method_not_found(method)),
        }
    }
}

fn kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "bool",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

/// geth's message for a bad positional argument.
fn invalid_argument(index: usize, what: impl std::fmt::Display) -> RpcError {
    RpcError::new(INVALID_PARAMS, format!("invalid argument {index}: {what}"))
}

fn missing(index: usize) -> RpcError {
    RpcError::new(INVALID_PARAMS, format!("missing value for required argument {index}"))
}

fn hex_string(value: &Value, index: usize) -> Result<&str, RpcError> {
    let text = value.as_str().ok_or_else(|| {
        invalid_argument(index, format!("json: cannot unmarshal {} into a hex string", kind(value)))
    })?;
    if !(text.starts_with("0x") || text.starts_with("0X")) {
        return Err(invalid_argument(index, "hex string without 0x prefix"));
    }
    Ok(text)
}

fn address(value: &Value, index: usize) -> Result<[u8; 20], RpcError> {
    let text = hex_string(value, index)?;
    if text.len() != 42 {
        return Err(invalid_argument(
            index,
            format!("hex string has length {}, want 40 for common.Address", text.len() - 2),
        ));
    }
    parse_hex_bytes(text).ok_or_else(|| invalid_argument(index, "invalid hex string for common.Address"))
}

fn hash32(value: &Value, index: usize) -> Result<[u8; 32], RpcError> {
    let text = hex_string(value, index)?;
    if text.len() != 66 {
        return Err(invalid_argument(
            index,
            format!("hex string has length {}, want 64 for common.Hash", text.len() - 2),
        ));
    }
    parse_hex_bytes(text).ok_or_else(|| invalid_argument(index, "invalid hex string for common.Hash"))
}

/// The `to` and call data of an `eth_call` / `eth_estimateGas` object.
fn call_object(value: &Value) -> Result<(Vec<u8>, Vec<u8>), RpcError> {
    let Value::Object(call) = value else {
        return Err(invalid_argument(
            0,
            format!("json: cannot unmarshal {} into a transaction call object", kind(value)),
        ));
    };
    let to = match call.get("to").filter(|v| !v.is_null()) {
        Some(to) => address(to, 0)?.to_vec(),
        None => Vec::new(),
    };
    if let Some(from) = call.get("from").filter(|v| !v.is_null()) {
        address(from, 0)?;
    }
    let data = match call.get("input").or_else(|| call.get("data")).filter(|v| !v.is_null()) {
        Some(data) => parse_hex_vec(hex_string(data, 0)?)
            .ok_or_else(|| invalid_argument(0, "invalid hex string for call data"))?,
        None => Vec::new(),
    };
    Ok((to, data))
}

fn full_flag(params: &[Value]) -> Result<bool, RpcError> {
    match params.get(1) {
        Some(Value::Bool(full)) => Ok(*full),
        Some(other) => Err(invalid_argument(
            1,
            format!("json: cannot unmarshal {} into Go value of type bool", kind(other)),
        )),
        None => Err(missing(1)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(seed: u64) -> EthereumNode {
        EthereumNode::new(seed, Duration::from_secs(2), 1337, Instant::now(), 1_700_000_000)
    }

    #[test]
    fn a_block_of_a_node_with_a_mempool_shows_the_pools_block_gas_limit() {
        let raw = |value: Value| serde_json::value::to_raw_value(&value).unwrap();
        let latest = raw(json!(["latest", false]));
        assert_eq!(
            node(1).call("eth_getBlockByNumber", Some(&latest)).unwrap()["gasLimit"],
            json!("0x1c9c380")
        );
        let options =
            super::super::mempool::TxPoolOptions { block_gas_limit: 63_000_000, ..Default::default() };
        let pooled = node(1).with_mempool(Some(&options));
        let block = pooled.call("eth_getBlockByNumber", Some(&latest)).unwrap();
        assert_eq!(block["gasLimit"], json!(hex_quantity(63_000_000)), "{block}");
    }

    #[test]
    fn a_node_behind_answers_a_head_that_many_blocks_back_and_serves_nothing_past_it() {
        // Ten minutes of one-minute blocks, on one clock for all three nodes.
        let started = Instant::now().checked_sub(Duration::from_secs(600)).expect("the clock has run 10 min");
        let minute = Duration::from_secs(60);
        let at = |lag: u64, delay: Duration| {
            EthereumNode::new(1, minute, 1337, started, 1_700_000_000)
                .with_head(super::super::faults::HeadView { lag, delay, ..Default::default() })
        };
        let (truth, behind, late) = (at(0, Duration::ZERO), at(3, Duration::ZERO), at(0, minute * 5 / 2));
        assert_eq!(truth.latest(), START_BLOCK + 10);
        assert_eq!(behind.latest(), START_BLOCK + 7);
        // Shown 150 s late: the head of 450 s ago.
        assert_eq!(late.latest(), START_BLOCK + 7);
        let raw = |value: Value| serde_json::value::to_raw_value(&value).unwrap();
        assert_eq!(
            behind.call("eth_blockNumber", None).unwrap(),
            json!(hex_quantity((START_BLOCK + 7).into()))
        );
        let tip = raw(json!([hex_quantity((START_BLOCK + 10).into()), false]));
        assert_eq!(behind.call("eth_getBlockByNumber", Some(&tip)).unwrap(), Value::Null);
        assert_ne!(truth.call("eth_getBlockByNumber", Some(&tip)).unwrap(), Value::Null);
    }

    #[test]
    fn same_seed_same_block() {
        assert_eq!(node(4).block_json(500, true), node(4).block_json(500, true));
        assert_ne!(node(4).block_json(500, true), node(5).block_json(500, true));
    }

    #[test]
    fn hashes_locate_blocks_and_transactions() {
        let node = node(1);
        for number in [0, 1, 999, 1000] {
            assert_eq!(node.locate_block(&node.block_hash(number)), Some(number));
        }
        assert_eq!(node.locate_block(&node.block_hash(5000)), None, "future blocks do not exist yet");
        let number = (1..100).find(|n| node.tx_count(*n) > 4).unwrap();
        assert_eq!(node.locate_tx(&node.tx_hash(number, 4)), Some((number, 4)));
        assert_eq!(node.locate_tx(&[0; 32]), None);
    }

    #[test]
    fn token_transfers_encode_their_call_data() {
        let node = node(2);
        let number = (1..100).find(|n| node.tx_count(*n) > 3).unwrap();
        let tx = node.tx(number, 3);
        assert!(tx.token.is_some());
        let input = tx.input();
        assert_eq!(input.len(), 4 + 64);
        assert_eq!(&input[16..36], &tx.recipient);
        assert!(node.tx(number, 1).token.is_none());
        assert!(node.tx(number, 1).input().is_empty());
    }
}
