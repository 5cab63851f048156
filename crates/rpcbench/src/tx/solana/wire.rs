//! The Solana legacy transaction on the wire, built and read by hand: compact-u16 lengths, the
//! message (header, account keys, recent blockhash, compiled instructions) and its signatures.
//! [`transfer`] builds what `rpcbench tx` sends: a System Program transfer, a Memo program
//! instruction whose text makes every transaction (and so every signature) unique, and
//! optionally a ComputeBudget SetComputeUnitPrice. [`decode`] reads any legacy transaction
//! back (the mock node verifies what it is sent with it).

use std::fmt;

use ed25519_dalek::{Signature, VerifyingKey};

use super::keys::SolanaKeypair;

/// The System Program.
pub const SYSTEM_PROGRAM: [u8; 32] = [0; 32];
/// The Memo program (v2), `MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr`.
pub const MEMO_PROGRAM: &str = "MemoSq4gqABAXKb96qnH8TysNcWxMyWCqXgDLGmfcHr";
/// The ComputeBudget program, `ComputeBudget111111111111111111111111111111`.
pub const COMPUTE_BUDGET_PROGRAM: &str = "ComputeBudget111111111111111111111111111111";
/// The System Program's Transfer instruction.
const SYSTEM_TRANSFER: u32 = 2;
/// ComputeBudget's SetComputeUnitPrice instruction.
const SET_COMPUTE_UNIT_PRICE: u8 = 3;
/// Largest transaction Solana takes (the IPv6 MTU less headers).
pub const MAX_TRANSACTION_BYTES: usize = 1232;

/// A program id written in base58 as bytes (the constants above are valid).
pub fn program_id(text: &str) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    // Valid constants decode to 32 bytes; anything else leaves zeros.
    if let Ok(decoded) = bs58::decode(text).into_vec() {
        if decoded.len() == 32 {
            bytes.copy_from_slice(&decoded);
        }
    }
    bytes
}

/// Appends `value` as a compact-u16 (7 bits a byte, low first, high bit = more).
pub fn write_compact_u16(out: &mut Vec<u8>, value: u16) {
    let mut rest = value;
    loop {
        let low = (rest & 0x7f) as u8;
        rest >>= 7;
        if rest == 0 {
            out.push(low);
            return;
        }
        out.push(low | 0x80);
    }
}

/// Reads a compact-u16 from the front of `bytes`: the value and the bytes it took.
pub fn read_compact_u16(bytes: &[u8]) -> Option<(u16, usize)> {
    let mut value: u32 = 0;
    for (i, &byte) in bytes.iter().enumerate().take(3) {
        value |= u32::from(byte & 0x7f) << (7 * i);
        if byte & 0x80 == 0 {
            // The shortest form only, within 16 bits.
            if (i > 0 && byte == 0) || value > u32::from(u16::MAX) {
                return None;
            }
            return Some((value as u16, i + 1));
        }
    }
    None
}

/// What one transfer transaction says.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransferSpec {
    /// The recipient (the payer itself when equal).
    pub to: [u8; 32],
    /// Lamports sent.
    pub lamports: u64,
    /// The memo's text (unique per transaction).
    pub memo: Vec<u8>,
    /// SetComputeUnitPrice in micro-lamports, when asked for.
    pub cu_price: Option<u64>,
    /// The recent blockhash.
    pub blockhash: [u8; 32],
}

/// A signed transaction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedSolanaTx {
    /// Its (first and only) signature, which names it.
    pub signature: [u8; 64],
    /// The wire bytes.
    pub wire: Vec<u8>,
}

/// The Memo program's id, decoded once (base58 per transaction cost more than its hash).
fn memo_program() -> &'static [u8; 32] {
    static ID: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    ID.get_or_init(|| program_id(MEMO_PROGRAM))
}

/// The ComputeBudget program's id, decoded once.
fn compute_budget_program() -> &'static [u8; 32] {
    static ID: std::sync::OnceLock<[u8; 32]> = std::sync::OnceLock::new();
    ID.get_or_init(|| program_id(COMPUTE_BUDGET_PROGRAM))
}

/// Builds and signs the transfer `spec` paid by `payer`.
pub fn transfer(payer: &SolanaKeypair, spec: &TransferSpec) -> SignedSolanaTx {
    let payer_key = payer.pubkey();
    let self_transfer = spec.to == payer_key;
    let mut keys: Vec<[u8; 32]> = vec![payer_key];
    if !self_transfer {
        keys.push(spec.to);
    }
    let system = keys.len() as u8;
    keys.push(SYSTEM_PROGRAM);
    let memo = keys.len() as u8;
    keys.push(*memo_program());
    let budget = spec.cu_price.map(|_| {
        keys.push(*compute_budget_program());
        keys.len() as u8 - 1
    });
    let readonly_unsigned = keys.len() as u8 - if self_transfer { 1 } else { 2 };
    let mut message = Vec::with_capacity(64 + keys.len() * 32 + spec.memo.len());
    message.extend_from_slice(&[1, 0, readonly_unsigned]);
    write_compact_u16(&mut message, keys.len() as u16);
    for key in &keys {
        message.extend_from_slice(key);
    }
    message.extend_from_slice(&spec.blockhash);
    write_compact_u16(&mut message, 2 + u16::from(budget.is_some()));
    if let (Some(program), Some(price)) = (budget, spec.cu_price) {
        message.push(program);
        write_compact_u16(&mut message, 0);
        write_compact_u16(&mut message, 9);
        message.push(SET_COMPUTE_UNIT_PRICE);
        message.extend_from_slice(&price.to_le_bytes());
    }
    message.push(system);
    let to_index = if self_transfer { 0 } else { 1 };
    write_compact_u16(&mut message, 2);
    message.extend_from_slice(&[0, to_index]);
    write_compact_u16(&mut message, 12);
    message.extend_from_slice(&SYSTEM_TRANSFER.to_le_bytes());
    message.extend_from_slice(&spec.lamports.to_le_bytes());
    message.push(memo);
    write_compact_u16(&mut message, 0);
    write_compact_u16(&mut message, spec.memo.len().min(usize::from(u16::MAX)) as u16);
    message.extend_from_slice(&spec.memo[..spec.memo.len().min(usize::from(u16::MAX))]);
    let signature = payer.sign(&message);
    let mut wire = Vec::with_capacity(1 + 64 + message.len());
    write_compact_u16(&mut wire, 1);
    wire.extend_from_slice(&signature);
    wire.extend_from_slice(&message);
    SignedSolanaTx { signature, wire }
}

/// One compiled instruction.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CompiledInstruction {
    /// Index of its program among the account keys.
    pub program: u8,
    /// Indexes of its accounts.
    pub accounts: Vec<u8>,
    /// Its data.
    pub data: Vec<u8>,
}

/// A legacy transaction read back.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DecodedSolanaTx {
    /// Its signatures, in the order of the signing keys.
    pub signatures: Vec<[u8; 64]>,
    /// The message's header: required signatures, read-only signed, read-only unsigned.
    pub header: [u8; 3],
    /// The account keys.
    pub account_keys: Vec<[u8; 32]>,
    /// The recent blockhash.
    pub blockhash: [u8; 32],
    /// The instructions.
    pub instructions: Vec<CompiledInstruction>,
    /// The signed message bytes.
    pub message: Vec<u8>,
}

/// Why a transaction could not be read or verified.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum WireError {
    /// The bytes end early or a length is malformed.
    Truncated,
    /// Bytes past the end of the message.
    TrailingBytes,
    /// A versioned (v0) message, not read here.
    Versioned,
    /// The header's counts do not fit the keys and signatures.
    Header,
    /// An instruction names an account index past the keys.
    AccountIndex,
    /// A signature does not verify.
    Signature,
}

impl fmt::Display for WireError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            WireError::Truncated => "the transaction ends early or has a malformed length",
            WireError::TrailingBytes => "bytes after the end of the transaction",
            WireError::Versioned => "a versioned message (only legacy transactions are read)",
            WireError::Header => "the message header does not fit its keys and signatures",
            WireError::AccountIndex => "an instruction names an account that is not in the message",
            WireError::Signature => "signature verification failure",
        })
    }
}

impl std::error::Error for WireError {}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], WireError> {
        let end =
            self.at.checked_add(n).filter(|&end| end <= self.bytes.len()).ok_or(WireError::Truncated)?;
        let taken = &self.bytes[self.at..end];
        self.at = end;
        Ok(taken)
    }

    fn compact(&mut self) -> Result<usize, WireError> {
        let (value, used) = read_compact_u16(&self.bytes[self.at..]).ok_or(WireError::Truncated)?;
        self.at += used;
        Ok(usize::from(value))
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], WireError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }
}

/// Reads a legacy transaction. Every length is checked against the bytes actually there
/// before anything is allocated for it.
pub fn decode(bytes: &[u8]) -> Result<DecodedSolanaTx, WireError> {
    let mut reader = Reader { bytes, at: 0 };
    let count = reader.compact()?;
    if count.saturating_mul(64) > bytes.len() {
        return Err(WireError::Truncated);
    }
    let signatures = (0..count).map(|_| reader.array::<64>()).collect::<Result<Vec<_>, _>>()?;
    let message_start = reader.at;
    let header: [u8; 3] = reader.array()?;
    if header[0] & 0x80 != 0 {
        return Err(WireError::Versioned);
    }
    let key_count = reader.compact()?;
    if key_count.saturating_mul(32) > bytes.len() {
        return Err(WireError::Truncated);
    }
    let account_keys = (0..key_count).map(|_| reader.array::<32>()).collect::<Result<Vec<_>, _>>()?;
    let blockhash = reader.array()?;
    let instruction_count = reader.compact()?;
    if instruction_count > bytes.len() {
        return Err(WireError::Truncated);
    }
    let mut instructions = Vec::with_capacity(instruction_count);
    for _ in 0..instruction_count {
        let program = reader.take(1)?[0];
        let n = reader.compact()?;
        let accounts = reader.take(n)?.to_vec();
        let n = reader.compact()?;
        let data = reader.take(n)?.to_vec();
        if usize::from(program) >= key_count || accounts.iter().any(|&a| usize::from(a) >= key_count) {
            return Err(WireError::AccountIndex);
        }
        instructions.push(CompiledInstruction { program, accounts, data });
    }
    if reader.at != bytes.len() {
        return Err(WireError::TrailingBytes);
    }
    let required = usize::from(header[0]);
    if required == 0
        || required != signatures.len()
        || required > key_count
        || usize::from(header[1]) >= required
        || usize::from(header[2]) > key_count - required
    {
        return Err(WireError::Header);
    }
    Ok(DecodedSolanaTx {
        signatures,
        header,
        account_keys,
        blockhash,
        instructions,
        message: bytes[message_start..].to_vec(),
    })
}

impl DecodedSolanaTx {
    /// Checks every signature against its signing key.
    pub fn verify(&self) -> Result<(), WireError> {
        for (signature, key) in self.signatures.iter().zip(&self.account_keys) {
            let key = VerifyingKey::from_bytes(key).map_err(|_| WireError::Signature)?;
            key.verify_strict(&self.message, &Signature::from_bytes(signature))
                .map_err(|_| WireError::Signature)?;
        }
        Ok(())
    }

    /// The System Program transfers it makes: (from, to, lamports).
    pub fn system_transfers(&self) -> Vec<([u8; 32], [u8; 32], u64)> {
        self.instructions
            .iter()
            .filter(|ix| self.account_keys[usize::from(ix.program)] == SYSTEM_PROGRAM)
            .filter(|ix| ix.accounts.len() >= 2 && ix.data.len() == 12)
            .filter(|ix| ix.data[..4] == SYSTEM_TRANSFER.to_le_bytes())
            .map(|ix| {
                let mut lamports = [0u8; 8];
                lamports.copy_from_slice(&ix.data[4..12]);
                (
                    self.account_keys[usize::from(ix.accounts[0])],
                    self.account_keys[usize::from(ix.accounts[1])],
                    u64::from_le_bytes(lamports),
                )
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compact_u16_round_trips_at_the_boundaries_and_refuses_long_forms() {
        for value in [0u16, 1, 127, 128, 255, 16_383, 16_384, u16::MAX] {
            let mut out = Vec::new();
            write_compact_u16(&mut out, value);
            assert_eq!(
                out.len(),
                if value < 128 {
                    1
                } else if value < 16_384 {
                    2
                } else {
                    3
                }
            );
            assert_eq!(read_compact_u16(&out), Some((value, out.len())));
        }
        assert_eq!(read_compact_u16(&[0x80, 0x00]), None, "a zero continuation is not the shortest form");
        assert_eq!(read_compact_u16(&[0xff, 0xff, 0x04]), None, "past 16 bits");
        assert_eq!(read_compact_u16(&[0x80]), None);
    }

    #[test]
    fn a_transfer_with_memo_and_price_reads_back_and_verifies() {
        let payer = SolanaKeypair::from_seed(&[3; 32]);
        let to = SolanaKeypair::from_seed(&[4; 32]).pubkey();
        let spec = TransferSpec {
            to,
            lamports: 42,
            memo: b"rpcbench 1 7".to_vec(),
            cu_price: Some(1000),
            blockhash: [9; 32],
        };
        let signed = transfer(&payer, &spec);
        assert!(signed.wire.len() <= MAX_TRANSACTION_BYTES);
        let decoded = decode(&signed.wire).unwrap();
        decoded.verify().unwrap();
        assert_eq!(decoded.signatures, [signed.signature]);
        assert_eq!(decoded.header, [1, 0, 3]);
        assert_eq!(decoded.account_keys[..2], [payer.pubkey(), to]);
        assert_eq!(decoded.blockhash, [9; 32]);
        assert_eq!(decoded.system_transfers(), [(payer.pubkey(), to, 42)]);
        assert_eq!(decoded.instructions.len(), 3);
        assert_eq!(decoded.instructions[0].data, [3, 0xe8, 3, 0, 0, 0, 0, 0, 0]);
        assert_eq!(decoded.instructions[2].data, b"rpcbench 1 7");
        // Another memo, another signature.
        let other = transfer(&payer, &TransferSpec { memo: b"rpcbench 1 8".to_vec(), ..spec.clone() });
        assert_ne!(other.signature, signed.signature);
        // A self-transfer names the payer once.
        let own = transfer(&payer, &TransferSpec { to: payer.pubkey(), cu_price: None, ..spec });
        let decoded = decode(&own.wire).unwrap();
        decoded.verify().unwrap();
        assert_eq!((decoded.header, decoded.account_keys.len()), ([1, 0, 2], 3));
        assert_eq!(decoded.system_transfers(), [(payer.pubkey(), payer.pubkey(), 42)]);
    }

    #[test]
    fn a_tampered_or_cut_transaction_is_refused_without_a_panic() {
        let payer = SolanaKeypair::from_seed(&[3; 32]);
        let spec = TransferSpec {
            to: [5; 32],
            lamports: 1,
            memo: b"m".to_vec(),
            cu_price: None,
            blockhash: [1; 32],
        };
        let signed = transfer(&payer, &spec);
        let mut tampered = signed.wire.clone();
        let last = tampered.len() - 1;
        tampered[last] ^= 1;
        assert_eq!(decode(&tampered).unwrap().verify(), Err(WireError::Signature));
        for cut in 0..signed.wire.len() {
            assert!(decode(&signed.wire[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = signed.wire.clone();
        longer.push(0);
        assert_eq!(decode(&longer), Err(WireError::TrailingBytes));
        assert_eq!(decode(&[0xff, 0xff, 0x03]), Err(WireError::Truncated));
    }
}
