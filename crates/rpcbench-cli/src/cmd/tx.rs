//! `rpcbench tx URL`: signed Ethereum value transfers sent open loop at a rate through the one
//! engine (`eth_sendRawTransaction`, signed ahead of the schedule), with `newHeads` watched
//! over WebSocket from before the first send so each transaction's inclusion time is the
//! arrival of the head whose block carries it. The report gives every transaction sent exactly
//! one final outcome: included, rejected (by reason), dropped (not included within
//! `--inclusion-timeout`) or pending at the end, and states the identity that they add up.

use std::process::ExitCode;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use rpcbench::client::Endpoint;
use rpcbench::engine::config::Load;
use rpcbench::engine::Run;
use rpcbench::report::tx::ETHEREUM_WORDS;
use rpcbench::report::tx_outcomes::{identity_broken_text, TxOutcomeFigures, TxReorgFigures};
use rpcbench::tx::ahead::SignedAhead;
use rpcbench::tx::block_shares::BlockShares;
use rpcbench::tx::ethereum_landing::{EthereumLanding, EthereumLandingThread};
use rpcbench::tx::headroom;
use rpcbench::tx::keys::{keys_from_mnemonic, load_key_file, Address, SenderKey, DEV_MNEMONIC};
use rpcbench::tx::nonce::NonceBook;
use rpcbench::tx::poll::{HeadPoll, HeadSource};
use rpcbench::tx::quantity::hex_quantity;
use rpcbench::tx::resync::{NonceLookupError, NonceSource};
use rpcbench::tx::sign::{Fees, UnsignedTx};
use rpcbench::tx::signer_watch::SignerWatch;
use rpcbench::tx::watch::HeadWatch;
use rpcbench::TxSends;

use serde_json::{json, Value};

use crate::args::tx::{TxArgs, TxChain};
use crate::output;

/// Chain ids of public mainnets: sending there spends real money.
const MAINNETS: [(u64, &str); 6] = [
    (1, "Ethereum"),
    (137, "Polygon"),
    (8453, "Base"),
    (10, "OP Mainnet"),
    (42161, "Arbitrum One"),
    (56, "BNB Smart Chain"),
];
/// Where each transfer goes.
const TRANSFER_TO: &str = "0x000000000000000000000000000000000000dEaD";
/// Wei each transfer sends.
const TRANSFER_VALUE: u128 = 1;
/// The polling interval when the node has no WebSocket and --poll is not given.
const DEFAULT_POLL: Duration = Duration::from_millis(100);

fn gwei(wei: u128) -> String {
    format!("{:.3} gwei", wei as f64 / 1e9)
}

/// What each transaction does: a value transfer, a contract call or a deploy.
struct TxKind {
    name: &'static str,
    to: Option<Address>,
    value: u128,
    data: Vec<u8>,
}

fn hex_flag(flag: &str, text: &str) -> Result<Vec<u8>, String> {
    let digits = text.trim().strip_prefix("0x").unwrap_or(text.trim());
    if digits.len() % 2 != 0 {
        return Err(format!("{flag}: an odd number of hex digits"));
    }
    (0..digits.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(digits.get(i..i + 2).unwrap_or("zz"), 16))
        .collect::<Result<Vec<u8>, _>>()
        .map_err(|_| format!("{flag}: not hex (digits 0-9 a-f, optionally after 0x)"))
}

fn tx_kind(args: &TxArgs) -> Result<TxKind, String> {
    if let Some(code) = &args.deploy {
        let data = hex_flag("--deploy", code)?;
        if data.is_empty() {
            return Err("--deploy: the creation code is empty".into());
        }
        return Ok(TxKind { name: "deploy", to: None, value: 0, data });
    }
    if let Some(to) = &args.to {
        let address =
            Address::parse(to).ok_or_else(|| format!("--to: '{to}' is not a 20-byte hex address"))?;
        let data = match &args.data {
            Some(data) => hex_flag("--data", data)?,
            None => Vec::new(),
        };
        return Ok(TxKind { name: "call", to: Some(address), value: 0, data });
    }
    Ok(TxKind { name: "transfer", to: Address::parse(TRANSFER_TO), value: TRANSFER_VALUE, data: Vec::new() })
}

/// `--ws` must be a ws:// or wss:// URL: a URL that is not one is a mistake in the flag, not a
/// node without WebSocket (it fell back to polling, exit 0).
fn ws_flag(url: &str) -> Result<(), String> {
    match rpcbench::Target::parse_websocket(url) {
        Ok(target) if target.websocket => Ok(()),
        Ok(target) => Err(format!("--ws: '{}' is not a ws:// or wss:// URL", target.redacted())),
        Err(err) => Err(format!("--ws: {err}")),
    }
}

/// The senders of this shard: the key source's accounts `offset .. offset + --senders` (shard
/// I of N starts at (I-1) x --senders, so that no two shards share a nonce sequence).
fn sender_keys(args: &TxArgs, offset: usize) -> Result<Vec<SenderKey>, String> {
    if args.senders == 0 {
        return Err("--senders: must be at least 1".into());
    }
    let mut keys = if let Some(path) = &args.key_file {
        load_key_file(path).map_err(|err| err.to_string())?
    } else {
        let phrase = args.mnemonic.as_deref().unwrap_or(DEV_MNEMONIC);
        let flag = if args.dev { "--dev" } else { "--mnemonic" };
        keys_from_mnemonic(phrase, offset as u32, args.senders).map_err(|err| format!("{flag}: {err}"))?
    };
    if args.key_file.is_some() {
        if keys.len() < offset + args.senders {
            return Err(format!(
                "--senders {}: the key file holds {} keys, this shard needs keys {} to {}",
                args.senders,
                keys.len(),
                offset + 1,
                offset + args.senders
            ));
        }
        keys.drain(..offset);
    }
    keys.truncate(args.senders);
    Ok(keys)
}

pub fn run(args: TxArgs) -> ExitCode {
    rpcbench::set_helper_threads(args.helper_threads.into());
    let headers = match crate::plan::parse_headers(&args.headers) {
        Ok(headers) => headers,
        Err(err) => return output::usage_error(err),
    };
    let node = match Endpoint::parse(&args.url, args.timeout).and_then(|node| node.with_headers(headers)) {
        Ok(node) => node,
        Err(err) => return output::usage_error(err),
    };
    // Before any transaction is signed or funded: a run must not end in "cannot save".
    for (flag, path) in [("--save", &args.save), ("--output", &args.output)] {
        if let Some(Err(err)) = path.as_deref().map(|path| output::check_file_path(flag, path)) {
            return output::usage_error(err);
        }
    }
    if let Some(Err(err)) = args.ws.as_deref().map(ws_flag) {
        return output::usage_error(err);
    }
    let thresholds = match super::tx_report::thresholds(&args) {
        Ok(thresholds) => thresholds,
        Err(code) => return code,
    };
    // Solana when asked for, or when the node answers getGenesisHash (an EVM node does not).
    if args.chain != Some(TxChain::Ethereum) {
        match super::tx_solana::genesis_hash(&node) {
            Some(genesis) => {
                if let Err(err) = super::tx_chain_flags::other_chain_flags(&args, true) {
                    return output::usage_error(err);
                }
                return super::tx_solana::run(args, node, genesis, thresholds);
            }
            None if args.chain == Some(TxChain::Solana) => {
                return output::usage_error("--chain solana: the node does not answer getGenesisHash")
            }
            None => {}
        }
    }
    if let Err(err) = super::tx_chain_flags::other_chain_flags(&args, false) {
        return output::usage_error(err);
    }
    if args.key_file.is_none() && args.mnemonic.is_none() && !args.dev {
        return output::usage_error("one of --key-file, --mnemonic or --dev is required on an EVM chain");
    }
    let mut config = match crate::plan::tx_config(&args, "eth_sendRawTransaction") {
        Ok(config) => config,
        Err(err) => return output::usage_error(err),
    };
    // Connections for the answers of 10 ms at the (highest) rate, and 100 ms of sends signed
    // ahead of this shard's pacer, so a burst of slow answers or a signer that lost its core
    // does not hold a send back (`rpcbench::tx::headroom`).
    let (mut sign_ahead, mut connection_cap) = (headroom::MIN_SIGNED_AHEAD, 0);
    if let Load::Open { rate, max_connections, .. } = &mut config.load {
        *max_connections = headroom::send_connections(*rate);
        connection_cap = *max_connections;
    }
    if let Some(rate) = super::tx_watch_health::shard_rate(&config) {
        sign_ahead = headroom::signed_ahead(rate);
    }
    let planned = crate::plan::tx_planned_sends(&config);
    let keys = match sender_keys(&args, config.shard.index * args.senders) {
        Ok(keys) => keys,
        Err(message) => return output::usage_error(message),
    };
    let kind = match tx_kind(&args) {
        Ok(kind) => kind,
        Err(message) => return output::usage_error(message),
    };
    let ask = |method: &str, params: Value| {
        node.call(method, Some(&params)).map_err(|err| format!("{method}: {}", node.scrub(&err.to_string())))
    };
    let ask_quantity = |method: &str, params: Value| -> Result<u128, String> {
        let answer = ask(method, params)?;
        hex_quantity(&answer).map_err(|_| format!("{method}: not a hex quantity: {answer}"))
    };
    // The node's own chain id, even with --chain-id: a mismatch is refused, and the mainnet
    // guard cannot be passed by naming another chain.
    let chain_id = match (args.chain_id, ask_quantity("eth_chainId", json!([]))) {
        (Some(given), Ok(answered)) if u128::from(given) != answered => {
            return output::usage_error(format!("--chain-id {given}: the node's eth_chainId is {answered}"))
        }
        (Some(given), _) => given,
        (None, Ok(answered)) => match u64::try_from(answered) {
            Ok(chain_id) => chain_id,
            Err(_) => {
                return output::failure(format!("eth_chainId: {answered} is wider than a chain id (64 bits)"))
            }
        },
        (None, Err(message)) => return output::failure(message),
    };
    let (fees, fee_source) = match fees(&args, &ask, &ask_quantity) {
        Ok(fees) => fees,
        Err(FeeError::Flag(message)) => return output::usage_error(message),
        Err(FeeError::Node(message)) => return output::failure(message),
    };
    // One eth_estimateGas for the kind sent, from the first sender.
    let gas_limit = match args.gas_limit {
        Some(0) => return output::usage_error("--gas-limit: must be more than 0"),
        Some(gas) => gas,
        None => {
            let mut call =
                json!({"from": keys[0].address().to_string(), "value": format!("0x{:x}", kind.value)});
            if let Some(to) = kind.to {
                call["to"] = json!(to.to_string());
            }
            if !kind.data.is_empty() {
                call["data"] =
                    json!(format!("0x{}", kind.data.iter().map(|b| format!("{b:02x}")).collect::<String>()));
            }
            match ask_quantity("eth_estimateGas", json!([call])) {
                Ok(gas) => gas.min(u128::from(u64::MAX)) as u64,
                Err(message) => {
                    return output::failure(format!("{message} (pass --gas-limit to skip the estimate)"))
                }
            }
        }
    };
    if let Some((_, name)) = MAINNETS.iter().find(|(id, _)| *id == chain_id) {
        if !args.mainnet {
            let cost =
                u128::from(gas_limit).saturating_mul(fees.max_price()).saturating_mul(u128::from(planned));
            return output::usage_error(format!(
                "chain id {chain_id} is {name} mainnet: sending spends real money; up to {planned} tx x {gas_limit} gas x {} = {:.6} ETH (plus the value sent). Pass --mainnet to send anyway",
                gwei(fees.max_price()),
                cost as f64 / 1e18
            ));
        }
    }
    let cost = super::tx_fund::RunCost { chain_id, fees, gas_limit, value: kind.value, planned };
    match super::tx_fund::fund(&args, &node, &keys, &cost) {
        Ok(()) => {}
        Err((true, message)) => return output::usage_error(message),
        Err((false, message)) => return output::failure(message),
    }
    let mut starting = Vec::with_capacity(keys.len());
    let per_tx = u128::from(gas_limit).saturating_mul(fees.max_price()).saturating_add(kind.value);
    for (index, key) in keys.iter().enumerate() {
        let address = key.address().to_string();
        let balance = ask("eth_getBalance", json!([address, "latest"])).and_then(|answer| {
            hex_quantity(&answer)
                .map_err(|_| format!("eth_getBalance: not a hex quantity of at most 256 bits: {answer}"))
        });
        match balance {
            Ok(balance) if balance < per_tx => {
                return output::usage_error(format!(
                    "--senders: sender {index} ({address}) holds {balance} wei, less than one transaction costs at most ({per_tx} wei); fund it first"
                ))
            }
            Ok(_) => {}
            Err(message) => return output::failure(message),
        }
        match ask_quantity("eth_getTransactionCount", json!([address, "pending"])) {
            Ok(nonce) => starting.push(nonce as u64),
            Err(message) => return output::failure(message),
        }
    }
    let ws_url = args
        .ws
        .clone()
        .unwrap_or_else(|| args.url.replacen("https://", "wss://", 1).replacen("http://", "ws://", 1));
    // Subscribed before the first send, so no inclusion is missed; without WebSocket (or with
    // --poll) the head is polled from before the first send instead, at a stated resolution.
    let subscribed = match args.poll {
        Some(_) => None,
        None => match HeadWatch::start_polling_between(&ws_url, args.timeout, node.clone()) {
            Ok(watch) => Some(watch),
            Err(err) if args.require_ws => {
                return output::usage_error(format!(
                    "--ws: cannot watch newHeads at {}: {err}",
                    node.scrub(&ws_url)
                ))
            }
            Err(err) => {
                eprintln!(
                    "rpcbench: no newHeads at {} ({err}); polling eth_blockNumber every {} ms instead (--require-ws to refuse)",
                    node.scrub(&ws_url),
                    args.poll.unwrap_or(DEFAULT_POLL).as_millis()
                );
                None
            }
        },
    };
    let head_at_start = match ask_quantity("eth_blockNumber", json!([])) {
        Ok(head) => head as u64,
        Err(message) => return output::failure(message),
    };
    let watch = match subscribed {
        Some(watch) => HeadSource::Subscribed(watch),
        None => match HeadPoll::start(node.clone(), args.poll.unwrap_or(DEFAULT_POLL), head_at_start) {
            Ok(poll) => HeadSource::Polled(poll),
            Err(err) => return output::failure(format!("cannot start the head poll: {err}")),
        },
    };
    let resolution = watch.resolution();
    let template = UnsignedTx {
        chain_id,
        nonce: 0,
        fees,
        gas_limit,
        to: kind.to,
        value: kind.value,
        data: kind.data.clone(),
    };
    let senders = keys.len();
    // The signer does not stop at -n: what a nonce resync drops stale is signed again, and the
    // engine's count bounds the sends (a signer that stopped at -n left the last requests empty).
    let signer_count = u64::MAX;
    let addresses: Vec<String> = keys.iter().map(|key| key.address().to_string()).collect();
    let pending = Box::new(NodeNonces { node: node.clone(), addresses: addresses.clone() });
    let book = NonceBook::new(starting);
    let sends = TxSends::new(match super::tx_fund::top_up_plan(&args, &cost, senders) {
        Some(plan) => {
            SignedAhead::start_with_top_ups(keys, book, template, signer_count, sign_ahead, pending, plan)
        }
        None => SignedAhead::start_with_resync(keys, book, template, signer_count, sign_ahead, pending),
    });
    config.tx_sends = Some(sends.clone());
    let shard = config.shard;
    let dashboard_wanted = crate::live_dashboard::wanted(false, args.metrics.no_tui);
    let (_metrics_server, store) =
        match crate::live_dashboard::attach_store(&args.metrics, &mut config, dashboard_wanted) {
            Ok(attached) => attached,
            Err(err) => return output::usage_error(err),
        };
    let live = store.clone().filter(|_| dashboard_wanted).map(|live| {
        let mut header = crate::live_dashboard::DashboardHeader::of_run("tx", &config);
        header.load =
            format!("open loop, {}, {senders} sender(s), {}", super::tx_report::rate_text(&args), kind.name);
        (live, header)
    });
    let signer_rate = super::tx_watch_health::shard_rate(&config);
    let run = match Run::new(config) {
        Ok(run) => run,
        Err(err) => return output::usage_error(err),
    };
    let stop = run.stop_handle();
    crate::signals::stop_on_interrupt(stop.clone());
    // On a terminal: the dashboard, through sending and the wait for inclusions.
    let dashboard = live.map(|(live, header)| {
        let dashboard = crate::live_dashboard::LiveDashboard::start(
            header,
            vec![(String::new(), live.clone())],
            stop.clone(),
        );
        (live, dashboard)
    });
    // While sending, the landing watch feeds the book: each send (once answered) and each
    // head's block, so a reorg is seen as it happens and the book holds only what is open.
    let mut landing = EthereumLanding::new(
        node.clone(),
        args.inclusion_timeout,
        args.confirm_depth,
        head_at_start,
        args.receipts,
        args.timeout,
    );
    let sending = match EthereumLandingThread::start(landing, sends.clone(), watch, store.clone()) {
        Ok(sending) => sending,
        Err(err) => return output::failure(format!("cannot start the landing watch: {err}")),
    };
    let waits = sends.clone();
    let signer_watch = super::tx_watch_health::watch_signer(
        move || waits.waits_for_signer(),
        signer_rate,
        dashboard.is_some(),
    );
    let record = run.execute();
    signer_watch.map(SignerWatch::finish);
    let (landing_back, watch, landing_panic) = sending.finish();
    landing = landing_back;
    let record = match record {
        Ok(record) => record,
        Err(err) => return output::failure(err),
    };
    let (fresh, _) = landing.take_from(&sends, true, Instant::now());
    if landing_panic.is_none() {
        landing.feed(&fresh);
    } else {
        landing.count_unwatched(&fresh);
    }
    let accepted = landing.noted.accepted;

    // Wait for inclusions: until nothing is waiting, the inclusion timeout of the last send
    // has passed, or (after an interrupt) the grace is over. Each tick costs the heads that
    // came and the transactions that timed out, never the number sent. A landing thread that
    // panicked stopped the watch: nothing is waited for.
    let last_send = landing.noted.last_send.unwrap_or_else(Instant::now);
    let full_wait = last_send + args.inclusion_timeout;
    let mut deadline = full_wait;
    let mut grace_started = false;
    while landing_panic.is_none() {
        let now = Instant::now();
        landing.receive(watch.drain());
        landing.process(None);
        landing.expire(now);
        if (stop.is_stopped() || record.interrupted) && !grace_started {
            grace_started = true;
            deadline = deadline.min(now + args.grace.unwrap_or_else(|| default_grace(landing.block_time())));
        }
        let counts = landing.book.counts();
        if let Some(live) = &store {
            live.publish_transactions(landing.live_figures());
        }
        if counts.pending == 0 || now >= deadline {
            break;
        }
        // Blocks waiting to be read are read at once, not a step every 20 ms.
        if !landing.reading_behind() {
            std::thread::sleep(Duration::from_millis(20));
        }
    }
    let mut watch_ends = match watch.health() {
        Some(health) => super::tx_watch_health::say_ends(
            "newHeads watch",
            health,
            "the head was polled with eth_blockNumber every 100 ms instead",
        ),
        None => super::tx_watch_health::WatchEnds::none(),
    };
    let last_heads = watch.stop();
    if let Some(message) = &landing_panic {
        watch_ends.landing_panicked(message, "what was not seen included by then is pending at the end");
    } else {
        landing.receive(last_heads);
        // What the heads revealed and is not read yet is read now: for one grace more at most
        // once the wait ran its course, within the grace after an interrupt.
        let grace = args.grace.unwrap_or_else(|| default_grace(landing.block_time()));
        let read_by = if grace_started { deadline } else { Instant::now() + grace };
        landing.read_to_the_end(read_by);
        let unread = landing.blocks_unread();
        if unread > 0 {
            eprintln!(
                "warning: {unread} block(s) the heads revealed were not read by the end of the grace: \
                 what they may hold is pending (blocks_unread_at_end)"
            );
        }
    }
    drop(dashboard);
    let end = Instant::now();
    let (tally, acks) = landing.finish(end, &addresses, landing_panic.is_none());
    let included_window = match (landing.noted.first_send, landing.last_included) {
        (Some(first), Some(last)) => last.saturating_duration_since(first),
        _ => Duration::ZERO,
    };
    let per_second = super::tx_report::per_second;
    let resyncs = sends.resync_tally();
    let outcomes = TxOutcomeFigures {
        sent: tally.sent,
        accepted,
        finals: tally.finals(),
        rejected_by_reason: &acks.rejected_by,
        oldest_pending: tally.oldest_pending,
        dropped_by: Some(&tally.dropped_by),
        reorgs: Some(TxReorgFigures { reorged_out: tally.reorged_out, reorgs: tally.reorgs }),
    };
    let identity = outcomes.adds_up();
    // Every transaction of a run is signed with the one gas limit; a transfer uses all of it
    // (a reverted one used gas too).
    let included_gas = (tally.included + tally.reverted).saturating_mul(gas_limit);
    let ms = |hist: &Histogram<u64>, q: f64| {
        if hist.is_empty() {
            Value::Null
        } else {
            json!(hist.value_at_quantile(q) as f64 / 1000.0)
        }
    };
    let blocks = |q: f64| {
        if tally.blocks_after.is_empty() {
            Value::Null
        } else {
            json!(tally.blocks_after.value_at_quantile(q))
        }
    };
    let mut report = json!({
        "chain": ETHEREUM_WORDS.chain,
        "target": node.redacted(),
        "chain_id": chain_id,
        "senders": senders,
        "kind": kind.name,
        "gas_limit": gas_limit,
        "fees": match fees {
            Fees::Legacy { gas_price } => json!({"type": "legacy", "source": fee_source, "gas_price_wei": gas_price.to_string()}),
            Fees::Eip1559 { max_fee_per_gas, max_priority_fee_per_gas } => json!({
                "type": "eip1559",
                "source": fee_source,
                "max_fee_per_gas_wei": max_fee_per_gas.to_string(),
                "max_priority_fee_per_gas_wei": max_priority_fee_per_gas.to_string(),
            }),
        },
        "interrupted": grace_started,
        "receipts_read": tally.receipts_read,
        "receipt_failures": landing.receipt_failures,
        "confirm_depth": args.confirm_depth,
        "send_to_ack_ms": {"p50": ms(&acks.ack_us, 0.5), "p90": ms(&acks.ack_us, 0.9), "p99": ms(&acks.ack_us, 0.99), "max": ms(&acks.ack_us, 1.0)},
        "send_to_included_ms": {"p50": ms(&tally.latency_us, 0.5), "p90": ms(&tally.latency_us, 0.9), "p99": ms(&tally.latency_us, 0.99), "max": ms(&tally.latency_us, 1.0)},
        "blocks_after_head_at_send": {"p50": blocks(0.5), "p99": blocks(0.99), "max": blocks(1.0)},
        "included_gas": included_gas,
        "gas_per_second": per_second(included_gas, included_window),
        "blocks_with_ours": tally.shares.blocks(),
        "share_of_block_ours": block_share(&tally.shares),
        "send_seconds": record.elapsed.as_secs_f64(),
        "sent_per_second": per_second(tally.sent, record.elapsed),
        "included_per_second": per_second(tally.included + tally.reverted, included_window),
        "inclusion_timeout_ms": args.inclusion_timeout.as_millis() as u64,
        "nonce_resyncs": {
            "refusals_handed_back": resyncs.requested,
            "resynced": resyncs.resynced,
            "lookup_failures": resyncs.lookup_failures,
            "stale_dropped_unsent": resyncs.stale_dropped,
        },
        "top_ups": super::tx_fund::top_up_report(&sends.top_up_tally()),
        "heads_seen": landing.heads_seen,
        "heads_from": if resolution.is_some() { "poll" } else { "newHeads" },
        "inclusion_resolution_ms": resolution.map(|r| r.as_millis() as u64),
        "block_fetch_failures": landing.fetch_failures,
        "blocks_unread_at_end": landing.blocks_unread(),
        "watch_reconnects": watch_ends.reconnects,
        "watch_ended": watch_ends.last_end,
        "watch_gave_up": watch_ends.gave_up,
        "included_by_catch_up": landing.included_by_catch_up,
        // Why sends left late: more than 2 ms late with every allowed connection busy, and
        // sends that found nothing signed and waited for the signer.
        "late_sends": {
            "over_2ms": record.totals.late,
            "at_connection_cap": record.totals.late_at_cap,
            "connection_cap": connection_cap,
            "waited_for_signer": sends.waits_for_signer(),
            "helper_threads": super::tx_report::helper_threads_name(),
        },
    });
    outcomes.write_into(ETHEREUM_WORDS, &mut report);
    // Whose receipts were read (`--receipts`): "all", "none" or "a 10% sample"; a reverted
    // count from a sample is labelled so in every format.
    report["receipts_checked"] = json!(args.receipts.label());
    let figures = super::tx_report::TxRunFigures::new(
        landing.noted.timeline,
        &acks.ack_us,
        &tally.latency_us,
        &record.totals.send_lag,
        &tally.blocks_after,
    );
    super::tx_report::finish(
        &args,
        report,
        figures,
        &thresholds,
        shard,
        identity,
        &identity_broken_text(ETHEREUM_WORDS),
    )
}

/// Of the blocks that carried any of the run's transactions, the share of each block's
/// transactions that were the run's: min, p50 and max (`null` when no block carried any).
fn block_share(shares: &BlockShares) -> Value {
    json!({"min": shares.min(), "p50": shares.median(), "max": shares.max()})
}

/// The node's pending nonces, asked by the signer when a nonce refusal comes back.
struct NodeNonces {
    node: Endpoint,
    addresses: Vec<String>,
}

impl NonceSource for NodeNonces {
    fn pending_nonce(&mut self, sender: usize) -> Result<u64, NonceLookupError> {
        let address = self
            .addresses
            .get(sender)
            .ok_or_else(|| NonceLookupError { reason: format!("no sender {sender}") })?;
        let answer = self
            .node
            .call("eth_getTransactionCount", Some(&json!([address, "pending"])))
            .map_err(|err| NonceLookupError { reason: self.node.scrub(&err.to_string()).into_owned() })?;
        hex_quantity(&answer)
            .ok()
            .and_then(|n| u64::try_from(n).ok())
            .ok_or_else(|| NonceLookupError { reason: format!("not a hex quantity: {answer}") })
    }
}

/// Why the fees could not be settled: a fee flag at fault (exit 2) or the node's answers.
enum FeeError {
    Flag(String),
    Node(String),
}

/// The fees to sign with and where they came from: the overrides, else the node's suggestions
/// (priority fee from eth_maxPriorityFeePerGas, else the median reward of eth_feeHistory;
/// max fee twice the next block's base fee from eth_feeHistory plus the priority fee, else
/// twice eth_gasPrice plus it when the node has no fee history).
fn fees(
    args: &TxArgs,
    ask: &dyn Fn(&str, Value) -> Result<Value, String>,
    ask_quantity: &dyn Fn(&str, Value) -> Result<u128, String>,
) -> Result<(Fees, String), FeeError> {
    if let Some(gas_price) = args.gas_price {
        return Ok((Fees::Legacy { gas_price }, "--gas-price".into()));
    }
    let history = if args.max_fee.is_some() && args.priority_fee.is_some() {
        None
    } else {
        ask("eth_feeHistory", json!(["0x4", "latest", [50]])).ok()
    };
    let next_base = history
        .as_ref()
        .and_then(|h| h["baseFeePerGas"].as_array()?.last().and_then(|fee| hex_quantity(fee).ok()));
    let median_reward = history.as_ref().and_then(|h| {
        let rewards: Vec<u128> =
            h["reward"].as_array()?.iter().filter_map(|r| hex_quantity(r.get(0)?).ok()).collect();
        let mut sorted = rewards;
        sorted.sort_unstable();
        sorted.get(sorted.len() / 2).copied()
    });
    let (priority, priority_from) = match args.priority_fee {
        Some(fee) => (fee, "--priority-fee"),
        None => match (ask_quantity("eth_maxPriorityFeePerGas", json!([])), median_reward) {
            (Ok(fee), _) => (fee, "eth_maxPriorityFeePerGas"),
            (Err(_), Some(reward)) => (reward, "eth_feeHistory reward p50"),
            (Err(message), None) => return Err(FeeError::Node(message)),
        },
    };
    let (max_fee, max_from) = match (args.max_fee, next_base) {
        (Some(fee), _) => (fee, "--max-fee"),
        (None, Some(base)) => {
            (base.saturating_mul(2).saturating_add(priority), "2 x eth_feeHistory next base fee + priority")
        }
        (None, None) => (
            ask_quantity("eth_gasPrice", json!([]))
                .map_err(FeeError::Node)?
                .saturating_mul(2)
                .saturating_add(priority),
            "2 x eth_gasPrice + priority",
        ),
    };
    let source = format!("max fee: {max_from}; priority: {priority_from}");
    // Only a --max-fee can be below the priority fee (the default is above it): the flag is
    // at fault, whichever gave the priority fee.
    if max_fee < priority {
        return Err(FeeError::Flag(format!(
            "--max-fee {} is below the priority fee {} ({priority_from})",
            gwei(max_fee),
            gwei(priority)
        )));
    }
    Ok((Fees::Eip1559 { max_fee_per_gas: max_fee, max_priority_fee_per_gas: priority }, source))
}

/// Three block times as the heads seen show them, else 5 s.
fn default_grace(block_time: Option<Duration>) -> Duration {
    block_time.map_or(Duration::from_secs(5), |block_time| block_time * 3)
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use clap::Parser;
    use std::collections::HashSet;

    /// The arguments of `rpcbench tx http://127.0.0.1:1/ --rate 1 WORDS...`.
    pub(crate) fn tx_args(words: &[&str]) -> TxArgs {
        let line = ["rpcbench", "tx", "http://127.0.0.1:1/", "--rate", "1"].iter().chain(words);
        match crate::Cli::try_parse_from(line).unwrap().command {
            crate::Command::Tx(args) => *args,
            _ => unreachable!("a tx command line"),
        }
    }

    /// Funding with `--senders` under shards: each shard funds (and tops up) its senders from
    /// the first of its own accounts, so no two shards ever sign with one funder's nonces.
    #[test]
    fn each_shard_funds_from_its_own_first_account_and_no_two_shards_share_an_account() {
        let args = tx_args(&["--dev", "--senders", "3"]);
        let shards = 4;
        let mut seen = HashSet::new();
        let mut funders = Vec::new();
        for index in 0..shards {
            let keys = sender_keys(&args, index * args.senders).unwrap();
            assert_eq!(keys.len(), 3);
            funders.push(keys[0].address().to_string());
            for key in &keys {
                assert!(seen.insert(key.address().to_string()), "shard {index} shares an account");
            }
        }
        assert_eq!(seen.len(), shards * 3);
        let whole = sender_keys(&tx_args(&["--dev", "--senders", "12"]), 0).unwrap();
        let expected: Vec<String> = (0..shards).map(|index| whole[index * 3].address().to_string()).collect();
        assert_eq!(funders, expected, "shard i's funder is account i x --senders of the key source");

        // A key file splits the same way, and one too short for a shard is refused by name.
        let dir = std::env::temp_dir().join(format!("rpcbench-shard-keys-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("keys.txt");
        let lines: Vec<String> = (1..=5).map(|n| format!("0x{n:064x}")).collect();
        std::fs::write(&file, lines.join("\n")).unwrap();
        let args = tx_args(&["--key-file", file.to_str().unwrap(), "--senders", "2"]);
        let first = sender_keys(&args, 0).unwrap();
        let second = sender_keys(&args, 2).unwrap();
        assert!(first.iter().all(|a| second.iter().all(|b| a.address() != b.address())));
        let err = sender_keys(&args, 4).err().unwrap();
        assert!(err.contains("holds 5 keys, this shard needs keys 5 to 6"), "{err}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
