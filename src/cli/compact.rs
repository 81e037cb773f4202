//! `statelog wal compact DIR [--retention-days N]`: forgets executions closed longer ago than the
//! retention and compacts the log (expired-only segments deleted, live records copied forward).
//! On a terminal it shows an `indicatif` progress bar (segments scanned of the total, bytes
//! copied and reclaimed) on stderr; it always ends with one summary line on stdout:
//! `compacted: segments scanned N, deleted N, records copied N, bytes reclaimed N, records
//! dropped N, executions expired N, bytes copied N` (the first four fields are a checked
//! contract: later fields are only ever appended).
//! Must not: compact a directory another engine has open (the WAL's lock refuses it); draw
//! anything but the summary when stderr is not a terminal.

use std::io::IsTerminal;
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressStyle};
use statelog::engine::{CompactionProgress, CompactionSummary, Engine, EngineOptions};
use statelog::limits::RETENTION_MS_DEFAULT;

const DAY_MS: u64 = 24 * 3600 * 1000;

/// How often the bar redraws on its own (its spinner), in ms.
const BAR_TICK_MS: u64 = 100;

/// The summary line printed at the end of every successful compaction.
pub fn summary_line(report: &CompactionSummary, last: &CompactionProgress) -> String {
    format!(
        "compacted: segments scanned {}, deleted {}, records copied {}, bytes reclaimed {}, \
         records dropped {}, executions expired {}, bytes copied {}",
        report.segments_scanned_count,
        report.segments_deleted_count,
        report.records_copied_count,
        report.bytes_reclaimed(),
        report.records_dropped_count,
        report.executions_expired_count,
        last.copied_size_bytes
    )
}

/// The bar's message for a progress report.
fn bar_message(progress: &CompactionProgress) -> String {
    format!(
        "{} MiB scanned, {} records copied ({} KiB), {} dropped, {} segments deleted, {} MiB reclaimed",
        progress.scanned_size_bytes >> 20,
        progress.records_copied_count,
        progress.copied_size_bytes >> 10,
        progress.records_dropped_count,
        progress.segments_deleted_count,
        progress.reclaimed_size_bytes >> 20
    )
}

fn progress_bar(dir: &Path) -> ProgressBar {
    let bar = ProgressBar::new(0);
    let style = ProgressStyle::with_template(
        "{prefix} {spinner} [{elapsed_precise}] {bar:30} {pos}/{len} segments  {msg}",
    )
    .unwrap_or_else(|_| ProgressStyle::default_bar());
    bar.set_style(style);
    bar.set_prefix(format!("compacting {}", dir.display()));
    bar.set_message("opening the log");
    bar.enable_steady_tick(Duration::from_millis(BAR_TICK_MS));
    bar
}

/// Compacts `dir` with `retention_days` (default 90).
pub fn run(dir: &Path, retention_days: Option<u64>) -> ExitCode {
    let retention_ms = retention_days.map_or(RETENTION_MS_DEFAULT, |d| d.saturating_mul(DAY_MS));
    let bar = std::io::stderr().is_terminal().then(|| progress_bar(dir));
    let options = EngineOptions {
        background_timers: false,
        retention_ms,
        ..EngineOptions::default()
    };
    let engine = match Engine::open(dir, options) {
        Ok(engine) => engine,
        Err(e) => {
            if let Some(bar) = &bar {
                bar.finish_and_clear();
            }
            eprintln!("statelog wal compact: cannot open {}: {e}", dir.display());
            return ExitCode::from(1);
        }
    };
    if let Some(bar) = &bar {
        bar.set_message("finding expired executions");
    }
    let mut last = CompactionProgress::default();
    let result = engine.compact_with_progress(|progress| {
        last = *progress;
        if let Some(bar) = &bar {
            bar.set_length(progress.segments_total_count);
            bar.set_position(progress.segments_scanned_count);
            bar.set_message(bar_message(progress));
        }
    });
    if let Some(bar) = &bar {
        bar.finish_and_clear();
    }
    match result {
        Ok(report) => {
            println!("{}", summary_line(&report, &last));
            ExitCode::SUCCESS
        }
        Err(e) => {
            eprintln!("statelog wal compact: {e}");
            ExitCode::from(1)
        }
    }
}
