//! The flags of `rpcbench tx`: what every chain reads ([`TxArgs`]), what only Solana reads
//! ([`SolanaTxArgs`]), and the report formats. The command's chains (`cmd/tx.rs` for Ethereum,
//! `cmd/tx_solana.rs` for Solana) both read them from here.

use std::path::PathBuf;
use std::time::Duration;

use crate::args::{duration, rate};
use rpcbench::tx::receipts::ReceiptSample;

/// Output formats of `tx`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TxFormat {
    /// A readable report.
    Text,
    /// One JSON object (schema/tx.schema.json), which `rpcbench report` reads back.
    Json,
    /// Markdown tables.
    Markdown,
    /// A self-contained HTML page: sent vs included per second, the inclusion latency.
    Html,
}

crate::args::format::command_format!(TxFormat: Text, Json, Markdown, Html);

/// Options of `rpcbench tx`.
#[derive(clap::Args, Debug)]
#[command(after_help = "Examples:
  rpcbench tx http://127.0.0.1:8545 --dev --senders 10 --rate 50 -n 500
  rpcbench tx http://127.0.0.1:8545 --key-file keys.txt --rate 200 -d 30s --ws ws://127.0.0.1:8546
  rpcbench tx http://127.0.0.1:8545 --dev --rate 100 -d 10s --max-fee 50gwei --priority-fee 2gwei -f json
  rpcbench tx http://127.0.0.1:8899 --senders 4 --airdrop 1000000000 --rate 200 -n 1000 --commitment confirmed
  rpcbench tx http://127.0.0.1:8899 --keypair ~/.config/solana/id.json --rate 50 -d 30s --poll 200ms")]
#[command(group(clap::ArgGroup::new("keys").args(["key_file", "mnemonic", "dev"])))]
pub struct TxArgs {
    /// The node's HTTP JSON-RPC endpoint.
    #[arg(value_name = "URL")]
    pub url: String,
    /// Transactions per second, open loop (50, 50/s, 600/m).
    #[arg(short, long, value_parser = rate, required_unless_present = "stages")]
    pub rate: Option<f64>,
    /// A stage of the send rate, DURATION:RATE (repeatable or comma-separated, in order): a
    /// linear ramp from the previous rate to this one over the duration ('30s:100,1m:100,30s:0':
    /// up, hold, down). Instead of --rate and -d.
    #[arg(long = "stage", visible_alias = "stages", value_name = "DURATION:RATE", value_parser = stage, value_delimiter = ',', conflicts_with_all = ["rate", "duration"])]
    pub stages: Vec<rpcbench::engine::stages::Stage>,
    /// How long to send [default: 10s unless --requests is given].
    #[arg(short, long, value_parser = duration)]
    pub duration: Option<Duration>,
    /// How many transactions to send.
    #[arg(short = 'n', long)]
    pub requests: Option<u64>,
    /// Send shard I of N of the run (1-based): an exact share of the rate and count, the
    /// pacing of N processes interleaved, and senders of its own (Ethereum: the key source's
    /// accounts (I-1)*senders .. I*senders; Solana: payers generated or given per shard).
    /// `rpcbench merge` puts the shards' saved reports together.
    #[arg(long, value_name = "I/N", conflicts_with = "shards")]
    pub shard: Option<String>,
    /// Split into N shards, this one's index from JOB_COMPLETION_INDEX (0-based, as a
    /// Kubernetes Indexed Job sets it).
    #[arg(long, value_name = "N")]
    pub shards: Option<usize>,
    /// Wait until this wall-clock time to start sending (RFC 3339 or unix seconds), so that
    /// shards on several machines start together.
    #[arg(long, value_name = "TIME")]
    pub start_at: Option<String>,
    /// Send from the key source's first N accounts, in turn. Before load, the accounts after
    /// the first that hold less than the run will spend are funded from the first (the
    /// funder), in batched transfers; a sender refused for insufficient funds during the run
    /// is topped up from the funder again.
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub senders: usize,
    /// Wei each sender after the first should hold before load [default: its share of the
    /// run's cost: gas limit x max fee x its transactions, twice over].
    #[arg(long, value_name = "WEI", value_parser = wei, conflicts_with = "no_fund")]
    pub fund_amount: Option<u128>,
    /// Fund nobody: every sender must hold enough already (one that does not is named).
    #[arg(long)]
    pub no_fund: bool,
    /// How long to wait for the funding transfers to be included.
    #[arg(long, default_value = "60s", value_parser = duration)]
    pub fund_timeout: Duration,
    /// Sender keys: a file of hex private keys, one a line (never printed).
    #[arg(long, value_name = "FILE")]
    pub key_file: Option<PathBuf>,
    /// Sender keys: a BIP-39 phrase, accounts m/44'/60'/0'/0/i (never printed).
    #[arg(long, value_name = "PHRASE")]
    pub mnemonic: Option<String>,
    /// Sender keys: the dev mnemonic anvil and hardhat fund ("test test ... junk").
    #[arg(long)]
    pub dev: bool,
    /// The chain id to sign for [default: the node's eth_chainId; refused if the node answers
    /// another].
    #[arg(long)]
    pub chain_id: Option<u64>,
    /// WebSocket URL for the newHeads watch [default: the URL with ws:// or wss://].
    #[arg(long, value_name = "URL")]
    pub ws: Option<String>,
    /// Extra header, 'Name: value' (repeatable): sent with every HTTP request of the run
    /// (sends, setup, funding, block and status reads) and the WebSocket upgrades of its
    /// watches; values are never printed (an API key).
    #[arg(short = 'H', long = "header", value_name = "'Name: value'")]
    pub headers: Vec<String>,
    /// Poll at this interval instead of subscribing (Ethereum: eth_blockNumber instead of
    /// newHeads; Solana: getSignatureStatuses instead of signatureSubscribe); the figures are
    /// then late by up to one interval, printed beside them [default without WebSocket: 100ms].
    #[arg(long, value_name = "INTERVAL", value_parser = duration, conflicts_with = "require_ws")]
    pub poll: Option<Duration>,
    /// Exit 2 when the node has no WebSocket newHeads instead of falling back to polling.
    #[arg(long)]
    pub require_ws: bool,
    /// A transaction accepted but not in a block this long after its send is dropped.
    #[arg(long, default_value = "30s", value_parser = duration)]
    pub inclusion_timeout: Duration,
    /// Ethereum: blocks an inclusion stays open to a reorg before it is final (a reorg that
    /// replaces a kept block sends its transactions back to waiting and counts them
    /// reorged_out).
    #[arg(long, default_value_t = rpcbench::tx::inclusion::DEFAULT_CONFIRM_DEPTH, value_name = "BLOCKS")]
    pub confirm_depth: u64,
    /// Ethereum: whose receipts to read for their status (reverted = status 0): all, none,
    /// or a share such as 10% (the same transactions on every run: chosen by hash). An
    /// included transaction whose receipt is not read counts as included; a reverted count
    /// from a sample is labelled so.
    #[arg(long, default_value = "all", value_name = "all|none|N%", value_parser = receipt_sample)]
    pub receipts: ReceiptSample,
    /// How the helper threads (the signer, the landing watch, block and receipt reads) are
    /// scheduled. aside: below the pacer (the idle class, or one real-time priority below
    /// under chrt), so its sends never wait for them on a machine whose spare cycles are the
    /// run's; ordinary: as every other thread, for a machine whose cores other work keeps busy
    /// (a node beside the generator), where idle-class threads get no CPU at all.
    #[arg(long, value_enum, default_value_t = HelperThreadsArg::Aside, value_name = "aside|ordinary")]
    pub helper_threads: HelperThreadsArg,
    /// After an interrupt, wait this long for inclusions; the rest is reported pending.
    /// Ethereum: also the most the run spends, once its wait is over, reading the blocks the
    /// heads revealed and not read yet [default: 3 block times, or 5s when the block time is
    /// not known].
    #[arg(long, value_parser = duration)]
    pub grace: Option<Duration>,
    /// Legacy transactions at this gas price (wei, or e.g. 20gwei).
    #[arg(long, value_parser = wei, conflicts_with_all = ["max_fee", "priority_fee"])]
    pub gas_price: Option<u128>,
    /// EIP-1559 max fee per gas [default: twice the next base fee (eth_feeHistory) plus the
    /// priority fee].
    #[arg(long, value_parser = wei)]
    pub max_fee: Option<u128>,
    /// EIP-1559 priority fee per gas [default: eth_maxPriorityFeePerGas, else eth_feeHistory's
    /// median reward].
    #[arg(long, value_parser = wei)]
    pub priority_fee: Option<u128>,
    /// Gas limit of every transaction [default: one eth_estimateGas for the kind sent].
    #[arg(long, value_name = "GAS")]
    pub gas_limit: Option<u64>,
    /// Call this contract instead of sending value transfers (with --data).
    #[arg(long, value_name = "ADDR", conflicts_with = "deploy")]
    pub to: Option<String>,
    /// Call data (hex) of the --to contract call.
    #[arg(long, value_name = "HEX", requires = "to")]
    pub data: Option<String>,
    /// Deploy this contract creation code (hex) in every transaction instead.
    #[arg(long, value_name = "HEX")]
    pub deploy: Option<String>,
    /// Send even when the chain id is a public mainnet's (spends real money).
    #[arg(long)]
    pub mainnet: bool,
    /// Time allowed for one request.
    #[arg(long, default_value = "5s", value_parser = duration)]
    pub timeout: Duration,
    /// A condition the run must meet (repeatable): 'inclusion p99 < 3s', 'included > 99%',
    /// 'ack p99 < 50ms', 'rejected < 1%', 'dropped < 1%', 'pending < 1',
    /// 'included-rate >= 100/s'. A breach exits 1.
    #[arg(long = "threshold")]
    pub thresholds: Vec<String>,
    /// Also write the JSON report (histograms kept losslessly) to this file, for
    /// `rpcbench report FILE` in any format; written even when the run is interrupted.
    #[arg(long, value_name = "FILE")]
    pub save: Option<PathBuf>,
    /// Output format.
    #[arg(short, long, value_parser = crate::args::format::FormatParser::<TxFormat>::new(), default_value = "text", value_name = "FORMAT")]
    pub format: TxFormat,
    /// Write the report to this file (atomically) instead of standard output.
    #[arg(short, long, value_name = "FILE", value_parser = crate::args::output_file)]
    pub output: Option<std::path::PathBuf>,
    /// Live Prometheus metrics (--metrics-listen) and the dashboard switch (--no-tui).
    #[command(flatten)]
    pub metrics: crate::args::metrics::MetricsArgs,
    /// The node's chain [default: found from the node: Solana when it answers getGenesisHash].
    #[arg(long, value_enum)]
    pub chain: Option<TxChain>,
    /// Options only Solana reads.
    #[command(flatten)]
    pub solana: SolanaTxArgs,
}

/// The chains `tx` sends on.
/// `--helper-threads`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum HelperThreadsArg {
    /// Below the pacer.
    Aside,
    /// As every other thread.
    Ordinary,
}

impl From<HelperThreadsArg> for rpcbench::HelperThreads {
    fn from(arg: HelperThreadsArg) -> Self {
        match arg {
            HelperThreadsArg::Aside => rpcbench::HelperThreads::StepAside,
            HelperThreadsArg::Ordinary => rpcbench::HelperThreads::Ordinary,
        }
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum TxChain {
    /// EVM chains: `eth_sendRawTransaction`.
    Ethereum,
    /// Solana: `sendTransaction`.
    Solana,
}

/// The commitment flag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum CommitmentArg {
    /// Landed in a block the node processed.
    Processed,
    /// Voted on by a supermajority.
    Confirmed,
    /// Rooted.
    Finalized,
}

/// Options of `rpcbench tx` that only Solana reads.
#[derive(clap::Args, Debug)]
#[command(next_help_heading = "Solana")]
pub struct SolanaTxArgs {
    /// Payer keypair: a solana-keygen JSON file (repeat for more payers; never printed).
    #[arg(long, value_name = "FILE")]
    pub keypair: Vec<PathBuf>,
    /// Generate --senders payers and fund each with this many lamports by requestAirdrop
    /// (test validators, the mock) [default: 1000000000 when no --keypair is given].
    #[arg(long, value_name = "LAMPORTS")]
    pub airdrop: Option<u64>,
    /// Lamports each transfer sends (to its own payer, so no account needs rent).
    #[arg(long, default_value_t = 1)]
    pub lamports: u64,
    /// ComputeBudget SetComputeUnitPrice, micro-lamports per compute unit.
    #[arg(long, value_name = "MICROLAMPORTS")]
    pub cu_price: Option<u64>,
    /// Send with skipPreflight (no simulation before the transaction is forwarded).
    #[arg(long)]
    pub skip_preflight: bool,
    /// The commitment a transaction must reach to count as landed.
    #[arg(long, value_enum, default_value_t = CommitmentArg::Confirmed)]
    pub commitment: CommitmentArg,
    /// How often the recent blockhash is fetched again.
    #[arg(long, default_value = "400ms", value_parser = duration)]
    pub blockhash_refresh: Duration,
    /// How landings are seen over WebSocket: a signatureSubscribe per transaction, or one
    /// blockSubscribe whose blocks list their signatures (confirmed or finalized only, where
    /// the node enables it; a landed transaction that failed counts as landed).
    #[arg(long, value_enum, default_value_t = LandingArg::Signatures)]
    pub landing: LandingArg,
}

/// The landing flag's values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, clap::ValueEnum)]
pub enum LandingArg {
    /// A signatureSubscribe per transaction, before it is sent.
    Signatures,
    /// One blockSubscribe (transactionDetails "signatures") for the whole run.
    Blocks,
}

/// Parses a stage of the send rate, `DURATION:RATE` (`30s:100`, `1m:50/s`): a linear ramp
/// from the previous rate over the whole duration, as `subscribe --stage` reads its stages.
pub(crate) fn stage(text: &str) -> Result<rpcbench::engine::stages::Stage, String> {
    let (time, level) =
        text.rsplit_once(':').ok_or_else(|| format!("'{text}': expected DURATION:RATE, such as 30s:100"))?;
    let duration = duration(time)?;
    if duration.is_zero() {
        return Err(format!("'{text}': a stage lasts longer than zero"));
    }
    let level =
        if level.trim() == "0" { 0.0 } else { rate(level).map_err(|err| format!("'{text}': {err}"))? };
    Ok(rpcbench::engine::stages::Stage { level, duration, ramp: duration })
}

/// Parses an amount of wei: digits, optionally followed by `wei` or `gwei`.
pub(crate) fn wei(text: &str) -> Result<u128, String> {
    let trimmed = text.trim().to_ascii_lowercase();
    let (digits, scale) = match trimmed.strip_suffix("gwei") {
        Some(digits) => (digits, 1_000_000_000u128),
        None => (trimmed.strip_suffix("wei").unwrap_or(&trimmed), 1),
    };
    digits
        .trim()
        .parse::<u128>()
        .ok()
        .and_then(|n| n.checked_mul(scale))
        .ok_or_else(|| format!("'{text}' is not an amount of wei (e.g. 1000000000 or 1gwei)"))
}

/// `--receipts`: `all`, `none` or a share `N%` (0 < N <= 100, up to four decimals).
fn receipt_sample(text: &str) -> Result<ReceiptSample, String> {
    let text = text.trim();
    match text {
        "all" => return Ok(ReceiptSample::ALL),
        "none" => return Ok(ReceiptSample::NONE),
        _ => {}
    }
    let share = text
        .strip_suffix('%')
        .and_then(|number| number.trim().parse::<f64>().ok())
        .filter(|share| share.is_finite() && *share >= 0.0 && *share <= 100.0)
        .ok_or_else(|| format!("'{text}' is not all, none or a share such as 10%"))?;
    Ok(ReceiptSample::per_million((share * 10_000.0).round() as u32))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fee_amounts_read_wei_and_gwei_and_refuse_the_rest() {
        assert_eq!(wei("1000"), Ok(1000));
        assert_eq!(wei("2gwei"), Ok(2_000_000_000));
        assert_eq!(wei("7 wei"), Ok(7));
        assert!(wei("1.5gwei").is_err());
        assert!(wei("lots").is_err());
    }

    #[test]
    fn a_send_rate_stage_reads_duration_and_rate_and_ramps_over_its_whole_length() {
        let up = stage("30s:100").unwrap();
        assert_eq!(
            (up.duration, up.ramp, up.level),
            (Duration::from_secs(30), Duration::from_secs(30), 100.0)
        );
        assert_eq!(stage("10s:0").unwrap().level, 0.0);
        assert!(stage("100").is_err());
        assert!(stage("0s:100").is_err());
        assert!(stage("5s:fast").is_err());
    }

    #[test]
    fn a_receipt_share_reads_all_none_and_percent_and_samples_about_that_share_by_hash() {
        assert_eq!(receipt_sample("all").unwrap().label(), "all");
        assert_eq!(receipt_sample("none").unwrap().label(), "none");
        assert_eq!(receipt_sample("100%").unwrap(), ReceiptSample::ALL);
        assert_eq!(receipt_sample("10%").unwrap().label(), "a 10% sample");
        assert_eq!(receipt_sample("0.5%").unwrap().label(), "a 0.5% sample");
        for bad in ["some", "10", "101%", "-1%", "nan%"] {
            assert!(receipt_sample(bad).is_err(), "{bad}");
        }
        let tenth = receipt_sample("10%").unwrap();
        let hashes: Vec<[u8; 32]> = (0u64..10_000)
            .map(|i| {
                let mut hash = [0u8; 32];
                // Spread like a hash: a multiplicative mix of the index in the first bytes.
                hash[..8].copy_from_slice(&i.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
                hash
            })
            .collect();
        let read = hashes.iter().filter(|hash| tenth.reads(hash)).count();
        assert!((800..1_200).contains(&read), "{read} of 10,000 read at 10%");
        assert!(hashes.iter().all(|hash| ReceiptSample::ALL.reads(hash)));
        assert!(!hashes.iter().any(|hash| receipt_sample("none").unwrap().reads(hash)));
    }
}
