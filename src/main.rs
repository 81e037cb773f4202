//! The `statelog` command line: a thin adapter over the library.

use std::process::ExitCode;

use clap::Parser;

mod cli;

/// The binary's allocator: under `serve`, glibc's malloc (its free-list consolidation under
/// hyper's per-request buffers) took about a fifth of the cycles (issue 16). The library leaves
/// the allocator to the program that embeds it.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    restore_default_sigpipe();
    let args = cli::Cli::parse();
    cli::run(args)
}

/// Rust ignores SIGPIPE, so `statelog history X | head` would fail writing to a closed pipe
/// (and `println!` panics on that). A command-line tool should end quietly instead, as `cat`
/// does: restore the default action, which ends the process when the reader has gone.
fn restore_default_sigpipe() {
    // SAFETY: called first thing in `main`, before any thread exists; `signal` with SIG_DFL
    // installs no handler code.
    unsafe {
        libc::signal(libc::SIGPIPE, libc::SIG_DFL);
    }
}
