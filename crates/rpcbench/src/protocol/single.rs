//! One call per request: today's JSON-RPC request (a POST of one call, its id checked by the
//! scanning classifier) or a plain HTTP call (a REST endpoint), by the call's kind.

use super::{rest, CallSlot, Draw, Protocol};
use crate::jsonrpc::{self, CheckMode};
use crate::outcome::Outcome;
use crate::transport::Outgoing;
use crate::workload::Workload;

/// One call of the workload per request.
#[derive(Debug, Clone)]
pub(crate) struct SingleCall {
    workload: Workload,
    check: CheckMode,
    /// Every call is a JSON-RPC call (the common case: no per-request kind check).
    jsonrpc_only: bool,
}

impl SingleCall {
    /// Requests of one call each, drawn from `workload`, checked as `check` says.
    pub(crate) fn new(workload: Workload, check: CheckMode) -> Self {
        let jsonrpc_only = workload.is_jsonrpc_only();
        Self { workload, check, jsonrpc_only }
    }
}

impl Protocol for SingleCall {
    #[inline]
    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing) {
        let (call, turn) = draw.pick_with_turn(&self.workload);
        if !self.jsonrpc_only && self.workload.calls()[call].is_http() {
            self.workload.write_http(call, turn, &mut draw.rng, out);
            slots.push(CallSlot { call, id: 0 });
            return;
        }
        let id = draw.id();
        self.workload.write_body(call, id, &mut draw.rng, &mut out.body);
        slots.push(CallSlot { call, id });
    }

    #[inline]
    fn classify(
        &self,
        status: u16,
        body: &[u8],
        slots: &[CallSlot],
        mut each: impl FnMut(usize, Outcome, &[u8]),
    ) {
        let Some(slot) = slots.first() else { return };
        let outcome = match self.jsonrpc_only {
            true => jsonrpc::classify(status, body, slot.id, self.check),
            false => {
                let call = &self.workload.calls()[slot.call];
                match call.is_http() {
                    true => rest::classify(status, body, call.expects_json()),
                    false => jsonrpc::classify(status, body, slot.id, self.check),
                }
            }
        };
        each(0, outcome, body);
    }
}
