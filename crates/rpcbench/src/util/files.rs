//! Reading the user's files with a limit on their size: a scenario, a body, a pools, results,
//! capacity, targets, traffic or replay file larger than any real one (or `/dev/zero`) is refused with a clear
//! error instead of filling memory. The limit is checked while reading, so a device or a file
//! that grows cannot get past it.

use std::io::{self, Read};
use std::path::Path;

/// The largest scenario or targets file.
pub(crate) const MAX_SCENARIO: u64 = 16 * 1024 * 1024;
/// The largest request body file, pools file or CA file.
pub const MAX_BODY: u64 = 64 * 1024 * 1024;
/// The largest results or capacity file (histograms of long runs with many calls included).
pub(crate) const MAX_RESULTS: u64 = 256 * 1024 * 1024;
/// The largest traffic file or file `replay` reads (a vegeta targets file, a file of bodies):
/// its requests are held in memory for the run.
pub(crate) const MAX_TRAFFIC: u64 = 512 * 1024 * 1024;

/// The bytes of `path`, or an error of kind `InvalidData` when it holds more than `limit`.
pub fn read_limited(path: &Path, limit: u64) -> io::Result<Vec<u8>> {
    let too_large = || {
        io::Error::new(
            io::ErrorKind::InvalidData,
            format!("larger than {} MiB (the most rpcbench reads from such a file)", limit >> 20),
        )
    };
    let file = std::fs::File::open(path)?;
    // A regular file says its size: refused before a byte is read.
    if file.metadata().is_ok_and(|meta| meta.is_file() && meta.len() > limit) {
        return Err(too_large());
    }
    let mut bytes = Vec::new();
    file.take(limit.saturating_add(1)).read_to_end(&mut bytes)?;
    if bytes.len() as u64 > limit {
        return Err(too_large());
    }
    Ok(bytes)
}

/// [`read_limited`] as UTF-8 text.
pub fn read_text_limited(path: &Path, limit: u64) -> io::Result<String> {
    String::from_utf8(read_limited(path, limit)?)
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidData, "not UTF-8 text"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn files_over_the_limit_are_refused_even_endless_ones() {
        let err = read_limited(Path::new("/dev/zero"), 1024).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::InvalidData);
        assert!(err.to_string().contains("larger than"), "{err}");
        let dir = std::env::temp_dir().join(format!("rpcbench-files-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("small.txt");
        std::fs::write(&path, "0123456789").unwrap();
        assert_eq!(read_text_limited(&path, 10).unwrap(), "0123456789");
        assert!(read_limited(&path, 9).is_err());
        std::fs::remove_dir_all(&dir).ok();
    }
}
