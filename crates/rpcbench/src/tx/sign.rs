//! Ethereum transactions: signing (EIP-155 legacy and EIP-1559 type 2) into the raw bytes
//! `eth_sendRawTransaction` takes, and decoding raw bytes back with the sender recovered from
//! the signature (the mock node's mempool checks what it is sent this way).
//!
//! RLP from the `rlp` crate, Keccak-256 from `sha3`; ECDSA signing from libsecp256k1 (the
//! `secp256k1` crate: a third of k256's cost here, the same bytes: deterministic RFC 6979
//! nonces, low-s signatures as Ethereum requires) and public-key recovery from libsecp256k1
//! too (a mock node recovers the sender of every transaction it is sent; the same sender as
//! k256 recovers, high-s signatures refused as k256 refuses them, at a fraction of its cost:
//! bench/RESULTS.md, tx).

use std::fmt;
use std::sync::OnceLock;

use rlp::{Rlp, RlpStream};
use sha3::{Digest, Keccak256};

use super::keys::{Address, SenderKey};

/// Gas of a plain value transfer (what every funding transfer and top-up uses).
pub const TRANSFER_GAS: u64 = 21_000;

/// How a transaction pays for gas.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Fees {
    /// A legacy transaction (EIP-155 replay-protected) with one gas price, in wei.
    Legacy {
        /// Wei per gas.
        gas_price: u128,
    },
    /// An EIP-1559 (type 2) transaction.
    Eip1559 {
        /// The most wei per gas paid in all.
        max_fee_per_gas: u128,
        /// The most wei per gas paid to the block producer above the base fee.
        max_priority_fee_per_gas: u128,
    },
}

impl Fees {
    /// The most wei per gas this transaction may pay.
    pub fn max_price(self) -> u128 {
        match self {
            Fees::Legacy { gas_price } => gas_price,
            Fees::Eip1559 { max_fee_per_gas, .. } => max_fee_per_gas,
        }
    }
}

/// A transaction before signing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UnsignedTx {
    /// The chain it is valid on (EIP-155).
    pub chain_id: u64,
    /// The sender's nonce.
    pub nonce: u64,
    /// Fees.
    pub fees: Fees,
    /// Gas limit.
    pub gas_limit: u64,
    /// Recipient; `None` deploys `data` as a contract.
    pub to: Option<Address>,
    /// Wei sent.
    pub value: u128,
    /// Call data or init code.
    pub data: Vec<u8>,
}

/// A signed transaction: its raw bytes and hash (the Keccak-256 of the raw bytes).
#[derive(Clone, PartialEq, Eq)]
pub struct SignedTx {
    /// What `eth_sendRawTransaction` takes (as 0x-hex).
    pub raw: Vec<u8>,
    /// The transaction hash.
    pub hash: [u8; 32],
}

impl fmt::Debug for SignedTx {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "SignedTx(0x{}, {} bytes)", super::keys::hex_encode(&self.hash), self.raw.len())
    }
}

/// The EIP-2718 type byte of EIP-1559 transactions.
const TYPE_EIP1559: u8 = 2;

fn append_to(stream: &mut RlpStream, to: Option<Address>) {
    match to {
        Some(address) => stream.append(&address.0.as_slice()),
        None => stream.append_empty_data(),
    };
}

/// The address a contract created by `sender`'s transaction with `nonce` gets: the last 20
/// bytes of the Keccak-256 of `rlp([sender, nonce])`.
pub fn contract_address(sender: Address, nonce: u64) -> Address {
    let mut stream = RlpStream::new_list(2);
    stream.append(&sender.0.as_slice());
    stream.append(&nonce);
    let digest = Keccak256::digest(stream.out());
    let mut address = [0u8; 20];
    address.copy_from_slice(&digest[12..]);
    Address(address)
}

/// An integer as RLP wants it: big-endian bytes without leading zeros.
fn append_uint_bytes(stream: &mut RlpStream, bytes: &[u8]) {
    let first = bytes.iter().position(|&b| b != 0).unwrap_or(bytes.len());
    stream.append(&&bytes[first..]);
}

/// The fields every form signs, after chain id (1559) or before it (legacy).
fn append_body(stream: &mut RlpStream, tx: &UnsignedTx) {
    stream.append(&tx.gas_limit);
    append_to(stream, tx.to);
    stream.append(&tx.value);
    stream.append(&tx.data.as_slice());
}

/// The RLP payload of a type-2 transaction: 9 fields, then the signature's 3 when given.
fn eip1559_payload(
    tx: &UnsignedTx,
    max_fee: u128,
    priority: u128,
    signature: Option<(u8, &[u8; 64])>,
) -> Vec<u8> {
    let mut stream = RlpStream::new_list(if signature.is_some() { 12 } else { 9 });
    stream.append(&tx.chain_id).append(&tx.nonce).append(&priority).append(&max_fee);
    append_body(&mut stream, tx);
    stream.begin_list(0);
    if let Some((parity, signature)) = signature {
        stream.append(&parity);
        append_signature(&mut stream, signature);
    }
    let mut out = Vec::with_capacity(stream.len() + 1);
    out.push(TYPE_EIP1559);
    out.extend_from_slice(&stream.out());
    out
}

/// Appends `r` and `s` of a signature given as `r || s` (32 big-endian bytes each).
fn append_signature(stream: &mut RlpStream, signature: &[u8; 64]) {
    append_uint_bytes(stream, &signature[..32]);
    append_uint_bytes(stream, &signature[32..]);
}

/// The RLP of a legacy transaction: with `v, r, s`, or with `chain_id, 0, 0` for signing.
fn legacy_payload(tx: &UnsignedTx, gas_price: u128, signature: Option<(u64, &[u8; 64])>) -> Vec<u8> {
    let mut stream = RlpStream::new_list(9);
    stream.append(&tx.nonce).append(&gas_price);
    append_body(&mut stream, tx);
    match signature {
        Some((v, signature)) => {
            stream.append(&v);
            append_signature(&mut stream, signature);
        }
        None => {
            stream.append(&tx.chain_id).append(&0u8).append(&0u8);
        }
    }
    stream.out().to_vec()
}

/// The hash a transaction's signature signs.
pub fn signing_hash(tx: &UnsignedTx) -> [u8; 32] {
    let preimage = match tx.fees {
        Fees::Legacy { gas_price } => legacy_payload(tx, gas_price, None),
        Fees::Eip1559 { max_fee_per_gas, max_priority_fee_per_gas } => {
            eip1559_payload(tx, max_fee_per_gas, max_priority_fee_per_gas, None)
        }
    };
    Keccak256::digest(preimage).into()
}

/// The libsecp256k1 context that signs (one per process; it only signs).
fn signer() -> &'static secp256k1::Secp256k1<secp256k1::SignOnly> {
    static SIGNER: OnceLock<secp256k1::Secp256k1<secp256k1::SignOnly>> = OnceLock::new();
    SIGNER.get_or_init(secp256k1::Secp256k1::signing_only)
}

/// Signs `tx` with `key`.
pub fn sign(tx: &UnsignedTx, key: &SenderKey) -> SignedTx {
    let hash = signing_hash(tx);
    let message = secp256k1::Message::from_slice(&hash).expect("a Keccak-256 digest is 32 bytes");
    let (recovery, signature) =
        signer().sign_ecdsa_recoverable(&message, key.secret_key()).serialize_compact();
    // The recovery id's low bit is the parity of R's y.
    let parity = (recovery.to_i32() & 1) as u8;
    let raw = match tx.fees {
        Fees::Legacy { gas_price } => {
            legacy_payload(tx, gas_price, Some((tx.chain_id * 2 + 35 + u64::from(parity), &signature)))
        }
        Fees::Eip1559 { max_fee_per_gas, max_priority_fee_per_gas } => {
            eip1559_payload(tx, max_fee_per_gas, max_priority_fee_per_gas, Some((parity, &signature)))
        }
    };
    let hash = Keccak256::digest(&raw).into();
    SignedTx { raw, hash }
}

/// A legacy value transfer for tests: nonce 0, gas price 1 wei, [`TRANSFER_GAS`], no
/// recipient (`to: None`), no value and no data, on `chain_id`.
#[cfg(test)]
pub(crate) fn legacy_transfer_template(chain_id: u64) -> UnsignedTx {
    UnsignedTx {
        chain_id,
        nonce: 0,
        fees: Fees::Legacy { gas_price: 1 },
        gas_limit: TRANSFER_GAS,
        to: None,
        value: 0,
        data: Vec::new(),
    }
}

/// A raw transaction read back, with its sender recovered.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedTx {
    /// The fields that were signed (a legacy transaction without EIP-155 has chain id 0).
    pub tx: UnsignedTx,
    /// Who signed it.
    pub sender: Address,
    /// Keccak-256 of the raw bytes.
    pub hash: [u8; 32],
}

/// Why raw bytes are not a transaction this code reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DecodeError {
    /// Not well-formed RLP, or fields of the wrong shape.
    Rlp,
    /// An EIP-2718 type other than legacy and 2.
    UnsupportedType(u8),
    /// The signature does not recover a public key.
    Signature,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DecodeError::Rlp => f.write_str("rlp: malformed transaction"),
            DecodeError::UnsupportedType(kind) => write!(f, "transaction type {kind} not supported"),
            DecodeError::Signature => f.write_str("invalid transaction signature"),
        }
    }
}

impl std::error::Error for DecodeError {}

impl From<rlp::DecoderError> for DecodeError {
    fn from(_: rlp::DecoderError) -> Self {
        DecodeError::Rlp
    }
}

fn read_to(item: &Rlp<'_>) -> Result<Option<Address>, DecodeError> {
    let bytes = item.data()?;
    match bytes.len() {
        0 => Ok(None),
        20 => Ok(Some(Address(bytes.try_into().map_err(|_| DecodeError::Rlp)?))),
        _ => Err(DecodeError::Rlp),
    }
}

/// Half the order of secp256k1's group, big-endian: a signature's `s` above it is the "high"
/// twin of a valid one, which Ethereum (EIP-2) refuses.
const HALF_ORDER: [u8; 32] = [
    0x7f, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x5d,
    0x57, 0x6e, 0x73, 0x57, 0xa4, 0x50, 0x1d, 0xdf, 0xe9, 0x2f, 0x46, 0x68, 0x1b, 0x20, 0xa0,
];

/// `r || s` (32 big-endian bytes each) from the RLP items of a transaction's signature. Zero,
/// out-of-range and high `s` are refused here; libsecp256k1 refuses the rest on recovery.
fn read_signature(r: &Rlp<'_>, s: &Rlp<'_>) -> Result<[u8; 64], DecodeError> {
    let mut bytes = [0u8; 64];
    let (r_half, s_half) = bytes.split_at_mut(32);
    for (item, half) in [(r, r_half), (s, s_half)] {
        let data = item.data()?;
        if data.len() > 32 {
            return Err(DecodeError::Rlp);
        }
        half[32 - data.len()..].copy_from_slice(data);
    }
    let (r_half, s_half) = bytes.split_at(32);
    if r_half.iter().all(|&b| b == 0) || s_half.iter().all(|&b| b == 0) || s_half > &HALF_ORDER[..] {
        return Err(DecodeError::Signature);
    }
    Ok(bytes)
}

/// The libsecp256k1 context that recovers senders (one per process; it only verifies).
fn verifier() -> &'static secp256k1::Secp256k1<secp256k1::VerifyOnly> {
    static VERIFIER: OnceLock<secp256k1::Secp256k1<secp256k1::VerifyOnly>> = OnceLock::new();
    VERIFIER.get_or_init(secp256k1::Secp256k1::verification_only)
}

/// The address that signed `prehash` with `signature` (`r || s`) and R's y parity.
fn recover_address(prehash: &[u8; 32], signature: &[u8; 64], parity: u8) -> Result<Address, DecodeError> {
    use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
    let recovery = RecoveryId::from_i32(i32::from(parity)).map_err(|_| DecodeError::Signature)?;
    let signature =
        RecoverableSignature::from_compact(signature, recovery).map_err(|_| DecodeError::Signature)?;
    let message = secp256k1::Message::from_slice(prehash).map_err(|_| DecodeError::Signature)?;
    let key = verifier().recover_ecdsa(&message, &signature).map_err(|_| DecodeError::Signature)?;
    // The address: the last 20 bytes of the Keccak-256 of the key's x || y.
    let digest = Keccak256::digest(&key.serialize_uncompressed()[1..]);
    let mut address = [0u8; 20];
    address.copy_from_slice(&digest[12..]);
    Ok(Address(address))
}

fn recover(tx: &UnsignedTx, signature: &[u8; 64], parity: u8) -> Result<Address, DecodeError> {
    recover_address(&signing_hash(tx), signature, parity)
}

/// Reads raw transaction bytes (legacy or type 2) and recovers the sender.
pub fn decode(raw: &[u8]) -> Result<DecodedTx, DecodeError> {
    let hash: [u8; 32] = Keccak256::digest(raw).into();
    let (&first, rest) = raw.split_first().ok_or(DecodeError::Rlp)?;
    let (tx, signature, parity) = if first >= 0xc0 {
        let list = Rlp::new(raw);
        if list.item_count()? != 9 || list.as_raw().len() != raw.len() {
            return Err(DecodeError::Rlp);
        }
        let v: u64 = list.val_at(6)?;
        let (chain_id, parity) = match v {
            27 | 28 => (0, (v - 27) as u8),
            v if v >= 35 => ((v - 35) / 2, ((v - 35) % 2) as u8),
            _ => return Err(DecodeError::Signature),
        };
        let tx = UnsignedTx {
            chain_id,
            nonce: list.val_at(0)?,
            fees: Fees::Legacy { gas_price: list.val_at(1)? },
            gas_limit: list.val_at(2)?,
            to: read_to(&list.at(3)?)?,
            value: list.val_at(4)?,
            data: list.at(5)?.data()?.to_vec(),
        };
        (tx, read_signature(&list.at(7)?, &list.at(8)?)?, parity)
    } else if first == TYPE_EIP1559 {
        let list = Rlp::new(rest);
        if list.item_count()? != 12 || list.as_raw().len() != rest.len() {
            return Err(DecodeError::Rlp);
        }
        let tx = UnsignedTx {
            chain_id: list.val_at(0)?,
            nonce: list.val_at(1)?,
            fees: Fees::Eip1559 {
                max_priority_fee_per_gas: list.val_at(2)?,
                max_fee_per_gas: list.val_at(3)?,
            },
            gas_limit: list.val_at(4)?,
            to: read_to(&list.at(5)?)?,
            value: list.val_at(6)?,
            data: list.at(7)?.data()?.to_vec(),
        };
        if !list.at(8)?.is_list() {
            return Err(DecodeError::Rlp);
        }
        let parity: u8 = list.val_at(9)?;
        if parity > 1 {
            return Err(DecodeError::Signature);
        }
        (tx, read_signature(&list.at(10)?, &list.at(11)?)?, parity)
    } else {
        return Err(DecodeError::UnsupportedType(first));
    };
    let sender = recover(&tx, &signature, parity)?;
    Ok(DecodedTx { tx, sender, hash })
}

#[cfg(test)]
mod tests {
    use super::super::keys::{hex_decode, hex_encode, keys_from_mnemonic, DEV_MNEMONIC};
    use super::*;

    #[test]
    fn a_created_contracts_address_is_the_known_one_for_its_sender_and_nonce() {
        // The first contract of the dev mnemonic's first account, as anvil and hardhat give it.
        let sender = Address::parse("0xf39Fd6e51aad88F6F4ce6aB8827279cffFb92266").unwrap();
        assert_eq!(
            contract_address(sender, 0).to_string().to_ascii_lowercase(),
            "0x5fbdb2315678afecb367f032d93f642f64180aa3"
        );
        assert_eq!(
            contract_address(sender, 1).to_string().to_ascii_lowercase(),
            "0xe7f1725e7734ce288f8367e1bb143e90bb3f0512"
        );
    }

    fn eip155_example() -> (UnsignedTx, SenderKey) {
        let tx = UnsignedTx {
            chain_id: 1,
            nonce: 9,
            fees: Fees::Legacy { gas_price: 20_000_000_000 },
            gas_limit: 21_000,
            to: Address::parse("0x3535353535353535353535353535353535353535"),
            value: 1_000_000_000_000_000_000,
            data: Vec::new(),
        };
        (tx, SenderKey::from_bytes(&[0x46; 32]).unwrap())
    }

    #[test]
    fn a_legacy_transaction_signs_as_eip155s_own_example() {
        let (tx, key) = eip155_example();
        assert_eq!(
            hex_encode(&signing_hash(&tx)),
            "daf5a779ae972f972197303d7b574746c7ef83eadac0f2791ad23db92e4c8e53"
        );
        let signed = sign(&tx, &key);
        assert_eq!(
            hex_encode(&signed.raw),
            "f86c098504a817c800825208943535353535353535353535353535353535353535880de0b6b3a76400008025a028ef61340bd939bc2195fe537567866003e1a15d3c71ff63e1590620aa636276a067cbe9d8997f761aecb703304b3800ccf555c9f3dc64214b297fb1966a3b6d83"
        );
    }

    #[test]
    fn a_transaction_signs_to_the_same_bytes_k256_writes() {
        // libsecp256k1 signs for speed; its signatures (RFC 6979, low s) are k256's, byte for
        // byte, so a raw transaction does not depend on which library signed it.
        let (template, key) = eip155_example();
        let k256_key = k256::ecdsa::SigningKey::from_bytes((&[0x46u8; 32]).into()).unwrap();
        assert_eq!(SenderKey::from_bytes(&[0x46; 32]).unwrap().address(), key.address());
        for nonce in 0..64 {
            let tx = UnsignedTx { nonce, ..template.clone() };
            let hash = signing_hash(&tx);
            let (signature, recovery) = k256_key.sign_prehash_recoverable(&hash).unwrap();
            let v = tx.chain_id * 2 + 35 + u64::from(recovery.is_y_odd());
            let Fees::Legacy { gas_price } = tx.fees else { unreachable!("the example is legacy") };
            let mut compact = [0u8; 64];
            compact.copy_from_slice(&signature.to_bytes());
            let expected = legacy_payload(&tx, gas_price, Some((v, &compact)));
            assert_eq!(sign(&tx, &key).raw, expected, "nonce {nonce}");
        }
    }

    #[test]
    fn signed_transactions_decode_back_to_their_fields_and_sender() {
        let key = &keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap()[0];
        let (legacy, _) = eip155_example();
        let dynamic = UnsignedTx {
            chain_id: 31337,
            nonce: 0,
            fees: Fees::Eip1559 { max_fee_per_gas: 2_000_000_000, max_priority_fee_per_gas: 1_000_000_000 },
            gas_limit: 50_000,
            to: None,
            value: 0,
            data: vec![0x60, 0x00, 0x60, 0x00],
        };
        for tx in [legacy, dynamic] {
            let signed = sign(&tx, key);
            let decoded = decode(&signed.raw).unwrap();
            assert_eq!(decoded.tx, tx);
            assert_eq!(decoded.sender, key.address());
            assert_eq!(decoded.hash, signed.hash);
        }
    }

    /// The sender k256 recovers from `prehash`, `r || s` and the parity; `None` where k256
    /// refuses the signature.
    fn k256_sender(prehash: &[u8; 32], signature: &[u8; 64], parity: u8) -> Option<Address> {
        use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
        let signature = Signature::from_slice(signature).ok()?;
        let recovery = RecoveryId::from_byte(parity)?;
        VerifyingKey::recover_from_prehash(prehash, &signature, recovery)
            .ok()
            .map(|key| Address::of_key(&key))
    }

    /// `r || s` and R's y parity of a signed raw transaction.
    fn signature_of(raw: &[u8]) -> ([u8; 64], u8) {
        if raw[0] >= 0xc0 {
            let list = Rlp::new(raw);
            let v: u64 = list.val_at(6).unwrap();
            (read_signature(&list.at(7).unwrap(), &list.at(8).unwrap()).unwrap(), ((v - 35) % 2) as u8)
        } else {
            let list = Rlp::new(&raw[1..]);
            (read_signature(&list.at(10).unwrap(), &list.at(11).unwrap()).unwrap(), list.val_at(9).unwrap())
        }
    }

    #[test]
    fn the_sender_recovered_is_the_one_k256_recovers_from_the_same_signed_bytes() {
        // Real transactions of several keys and both forms: the same sender as k256's.
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 4).unwrap();
        let (legacy, _) = eip155_example();
        for (n, key) in keys.iter().enumerate() {
            for nonce in 0..16u64 {
                let dynamic = UnsignedTx {
                    chain_id: 31337,
                    nonce,
                    fees: Fees::Eip1559 { max_fee_per_gas: 7 + nonce as u128, max_priority_fee_per_gas: 1 },
                    gas_limit: 21_000,
                    to: Address::parse("0x3535353535353535353535353535353535353535"),
                    value: n as u128,
                    data: vec![nonce as u8; n],
                };
                for tx in [UnsignedTx { nonce, ..legacy.clone() }, dynamic] {
                    let decoded = decode(&sign(&tx, key).raw).unwrap();
                    assert_eq!(decoded.sender, key.address());
                    let (signature, parity) = signature_of(&sign(&tx, key).raw);
                    assert_eq!(k256_sender(&signing_hash(&tx), &signature, parity), Some(decoded.sender));
                }
            }
        }
        // Arbitrary signatures over arbitrary hashes: where k256 recovers a key, the same
        // address; where it refuses (high s, zero, out of range), refused too.
        let mut refused = 0;
        for i in 0u32..256 {
            let prehash: [u8; 32] = Keccak256::digest(i.to_be_bytes()).into();
            let mut signature = [0u8; 64];
            let r = Keccak256::digest(prehash);
            signature[..32].copy_from_slice(&r);
            signature[32..].copy_from_slice(&Keccak256::digest(r));
            let parity = (i % 2) as u8;
            let ours = read_signature(
                &Rlp::new(&rlp::encode(&&signature[..32])),
                &Rlp::new(&rlp::encode(&&signature[32..])),
            )
            .and_then(|signature| recover_address(&prehash, &signature, parity))
            .ok();
            assert_eq!(ours, k256_sender(&prehash, &signature, parity), "signature {i}");
            refused += usize::from(ours.is_none());
        }
        // About half of random `s` are high; both refuse them.
        assert!((64..192).contains(&refused), "{refused}");
        let order: [u8; 32] = [
            0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe,
            0xba, 0xae, 0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
        ];
        let one = {
            let mut one = [0u8; 32];
            one[31] = 1;
            one
        };
        for (r, s) in [([0u8; 32], one), (one, [0u8; 32]), (order, one), ([0xff; 32], one), (one, HALF_ORDER)]
        {
            let mut signature = [0u8; 64];
            signature[..32].copy_from_slice(&r);
            signature[32..].copy_from_slice(&s);
            let ours = read_signature(&Rlp::new(&rlp::encode(&&r[..])), &Rlp::new(&rlp::encode(&&s[..])))
                .and_then(|signature| recover_address(&[7; 32], &signature, 0))
                .ok();
            assert_eq!(ours, k256_sender(&[7; 32], &signature, 0), "r {r:?} s {s:?}");
        }
    }

    #[test]
    fn garbage_raw_bytes_are_a_decode_error_not_a_panic() {
        for raw in [
            &b""[..],
            b"\x01\xc0",
            b"\x02",
            b"\x02\xc3\x01\x02\x03",
            b"\xf8",
            b"\xc9\x01\x02\x03\x04\x05\x06\x07\x08\x09",
        ] {
            assert!(decode(raw).is_err(), "{raw:?}");
        }
        let key = &keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap()[0];
        let mut raw = sign(&eip155_example().0, key).raw;
        raw.push(0);
        assert_eq!(decode(&raw), Err(DecodeError::Rlp));
        assert!(hex_decode("zz").is_none());
    }
}
