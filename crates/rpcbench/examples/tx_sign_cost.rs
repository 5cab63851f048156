//! Sign-only cost of `rpcbench tx`'s transactions on one thread, to set beside the signing
//! crates' own benchmark figures and the whole send path that `bench/tx.sh` measures:
//! k256's bare ECDSA prehash signature, a whole EIP-1559 transfer (RLP, Keccak-256,
//! signature, hash of the raw bytes), ed25519-dalek's bare signature, and a whole Solana
//! transfer with its memo. No network. Run: `cargo run --release --example tx_sign_cost [N]`.

use std::time::Instant;

use rpcbench::tx::keys::{Address, SenderKey};
use rpcbench::tx::sign::{sign, Fees, UnsignedTx};
use rpcbench::tx::solana::keys::SolanaKeypair;
use rpcbench::tx::solana::wire::{transfer, TransferSpec};

/// Runs `work` `count` times and prints the nanoseconds per call and calls per second.
fn measure(label: &str, count: u64, mut work: impl FnMut(u64) -> usize) {
    let start = Instant::now();
    let mut bytes = 0usize;
    for i in 0..count {
        bytes = bytes.wrapping_add(work(i));
    }
    let elapsed = start.elapsed();
    let per_call = elapsed.as_nanos() as f64 / count as f64;
    println!(
        "{label:<42} {:>9.0} ns/op  {:>9.0} /s  ({count} in {:.3} s; {bytes} bytes)",
        per_call,
        1e9 / per_call,
        elapsed.as_secs_f64()
    );
}

fn main() {
    let count: u64 = std::env::args().nth(1).and_then(|n| n.parse().ok()).unwrap_or(20_000);
    let key = SenderKey::from_bytes(&[7u8; 32]).expect("a valid scalar");
    let template = UnsignedTx {
        chain_id: 31337,
        nonce: 0,
        fees: Fees::Eip1559 { max_fee_per_gas: 2_000_000_000, max_priority_fee_per_gas: 1_000_000_000 },
        gas_limit: 21_000,
        to: Address::parse("0x000000000000000000000000000000000000dEaD"),
        value: 1,
        data: Vec::new(),
    };
    let solana_keypair = SolanaKeypair::from_seed(&[9u8; 32]);
    measure("solana: ed25519-dalek sign (64-byte msg)", count, |i| {
        let mut message = [0u8; 64];
        message[..8].copy_from_slice(&i.to_le_bytes());
        solana_keypair.sign(&message)[0] as usize
    });
    let mut spec = TransferSpec {
        to: solana_keypair.pubkey(),
        lamports: 1,
        memo: Vec::new(),
        cu_price: None,
        blockhash: [3u8; 32],
    };
    measure("solana: whole transfer + memo, signed", count, |i| {
        spec.memo = format!("rpcbench 1 {i}").into_bytes();
        transfer(&solana_keypair, &spec).wire.len()
    });
    let eth_count = count / 2;
    let bare = k256::ecdsa::SigningKey::from_bytes((&[7u8; 32]).into()).expect("a valid scalar");
    measure("ethereum: k256 sign_prehash_recoverable", eth_count, |i| {
        let mut hash = [1u8; 32];
        hash[..8].copy_from_slice(&i.to_le_bytes());
        let (signature, recovery) = bare.sign_prehash_recoverable(&hash).expect("a 32-byte prehash signs");
        signature.to_bytes()[0] as usize + usize::from(recovery.to_byte())
    });
    measure("ethereum: whole EIP-1559 transfer, signed", eth_count, |i| {
        let mut tx = template.clone();
        tx.nonce = i;
        sign(&tx, &key).raw.len()
    });
}
