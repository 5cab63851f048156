//! Every default of a run, a comparison and a capacity search, declared once. The library's
//! constructors ([`crate::engine::config::RunConfig::new`], the comparison's rounds) and the
//! command line's clap defaults and `--help` texts read them from here, so that the library and
//! the CLI cannot disagree. A value clap shows as text has a `_TEXT` twin, checked against the
//! value by this module's tests.

use std::time::Duration;

/// Closed loop: connections sending back to back (`run -c`, a scenario without a load).
pub const CONNECTIONS: usize = 50;
/// Open loop: the most connections opened, as needed, to keep up with the rate
/// (`--max-connections` of `run`, `compare` and `capacity`).
pub const MAX_CONNECTIONS: usize = 1024;
/// Measured duration of a run when neither `-d` nor `-n` is given.
pub const DURATION: Duration = Duration::from_secs(10);
/// [`DURATION`] as `--help` shows it.
pub const DURATION_TEXT: &str = "10s";
/// Time allowed for one request.
pub const TIMEOUT: Duration = Duration::from_secs(5);
/// [`TIMEOUT`] as `--help` shows it.
pub const TIMEOUT_TEXT: &str = "5s";
/// Time allowed to connect.
pub const CONNECT_TIMEOUT: Duration = Duration::from_secs(3);
/// [`CONNECT_TIMEOUT`] as `--help` shows it.
pub const CONNECT_TIMEOUT_TEXT: &str = "3s";
/// Largest response body accepted, in bytes; larger ones count as invalid.
pub const MAX_BODY: u64 = 64 * 1024 * 1024;
/// [`MAX_BODY`] as `--help` shows it.
pub const MAX_BODY_TEXT: &str = "64MiB";
/// Seed of everything random (arrivals, mixes, generated params).
pub const SEED: u64 = 1;
/// HTTP/2: concurrent streams per connection.
pub const STREAMS: usize = 1;
/// WebSocket: requests outstanding per socket.
pub const IN_FLIGHT: usize = 1;
/// Blocks (Solana: slots) back from the head that sampling a suite's or scenario's pools looks
/// at, unless the scenario's `[sample] window` says otherwise.
pub const SAMPLE_BLOCKS: u64 = 200;

/// Rounds of a comparison unless `--rounds` says otherwise (a load of stages runs whole in
/// each round, so there it is one).
pub const ROUNDS: u32 = 5;
/// Adaptive rounds: unless `--max-rounds` says otherwise, a comparison measured by duration
/// may run up to this many times its rounds, looking at its verdicts after every `--rounds`
/// rounds and stopping once each is decided.
pub const ROUND_BUDGET_FACTOR: u32 = 4;
/// The tie band of a comparison's verdicts: a ratio within 3% of 1 either way is no difference.
pub const TIE: f64 = 0.03;
/// [`TIE`] as `--help` shows it.
pub const TIE_TEXT: &str = "3%";
/// The tie band of p95 and p99: a tail within 10% of the baseline's either way is no
/// difference. Identical nodes on a quiet 2-core machine move their p99 by -7% to +16% from
/// round to round (their p50 by -8% to +5%, their req/s by -5% to +8%), so a 3% band on the
/// tail asks the rounds for more than the machine can tell (GUIDE, "Rounds and verdicts").
pub const TAIL_TIE: f64 = 0.10;
/// [`TAIL_TIE`] as `--help` shows it.
pub const TAIL_TIE_TEXT: &str = "10%";
/// A comparison round's warm-up when neither `--warmup` nor the scenario gives one, and the
/// warm-up of each target's later rounds unless `--warmup` is given (its first round has the
/// scenario's own).
pub const ROUND_WARMUP: Duration = Duration::from_millis(200);
/// The longest pause between two runs of a comparison's rounds when `--cooldown` is not given.
pub const ROUND_COOLDOWN: Duration = Duration::from_millis(200);

/// A capacity search's first rate, per second; doubled while steps pass.
pub const START_RATE: f64 = 100.0;
/// [`START_RATE`] as `--help` shows it.
pub const START_RATE_TEXT: &str = "100";
/// A capacity search's highest rate, per second.
pub const MAX_RATE: f64 = 1_000_000.0;
/// [`MAX_RATE`] as `--help` shows it.
pub const MAX_RATE_TEXT: &str = "1000000";
/// A capacity search over connections: connections of its first step.
pub const START_CONNECTIONS: usize = 16;
/// A capacity search stops when the first failing level is within this share of the highest
/// passing one.
pub const PRECISION_TEXT: &str = "5%";
/// Measured length of each capacity step.
pub const STEP_TEXT: &str = "5s";
/// Warm-up of each capacity step.
pub const STEP_WARMUP_TEXT: &str = "1s";
/// Pause between capacity steps.
pub const STEP_COOLDOWN_TEXT: &str = "1s";

#[cfg(test)]
mod tests {
    use super::*;
    use crate::util::units::{parse_duration, parse_rate, parse_size};

    #[test]
    fn every_default_shown_as_text_is_the_value_it_stands_for() {
        assert_eq!(parse_duration(DURATION_TEXT).unwrap(), DURATION);
        assert_eq!(parse_duration(TIMEOUT_TEXT).unwrap(), TIMEOUT);
        assert_eq!(parse_duration(CONNECT_TIMEOUT_TEXT).unwrap(), CONNECT_TIMEOUT);
        assert_eq!(parse_size(MAX_BODY_TEXT).unwrap(), MAX_BODY);
        assert_eq!(TIE_TEXT.trim_end_matches('%').parse::<f64>().unwrap() / 100.0, TIE);
        assert_eq!(TAIL_TIE_TEXT.trim_end_matches('%').parse::<f64>().unwrap() / 100.0, TAIL_TIE);
        assert_eq!(parse_rate(START_RATE_TEXT).unwrap(), START_RATE);
        assert_eq!(parse_rate(MAX_RATE_TEXT).unwrap(), MAX_RATE);
        for text in [STEP_TEXT, STEP_WARMUP_TEXT, STEP_COOLDOWN_TEXT] {
            assert!(parse_duration(text).is_ok(), "{text}");
        }
    }

    #[test]
    fn a_run_config_built_by_the_library_has_the_defaults_the_cli_shows() {
        use crate::engine::config::{Load, RunConfig, Target};
        let config = RunConfig::new(
            Target::parse("http://127.0.0.1:1/").unwrap(),
            crate::jsonrpc::RequestTemplate::from_method("getSlot", None).unwrap(),
        );
        assert_eq!(config.load, Load::Closed { connections: CONNECTIONS });
        assert_eq!(config.length.duration, Some(DURATION));
        assert_eq!(config.timeout, TIMEOUT);
        assert_eq!(config.connect_timeout, CONNECT_TIMEOUT);
        assert_eq!(config.max_body, MAX_BODY);
        assert_eq!(config.seed, SEED);
    }
}
