//! `rpcbench limits`: a probe, bounded by a request budget, that finds what a node or a
//! provider's plan really allows and keeps the evidence: the largest batch accepted (by
//! doubling then bisection, with the error given past it). The search steps are pure functions
//! ([`next_batch_len`]) so they are tested without a server; [`probe_batch`] drives them
//! against an [`Endpoint`], and [`LimitsReport`] renders the findings as text, Markdown or JSON
//! (`schema/limits.schema.json`) with a one-line summary.

use std::fmt::Write as _;

use serde::Serialize;
use serde_json::Value;

use crate::client::batches::{read_batch_answer, BatchAnswer};
use crate::client::{Endpoint, RawAnswer};
use crate::engine::StopHandle;
use crate::util::printable::markdown;

pub mod probe;
pub mod rate;
pub mod response;

pub use probe::*;

/// The default ceiling of the batch search: a batch this long accepted ends it.
pub const DEFAULT_BATCH_CEILING: u64 = 4_096;

/// What the batch search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BatchFinding {
    /// The longest batch answered call by call (0: not even one call).
    pub largest_accepted: u64,
    /// The shortest batch refused; `None` when every batch up to the ceiling was accepted.
    pub smallest_refused: Option<u64>,
    /// How the shortest refused batch was answered.
    pub refusal: Option<Refusal>,
    /// The ceiling of the search.
    pub ceiling: u64,
    /// Whether the search ended with the limit known exactly (refused = accepted + 1, or the
    /// ceiling accepted); false when the budget ran out first.
    pub exact: bool,
    /// Batches sent, in order, with whether each was accepted: the evidence.
    pub steps: Vec<BatchStep>,
}

impl BatchFinding {
    /// Whether any batch was sent: nothing when the budget or an interrupt came first.
    pub fn probed(&self) -> bool {
        !self.steps.is_empty()
    }
}

/// One batch the search sent.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
pub struct BatchStep {
    /// Calls in the batch.
    pub calls: u64,
    /// Whether it was answered call by call.
    pub accepted: bool,
}

/// Whether an answer to a batch of `calls` is the batch answered call by call: HTTP 2xx and a
/// JSON array of exactly that many items (each may be a result or its own error, such as a
/// per-call rate-limit error). geth's refusal (an array of one error), erigon's (a bare object)
/// and HTTP errors are not.
pub fn batch_accepted(answer: &RawAnswer, calls: u64) -> bool {
    // The probe's calls carry ids 1, 2, ... ([`batch_body`]); the one reading of a batch answer.
    let Ok(slots) = usize::try_from(calls) else { return false };
    matches!(read_batch_answer(answer, slots, 1), BatchAnswer::Results { items, .. } if items as u64 == calls)
}

/// Whether a 2xx answer is a bare rate-limit error (a JSON-RPC error in HTTP 200).
fn answer_is_rate_limit(answer: &RawAnswer) -> bool {
    let value: Option<Value> = serde_json::from_slice(&answer.body).ok();
    value.is_some_and(|value| value.get("error").is_some()) && Refusal::from_answer(answer).is_rate_limit()
}

/// Finds the largest batch of `method` calls the endpoint accepts, up to `ceiling`, spending
/// at most what `budget` has left (one request per batch).
pub fn probe_batch(
    endpoint: &Endpoint,
    method: &str,
    ceiling: u64,
    budget: &mut ProbeBudget,
) -> BatchFinding {
    let ceiling = ceiling.max(1);
    let (mut accepted, mut refused, mut refusal) = (0u64, None::<u64>, None::<Refusal>);
    let mut steps = Vec::new();
    let mut retries = 0;
    while let Some(calls) = next_batch_len(accepted, refused, ceiling) {
        if !budget.allows_one_more() {
            break;
        }
        budget.spend(calls);
        // Abandoned at an interrupt: that batch found nothing.
        let Some(posted) = budget.post(endpoint, &batch_body(method, calls)) else { break };
        let ok = match posted {
            Ok(answer) if batch_accepted(&answer, calls) => true,
            Ok(answer) => {
                let refused = Refusal::from_answer(&answer);
                // A rate limit answered for the whole batch says nothing of its length.
                if refused.is_rate_limit() && retries < RATE_LIMIT_RETRIES {
                    retries += 1;
                    budget.pause(RATE_LIMIT_RETRY_PAUSE);
                    continue;
                }
                refusal = Some(refused);
                false
            }
            Err(error) => {
                refusal = Some(Refusal::from_error(&error));
                false
            }
        };
        steps.push(BatchStep { calls, accepted: ok });
        if ok {
            accepted = calls;
        } else {
            refused = Some(calls);
        }
    }
    // The refusal kept is that of the shortest refused batch (each refusal lowers `refused`).
    let exact = next_batch_len(accepted, refused, ceiling).is_none();
    BatchFinding { largest_accepted: accepted, smallest_refused: refused, refusal, ceiling, exact, steps }
}

/// What the request body search found.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct BodyFinding {
    /// The largest request body answered (HTTP 2xx), in bytes.
    pub largest_accepted: u64,
    /// The smallest body refused; `None` when every body up to the ceiling was answered.
    pub smallest_refused: Option<u64>,
    /// How the smallest refused body was answered (a 413, a closed connection).
    pub refusal: Option<Refusal>,
    /// The ceiling of the search, in bytes.
    pub ceiling: u64,
    /// Whether the limit is known exactly (false: the budget ran out first).
    pub exact: bool,
}

impl BodyFinding {
    /// Whether any body was sent: nothing when the budget or an interrupt came first.
    pub fn probed(&self) -> bool {
        self.largest_accepted > 0 || self.smallest_refused.is_some() || self.refusal.is_some()
    }

    /// The finding as one table row: (limit, found, evidence).
    pub fn row(&self) -> (String, String, String) {
        let size = format!("{} bytes", self.largest_accepted);
        let value = match (self.smallest_refused, self.exact) {
            (Some(_), true) => size,
            (None, _) => format!("at least {size} (the ceiling or the budget)"),
            (Some(refused), false) => format!("{size} to {} bytes (budget spent)", refused - 1),
        };
        let evidence = match (self.smallest_refused, &self.refusal) {
            (Some(refused), Some(refusal)) => format!("{refused} bytes got {}", refusal_text(refusal)),
            _ => format!("no refusal up to {} bytes", self.largest_accepted),
        };
        ("largest request body".into(), value, evidence)
    }
}

/// Finds the largest request body the endpoint answers, up to `ceiling` bytes, by doubling
/// then bisection on the body's size ([`next_batch_len`]'s search, in bytes), one request of
/// the budget per size tried. Sizes below the call itself are sent as the call.
pub fn probe_body(endpoint: &Endpoint, method: &str, ceiling: u64, budget: &mut ProbeBudget) -> BodyFinding {
    let ceiling = ceiling.max(1);
    let (mut accepted, mut refused, mut refusal) = (0u64, None::<u64>, None::<Refusal>);
    let mut retries = 0;
    while let Some(bytes) = next_batch_len(accepted, refused, ceiling) {
        if !budget.allows_one_more() {
            break;
        }
        budget.spend(1);
        let Some(posted) = budget.post(endpoint, &padded_body(method, bytes)) else { break };
        match posted {
            Ok(answer) if (200..300).contains(&answer.status) && !answer_is_rate_limit(&answer) => {
                accepted = bytes
            }
            Ok(answer) => {
                let refused_now = Refusal::from_answer(&answer);
                if refused_now.is_rate_limit() && retries < RATE_LIMIT_RETRIES {
                    retries += 1;
                    budget.pause(RATE_LIMIT_RETRY_PAUSE);
                    continue;
                }
                refusal = Some(refused_now);
                refused = Some(bytes);
            }
            Err(error) => {
                refusal = Some(Refusal::from_error(&error));
                refused = Some(bytes);
            }
        }
    }
    let exact = next_batch_len(accepted, refused, ceiling).is_none();
    BodyFinding { largest_accepted: accepted, smallest_refused: refused, refusal, ceiling, exact }
}

/// A count found by opening things one by one until the first refusal: subscriptions on one
/// WebSocket connection, or WebSocket connections from one client.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct CountFinding {
    /// How many were accepted before the first refusal (or before the ceiling or the budget).
    pub accepted: u64,
    /// How the first refusal was answered; `None` when none came.
    pub refusal: Option<Refusal>,
    /// The most the probe would open.
    pub ceiling: u64,
    /// Whether the count is the server's limit exactly (a refusal came); false when the probe
    /// stopped at its ceiling or its budget first.
    pub exact: bool,
}

impl CountFinding {
    /// Whether anything was opened (or refused): nothing when the budget or an interrupt came
    /// first.
    pub fn probed(&self) -> bool {
        self.accepted > 0 || self.refusal.is_some()
    }
}

/// What the WebSocket probe looks for, and how far it may go.
#[derive(Debug, Clone, PartialEq)]
pub struct WsProbe {
    /// A ws:// URL.
    pub url: String,
    /// The subscribe method (`eth_subscribe`, `slotSubscribe`).
    pub method: String,
    /// Its params (`["newHeads"]`, `[]`).
    pub params: Value,
    /// Most subscriptions opened on one connection.
    pub max_subscriptions: u64,
    /// Most connections opened at once.
    pub max_connections: u64,
    /// Time allowed for a connection or an answer.
    pub timeout: std::time::Duration,
}

/// The default ceiling of the subscriptions probe.
pub const DEFAULT_MAX_SUBSCRIPTIONS: u64 = 1_000;
/// The default ceiling of the connections probe.
pub const DEFAULT_MAX_WS_CONNECTIONS: u64 = 100;

type Socket = tokio_tungstenite::WebSocketStream<tokio::net::TcpStream>;

/// Opens one WebSocket connection, or says how it was refused.
async fn open_socket(url: &url::Url, timeout: std::time::Duration) -> Result<Socket, Refusal> {
    use tokio_tungstenite::tungstenite;
    let failed = |message: String| Refusal { status: 0, code: None, message: truncate(message, 200) };
    let open = async {
        let addrs = url.socket_addrs(|| Some(80)).map_err(|err| failed(err.to_string()))?;
        let stream = tokio::net::TcpStream::connect(&*addrs).await.map_err(|err| failed(err.to_string()))?;
        match tokio_tungstenite::client_async(url.as_str(), stream).await {
            Ok((socket, _)) => Ok(socket),
            Err(tungstenite::Error::Http(response)) => {
                let body = response.body().as_deref().unwrap_or_default().to_vec();
                Err(Refusal::from_answer(&RawAnswer { status: response.status().as_u16(), body }))
            }
            Err(err) => Err(failed(err.to_string())),
        }
    };
    tokio::time::timeout(timeout, open)
        .await
        .unwrap_or_else(|_| Err(failed("no answer within the timeout".into())))
}

/// `work`'s output, or `None` when `stop` is stopped first (`work` is dropped then).
async fn unless_stopped<T>(stop: &StopHandle, work: impl std::future::Future<Output = T>) -> Option<T> {
    tokio::select! {
        done = work => Some(done),
        () = stop.stopped() => None,
    }
}

/// Sends subscribe call `id` and reads until its answer (notifications are skipped): `Ok` when
/// it was accepted, else the refusal.
async fn subscribe_once(socket: &mut Socket, probe: &WsProbe, id: u64) -> Result<(), Refusal> {
    use futures_util::{SinkExt, StreamExt};
    use tokio_tungstenite::tungstenite::Message;
    let failed = |message: &str| Refusal { status: 0, code: None, message: message.to_string() };
    let call =
        serde_json::json!({"jsonrpc": "2.0", "id": id, "method": probe.method, "params": probe.params});
    socket.send(Message::text(call.to_string())).await.map_err(|err| failed(&err.to_string()))?;
    let answer = async {
        loop {
            let bytes = match socket.next().await {
                Some(Ok(Message::Text(text))) => text.as_bytes().to_vec(),
                Some(Ok(Message::Binary(bytes))) => bytes.to_vec(),
                Some(Ok(_)) => continue,
                Some(Err(err)) => return Err(failed(&err.to_string())),
                None => return Err(failed("the server closed the connection")),
            };
            let Ok(value) = serde_json::from_slice::<Value>(&bytes) else { continue };
            if value.get("id").and_then(Value::as_u64) != Some(id) {
                continue;
            }
            if value.get("result").is_some() {
                return Ok(());
            }
            return Err(Refusal::from_answer(&RawAnswer { status: 101, body: bytes }));
        }
    };
    tokio::time::timeout(probe.timeout, answer)
        .await
        .unwrap_or_else(|_| Err(failed("no answer within the timeout")))
}

/// Finds the subscriptions one WebSocket connection may hold and the connections one client
/// may open, each up to its ceiling, one request of the budget per subscribe call or upgrade.
/// The first connection is the one holding the subscriptions, and it stays open while more
/// are opened, so that no close still in flight is counted. Blocking.
pub fn probe_websocket(
    probe: &WsProbe,
    budget: &mut ProbeBudget,
) -> Result<(CountFinding, CountFinding), String> {
    let url = url::Url::parse(&probe.url).map_err(|err| format!("the WebSocket URL: {err}"))?;
    if url.scheme() != "ws" {
        return Err(format!("the WebSocket probe takes a ws:// URL, not {}://", url.scheme()));
    }
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().map_err(|err| err.to_string())?;
    runtime.block_on(async {
        let finding = |accepted, refusal: Option<Refusal>, ceiling| CountFinding {
            accepted,
            exact: refusal.is_some(),
            refusal,
            ceiling,
        };
        // No budget left (the rate probe spent it): nothing found, no limit claimed, and the
        // report of what the other probes found is still written.
        if !budget.allows_one_more() {
            return Ok((finding(0, None, probe.max_subscriptions), finding(0, None, probe.max_connections)));
        }
        budget.spend(0);
        // An interrupt abandons what is under way at once (not at the end of its timeout).
        let stop = budget.stop_handle();
        let Some(opened) = unless_stopped(&stop, open_socket(&url, probe.timeout)).await else {
            budget.interrupted = true;
            return Ok((finding(0, None, probe.max_subscriptions), finding(0, None, probe.max_connections)));
        };
        let mut first = match opened {
            Ok(socket) => socket,
            Err(refusal) => {
                return Err(format!("the first WebSocket connection failed: {}", refusal_text(&refusal)))
            }
        };
        let (mut subscriptions, mut refusal) = (0, None);
        let mut retries = 0;
        while subscriptions < probe.max_subscriptions && budget.allows_one_more() {
            budget.spend(1);
            let Some(answered) =
                unless_stopped(&stop, subscribe_once(&mut first, probe, budget.requests)).await
            else {
                budget.interrupted = true;
                break;
            };
            match answered {
                Ok(()) => subscriptions += 1,
                // A rate limit is not the cap: wait and ask again.
                Err(refused) if refused.is_rate_limit() && retries < RATE_LIMIT_RETRIES => {
                    retries += 1;
                    unless_stopped(&stop, tokio::time::sleep(RATE_LIMIT_RETRY_PAUSE)).await;
                }
                Err(refused) => {
                    refusal = Some(refused);
                    break;
                }
            }
        }
        let subscribed = finding(subscriptions, refusal, probe.max_subscriptions);
        let mut held = vec![first];
        let mut refusal = None;
        while (held.len() as u64) < probe.max_connections && budget.allows_one_more() {
            budget.spend(0);
            let Some(opened) = unless_stopped(&stop, open_socket(&url, probe.timeout)).await else {
                budget.interrupted = true;
                break;
            };
            match opened {
                Ok(socket) => held.push(socket),
                Err(refused) => {
                    refusal = Some(refused);
                    break;
                }
            }
        }
        let connections = finding(held.len() as u64, refusal, probe.max_connections);
        for mut socket in held {
            let _ = socket.close(None).await;
        }
        Ok((subscribed, connections))
    })
}

/// Everything `rpcbench limits` found, with what it spent.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LimitsReport {
    /// The URL probed, secrets hidden.
    pub url: String,
    /// The method the probe called.
    pub method: String,
    /// What the probe spent of its budget.
    pub budget: ProbeBudget,
    /// The sustained rate, the burst and its window, and how batches count, when probed.
    pub rate: Option<crate::limits::rate::RateFinding>,
    /// The batch limit, when probed.
    pub batch: Option<BatchFinding>,
    /// The largest request body, when probed.
    pub body: Option<BodyFinding>,
    /// The largest response body, when probed.
    pub response: Option<crate::limits::response::ResponseFinding>,
    /// Subscriptions per WebSocket connection, when probed.
    pub subscriptions: Option<CountFinding>,
    /// WebSocket connections per client, when probed.
    pub ws_connections: Option<CountFinding>,
}

impl LimitsReport {
    /// One line: "batches up to 100 calls (-32000 "batch limit 100 exceeded"); 9 requests spent".
    pub fn summary(&self) -> String {
        let mut parts = Vec::new();
        if let Some(rate) = &self.rate {
            parts.extend(rate.summary_parts());
        }
        let mut unprobed = Vec::new();
        if let Some(batch) = &self.batch {
            if !batch.probed() {
                unprobed.push("batches");
            } else {
                parts.push(batch_summary(batch));
            }
        }
        if self.body.as_ref().is_some_and(|body| !body.probed()) {
            unprobed.push("request bodies");
        } else if let Some(body) = &self.body {
            let size = format!("{} bytes", body.largest_accepted);
            parts.push(match (body.smallest_refused, body.exact) {
                (Some(_), true) => format!("request bodies up to {size}"),
                _ => format!("request bodies of at least {size}"),
            });
        }
        match &self.response {
            Some(response) if !response.probed() => unprobed.push("response bodies"),
            Some(response) => parts.push(response.summary()),
            None => {}
        }
        for (found, what, unit) in [
            (&self.subscriptions, "subscriptions", "subscriptions per socket"),
            (&self.ws_connections, "WebSocket connections", "WebSocket connections"),
        ] {
            match found {
                Some(found) if !found.probed() => unprobed.push(what),
                Some(found) => parts.push(format!("{} {unit}", count_text(found))),
                None => {}
            }
        }
        if !unprobed.is_empty() {
            parts.push(format!("{} not probed ({})", unprobed.join(", "), self.why_not_probed()));
        }
        parts.push(format!(
            "{} of {} requests spent ({} calls)",
            self.budget.requests, self.budget.max_requests, self.budget.calls
        ));
        parts.join(", ")
    }

    /// The findings as a text table.
    pub fn render_text(&self) -> String {
        let mut out = format!("limits of {} (method {})\n\n", self.url, self.method);
        let rows = self.rows();
        let width = rows.iter().map(|(name, _, _)| name.len()).max().unwrap_or(0);
        for (name, value, evidence) in &rows {
            let _ = writeln!(out, "  {name:<width$}  {value}");
            if !evidence.is_empty() {
                let _ = writeln!(out, "  {:<width$}  {evidence}", "");
            }
        }
        let _ = writeln!(out, "\n{}", self.summary());
        if let Some(said) = self.interrupted_text() {
            let _ = writeln!(out, "{said}");
        }
        out
    }

    /// Why a probe sent nothing: the interrupt, or the budget spent by the probes before it.
    fn why_not_probed(&self) -> &'static str {
        if self.budget.interrupted {
            "the interrupt came first"
        } else {
            "the budget was spent first"
        }
    }

    /// What an interrupted probe's report says below its summary.
    pub fn interrupted_text(&self) -> Option<&'static str> {
        self.budget.interrupted.then_some(
            "interrupted: the probes stopped at the interrupt; the findings are what they had found by then",
        )
    }

    /// The findings as a Markdown table.
    pub fn render_markdown(&self) -> String {
        let mut out = format!(
            "## Limits of {} (method {})\n\n| Limit | Found | Evidence |\n|---|---|---|\n",
            markdown(&self.url),
            markdown(&self.method)
        );
        for (name, value, evidence) in self.rows() {
            let _ = writeln!(out, "| {} | {} | {} |", markdown(&name), markdown(&value), markdown(&evidence));
        }
        let _ = writeln!(out, "\n{}", markdown(&self.summary()));
        if let Some(said) = self.interrupted_text() {
            let _ = writeln!(out, "\n{}", markdown(said));
        }
        out
    }

    /// The findings as JSON (`schema/limits.schema.json`), the summary included.
    pub fn render_json(&self) -> String {
        let mut value = serde_json::to_value(self).unwrap_or(Value::Null);
        if let Value::Object(map) = &mut value {
            map.insert("summary".into(), Value::String(self.summary()));
        }
        serde_json::to_string_pretty(&value).unwrap_or_default() + "\n"
    }

    /// The table's rows: (limit, found, evidence).
    pub fn rows(&self) -> Vec<(String, String, String)> {
        let mut rows: Vec<(String, String, String)> = Vec::new();
        if let Some(rate) = &self.rate {
            rows.extend(rate.rows());
        }
        let not_probed =
            |name: &str| (name.to_string(), "not probed".to_string(), self.why_not_probed().to_string());
        if self.batch.as_ref().is_some_and(|batch| !batch.probed()) {
            rows.push(not_probed("largest batch"));
        } else if let Some(batch) = &self.batch {
            let value = match (batch.smallest_refused, batch.exact) {
                (Some(_), true) => format!("{} calls", batch.largest_accepted),
                (None, true) => format!("at least {} calls (the ceiling)", batch.largest_accepted),
                (Some(refused), false) => {
                    format!("between {} and {} calls (budget spent)", batch.largest_accepted, refused - 1)
                }
                (None, false) => format!("at least {} calls (budget spent)", batch.largest_accepted),
            };
            let steps: Vec<String> = batch
                .steps
                .iter()
                .map(|step| format!("{}{}", step.calls, if step.accepted { "✓" } else { "✗" }))
                .collect();
            let mut evidence = format!("sent {}", steps.join(" "));
            if let (Some(refused), Some(refusal)) = (batch.smallest_refused, &batch.refusal) {
                let _ = write!(evidence, "; {refused} calls got {}", refusal_text(refusal));
            }
            rows.push(("largest batch".into(), value, evidence));
        }
        match &self.body {
            Some(body) if !body.probed() => rows.push(not_probed("largest request body")),
            Some(body) => rows.push(body.row()),
            None => {}
        }
        match &self.response {
            Some(response) if !response.probed() => rows.push(not_probed("largest response body")),
            Some(response) => rows.push(response.row()),
            None => {}
        }
        for (name, found) in [
            ("subscriptions per socket", &self.subscriptions),
            ("WebSocket connections", &self.ws_connections),
        ] {
            let Some(found) = found else { continue };
            if !found.probed() {
                rows.push(not_probed(name));
                continue;
            }
            let evidence = match &found.refusal {
                Some(refusal) => format!("number {} got {}", found.accepted + 1, refusal_text(refusal)),
                None => format!("no refusal up to {} (the ceiling or the budget)", found.accepted),
            };
            rows.push((name.into(), count_text(found), evidence));
        }
        rows.push((
            "spent".into(),
            format!("{} of {} requests", self.budget.requests, self.budget.max_requests),
            format!("{} calls", self.budget.calls),
        ));
        rows
    }
}

fn count_text(found: &CountFinding) -> String {
    if found.exact {
        found.accepted.to_string()
    } else {
        format!("at least {}", found.accepted)
    }
}

fn batch_summary(batch: &BatchFinding) -> String {
    match (batch.smallest_refused, batch.exact) {
        (Some(_), true) => format!("batches up to {} calls", batch.largest_accepted),
        (None, _) => format!("batches of at least {} calls", batch.largest_accepted),
        (Some(refused), false) => {
            format!("batches of {} to {} calls", batch.largest_accepted, refused - 1)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs the search against a limit without a server.
    fn search(limit: u64, ceiling: u64) -> (u64, Option<u64>, u32) {
        let (mut accepted, mut refused, mut sent) = (0, None, 0);
        while let Some(calls) = next_batch_len(accepted, refused, ceiling) {
            sent += 1;
            if calls <= limit {
                accepted = calls;
            } else {
                refused = Some(calls);
            }
        }
        (accepted, refused, sent)
    }

    #[test]
    fn probes_after_an_interrupt_send_nothing_and_say_they_were_not_probed() {
        let stop = crate::engine::StopHandle::new();
        let mut budget = ProbeBudget::with_stop(100, stop.clone());
        stop.stop();
        // Nothing listens on port 9: a probe that sent would record a refusal.
        let endpoint = Endpoint::parse("http://127.0.0.1:9/", std::time::Duration::from_secs(1)).unwrap();
        let batch = probe_batch(&endpoint, "eth_blockNumber", 100, &mut budget);
        let body = probe_body(&endpoint, "eth_blockNumber", 1 << 20, &mut budget);
        let response = response::probe_response(&endpoint, "eth_blockNumber", 1 << 20, None, &mut budget);
        assert_eq!((budget.requests, budget.interrupted), (0, true));
        let report = LimitsReport {
            url: "http://127.0.0.1:9/".into(),
            method: "eth_blockNumber".into(),
            budget,
            rate: None,
            batch: Some(batch),
            body: Some(body),
            response: Some(response),
            subscriptions: None,
            ws_connections: None,
        };
        let rows = report.rows();
        let (spent, found) = rows.split_last().expect("rows");
        assert_eq!((found.len(), spent.0.as_str()), (3, "spent"), "{rows:?}");
        assert!(
            found
                .iter()
                .all(|(_, value, evidence)| value == "not probed" && evidence == "the interrupt came first"),
            "{rows:?}"
        );
        let text = report.render_text();
        assert!(
            text.contains("batches, request bodies, response bodies not probed (the interrupt came first)"),
            "{text}"
        );
        assert!(text.contains("interrupted: the probes stopped at the interrupt"), "{text}");
        let json: Value = serde_json::from_str(&report.render_json()).unwrap();
        assert_eq!(json["budget"]["interrupted"], true, "{json}");
    }

    #[test]
    fn the_batch_search_doubles_then_bisects_to_the_exact_limit() {
        assert_eq!(search(100, 4096), (100, Some(101), 14));
        assert_eq!(search(1000, 4096), (1000, Some(1001), 20));
        assert_eq!(search(1, 4096), (1, Some(2), 2));
        assert_eq!(search(0, 4096), (0, Some(1), 1));
        assert_eq!(search(128, 4096), (128, Some(129), 16));
        assert_eq!(search(10_000, 4096), (4096, None, 13), "stops at the ceiling");
        assert_eq!(search(10_000, 100), (100, None, 8), "a ceiling that is not a power of two is tried");
    }

    #[test]
    fn a_batch_is_accepted_only_when_answered_call_by_call() {
        let answer = |status, body: &str| RawAnswer { status, body: body.as_bytes().to_vec() };
        assert!(batch_accepted(&answer(200, r#"[{"id":1,"result":1},{"id":2,"error":{"code":-32005}}]"#), 2));
        let geth =
            answer(200, r#"[{"jsonrpc":"2.0","id":1,"error":{"code":-32600,"message":"batch too large"}}]"#);
        assert!(!batch_accepted(&geth, 3));
        assert_eq!(
            Refusal::from_answer(&geth),
            Refusal { status: 200, code: Some(-32600), message: "batch too large".into() }
        );
        let erigon = answer(
            200,
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32000,"message":"batch limit 3 exceeded"}}"#,
        );
        assert!(!batch_accepted(&erigon, 4));
        assert_eq!(Refusal::from_answer(&erigon).code, Some(-32000));
        assert!(!batch_accepted(&answer(413, "too large"), 1));
        assert_eq!(Refusal::from_answer(&answer(413, "too large")).message, "too large");
    }

    #[test]
    fn batch_bodies_are_json_arrays_of_distinct_ids() {
        let body: Vec<Value> = serde_json::from_slice(&batch_body("get\"Slot", 3)).unwrap();
        assert_eq!(body.len(), 3);
        assert_eq!(body[2]["id"], 3);
        assert_eq!(body[0]["method"], "get\"Slot");
    }
}
