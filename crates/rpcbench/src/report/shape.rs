//! What a run report needs to know of the run besides its record: the target as shown, the
//! load, the length, the stages, the wire. Built from the live run's `RunConfig`, or from a
//! results file (which has no configuration to give), so that no stand-in configuration is
//! ever made up for a report.

use std::time::Duration;

use crate::engine::config::{HttpVersion, Length, Load, RunConfig};
use crate::engine::stages::{LevelCurve, Stage};
use crate::ratelimit::pause::OnRateLimit;
use crate::util::redact::Secrets;

/// The shape of a run, as a report reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct RunShape {
    /// The target as reports show it (secrets redacted).
    pub target: String,
    /// The workload as reports name it.
    pub method: String,
    /// Closed or open loop, and its level (of all shards together for a results file of
    /// side-by-side copies).
    pub load: Load,
    /// An open loop at a recording's pace (a replay): its arrivals are the recorded ones.
    pub recorded_pace: bool,
    /// Open loop with `-c N`: the connections were opened at the start and held.
    pub hold_connections: bool,
    /// The measured duration or request count asked for.
    pub length: Length,
    /// Time before measurement.
    pub warmup: Duration,
    /// The stages of a staged load, in order.
    pub stages: Vec<Stage>,
    /// HTTP/1.1 or HTTP/2.
    pub http: HttpVersion,
    /// HTTP/2 streams per connection.
    pub streams: usize,
    /// Whether the run spoke WebSocket.
    pub websocket: bool,
    /// Whether the run made unary gRPC calls (`grpc://`, `grpcs://`).
    pub grpc: bool,
    /// WebSocket requests in flight per socket.
    pub in_flight: usize,
    /// What a connection did after a rate-limited answer.
    pub on_rate_limit: OnRateLimit,
    /// JSON-RPC calls per HTTP request.
    pub batch: usize,
    /// What to scrub out of the text servers sent back (the target's key, secret headers).
    pub secrets: Secrets,
}

impl RunShape {
    /// The shape of a live run.
    pub fn of(config: &RunConfig) -> Self {
        RunShape {
            target: config.target.redacted(),
            method: config.workload.label(),
            load: config.load.clone(),
            recorded_pace: config.replay.as_ref().is_some_and(|replay| replay.schedule.is_some()),
            hold_connections: config.hold_connections,
            length: config.length,
            warmup: config.warmup,
            stages: config.stages.clone(),
            http: config.http,
            streams: config.streams,
            websocket: config.target.websocket,
            grpc: config.target.grpc,
            in_flight: config.in_flight,
            on_rate_limit: config.on_rate_limit,
            batch: config.batch,
            secrets: config.secrets(),
        }
    }

    /// The measured duration: the stages' total with stages, else the length's duration.
    pub fn measured_duration(&self) -> Option<Duration> {
        match self.stages.is_empty() {
            true => self.length.duration,
            false => Some(self.stages.iter().map(|stage| stage.duration).sum()),
        }
    }

    /// The level over time of a staged load; `None` without stages.
    pub fn level_curve(&self) -> Option<LevelCurve> {
        (!self.stages.is_empty()).then(|| LevelCurve::from_stages(&self.stages, self.warmup))
    }

    /// The protocol's name as reports give it: `http/1.1`, `h2c`, `h2`, `websocket` or `grpc`.
    pub fn protocol_name(&self) -> &'static str {
        if self.websocket {
            "websocket"
        } else if self.grpc {
            "grpc"
        } else {
            self.http.name()
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::config::{Arrivals, Target};
    use crate::jsonrpc::RequestTemplate;

    #[test]
    fn a_shape_says_of_a_run_what_its_configuration_says() {
        let target = Target::parse("wss://node.example/v2/abcdef0123456789abcdef0123456789").unwrap();
        let mut config = RunConfig::new(target, RequestTemplate::from_method("getSlot", None).unwrap());
        config.load = Load::Open { rate: 50.0, arrivals: Arrivals::Poisson, max_connections: 8 };
        config.in_flight = 4;
        config.warmup = Duration::from_secs(1);
        let shape = RunShape::of(&config);
        assert_eq!(shape.target, config.target.redacted());
        assert!(!shape.target.contains("abcdef0123456789abcdef0123456789"), "{}", shape.target);
        assert_eq!(shape.load, config.load);
        assert_eq!(shape.measured_duration(), config.measured_duration());
        assert_eq!(shape.protocol_name(), config.protocol_name());
        assert_eq!(shape.in_flight, 4);
        assert!(shape.level_curve().is_none());
    }
}
