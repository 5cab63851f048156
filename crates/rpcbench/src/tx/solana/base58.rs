//! A Solana signature (64 bytes) as base58 text, the form `signatureSubscribe` takes, written
//! once per transaction sent. The general base58 encoder carries every input byte through
//! every output digit (quadratic in bytes); here the signature is sixteen 32-bit limbs divided
//! by 58^5 per pass, five digits at a time, which costs a tenth. The text is the same as any
//! base58 encoder's (Bitcoin alphabet, a leading `1` per leading zero byte).
//! [`signature_from_text`] reads one back the same way (five digits a pass into the limbs),
//! for the signatures of a `blockNotification`.

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

/// Each byte's digit value, or `NOT_A_DIGIT`.
const DIGIT_VALUES: [u8; 256] = {
    let mut values = [NOT_A_DIGIT; 256];
    let mut digit = 0;
    while digit < ALPHABET.len() {
        values[ALPHABET[digit] as usize] = digit as u8;
        digit += 1;
    }
    values
};

/// A byte outside the alphabet in [`DIGIT_VALUES`].
const NOT_A_DIGIT: u8 = 0xff;

/// A digit's value, or `None` for a character not in the alphabet.
fn digit_value(character: u8) -> Option<u8> {
    Some(DIGIT_VALUES[usize::from(character)]).filter(|&value| value != NOT_A_DIGIT)
}

/// The 64-byte signature `text` writes in base58, or `None` when it is not one (a character
/// outside the alphabet, or a value that is not exactly 64 bytes).
pub(crate) fn signature_from_text(text: &str) -> Option<[u8; 64]> {
    let text = text.as_bytes();
    if text.len() > MAX_DIGITS {
        return None;
    }
    let zeros = text.iter().take_while(|&&c| c == b'1').count();
    // Big-endian limbs; each pass multiplies by 58^n and adds n digits.
    let mut limbs = [0u32; LIMBS];
    for chunk in text[zeros..].chunks(5) {
        let mut scale = 1u64;
        let mut add = 0u64;
        for &character in chunk {
            add = add * 58 + u64::from(digit_value(character)?);
            scale *= 58;
        }
        let mut carry = add;
        for limb in limbs.iter_mut().rev() {
            let value = u64::from(*limb) * scale + carry;
            *limb = value as u32;
            carry = value >> 32;
        }
        if carry != 0 {
            return None;
        }
    }
    let mut bytes = [0u8; 64];
    for (out, limb) in bytes.chunks_exact_mut(4).zip(&limbs) {
        out.copy_from_slice(&limb.to_be_bytes());
    }
    // The value's own bytes and the leading `1`s must make exactly 64 bytes.
    let value_bytes = 64 - bytes.iter().take_while(|&&byte| byte == 0).count();
    (zeros + value_bytes == 64).then_some(bytes)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Signatures to test with: `extra`, all zeros, all ones, some with 1 to 63 leading zero
    /// bytes and 2,000 random ones (drawn from `seed`).
    fn signatures(seed: u64, extra: &[[u8; 64]]) -> Vec<[u8; 64]> {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut cases: Vec<[u8; 64]> = vec![[0; 64], [0xff; 64]];
        cases.extend_from_slice(extra);
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
        cases
    }

    #[test]
    fn a_signature_in_base58_reads_as_any_base58_encoder_writes_it() {
        let mut one = [0u8; 64];
        one[63] = 1;
        for signature in signatures(58, &[one]) {
            assert_eq!(signature_text(&signature), bs58::encode(signature).into_string(), "{signature:?}");
        }
    }

    #[test]
    fn base58_text_reads_back_as_the_signature_and_anything_else_is_not_one() {
        for signature in signatures(85, &[]) {
            let text = bs58::encode(signature).into_string();
            assert_eq!(signature_from_text(&text), Some(signature), "{text}");
        }
        // Too short, too long, a 65-byte value, characters outside the alphabet.
        assert_eq!(signature_from_text(""), None);
        assert_eq!(signature_from_text("3yZe7d"), None);
        assert_eq!(signature_from_text(&bs58::encode([0xffu8; 65]).into_string()), None);
        assert_eq!(signature_from_text(&bs58::encode([7u8; 63]).into_string()), None);
        assert_eq!(signature_from_text(&"1".repeat(65)), None);
        let mut bad = bs58::encode([9u8; 64]).into_string();
        bad.replace_range(3..4, "0");
        assert_eq!(signature_from_text(&bad), None);
        assert_eq!(signature_from_text(&"z".repeat(200)), None);
    }
}
