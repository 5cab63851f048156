//! rpcbench: load testing and benchmarking for the JSON-RPC endpoints of blockchain nodes.
//!
//! The crate is a facade over private rooms. Public are the modules a caller drives (each a
//! namespace for one job) and, at the root, the few types and functions of the private rooms a
//! caller needs; everything else is private, and `unreachable_pub` keeps it so.
//!
//! - Plan what to send: [`engine::config::RunConfig`] (a validated load run, built from a
//!   [`Target`] and [`TlsOptions`]), [`workload::Workload`], [`scenario::Scenario`] (TOML files),
//!   [`plan`] (suites, sampling, targets files, pools), [`replay`], [`defaults`] (every default
//!   once) and [`field`] (the setting an error names; the CLI shows it as a flag).
//! - Run it: [`engine::Run`] paces requests on one current-thread runtime per core through the
//!   private transports (HTTP/1.1, HTTP/2, WebSocket: one wire selection) and protocols (single
//!   calls, batches, REST, replay, raw transactions), and returns a [`record::RunRecord`] of
//!   per-worker HDR histograms and [`outcome`] counts (the one outcome taxonomy).
//! - Drivers built on the engine: [`capacity`] (the highest rate that meets an SLO),
//!   [`compare`] and [`rounds`]/[`verdict`] (targets in interleaved rounds with confidence
//!   intervals), [`heads`] (who is fresh), [`limits`] (what a provider allows), [`subscribe`]
//!   (WebSocket and Geyser gRPC feeds, races), [`tx`] (signed transactions and their
//!   inclusion), [`proxy`] and [`overhead`], [`demo`], [`client`] (one-off calls).
//! - Read and write results: [`report`] renders, [`results`] and [`capacity_file`] save and
//!   merge losslessly, [`traffic`] reads and writes recorded traffic, [`k8s`] splits a run into
//!   Kubernetes jobs.
//! - Watch it: [`metrics`] (the live store and its Prometheus endpoint), [`live_view`] (the
//!   terminal dashboard's drawing), [`monitor`] (the target's CPU and memory from `/proc`).
//! - Stand-ins: [`mock`] serves mock Solana and Ethereum nodes (HTTP/1.1, HTTP/2, WebSocket,
//!   Geyser gRPC) with fault knobs, in-process on any address.

#![deny(missing_docs)]
#![deny(unreachable_pub)]

pub mod beside_load;
pub mod capacity;
pub mod capacity_file;
pub mod client;
pub mod compare;
pub mod conditions;
mod connect_causes;
pub mod defaults;
pub mod demo;
pub mod engine;
pub mod field;
pub mod heads;
pub mod heads_lag;
mod jsonrpc;
pub mod k8s;
pub mod limits;
pub mod live_view;
pub mod metrics;
pub mod mock;
pub mod monitor;
pub mod outcome;
pub mod overhead;
pub mod plan;
mod pooled;
mod protocol;
pub mod proxy;
mod ratelimit;
pub mod record;
pub mod replay;
pub mod report;
pub mod results;
pub mod rounds;
pub mod scenario;
pub mod sequential;
mod server;
mod settings;
pub(crate) mod slot_timer;
pub mod subscribe;
pub mod thresholds;
pub mod traffic;
mod transport;
pub mod tx;
mod util;
pub mod verdict;
#[cfg(test)]
mod verdict_defaults_tests;
pub mod workload;

// The facade: what the CLI and a library user need from the crate's private rooms
// (transports, protocols, the scanner, the server loop, utilities). Everything else in those
// rooms is `pub(crate)` at most, and `unreachable_pub` keeps it so.
pub use crate::engine::{process_cpu_time, ThreadUsage, TooManyConnections};
pub use crate::jsonrpc::{CheckMode, RequestTemplate};
pub use crate::protocol::send_ledger::{AckTally, TxAck};
pub use crate::protocol::send_raw::{SentTx, TxSends};
pub use crate::protocol::send_solana::{SolanaLedger, SolanaSends, SolanaSent};
pub use crate::ratelimit::pause::OnRateLimit;
pub use crate::ratelimit::signs::RateLimitRules;
pub use crate::settings::{Scheme, Target, TlsOptions};
pub use crate::transport::connect::SetupError;
pub use crate::transport::grpc::{XToken, XTokenError};
pub use crate::transport::HttpMethod;
pub use crate::util::files::{read_limited, read_text_limited, MAX_BODY};
pub use crate::util::printable::escape_controls;
pub use crate::util::redact::{text as redact_text, url as redact_url};
pub use crate::util::thread_class::{
    helper_threads, set_helper_threads, spawn_helper, step_aside_for_the_pacer, HelperClass, HelperThreads,
    Unlowered,
};
pub use crate::util::units::{
    format_duration, format_micros, parse_duration, parse_rate, parse_rfc3339, parse_size, rfc3339, UnitError,
};
