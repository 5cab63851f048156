//! HTTP/2 through the whole engine (`--h2c`, `--http2`), against the mock nodes' h2 server on
//! 127.0.0.1: streams per connection, the server's stream limit, GOAWAY every N requests,
//! refused streams, TLS with ALPN, a server that does not speak HTTP/2, and the accounting
//! that gives every request exactly one outcome.

use std::io::{Read, Write};
use std::net::TcpListener;

use rpcbench::engine::config::{Field, HttpVersion, Load, RunConfig, TlsOptions};
use rpcbench::engine::{EngineError, Run};
use rpcbench::mock::{Chain, MockOptions, MockServer, MockTls};
use rpcbench::report::{render_text, RunReport};

use crate::util::{closed_loop, requests, seconds};

fn mock(options: impl FnOnce(&mut MockOptions)) -> MockServer {
    let mut settings = MockOptions::new(Chain::Static);
    options(&mut settings);
    MockServer::start(settings).expect("the mock starts")
}

fn h2c(url: &str, connections: usize, streams: usize, n: u64) -> RunConfig {
    let mut config = closed_loop(url, connections, requests(n));
    config.http = HttpVersion::H2c;
    config.streams = streams;
    config.threads = 1;
    config
}

#[test]
fn h2c_streams_share_connections_and_every_request_is_answered() {
    let server = mock(|_| {});
    let config = h2c(&server.url(), 2, 8, 2000);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.ok, 2000, "{counts:?}");
    assert_eq!(counts.total(), 2000);
    assert_eq!(record.wire.connections_opened, 2, "two connections carry the 16 lanes");
    assert_eq!(record.wire.goaways_received, 0);
    let report = RunReport::new(&config, &record);
    assert_eq!(report.protocol, "h2c");
    let http2 = report.http2.as_ref().expect("HTTP/2 figures");
    assert_eq!(http2.streams_per_connection, 8);
    assert_eq!(http2.connections_opened, 2);
    crate::report::assert_valid(&report);
    let text = render_text(&report);
    assert!(text.contains("protocol h2c: 8 streams per connection"), "{text}");
    // The connect phase was measured once per connection, not once per lane.
    let connects = report.phases.iter().map(|phase| phase.connect.count).sum::<u64>();
    assert!(connects <= 2, "{:?}", report.phases);
}

#[test]
fn the_servers_stream_limit_holds_the_extra_streams_back_and_is_reported() {
    let server = mock(|options| options.max_streams = Some(3));
    let config = h2c(&server.url(), 1, 12, 600);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 600, "{:?}", record.totals.counts);
    assert_eq!(record.wire.server_max_streams, Some(3));
    assert_eq!(record.wire.connections_opened, 1);
    let report = RunReport::new(&config, &record);
    assert_eq!(report.http2.unwrap().server_max_streams, Some(3));
}

#[test]
fn goaway_every_n_requests_reopens_the_connection_and_counts_every_request_once() {
    // The server answers 25 requests per connection, then GOAWAY: 400 requests need at least
    // 16 connections, and the run goes on across every one of them.
    let server = mock(|options| options.goaway_after = Some(25));
    let config = h2c(&server.url(), 1, 4, 400);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    let lost = counts.goaway + counts.refused_stream;
    assert_eq!(counts.total(), 400, "one outcome per request: {counts:?}");
    assert_eq!(counts.ok + lost, 400, "nothing else went wrong: {counts:?}");
    assert_eq!(counts.errors(), lost);
    // Each connection answered 25 before its GOAWAY (the last may have answered fewer when the
    // run ended), so the connections opened are exactly what the answers needed.
    let opened = record.wire.connections_opened;
    assert_eq!(opened, counts.ok.div_ceil(25), "{:?} {counts:?}", record.wire);
    // Every connection but possibly the last ended with a GOAWAY that was seen and counted.
    assert!(record.wire.goaways_received >= opened - 1, "{:?}", record.wire);
    assert!(record.wire.goaways_received <= opened, "{:?}", record.wire);
    crate::report::assert_valid(&RunReport::new(&config, &record));
}

#[test]
fn refused_streams_are_their_own_outcome_class() {
    let server = mock(|options| options.refuse_rate = 1.0);
    let config = h2c(&server.url(), 1, 4, 100);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.refused_stream, 100, "{counts:?}");
    assert_eq!(counts.total(), 100);
    assert_eq!(record.wire.connections_opened, 1, "a refused stream does not end the connection");
    let text = render_text(&RunReport::new(&config, &record));
    assert!(text.contains("stream refused - 100"), "{text}");
    crate::report::assert_valid(&RunReport::new(&config, &record));
    let json = RunReport::new(&config, &record).to_json();
    assert!(json.contains("\"refused_stream\": 100"), "{json}");
}

#[test]
fn open_loop_over_h2c_paces_on_free_streams() {
    let server = mock(|_| {});
    let mut config = h2c(&server.url(), 1, 1, 0);
    config.load = Load::Open { rate: 500.0, arrivals: Default::default(), max_connections: 2 };
    config.streams = 8;
    config.length = seconds(1.0);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.errors(), 0, "{counts:?}");
    assert_eq!(counts.total() + record.totals.unsent, 500, "{counts:?}");
    assert!(record.wire.connections_opened <= 2, "{:?}", record.wire);
}

#[test]
fn http2_over_tls_negotiates_h2_with_alpn() {
    let server = mock(|options| options.tls = Some(MockTls::default()));
    let certificate = server.certificate_path().expect("a TLS mock writes its certificate").to_path_buf();
    let mut config = closed_loop(&server.url(), 2, requests(300));
    config.http = HttpVersion::Http2;
    config.streams = 4;
    config.tls = TlsOptions { insecure: false, ca_file: Some(certificate) };
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 300, "{:?}", record.totals.counts);
    assert_eq!(RunReport::new(&config, &record).protocol, "h2");
}

#[test]
fn a_tls_server_that_offers_only_http1_is_refused_by_name() {
    let server = mock(|options| {
        options.tls = Some(MockTls::default());
        options.http2 = false;
    });
    let mut config = closed_loop(&server.url(), 1, requests(10));
    config.http = HttpVersion::Http2;
    config.tls = TlsOptions { insecure: true, ca_file: None };
    match Run::new(config) {
        Err(EngineError::Config(err)) => {
            assert_eq!(err.field, Field::Http2);
            assert!(err.message().contains("does not offer HTTP/2 over TLS"), "{}", err.message());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn an_http1_only_server_is_refused_for_h2c() {
    let server = mock(|options| options.http2 = false);
    let config = h2c(&server.url(), 1, 1, 10);
    match Run::new(config) {
        Err(EngineError::Config(err)) => {
            assert_eq!(err.field, Field::H2c);
            assert!(err.message().contains("preface"), "{}", err.message());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

/// A server on 127.0.0.1 that reads the client preface, writes `reply` and then holds the
/// connection open without a word.
fn h2c_server_that_answers(reply: &'static [u8]) -> std::net::SocketAddr {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if stream.read_exact(&mut preface).is_err() {
                    return;
                }
                let _ = stream.write_all(reply);
                let mut sink = [0u8; 1024];
                while matches!(stream.read(&mut sink), Ok(n) if n > 0) {}
            });
        }
    });
    addr
}

#[test]
fn an_h2c_server_that_answers_with_goaway_is_named_as_refusing_not_as_silent() {
    // SETTINGS, then GOAWAY (last stream 0, ENHANCE_YOUR_CALM: 0xb).
    const SETTINGS_THEN_GOAWAY: &[u8] =
        &[0, 0, 0, 4, 0, 0, 0, 0, 0, 0, 0, 8, 7, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xb];
    let addr = h2c_server_that_answers(SETTINGS_THEN_GOAWAY);
    match Run::new(h2c(&format!("http://{addr}/"), 1, 1, 10)) {
        Err(EngineError::Config(err)) => {
            assert_eq!(err.field, Field::H2c);
            assert!(
                err.message().contains("speaks HTTP/2 (h2c) but closed the connection with GOAWAY"),
                "{}",
                err.message()
            );
            assert!(err.message().contains("ENHANCE_YOUR_CALM"), "{}", err.message());
            assert!(!err.message().contains("did not answer"), "{}", err.message());
        }
        other => panic!("expected a refusal, got {other:?}"),
    }
}

#[test]
fn a_server_that_breaks_the_protocol_is_counted_and_never_hangs_the_run() {
    // Speaks enough HTTP/2 to pass the connection's start (SETTINGS, PING answered), then
    // answers every request's HEADERS with a HEADERS frame that is not HPACK.
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(mut stream) = stream else { continue };
            std::thread::spawn(move || {
                let mut preface = [0u8; 24];
                if stream.read_exact(&mut preface).is_err() {
                    return;
                }
                let _ = stream.write_all(&[0, 0, 0, 4, 0, 0, 0, 0, 0]);
                loop {
                    let mut head = [0u8; 9];
                    if stream.read_exact(&mut head).is_err() {
                        return;
                    }
                    let length =
                        usize::from(head[0]) << 16 | usize::from(head[1]) << 8 | usize::from(head[2]);
                    let mut payload = vec![0u8; length];
                    if stream.read_exact(&mut payload).is_err() {
                        return;
                    }
                    let reply: Vec<u8> = match (head[3], head[4] & 1) {
                        // PING: its ACK with the same payload.
                        (6, 0) => [&[0, 0, 8, 6, 1, 0, 0, 0, 0][..], &payload].concat(),
                        // HEADERS: a HEADERS frame on the same stream whose block is not HPACK.
                        (1, _) => [&[0, 0, 4, 1, 4][..], &head[5..9], &[0xff, 0xff, 0xff, 0xff]].concat(),
                        _ => continue,
                    };
                    if stream.write_all(&reply).is_err() {
                        return;
                    }
                }
            });
        }
    });
    let mut config = h2c(&format!("http://{addr}/"), 1, 2, 50);
    config.timeout = std::time::Duration::from_secs(2);
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.total(), 50, "{counts:?}");
    assert_eq!(counts.invalid.get(&rpcbench::outcome::InvalidKind::BadHttp), Some(&50), "{counts:?}");
    assert!(record.wire.connections_opened >= 2, "broken connections are re-opened: {:?}", record.wire);
}

#[test]
fn streams_and_the_http2_flags_are_checked_naming_the_flag() {
    let server = mock(|_| {});
    let mut config = closed_loop(&server.url(), 1, requests(1));
    config.streams = 4;
    let err = RunConfig::validate(&config).unwrap_err();
    assert_eq!(err.field, Field::Streams);
    config.http = HttpVersion::H2c;
    config.streams = 0;
    assert_eq!(config.validate().unwrap_err().field, Field::Streams);
    config.streams = 65_536;
    assert_eq!(config.validate().unwrap_err().field, Field::Streams);
    config.streams = 65_535;
    assert!(config.validate().is_ok());
    let mut secure = closed_loop("https://127.0.0.1:1/", 1, requests(1));
    secure.http = HttpVersion::H2c;
    assert_eq!(secure.validate().unwrap_err().field, Field::H2c);
    config.http = HttpVersion::Http2;
    assert_eq!(config.validate().unwrap_err().field, Field::Http2);
}
