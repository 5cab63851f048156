//! The setup phase of `rpcbench tx --senders N` on an EVM chain: the amount each sender after
//! the first should hold (its share of the run's cost, or `--fund-amount`), funded from the
//! first through `rpcbench::tx::fund` with its progress on standard error.

use std::time::Duration;

use rpcbench::client::Endpoint;
use rpcbench::tx::fund::{amount_per_sender, fund_senders, FundError, FundPlan, FundProgress};
use rpcbench::tx::keys::SenderKey;
use rpcbench::tx::sign::Fees;
use rpcbench::tx::top_up::{TopUpPlan, TopUpTally};
use serde_json::{json, Value};

use crate::args::tx::TxArgs;

/// Funding transfers per JSON-RPC batch (the mock's and geth's batch limits are 100 and 1000).
const FUND_BATCH: usize = 50;
/// Funding transfers sent per second at most.
const FUND_RATE: f64 = 500.0;
/// How often the funder's mined nonce is asked while waiting.
const FUND_POLL: Duration = Duration::from_millis(100);
/// A dry sender is topped up at most once within this long.
const TOP_UP_COOLDOWN: Duration = Duration::from_secs(2);

/// What the cost estimate needs: one transaction's gas limit, fees and value, and the count.
pub(crate) struct RunCost {
    pub(crate) chain_id: u64,
    pub(crate) fees: Fees,
    pub(crate) gas_limit: u64,
    pub(crate) value: u128,
    pub(crate) planned: u64,
}

/// Wei each sender after the first is funded to (and topped up with when it runs dry).
pub(crate) fn fund_amount(args: &TxArgs, cost: &RunCost, senders: usize) -> u128 {
    let per_sender = cost.planned.div_ceil(senders.max(1) as u64).max(1);
    args.fund_amount.unwrap_or_else(|| amount_per_sender(cost.gas_limit, cost.fees, cost.value, per_sender))
}

/// Funds `keys[1..]` from `keys[0]` unless `--no-fund`; progress on standard error. `Err` is
/// (whether it is the user's to fix: exit 2, the message).
pub(crate) fn fund(
    args: &TxArgs,
    node: &Endpoint,
    keys: &[SenderKey],
    cost: &RunCost,
) -> Result<(), (bool, String)> {
    if args.no_fund || keys.len() < 2 {
        return Ok(());
    }
    let plan = FundPlan {
        chain_id: cost.chain_id,
        fees: cost.fees,
        amount: fund_amount(args, cost, keys.len()),
        batch: FUND_BATCH,
        rate: FUND_RATE,
        timeout: args.fund_timeout,
        poll: FUND_POLL,
    };
    let mut last_included = usize::MAX;
    let mut progress = |step: FundProgress| match step {
        FundProgress::Sent { sent, of } => eprintln!("rpcbench: funding senders: {sent}/{of} transfers sent"),
        FundProgress::Included { included, of } if included != last_included => {
            last_included = included;
            eprintln!("rpcbench: funding senders: {included}/{of} included");
        }
        FundProgress::Included { .. } => {}
    };
    match fund_senders(node, keys, &plan, &mut progress) {
        Ok(summary) if summary.funded.is_empty() => Ok(()),
        Ok(summary) => {
            eprintln!(
                "rpcbench: funded {} sender(s) with {} wei in all from sender 0 ({} held enough)",
                summary.funded.len(),
                summary.wei_sent,
                summary.already_funded
            );
            Ok(())
        }
        Err(err @ FundError::FunderShort { .. }) => Err((true, err.to_string())),
        Err(err) => Err((false, err.to_string())),
    }
}

/// How dry senders are refilled during the run: from the funder, with the funding amount,
/// unless `--no-fund` (or a single sender, who is the funder).
pub(crate) fn top_up_plan(args: &TxArgs, cost: &RunCost, senders: usize) -> Option<TopUpPlan> {
    (!args.no_fund && senders >= 2)
        .then(|| TopUpPlan { amount: fund_amount(args, cost, senders), cooldown: TOP_UP_COOLDOWN })
}

/// The report's `top_ups` object.
pub(crate) fn top_up_report(tally: &TopUpTally) -> Value {
    json!({
        "insufficient_funds_refusals": tally.requested,
        "sent": tally.sent,
        "not_sent_no_funder": tally.no_funder,
        "not_sent_funder_itself_dry": tally.funder_dry,
        "not_sent_within_cooldown": tally.recent,
        "not_sent_same_dry_spell": tally.same_burst,
    })
}
