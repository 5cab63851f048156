//! The floor of `bench/geyser.sh`: a plain consumer of a Yellowstone Geyser feed that does
//! nothing but decode, to compare rpcbench's CPU per update with. It uses the published
//! protobuf definitions (`yellowstone-grpc-proto`) through their generated tonic client, opens
//! the same subscriptions as the bench (`SUBS` of slots with every stage and `SUBS` of all
//! transactions, `PER_CONN` streams per HTTP/2 connection) on one thread, decodes every
//! `SubscribeUpdate` whole (as rpcbench's kinds do), counts them and prints updates, the rate
//! and its CPU time per update. It keeps no figures beyond the counts.
//!
//! Built only for the bench: `cargo build --release -p rpcbench --features bench-floor --bin
//! geyser-decode-floor`. Usage: `geyser-decode-floor grpc://127.0.0.1:PORT SECS SUBS PER_CONN`
//! (a feed on 127.0.0.1 that the bench started).

use std::collections::HashMap;
use std::process::ExitCode;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use yellowstone_grpc_proto::geyser::geyser_client::GeyserClient;
use yellowstone_grpc_proto::geyser::{
    SubscribeRequest, SubscribeRequestFilterSlots, SubscribeRequestFilterTransactions, SubscribeUpdate,
};

/// The settings of one floor run.
struct FloorArgs {
    origin: String,
    secs: u64,
    subs: usize,
    per_conn: usize,
}

fn parse_args() -> Option<FloorArgs> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [url, secs, subs, per_conn] = args.as_slice() else { return None };
    let authority = url.strip_prefix("grpc://")?;
    if !authority.starts_with("127.0.0.1:") {
        // The bench's own mock feed only.
        return None;
    }
    Some(FloorArgs {
        origin: format!("http://{authority}"),
        secs: secs.parse().ok().filter(|&secs| secs > 0 && secs <= 600)?,
        subs: subs.parse().ok().filter(|&subs| subs > 0 && subs <= 100_000)?,
        per_conn: per_conn.parse().ok().filter(|&n| n > 0)?,
    })
}

/// The two kinds of the bench: slots with every stage (`geyser-stages`), all transactions
/// (`geyser-tx`).
fn request(stages: bool) -> SubscribeRequest {
    let mut request = SubscribeRequest::default();
    if stages {
        let filter =
            SubscribeRequestFilterSlots { filter_by_commitment: Some(false), interslot_updates: Some(true) };
        request.slots = HashMap::from([("rpcbench".to_string(), filter)]);
    } else {
        let filter = SubscribeRequestFilterTransactions::default();
        request.transactions = HashMap::from([("rpcbench".to_string(), filter)]);
    }
    request
}

/// CPU time of this process so far (user and system), from `/proc/self/stat`, as the bench
/// measures rpcbench's.
fn process_cpu() -> Duration {
    let Ok(stat) = std::fs::read_to_string("/proc/self/stat") else { return Duration::ZERO };
    // The fields after the command name's closing parenthesis; utime and stime are the 14th
    // and 15th of the whole line.
    let Some(rest) = stat.rfind(')').map(|at| &stat[at + 2..]) else { return Duration::ZERO };
    let fields: Vec<&str> = rest.split(' ').collect();
    let ticks: u64 =
        fields.get(11..13).map_or(0, |times| times.iter().filter_map(|t| t.parse::<u64>().ok()).sum());
    Duration::from_secs_f64(ticks as f64 / rustix::param::clock_ticks_per_second() as f64)
}

fn main() -> ExitCode {
    let Some(args) = parse_args() else {
        eprintln!("usage: geyser-decode-floor grpc://127.0.0.1:PORT SECS SUBS PER_CONN");
        return ExitCode::from(2);
    };
    let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: {err}");
            return ExitCode::FAILURE;
        }
    };
    runtime.block_on(run(args))
}

async fn run(args: FloorArgs) -> ExitCode {
    let updates = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let total = args.subs * 2;
    let mut tasks = tokio::task::JoinSet::new();
    let cpu_start = process_cpu();
    let started = Instant::now();
    let end = started + Duration::from_secs(args.secs);
    for connection in 0..total.div_ceil(args.per_conn) {
        let channel = match tonic::transport::Endpoint::from_shared(args.origin.clone()) {
            Ok(endpoint) => match endpoint.connect().await {
                Ok(channel) => channel,
                Err(err) => {
                    eprintln!("error: connect: {err}");
                    return ExitCode::FAILURE;
                }
            },
            Err(err) => {
                eprintln!("error: {err}");
                return ExitCode::FAILURE;
            }
        };
        let first = connection * args.per_conn;
        for index in first..(first + args.per_conn).min(total) {
            let mut client = GeyserClient::new(channel.clone()).max_decoding_message_size(64 << 20);
            let (updates, bytes) = (updates.clone(), bytes.clone());
            let stages = index % 2 == 0;
            tasks.spawn(async move {
                let requests =
                    futures_util::stream::iter([request(stages)]).chain(futures_util::stream::pending());
                let Ok(response) = client.subscribe(requests).await else { return };
                let mut stream = response.into_inner();
                // tonic decodes each message whole into a `SubscribeUpdate`.
                while let Ok(Some(update)) = stream.message().await {
                    let update: SubscribeUpdate = update;
                    updates.fetch_add(1, Ordering::Relaxed);
                    bytes.fetch_add(prost::Message::encoded_len(&update) as u64, Ordering::Relaxed);
                }
            });
        }
    }
    // Every task runs on this one thread (a current-thread runtime): its CPU time is theirs.
    tokio::time::sleep_until(end.into()).await;
    let elapsed = started.elapsed().as_secs_f64();
    let cpu = (process_cpu() - cpu_start).as_secs_f64();
    let count = updates.load(Ordering::Relaxed);
    println!(
        "floor: {count} updates in {elapsed:.2}s ({:.0}/s), {:.0} bytes/s, cpu {cpu:.2}s, cpu per update {:.2} us, core share {:.1}%",
        count as f64 / elapsed,
        bytes.load(Ordering::Relaxed) as f64 / elapsed,
        cpu * 1e6 / count.max(1) as f64,
        100.0 * cpu / elapsed
    );
    tasks.abort_all();
    ExitCode::SUCCESS
}
