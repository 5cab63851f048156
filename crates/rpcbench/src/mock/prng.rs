//! Hash-based pseudo-randomness and encodings shared by the synthetic ledgers: every value
//! is a pure function of (seed, stream, index), so any block can be generated on demand.

/// The splitmix64 finalizer of `seed` and `index`: a well-mixed 64-bit value.
pub(crate) fn mix(seed: u64, index: u64) -> u64 {
    let mut z = seed ^ index.wrapping_mul(0x9e37_79b9_7f4a_7c15).rotate_left(17);
    z = z.wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

/// A value from the stream `stream` (a label), at position `(a, b)`.
pub(crate) fn draw(seed: u64, stream: u64, a: u64, b: u64) -> u64 {
    mix(mix(mix(seed, stream), a), b)
}

/// `N` pseudo-random bytes for the stream position `(a, b)`.
pub(crate) fn bytes<const N: usize>(seed: u64, stream: u64, a: u64, b: u64) -> [u8; N] {
    let base = draw(seed, stream, a, b);
    let mut out = [0u8; N];
    for (i, chunk) in out.chunks_mut(8).enumerate() {
        let word = mix(base, i as u64).to_le_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
    out
}

/// A uniform value in `low..high` (`high > low`).
pub(crate) fn range(value: u64, low: u64, high: u64) -> u64 {
    low + value % (high - low)
}

/// `0x`-prefixed even-length lowercase hex of `data`.
pub(crate) fn hex_data(data: &[u8]) -> String {
    crate::tx::keys::hex_0x(data)
}

/// `0x`-prefixed minimal hex of a quantity (`0x0` for zero).
pub(crate) fn hex_quantity(value: u128) -> String {
    format!("{value:#x}")
}

/// Decodes `0x`-prefixed hex data of exactly `N` bytes.
pub(crate) fn parse_hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?;
    if digits.len() != N * 2 {
        return None;
    }
    let mut out = [0u8; N];
    for (i, byte) in out.iter_mut().enumerate() {
        *byte = u8::from_str_radix(digits.get(i * 2..i * 2 + 2)?, 16).ok()?;
    }
    Some(out)
}

/// Decodes `0x`-prefixed hex data of any even length.
pub(crate) fn parse_hex_vec(text: &str) -> Option<Vec<u8>> {
    let digits = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X"))?;
    if digits.len() % 2 != 0 || !digits.is_ascii() {
        return None;
    }
    digits.as_bytes().chunks_exact(2).map(|pair| Some(nibble(pair[0])? << 4 | nibble(pair[1])?)).collect()
}

/// The value of one hex digit (either case).
fn nibble(digit: u8) -> Option<u8> {
    match digit {
        b'0'..=b'9' => Some(digit - b'0'),
        b'a'..=b'f' => Some(digit - b'a' + 10),
        b'A'..=b'F' => Some(digit - b'A' + 10),
        _ => None,
    }
}

pub(crate) use crate::util::units::parse_hex_quantity;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mixing_is_deterministic_and_spread() {
        assert_eq!(mix(1, 2), mix(1, 2));
        assert_ne!(mix(1, 2), mix(2, 1));
        assert_ne!(draw(0, 1, 2, 3), draw(0, 1, 3, 2));
        let a: [u8; 32] = bytes(5, 6, 7, 8);
        let b: [u8; 32] = bytes(5, 6, 7, 8);
        let c: [u8; 32] = bytes(5, 6, 7, 9);
        assert_eq!(a, b);
        assert_ne!(a, c);
        let ones: u32 = (0..1000).map(|i| mix(9, i).count_ones()).sum();
        assert!((30_000..34_000).contains(&ones), "{ones}");
    }

    #[test]
    fn hex_encodings() {
        assert_eq!(hex_quantity(0), "0x0");
        assert_eq!(hex_quantity(255), "0xff");
        assert_eq!(hex_quantity(4096), "0x1000");
        assert_eq!(hex_data(&[]), "0x");
        assert_eq!(hex_data(&[0, 1, 0xab]), "0x0001ab");
        assert_eq!(parse_hex_bytes::<3>("0x0001ab"), Some([0, 1, 0xab]));
        assert_eq!(parse_hex_bytes::<3>("0x0001a"), None);
        assert_eq!(parse_hex_bytes::<1>("0xzz"), None);
        assert_eq!(parse_hex_bytes::<1>("ff"), None);
        assert_eq!(parse_hex_vec("0x"), Some(vec![]));
        assert_eq!(parse_hex_vec("0xabc"), None);
        assert_eq!(parse_hex_vec("0xAbcD09"), Some(vec![0xab, 0xcd, 0x09]));
        assert_eq!(parse_hex_vec("0x+f"), None);
        assert_eq!(parse_hex_vec("0xg0"), None);
        assert_eq!(parse_hex_vec("0xé1"), None);
        assert_eq!(parse_hex_quantity("0x10"), Some(16));
        assert_eq!(parse_hex_quantity("0x"), None);
        assert_eq!(parse_hex_quantity("16"), None);
        assert_eq!(parse_hex_quantity("0x10000000000000000"), None);
    }

    #[test]
    fn base58_round_trips() {
        let key: [u8; 32] = bytes(1, 2, 3, 4);
        let text = bs58::encode(key).into_string();
        assert!((32..=44).contains(&text.len()), "{text}");
        assert_eq!(bs58::decode(&text).into_vec().unwrap(), key.to_vec());
        assert_eq!(bs58::encode([0u8; 32]).into_string(), "11111111111111111111111111111111");
    }
}
