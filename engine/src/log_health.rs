//! log_health: how the engine tells its embedder (the server's `/health`, its error answers)
//! that its log refuses writes, in words an operator can act on and without file paths.
//!
//! Two conditions, both from the WAL:
//! - poisoned: a write or sync of log data failed. Nothing more is acknowledged until the
//!   process reopens the log (restart), since the kernel may have dropped the unsynced pages.
//! - segment unavailable: a new segment could not be prepared (a full disk). Nothing was
//!   written for the refused call; writes resume by themselves once space is freed.
//!
//! Must not: echo a path, a payload or a token.

use super::{Engine, Error};

/// Why the log refuses a write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LogRefusal {
    /// A write or sync of log data failed: restart the server once the disk is fixed.
    Poisoned {
        /// The failed operation and what the OS said (no path).
        cause: String,
    },
    /// A new segment could not be prepared (a full disk): free space; no restart is needed.
    SegmentUnavailable {
        /// The failed operation and what the OS said (no path).
        cause: String,
    },
}

impl LogRefusal {
    /// A short sentence for the operator and the client, saying what to do.
    pub fn message(&self) -> String {
        match self {
            LogRefusal::Poisoned { cause } => format!(
                "the log is poisoned ({cause}): it accepts no more writes; \
                 restart the server after freeing space or fixing the disk"
            ),
            LogRefusal::SegmentUnavailable { cause } => format!(
                "the disk is full ({cause}): no new log segment can be made; \
                 writes resume once space is freed"
            ),
        }
    }
}

/// The cause of a WAL error without its path: the operation and the OS's words.
fn short_cause(error: &statelog_wal::Error) -> String {
    match error {
        statelog_wal::Error::Io { op, source, .. } => format!("{op} failed: {source}"),
        statelog_wal::Error::Poisoned { cause }
        | statelog_wal::Error::SegmentUnavailable { cause, .. } => short_cause(cause),
        other => other.to_string(),
    }
}

fn refusal_of(error: &statelog_wal::Error) -> Option<LogRefusal> {
    match error {
        statelog_wal::Error::Poisoned { cause } => Some(LogRefusal::Poisoned {
            cause: short_cause(cause),
        }),
        statelog_wal::Error::SegmentUnavailable { cause, .. } => {
            Some(LogRefusal::SegmentUnavailable {
                cause: short_cause(cause),
            })
        }
        _ => None,
    }
}

impl Error {
    /// `Some` when this error is the log refusing a write (poisoned, or no segment can be
    /// made); the server answers those as `ServiceUnavailable` with [`LogRefusal::message`].
    pub fn log_refusal(&self) -> Option<LogRefusal> {
        match self {
            Error::Store(statelog_store::Error::Log(wal)) => refusal_of(wal),
            _ => None,
        }
    }
}

impl Engine {
    /// `Some` once the engine's log is poisoned (a failed write or sync of log data): every
    /// later write fails until the process restarts. Reads keep working.
    pub fn log_poisoned(&self) -> Option<LogRefusal> {
        match self.inner.store.log().refusal()? {
            statelog_store::Error::Log(statelog_wal::Error::Poisoned { cause }) => {
                Some(LogRefusal::Poisoned {
                    cause: short_cause(&cause),
                })
            }
            // A fenced log (another writer owns it) is not a poisoned one; nothing else refuses.
            _ => None,
        }
    }
}
