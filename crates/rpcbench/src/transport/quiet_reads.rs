//! Replies that do not wake the generator. In open loop at high rates every reply used to wake
//! the worker on its own, and on a virtual machine a sleep and a wake-up cost more than the
//! request itself. A socket in *quiet* mode reports itself readable only when far more bytes
//! than a reply are queued (`SO_RCVLOWAT`), so its replies wait in the kernel until the worker
//! wakes for its next pacing slot anyway and reads them then. Each read carries the kernel's
//! receive timestamp (`SO_TIMESTAMPNS`), so a reply's latency still ends when it arrived, not
//! when it was read.
//!
//! One of the crate's two modules with `unsafe` (the other is `util/thread_class.rs`'s
//! scheduling calls): `setsockopt` and `recvmsg` with a control buffer, which neither tokio,
//! socket2 nor rustix offer for these options. Each `unsafe` block says why it holds.
#![allow(unsafe_code)]

use std::future::Future;
use std::io;
use std::os::fd::{AsFd, BorrowedFd};
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Instant;

use tokio::io::ReadBuf;
use tokio::net::TcpStream;

use crate::slot_timer::{NextSlot, SlotClock};

/// Turns quiet mode on or off for a TCP socket: on, it is readable to epoll only past the
/// largest low-water mark the kernel accepts (half its largest receive buffer), and every read
/// through [`recv_stamped`] is timestamped; off, it is readable from the first byte again (the
/// kernel signals readability at once if bytes are waiting).
pub(crate) fn set_quiet(fd: BorrowedFd<'_>, quiet: bool) -> io::Result<()> {
    if quiet {
        keep_kernel_stamps_on();
    }
    imp::set_quiet(fd, quiet)
}

/// Turns on the kernel's receive timestamps (`SO_TIMESTAMPNS`) for a TCP socket without quiet
/// mode: it wakes its reader from the first byte as usual, and every read through
/// [`recv_stamped`] carries when its bytes arrived (subscription feeds).
pub(crate) fn set_stamped(fd: BorrowedFd<'_>) -> io::Result<()> {
    keep_kernel_stamps_on();
    imp::set_stamped(fd)
}

/// Keeps the kernel's receive stamps switched on for the rest of the process. The kernel turns
/// them on for the whole system the first time a socket asks, a moment later (deferred work),
/// and off again when the last socket that asked closes: without a socket that keeps them on,
/// the first replies of a run come unstamped (and are timed when read). Holding one UDP socket
/// with `SO_TIMESTAMPNS` makes every later socket's stamps start at once. Called when a
/// socket is made quiet or stamped; cheap after the first call.
pub(crate) fn keep_kernel_stamps_on() {
    static KEEPER: std::sync::OnceLock<Option<std::net::UdpSocket>> = std::sync::OnceLock::new();
    KEEPER.get_or_init(|| {
        let socket = std::net::UdpSocket::bind("127.0.0.1:0").ok()?;
        imp::set_stamped(socket.as_fd()).ok()?;
        Some(socket)
    });
}

/// Reads what is queued on `fd` into `buf` without blocking. Returns the bytes read and the
/// instant the last of them arrived (the kernel's receive timestamp, carried over to the
/// monotonic clock), if the kernel gave one. `WouldBlock` when nothing is queued.
pub(crate) fn recv_stamped(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
    imp::recv_stamped(fd, buf)
}

/// Where a quiet connection's read stands.
#[derive(Debug, Default)]
enum QuietPhase {
    /// A read begins: first let the rest of the wake-up's work run.
    #[default]
    Fresh,
    /// Try the socket now.
    Trying,
    /// Nothing was queued: wait for the worker's next pacing slot.
    Waiting(NextSlot),
}

/// The reading side of a quiet connection ([`set_quiet`]): a read first lets the rest of the
/// worker's current wake-up run (the other requests of its slot), so that a reply that came
/// back meanwhile is read before the worker sleeps and its connection is free for a ticket of
/// the same slot; then it tries the socket at each slot of the clock it was given
/// ([`SlotClock::next_slot`]). It keeps when the bytes it read arrived.
#[derive(Debug)]
pub(crate) struct QuietReader {
    clock: SlotClock,
    phase: QuietPhase,
    first_arrival: Option<Instant>,
    last_arrival: Option<Instant>,
}

impl QuietReader {
    /// A reader that waits on the slots of `clock`.
    pub(crate) fn new(clock: SlotClock) -> Self {
        Self { clock, phase: QuietPhase::default(), first_arrival: None, last_arrival: None }
    }

    /// The clock whose slots it reads at.
    pub(crate) fn clock(&self) -> SlotClock {
        self.clock
    }

    /// `AsyncRead::poll_read` for `tcp` in quiet mode. Needs its clock's timer on this thread
    /// ([`SlotClock::is_here`]): without it, a slot is always due and this would spin.
    pub(crate) fn poll_read(
        &mut self,
        tcp: &TcpStream,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        loop {
            match &mut self.phase {
                QuietPhase::Fresh => {
                    self.phase = QuietPhase::Trying;
                    cx.waker().wake_by_ref();
                    return Poll::Pending;
                }
                QuietPhase::Waiting(slot) => match Pin::new(slot).poll(cx) {
                    Poll::Ready(()) => self.phase = QuietPhase::Trying,
                    Poll::Pending => return Poll::Pending,
                },
                QuietPhase::Trying => match recv_stamped(tcp.as_fd(), buf.initialize_unfilled()) {
                    Ok((read, stamp)) => {
                        buf.advance(read);
                        let arrived = stamp.unwrap_or_else(Instant::now);
                        self.first_arrival.get_or_insert(arrived);
                        self.last_arrival = Some(arrived);
                        self.phase = QuietPhase::Fresh;
                        return Poll::Ready(Ok(()));
                    }
                    Err(error) if error.kind() == io::ErrorKind::WouldBlock => {
                        self.phase = QuietPhase::Waiting(self.clock.next_slot());
                    }
                    Err(error) if error.kind() == io::ErrorKind::Interrupted => {}
                    Err(error) => {
                        self.phase = QuietPhase::Fresh;
                        return Poll::Ready(Err(error));
                    }
                },
            }
        }
    }

    /// When the first and the last bytes read since the last call arrived.
    pub(crate) fn take_arrivals(&mut self) -> (Option<Instant>, Option<Instant>) {
        (self.first_arrival.take(), self.last_arrival.take())
    }
}

/// A wall-clock time (since the Unix epoch) as an instant of the monotonic clock: now, less
/// how long ago it was by the wall clock. A time in the future (the wall clock stepped back)
/// reads as now.
fn wall_to_instant(since_epoch: std::time::Duration) -> Instant {
    let now = Instant::now();
    let wall = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    wall.checked_sub(since_epoch).and_then(|age| now.checked_sub(age)).unwrap_or(now)
}

#[cfg(target_os = "linux")]
mod imp {
    use std::io;
    use std::mem::{size_of, size_of_val, MaybeUninit};
    use std::os::fd::{AsRawFd, BorrowedFd};
    use std::time::{Duration, Instant};

    fn set_int(
        fd: BorrowedFd<'_>,
        level: libc::c_int,
        name: libc::c_int,
        value: libc::c_int,
    ) -> io::Result<()> {
        // SAFETY: `value` lives across the call and its size is passed with it; `fd` is a
        // descriptor borrowed for the call.
        let result = unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                level,
                name,
                (&raw const value).cast(),
                size_of::<libc::c_int>() as libc::socklen_t,
            )
        };
        if result == 0 {
            Ok(())
        } else {
            Err(io::Error::last_os_error())
        }
    }

    pub(super) fn set_stamped(fd: BorrowedFd<'_>) -> io::Result<()> {
        set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)
    }

    pub(super) fn set_quiet(fd: BorrowedFd<'_>, quiet: bool) -> io::Result<()> {
        if quiet {
            set_int(fd, libc::SOL_SOCKET, libc::SO_TIMESTAMPNS, 1)?;
        }
        // The kernel caps the mark at half its largest receive buffer: asking for the most an
        // int holds gets that cap.
        set_int(fd, libc::SOL_SOCKET, libc::SO_RCVLOWAT, if quiet { libc::c_int::MAX } else { 1 })
    }

    pub(super) fn recv_stamped(fd: BorrowedFd<'_>, buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
        let mut iov = libc::iovec { iov_base: buf.as_mut_ptr().cast(), iov_len: buf.len() };
        // Room for one SCM_TIMESTAMPNS message (a header and a timespec), aligned for a
        // cmsghdr; twice that in case the kernel adds another.
        let mut control = [0u64; 8];
        // SAFETY: an all-zero msghdr is a valid empty message; the fields that matter are set
        // below.
        let mut message: libc::msghdr = unsafe { MaybeUninit::zeroed().assume_init() };
        message.msg_iov = &raw mut iov;
        message.msg_iovlen = 1;
        message.msg_control = control.as_mut_ptr().cast();
        message.msg_controllen = size_of_val(&control) as _;
        // SAFETY: `message` points at `iov` (which covers exactly `buf`) and at `control`,
        // both alive and exclusively borrowed for the call.
        let read = unsafe { libc::recvmsg(fd.as_raw_fd(), &raw mut message, libc::MSG_DONTWAIT) };
        if read < 0 {
            return Err(io::Error::last_os_error());
        }
        let mut stamp = None;
        // SAFETY: the kernel filled `message.msg_control` up to `msg_controllen`; the CMSG
        // macros walk only within it, and a timestamp message's data is one timespec, read
        // unaligned.
        unsafe {
            let mut header = libc::CMSG_FIRSTHDR(&raw const message);
            while !header.is_null() {
                if (*header).cmsg_level == libc::SOL_SOCKET && (*header).cmsg_type == libc::SCM_TIMESTAMPNS {
                    let time: libc::timespec = std::ptr::read_unaligned(libc::CMSG_DATA(header).cast());
                    if let (Ok(secs), Ok(nanos)) = (u64::try_from(time.tv_sec), u32::try_from(time.tv_nsec)) {
                        if nanos < 1_000_000_000 && secs > 0 {
                            stamp = Some(super::wall_to_instant(Duration::new(secs, nanos)));
                        }
                    }
                }
                header = libc::CMSG_NXTHDR(&raw const message, header);
            }
        }
        Ok((read as usize, stamp))
    }
}

#[cfg(not(target_os = "linux"))]
mod imp {
    use std::io;
    use std::os::fd::BorrowedFd;
    use std::time::Instant;

    pub(super) fn set_quiet(_fd: BorrowedFd<'_>, _quiet: bool) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }

    pub(super) fn set_stamped(_fd: BorrowedFd<'_>) -> io::Result<()> {
        Err(io::ErrorKind::Unsupported.into())
    }

    pub(super) fn recv_stamped(_fd: BorrowedFd<'_>, _buf: &mut [u8]) -> io::Result<(usize, Option<Instant>)> {
        Err(io::ErrorKind::Unsupported.into())
    }
}

/// Test support: returns once the kernel stamps a loopback read (its stamps are switched on a
/// moment after the first socket asks), or after two seconds.
#[cfg(all(test, target_os = "linux"))]
pub(crate) fn wait_for_kernel_stamps() {
    use std::io::Write;
    keep_kernel_stamps_on();
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
    let (mut server, _) = listener.accept().unwrap();
    set_stamped(client.as_fd()).unwrap();
    let deadline = Instant::now() + std::time::Duration::from_secs(2);
    let mut buf = [0u8; 8];
    while Instant::now() < deadline {
        server.write_all(b"x").unwrap();
        std::thread::sleep(std::time::Duration::from_millis(1));
        if let Ok((_, Some(_))) = recv_stamped(client.as_fd(), &mut buf) {
            return;
        }
    }
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::io::Write;
    use std::os::fd::AsFd;
    use std::time::Duration;

    #[test]
    fn a_quiet_read_is_stamped_with_when_the_bytes_arrived_not_when_they_were_read() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        set_quiet(client.as_fd(), true).unwrap();
        // The kernel turns its receive stamps on for the whole system the first time a socket
        // asks, a moment later (deferred work): the replies of that moment come unstamped. So
        // the first stamped reply of a few is the one judged.
        let mut stamped = None;
        for _ in 0..5 {
            let sent = Instant::now();
            server.write_all(b"HTTP/1.1 200 OK\r\n\r\n").unwrap();
            let written = Instant::now();
            std::thread::sleep(Duration::from_millis(60));
            let mut buf = [0u8; 64];
            let (read, stamp) = recv_stamped(client.as_fd(), &mut buf).unwrap();
            let read_at = Instant::now();
            assert_eq!(&buf[..read], b"HTTP/1.1 200 OK\r\n\r\n");
            assert_eq!(
                recv_stamped(client.as_fd(), &mut buf).unwrap_err().kind(),
                io::ErrorKind::WouldBlock,
                "nothing queued: it must not block"
            );
            if let Some(stamp) = stamp {
                stamped = Some((sent, written, stamp, read_at));
                break;
            }
        }
        let (sent, written, stamp, read_at) =
            stamped.expect("the kernel stamps reads once SO_TIMESTAMPNS is on");
        // Over loopback the bytes arrive while the write runs: the stamp lies between the
        // instants read before and after it (give or take the clocks' conversion), however
        // long the machine took between them, and well before the read 60 ms later.
        let slack = Duration::from_millis(5);
        assert!(stamp + slack >= sent && stamp <= written + slack, "stamped outside the write");
        assert!(read_at.duration_since(stamp) >= Duration::from_millis(50), "stamped when read");
    }

    #[tokio::test]
    async fn a_quiet_socket_does_not_wake_its_reader_until_quiet_mode_ends() {
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let client = std::net::TcpStream::connect(listener.local_addr().unwrap()).unwrap();
        let (mut server, _) = listener.accept().unwrap();
        client.set_nonblocking(true).unwrap();
        let client = tokio::net::TcpStream::from_std(client).unwrap();
        set_quiet(client.as_fd(), true).unwrap();
        server.write_all(b"a reply").unwrap();
        let woken = tokio::time::timeout(Duration::from_millis(100), client.readable()).await;
        assert!(woken.is_err(), "a queued reply woke the reader in quiet mode");
        set_quiet(client.as_fd(), false).unwrap();
        tokio::time::timeout(Duration::from_secs(5), client.readable())
            .await
            .expect("readable once quiet mode is off")
            .unwrap();
        let mut buf = [0u8; 16];
        assert_eq!(recv_stamped(client.as_fd(), &mut buf).unwrap().0, 7);
    }
}
