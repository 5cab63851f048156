//! Sampling a target before a run: ask the node for its head, walk back over a bounded window
//! of recent blocks (Ethereum) or slots (Solana) and harvest what it really has into named
//! pools — block numbers, hashes, transaction hashes, addresses, signatures, accounts — that a
//! scenario's generators draw from (`{ pool = "tx_hashes" }`).
//!
//! Every call has a timeout and the number of calls is bounded. Blocks the node cannot serve
//! (null on a pruned Ethereum node, -32004/-32007/-32009 on Solana) are skipped: the window
//! shrinks to what the node holds. A chain without transactions gives empty pools; a generator
//! over an empty pool is reported by the scenario where the generator is written.
//!
//! Pools are saved to and loaded from a JSON file, so that a rerun draws from the same values.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;
use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde::{Deserialize, Serialize};
use serde_json::{json, Value};

use crate::client::{CallError, Endpoint};

/// The pools sampling fills on an Ethereum node.
pub const ETHEREUM_POOLS: &[&str] = &[
    "blocks",
    "block_numbers",
    "block_hashes",
    "tx_hashes",
    "addresses",
    "contracts",
    "funded_accounts",
    "tokens",
];
/// The pools sampling fills on a Solana node.
pub const SOLANA_POOLS: &[&str] = &["slots", "signatures", "accounts", "blockhashes"];

/// The most values kept in one pool.
const POOL_CAP: usize = 2000;
/// Solana blocks fetched with their transactions' accounts (the rest without transactions).
const SOLANA_DETAILED_BLOCKS: usize = 20;
/// Sampled addresses checked for `funded_accounts` (two calls each).
const ACCOUNT_CHECKS: usize = 100;
/// Sampled contracts checked for `tokens` (two calls each).
const TOKEN_CHECKS: usize = 50;
/// ERC-20 `totalSupply()` and `name()`: a contract that answers both is in `tokens`.
const TOKEN_SELECTORS: [&str; 2] = ["0x18160ddd", "0x06fdde03"];

/// The kind of node sampled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SampleChain {
    /// An EVM node (`eth_*` methods).
    Ethereum,
    /// A Solana node.
    Solana,
}

impl SampleChain {
    /// The lowercase name.
    pub fn name(self) -> &'static str {
        match self {
            SampleChain::Ethereum => "ethereum",
            SampleChain::Solana => "solana",
        }
    }

    /// The pools sampling fills on this chain.
    pub fn pools(self) -> &'static [&'static str] {
        match self {
            SampleChain::Ethereum => ETHEREUM_POOLS,
            SampleChain::Solana => SOLANA_POOLS,
        }
    }
}

impl fmt::Display for SampleChain {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for SampleChain {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s.trim().to_ascii_lowercase().as_str() {
            "ethereum" | "eth" | "evm" => Ok(SampleChain::Ethereum),
            "solana" | "sol" => Ok(SampleChain::Solana),
            other => Err(format!("unknown chain '{other}': expected ethereum or solana")),
        }
    }
}

/// How to sample.
#[derive(Debug, Clone)]
pub struct SampleOptions {
    /// The chain, or `None` to detect it (`eth_chainId` answers: Ethereum; else `getSlot`).
    pub chain: Option<SampleChain>,
    /// How many blocks or slots back from the head to look at.
    pub window: u64,
    /// Time allowed for each call.
    pub timeout: Duration,
    /// Where sampling counts what it has done, for a progress line while it goes on.
    pub progress: Option<SampleProgress>,
    /// Sample a margin behind the head ([`BEHIND_HEAD_BLOCKS`], [`BEHIND_HEAD_SLOTS`]), not
    /// up to it: for values that other nodes, a few blocks behind this one, also have.
    pub behind_head: bool,
}

impl Default for SampleOptions {
    fn default() -> Self {
        SampleOptions {
            chain: None,
            window: crate::defaults::SAMPLE_BLOCKS,
            timeout: Duration::from_secs(10),
            progress: None,
            behind_head: false,
        }
    }
}

/// With [`SampleOptions::behind_head`], Ethereum blocks left out at the head: a node a minute
/// behind (5 blocks of 12 s) still has every block sampled.
pub const BEHIND_HEAD_BLOCKS: u64 = 5;
/// With [`SampleOptions::behind_head`], Solana slots left out at the head (about 13 s).
pub const BEHIND_HEAD_SLOTS: u64 = 32;

/// The newest block or slot sampled: `margin` behind the node's `head`.
fn sampled_head(head: u64, margin: u64) -> u64 {
    head.saturating_sub(margin)
}

/// What sampling has done so far, shared with whoever shows it (the CLI's progress line reads
/// it about once a second from another thread). Cheap to clone: the counters are shared.
#[derive(Debug, Clone, Default)]
pub struct SampleProgress {
    counts: Arc<SampleCounts>,
}

#[derive(Debug, Default)]
struct SampleCounts {
    blocks: AtomicU64,
    window: AtomicU64,
    calls: AtomicU64,
}

/// A reading of [`SampleProgress`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SampleSnapshot {
    /// Blocks or slots looked at so far.
    pub blocks: u64,
    /// Blocks or slots in the window (0 until the head is known).
    pub window: u64,
    /// Calls made to the node, retries included.
    pub calls: u64,
}

impl SampleProgress {
    /// New counters at zero.
    pub fn new() -> Self {
        Self::default()
    }

    /// The counts now.
    pub fn snapshot(&self) -> SampleSnapshot {
        SampleSnapshot {
            blocks: self.counts.blocks.load(Ordering::Relaxed),
            window: self.counts.window.load(Ordering::Relaxed),
            calls: self.counts.calls.load(Ordering::Relaxed),
        }
    }

    fn set_window(&self, window: u64) {
        self.counts.window.store(window, Ordering::Relaxed);
    }

    fn add_block(&self) {
        self.counts.blocks.fetch_add(1, Ordering::Relaxed);
    }

    fn add_call(&self) {
        self.counts.calls.fetch_add(1, Ordering::Relaxed);
    }
}

/// Why sampling failed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SampleError(pub String);

impl fmt::Display for SampleError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for SampleError {}

/// Values harvested from a node, by pool name.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Pools {
    /// The chain they come from.
    pub chain: SampleChain,
    /// The EVM chain id, on Ethereum.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub chain_id: Option<u64>,
    /// The head (block number or slot) when sampled.
    pub head: u64,
    /// The oldest block or slot the sample reached.
    pub oldest: u64,
    /// Blocks or slots left out between the node's head and `head` (sampled behind the head).
    #[serde(default, skip_serializing_if = "is_zero")]
    pub head_margin: u64,
    /// The pools.
    pub pools: BTreeMap<String, Vec<Value>>,
}

impl Pools {
    /// The values of a pool, if the pool exists.
    pub fn get(&self, name: &str) -> Option<&[Value]> {
        self.pools.get(name).map(Vec::as_slice)
    }

    /// Reads a pools file.
    pub fn load(path: &Path) -> Result<Self, SampleError> {
        let text = crate::util::files::read_text_limited(path, crate::util::files::MAX_BODY)
            .map_err(|err| SampleError(format!("cannot read the pools file {}: {err}", path.display())))?;
        serde_json::from_str(&text)
            .map_err(|err| SampleError(format!("{} is not a pools file: {err}", path.display())))
    }

    /// Writes a pools file (through a temporary file, so a reader never sees half of one).
    pub fn save(&self, path: &Path) -> Result<(), SampleError> {
        let fail = |err: std::io::Error| {
            SampleError(format!("cannot write the pools file {}: {err}", path.display()))
        };
        if let Some(dir) = path.parent().filter(|dir| !dir.as_os_str().is_empty()) {
            std::fs::create_dir_all(dir).map_err(fail)?;
        }
        let text = serde_json::to_string_pretty(self).map_err(|err| SampleError(err.to_string()))?;
        let temporary = path.with_extension("json.tmp");
        std::fs::write(&temporary, text + "\n").map_err(fail)?;
        std::fs::rename(&temporary, path).map_err(fail)
    }

    /// A one-line account of the pools: `slots 180, signatures 2000, …`.
    pub fn summary(&self) -> String {
        self.pools
            .iter()
            .map(|(name, values)| format!("{name} {}", values.len()))
            .collect::<Vec<_>>()
            .join(", ")
    }
}

fn is_zero(value: &u64) -> bool {
    *value == 0
}

/// Collects distinct values in first-seen order, up to [`POOL_CAP`].
#[derive(Debug, Default)]
struct Pool {
    seen: BTreeSet<String>,
    values: Vec<Value>,
}

impl Pool {
    fn add(&mut self, value: Value) {
        if self.values.len() >= POOL_CAP {
            return;
        }
        let key = value.to_string();
        if self.seen.insert(key) {
            self.values.push(value);
        }
    }

    fn full(&self) -> bool {
        self.values.len() >= POOL_CAP
    }
}

/// A node to ask (its headers and TLS settings included), with a timeout per call.
struct Node {
    endpoint: Endpoint,
    progress: SampleProgress,
}

/// How often a call refused with 429 or 503 is tried again, the first wait, and the longest:
/// hosted providers rate-limit, and sampling's calls come back to back.
const BUSY_RETRIES: u32 = 6;
const FIRST_BACKOFF: Duration = Duration::from_millis(50);
const MAX_BACKOFF: Duration = Duration::from_secs(2);

impl Node {
    fn call(&self, method: &str, params: Value) -> Result<Value, CallError> {
        let params = if params.is_null() { None } else { Some(&params) };
        let mut backoff = FIRST_BACKOFF;
        let mut retries = 0;
        loop {
            self.progress.add_call();
            match self.endpoint.call(method, params) {
                Err(CallError::Status(429 | 503)) if retries < BUSY_RETRIES => {
                    std::thread::sleep(backoff);
                    backoff = (backoff * 2).min(MAX_BACKOFF);
                    retries += 1;
                }
                outcome => return outcome,
            }
        }
    }

    fn fail(&self, what: &str, err: CallError) -> SampleError {
        SampleError(format!("{}: {what} failed: {err}", self.endpoint.redacted()))
    }
}

/// The error with the endpoint's secrets scrubbed out: it may quote what the node answered.
fn scrubbed(endpoint: &Endpoint, err: SampleError) -> SampleError {
    SampleError(endpoint.scrub(&err.0).into_owned())
}

/// Finds out whether the node is an Ethereum or a Solana node.
pub fn detect(endpoint: &Endpoint) -> Result<SampleChain, SampleError> {
    detect_unscrubbed(endpoint).map_err(|err| scrubbed(endpoint, err))
}

fn detect_unscrubbed(endpoint: &Endpoint) -> Result<SampleChain, SampleError> {
    if endpoint.call("eth_chainId", None).is_ok() {
        return Ok(SampleChain::Ethereum);
    }
    match endpoint.call("getSlot", None) {
        Ok(_) => Ok(SampleChain::Solana),
        Err(err) => Err(SampleError(format!(
            "{}: neither eth_chainId nor getSlot answered ({err}); set [sample] chain",
            endpoint.redacted()
        ))),
    }
}

/// Samples the node, with `options.timeout` per call.
pub fn sample(endpoint: &Endpoint, options: &SampleOptions) -> Result<Pools, SampleError> {
    let node = Node {
        endpoint: endpoint.clone().with_timeout(options.timeout),
        progress: options.progress.clone().unwrap_or_default(),
    };
    let chain = match options.chain {
        Some(chain) => chain,
        None => detect(&node.endpoint)?,
    };
    let margin = |blocks| if options.behind_head { blocks } else { 0 };
    let pools = match chain {
        SampleChain::Ethereum => sample_ethereum(&node, options.window, margin(BEHIND_HEAD_BLOCKS)),
        SampleChain::Solana => sample_solana(&node, options.window, margin(BEHIND_HEAD_SLOTS)),
    };
    pools.map_err(|err| scrubbed(endpoint, err))
}

/// Whether a hex quantity (of any size: balances pass 2^64) is above zero.
fn positive_quantity(value: &Value) -> bool {
    value.as_str().and_then(|text| text.strip_prefix("0x")).is_some_and(|digits| {
        digits.bytes().all(|b| b.is_ascii_hexdigit()) && digits.bytes().any(|b| b != b'0')
    })
}

fn quantity(value: &Value) -> Option<u64> {
    let text = value.as_str()?.strip_prefix("0x")?;
    u64::from_str_radix(text, 16).ok()
}

fn sample_ethereum(node: &Node, window: u64, margin: u64) -> Result<Pools, SampleError> {
    let chain_id = node.call("eth_chainId", Value::Null).ok().as_ref().and_then(quantity);
    let head = node.call("eth_blockNumber", Value::Null).map_err(|err| node.fail("eth_blockNumber", err))?;
    let head = quantity(&head)
        .ok_or_else(|| SampleError(format!("eth_blockNumber answered {head}, not a hex quantity")))?;
    let node_head = head;
    let head = sampled_head(node_head, margin);
    let mut pools: BTreeMap<&str, Pool> =
        ETHEREUM_POOLS.iter().map(|name| (*name, Pool::default())).collect();
    let mut creations = Vec::new();
    let mut oldest = head;
    let lowest = head.saturating_sub(window.saturating_sub(1));
    node.progress.set_window(head - lowest + 1);
    for number in (lowest..=head).rev() {
        node.progress.add_block();
        let full = !pools["tx_hashes"].full();
        let block = match node.call("eth_getBlockByNumber", json!([format!("{number:#x}"), full])) {
            Ok(block) if block.is_object() => block,
            // Null: a pruned node or a block not there. Older ones will not be either.
            Ok(_) | Err(CallError::Rpc { .. }) => break,
            Err(err) if number == head => return Err(node.fail("eth_getBlockByNumber", err)),
            Err(_) => break,
        };
        oldest = number;
        add(&mut pools, "blocks", json!(format!("{number:#x}")));
        add(&mut pools, "block_numbers", json!(number));
        if let Some(hash) = block.get("hash").filter(|hash| hash.is_string()) {
            add(&mut pools, "block_hashes", hash.clone());
        }
        for tx in block.get("transactions").and_then(Value::as_array).into_iter().flatten() {
            let hash =
                if tx.is_string() { tx.clone() } else { tx.get("hash").cloned().unwrap_or(Value::Null) };
            if hash.is_string() {
                add(&mut pools, "tx_hashes", hash.clone());
            }
            for key in ["from", "to"] {
                if let Some(address) = tx.get(key).filter(|address| address.is_string()) {
                    add(&mut pools, "addresses", lowercase(address));
                }
            }
            if tx.is_object()
                && tx.get("to").is_none_or(Value::is_null)
                && hash.is_string()
                && creations.len() < 20
            {
                creations.push(hash);
            }
        }
    }
    // Contracts: addresses that logged in the window, and contracts created in it.
    let logs = node.call(
        "eth_getLogs",
        json!([{ "fromBlock": format!("{oldest:#x}"), "toBlock": format!("{head:#x}") }]),
    );
    let logs = match logs {
        Ok(logs) => Some(logs),
        // Too many results or too wide a range: the newest few blocks instead.
        Err(CallError::Rpc { .. }) => node
            .call("eth_getLogs", json!([{ "fromBlock": format!("{:#x}", head.saturating_sub(4).max(oldest)), "toBlock": format!("{head:#x}") }]))
            .ok(),
        Err(_) => None,
    };
    for log in logs.as_ref().and_then(Value::as_array).into_iter().flatten() {
        if let Some(address) = log.get("address").filter(|address| address.is_string()) {
            add(&mut pools, "contracts", lowercase(address));
        }
    }
    for hash in creations {
        if let Ok(receipt) = node.call("eth_getTransactionReceipt", json!([hash])) {
            if let Some(address) = receipt.get("contractAddress").filter(|address| address.is_string()) {
                add(&mut pools, "contracts", lowercase(address));
            }
        }
    }
    // What calls need, checked once each: senders of value must be externally owned accounts
    // (no code) with a balance; a contract called as an ERC-20 must answer as one. A sampled
    // address may be a contract or an empty account, and a contract that logged may be no
    // token: calls on those fail on a healthy node.
    let state = json!(format!("{head:#x}"));
    let addresses: Vec<Value> = pools["addresses"].values.iter().take(ACCOUNT_CHECKS).cloned().collect();
    for address in addresses {
        let code = node.call("eth_getCode", json!([address, state]));
        if !matches!(&code, Ok(Value::String(code)) if code == "0x") {
            continue;
        }
        let balance = node.call("eth_getBalance", json!([address, state]));
        if balance.as_ref().is_ok_and(positive_quantity) {
            add(&mut pools, "funded_accounts", address);
        }
    }
    let contracts: Vec<Value> = pools["contracts"].values.iter().take(TOKEN_CHECKS).cloned().collect();
    for contract in contracts {
        let answers = |selector: &str| {
            let answer = node.call("eth_call", json!([{ "to": contract, "data": selector }, state]));
            // An ABI-encoded answer is a word or more; an account without code answers "0x".
            matches!(&answer, Ok(Value::String(data)) if data.len() >= 2 + 64)
        };
        if TOKEN_SELECTORS.iter().all(|selector| answers(selector)) {
            add(&mut pools, "tokens", contract);
        }
    }
    Ok(Pools {
        chain: SampleChain::Ethereum,
        chain_id,
        head,
        oldest,
        head_margin: node_head - head,
        pools: pools.into_iter().map(|(name, pool)| (name.to_string(), pool.values)).collect(),
    })
}

/// Solana errors for a slot without a block the node can serve: not available, skipped,
/// cleaned up (pruned), missing in long-term storage.
fn slot_unavailable(code: i64) -> bool {
    matches!(code, -32004 | -32007 | -32009 | -32001 | -32011 | -32014)
}

fn sample_solana(node: &Node, window: u64, margin: u64) -> Result<Pools, SampleError> {
    let head = node.call("getSlot", Value::Null).map_err(|err| node.fail("getSlot", err))?;
    let head = head.as_u64().ok_or_else(|| SampleError(format!("getSlot answered {head}, not a slot")))?;
    let node_head = head;
    let head = sampled_head(node_head, margin);
    let start = head.saturating_sub(window.saturating_sub(1));
    // The first available block bounds the window on a node that keeps a short ledger.
    let first = node.call("getFirstAvailableBlock", Value::Null).ok().and_then(|v| v.as_u64()).unwrap_or(0);
    let start = start.max(first);
    let slots = match node.call("getBlocks", json!([start, head])) {
        Ok(Value::Array(slots)) => slots.iter().filter_map(Value::as_u64).collect::<Vec<_>>(),
        Ok(other) => return Err(SampleError(format!("getBlocks answered {other}, not a list of slots"))),
        Err(err) => return Err(node.fail("getBlocks", err)),
    };
    let mut pools: BTreeMap<&str, Pool> = SOLANA_POOLS.iter().map(|name| (*name, Pool::default())).collect();
    let mut oldest = head;
    let mut detailed = 0;
    node.progress.set_window(slots.len() as u64);
    for slot in slots.into_iter().rev() {
        node.progress.add_block();
        let details = if detailed < SOLANA_DETAILED_BLOCKS { "accounts" } else { "none" };
        let config = json!({
            "encoding": "json",
            "transactionDetails": details,
            "rewards": false,
            "maxSupportedTransactionVersion": 0,
        });
        let block = match node.call("getBlock", json!([slot, config])) {
            Ok(block) if block.is_object() => block,
            Ok(_) => continue,
            Err(CallError::Rpc { code, .. }) if slot_unavailable(code) => continue,
            Err(CallError::Rpc { .. }) => continue,
            Err(err) => return Err(node.fail("getBlock", err)),
        };
        oldest = oldest.min(slot);
        add(&mut pools, "slots", json!(slot));
        if let Some(hash) = block.get("blockhash").filter(|hash| hash.is_string()) {
            add(&mut pools, "blockhashes", hash.clone());
        }
        if details == "accounts" {
            detailed += 1;
            for entry in block.get("transactions").and_then(Value::as_array).into_iter().flatten() {
                let transaction = entry.get("transaction").unwrap_or(&Value::Null);
                if let Some(signature) = transaction.pointer("/signatures/0").filter(|s| s.is_string()) {
                    add(&mut pools, "signatures", signature.clone());
                }
                for key in transaction.get("accountKeys").and_then(Value::as_array).into_iter().flatten() {
                    let key = key.get("pubkey").unwrap_or(key);
                    if key.is_string() {
                        add(&mut pools, "accounts", key.clone());
                    }
                }
            }
        }
    }
    Ok(Pools {
        chain: SampleChain::Solana,
        chain_id: None,
        head,
        oldest,
        head_margin: node_head - head,
        pools: pools.into_iter().map(|(name, pool)| (name.to_string(), pool.values)).collect(),
    })
}

fn add(pools: &mut BTreeMap<&str, Pool>, name: &str, value: Value) {
    if let Some(pool) = pools.get_mut(name) {
        pool.add(value);
    }
}

/// Addresses in one case, so that a checksummed and a lowercase spelling count once.
fn lowercase(address: &Value) -> Value {
    match address.as_str() {
        Some(text) => Value::String(text.to_ascii_lowercase()),
        None => address.clone(),
    }
}
