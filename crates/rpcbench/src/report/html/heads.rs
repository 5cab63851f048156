//! The heads section of a run's or a comparison's HTML page (with `--heads`): per target, its
//! lag behind the highest head seen across targets, its share at the tip, its stale samples,
//! how often it showed a block first and its block-visibility delay, and the phantom heads,
//! gaps and reorgs seen. Stale rows are marked.

use std::fmt::Write;

use super::kit::{esc, swatch};
use crate::heads::HeadsReport;
use crate::results::SavedRun;

/// The heads of every run that followed them, as one table (none when no run did).
pub(super) fn heads_section(runs: &[SavedRun]) -> Option<String> {
    let heads = HeadsReport::gather(runs.iter().filter_map(|run| run.report.heads.as_ref()))?;
    let mut out = String::new();
    let _ = write!(
        out,
        "<p class=\"sub\">Polled every {:.0} ms beside the load; lag in blocks (slots) behind the highest head seen \
         across targets; stale: a sample more than {} behind; first: the share of blocks it showed first; delay: \
         how long after the first target it showed a block.</p>",
        heads.interval_ms, heads.stale_after
    );
    let phantoms = heads.targets.iter().any(|h| h.phantom > 0);
    let jumps = heads.targets.iter().any(|h| h.gaps > 0 || h.reorgs > 0);
    out.push_str(
        "<table><tr><th>target</th><th>samples</th><th>failed</th><th>lag p50</th><th>lag p99</th><th>lag max</th>\
         <th>at tip</th><th>stale</th><th>first</th><th>delay p50</th><th>delay p90</th><th>delay p99</th>",
    );
    if phantoms {
        out.push_str("<th>phantom</th>");
    }
    if jumps {
        out.push_str("<th>gaps</th><th>reorgs</th>");
    }
    out.push_str("</tr>");
    for (index, h) in heads.targets.iter().enumerate() {
        // The run's colour when each run kept its own row (a comparison), as on the charts.
        let colour = runs.iter().position(|run| run.label == h.name).unwrap_or(index);
        let stale = if h.stale > 0 { " style=\"color:#c62828;font-weight:bold\"" } else { "" };
        let _ = write!(
            out,
            "<tr><td class=\"text\">{}{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{:.1}%</td>\
             <td{stale}>{}</td><td>{:.1}%</td><td>{:.1} ms</td><td>{:.1} ms</td><td>{:.1} ms</td>",
            swatch(colour),
            esc(&h.name),
            h.samples,
            h.failed,
            h.lag_p50,
            h.lag_p99,
            h.lag_max,
            h.at_tip * 100.0,
            h.stale,
            h.first_seen * 100.0,
            h.delay_ms_p50,
            h.delay_ms_p90,
            h.delay_ms_p99
        );
        if phantoms {
            let _ = write!(out, "<td>{}</td>", h.phantom);
        }
        if jumps {
            let _ = write!(out, "<td>{}</td><td>{}</td>", h.gaps, h.reorgs);
        }
        out.push_str("</tr>");
    }
    out.push_str("</table>");
    Some(out)
}
