//! The house kit of the HTML pages: the run colours and dash patterns, escaping and clipping
//! of text, the chart size and font, the plotters helpers every chart draws with (the ticked
//! axis, the mesh style, an SVG string from a drawing), the latency axis, legends, and the page's
//! opening and style sheet. Shared by the run, comparison, capacity and subscribe pages.

use std::error::Error;
use std::fmt::Write;

use plotters::chart::MeshStyle;
use plotters::coord::ranged1d::{DefaultFormatting, KeyPointHint, Ranged};
use plotters::coord::types::RangedCoordf64;
use plotters::coord::Shift;
use plotters::prelude::*;

use crate::results::SavedRun;
use crate::util::units::format_micros;

/// One colour per run: a qualitative palette of twelve (Tableau 10, then olive and charcoal).
/// Past twelve runs the colours come round again with another dash pattern ([`dash`]).
pub(super) const PALETTE: [(u8, u8, u8); 12] = [
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

pub(in crate::report) fn color(index: usize) -> RGBColor {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    RGBColor(r, g, b)
}

pub(in crate::report) fn css_color(index: usize) -> String {
    let (r, g, b) = PALETTE[index % PALETTE.len()];
    format!("#{r:02x}{g:02x}{b:02x}")
}

/// The dash pattern of run `index`'s lines: none (solid) within the palette's first round.
pub(in crate::report) fn dash(index: usize) -> Option<(u32, u32)> {
    DASHES[(index / PALETTE.len()) % DASHES.len()]
}

pub(super) fn p99_dash(index: usize) -> (u32, u32) {
    P99_DASHES[(index / PALETTE.len()) % P99_DASHES.len()]
}

/// The CSS background of run `index`'s swatch: its colour, striped as its lines are dashed.
pub(super) fn swatch_background(index: usize) -> String {
    let color = css_color(index);
    match dash(index) {
        None => color,
        Some((on, off)) => {
            let (on, off) = (on.min(5), off.min(3));
            format!("repeating-linear-gradient(90deg,{color} 0 {on}px,transparent {on}px {}px)", on + off)
        }
    }
}

/// A run's colour swatch, for legends and captions.
pub(super) fn swatch(index: usize) -> String {
    format!(
        "<i style=\"display:inline-block;width:10px;height:10px;border-radius:2px;margin-right:6px;background:{}\"></i>",
        swatch_background(index)
    )
}

/// Draws one run's line in its colour and dash pattern (`pattern`: `None` for solid).
pub(super) fn draw_line<DB: DrawingBackend, X: Ranged<ValueType = f64>, Y: Ranged<ValueType = f64>>(
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
pub(in crate::report) fn clipped(text: &str) -> String {
    let text = esc(text);
    format!("<span class=\"clip\" title=\"{text}\">{text}</span>")
}

/// Escapes text for HTML, control characters included (written as visible escapes).
pub(in crate::report) fn esc(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in crate::util::printable::escape_controls(text).chars() {
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

pub(in crate::report) const CHART_WIDTH: u32 = 1080;
pub(in crate::report) const CHART_HEIGHT: u32 = 340;
pub(in crate::report) const FONT: &str = "sans-serif";

pub(in crate::report) type Area<'a> = DrawingArea<SVGBackend<'a>, Shift>;

/// A linear f64 axis with ticks at given values (plotters' own `with_key_points` loses the
/// label formatter of f64 axes).
pub(in crate::report) struct TickedAxis {
    inner: RangedCoordf64,
    ticks: Vec<f64>,
}

impl TickedAxis {
    pub(in crate::report) fn new(range: std::ops::Range<f64>, ticks: Vec<f64>) -> Self {
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
pub(in crate::report) fn house_style<'m, 'a, 'b, X: Ranged, Y: Ranged, DB: DrawingBackend>(
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

pub(in crate::report) type DrawResult = Result<(), Box<dyn Error>>;

/// Draws one chart into an SVG string; a drawing error becomes a note in the page.
pub(in crate::report) fn svg(draw: impl FnOnce(&Area<'_>) -> DrawResult) -> String {
    svg_sized((CHART_WIDTH, CHART_HEIGHT), draw)
}

/// A chart of `size` pixels (a small multiple is smaller, so that its text stays legible).
pub(super) fn svg_sized(size: (u32, u32), draw: impl FnOnce(&Area<'_>) -> DrawResult) -> String {
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

pub(in crate::report) fn seconds_label(x: f64) -> String {
    if (x - x.round()).abs() < 1e-6 {
        format!("{x:.0}s")
    } else {
        format!("{x:.1}s")
    }
}

pub(in crate::report) fn nice_max(value: f64) -> f64 {
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
pub(in crate::report) struct LatencyScale {
    log: bool,
    pub(super) low: f64,
    pub(super) high: f64,
}

impl LatencyScale {
    /// A logarithmic axis from `lowest` to `highest` microseconds, whatever their spread.
    pub(in crate::report) fn log(lowest: f64, highest: f64) -> Self {
        let highest = highest.max(1.0);
        Self { log: true, low: lowest.max(1.0).min(highest).log10() - 0.05, high: highest.log10() + 0.05 }
    }

    /// `lowest` and `highest`: the extremes plotted; `typical`: the smallest median of a line.
    pub(super) fn new(lowest: f64, typical: f64, highest: f64) -> Self {
        let highest = highest.max(1.0);
        if typical > 0.0 && highest / typical > LOG_SPREAD {
            let low = lowest.max(1.0).log10() - 0.05;
            Self { log: true, low, high: highest.log10() + 0.05 }
        } else {
            Self { log: false, low: 0.0, high: nice_max(highest) }
        }
    }

    /// Where a latency in microseconds goes on the axis.
    pub(in crate::report) fn y(&self, micros: f64) -> f64 {
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

    pub(in crate::report) fn axis(&self) -> TickedAxis {
        TickedAxis::new(self.low..self.high, self.ticks())
    }

    pub(in crate::report) fn label(&self, y: f64) -> String {
        format_micros(if self.log { 10f64.powf(y).round() } else { y })
    }

    pub(in crate::report) fn description(&self) -> &'static str {
        if self.log {
            "latency (log scale)"
        } else {
            "latency"
        }
    }
}

pub(super) fn legend(runs: &[SavedRun], extra: &str) -> String {
    let items: Vec<(&str, usize)> =
        runs.iter().enumerate().map(|(index, run)| (run.label.as_str(), index)).collect();
    legend_items(&items, extra)
}

/// A legend: a swatch of colour `index` per label, then a hint.
pub(in crate::report) fn legend_items(items: &[(&str, usize)], extra: &str) -> String {
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
pub(in crate::report) fn page_start(out: &mut String, title: &str) {
    let _ = write!(
        out,
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>{}</title>\n<style>{STYLE}</style>\n</head>\n<body>\n<main>\n",
        esc(title)
    );
}

pub(in crate::report) const STYLE: &str = r#"
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
