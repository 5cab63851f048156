//! The Solana mock's transactions (`MockOptions::solana_tx`): `sendTransaction` decodes the
//! legacy transaction (base64 or base58), verifies its ed25519 signatures, checks that its
//! blockhash is one of the node's recent ones (valid for `blockhash_max_age` block heights,
//! the "expire" knob) and refuses a signature already seen with Agave's error; the fee payer
//! pays the fee at once, and the transaction lands in the next slot with a block (failed, with
//! the System Program's error, when the payer cannot pay the transfer). A `drop_share` of the
//! accepted ones is answered but never lands; an `unnotified_share` of the landed ones lands
//! without its `signatureSubscribe` notification. `getSignatureStatuses` and the
//! `signatureSubscribe` notifications (`ws.rs`) tell the landing at each commitment
//! (processed: its slot; confirmed: one slot later; finalized: [`FINALIZED_DEPTH`] later);
//! `requestAirdrop` credits lamports, `getBalance` answers the accounts it knows,
//! `getLatestBlockhash` states the validity the knob gives. Memory is bounded: statuses are
//! kept for the newest `capacity` signatures.
//!
//! With `skipPreflight` a send is answered with its signature once it decodes, as Agave's RPC
//! does, and waits for the batched sigverify stage (`solana_sigverify.rs`), run by the send
//! that fills a batch and before anything reads a landing or a balance; what the bank would
//! refuse (a bad signature, an unknown blockhash, an unfunded payer, a signature already
//! processed) never lands and is counted in the mock's truth (`rpcbench_solanaTxStatus`).
//!
//! Cost per transaction (the mock must keep up with a generator on its own core): signers'
//! public keys are decompressed once and kept, and the signature named in the answer is written
//! by the crate's own base58 (`crate::tx::solana::base58`).

use std::collections::{HashMap, VecDeque};
use std::sync::OnceLock;

use base64::Engine as _;
use serde_json::{json, Value};

use super::prng::{bytes, draw};
use super::rpc::{RpcError, INVALID_PARAMS};
use super::solana_block_signatures::BlockSignatures;
use super::solana_sigverify::{SigverifyStage, VerifyingKeys};
use crate::tx::solana::wire::{decode, DecodedSolanaTx};
#[cfg(test)]
use ed25519_dalek::VerifyingKey;

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
const S_DROP: u64 = 40;
const S_AIRDROP: u64 = 41;
const S_UNNOTIFIED: u64 = 42;

/// Knobs of the Solana mock's transactions.
#[derive(Debug, Clone, PartialEq)]
pub struct SolanaTxOptions {
    /// Share of accepted transactions answered but never landed (0.0..=1.0).
    pub drop_share: f64,
    /// Share of landed transactions whose `signatureSubscribe` notification is never sent
    /// (0.0..=1.0): `getSignatureStatuses` still tells their landing.
    pub unnotified_share: f64,
    /// Block heights a blockhash stays valid after its block (Solana: 150).
    pub blockhash_max_age: u64,
    /// Signatures whose status is kept at most.
    pub capacity: usize,
    /// Whether `requestAirdrop` credits lamports.
    pub airdrop: bool,
}

impl Default for SolanaTxOptions {
    fn default() -> Self {
        SolanaTxOptions {
            drop_share: 0.0,
            unnotified_share: 0.0,
            blockhash_max_age: 150,
            capacity: 262_144,
            airdrop: true,
        }
    }
}

/// Where a transaction the node took is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Landed {
    /// Its slot.
    pub slot: u64,
    /// Its error, as Agave writes it (`None`: succeeded).
    pub err: Option<Value>,
    /// Its `signatureSubscribe` notification is never sent (`unnotified_share`).
    pub unnotified: bool,
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
    /// Transactions sent with `skipPreflight`, waiting for their signatures' check.
    sigverify: SigverifyStage,
    never_landed: NeverLanded,
    /// Each recent block's landed signatures, as its notification lists them.
    blocks: BlockSignatures,
    taken: u64,
    dropped: u64,
    unnotified: u64,
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
            sigverify: SigverifyStage::default(),
            never_landed: NeverLanded::default(),
            blocks: BlockSignatures::keeping(FINALIZED_DEPTH + 8),
            taken: 0,
            dropped: 0,
            unnotified: 0,
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
        let config = params.get(1);
        let encoding = config.and_then(|config| config.get("encoding")).and_then(Value::as_str);
        let skip_preflight =
            config.and_then(|config| config.get("skipPreflight")).and_then(Value::as_bool).unwrap_or(false);
        let tx = decode_sent(text, encoding)?;
        let name =
            if skip_preflight { self.forward(node, slot, tx) } else { self.preflight(node, slot, tx)? };
        Ok(Value::String(name))
    }

    /// A send with preflight: every check in the answer (a bad signature refused with Agave's
    /// -32003, the rest as its simulation words them); taken, it lands in the next block.
    fn preflight(
        &mut self,
        node: &impl SlotChain,
        slot: u64,
        tx: DecodedSolanaTx,
    ) -> Result<String, RpcError> {
        if !self.keys.verify(&tx) {
            return Err(RpcError::new(
                SIGNATURE_VERIFICATION_FAILURE,
                "Transaction signature verification failure",
            ));
        }
        let signature = tx.signatures[0];
        let name = crate::tx::solana::base58::signature_text(&signature);
        if self.statuses.contains_key(&signature) || self.sigverify.holds(&signature) {
            return Err(preflight("This transaction has already been processed", "AlreadyProcessed"));
        }
        self.process(node, slot, &tx, &name).map_err(|refusal| match refusal {
            Refusal::BlockhashNotFound => preflight("Blockhash not found", "BlockhashNotFound"),
            Refusal::AccountNotFound => preflight(
                "Attempt to debit an account but found no record of a prior credit.",
                "AccountNotFound",
            ),
        })?;
        Ok(name)
    }

    /// A send with `skipPreflight`: as Agave's RPC, answered with its signature once it decodes,
    /// and forwarded, here to the sigverify stage. What the bank would refuse (a bad signature,
    /// an unknown blockhash, an unfunded payer, a signature already processed) never lands and
    /// is counted in the mock's truth (`rpcbench_solanaTxStatus`).
    fn forward(&mut self, node: &impl SlotChain, slot: u64, tx: DecodedSolanaTx) -> String {
        let signature = tx.signatures[0];
        let name = crate::tx::solana::base58::signature_text(&signature);
        if self.statuses.contains_key(&signature) || self.sigverify.holds(&signature) {
            self.never_landed.already_processed += 1;
        } else if self.sigverify.push(tx, slot, name.clone()) {
            self.run_sigverify(node);
        }
        name
    }

    /// Runs the sigverify stage on what waits in it: the verified transactions are processed
    /// in the order sent (at the slot each was sent in), the others never land.
    pub(crate) fn run_sigverify(&mut self, node: &impl SlotChain) {
        if self.sigverify.is_empty() {
            return;
        }
        for (waiting, verified) in self.sigverify.run(&mut self.keys) {
            if !verified {
                self.never_landed.bad_signature += 1;
                continue;
            }
            let signature = waiting.tx.signatures[0];
            if self.statuses.contains_key(&signature) {
                self.never_landed.already_processed += 1;
                continue;
            }
            match self.process(node, waiting.slot, &waiting.tx, &waiting.name) {
                Ok(()) => {}
                Err(Refusal::BlockhashNotFound) => self.never_landed.blockhash_not_found += 1,
                Err(Refusal::AccountNotFound) => self.never_landed.account_not_found += 1,
            }
        }
    }

    /// What the bank does with a transaction whose signatures verified, sent at `slot`: checks
    /// its blockhash and that its payer can pay the fee, takes the fee, runs its transfers and
    /// lands it in the next block (or drops it, the `drop_share` knob). `name` is its first
    /// signature's base58 text.
    fn process(
        &mut self,
        node: &impl SlotChain,
        slot: u64,
        tx: &DecodedSolanaTx,
        name: &str,
    ) -> Result<(), Refusal> {
        self.sync(node, slot);
        let height = node.block_height(slot);
        match self.recent.get(&tx.blockhash) {
            Some(&made) if made + self.options.blockhash_max_age >= height => {}
            _ => return Err(Refusal::BlockhashNotFound),
        }
        let payer = tx.account_keys[0];
        let fee = fee(tx);
        let balance = self.balances.get(&payer).copied().unwrap_or(0);
        if balance < fee {
            return Err(Refusal::AccountNotFound);
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
            let silent = draw(self.seed ^ S_UNNOTIFIED, S_UNNOTIFIED, self.taken, 0) as f64 / u64::MAX as f64;
            let unnotified = silent < self.options.unnotified_share;
            self.unnotified += u64::from(unnotified);
            let slot = Self::next_block_slot(node, slot);
            self.blocks.add(slot, name);
            Some(Landed { slot, err, unnotified })
        };
        self.remember(tx.signatures[0], landed);
        Ok(())
    }

    /// The signatures that landed in each recent block, in the order taken (for
    /// `blockSubscribe`, `solana_blocks.rs`).
    pub(crate) fn block_signatures(&self) -> &BlockSignatures {
        &self.blocks
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
        self.remember(
            signature,
            Some(Landed { slot: Self::next_block_slot(node, slot), err: None, unnotified: false }),
        );
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
        if method != "sendTransaction" {
            // What is looked up sees every transaction sent before it through the stage.
            self.run_sigverify(node);
        }
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
            "rpcbench_solanaTxStatus" => {
                let never = self.never_landed;
                Ok(json!({
                    "taken": self.taken,
                    "dropped": self.dropped,
                    "unnotified": self.unnotified,
                    "bad_signature": never.bad_signature,
                    "blockhash_not_found": never.blockhash_not_found,
                    "account_not_found": never.account_not_found,
                    "already_processed": never.already_processed,
                }))
            }
            _ => return None,
        })
    }
}

/// What the bank refuses of a transaction whose signatures verified.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Refusal {
    BlockhashNotFound,
    AccountNotFound,
}

/// Transactions sent with `skipPreflight` that never landed, by why (the mock's truth).
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
struct NeverLanded {
    bad_signature: u64,
    blockhash_not_found: u64,
    account_not_found: u64,
    already_processed: u64,
}

/// The transaction `text` holds in `encoding` (base58 when not named), decoded; refused as
/// Agave's RPC refuses it before anything else.
fn decode_sent(text: &str, encoding: Option<&str>) -> Result<DecodedSolanaTx, RpcError> {
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
    decode(&wire).map_err(|err| {
        RpcError::new(
            INVALID_PARAMS,
            format!("failed to deserialize solana_transaction::versioned::VersionedTransaction: {err}"),
        )
    })
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

    fn send_skipping_preflight(
        pool: &mut SolanaTxPool,
        node: &SolanaNode,
        slot: u64,
        wire: &[u8],
    ) -> Result<Value, RpcError> {
        let text = base64::engine::general_purpose::STANDARD.encode(wire);
        let config = json!({"encoding": "base64", "skipPreflight": true});
        pool.answer(node, slot, "sendTransaction", &[json!(text), config]).unwrap()
    }

    /// A node, a slot with a block, a funded payer and transfers signed by it.
    fn funded(
        seed: u8,
    ) -> (SolanaNode, SolanaTxPool, u64, impl Fn(&[u8]) -> crate::tx::solana::wire::SignedSolanaTx) {
        let node = node();
        let mut pool = SolanaTxPool::new(SolanaTxOptions::default(), 1);
        let slot = if node.is_skipped(1000) { 1001 } else { 1000 };
        let payer = SolanaKeypair::from_seed(&[seed; 32]);
        pool.answer(&node, slot, "requestAirdrop", &[json!(payer.pubkey_text()), json!(1_000_000_000)])
            .unwrap()
            .unwrap();
        let blockhash = node.blockhash_bytes(slot);
        let sign = move |memo: &[u8]| {
            let spec =
                TransferSpec { to: [7; 32], lamports: 1, memo: memo.to_vec(), cu_price: None, blockhash };
            transfer(&payer, &spec)
        };
        (node, pool, slot, sign)
    }

    fn truth(pool: &mut SolanaTxPool, node: &SolanaNode, slot: u64) -> Value {
        pool.answer(node, slot, "rpcbench_solanaTxStatus", &[]).unwrap().unwrap()
    }

    #[test]
    fn a_bad_signature_sent_without_preflight_is_answered_but_never_lands() {
        let (node, mut pool, slot, sign) = funded(3);
        let good = sign(b"good");
        let mut bad = sign(b"bad");
        bad.wire[5] ^= 0x10;
        let bad_signature: [u8; 64] = bad.wire[1..65].try_into().unwrap();
        // Answered at once with the signature it carries, as a node does without preflight.
        assert_eq!(
            send_skipping_preflight(&mut pool, &node, slot, &bad.wire).unwrap(),
            json!(bs58::encode(bad_signature).into_string())
        );
        send_skipping_preflight(&mut pool, &node, slot, &good.wire).unwrap();
        assert!(!pool.sigverify.is_empty(), "both wait for the sigverify stage");
        let landing = SolanaTxPool::next_block_slot(&node, slot);
        let names =
            json!([bs58::encode(bad_signature).into_string(), bs58::encode(good.signature).into_string()]);
        let statuses = pool.answer(&node, landing, "getSignatureStatuses", &[names]).unwrap().unwrap();
        assert_eq!(statuses["value"][0], Value::Null, "the bad one never lands: {statuses}");
        assert_eq!(
            statuses["value"][1]["slot"],
            json!(landing),
            "the good one lands in the next block: {statuses}"
        );
        let truth = truth(&mut pool, &node, landing);
        assert_eq!(truth["bad_signature"], json!(1), "{truth}");
        // The airdrop and the good transfer.
        assert_eq!(truth["taken"], json!(2), "{truth}");
        // Still refused in the answer with preflight.
        assert_eq!(send(&mut pool, &node, slot, &bad.wire).unwrap_err().code, SIGNATURE_VERIFICATION_FAILURE);
    }

    #[test]
    fn a_batch_with_one_bad_signature_lands_every_other_transaction() {
        let (node, mut pool, slot, sign) = funded(4);
        let batch = super::super::solana_sigverify::SIGVERIFY_BATCH;
        let mut signatures = Vec::new();
        for i in 0..batch {
            let mut signed = sign(format!("tx {i}").as_bytes());
            if i == 40 {
                signed.wire[20] ^= 1;
            }
            send_skipping_preflight(&mut pool, &node, slot, &signed.wire).unwrap();
            signatures.push(signed.signature);
        }
        // The send that filled the batch ran it: nothing waits, every other one has its landing.
        assert!(pool.sigverify.is_empty());
        let landing = SolanaTxPool::next_block_slot(&node, slot);
        for (i, signature) in signatures.iter().enumerate() {
            let landed = pool.landed(signature, landing).map(|landed| landed.slot);
            assert_eq!(landed, (i != 40).then_some(landing), "transaction {i}");
        }
        let truth = truth(&mut pool, &node, landing);
        assert_eq!(truth["bad_signature"], json!(1), "{truth}");
        assert_eq!(truth["taken"], json!(batch), "{truth}");
    }

    #[test]
    fn without_preflight_only_what_does_not_decode_is_refused_and_what_the_bank_refuses_never_lands() {
        let (node, mut pool, slot, sign) = funded(5);
        // Not a transaction: refused in the answer, as Agave's RPC refuses it.
        assert_eq!(
            send_skipping_preflight(&mut pool, &node, slot, b"\x01\x02").unwrap_err().code,
            INVALID_PARAMS
        );
        // An unfunded payer, a blockhash too old, a signature already processed: answered,
        // never landed, each counted.
        let stranger = SolanaKeypair::from_seed(&[6; 32]);
        let spec = TransferSpec {
            to: [7; 32],
            lamports: 1,
            memo: b"u".to_vec(),
            cu_price: None,
            blockhash: node.blockhash_bytes(slot),
        };
        let unfunded = transfer(&stranger, &spec);
        send_skipping_preflight(&mut pool, &node, slot, &unfunded.wire).unwrap();
        let twice = sign(b"twice");
        send_skipping_preflight(&mut pool, &node, slot, &twice.wire).unwrap();
        send_skipping_preflight(&mut pool, &node, slot, &twice.wire).unwrap();
        let stale = sign(b"stale");
        send_skipping_preflight(&mut pool, &node, slot + 400, &stale.wire).unwrap();
        let truth = truth(&mut pool, &node, slot + 400);
        assert_eq!(truth["account_not_found"], json!(1), "{truth}");
        assert_eq!(truth["blockhash_not_found"], json!(1), "{truth}");
        assert_eq!(truth["already_processed"], json!(1), "{truth}");
        assert_eq!(truth["taken"], json!(2), "the airdrop and one of the twice sent: {truth}");
        assert!(pool.landed(&unfunded.signature, slot + 400).is_none());
        assert!(pool.landed(&stale.signature, slot + 400).is_none());
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
