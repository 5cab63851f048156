//! The mock's fault knobs: latency (blocking and async), error rates, rate limits, stalls.

use super::*;

// ---------------------------------------------------------------- fault knobs

#[test]
fn latency_delays_every_answer() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.latency =
        Some(Latency { base: Duration::from_millis(150), jitter: Duration::from_millis(20) });
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    for _ in 0..3 {
        let sent = Instant::now();
        let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
        assert_eq!(reply.json()["result"], "0x1");
        assert!(sent.elapsed() >= Duration::from_millis(130), "{:?}", sent.elapsed());
    }
}

#[test]
fn blocking_latency_serializes_requests_on_one_thread() {
    let mut options = MockOptions::new(Chain::Static);
    options.threads = 1;
    options.faults.blocking_latency = Some(Duration::from_millis(150));
    let server = start(options);
    let addr = server.local_addr();
    // Connect everything first so the requests really are concurrent.
    let clients: Vec<Client> = (0..4).map(|_| Client::connect(addr)).collect();
    let sent = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            std::thread::spawn(move || client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().json()["result"], "0x1");
    }
    assert!(sent.elapsed() >= Duration::from_millis(600), "4 x 150ms took only {:?}", sent.elapsed());
}

#[test]
fn async_latency_does_not_serialize_requests() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.latency = Some(Latency::fixed(Duration::from_millis(500)));
    let server = start(options);
    let addr = server.local_addr();
    let clients: Vec<Client> = (0..5).map(|_| Client::connect(addr)).collect();
    let sent = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            std::thread::spawn(move || client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#))
        })
        .collect();
    for handle in handles {
        assert_eq!(handle.join().unwrap().status, 200);
    }
    let elapsed = sent.elapsed();
    assert!(elapsed >= Duration::from_millis(500), "{elapsed:?}");
    // Serialized, 5 x 500ms would take 2.5 s.
    assert!(elapsed < Duration::from_millis(2000), "sleeps should overlap, took {elapsed:?}");
}

#[test]
fn error_rate_one_fails_everything() {
    let mut options = MockOptions::new(Chain::Solana);
    options.faults.error_rate = 1.0;
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    for id in 0..50 {
        let body = format!(r#"{{"jsonrpc":"2.0","id":{id},"method":"getSlot"}}"#);
        let reply = client.post(body.as_bytes());
        assert_eq!(reply.status, 200);
        let response = reply.json();
        assert_eq!(response["id"], id);
        assert_eq!(response["error"]["code"], -32603);
        assert_eq!(response["error"]["message"], "Internal error (injected)");
    }
}

#[test]
fn error_rate_half_fails_about_half() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.error_rate = 0.5;
    options.seed = 99;
    let server = start(options);
    let mut client = Client::connect(server.local_addr());
    let mut errors = 0;
    for _ in 0..400 {
        let response = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#).json();
        if response.get("error").is_some() {
            assert_eq!(response["error"]["code"], -32603);
            errors += 1;
        } else {
            assert_eq!(response["result"], "0x1");
        }
    }
    assert!((120..=280).contains(&errors), "{errors} errors out of 400");
}

#[test]
fn rate_limit_rejects_the_excess_with_429() {
    let mut options = MockOptions::new(Chain::Static);
    options.faults.rate_limit = Some(20.0);
    let server = start(options);
    let addr = server.local_addr();
    let clients: Vec<Client> = (0..10).map(|_| Client::connect(addr)).collect();
    let sent = Instant::now();
    let handles: Vec<_> = clients
        .into_iter()
        .map(|mut client| {
            std::thread::spawn(move || {
                (0..10).map(|_| client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#)).collect::<Vec<_>>()
            })
        })
        .collect();
    let replies: Vec<Reply> = handles.into_iter().flat_map(|h| h.join().unwrap()).collect();
    let elapsed = sent.elapsed();
    let ok = replies.iter().filter(|r| r.status == 200).count();
    let limited: Vec<&Reply> = replies.iter().filter(|r| r.status == 429).collect();
    assert_eq!(ok + limited.len(), 100);
    assert!(ok >= 1, "the burst goes through");
    let allowed = 2.0 + 20.0 * elapsed.as_secs_f64() + 1.0;
    assert!(ok as f64 <= allowed, "{ok} answered in {elapsed:?}, at most {allowed} allowed");
    assert!(!limited.is_empty());
    let response = limited[0].json();
    assert_eq!(response["error"]["code"], -32005);
    assert_eq!(response["error"]["message"], "rate limit exceeded");
    assert_eq!(response["error"]["data"]["allowed_rps"], 20.0);
    // Tokens come back with time.
    std::thread::sleep(Duration::from_millis(200));
    assert_eq!(post(addr, r#"{"jsonrpc":"2.0","id":1,"method":"a"}"#).status, 200);
}

#[test]
fn stall_holds_requests_until_the_pause_ends() {
    let before_start = Instant::now();
    let mut options = MockOptions::new(Chain::Static);
    // Paused from 0.9 s to 1.5 s after start, then 2.4 s to 3.0 s, ...
    options.faults.stall =
        Some(Stall { pause: Duration::from_millis(600), every: Duration::from_millis(1500) });
    let server = start(options);
    let after_start = Instant::now();
    let mut client = Client::connect(server.local_addr());
    let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
    assert_eq!(reply.status, 200);
    // The server started between `before_start` and `after_start`, so 1 s after
    // `after_start` is inside the first pause, which ends 1.5 s after start at the earliest.
    std::thread::sleep((after_start + Duration::from_millis(1000)).saturating_duration_since(Instant::now()));
    let sent = Instant::now();
    assert!(
        sent < before_start + Duration::from_millis(1400),
        "the machine is too slow for this test: the request missed the pause"
    );
    let reply = client.post(br#"{"jsonrpc":"2.0","id":1,"method":"a"}"#);
    assert_eq!(reply.json()["result"], "0x1");
    assert!(
        before_start.elapsed() >= Duration::from_millis(1500),
        "answered during the pause, after {:?}",
        sent.elapsed()
    );
    assert!(sent.elapsed() >= Duration::from_millis(100), "{:?}", sent.elapsed());
}

#[test]
fn faults_parse_from_text() {
    assert_eq!("5ms:2ms".parse::<Latency>().unwrap().jitter, Duration::from_millis(2));
    assert_eq!("2s/10s".parse::<Stall>().unwrap().every, Duration::from_secs(10));
    assert_eq!(rpcbench::mock::parse_rate_limit("50/s").unwrap(), 50.0);
    let faults = Faults { error_rate: 2.0, ..Faults::default() };
    let mut options = MockOptions::new(Chain::Static);
    options.faults = faults;
    assert!(MockServer::start(options).is_err());
}
