//! `rpcbench tx URL` on a Solana node: SOL transfers with a unique memo each, signed ahead of
//! the schedule with the newest blockhash (refreshed in the background) and sent open loop as
//! `sendTransaction` through the one engine. Each signature is subscribed
//! (`signatureSubscribe`, at `--commitment`) before its transaction may be sent, or, with
//! `--poll` (or without WebSocket), looked up with `getSignatureStatuses` at that interval,
//! the resolution printed beside the figures. Every transaction sent gets one final outcome:
//! landed, failed (landed with an error), expired (its blockhash's validity passed), dropped
//! (not landed within `--inclusion-timeout`), rejected (by reason) or pending, and the report
//! states that they add up to what was sent. One not seen landed in time is looked up with
//! `getSignatureStatuses` first (`rpcbench::tx::solana::landing_thread`): landed after all, failed, expired, or
//! dropped by cause (gone, below the commitment, not looked up).

use std::process::ExitCode;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use hdrhistogram::Histogram;
use rpcbench::client::Endpoint;
use rpcbench::engine::config::Load;
use rpcbench::engine::Run;
use rpcbench::report::tx::{TxThreshold, SOLANA_WORDS};
use rpcbench::report::tx_outcomes::{identity_broken_text, TxOutcomeFigures};
use rpcbench::tx::signer_watch::SignerWatch;
use rpcbench::tx::solana::ahead::{ahead_capacity, ReadyQueue, SignedTo, SolanaSigner, TransferPlan};
use rpcbench::tx::solana::blockhash::BlockhashFeed;
use rpcbench::tx::solana::keys::{load_keypair_file, SolanaKeypair};
use rpcbench::tx::solana::landing_thread::{LandingSources, SolanaLanding, SolanaLandingThread};
use rpcbench::tx::solana::watch::{
    Commitment, SentNews, SentSince, SignaturePoll, SignatureWatch, SignatureWatchError,
};
use rpcbench::SolanaSends;
use serde_json::{json, Value};

use super::tx_watch_health::{say_ends, WatchEnds};
use crate::args::tx::{CommitmentArg, LandingArg, TxArgs};
use crate::output;

/// Genesis hashes of public Solana clusters where sending costs real SOL.
const MAINNETS: [(&str, &str); 1] = [("5eykt4UsFv8P8NJdTREpY1vzqKqZKvdpKuc147dw2N9d", "Solana mainnet-beta")];
/// Transactions signed and subscribed ahead of the pacer with a signature watch (without
/// one, a second of the schedule: `ahead_capacity`).
const SIGN_AHEAD: usize = 256;
/// How long the run waits before its start for the signer to fill the signed-ahead queue.
const FILL_AHEAD_WAIT: Duration = Duration::from_secs(10);
/// Lamports per signature, the base fee.
const BASE_FEE: u64 = 5000;
/// Compute units a priority price is paid for at most (the default limit of one instruction).
const PRICED_UNITS: u64 = 200_000;
/// Polling interval when WebSocket is not there and `--poll` was not given.
const FALLBACK_POLL: Duration = Duration::from_millis(100);

impl CommitmentArg {
    fn commitment(self) -> Commitment {
        match self {
            CommitmentArg::Processed => Commitment::Processed,
            CommitmentArg::Confirmed => Commitment::Confirmed,
            CommitmentArg::Finalized => Commitment::Finalized,
        }
    }
}

/// Whether the node is a Solana node: its `getGenesisHash`, if it answers one.
pub fn genesis_hash(node: &Endpoint) -> Option<String> {
    let answer = node.call("getGenesisHash", None).ok()?;
    let text = answer.as_str()?;
    // A 32-byte hash in base58: 32 to 44 characters of its alphabet.
    let base58 = |c: char| c.is_ascii_alphanumeric() && !matches!(c, '0' | 'O' | 'I' | 'l');
    ((32..=44).contains(&text.len()) && text.chars().all(base58)).then(|| text.to_string())
}

/// The payers: keypair files, or generated ones funded by airdrop.
fn payers(args: &TxArgs, node: &Endpoint) -> Result<Vec<SolanaKeypair>, ExitCode> {
    let solana = &args.solana;
    if solana.blockhash_refresh.is_zero() {
        return Err(output::usage_error("--blockhash-refresh: must be longer than zero"));
    }
    if !solana.keypair.is_empty() {
        if solana.airdrop.is_some() {
            return Err(output::usage_error("--airdrop: funds generated payers; not with --keypair"));
        }
        if args.senders != 1 {
            return Err(output::usage_error(
                "--senders: the payers are the --keypair files (one each); --senders generates payers instead",
            ));
        }
        return solana
            .keypair
            .iter()
            .map(|path| load_keypair_file(path).map_err(output::usage_error))
            .collect();
    }
    if args.senders == 0 {
        return Err(output::usage_error("--senders: must be at least 1"));
    }
    // Each generated payer costs an airdrop before anything is sent: as many as one key
    // source gives on Ethereum at most.
    if args.senders > rpcbench::tx::keys::MAX_KEYS {
        return Err(output::usage_error(format!(
            "--senders {}: at most {} payers",
            args.senders,
            rpcbench::tx::keys::MAX_KEYS
        )));
    }
    let lamports = solana.airdrop.unwrap_or(1_000_000_000);
    let keypairs: Vec<SolanaKeypair> = (0..args.senders).map(|_| SolanaKeypair::generate()).collect();
    for keypair in &keypairs {
        let params = json!([keypair.pubkey_text(), lamports]);
        if let Err(err) = node.call("requestAirdrop", Some(&params)) {
            return Err(output::usage_error(format!(
                "--airdrop: the node refused requestAirdrop ({err}); give funded payers with --keypair"
            )));
        }
    }
    Ok(keypairs)
}

/// A payer's balance in lamports.
fn balance(node: &Endpoint, keypair: &SolanaKeypair) -> Result<u64, String> {
    let answer = node
        .call("getBalance", Some(&json!([keypair.pubkey_text(), {"commitment": "processed"}])))
        .map_err(|err| format!("getBalance: {err}"))?;
    answer["value"].as_u64().ok_or_else(|| format!("getBalance: not a balance: {answer}"))
}

/// The signatures sent since the last call and those final since, from the send ledger
/// (what the status poll and the block watch look for). The ledger keeps each send until the
/// watch has seen it, as long as the watch holds what this returns.
fn sent_since(sends: &Arc<SolanaSends>) -> SentSince {
    sends.ledger().follow();
    let follower = LedgerFollower(sends.clone());
    Box::new(move || {
        let (sent, finished) = follower.0.ledger().take_followed(|tx| (tx.index, tx.signature));
        SentNews { sent, finished }
    })
}

/// A watch's start (`method`: its subscription, for the messages): the watch; or, when it
/// could not start, the exit status of a usage error under `--require-ws`, else `None` after a
/// note that getSignatureStatuses polling stands in.
fn watch_or_polling(
    started: Result<SignatureWatch, SignatureWatchError>,
    method: &str,
    args: &TxArgs,
    node: &Endpoint,
    ws_url: &str,
) -> Result<Option<SignatureWatch>, ExitCode> {
    match started {
        Ok(watch) => Ok(Some(watch)),
        Err(err) if args.require_ws => {
            Err(output::usage_error(format!("--require-ws: no {method} at {} ({err})", node.scrub(ws_url))))
        }
        Err(err) => {
            eprintln!(
                "note: no {method} at {} ({err}); polling getSignatureStatuses every {} ms instead",
                node.scrub(ws_url),
                FALLBACK_POLL.as_millis()
            );
            Ok(None)
        }
    }
}

/// A watch following the send ledger: when it is dropped, sends no longer wait for it.
struct LedgerFollower(Arc<SolanaSends>);

impl Drop for LedgerFollower {
    fn drop(&mut self) {
        self.0.ledger().unfollow();
    }
}

pub fn run(args: TxArgs, node: Endpoint, genesis: String, thresholds: Vec<TxThreshold>) -> ExitCode {
    let solana = &args.solana;
    let mut config = match crate::plan::tx_config(&args, "sendTransaction") {
        Ok(config) => config,
        Err(err) => return output::usage_error(err),
    };
    let planned = crate::plan::tx_planned_sends(&config);
    let fee = BASE_FEE
        + solana.cu_price.map_or(0, |price| (price.saturating_mul(PRICED_UNITS)).div_ceil(1_000_000));
    if let Some((_, name)) = MAINNETS.iter().find(|(hash, _)| *hash == genesis) {
        if !args.mainnet {
            let cost = u128::from(fee) * u128::from(planned);
            return output::usage_error(format!(
                "genesis hash {genesis} is {name}: sending spends real SOL; up to {planned} tx x {fee} lamports = {:.6} SOL in fees. Pass --mainnet to send anyway",
                cost as f64 / 1e9
            ));
        }
    }
    let keypairs = match payers(&args, &node) {
        Ok(keypairs) => keypairs,
        Err(code) => return code,
    };
    // Funded before load starts: an airdrop may take a few slots to show.
    let needed = fee + solana.lamports;
    let funded_by = Instant::now() + args.timeout.max(Duration::from_secs(5));
    for (index, keypair) in keypairs.iter().enumerate() {
        loop {
            match balance(&node, keypair) {
                Ok(lamports) if lamports >= needed => break,
                Ok(lamports) if Instant::now() >= funded_by => {
                    return output::usage_error(format!(
                        "payer {index} ({}) holds {lamports} lamports, less than one transfer costs ({needed}); fund it first",
                        keypair.pubkey_text()
                    ))
                }
                Ok(_) => std::thread::sleep(Duration::from_millis(50)),
                Err(message) => return output::failure(message),
            }
        }
    }
    let commitment = solana.commitment.commitment();
    let blockhash = match BlockhashFeed::start(node.clone(), "confirmed", solana.blockhash_refresh) {
        Ok(feed) => feed,
        Err(err) => return output::failure(err),
    };
    let unix_ms = SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis());
    let plan = TransferPlan {
        to: None,
        lamports: solana.lamports,
        cu_price: solana.cu_price,
        memo_prefix: format!("rpcbench {unix_ms} {}", config.shard.index),
    };
    let count = config.length.requests.map_or(u64::MAX, |n| config.shard.share(n));
    // With a signature watch, what is ahead is also subscribed: that stays a few hundred.
    let watched = args.poll.is_none() && solana.landing != LandingArg::Blocks;
    let (rate, connection_cap) = match config.load {
        Load::Open { rate, max_connections, .. } => (rate, max_connections),
        Load::Closed { .. } => (0.0, 0),
    };
    let ready = ReadyQueue::new(if watched { SIGN_AHEAD } else { ahead_capacity(rate, planned) });
    let ws_url = args
        .ws
        .clone()
        .unwrap_or_else(|| args.url.replacen("https://", "wss://", 1).replacen("http://", "ws://", 1));
    let payer_count = keypairs.len();
    let sends = SolanaSends::new(ready.clone(), solana.skip_preflight, commitment.name());
    let blocks = args.poll.is_none() && solana.landing == LandingArg::Blocks;
    if blocks && commitment == Commitment::Processed {
        return output::usage_error(
            "--landing blocks: blockSubscribe takes --commitment confirmed or finalized (nodes refuse processed)",
        );
    }
    // Subscribe-before-send: the watch stands between the signer and the pacer (blocks: the
    // one block subscription is confirmed before anything is signed or sent).
    let mut block_stream_end = None;
    let (watch, signed_to) = if blocks {
        let started =
            SignatureWatch::start_blocks(&ws_url, commitment, args.timeout, sent_since(&sends), node.clone())
                .map(|(watch, end)| {
                    block_stream_end = Some(end);
                    watch
                });
        match watch_or_polling(started, "blockSubscribe", &args, &node, &ws_url) {
            Ok(watch) => (watch, SignedTo::Ready(ready.clone())),
            Err(exit) => return exit,
        }
    } else if args.poll.is_none() {
        let (to_watch, from_signer) = rpcbench::tx::solana::ahead::signed_channel(SIGN_AHEAD);
        let started = SignatureWatch::start(
            &ws_url,
            commitment,
            args.timeout,
            from_signer,
            ready.clone(),
            node.clone(),
        );
        match watch_or_polling(started, "signatureSubscribe", &args, &node, &ws_url) {
            Ok(Some(watch)) => (Some(watch), SignedTo::Watch(to_watch)),
            Ok(None) => (None, SignedTo::Ready(ready.clone())),
            Err(exit) => return exit,
        }
    } else {
        (None, SignedTo::Ready(ready.clone()))
    };
    let signer = SolanaSigner::start(keypairs, plan, blockhash.reader(), count, signed_to);
    // Without a watch, getSignatureStatuses: every --poll, or every FALLBACK_POLL when the
    // watch could not start.
    let poll_every = watch.is_none().then(|| args.poll.unwrap_or(FALLBACK_POLL));
    let poll = match poll_every {
        Some(every) => match SignaturePoll::start(node.clone(), commitment, every, sent_since(&sends)) {
            Ok(poll) => Some(poll),
            Err(err) => return output::failure(err),
        },
        None => None,
    };
    config.solana_sends = Some(sends.clone());
    let shard = config.shard;
    let dashboard_wanted = crate::live_dashboard::wanted(false, args.metrics.no_tui);
    let (_metrics_server, store) =
        match crate::live_dashboard::attach_store(&args.metrics, &mut config, dashboard_wanted) {
            Ok(attached) => attached,
            Err(err) => return output::usage_error(err),
        };
    let live = store.clone().filter(|_| dashboard_wanted).map(|live| {
        let mut header = crate::live_dashboard::DashboardHeader::of_run("tx", &config);
        header.load = format!(
            "open loop, {}, {payer_count} payer(s), SOL transfers",
            super::tx_report::rate_text(&args)
        );
        (live, header)
    });
    // Signed ahead before the schedule starts: the first sends never wait for a signature.
    ready.wait_filled(Instant::now() + FILL_AHEAD_WAIT);
    let signer_rate = super::tx_watch_health::shard_rate(&config);
    let run = match Run::new(config) {
        Ok(run) => run,
        Err(err) => return output::usage_error(err),
    };
    let stop = run.stop_handle();
    crate::signals::stop_on_interrupt(stop.clone());
    // On a terminal: the dashboard, through sending and the wait for landings.
    let dashboard = live.map(|(live, header)| {
        crate::live_dashboard::LiveDashboard::start(header, vec![(String::new(), live)], stop.clone())
    });
    // Sends and landings go into the bounded book from the start of sending.
    let blockhash = Arc::new(blockhash);
    let landing =
        SolanaLanding::new(node.clone(), commitment, blockhash.clone(), args.inclusion_timeout, args.timeout);
    let sending = match SolanaLandingThread::start(
        landing,
        sends.clone(),
        LandingSources { watch, poll },
        store.clone(),
    ) {
        Ok(sending) => sending,
        Err(err) => return output::failure(format!("cannot start the landing watch: {err}")),
    };
    let waits = ready.clone();
    let signer_watch =
        super::tx_watch_health::watch_signer(move || waits.pop_waits(), signer_rate, dashboard.is_some());
    let record = run.execute();
    signer_watch.map(SignerWatch::finish);
    let (mut landing, sources, landing_panic) = sending.finish();
    let record = match record {
        Ok(record) => record,
        Err(err) => return output::failure(err),
    };
    // Sending is over: the signer stops, nothing more is subscribed.
    ready.close();
    signer.finish();

    // Wait for landings: until nothing is unfinished (what was not seen within the inclusion
    // timeout is looked up and settled), or (after an interrupt) the grace. A landing thread
    // that panicked stopped the watch: nothing is waited for.
    if landing_panic.is_none() {
        landing.step(&sends, &sources, true, Instant::now());
    }
    let mut deadline = landing.noted.last_send.unwrap_or_else(Instant::now) + args.inclusion_timeout;
    let mut grace_started = false;
    while landing_panic.is_none() {
        let now = Instant::now();
        landing.step(&sends, &sources, true, now);
        if (stop.is_stopped() || record.interrupted) && !grace_started {
            grace_started = true;
            deadline = deadline.min(now + args.grace.unwrap_or(Duration::from_secs(5)));
        }
        if let Some(live) = &store {
            live.publish_transactions(landing.live_figures());
        }
        if landing.book.unfinished() == 0 || now >= deadline {
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let (mut subscribed, mut refused, mut unwatched, mut caught_up) = (0, 0, 0, 0);
    let mut last_landings = Vec::new();
    let mut watch_ends = WatchEnds::none();
    if let Some(watch) = sources.watch {
        let (counts, health) = (watch.counts(), watch.health());
        // Stopped first: its counts are final then.
        last_landings.extend(watch.stop());
        subscribed = counts.subscribed.load(std::sync::atomic::Ordering::Relaxed);
        refused = counts.refused.load(std::sync::atomic::Ordering::Relaxed);
        unwatched += counts.unwatched.load(std::sync::atomic::Ordering::Relaxed);
        let what = if blocks { "block stream" } else { "signature watch" };
        let after = "what was sent since was looked up with getSignatureStatuses once not seen landed";
        watch_ends = say_ends(what, &health, after);
        caught_up = health.caught_up();
    }
    // A block stream that could not reconnect: the sends after its end were not watched (the
    // status lookup settled them).
    unwatched += block_stream_end.as_ref().map_or(0, |end| end.unwatched());
    let mut poll_failures = 0;
    if let Some(poll) = sources.poll {
        poll_failures = poll.failures();
        last_landings.extend(poll.stop());
    }
    if let Some(message) = &landing_panic {
        // What the sources saw since is not fed to a watch that stopped.
        last_landings.clear();
        watch_ends.landing_panicked(message, "what was not seen landed by then is pending at the end");
    }
    drop(dashboard);
    let tally = landing.finish(&sends, last_landings, Instant::now(), landing_panic.is_none());
    let acks = std::mem::take(&mut landing.noted.acks);
    // Landings the lookup found have no time: the rate is over the ones seen.
    let landed_window = match (landing.noted.first_send, landing.last_landed) {
        (Some(first), Some(last)) => last.saturating_duration_since(first),
        _ => Duration::ZERO,
    };
    let per_second = super::tx_report::per_second;
    let accepted = landing.noted.accepted;
    let outcomes = TxOutcomeFigures {
        sent: tally.sent,
        accepted,
        finals: tally.finals(),
        rejected_by_reason: &acks.rejected_by,
        oldest_pending: tally.oldest_pending,
        dropped_by: Some(&tally.dropped_by),
        reorgs: None,
    };
    let identity = outcomes.adds_up();
    let ms = |hist: &Histogram<u64>, q: f64| {
        if hist.is_empty() {
            Value::Null
        } else {
            json!(hist.value_at_quantile(q) as f64 / 1000.0)
        }
    };
    let slots = |q: f64| {
        if tally.slots_after.is_empty() {
            Value::Null
        } else {
            json!(tally.slots_after.value_at_quantile(q))
        }
    };
    let (seen_by, resolution_ms) = match poll_every {
        Some(every) => {
            (format!("getSignatureStatuses every {} ms", every.as_millis()), json!(every.as_millis() as u64))
        }
        None if blocks => ("blockSubscribe (signatures)".to_string(), Value::Null),
        None => ("signatureSubscribe".to_string(), Value::Null),
    };
    let mut report = json!({
        "chain": SOLANA_WORDS.chain,
        "target": node.redacted(),
        "genesis_hash": genesis,
        "senders": payer_count,
        "commitment": commitment.name(),
        "skip_preflight": solana.skip_preflight,
        "cu_price_micro_lamports": solana.cu_price,
        "landing_seen_by": seen_by,
        "resolution_ms": resolution_ms,
        "interrupted": grace_started,
        "landed_unseen": tally.landed_unseen,
        "looked_up": tally.looked_up,
        "status_lookup_failures": landing.lookup_failures,
        "send_to_ack_ms": {"p50": ms(&acks.ack_us, 0.5), "p90": ms(&acks.ack_us, 0.9), "p99": ms(&acks.ack_us, 0.99), "max": ms(&acks.ack_us, 1.0)},
        "send_to_landed_ms": {"p50": ms(&tally.latency_us, 0.5), "p90": ms(&tally.latency_us, 0.9), "p99": ms(&tally.latency_us, 0.99), "max": ms(&tally.latency_us, 1.0)},
        "slots_after_send": {"p50": slots(0.5), "p99": slots(0.99), "max": slots(1.0)},
        "send_seconds": record.elapsed.as_secs_f64(),
        "sent_per_second": per_second(tally.sent, record.elapsed),
        "landed_per_second": per_second(tally.landed - tally.landed_unseen, landed_window),
        "inclusion_timeout_ms": args.inclusion_timeout.as_millis() as u64,
        "subscriptions": subscribed,
        "subscriptions_refused": refused,
        "sent_unwatched": unwatched,
        "watch_ended": watch_ends.last_end,
        "watch_reconnects": watch_ends.reconnects,
        "watch_gave_up": watch_ends.gave_up,
        "landed_by_catch_up": caught_up,
        "status_poll_failures": poll_failures,
        "blockhash_refresh_failures": blockhash.failures(),
        // Why sends left late, as Ethereum's report says it (`cmd/tx.rs`).
        "late_sends": {
            "over_2ms": record.totals.late,
            "at_connection_cap": record.totals.late_at_cap,
            "connection_cap": connection_cap,
            "waited_for_signer": ready.pop_waits(),
            "helper_threads": super::tx_report::helper_threads_name(),
        },
    });
    outcomes.write_into(SOLANA_WORDS, &mut report);
    let figures = super::tx_report::TxRunFigures::new(
        std::mem::take(&mut landing.noted.timeline),
        &acks.ack_us,
        &tally.latency_us,
        &record.totals.send_lag,
        &tally.slots_after,
    );
    super::tx_report::finish(
        &args,
        report,
        figures,
        &thresholds,
        shard,
        identity,
        &identity_broken_text(SOLANA_WORDS),
    )
}
