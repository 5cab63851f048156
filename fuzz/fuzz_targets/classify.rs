//! The response classifier on arbitrary bytes: it never panics, and the full check only ever
//! adds a JSON validation to the scan.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcbench::jsonrpc::{classify, scan_response, CheckMode, InvalidKind, Outcome};

fuzz_target!(|data: &[u8]| {
    // The first byte picks the id that was sent; the rest is the body.
    let (sent, body) = match data.split_first() {
        Some((first, rest)) => (u64::from(*first), rest),
        None => (0, data),
    };
    let scanned = classify(200, body, sent, CheckMode::Scan);
    let full = classify(200, body, sent, CheckMode::Full);
    let _ = scan_response(body);
    if full != Outcome::Invalid(InvalidKind::NotJson) {
        assert_eq!(scanned, full, "a body that passes the full check must scan the same");
    }
    assert_eq!(classify(503, body, sent, CheckMode::Scan), Outcome::HttpStatus(503));
});
