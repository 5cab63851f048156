//! Unary Yellowstone Geyser calls (`Ping`, `GetSlot`, `GetLatestBlockhash`, `GetBlockHeight`,
//! `GetVersion`) as request/response load: `run grpc://HOST:PORT --method GetSlot`. Each call
//! of the workload is named by its gRPC method; its request message (the published protobuf
//! definitions, default fields) is encoded once with gRPC's 5-byte message prefix, so a
//! request costs no encoding. The lane (`crate::transport::grpc_unary`) checks the reply's
//! framing and `grpc-status`; what reaches [`GeyserUnary::classify`] is the one message of a
//! call that ended OK, decoded as the method's response type.

use std::sync::Arc;

use prost::Message;
use yellowstone_grpc_proto::geyser::{
    GetBlockHeightRequest, GetBlockHeightResponse, GetLatestBlockhashRequest, GetLatestBlockhashResponse,
    GetSlotRequest, GetSlotResponse, GetVersionRequest, GetVersionResponse, PingRequest, PongResponse,
};

use super::{CallSlot, Draw, Protocol};
use crate::outcome::{InvalidKind, Outcome};
use crate::transport::{HttpMethod, Outgoing};
use crate::workload::Workload;

/// A unary method of the Geyser service.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum GeyserMethod {
    /// `Ping` (a count, answered with the same count).
    Ping,
    /// `GetSlot`.
    GetSlot,
    /// `GetLatestBlockhash`.
    GetLatestBlockhash,
    /// `GetBlockHeight`.
    GetBlockHeight,
    /// `GetVersion`.
    GetVersion,
}

impl GeyserMethod {
    /// Every method, in the order error messages list them.
    pub(crate) const ALL: [GeyserMethod; 5] = [
        GeyserMethod::Ping,
        GeyserMethod::GetSlot,
        GeyserMethod::GetLatestBlockhash,
        GeyserMethod::GetBlockHeight,
        GeyserMethod::GetVersion,
    ];

    /// The method's name in the service (`GetSlot`).
    pub(crate) fn name(self) -> &'static str {
        match self {
            GeyserMethod::Ping => "Ping",
            GeyserMethod::GetSlot => "GetSlot",
            GeyserMethod::GetLatestBlockhash => "GetLatestBlockhash",
            GeyserMethod::GetBlockHeight => "GetBlockHeight",
            GeyserMethod::GetVersion => "GetVersion",
        }
    }

    /// The method named `name`: its service name, or the full path
    /// `/geyser.Geyser/GetSlot`.
    pub(crate) fn parse(name: &str) -> Option<GeyserMethod> {
        let name = name.strip_prefix("/geyser.Geyser/").unwrap_or(name);
        GeyserMethod::ALL.into_iter().find(|method| method.name() == name)
    }

    /// The request message with default fields, encoded.
    fn request(self) -> Vec<u8> {
        match self {
            GeyserMethod::Ping => PingRequest { count: 1 }.encode_to_vec(),
            GeyserMethod::GetSlot => GetSlotRequest::default().encode_to_vec(),
            GeyserMethod::GetLatestBlockhash => GetLatestBlockhashRequest::default().encode_to_vec(),
            GeyserMethod::GetBlockHeight => GetBlockHeightRequest::default().encode_to_vec(),
            GeyserMethod::GetVersion => GetVersionRequest::default().encode_to_vec(),
        }
    }

    /// Whether `message` decodes as this method's response.
    fn decodes(self, message: &[u8]) -> bool {
        match self {
            GeyserMethod::Ping => PongResponse::decode(message).is_ok(),
            GeyserMethod::GetSlot => GetSlotResponse::decode(message).is_ok(),
            GeyserMethod::GetLatestBlockhash => GetLatestBlockhashResponse::decode(message).is_ok(),
            GeyserMethod::GetBlockHeight => GetBlockHeightResponse::decode(message).is_ok(),
            GeyserMethod::GetVersion => GetVersionResponse::decode(message).is_ok(),
        }
    }
}

/// A `GetSlot` call outside a load run (a head monitor's poll): its path and its request
/// message behind the gRPC prefix.
pub(crate) fn get_slot_call() -> (Vec<u8>, Vec<u8>) {
    let method = GeyserMethod::GetSlot;
    (format!("/geyser.Geyser/{}", method.name()).into_bytes(), framed(&method.request()))
}

/// The slot of a `GetSlot` reply's message (none: not a `GetSlotResponse`).
pub(crate) fn slot_of(message: &[u8]) -> Option<u64> {
    GetSlotResponse::decode(message).ok().map(|reply| reply.slot)
}

/// `message` behind gRPC's 5-byte prefix (not compressed, its big-endian length).
fn framed(message: &[u8]) -> Vec<u8> {
    let mut framed = Vec::with_capacity(5 + message.len());
    framed.push(0);
    framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
    framed.extend_from_slice(message);
    framed
}

/// A workload call that names no unary Geyser method.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct UnknownGeyserMethod {
    /// The name the workload gave.
    pub(crate) name: String,
}

impl std::fmt::Display for UnknownGeyserMethod {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let known: Vec<&str> = GeyserMethod::ALL.iter().map(|method| method.name()).collect();
        write!(
            f,
            "'{}' is not a unary Geyser call a grpc:// target answers: give one of {}",
            crate::util::printable::one_line(&self.name),
            known.join(", ")
        )
    }
}

impl std::error::Error for UnknownGeyserMethod {}

/// One workload call, ready to send.
#[derive(Debug)]
struct PreparedCall {
    method: GeyserMethod,
    /// `/geyser.Geyser/NAME`.
    path: Vec<u8>,
    /// The request message behind its 5-byte gRPC prefix (not compressed, its length).
    framed: Vec<u8>,
}

/// The unary Geyser calls of a run, one per workload call, checked and encoded once.
#[derive(Debug, Clone)]
pub(crate) struct GeyserCalls {
    calls: Arc<Vec<PreparedCall>>,
}

impl GeyserCalls {
    /// The calls of `workload`, each naming a unary Geyser method.
    pub(crate) fn new(workload: &Workload) -> Result<Self, UnknownGeyserMethod> {
        let calls = workload
            .calls()
            .iter()
            .map(|call| {
                let method = GeyserMethod::parse(call.method())
                    .filter(|_| !call.is_http())
                    .ok_or_else(|| UnknownGeyserMethod { name: call.method().to_string() })?;
                let framed = framed(&method.request());
                let path = format!("/geyser.Geyser/{}", method.name()).into_bytes();
                Ok(PreparedCall { method, path, framed })
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Self { calls: Arc::new(calls) })
    }
}

/// One unary Geyser call per request, drawn from the workload's mix.
#[derive(Debug, Clone)]
pub(crate) struct GeyserUnary {
    workload: Workload,
    calls: GeyserCalls,
}

impl GeyserUnary {
    /// Requests drawn from `workload`, whose calls `calls` prepared.
    pub(crate) fn new(workload: Workload, calls: GeyserCalls) -> Self {
        Self { workload, calls }
    }
}

impl Protocol for GeyserUnary {
    #[inline]
    fn encode(&self, draw: &mut Draw, slots: &mut Vec<CallSlot>, out: &mut Outgoing) {
        let call = draw.pick(&self.workload);
        let prepared = &self.calls.calls[call];
        out.method = HttpMethod::Post;
        out.path.extend_from_slice(&prepared.path);
        out.body.extend_from_slice(&prepared.framed);
        slots.push(CallSlot { call, id: 0 });
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
        let outcome = if status != 200 {
            Outcome::HttpStatus(status)
        } else if self.calls.calls[slot.call].method.decodes(body) {
            Outcome::Ok
        } else {
            Outcome::Invalid(InvalidKind::BadGrpc)
        };
        each(0, outcome, b"");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::workload::Call;

    fn calls(names: &[&str]) -> Result<GeyserCalls, UnknownGeyserMethod> {
        let calls: Vec<Call> = names.iter().map(|name| Call::new(*name, name, None, 1).unwrap()).collect();
        GeyserCalls::new(&Workload::new(calls).unwrap())
    }

    #[test]
    fn each_call_is_framed_once_with_its_path() {
        let prepared = calls(&["GetSlot", "/geyser.Geyser/Ping"]).unwrap();
        let slot = &prepared.calls[0];
        assert_eq!(slot.path, b"/geyser.Geyser/GetSlot");
        assert_eq!(slot.framed, [0, 0, 0, 0, 0], "an empty GetSlotRequest behind its prefix");
        let ping = &prepared.calls[1];
        assert_eq!(ping.method, GeyserMethod::Ping);
        assert_eq!(&ping.framed[..5], [0, 0, 0, 0, 2]);
        assert_eq!(PingRequest::decode(&ping.framed[5..]).unwrap().count, 1);
    }

    #[test]
    fn a_method_the_service_has_no_unary_call_for_is_refused_by_name() {
        let err = calls(&["GetSlot", "getSlot"]).unwrap_err();
        assert_eq!(err.name, "getSlot");
        assert!(err.to_string().contains("Ping, GetSlot, GetLatestBlockhash"), "{err}");
    }

    #[test]
    fn a_reply_that_is_not_the_methods_message_is_bad_grpc() {
        let workload = Workload::new(vec![Call::new("GetSlot", "GetSlot", None, 1).unwrap()]).unwrap();
        let protocol = GeyserUnary::new(workload.clone(), GeyserCalls::new(&workload).unwrap());
        let slots = [CallSlot { call: 0, id: 0 }];
        let mut seen = Vec::new();
        let good = GetSlotResponse { slot: 7 }.encode_to_vec();
        protocol.classify(200, &good, &slots, |_, outcome, _| seen.push(outcome));
        // Field 1 as a length-delimited value running past the end.
        protocol.classify(200, &[0x0a, 0x05, 1], &slots, |_, outcome, _| seen.push(outcome));
        protocol.classify(503, b"", &slots, |_, outcome, _| seen.push(outcome));
        assert_eq!(seen, [Outcome::Ok, Outcome::Invalid(InvalidKind::BadGrpc), Outcome::HttpStatus(503)]);
    }
}
