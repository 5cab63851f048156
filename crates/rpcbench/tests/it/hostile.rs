//! The engine against hostile servers: resets mid-body, truncated chunked bodies, 100 MB
//! bodies, slow loris, reconnect churn, a server killed and restarted mid-run, HTTP/1.0, and
//! invalid UTF-8. Each run is bounded in count and time, and where the outcome of every request
//! is determined by the server, the count per outcome class is exact.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use rpcbench::engine::peak_rss_bytes;
use rpcbench::engine::Run;
use rpcbench::outcome::InvalidKind;
use rpcbench::record::RunRecord;
use rpcbench::CheckMode;

use crate::util::{closed_loop, json_200, requests, seconds, Reply, TestServer};

fn ok_body(id: u64) -> String {
    format!(r#"{{"jsonrpc":"2.0","id":{id},"result":1}}"#)
}

fn run(config: rpcbench::engine::config::RunConfig) -> (RunRecord, Duration) {
    let started = Instant::now();
    let record = Run::new(config).unwrap().execute().unwrap();
    (record, started.elapsed())
}

/// Every outcome is one of `ok` and `closed`, in exactly these numbers.
fn assert_ok_and_closed(record: &RunRecord, ok: u64, closed: u64) {
    let counts = &record.totals.counts;
    assert_eq!(counts.ok, ok, "{counts:?}");
    assert_eq!(counts.closed, closed, "{counts:?}");
    assert_eq!(counts.total(), ok + closed, "no other class: {counts:?}");
}

#[test]
fn a_reset_mid_body_or_before_the_answer_counts_as_closed() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        match request.index % 3 {
            0 => json_200(&body),
            1 => Reply::Reset(
                format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}", body.len() + 50, body)
                    .into_bytes(),
            ),
            _ => Reply::Reset(Vec::new()),
        }
    });
    let (record, took) = run(closed_loop(&server.url(), 3, requests(90)));
    assert_ok_and_closed(&record, 30, 60);
    assert_eq!(server.requests.load(Ordering::SeqCst), 90, "every request reached the server once");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn truncated_chunked_bodies_count_as_closed() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        let head = "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n";
        let chunk = format!("{:x}\r\n{body}\r\n", body.len());
        let truncated = match request.index % 5 {
            0 => return Reply::Raw(format!("{head}{chunk}0\r\n\r\n").into_bytes()),
            // In the middle of a chunk's data.
            1 => format!("{head}{:x}\r\n{}", body.len(), &body[..body.len() / 2]),
            // A whole chunk, but no last chunk.
            2 => format!("{head}{chunk}"),
            // In the middle of a chunk-size line.
            3 => format!("{head}{:x}", body.len()),
            // The last chunk without the empty line that ends the message.
            _ => format!("{head}{chunk}0\r\n"),
        };
        Reply::RawThenClose(truncated.into_bytes())
    });
    let (record, took) = run(closed_loop(&server.url(), 2, requests(100)));
    assert_ok_and_closed(&record, 20, 80);
    assert_eq!(server.requests.load(Ordering::SeqCst), 100);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_chunk_size_that_overflows_is_too_large_not_a_panic() {
    // 16 hex digits: u64::MAX. Adding it to the body read so far used to overflow.
    let server = TestServer::start(|request| {
        let raw = if request.index % 2 == 0 {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nffffffffffffffff\r\nabc"
        } else {
            "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\n{\r\nfffffffffffffffff\r\n"
        };
        Reply::RawThenClose(raw.as_bytes().to_vec())
    });
    let mut config = closed_loop(&server.url(), 1, requests(10));
    config.max_body = u64::MAX;
    let (record, _) = run(config);
    let counts = &record.totals.counts;
    assert_eq!(counts.invalid.get(&InvalidKind::BodyTooLarge), Some(&5), "{counts:?}");
    assert_eq!(counts.invalid.get(&InvalidKind::BadHttp), Some(&5), "17 hex digits: {counts:?}");
    assert_eq!(counts.total(), 10);
}

const HUNDRED_MB: usize = 100 * 1024 * 1024;
const PIECE: usize = 64 * 1024;

/// A 100 MB response of one framing, streamed in 64 KiB pieces.
fn huge_reply(framing: usize) -> Reply {
    let piece = vec![b' '; PIECE];
    let count = HUNDRED_MB / PIECE;
    let (head, chunked) = match framing {
        0 => (format!("HTTP/1.1 200 OK\r\nContent-Length: {HUNDRED_MB}\r\n\r\n"), false),
        1 => ("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n".to_string(), true),
        _ => ("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n".to_string(), false),
    };
    Reply::Stream { head: head.into_bytes(), piece, count, chunked }
}

#[test]
fn a_100_mb_body_is_too_large_and_never_buffered() {
    let peak_before = peak_rss_bytes();
    for (framing, name) in ["content-length", "chunked", "close-delimited"].into_iter().enumerate() {
        let server = TestServer::start(move |_| huge_reply(framing));
        let mut config = closed_loop(&server.url(), 2, requests(6));
        config.max_body = 256 * 1024;
        let (record, took) = run(config);
        let counts = &record.totals.counts;
        assert_eq!(counts.invalid.get(&InvalidKind::BodyTooLarge), Some(&6), "{name}: {counts:?}");
        assert_eq!(counts.total(), 6, "{name}: {counts:?}");
        assert_eq!(server.requests.load(Ordering::SeqCst), 6, "{name}");
        assert!(took < Duration::from_secs(3), "{name}: the body was not read to its end: {took:?}");
        server.stop();
    }
    if let (Some(before), Some(after)) = (peak_before, peak_rss_bytes()) {
        let grown = after.saturating_sub(before);
        assert!(grown < 40 * 1024 * 1024, "the process grew by {grown} bytes at its peak");
    }
}

#[test]
fn a_slow_loris_response_is_a_timeout() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        let raw = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        Reply::Trickle(raw.into_bytes(), Duration::from_secs(1))
    });
    let mut config = closed_loop(&server.url(), 2, requests(4));
    config.timeout = Duration::from_millis(300);
    let (record, took) = run(config);
    let counts = &record.totals.counts;
    assert_eq!(counts.timeout, 4, "{counts:?}");
    assert_eq!(counts.total(), 4, "{counts:?}");
    // Every timed-out request waited for the timeout, not for the trickle.
    assert!(record.totals.latency.max() < 1_000_000, "max {} us", record.totals.latency.max());
    assert!(took < Duration::from_secs(3), "{took:?}");
}

#[test]
fn a_server_that_closes_after_every_response_costs_reconnects_not_errors() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        Reply::RawThenClose(
            format!("HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: {}\r\n\r\n{body}", body.len())
                .into_bytes(),
        )
    });
    let (record, took) = run(closed_loop(&server.url(), 4, requests(400)));
    assert_ok_and_closed(&record, 400, 0);
    assert_eq!(server.requests.load(Ordering::SeqCst), 400);
    assert_eq!(server.connections.load(Ordering::SeqCst), 400, "one connection per request");
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn a_server_that_closes_silently_fails_every_reuse_without_retrying() {
    // No `Connection: close`: the response says the connection stays, then the server closes
    // it. The next request on it finds it closed; rpcbench does not retry (a retried request
    // would hide what the server did), so every second request is `closed`.
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        Reply::RawThenClose(
            format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes(),
        )
    });
    let (record, _) = run(closed_loop(&server.url(), 1, requests(100)));
    assert_ok_and_closed(&record, 50, 50);
    assert_eq!(server.requests.load(Ordering::SeqCst), 50);
    assert_eq!(server.connections.load(Ordering::SeqCst), 50);
}

#[test]
fn a_server_killed_and_restarted_mid_run_costs_connect_errors_then_recovers() {
    let handler = |request: &crate::util::Request| json_200(&ok_body(request.id));
    let first = TestServer::start(handler);
    let addr = first.addr;
    let mut config = closed_loop(&first.url(), 2, seconds(2.0));
    config.connect_timeout = Duration::from_millis(200);
    let run = Run::new(config).unwrap();
    let restarter = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(600));
        let seen = first.requests.clone();
        first.stop();
        let seen_by_first = seen.load(Ordering::SeqCst);
        std::thread::sleep(Duration::from_millis(500));
        (seen_by_first, TestServer::start_on(addr, handler))
    });
    let started = Instant::now();
    let record = run.execute().unwrap();
    let took = started.elapsed();
    let (seen_by_first, second) = restarter.join().unwrap();
    let seen_by_second = second.requests.load(Ordering::SeqCst);
    let counts = &record.totals.counts;
    assert_eq!(counts.total(), counts.ok + counts.connect + counts.closed, "no other class: {counts:?}");
    assert!(counts.connect > 0, "the gap counts as connect errors: {counts:?}");
    assert!(counts.closed <= 2, "at most the request in flight on each connection: {counts:?}");
    assert!(seen_by_first > 0 && seen_by_second > 0, "{seen_by_first} then {seen_by_second}");
    // Every answer the servers sent was counted, less those cut off by the kill.
    let answered = seen_by_first + seen_by_second;
    assert!(counts.ok <= answered && counts.ok + counts.closed >= answered, "{counts:?} vs {answered}");
    // After the restart the run is ok again: the last second has no error.
    let last = record.series.iter().rev().find(|point| point.requests > 0).unwrap();
    assert_eq!(last.errors, 0, "{:?}", record.series);
    assert!(took < Duration::from_secs(5), "{took:?}");
}

#[test]
fn http_10_responses_with_and_without_content_length_are_ok() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        match request.index % 3 {
            // Close-delimited: the body ends when the server closes.
            0 => Reply::RawThenClose(
                format!("HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{body}").into_bytes(),
            ),
            // Content-Length but no keep-alive: the client must not reuse the connection.
            1 => Reply::Raw(
                format!("HTTP/1.0 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len()).into_bytes(),
            ),
            // HTTP/1.0 keep-alive: reused.
            _ => Reply::Raw(
                format!(
                    "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: {}\r\n\r\n{body}",
                    body.len()
                )
                .into_bytes(),
            ),
        }
    });
    let (record, _) = run(closed_loop(&server.url(), 1, requests(90)));
    assert_ok_and_closed(&record, 90, 0);
    // New connections for requests 0, 1 and 2, then two per three requests: each keep-alive
    // connection carries the next close-delimited response.
    assert_eq!(server.connections.load(Ordering::SeqCst), 3 + 29 * 2);
}

#[test]
fn invalid_utf8_in_bodies_and_headers() {
    let server = TestServer::start(|request| {
        let id = request.id;
        let with_head = |head: &[u8], body: &[u8]| {
            let mut raw = head.to_vec();
            raw.extend_from_slice(format!("Content-Length: {}\r\n\r\n", body.len()).as_bytes());
            raw.extend_from_slice(body);
            Reply::Raw(raw)
        };
        let ok = ok_body(id).into_bytes();
        let head = b"HTTP/1.1 200 OK\r\n".as_slice();
        match request.index % 7 {
            // Not JSON at all.
            0 => with_head(head, b"\xff\xfe\xfd{}"),
            // Invalid UTF-8 inside the result string: the scan does not look inside results.
            1 => with_head(
                head,
                &[format!(r#"{{"jsonrpc":"2.0","id":{id},"result":"#).as_bytes(), b"\"\xc3\x28\"}"].concat(),
            ),
            // Invalid UTF-8 in the version string.
            2 => with_head(
                head,
                &[b"{\"jsonrpc\":\"2.0\xff\"".as_slice(), format!(",\"id\":{id},\"result\":1}}").as_bytes()]
                    .concat(),
            ),
            // obs-text in a header value and in the reason phrase: legal HTTP.
            3 => with_head(b"HTTP/1.1 200 \xc3\x28K\r\nX-Odd: \xff\xfe\r\n", &ok),
            // A header name that is not a token.
            4 => with_head(b"HTTP/1.1 200 OK\r\nX-\xff: 1\r\n", &ok),
            // A Content-Length that is not a number.
            5 => Reply::Raw([b"HTTP/1.1 200 OK\r\nContent-Length: \xff\r\n\r\n".as_slice(), &ok].concat()),
            _ => json_200(&ok_body(id)),
        }
    });
    for (check, ok, not_json, not_jsonrpc) in [(CheckMode::Scan, 30, 10, 10), (CheckMode::Full, 20, 30, 0)] {
        let before = server.requests.load(Ordering::SeqCst);
        assert_eq!(before % 7, 0);
        let mut config = closed_loop(&server.url(), 1, requests(70));
        config.check = check;
        let (record, _) = run(config);
        let counts = &record.totals.counts;
        assert_eq!(counts.ok, ok, "{check:?}: {counts:?}");
        assert_eq!(
            counts.invalid.get(&InvalidKind::NotJson).copied().unwrap_or(0),
            not_json,
            "{check:?}: {counts:?}"
        );
        assert_eq!(
            counts.invalid.get(&InvalidKind::NotJsonRpc).copied().unwrap_or(0),
            not_jsonrpc,
            "{check:?}: {counts:?}"
        );
        assert_eq!(counts.invalid.get(&InvalidKind::BadHttp), Some(&20), "{check:?}: {counts:?}");
        assert_eq!(counts.total(), 70);
    }
}

#[test]
fn requests_cut_off_by_the_end_of_a_run_still_get_one_outcome() {
    // A server that trickles its answers (each takes 8 s): two connections at 20/s time out
    // every 1.5 s, so tickets wait for a connection, go out late, and the last two sent (at
    // about 3 s) are still in flight when the run's time is up (1 s + timeout + 1 s).
    let server = TestServer::start(|request| {
        let answer = format!(
            "HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{}",
            ok_body(request.id).len(),
            ok_body(request.id)
        );
        Reply::Trickle(answer.into_bytes(), Duration::from_millis(100))
    });
    let mut config = closed_loop(&server.url(), 1, seconds(1.0));
    config.load = rpcbench::engine::config::Load::Open {
        rate: 20.0,
        arrivals: rpcbench::engine::config::Arrivals::Uniform,
        max_connections: 2,
    };
    config.timeout = Duration::from_millis(1500);
    let (record, _) = run(config);
    let counts = &record.totals.counts;
    // Outcomes + unsent = the 20 requests due, always; every request the server received has
    // its one outcome (a timeout, or unfinished at the end).
    assert_eq!(counts.total() + record.totals.unsent, 20, "{counts:?} unsent {}", record.totals.unsent);
    assert!(counts.unfinished > 0, "{counts:?}");
    assert_eq!(counts.total(), server.requests.load(Ordering::SeqCst), "{counts:?}");
}

#[test]
fn a_response_sent_twice_costs_one_outcome_not_the_connection() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        let once = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        if request.index == 4 {
            Reply::Raw(format!("{once}{once}").into_bytes())
        } else {
            Reply::Raw(once.into_bytes())
        }
    });
    let (record, _) = run(closed_loop(&server.url(), 1, requests(1000)));
    let counts = &record.totals.counts;
    assert_eq!(counts.ok, 999, "{counts:?}");
    assert_eq!(counts.errors(), 1, "{counts:?}");
    assert_eq!(server.connections.load(Ordering::SeqCst), 2, "one reconnect after the fault");
}

#[test]
fn trailing_garbage_after_a_response_costs_one_outcome_not_the_connection() {
    let server = TestServer::start(|request| {
        let body = ok_body(request.id);
        let once = format!("HTTP/1.1 200 OK\r\nContent-Length: {}\r\n\r\n{body}", body.len());
        let garbage = if request.index == 10 { "\r\ngarbage\r\n" } else { "" };
        Reply::Raw(format!("{once}{garbage}").into_bytes())
    });
    let (record, _) = run(closed_loop(&server.url(), 1, requests(1000)));
    let counts = &record.totals.counts;
    assert_eq!(counts.ok, 999, "{counts:?}");
    assert_eq!(counts.invalid.get(&InvalidKind::ExtraBytes), Some(&1), "{counts:?}");
}

#[test]
fn a_server_inventing_error_codes_cannot_grow_the_counts() {
    let server = TestServer::start(|request| {
        let message = "m".repeat(1024);
        json_200(&format!(
            r#"{{"jsonrpc":"2.0","id":{},"error":{{"code":{},"message":"{message}"}}}}"#,
            request.id,
            -1_000_000 - request.index as i64
        ))
    });
    let (record, _) = run(closed_loop(&server.url(), 4, requests(2000)));
    let counts = &record.totals.counts;
    assert_eq!(counts.rpc_errors.len(), rpcbench::outcome::MAX_RPC_CODES);
    assert_eq!(counts.errors(), 2000, "every error still counted exactly");
    assert!(counts.rpc_errors.values().all(|e| {
        e.first_message
            .as_ref()
            .is_some_and(|m| m.chars().count() <= rpcbench::outcome::MAX_MESSAGE_CHARS + 1)
    }));
}

#[test]
fn a_lying_content_length_does_not_grow_memory() {
    // 20 connections each announce 60 MB and send 10 bytes: the generator must not allocate
    // the announced length (1.2 GB before).
    let server = TestServer::start(|_| {
        Reply::RawThenClose(b"HTTP/1.1 200 OK\r\nContent-Length: 62914560\r\n\r\n0123456789".to_vec())
    });
    let before = peak_rss_bytes();
    let (record, _) = run(closed_loop(&server.url(), 20, requests(200)));
    assert_eq!(record.totals.counts.closed, 200);
    if let (Some(before), Some(after)) = (before, peak_rss_bytes()) {
        let grown = after.saturating_sub(before);
        assert!(grown < 200 * 1024 * 1024, "peak RSS grew by {grown} bytes");
    }
}
