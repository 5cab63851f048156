//! The target-process section of reports: a run monitored with [`Monitor`] (here the test
//! process itself, which serves the mock node in-process) reports CPU and memory in both
//! the JSON report, which still matches the schema, and the text report.

use rpcbench::engine::config::{Arrivals, Load};
use rpcbench::engine::Run;
use rpcbench::mock::{Chain, MockOptions, MockServer};
use rpcbench::monitor::Monitor;
use rpcbench::report::{render_text, RunReport};

use crate::report::assert_valid;
use crate::util::{closed_loop, seconds};

#[test]
fn a_monitored_run_reports_the_target_process() {
    let node = MockServer::start(MockOptions::new(Chain::Solana)).unwrap();
    let mut config = closed_loop(&node.url(), 1, seconds(0.6));
    config.load = Load::Open { rate: 500.0, arrivals: Arrivals::Uniform, max_connections: 8 };
    let monitor = Monitor::start(&[std::process::id()]);
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let mut report = RunReport::new(&config, &record);
    report.target_resources = Some(monitor.stop());
    node.stop();
    assert_valid(&report);
    let resources = report.target_resources.as_ref().unwrap();
    assert!(resources.samples >= 3, "{resources:?}");
    assert!(resources.cpu_percent_avg > 0.0, "{resources:?}");
    assert!(resources.rss_bytes_peak > 1 << 20, "{resources:?}");
    let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
    assert_eq!(json["target_resources"]["pids"][0], std::process::id());
    let text = render_text(&report);
    assert!(text.contains("Target process: pid"), "{text}");
    assert!(text.contains("TCP established"), "{text}");
}

#[test]
fn an_unmonitored_report_has_no_target_section() {
    let node = MockServer::start(MockOptions::new(Chain::Static)).unwrap();
    let config = closed_loop(&node.url(), 1, crate::util::requests(10));
    let record = Run::new(config.clone()).unwrap().execute().unwrap();
    let report = RunReport::new(&config, &record);
    node.stop();
    assert!(!report.to_json().contains("target_resources"));
    assert!(!render_text(&report).contains("Target process"));
}
