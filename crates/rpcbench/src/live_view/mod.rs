//! The live dashboard's library side: what a terminal shows while a load runs.
//!
//! Its figures are the live figures the metrics endpoint publishes ([`crate::metrics`]): the
//! workers publish their own recorders' summaries about once a second, never per request, and
//! the dashboard only reads that store. [`LiveWindow`] keeps a bounded window of samples of
//! those figures and derives what the panels show (rates over time, latency percentiles of the
//! last window and of the whole run, outcome classes and JSON-RPC codes, a per-method table,
//! the generator's CPU and send lag); [`draw_dashboard`] draws them into a ratatui `Buffer`.
//! The CLI owns the terminal (raw mode, alternate screen, keys) and calls these.

mod draw;
mod window;

pub use draw::{draw_dashboard, DashboardText};
pub use window::{
    quantile_from_buckets, GeneratorFigures, LatencyQuantiles, LiveSample, LiveWindow, MethodRow, OutcomeRow,
    RatePoint, SubscriptionView, WINDOW_CHOICES,
};
