//! The HTML report: one self-contained page that opens offline (no script, no font, no
//! request). A summary; throughput and latency (p50, p99) over time from the time series
//! (100 ms points for a run under 3 s, seconds for longer ones); the HDR percentile spectrum on
//! a log "1/(1-q)" axis; a latency histogram; the per-method table; the latency distribution;
//! errors by class; the resources used by the target process (when monitored) and by the
//! generator; the run details. Several runs (a comparison) are overlaid on every chart, one
//! colour per run, with ratios against the first in the tables.
//!
//! Charts are drawn by plotters into inline SVG; its SVG backend writes text as `<text>`
//! elements, so no font file is loaded and the browser lays the labels out.

use std::error::Error;
use std::fmt::Write;

use hdrhistogram::Histogram;
use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use super::tables::{
    count_with_share, describe_load, distinct_methods, distribution_rows, format_ratio, method_rows,
    outcome_rows, stage_groups, stage_levels, summary_rows, usage_rows, MethodRow, MetricRow, Unit,
};
use super::{generator_warnings, RunReport};
use crate::results::SavedRun;
use crate::units::format_micros;

/// One colour per run: a qualitative palette of twelve (Tableau 10, then olive and charcoal).
/// Past twelve runs the colours come round again with another dash pattern ([`dash`]).
const PALETTE: [(u8, u8, u8); 12] = [
    (78, 121, 167),
    (242, 142, 43),
    (225, 87, 89),
    (118, 183, 178),
    (89, 161, 79),
    (237, 201, 72),
    (176, 122, 161),
    (255, 157, 167),
    (156, 117, 95),
    (186, 176, 172),
    (128, 128, 0),
    (64, 64, 64),
];

/// Dash patterns (dash, gap in pixels) of a run's lines, one per round of the palette: the
/// first twelve runs are solid, the next twelve dashed, the next dotted.
const DASHES: [Option<(u32, u32)>; 3] = [None, Some((12, 4)), Some((2, 4))];

/// The p99 lines' patterns, one per round of the palette, unlike every p50 pattern.
const P99_DASHES: [(u32, u32); 3] = [(7, 4), (20, 6), (7, 2)];

pub(super) fn color(index: usize) -> RGBColor {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    RGBColor(r, g, b)
}

pub(super) fn css_color(index: usize) -> String {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The dash pattern of run `index`'s lines: none (solid) within the palette's first round.
pub(super) fn dash(index: usize) -> Option<(u32, u32)> {
    DASHES[(index / PALETTE.len()) % DASHES.len()]
}

fn p99_dash(index: usize) -> (u32, u32) {
    P99_DASHES[(index / PALETTE.len()) % P99_DASHES.len()]
}

/// The CSS background of run `index`'s swatch: its colour, striped as its lines are dashed.
fn swatch_background(index: usize) -> String {
    let color = css_color(index);
    match dash(index) {
        None => color,
        Some((on, off)) => {
            let (on, off) = (on.min(5), off.min(3));
            format!("repeating-linear-gradient(90deg,{color} 0 {on}px,transparent {on}px {}px)", on + off)
        }
    }
}

/// Draws one run's line in its colour and dash pattern (`pattern`: `None` for solid).
fn draw_line<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    points: Vec<(f64, f64)>,
    index: usize,
    pattern: Option<(u32, u32)>,
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    let style = color(index).stroke_width(2);
    match pattern {
        None => chart.draw_series(LineSeries::new(points, style)).map(|_| ()),
        Some((on, off)) => chart.draw_series(DashedLineSeries::new(points, on, off, style)).map(|_| ()),
    }
    .map_err(|err| Box::new(err) as Box<dyn Error>)
}

/// A label that may be long (a run, a method, a mix of calls) in a cell or legend: cut with an
/// ellipsis to the width of its box, the full text in a tooltip.
pub(super) fn clipped(text: &str) -> String {
    let text = esc(text);
    format!("<span class=\"clip\" title=\"{text}\">{text}</span>")
}

/// Escapes text for HTML, control characters included (written as visible escapes).
pub(super) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::printable::escape_controls(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            _ => out.push(c),
        }
    }
    out
}

pub(super) const CHART_WIDTH: u32 = 1080;
pub(super) const CHART_HEIGHT: u32 = 340;
pub(super) const FONT: &str = "sans-serif";

pub(super) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A linear f64 axis with ticks at given values (plotters' own `with_key_points` loses the
/// label formatter of f64 axes).
pub(super) struct TickedAxis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl TickedAxis {
    pub(super) fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Self {
        Self { inner: range.into(), ticks }
    }
}

impl Ranged for TickedAxis {
    type FormatOption = DefaultFormatting;
    type ValueType = f64;

    fn map(&self, value: &f64, limit: (i32, i32)) -> i32 {
        self.inner.map(value, limit)
    }

    fn key_points<Hint: KeyPointHint>(&self, hint: Hint) -> Vec<f64> {
        if hint.weight().allow_light_points() {
            Vec::new()
        } else {
            self.ticks.clone()
        }
    }

    fn range(&self) -> std::ops::Range<f64> {
        self.inner.range()
    }
}
/// The look every chart's mesh shares: the axis descriptions, the font, a light grid. Callers
/// add their label formatters and draw.
pub(super) fn house_style<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
    mesh: &'m mut MeshStyle<'a, 'b, X, Y, DB>,
    x_desc: &str,
    y_desc: &str,
) -> &'m mut MeshStyle<'a, 'b, X, Y, DB> {
    mesh.x_desc(x_desc)
        .y_desc(y_desc)
        .label_style((FONT, 13))
        .axis_desc_style((FONT, 13))
        .light_line_style(WHITE)
        .bold_line_style(RGBColor(225, 225, 225))
}

pub(super) type DrawResult = Result<(), Box<dyn Error>>;

/// Draws one chart into an SVG string; a drawing error becomes a note in the page.
pub(super) fn svg(draw: impl FnOnce(&Area<'_>) -> DrawResult) -> String {
    svg_sized((CHART_WIDTH, CHART_HEIGHT), draw)
}

/// A chart of `size` pixels (a small multiple is smaller, so that its text stays legible).
fn svg_sized(size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> DrawResult) -> String {
    let mut text = String::new();
    let result = {
        let root = SVGBackend::with_string(&mut text, size).into_drawing_area();
        let drawn = root.fill(&WHITE).map_err(Box::<dyn Error>::from).and_then(|()| draw(&root));
        drawn.and_then(|()| root.present().map_err(Box::<dyn Error>::from))
    };
    match result {
        Ok(()) => text,
        Err(err) => format!("<p class=\"note\">This chart could not be drawn: {}</p>", esc(&err.to_string())),
    }
}

/// One point of a run's series, placed at the middle of its interval.
struct SeriesPlot {
    mid: f64,
    rate: f64,
    error_rate: f64,
    p50: f64,
    p99: f64,
    requests: u64,
}

/// The series of a run as rates: each interval's count over its width (the last interval is
/// cut at the end of the run; a last sliver shorter than half an interval is left out, as its
/// rate would be noise).
fn series_plot(run: &SavedRun) -> Vec<SeriesPlot> {
    let record = &run.record;
    let interval = record.series_interval_ms.max(1) as f64 / 1000.0;
    let elapsed = record.elapsed.as_secs_f64();
    let count = record.series.len();
    record
        .series
        .iter()
        .enumerate()
        .filter_map(|(index, point)| {
            let start = point.start_ms as f64 / 1000.0;
            let mut width = (start + interval).min(elapsed) - start;
            if width < interval * 0.5 && count > 1 && index == count - 1 {
                return None;
            }
            if width <= 0.0 {
                width = interval;
            }
            Some(SeriesPlot {
                mid: start + width / 2.0,
                rate: point.requests as f64 / width,
                error_rate: point.errors as f64 / width,
                p50: point.p50_us as f64,
                p99: point.p99_us as f64,
                requests: point.requests,
            })
        })
        .collect()
}

/// Whether some run's series has points narrower than a second (a run under 3 s): the time
/// axes are then labelled to a tenth of a second.
fn fine_series(runs: &[SavedRun]) -> bool {
    runs.iter().any(|run| run.record.series_interval_ms < 1000)
}

/// A label of a time axis: to a tenth of a second (`0.4s`) when `tenths`, else
/// [`seconds_label`].
fn time_label(x: f64, tenths: bool) -> String {
    if tenths {
        format!("{x:.1}s")
    } else {
        seconds_label(x)
    }
}

pub(super) fn seconds_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{x:.0}s")
    } else {
        format!("{x:.1}s")
    }
}

pub(super) fn nice_max(value: f64) -> f64 {
    if value <= 0.0 {
        1.0
    } else {
        value * 1.08
    }
}

/// Above this spread between the largest latency plotted and the smallest typical one, the
/// latency axis is logarithmic, so that no line lies flat against the bottom.
const LOG_SPREAD: f64 = 20.0;

/// The latency axis of a chart: linear from zero, or logarithmic when the values plotted span
/// more than [`LOG_SPREAD`] times (a slow run beside fast ones, a tail of timeouts).
pub(super) struct LatencyScale {
    log: bool,
    low: f64,
    high: f64,
}

impl LatencyScale {
    /// A logarithmic axis from `lowest` to `highest` microseconds, whatever their spread.
    pub(super) fn log(lowest: f64, highest: f64) -> Self {
        let highest = highest.max(1.0);
        Self { log: true, low: lowest.max(1.0).min(highest).log10() - 0.05, high: highest.log10() + 0.05 }
    }

    /// `lowest` and `highest`: the extremes plotted; `typical`: the smallest median of a line.
    fn new(lowest: f64, typical: f64, highest: f64) -> Self {
        let highest = highest.max(1.0);
        if typical > 0.0 && highest / typical > LOG_SPREAD {
            let low = lowest.max(1.0).log10() - 0.05;
            Self { log: true, low, high: highest.log10() + 0.05 }
        } else {
            Self { log: false, low: 0.0, high: nice_max(highest) }
        }
    }

    /// Where a latency in microseconds goes on the axis.
    pub(super) fn y(&self, micros: f64) -> f64 {
        if self.log {
            micros.max(1.0).log10()
        } else {
            micros
        }
    }

    fn ticks(&self) -> Vec<f64> {
        if self.log {
            let steps: &[f64] = if self.high - self.low > 3.0 { &[1.0] } else { &[1.0, 2.0, 5.0] };
            (self.low.floor() as i64..=self.high.ceil() as i64)
                .flat_map(|decade| steps.iter().map(move |m| m.log10() + decade as f64))
                .filter(|y| (self.low..=self.high).contains(y))
                .collect()
        } else {
            let raw = self.high / 6.0;
            let magnitude = 10f64.powf(raw.log10().floor());
            let step = [1.0, 2.0, 5.0, 10.0].iter().map(|m| m * magnitude).find(|s| *s >= raw).unwrap_or(raw);
            (0..).map(|i| i as f64 * step).take_while(|y| *y <= self.high).collect()
        }
    }

    pub(super) fn axis(&self) -> TickedAxis {
        TickedAxis::new(self.low..self.high, self.ticks())
    }

    pub(super) fn label(&self, y: f64) -> String {
        format_micros(if self.log { 10f64.powf(y).round() } else { y })
    }

    pub(super) fn description(&self) -> &'static str {
        if self.log {
            "latency (log scale)"
        } else {
            "latency"
        }
    }
}

/// A run with fewer series points than this (a run shorter than 0.3 s, or one read from a
/// results file of whole seconds shorter than 3 s) has its points drawn as markers, not
/// joined: a line through one or two points would draw a trend the run did not show.
const MIN_POINTS_FOR_LINE: usize = 3;

/// Where stages begin on the time axis, for the time charts' vertical lines: (run index,
/// seconds since measurement started) for every stage but the first of every staged run.
fn stage_boundaries(runs: &[SavedRun]) -> Vec<(usize, f64)> {
    runs.iter()
        .enumerate()
        .flat_map(|(index, run)| run.report.stages.iter().skip(1).map(move |stage| (index, stage.start_s)))
        .filter(|(_, start)| *start > 0.0)
        .collect()
}

/// Draws the stage boundaries as thin vertical lines from `low` to `high`, in the colour of
/// the run when several runs are shown, grey for one.
fn draw_stage_boundaries<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
    chart: &mut ChartContext<'_, DB, Cartesian2d<X, Y>>,
    boundaries: &[(usize, f64)],
    several: bool,
    (low, high): (f64, f64),
) -> DrawResult
where
    DB::ErrorType: 'static,
{
    for &(index, x) in boundaries {
        let line_color = if several { color(index).mix(0.8) } else { RGBColor(110, 110, 110).mix(0.8) };
        chart
            .draw_series(DashedLineSeries::new([(x, low), (x, high)], 3, 3, line_color.stroke_width(1)))
            .map_err(|err| Box::new(err) as Box<dyn Error>)?;
    }
    Ok(())
}

fn throughput_chart(runs: &[SavedRun]) -> String {
    let plots: Vec<Vec<SeriesPlot>> = runs.iter().map(series_plot).collect();
    let x_max = runs.iter().map(|r| r.record.elapsed.as_secs_f64()).fold(0.0, f64::max).max(1.0);
    let y_max = plots.iter().flatten().map(|p| p.rate.max(p.error_rate)).fold(0.0, f64::max);
    let show_errors = runs.len() == 1 && plots.iter().flatten().any(|p| p.error_rate > 0.0);
    let boundaries = stage_boundaries(runs);
    let tenths = fine_series(runs);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(44)
            .x_label_area_size(40)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..x_max, 0.0..nice_max(y_max))?;
        house_style(&mut chart.configure_mesh(), "seconds since measurement started", "responses per second")
            .x_label_formatter(&|x| time_label(*x, tenths))
            .y_label_formatter(&|y| format!("{y:.0}"))
            .draw()?;
        draw_stage_boundaries(&mut chart, &boundaries, runs.len() > 1, (0.0, nice_max(y_max)))?;
        for (index, points) in plots.iter().enumerate() {
            let joined = points.len() >= MIN_POINTS_FOR_LINE;
            if joined {
                draw_line(&mut chart, points.iter().map(|p| (p.mid, p.rate)).collect(), index, dash(index))?;
            }
            if points.len() <= 60 {
                let radius = if joined { 3 } else { 5 };
                chart.draw_series(
                    points.iter().map(|p| Circle::new((p.mid, p.rate), radius, color(index).filled())),
                )?;
            }
            if show_errors {
                let red = RGBColor(200, 40, 40);
                if joined {
                    chart.draw_series(DashedLineSeries::new(
                        points.iter().map(|p| (p.mid, p.error_rate)),
                        6,
                        4,
                        red.stroke_width(2),
                    ))?;
                } else {
                    chart.draw_series(
                        points.iter().map(|p| Circle::new((p.mid, p.error_rate), 4, red.stroke_width(2))),
                    )?;
                }
            }
        }
        Ok(())
    })
}

/// Above this many runs, latency over time is drawn as small multiples: a chart per run on
/// shared axes, as two lines per run overlaid (24 for the demo's twelve steps) cannot be told
/// apart.
const SMALL_MULTIPLES_ABOVE: usize = 4;

/// The size of one small multiple.
const MULTIPLE_SIZE: (u32, u32) = (520, 260);

fn latency_over_time_chart(runs: &[SavedRun]) -> String {
    if runs.len() <= SMALL_MULTIPLES_ABOVE {
        return latency_over_time_svg(runs, None, (CHART_WIDTH, CHART_HEIGHT));
    }
    let mut out = String::from("<div class=\"multiples\">");
    for (index, run) in runs.iter().enumerate() {
        let _ = write!(
            out,
            "<figure><figcaption>{}{}</figcaption>{}</figure>",
            swatch(index),
            clipped(&run.label),
            latency_over_time_svg(runs, Some(index), MULTIPLE_SIZE)
        );
    }
    out.push_str("</div>");
    out
}

/// Latency over time of every run (`only: None`) or of one, on the axes every run's figures
/// make, so that small multiples compare at a glance.
fn latency_over_time_svg(runs: &[SavedRun], only: Option<usize>, size: (u32, u32)) -> String {
    let plots: Vec<Vec<SeriesPlot>> = runs.iter().map(series_plot).collect();
    let x_max = runs.iter().map(|r| r.record.elapsed.as_secs_f64()).fold(0.0, f64::max).max(1.0);
    let answered = || plots.iter().flatten().filter(|p| p.requests > 0);
    let scale = LatencyScale::new(
        answered().map(|p| p.p50).fold(f64::INFINITY, f64::min),
        runs.iter().map(|r| r.report.latency.percentile("p50") as f64).fold(f64::INFINITY, f64::min),
        answered().map(|p| p.p99).fold(0.0, f64::max),
    );
    let boundaries = stage_boundaries(runs);
    let tenths = fine_series(runs);
    svg_sized(size, |root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(44)
            .x_label_area_size(40)
            .y_label_area_size(78)
            .build_cartesian_2d(0.0..x_max, scale.axis())?;
        let x_title = if only.is_some() { "seconds" } else { "seconds since measurement started" };
        house_style(&mut chart.configure_mesh(), x_title, scale.description())
            .x_label_formatter(&|x| time_label(*x, tenths))
            .y_label_formatter(&|y| scale.label(*y))
            .draw()?;
        let boundaries: Vec<(usize, f64)> =
            boundaries.iter().copied().filter(|(run, _)| only.is_none_or(|one| one == *run)).collect();
        draw_stage_boundaries(
            &mut chart,
            &boundaries,
            runs.len() > 1 && only.is_none(),
            (scale.low, scale.high),
        )?;
        for (index, points) in
            plots.iter().enumerate().filter(|(index, _)| only.is_none_or(|one| one == *index))
        {
            let joined = points.len() >= MIN_POINTS_FOR_LINE;
            let radius = if joined { 3 } else { 5 };
            // Intervals without responses have no latency: the lines break there.
            for segment in points.split(|p| p.requests == 0).filter(|s| !s.is_empty()) {
                if joined {
                    draw_line(
                        &mut chart,
                        segment.iter().map(|p| (p.mid, scale.y(p.p50))).collect(),
                        index,
                        dash(index),
                    )?;
                    draw_line(
                        &mut chart,
                        segment.iter().map(|p| (p.mid, scale.y(p.p99))).collect(),
                        index,
                        Some(p99_dash(index)),
                    )?;
                }
                if segment.len() <= 60 {
                    chart.draw_series(
                        segment
                            .iter()
                            .map(|p| Circle::new((p.mid, scale.y(p.p50)), radius, color(index).filled())),
                    )?;
                    chart.draw_series(segment.iter().map(|p| {
                        Circle::new((p.mid, scale.y(p.p99)), radius, color(index).stroke_width(2))
                    }))?;
                }
            }
        }
        Ok(())
    })
}

/// The highest percentile the spectrum shows: 99.999%.
const SPECTRUM_NINES: f64 = 5.0;

/// `log10(1 / (1 - q))`: 0 at the median's left end, 1 at 90%, 2 at 99%, ...
fn nines(quantile: f64) -> f64 {
    (1.0 / (1.0 - quantile)).log10()
}

fn percentile_label(x: f64) -> String {
    let percent = (1.0 - 10f64.powf(-x)) * 100.0;
    if x.fract().abs() < 1e-9 {
        let digits = (x.round() as usize).saturating_sub(2);
        format!("{percent:.digits$}%")
    } else {
        format!("{percent:.3}%")
    }
}

/// The percentile spectrum of a histogram: (nines, latency) at HdrHistogram's usual
/// resolution (5 ticks per half distance), without the last point (q = 1).
pub(super) fn spectrum(histogram: &Histogram<u64>) -> Vec<(f64, f64)> {
    if histogram.is_empty() {
        return Vec::new();
    }
    histogram
        .iter_quantiles(5)
        .filter(|v| v.quantile_iterated_to() < 1.0)
        .map(|v| (nines(v.quantile_iterated_to()), v.value_iterated_to() as f64))
        .filter(|(x, _)| *x <= SPECTRUM_NINES + 1e-9)
        .collect()
}

fn spectrum_chart(runs: &[SavedRun]) -> String {
    let lines: Vec<Vec<(f64, f64)>> = runs.iter().map(|r| spectrum(&r.record.totals.latency)).collect();
    let scale = LatencyScale::new(
        lines.iter().flatten().map(|p| p.1).fold(f64::INFINITY, f64::min),
        runs.iter().map(|r| r.report.latency.percentile("p50") as f64).fold(f64::INFINITY, f64::min),
        lines.iter().flatten().map(|p| p.1).fold(0.0, f64::max),
    );
    let colored: Vec<(usize, Vec<(f64, f64)>)> = lines.into_iter().enumerate().collect();
    percentile_curves(&colored, &scale, scale.description())
}

/// Percentile curves (from [`spectrum`]) as a chart, each line in the color of its index, on
/// the latency axis `scale`.
pub(super) fn percentile_curves(
    lines: &[(usize, Vec<(f64, f64)>)],
    scale: &LatencyScale,
    y_desc: &str,
) -> String {
    let x_max = lines
        .iter()
        .flat_map(|(_, line)| line)
        .map(|p| p.0)
        .fold(0.0, f64::max)
        .ceil()
        .clamp(2.0, SPECTRUM_NINES);
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(44)
            .x_label_area_size(40)
            .y_label_area_size(78)
            .build_cartesian_2d(
                TickedAxis::new(0.0..x_max, (0..=x_max as u32).map(f64::from).collect()),
                scale.axis(),
            )?;
        house_style(&mut chart.configure_mesh(), "percentile (log scale: 1/(1-q))", y_desc)
            .x_label_formatter(&|x| percentile_label(*x))
            .y_label_formatter(&|y| scale.label(*y))
            .draw()?;
        for (index, line) in lines {
            let points = line.iter().map(|&(x, latency)| (x, scale.y(latency))).collect();
            draw_line(&mut chart, points, *index, dash(*index))?;
        }
        Ok(())
    })
}

/// Buckets per decade of the latency histogram.
const BUCKETS_PER_DECADE: f64 = 10.0;

/// A latency histogram on log-spaced buckets: (bucket index, share of requests in %).
fn log_buckets(histogram: &Histogram<u64>) -> Vec<(i64, f64)> {
    let total = histogram.len();
    if total == 0 {
        return Vec::new();
    }
    let mut buckets: std::collections::BTreeMap<i64, u64> = std::collections::BTreeMap::new();
    for value in histogram.iter_recorded() {
        let v = histogram.median_equivalent(value.value_iterated_to()).max(1) as f64;
        let bucket = (v.log10() * BUCKETS_PER_DECADE).floor() as i64;
        *buckets.entry(bucket).or_default() += value.count_at_value();
    }
    buckets.into_iter().map(|(bucket, count)| (bucket, count as f64 * 100.0 / total as f64)).collect()
}

fn histogram_chart(runs: &[SavedRun]) -> String {
    let bars: Vec<Vec<(i64, f64)>> = runs.iter().map(|r| log_buckets(&r.record.totals.latency)).collect();
    let lowest = bars.iter().flatten().map(|b| b.0).min().unwrap_or(0);
    let highest = bars.iter().flatten().map(|b| b.0).max().unwrap_or(0) + 1;
    // One empty bucket either side; ticks at 1, 2 and 5 times a power of ten.
    let x_min = (lowest - 1) as f64 / BUCKETS_PER_DECADE;
    let x_max = (highest + 1) as f64 / BUCKETS_PER_DECADE;
    let ticks: Vec<f64> = (x_min.floor() as i64..=x_max.ceil() as i64)
        .flat_map(|decade| [1.0f64, 2.0, 5.0].map(|m| m.log10() + decade as f64))
        .filter(|x| (x_min..=x_max).contains(x))
        .collect();
    let y_max = bars.iter().flatten().map(|b| b.1).fold(0.0, f64::max);
    let alpha = if runs.len() == 1 { 0.75 } else { 0.3 };
    svg(|root| {
        let mut chart = ChartBuilder::on(root)
            .margin(14)
            .margin_right(44)
            .x_label_area_size(40)
            .y_label_area_size(78)
            .build_cartesian_2d(TickedAxis::new(x_min..x_max, ticks), 0.0..nice_max(y_max))?;
        house_style(&mut chart.configure_mesh(), "latency (log scale)", "share of requests")
            .x_label_formatter(&|x| format_micros(10f64.powf(*x).round()))
            .y_label_formatter(&|y| format!("{y:.0}%"))
            .draw()?;
        for (index, run_bars) in bars.iter().enumerate() {
            let c = color(index);
            let edges =
                |bucket: i64| (bucket as f64 / BUCKETS_PER_DECADE, (bucket + 1) as f64 / BUCKETS_PER_DECADE);
            chart.draw_series(run_bars.iter().map(|&(bucket, share)| {
                let (left, right) = edges(bucket);
                Rectangle::new([(left, 0.0), (right, share)], c.mix(alpha).filled())
            }))?;
            chart.draw_series(run_bars.iter().map(|&(bucket, share)| {
                let (left, right) = edges(bucket);
                Rectangle::new([(left, 0.0), (right, share)], c.stroke_width(1))
            }))?;
        }
        Ok(())
    })
}

fn legend(runs: &[SavedRun], extra: &str) -> String {
    let items: Vec<(&str, usize)> =
        runs.iter().enumerate().map(|(index, run)| (run.label.as_str(), index)).collect();
    legend_items(&items, extra)
}

/// A legend: a swatch of colour `index` per label, then a hint.
pub(super) fn legend_items(items: &[(&str, usize)], extra: &str) -> String {
    let mut out = String::from("<div class=\"legend\">");
    for (label, index) in items {
        let _ = write!(
            out,
            "<span><i style=\"background:{}\"></i>{}</span>",
            swatch_background(*index),
            clipped(label)
        );
    }
    if !extra.is_empty() {
        let _ = write!(out, "<span class=\"hint\">{extra}</span>");
    }
    out.push_str("</div>");
    out
}

/// Opens every HTML page the same way: doctype, `<title>`, the house style, `<main>`.
pub(super) fn page_start(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(title)
    );
}

pub(super) const STYLE: &str = r#"
:root { color-scheme: light; }
* { box-sizing: border-box; }
body { font-family: -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif; margin: 0;
  background: #f6f7f9; color: #1d232b; font-size: 14px; line-height: 1.45; }
main { max-width: 1140px; margin: 0 auto; padding: 24px 20px 40px; }
h1 { font-size: 24px; margin: 0 0 4px; overflow-wrap: anywhere; }
h2 { font-size: 17px; margin: 0 0 10px; }
h3 { font-size: 14px; margin: 16px 0 8px; }
.sub { color: #55606e; margin: 0 0 2px; overflow-wrap: break-word; }
section { background: #fff; border: 1px solid #e1e5ea; border-radius: 8px; padding: 16px 18px; margin: 16px 0; }
.cards { display: grid; grid-template-columns: repeat(6, 1fr); gap: 10px; background: none; border: none; padding: 0; }
.card { background: #fff; border: 1px solid #e1e5ea; border-radius: 8px; padding: 12px 14px; }
.card b { display: block; font-size: 22px; font-weight: 600; }
.card span { color: #55606e; font-size: 12px; text-transform: uppercase; letter-spacing: .04em; }
.card.bad b { color: #c62828; }
table { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
table.narrow { width: auto; min-width: 420px; }
th, td { padding: 5px 10px; border-bottom: 1px solid #edf0f3; text-align: right; vertical-align: top; }
th { background: #f3f5f8; font-weight: 600; }
th:first-child, td:first-child { text-align: left; white-space: nowrap; }
td.code { font-family: ui-monospace, Menlo, Consolas, monospace; font-size: 12px; overflow-wrap: anywhere; }
td.code > div { max-width: 400px; }
td.nowrap { white-space: nowrap; }
td.text, th.text { text-align: left; overflow-wrap: break-word; }
.ratio { display: block; color: #55606e; font-size: 12px; }
table.narrow .ratio { display: inline-block; min-width: 4.2em; margin-left: 8px; }
.ratio.up { color: #2e7d32; } .ratio.down { color: #c62828; } .ratio.unlike { color: #8a94a2; font-style: italic; }
.clip { display: inline-block; max-width: 18em; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; vertical-align: bottom; }
.legend .clip { max-width: 28em; }
tr.err td:first-child, th.err { color: #c62828; }
.verdict-fail { color: #c62828; font-weight: 700; } .verdict-ok { color: #2e7d32; }
table.kv th { width: 13em; text-align: left; } table.kv td { text-align: left; }
table.summary + table.summary { margin-top: 12px; }
tr.group td { border-top: 2px solid #d5dbe2; }
section { overflow-x: auto; }
svg { width: 100%; height: auto; display: block; }
.multiples { display: grid; grid-template-columns: repeat(auto-fill, minmax(380px, 1fr)); gap: 10px 16px; }
.multiples figure { margin: 0; }
.multiples figcaption { font-size: 13px; margin: 4px 0 0 0; }
.legend { display: flex; flex-wrap: wrap; gap: 6px 16px; margin: 0 0 6px; font-size: 13px; }
.legend i { display: inline-block; width: 14px; height: 14px; border-radius: 3px; margin-right: 6px; vertical-align: -2px; }
.legend .hint { color: #55606e; }
.warning { background: #fff4e5; border-color: #f5c27a; }
.note { color: #55606e; }
footer { color: #8a94a2; font-size: 12px; text-align: center; }
@media (max-width: 1000px) {
  main { padding: 16px 8px 32px; }
  section { padding: 12px 8px; }
  table { font-size: 12px; }
  th, td { padding: 4px 5px; }
  .clip { max-width: 10em; }
  table.columns .clip { max-width: 14em; }
  table.columns.narrow .clip { max-width: 18em; }
  .cards { grid-template-columns: repeat(3, 1fr); }
}
"#;

/// Whether a larger value of the metric is better (req/s, ok %, MB/s) or worse (latency,
/// errors); used only to colour the ratios.
fn higher_is_better(metric: &str) -> bool {
    matches!(metric, "req/s" | "ok %" | "MB/s")
}

/// Whether two runs made the same calls under the same kind of load (closed loop at the same
/// connections, or open loop at the same offered rate, through the same stages), so that a
/// ratio between them says better or worse. An open loop's req/s is the rate it was offered:
/// against a closed loop's, its ratio measures the load chosen, not the target; getBlock
/// against getSlot measures the methods, not the servers.
pub(super) fn like_for_like(a: &RunReport, b: &RunReport) -> bool {
    let stages = |r: &RunReport| r.stages.iter().map(|s| (s.level, s.duration_s)).collect::<Vec<_>>();
    a.method == b.method
        && a.load.mode == b.load.mode
        && a.load.connections == b.load.connections
        && a.load.rate == b.load.rate
        && stages(a) == stages(b)
}

/// For each run, whether it ran the same kind of load as the first (see [`like_for_like`]).
fn like_first(runs: &[SavedRun]) -> Vec<bool> {
    runs.iter().map(|run| like_for_like(&runs[0].report, &run.report)).collect()
}

/// The ratio of run `index` to the first, coloured better or worse only when `like` (the two
/// ran the same kind of load); otherwise grey and in italics, with the reason in a tooltip.
fn ratio_span(row: &MetricRow, index: usize, like: bool) -> String {
    if index == 0 {
        return String::new();
    }
    match row.ratios()[index] {
        // The generator's own CPU and memory are not the target's better or worse.
        Some(ratio) if row.metric.starts_with("generator") => {
            format!("<span class=\"ratio\" title=\"{GENERATOR_TOOLTIP}\">{}</span>", format_ratio(ratio))
        }
        Some(ratio) if !like => {
            format!("<span class=\"ratio unlike\" title=\"{UNLIKE_TOOLTIP}\">{}</span>", format_ratio(ratio))
        }
        Some(ratio) => {
            let better = if higher_is_better(&row.metric) { ratio > 1.05 } else { ratio < 0.95 };
            let worse = if higher_is_better(&row.metric) { ratio < 0.95 } else { ratio > 1.05 };
            let class = if better {
                "ratio up"
            } else if worse {
                "ratio down"
            } else {
                "ratio"
            };
            format!("<span class=\"{class}\">{}</span>", format_ratio(ratio))
        }
        None => "<span class=\"ratio\">-</span>".into(),
    }
}

const UNLIKE_TOOLTIP: &str =
    "other calls or a different kind of load from the first run: not better or worse";

const GENERATOR_TOOLTIP: &str = "rpcbench's own usage: not the target's better or worse";

/// The note under a table whose ratios include runs of another kind of load.
fn unlike_note(likes: &[bool]) -> &'static str {
    if likes.iter().all(|like| *like) {
        ""
    } else {
        "<p class=\"note\">Ratios in grey italics compare other calls or a different kind of load with the \
         first run's (another method, open against closed loop, other connections, another offered rate \
         or stages): they are not coloured better or worse, as the choice made the difference.</p>"
    }
}

fn cards(report: &RunReport) -> String {
    let total = report.requests.total;
    let ok_percent = if total == 0 { 0.0 } else { report.requests.ok as f64 * 100.0 / total as f64 };
    let card = |label: &str, value: String, bad: bool| {
        format!(
            "<div class=\"card{}\"><span>{label}</span><b>{}</b></div>",
            if bad { " bad" } else { "" },
            esc(&value)
        )
    };
    let mut out = String::from("<section class=\"cards\">");
    out.push_str(&card("req/s", format!("{:.0}", report.requests.rate), false));
    out.push_str(&card("ok", format!("{ok_percent:.2}%"), report.requests.errors > 0));
    out.push_str(&card("p50", format_micros(report.latency.percentile("p50") as f64), false));
    out.push_str(&card("p99", format_micros(report.latency.percentile("p99") as f64), false));
    out.push_str(&card("max", format_micros(report.latency.max_us as f64), false));
    out.push_str(&card("MB/s", format!("{:.2}", report.bytes.received_per_sec / 1e6), false));
    out.push_str("</section>");
    out
}

fn same_target(runs: &[SavedRun]) -> bool {
    runs.iter().all(|r| r.report.target == runs[0].report.target)
}

fn swatch(index: usize) -> String {
    format!(
        "<i style=\"display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;background:{}\"></i>",
        swatch_background(index)
    )
}

/// The summary: what each run was (its method, its load, its target when they differ) and its
/// headline figures, ratios against the first run. Fifteen columns of a row per run do not fit
/// a window of 900 px, so up to [`MAX_RUN_COLUMNS`] runs get a row per figure and a column per
/// run (as the distribution and resources tables do), and more runs a row each over two tables
/// (load, outcomes and rate; then latency and bytes), each narrow enough.
fn summary_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let rows = summary_rows(&reports);
    // The target is in the page's subtitle when every run had the same.
    let target_column = !same_target(runs);
    let likes = like_first(runs);
    let load_cell = |run: &SavedRun| {
        let mut load = describe_load(&run.report);
        if run.file.shards() > 1 {
            load.push_str(&format!(", {} shards", run.file.shards()));
        }
        if run.report.interrupted {
            load.push_str(", interrupted");
        }
        // The load in short (its kind and level); the whole description in the tooltip.
        format!("<td class=\"text nowrap\" title=\"{}\">{}</td>", esc(&load), esc(&short_load(&run.report)))
    };
    let metric_cell = |row: &MetricRow, index: usize| {
        format!("<td>{}{}</td>", esc(&row.cell(index)), ratio_span(row, index, likes[index]))
    };
    let mut out = String::new();
    if runs.len() <= MAX_RUN_COLUMNS {
        let class = if runs.len() <= 3 { "summary columns narrow" } else { "summary columns" };
        let _ = write!(out, "<table class=\"{class}\"><tr><th></th>");
        for (index, run) in runs.iter().enumerate() {
            let _ = write!(out, "<th class=\"text\">{}{}</th>", swatch(index), clipped(&run.label));
        }
        out.push_str("</tr>");
        if target_column {
            out.push_str("<tr><td>target</td>");
            for run in runs {
                let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.target));
            }
            out.push_str("</tr>");
        }
        out.push_str("<tr><td>method</td>");
        for run in runs {
            let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.method));
        }
        out.push_str("</tr><tr><td>load</td>");
        for run in runs {
            out.push_str(&load_cell(run));
        }
        out.push_str("</tr>");
        for row in &rows {
            let _ = write!(out, "<tr><td>{}</td>", esc(&row.metric));
            for index in 0..runs.len() {
                out.push_str(&metric_cell(row, index));
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
    } else {
        let is_latency =
            |row: &&MetricRow| matches!(row.metric.as_str(), "p50" | "p75" | "p90" | "p95" | "p99" | "max");
        let (latency, other): (Vec<&MetricRow>, Vec<&MetricRow>) = rows.iter().partition(is_latency);
        let (bytes, outcomes): (Vec<&MetricRow>, Vec<&MetricRow>) =
            other.into_iter().partition(|row| matches!(row.metric.as_str(), "MB/s" | "bytes/response"));
        for (index, part) in [outcomes, [latency, bytes].concat()].into_iter().enumerate() {
            out.push_str("<table class=\"summary\"><tr><th>run</th>");
            if index == 0 {
                if target_column {
                    out.push_str("<th class=\"text\">target</th>");
                }
                out.push_str("<th class=\"text\">method</th><th class=\"text\">load</th>");
            }
            for row in &part {
                let _ = write!(out, "<th>{}</th>", esc(&row.metric));
            }
            out.push_str("</tr>");
            for (run_index, run) in runs.iter().enumerate() {
                let _ = write!(out, "<tr><td>{}{}</td>", swatch(run_index), clipped(&run.label));
                if index == 0 {
                    if target_column {
                        let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.target));
                    }
                    let _ = write!(out, "<td class=\"text\">{}</td>", clipped(&run.report.method));
                    out.push_str(&load_cell(run));
                }
                for row in &part {
                    out.push_str(&metric_cell(row, run_index));
                }
                out.push_str("</tr>");
            }
            out.push_str("</table>");
        }
    }
    if runs.len() > 1 {
        let _ = write!(out, "<p class=\"note\">Ratios are against {}.</p>", esc(&runs[0].label));
        out.push_str(unlike_note(&likes));
    }
    out
}

/// A load in a few words for a table cell: `closed, 16 conns`, `open, 2000/s`, `closed, 3
/// stages, 16..64 conns`.
fn short_load(report: &RunReport) -> String {
    let load = &report.load;
    let levels = stage_levels(report);
    match (load.connections, load.rate) {
        (Some(connections), _) => {
            format!("closed, {} conns", levels.unwrap_or_else(|| connections.to_string()))
        }
        (None, Some(rate)) => {
            format!("open, {}/s", levels.unwrap_or_else(|| crate::units::trim_float(rate)))
        }
        _ => load.mode.clone(),
    }
}

/// Past this many runs, the tables with a column per run turn to a row per run.
const MAX_RUN_COLUMNS: usize = 4;

/// A row per run, a column per metric.
fn metric_rows_table(labels: &[String], rows: &[MetricRow], likes: &[bool]) -> String {
    let mut out = String::from("<table><tr><th>run</th>");
    for row in rows {
        let _ = write!(out, "<th>{}</th>", esc(&row.metric));
    }
    out.push_str("</tr>");
    for (index, label) in labels.iter().enumerate() {
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(index), clipped(label));
        for row in rows {
            let _ = write!(out, "<td>{}{}</td>", esc(&row.cell(index)), ratio_span(row, index, likes[index]));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out.push_str(unlike_note(likes));
    out
}

fn methods_table(runs: &[SavedRun]) -> String {
    let mut out = String::from(
        "<table><tr><th>run</th><th class=\"text\">method</th><th>requests</th><th>req/s</th><th>ok %</th><th>errors</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>max</th></tr>",
    );
    let rows = method_rows(runs);
    // In a comparison, each call's figures carry their ratio against the first run's same call.
    let baseline_run = runs.first().filter(|_| runs.len() > 1).map(|run| run.label.as_str());
    let likes = like_first(runs);
    for row in &rows {
        let like = runs.iter().position(|run| run.label == row.run).is_none_or(|index| likes[index]);
        let us = |v: u64| format_micros(v as f64);
        let baseline = baseline_run
            .filter(|label| *label != row.run)
            .and_then(|label| rows.iter().find(|r| r.run == label && r.method == row.method));
        let ratio = |metric: &str, value: &dyn Fn(&MethodRow) -> f64| match baseline {
            Some(base) => ratio_span(
                &MetricRow {
                    metric: metric.into(),
                    unit: Unit::Decimal,
                    values: vec![value(base), value(row)],
                },
                1,
                like,
            ),
            None => String::new(),
        };
        let _ = write!(
            out,
            "<tr><td>{}</td><td class=\"text\">{}</td><td>{}</td><td>{:.2}{}</td><td>{:.2}{}</td><td>{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td><td>{}{}</td></tr>",
            clipped(&row.run),
            clipped(&row.method),
            row.requests,
            row.rate,
            ratio("req/s", &|r| r.rate),
            row.ok_percent(),
            ratio("ok %", &|r| r.ok_percent()),
            row.errors,
            us(row.latency.mean_us),
            ratio("mean", &|r| r.latency.mean_us as f64),
            us(row.latency.percentile("p50")),
            ratio("p50", &|r| r.latency.percentile("p50") as f64),
            us(row.latency.percentile("p90")),
            ratio("p90", &|r| r.latency.percentile("p90") as f64),
            us(row.latency.percentile("p99")),
            ratio("p99", &|r| r.latency.percentile("p99") as f64),
            us(row.latency.percentile("p99.9")),
            ratio("p99.9", &|r| r.latency.percentile("p99.9") as f64),
            us(row.latency.max_us),
            ratio("max", &|r| r.latency.max_us as f64),
        );
    }
    out.push_str("</table>");
    out
}

/// A row per metric, a column per run; `likes`: with ratios against the first column, whether
/// each run ran the same kind of load as the first.
fn metric_columns_table(
    first: &str,
    labels: &[String],
    rows: &[MetricRow],
    likes: Option<&[bool]>,
) -> String {
    let class = if labels.len() <= 3 { " class=\"narrow\"" } else { "" };
    let mut out = format!("<table{class}><tr><th>{}</th>", esc(first));
    for label in labels {
        let _ = write!(out, "<th>{}</th>", clipped(label));
    }
    out.push_str("</tr>");
    for row in rows {
        let _ = write!(out, "<tr><td>{}</td>", esc(&row.metric));
        for index in 0..row.values.len() {
            let ratio = likes.map_or(String::new(), |likes| ratio_span(row, index, likes[index]));
            let _ = write!(out, "<td>{}{ratio}</td>", esc(&row.cell(index)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out.push_str(likes.map_or("", unlike_note));
    out
}

fn distribution_table(runs: &[SavedRun]) -> String {
    if let [run] = runs {
        if run.report.is_open_loop() {
            let rows = distribution_rows(&[&run.report.latency, &run.report.latency_uncorrected]);
            return metric_columns_table(
                "percentile",
                &["corrected".into(), "uncorrected".into()],
                &rows,
                None,
            );
        }
    }
    let labels: Vec<String> =
        if runs.len() == 1 { vec!["latency".into()] } else { runs.iter().map(|r| r.label.clone()).collect() };
    let latencies: Vec<_> = runs.iter().map(|r| &r.report.latency).collect();
    let likes = like_first(runs);
    if runs.len() > MAX_RUN_COLUMNS {
        return metric_rows_table(&labels, &distribution_rows(&latencies), &likes);
    }
    metric_columns_table("percentile", &labels, &distribution_rows(&latencies), Some(&likes))
}

fn resources_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let rows = usage_rows(&reports);
    if runs.len() == 1 {
        return metric_columns_table("resource", &["value".into()], &rows, None);
    }
    let labels: Vec<String> = runs.iter().map(|r| r.label.clone()).collect();
    let likes = like_first(runs);
    if runs.len() > MAX_RUN_COLUMNS {
        return metric_rows_table(&labels, &rows, &likes);
    }
    metric_columns_table("resource", &labels, &rows, Some(&likes))
}

fn errors_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|r| &r.report).collect();
    let rows = outcome_rows(&reports);
    let mut out = String::new();
    if runs.len() > MAX_RUN_COLUMNS {
        out.push_str("<table><tr><th>run</th>");
        for row in &rows {
            let _ =
                write!(out, "<th{}>{}</th>", if row.ok { "" } else { " class=\"err\"" }, esc(&row.outcome));
        }
        out.push_str("</tr>");
        for (index, (run, report)) in runs.iter().zip(&reports).enumerate() {
            let _ = write!(out, "<tr><td>{}{}</td>", swatch(index), clipped(&run.label));
            for row in &rows {
                let _ = write!(
                    out,
                    "<td>{}</td>",
                    esc(&count_with_share(row.counts[index], report.requests.total))
                );
            }
            out.push_str("</tr>");
        }
        out.push_str("</table>");
        return out;
    }
    out.push_str("<table class=\"narrow\"><tr><th>outcome</th>");
    if runs.len() == 1 {
        out.push_str("<th>count</th>");
    } else {
        for run in runs {
            let _ = write!(out, "<th>{}</th>", clipped(&run.label));
        }
    }
    out.push_str("</tr>");
    for row in rows {
        let _ =
            write!(out, "<tr{}><td>{}</td>", if row.ok { "" } else { " class=\"err\"" }, esc(&row.outcome));
        for (count, report) in row.counts.iter().zip(&reports) {
            let _ = write!(out, "<td>{}</td>", esc(&count_with_share(*count, report.requests.total)));
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    out
}

fn details_table(runs: &[SavedRun]) -> String {
    let us = |v: u64| format_micros(v as f64);
    type Cell<'a> = Box<dyn Fn(&SavedRun) -> String + 'a>;
    let rows: Vec<(&str, Cell<'_>)> = vec![
        ("target", Box::new(|r| r.file.target.clone())),
        (
            "request",
            Box::new(|r| {
                r.file.methods.values().map(|m| m.request.to_string()).collect::<Vec<_>>().join("; ")
            }),
        ),
        ("load", Box::new(|r| describe_load(&r.report))),
        ("started", Box::new(|r| r.file.started_at.clone())),
        ("measured", Box::new(move |r| us(r.report.elapsed_us))),
        ("interrupted", Box::new(|r| if r.file.interrupted { "yes".into() } else { "no".into() })),
        ("shards", Box::new(|r| r.file.shards().to_string())),
        ("timeout", Box::new(move |r| us(r.file.workload.timeout_us))),
        ("connect timeout", Box::new(move |r| us(r.file.workload.connect_timeout_us))),
        ("keep-alive", Box::new(|r| if r.file.workload.keepalive { "yes".into() } else { "no".into() })),
        (
            "headers",
            Box::new(|r| {
                if r.file.workload.headers.is_empty() {
                    "-".into()
                } else {
                    r.file.workload.headers.join("; ")
                }
            }),
        ),
        ("check", Box::new(|r| r.file.workload.check.clone())),
        ("worker threads", Box::new(|r| r.file.workload.threads.to_string())),
        ("seed", Box::new(|r| r.file.workload.seed.to_string())),
        (
            "machine",
            Box::new(|r| {
                format!("{} cores, {} {}", r.file.machine.cores, r.file.machine.os, r.file.machine.arch)
            }),
        ),
        ("tool", Box::new(|r| r.file.tool.clone())),
    ];
    // Settings shared by every run are listed once; those that differ get a row per run.
    let mut common = String::from("<table class=\"narrow\">");
    let mut differing: Vec<(&str, Vec<String>)> = Vec::new();
    for (name, value) in rows {
        let values: Vec<String> = runs.iter().map(&value).collect();
        if values.iter().all(|v| *v == values[0]) {
            let class = if matches!(name, "request" | "headers") { "text code" } else { "text" };
            let _ = write!(common, "<tr><td>{name}</td><td class=\"{class}\">{}</td></tr>", esc(&values[0]));
        } else {
            differing.push((name, values));
        }
    }
    common.push_str("</table>");
    if differing.is_empty() {
        return common;
    }
    let mut out = String::from("<table><tr><th>run</th>");
    for (name, _) in &differing {
        let _ = write!(out, "<th class=\"text\">{name}</th>");
    }
    out.push_str("</tr>");
    for (index, run) in runs.iter().enumerate() {
        let _ = write!(out, "<tr><td>{}{}</td>", swatch(index), clipped(&run.label));
        for (name, values) in &differing {
            if matches!(*name, "request" | "headers") {
                let _ = write!(out, "<td class=\"text code\"><div>{}</div></td>", esc(&values[index]));
            } else {
                let class = if *name == "started" { "text nowrap" } else { "text" };
                let _ = write!(out, "<td class=\"{class}\">{}</td>", esc(&values[index]));
            }
        }
        out.push_str("</tr>");
    }
    out.push_str("</table><h3>Common to every run</h3>");
    out.push_str(&common);
    out
}

/// The "Per stage" section: one run's stages; or, for a comparison, a row per stage and run with
/// ratios against the first run's same stage, then the stages' schedule.
fn stages_section(runs: &[SavedRun]) -> String {
    if runs.len() == 1 {
        return stages_tables(runs);
    }
    let mut out = stages_comparison_table(runs);
    let staged: Vec<&SavedRun> = runs.iter().filter(|run| !run.report.stages.is_empty()).collect();
    let schedule = |run: &SavedRun| -> Vec<(u64, u64, u64, u64)> {
        let ms = |seconds: f64| (seconds * 1000.0).round() as u64;
        run.report
            .stages
            .iter()
            .map(|s| (s.level.to_bits(), ms(s.start_s), ms(s.duration_s), ms(s.ramp_s)))
            .collect()
    };
    match staged.as_slice() {
        [first, rest @ ..] if rest.iter().all(|run| schedule(run) == schedule(first)) => {
            let _ = write!(out, "<h3>Stages</h3>{}", schedule_table(&first.report));
        }
        _ => {
            out.push_str("<h3>Each run's stages</h3>");
            out.push_str(&stages_tables(runs));
        }
    }
    out
}

/// The stages of a comparison side by side, as the per-method table sets calls: a row per
/// stage and run (stages matched by position, named after the first run's level, as the text,
/// Markdown and JSON comparisons do), each figure with its ratio against the first run's same
/// stage, coloured better or worse only between runs of the same kind of load.
fn stages_comparison_table(runs: &[SavedRun]) -> String {
    let reports: Vec<&RunReport> = runs.iter().map(|run| &run.report).collect();
    let groups = stage_groups(&reports);
    let likes = like_first(runs);
    let mut out = String::from(
        "<table class=\"stages\"><tr><th>stage</th><th class=\"text\">run</th><th>requests</th><th>req/s</th><th>ok %</th><th>errors</th><th>p50</th><th>p90</th><th>p99</th><th>max</th></tr>",
    );
    for (position, group) in groups.iter().enumerate() {
        let present: Vec<(usize, &crate::report::StageReport)> = runs
            .iter()
            .enumerate()
            .filter_map(|(index, run)| run.report.stages.get(position).map(|stage| (index, stage)))
            .collect();
        for (row, (index, stage)) in present.iter().enumerate() {
            out.push_str(if row == 0 { "<tr class=\"group\">" } else { "<tr>" });
            if row == 0 {
                let _ = write!(out, "<td rowspan=\"{}\">{}</td>", present.len(), esc(&group.name));
            }
            let _ = write!(
                out,
                "<td class=\"text\">{}{}</td><td>{}</td>",
                swatch(*index),
                clipped(&runs[*index].label),
                stage.requests
            );
            // req/s and ok %, then errors (a count, no ratio), then the latencies.
            let cell = |metric: &MetricRow| {
                format!("<td>{}{}</td>", esc(&metric.cell(*index)), ratio_span(metric, *index, likes[*index]))
            };
            let [rate, ok, latencies @ ..] = group.rows.as_slice() else { continue };
            out.push_str(&cell(rate));
            out.push_str(&cell(ok));
            let _ = write!(out, "<td>{}</td>", stage.errors);
            for metric in latencies {
                out.push_str(&cell(metric));
            }
            out.push_str("</tr>");
        }
    }
    out.push_str("</table>");
    let _ = write!(out, "<p class=\"note\">Ratios are against {}'s same stage.</p>", esc(&runs[0].label));
    out.push_str(unlike_note(&likes));
    out
}

/// The stages every run of a comparison went through: level, start, length, ramp.
fn schedule_table(report: &RunReport) -> String {
    let level = if report.is_open_loop() { "req/s offered" } else { "connections" };
    let mut out = format!(
        "<table class=\"narrow\"><tr><th>stage</th><th>{level}</th><th>from</th><th>duration</th><th>ramp</th></tr>"
    );
    for stage in &report.stages {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
            stage.stage,
            esc(&crate::units::trim_float(stage.level)),
            esc(&seconds_label(stage.start_s)),
            esc(&seconds_label(stage.duration_s)),
            esc(&seconds_label(stage.ramp_s)),
        );
    }
    out.push_str("</table>");
    out
}

/// The per-stage tables of the staged runs: level, start, length, requests, rate, latency and
/// errors of each stage; one table per staged run, under its label when several runs are shown.
fn stages_tables(runs: &[SavedRun]) -> String {
    let us = |v: u64| format_micros(v as f64);
    let mut out = String::new();
    for (index, run) in runs.iter().enumerate().filter(|(_, run)| !run.report.stages.is_empty()) {
        if runs.len() > 1 {
            let _ = write!(out, "<h3>{}{}</h3>", swatch(index), clipped(&run.label));
        }
        let level = if run.report.load.mode == "open" { "req/s offered" } else { "connections" };
        let _ = write!(
            out,
            "<table><tr><th>stage</th><th>{level}</th><th>from</th><th>duration</th><th>ramp</th><th>requests</th><th>req/s</th><th>p50</th><th>p99</th><th>errors</th></tr>"
        );
        for stage in &run.report.stages {
            let _ = write!(
                out,
                "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.2}</td><td>{}</td><td>{}</td><td>{}</td></tr>",
                stage.stage,
                esc(&crate::units::trim_float(stage.level)),
                esc(&seconds_label(stage.start_s)),
                esc(&seconds_label(stage.duration_s)),
                esc(&seconds_label(stage.ramp_s)),
                stage.requests,
                stage.rate,
                us(stage.latency.percentile("p50")),
                us(stage.latency.percentile("p99")),
                esc(&count_with_share(stage.errors, stage.requests)),
            );
        }
        out.push_str("</table>");
    }
    out
}

/// Renders the runs as one self-contained HTML page; several runs are overlaid as a
/// comparison against the first.
pub fn render_html(runs: &[SavedRun]) -> String {
    let mut out = String::new();
    let Some(first) = runs.first() else {
        return out;
    };
    let title = if runs.len() == 1 {
        format!("rpcbench: {} against {}", first.report.method, first.report.target)
    } else {
        let methods = distinct_methods(runs.iter().map(|r| &r.report));
        format!("rpcbench comparison: {}", methods.join(", "))
    };
    page_start(&mut out, &title);
    let _ = writeln!(out, "<h1 title=\"{0}\">{0}</h1>", esc(&title));
    if runs.len() == 1 {
        let _ = writeln!(
            out,
            "<p class=\"sub\">{} · {} requests in {} · started {}{}</p>",
            esc(&describe_load(&first.report)),
            first.report.requests.total,
            esc(&format_micros(first.report.elapsed_us as f64)),
            esc(&first.file.started_at),
            if first.report.interrupted { " · <b>interrupted</b>" } else { "" }
        );
        out.push_str(&cards(&first.report));
    } else {
        let target =
            if same_target(runs) { format!(" against {}", esc(&first.report.target)) } else { String::new() };
        let _ = writeln!(
            out,
            "<p class=\"sub\">{} runs{target}; ratios against {}</p>",
            runs.len(),
            esc(&first.label)
        );
    }
    let warnings: Vec<String> = runs
        .iter()
        .flat_map(|run| {
            let several = runs.len() > 1;
            generator_warnings(&run.report).into_iter().map(move |w| {
                if several {
                    format!("{}: {w}", run.label)
                } else {
                    w
                }
            })
        })
        .collect();
    if !warnings.is_empty() {
        out.push_str("<section class=\"warning\"><h2>Warnings</h2><ul>");
        for warning in warnings {
            let _ = write!(out, "<li>{}</li>", esc(&warning));
        }
        out.push_str("</ul></section>");
    }
    let _ = writeln!(out, "<section><h2>Summary</h2>{}</section>", summary_table(runs));
    if let Some(verdicts) = crate::compare::comparison_verdicts(runs) {
        let _ = writeln!(out, "<section><h2>Verdicts</h2>{}</section>", verdicts_section(&verdicts));
    }
    if runs.iter().any(|run| !run.report.stages.is_empty()) {
        let _ = writeln!(out, "<section><h2>Per stage</h2>{}</section>", stages_section(runs));
    }
    // Hints shared by the two time charts: stage boundaries, runs too short for a line.
    let mut time_hints: Vec<&str> = Vec::new();
    if !stage_boundaries(runs).is_empty() {
        time_hints.push("thin dashed verticals: stage boundaries");
    }
    if runs.iter().any(|run| series_plot(run).len() < MIN_POINTS_FOR_LINE) {
        time_hints.push("runs with fewer than 3 points: not joined by a line");
    }
    let mut throughput_hints = time_hints.clone();
    if runs.len() == 1 && runs[0].report.requests.errors > 0 {
        throughput_hints.insert(0, "red dashed: errors per second");
    }
    let mut latency_hints = vec!["solid: p50 · dashed: p99 (per interval)"];
    latency_hints.extend(&time_hints);
    let _ = writeln!(
        out,
        "<section><h2>Throughput over time</h2>{}{}</section>",
        legend(runs, &throughput_hints.join(" · ")),
        throughput_chart(runs)
    );
    let _ = writeln!(
        out,
        "<section><h2>Latency over time</h2>{}{}</section>",
        legend(runs, &latency_hints.join(" · ")),
        latency_over_time_chart(runs)
    );
    let corrected = if runs.iter().any(|r| r.report.is_open_loop()) {
        "latency from the intended send time (corrected)"
    } else {
        ""
    };
    let _ = writeln!(
        out,
        "<section><h2>Latency by percentile</h2>{}{}</section>",
        legend(runs, corrected),
        spectrum_chart(runs)
    );
    let _ = writeln!(
        out,
        "<section><h2>Latency histogram</h2>{}{}</section>",
        legend(runs, "10 buckets per decade"),
        histogram_chart(runs)
    );
    let _ = writeln!(out, "<section><h2>Per method</h2>{}</section>", methods_table(runs));
    let _ = writeln!(out, "<section><h2>Latency distribution</h2>{}</section>", distribution_table(runs));
    let _ = writeln!(out, "<section><h2>Outcomes and errors by class</h2>{}</section>", errors_table(runs));
    // The target's CPU is explained only when a target process was monitored.
    let cpu_note = if runs.iter().any(|run| run.report.target_resources.is_some()) {
        "Target CPU is a percentage of one core; the generator's, of its worker threads' capacity."
    } else {
        "The generator's CPU is a percentage of its worker threads' capacity."
    };
    let _ = writeln!(
        out,
        "<section><h2>Resources</h2>{}<p class=\"note\">{cpu_note}</p></section>",
        resources_table(runs)
    );
    let _ = writeln!(out, "<section><h2>Run details</h2>{}</section>", details_table(runs));
    let _ = writeln!(
        out,
        "<footer>{} · rpcbench results format {}</footer>\n</main>\n</body>\n</html>",
        esc(&first.file.tool),
        first.file.version
    );
    out
}

/// The verdicts of a comparison in rounds: a row per target and figure, with a strip that
/// draws each round's ratio (dots), the 95% interval (a bar with the estimate as a tick) and
/// the tie band (shaded) on a log scale around 1x; then the methodology.
fn verdicts_section(verdicts: &crate::compare::ComparisonVerdicts) -> String {
    const WIDTH: f64 = 420.0;
    const HEIGHT: f64 = 22.0;
    let m = &verdicts.methodology;
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"sub\">Against {}: {}% intervals over {} round(s); no difference within \u{b1}{}% (shaded). \
         Dots: each round's ratio; bar: the interval; tick: the estimate; log scale, 1x in the middle.</p>",
        esc(&verdicts.baseline),
        crate::units::trim_float(m.confidence * 100.0),
        m.rounds,
        crate::units::trim_float(m.tie * 100.0)
    );
    out.push_str("<table class=\"verdicts\" style=\"text-align:left\"><tr><th>target</th><th>metric</th><th>ratio</th><th>rounds and interval</th><th>verdict</th></tr>");
    for (index, target) in verdicts.targets.iter().enumerate() {
        let (r, g, b) = PALETTE[(index + 1) % PALETTE.len()];
        for verdict in &target.verdicts {
            // Each strip its own log scale around 1x, wide enough for its points, its
            // interval and twice the tie band; its ends labelled.
            let extent = verdict
                .round_ratios
                .iter()
                .copied()
                .chain(verdict.ci_low)
                .chain(verdict.ci_high)
                .filter(|r| r.is_finite() && *r > 0.0)
                .map(|r| r.ln().abs())
                .fold((1.0 + m.tie).ln() * 2.0, f64::max)
                * 1.15;
            let x = |ratio: f64| WIDTH / 2.0 + ratio.ln() / extent * (WIDTH / 2.0 - 30.0);
            let mut svg = format!(
                "<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\"><rect x=\"{:.1}\" y=\"0\" width=\"{:.1}\" height=\"{HEIGHT}\" fill=\"#ddd\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"0\" y2=\"{HEIGHT}\" stroke=\"#888\"/>",
                x(1.0 / (1.0 + m.tie)),
                x(1.0 + m.tie) - x(1.0 / (1.0 + m.tie)),
                x(1.0),
                x(1.0)
            );
            if let (Some(low), Some(high), Some(ratio)) = (verdict.ci_low, verdict.ci_high, verdict.ratio) {
                let _ = write!(
                    svg,
                    "<rect x=\"{:.1}\" y=\"8\" width=\"{:.1}\" height=\"6\" fill=\"rgb({r},{g},{b})\" opacity=\"0.5\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"4\" y2=\"18\" stroke=\"rgb({r},{g},{b})\" stroke-width=\"2\"/>",
                    x(low),
                    (x(high) - x(low)).max(1.0),
                    x(ratio),
                    x(ratio)
                );
            }
            for point in &verdict.round_ratios {
                let _ = write!(svg, "<circle cx=\"{:.1}\" cy=\"11\" r=\"2.5\" fill=\"#222\"><title>{point:.3}x</title></circle>", x(*point));
            }
            let _ = write!(
                svg,
                "<text x=\"2\" y=\"15\" font-size=\"9\" fill=\"#666\">{:.2}x</text><text x=\"{:.0}\" y=\"15\" font-size=\"9\" fill=\"#666\" text-anchor=\"end\">{:.2}x</text></svg>",
                (-extent).exp(),
                WIDTH - 2.0,
                extent.exp()
            );
            let _ = write!(
                out,
                "<tr><td style=\"text-align:left\">{}</td><td style=\"text-align:left\">{}</td><td class=\"num\">{}</td><td>{svg}</td><td style=\"text-align:left\">{}</td></tr>",
                esc(&target.name),
                esc(&verdict.metric),
                verdict.ratio.map_or("-".into(), |r| format!("{r:.3}x")),
                esc(&verdict.text)
            );
        }
    }
    out.push_str("</table><ul class=\"method\">");
    for line in crate::verdict::methodology_lines(m) {
        let _ = write!(out, "<li>{}</li>", esc(&line));
    }
    out.push_str("</ul>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentile_axis_labels() {
        assert_eq!(percentile_label(0.0), "0%");
        assert_eq!(percentile_label(1.0), "90%");
        assert_eq!(percentile_label(2.0), "99%");
        assert_eq!(percentile_label(3.0), "99.9%");
        assert_eq!(percentile_label(5.0), "99.999%");
        assert!((nines(0.99) - 2.0).abs() < 1e-9);
    }

    /// A committed results file (tests/golden), decoded.
    fn golden(name: &str) -> SavedRun {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/golden").join(name);
        SavedRun::load(&path).expect("a committed results file")
    }

    #[test]
    fn twelve_runs_get_twelve_colours_and_later_runs_a_dash_pattern() {
        let colours: std::collections::HashSet<String> = (0..12).map(css_color).collect();
        assert_eq!(colours.len(), 12, "the demo's twelve steps share no colour");
        assert!((0..12).all(|index| dash(index).is_none()), "the first twelve lines are solid");
        for index in 12..36 {
            assert_eq!(css_color(index), css_color(index % 12));
            assert!(dash(index).is_some(), "run {index} repeats a colour, so it is dashed");
            assert_ne!(dash(index), dash(index - 12), "run {index} is told from run {}", index - 12);
            assert_ne!(dash(index), Some(p99_dash(index)), "a p50 line does not look like a p99 line");
        }
        assert!(swatch_background(13).starts_with("repeating-linear-gradient("));
    }

    #[test]
    fn ratios_between_unlike_loads_are_shown_uncoloured_with_a_note() {
        // A closed loop at 64 connections against an open loop offered 2000/s.
        let table = summary_table(&[golden("closed.results.json"), golden("open.results.json")]);
        assert!(table.contains("ratio unlike"), "{table}");
        assert!(!table.contains("ratio up") && !table.contains("ratio down"), "{table}");
        assert!(table.contains("not coloured better or worse"), "{table}");
        // Two closed loops at the same connections are compared, in colour.
        let mut faster = golden("closed.results.json");
        faster.report.requests.rate *= 2.0;
        let table = summary_table(&[golden("closed.results.json"), faster]);
        assert!(table.contains("ratio up") && !table.contains("ratio unlike"), "{table}");
        // Other connections: another kind of load.
        let mut wider = golden("closed.results.json");
        wider.report.load.connections = Some(256);
        assert!(!like_for_like(&golden("closed.results.json").report, &wider.report));
    }

    #[test]
    fn ratios_are_coloured_only_like_against_like_and_never_for_the_generator() {
        // The same load on another method (the demo's getBlocks against getBalance): grey.
        let mut other_method = golden("closed.results.json");
        other_method.label = "other".into();
        other_method.report.method = "getSlot".into();
        other_method.report.requests.rate *= 2.0;
        assert!(!like_for_like(&golden("closed.results.json").report, &other_method.report));
        let table = summary_table(&[golden("closed.results.json"), other_method]);
        assert!(table.contains("ratio unlike") && !table.contains("ratio up"), "{table}");
        // The generator's figures are never better or worse, even like against like.
        let row = MetricRow {
            metric: "generator CPU".into(),
            unit: super::super::tables::Unit::Percent,
            values: vec![10.0, 50.0],
        };
        let span = ratio_span(&row, 1, true);
        assert!(span.starts_with("<span class=\"ratio\" title=\"rpcbench's own"), "{span}");
    }

    #[test]
    fn long_labels_are_cut_with_the_full_text_in_a_tooltip() {
        let long = format!("mix of {}", "getBalance 10%, getBlock 20%, ".repeat(12));
        let mut run = golden("closed.results.json");
        run.label = long.clone();
        run.report.method = long.clone();
        let mut other = golden("closed.results.json");
        other.label = "b".into();
        let html = render_html(&[run, other]);
        let tooltip = format!("<span class=\"clip\" title=\"{0}\">{0}</span>", esc(&long));
        // In the summary, the legends, the per-method table and the details.
        assert!(html.matches(&tooltip).count() >= 5, "{html}");
        assert!(html.contains(".clip { display: inline-block; max-width:"), "ellipsized by the style");
        assert!(html.contains(&format!("<h1 title=\"rpcbench comparison: {}", esc(&long))), "{html}");
    }

    fn three_stages(run: &mut SavedRun) {
        let stage = |stage: u64, level: f64, start_s: f64| crate::report::StageReport {
            stage,
            level,
            start_s,
            duration_s: 3.0,
            ramp_s: 0.0,
            requests: 1000 * stage,
            ok: 1000 * stage - stage,
            errors: stage,
            rate: 333.0 * stage as f64,
            latency: run.report.latency.clone(),
        };
        run.report.stages = vec![stage(1, 16.0, 0.0), stage(2, 32.0, 3.0), stage(3, 64.0, 6.0)];
    }

    #[test]
    fn staged_runs_get_a_per_stage_table_and_their_boundaries_on_the_time_charts() {
        let mut run = golden("closed.results.json");
        three_stages(&mut run);
        let runs = [run];
        assert_eq!(stage_boundaries(&runs), vec![(0, 3.0), (0, 6.0)]);
        let html = render_html(&runs);
        let section = &html[html.find("<h2>Per stage</h2>").expect("a per-stage section")..];
        let table = &section[..section.find("</table>").unwrap()];
        assert_eq!(table.matches("<tr>").count(), 4, "a header and one row per stage: {table}");
        assert!(table.contains("<th>connections</th>") && table.contains("<td>64</td>"), "{table}");
        assert!(table.contains("<td>3 (0.10%)</td>"), "errors with their share: {table}");
        assert!(html.contains("stage boundaries"), "the charts say what the verticals are");
        // The boundaries are drawn: the throughput chart has two more lines than without them.
        let plain = throughput_chart(&[golden("closed.results.json")]);
        let staged = throughput_chart(&runs);
        assert!(drawn_lines(&staged) > drawn_lines(&plain), "the boundaries are drawn");
        assert!(!render_html(&[golden("closed.results.json")]).contains("Per stage"));
    }

    /// The first table of the section headed `heading`.
    fn first_table<'a>(html: &'a str, heading: &str) -> &'a str {
        let section = &html[html.find(heading).unwrap_or_else(|| panic!("no {heading}"))..];
        &section[..section.find("</table>").unwrap()]
    }

    #[test]
    fn a_comparison_of_staged_runs_has_a_per_stage_table_with_ratios_against_the_first() {
        let mut first = golden("closed.results.json");
        three_stages(&mut first);
        let mut second = golden("closed.results.json");
        second.label = "second".into();
        three_stages(&mut second);
        for stage in &mut second.report.stages {
            stage.rate /= 2.0;
        }
        let html = render_html(&[first, second]);
        let table = first_table(&html, "<h2>Per stage</h2>");
        assert!(table.contains("<th>stage</th><th class=\"text\">run</th>"), "{table}");
        assert_eq!(table.matches("<tr").count(), 7, "a header and a row per stage and run: {table}");
        assert_eq!(table.matches("rowspan=\"2\"").count(), 3, "each stage named once: {table}");
        assert!(table.contains(">stage 3 (64 conns)</td>"), "{table}");
        // Half the rate in every stage: worse, in colour, as the runs ran the same stages.
        assert_eq!(table.matches("<span class=\"ratio down\">0.50x</span>").count(), 3, "{table}");
        assert!(html.contains("Ratios are against closed's same stage."));
        assert!(
            html.contains(">closed, 3 stages, 16..64 conns</td>"),
            "the load cell says the stages' levels"
        );
        // The runs share their stages: one schedule.
        assert!(html.contains("<h3>Stages</h3>") && !html.contains("Each run's stages"));

        // Against a run of another kind of load, the ratios are grey.
        let mut open = golden("open.results.json");
        three_stages(&mut open);
        let mut closed = golden("closed.results.json");
        three_stages(&mut closed);
        closed.report.stages.pop();
        let html = render_html(&[open, closed]);
        let table = first_table(&html, "<h2>Per stage</h2>");
        assert!(table.contains("ratio unlike") && !table.contains("ratio down"), "{table}");
        assert!(table.contains("rowspan=\"1\""), "a stage only the first run had: {table}");
        assert!(html.contains("Each run's stages"), "stages that differ are shown run by run");
    }

    /// The number of cells of the widest row of a table.
    fn widest_row(table: &str) -> usize {
        table
            .split("<tr")
            .skip(1)
            .map(|row| row.matches("<td").count() + row.matches("<th").count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn the_summary_fits_a_narrow_window_without_hiding_a_column() {
        let metrics =
            ["req/s", "ok %", "errors", "p50", "p75", "p90", "p95", "p99", "max", "MB/s", "bytes/response"];
        // Up to four runs: a row per figure, a column per run.
        let two = [golden("closed.results.json"), golden("open.results.json")];
        let summary = summary_table(&two);
        assert_eq!(summary.matches("<table").count(), 1);
        assert_eq!(widest_row(&summary), 3, "{summary}");
        for metric in metrics.iter().chain(&["method", "load"]) {
            assert!(summary.contains(&format!("<tr><td>{}</td>", esc(metric))), "{metric}: {summary}");
        }
        // More runs: a row each, the figures over two tables of ten columns at most.
        let six: Vec<SavedRun> = (0..6)
            .map(|index| {
                let mut run =
                    golden(if index % 2 == 0 { "closed.results.json" } else { "open.results.json" });
                run.label = format!("run {index}");
                run
            })
            .collect();
        let summary = summary_table(&six);
        let tables: Vec<&str> = summary.split("</table>").filter(|t| t.contains("<table")).collect();
        assert_eq!(tables.len(), 2, "{summary}");
        for table in &tables {
            assert!(widest_row(table) <= 10, "{table}");
            assert_eq!(table.matches("<tr").count(), 7, "a header and a row per run: {table}");
        }
        for metric in metrics {
            assert_eq!(summary.matches(&format!("<th>{}</th>", esc(metric))).count(), 1, "{metric}");
        }
    }

    /// The lines of a chart other than its black axes and ticks.
    fn drawn_lines(svg: &str) -> usize {
        svg.split("<polyline")
            .skip(1)
            .filter(|tag| !tag.split('>').next().unwrap_or("").contains("stroke=\"#000000\""))
            .count()
    }

    #[test]
    fn series_of_one_or_two_points_are_drawn_as_markers_not_lines() {
        // A run of 2 s read from a file of whole seconds (newer runs that short have 100 ms
        // points, and a line).
        let mut short = golden("closed.results.json");
        short.record.series.truncate(2);
        short.record.elapsed = std::time::Duration::from_secs(2);
        assert_eq!(series_plot(&short).len(), 2);
        for chart in [
            throughput_chart(&[golden("closed.results.json")]),
            latency_over_time_chart(&[golden("closed.results.json")]),
        ] {
            assert!(drawn_lines(&chart) > 0, "a 10 s run is drawn as lines");
        }
        for chart in [
            throughput_chart(std::slice::from_ref(&short)),
            latency_over_time_chart(std::slice::from_ref(&short)),
        ] {
            assert_eq!(drawn_lines(&chart), 0, "two points are not joined: {chart}");
            assert!(chart.contains("<circle"), "but drawn as markers");
        }
        assert!(render_html(&[short]).contains("runs with fewer than 3 points: not joined by a line"));
    }

    #[test]
    fn the_target_cpu_note_needs_a_monitored_target() {
        let html = render_html(&[golden("closed.results.json")]);
        assert!(!html.contains("Target CPU"), "nothing was monitored");
        assert!(html.contains("The generator's CPU is a percentage"));
        let html = render_html(&[golden("monitored.results.json")]);
        assert!(html.contains("Target CPU is a percentage of one core"));
    }

    #[test]
    fn narrow_windows_shrink_the_tables_instead_of_cutting_columns() {
        let html = render_html(&[golden("closed.results.json"), golden("open.results.json")]);
        assert!(html.contains("@media (max-width: 1000px)"));
        // The load cell is short, the whole description in its tooltip.
        assert!(html.contains(">closed, 64 conns</td>") && html.contains(">open, 2000/s</td>"), "{html}");
        assert!(html.contains("title=\"closed loop, 64 connection(s)"), "{html}");
    }

    #[test]
    fn text_is_escaped() {
        assert_eq!(esc("<a href=\"x\">&'"), "&lt;a href=&quot;x&quot;&gt;&amp;&#39;");
    }
}
