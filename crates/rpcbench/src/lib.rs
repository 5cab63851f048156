//! rpcbench: load testing and benchmarking for the JSON-RPC endpoints of blockchain nodes.
//!
//! The main types:
//! - [`engine::config::RunConfig`] is a validated description of one load run, and
//!   [`engine::Run`] executes it on one current-thread runtime per core, returning a
//!   [`record::RunRecord`].
//! - [`transport`] carries requests to the target ([`transport::http1::Http1`] today): a
//!   [`transport::Transport`] opens [`transport::Lane`]s, one place a request can go each.
//! - [`protocol`] turns calls into a request and a reply into one [`outcome::Outcome`] per
//!   call: one call per request, or JSON-RPC batches; [`jsonrpc`] is the scanning classifier
//!   (no JSON tree on the hot path) and request templates.
//! - [`outcome`] is the one outcome taxonomy: [`outcome::Outcome`] per call and
//!   [`outcome::OutcomeCounts`], which the recorder, live metrics, reports and results files
//!   all use.
//! - [`record`] holds the per-worker HDR histograms, outcome counts and the per-second series,
//!   and merges them.
//! - [`report`] turns a finished run into a [`report::RunReport`] and renders it as text or
//!   JSON.
//! - [`mock`] starts mock Solana and Ethereum nodes and a static baseline server, with fault
//!   knobs, in-process on any address; [`listen`] binds the listening sockets of the servers
//!   rpcbench runs with the system's largest accept backlog.
//! - [`demo`] runs the quick-start Solana tests against the mock node; [`client`] makes one-off
//!   calls outside a run.
//! - [`workload::Workload`] is what requests call: one request or a weighted mix of calls with
//!   generated params.
//! - [`scenario::Scenario`] reads a TOML scenario file into a run configuration and
//!   [`thresholds::Threshold`]s that gate CI.
//! - [`results`] writes and reads results files (HDR histograms kept losslessly) and merges
//!   shards; [`compare`] runs one workload against several targets and checks that they
//!   answer alike.
//! - [`sample`] harvests recent blocks, transactions and accounts of a target into pools that
//!   generators draw from; [`prepare`] binds a [`scenario::ScenarioDraft`] to a URL and pools.
//! - [`redact`] keeps API keys and auth headers out of every output, and
//!   [`redact::Secrets`] scrubs a run's secrets out of what its server sends back;
//!   [`printable`] escapes the control characters of server text before it is shown.
//! - [`capacity`] searches for the highest rate that meets an SLO, step by step in open loop;
//!   [`capacity_file`] keeps every step of a search losslessly so `report` renders it again.
//! - [`monitor`] samples the target process's CPU, memory, disk and connections from `/proc`
//!   into a [`monitor::ResourceReport`].
//! - [`metrics`] serves a run's live figures to Prometheus ([`metrics::MetricsServer`]),
//!   published by the workers into a [`metrics::LiveMetrics`] store a few times a second.
//! - [`proxy`] relays JSON-RPC over HTTP/1.1 to an upstream, measuring its own overhead per
//!   method, injecting faults and recording traffic; its server loop is the crate's one
//!   HTTP/1.1 loop, which the mock nodes and the metrics endpoint share.
//! - [`overhead`] is the table of `run --via-proxy`: direct against proxied per percentile and
//!   method, with the proxy's own overhead.
//! - [`traffic`] writes and reads recorded traffic files (JSON lines) for the proxy's
//!   recording and for replay; [`replay::Replay`] sends a recording's requests (or a vegeta
//!   targets file's, or a file of bodies) in order through the engine, at its recorded pace.

#![deny(missing_docs)]

pub mod beside_load;
pub mod capacity;
pub mod capacity_file;
pub mod client;
pub mod compare;
pub mod connect_causes;
pub mod defaults;
pub mod demo;
pub mod engine;
pub mod field;
pub mod heads;
pub mod jsonrpc;
pub mod k8s;
pub mod limits;
pub mod live_view;
pub mod metrics;
pub mod mock;
pub mod monitor;
pub mod outcome;
pub mod overhead;
pub mod plan;
pub mod protocol;
pub mod proxy;
pub mod ratelimit;
pub mod record;
pub mod replay;
pub mod report;
pub mod results;
pub mod rounds;
pub mod scenario;
pub mod server;
pub mod settings;
pub(crate) mod slot_timer;
pub mod subscribe;
pub mod thresholds;
pub mod traffic;
pub mod transport;
pub mod tx;
pub mod util;
pub mod verdict;
pub mod workload;
