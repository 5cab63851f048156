//! Helper threads step aside for the pacer: the threads that work beside the engine on the
//! generator's core (signing ahead, watching heads, reading blocks and receipts) lower their
//! own scheduling class, so the kernel hands the core to the engine's thread the moment its
//! timer fires instead of when a helper's time slice ends. Under the ordinary policy a helper
//! becomes `SCHED_IDLE` (the kernel preempts an idle-class thread at once when a normal one
//! wakes, and gives it every cycle the core has free); under a real-time policy (the process
//! runs under `chrt`) it takes the priority one below its own. Both changes lower a thread and
//! need no privilege; where the OS has neither, the thread stays as it is (a debug log says so).
//! The scheduling calls are `libc`'s, in three small `unsafe` blocks (reading the calling
//! thread's policy, the real-time priority range, setting the calling thread's policy), each
//! saying why it holds. With `transport/quiet_reads.rs`'s socket calls, the crate's only
//! `unsafe`.
#![allow(unsafe_code)]

use std::io;
use std::thread::JoinHandle;

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
/// says what it became. Never fails: what cannot be lowered stays as it is.
pub fn step_aside_for_the_pacer() -> HelperClass {
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
    fn a_helper_thread_is_named_and_steps_aside_to_the_idle_class_while_its_spawner_keeps_its_own() {
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
