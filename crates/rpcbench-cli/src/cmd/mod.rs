//! One file per command, each flattening only the `args` groups it uses; no command imports
//! another (what two commands share lives below them: `args`, `plan`, `runner`, `render`).

pub mod capacity;
pub mod compare;
pub mod demo;
pub mod docs;
pub mod heads;
pub mod k8s;
pub mod limits;
pub mod merge;
pub mod proxy;
pub mod replay;
pub mod report;
pub mod run;
pub mod serve;
pub mod subscribe;
pub mod suites;
pub mod tx;
mod tx_chain_flags;
pub mod tx_fund;
mod tx_report;
pub mod tx_solana;
mod tx_watch_health;
