//! Contract: the one error type of the packet-I/O shell: what was attempted, on what
//! (an interface, a file), and the kernel's cause. It prints as the one line
//! `<attempt>: <object>: <cause>` that `ccarena-link` writes to stderr before exiting 1.

use std::io;

#[derive(Debug)]
pub struct ShellError {
    pub attempt: String,
    pub object: String,
    pub cause: io::Error,
}

impl ShellError {
    pub fn new(attempt: impl Into<String>, object: impl Into<String>, cause: io::Error) -> ShellError {
        ShellError { attempt: attempt.into(), object: object.into(), cause }
    }

    /// The thread's errno as the cause.
    pub fn last_os(attempt: impl Into<String>, object: impl Into<String>) -> ShellError {
        ShellError::new(attempt, object, io::Error::last_os_error())
    }
}

impl std::fmt::Display for ShellError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}: {}: {}", self.attempt, self.object, self.cause)
    }
}

impl std::error::Error for ShellError {}

/// `Ok(rc)` for a non-negative return code, else the errno as a `ShellError`.
pub fn os_result(rc: libc::c_int, attempt: &str, object: &str) -> Result<libc::c_int, ShellError> {
    if rc < 0 {
        Err(ShellError::last_os(attempt, object))
    } else {
        Ok(rc)
    }
}
