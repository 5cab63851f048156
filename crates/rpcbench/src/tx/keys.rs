//! Sender keys of `tx`: secp256k1 private keys read from a key file (hex, one a line) or
//! derived from a BIP-39 mnemonic along BIP-44's Ethereum path (`m/44'/60'/0'/0/i`), each with
//! its address. Key material never prints: [`SenderKey`]'s `Debug` shows the address only,
//! errors name the file, line and column of a bad key but never quote it, and
//! [`SenderKey::secret_hex`] exists only to hand the key to `crate::util::redact::Secrets`, which
//! scrubs it out of whatever a server sends back.

use std::fmt;
use std::path::{Path, PathBuf};

use k256::ecdsa::{SigningKey, VerifyingKey};
use sha3::{Digest, Keccak256};

/// The mnemonic of anvil's and hardhat's dev accounts (`--dev`): public, funded only on dev
/// chains.
pub const DEV_MNEMONIC: &str = "test test test test test test test test test test test junk";

/// The most keys one key file or one mnemonic gives (a bound on what a run holds).
pub const MAX_KEYS: usize = 100_000;

/// A 20-byte Ethereum address.
#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Address(pub [u8; 20]);

impl Address {
    /// The address of a public key: the last 20 bytes of the Keccak-256 of its uncompressed
    /// form without the 0x04 prefix.
    pub fn of_key(key: &VerifyingKey) -> Address {
        let point = key.to_encoded_point(false);
        let hash = Keccak256::digest(&point.as_bytes()[1..]);
        let mut bytes = [0u8; 20];
        bytes.copy_from_slice(&hash[12..]);
        Address(bytes)
    }

    /// Reads `0x` followed by 40 hex digits (either case).
    pub fn parse(text: &str) -> Option<Address> {
        let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?;
        let bytes = hex_decode(digits)?;
        Some(Address(bytes.try_into().ok()?))
    }
}

impl fmt::Display for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        // Written whole, once (a formatting call per byte cost the mock's receipts dearly).
        let mut text = [b'0'; 42];
        text[1] = b'x';
        for (digits, byte) in text[2..].chunks_exact_mut(2).zip(self.0) {
            digits.copy_from_slice(&hex_pair(byte));
        }
        f.write_str(std::str::from_utf8(&text).map_err(|_| fmt::Error)?)
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// One sender: a private key and its address. `Debug` shows the address only.
#[derive(Clone)]
pub struct SenderKey {
    signing: SigningKey,
    /// The same scalar for libsecp256k1, which signs (`super::sign::sign`).
    secret: secp256k1::SecretKey,
    address: Address,
}

impl fmt::Debug for SenderKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SenderKey")
            .field("address", &self.address)
            .field("key", &crate::util::redact::MASK)
            .finish()
    }
}

impl SenderKey {
    /// The key of a 32-byte big-endian scalar; `None` when it is zero or not below the curve
    /// order.
    pub fn from_bytes(bytes: &[u8; 32]) -> Option<SenderKey> {
        let signing = SigningKey::from_bytes(bytes.into()).ok()?;
        let secret = secp256k1::SecretKey::from_slice(bytes).ok()?;
        let address = Address::of_key(signing.verifying_key());
        Some(SenderKey { signing, secret, address })
    }

    /// This sender's address.
    pub fn address(&self) -> Address {
        self.address
    }

    /// The key for signing.
    pub(crate) fn secret_key(&self) -> &secp256k1::SecretKey {
        &self.secret
    }

    /// The key as 64 hex digits, for `crate::util::redact::Secrets` only (so that a server quoting it
    /// back is scrubbed); never print it.
    pub fn secret_hex(&self) -> String {
        hex_encode(&self.signing.to_bytes())
    }
}

/// Why a key line is not a key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyLineProblem {
    /// A character that is not a hex digit.
    NotHex,
    /// Not 64 hex digits (after an optional `0x`): the count found.
    WrongLength(usize),
    /// 64 hex digits, but zero or not below the secp256k1 order.
    OutOfRange,
}

impl fmt::Display for KeyLineProblem {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyLineProblem::NotHex => f.write_str("not a hex digit"),
            KeyLineProblem::WrongLength(n) => write!(f, "a private key is 64 hex digits, this one has {n}"),
            KeyLineProblem::OutOfRange => {
                f.write_str("not a valid secp256k1 private key (zero or too large)")
            }
        }
    }
}

/// Why no keys could be had.
#[derive(Debug)]
pub enum KeyError {
    /// The key file could not be read.
    Read {
        /// The file.
        path: PathBuf,
        /// What the system said.
        error: std::io::Error,
    },
    /// A line of the key file is not a key (the key itself is never quoted).
    BadLine {
        /// The file.
        path: PathBuf,
        /// 1-based line.
        line: usize,
        /// 1-based column of the problem.
        column: usize,
        /// What is wrong.
        problem: KeyLineProblem,
    },
    /// The key file holds no key.
    NoKeys {
        /// The file.
        path: PathBuf,
    },
    /// More keys than [`MAX_KEYS`] were asked for or found.
    TooMany {
        /// How many.
        count: usize,
    },
    /// The mnemonic is not a valid English BIP-39 phrase (its words are never quoted).
    Mnemonic,
    /// BIP-32 derivation failed for one index (astronomically rare).
    Derivation {
        /// The account index.
        index: u32,
    },
}

impl fmt::Display for KeyError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeyError::Read { path, error } => {
                write!(f, "{}: cannot read the key file: {error}", path.display())
            }
            KeyError::BadLine { path, line, column, problem } => {
                write!(f, "{}:{line}:{column}: {problem}", path.display())
            }
            KeyError::NoKeys { path } => {
                write!(f, "{}: no keys (one hex private key a line)", path.display())
            }
            KeyError::TooMany { count } => write!(f, "{count} keys: at most {MAX_KEYS}"),
            KeyError::Mnemonic => f.write_str(
                "the mnemonic is not a valid English BIP-39 phrase (check the words and their count)",
            ),
            KeyError::Derivation { index } => write!(f, "BIP-32 derivation failed for account {index}"),
        }
    }
}

impl std::error::Error for KeyError {}

/// Reads a key file: one hex private key a line (`0x` optional), blank lines and lines
/// starting with `#` skipped.
pub fn load_key_file(path: &Path) -> Result<Vec<SenderKey>, KeyError> {
    let text =
        std::fs::read_to_string(path).map_err(|error| KeyError::Read { path: path.to_path_buf(), error })?;
    parse_key_lines(&text, path)
}

/// Parses the text of a key file; `path` only names it in errors.
pub fn parse_key_lines(text: &str, path: &Path) -> Result<Vec<SenderKey>, KeyError> {
    let mut keys = Vec::new();
    for (index, raw_line) in text.lines().enumerate() {
        let line = index + 1;
        let leading = raw_line.len() - raw_line.trim_start().len();
        let trimmed = raw_line.trim();
        if trimmed.is_empty() || trimmed.starts_with('#') {
            continue;
        }
        let (digits, prefix) = match trimmed.strip_prefix("0x").or_else(|| trimmed.strip_prefix("0X")) {
            Some(digits) => (digits, 2),
            None => (trimmed, 0),
        };
        let bad =
            |column: usize, problem| KeyError::BadLine { path: path.to_path_buf(), line, column, problem };
        if let Some(at) = digits.char_indices().find(|(_, c)| !c.is_ascii_hexdigit()).map(|(at, _)| at) {
            return Err(bad(leading + prefix + at + 1, KeyLineProblem::NotHex));
        }
        if digits.len() != 64 {
            return Err(bad(leading + 1, KeyLineProblem::WrongLength(digits.len())));
        }
        let bytes: [u8; 32] = hex_decode(digits)
            .and_then(|b| b.try_into().ok())
            .ok_or(bad(leading + 1, KeyLineProblem::NotHex))?;
        let key = SenderKey::from_bytes(&bytes).ok_or(bad(leading + 1, KeyLineProblem::OutOfRange))?;
        if keys.len() == MAX_KEYS {
            return Err(KeyError::TooMany { count: MAX_KEYS + 1 });
        }
        keys.push(key);
    }
    if keys.is_empty() {
        return Err(KeyError::NoKeys { path: path.to_path_buf() });
    }
    Ok(keys)
}

/// Derives `count` keys from a BIP-39 `phrase` (English, empty passphrase) along
/// `m/44'/60'/0'/0/i` for `i` in `first..first + count`, as anvil, hardhat and wallets do.
pub fn keys_from_mnemonic(phrase: &str, first: u32, count: usize) -> Result<Vec<SenderKey>, KeyError> {
    if count > MAX_KEYS {
        return Err(KeyError::TooMany { count });
    }
    let normalized = phrase.split_whitespace().collect::<Vec<_>>().join(" ");
    let mnemonic = bip39::Mnemonic::parse_in_normalized(bip39::Language::English, &normalized)
        .map_err(|_| KeyError::Mnemonic)?;
    let seed = mnemonic.to_seed_normalized("");
    let path = "m/44'/60'/0'/0".parse().map_err(|_| KeyError::Mnemonic)?;
    let account =
        bip32::XPrv::derive_from_path(seed, &path).map_err(|_| KeyError::Derivation { index: first })?;
    let mut keys = Vec::with_capacity(count);
    for offset in 0..count as u32 {
        let index = first + offset;
        let child = account
            .derive_child(bip32::ChildNumber::new(index, false).map_err(|_| KeyError::Derivation { index })?)
            .map_err(|_| KeyError::Derivation { index })?;
        let key = SenderKey::from_bytes(&child.to_bytes()).ok_or(KeyError::Derivation { index })?;
        keys.push(key);
    }
    Ok(keys)
}

/// The two lowercase hex digits of `byte`: the one hex table of the transaction code and the
/// mock nodes (every hex writer of theirs is built on it).
pub(crate) fn hex_pair(byte: u8) -> [u8; 2] {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    [DIGITS[usize::from(byte >> 4)], DIGITS[usize::from(byte & 15)]]
}

/// Lowercase hex of `bytes`, no prefix.
pub(crate) fn hex_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len() * 2);
    push_hex(&mut out, bytes);
    out
}

/// `0x` and the lowercase hex of `bytes`.
pub(crate) fn hex_0x(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(2 + bytes.len() * 2);
    out.push_str("0x");
    push_hex(&mut out, bytes);
    out
}

/// Appends the lowercase hex of `bytes` to `out`.
fn push_hex(out: &mut String, bytes: &[u8]) {
    for &byte in bytes {
        out.extend(hex_pair(byte).map(char::from));
    }
}

/// The bytes of an even number of hex digits (no prefix); `None` on anything else.
pub(crate) fn hex_decode(digits: &str) -> Option<Vec<u8>> {
    let digits = digits.as_bytes();
    if digits.len() % 2 != 0 {
        return None;
    }
    let nibble = |c: u8| (c as char).to_digit(16).map(|d| d as u8);
    digits.chunks(2).map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?)).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_dev_mnemonic_gives_anvils_first_accounts() {
        let keys = keys_from_mnemonic(DEV_MNEMONIC, 0, 2).unwrap();
        assert_eq!(keys[0].address().to_string(), "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
        assert_eq!(keys[0].secret_hex(), "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80");
        assert_eq!(keys[1].address().to_string(), "0x70997970c51812dc3a010c7d01b50e0d17dc79c8");
    }

    #[test]
    fn a_key_file_line_that_is_not_a_key_is_named_by_line_and_column_without_quoting_it() {
        let text = "# senders\n\n0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80\n  59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b7869zz\n";
        let err = parse_key_lines(text, Path::new("keys.txt")).unwrap_err();
        let message = err.to_string();
        assert_eq!(message, "keys.txt:4:65: not a hex digit");
        assert!(!message.contains("59c6995e"));
        let short = parse_key_lines("abcd\n", Path::new("k")).unwrap_err().to_string();
        assert_eq!(short, "k:1:1: a private key is 64 hex digits, this one has 4");
        let zero = parse_key_lines(&"0".repeat(64), Path::new("k")).unwrap_err().to_string();
        assert!(zero.starts_with("k:1:1: not a valid secp256k1"), "{zero}");
        let empty = parse_key_lines("# nothing\n", Path::new("k")).unwrap_err().to_string();
        assert!(empty.contains("no keys"), "{empty}");
    }

    #[test]
    fn a_key_file_gives_the_same_key_as_the_mnemonic() {
        let text = "ac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80\n";
        let keys = parse_key_lines(text, Path::new("k")).unwrap();
        assert_eq!(keys[0].address().to_string(), "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
    }

    #[test]
    fn a_sender_keys_debug_form_shows_no_key_material() {
        let key = &keys_from_mnemonic(DEV_MNEMONIC, 0, 1).unwrap()[0];
        let shown = format!("{key:?}");
        assert!(shown.contains("0xf39fd6e5"), "{shown}");
        assert!(!shown.contains("ac0974be"), "{shown}");
    }

    #[test]
    fn a_bad_mnemonic_is_refused_without_quoting_it() {
        let err = keys_from_mnemonic("test test test test test test test test test test test test", 0, 1)
            .unwrap_err();
        assert!(matches!(err, KeyError::Mnemonic));
        assert!(!err.to_string().contains("test test"));
    }

    #[test]
    fn addresses_parse_back() {
        let address = Address::parse("0xF39Fd6e51aad88F6F4ce6aB8827279cffFb92266").unwrap();
        assert_eq!(address.to_string(), "0xf39fd6e51aad88f6f4ce6ab8827279cfffb92266");
        assert!(Address::parse("0x1234").is_none());
        assert!(Address::parse("f39Fd6e51aad88F6F4ce6aB8827279cffFb92266").is_none());
    }
}
