//! Solana keypairs: a solana-keygen JSON file (an array of 64 bytes: the secret seed, then the
//! public key) or freshly generated ones. Ed25519 through `ed25519-dalek`. A keypair's secret
//! is never printed: its `Debug` shows the public key only, and nothing here writes one out.
//! The secret is expanded (SHA-512 of the seed, the clamped scalar and the nonce prefix) once
//! per keypair and kept, so a signature does not hash the seed again as `Signer::sign` does.

use std::fmt;
use std::path::{Path, PathBuf};

use ed25519_dalek::hazmat::ExpandedSecretKey;
use ed25519_dalek::SigningKey;
use rand::RngCore;

/// One Solana keypair.
pub struct SolanaKeypair {
    signing: SigningKey,
    /// The secret as signing uses it, derived from `signing` once (zeroed when dropped).
    expanded: ExpandedSecretKey,
}

impl Clone for SolanaKeypair {
    fn clone(&self) -> Self {
        SolanaKeypair::of(self.signing.clone())
    }
}

impl fmt::Debug for SolanaKeypair {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("SolanaKeypair").field("pubkey", &self.pubkey_text()).finish_non_exhaustive()
    }
}

impl SolanaKeypair {
    /// A new random keypair from the operating system's generator.
    pub fn generate() -> SolanaKeypair {
        let mut seed = [0u8; 32];
        rand::rngs::OsRng.fill_bytes(&mut seed);
        SolanaKeypair::of(SigningKey::from_bytes(&seed))
    }

    /// The keypair of `signing`, its secret expanded once.
    fn of(signing: SigningKey) -> SolanaKeypair {
        let expanded = ExpandedSecretKey::from(signing.as_bytes());
        SolanaKeypair { signing, expanded }
    }

    /// The keypair of a 32-byte secret seed.
    pub fn from_seed(seed: &[u8; 32]) -> SolanaKeypair {
        SolanaKeypair::of(SigningKey::from_bytes(seed))
    }

    /// The public key.
    pub fn pubkey(&self) -> [u8; 32] {
        self.signing.verifying_key().to_bytes()
    }

    /// The public key in base58, as Solana writes addresses.
    pub fn pubkey_text(&self) -> String {
        bs58::encode(self.pubkey()).into_string()
    }

    /// Signs `message` (Ed25519 as RFC 8032 defines it, with the kept expanded secret).
    pub fn sign(&self, message: &[u8]) -> [u8; 64] {
        ed25519_dalek::hazmat::raw_sign::<ed25519_dalek::Sha512>(
            &self.expanded,
            message,
            &self.signing.verifying_key(),
        )
        .to_bytes()
    }
}

/// Why a keypair file could not be read.
#[derive(Debug)]
pub enum KeypairFileError {
    /// The file could not be read.
    Read(PathBuf, std::io::Error),
    /// Not a JSON array of bytes: where and why.
    Syntax {
        /// The file.
        path: PathBuf,
        /// Line, from 1.
        line: usize,
        /// Column, from 1.
        column: usize,
        /// What is wrong there.
        reason: String,
    },
}

impl fmt::Display for KeypairFileError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            KeypairFileError::Read(path, err) => write!(f, "{}: {err}", path.display()),
            KeypairFileError::Syntax { path, line, column, reason } => {
                write!(f, "{}:{line}:{column}: {reason}", path.display())
            }
        }
    }
}

impl std::error::Error for KeypairFileError {}

/// Reads a solana-keygen keypair file.
pub fn load_keypair_file(path: &Path) -> Result<SolanaKeypair, KeypairFileError> {
    let text =
        std::fs::read_to_string(path).map_err(|err| KeypairFileError::Read(path.to_path_buf(), err))?;
    parse_keypair(&text, path)
}

/// Reads the text of a solana-keygen keypair file (`path` names it in errors).
pub fn parse_keypair(text: &str, path: &Path) -> Result<SolanaKeypair, KeypairFileError> {
    let at = |line: usize, column: usize, reason: String| KeypairFileError::Syntax {
        path: path.to_path_buf(),
        line: line.max(1),
        column: column.max(1),
        reason,
    };
    let bytes: Vec<u8> = serde_json::from_str(text).map_err(|err| {
        // serde_json's message ends with " at line L column C"; the position is said once.
        let reason = err.to_string();
        let reason = reason.split(" at line ").next().unwrap_or(&reason).to_string();
        at(
            err.line(),
            err.column(),
            format!("not a solana-keygen keypair (a JSON array of 64 bytes): {reason}"),
        )
    })?;
    // The array's position: its first '['.
    let (line, column) = text
        .lines()
        .enumerate()
        .find_map(|(n, line)| line.find('[').map(|c| (n + 1, c + 1)))
        .unwrap_or((1, 1));
    let pair: [u8; 64] = bytes.as_slice().try_into().map_err(|_| {
        at(
            line,
            column,
            format!("a keypair is 64 bytes (secret seed, then public key), this array has {}", bytes.len()),
        )
    })?;
    let signing = SigningKey::from_keypair_bytes(&pair)
        .map_err(|_| at(line, column, "the last 32 bytes are not the public key of the first 32".into()))?;
    Ok(SolanaKeypair::of(signing))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_with_the_kept_expanded_secret_is_the_one_the_signing_key_makes_and_verifies() {
        use ed25519_dalek::{Signer, Verifier};
        let keypair = SolanaKeypair::from_seed(&[11; 32]);
        let copy = keypair.clone();
        for message in [&b""[..], b"rpcbench 1 7", &[0xa5; 300]] {
            let signature = keypair.sign(message);
            assert_eq!(signature, keypair.signing.sign(message).to_bytes());
            assert_eq!(signature, copy.sign(message));
            let signature = ed25519_dalek::Signature::from_bytes(&signature);
            assert!(keypair.signing.verifying_key().verify(message, &signature).is_ok());
        }
    }

    fn file_of(keypair: &SolanaKeypair) -> String {
        let mut bytes = keypair.signing.to_bytes().to_vec();
        bytes.extend_from_slice(&keypair.pubkey());
        serde_json::to_string(&bytes).unwrap()
    }

    #[test]
    fn a_solana_keygen_file_reads_back_the_same_keypair() {
        let keypair = SolanaKeypair::from_seed(&[7; 32]);
        let read = parse_keypair(&file_of(&keypair), Path::new("id.json")).unwrap();
        assert_eq!(read.pubkey(), keypair.pubkey());
        assert_eq!(read.sign(b"m"), keypair.sign(b"m"));
    }

    #[test]
    fn a_bad_keypair_file_is_named_with_line_and_column_and_never_shows_the_secret() {
        let path = Path::new("id.json");
        let err = parse_keypair("[1,2,\n 3, 300]", path).unwrap_err().to_string();
        assert!(err.starts_with("id.json:2:"), "{err}");
        assert!(err.contains("300"), "{err}");
        let err = parse_keypair("\n  [1, 2, 3]", path).unwrap_err().to_string();
        assert!(err.starts_with("id.json:2:3: a keypair is 64 bytes"), "{err}");
        let err = parse_keypair("{\"k\": 1}", path).unwrap_err().to_string();
        assert!(err.starts_with("id.json:1:1:"), "{err}");
        // A mismatched public half is refused; the secret never appears in the error.
        let mut wrong: Vec<u8> = vec![9; 32];
        wrong.extend_from_slice(&SolanaKeypair::from_seed(&[8; 32]).pubkey());
        let err = parse_keypair(&serde_json::to_string(&wrong).unwrap(), path).unwrap_err().to_string();
        assert!(err.contains("not the public key"), "{err}");
        assert!(!err.contains("9,9"), "{err}");
        let keypair = SolanaKeypair::from_seed(&[5; 32]);
        assert!(!format!("{keypair:?}").contains("5, 5"));
    }
}
