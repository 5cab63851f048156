//! Sign-only cost of `rpcbench tx`'s transactions on one thread, to set beside the signing
//! crates' own benchmark figures and the whole send path that `bench/tx.sh` measures:
//! k256's bare ECDSA prehash signature (without its `precomputed-tables` feature, as the
//! workspace builds it), libsecp256k1's (the `secp256k1` crate, which `rpcbench tx` signs
//! with), a whole EIP-1559 transfer (RLP, Keccak-256, signature, hash of the raw bytes),
//! ed25519-dalek's bare signature, and a whole Solana transfer with its memo.
//! Timed in the thread's own CPU time, so a busy machine's other processes do not count.
//! No network. Run: `cargo run --release --example tx_sign_cost [N]`.

use std::time::Duration;

use rpcbench::tx::keys::{Address, SenderKey};
use rpcbench::tx::sign::{sign, Fees, UnsignedTx};
use rpcbench::tx::solana::keys::SolanaKeypair;
use rpcbench::tx::solana::wire::{transfer, TransferSpec};

/// The CPU time this thread has used so far (Linux's `/proc/thread-self/schedstat`, first
/// field, in ns); elsewhere the time since the first call.
fn thread_cpu() -> Duration {
    static START: std::sync::OnceLock<std::time::Instant> = std::sync::OnceLock::new();
    let on_cpu = std::fs::read_to_string("/proc/thread-self/schedstat")
        .ok()
        .and_then(|text| text.split_whitespace().next()?.parse::<u64>().ok());
    match on_cpu {
        Some(ns) => Duration::from_nanos(ns),
        None => START.get_or_init(std::time::Instant::now).elapsed(),
    }
}

/// Runs `work` `count` times and prints the CPU nanoseconds per call and calls per second.
fn measure(label: &str, count: u64, mut work: impl FnMut(u64) -> usize) {
    let start = thread_cpu();
    let mut bytes = 0usize;
    for i in 0..count {
        bytes = bytes.wrapping_add(work(i));
    }
    let elapsed = thread_cpu() - start;
    let per_call = elapsed.as_nanos() as f64 / count as f64;
    println!(
        "{label:<46} {:>9.0} ns/op  {:>9.0} /s  ({count} in {:.3} s CPU; {bytes} bytes)",
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
    let context = secp256k1::Secp256k1::signing_only();
    let secret = secp256k1::SecretKey::from_slice(&[7u8; 32]).expect("a valid scalar");
    measure("ethereum: libsecp256k1 sign_ecdsa_recoverable", eth_count, |i| {
        let mut hash = [1u8; 32];
        hash[..8].copy_from_slice(&i.to_le_bytes());
        let message = secp256k1::Message::from_slice(&hash).expect("32 bytes");
        let (recovery, compact) = context.sign_ecdsa_recoverable(&message, &secret).serialize_compact();
        compact[0] as usize + recovery.to_i32() as usize
    });
    measure("ethereum: whole EIP-1559 transfer, signed", eth_count, |i| {
        let mut tx = template.clone();
        tx.nonce = i;
        sign(&tx, &key).raw.len()
    });
}
