//! The axes and marks every capacity chart shares: the offered-rate (or connections) axis on a
//! log or linear scale, the steps in order of rate, the SLO bounds drawn as lines, the capacity
//! and knee marked, and the chart frame. Used by the capacity page's charts and by the head-lag
//! chart beside them.

use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::html::{house_style, nice_max, TickedAxis, FONT};
use crate::capacity::{CapacityReport, LatencyStat, Slo, SloBound, StepResult};
use crate::report::tables::trim_float;

pub(super) type Chart<'a, 'b> = ChartContext<'a, SVGBackend<'b>, Cartesian2d<TickedAxis, TickedAxis>>;

/// Above this ratio between the highest and the lowest level run, the rate (or connections)
/// axis is logarithmic: a doubling search from 100/s to 57,600/s puts its first eight steps in
/// the first 2% of a linear axis.
pub(super) const LOG_RATE_SPREAD: f64 = 8.0;

/// The x axis of the capacity charts: the offered rate (or connections), linear from zero, or
/// logarithmic when the levels run span more than [`LOG_RATE_SPREAD`] times.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(super) struct RateAxis {
    log: bool,
    low: f64,
    high: f64,
    /// On a log axis, the lowest and highest levels run, labelled whether or not they fall on
    /// a 1-2-5 tick (a search from 50/s to 400/s ends between 200 and 500).
    ends: Option<(f64, f64)>,
}

/// On a log axis, a 1-2-5 tick closer than this (in decades) to a labelled end level is left
/// out, so that the two labels do not run into each other.
const END_TICK_GAP: f64 = 0.12;

impl RateAxis {
    /// The axis for these levels (rates or connections; the positive ones count).
    pub(super) fn for_levels(levels: impl IntoIterator<Item = f64>) -> Self {
        let (lowest, highest) = levels
            .into_iter()
            .filter(|level| level.is_finite() && *level > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(low, high), level| (low.min(level), high.max(level)));
        let highest = highest.max(1.0);
        if lowest.is_finite() && highest / lowest > LOG_RATE_SPREAD {
            Self { log: true, low: lowest.log10() - 0.08, high: highest.log10() + 0.08, ends: None }
        } else {
            Self { log: false, low: 0.0, high: nice_max(highest), ends: None }
        }
    }

    /// The axis with the lowest and highest of `levels` (the steps run) labelled too, when it
    /// is logarithmic: the step where a search ended (where the capacity marker often stands)
    /// then always has its number under it.
    pub(super) fn with_end_labels(self, levels: impl IntoIterator<Item = f64>) -> Self {
        let (lowest, highest) = levels
            .into_iter()
            .filter(|level| level.is_finite() && *level > 0.0)
            .fold((f64::INFINITY, 0.0f64), |(low, high), level| (low.min(level), high.max(level)));
        let ends = (self.log && lowest.is_finite()).then_some((lowest, highest));
        Self { ends, ..self }
    }

    /// Where a level goes on the axis.
    pub(super) fn x(&self, level: f64) -> f64 {
        if self.log {
            level.max(1e-9).log10()
        } else {
            level
        }
    }

    /// The first and last positions of the axis.
    pub(super) fn start(&self) -> f64 {
        self.low
    }

    pub(super) fn end(&self) -> f64 {
        self.high
    }

    pub(super) fn axis(&self) -> TickedAxis {
        let ticks = if self.log {
            let steps: &[f64] = if self.high - self.low > 4.0 { &[1.0] } else { &[1.0, 2.0, 5.0] };
            let mut ticks: Vec<f64> = (self.low.floor() as i64..=self.high.ceil() as i64)
                .flat_map(|decade| steps.iter().map(move |m| m.log10() + decade as f64))
                .filter(|x| (self.low..=self.high).contains(x))
                .collect();
            if let Some((lowest, highest)) = self.ends {
                for end in [lowest.log10(), highest.log10()] {
                    ticks.retain(|tick| (tick - end).abs() >= END_TICK_GAP);
                    ticks.push(end);
                }
                ticks.sort_by(f64::total_cmp);
                ticks.dedup();
            }
            ticks
        } else {
            linear_ticks(self.high)
        };
        TickedAxis::new(self.low..self.high, ticks)
    }

    /// A tick's label, short enough not to run into its neighbours: `500`, `2k`, `1.5M`.
    pub(super) fn label(&self, x: f64) -> String {
        let value = if self.log { 10f64.powf(x) } else { x };
        compact(value)
    }

    /// What the axis is, for its title.
    pub(super) fn describe(&self, what: &str) -> String {
        if self.log {
            format!("{what} (log scale)")
        } else {
            what.to_string()
        }
    }
}

/// `500`, `2k`, `12.5k`, `1.5M`.
pub(super) fn compact(value: f64) -> String {
    let value = (value * 1000.0).round() / 1000.0;
    // `{}` of an f64 drops a zero fraction: 2, 1.5.
    if value >= 1e6 {
        format!("{}M", (value / 1e5).round() / 10.0)
    } else if value >= 1e3 {
        format!("{}k", (value / 1e2).round() / 10.0)
    } else {
        format!("{}", (value * 10.0).round() / 10.0)
    }
}

pub(super) const RED: RGBColor = RGBColor(200, 40, 40);
pub(super) const GREEN: RGBColor = RGBColor(46, 125, 50);
pub(super) const ORANGE: RGBColor = RGBColor(230, 120, 20);
pub(super) const GREY: RGBColor = RGBColor(150, 150, 150);

/// The steps in order of offered rate, or connections (a bisection runs them out of order).
pub(super) fn by_rate(report: &CapacityReport) -> Vec<&StepResult> {
    let mut steps: Vec<&StepResult> = report.steps.iter().collect();
    steps.sort_by(|a, b| a.level().total_cmp(&b.level()));
    steps
}

/// What the x axis is, for chart titles: `offered rate` or `connections`.
pub(super) fn x_name(report: &CapacityReport) -> &'static str {
    if report.connections_mode() {
        "connections"
    } else {
        "offered rate"
    }
}

/// The x axis description under a chart.
pub(super) fn x_desc(report: &CapacityReport) -> &'static str {
    if report.connections_mode() {
        "connections (closed loop)"
    } else {
        "offered rate (requests per second)"
    }
}

/// `300/s` or `48 conns`, short, for chart marks and cards.
pub(super) fn short_amount(report: &CapacityReport, level: f64) -> String {
    if report.connections_mode() && level == 1.0 {
        "1 conn".into()
    } else if report.connections_mode() {
        format!("{} conns", trim_float(level))
    } else {
        format!("{}/s", trim_float(level))
    }
}

pub(super) fn monitored(report: &CapacityReport) -> bool {
    report.steps.iter().any(|s| s.target_resources.is_some())
}

/// The SLO's clauses, parsed back from the report.
pub(super) fn slo(report: &CapacityReport) -> Option<Slo> {
    Slo::parse(&report.settings.slo).ok()
}

/// Latency bounds of the SLO on p50, p90 or p99 (the percentiles plotted) and max: (clause,
/// microseconds).
pub(super) fn latency_bounds(report: &CapacityReport) -> Vec<(String, f64)> {
    slo(report)
        .map(|slo| {
            slo.clauses
                .iter()
                .filter_map(|clause| match clause.bound {
                    SloBound::Latency(LatencyStat::Percentile(_) | LatencyStat::Max, limit) => {
                        Some((clause.text.clone(), limit.as_secs_f64() * 1e6))
                    }
                    SloBound::ErrorPercent(_) => None,
                })
                .collect()
        })
        .unwrap_or_default()
}

pub(super) fn error_bound(report: &CapacityReport) -> Option<f64> {
    slo(report)?.clauses.iter().find_map(|clause| match clause.bound {
        SloBound::ErrorPercent(limit) => Some(limit),
        SloBound::Latency(..) => None,
    })
}

/// Ticks at 1, 2 or 5 times a power of ten, from 0 to `high`.
pub(super) fn linear_ticks(high: f64) -> Vec<f64> {
    let raw = (high / 6.0).max(f64::MIN_POSITIVE);
    let magnitude = 10f64.powf(raw.log10().floor());
    let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(raw);
    (0..).map(|i| i as f64 * step).take_while(|y| *y <= high).collect()
}

/// An axis of whole counts (blocks, slots) from 0 to at least `highest`: ticks at whole
/// steps of 1, 2 or 5 times a power of ten, never fractions (which `{:.0}` would label "0, 0,
/// 1"), and 0 to 4 when every count is 0, so that a line at 0 lies on a labelled floor.
pub(super) fn count_axis(highest: u64) -> TickedAxis {
    let wanted = ((highest as f64) * 1.15).ceil().max(4.0);
    let step = linear_ticks(wanted).get(1).copied().unwrap_or(1.0).max(1.0).round();
    let top = (wanted / step).ceil() * step;
    TickedAxis::new(0.0..top, (0..).map(|i| i as f64 * step).take_while(|y| *y <= top).collect())
}

pub(super) fn linear_axis(high: f64) -> TickedAxis {
    let high = nice_max(high);
    TickedAxis::new(0.0..high, linear_ticks(high))
}

/// The x axis: the levels run (and, for rates, the rates achieved).
pub(super) fn rate_axis(report: &CapacityReport) -> RateAxis {
    let axis = if report.connections_mode() {
        RateAxis::for_levels(report.steps.iter().map(StepResult::level))
    } else {
        RateAxis::for_levels(report.steps.iter().flat_map(|s| [s.target_rate, s.achieved_rate]))
    };
    axis.with_end_labels(report.steps.iter().map(StepResult::level))
}

pub(super) fn build<'a, 'b>(
    root: &'a super::html::Area<'b>,
    x: &RateAxis,
    y: TickedAxis,
) -> Result<Chart<'a, 'b>, Box<dyn std::error::Error>> {
    Ok(ChartBuilder::on(root)
        .margin(14)
        .margin_right(44)
        .x_label_area_size(40)
        .y_label_area_size(78)
        .build_cartesian_2d(x.axis(), y)?)
}

/// The capacity (solid green) and the knee (dashed orange) as vertical lines from `low` to
/// `high`, each labelled at the top.
pub(super) fn mark_rates(
    chart: &mut Chart<'_, '_>,
    report: &CapacityReport,
    rate: &RateAxis,
    low: f64,
    high: f64,
) -> super::html::DrawResult {
    let label_at = high - (high - low) * 0.04;
    let right_side = |x: f64| x > rate.start() + (rate.end() - rate.start()) * 0.6;
    // Labels right of their line, or left of it near the right edge.
    let style = |x: f64, color: &RGBColor| {
        let side = if right_side(x) { HPos::Right } else { HPos::Left };
        (FONT, 13).into_font().color(color).pos(Pos::new(side, VPos::Top))
    };
    let pad = |x: f64, text: String| if right_side(x) { format!("{text} ") } else { format!(" {text}") };
    if let Some(knee) = report.knee {
        let (label, knee) = (short_amount(report, knee), rate.x(knee));
        chart.draw_series(DashedLineSeries::new(
            [(knee, low), (knee, high)],
            6,
            4,
            ORANGE.stroke_width(2),
        ))?;
        chart.draw_series(std::iter::once(Text::new(
            pad(knee, format!("knee {label}")),
            (knee, label_at - (high - low) * 0.07),
            style(knee, &ORANGE),
        )))?;
    }
    if let Some(capacity) = report.capacity {
        let (label, capacity) = (short_amount(report, capacity), rate.x(capacity));
        chart.draw_series(LineSeries::new([(capacity, low), (capacity, high)], GREEN.stroke_width(2)))?;
        chart.draw_series(std::iter::once(Text::new(
            pad(capacity, format!("capacity {label}")),
            (capacity, label_at),
            style(capacity, &GREEN),
        )))?;
    }
    Ok(())
}

/// A horizontal bound across the chart, labelled at its left end.
pub(super) fn bound_line(
    chart: &mut Chart<'_, '_>,
    rate: &RateAxis,
    y: f64,
    label: &str,
) -> super::html::DrawResult {
    let (start, end) = (rate.start(), rate.end());
    chart.draw_series(DashedLineSeries::new([(start, y), (end, y)], 8, 5, RED.stroke_width(2)))?;
    chart.draw_series(std::iter::once(Text::new(
        format!("SLO {label}"),
        (start + (end - start) * 0.01, y),
        (FONT, 13).into_font().color(&RED),
    )))?;
    Ok(())
}

pub(super) fn mesh(
    chart: &mut Chart<'_, '_>,
    rate: &RateAxis,
    x_desc: &str,
    y_desc: &str,
    y_label: &dyn Fn(&f64) -> String,
) -> super::html::DrawResult {
    house_style(&mut chart.configure_mesh(), &rate.describe(x_desc), y_desc)
        .x_label_formatter(&|x| rate.label(*x))
        .y_label_formatter(y_label)
        .draw()?;
    Ok(())
}
