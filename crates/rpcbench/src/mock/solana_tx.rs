//! The Solana mock's transactions (`MockOptions::solana_tx`): `sendTransaction` decodes the
//! legacy transaction (base64 or base58), verifies its ed25519 signatures, checks that its
//! blockhash is one of the node's recent ones (valid for `blockhash_max_age` block heights,
//! the "expire" knob) and refuses a signature already seen with Agave's error; the fee payer
//! pays the fee at once, and the transaction lands in the next slot with a block (failed, with
//! the System Program's error, when the payer cannot pay the transfer). A `drop_share` of the
//! accepted ones is answered but never lands. `getSignatureStatuses` and the
//! `signatureSubscribe` notifications (`ws.rs`) tell the landing at each commitment
//! (processed: its slot; confirmed: one slot later; finalized: [`FINALIZED_DEPTH`] later);
//! `requestAirdrop` credits lamports, `getBalance` answers the accounts it knows,
//! `getLatestBlockhash` states the validity the knob gives. Memory is bounded: statuses are
//! kept for the newest `capacity` signatures.
//!
//! Cost per transaction (the mock must keep up with a generator on its own core): signers'
//! public keys are decompressed once and kept ([`VerifyingKeys`]), and the signature named in
//! the answer is written by the crate's own base58 (`crate::tx::solana::base58`).

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use base64::Engine as _;
use ed25519_dalek::{Signature, VerifyingKey};
use serde_json::{json, Value};

use super::prng::{bytes, draw};
use super::rpc::{RpcError, INVALID_PARAMS};
use crate::tx::solana::wire::{decode, DecodedSolanaTx};

/// What the transaction pool reads of the node's chain: which slots were skipped, each slot's
/// block height and blockhash. The Solana mock node implements it; the pool never names it.
pub(crate) trait SlotChain {
    /// Whether `slot` has no block.
    fn is_skipped(&self, slot: u64) -> bool;
    /// The block height at `slot`.
    fn block_height(&self, slot: u64) -> u64;
    /// The blockhash of `slot`'s block.
    fn blockhash_bytes(&self, slot: u64) -> [u8; 32];
}

/// Slots after its landing at which a transaction is finalized.
pub(crate) const FINALIZED_DEPTH: u64 = 31;
/// Agave's code for a refused transaction (preflight failure).
const SEND_TRANSACTION_PREFLIGHT_FAILURE: i64 = -32002;
/// Agave's code for a bad signature.
const SIGNATURE_VERIFICATION_FAILURE: i64 = -32003;
/// Lamports per signature.
const FEE_PER_SIGNATURE: u64 = 5000;
/// Compute units the fee's priority part is charged for.
const COMPUTE_UNITS: u64 = 200_000;
/// Most signatures one `getSignatureStatuses` takes.
const MAX_STATUS_SIGNATURES: usize = 256;
/// Signers' public keys kept decompressed at most (past it the table starts afresh).
const VERIFYING_KEYS_KEPT: usize = 4096;
const S_DROP: u64 = 40;
const S_AIRDROP: u64 = 41;

/// Knobs of the Solana mock's transactions.
#[derive(Debug, Clone, PartialEq)]
pub struct SolanaTxOptions {
    /// Share of accepted transactions answered but never landed (0.0..=1.0).
    pub drop_share: f64,
    /// Block heights a blockhash stays valid after its block (Solana: 150).
    pub blockhash_max_age: u64,
    /// Signatures whose status is kept at most.
    pub capacity: usize,
    /// Whether `requestAirdrop` credits lamports.
    pub airdrop: bool,
}

impl Default for SolanaTxOptions {
    fn default() -> Self {
        SolanaTxOptions { drop_share: 0.0, blockhash_max_age: 150, capacity: 262_144, airdrop: true }
    }
}

/// Where a transaction the node took is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landed {
    /// Its slot.
    pub slot: u64,
    /// Its error, as Agave writes it (`None`: succeeded).
    pub err: Option<Value>,
}

/// The pool: balances, recent blockhashes and the statuses of the signatures taken.
#[derive(Debug)]
pub(crate) struct SolanaTxPool {
    options: SolanaTxOptions,
    balances: HashMap<[u8; 32], u64>,
    /// Recent blockhashes and their block heights, from slot `synced` back.
    recent: HashMap<[u8; 32], u64>,
    synced: Option<u64>,
    /// `None`: dropped (answered, never lands).
    statuses: HashMap<[u8; 64], Option<Landed>>,
    order: VecDeque<[u8; 64]>,
    keys: VerifyingKeys,
    taken: u64,
    dropped: u64,
    seed: u64,
}

impl SolanaTxPool {
    pub(crate) fn new(options: SolanaTxOptions, seed: u64) -> Self {
        SolanaTxPool {
            options,
            balances: HashMap::new(),
            recent: HashMap::new(),
            synced: None,
            statuses: HashMap::new(),
            order: VecDeque::new(),
            keys: VerifyingKeys::default(),
            taken: 0,
            dropped: 0,
            seed,
        }
    }

    /// Learns the blockhashes of the slots produced since the last call, forgetting expired ones.
    fn sync(&mut self, node: &impl SlotChain, slot: u64) {
        let keep = self.options.blockhash_max_age.saturating_mul(2).saturating_add(2);
        let first = match self.synced {
            Some(synced) if synced >= slot => return,
            Some(synced) => (synced + 1).max(slot.saturating_sub(keep)),
            None => slot.saturating_sub(keep),
        };
        for s in first..=slot {
            if !node.is_skipped(s) {
                self.recent.insert(node.blockhash_bytes(s), node.block_height(s));
            }
        }
        self.synced = Some(slot);
        let height = node.block_height(slot);
        let max_age = self.options.blockhash_max_age;
        if self.recent.len() as u64 > keep * 2 {
            self.recent.retain(|_, h| *h + max_age >= height);
        }
    }

    /// The first slot with a block after `slot`.
    fn next_block_slot(node: &impl SlotChain, slot: u64) -> u64 {
        let mut next = slot + 1;
        while node.is_skipped(next) {
            next += 1;
        }
        next
    }

    fn remember(&mut self, signature: [u8; 64], landed: Option<Landed>) {
        if self.statuses.insert(signature, landed).is_none() {
            self.order.push_back(signature);
        }
        while self.order.len() > self.options.capacity.max(1) {
            if let Some(old) = self.order.pop_front() {
                self.statuses.remove(&old);
            }
        }
    }

    fn submit(&mut self, node: &impl SlotChain, slot: u64, params: &[Value]) -> Result<Value, RpcError> {
        let text = params
            .first()
            .and_then(Value::as_str)
            .ok_or_else(|| RpcError::invalid_params("invalid type: expected a string transaction"))?;
        let encoding = params.get(1).and_then(|config| config.get("encoding")).and_then(Value::as_str);
        let wire = match encoding {
            Some("base64") => base64::engine::general_purpose::STANDARD
                .decode(text)
                .map_err(|err| RpcError::invalid_params(format!("invalid base64 encoding: {err}")))?,
            None | Some("base58") => bs58::decode(text)
                .into_vec()
                .map_err(|err| RpcError::invalid_params(format!("invalid base58 encoding: {err}")))?,
            Some(other) => {
                return Err(RpcError::invalid_params(format!(
                    "unknown variant `{other}`, expected `base58` or `base64`"
                )))
            }
        };
        let tx = decode(&wire).map_err(|err| {
            RpcError::new(
                INVALID_PARAMS,
                format!("failed to deserialize solana_transaction::versioned::VersionedTransaction: {err}"),
            )
        })?;
        if !self.keys.verify(&tx) {
            return Err(RpcError::new(
                SIGNATURE_VERIFICATION_FAILURE,
                "Transaction signature verification failure",
            ));
        }
        let signature = tx.signatures[0];
        let name = crate::tx::solana::base58::signature_text(&signature);
        if self.statuses.contains_key(&signature) {
            return Err(preflight("This transaction has already been processed", "AlreadyProcessed"));
        }
        self.sync(node, slot);
        let height = node.block_height(slot);
        match self.recent.get(&tx.blockhash) {
            Some(&made) if made + self.options.blockhash_max_age >= height => {}
            _ => return Err(preflight("Blockhash not found", "BlockhashNotFound")),
        }
        let payer = tx.account_keys[0];
        let fee = fee(&tx);
        let balance = self.balances.get(&payer).copied().unwrap_or(0);
        if balance < fee {
            return Err(preflight(
                "Attempt to debit an account but found no record of a prior credit.",
                "AccountNotFound",
            ));
        }
        self.balances.insert(payer, balance - fee);
        let mut err = None;
        for (index, (from, to, lamports)) in tx.system_transfers().into_iter().enumerate() {
            let held = self.balances.get(&from).copied().unwrap_or(0);
            if held < lamports {
                err = Some(json!({"InstructionError": [index, {"Custom": 1}]}));
                break;
            }
            self.balances.insert(from, held - lamports);
            *self.balances.entry(to).or_default() += lamports;
        }
        self.taken += 1;
        let dropped = draw(self.seed ^ S_DROP, S_DROP, self.taken, 0) as f64 / u64::MAX as f64;
        let landed = if dropped < self.options.drop_share {
            self.dropped += 1;
            None
        } else {
            Some(Landed { slot: Self::next_block_slot(node, slot), err })
        };
        self.remember(signature, landed);
        Ok(json!(name))
    }

    /// The signatures that landed in `slot`, in the order taken (for `blockSubscribe`,
    /// `solana_blocks.rs`). Landing slots only grow along `order`, so the scan starts at the
    /// newest and stops at the first signature that landed before `slot`.
    pub(crate) fn landed_in(&self, slot: u64) -> Vec<[u8; 64]> {
        let mut found = Vec::new();
        for signature in self.order.iter().rev() {
            match self.statuses.get(signature) {
                Some(Some(landed)) if landed.slot == slot => found.push(*signature),
                Some(Some(landed)) if landed.slot < slot => break,
                _ => {}
            }
        }
        found.reverse();
        found
    }

    /// Where `signature` landed, if it has by `slot`.
    pub(crate) fn landed(&self, signature: &[u8; 64], slot: u64) -> Option<&Landed> {
        self.statuses.get(signature)?.as_ref().filter(|landed| landed.slot <= slot)
    }

    fn statuses(&self, slot: u64, params: &[Value]) -> Result<Value, RpcError> {
        let names = params
            .first()
            .and_then(Value::as_array)
            .ok_or_else(|| RpcError::invalid_params("invalid type: expected an array of signatures"))?;
        if names.len() > MAX_STATUS_SIGNATURES {
            return Err(RpcError::invalid_params(format!(
                "Too many inputs provided; max {MAX_STATUS_SIGNATURES}"
            )));
        }
        let mut values = Vec::with_capacity(names.len());
        for name in names {
            let signature = name
                .as_str()
                .and_then(|text| bs58::decode(text).into_vec().ok())
                .and_then(|bytes| <[u8; 64]>::try_from(bytes).ok())
                .ok_or_else(|| RpcError::invalid_params("Invalid param: WrongSize"))?;
            values.push(match self.landed(&signature, slot) {
                None => Value::Null,
                Some(landed) => {
                    let depth = slot - landed.slot;
                    let (confirmations, status) = if depth >= FINALIZED_DEPTH {
                        (Value::Null, "finalized")
                    } else if depth >= 1 {
                        (json!(depth), "confirmed")
                    } else {
                        (json!(0), "processed")
                    };
                    let outcome = match &landed.err {
                        None => json!({"Ok": null}),
                        Some(err) => json!({"Err": err}),
                    };
                    json!({
                        "slot": landed.slot,
                        "confirmations": confirmations,
                        "err": landed.err,
                        "status": outcome,
                        "confirmationStatus": status,
                    })
                }
            });
        }
        Ok(json!({"context": {"slot": slot, "apiVersion": "2.2.16"}, "value": values}))
    }

    fn airdrop(&mut self, node: &impl SlotChain, slot: u64, params: &[Value]) -> Result<Value, RpcError> {
        let key = params
            .first()
            .and_then(Value::as_str)
            .and_then(|text| bs58::decode(text).into_vec().ok())
            .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
            .ok_or_else(|| RpcError::invalid_params("Invalid param: WrongSize"))?;
        let lamports = params
            .get(1)
            .and_then(Value::as_u64)
            .ok_or_else(|| RpcError::invalid_params("invalid type: expected u64 lamports"))?;
        if !self.options.airdrop {
            return Err(RpcError::new(-32600, "Invalid request: airdrops are not available on this node"));
        }
        let balance = self.balances.entry(key).or_default();
        *balance = balance.saturating_add(lamports);
        self.taken += 1;
        let signature: [u8; 64] = bytes(self.seed, S_AIRDROP, self.taken, 0);
        self.remember(signature, Some(Landed { slot: Self::next_block_slot(node, slot), err: None }));
        Ok(json!(bs58::encode(signature).into_string()))
    }

    /// Answers `method` when the pool owns it; `None` leaves it to the synthetic ledger.
    pub(crate) fn answer(
        &mut self,
        node: &impl SlotChain,
        slot: u64,
        method: &str,
        params: &[Value],
    ) -> Option<Result<Value, RpcError>> {
        Some(match method {
            "sendTransaction" => self.submit(node, slot, params),
            "getSignatureStatuses" => self.statuses(slot, params),
            "requestAirdrop" => self.airdrop(node, slot, params),
            "getBalance" => {
                let key = params
                    .first()
                    .and_then(Value::as_str)
                    .and_then(|text| bs58::decode(text).into_vec().ok())
                    .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())?;
                let lamports = *self.balances.get(&key)?;
                Ok(json!({"context": {"slot": slot, "apiVersion": "2.2.16"}, "value": lamports}))
            }
            "getLatestBlockhash" => {
                let block = if node.is_skipped(slot) { slot - 1 } else { slot };
                Ok(json!({
                    "context": {"slot": slot, "apiVersion": "2.2.16"},
                    "value": {
                        "blockhash": bs58::encode(node.blockhash_bytes(block)).into_string(),
                        "lastValidBlockHeight": node.block_height(block) + self.options.blockhash_max_age,
                    },
                }))
            }
            // The mock's own truth, for tests.
            "rpcbench_solanaTxStatus" => Ok(json!({"taken": self.taken, "dropped": self.dropped})),
            _ => return None,
        })
    }
}

/// Signers' public keys, decompressed once (decompression is a square root on the curve:
/// about a third of a verification); bounded by [`VERIFYING_KEYS_KEPT`].
#[derive(Debug, Default)]
struct VerifyingKeys {
    keys: HashMap<[u8; 32], VerifyingKey>,
}

impl VerifyingKeys {
    /// Whether every signature of `tx` verifies (strictly, as `DecodedSolanaTx::verify` does)
    /// against the account key in its position.
    fn verify(&mut self, tx: &DecodedSolanaTx) -> bool {
        tx.signatures.iter().zip(&tx.account_keys).all(|(signature, key)| {
            let Some(key) = self.key(key) else { return false };
            key.verify_strict(&tx.message, &Signature::from_bytes(signature)).is_ok()
        })
    }

    fn key(&mut self, bytes: &[u8; 32]) -> Option<VerifyingKey> {
        if let Some(key) = self.keys.get(bytes) {
            return Some(*key);
        }
        let key = VerifyingKey::from_bytes(bytes).ok()?;
        if self.keys.len() >= VERIFYING_KEYS_KEPT {
            self.keys.clear();
        }
        self.keys.insert(*bytes, key);
        Some(key)
    }
}

/// The Compute Budget program's id.
fn compute_budget_program() -> &'static [u8; 32] {
    static PROGRAM: OnceLock<[u8; 32]> = OnceLock::new();
    PROGRAM
        .get_or_init(|| crate::tx::solana::wire::program_id(crate::tx::solana::wire::COMPUTE_BUDGET_PROGRAM))
}

/// The fee of `tx`: per signature, plus the priority price of its SetComputeUnitPrice.
fn fee(tx: &DecodedSolanaTx) -> u64 {
    let budget = compute_budget_program();
    let price = tx
        .instructions
        .iter()
        .filter(|ix| {
            &tx.account_keys[usize::from(ix.program)] == budget && ix.data.len() == 9 && ix.data[0] == 3
        })
        .map(|ix| {
            let mut le = [0u8; 8];
            le.copy_from_slice(&ix.data[1..9]);
            u64::from_le_bytes(le)
        })
        .next_back()
        .unwrap_or(0);
    let priority = (u128::from(price) * u128::from(COMPUTE_UNITS)).div_ceil(1_000_000);
    FEE_PER_SIGNATURE
        .saturating_mul(tx.signatures.len() as u64)
        .saturating_add(priority.min(u128::from(u64::MAX)) as u64)
}

/// A refusal as Agave's preflight words it.
fn preflight(message: &str, err: &str) -> RpcError {
    let mut error = RpcError::new(
        SEND_TRANSACTION_PREFLIGHT_FAILURE,
        format!("Transaction simulation failed: {message}"),
    );
    error.data = Some(json!({"err": err, "logs": [], "accounts": null, "unitsConsumed": 0}));
    error
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::mock::solana::SolanaNode;
    use crate::tx::solana::keys::SolanaKeypair;
    use crate::tx::solana::wire::{transfer, TransferSpec};
    use std::time::{Duration, Instant};

    fn node() -> SolanaNode {
        SolanaNode::new(1, Duration::from_millis(400), Instant::now(), 1_700_000_000)
    }

    fn send(pool: &mut SolanaTxPool, node: &SolanaNode, slot: u64, wire: &[u8]) -> Result<Value, RpcError> {
        let text = base64::engine::general_purpose::STANDARD.encode(wire);
        pool.answer(node, slot, "sendTransaction", &[json!(text), json!({"encoding": "base64"})]).unwrap()
    }

    #[test]
    fn the_pool_checks_signature_blockhash_duplicates_and_funds_and_lands_in_the_next_block() {
        let node = node();
        let mut pool = SolanaTxPool::new(SolanaTxOptions { blockhash_max_age: 10, ..Default::default() }, 1);
        let slot = 1000;
        let payer = SolanaKeypair::from_seed(&[1; 32]);
        let block = if node.is_skipped(slot) { slot - 1 } else { slot };
        let spec = TransferSpec {
            to: [7; 32],
            lamports: 1000,
            memo: b"a".to_vec(),
            cu_price: None,
            blockhash: node.blockhash_bytes(block),
        };
        let signed = transfer(&payer, &spec);
        // Unfunded: refused as Agave does.
        let err = send(&mut pool, &node, slot, &signed.wire).unwrap_err();
        assert_eq!(err.code, SEND_TRANSACTION_PREFLIGHT_FAILURE);
        pool.answer(&node, slot, "requestAirdrop", &[json!(payer.pubkey_text()), json!(1_000_000)])
            .unwrap()
            .unwrap();
        assert_eq!(
            send(&mut pool, &node, slot, &signed.wire).unwrap(),
            json!(bs58::encode(signed.signature).into_string())
        );
        let err = send(&mut pool, &node, slot, &signed.wire).unwrap_err();
        assert!(err.message.contains("already been processed"), "{}", err.message);
        // Not landed before the next block's slot, then processed, then confirmed.
        let landing = SolanaTxPool::next_block_slot(&node, slot);
        assert!(pool.landed(&signed.signature, slot).is_none());
        assert_eq!(pool.landed(&signed.signature, landing).map(|l| l.err.clone()), Some(None));
        let name = bs58::encode(signed.signature).into_string();
        let status =
            pool.answer(&node, landing + 1, "getSignatureStatuses", &[json!([name])]).unwrap().unwrap();
        assert_eq!(status["value"][0]["confirmationStatus"], "confirmed");
        // A tampered transaction fails verification.
        let mut tampered = signed.wire.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(send(&mut pool, &node, slot, &tampered).unwrap_err().code, SIGNATURE_VERIFICATION_FAILURE);
        // A blockhash older than the knob allows is not found.
        let old = transfer(&payer, &TransferSpec { memo: b"b".to_vec(), ..spec.clone() });
        let err = send(&mut pool, &node, slot + 40, &old.wire).unwrap_err();
        assert!(err.message.contains("Blockhash not found"), "{}", err.message);
        // A transfer the payer cannot pay lands failed (the fee is taken).
        let large = transfer(&payer, &TransferSpec { memo: b"c".to_vec(), lamports: 10_000_000, ..spec });
        send(&mut pool, &node, slot, &large.wire).unwrap();
        assert!(pool.landed(&large.signature, landing).unwrap().err.is_some());
    }

    #[test]
    fn a_bad_signature_is_refused_on_its_own_transaction_though_its_signers_key_is_kept() {
        let node = node();
        let mut pool = SolanaTxPool::new(SolanaTxOptions::default(), 1);
        let slot = 1000;
        let block = if node.is_skipped(slot) { slot - 1 } else { slot };
        let payer = SolanaKeypair::from_seed(&[2; 32]);
        pool.answer(&node, slot, "requestAirdrop", &[json!(payer.pubkey_text()), json!(1_000_000_000)])
            .unwrap()
            .unwrap();
        let signed = |memo: &[u8]| {
            let spec = TransferSpec {
                to: [7; 32],
                lamports: 1,
                memo: memo.to_vec(),
                cu_price: None,
                blockhash: node.blockhash_bytes(block),
            };
            transfer(&payer, &spec)
        };
        // Good, bad (a signature bit flipped, the payer's key already kept), good, bad: each
        // answered on its own, and only the good ones are taken.
        for round in 0..4u8 {
            let good = signed(&[b'g', round]);
            assert!(good.wire[0] == 1, "one signature first");
            let mut bad = signed(&[b'b', round]).wire;
            bad[1 + usize::from(round) * 9] ^= 1 << (round % 8);
            let decoded = decode(&bad).unwrap();
            assert!(decoded.verify().is_err());
            assert_eq!(send(&mut pool, &node, slot, &bad).unwrap_err().code, SIGNATURE_VERIFICATION_FAILURE);
            assert_eq!(
                send(&mut pool, &node, slot, &good.wire).unwrap(),
                json!(bs58::encode(good.signature).into_string())
            );
        }
        let taken = pool.answer(&node, slot, "rpcbench_solanaTxStatus", &[]).unwrap().unwrap();
        // The airdrop counts as one taken.
        assert_eq!(taken["taken"], json!(5));
        // A payer key that is not a point of the curve is refused too, and never kept.
        let not_a_point = (0..=255u8)
            .map(|y| {
                let mut key = [0u8; 32];
                key[0] = y;
                key
            })
            .find(|key| VerifyingKey::from_bytes(key).is_err())
            .unwrap();
        let mut off_curve = signed(b"x").wire;
        let key_at = 1 + 64 + 3 + 1;
        off_curve[key_at..key_at + 32].copy_from_slice(&not_a_point);
        assert_eq!(
            send(&mut pool, &node, slot, &off_curve).unwrap_err().code,
            SIGNATURE_VERIFICATION_FAILURE
        );
        assert!(!pool.keys.keys.contains_key(&not_a_point));
    }

    #[test]
    fn a_drop_share_outside_0_to_1_or_a_zero_blockhash_age_is_named() {
        let mut options = super::super::MockOptions::new(super::super::Chain::Solana);
        options.solana_tx = Some(SolanaTxOptions { drop_share: 1.5, ..Default::default() });
        assert!(options.validate().unwrap_err().to_string().contains("solana_tx_drop"));
        options.solana_tx = Some(SolanaTxOptions { blockhash_max_age: 0, ..Default::default() });
        assert!(options.validate().unwrap_err().to_string().contains("blockhash_max_age"));
    }
}
