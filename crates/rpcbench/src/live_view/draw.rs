//! Draws the dashboard's panels into a ratatui [`Buffer`] from a [`LiveWindow`]: a header
//! (elapsed and remaining time, the load and its stage, keys), the rate chart, latency
//! percentiles of the window and of the run, outcomes, the per-method table, the generator's
//! CPU and send lag, a subscription's figures, and the latest lines the command printed.

use std::time::Duration;

use ratatui::buffer::Buffer;
use ratatui::layout::{Constraint, Layout, Rect};
use ratatui::style::{Color, Modifier, Style};
use ratatui::symbols::Marker;
use ratatui::text::{Line, Span};
use ratatui::widgets::{Axis, Block, Chart, Dataset, GraphType, Paragraph, Row, Table, Widget};

use super::window::{LatencyQuantiles, LiveWindow};
use crate::metrics::TransactionFigures;
use crate::util::units::format_micros;

/// The smallest screen the panels fit in; below it, a line saying so.
const MIN_WIDTH: u16 = 60;
const MIN_HEIGHT: u16 = 20;

/// What the command says about itself, beside the live figures.
#[derive(Debug, Clone, Copy, Default)]
pub struct DashboardText<'a> {
    /// The command and its target (redacted), e.g. `run http://127.0.0.1:8545/`.
    pub title: &'a str,
    /// The load as configured, e.g. `open loop, 200/s` or `closed loop, 8 connections`.
    pub load: &'a str,
    /// The run's planned length (warm-up included), when it is a time.
    pub planned: Option<Duration>,
    /// What is going on now (a compare's round and target, a capacity step), if anything.
    pub stage: &'a str,
    /// Other sources beside the one shown (a compare's targets), one line.
    pub sources: &'a str,
    /// The latest lines the command printed on standard error, oldest first.
    pub messages: &'a [String],
    /// Whether a stop was asked for (q or Ctrl-C).
    pub stopping: bool,
}

/// Draws the whole dashboard into `area` of `buf`.
pub fn draw_dashboard(window: &LiveWindow, text: &DashboardText<'_>, area: Rect, buf: &mut Buffer) {
    if area.width < MIN_WIDTH || area.height < MIN_HEIGHT {
        Paragraph::new(format!(
            "rpcbench: the dashboard needs {MIN_WIDTH}x{MIN_HEIGHT}, this terminal is {}x{} (q stops the run)",
            area.width, area.height
        ))
        .render(area, buf);
        return;
    }
    let message_lines = (text.messages.len() as u16).min(4);
    let [header, top, bottom, messages] = Layout::vertical([
        Constraint::Length(4),
        Constraint::Percentage(45),
        Constraint::Fill(1),
        Constraint::Length(if message_lines > 0 { message_lines + 2 } else { 0 }),
    ])
    .areas(area);
    draw_header(window, text, header, buf);
    let [chart, latency] = Layout::horizontal([Constraint::Percentage(62), Constraint::Fill(1)]).areas(top);
    draw_chart(window, chart, buf);
    draw_latency(window, latency, buf);
    let [outcomes, methods, generator] =
        Layout::horizontal([Constraint::Percentage(28), Constraint::Percentage(44), Constraint::Fill(1)])
            .areas(bottom);
    draw_outcomes(window, outcomes, buf);
    draw_methods(window, methods, buf);
    let heads = window.heads().len() as u16;
    let transactions =
        window.transactions().map_or(0, |(tx, _)| if rare_transaction_line(&tx).is_some() { 3 } else { 2 });
    if heads + transactions == 0 {
        draw_generator(window, generator, buf);
    } else {
        let [generator, heads_area, transactions_area] = Layout::vertical([
            Constraint::Fill(1),
            Constraint::Length(if heads > 0 { heads + 3 } else { 0 }),
            Constraint::Length(if transactions > 0 { transactions + 2 } else { 0 }),
        ])
        .areas(generator);
        draw_generator(window, generator, buf);
        draw_heads(window, heads_area, buf);
        draw_transactions(window, transactions_area, buf);
    }
    if message_lines > 0 {
        let skip = text.messages.len() - message_lines as usize;
        let lines: Vec<Line> = text.messages[skip..].iter().map(|line| Line::raw(line.as_str())).collect();
        Paragraph::new(lines)
            .block(Block::bordered().title(" log (standard error, printed in full after) "))
            .render(messages, buf);
    }
}

/// A duration in whole units: `42s`, `2m05s`, `1h02m`.
fn format_duration(duration: Duration) -> String {
    let secs = duration.as_secs();
    match secs {
        0..=59 => format!("{secs}s"),
        60..=3_599 if secs % 60 == 0 => format!("{}m", secs / 60),
        60..=3_599 => format!("{}m{:02}s", secs / 60, secs % 60),
        _ => format!("{}h{:02}m", secs / 3_600, secs % 3_600 / 60),
    }
}

fn seconds(value: Option<f64>) -> String {
    value.map_or_else(|| "-".to_string(), |seconds| format_micros(seconds * 1e6))
}

fn rate(value: f64) -> String {
    if value >= 100.0 {
        format!("{value:.0}/s")
    } else {
        format!("{value:.1}/s")
    }
}

fn draw_header(window: &LiveWindow, text: &DashboardText<'_>, area: Rect, buf: &mut Buffer) {
    let latest = window.latest();
    let elapsed = latest.map_or(Duration::ZERO, |sample| sample.at);
    let mut time = format!("elapsed {}", format_duration(elapsed));
    if let Some(planned) = text.planned {
        let left = planned.saturating_sub(elapsed);
        time.push_str(&format!(", remaining {}", format_duration(left)));
    }
    let mut load = format!("load: {}", text.load);
    if let Some(subscription) = window.subscription().filter(|_| window.counts_notifications()) {
        load.push_str(&format!(
            ", received {}, active {}",
            rate(subscription.per_second),
            subscription.active
        ));
    } else if let Some(snapshot) = latest.map(|sample| &sample.snapshot) {
        if let Some(target) = snapshot.target_rate {
            load.push_str(&format!(", now asked {}", rate(target)));
        }
        load.push_str(&format!(
            ", achieved {}, in flight {}{}",
            rate(snapshot.achieved_rate),
            snapshot.in_flight,
            if snapshot.running { "" } else { " (between runs)" }
        ));
    }
    let status = if text.stopping {
        Span::styled("stopping: the report follows", Style::default().fg(Color::Yellow))
    } else {
        Span::raw("q or Ctrl-C: stop and report")
    };
    let mut first = vec![Span::raw(time), Span::raw("  |  "), Span::raw(load)];
    if !text.stage.is_empty() {
        first.push(Span::raw(format!("  |  {}", text.stage)));
    }
    let second = Line::from(vec![
        Span::raw(format!("window {} (- narrower, + wider)  |  ", format_duration(window.window()))),
        status,
        Span::raw(if text.sources.is_empty() { String::new() } else { format!("  |  {}", text.sources) }),
    ]);
    Paragraph::new(vec![Line::from(first), second])
        .block(Block::bordered().title(Span::styled(
            format!(" rpcbench {} ", text.title),
            Style::default().add_modifier(Modifier::BOLD),
        )))
        .render(area, buf);
}

fn draw_chart(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    let points = window.rates();
    let (good, bad) = if window.counts_notifications() {
        ("notifications/s", "gaps/s")
    } else {
        ("requests/s", "errors/s")
    };
    let requests: Vec<(f64, f64)> =
        points.iter().map(|point| (point.at_seconds, point.requests_per_second)).collect();
    let errors: Vec<(f64, f64)> =
        points.iter().map(|point| (point.at_seconds, point.errors_per_second)).collect();
    let end = window.latest().map_or(0.0, |sample| sample.at.as_secs_f64());
    let start = (end - window.window().as_secs_f64()).max(0.0);
    let top =
        points.iter().map(|point| point.requests_per_second.max(point.errors_per_second)).fold(1.0, f64::max)
            * 1.1;
    let datasets = vec![
        Dataset::default()
            .name(good)
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Green))
            .data(&requests),
        Dataset::default()
            .name(bad)
            .marker(Marker::Braille)
            .graph_type(GraphType::Line)
            .style(Style::default().fg(Color::Red))
            .data(&errors),
    ];
    let last = points.last();
    let title = format!(
        " {good} (green) {}  {bad} (red) {}, last {} ",
        last.map_or_else(|| "-".to_string(), |point| format!("{:.1}", point.requests_per_second)),
        last.map_or_else(|| "-".to_string(), |point| format!("{:.1}", point.errors_per_second)),
        format_duration(window.window())
    );
    Chart::new(datasets)
        .legend_position(None)
        .block(Block::bordered().title(title))
        .x_axis(
            Axis::default()
                .bounds([start, end.max(start + 1.0)])
                .labels(vec![format!("{start:.0}s"), format!("{end:.0}s")]),
        )
        .y_axis(Axis::default().bounds([0.0, top]).labels(vec!["0".to_string(), format!("{top:.0}")]))
        .render(area, buf);
}

fn latency_cells(quantiles: &LatencyQuantiles) -> [String; 5] {
    [
        seconds(quantiles.p50),
        seconds(quantiles.p90),
        seconds(quantiles.p99),
        seconds(quantiles.mean),
        quantiles.count.to_string(),
    ]
}

fn draw_latency(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    let recent = latency_cells(&window.window_latency());
    let run = latency_cells(&window.run_latency());
    let rows = ["p50", "p90", "p99", "mean", "count"]
        .iter()
        .enumerate()
        .map(|(index, name)| Row::new(vec![name.to_string(), recent[index].clone(), run[index].clone()]));
    Table::new(rows, [Constraint::Length(6), Constraint::Fill(1), Constraint::Fill(1)])
        .header(
            Row::new(vec![
                "".to_string(),
                format!("last {}", format_duration(window.window())),
                "whole run".to_string(),
            ])
            .style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::bordered().title(if window.counts_notifications() {
            " delivery lag "
        } else {
            " latency "
        }))
        .render(area, buf);
}

fn draw_outcomes(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    let rows = window.outcomes().into_iter().map(|row| {
        let name = match &row.code {
            Some(code) => format!("{} {code}", row.class),
            None => row.class.clone(),
        };
        let failed = row.class != "ok" && row.class != "received" && row.run > 0;
        let style = if failed { Style::default().fg(Color::Red) } else { Style::default() };
        Row::new(vec![name, row.window.to_string(), row.run.to_string()]).style(style)
    });
    Table::new(rows, [Constraint::Fill(2), Constraint::Fill(1), Constraint::Fill(1)])
        .header(
            Row::new(vec!["outcome", "window", "run"]).style(Style::default().add_modifier(Modifier::BOLD)),
        )
        .block(Block::bordered().title(" outcomes (class, code) "))
        .render(area, buf);
}

fn draw_methods(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    let rows = window.methods().into_iter().map(|row| {
        Row::new(vec![
            row.name,
            rate(row.requests_per_second),
            seconds(row.latency.p50),
            seconds(row.latency.p99),
            row.errors.to_string(),
        ])
    });
    Table::new(
        rows,
        [
            Constraint::Fill(3),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Fill(1),
        ],
    )
    .header(
        Row::new(vec!["method", "req/s", "p50", "p99", "errors"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(
        Block::bordered()
            .title(format!(" methods (last {}; errors: run) ", format_duration(window.window()))),
    )
    .render(area, buf);
}

/// Each target's head lag (`--heads`): its latest head, how far behind the highest head seen
/// it is now, its largest lag and its stale samples.
fn draw_heads(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    if area.height == 0 {
        return;
    }
    let rows = window.heads().iter().map(|row| {
        let style =
            if row.lag.unwrap_or(0) > 0 { Style::default().fg(Color::Yellow) } else { Style::default() };
        let or_dash = |value: Option<u64>| value.map_or_else(|| "-".to_string(), |value| value.to_string());
        Row::new(vec![
            row.name.clone(),
            or_dash(row.lag),
            row.lag_max.to_string(),
            row.stale.to_string(),
            or_dash(row.head),
        ])
        .style(style)
    });
    Table::new(
        rows,
        [
            Constraint::Fill(3),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Fill(1),
            Constraint::Fill(2),
        ],
    )
    .header(
        Row::new(vec!["target", "lag", "max", "stale", "head"])
            .style(Style::default().add_modifier(Modifier::BOLD)),
    )
    .block(Block::bordered().title(" head lag (blocks behind the highest) "))
    .render(area, buf);
}

/// The transactions of `rpcbench tx`: sent, accepted and rejected, included (and their rate
/// over the window), reverted when any, pending and dropped, reorged out when any.
fn draw_transactions(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    let Some((tx, included_per_second)) = window.transactions().filter(|_| area.height > 0) else { return };
    let mut lines = vec![
        Line::raw(format!("sent {}, accepted {}, rejected {}", tx.sent, tx.accepted, tx.rejected)),
        Line::raw(format!(
            "included {} ({}), pending {}, dropped {}",
            tx.included,
            rate(included_per_second),
            tx.pending,
            tx.dropped
        )),
    ];
    if let Some(line) = rare_transaction_line(&tx) {
        lines.push(Line::raw(line));
    }
    Paragraph::new(lines).block(Block::bordered().title(" transactions ")).render(area, buf);
}

/// The reverted and the reorged-out transactions, those of the two that are non-zero (most
/// runs have neither: no line).
fn rare_transaction_line(tx: &TransactionFigures) -> Option<String> {
    let parts: Vec<String> = [("reverted", tx.reverted), ("reorged out", tx.reorged_out)]
        .into_iter()
        .filter(|(_, n)| *n > 0)
        .map(|(name, n)| format!("{name} {n}"))
        .collect();
    (!parts.is_empty()).then(|| parts.join(", "))
}

fn draw_generator(window: &LiveWindow, area: Rect, buf: &mut Buffer) {
    let generator = window.generator();
    let mut lines = vec![
        Line::raw(format!(
            "CPU {} of {} core(s)",
            generator.cpu_cores.map_or_else(|| "-".to_string(), |cores| format!("{:.0}%", cores * 100.0)),
            generator.cores
        )),
        Line::raw(format!(
            "send lag p50 {} p99 {}",
            seconds(generator.send_lag.p50),
            seconds(generator.send_lag.p99)
        )),
        Line::raw(format!("sent late (>2ms) {}", generator.late)),
    ];
    match &generator.warning {
        Some(warning) => lines.push(Line::styled(warning.clone(), Style::default().fg(Color::Yellow))),
        None => lines.push(Line::raw("not the bottleneck")),
    }
    if let Some(subscription) = window.subscription() {
        lines.push(Line::raw(""));
        lines.push(Line::styled("subscriptions", Style::default().add_modifier(Modifier::BOLD)));
        lines.push(Line::raw(format!(
            "active {}, received {} ({})",
            subscription.active,
            subscription.notifications,
            rate(subscription.per_second)
        )));
        lines.push(Line::raw(format!(
            "gaps {}, duplicates {}, reorders {}",
            subscription.gaps, subscription.duplicates, subscription.reorders
        )));
        lines.push(Line::raw(format!(
            "lag p50 {} p99 {}",
            seconds(subscription.lag.p50),
            seconds(subscription.lag.p99)
        )));
    }
    Paragraph::new(lines)
        .wrap(ratatui::widgets::Wrap { trim: true })
        .block(Block::bordered().title(" generator "))
        .render(area, buf);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::live_view::LiveSample;
    use crate::metrics::{
        CallFigures, HeadLagFigures, Snapshot, SubscriptionFigures, TransactionFigures, FINE_BUCKET_BOUNDS_US,
    };
    use crate::outcome::Outcome;
    use ratatui::backend::TestBackend;
    use ratatui::Terminal;

    fn screen(terminal: &Terminal<TestBackend>) -> String {
        let buffer = terminal.backend().buffer();
        let width = buffer.area.width as usize;
        let cells: Vec<&str> = buffer.content.iter().map(|cell| cell.symbol()).collect();
        cells.chunks(width).map(|row| row.concat()).collect::<Vec<_>>().join("\n")
    }

    fn window_of_a_run() -> LiveWindow {
        let mut window = LiveWindow::new(2);
        let six_ms = FINE_BUCKET_BOUNDS_US.iter().position(|&bound| bound == 6_000).unwrap();
        for second in 0..=12u64 {
            let mut fine = vec![0; FINE_BUCKET_BOUNDS_US.len() + 1];
            fine[six_ms] = 100 * second;
            let mut figures =
                CallFigures { requests: 100 * second, fine_buckets: fine, ..CallFigures::default() };
            figures.errors.insert((Outcome::RpcError(-32601), Some("-32601".into())), second);
            let mut snapshot = Snapshot {
                achieved_rate: 100.0,
                target_rate: Some(100.0),
                running: true,
                ..Snapshot::default()
            };
            snapshot.methods.insert("eth_getBalance".into(), figures);
            window.push(LiveSample { at: Duration::from_secs(second), snapshot, cpu: None });
        }
        window
    }

    #[test]
    fn the_panels_show_the_live_figures() {
        let window = window_of_a_run();
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        let messages = vec!["rpcbench compare: round 1 of 2".to_string()];
        let text = DashboardText {
            title: "run http://127.0.0.1:9/",
            load: "open loop, 100/s",
            planned: Some(Duration::from_secs(30)),
            messages: &messages,
            ..DashboardText::default()
        };
        terminal.draw(|frame| draw_dashboard(&window, &text, frame.area(), frame.buffer_mut())).unwrap();
        let shown = screen(&terminal);
        for expected in [
            "elapsed 12s, remaining 18s",
            "open loop, 100/s",
            "requests/s (green) 100.0",
            "eth_getBalance",
            "rpc_error -32601",
            "p50",
            "whole run",
            "send lag",
            "round 1 of 2",
        ] {
            assert!(shown.contains(expected), "{expected:?} missing from\n{shown}");
        }
        // p50 of latencies between 5 and 6 ms.
        assert!(shown.contains("5.5ms") || shown.contains("5.50ms"), "{shown}");
    }

    #[test]
    fn a_small_terminal_gets_a_line_not_a_panic() {
        let window = window_of_a_run();
        for (width, height) in [(10, 3), (59, 40), (160, 19), (1, 1)] {
            let mut terminal = Terminal::new(TestBackend::new(width, height)).unwrap();
            terminal
                .draw(|frame| {
                    draw_dashboard(&window, &DashboardText::default(), frame.area(), frame.buffer_mut())
                })
                .unwrap();
        }
        let mut terminal = Terminal::new(TestBackend::new(80, 24)).unwrap();
        terminal
            .draw(|frame| {
                draw_dashboard(
                    &LiveWindow::new(1),
                    &DashboardText::default(),
                    frame.area(),
                    frame.buffer_mut(),
                )
            })
            .unwrap();
        assert!(screen(&terminal).contains("latency"));
    }

    #[test]
    fn the_head_lag_of_each_target_and_the_transactions_are_shown() {
        let mut window = window_of_a_run();
        let mut last = window.latest().unwrap().clone();
        last.at += Duration::from_secs(1);
        last.snapshot.heads = vec![
            HeadLagFigures {
                name: "fast".into(),
                head: Some(120),
                lag: Some(0),
                samples: 9,
                ..Default::default()
            },
            HeadLagFigures {
                name: "slow".into(),
                head: Some(117),
                lag: Some(3),
                lag_max: 7,
                stale: 2,
                samples: 9,
                ..Default::default()
            },
        ];
        last.snapshot.transactions = Some(TransactionFigures {
            sent: 40,
            accepted: 39,
            rejected: 1,
            included: 30,
            pending: 9,
            dropped: 0,
            ..TransactionFigures::default()
        });
        window.push(last);
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        terminal
            .draw(|frame| {
                draw_dashboard(&window, &DashboardText::default(), frame.area(), frame.buffer_mut())
            })
            .unwrap();
        let shown = screen(&terminal);
        assert!(shown.contains("head lag"), "{shown}");
        let slow = shown.lines().find(|line| line.contains("slow")).unwrap_or_default();
        let cells: Vec<&str> = slow.split(['│', ' ']).filter(|cell| !cell.is_empty()).collect();
        assert!(cells.windows(5).any(|w| w == ["slow", "3", "7", "2", "117"]), "{slow}");
        assert!(shown.contains("sent 40, accepted 39, rejected 1"), "{shown}");
        assert!(shown.contains("included 30"), "{shown}");
    }

    #[test]
    fn the_transactions_line_shows_reverted_and_reorged_out_only_when_there_are_any() {
        let shown = |figures: TransactionFigures| {
            let mut window = window_of_a_run();
            let mut last = window.latest().unwrap().clone();
            last.at += Duration::from_secs(1);
            last.snapshot.transactions = Some(figures);
            window.push(last);
            let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
            terminal
                .draw(|frame| {
                    draw_dashboard(&window, &DashboardText::default(), frame.area(), frame.buffer_mut())
                })
                .unwrap();
            screen(&terminal)
        };
        let figures =
            TransactionFigures { sent: 40, accepted: 40, included: 30, pending: 10, ..Default::default() };
        let quiet = shown(figures.clone());
        assert!(!quiet.contains("reverted") && !quiet.contains("reorged out"), "{quiet}");
        let busy = shown(TransactionFigures { reverted: 3, reorged_out: 2, ..figures });
        assert!(busy.contains("pending 10, dropped 0"), "{busy}");
        assert!(busy.contains("reverted 3, reorged out 2"), "{busy}");
    }

    #[test]
    fn a_subscription_shows_notifications_and_gaps() {
        let mut window = LiveWindow::new(1);
        for second in 0..=3u64 {
            let snapshot = Snapshot {
                subscription: Some(SubscriptionFigures {
                    notifications: 10 * second,
                    gaps: 2,
                    active: 4,
                    ..SubscriptionFigures::default()
                }),
                ..Snapshot::default()
            };
            window.push(LiveSample { at: Duration::from_secs(second), snapshot, cpu: None });
        }
        let mut terminal = Terminal::new(TestBackend::new(160, 48)).unwrap();
        terminal
            .draw(|frame| {
                draw_dashboard(&window, &DashboardText::default(), frame.area(), frame.buffer_mut())
            })
            .unwrap();
        let shown = screen(&terminal);
        assert!(shown.contains("notifications/s (green) 10.0"), "{shown}");
        assert!(shown.contains("active 4, received 30"), "{shown}");
        assert!(shown.contains("gaps 2"), "{shown}");
    }
}
