//! `rpcbench run scenario.toml` when the scenario lists several `[[targets]]`: the same load
//! and parameter sequence against each target in turn, a cool-down between, then every
//! target's report followed by the comparison table with ratios against the first. Thresholds
//! hold for each target; a breach by any of them exits 1.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use rpcbench::compare::{comparison_json, render_comparison_text, run_comparison, CompareTarget};
use rpcbench::engine::StopHandle;
use rpcbench::format_duration;
use rpcbench::report::render_text;
use rpcbench::results::SavedRun;

use crate::args::{OutputFormat, RunArgs};
use crate::output;
use crate::plan::RunPlan;

/// Where `--save PATH` puts one target's results: `PATH` with the target's name before the
/// extension (`out.json` becomes `out.fast.json`).
pub fn save_path(path: &Path, name: &str) -> PathBuf {
    let clean: String =
        name.chars().map(|c| if c.is_ascii_alphanumeric() || "-_".contains(c) { c } else { '_' }).collect();
    let stem = path.file_stem().map(|stem| stem.to_string_lossy().into_owned()).unwrap_or_default();
    let file = match path.extension() {
        Some(extension) => format!("{stem}.{clean}.{}", extension.to_string_lossy()),
        None => format!("{stem}.{clean}"),
    };
    path.with_file_name(file)
}

pub fn run(args: &RunArgs, plan: RunPlan) -> ExitCode {
    if let Some(path) = &args.save {
        for (name, _) in &plan.targets {
            if let Err(err) = crate::output::check_file_path("--save", &save_path(path, name)) {
                return output::usage_error(err);
            }
        }
    }
    if let Some(Err(err)) =
        args.output.as_deref().map(|path| crate::output::check_file_path("--output", path))
    {
        return output::usage_error(err);
    }
    // Each target's processes, sampled during its own run: NAME=PID and NAME=COMM.
    let names: Vec<&str> = plan.targets.iter().map(|(name, _)| name.as_str()).collect();
    let mut monitors = match args.monitor.per_target(&names) {
        Ok(monitors) => monitors.into_iter(),
        Err(err) => return output::usage_error(err),
    };
    // One endpoint for the whole sequence: the counters add up over the targets' runs.
    let (_metrics_server, live) = match args.metrics.start() {
        Ok(Some((server, live))) => (Some(server), Some(live)),
        Ok(None) => (None, None),
        Err(err) => return output::usage_error(err),
    };
    let stop = StopHandle::new();
    crate::signals::stop_on_interrupt(stop.clone());
    // On a terminal, each target its own store (the dashboard's rows), the endpoint's too.
    let dashboard_wanted = crate::live_dashboard::wanted(args.quiet, args.metrics.no_tui);
    let mut sources = Vec::new();
    let targets: Vec<CompareTarget> = plan
        .targets
        .into_iter()
        .map(|(name, mut config)| {
            if dashboard_wanted {
                sources.push((name.clone(), crate::live_dashboard::own_store(&mut config, live.as_ref())));
            } else if let Some(live) = &live {
                config.publish_to(live.clone());
            }
            CompareTarget { name, config, monitor_pids: monitors.next().unwrap_or_default() }
        })
        .collect();
    let quiet = args.quiet;
    if !quiet {
        eprintln!(
            "rpcbench: {} against {} targets in turn, {} cool-down",
            targets[0].config.workload.label(),
            targets.len(),
            format_duration(plan.cooldown)
        );
    }
    // With --heads: every target's head followed through the whole sequence, as in compare.
    let heads_targets: Vec<(String, &rpcbench::engine::config::RunConfig)> =
        targets.iter().map(|t| (t.name.clone(), &t.config)).collect();
    let stores: Vec<_> = sources.iter().map(|(_, store)| store.clone()).chain(live.clone()).collect();
    let heads = match args.heads.start(args.heads.heads, &heads_targets, &stores) {
        Ok(heads) => heads,
        Err(err) => return output::usage_error(err),
    };
    let dashboard = (!sources.is_empty())
        .then(|| {
            let mut header = crate::live_dashboard::DashboardHeader::of_run("run", &targets[0].config);
            let names: Vec<&str> = targets.iter().map(|target| target.name.as_str()).collect();
            (header.title, header.planned) = (format!("run {}", names.join(", ")), None);
            crate::live_dashboard::LiveDashboard::start(header, sources, stop.clone())
        })
        .flatten();
    let result = run_comparison(
        &targets,
        plan.cooldown,
        &stop,
        crate::comparison_output::progress_printer(&targets, quiet),
    );
    drop(dashboard);
    let heads = heads.map(rpcbench::heads::HeadMonitor::stop);
    let mut runs: Vec<SavedRun> = match result {
        Ok(runs) => runs,
        Err(err) => return crate::comparison_output::comparison_failure(err, quiet),
    };
    // Each run keeps its own row of the heads (its lags against every target's heads), found by
    // name, as a run skipped by a stop has none.
    if let Some(heads) = &heads {
        for row in heads.split() {
            if let Some(run) =
                runs.iter_mut().find(|run| Some(&run.label) == row.targets.first().map(|t| &t.name))
            {
                run.report.heads = Some(row.clone());
                run.file.heads = Some(row);
            }
        }
    }
    crate::comparison_output::say_what_was_not_run(&targets, &runs, &stop);
    if runs.is_empty() {
        return output::failure("interrupted before the first run finished");
    }
    let mut breached = false;
    for run in &mut runs {
        run.report.thresholds =
            plan.thresholds.iter().map(|threshold| threshold.evaluate(&run.report)).collect();
        run.file.thresholds.clone_from(&run.report.thresholds);
        breached |= run.report.thresholds.iter().any(|result| !result.passed);
        // A target that never answered fails the run like a breach.
        breached |= run.report.requests.responded == 0;
    }
    // Saved before printing, so that a closed pipe or a second Ctrl-C loses nothing; a file
    // that cannot be written loses neither the others nor the reports, which still print.
    let mut save_failed = false;
    if let Some(path) = &args.save {
        for run in &runs {
            let path = save_path(path, &run.label);
            match run.file.save(&path) {
                Err(err) => {
                    eprintln!(
                        "rpcbench: cannot save the results of '{}' to {}: {err}",
                        run.label,
                        path.display()
                    );
                    save_failed = true;
                }
                Ok(()) if !quiet => {
                    eprintln!("rpcbench: results of '{}' saved to {}", run.label, path.display());
                }
                Ok(()) => {}
            }
        }
    }
    let text = match args.format {
        OutputFormat::Text => {
            let mut text = String::new();
            for run in &runs {
                text.push_str(&format!("== {} ==\n", run.label));
                text.push_str(&render_text(&run.report));
                text.push('\n');
            }
            text + &render_comparison_text(&runs)
        }
        OutputFormat::Json => comparison_json(&runs) + "\n",
        OutputFormat::Markdown => rpcbench::report::render_markdown(&runs),
    };
    let status = crate::output::emit(&text, args.output.as_deref(), quiet);
    if breached || save_failed {
        return ExitCode::from(output::EXIT_FAILURE);
    }
    status
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_target_saves_beside_the_named_file() {
        assert_eq!(save_path(Path::new("out/run.json"), "fast"), Path::new("out/run.fast.json"));
        assert_eq!(save_path(Path::new("run"), "127.0.0.1:8899"), Path::new("run.127_0_0_1_8899"));
        assert_eq!(save_path(Path::new("a.json"), "x/../y"), Path::new("a.x____y.json"));
    }
}
