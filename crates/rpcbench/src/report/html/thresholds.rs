//! The thresholds' verdicts as an HTML section, for every page that has thresholds (a run, a
//! comparison's runs, a subscription run, a tx run), so a verdict reads the same on each and a
//! server's text in a threshold or a figure is escaped the same way everywhere. The Markdown
//! table is `report::markdown::thresholds_markdown`; both show a failed threshold's measured
//! value with how far past its limit it went (`measured`).

use std::fmt::Write;

use super::kit::esc;
use crate::report::ThresholdResult;

/// The measured value, and for a failed threshold how far past its limit it went.
pub(in crate::report) fn measured(result: &ThresholdResult) -> String {
    if result.passed || result.exceeded_by.is_empty() {
        result.actual.clone()
    } else {
        format!("{} (past the limit by {})", result.actual, result.exceeded_by)
    }
}

/// The "Thresholds" section of an HTML page (`heading` after the word, e.g. a run's name), or
/// nothing when there are none.
pub(in crate::report) fn thresholds_html(results: &[ThresholdResult], heading: Option<&str>) -> String {
    let mut out = String::new();
    if results.is_empty() {
        return out;
    }
    let heading = heading.map(|name| format!(": {}", esc(name))).unwrap_or_default();
    let _ = write!(
        out,
        "<section><h2>Thresholds{heading}</h2><table><tr><th>threshold</th><th>verdict</th><th>measured</th></tr>"
    );
    for result in results {
        let _ = write!(
            out,
            "<tr><td>{}</td><td>{}</td><td>{}</td></tr>",
            esc(&result.threshold),
            if result.passed {
                "<span class=\"verdict-ok\">ok</span>"
            } else {
                "<span class=\"verdict-fail\">FAILED</span>"
            },
            esc(&measured(result))
        );
    }
    out.push_str("</table></section>");
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::markdown::thresholds_markdown;

    fn result(threshold: &str, passed: bool, actual: &str) -> ThresholdResult {
        ThresholdResult {
            threshold: threshold.into(),
            passed,
            actual: actual.into(),
            exceeded_by: if passed { String::new() } else { "1ms".into() },
        }
    }

    #[test]
    fn a_threshold_s_text_cannot_break_the_html_or_the_markdown_table() {
        let results = [result("p99<5ms", true, "4.1ms"), result("errors<1%", false, "<b>|x|</b>")];
        let html = thresholds_html(&results, Some("a<b"));
        assert!(html.contains("<h2>Thresholds: a&lt;b</h2>"), "{html}");
        assert!(html.contains("&lt;b&gt;|x|&lt;/b&gt;"), "{html}");
        assert!(html.contains("verdict-fail") && html.contains("verdict-ok"), "{html}");
        let mut md = String::new();
        thresholds_markdown(&mut md, &results);
        let rows: Vec<&str> = md.lines().filter(|l| l.starts_with('|')).collect();
        assert_eq!(rows.len(), 4, "{md}");
        for row in rows {
            // Three cells: four unescaped bars.
            let bars = row.replace("\\|", "").matches('|').count();
            assert_eq!(bars, 4, "{row}");
        }
        assert!(md.contains("**FAILED**"), "{md}");
        assert!(md.contains("(past the limit by 1ms)") && html.contains("(past the limit by 1ms)"), "{md}");
    }

    #[test]
    fn no_thresholds_render_nothing() {
        assert!(thresholds_html(&[], None).is_empty());
        let mut md = String::new();
        thresholds_markdown(&mut md, &[]);
        assert!(md.is_empty());
    }
}
