//! The static baseline node: every call, whatever its method, answers `"0x1"`.
//!
//! This is the performance baseline of the mock nodes, so it does no work beyond what the
//! JSON-RPC envelope needs: the server finds the id with a borrowed `RawValue` parse and
//! this module only appends the constant result to the response buffer.

/// The constant result, as JSON.
pub(crate) const RESULT: &[u8] = b"\"0x1\"";

/// Appends the result of any call.
pub(crate) fn answer(out: &mut Vec<u8>) {
    out.extend_from_slice(RESULT);
}

#[cfg(test)]
mod tests {
    #[test]
    fn result_is_a_json_string() {
        let mut out = Vec::new();
        super::answer(&mut out);
        let value: serde_json::Value = serde_json::from_slice(&out).unwrap();
        assert_eq!(value, "0x1");
    }
}
