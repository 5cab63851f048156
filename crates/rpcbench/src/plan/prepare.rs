//! From a scenario draft to a runnable scenario: pick the URL, fill the pools the generators
//! draw from (from the pools file when there is one, else by sampling the target and saving
//! what was found), and resolve the draft.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::client::Endpoint;
use crate::plan::sample::{self, Pools, SampleError};
use crate::scenario::{Scenario, ScenarioDraft, ScenarioError};

/// Where the pools came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum PoolSource {
    /// No generator draws from a pool.
    NotNeeded,
    /// Read from this pools file.
    Cache(PathBuf),
    /// Sampled from the target, and saved to this file if one was named.
    Sampled(Option<PathBuf>),
}

/// A scenario ready to run.
#[derive(Debug)]
pub struct Prepared {
    /// The scenario.
    pub scenario: Scenario,
    /// The pools it draws from, if any.
    pub pools: Option<Pools>,
    /// Where they came from.
    pub source: PoolSource,
}

/// Why a scenario could not be prepared.
#[derive(Debug)]
pub enum PrepareError {
    /// The scenario is at fault (a location in the file).
    Scenario(ScenarioError),
    /// Sampling the target, or writing the pools file, failed.
    Sample(SampleError),
    /// The pools file given (`--pools`, `[sample] cache`) exists but cannot be read or is not
    /// a pools file: the user's to fix, not the target's.
    PoolsFile(SampleError),
    /// A target is a `grpc://` Geyser endpoint, which answers unary Geyser calls only, and the
    /// workload's calls draw their params from pools sampled over JSON-RPC: nothing is sent.
    GrpcTarget {
        /// The target's URL, secrets redacted.
        url: String,
    },
}

impl fmt::Display for PrepareError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PrepareError::Scenario(err) => err.fmt(f),
            PrepareError::Sample(err) | PrepareError::PoolsFile(err) => err.fmt(f),
            PrepareError::GrpcTarget { url } => write!(
                f,
                "{url} is a gRPC Geyser endpoint, which answers unary Geyser calls only (--method GetSlot): \
                 these calls are JSON-RPC's, with params sampled over JSON-RPC"
            ),
        }
    }
}

impl std::error::Error for PrepareError {}

/// What the command line adds to the scenario's own way of reaching the target while sampling:
/// headers (`-H`, an API key) and TLS settings.
#[derive(Debug, Clone, Default)]
pub struct Access {
    /// Sent with every sampling call, after the scenario's headers.
    pub headers: Vec<(String, String)>,
    /// Accept any certificate.
    pub insecure: bool,
    /// Trust the certificates in this PEM file too.
    pub ca_file: Option<PathBuf>,
    /// Counts what sampling does, for a progress line.
    pub progress: Option<sample::SampleProgress>,
    /// Blocks (slots) back from the head to sample, instead of the scenario's window.
    pub sample_blocks: Option<u64>,
    /// Sample a margin behind the head (see [`sample::SampleOptions::behind_head`]).
    pub behind_head: bool,
}

/// Prepares `draft`: `url` replaces the file's URL; `pools_file` replaces its `[sample] cache`.
/// An existing pools file is used as it is; otherwise the (first) target is sampled, with the
/// scenario's headers and TLS settings plus `access`, and, when a file is named, the pools are
/// saved there so that a rerun draws from the same values.
pub fn prepare(
    draft: &ScenarioDraft,
    url: Option<&str>,
    pools_file: Option<&Path>,
    access: &Access,
) -> Result<Prepared, PrepareError> {
    if draft.pools_needed().is_empty() {
        let scenario = draft.resolve(url, None).map_err(PrepareError::Scenario)?;
        return Ok(Prepared { scenario, pools: None, source: PoolSource::NotNeeded });
    }
    // The URL is checked before anything is sampled.
    let unsampled = draft.resolve(url, Some(&placeholder_pools(draft))).map_err(PrepareError::Scenario)?;
    // Sampling speaks JSON-RPC, which a Geyser endpoint does not: refused before any call.
    if let Some(grpc) = unsampled.targets.iter().find(|target| target.target.grpc) {
        return Err(PrepareError::GrpcTarget { url: grpc.target.redacted() });
    }
    let cache = pools_file.map(Path::to_path_buf).or_else(|| draft.cache());
    let (pools, source) = match &cache {
        Some(path) if path.exists() => {
            (Pools::load(path).map_err(PrepareError::PoolsFile)?, PoolSource::Cache(path.clone()))
        }
        _ => {
            let mut options = draft.sample_options().map_err(PrepareError::Scenario)?;
            options.progress.clone_from(&access.progress);
            if let Some(blocks) = access.sample_blocks {
                options.window = blocks;
            }
            options.behind_head |= access.behind_head;
            let mut config = unsampled.config;
            config.headers.extend(access.headers.iter().cloned());
            config.tls.insecure |= access.insecure;
            if access.ca_file.is_some() {
                config.tls.ca_file.clone_from(&access.ca_file);
            }
            let endpoint = Endpoint::from_config(&config, options.timeout).map_err(|err| {
                PrepareError::Sample(SampleError(format!(
                    "{}: cannot reach the target: {err}",
                    config.target.redacted()
                )))
            })?;
            let pools = sample::sample(&endpoint, &options).map_err(PrepareError::Sample)?;
            if let Some(path) = &cache {
                pools.save(path).map_err(PrepareError::Sample)?;
            }
            (pools, PoolSource::Sampled(cache.clone()))
        }
    };
    let scenario = draft.resolve(url, Some(&pools)).map_err(PrepareError::Scenario)?;
    Ok(Prepared { scenario, pools: Some(pools), source })
}

/// Pools with one dummy value each, to check everything but the pools before sampling.
fn placeholder_pools(draft: &ScenarioDraft) -> Pools {
    let chain = draft.sample_options().ok().and_then(|options| options.chain);
    let names = draft.pools_needed();
    let chain = chain.unwrap_or_else(|| {
        let named_pools = names.iter().filter(|name| name.as_str() != crate::scenario::HEAD);
        if named_pools.clone().count() > 0
            && named_pools.into_iter().all(|name| sample::SOLANA_POOLS.contains(&name.as_str()))
        {
            sample::SampleChain::Solana
        } else {
            sample::SampleChain::Ethereum
        }
    });
    Pools {
        chain,
        chain_id: None,
        head: 0,
        oldest: 0,
        head_margin: 0,
        pools: names.into_iter().map(|name| (name, vec![serde_json::Value::from(0)])).collect(),
    }
}
