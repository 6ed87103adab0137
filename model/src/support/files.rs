//! Opening files that may be FIFOs without waiting on them.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::OpenOptionsExt;
use std::os::unix::io::AsRawFd;
use std::path::Path;

/// `path` opened with `options` without waiting for the other end of a FIFO (an open would
/// otherwise block until a process opens it too: for reading, a FIFO with no writer then reads
/// as ended at once; for writing, one with no reader fails with `ENXIO`). Reads and writes on
/// the file then wait as usual.
pub fn open_without_waiting(options: &mut OpenOptions, path: &Path) -> std::io::Result<File> {
    let f = options.custom_flags(libc::O_NONBLOCK).open(path)?;
    // SAFETY: `fcntl` on a descriptor this function owns, with flags read from it.
    unsafe {
        let flags = libc::fcntl(f.as_raw_fd(), libc::F_GETFL);
        if flags >= 0 {
            libc::fcntl(f.as_raw_fd(), libc::F_SETFL, flags & !libc::O_NONBLOCK);
        }
    }
    Ok(f)
}
