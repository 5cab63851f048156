//! `rpcbench run grpc://` through the library: unary Yellowstone Geyser calls (`GetSlot`,
//! `Ping`...) as request/response load against the mock feed on 127.0.0.1, every call counted
//! once, gRPC statuses in the outcome taxonomy, compared with the calls the mock says it
//! answered.

use std::sync::atomic::Ordering;
use std::time::Duration;

use rpcbench::engine::config::{Field, Load, RunConfig, Target};
use rpcbench::engine::{EngineError, Run};
use rpcbench::mock::{GeyserMock, GeyserMockOptions};
use rpcbench::outcome::{GrpcStatusCode, Outcome};
use rpcbench::report::{render_text, RunReport};
use rpcbench::workload::{Call, Workload};
use rpcbench::XToken;

use crate::util::requests;

fn feed(options: impl FnOnce(&mut GeyserMockOptions)) -> GeyserMock {
    let mut settings = GeyserMockOptions { slot_time: Duration::from_millis(50), ..Default::default() };
    options(&mut settings);
    GeyserMock::start(settings).expect("the mock feed starts")
}

/// `n` calls drawn from `methods` on 2 connections of 4 streams.
fn unary(mock: &GeyserMock, methods: &[&str], n: u64) -> RunConfig {
    let calls = methods.iter().map(|method| Call::new(*method, method, None, 1).unwrap()).collect();
    let mut config = RunConfig::new(Target::parse(&mock.url()).unwrap(), Workload::new(calls).unwrap());
    config.load = Load::Closed { connections: 2 };
    config.streams = 4;
    config.length = requests(n);
    config.threads = 1;
    config
}

const UNAUTHENTICATED: u32 = 16;
const UNAVAILABLE: u32 = 14;

#[test]
fn every_unary_geyser_call_against_the_mock_is_counted_once_with_its_latency() {
    let mock = feed(|_| {});
    let methods = ["GetSlot", "Ping", "GetLatestBlockhash", "GetBlockHeight", "GetVersion"];
    let config = unary(&mock, &methods, 500);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.ok, 500, "{counts:?}");
    assert_eq!(counts.total(), 500);
    assert_eq!(mock.truth().unary.load(Ordering::Relaxed), 500, "the mock answered each call once");
    assert_eq!(record.wire.connections_opened, 2, "two HTTP/2 connections carry the 8 lanes");
    let report = RunReport::new(&config, &record);
    assert_eq!(report.protocol, "grpc");
    assert_eq!(report.latency.count, 500, "every call's latency is in the histogram");
    assert_eq!(report.methods.len(), methods.len());
    assert!(report.methods.iter().all(|method| method.requests > 0), "the mix reached every method");
    assert!(report.bytes.received_per_sec > 0.0);
    crate::report::assert_valid(&report);
}

#[test]
fn a_wrong_x_token_fails_every_call_as_unauthenticated_and_is_never_shown() {
    let mock = feed(|options| options.x_token = Some("right-token".into()));
    let mut config = unary(&mock, &["GetSlot"], 60);
    config.x_token = Some(XToken::new("wrong-secret-token"));
    let run = Run::new(config.clone()).unwrap();
    assert!(!format!("{run:?}").contains("wrong-secret-token"), "{run:?}");
    let record = run.execute().unwrap();
    let counts = &record.totals.counts;
    assert_eq!(counts.grpc_status.get(&GrpcStatusCode(UNAUTHENTICATED)), Some(&60), "{counts:?}");
    assert_eq!(counts.total(), 60);
    assert_eq!(mock.truth().unary.load(Ordering::Relaxed), 0, "refused before the service");
    let report = RunReport::new(&config, &record);
    crate::report::assert_valid(&report);
    let text = render_text(&report);
    assert!(text.contains("grpc status: UNAUTHENTICATED - 60"), "{text}");
    let json = serde_json::to_string(&report).unwrap();
    assert!(json.contains(r#""grpc_status":{"UNAUTHENTICATED":60}"#), "{json}");
    assert!(!text.contains("wrong-secret-token") && !json.contains("wrong-secret-token"));

    config.x_token = Some(XToken::new("right-token"));
    let record = Run::new(config).unwrap().execute().unwrap();
    assert_eq!(record.totals.counts.ok, 60, "the right token is answered");
}

#[test]
fn a_status_error_mid_run_is_counted_by_its_status_and_the_run_goes_on() {
    let mock = feed(|options| options.unary_fail_one_in = 10);
    let config = unary(&mock, &["GetSlot"], 200);
    let record = Run::new(config).unwrap().execute().unwrap();
    let counts = &record.totals.counts;
    let failed = mock.truth().unary_failed.load(Ordering::Relaxed);
    assert_eq!(failed, 20, "one call in 10 of 200");
    assert_eq!(counts.grpc_status.get(&GrpcStatusCode(UNAVAILABLE)), Some(&failed), "{counts:?}");
    assert_eq!(counts.ok, 180);
    assert_eq!(counts.total(), 200);
    assert_eq!(Outcome::GrpcStatus(UNAVAILABLE).code().as_deref(), Some("UNAVAILABLE"));
    assert_eq!(record.wire.connections_opened, 2, "a status error does not cost the connection");
}

#[test]
fn a_method_the_geyser_service_has_no_unary_call_for_is_refused_before_any_request() {
    let mock = feed(|_| {});
    let config = unary(&mock, &["getSlot"], 10);
    match Run::new(config) {
        Err(EngineError::Config(err)) => {
            assert_eq!(err.field, Field::Method);
            assert!(
                err.message().contains("'getSlot'") && err.message().contains("GetSlot"),
                "{}",
                err.message()
            );
        }
        other => panic!("expected a configuration error, got {other:?}"),
    }
    assert_eq!(mock.truth().unary.load(Ordering::Relaxed), 0);
}
