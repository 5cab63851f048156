//! The mock nodes' request handling on arbitrary HTTP bodies: it never panics, every answer is
//! JSON, and a body that is not JSON gets -32700.
#![no_main]

use std::sync::OnceLock;

use libfuzzer_sys::fuzz_target;
use rpcbench::mock::{Chain, Dispatcher, MockOptions};

fn nodes() -> &'static [Dispatcher; 3] {
    static NODES: OnceLock<[Dispatcher; 3]> = OnceLock::new();
    NODES.get_or_init(|| {
        [Chain::Static, Chain::Solana, Chain::Ethereum]
            .map(|chain| Dispatcher::new(&MockOptions::new(chain)).expect("default options are valid"))
    })
}

fuzz_target!(|data: &[u8]| {
    let is_json = std::str::from_utf8(data)
        .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    for node in nodes() {
        let answer = node.answer(data);
        let Some(answer) = answer else {
            assert!(is_json, "only notifications go unanswered");
            continue;
        };
        let answer_is_json = std::str::from_utf8(&answer)
            .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
        assert!(answer_is_json, "every answer is JSON");
        if !is_json {
            let value: serde_json::Value =
                serde_json::from_slice(&answer).expect("a parse error is plain JSON");
            assert_eq!(value["error"]["code"], -32700);
        }
    }
});
