//! The generator's own resource use, so that a report can tell when the tool, not the target,
//! was the limit: the CPU time of each worker thread (from `/proc/thread-self/stat`, read by
//! the worker itself when it ends) against the wall time it ran, and the peak resident memory
//! of the process (`VmHWM` in `/proc/self/status`). Linux only; elsewhere the figures are
//! absent and nothing is warned about.
//!
//! Worker threads are measured rather than the whole process so that a mock node running in
//! the same process (the demo, tests) does not count as the generator's work.

use std::time::{Duration, Instant};

/// What the worker threads of a run used. Adds up over workers with [`ThreadUsage::merge`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ThreadUsage {
    /// Worker threads measured.
    pub threads: u64,
    /// User and system CPU time of those threads; `None` when it could not be read.
    pub cpu: Option<Duration>,
    /// Wall time the threads ran, added up.
    pub wall: Duration,
}

impl ThreadUsage {
    /// Adds another worker's usage into this one. The CPU time stays known only if it is known
    /// for every worker.
    pub fn merge(&mut self, other: &ThreadUsage) {
        self.cpu = match (self.threads, self.cpu, other.cpu) {
            (0, _, theirs) => theirs,
            (_, Some(ours), Some(theirs)) => Some(ours + theirs),
            _ => None,
        };
        self.threads += other.threads;
        self.wall += other.wall;
    }

    /// CPU time as a percentage of what the threads could have used (100 = every thread busy
    /// all the time). Clock ticks are 10 ms, so short runs round up; capped at 100.
    pub fn cpu_percent(&self) -> Option<f64> {
        let cpu = self.cpu?;
        let wall = self.wall.as_secs_f64();
        if wall <= 0.0 {
            return None;
        }
        Some((cpu.as_secs_f64() / wall * 100.0).min(100.0))
    }
}

/// Measures the calling thread from its creation until [`ThreadMeter::finish`], called on the
/// same thread.
#[derive(Debug)]
pub(crate) struct ThreadMeter {
    started: Instant,
    cpu_at_start: Option<Duration>,
}

impl ThreadMeter {
    /// Starts measuring the calling thread.
    pub(crate) fn start() -> Self {
        Self { started: Instant::now(), cpu_at_start: thread_cpu_time() }
    }

    /// What the calling thread used since [`ThreadMeter::start`].
    pub(crate) fn finish(self) -> ThreadUsage {
        let cpu = match (self.cpu_at_start, thread_cpu_time()) {
            (Some(start), Some(end)) => Some(end.saturating_sub(start)),
            _ => None,
        };
        ThreadUsage { threads: 1, cpu, wall: self.started.elapsed() }
    }
}

/// User plus system CPU time of the calling thread.
pub(crate) fn thread_cpu_time() -> Option<Duration> {
    read_cpu_time("/proc/thread-self/stat")
}

/// User plus system CPU time of the whole process, exited threads included.
pub fn process_cpu_time() -> Option<Duration> {
    read_cpu_time("/proc/self/stat")
}

fn read_cpu_time(path: &str) -> Option<Duration> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let text = std::fs::read_to_string(path).ok()?;
    let ticks = parse_stat_cpu_ticks(&text)?;
    let per_second = clock_ticks_per_second();
    Some(
        Duration::from_secs(ticks / per_second)
            + Duration::from_nanos((ticks % per_second) * 1_000_000_000 / per_second),
    )
}

/// `utime + stime` (fields 14 and 15) of a `/proc/…/stat` line, in clock ticks. The command
/// name (field 2) is in parentheses and may itself hold spaces and parentheses, so fields are
/// counted from the last `)`.
pub(crate) fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_ascii_whitespace();
    // Field 3 (state) is the first after the name; utime is field 14.
    let utime: u64 = fields.nth(11)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `USER_HZ`: the unit of the CPU times in `/proc`. Read from the auxiliary vector
/// (`AT_CLKTCK`); 100, its value on every mainstream Linux, when that cannot be read.
pub(crate) fn clock_ticks_per_second() -> u64 {
    static TICKS: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *TICKS.get_or_init(|| {
        std::fs::read("/proc/self/auxv").ok().and_then(|auxv| auxv_value(&auxv, AT_CLKTCK)).unwrap_or(100)
    })
}

/// The auxiliary vector's entry type for the clock tick rate.
const AT_CLKTCK: u64 = 17;

/// Looks a type up in a raw auxiliary vector of native-endian word pairs.
fn auxv_value(auxv: &[u8], wanted: u64) -> Option<u64> {
    let word = std::mem::size_of::<usize>();
    let read = |bytes: &[u8]| -> u64 {
        let mut value: u64 = 0;
        for (index, byte) in bytes.iter().enumerate() {
            let shift = if cfg!(target_endian = "little") { index } else { word - 1 - index };
            value |= u64::from(*byte) << (8 * shift);
        }
        value
    };
    auxv.chunks_exact(2 * word).map(|pair| (read(&pair[..word]), read(&pair[word..]))).find_map(
        |(kind, value)| match kind {
            0 => Some(None),
            kind if kind == wanted => Some(Some(value).filter(|v| *v > 0)),
            _ => None,
        },
    )?
}

/// The peak resident set size of the process (`VmHWM`), bytes.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:")
}

/// The current resident set size of the process (`VmRSS`), bytes.
#[cfg(test)]
fn rss_bytes() -> Option<u64> {
    status_kib("VmRSS:")
}

fn status_kib(field: &str) -> Option<u64> {
    if !cfg!(target_os = "linux") {
        return None;
    }
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status_kib(&status, field)
}

/// A `Name:   123 kB` line of `/proc/self/status`, in bytes.
pub(crate) fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with(field))?;
    let kib: u64 = line[field.len()..].trim().trim_end_matches("kB").trim().parse().ok()?;
    Some(kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stat_lines_with_odd_command_names_parse() {
        let line = "4242 (a) b (c)) S 1 4242 4242 0 -1 4194560 100 0 0 0 250 75 0 0 20 0 3 0 1 2 3";
        assert_eq!(parse_stat_cpu_ticks(line), Some(325));
        assert_eq!(parse_stat_cpu_ticks("garbage"), None);
        assert_eq!(parse_stat_cpu_ticks("1 (x) S 1 2"), None);
    }

    #[test]
    fn status_fields_are_read_in_bytes() {
        let status = "Name:\trpcbench\nVmPeak:\t  9000 kB\nVmHWM:\t    1234 kB\nVmRSS:\t  1000 kB\n";
        assert_eq!(parse_status_kib(status, "VmHWM:"), Some(1234 * 1024));
        assert_eq!(parse_status_kib(status, "VmRSS:"), Some(1000 * 1024));
        assert_eq!(parse_status_kib(status, "VmSwap:"), None);
    }

    #[test]
    fn auxv_lookup_stops_at_the_end_marker() {
        let word = std::mem::size_of::<usize>();
        let mut auxv = Vec::new();
        for (kind, value) in [(6usize, 4096usize), (17, 100), (0, 0), (17, 250)] {
            auxv.extend_from_slice(&kind.to_ne_bytes());
            auxv.extend_from_slice(&value.to_ne_bytes());
        }
        assert_eq!(auxv_value(&auxv, 17), Some(100));
        assert_eq!(auxv_value(&auxv, 6), Some(4096));
        assert_eq!(auxv_value(&auxv[2 * word..], 99), None);
    }

    #[test]
    fn usage_merges_and_reports_a_percentage() {
        let mut total = ThreadUsage::default();
        total.merge(&ThreadUsage {
            threads: 1,
            cpu: Some(Duration::from_millis(900)),
            wall: Duration::from_secs(1),
        });
        total.merge(&ThreadUsage {
            threads: 1,
            cpu: Some(Duration::from_millis(500)),
            wall: Duration::from_secs(1),
        });
        assert_eq!(total.threads, 2);
        assert_eq!(total.cpu, Some(Duration::from_millis(1400)));
        assert!((total.cpu_percent().unwrap() - 70.0).abs() < 1e-9);
        total.merge(&ThreadUsage { threads: 1, cpu: None, wall: Duration::from_secs(1) });
        assert_eq!(total.cpu, None);
        assert_eq!(total.cpu_percent(), None);
    }

    #[test]
    fn this_process_can_be_measured_on_linux() {
        if cfg!(target_os = "linux") {
            assert!(clock_ticks_per_second() > 0);
            let meter = ThreadMeter::start();
            let before = thread_cpu_time().unwrap();
            let spin = Instant::now();
            let mut x = 0u64;
            // Spin until the thread has used 30 ms of CPU (however busy the machine is).
            while thread_cpu_time().unwrap() < before + Duration::from_millis(30)
                && spin.elapsed() < Duration::from_secs(10)
            {
                x = x.wrapping_add(std::hint::black_box(1));
            }
            assert!(x > 0);
            let usage = meter.finish();
            assert!(usage.cpu.unwrap() >= Duration::from_millis(30), "{usage:?}");
            assert!(usage.wall >= usage.cpu.unwrap() / 2, "{usage:?}");
            assert!(process_cpu_time().unwrap() >= usage.cpu.unwrap());
            assert!(peak_rss_bytes().unwrap() >= rss_bytes().unwrap() / 2);
        } else {
            assert_eq!(peak_rss_bytes(), None);
        }
    }
}
