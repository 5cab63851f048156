//! The signed-ahead queue: a signer thread signs transactions in send order (senders round
//! robin, each sender's nonces from its [`NonceBook`]) into a bounded channel, so the pacer
//! takes a ready raw transaction and never waits for the CPU to sign. The channel's bound keeps
//! memory flat; the thread ends when the count is reached or the receiving side is dropped.

use std::sync::mpsc::{sync_channel, Receiver};
use std::thread::JoinHandle;

use super::keys::{hex_encode, SenderKey};
use super::nonce::NonceBook;
use super::sign::{sign, UnsignedTx};

/// One transaction ready to send.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PreparedTx {
    /// Index of the sender in the run's keys.
    pub sender: usize,
    /// Its nonce.
    pub nonce: u64,
    /// The nonce book's generation it was signed in (stale after a resync of its sender).
    pub generation: u32,
    /// The transaction hash.
    pub hash: [u8; 32],
    /// The raw transaction as `0x` hex, ready for `eth_sendRawTransaction`'s params.
    pub raw_hex: String,
}

/// The receiving end of a signer thread.
#[derive(Debug)]
pub struct SignedAhead {
    ready: Receiver<PreparedTx>,
    signer: Option<JoinHandle<NonceBook>>,
}

impl SignedAhead {
    /// Starts signing `count` transactions made from `template` (its nonce replaced) by
    /// `keys` in turn, keeping at most `depth` ready.
    pub fn start(
        keys: Vec<SenderKey>,
        mut book: NonceBook,
        template: UnsignedTx,
        count: u64,
        depth: usize,
    ) -> Self {
        let (sender, ready) = sync_channel(depth.max(1));
        let signer = std::thread::Builder::new()
            .name("rpcbench-signer".into())
            .spawn(move || {
                let senders = keys.len();
                let mut tx = template;
                for turn in 0..count {
                    let index = (turn % senders as u64) as usize;
                    let (nonce, generation) = book.take(index);
                    tx.nonce = nonce;
                    let signed = sign(&tx, &keys[index]);
                    let mut raw_hex = String::with_capacity(2 + signed.raw.len() * 2);
                    raw_hex.push_str("0x");
                    raw_hex.push_str(&hex_encode(&signed.raw));
                    let prepared =
                        PreparedTx { sender: index, nonce, generation, hash: signed.hash, raw_hex };
                    if sender.send(prepared).is_err() {
                        break;
                    }
                }
                book
            })
            .ok();
        SignedAhead { ready, signer }
    }

    /// The next transaction, waiting for the signer only when it is behind; `None` once all
    /// were taken.
    pub fn next(&self) -> Option<PreparedTx> {
        self.ready.recv().ok()
    }

    /// Stops the signer (after the transaction it is signing) and returns its nonce book.
    pub fn finish(self) -> Option<NonceBook> {
        let SignedAhead { ready, signer } = self;
        drop(ready);
        signer?.join().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tx::keys::hex_decode;
    use crate::tx::keys::{keys_from_mnemonic, Address, DEV_MNEMONIC};
    use crate::tx::sign::{decode, Fees};

    #[test]
    fn the_queue_gives_every_transaction_once_senders_in_turn_nonces_without_gaps() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 3).unwrap();
        let addresses: Vec<Address> = keys.iter().map(|k| k.address()).collect();
        let template = UnsignedTx {
            chain_id: 31337,
            nonce: 0,
            fees: Fees::Legacy { gas_price: 1_000_000_000 },
            gas_limit: 21_000,
            to: Some(addresses[0]),
            value: 1,
            data: Vec::new(),
        };
        let ahead = SignedAhead::start(keys, NonceBook::new(vec![0, 4, 9]), template, 10, 2);
        let mut taken = Vec::new();
        while let Some(prepared) = ahead.next() {
            let decoded = decode(&hex_decode(&prepared.raw_hex[2..]).unwrap()).unwrap();
            assert_eq!(decoded.sender, addresses[prepared.sender]);
            assert_eq!((decoded.tx.nonce, decoded.hash), (prepared.nonce, prepared.hash));
            taken.push((prepared.sender, prepared.nonce));
        }
        assert_eq!(taken, [(0, 0), (1, 4), (2, 9), (0, 1), (1, 5), (2, 10), (0, 2), (1, 6), (2, 11), (0, 3)]);
        let book = ahead.finish().unwrap();
        assert_eq!((book.peek(0), book.peek(1), book.peek(2)), (4, 7, 12));
    }

    #[test]
    fn dropping_the_queue_early_stops_the_signer() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap();
        let template = UnsignedTx {
            chain_id: 1,
            nonce: 0,
            fees: Fees::Legacy { gas_price: 1 },
            gas_limit: 21_000,
            to: None,
            value: 0,
            data: Vec::new(),
        };
        let ahead = SignedAhead::start(keys, NonceBook::new(vec![0]), template, u64::MAX, 4);
        assert_eq!(ahead.next().map(|p| p.nonce), Some(0));
        let book = ahead.finish().unwrap();
        assert!(book.peek(0) <= 7, "at most the depth and one in hand were signed past what was taken");
    }
}
