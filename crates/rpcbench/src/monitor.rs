//! Resources of the target process: while a run (or a capacity step) goes on, a [`Monitor`]
//! thread samples one or more processes from `/proc` every [`SAMPLE_INTERVAL`] and sums them
//! up in a [`ResourceReport`] when stopped:
//!
//! - CPU: `utime + stime` of `/proc/PID/stat`, as a percentage of one core (a process using two
//!   cores fully shows 200%); the average over the whole monitored time and the peak of one
//!   sampling interval.
//! - Memory: `VmRSS` of `/proc/PID/status`, average and peak of the samples.
//! - Disk: `read_bytes` and `write_bytes` of `/proc/PID/io` (bytes that went to or came from
//!   the storage layer) over the monitored time; `None` when the file cannot be read (another
//!   user's process, or a kernel without task I/O accounting).
//! - TCP connections: sockets among the process's file descriptors (`/proc/PID/fd`) that are
//!   ESTABLISHED in the process's own `/proc/PID/net/tcp` and `tcp6` tables, matched by inode
//!   (listening sockets, TIME_WAIT and the load generator's own connections do not count);
//!   `None` when the descriptors cannot be listed.
//!
//! Figures of several processes add up sample by sample. The parsers are pure functions of the
//! file text, tested on captured samples. Off Linux there is no `/proc` and nothing is sampled.

use std::collections::{BTreeMap, HashSet};
use std::fmt::Write;
use std::path::Path;
use std::sync::mpsc;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};

use crate::util::units::format_micros;

/// Time between two samples.
pub const SAMPLE_INTERVAL: Duration = Duration::from_millis(250);

/// `comm` names are cut to this many bytes by the kernel.
const COMM_LEN: usize = 15;

/// What the monitor measured of the target process(es).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ResourceReport {
    /// The processes sampled.
    pub pids: Vec<u32>,
    /// Their names (`/proc/PID/comm`) when first seen, in the order of `pids`.
    pub names: Vec<String>,
    /// Sample points taken (one at the start, one every interval, one at the stop).
    pub samples: u64,
    /// Time between two samples, milliseconds.
    pub interval_ms: u64,
    /// Time from the first to the last sample, microseconds.
    pub monitored_us: u64,
    /// CPU time used over the monitored time, percent of one core.
    pub cpu_percent_avg: f64,
    /// The highest CPU use of one sampling interval, percent of one core.
    pub cpu_percent_peak: f64,
    /// Mean resident set size of the samples, bytes.
    pub rss_bytes_avg: u64,
    /// Largest resident set size sampled, bytes.
    pub rss_bytes_peak: u64,
    /// Bytes read from storage over the monitored time; null if `/proc/PID/io` is unreadable.
    pub disk_read_bytes: Option<u64>,
    /// Bytes written to storage over the monitored time; null if `/proc/PID/io` is unreadable.
    pub disk_write_bytes: Option<u64>,
    /// Mean number of ESTABLISHED TCP connections; null if `/proc/PID/fd` is unreadable.
    pub tcp_connections_avg: Option<f64>,
    /// Largest number of ESTABLISHED TCP connections sampled.
    pub tcp_connections_peak: Option<u64>,
    /// A process ended (or became unreadable) before the monitor stopped.
    pub exited: bool,
}

impl ResourceReport {
    /// The "Target process" section of a text report.
    pub fn render_text(&self) -> String {
        let mut out = String::new();
        let who: Vec<String> = self
            .pids
            .iter()
            .enumerate()
            .map(|(i, pid)| match self.names.get(i).filter(|name| !name.is_empty()) {
                Some(name) => format!("{pid} ({name})"),
                None => pid.to_string(),
            })
            .collect();
        let _ = writeln!(
            out,
            "  Target process: pid {}, {} samples every {}ms over {}",
            who.join(", "),
            self.samples,
            self.interval_ms,
            format_micros(self.monitored_us as f64)
        );
        let _ = writeln!(out, "    Resource                Avg        Peak");
        let _ = writeln!(
            out,
            "    CPU              {:>10} {:>11}",
            format!("{:.1}%", self.cpu_percent_avg),
            format!("{:.1}%", self.cpu_percent_peak)
        );
        let _ = writeln!(
            out,
            "    RSS              {:>10} {:>11}",
            format_bytes(self.rss_bytes_avg),
            format_bytes(self.rss_bytes_peak)
        );
        let connections = match (self.tcp_connections_avg, self.tcp_connections_peak) {
            (Some(avg), Some(peak)) => format!("{:>10} {:>11}", format!("{avg:.1}"), peak),
            _ => format!("{:>10} {:>11}", "n/a", "n/a"),
        };
        let _ = writeln!(out, "    TCP established  {connections}");
        let total = |bytes: Option<u64>| bytes.map(format_bytes).unwrap_or_else(|| "n/a".to_string());
        let _ = writeln!(out, "    Disk read        {:>10} (over the run)", total(self.disk_read_bytes));
        let _ = writeln!(out, "    Disk write       {:>10} (over the run)", total(self.disk_write_bytes));
        if self.exited {
            let _ = writeln!(out, "    (a monitored process ended during the run)");
        }
        out
    }
}

/// Bytes for people: `812B`, `4.0KiB`, `12.3MiB`, `1.20GiB`.
pub fn format_bytes(bytes: u64) -> String {
    const KIB: f64 = 1024.0;
    let value = bytes as f64;
    if value < KIB {
        format!("{bytes}B")
    } else if value < KIB * KIB {
        format!("{:.1}KiB", value / KIB)
    } else if value < KIB * KIB * KIB {
        format!("{:.1}MiB", value / (KIB * KIB))
    } else {
        format!("{:.2}GiB", value / (KIB * KIB * KIB))
    }
}

/// One reading of one process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ProcSample {
    /// `utime + stime`, clock ticks.
    pub cpu_ticks: u64,
    /// `VmRSS`, bytes (0 for a process without one).
    pub rss_bytes: u64,
    /// `read_bytes` and `write_bytes` of `/proc/PID/io`, if readable.
    pub io: Option<(u64, u64)>,
    /// ESTABLISHED TCP connections, if the descriptors could be listed.
    pub tcp_established: Option<u64>,
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line. The command name in
/// parentheses may hold spaces and parentheses, so the fields are counted after the last `)`.
pub fn parse_stat_cpu_ticks(stat: &str) -> Option<u64> {
    let after_name = &stat[stat.rfind(')')? + 1..];
    let mut fields = after_name.split_ascii_whitespace();
    // Field 3 (state) is the first after the name; utime is field 14.
    let utime: u64 = fields.nth(14 - 3)?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// `VmRSS` of `/proc/PID/status`, in bytes. `None` when absent (kernel threads, zombies).
pub fn parse_status_rss_bytes(status: &str) -> Option<u64> {
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let mut parts = line["VmRSS:".len()..].split_ascii_whitespace();
    let value: u64 = parts.next()?.parse().ok()?;
    let multiplier = match parts.next() {
        Some("kB") | None => 1024,
        Some("mB") => 1024 * 1024,
        Some(_) => return None,
    };
    Some(value * multiplier)
}

/// `read_bytes` and `write_bytes` of `/proc/PID/io`.
pub fn parse_io(io: &str) -> Option<(u64, u64)> {
    let field = |name: &str| -> Option<u64> {
        io.lines().find_map(|line| line.strip_prefix(name)?.strip_prefix(':')?.trim().parse().ok())
    };
    Some((field("read_bytes")?, field("write_bytes")?))
}

/// The inode of a descriptor link such as `socket:[123456]`.
pub fn socket_inode(link: &str) -> Option<u64> {
    link.strip_prefix("socket:[")?.strip_suffix(']')?.parse().ok()
}

/// Counts the rows of a `/proc/net/tcp` or `tcp6` table that are ESTABLISHED (state `01`) and
/// whose inode is one of `inodes`.
pub fn count_established(table: &str, inodes: &HashSet<u64>) -> u64 {
    table
        .lines()
        .skip(1)
        .filter(|row| {
            // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
            let fields: Vec<&str> = row.split_ascii_whitespace().collect();
            fields.len() > 9
                && fields[3] == "01"
                && fields[9].parse::<u64>().is_ok_and(|inode| inodes.contains(&inode))
        })
        .count() as u64
}

fn proc_dir(pid: u32) -> String {
    format!("/proc/{pid}")
}

/// Whether a process with this id exists (its `/proc/PID/stat` can be read).
pub fn process_exists(pid: u32) -> bool {
    std::fs::read_to_string(format!("{}/stat", proc_dir(pid)))
        .is_ok_and(|stat| parse_stat_cpu_ticks(&stat).is_some())
}

/// The name of a process (`/proc/PID/comm`), if it exists.
pub fn process_name(pid: u32) -> Option<String> {
    std::fs::read_to_string(format!("{}/comm", proc_dir(pid))).ok().map(|comm| comm.trim_end().to_string())
}

/// The processes whose name (`/proc/PID/comm`) is `name`, lowest id first, leaving out this
/// process. Names longer than 15 bytes are compared on their first 15, as the kernel keeps them.
pub fn find_pids_by_comm(name: &str) -> Vec<u32> {
    let wanted = truncate_comm(name);
    let me = std::process::id();
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return Vec::new();
    };
    let mut pids: Vec<u32> = entries
        .filter_map(|entry| entry.ok()?.file_name().to_str()?.parse::<u32>().ok())
        .filter(|pid| *pid != me)
        .filter(|pid| process_name(*pid).is_some_and(|comm| comm == wanted))
        .collect();
    pids.sort_unstable();
    pids
}

fn truncate_comm(name: &str) -> &str {
    if name.len() <= COMM_LEN {
        return name;
    }
    let mut end = COMM_LEN;
    while !name.is_char_boundary(end) {
        end -= 1;
    }
    &name[..end]
}

/// Reads one sample of a process; `None` if it is gone.
pub fn sample_process(pid: u32) -> Option<ProcSample> {
    let dir = proc_dir(pid);
    let cpu_ticks = parse_stat_cpu_ticks(&std::fs::read_to_string(format!("{dir}/stat")).ok()?)?;
    let rss_bytes = std::fs::read_to_string(format!("{dir}/status"))
        .ok()
        .and_then(|status| parse_status_rss_bytes(&status))
        .unwrap_or(0);
    let io = std::fs::read_to_string(format!("{dir}/io")).ok().and_then(|io| parse_io(&io));
    let tcp_established = established_connections(Path::new(&dir));
    Some(ProcSample { cpu_ticks, rss_bytes, io, tcp_established })
}

fn established_connections(dir: &Path) -> Option<u64> {
    let inodes: HashSet<u64> = std::fs::read_dir(dir.join("fd"))
        .ok()?
        .filter_map(|entry| {
            let link = std::fs::read_link(entry.ok()?.path()).ok()?;
            socket_inode(link.to_str()?)
        })
        .collect();
    if inodes.is_empty() {
        return Some(0);
    }
    let mut count = 0;
    for table in ["net/tcp", "net/tcp6"] {
        if let Ok(text) = std::fs::read_to_string(dir.join(table)) {
            count += count_established(&text, &inodes);
        }
    }
    Some(count)
}

/// Clock ticks per second of the CPU times in `/proc/PID/stat`.
/// The number of online cores of the machine (the `cpuN` lines of `/proc/stat`; else what
/// this process may use).
fn online_cores() -> f64 {
    let from_proc = std::fs::read_to_string("/proc/stat").ok().map(|stat| {
        stat.lines()
            .filter(|line| line.starts_with("cpu") && line.as_bytes().get(3).is_some_and(u8::is_ascii_digit))
            .count()
    });
    let cores = from_proc
        .filter(|&n| n > 0)
        .unwrap_or_else(|| std::thread::available_parallelism().map(|n| n.get()).unwrap_or(1));
    cores as f64
}

impl Accumulator {
    /// The same accumulator for a machine of `cores` cores (tests).
    pub fn with_cores(mut self, cores: f64) -> Self {
        self.cores = cores;
        self
    }
}

fn ticks_per_second() -> f64 {
    #[cfg(target_os = "linux")]
    let ticks = rustix::param::clock_ticks_per_second();
    #[cfg(not(target_os = "linux"))]
    let ticks = 100;
    if ticks == 0 {
        100.0
    } else {
        ticks as f64
    }
}

/// The per-process readings at one instant.
#[derive(Debug, Clone, Default)]
struct Snapshot {
    at: Option<Instant>,
    by_pid: BTreeMap<u32, ProcSample>,
}

/// Adds up snapshots into a [`ResourceReport`]. Pure apart from the clock readings it is given,
/// so tests can feed it made-up samples.
#[derive(Debug)]
pub struct Accumulator {
    pids: Vec<u32>,
    names: Vec<String>,
    ticks_per_second: f64,
    interval: Duration,
    /// The machine's online cores: no process uses more than this many (CPU percentages are
    /// of one core, so a peak is at most 100 x cores).
    cores: f64,
    first: Snapshot,
    previous: Snapshot,
    last: Snapshot,
    samples: u64,
    cpu_peak: f64,
    rss_sum: u128,
    rss_peak: u64,
    tcp_sum: u64,
    tcp_peak: u64,
    tcp_known: bool,
    exited: bool,
}

impl Accumulator {
    /// An empty accumulator for these processes.
    pub fn new(pids: &[u32], names: Vec<String>, ticks_per_second: f64, interval: Duration) -> Self {
        Self {
            pids: pids.to_vec(),
            names,
            ticks_per_second,
            interval,
            cores: online_cores(),
            first: Snapshot::default(),
            previous: Snapshot::default(),
            last: Snapshot::default(),
            samples: 0,
            cpu_peak: 0.0,
            rss_sum: 0,
            rss_peak: 0,
            tcp_sum: 0,
            tcp_peak: 0,
            tcp_known: true,
            exited: false,
        }
    }

    /// Adds the readings taken at `at`; a process missing from `readings` has ended.
    pub fn add(&mut self, at: Instant, readings: &[(u32, ProcSample)]) {
        let snapshot = Snapshot { at: Some(at), by_pid: readings.iter().copied().collect() };
        if snapshot.by_pid.len() < self.pids.len() {
            self.exited = true;
        }
        let rss: u64 = snapshot.by_pid.values().map(|s| s.rss_bytes).sum();
        self.rss_sum += u128::from(rss);
        self.rss_peak = self.rss_peak.max(rss);
        let tcp: Option<u64> = snapshot.by_pid.values().map(|s| s.tcp_established).sum();
        match tcp {
            Some(tcp) => {
                self.tcp_sum += tcp;
                self.tcp_peak = self.tcp_peak.max(tcp);
            }
            None => self.tcp_known = false,
        }
        if self.samples == 0 {
            self.first = snapshot.clone();
        } else if let (Some(from), Some(to)) = (self.previous.at, snapshot.at) {
            let seconds = to.saturating_duration_since(from).as_secs_f64();
            // CPU time is counted in clock ticks: over a short interval one tick more or less
            // is a large share (the last sample, taken at the stop, may come soon after the
            // one before). A peak is taken only over an interval of at least half the
            // sampling interval actually elapsed, and never above what the cores can give.
            if seconds >= (self.interval.as_secs_f64() / 2.0).max(0.05) {
                let ticks = cpu_ticks_between(&self.previous, &snapshot);
                let percent = ticks as f64 / self.ticks_per_second / seconds * 100.0;
                self.cpu_peak = self.cpu_peak.max(percent.min(self.cores * 100.0));
            }
        }
        self.samples += 1;
        self.previous = snapshot.clone();
        self.last = snapshot;
    }

    /// The report of everything added.
    pub fn finish(self) -> ResourceReport {
        let seconds = match (self.first.at, self.last.at) {
            (Some(first), Some(last)) => last.saturating_duration_since(first).as_secs_f64(),
            _ => 0.0,
        };
        let ticks = cpu_ticks_between(&self.first, &self.last);
        let cpu_avg = if seconds > 0.0 {
            (ticks as f64 / self.ticks_per_second / seconds * 100.0).min(self.cores * 100.0)
        } else {
            0.0
        };
        let samples = self.samples.max(1);
        // Disk bytes: every process must have readable I/O counters at both ends.
        let mut disk: Option<(u64, u64)> = Some((0, 0));
        for pid in &self.pids {
            let first = self.first.by_pid.get(pid).and_then(|s| s.io);
            let last = self.last.by_pid.get(pid).and_then(|s| s.io);
            disk = match (disk, first, last) {
                (Some((read, write)), Some(first), Some(last)) => {
                    Some((read + last.0.saturating_sub(first.0), write + last.1.saturating_sub(first.1)))
                }
                _ => None,
            };
        }
        if self.samples == 0 {
            disk = None;
        }
        ResourceReport {
            pids: self.pids,
            names: self.names,
            samples: self.samples,
            interval_ms: self.interval.as_millis() as u64,
            monitored_us: (seconds * 1e6).round() as u64,
            cpu_percent_avg: round2(cpu_avg),
            cpu_percent_peak: round2(self.cpu_peak.max(cpu_avg)),
            rss_bytes_avg: (self.rss_sum / u128::from(samples)) as u64,
            rss_bytes_peak: self.rss_peak,
            disk_read_bytes: disk.map(|(read, _)| read),
            disk_write_bytes: disk.map(|(_, write)| write),
            tcp_connections_avg: (self.tcp_known && self.samples > 0)
                .then(|| round2(self.tcp_sum as f64 / samples as f64)),
            tcp_connections_peak: (self.tcp_known && self.samples > 0).then_some(self.tcp_peak),
            exited: self.exited,
        }
    }
}

/// CPU ticks used between two snapshots by the processes present in both.
fn cpu_ticks_between(from: &Snapshot, to: &Snapshot) -> u64 {
    to.by_pid
        .iter()
        .filter_map(|(pid, later)| Some(later.cpu_ticks.saturating_sub(from.by_pid.get(pid)?.cpu_ticks)))
        .sum()
}

fn round2(value: f64) -> f64 {
    (value * 100.0).round() / 100.0
}

/// A thread sampling processes until [`Monitor::stop`].
#[derive(Debug)]
pub struct Monitor {
    stop: mpsc::Sender<()>,
    thread: Option<JoinHandle<ResourceReport>>,
}

impl Monitor {
    /// Starts sampling these processes now (a first sample is taken before this returns).
    pub fn start(pids: &[u32]) -> Monitor {
        Self::with_interval(pids, SAMPLE_INTERVAL)
    }

    /// Like [`Monitor::start`] with another sampling interval.
    pub fn with_interval(pids: &[u32], interval: Duration) -> Monitor {
        let names = pids.iter().map(|pid| process_name(*pid).unwrap_or_default()).collect();
        let mut accumulator = Accumulator::new(pids, names, ticks_per_second(), interval);
        let pids = pids.to_vec();
        let take = move |accumulator: &mut Accumulator| {
            let readings: Vec<(u32, ProcSample)> =
                pids.iter().filter_map(|pid| Some((*pid, sample_process(*pid)?))).collect();
            accumulator.add(Instant::now(), &readings);
        };
        take(&mut accumulator);
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name("rpcbench-monitor".into())
            .spawn(move || {
                let mut next = Instant::now() + interval;
                loop {
                    let wait = next.saturating_duration_since(Instant::now());
                    match stopped.recv_timeout(wait) {
                        Err(mpsc::RecvTimeoutError::Timeout) => {
                            take(&mut accumulator);
                            next += interval;
                        }
                        Ok(()) | Err(mpsc::RecvTimeoutError::Disconnected) => {
                            take(&mut accumulator);
                            break;
                        }
                    }
                }
                accumulator.finish()
            })
            .ok();
        Monitor { stop, thread }
    }

    /// Takes a last sample, stops the thread and sums up.
    pub fn stop(mut self) -> ResourceReport {
        self.stop.send(()).ok();
        let report = self.thread.take().and_then(|thread| thread.join().ok());
        report.unwrap_or_else(|| {
            Accumulator::new(&[], Vec::new(), ticks_per_second(), SAMPLE_INTERVAL).finish()
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Captured from a real `/proc/PID/stat`, with a name holding a space and a parenthesis.
    const STAT: &str = "12345 (rpc (bench) x) S 1 12345 12345 34816 12345 4194560 2870 0 0 0 \
                        157 43 0 0 20 0 3 0 9383612 24596480 2946 18446744073709551615 1 1 0 0 0 0 \
                        0 4096 17925 0 0 0 17 1 0 0 0 0 0\n";

    const STATUS: &str = "Name:\trpcbench\nUmask:\t0022\nState:\tS (sleeping)\nTgid:\t12345\n\
                          VmPeak:\t  105516 kB\nVmSize:\t   40396 kB\nVmHWM:\t   12000 kB\n\
                          VmRSS:\t   11784 kB\nRssAnon:\t    3328 kB\nThreads:\t3\n";

    const IO: &str = "rchar: 2109\nwchar: 120\nsyscr: 7\nsyscw: 3\nread_bytes: 8192\n\
                      write_bytes: 4096\ncancelled_write_bytes: 0\n";

    const TCP: &str = "  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:22C3 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 50001 1 0000000000000000 100 0 0 10 0
   1: 0100007F:22C3 0100007F:C350 01 00000000:00000000 00:00000000 00000000     0        0 50002 1 0000000000000000 20 4 30 10 -1
   2: 0100007F:22C3 0100007F:C352 01 00000000:00000000 00:00000000 00000000     0        0 50003 1 0000000000000000 20 4 30 10 -1
   3: 0100007F:C350 0100007F:22C3 01 00000000:00000000 00:00000000 00000000     0        0 60001 1 0000000000000000 20 4 30 10 -1
   4: 0100007F:22C3 0100007F:C354 06 00000000:00000000 03:00000000 00000000     0        0 0 3 0000000000000000
";

    #[test]
    fn proc_files_parse() {
        assert_eq!(parse_stat_cpu_ticks(STAT), Some(157 + 43));
        assert_eq!(parse_stat_cpu_ticks("12 (x) S 1 2"), None);
        assert_eq!(parse_status_rss_bytes(STATUS), Some(11784 * 1024));
        assert_eq!(parse_status_rss_bytes("Name:\tkthreadd\nState:\tS\n"), None);
        assert_eq!(parse_io(IO), Some((8192, 4096)));
        assert_eq!(parse_io("rchar: 1\n"), None);
        assert_eq!(socket_inode("socket:[50002]"), Some(50002));
        assert_eq!(socket_inode("pipe:[50002]"), None);
        assert_eq!(socket_inode("/dev/null"), None);
    }

    #[test]
    fn only_established_sockets_of_the_process_count() {
        // 50001 listens, 50002 and 50003 are the server's connections, 60001 is the client's
        // end of one of them (another process), the last row is TIME_WAIT.
        let inodes: HashSet<u64> = [50001, 50002, 50003].into_iter().collect();
        assert_eq!(count_established(TCP, &inodes), 2);
        assert_eq!(count_established(TCP, &HashSet::new()), 0);
    }

    fn sample(cpu_ticks: u64, rss_mib: u64, io: Option<(u64, u64)>, tcp: u64) -> ProcSample {
        ProcSample { cpu_ticks, rss_bytes: rss_mib << 20, io, tcp_established: Some(tcp) }
    }

    #[test]
    fn samples_add_up_to_averages_and_peaks() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut acc = Accumulator::new(&[1, 2], vec!["a".into(), "b".into()], 100.0, SAMPLE_INTERVAL);
        // Process 1 uses half a core then a full core; process 2 a quarter of a core.
        acc.add(at(0), &[(1, sample(1000, 10, Some((0, 0)), 2)), (2, sample(50, 20, Some((100, 0)), 0))]);
        acc.add(
            at(1000),
            &[(1, sample(1050, 12, Some((4096, 0)), 4)), (2, sample(75, 20, Some((100, 0)), 0))],
        );
        acc.add(
            at(2000),
            &[(1, sample(1150, 14, Some((4096, 8192)), 6)), (2, sample(100, 20, Some((300, 0)), 0))],
        );
        let report = acc.finish();
        assert_eq!(report.samples, 3);
        assert_eq!(report.monitored_us, 2_000_000);
        // (150 + 50) ticks over 2 s at 100 ticks/s = 100% of a core.
        assert_eq!(report.cpu_percent_avg, 100.0);
        assert_eq!(report.cpu_percent_peak, 125.0);
        assert_eq!(report.rss_bytes_avg, 32 << 20);
        assert_eq!(report.rss_bytes_peak, 34 << 20);
        assert_eq!(report.disk_read_bytes, Some(4096 + 200));
        assert_eq!(report.disk_write_bytes, Some(8192));
        assert_eq!(report.tcp_connections_avg, Some(4.0));
        assert_eq!(report.tcp_connections_peak, Some(6));
        assert!(!report.exited);
    }

    #[test]
    fn a_cpu_peak_is_at_most_the_cores_and_never_from_a_short_interval() {
        let start = Instant::now();
        let at = |ms: u64| start + Duration::from_millis(ms);
        let mut acc = Accumulator::new(&[1], Vec::new(), 100.0, SAMPLE_INTERVAL).with_cores(2.0);
        // Two busy cores: 50 ticks per 250 ms, then the stop sample 60 ms later, where the
        // tick counter's rounding shows 16 ticks (267%).
        acc.add(at(0), &[(1, sample(0, 1, None, 0))]);
        acc.add(at(250), &[(1, sample(50, 1, None, 0))]);
        acc.add(at(500), &[(1, sample(101, 1, None, 0))]);
        acc.add(at(560), &[(1, sample(117, 1, None, 0))]);
        let report = acc.finish();
        assert!(report.cpu_percent_peak <= 200.0, "peak {}% on 2 cores", report.cpu_percent_peak);
        assert!(report.cpu_percent_peak >= 199.0, "{}", report.cpu_percent_peak);
        assert!(report.cpu_percent_avg <= 200.0, "{}", report.cpu_percent_avg);
    }

    #[test]
    fn unreadable_io_is_null_and_an_ended_process_is_noted() {
        let start = Instant::now();
        let mut acc = Accumulator::new(&[1, 2], Vec::new(), 100.0, SAMPLE_INTERVAL);
        acc.add(start, &[(1, sample(0, 1, None, 0)), (2, sample(0, 1, Some((0, 0)), 0))]);
        acc.add(start + Duration::from_secs(1), &[(1, sample(100, 1, None, 0))]);
        let report = acc.finish();
        assert_eq!(report.disk_read_bytes, None);
        assert_eq!(report.disk_write_bytes, None);
        assert!(report.exited);
        // The process that ended does not make the CPU figure negative.
        assert_eq!(report.cpu_percent_avg, 100.0);
        let text = report.render_text();
        assert!(text.contains("Disk read               n/a"), "{text}");
        assert!(text.contains("ended during the run"), "{text}");
    }

    #[test]
    fn the_text_section_shows_every_figure() {
        let report = ResourceReport {
            pids: vec![42],
            names: vec!["agave-validator".into()],
            samples: 9,
            interval_ms: 250,
            monitored_us: 2_000_000,
            cpu_percent_avg: 45.25,
            cpu_percent_peak: 98.0,
            rss_bytes_avg: 340 << 20,
            rss_bytes_peak: 1360 << 20,
            disk_read_bytes: Some(133 << 20),
            disk_write_bytes: Some(152 << 10),
            tcp_connections_avg: Some(3.5),
            tcp_connections_peak: Some(5),
            exited: false,
        };
        let text = report.render_text();
        for expected in [
            "Target process: pid 42 (agave-validator), 9 samples every 250ms over 2.00s",
            "CPU                   45.2%       98.0%",
            "RSS                340.0MiB     1.33GiB",
            "TCP established         3.5           5",
            "Disk read          133.0MiB (over the run)",
            "Disk write         152.0KiB (over the run)",
        ] {
            assert!(text.contains(expected), "missing {expected:?} in\n{text}");
        }
    }

    #[test]
    fn comm_names_are_cut_like_the_kernel_cuts_them() {
        assert_eq!(truncate_comm("rpcbench"), "rpcbench");
        assert_eq!(truncate_comm("solana-test-validator"), "solana-test-val");
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn this_process_can_be_monitored() {
        let me = std::process::id();
        assert!(process_exists(me));
        let monitor = Monitor::with_interval(&[me], Duration::from_millis(20));
        // Burn a little CPU so that the figure is not zero.
        let until = Instant::now() + Duration::from_millis(150);
        let mut x = 0u64;
        while Instant::now() < until {
            x = x.wrapping_mul(31).wrapping_add(7);
        }
        std::hint::black_box(x);
        let report = monitor.stop();
        assert!(report.samples >= 3, "{report:?}");
        assert!(report.cpu_percent_avg > 0.0, "{report:?}");
        assert!(report.rss_bytes_peak > 1 << 20, "{report:?}");
        assert!(!process_exists(u32::MAX));
    }
}
