//! log_health: how the engine tells its embedder (the server's `/health`, its error answers)
//! that its log refuses writes, in words an operator can act on and without file paths.
//!
//! Two conditions from the WAL, two from a replicated log (a cluster's partition):
//! - poisoned: a write or sync of log data failed. Nothing more is acknowledged until the
//!   process reopens the log (restart), since the kernel may have dropped the unsynced pages.
//! - segment unavailable: a new segment could not be prepared (a full disk). Nothing was
//!   written for the refused call; writes resume by themselves once space is freed.
//! - fenced: another writer owns the log (the partition moved, or was opened again).
//! - stopped: a replicated log failed (fail-stop); its owner opens it again.
//! - unanswered: a replicated log's servers did not answer a read in time (a leader
//!   election); nothing changed, and the same call may succeed when made again.
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
    /// Another writer owns the log now (a cluster partition that moved to another node, or
    /// whose log this node opened again): this engine writes nothing more; the call is to
    /// be made again, where the partition is served now.
    Fenced,
    /// A replicated log stopped after a failure of its servers or transport (fail-stop: an
    /// acknowledgement lost in a leader change, a timeout); its owner opens it again.
    Stopped {
        /// What failed, as the log describes it (stream and sequence, no address or secret).
        cause: String,
    },
    /// A replicated log's servers did not answer a read in time (a stream electing its
    /// leader): the call changed nothing and may be made again.
    Unanswered {
        /// What was not answered, as the log describes it.
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
            LogRefusal::Fenced => "another writer owns this log now (its partition moved); \
                 retry: the call goes where it is served"
                .to_owned(),
            LogRefusal::Stopped { cause } => format!(
                "the replicated log stopped ({cause}); it is being opened again: retry \
                 (a call that was in flight may have taken effect)"
            ),
            LogRefusal::Unanswered { cause } => {
                format!("the replicated log did not answer a read in time ({cause}); retry")
            }
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
    /// `Some` when this error is the log refusing a write (poisoned, no segment can be made,
    /// fenced, stopped) or a replicated log not answering a read in time; the server answers
    /// those as `ServiceUnavailable` with [`LogRefusal::message`].
    pub fn log_refusal(&self) -> Option<LogRefusal> {
        match self {
            Error::Store(statelog_store::Error::Log(wal)) => refusal_of(wal),
            Error::Store(statelog_store::Error::Fenced) => Some(LogRefusal::Fenced),
            Error::Store(statelog_store::Error::Replicated {
                cause,
                retryable: false,
            }) => Some(LogRefusal::Stopped {
                cause: cause.to_string(),
            }),
            Error::Store(statelog_store::Error::Replicated {
                cause,
                retryable: true,
            }) => Some(LogRefusal::Unanswered {
                cause: cause.to_string(),
            }),
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

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;

    fn replicated(retryable: bool) -> Error {
        let cause: Arc<dyn std::error::Error + Send + Sync> = Arc::new(std::io::Error::other(
            "stream statelog_p0: reading sequence 7: timed out",
        ));
        Error::Store(statelog_store::Error::Replicated { cause, retryable })
    }

    #[test]
    fn a_replicated_log_that_stopped_or_did_not_answer_is_a_refusal_with_what_to_do() {
        let stopped = replicated(false)
            .log_refusal()
            .expect("a stopped log refuses");
        assert!(matches!(stopped, LogRefusal::Stopped { .. }), "{stopped:?}");
        assert!(
            stopped.message().contains("opened again"),
            "{}",
            stopped.message()
        );

        let unanswered = replicated(true).log_refusal().expect("an unanswered read");
        assert!(
            matches!(unanswered, LogRefusal::Unanswered { .. }),
            "{unanswered:?}"
        );
        let message = unanswered.message();
        assert!(
            message.contains("reading sequence 7") && message.ends_with("retry"),
            "{message}"
        );

        assert_eq!(
            Error::Store(statelog_store::Error::Fenced).log_refusal(),
            Some(LogRefusal::Fenced)
        );
    }
}
