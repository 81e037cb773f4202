//! `statelog wal compact DIR [--retention-days N]`: forgets executions closed longer ago than the
//! retention and compacts the log (expired-only segments deleted, live records copied forward).
//! On a terminal it shows what it is doing as it goes; it always ends with one summary line
//! `compacted: segments scanned N, deleted N, records copied N, bytes reclaimed N`.
//! Must not: compact a directory another engine has open (the WAL's lock refuses it).

use std::io::{IsTerminal, Write};
use std::path::Path;
use std::process::ExitCode;

use statelog::engine::{Engine, EngineOptions};
use statelog::limits::RETENTION_MS_DEFAULT;

const DAY_MS: u64 = 24 * 3600 * 1000;

/// Compacts `dir` with `retention_days` (default 90).
pub fn run(dir: &Path, retention_days: Option<u64>) -> ExitCode {
    let retention_ms = retention_days.map_or(RETENTION_MS_DEFAULT, |d| d.saturating_mul(DAY_MS));
    let terminal = std::io::stderr().is_terminal();
    if terminal {
        eprint!("compacting {}: opening the log...", dir.display());
        let _ = std::io::stderr().flush();
    }
    let options = EngineOptions {
        background_timers: false,
        retention_ms,
        ..EngineOptions::default()
    };
    let engine = match Engine::open(dir, options) {
        Ok(engine) => engine,
        Err(e) => {
            eprintln!("statelog wal compact: cannot open {}: {e}", dir.display());
            return ExitCode::from(1);
        }
    };
    if terminal {
        eprint!(
            "\rcompacting {}: copying live records forward...",
            dir.display()
        );
        let _ = std::io::stderr().flush();
    }
    match engine.compact() {
        Ok(report) => {
            if terminal {
                eprintln!("\rcompacting {}: done{}", dir.display(), " ".repeat(30));
            }
            println!(
                "compacted: segments scanned {}, deleted {}, records copied {}, bytes reclaimed {}",
                report.segments_scanned_count,
                report.segments_deleted_count,
                report.records_copied_count,
                report.bytes_reclaimed()
            );
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("statelog wal compact: {e}");
            ExitCode::from(1)
        }
    }
}
