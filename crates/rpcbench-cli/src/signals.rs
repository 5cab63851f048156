//! Ctrl-C and SIGTERM, watched from the start of every command but `serve` (which shuts down
//! on its own): while a load runs, the first asks it to stop and report what completed;
//! outside a run (sampling a node's pools, reading and writing files in `report` and
//! `merge`) the first exits at once, saying so. A second one always exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use rpcbench::engine::StopHandle;

/// Exit status after an interrupt (128 + SIGINT).
const EXIT_INTERRUPTED: i32 = 130;

/// The run an interrupt stops, when one is going on.
static RUN: Mutex<Option<StopHandle>> = Mutex::new(None);
/// Whether the watcher thread runs.
static WATCHING: AtomicBool = AtomicBool::new(false);

/// Starts watching for interrupts (once per process).
pub fn watch() {
    if WATCHING.swap(true, Ordering::SeqCst) {
        return;
    }
    let started = std::thread::Builder::new().name("rpcbench-signals".into()).spawn(|| {
        let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
            return;
        };
        runtime.block_on(async {
            #[cfg(unix)]
            let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
            let mut seen = false;
            loop {
                #[cfg(unix)]
                let terminated = async {
                    match terminate.as_mut() {
                        Some(signal) => {
                            signal.recv().await;
                        }
                        None => std::future::pending().await,
                    }
                };
                #[cfg(not(unix))]
                let terminated = std::future::pending::<()>();
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = terminated => {}
                }
                let run = RUN.lock().unwrap_or_else(|poison| poison.into_inner()).clone();
                match (seen, run) {
                    (false, Some(stop)) => {
                        eprintln!(
                            "rpcbench: stopping; the report covers what completed (interrupt again to exit now)"
                        );
                        stop.stop();
                        seen = true;
                    }
                    (false, None) => {
                        eprintln!("rpcbench: interrupted");
                        std::process::exit(EXIT_INTERRUPTED);
                    }
                    (true, _) => {
                        eprintln!("rpcbench: interrupted again, exiting now");
                        std::process::exit(EXIT_INTERRUPTED);
                    }
                }
            }
        });
    });
    if started.is_err() {
        WATCHING.store(false, Ordering::SeqCst);
    }
}

/// From now on, an interrupt stops this run (and the runs that share its handle) instead of
/// exiting at once.
pub fn stop_on_interrupt(stop: StopHandle) {
    watch();
    *RUN.lock().unwrap_or_else(|poison| poison.into_inner()) = Some(stop);
}
