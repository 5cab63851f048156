//! The setup phase of `rpcbench tx --senders N`: the senders after the first are funded from
//! the first (the funder) before load starts. Each sender that holds less than the run will
//! spend from it gets a value transfer up to that amount; the transfers are signed with the
//! funder's consecutive nonces, sent in JSON-RPC batches at a bounded rate, and waited for
//! (the funder's mined nonce reaching the last one) for at most a timeout. Progress goes to a
//! callback; keys are never printed, the errors name senders by index and address.

use std::fmt;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

use super::keys::{hex_encode, Address, SenderKey};
use super::quantity::hex_quantity;
use super::sign::{sign, Fees, UnsignedTx};
use crate::client::batches::{read_batch_answer, BatchAnswer, CallAnswer, LookupBatches};
use crate::client::Endpoint;

use super::sign::TRANSFER_GAS;

/// The method of the funding transfers.
const SEND: &str = "eth_sendRawTransaction";

/// The margin on the estimated cost per sender: twice what the run is expected to spend.
pub const FUND_MARGIN: u128 = 2;

/// How to fund: the transaction fields and the pace.
#[derive(Debug, Clone, PartialEq)]
pub struct FundPlan {
    /// The chain id to sign for.
    pub chain_id: u64,
    /// The fees of each funding transfer.
    pub fees: Fees,
    /// Wei each funded sender should hold after the setup.
    pub amount: u128,
    /// Transfers per JSON-RPC batch.
    pub batch: usize,
    /// Transfers sent per second at most.
    pub rate: f64,
    /// How long to wait for the transfers to be included.
    pub timeout: Duration,
    /// How often to look whether they are.
    pub poll: Duration,
}

/// Wei a sender is expected to spend over the run, with [`FUND_MARGIN`]: (gas limit x max
/// price + value) x the transactions it sends (saturating).
pub fn amount_per_sender(gas_limit: u64, fees: Fees, value: u128, transactions: u64) -> u128 {
    let per_tx = u128::from(gas_limit).saturating_mul(fees.max_price()).saturating_add(value);
    per_tx.saturating_mul(u128::from(transactions)).saturating_mul(FUND_MARGIN)
}

/// Where the setup is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum FundProgress {
    /// Funding transfers sent so far, of all.
    Sent {
        /// Sent so far.
        sent: usize,
        /// All there are.
        of: usize,
    },
    /// Funding transfers included so far, of all.
    Included {
        /// Included so far.
        included: usize,
        /// All there are.
        of: usize,
    },
}

/// What the setup did.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct FundSummary {
    /// Indexes of the senders that got a transfer.
    pub funded: Vec<usize>,
    /// Senders after the first that already held enough.
    pub already_funded: usize,
    /// Wei sent to them in all (without the fees).
    pub wei_sent: u128,
}

/// Why the setup could not fund the senders.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FundError {
    /// A call to the node failed.
    Node {
        /// The method.
        method: &'static str,
        /// What went wrong (the endpoint's secrets scrubbed).
        reason: String,
    },
    /// The funder cannot pay for all the transfers.
    FunderShort {
        /// The funder's address.
        funder: Address,
        /// What it holds, wei.
        balance: u128,
        /// What the transfers and their fees need, wei.
        needed: u128,
        /// How many senders need funding.
        senders: usize,
    },
    /// The node refused a funding transfer.
    Refused {
        /// The sender it was for.
        sender: usize,
        /// Its address.
        address: Address,
        /// The node's message.
        message: String,
    },
    /// Not every transfer was included within the timeout.
    NotIncluded {
        /// Included when the wait ended.
        included: usize,
        /// Sent.
        sent: usize,
        /// How long it waited.
        waited: Duration,
    },
}

impl fmt::Display for FundError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            FundError::Node { method, reason } => write!(f, "funding the senders: {method}: {reason}"),
            FundError::FunderShort { funder, balance, needed, senders } => write!(
                f,
                "funding the senders: the funder (sender 0, {funder}) holds {balance} wei, but funding {senders} sender(s) needs {needed} wei with the fees; fund it, lower --fund-amount, or pass --no-fund"
            ),
            FundError::Refused { sender, address, message } => write!(
                f,
                "funding the senders: the node refused the transfer to sender {sender} ({address}): {message}"
            ),
            FundError::NotIncluded { included, sent, waited } => write!(
                f,
                "funding the senders: {included} of {sent} transfers included after {} s (--fund-timeout); nothing was sent under load",
                waited.as_secs()
            ),
        }
    }
}

impl std::error::Error for FundError {}

fn ask(node: &Endpoint, method: &'static str, params: Value) -> Result<u128, FundError> {
    let answer = node
        .call(method, Some(&params))
        .map_err(|err| FundError::Node { method, reason: err.to_string() })?;
    hex_quantity(&answer).map_err(|_| FundError::Node {
        method,
        reason: format!("not a hex quantity of at most 256 bits: {answer}"),
    })
}

/// Funds `keys[1..]` from `keys[0]` as `plan` says; `progress` hears of every batch sent and
/// every poll of the inclusions. Senders holding `plan.amount` or more are skipped.
pub fn fund_senders(
    node: &Endpoint,
    keys: &[SenderKey],
    plan: &FundPlan,
    progress: &mut dyn FnMut(FundProgress),
) -> Result<FundSummary, FundError> {
    let mut summary = FundSummary::default();
    let Some((funder, children)) = keys.split_first() else { return Ok(summary) };
    let mut transfers: Vec<(usize, Address, u128)> = Vec::new();
    for (offset, child) in children.iter().enumerate() {
        let address = child.address();
        let balance = ask(node, "eth_getBalance", json!([address.to_string(), "latest"]))?;
        if balance >= plan.amount {
            summary.already_funded += 1;
        } else {
            transfers.push((offset + 1, address, plan.amount - balance));
        }
    }
    if transfers.is_empty() {
        return Ok(summary);
    }
    let fee_each = u128::from(TRANSFER_GAS).saturating_mul(plan.fees.max_price());
    let needed = transfers
        .iter()
        .fold(0u128, |sum, (_, _, value)| sum.saturating_add(*value).saturating_add(fee_each));
    let funder_address = funder.address();
    let balance = ask(node, "eth_getBalance", json!([funder_address.to_string(), "latest"]))?;
    if balance < needed {
        return Err(FundError::FunderShort {
            funder: funder_address,
            balance,
            needed,
            senders: transfers.len(),
        });
    }
    let first_nonce =
        ask(node, "eth_getTransactionCount", json!([funder_address.to_string(), "pending"]))? as u64;
    // Every transfer signed with its nonce up front: a batch refused as too large sent nothing,
    // and its transfers go again in the smaller batches (halved for the rest of the setup).
    let params: Vec<Value> = transfers
        .iter()
        .enumerate()
        .map(|(k, (_, address, value))| {
            let tx = UnsignedTx {
                chain_id: plan.chain_id,
                nonce: first_nonce + k as u64,
                fees: plan.fees,
                gas_limit: TRANSFER_GAS,
                to: Some(*address),
                value: *value,
                data: Vec::new(),
            };
            json!([format!("0x{}", hex_encode(&sign(&tx, funder).raw))])
        })
        .collect();
    let batches = LookupBatches::new(plan.batch);
    let started = Instant::now();
    // Transfers answered so far; the batch that failed, if one did (nothing is posted after a
    // failed batch or a refused transfer).
    let (mut sent, mut failed, mut stop) = (0usize, None, false);
    let answers = batches.answers_with(SEND, &params, |_, chunk| {
        if stop {
            return BatchAnswer::Failed;
        }
        // Paced: the batch from transfer k leaves no earlier than k / rate after the start.
        if plan.rate.is_finite() && plan.rate > 0.0 {
            let due = started + Duration::from_secs_f64(sent as f64 / plan.rate);
            let now = Instant::now();
            if due > now {
                std::thread::sleep(due - now);
            }
        }
        let answer = post_transfers(node, chunk);
        match &answer {
            Ok(BatchAnswer::Results { answers, .. }) => {
                stop = answers.iter().any(|answer| !matches!(answer, CallAnswer::Result(_)));
                sent += chunk.len();
                progress(FundProgress::Sent { sent, of: transfers.len() });
            }
            Ok(BatchAnswer::Refused) if chunk.len() > 1 => {}
            Ok(BatchAnswer::Refused | BatchAnswer::Failed) => {
                stop = true;
                let (sender, address, _) = transfers[sent];
                let message = "the node refused even a batch of one transfer as too large".to_string();
                failed = Some(FundError::Refused { sender, address, message });
            }
            Err(error) => {
                stop = true;
                failed = Some(error.clone());
            }
        }
        answer.unwrap_or(BatchAnswer::Failed)
    });
    if let Some(error) = failed {
        return Err(error);
    }
    for ((sender, address, _), answer) in transfers.iter().zip(answers) {
        let message = match answer {
            CallAnswer::Result(_) => continue,
            CallAnswer::Error(error) => node.scrub(error["message"].as_str().unwrap_or("")).into_owned(),
            CallAnswer::Missing => "no answer in the batch".to_string(),
        };
        return Err(FundError::Refused { sender: *sender, address: *address, message });
    }
    summary.funded.extend(transfers.iter().map(|(sender, _, _)| *sender));
    summary.wei_sent = transfers.iter().fold(0u128, |sum, (_, _, value)| sum.saturating_add(*value));
    // Included once the funder's mined nonce has passed the last transfer's.
    let last = first_nonce + sent as u64;
    let waiting = Instant::now();
    loop {
        let mined =
            ask(node, "eth_getTransactionCount", json!([funder_address.to_string(), "latest"]))? as u64;
        let included = mined.saturating_sub(first_nonce).min(sent as u64) as usize;
        progress(FundProgress::Included { included, of: sent });
        if mined >= last {
            return Ok(summary);
        }
        let waited = waiting.elapsed();
        if waited >= plan.timeout {
            return Err(FundError::NotIncluded { included, sent, waited });
        }
        std::thread::sleep(plan.poll.min(plan.timeout - waited));
    }
}

/// Posts `transfers` (each call's params) as one batch of [`SEND`] and reads the answer; a
/// batch the node did not answer as JSON-RPC is the setup's error.
fn post_transfers(node: &Endpoint, transfers: &[Value]) -> Result<BatchAnswer, FundError> {
    let method = SEND;
    let calls: Vec<Value> = transfers
        .iter()
        .enumerate()
        .map(|(k, params)| json!({"jsonrpc": "2.0", "id": k, "method": method, "params": params}))
        .collect();
    let body = serde_json::to_vec(&calls).expect("a batch serializes");
    let answer = node.post(&body).map_err(|err| FundError::Node { method, reason: err.to_string() })?;
    let status = answer.status;
    match read_batch_answer(&answer, transfers.len(), 0) {
        BatchAnswer::Failed if !(200..300).contains(&status) => Err(FundError::Node {
            method,
            reason: format!("HTTP {status} to a batch of {}", transfers.len()),
        }),
        BatchAnswer::Failed => Err(FundError::Node {
            method,
            reason: format!("the answer to a batch of {} is not a JSON array", transfers.len()),
        }),
        read => Ok(read),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_amount_per_sender_is_its_expected_cost_with_the_margin() {
        let fees = Fees::Eip1559 { max_fee_per_gas: 10, max_priority_fee_per_gas: 1 };
        assert_eq!(amount_per_sender(21_000, fees, 1, 5), (21_000 * 10 + 1) * 5 * FUND_MARGIN);
        assert_eq!(amount_per_sender(u64::MAX, Fees::Legacy { gas_price: u128::MAX }, 1, 2), u128::MAX);
    }

    #[test]
    fn a_funding_error_names_the_sender_and_never_a_key() {
        let key = crate::tx::keys::keys_from_mnemonic(crate::tx::keys::DEV_MNEMONIC, 0, 1).unwrap().remove(0);
        let error =
            FundError::Refused { sender: 3, address: key.address(), message: "txpool is full".into() };
        let text = error.to_string();
        assert!(text.contains("sender 3") && text.contains(&key.address().to_string()), "{text}");
        assert!(!text.contains(&key.secret_hex()), "{text}");
    }
}
