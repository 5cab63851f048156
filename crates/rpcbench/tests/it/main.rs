//! Integration tests of the rpcbench library, compiled as one binary. Every server they talk
//! to is started in-process on 127.0.0.1:0.

mod batch;
mod compare;
mod engine;
mod geyser;
mod geyser_feed;
mod geyser_hostile;
mod geyser_unary;
mod golden;
mod heads;
mod hostile;
mod http2;
mod limits;
mod metrics;
mod monitor;
mod proxy;
mod rate_limit;
mod rates;
mod replay;
mod report;
mod results;
mod secrets;
mod subscribe;
mod tls;
mod tx;
mod util;
mod websocket;
