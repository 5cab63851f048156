//! The Solana mock's signature checks: signers' keys decompressed once and kept
//! ([`VerifyingKeys`]), a strict verification of one transaction (the preflight path of
//! `sendTransaction`), and the batched sigverify stage ([`SigverifyStage`]) that transactions
//! sent with `skipPreflight` wait in, as on a node, where the RPC forwards them at once and the
//! TPU's sigverify stage checks them later, in batches.
//!
//! Strictness: a batch is checked with ed25519-dalek's `verify_batch` (one randomized
//! multiscalar multiplication for up to [`SIGVERIFY_BATCH`] transactions: a third of the cost
//! of verifying each signature on its own). What `verify_strict` refuses and a batch does not
//! is refused before the batch: a weak (small-order) signer key (known from the key table,
//! where the flag is kept with the key) and a small-order `R` (its encoding compared with the
//! encodings of the eight small-order points). A batch that fails is checked again one
//! transaction at a time with `verify_strict`, which finds the bad ones. What is left between
//! the two is a mixed-order point (a prime-order point plus a torsion one) in a key or `R`: the
//! cofactorless batch equation may take such a signature that `verify_strict` refuses, with a
//! chance of at most one in two per batch; only a hand-made signature has one.

use std::collections::HashMap;
use std::sync::OnceLock;

use curve25519_dalek::constants::EIGHT_TORSION;
use curve25519_dalek::edwards::CompressedEdwardsY;
use ed25519_dalek::{Signature, VerifyingKey};

use crate::tx::solana::wire::DecodedSolanaTx;

/// Signers' public keys kept decompressed at most (past it the table starts afresh).
const VERIFYING_KEYS_KEPT: usize = 4096;
/// Transactions the sigverify stage checks at once (the send that fills a batch runs it).
pub(crate) const SIGVERIFY_BATCH: usize = 64;

/// A signer's key as the table keeps it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct SignerKey {
    key: VerifyingKey,
    /// A small-order point: `verify_strict` refuses every signature by it.
    weak: bool,
}

/// Signers' public keys, decompressed once (decompression is a square root on the curve:
/// about a third of a verification), with whether each is weak; bounded by
/// [`VERIFYING_KEYS_KEPT`]. Bytes that are not a point are never kept.
#[derive(Debug, Default)]
pub(crate) struct VerifyingKeys {
    pub(crate) keys: HashMap<[u8; 32], SignerKey>,
}

impl VerifyingKeys {
    /// Whether every signature of `tx` verifies (strictly, as `DecodedSolanaTx::verify` does)
    /// against the account key in its position.
    pub(crate) fn verify(&mut self, tx: &DecodedSolanaTx) -> bool {
        tx.signatures.iter().zip(&tx.account_keys).all(|(signature, key)| {
            let Some(key) = self.strong_key(key) else { return false };
            key.verify_strict(&tx.message, &Signature::from_bytes(signature)).is_ok()
        })
    }

    /// The key of `bytes` when it is a point of the curve that is not of small order.
    fn strong_key(&mut self, bytes: &[u8; 32]) -> Option<VerifyingKey> {
        let signer = match self.keys.get(bytes) {
            Some(signer) => *signer,
            None => {
                let key = VerifyingKey::from_bytes(bytes).ok()?;
                if self.keys.len() >= VERIFYING_KEYS_KEPT {
                    self.keys.clear();
                }
                let signer = SignerKey { key, weak: key.is_weak() };
                self.keys.insert(*bytes, signer);
                signer
            }
        };
        (!signer.weak).then_some(signer.key)
    }
}

/// A transaction waiting for the sigverify stage, with the slot it was sent in and its first
/// signature's base58 text (the send's answer; kept for its block's signature list).
#[derive(Debug)]
pub(crate) struct Unverified {
    pub(crate) tx: DecodedSolanaTx,
    pub(crate) slot: u64,
    pub(crate) name: String,
}

/// The sigverify stage: transactions sent with `skipPreflight`, in their order, at most
/// [`SIGVERIFY_BATCH`] of them (the send that fills the queue runs the batch, so it never
/// holds more).
#[derive(Debug, Default)]
pub(crate) struct SigverifyStage {
    queue: Vec<Unverified>,
}

impl SigverifyStage {
    /// Queues `tx` (its first signature's text `name`); true when the batch is full and must be
    /// run.
    pub(crate) fn push(&mut self, tx: DecodedSolanaTx, slot: u64, name: String) -> bool {
        self.queue.push(Unverified { tx, slot, name });
        self.queue.len() >= SIGVERIFY_BATCH
    }

    pub(crate) fn is_empty(&self) -> bool {
        self.queue.is_empty()
    }

    /// Whether a queued transaction carries `signature` first.
    pub(crate) fn holds(&self, signature: &[u8; 64]) -> bool {
        self.queue.iter().any(|waiting| &waiting.tx.signatures[0] == signature)
    }

    /// Checks every queued transaction and gives each back, in the order sent, with whether
    /// all its signatures verify (strictly).
    pub(crate) fn run(&mut self, keys: &mut VerifyingKeys) -> Vec<(Unverified, bool)> {
        let queue = std::mem::take(&mut self.queue);
        // Refused before the batch: what verify_strict refuses and the batch equation may not.
        let mut verdicts: Vec<(Unverified, bool)> = queue
            .into_iter()
            .map(|waiting| {
                let screened =
                    waiting.tx.signatures.iter().zip(&waiting.tx.account_keys).all(|(signature, key)| {
                        keys.strong_key(key).is_some() && !is_small_order_encoding(&signature[..32])
                    });
                (waiting, screened)
            })
            .collect();
        let mut messages = Vec::new();
        let mut signatures = Vec::new();
        let mut signers = Vec::new();
        for (waiting, _) in verdicts.iter().filter(|(_, screened)| *screened) {
            for (signature, key) in waiting.tx.signatures.iter().zip(&waiting.tx.account_keys) {
                messages.push(waiting.tx.message.as_slice());
                signatures.push(Signature::from_bytes(signature));
                signers.push(keys.strong_key(key).expect("screened above: kept and strong"));
            }
        }
        if signatures.is_empty() || ed25519_dalek::verify_batch(&messages, &signatures, &signers).is_ok() {
            return verdicts;
        }
        for (waiting, verdict) in verdicts.iter_mut().filter(|(_, screened)| *screened) {
            *verdict = keys.verify(&waiting.tx);
        }
        verdicts
    }
}

/// Whether `r` is an encoding of a point of small order (the ones `verify_strict` refuses as a
/// signature's `R`).
fn is_small_order_encoding(r: &[u8]) -> bool {
    small_order_encodings().iter().any(|encoding| encoding.as_slice() == r)
}

/// Every 32-byte string that decompresses to a point of small order: the eight points'
/// canonical encodings, with the sign bit flipped where the point's x is 0, and the
/// non-canonical y (y + p, only for y < 19: here y = 0 and y = 1), both signs.
fn small_order_encodings() -> &'static [[u8; 32]] {
    static ENCODINGS: OnceLock<Vec<[u8; 32]>> = OnceLock::new();
    ENCODINGS.get_or_init(|| {
        let mut candidates = Vec::new();
        for point in EIGHT_TORSION {
            let canonical = point.compress().to_bytes();
            candidates.push(canonical);
            let y_small =
                canonical[0] < 19 && canonical[1..31].iter().all(|&b| b == 0) && canonical[31] & 0x7f == 0;
            if y_small {
                // y + p, p = 2^255 - 19: low byte 0xed + y, then 0xff, top byte 0x7f.
                let mut plus_p = [0xff; 32];
                plus_p[0] = 0xed + canonical[0];
                plus_p[31] = 0x7f | (canonical[31] & 0x80);
                candidates.push(plus_p);
            }
        }
        let flipped: Vec<[u8; 32]> = candidates
            .iter()
            .map(|encoding| {
                let mut flipped = *encoding;
                flipped[31] ^= 0x80;
                flipped
            })
            .collect();
        candidates.extend(flipped);
        let mut small: Vec<[u8; 32]> = candidates
            .into_iter()
            .filter(|encoding| {
                CompressedEdwardsY(*encoding).decompress().is_some_and(|point| point.is_small_order())
            })
            .collect();
        small.sort_unstable();
        small.dedup();
        small
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::solana::keys::SolanaKeypair;
    use crate::tx::solana::wire::{decode, transfer, TransferSpec};

    fn signed(seed: u8, memo: &[u8]) -> Vec<u8> {
        let payer = SolanaKeypair::from_seed(&[seed; 32]);
        let spec = TransferSpec {
            to: [7; 32],
            lamports: 1,
            memo: memo.to_vec(),
            cu_price: None,
            blockhash: [9; 32],
        };
        transfer(&payer, &spec).wire
    }

    #[test]
    fn the_small_order_encodings_are_the_eight_points_and_their_other_spellings_and_all_are_weak() {
        let encodings = small_order_encodings();
        for point in EIGHT_TORSION {
            assert!(encodings.contains(&point.compress().to_bytes()));
        }
        // y = 1 (the identity) and y = -1 with x = 0 take either sign; y = 0 and y = 1 have a
        // second spelling y + p.
        assert!(encodings.len() > 8, "{}", encodings.len());
        for encoding in encodings {
            assert!(VerifyingKey::from_bytes(encoding).is_ok_and(|key| key.is_weak()), "{encoding:?}");
        }
        let good = decode(&signed(1, b"a")).unwrap();
        assert!(!is_small_order_encoding(&good.signatures[0][..32]));
    }

    #[test]
    fn a_batch_with_one_bad_signature_is_checked_one_by_one_and_only_that_one_fails() {
        let mut keys = VerifyingKeys::default();
        let mut stage = SigverifyStage::default();
        let mut full = false;
        for i in 0..SIGVERIFY_BATCH as u8 {
            let mut wire = signed(i % 5, &[b'm', i]);
            if i == 17 {
                wire[10] ^= 4;
            }
            full = stage.push(decode(&wire).unwrap(), u64::from(i), String::new());
        }
        assert!(full, "the batch fills at {SIGVERIFY_BATCH}");
        let verdicts = stage.run(&mut keys);
        assert!(stage.is_empty());
        assert_eq!(verdicts.len(), SIGVERIFY_BATCH);
        for (i, (waiting, verified)) in verdicts.iter().enumerate() {
            assert_eq!(waiting.slot, i as u64, "in the order sent");
            assert_eq!(*verified, i != 17, "transaction {i}");
        }
    }

    #[test]
    fn a_small_order_r_or_a_weak_signer_is_refused_by_the_stage_as_verify_strict_refuses_it() {
        let mut keys = VerifyingKeys::default();
        let mut stage = SigverifyStage::default();
        let identity = EIGHT_TORSION[0].compress().to_bytes();
        // R the identity: verify_strict refuses it whatever s is.
        let mut small_r = signed(1, b"r");
        small_r[1..33].copy_from_slice(&identity);
        // The signer's key a small-order point.
        let mut weak_signer = signed(1, b"w");
        let key_at = 1 + 64 + 3 + 1;
        weak_signer[key_at..key_at + 32].copy_from_slice(&EIGHT_TORSION[1].compress().to_bytes());
        let good = signed(2, b"g");
        for wire in [&small_r, &weak_signer, &good] {
            stage.push(decode(wire).unwrap(), 0, String::new());
        }
        let verified: Vec<bool> = stage.run(&mut keys).into_iter().map(|(_, verified)| verified).collect();
        assert_eq!(verified, [false, false, true]);
        assert!(keys.keys.values().any(|signer| signer.weak), "the weak key is kept with its flag");
    }
}
