//! `rpcbench limits -f html`: the limits a node or plan showed as an HTML page in the house
//! style: the one-line summary, then a table of each limit found with its evidence, and what
//! the probe spent of its budget.

use std::fmt::Write;

use super::html::{esc, page_start};
use crate::limits::LimitsReport;

/// The page of a [`LimitsReport`].
pub fn render_limits_html(report: &LimitsReport) -> String {
    let mut out = String::new();
    let title = format!("Limits of {}", report.url);
    page_start(&mut out, &title);
    let _ = write!(
        out,
        "<h1>{}</h1>\n<p class=\"sub\">method {} · {} of {} requests spent ({} calls)</p>\n",
        esc(&title),
        esc(&report.method),
        report.budget.requests,
        report.budget.max_requests,
        report.budget.calls
    );
    let _ = write!(out, "<section>\n<h2>Summary</h2>\n<p>{}</p>\n", esc(&report.summary()));
    if let Some(said) = report.interrupted_text() {
        let _ = writeln!(out, "<p class=\"note\">{}</p>", esc(said));
    }
    out.push_str("</section>\n");
    out.push_str(
        "<section>\n<h2>What the probe found</h2>\n<table>\n<tr><th>Limit</th><th class=\"text\">Found</th><th class=\"text\">Evidence</th></tr>\n",
    );
    for (name, value, evidence) in report.rows() {
        let _ = writeln!(
            out,
            "<tr><td>{}</td><td class=\"text nowrap\"><b>{}</b></td><td class=\"text\">{}</td></tr>",
            esc(&name),
            esc(&value),
            esc(&evidence)
        );
    }
    out.push_str("</table>\n<p class=\"note\">Exact figures are limits the server refused past; \"at least\" means the probe stopped at its ceiling or its budget first. The burst is what got through at once less what the budget refilled meanwhile (a bracket when the timing allows several sizes); the window is the largest burst over the sustained rate.</p>\n</section>\n");
    out.push_str("</main>\n</body>\n</html>\n");
    out
}
