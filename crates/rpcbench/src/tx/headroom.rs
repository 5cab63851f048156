//! What an Ethereum `tx` run keeps in hand so that a send leaves on its schedule: connections
//! for the answers in flight, and transactions signed ahead of the pacer. Both are sized from
//! the send rate as a span of time, so a faster run does not run out sooner.
//!
//! A send waits when every connection it may use still waits for its answer (the open loop
//! opens connections only as they are needed, up to a cap), or when the signer has fallen
//! behind and the signed-ahead queue is empty. A node answers in bursts (a block imported, a
//! batch of receipts read, a collector's pause), so the cap covers [`ANSWER_SPAN`] of sends;
//! the queue covers [`SIGNED_SPAN`] of sends, so a signer that loses its core for that long
//! (it runs in the idle class, behind every ordinary thread) does not hold a send back.

use std::time::Duration;

/// The answer time the connections cover at the send rate: about twice the acknowledgement
/// p99 measured against the mock at 20,000/s (3-7 ms, `bench/RESULTS.md`). Not more: past
/// what answers need, more connections only let a node that cannot keep up queue more (each
/// waiting on its own socket), where a bounded set holds the excess back at the sender.
pub const ANSWER_SPAN: Duration = Duration::from_millis(10);

/// The fewest connections a run may open (what every rate got before the cap followed it).
pub const MIN_SEND_CONNECTIONS: usize = 64;

/// The most connections a run may open: within the open-file limit of 1,024 most systems
/// start with, beside the run's other sockets.
pub const MAX_SEND_CONNECTIONS: usize = 512;

/// The span of sends signed ahead of the pacer.
pub const SIGNED_SPAN: Duration = Duration::from_millis(100);

/// The fewest transactions signed ahead.
pub const MIN_SIGNED_AHEAD: usize = 256;

/// The most transactions signed ahead (a few hundred bytes each).
pub const MAX_SIGNED_AHEAD: usize = 8_192;

/// Sends at `rate` a second over `span`, rounded up, within `min..=max`.
fn sends_over(rate: f64, span: Duration, min: usize, max: usize) -> usize {
    let sends = rate * span.as_secs_f64();
    if !sends.is_finite() || sends <= min as f64 {
        return min;
    }
    (sends.ceil() as usize).clamp(min, max)
}

/// The most connections an open loop sending at `rate` a second may open: the sends of
/// [`ANSWER_SPAN`], at least [`MIN_SEND_CONNECTIONS`], at most [`MAX_SEND_CONNECTIONS`].
pub fn send_connections(rate: f64) -> usize {
    sends_over(rate, ANSWER_SPAN, MIN_SEND_CONNECTIONS, MAX_SEND_CONNECTIONS)
}

/// How many transactions to keep signed ahead of a pacer sending at `rate` a second: the
/// sends of [`SIGNED_SPAN`], at least [`MIN_SIGNED_AHEAD`], at most [`MAX_SIGNED_AHEAD`].
pub fn signed_ahead(rate: f64) -> usize {
    sends_over(rate, SIGNED_SPAN, MIN_SIGNED_AHEAD, MAX_SIGNED_AHEAD)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn connections_cover_the_answers_of_10_ms_at_the_send_rate_within_64_and_512() {
        assert_eq!(send_connections(1_000.0), 64);
        assert_eq!(send_connections(6_400.0), 64);
        assert_eq!(send_connections(10_000.0), 100);
        assert_eq!(send_connections(20_000.0), 200);
        assert_eq!(send_connections(20_001.0), 201);
        assert_eq!(send_connections(60_000.0), 512);
        for odd in [0.0, -5.0, f64::NAN, f64::INFINITY] {
            assert_eq!(send_connections(odd), 64, "{odd}");
        }
    }

    #[test]
    fn the_signed_ahead_queue_covers_100_ms_of_sends_within_256_and_8192() {
        assert_eq!(signed_ahead(100.0), 256);
        assert_eq!(signed_ahead(20_000.0), 2_000);
        assert_eq!(signed_ahead(1_000_000.0), 8_192);
        assert_eq!(signed_ahead(f64::NAN), 256);
    }
}
