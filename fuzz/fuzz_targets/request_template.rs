//! Request templates from arbitrary `--body` text: building one never panics, and every body
//! a template builds is one JSON object with rpcbench's id and the method.
#![no_main]

use libfuzzer_sys::fuzz_target;
use rpcbench::jsonrpc::RequestTemplate;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(template) = RequestTemplate::from_body(text) else {
        return;
    };
    for id in [0, 1, u64::MAX] {
        let body = template.body(id);
        assert_eq!(body.len(), template.body_len(id));
        let value: serde_json::Value = serde_json::from_str(&body).expect("a built body is JSON");
        assert_eq!(value["id"], serde_json::json!(id));
        assert_eq!(value["jsonrpc"], "2.0");
        assert_eq!(value["method"].as_str(), Some(template.method()));
    }
});
