//! A connection's request timeout: one timer per connection raced against each exchange,
//! polled only when it can have something to say.
//!
//! The timer is re-armed lazily: it stays set to an earlier request's deadline and is moved
//! forward only when it fires, so a fast request costs no timer registration. And once polled
//! with the task's waker, it wakes the task when it fires: a wake-up of the same task before
//! then (the socket's) need not poll it again. The exchange is polled first, every time.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll, Waker};
use std::time::Instant;

use tokio::time::Sleep;

/// The timer of one connection's requests.
#[derive(Debug)]
pub(super) struct RequestTimeout {
    sleep: Pin<Box<Sleep>>,
    /// The waker the timer holds from its last poll, while it is registered and has not fired.
    armed_for: Option<Waker>,
}

impl RequestTimeout {
    /// A timer set to `deadline` (registered at its first poll).
    pub(super) fn new(deadline: Instant) -> Self {
        Self { sleep: Box::pin(tokio::time::sleep_until(deadline.into())), armed_for: None }
    }

    /// Polls `exchange`; while it is pending, watches for `deadline`: `Ready(None)` once it has
    /// passed (the request timed out), `Ready(Some(..))` with what the exchange gave.
    pub(super) fn poll_exchange<F: Future>(
        &mut self,
        exchange: Pin<&mut F>,
        deadline: Instant,
        cx: &mut Context<'_>,
    ) -> Poll<Option<F::Output>> {
        if let Poll::Ready(output) = exchange.poll(cx) {
            return Poll::Ready(Some(output));
        }
        loop {
            if let Some(waker) = &self.armed_for {
                if waker.will_wake(cx.waker()) && !self.sleep.is_elapsed() {
                    return Poll::Pending;
                }
            }
            match self.sleep.as_mut().poll(cx) {
                Poll::Pending => {
                    self.armed_for = Some(cx.waker().clone());
                    return Poll::Pending;
                }
                Poll::Ready(()) => {
                    self.armed_for = None;
                    if Instant::now() >= deadline {
                        return Poll::Ready(None);
                    }
                    // An earlier request's deadline: moved forward, and polled again to register.
                    self.sleep.as_mut().reset(deadline.into());
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[tokio::test(flavor = "current_thread")]
    async fn an_exchange_that_never_ends_times_out_at_its_deadline_not_before() {
        let start = Instant::now();
        let deadline = start + Duration::from_millis(100);
        let mut timeout = RequestTimeout::new(deadline);
        let mut never = std::pin::pin!(std::future::pending::<()>());
        let result = std::future::poll_fn(|cx| timeout.poll_exchange(never.as_mut(), deadline, cx)).await;
        assert_eq!(result, None);
        assert!(Instant::now() >= deadline);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_timer_left_at_an_earlier_deadline_is_moved_forward_when_it_fires() {
        // The first request answers at once and leaves the timer set to its own deadline; the
        // second's deadline is later, and the timer that fires at the first's must not end it
        // (the exchange is polled first, so its answer wins whenever both are due).
        let start = Instant::now();
        let first = start + Duration::from_millis(50);
        let mut timeout = RequestTimeout::new(first);
        let mut ready = std::pin::pin!(std::future::ready(7));
        let answered = std::future::poll_fn(|cx| timeout.poll_exchange(ready.as_mut(), first, cx)).await;
        assert_eq!(answered, Some(7));
        let second = start + Duration::from_millis(300);
        let mut slow = std::pin::pin!(async {
            tokio::time::sleep_until((start + Duration::from_millis(150)).into()).await;
            8
        });
        let answered = std::future::poll_fn(|cx| timeout.poll_exchange(slow.as_mut(), second, cx)).await;
        assert_eq!(answered, Some(8), "the first deadline passed, the second did not");
        let mut never = std::pin::pin!(std::future::pending::<u32>());
        let result = std::future::poll_fn(|cx| timeout.poll_exchange(never.as_mut(), second, cx)).await;
        assert_eq!(result, None);
        assert!(Instant::now() >= second);
    }

    #[tokio::test(flavor = "current_thread")]
    async fn a_wake_up_from_another_task_s_waker_polls_the_timer_again() {
        // Polled once from one task's waker, then from another's: the second must register
        // its own, or the timeout would never wake it.
        let start = Instant::now();
        let deadline = start + Duration::from_millis(100);
        let mut timeout = RequestTimeout::new(deadline);
        let mut never = std::pin::pin!(std::future::pending::<()>());
        let noop = futures_util::task::noop_waker();
        let mut cx = Context::from_waker(&noop);
        assert!(timeout.poll_exchange(never.as_mut(), deadline, &mut cx).is_pending());
        let watched = std::future::poll_fn(|cx| timeout.poll_exchange(never.as_mut(), deadline, cx));
        let result = tokio::time::timeout(Duration::from_secs(60), watched).await;
        assert_eq!(result, Ok(None), "the timer woke the task it was last polled from");
        assert!(Instant::now() >= deadline);
    }
}
