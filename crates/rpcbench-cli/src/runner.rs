//! Runs a validated plan as `run` and `replay` do: the progress bar, Ctrl-C, monitoring, live
//! metrics, the head monitor, thresholds, the report, `--save` and `--via-proxy`.

use std::io::IsTerminal;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime};

use crate::fields::ConfigError;
use rpcbench::engine::config::{Length, Load, RunConfig, Target};
use rpcbench::engine::{EngineError, Progress, Run};
use rpcbench::field::{Field, SettingError};
use rpcbench::monitor::Monitor;
use rpcbench::overhead::OverheadReport;
use rpcbench::proxy::{Proxy, ProxyOptions};
use rpcbench::report::{render_text, RunReport};
use rpcbench::results::{ResultsFile, SavedRun};
use rpcbench::scenario::ScenarioDraft;

use crate::args::{OutputFormat, RunArgs};
use crate::output;
use crate::plan::RunPlan;

/// Runs a validated plan as `run` does (`replay` builds its own plan and runs it here): the
/// progress bar, Ctrl-C, monitoring, live metrics, thresholds, the report and `--save`.
pub fn run_plan(args: &RunArgs, mut plan: RunPlan) -> ExitCode {
    if plan.targets.len() > 1 {
        return crate::run_targets::run(args, plan);
    }
    for (flag, path) in [("--save", &args.save), ("--output", &args.output)] {
        if let Some(Err(err)) = path.as_deref().map(|path| output::check_file_path(flag, path)) {
            return output::usage_error(err);
        }
    }
    let (_, mut config) = plan.targets.swap_remove(0);
    let thresholds = plan.thresholds;
    let monitor_pids = match args.monitor.resolve() {
        Ok(pids) => pids,
        Err(err) => return output::usage_error(err),
    };
    // Serves until the command ends.
    let dashboard_wanted = crate::live_dashboard::wanted(args.quiet, args.metrics.no_tui);
    let (_metrics_server, live) =
        match crate::live_dashboard::attach_store(&args.metrics, &mut config, dashboard_wanted) {
            Ok(both) => both,
            Err(err) => return output::usage_error(err),
        };
    let dashboard_live = live.clone().filter(|_| dashboard_wanted);
    let run = match Run::new(config.clone()) {
        Ok(run) => run,
        Err(EngineError::Config(err)) => return output::usage_error(ConfigError::from(err)),
        // Names --connections or --max-connections (or the scenario's key where it was set)
        // and the open-file limit.
        Err(EngineError::TooManyConnections(err)) => {
            let flag_given = match err.field {
                Field::Connections => args.load.connections.is_some(),
                _ => args.load.max_connections.is_some(),
            };
            let located = (!flag_given && crate::plan::is_scenario(&args.target))
                .then(|| ScenarioDraft::load(std::path::Path::new(&args.target)).ok())
                .flatten()
                .and_then(|draft| draft.locate(&SettingError::new(err.field, err.message())));
            return match located {
                Some(located) => output::usage_error(crate::plan::scenario_error(located)),
                None => output::usage_error(ConfigError::from(err)),
            };
        }
        Err(err) => return output::failure(err),
    };
    if args.via_proxy {
        return via_proxy(args, config, run, live, dashboard_wanted);
    }
    crate::signals::stop_on_interrupt(run.stop_handle());
    let header = crate::live_dashboard::DashboardHeader::of_run("run", &config);
    let dashboard = dashboard_live.and_then(|live| {
        crate::live_dashboard::LiveDashboard::start(header, vec![(String::new(), live)], run.stop_handle())
    });
    let show_progress = dashboard.is_none() && !args.quiet && std::io::stderr().is_terminal();
    let finished = Arc::new(AtomicBool::new(false));
    let progress_thread =
        show_progress.then(|| spawn_progress(run.progress(), config.length, config.warmup, finished.clone()));
    let started = SystemTime::now();
    let monitor = (!monitor_pids.is_empty()).then(|| Monitor::start(&monitor_pids));
    let heads =
        match args.heads.start(args.heads.heads, &[(config.target.redacted(), &config)], live.as_slice()) {
            Ok(heads) => heads,
            Err(err) => return output::usage_error(err),
        };
    let result = run.execute();
    if let Some(dashboard) = dashboard {
        dashboard.finish();
    }
    let target_resources = monitor.map(Monitor::stop);
    let heads = heads.map(rpcbench::heads::HeadMonitor::stop);
    finished.store(true, Ordering::SeqCst);
    if let Some(thread) = progress_thread {
        thread.join().ok();
    }
    let record = match result {
        Ok(record) => record,
        Err(err) => return output::failure(err),
    };
    let mut report = RunReport::new(&config, &record);
    // Why connections failed, one example per kind, before the report (a failed run says
    // nothing else about it), with what to try.
    for line in record.connect_causes.describe().lines() {
        eprintln!("rpcbench: {line}");
    }
    report.thresholds = thresholds.iter().map(|threshold| threshold.evaluate(&report)).collect();
    let breached = report.thresholds.iter().any(|result| !result.passed);
    report.target_resources.clone_from(&target_resources);
    report.heads.clone_from(&heads);
    // The results file: what --save writes and what the Markdown report is drawn from, so both
    // hold the same thresholds, target resources and heads as the text and JSON reports.
    let results_file = || {
        let mut file = ResultsFile::from_run(&config, &record, started);
        file.target_resources.clone_from(&target_resources);
        file.heads.clone_from(&heads);
        file.thresholds.clone_from(&report.thresholds);
        file
    };
    let text = match args.format {
        OutputFormat::Text => render_text(&report),
        OutputFormat::Json => report.to_json() + "\n",
        OutputFormat::Markdown => match SavedRun::new(results_file(), "run") {
            Ok(run) => rpcbench::report::render_markdown(&[run]),
            Err(err) => return output::failure(format!("cannot render Markdown: {err}")),
        },
    };
    // Saved before printing, so that a closed pipe or a second Ctrl-C loses nothing.
    let saved = args.save.as_ref().map(|path| {
        let file = results_file();
        file.save(path)
    });
    let status = output::emit(&text, args.output.as_deref(), args.quiet);
    let status = match (saved, &args.save) {
        (Some(Err(err)), _) => return output::failure(format!("cannot save the results: {err}")),
        (Some(Ok(())), Some(path)) if !args.quiet => {
            eprintln!("rpcbench: results saved to {}", path.display());
            status
        }
        _ => status,
    };
    if breached {
        return ExitCode::from(output::EXIT_FAILURE);
    }
    if report.requests.responded == 0 && report.requests.total == 0 && shard_has_nothing_to_do(&config) {
        // A shard whose share is nothing (-n 1 over 2 shards) did its part: its pod succeeds.
        if !args.quiet {
            eprintln!(
                "rpcbench: note: shard {}/{} has no share of this run's requests or connections: nothing to do",
                config.shard.index + 1,
                config.shard.count
            );
        }
        return status;
    }
    if report.requests.responded == 0 {
        // A dead target is not a run: the report says so first, and the exit status too.
        if !args.quiet {
            eprintln!("rpcbench: no request got a response from the target");
        }
        return ExitCode::from(output::EXIT_FAILURE);
    }
    status
}

/// Whether this shard's share of the run is nothing: of its request count, or of a closed
/// loop's connections.
fn shard_has_nothing_to_do(config: &RunConfig) -> bool {
    let shard = config.shard;
    let no_requests = config.length.requests.is_some_and(|n| shard.share(n) == 0);
    let no_connections =
        matches!(config.load, Load::Closed { connections } if shard.share(connections as u64) == 0);
    shard.count > 1 && (no_requests || no_connections)
}

/// `run --via-proxy`: the run as configured, then the same through an in-process proxy in
/// front of the target, and the overhead table of the two.
fn via_proxy(
    args: &RunArgs,
    config: RunConfig,
    direct: Run,
    live: Option<rpcbench::metrics::LiveMetrics>,
    dashboard_wanted: bool,
) -> ExitCode {
    let mut options = ProxyOptions::new(([127, 0, 0, 1], 0).into(), config.target.clone());
    options.tls = config.tls.clone();
    options.connect_timeout = config.connect_timeout;
    options.upstream_timeout = config.timeout;
    options.max_body_bytes = usize::try_from(config.max_body).unwrap_or(usize::MAX);
    options.upstream_connections = match config.load {
        Load::Closed { connections } => connections.max(1),
        _ => options.upstream_connections,
    };
    let proxy = match Proxy::start(options) {
        Ok(proxy) => proxy,
        Err(err) => return output::failure(format!("--via-proxy: {err}")),
    };
    let mut proxied_config = config.clone();
    proxied_config.target = match Target::parse(&proxy.url()) {
        Ok(target) => target,
        Err(err) => return output::failure(format!("--via-proxy: {err}")),
    };
    // On a terminal, each run its own store (the dashboard's rows, the endpoint's too), and
    // one stop for both (q on the dashboard): the direct run is made again for them.
    let stop = rpcbench::engine::StopHandle::new();
    let mut sources = Vec::new();
    let (mut direct, mut config) = (direct, config);
    if dashboard_wanted {
        let endpoint = live.filter(|_| args.metrics.listen.is_some());
        sources
            .push(("direct".to_string(), crate::live_dashboard::own_store(&mut config, endpoint.as_ref())));
        sources.push((
            "through the proxy".to_string(),
            crate::live_dashboard::own_store(&mut proxied_config, endpoint.as_ref()),
        ));
        direct = match Run::with_stop(config.clone(), stop.clone()) {
            Ok(run) => run,
            Err(err) => return output::failure(err),
        };
    }
    let proxied = match dashboard_wanted {
        true => Run::with_stop(proxied_config.clone(), stop.clone()),
        false => Run::new(proxied_config.clone()),
    };
    let proxied = match proxied {
        Ok(run) => run,
        Err(err) => return output::failure(format!("--via-proxy: {err}")),
    };
    let dashboard = (!sources.is_empty())
        .then(|| {
            let mut header = crate::live_dashboard::DashboardHeader::of_run("run --via-proxy", &config);
            header.planned = None;
            crate::live_dashboard::LiveDashboard::start(header, sources, stop.clone())
        })
        .flatten();
    let mut reports = Vec::with_capacity(2);
    for (label, run, config) in [("direct", direct, &config), ("through the proxy", proxied, &proxied_config)]
    {
        crate::signals::stop_on_interrupt(run.stop_handle());
        if !args.quiet {
            eprintln!("rpcbench: running {label}");
        }
        match run.execute() {
            Ok(record) => reports.push(RunReport::new(config, &record)),
            Err(err) => return output::failure(err),
        }
    }
    drop(dashboard);
    let stats = proxy.stop();
    let table = OverheadReport::new(&reports[0], &reports[1], &stats);
    let text = match args.format {
        OutputFormat::Text => table.render_text(),
        OutputFormat::Json => table.to_json() + "\n",
        OutputFormat::Markdown => table.render_markdown(),
    };
    let status = output::emit(&text, args.output.as_deref(), args.quiet);
    if reports.iter().any(|report| report.requests.responded == 0) {
        if !args.quiet {
            eprintln!("rpcbench: no request got a response from the target");
        }
        return ExitCode::from(output::EXIT_FAILURE);
    }
    status
}

fn spawn_progress(
    progress: Progress,
    length: Length,
    warmup: Duration,
    finished: Arc<AtomicBool>,
) -> std::thread::JoinHandle<()> {
    std::thread::spawn(move || {
        let total_ms = length.duration.map(|d| (d + warmup).as_millis() as u64);
        let bar = match (total_ms, length.requests) {
            (Some(ms), _) => indicatif::ProgressBar::new(ms),
            (None, Some(n)) => indicatif::ProgressBar::new(n),
            (None, None) => indicatif::ProgressBar::new_spinner(),
        };
        let style = indicatif::ProgressStyle::with_template("{bar:40} {elapsed_precise} {msg}")
            .unwrap_or_else(|_| indicatif::ProgressStyle::default_bar());
        bar.set_style(style);
        let start = Instant::now();
        while !finished.load(Ordering::SeqCst) {
            let (done, errors) = progress.totals();
            match total_ms {
                Some(_) => bar.set_position(start.elapsed().as_millis() as u64),
                None => bar.set_position(done),
            }
            let rate = done as f64 / start.elapsed().as_secs_f64().max(0.001);
            bar.set_message(format!("{done} responses, {errors} errors, {rate:.0}/s"));
            std::thread::sleep(Duration::from_millis(200));
        }
        bar.finish_and_clear();
    })
}
