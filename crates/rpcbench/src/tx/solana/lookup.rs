//! Asking the node about Solana transactions the landing watch did not see land in time
//! (`landing::LandingBook::take_due`): `getSignatureStatuses`, [`STATUS_BATCH`] signatures a
//! call, each answer read into what the book settles ([`StatusFound`]): landed at the
//! commitment asked for (with its slot, failed or not), known below it, unknown, or not looked
//! up (the call failed or the answer was not a status). `searchTransactionHistory` is asked
//! for at `finalized`, the commitment whose statuses a node may keep only in its history.

use serde_json::{json, Value};

use super::landing::StatusFound;
use super::status::{Commitment, STATUS_BATCH};
use crate::client::Endpoint;

/// What one status of a `getSignatureStatuses` answer says at `commitment`.
pub fn status_found(status: &Value, commitment: Commitment) -> StatusFound {
    if status.is_null() {
        return StatusFound::Unknown;
    }
    let Some(slot) = status["slot"].as_u64() else { return StatusFound::NotLookedUp };
    // Nodes before `confirmationStatus` said `confirmations: null` for a rooted transaction.
    let reached = match status["confirmationStatus"].as_str() {
        Some(text) => Commitment::parse(text),
        None if status["confirmations"].is_null() => Some(Commitment::Finalized),
        None => Some(Commitment::Processed),
    };
    match reached {
        None => StatusFound::NotLookedUp,
        Some(reached) if reached < commitment => StatusFound::BelowCommitment,
        Some(_) => StatusFound::Landed { slot, failed: !status.get("err").is_none_or(Value::is_null) },
    }
}

/// The statuses of `signatures` at `commitment`, in order (one call per [`STATUS_BATCH`]), and
/// how many calls failed (their signatures are [`StatusFound::NotLookedUp`]).
pub fn look_up_statuses(
    node: &Endpoint,
    signatures: &[[u8; 64]],
    commitment: Commitment,
) -> (Vec<StatusFound>, u64) {
    let mut found = Vec::with_capacity(signatures.len());
    let mut failed_calls = 0;
    for chunk in signatures.chunks(STATUS_BATCH) {
        let names: Vec<String> = chunk.iter().map(super::base58::signature_text).collect();
        let params = if commitment == Commitment::Finalized {
            json!([names, {"searchTransactionHistory": true}])
        } else {
            json!([names])
        };
        let statuses = node.call("getSignatureStatuses", Some(&params)).ok().and_then(|answer| {
            let statuses = answer["value"].as_array()?;
            (statuses.len() == chunk.len()).then(|| statuses.clone())
        });
        match statuses {
            Some(statuses) => found.extend(statuses.iter().map(|status| status_found(status, commitment))),
            None => {
                failed_calls += 1;
                found.extend(chunk.iter().map(|_| StatusFound::NotLookedUp));
            }
        }
    }
    (found, failed_calls)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_status_says_landed_below_the_commitment_unknown_or_unreadable() {
        let confirmed = Commitment::Confirmed;
        let status = |text: &str| status_found(&serde_json::from_str(text).unwrap(), confirmed);
        assert_eq!(status("null"), StatusFound::Unknown);
        assert_eq!(
            status(r#"{"slot":7,"confirmations":1,"err":null,"confirmationStatus":"confirmed"}"#),
            StatusFound::Landed { slot: 7, failed: false }
        );
        assert_eq!(
            status(
                r#"{"slot":7,"confirmations":null,"err":{"InstructionError":[0,{"Custom":1}]},"confirmationStatus":"finalized"}"#
            ),
            StatusFound::Landed { slot: 7, failed: true }
        );
        assert_eq!(
            status(r#"{"slot":7,"confirmations":0,"err":null,"confirmationStatus":"processed"}"#),
            StatusFound::BelowCommitment
        );
        assert_eq!(
            status(r#"{"slot":7,"confirmations":null,"err":null}"#),
            StatusFound::Landed { slot: 7, failed: false }
        );
        assert_eq!(status(r#"{"confirmationStatus":"confirmed"}"#), StatusFound::NotLookedUp);
        assert_eq!(status(r#"{"slot":7,"confirmationStatus":"rooted?"}"#), StatusFound::NotLookedUp);
    }
}
