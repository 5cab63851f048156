//! JSON-RPC batches and plain HTTP calls through the whole engine, against servers on
//! 127.0.0.1 that answer batches badly on purpose (reordered, an item dropped, an error, a
//! single error object or geth's one-item array for a batch over their limit) and REST
//! endpoints with 404s.

use rpcbench::engine::config::Field;
use rpcbench::engine::Run;
use rpcbench::outcome::InvalidKind;
use rpcbench::report::{render_text, RunReport};
use rpcbench::workload::{Call, Generator, HttpBody, HttpRequestSpec, TemplatePiece, Workload};
use rpcbench::HttpMethod;
use serde_json::{json, Value};

use crate::util::{closed_loop, json_200, requests, status, Reply, TestServer};

/// Answers a batch of up to `limit` calls in reverse order, without its second item and with
/// its third as a JSON-RPC error; a larger batch gets a single error object (erigon, proxies).
fn batch_server(limit: usize) -> TestServer {
    TestServer::start(move |request| {
        let Value::Array(items) = &request.body else {
            return json_200(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"not a batch"}}"#,
            );
        };
        if items.len() > limit {
            return json_200(
                r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"batch too large"}}"#,
            );
        }
        let mut answers: Vec<Value> = items
            .iter()
            .enumerate()
            .filter(|(position, _)| *position != 1)
            .map(|(position, item)| match position {
                2 => json!({"jsonrpc": "2.0", "id": item["id"], "error": {"code": -32005, "message": "behind"}}),
                _ => json!({"jsonrpc": "2.0", "id": item["id"], "result": 1}),
            })
            .collect();
        answers.reverse();
        json_200(&Value::Array(answers).to_string())
    })
}

#[test]
fn batch_items_get_exact_per_call_counts_in_any_order() {
    let server = batch_server(4);
    let mut config = closed_loop(&server.url(), 2, requests(50));
    config.batch = 4;
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    // 50 HTTP requests of 4 calls: per batch one ok at each end, one missing, one error.
    assert_eq!(record.exchanges, 50);
    assert_eq!(counts.total(), 200);
    assert_eq!(counts.ok, 100);
    assert_eq!(counts.invalid.get(&InvalidKind::Missing), Some(&50));
    assert_eq!(counts.rpc_errors[&-32005].count, 50);
    assert_eq!(counts.rpc_errors[&-32005].first_message.as_deref(), Some("behind"));
    assert_eq!(server.requests.load(std::sync::atomic::Ordering::SeqCst), 50);
    // Every call of a batch has the batch's latency.
    assert_eq!(record.totals.latency.len(), 200);
    let report = RunReport::new(&config, &record);
    let batch = report.batch.as_ref().expect("a batched run reports its batches");
    assert_eq!((batch.calls_per_request, batch.http_requests), (4, 50));
    let text = render_text(&report);
    assert!(text.contains("batches of 4 calls: 50 HTTP requests"), "{text}");
    assert!(text.contains("invalid response: missing - 50"), "{text}");
}

#[test]
fn a_batch_over_the_servers_limit_counts_every_call_as_its_error() {
    let server = batch_server(4);
    let mut config = closed_loop(&server.url(), 1, requests(10));
    config.batch = 5;
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.total(), 50);
    assert_eq!(counts.rpc_errors[&-32600].count, 50);
    assert_eq!(counts.rpc_errors[&-32600].first_message.as_deref(), Some("batch too large"));
}

#[test]
fn a_batch_over_the_mock_geths_limit_counts_every_call_as_the_refusal_not_missing() {
    let mut options = rpcbench::mock::MockOptions::new(rpcbench::mock::Chain::Ethereum);
    options.max_batch_len = 4;
    let server = rpcbench::mock::MockServer::start(options).unwrap();
    let url = format!("http://{}", server.local_addr());
    let mut config = closed_loop(&url, 1, requests(10));
    config.batch = 5;
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.total(), 50);
    assert_eq!(counts.rpc_errors[&-32600].count, 50, "{counts:?}");
    assert_eq!(counts.invalid.get(&InvalidKind::Missing), None);
    assert_eq!(counts.rpc_errors[&-32600].first_message.as_deref(), Some("batch too large"));
}

#[test]
fn a_batch_answered_with_an_http_error_counts_every_call_by_status() {
    let server = TestServer::start(|_| status(503, "busy"));
    let mut config = closed_loop(&server.url(), 1, requests(3));
    config.batch = 7;
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.http_errors.get(&503), Some(&21));
    assert_eq!(record.totals.counts.total(), 21);
}

/// A REST server: `/block/N` exists for N <= 10, anything else is a 404.
fn rest_server() -> TestServer {
    TestServer::start(|request| {
        let path = request.head.split_whitespace().nth(1).unwrap_or("").to_string();
        match path.strip_prefix("/block/").and_then(|n| n.parse::<u64>().ok()) {
            Some(n) if n <= 10 => json_200(&json!({ "number": n }).to_string()),
            Some(_) => status(404, "{\"error\":\"unknown block\"}"),
            None => status(400, "bad path"),
        }
    })
}

#[test]
fn rest_calls_are_counted_by_status() {
    let server = rest_server();
    let spec = HttpRequestSpec {
        method: HttpMethod::Get,
        path: vec![
            TemplatePiece::Text("/block/".into()),
            TemplatePiece::Generated(Generator::IntRange { low: 1, high: 20 }),
        ],
        headers: vec![("Accept".into(), "application/json".into())],
        body: HttpBody::Empty,
        expect_json: true,
    };
    let call = Call::http(None, &spec, 1).unwrap();
    assert_eq!(call.name(), "GET /block/{range}");
    let mut config = closed_loop(&server.url(), 2, requests(400));
    config.workload = Workload::new(vec![call]).unwrap();
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    let not_found = counts.http_errors.get(&404).copied().unwrap_or(0);
    assert_eq!(counts.ok + not_found, 400, "{counts:?}");
    // Blocks 1..=20 drawn uniformly: about half are unknown.
    assert!((120..=280).contains(&not_found), "{not_found} of 400 were 404");
    assert_eq!(record.calls[0].name, "GET /block/{range}");
    let text = render_text(&RunReport::new(&config, &record));
    assert!(text.contains("http 404"), "{text}");
}

#[test]
fn a_rest_call_expecting_json_counts_other_bodies_as_not_json() {
    let server =
        TestServer::start(|_| Reply::Raw(b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\n\r\n<html>".to_vec()));
    let spec = HttpRequestSpec {
        method: HttpMethod::Get,
        path: vec![TemplatePiece::Text("/gasprice".into())],
        headers: Vec::new(),
        body: HttpBody::Empty,
        expect_json: true,
    };
    let mut config = closed_loop(&server.url(), 1, requests(5));
    config.workload = Workload::new(vec![Call::http(None, &spec, 1).unwrap()]).unwrap();
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.invalid.get(&InvalidKind::NotJson), Some(&5));
}

#[test]
fn batches_refuse_http_calls_and_fixed_ids_naming_the_flag() {
    let server = rest_server();
    let mut config = closed_loop(&server.url(), 1, requests(1));
    for (batch, fixed_id) in [(0, None), (10_001, None), (2, Some(1))] {
        config.batch = batch;
        config.fixed_id = fixed_id;
        let err = config.validate().unwrap_err();
        assert_eq!(err.field, Field::Batch, "{err}");
    }
    let spec = HttpRequestSpec {
        method: HttpMethod::Get,
        path: vec![TemplatePiece::Text("/".into())],
        headers: Vec::new(),
        body: HttpBody::Empty,
        expect_json: false,
    };
    config.fixed_id = None;
    config.batch = 2;
    config.workload = Workload::new(vec![Call::http(None, &spec, 1).unwrap()]).unwrap();
    assert_eq!(config.validate().unwrap_err().field, Field::Batch);
}
