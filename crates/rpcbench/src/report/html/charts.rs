//! The charts of a run's or a comparison's page: throughput and latency over time (with the
//! stage boundaries, small multiples past four runs), the HDR percentile spectrum on a log
//! "1/(1-q)" axis, and the latency histogram on log-spaced buckets.

use std::error::Error;
use std::fmt::Write;

use hdrhistogram::Histogram;
use plotters::coord::ranged1d::Ranged;
use plotters::prelude::*;

use super::kit::{
    clipped, color, dash, draw_line, house_style, nice_max, p99_dash, seconds_label, svg, svg_sized, swatch,
    DrawResult, LatencyScale, TickedAxis, CHART_HEIGHT, CHART_WIDTH,
};
use crate::results::SavedRun;
use crate::util::units::format_micros;

/// One point of a run's series, placed at the middle of its interval.
pub(super) struct SeriesPlot {
    pub(super) mid: f64,
    rate: f64,
    error_rate: f64,
    p50: f64,
    p99: f64,
    requests: u64,
}

/// The series of a run as rates: each interval's count over its width (an interval is cut
/// where the next point starts or the run ends; a sliver shorter than half an interval, such
/// as the drain at the end of a run or of each round of a comparison, is left out, as its rate
/// would be noise).
pub(super) fn series_plot(run: &SavedRun) -> Vec<SeriesPlot> {
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
            let next = record.series.get(index + 1).map_or(elapsed, |next| next.start_ms as f64 / 1000.0);
            let mut width = (start + interval).min(next).min(elapsed) - start;
            if width < interval * 0.5 && count > 1 {
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
pub(super) fn fine_series(runs: &[SavedRun]) -> bool {
    runs.iter().any(|run| run.record.series_interval_ms < 1000)
}

/// A label of a time axis: to a tenth of a second (`0.4s`) when `tenths`, else
/// [`seconds_label`].
pub(super) fn time_label(x: f64, tenths: bool) -> String {
    if tenths {
        format!("{x:.1}s")
    } else {
        seconds_label(x)
    }
}

/// A run with fewer series points than this (a run shorter than 0.3 s, or one read from a
/// results file of whole seconds shorter than 3 s) has its points drawn as markers, not
/// joined: a line through one or two points would draw a trend the run did not show.
pub(super) const MIN_POINTS_FOR_LINE: usize = 3;

/// Where stages begin on the time axis, for the time charts' vertical lines: (run index,
/// seconds since measurement started) for every stage but the first of every staged run.
pub(super) fn stage_boundaries(runs: &[SavedRun]) -> Vec<(usize, f64)> {
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

pub(super) fn throughput_chart(runs: &[SavedRun]) -> String {
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

pub(super) fn latency_over_time_chart(runs: &[SavedRun]) -> String {
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
pub(super) fn nines(quantile: f64) -> f64 {
    (1.0 / (1.0 - quantile)).log10()
}

pub(super) fn percentile_label(x: f64) -> String {
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
pub(in crate::report) fn spectrum(histogram: &Histogram<u64>) -> Vec<(f64, f64)> {
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

pub(super) fn spectrum_chart(runs: &[SavedRun]) -> String {
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
pub(in crate::report) fn percentile_curves(
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

pub(super) fn histogram_chart(runs: &[SavedRun]) -> String {
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
