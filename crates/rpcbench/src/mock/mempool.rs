//! The mock Ethereum node's mempool and the transactions its blocks include: raw transactions
//! are decoded and their sender recovered (`crate::tx::sign::decode`), checked like geth checks
//! them (chain id, nonce, balance, intrinsic gas; refused with geth's code and message), kept
//! per sender with nonce gaps queued, and included in the next blocks in nonce order up to the
//! block gas limit. State is plain data advanced block by block ([`Mempool::produce`]); the
//! node decides when a block is produced, so this file has no clock and is tested without one.
//!
//! Fault knobs: a share of accepted transactions silently dropped from the pool, inclusion
//! delayed by whole blocks, a pool capacity past which "txpool is full" is answered, and a
//! reorg every so many blocks that moves the transactions of the last k blocks into the new
//! one (their receipts change block, as after a real reorg).
//!
//! A transaction whose call data starts with `0xfe` (the INVALID opcode) is included with
//! receipt status 0, so reverted transactions can be tested.

use std::collections::{BTreeMap, HashMap};

use crate::tx::keys::Address;
use crate::tx::sign::{decode, DecodedTx};

use super::prng::mix;
use super::rpc::RpcError;

/// The options of a mock Ethereum node with a mempool and real accounts.
#[derive(Debug, Clone, PartialEq)]
pub struct TxPoolOptions {
    /// Gas included per block at most (`--block-gas-limit`).
    pub block_gas_limit: u64,
    /// Transactions held at most; past it "txpool is full".
    pub capacity: usize,
    /// Share of accepted transactions silently dropped from the pool (0.0..=1.0).
    pub drop_share: f64,
    /// Whole blocks every transaction waits before inclusion.
    pub delay_blocks: u64,
    /// A reorg every this many blocks (0: never)...
    pub reorg_every: u64,
    /// ...taking back this many blocks.
    pub reorg_depth: u64,
    /// The first accounts of the dev mnemonic funded at genesis.
    pub dev_accounts: u32,
    /// Wei each dev account holds at genesis.
    pub dev_balance: u128,
}

impl Default for TxPoolOptions {
    fn default() -> Self {
        TxPoolOptions {
            block_gas_limit: 30_000_000,
            capacity: 65_536,
            drop_share: 0.0,
            delay_blocks: 0,
            reorg_every: 0,
            reorg_depth: 0,
            dev_accounts: 10,
            dev_balance: 10_000 * 1_000_000_000_000_000_000,
        }
    }
}

/// geth's code for refused transactions.
const TX_REFUSED: i64 = -32000;
/// Gas of a plain transfer.
const TX_GAS: u64 = 21_000;
/// Extra intrinsic gas of a contract creation.
const CREATE_GAS: u64 = 32_000;

/// The knobs of the mempool.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct MempoolSettings {
    /// The chain id transactions must be signed for.
    pub chain_id: u64,
    /// Gas included per block at most.
    pub block_gas_limit: u64,
    /// Transactions held in the pool at most (pending and queued); more are refused with
    /// "txpool is full".
    pub capacity: usize,
    /// Share of accepted transactions dropped from the pool without a word (0.0..=1.0).
    pub drop_share: f64,
    /// Whole blocks a transaction waits in the pool before it can be included.
    pub delay_blocks: u64,
    /// Every this many blocks, a reorg of depth `reorg_depth` (0: never).
    pub reorg_every: u64,
    /// How many blocks a reorg takes back.
    pub reorg_depth: u64,
    /// Seeds the drop decisions.
    pub seed: u64,
}

impl MempoolSettings {
    /// A pool for `chain_id` with geth-like limits and no faults.
    #[cfg(test)]
    pub(crate) fn new(chain_id: u64) -> Self {
        MempoolSettings {
            chain_id,
            block_gas_limit: 30_000_000,
            capacity: 65_536,
            drop_share: 0.0,
            delay_blocks: 0,
            reorg_every: 0,
            reorg_depth: 0,
            seed: 0,
        }
    }
}

/// An account the pool knows.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
struct Account {
    balance: u128,
    /// The nonce of the account's next transaction to be included.
    nonce: u64,
}

/// A transaction waiting in the pool.
#[derive(Debug, Clone)]
struct Waiting {
    decoded: DecodedTx,
    /// The first block it may go into.
    eligible_from: u64,
    /// Dropped silently when its turn comes.
    doomed: bool,
}

/// Where one of the pool's transactions ended up.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Included {
    /// The transaction.
    pub decoded: DecodedTx,
    /// Its block.
    pub block: u64,
    /// Its index within the block's pool transactions.
    pub index: u64,
    /// Gas used.
    pub gas_used: u64,
    /// 1, or 0 for a transaction that reverted.
    pub status: u8,
}

/// What a lookup by hash finds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Lookup<'a> {
    /// Waiting in the pool.
    Pending(&'a DecodedTx),
    /// In a block.
    Included(&'a Included),
}

/// The pool transactions one block included, in order, and the gas they used.
#[derive(Debug, Default)]
struct PoolBlock {
    hashes: Vec<[u8; 32]>,
    gas: u64,
}

/// The pool, the accounts and what the blocks included.
#[derive(Debug)]
pub(crate) struct Mempool {
    settings: MempoolSettings,
    accounts: HashMap<Address, Account>,
    /// Waiting transactions by (sender, nonce): a sender's run of consecutive nonces from its
    /// account nonce is pending, the rest is queued behind a gap.
    waiting: BTreeMap<(Address, u64), Waiting>,
    by_hash: HashMap<[u8; 32], (Address, u64)>,
    included: HashMap<[u8; 32], Included>,
    /// What each block included (only blocks that included some).
    blocks: BTreeMap<u64, PoolBlock>,
    /// The last block produced.
    head: u64,
    dropped: u64,
    reorgs: u64,
}

/// Intrinsic gas of a transaction: 21,000, 4 per zero byte and 16 per other byte of data,
/// 32,000 more for a creation.
fn intrinsic_gas(decoded: &DecodedTx) -> u64 {
    let data: u64 = decoded.tx.data.iter().map(|b| if *b == 0 { 4 } else { 16 }).sum();
    TX_GAS + data + if decoded.tx.to.is_none() { CREATE_GAS } else { 0 }
}

/// The most a transaction can cost its sender: gas limit x max price + value.
fn max_cost(decoded: &DecodedTx) -> u128 {
    u128::from(decoded.tx.gas_limit)
        .saturating_mul(decoded.tx.fees.max_price())
        .saturating_add(decoded.tx.value)
}

fn refused(message: String) -> RpcError {
    RpcError::new(TX_REFUSED, message)
}

impl Mempool {
    /// An empty pool whose chain is at block `head`, with `funded` accounts holding `balance`
    /// wei each.
    pub(crate) fn new(settings: MempoolSettings, head: u64, funded: &[Address], balance: u128) -> Self {
        let accounts = funded.iter().map(|a| (*a, Account { balance, nonce: 0 })).collect();
        Mempool {
            settings,
            accounts,
            waiting: BTreeMap::new(),
            by_hash: HashMap::new(),
            included: HashMap::new(),
            blocks: BTreeMap::new(),
            head,
            dropped: 0,
            reorgs: 0,
        }
    }

    /// A pool from a mock node's options: chain `chain_id` at block `head`, the dev
    /// mnemonic's first accounts funded.
    pub(crate) fn from_options(options: &TxPoolOptions, chain_id: u64, seed: u64, head: u64) -> Self {
        let settings = MempoolSettings {
            chain_id,
            block_gas_limit: options.block_gas_limit,
            capacity: options.capacity,
            drop_share: options.drop_share,
            delay_blocks: options.delay_blocks,
            reorg_every: options.reorg_every,
            reorg_depth: options.reorg_depth,
            seed,
        };
        let funded: Vec<Address> = crate::tx::keys::keys_from_mnemonic(
            crate::tx::keys::DEV_MNEMONIC,
            0,
            options.dev_accounts as usize,
        )
        .map(|keys| keys.iter().map(|key| key.address()).collect())
        .unwrap_or_default();
        Mempool::new(settings, head, &funded, options.dev_balance)
    }

    /// The last block produced.
    pub(crate) fn head(&self) -> u64 {
        self.head
    }

    /// An account's balance.
    pub(crate) fn balance(&self, address: &Address) -> u128 {
        self.accounts.get(address).map_or(0, |a| a.balance)
    }

    /// An account's nonce: of its next included transaction (`latest`), or past the run of
    /// consecutive nonces waiting in the pool (`pending`).
    pub(crate) fn nonce(&self, address: &Address, pending: bool) -> u64 {
        let mut nonce = self.accounts.get(address).map_or(0, |a| a.nonce);
        if pending {
            while self.waiting.contains_key(&(*address, nonce)) {
                nonce += 1;
            }
        }
        nonce
    }

    /// Gas a block includes at most.
    pub(crate) fn block_gas_limit(&self) -> u64 {
        self.settings.block_gas_limit
    }

    /// Transactions silently dropped so far.
    pub(crate) fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Reorgs so far.
    pub(crate) fn reorgs(&self) -> u64 {
        self.reorgs
    }

    /// `eth_sendRawTransaction`: checks `raw` and takes it into the pool; the hash, or geth's
    /// refusal.
    pub(crate) fn submit(&mut self, raw: &[u8]) -> Result<[u8; 32], RpcError> {
        let decoded = decode(raw).map_err(|err| refused(err.to_string()))?;
        if decoded.tx.chain_id != self.settings.chain_id {
            return Err(refused(format!(
                "invalid chain id for signer: have {} want {}",
                decoded.tx.chain_id, self.settings.chain_id
            )));
        }
        if self.by_hash.contains_key(&decoded.hash) || self.included.contains_key(&decoded.hash) {
            return Err(refused("already known".to_string()));
        }
        let sender = decoded.sender;
        let account = self.accounts.get(&sender).copied().unwrap_or_default();
        if decoded.tx.nonce < account.nonce {
            return Err(refused(format!(
                "nonce too low: address {sender}, tx: {} state: {}",
                decoded.tx.nonce, account.nonce
            )));
        }
        if decoded.tx.gas_limit < intrinsic_gas(&decoded) {
            return Err(refused(format!(
                "intrinsic gas too low: gas {}, minimum needed {}",
                decoded.tx.gas_limit,
                intrinsic_gas(&decoded)
            )));
        }
        if decoded.tx.gas_limit > self.settings.block_gas_limit {
            return Err(refused("exceeds block gas limit".to_string()));
        }
        let cost = max_cost(&decoded);
        if cost > account.balance {
            return Err(refused(format!(
                "insufficient funds for gas * price + value: address {sender} have {} want {cost}",
                account.balance
            )));
        }
        if self.waiting.contains_key(&(sender, decoded.tx.nonce)) {
            return Err(refused("replacement transaction underpriced".to_string()));
        }
        if self.waiting.len() >= self.settings.capacity {
            return Err(refused("txpool is full".to_string()));
        }
        let hash = decoded.hash;
        let doomed = self.settings.drop_share > 0.0
            && (mix(self.settings.seed ^ u64::from_be_bytes(hash[..8].try_into().unwrap_or_default()), 1)
                as f64
                / u64::MAX as f64)
                < self.settings.drop_share;
        let key = (sender, decoded.tx.nonce);
        let eligible_from = self.head + 1 + self.settings.delay_blocks;
        self.by_hash.insert(hash, key);
        self.waiting.insert(key, Waiting { decoded, eligible_from, doomed });
        Ok(hash)
    }

    /// Produces block `head + 1`: drops the doomed, then includes waiting transactions that
    /// are eligible and next in their sender's nonce order, up to the block gas limit; a reorg
    /// when its turn comes. Returns the block's number.
    pub(crate) fn produce(&mut self) -> u64 {
        let number = self.head + 1;
        self.head = number;
        // Only a pool that drops has doomed transactions: a pool that does not is not walked
        // (it may hold a backlog of many blocks).
        if self.settings.drop_share > 0.0 {
            let doomed: Vec<(Address, u64)> = self
                .waiting
                .iter()
                .filter(|(_, w)| w.doomed && w.eligible_from <= number)
                .map(|(k, _)| *k)
                .collect();
            for key in doomed {
                if let Some(waiting) = self.waiting.remove(&key) {
                    self.by_hash.remove(&waiting.decoded.hash);
                    self.dropped += 1;
                }
            }
        }
        let mut gas_left = self.settings.block_gas_limit;
        let mut hashes = Vec::new();
        // Senders in address order, each sender's consecutive nonces from its account nonce:
        // a gap stops that sender, the block's gas stops everyone.
        let senders = self.waiting_senders();
        let mut block_gas = 0;
        'senders: for sender in senders {
            loop {
                let account = self.accounts.get(&sender).copied().unwrap_or_default();
                let key = (sender, account.nonce);
                let Some(waiting) = self.waiting.get(&key) else { break };
                if waiting.eligible_from > number {
                    break;
                }
                let gas_used = intrinsic_gas(&waiting.decoded).min(waiting.decoded.tx.gas_limit);
                if gas_used > gas_left {
                    break 'senders;
                }
                let Some(waiting) = self.waiting.remove(&key) else { break };
                self.by_hash.remove(&waiting.decoded.hash);
                let tx = &waiting.decoded.tx;
                let fee = u128::from(gas_used).saturating_mul(tx.fees.max_price());
                let cost = fee.saturating_add(tx.value);
                let sender_account = self.accounts.entry(sender).or_default();
                sender_account.nonce += 1;
                let reverted = tx.data.first() == Some(&0xfe);
                let status = if cost > sender_account.balance || reverted {
                    sender_account.balance = sender_account.balance.saturating_sub(fee);
                    0
                } else {
                    sender_account.balance -= cost;
                    if let Some(to) = tx.to {
                        self.accounts.entry(to).or_default().balance += tx.value;
                    }
                    1
                };
                gas_left -= gas_used;
                block_gas += gas_used;
                let hash = waiting.decoded.hash;
                self.included.insert(
                    hash,
                    Included {
                        decoded: waiting.decoded,
                        block: number,
                        index: hashes.len() as u64,
                        gas_used,
                        status,
                    },
                );
                hashes.push(hash);
            }
        }
        if !hashes.is_empty() {
            self.blocks.insert(number, PoolBlock { hashes, gas: block_gas });
        }
        if self.settings.reorg_every > 0
            && self.settings.reorg_depth > 0
            && number % self.settings.reorg_every == 0
        {
            self.reorg(number);
        }
        number
    }

    /// Moves the transactions of the `reorg_depth` blocks before `number` into `number`.
    fn reorg(&mut self, number: u64) {
        let from = number.saturating_sub(self.settings.reorg_depth);
        let taken: Vec<u64> = self.blocks.range(from..number).map(|(n, _)| *n).collect();
        if taken.is_empty() {
            return;
        }
        self.reorgs += 1;
        let mut moved = PoolBlock::default();
        for block in taken {
            let block = self.blocks.remove(&block).unwrap_or_default();
            moved.hashes.extend(block.hashes);
            moved.gas += block.gas;
        }
        let target = self.blocks.entry(number).or_default();
        let mut all = moved;
        all.hashes.append(&mut target.hashes);
        all.gas += target.gas;
        for (index, hash) in all.hashes.iter().enumerate() {
            if let Some(included) = self.included.get_mut(hash) {
                included.block = number;
                included.index = index as u64;
            }
        }
        *target = all;
    }

    /// The senders with transactions waiting, in address order: one B-tree step per sender,
    /// not one per waiting transaction.
    fn waiting_senders(&self) -> Vec<Address> {
        let mut senders = Vec::new();
        let mut next = self.waiting.keys().next().map(|(sender, _)| *sender);
        while let Some(sender) = next {
            senders.push(sender);
            next = self
                .waiting
                .range((std::ops::Bound::Excluded((sender, u64::MAX)), std::ops::Bound::Unbounded))
                .next()
                .map(|((sender, _), _)| *sender);
        }
        senders
    }

    /// The pool transactions block `number` included, in order.
    pub(crate) fn block_hashes(&self, number: u64) -> &[[u8; 32]] {
        self.blocks.get(&number).map_or(&[], |block| block.hashes.as_slice())
    }

    /// Gas the pool transactions of block `number` used.
    pub(crate) fn block_gas(&self, number: u64) -> u64 {
        self.blocks.get(&number).map_or(0, |block| block.gas)
    }

    /// Finds a transaction by hash.
    pub(crate) fn lookup(&self, hash: &[u8; 32]) -> Option<Lookup<'_>> {
        if let Some(included) = self.included.get(hash) {
            return Some(Lookup::Included(included));
        }
        let key = self.by_hash.get(hash)?;
        self.waiting.get(key).map(|w| Lookup::Pending(&w.decoded))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::keys::{keys_from_mnemonic, SenderKey, DEV_MNEMONIC};
    use crate::tx::sign::{sign, Fees, UnsignedTx};

    const ETH: u128 = 1_000_000_000_000_000_000;

    fn transfer(key: &SenderKey, nonce: u64, chain_id: u64) -> Vec<u8> {
        transfer_of(key, nonce, chain_id, 1)
    }

    fn transfer_of(key: &SenderKey, nonce: u64, chain_id: u64, value: u128) -> Vec<u8> {
        let tx = UnsignedTx {
            chain_id,
            nonce,
            fees: Fees::Eip1559 { max_fee_per_gas: 2_000_000_000, max_priority_fee_per_gas: 1_000_000_000 },
            gas_limit: 21_000,
            to: Address::parse("0x3535353535353535353535353535353535353535"),
            value,
            data: Vec::new(),
        };
        sign(&tx, key).raw
    }

    fn funded_pool(settings: MempoolSettings) -> (Mempool, Vec<SenderKey>) {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 3).unwrap();
        let funded: Vec<Address> = keys[..2].iter().map(|k| k.address()).collect();
        (Mempool::new(settings, 100, &funded, 10 * ETH), keys)
    }

    #[test]
    fn a_nonce_gap_is_queued_until_the_gap_is_filled_and_a_low_nonce_is_refused_as_geth_does() {
        let (mut pool, keys) = funded_pool(MempoolSettings::new(31337));
        let gapped = pool.submit(&transfer(&keys[0], 1, 31337)).unwrap();
        assert_eq!(pool.nonce(&keys[0].address(), true), 0);
        assert_eq!(pool.produce(), 101);
        assert!(pool.block_hashes(101).is_empty());
        let first = pool.submit(&transfer(&keys[0], 0, 31337)).unwrap();
        assert_eq!(pool.nonce(&keys[0].address(), true), 2);
        pool.produce();
        assert_eq!(pool.block_hashes(102), &[first, gapped]);
        let err = pool.submit(&transfer_of(&keys[0], 1, 31337, 7)).unwrap_err();
        assert_eq!(err.code, -32000);
        assert!(err.message.starts_with("nonce too low"), "{}", err.message);
        assert_eq!(pool.nonce(&keys[0].address(), false), 2);
        assert_eq!(pool.balance(&Address::parse("0x3535353535353535353535353535353535353535").unwrap()), 2);
    }

    #[test]
    fn wrong_chain_unfunded_sender_garbage_and_a_full_pool_are_refused_with_geths_messages() {
        let mut settings = MempoolSettings::new(31337);
        settings.capacity = 1;
        let (mut pool, keys) = funded_pool(settings);
        assert!(pool.submit(&transfer(&keys[0], 0, 1)).unwrap_err().message.starts_with("invalid chain id"));
        assert!(pool
            .submit(&transfer(&keys[2], 0, 31337))
            .unwrap_err()
            .message
            .starts_with("insufficient funds"));
        assert!(pool.submit(b"\x02\x01").is_err());
        let raw = transfer(&keys[0], 0, 31337);
        pool.submit(&raw).unwrap();
        assert_eq!(pool.submit(&raw).unwrap_err().message, "already known");
        assert_eq!(pool.submit(&transfer(&keys[1], 0, 31337)).unwrap_err().message, "txpool is full");
    }

    #[test]
    fn a_transaction_whose_signature_is_broken_is_refused_and_never_pooled() {
        let (mut pool, keys) = funded_pool(MempoolSettings::new(31337));
        let raw = transfer(&keys[0], 0, 31337);
        // The last 32 bytes are `s` (a 0xa0 string header before them): its high twin
        // n - s, and a zero `s`.
        let order: [u8; 32] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
            0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
        ];
        let s_at = raw.len() - 32;
        assert_eq!(raw[s_at - 1], 0xa0, "a 32-byte s");
        let mut high = raw.clone();
        let mut borrow = 0i16;
        for i in (0..32).rev() {
            let difference = i16::from(order[i]) - i16::from(raw[s_at + i]) - borrow;
            high[s_at + i] = difference.rem_euclid(256) as u8;
            borrow = i16::from(difference < 0);
        }
        let mut zero = raw.clone();
        zero[s_at..].fill(0);
        for broken in [high, zero] {
            let err = pool.submit(&broken).unwrap_err();
            assert_eq!((err.code, err.message.as_str()), (-32000, "invalid transaction signature"));
        }
        assert_eq!(pool.nonce(&keys[0].address(), true), 0, "nothing pooled");
        pool.submit(&raw).unwrap();
    }

    #[test]
    fn a_block_includes_no_more_than_its_gas_limit_and_the_rest_waits_for_the_next() {
        let mut settings = MempoolSettings::new(31337);
        settings.block_gas_limit = 50_000;
        let (mut pool, keys) = funded_pool(settings);
        for nonce in 0..3 {
            pool.submit(&transfer(&keys[0], nonce, 31337)).unwrap();
        }
        pool.produce();
        assert_eq!(pool.block_hashes(101).len(), 2);
        assert_eq!(pool.block_gas(101), 42_000);
        pool.produce();
        assert_eq!(pool.block_hashes(102).len(), 1);
    }

    #[test]
    fn dropped_delayed_and_reorged_transactions_are_accounted_for() {
        let mut settings = MempoolSettings::new(31337);
        settings.drop_share = 0.5;
        settings.delay_blocks = 1;
        let (mut pool, keys) = funded_pool(settings);
        let sent: Vec<[u8; 32]> =
            (0..40).map(|n| pool.submit(&transfer(&keys[0], n, 31337)).unwrap()).collect();
        pool.produce();
        assert!(pool.block_hashes(101).is_empty(), "delayed one block");
        for _ in 0..40 {
            pool.produce();
        }
        let included = sent.iter().filter(|h| matches!(pool.lookup(h), Some(Lookup::Included(_)))).count();
        let pending = sent.iter().filter(|h| matches!(pool.lookup(h), Some(Lookup::Pending(_)))).count();
        let gone = sent.iter().filter(|h| pool.lookup(h).is_none()).count() as u64;
        assert_eq!(gone, pool.dropped());
        assert!(pool.dropped() > 0);
        // What follows a dropped nonce waits behind the gap for good.
        assert_eq!(included + pending + gone as usize, sent.len());

        let mut settings = MempoolSettings::new(31337);
        settings.reorg_every = 3;
        settings.reorg_depth = 2;
        let (mut pool, keys) = funded_pool(settings);
        let hash = pool.submit(&transfer(&keys[0], 0, 31337)).unwrap();
        assert_eq!(pool.produce(), 101);
        assert_eq!(pool.produce(), 102);
        assert_eq!(pool.reorgs(), 1, "block 102 takes back 100 and 101");
        assert!(pool.block_hashes(101).is_empty());
        match pool.lookup(&hash) {
            Some(Lookup::Included(included)) => assert_eq!(included.block, 102),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn every_waiting_sender_gets_its_turn_in_address_order_and_a_reorg_carries_the_gas_along() {
        let mut settings = MempoolSettings::new(31337);
        settings.block_gas_limit = 5 * 21_000;
        settings.reorg_every = 104;
        settings.reorg_depth = 2;
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 4).unwrap();
        let funded: Vec<Address> = keys.iter().map(|k| k.address()).collect();
        let mut pool = Mempool::new(settings, 100, &funded, 10 * ETH);
        // Three senders with three each, the fourth behind a gap (nonce 1 without 0).
        for key in &keys[..3] {
            for nonce in 0..3 {
                pool.submit(&transfer(key, nonce, 31337)).unwrap();
            }
        }
        pool.submit(&transfer(&keys[3], 1, 31337)).unwrap();
        let mut by_address: Vec<Address> = funded[..3].to_vec();
        by_address.sort();
        let senders_of = |pool: &Mempool, block: u64| -> Vec<Address> {
            pool.block_hashes(block)
                .iter()
                .map(|hash| match pool.lookup(hash) {
                    Some(Lookup::Included(included)) => included.decoded.sender,
                    other => panic!("{other:?}"),
                })
                .collect()
        };
        assert_eq!(pool.produce(), 101);
        assert_eq!(
            senders_of(&pool, 101),
            [by_address[0], by_address[0], by_address[0], by_address[1], by_address[1]]
        );
        assert_eq!(pool.block_gas(101), 5 * 21_000);
        pool.produce();
        assert_eq!(senders_of(&pool, 102), [by_address[1], by_address[2], by_address[2], by_address[2]]);
        assert_eq!(pool.block_gas(102), 4 * 21_000);
        pool.produce();
        assert!(pool.block_hashes(103).is_empty(), "the gapped sender waits");
        assert_eq!(pool.nonce(&keys[3].address(), true), 0);
        // Block 104 takes back 102 and 103: their transactions and gas move into it.
        pool.produce();
        assert_eq!(pool.reorgs(), 1);
        assert_eq!((pool.block_hashes(104).len(), pool.block_gas(104)), (4, 4 * 21_000));
        assert_eq!((pool.block_hashes(102).len(), pool.block_gas(102)), (0, 0));
        assert_eq!(pool.block_gas(101), 5 * 21_000);
    }

    #[test]
    fn a_transaction_starting_with_the_invalid_opcode_is_included_with_status_zero() {
        let (mut pool, keys) = funded_pool(MempoolSettings::new(31337));
        let tx = UnsignedTx {
            chain_id: 31337,
            nonce: 0,
            fees: Fees::Legacy { gas_price: 1_000_000_000 },
            gas_limit: 30_000,
            to: Address::parse("0x3535353535353535353535353535353535353535"),
            value: 0,
            data: vec![0xfe],
        };
        let hash = pool.submit(&sign(&tx, &keys[1]).raw).unwrap();
        pool.produce();
        match pool.lookup(&hash) {
            Some(Lookup::Included(included)) => assert_eq!((included.status, included.gas_used), (0, 21_016)),
            other => panic!("{other:?}"),
        }
    }
}
