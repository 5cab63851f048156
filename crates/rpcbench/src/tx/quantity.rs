//! Ethereum's JSON-RPC hex quantities (`"0x1a"`: a chain id, a nonce, a block number, a fee, a
//! balance) read into a `u128`, one parser for the library and the CLI alike. A quantity is
//! `0x` and 1 to 64 hex digits (up to 256 bits, leading zeros allowed); one wider than 128 bits
//! saturates at `u128::MAX` (a dev chain's prefunded account holds close to 2^256 wei; every
//! amount a run compares one with is a `u128`, so a saturated one compares right, and a caller
//! that wants a `u64` refuses it as too large). Anything else is a [`QuantityError`].

use serde_json::Value;

/// The most hex digits a quantity has (256 bits).
const MOST_DIGITS: usize = 64;

/// Why a JSON value is not a hex quantity.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum QuantityError {
    /// Not a JSON string.
    NotAString,
    /// A string without the `0x` prefix.
    NoPrefix,
    /// `0x` and no digit.
    NoDigits,
    /// A character after `0x` that is not a hex digit.
    NotHex,
    /// More than 64 hex digits (wider than 256 bits).
    TooWide(usize),
}

impl std::fmt::Display for QuantityError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            QuantityError::NotAString => write!(f, "a hex quantity is a string"),
            QuantityError::NoPrefix => write!(f, "a hex quantity starts with 0x"),
            QuantityError::NoDigits => write!(f, "no digit after 0x"),
            QuantityError::NotHex => write!(f, "not a hex digit after 0x"),
            QuantityError::TooWide(digits) => {
                write!(f, "{digits} hex digits: wider than {MOST_DIGITS} digits (256 bits)")
            }
        }
    }
}

impl std::error::Error for QuantityError {}

/// `value` as a hex quantity of up to 256 bits, saturated at `u128::MAX`.
pub fn hex_quantity(value: &Value) -> Result<u128, QuantityError> {
    let text = value.as_str().ok_or(QuantityError::NotAString)?;
    let digits = text.strip_prefix("0x").ok_or(QuantityError::NoPrefix)?;
    if digits.is_empty() {
        return Err(QuantityError::NoDigits);
    }
    if !digits.bytes().all(|b| b.is_ascii_hexdigit()) {
        return Err(QuantityError::NotHex);
    }
    if digits.len() > MOST_DIGITS {
        return Err(QuantityError::TooWide(digits.len()));
    }
    let significant = digits.trim_start_matches('0');
    if significant.len() > 32 {
        return Ok(u128::MAX);
    }
    // Hex digits only, at most 32 of them: fits.
    Ok(u128::from_str_radix(if significant.is_empty() { "0" } else { significant }, 16).unwrap_or(u128::MAX))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_quantity_wider_than_128_bits_is_read_saturated_not_refused() {
        // geth --dev's prefunded account: 2^256 - 9 wei.
        let geth_dev = json!(format!("0x{}7", "f".repeat(63)));
        assert_eq!(hex_quantity(&geth_dev), Ok(u128::MAX));
        assert_eq!(hex_quantity(&json!(format!("0x1{}", "0".repeat(32)))), Ok(u128::MAX), "2^128");
        assert_eq!(hex_quantity(&json!(format!("0x{}", "f".repeat(32)))), Ok(u128::MAX), "2^128 - 1");
        assert_eq!(hex_quantity(&json!("0x0")), Ok(0));
        assert_eq!(hex_quantity(&json!("0x1a")), Ok(26));
        assert_eq!(hex_quantity(&json!("0xABC")), Ok(0xabc));
        assert_eq!(
            hex_quantity(&json!("0x00000000000000000000000000000000000000000000000000000000000001ff")),
            Ok(511)
        );
    }

    #[test]
    fn a_malformed_quantity_is_an_error_naming_what_is_wrong() {
        assert_eq!(hex_quantity(&json!(format!("0x1{}", "0".repeat(64)))), Err(QuantityError::TooWide(65)));
        assert_eq!(hex_quantity(&json!("0x")), Err(QuantityError::NoDigits));
        assert_eq!(hex_quantity(&json!("0xzz")), Err(QuantityError::NotHex));
        // A sign is not a digit (a bare integer parse would take "+1a").
        assert_eq!(hex_quantity(&json!("0x+1a")), Err(QuantityError::NotHex));
        assert_eq!(hex_quantity(&json!("1a")), Err(QuantityError::NoPrefix));
        assert_eq!(hex_quantity(&json!(12)), Err(QuantityError::NotAString));
        assert_eq!(hex_quantity(&Value::Null), Err(QuantityError::NotAString));
        let text = QuantityError::TooWide(65).to_string();
        assert!(text.contains("65") && text.contains("256 bits"), "{text}");
    }
}
