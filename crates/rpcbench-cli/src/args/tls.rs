//! The TLS flags, declared once: flattened by every command that reaches an https:// or wss://
//! endpoint (`run`, `replay`, `compare`, `capacity` through the HTTP group; `subscribe`; the
//! upstream of `proxy` and `record`).

use std::path::PathBuf;

use clap::Args;
use rpcbench::TlsOptions;

/// `--insecure` and `--cacert`.
#[derive(Debug, Clone, Default, Args)]
pub struct TlsArgs {
    /// Accept any TLS certificate.
    #[arg(long)]
    pub insecure: bool,
    /// Trust the PEM certificates in this file too.
    #[arg(long, value_name = "FILE")]
    pub cacert: Option<PathBuf>,
}

impl TlsArgs {
    /// The library's TLS options these flags give.
    pub fn options(&self) -> TlsOptions {
        TlsOptions { insecure: self.insecure, ca_file: self.cacert.clone() }
    }
}
