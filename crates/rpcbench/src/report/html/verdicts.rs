//! The verdicts of a comparison in rounds on its HTML page: each figure's ratio against the
//! baseline, its rounds and its 95% interval drawn against the tie band, and the methodology.

use std::fmt::Write;

use super::kit::{esc, PALETTE};

/// The verdicts of a comparison in rounds: a row per target and figure, with a strip that
/// draws each round's ratio (dots), the 95% interval (a bar with the estimate as a tick) and
/// the tie band (shaded) on a log scale around 1x; then the methodology.
pub(super) fn verdicts_section(verdicts: &crate::compare::ComparisonVerdicts) -> String {
    const WIDTH: f64 = 420.0;
    const HEIGHT: f64 = 22.0;
    let m = &verdicts.methodology;
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"sub\">Against {}: {}% intervals over {} round(s); no difference within the {} (shaded). \
         Dots: each round's ratio; bar: the interval; tick: the estimate; log scale, 1x in the middle.</p>",
        esc(&verdicts.baseline),
        crate::util::units::trim_float(m.confidence * 100.0),
        m.rounds,
        esc(&crate::verdict::tie_bands_text(m))
    );
    out.push_str("<table class=\"verdicts\" style=\"text-align:left\"><tr><th>target</th><th>metric</th><th>ratio</th><th>rounds and interval</th><th>verdict</th></tr>");
    for (index, target) in verdicts.targets.iter().enumerate() {
        let (r, g, b) = PALETTE[(index + 1) % PALETTE.len()];
        for verdict in &target.verdicts {
            // Each strip its own log scale around 1x, wide enough for its points, its
            // interval and twice the tie band; its ends labelled.
            let tie = crate::verdict::metric_tie(m, &verdict.metric);
            let extent = verdict
                .round_ratios
                .iter()
                .copied()
                .chain(verdict.ci_low)
                .chain(verdict.ci_high)
                .filter(|r| r.is_finite() && *r > 0.0)
                .map(|r| r.ln().abs())
                .fold((1.0 + tie).ln() * 2.0, f64::max)
                * 1.15;
            let x = |ratio: f64| WIDTH / 2.0 + ratio.ln() / extent * (WIDTH / 2.0 - 30.0);
            let mut svg = format!(
                "<svg width=\"{WIDTH}\" height=\"{HEIGHT}\" viewBox=\"0 0 {WIDTH} {HEIGHT}\" role=\"img\"><rect x=\"{:.1}\" y=\"0\" width=\"{:.1}\" height=\"{HEIGHT}\" fill=\"#ddd\"/><line x1=\"{:.1}\" x2=\"{:.1}\" y1=\"0\" y2=\"{HEIGHT}\" stroke=\"#888\"/>",
                x(1.0 / (1.0 + tie)),
                x(1.0 + tie) - x(1.0 / (1.0 + tie)),
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
