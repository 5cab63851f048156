//! Ctrl-C and SIGTERM: the first asks the run to stop and report what completed; a second one
//! exits at once.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use rpcbench::engine::StopHandle;

/// Exit status after a second interrupt (128 + SIGINT).
const EXIT_INTERRUPTED: i32 = 130;

/// Watches for interrupts on a background thread for as long as the process lives.
pub fn stop_on_interrupt(stop: StopHandle) {
    let seen = Arc::new(AtomicBool::new(false));
    std::thread::Builder::new()
        .name("rpcbench-signals".into())
        .spawn(move || {
            let Ok(runtime) = tokio::runtime::Builder::new_current_thread().enable_all().build() else {
                return;
            };
            runtime.block_on(async move {
                #[cfg(unix)]
                let mut terminate =
                    tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()).ok();
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
                    if seen.swap(true, Ordering::SeqCst) {
                        eprintln!("rpcbench: interrupted again, exiting now");
                        std::process::exit(EXIT_INTERRUPTED);
                    }
                    eprintln!(
                        "rpcbench: stopping; the report covers what completed (interrupt again to exit now)"
                    );
                    stop.stop();
                }
            });
        })
        .ok();
}
