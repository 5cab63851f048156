//! Helper threads step aside for the pacer: the threads that work beside the engine on the
//! generator's core (signing ahead, watching heads, reading blocks and receipts) lower their
//! own scheduling class, so the kernel hands the core to the engine's thread the moment its
//! timer fires instead of when a helper's time slice ends. Under the ordinary policy a helper
//! becomes `SCHED_IDLE` (the kernel preempts an idle-class thread at once when a normal one
//! wakes, and gives it every cycle the core has free); under a real-time policy (the process
//! runs under `chrt`) it takes the priority one below its own. Both changes lower a thread and
//! need no privilege; where the OS has neither, the thread stays as it is (a debug log says so).
//! The change cannot be undone without privilege, and an idle-class thread gets no CPU while
//! other work keeps every core busy (a node on the same machine, other processes): a run on
//! such a machine keeps its helpers in the ordinary class ([`set_helper_threads`] with
//! [`HelperThreads::Ordinary`]: the command's `--helper-threads ordinary`).
//! The scheduling calls are `libc`'s, in three small `unsafe` blocks (reading the calling
//! thread's policy, the real-time priority range, setting the calling thread's policy), each
//! saying why it holds. With `transport/quiet_reads.rs`'s socket calls, the crate's only
//! `unsafe`.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicBool, Ordering};
use std::thread::JoinHandle;

/// How a process's helper threads are scheduled.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum HelperThreads {
    /// Below the pacer (the idle class, or one real-time priority below): the pacer's sends
    /// never wait for a helper on a machine whose spare cycles are the run's.
    #[default]
    StepAside,
    /// In the class they were started in, as every other thread: for a machine whose cores
    /// other work keeps busy, where an idle-class helper would get no CPU at all.
    Ordinary,
}

/// Whether helper threads started from now on stay in the ordinary class.
static HELPERS_ORDINARY: AtomicBool = AtomicBool::new(false);

/// Sets how the helper threads started from now on are scheduled (for the whole process).
pub fn set_helper_threads(helpers: HelperThreads) {
    HELPERS_ORDINARY.store(helpers == HelperThreads::Ordinary, Ordering::Relaxed);
}

/// How the helper threads started now are scheduled.
pub fn helper_threads() -> HelperThreads {
    if HELPERS_ORDINARY.load(Ordering::Relaxed) {
        HelperThreads::Ordinary
    } else {
        HelperThreads::StepAside
    }
}

/// What a helper thread's scheduling became.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum HelperClass {
    /// `SCHED_IDLE`: runs when the core has nothing else to run, preempted at once by a
    /// thread of the ordinary policy that wakes.
    Idle,
    /// A real-time thread one priority below the pacer's (the run is under `chrt`).
    RealTimeBelow {
        /// The helper's real-time priority now.
        priority: i32,
    },
    /// Left as it was.
    Unchanged(Unlowered),
    /// Left in its class on purpose: the process keeps its helpers ordinary
    /// ([`HelperThreads::Ordinary`]).
    Ordinary,
}

/// Why a helper thread was left at its scheduling class.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unlowered {
    /// This OS has no idle class (or no per-thread scheduling call).
    NotSupported,
    /// Already `SCHED_IDLE` (or a class of its own such as `SCHED_DEADLINE`).
    AlreadyLow,
    /// At the lowest real-time priority: one lower would leave real time.
    LowestRealTime,
    /// The kernel refused the change (the OS error number).
    Refused(i32),
}

/// Lowers the calling thread's scheduling class below the pacer's (see the module's note) and
/// says what it became, unless the process keeps its helpers ordinary. Never fails: what
/// cannot be lowered stays as it is.
pub fn step_aside_for_the_pacer() -> HelperClass {
    if helper_threads() == HelperThreads::Ordinary {
        return HelperClass::Ordinary;
    }
    let class = lower_calling_thread();
    if let HelperClass::Unchanged(why) = class {
        tracing::debug!(?why, thread = ?std::thread::current().name(), "helper thread left at its class");
    }
    class
}

/// Starts `work` on a thread named `name` that first steps aside for the pacer.
pub fn spawn_helper<T, F>(name: &str, work: F) -> io::Result<JoinHandle<T>>
where
    T: Send + 'static,
    F: FnOnce() -> T + Send + 'static,
{
    std::thread::Builder::new().name(name.into()).spawn(move || {
        step_aside_for_the_pacer();
        work()
    })
}

/// The calling thread's scheduling policy and real-time priority, where the OS says.
#[cfg(target_os = "linux")]
pub(crate) fn calling_thread_policy() -> Option<(i32, i32)> {
    // SAFETY: pid 0 is the calling thread; `param` is a plain struct the call fills.
    unsafe {
        let policy = libc::sched_getscheduler(0);
        let mut param = libc::sched_param { sched_priority: 0 };
        if policy < 0 || libc::sched_getparam(0, &mut param) != 0 {
            return None;
        }
        Some((policy, param.sched_priority))
    }
}

#[cfg(target_os = "linux")]
fn lower_calling_thread() -> HelperClass {
    let Some((policy, priority)) = calling_thread_policy() else {
        return HelperClass::Unchanged(Unlowered::NotSupported);
    };
    // SCHED_RESET_ON_FORK may be or-ed into what the kernel answers.
    let (target, class) = match policy & !libc::SCHED_RESET_ON_FORK {
        libc::SCHED_OTHER | libc::SCHED_BATCH => (libc::SCHED_IDLE, HelperClass::Idle),
        real_time @ (libc::SCHED_FIFO | libc::SCHED_RR) => {
            // SAFETY: a plain query of the policy's range.
            let lowest = unsafe { libc::sched_get_priority_min(real_time) };
            if priority <= lowest {
                return HelperClass::Unchanged(Unlowered::LowestRealTime);
            }
            (real_time, HelperClass::RealTimeBelow { priority: priority - 1 })
        }
        _ => return HelperClass::Unchanged(Unlowered::AlreadyLow),
    };
    let param = libc::sched_param {
        sched_priority: match class {
            HelperClass::RealTimeBelow { priority } => priority,
            _ => 0,
        },
    };
    // SAFETY: pid 0 is the calling thread (Linux schedules threads one by one); `param` lives
    // through the call.
    if unsafe { libc::sched_setscheduler(0, target, &param) } != 0 {
        let errno = io::Error::last_os_error().raw_os_error().unwrap_or(0);
        return HelperClass::Unchanged(Unlowered::Refused(errno));
    }
    class
}

#[cfg(not(target_os = "linux"))]
fn lower_calling_thread() -> HelperClass {
    HelperClass::Unchanged(Unlowered::NotSupported)
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;

    #[test]
    fn a_helper_thread_is_named_and_steps_aside_to_the_idle_class_unless_the_process_keeps_helpers_ordinary()
    {
        let before = calling_thread_policy().unwrap();
        let seen = spawn_helper("rpcbench-test-helper", || {
            (std::thread::current().name().map(String::from), calling_thread_policy().unwrap())
        })
        .unwrap()
        .join()
        .unwrap();
        assert_eq!(seen.0.as_deref(), Some("rpcbench-test-helper"));
        let (policy, priority) = seen.1;
        match before.0 & !libc::SCHED_RESET_ON_FORK {
            libc::SCHED_OTHER | libc::SCHED_BATCH => assert_eq!(policy, libc::SCHED_IDLE),
            libc::SCHED_FIFO | libc::SCHED_RR if before.1 > 1 => {
                assert_eq!((policy, priority), (before.0, before.1 - 1))
            }
            _ => assert_eq!((policy, priority), before),
        }
        assert_eq!(calling_thread_policy().unwrap(), before, "the spawning thread is untouched");
        // A process that keeps its helpers ordinary (a machine other work keeps busy): the
        // helper stays in its spawner's class. In this one test, as the setting is the
        // process's and the check above needs the default.
        set_helper_threads(HelperThreads::Ordinary);
        let ordinary =
            spawn_helper("rpcbench-test-helper", || (step_aside_for_the_pacer(), calling_thread_policy()))
                .unwrap()
                .join()
                .unwrap();
        set_helper_threads(HelperThreads::StepAside);
        assert_eq!(ordinary, (HelperClass::Ordinary, Some(before)));
        assert_eq!(helper_threads(), HelperThreads::StepAside);
    }

    #[test]
    fn a_thread_already_in_the_idle_class_is_left_as_it_is() {
        let second = std::thread::spawn(|| {
            let first = step_aside_for_the_pacer();
            (first, step_aside_for_the_pacer())
        })
        .join()
        .unwrap();
        if second.0 == HelperClass::Idle {
            assert_eq!(second.1, HelperClass::Unchanged(Unlowered::AlreadyLow));
        }
    }
}
