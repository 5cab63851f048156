//! The synthetic Solana node: a deterministic ledger derived from the seed, answered with
//! the shapes and error codes of the real Solana (Agave) JSON-RPC API.
//!
//! Nothing is stored. Slot `s` exists once `s <= current slot` (the current slot is 1000
//! at start and advances every `slot_time`); within each window of 20 slots exactly one
//! (never the first) is skipped, so about 5% of slots are skipped and block heights are
//! computable in O(1). Every block, transaction and account is a pure function of
//! (seed, slot, index); signatures embed their (slot, index) so `getTransaction` can find
//! them again. Only `blockTime` depends on when the server started.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::value::RawValue;
use serde_json::{json, Map, Value};

use super::prng::{bytes, draw, mix, range};
use super::rpc::{method_not_found, positional_params, RpcError};

/// The current slot when the server starts.
pub(crate) const START_SLOT: u64 = 1000;
const SKIP_WINDOW: u64 = 20;
const ACCOUNT_COUNT: u64 = 200;
/// An account every seed has, with a balance.
pub(crate) const SEED_ACCOUNT: &str = "4EVAJ81v9fLjz2wp44SZmxgTbvYB8dBRZ6s1SAqP99eZ";
const SYSTEM_PROGRAM: &str = "11111111111111111111111111111111";
const CORE_VERSION: &str = "2.2.16";
const FEATURE_SET: u64 = 3_294_202_862;
const MAX_SLOT_RANGE: u64 = 500_000;
const SLOTS_PER_EPOCH: u64 = 432_000;
const MAX_MULTIPLE_ACCOUNTS: usize = 100;
const MAX_SIGNATURES: u64 = 1000;
/// How far back `getSignaturesForAddress` searches.
const SIGNATURE_SCAN_SLOTS: u64 = 4000;
const FEE: u64 = 5000;

const S_SKIP: u64 = 1;
const S_TX_COUNT: u64 = 2;
const S_BLOCKHASH: u64 = 3;
const S_ACCOUNT: u64 = 4;
const S_BALANCE: u64 = 5;
const S_TX: u64 = 6;
const S_SIGNATURE: u64 = 7;
const S_SIGNATURE_MASK: u64 = 8;

/// JSON-RPC server error codes of Agave.
const BLOCK_NOT_AVAILABLE: i64 = -32004;
const SLOT_SKIPPED: i64 = -32007;

#[derive(Debug)]
struct Account {
    key: [u8; 32],
    address: String,
    lamports: u64,
}

/// The parties and amounts of one generated transfer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Transfer {
    payer: usize,
    recipient: usize,
    amount: u64,
    payer_before: u64,
    recipient_before: u64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Encoding {
    Json,
    Base58,
    Base64,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Details {
    Full,
    Signatures,
    Accounts,
    None,
}

/// The synthetic Solana ledger and its RPC methods.
#[derive(Debug)]
pub(crate) struct SolanaNode {
    seed: u64,
    slot_time: Duration,
    started: Instant,
    head: super::faults::HeadView,
    /// Unix time of slot 0, in milliseconds.
    genesis_unix_ms: u128,
    accounts: Vec<Account>,
    by_key: HashMap<[u8; 32], usize>,
    signature_mask: u64,
    /// Transactions sent to it (`solana_tx.rs`), when asked for.
    tx_pool: Option<std::sync::Mutex<super::solana_tx::SolanaTxPool>>,
}

impl super::solana_tx::SlotChain for SolanaNode {
    fn is_skipped(&self, slot: u64) -> bool {
        SolanaNode::is_skipped(self, slot)
    }

    fn block_height(&self, slot: u64) -> u64 {
        SolanaNode::block_height(self, slot)
    }

    fn blockhash_bytes(&self, slot: u64) -> [u8; 32] {
        SolanaNode::blockhash_bytes(self, slot)
    }
}

impl SolanaNode {
    pub(crate) fn new(seed: u64, slot_time: Duration, started: Instant, unix_now: u64) -> Self {
        let mut accounts: Vec<Account> = (0..ACCOUNT_COUNT)
            .map(|i| {
                let key: [u8; 32] = bytes(seed, S_ACCOUNT, i, 0);
                Account { key, address: bs58::encode(key).into_string(), lamports: 0 }
            })
            .collect();
        let seed_key: [u8; 32] =
            bs58::decode(SEED_ACCOUNT).into_vec().ok().and_then(|v| v.try_into().ok()).unwrap_or([0; 32]);
        accounts.push(Account { key: seed_key, address: SEED_ACCOUNT.to_string(), lamports: 0 });
        for (i, account) in accounts.iter_mut().enumerate() {
            account.lamports = range(draw(seed, S_BALANCE, i as u64, 0), 1_000_000, 5_000_000_000_000);
        }
        let by_key = accounts.iter().enumerate().map(|(i, a)| (a.key, i)).collect();
        let genesis_unix_ms =
            (u128::from(unix_now) * 1000).saturating_sub(u128::from(START_SLOT) * slot_time.as_millis());
        SolanaNode {
            seed,
            slot_time,
            started,
            head: super::faults::HeadView::default(),
            genesis_unix_ms,
            accounts,
            by_key,
            signature_mask: mix(seed, S_SIGNATURE_MASK),
            tx_pool: None,
        }
    }

    // ------------------------------------------------------------ ledger

    /// Takes transactions (`sendTransaction`) as `options` say.
    pub(crate) fn with_tx_pool(mut self, options: Option<&super::solana_tx::SolanaTxOptions>) -> Self {
        self.tx_pool = options.map(|options| {
            std::sync::Mutex::new(super::solana_tx::SolanaTxPool::new(options.clone(), self.seed))
        });
        self
    }

    /// The transaction pool, locked, when the node has one.
    pub(crate) fn tx_pool(&self) -> Option<std::sync::MutexGuard<'_, super::solana_tx::SolanaTxPool>> {
        Some(self.tx_pool.as_ref()?.lock().unwrap_or_else(|poisoned| poisoned.into_inner()))
    }

    /// The transaction pool, locked, with its sigverify stage run: what a landing's lookup
    /// (a slot's signature notifications) reads.
    pub(crate) fn tx_pool_verified(
        &self,
    ) -> Option<std::sync::MutexGuard<'_, super::solana_tx::SolanaTxPool>> {
        let mut pool = self.tx_pool()?;
        pool.run_sigverify(self);
        Some(pool)
    }

    pub(crate) fn current_slot(&self) -> u64 {
        self.head.shown(START_SLOT, self.started.elapsed(), self.slot_time)
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

    /// The position of the skipped slot in the window holding `slot` (1..20).
    fn skip_position(&self, window: u64) -> u64 {
        1 + draw(self.seed, S_SKIP, window, 0) % (SKIP_WINDOW - 1)
    }

    pub(crate) fn is_skipped(&self, slot: u64) -> bool {
        slot % SKIP_WINDOW == self.skip_position(slot / SKIP_WINDOW)
    }

    /// The block height after `slot`: blocks produced in slots `1..=slot`.
    pub(crate) fn block_height(&self, slot: u64) -> u64 {
        let window = slot / SKIP_WINDOW;
        let skipped_here = u64::from(slot % SKIP_WINDOW >= self.skip_position(window));
        slot - window - skipped_here
    }

    /// The newest slot with a block at or before `slot`.
    fn produced_at_or_before(&self, slot: u64) -> u64 {
        if self.is_skipped(slot) {
            slot - 1
        } else {
            slot
        }
    }

    fn parent_slot(&self, slot: u64) -> u64 {
        if slot == 0 {
            0
        } else {
            self.produced_at_or_before(slot - 1)
        }
    }

    pub(crate) fn blockhash_bytes(&self, slot: u64) -> [u8; 32] {
        bytes(self.seed, S_BLOCKHASH, slot, 0)
    }

    fn blockhash(&self, slot: u64) -> String {
        bs58::encode(self.blockhash_bytes(slot)).into_string()
    }

    fn block_time(&self, slot: u64) -> u64 {
        let ms = self.genesis_unix_ms + u128::from(slot) * self.slot_time.as_millis();
        (ms / 1000) as u64
    }

    fn tx_count(&self, slot: u64) -> u64 {
        range(draw(self.seed, S_TX_COUNT, slot, 0), 10, 61)
    }

    fn transfer(&self, slot: u64, index: u64) -> Transfer {
        let n = self.accounts.len() as u64;
        let base = draw(self.seed, S_TX, slot, index);
        let payer = base % n;
        let recipient = (payer + 1 + mix(base, 1) % (n - 1)) % n;
        Transfer {
            payer: payer as usize,
            recipient: recipient as usize,
            amount: range(mix(base, 2), 1_000, 2_000_000_000),
            payer_before: range(mix(base, 3), 3_000_000_000, 900_000_000_000),
            recipient_before: range(mix(base, 4), 0, 900_000_000_000),
        }
    }

    fn signature(&self, slot: u64, index: u64) -> [u8; 64] {
        let mut signature: [u8; 64] = bytes(self.seed, S_SIGNATURE, slot, index);
        signature[48..56].copy_from_slice(&(slot ^ self.signature_mask).to_le_bytes());
        signature[56..58].copy_from_slice(&((index as u16) ^ (self.signature_mask as u16)).to_le_bytes());
        signature
    }

    /// The (slot, index) of a generated signature, if it is one that exists now.
    fn locate(&self, signature: &[u8; 64]) -> Option<(u64, u64)> {
        let slot = u64::from_le_bytes(signature[48..56].try_into().ok()?) ^ self.signature_mask;
        let index =
            u64::from(u16::from_le_bytes(signature[56..58].try_into().ok()?) ^ (self.signature_mask as u16));
        if slot > self.current_slot() || self.is_skipped(slot) || index >= self.tx_count(slot) {
            return None;
        }
        (self.signature(slot, index) == *signature).then_some((slot, index))
    }

    fn signature_text(&self, slot: u64, index: u64) -> String {
        bs58::encode(self.signature(slot, index)).into_string()
    }

    /// The legacy wire format of a generated transaction.
    fn wire_transaction(&self, slot: u64, index: u64, transfer: &Transfer) -> Vec<u8> {
        let mut out = Vec::with_capacity(215);
        out.push(1);
        out.extend_from_slice(&self.signature(slot, index));
        out.extend_from_slice(&[1, 0, 1, 3]);
        out.extend_from_slice(&self.accounts[transfer.payer].key);
        out.extend_from_slice(&self.accounts[transfer.recipient].key);
        out.extend_from_slice(&[0; 32]);
        out.extend_from_slice(&self.blockhash_bytes(self.parent_slot(slot)));
        out.extend_from_slice(&[1, 2, 2, 0, 1, 12]);
        out.extend_from_slice(&transfer_data(transfer.amount));
        out
    }

    fn transaction_json(&self, slot: u64, index: u64, transfer: &Transfer) -> Value {
        json!({
            "signatures": [self.signature_text(slot, index)],
            "message": {
                "accountKeys": [
                    self.accounts[transfer.payer].address,
                    self.accounts[transfer.recipient].address,
                    SYSTEM_PROGRAM,
                ],
                "header": {
                    "numRequiredSignatures": 1,
                    "numReadonlySignedAccounts": 0,
                    "numReadonlyUnsignedAccounts": 1,
                },
                "instructions": [{
                    "programIdIndex": 2,
                    "accounts": [0, 1],
                    "data": bs58::encode(transfer_data(transfer.amount)).into_string(),
                    "stackHeight": null,
                }],
                "recentBlockhash": self.blockhash(self.parent_slot(slot)),
            },
        })
    }

    fn encoded_transaction(&self, slot: u64, index: u64, transfer: &Transfer, encoding: Encoding) -> Value {
        match encoding {
            Encoding::Json => self.transaction_json(slot, index, transfer),
            Encoding::Base58 => {
                json!([bs58::encode(self.wire_transaction(slot, index, transfer)).into_string(), "base58"])
            }
            Encoding::Base64 => {
                let wire = self.wire_transaction(slot, index, transfer);
                json!([base64::engine::general_purpose::STANDARD.encode(wire), "base64"])
            }
        }
    }

    fn meta(&self, transfer: &Transfer, with_logs: bool) -> Value {
        let mut meta = json!({
            "err": null,
            "status": {"Ok": null},
            "fee": FEE,
            "preBalances": [transfer.payer_before, transfer.recipient_before, 1],
            "postBalances": [
                transfer.payer_before - transfer.amount - FEE,
                transfer.recipient_before + transfer.amount,
                1,
            ],
            "preTokenBalances": [],
            "postTokenBalances": [],
            "rewards": [],
            "computeUnitsConsumed": 150,
        });
        if with_logs {
            meta["innerInstructions"] = json!([]);
            meta["logMessages"] = json!([
                format!("Program {SYSTEM_PROGRAM} invoke [1]"),
                format!("Program {SYSTEM_PROGRAM} success"),
            ]);
            meta["loadedAddresses"] = json!({"writable": [], "readonly": []});
        }
        meta
    }

    fn block(
        &self,
        slot: u64,
        encoding: Encoding,
        details: Details,
        rewards: bool,
        versioned: bool,
    ) -> Value {
        let count = self.tx_count(slot);
        let mut block = Map::new();
        block.insert("blockHeight".into(), json!(self.block_height(slot)));
        block.insert("blockTime".into(), json!(self.block_time(slot)));
        block.insert("blockhash".into(), json!(self.blockhash(slot)));
        block.insert("parentSlot".into(), json!(self.parent_slot(slot)));
        let previous =
            if slot == 0 { SYSTEM_PROGRAM.to_string() } else { self.blockhash(self.parent_slot(slot)) };
        block.insert("previousBlockhash".into(), json!(previous));
        match details {
            Details::None => {}
            Details::Signatures => {
                let signatures: Vec<Value> =
                    (0..count).map(|i| json!(self.signature_text(slot, i))).collect();
                block.insert("signatures".into(), Value::Array(signatures));
            }
            Details::Full | Details::Accounts => {
                let transactions = (0..count)
                    .map(|i| {
                        let transfer = self.transfer(slot, i);
                        let mut entry = if details == Details::Full {
                            json!({
                                "transaction": self.encoded_transaction(slot, i, &transfer, encoding),
                                "meta": self.meta(&transfer, true),
                            })
                        } else {
                            json!({
                                "transaction": {
                                    "signatures": [self.signature_text(slot, i)],
                                    "accountKeys": [
                                        {"pubkey": self.accounts[transfer.payer].address, "signer": true, "source": "transaction", "writable": true},
                                        {"pubkey": self.accounts[transfer.recipient].address, "signer": false, "source": "transaction", "writable": true},
                                        {"pubkey": SYSTEM_PROGRAM, "signer": false, "source": "transaction", "writable": false},
                                    ],
                                },
                                "meta": self.meta(&transfer, false),
                            })
                        };
                        if versioned {
                            entry["version"] = json!("legacy");
                        }
                        entry
                    })
                    .collect();
                block.insert("transactions".into(), Value::Array(transactions));
            }
        }
        if rewards {
            let leader = &self.accounts[(draw(self.seed, S_TX, slot, u64::MAX) % ACCOUNT_COUNT) as usize];
            let lamports = count * FEE / 2;
            block.insert(
                "rewards".into(),
                json!([{
                    "pubkey": leader.address,
                    "lamports": lamports,
                    "postBalance": leader.lamports + lamports,
                    "rewardType": "Fee",
                    "commission": null,
                }]),
            );
        }
        Value::Object(block)
    }

    fn context(&self, slot: u64) -> Value {
        json!({"slot": slot, "apiVersion": CORE_VERSION})
    }

    fn account_value(&self, key: &[u8; 32], encoding: AccountEncoding) -> Value {
        let Some(&index) = self.by_key.get(key) else {
            return Value::Null;
        };
        let data = match encoding {
            AccountEncoding::Binary => json!(""),
            AccountEncoding::Base58 => json!(["", "base58"]),
            AccountEncoding::Base64 | AccountEncoding::JsonParsed => json!(["", "base64"]),
            AccountEncoding::Base64Zstd => json!(["KLUv/SAAAQAA", "base64+zstd"]),
        };
        json!({
            "data": data,
            "executable": false,
            "lamports": self.accounts[index].lamports,
            "owner": SYSTEM_PROGRAM,
            "rentEpoch": u64::MAX,
            "space": 0,
        })
    }

    // ------------------------------------------------------------ subscriptions (ws.rs)

    /// The parent and root of `slot` as `slotNotification` sends them (root: 32 slots back).
    pub(crate) fn slot_parent_root(&self, slot: u64) -> (u64, u64) {
        (self.parent_slot(slot), slot.saturating_sub(32))
    }

    /// The value of an `accountNotification` for a base-58 public key (`null` for an account
    /// the ledger does not hold), or the error for a key that is not one.
    pub(crate) fn account_notification_value(&self, key: &Value) -> Result<Value, RpcError> {
        let key = pubkey(key)?;
        Ok(self.account_value(&key, AccountEncoding::Base64))
    }

    /// The value of a `logsNotification` for `slot`: its first transaction and its logs.
    pub(crate) fn logs_notification_value(&self, slot: u64) -> Value {
        json!({
            "signature": self.signature_text(slot, 0),
            "err": null,
            "logs": [
                format!("Program {SYSTEM_PROGRAM} invoke [1]"),
                format!("Program {SYSTEM_PROGRAM} success"),
            ],
        })
    }

    // ------------------------------------------------------------ dispatch

    pub(crate) fn call(&self, method: &str, params: Option<&RawValue>) -> Result<Value, RpcError> {
        let params = positional_params(params)?;
        if let Some(mut pool) = self.tx_pool() {
            if let Some(answer) = pool.answer(self, self.current_slot(), method, &params) {
                return answer;
            }
        }
        let p = Params(&params);
        match method {
            "getSlot" => {
                p.commitment_config(0)?;
                Ok(json!(self.current_slot() + self.head.phantom))
            }
            "getBlockHeight" => {
                p.commitment_config(0)?;
                Ok(json!(self.block_height(self.current_slot())))
            }
            "getHealth" => Ok(json!("ok")),
            "getVersion" => Ok(json!({"solana-core": CORE_VERSION, "feature-set": FEATURE_SET})),
            "getFirstAvailableBlock" => Ok(json!(0)),
            "getGenesisHash" => Ok(json!(self.blockhash(0))),
            "getTransactionCount" => {
                p.commitment_config(0)?;
                Ok(json!(self.transaction_count(self.current_slot())))
            }
            "getEpochInfo" => {
                p.commitment_config(0)?;
                let slot = self.current_slot();
                Ok(json!({
                    "absoluteSlot": slot,
                    "blockHeight": self.block_height(slot),
                    "epoch": slot / SLOTS_PER_EPOCH,
                    "slotIndex": slot % SLOTS_PER_EPOCH,
                    "slotsInEpoch": SLOTS_PER_EPOCH,
                    "transactionCount": self.transaction_count(slot),
                }))
            }
            "getLatestBlockhash" => {
                p.commitment_config(0)?;
                let slot = self.current_slot();
                let block = self.produced_at_or_before(slot);
                Ok(json!({
                    "context": self.context(slot),
                    "value": {
                        "blockhash": self.blockhash(block),
                        "lastValidBlockHeight": self.block_height(block) + 150,
                    },
                }))
            }
            "getBalance" => {
                let key = p.pubkey(0)?;
                p.commitment_config(1)?;
                let lamports = self.by_key.get(&key).map_or(0, |&i| self.accounts[i].lamports);
                Ok(json!({"context": self.context(self.current_slot()), "value": lamports}))
            }
            "getAccountInfo" => {
                let key = p.pubkey(0)?;
                let encoding = p.account_encoding(1)?;
                Ok(
                    json!({"context": self.context(self.current_slot()), "value": self.account_value(&key, encoding)}),
                )
            }
            "getMultipleAccounts" => {
                let keys = p.required(0, "array of pubkeys")?;
                let Value::Array(keys) = keys else {
                    return Err(invalid_type(keys, "a sequence"));
                };
                if keys.len() > MAX_MULTIPLE_ACCOUNTS {
                    return Err(RpcError::invalid_params(format!(
                        "Too many inputs provided; max {MAX_MULTIPLE_ACCOUNTS}"
                    )));
                }
                let keys = keys.iter().map(pubkey).collect::<Result<Vec<_>, _>>()?;
                let encoding = p.account_encoding(1)?;
                let values: Vec<Value> = keys.iter().map(|key| self.account_value(key, encoding)).collect();
                Ok(json!({"context": self.context(self.current_slot()), "value": values}))
            }
            "getBlock" => self.get_block(&p),
            "getBlocks" => {
                let start = p.u64(0, "start_slot")?;
                let current = self.current_slot();
                let (end, config_at) = match params.get(1) {
                    Some(Value::Number(_)) => (p.u64(1, "end_slot")?, 2),
                    _ => (current, 1),
                };
                p.commitment_config(config_at)?;
                if end < start {
                    return Ok(json!([]));
                }
                if end - start > MAX_SLOT_RANGE {
                    return Err(RpcError::invalid_params(format!(
                        "Slot range too large; max {MAX_SLOT_RANGE}"
                    )));
                }
                Ok(json!(self.blocks_between(start, end.min(current), usize::MAX)))
            }
            "getBlocksWithLimit" => {
                let start = p.u64(0, "start_slot")?;
                let limit = p.u64(1, "limit")?;
                p.commitment_config(2)?;
                if limit > MAX_SLOT_RANGE {
                    return Err(RpcError::invalid_params(format!("Limit too large; max {MAX_SLOT_RANGE}")));
                }
                let end = start.saturating_add(limit.saturating_mul(2));
                Ok(json!(self.blocks_between(start, end.min(self.current_slot()), limit as usize)))
            }
            "getTransaction" => self.get_transaction(&p),
            "getSignaturesForAddress" => self.get_signatures_for_address(&p),
            _ => Err(method_not_found(method)),
        }
    }

    fn transaction_count(&self, slot: u64) -> u64 {
        // An estimate (35 per block on average) keeps this O(1).
        self.block_height(slot) * 35
    }

    fn blocks_between(&self, start: u64, end: u64, limit: usize) -> Vec<u64> {
        if start > end {
            return Vec::new();
        }
        (start..=end).filter(|&slot| !self.is_skipped(slot)).take(limit).collect()
    }

    /// The error for a slot without a block, if it has none.
    fn check_block_slot(&self, slot: u64) -> Result<(), RpcError> {
        if slot > self.current_slot() {
            return Err(RpcError::new(BLOCK_NOT_AVAILABLE, format!("Block not available for slot {slot}")));
        }
        if self.is_skipped(slot) {
            return Err(RpcError::new(
                SLOT_SKIPPED,
                format!("Slot {slot} was skipped, or missing due to ledger jump to recent snapshot"),
            ));
        }
        Ok(())
    }

    fn get_block(&self, p: &Params) -> Result<Value, RpcError> {
        let slot = p.u64(0, "slot")?;
        let mut encoding = Encoding::Json;
        let mut details = Details::Full;
        let mut rewards = true;
        let mut versioned = false;
        match p.0.get(1) {
            None | Some(Value::Null) => {}
            Some(Value::String(name)) => encoding = block_encoding(name)?,
            Some(Value::Object(config)) => {
                commitment(config, true)?;
                if let Some(value) = config.get("encoding") {
                    encoding = block_encoding(str_param(value, "encoding")?)?;
                }
                if let Some(value) = config.get("transactionDetails") {
                    details = match str_param(value, "transactionDetails")? {
                        "full" => Details::Full,
                        "signatures" => Details::Signatures,
                        "accounts" => Details::Accounts,
                        "none" => Details::None,
                        other => {
                            return Err(unknown_variant(other, &["full", "signatures", "none", "accounts"]));
                        }
                    };
                }
                if let Some(value) = config.get("rewards") {
                    rewards = value.as_bool().ok_or_else(|| invalid_type(value, "a boolean"))?;
                }
                if let Some(value) = config.get("maxSupportedTransactionVersion") {
                    if !value.is_null() {
                        value.as_u64().filter(|v| *v <= 255).ok_or_else(|| invalid_type(value, "u8"))?;
                        versioned = true;
                    }
                }
            }
            Some(other) => return Err(invalid_type(other, "a block config object")),
        }
        self.check_block_slot(slot)?;
        Ok(self.block(slot, encoding, details, rewards, versioned))
    }

    fn get_transaction(&self, p: &Params) -> Result<Value, RpcError> {
        let signature = signature(p.required(0, "signature")?)?;
        let mut encoding = Encoding::Json;
        let mut versioned = false;
        match p.0.get(1) {
            None | Some(Value::Null) => {}
            Some(Value::String(name)) => encoding = block_encoding(name)?,
            Some(Value::Object(config)) => {
                commitment(config, true)?;
                if let Some(value) = config.get("encoding") {
                    encoding = block_encoding(str_param(value, "encoding")?)?;
                }
                if let Some(value) = config.get("maxSupportedTransactionVersion") {
                    versioned = !value.is_null();
                }
            }
            Some(other) => return Err(invalid_type(other, "a transaction config object")),
        }
        let Some((slot, index)) = self.locate(&signature) else {
            return Ok(Value::Null);
        };
        let transfer = self.transfer(slot, index);
        let mut result = json!({
            "slot": slot,
            "blockTime": self.block_time(slot),
            "transaction": self.encoded_transaction(slot, index, &transfer, encoding),
            "meta": self.meta(&transfer, true),
        });
        if versioned {
            result["version"] = json!("legacy");
        }
        Ok(result)
    }

    fn get_signatures_for_address(&self, p: &Params) -> Result<Value, RpcError> {
        let key = p.pubkey(0)?;
        let mut limit = MAX_SIGNATURES;
        let mut before = None;
        let mut until = None;
        if let Some(Value::Object(config)) = p.0.get(1) {
            commitment(config, true)?;
            if let Some(value) = config.get("limit").filter(|v| !v.is_null()) {
                limit = value.as_u64().ok_or_else(|| invalid_type(value, "usize"))?;
                if limit == 0 || limit > MAX_SIGNATURES {
                    return Err(RpcError::invalid_params(format!("Invalid limit; max {MAX_SIGNATURES}")));
                }
            }
            if let Some(value) = config.get("before").filter(|v| !v.is_null()) {
                before = Some(signature(value)?);
            }
            if let Some(value) = config.get("until").filter(|v| !v.is_null()) {
                until = Some(signature(value)?);
            }
        } else if let Some(other) = p.0.get(1).filter(|v| !v.is_null()) {
            return Err(invalid_type(other, "a config object"));
        }
        let Some(&account) = self.by_key.get(&key) else {
            return Ok(json!([]));
        };
        let current = self.current_slot();
        // Positions are (slot, index); the scan walks newest first, strictly before `before`.
        let (mut slot, mut first_index) = match before.map(|s| self.locate(&s)) {
            Some(Some((slot, index))) => (slot, Some(index)),
            Some(None) => return Ok(json!([])),
            None => (current, None),
        };
        let stop = until.and_then(|s| self.locate(&s));
        let oldest = current.saturating_sub(SIGNATURE_SCAN_SLOTS);
        let mut found = Vec::new();
        'scan: loop {
            if !self.is_skipped(slot) {
                let end = first_index.unwrap_or_else(|| self.tx_count(slot));
                for index in (0..end).rev() {
                    if stop == Some((slot, index)) {
                        break 'scan;
                    }
                    let transfer = self.transfer(slot, index);
                    if transfer.payer == account || transfer.recipient == account {
                        found.push(json!({
                            "signature": self.signature_text(slot, index),
                            "slot": slot,
                            "err": null,
                            "memo": null,
                            "blockTime": self.block_time(slot),
                            "confirmationStatus": "finalized",
                        }));
                        if found.len() as u64 >= limit {
                            break 'scan;
                        }
                    }
                }
            }
            first_index = None;
            if slot == 0 || slot <= oldest {
                break;
            }
            slot -= 1;
        }
        Ok(Value::Array(found))
    }
}

/// The data of a system-program transfer instruction.
fn transfer_data(amount: u64) -> [u8; 12] {
    let mut data = [0u8; 12];
    data[..4].copy_from_slice(&2u32.to_le_bytes());
    data[4..].copy_from_slice(&amount.to_le_bytes());
    data
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum AccountEncoding {
    Binary,
    Base58,
    Base64,
    Base64Zstd,
    JsonParsed,
}

/// Positional params with Agave-like validation messages.
struct Params<'a>(&'a [Value]);

impl Params<'_> {
    fn required(&self, index: usize, what: &str) -> Result<&Value, RpcError> {
        match self.0.get(index) {
            Some(value) => Ok(value),
            None => Err(RpcError::invalid_params(format!("Invalid params: missing {what} (param {index})."))),
        }
    }

    fn u64(&self, index: usize, what: &str) -> Result<u64, RpcError> {
        let value = self.required(index, what)?;
        value.as_u64().ok_or_else(|| invalid_type(value, "u64"))
    }

    fn pubkey(&self, index: usize) -> Result<[u8; 32], RpcError> {
        pubkey(self.required(index, "pubkey")?)
    }

    /// An optional `{commitment, minContextSlot}` config at `index`.
    fn commitment_config(&self, index: usize) -> Result<(), RpcError> {
        match self.0.get(index) {
            None | Some(Value::Null) => Ok(()),
            Some(Value::Object(config)) => commitment(config, false),
            Some(other) => Err(invalid_type(other, "a config object")),
        }
    }

    fn account_encoding(&self, index: usize) -> Result<AccountEncoding, RpcError> {
        match self.0.get(index) {
            None | Some(Value::Null) => Ok(AccountEncoding::Binary),
            Some(Value::Object(config)) => {
                commitment(config, false)?;
                match config.get("encoding") {
                    None | Some(Value::Null) => Ok(AccountEncoding::Binary),
                    Some(value) => match str_param(value, "encoding")? {
                        "binary" => Ok(AccountEncoding::Binary),
                        "base58" => Ok(AccountEncoding::Base58),
                        "base64" => Ok(AccountEncoding::Base64),
                        "base64+zstd" => Ok(AccountEncoding::Base64Zstd),
                        "jsonParsed" => Ok(AccountEncoding::JsonParsed),
                        other => Err(unknown_variant(
                            other,
                            &["binary", "base58", "base64", "jsonParsed", "base64+zstd"],
                        )),
                    },
                }
            }
            Some(other) => Err(invalid_type(other, "a config object")),
        }
    }
}

fn value_kind(value: &Value) -> String {
    match value {
        Value::Null => "null".into(),
        Value::Bool(b) => format!("boolean `{b}`"),
        Value::Number(n) if n.is_i64() || n.is_u64() => format!("integer `{n}`"),
        Value::Number(n) => format!("floating point `{n}`"),
        Value::String(s) => format!("string {s:?}"),
        Value::Array(_) => "sequence".into(),
        Value::Object(_) => "map".into(),
    }
}

fn invalid_type(value: &Value, expected: &str) -> RpcError {
    RpcError::invalid_params(format!(
        "Invalid params: invalid type: {}, expected {expected}.",
        value_kind(value)
    ))
}

fn unknown_variant(name: &str, expected: &[&str]) -> RpcError {
    let expected: Vec<String> = expected.iter().map(|e| format!("`{e}`")).collect();
    RpcError::invalid_params(format!(
        "Invalid params: unknown variant `{name}`, expected one of {}.",
        expected.join(", ")
    ))
}

fn str_param<'a>(value: &'a Value, _what: &str) -> Result<&'a str, RpcError> {
    value.as_str().ok_or_else(|| invalid_type(value, "a string"))
}

fn commitment(config: &Map<String, Value>, confirmed_or_better: bool) -> Result<(), RpcError> {
    if let Some(value) = config.get("commitment").filter(|v| !v.is_null()) {
        match str_param(value, "commitment")? {
            "processed" if confirmed_or_better => {
                return Err(RpcError::invalid_params("Method does not support commitment below `confirmed`"));
            }
            "processed" | "confirmed" | "finalized" => {}
            other => return Err(unknown_variant(other, &["processed", "confirmed", "finalized"])),
        }
    }
    if let Some(value) = config.get("minContextSlot").filter(|v| !v.is_null()) {
        value.as_u64().ok_or_else(|| invalid_type(value, "u64"))?;
    }
    Ok(())
}

fn block_encoding(name: &str) -> Result<Encoding, RpcError> {
    match name {
        "json" | "jsonParsed" => Ok(Encoding::Json),
        "base58" | "binary" => Ok(Encoding::Base58),
        "base64" => Ok(Encoding::Base64),
        other => Err(unknown_variant(other, &["binary", "base64", "base58", "json", "jsonParsed"])),
    }
}

/// A base58 pubkey, with Agave's messages for bad ones.
fn pubkey(value: &Value) -> Result<[u8; 32], RpcError> {
    let text = value.as_str().ok_or_else(|| invalid_type(value, "a string"))?;
    if text.len() > 44 {
        return Err(RpcError::invalid_params("Invalid param: WrongSize"));
    }
    let decoded =
        bs58::decode(text).into_vec().map_err(|_| RpcError::invalid_params("Invalid param: Invalid"))?;
    decoded.try_into().map_err(|_| RpcError::invalid_params("Invalid param: WrongSize"))
}

/// A base58 transaction signature.
fn signature(value: &Value) -> Result<[u8; 64], RpcError> {
    let text = value.as_str().ok_or_else(|| invalid_type(value, "a string"))?;
    if text.len() > 88 {
        return Err(RpcError::invalid_params("Invalid param: WrongSize"));
    }
    let decoded =
        bs58::decode(text).into_vec().map_err(|_| RpcError::invalid_params("Invalid param: Invalid"))?;
    decoded.try_into().map_err(|_| RpcError::invalid_params("Invalid param: WrongSize"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn node(seed: u64) -> SolanaNode {
        SolanaNode::new(seed, Duration::from_millis(400), Instant::now(), 1_700_000_000)
    }

    fn call(node: &SolanaNode, method: &str, params: Value) -> Result<Value, RpcError> {
        let raw = serde_json::value::to_raw_value(&params).unwrap();
        node.call(method, Some(&raw))
    }

    #[test]
    fn a_node_behind_answers_a_slot_that_many_slots_back() {
        let started = Instant::now().checked_sub(Duration::from_secs(600)).expect("the clock has run 10 min");
        let minute = Duration::from_secs(60);
        let at = |lag: u64, delay: Duration| {
            SolanaNode::new(1, minute, started, 1_700_000_000).with_head(super::super::faults::HeadView {
                lag,
                delay,
                ..Default::default()
            })
        };
        let (truth, behind, late) = (at(0, Duration::ZERO), at(30, Duration::ZERO), at(0, minute * 5 / 2));
        assert_eq!(call(&truth, "getSlot", json!([])).unwrap(), json!(START_SLOT + 10));
        assert_eq!(call(&behind, "getSlot", json!([])).unwrap(), json!(START_SLOT + 10 - 30));
        assert_eq!(call(&late, "getSlot", json!([])).unwrap(), json!(START_SLOT + 7));
    }

    #[test]
    fn same_seed_same_block() {
        let (a, b, c) = (node(7), node(7), node(8));
        let params = json!([500, {"encoding": "json", "maxSupportedTransactionVersion": 0}]);
        let slot = (500..520).find(|s| !a.is_skipped(*s)).unwrap();
        let params = json!([slot, params[1]]);
        assert_eq!(
            call(&a, "getBlock", params.clone()).unwrap(),
            call(&b, "getBlock", params.clone()).unwrap()
        );
        assert_ne!(call(&a, "getBlock", params.clone()).unwrap(), call(&c, "getBlock", params).unwrap());
    }

    #[test]
    fn about_five_percent_of_slots_are_skipped_and_heights_count_blocks() {
        let node = node(3);
        let skipped = (0..2000).filter(|s| node.is_skipped(*s)).count();
        assert_eq!(skipped, 100);
        let mut height = 0;
        for slot in 1..2000 {
            if !node.is_skipped(slot) {
                height += 1;
                assert_eq!(node.block_height(slot), height, "slot {slot}");
                let parent = node.parent_slot(slot);
                assert!(parent == slot - 1 || (parent == slot - 2 && node.is_skipped(slot - 1)));
                assert!(!node.is_skipped(parent));
            }
        }
    }

    #[test]
    fn signatures_locate_their_transaction() {
        let node = node(11);
        let slot = (900..920).find(|s| !node.is_skipped(*s)).unwrap();
        let signature = node.signature(slot, 3);
        assert_eq!(node.locate(&signature), Some((slot, 3)));
        let mut forged = signature;
        forged[0] ^= 1;
        assert_eq!(node.locate(&forged), None);
        assert_eq!(node.locate(&[0; 64]), None);
    }

    #[test]
    fn wire_transactions_have_the_legacy_layout() {
        let node = node(5);
        let transfer = node.transfer(10, 0);
        let wire = node.wire_transaction(10, 0, &transfer);
        // 1 + 64 signature + 3 header + 1 + 96 keys + 32 blockhash + 1 + 1 + 1 + 2 + 1 + 12 data
        assert_eq!(wire.len(), 215);
        assert_eq!(&wire[1..65], &node.signature(10, 0));
        assert_eq!(&wire[69..101], &node.accounts[transfer.payer].key);
    }

    #[test]
    fn the_seed_document_account_has_a_balance() {
        let node = node(0);
        let balance = call(&node, "getBalance", json!([SEED_ACCOUNT])).unwrap();
        assert!(balance["value"].as_u64().unwrap() > 0);
        let err = call(&node, "getBalance", json!(["not-base58-0OIl"])).unwrap_err();
        assert_eq!(err.message, "Invalid param: Invalid");
    }
}
