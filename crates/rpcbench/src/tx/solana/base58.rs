//! A Solana signature (64 bytes) as base58 text, the form `signatureSubscribe` takes, written
//! once per transaction sent. The general base58 encoder carries every input byte through
//! every output digit (quadratic in bytes); here the signature is sixteen 32-bit limbs divided
//! by 58^5 per pass, five digits at a time, which costs a tenth. The text is the same as any
//! base58 encoder's (Bitcoin alphabet, a leading `1` per leading zero byte).

/// The Bitcoin base58 alphabet Solana uses.
const ALPHABET: &[u8; 58] = b"123456789ABCDEFGHJKLMNPQRSTUVWXYZabcdefghijkmnopqrstuvwxyz";

/// Five base58 digits: the divisor of one pass (below 2^30, so a remainder shifted by 32 bits
/// and a limb fit in 64 bits).
const FIVE_DIGITS: u64 = 58 * 58 * 58 * 58 * 58;

/// Limbs of a signature.
const LIMBS: usize = 16;

/// Digits one pass at a time cover 2^512 (88 digits) in 18 passes.
const MAX_DIGITS: usize = 90;

/// `signature` as base58 text.
pub(crate) fn signature_text(signature: &[u8; 64]) -> String {
    let mut limbs = [0u32; LIMBS];
    for (limb, chunk) in limbs.iter_mut().zip(signature.chunks_exact(4)) {
        *limb = u32::from_be_bytes([chunk[0], chunk[1], chunk[2], chunk[3]]);
    }
    // Digits, least significant first.
    let mut digits = [0u8; MAX_DIGITS];
    let mut count = 0;
    let mut start = limbs.iter().position(|&limb| limb != 0).unwrap_or(LIMBS);
    while start < LIMBS {
        let mut remainder = 0u64;
        for limb in &mut limbs[start..] {
            let value = (remainder << 32) | u64::from(*limb);
            *limb = (value / FIVE_DIGITS) as u32;
            remainder = value % FIVE_DIGITS;
        }
        for digit in &mut digits[count..count + 5] {
            *digit = (remainder % 58) as u8;
            remainder /= 58;
        }
        count += 5;
        while start < LIMBS && limbs[start] == 0 {
            start += 1;
        }
    }
    while count > 0 && digits[count - 1] == 0 {
        count -= 1;
    }
    let zeros = signature.iter().take_while(|&&byte| byte == 0).count();
    let mut text = String::with_capacity(zeros + count);
    text.extend(std::iter::repeat_n('1', zeros));
    text.extend(digits[..count].iter().rev().map(|&digit| char::from(ALPHABET[usize::from(digit)])));
    text
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    #[test]
    fn a_signature_in_base58_reads_as_any_base58_encoder_writes_it() {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(58);
        let mut cases: Vec<[u8; 64]> = vec![[0; 64], [0xff; 64], {
            let mut one = [0u8; 64];
            one[63] = 1;
            one
        }];
        for zeros in [1, 2, 5, 31, 63] {
            let mut signature = [0u8; 64];
            rng.fill(&mut signature[zeros..]);
            signature[zeros] |= 1;
            cases.push(signature);
        }
        for _ in 0..2_000 {
            let mut signature = [0u8; 64];
            rng.fill(&mut signature[..]);
            cases.push(signature);
        }
        for signature in cases {
            assert_eq!(signature_text(&signature), bs58::encode(signature).into_string(), "{signature:?}");
        }
    }
}
