//! Plain HTTP calls (REST endpoints, vegeta targets): a 2xx is a success, any other status
//! counts by status, and a call that expects JSON counts a 2xx body that is not JSON as
//! `not_json`.

use crate::jsonrpc;
use crate::outcome::{InvalidKind, Outcome};

/// The outcome of an HTTP call's reply. `expect_json`: the body of a 2xx must be JSON (one
/// complete JSON text, checked fully: there is no JSON-RPC envelope to scan).
pub(crate) fn classify(status: u16, body: &[u8], expect_json: bool) -> Outcome {
    if !(200..300).contains(&status) {
        return Outcome::HttpStatus(status);
    }
    if expect_json && !jsonrpc::is_valid_json(body) {
        return Outcome::Invalid(InvalidKind::NotJson);
    }
    Outcome::Ok
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn http_calls_are_judged_by_status_and_expected_json() {
        let cases: [(u16, &[u8], bool, Outcome); 6] = [
            (200, b"{\"number\":1}", true, Outcome::Ok),
            (204, b"", false, Outcome::Ok),
            (200, b"<html>", false, Outcome::Ok),
            (200, b"<html>", true, Outcome::Invalid(InvalidKind::NotJson)),
            (404, b"{\"error\":\"unknown block\"}", true, Outcome::HttpStatus(404)),
            (503, b"", false, Outcome::HttpStatus(503)),
        ];
        for (status, body, expect_json, outcome) in cases {
            assert_eq!(classify(status, body, expect_json), outcome, "{status}");
        }
    }
}
