//! child: a server process a bench starts and ends. The kernel ends it if the bench's main
//! thread dies (`PR_SET_PDEATHSIG`); dropping it sends SIGTERM and, after a grace period,
//! SIGKILL, and reaps it. Its output goes to a log file whose tail a failure message shows.
//! Used by benches/concurrency.rs and benches/cluster.rs (each includes it with `#[path]`, and
//! `#[allow(dead_code)]`: each uses the part it needs).

use std::path::PathBuf;
use std::process::{Child, Command};
use std::time::{Duration, Instant};

/// How long a dropped child has to exit after SIGTERM before it is killed.
const TERM_GRACE: Duration = Duration::from_secs(10);

/// A running child process of the bench.
pub struct ChildProcess {
    name: String,
    child: Child,
    log: PathBuf,
}

impl ChildProcess {
    /// Spawns `command` (its stdio as the caller set it; `log` is where its output is read
    /// from for failure messages), asking the kernel to end it when this thread dies.
    pub fn spawn(name: &str, command: &mut Command, log: PathBuf) -> std::io::Result<Self> {
        // SAFETY: the closure only calls prctl, which is async-signal-safe, between fork and
        // exec. It asks the kernel to end the child when this (main) thread dies, so a bench
        // killed outright leaves no server behind.
        unsafe {
            std::os::unix::process::CommandExt::pre_exec(command, || {
                if libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGTERM) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        let child = command.spawn()?;
        Ok(Self {
            name: name.to_owned(),
            child,
            log,
        })
    }

    /// The process, for its pipes.
    pub fn child_mut(&mut self) -> &mut Child {
        &mut self.child
    }

    /// Its process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The last lines it printed, for a failure message.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<&str> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }

    /// Fails with its log when it exited.
    pub fn check_running(&mut self) -> Result<(), String> {
        match self.child.try_wait() {
            Ok(None) => Ok(()),
            Ok(Some(status)) => Err(format!(
                "{} exited ({status}):\n{}",
                self.name,
                self.log_tail()
            )),
            Err(e) => Err(format!("{}: {e}", self.name)),
        }
    }

    /// SIGKILL, and reaps it.
    pub fn kill(mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for ChildProcess {
    fn drop(&mut self) {
        if let Ok(Some(_)) = self.child.try_wait() {
            return;
        }
        let Ok(pid) = libc::pid_t::try_from(self.child.id()) else {
            let _ = self.child.kill();
            let _ = self.child.wait();
            return;
        };
        // SAFETY: kill signals our own child, which has not been reaped yet.
        unsafe { libc::kill(pid, libc::SIGTERM) };
        let deadline = Instant::now() + TERM_GRACE;
        while Instant::now() < deadline {
            if let Ok(Some(_)) = self.child.try_wait() {
                return;
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
