//! Listening sockets for the servers rpcbench runs (the mock nodes, the metrics endpoint),
//! bound with the system's largest accept backlog instead of the 128 of
//! `std::net::TcpListener::bind`: a run that opens thousands of connections at once must find
//! them queued, not dropped and retried a second later (which would show as connect latency of
//! the mock, not of the client).

use std::io;
use std::net::{SocketAddr, TcpListener};

use socket2::{Domain, Protocol, Socket, Type};

/// The backlog used when the system's largest cannot be read.
pub(crate) const FALLBACK_BACKLOG: i32 = 4096;

/// Where Linux keeps the largest accept backlog a socket may ask for.
const SOMAXCONN_PATH: &str = "/proc/sys/net/core/somaxconn";

/// The backlog a listener asks for: the system's largest (`/proc/sys/net/core/somaxconn`),
/// or [`FALLBACK_BACKLOG`] where that file cannot be read.
pub(crate) fn max_backlog() -> i32 {
    backlog_from(std::fs::read_to_string(SOMAXCONN_PATH).ok().as_deref())
}

/// The backlog from the text of the somaxconn file, if there is one.
fn backlog_from(text: Option<&str>) -> i32 {
    text.and_then(|text| text.trim().parse::<i32>().ok()).filter(|n| *n > 0).unwrap_or(FALLBACK_BACKLOG)
}

/// Binds `addr` (port 0 picks a free port) and listens with [`max_backlog`]. Like
/// `std::net::TcpListener::bind`, the address is reusable at once after a restart on Unix.
pub(crate) fn bind(addr: SocketAddr) -> io::Result<TcpListener> {
    let socket = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    #[cfg(unix)]
    socket.set_reuse_address(true)?;
    socket.bind(&addr.into())?;
    socket.listen(max_backlog())?;
    Ok(socket.into())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_backlog_is_the_systems_largest_or_4096() {
        assert_eq!(backlog_from(Some("65535\n")), 65535);
        assert_eq!(backlog_from(Some("4096")), 4096);
        for unreadable in [None, Some(""), Some("lots"), Some("0"), Some("-1")] {
            assert_eq!(backlog_from(unreadable), FALLBACK_BACKLOG, "{unreadable:?}");
        }
    }

    #[test]
    fn listeners_accept_with_the_largest_backlog() {
        let listener = bind(SocketAddr::from(([127, 0, 0, 1], 0))).unwrap();
        let addr = listener.local_addr().unwrap();
        assert_ne!(addr.port(), 0);
        let client = std::net::TcpStream::connect(addr).unwrap();
        let (accepted, _) = listener.accept().unwrap();
        assert_eq!(accepted.peer_addr().unwrap(), client.local_addr().unwrap());
        // `ss` shows a listening socket's backlog in its Send-Q column (Linux, where installed).
        let Ok(out) =
            std::process::Command::new("ss").args(["-ltnH", &format!("sport = :{}", addr.port())]).output()
        else {
            return;
        };
        let text = String::from_utf8_lossy(&out.stdout);
        if let Some(line) = text.lines().next() {
            let send_q: i32 = line.split_whitespace().nth(2).unwrap().parse().unwrap();
            assert_eq!(send_q, max_backlog(), "{line}");
            assert!(send_q > 128 || max_backlog() <= 128, "{line}");
        }
    }
}
