//! `statelog wal ...`: operator commands over a WAL directory (verify, dump, stats) and the
//! `append-test` workload that external crash tests kill with SIGKILL.
//!
//! Contracts (scripts and `tests/statelog/wal_crash.rs` depend on them):
//! - `verify DIR` exits 0 for a clean log; 1 with `segment S offset O` on corruption; 2 on a
//!   torn tail of the newest segment (not corruption: the unacknowledged end of a crashed write,
//!   which open truncates), with a line `torn tail: segment S offset O: ... N bytes dropped ...`;
//!   3 when it could not check the log at all (missing directory, I/O error), with an `error:`
//!   line, so each exit code of `verify` means one thing. The other commands exit 2 on any
//!   failure.
//! - `dump DIR [--from LSN] [--json]` prints one line per record: `lsn kind length crc payload`;
//!   `crc` is the CRC32 of the payload as 8 hex digits (the value `append-test` acknowledges),
//!   the payload is hex, or base64 in `--json` (one JSON object per line).
//! - `append-test` prints `ack <lsn> <crc32-of-payload-as-8-hex>` only after the append is
//!   durable, one whole line per write with stdout locked and flushed.
//!
//! - `verify DIR` also decodes every payload of a statelog store's log (one that holds a state
//!   machine or catalog record) through the store's own decoder (`engine::inspect::check_record`): a
//!   record whose checksum held but that does not decode is printed as `undecodable: segment S
//!   lsn L kind K execution ARN: reason` and verify exits 1. A log of bare records (as
//!   `append-test` writes) has only its frames checked. A record whose format version is newer
//!   than this build reads (a newer statelog wrote the log) exits 3 with `error: segment S lsn
//!   L kind K: FORMAT format version N, written by a newer statelog: ...`.
//!
//! Invariants: verify, dump and stats open the log read-only and never change a byte of it.
//! This module must not interpret records itself (verify asks the store's decoder) and never
//! panics on bad input: every failure is an [`Error`] printed with its evidence.

use std::io::{self, Write};
use std::ops::ControlFlow;
use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};

use base64::Engine as _;
use clap::Subcommand;
use statelog::engine::inspect::{
    self, check_record, is_store_marker, Durability, Lsn, NewerVersion, Record, RecordCheck,
    RecordKind, RecoveryReport, Wal, WalError, WalOptions, RECORD_SIZE_BYTES_MAX,
};
use statelog::limits::{APPEND_TEST_RECORDS_MAX, APPEND_TEST_THREADS_MAX};
use statelog_rng::Rng;

/// Exit code of `verify` when the log is corrupt.
const EXIT_CORRUPT: u8 = 1;
/// Exit code of `verify` when the newest segment ends in a torn tail.
const EXIT_TORN_TAIL: u8 = 2;
/// Exit code of `verify` when it could not check the log (missing directory, I/O error).
const EXIT_VERIFY_FAILURE: u8 = 3;
/// Exit code of any other failure.
const EXIT_FAILURE: u8 = 2;
/// The record kind `append-test` writes.
const APPEND_TEST_KIND: u8 = 1;

/// The `wal` subcommands.
#[derive(Debug, Subcommand)]
pub enum WalCommand {
    /// Check every record of the log; exit 0 when clean, 1 with segment and offset when corrupt,
    /// 2 with the bytes dropped when the newest segment ends in a torn tail. The payloads of a
    /// store's log are decoded too: 1 with segment, LSN and execution when one does not decode,
    /// 3 when one has a format version newer than this build reads.
    Verify {
        /// The log directory.
        dir: PathBuf,
    },
    /// Forget executions past retention and reclaim their segments.
    Compact {
        /// The data directory.
        dir: PathBuf,
        /// Keep closed executions this many days (default 90).
        #[arg(long)]
        retention_days: Option<u64>,
    },
    /// Print one line per record: lsn, kind, length, crc32 of the payload, payload.
    Dump {
        /// The log directory.
        dir: PathBuf,
        /// Start at this LSN.
        #[arg(long, value_name = "LSN")]
        from: Option<u64>,
        /// One JSON object per line, payload in base64.
        #[arg(long)]
        json: bool,
    },
    /// Print segments, records, bytes and the LSN range.
    Stats {
        /// The log directory.
        dir: PathBuf,
    },
    /// Append random payloads from many threads with group commit; print `ack <lsn> <crc32>`
    /// after each durable acknowledgement.
    AppendTest {
        /// The log directory (created if missing).
        #[arg(long)]
        dir: PathBuf,
        /// Writer threads.
        #[arg(long, default_value_t = 1)]
        threads: u32,
        /// Appends in total, spread over the threads.
        #[arg(long)]
        count: u64,
        /// Payload size of every record.
        #[arg(long, value_name = "BYTES")]
        size: usize,
        /// Segment size of a new log (default: the WAL's default).
        #[arg(long, value_name = "BYTES")]
        segment_size: Option<u64>,
        /// Seed of the payload generator (default: from the OS).
        #[arg(long)]
        seed: Option<u64>,
    },
}

/// What can go wrong in a `wal` subcommand.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// The log itself refused (corruption, I/O, limits); carries the WAL's evidence.
    #[error(transparent)]
    Wal(#[from] WalError),
    /// The directory to inspect does not exist or is not a directory.
    #[error("{} is not a log directory", path.display())]
    NotADirectory {
        /// The path given.
        path: PathBuf,
    },
    /// `append-test --threads` outside `1..=limit`.
    #[error("invalid --threads: {threads} is outside 1..={limit}")]
    ThreadsOutOfRange {
        /// The threads asked for.
        threads: u32,
        /// The most allowed ([`APPEND_TEST_THREADS_MAX`]).
        limit: u32,
    },
    /// `append-test --count` above the limit.
    #[error("invalid --count: {count} exceeds {limit}")]
    TooManyRecords {
        /// The records asked for.
        count: u64,
        /// The most allowed ([`APPEND_TEST_RECORDS_MAX`]).
        limit: u64,
    },
    /// `append-test --size` above the WAL's record limit.
    #[error("invalid --size: {size_bytes} exceeds the record limit of {limit_bytes} bytes")]
    RecordTooLarge {
        /// The payload size asked for.
        size_bytes: usize,
        /// The WAL's limit ([`RECORD_SIZE_BYTES_MAX`]).
        limit_bytes: usize,
    },
    /// Writing to stdout failed (other than the reader going away).
    #[error("cannot write output: {0}")]
    Output(#[source] io::Error),
    /// The log returned records out of LSN order: corruption the frames did not reveal.
    #[error("lsn {next} read after lsn {previous}: records out of order")]
    LsnOrder {
        /// The LSN read before.
        previous: Lsn,
        /// The LSN read after it.
        next: Lsn,
    },
    /// Records of a store's log passed their checksum but do not decode (each printed above).
    #[error("{count} records pass their checksum but do not decode")]
    Undecodable {
        /// How many.
        count: usize,
    },
    /// A record of a store's log has a format version newer than this build reads: a newer
    /// statelog wrote it, and this build cannot check it.
    #[error(
        "segment {segment} lsn {lsn} kind {kind}: {newer}; check this log with that version or a newer one"
    )]
    NewerFormat {
        /// The segment holding the record (`?` when unknown).
        segment: String,
        /// The record's LSN.
        lsn: Lsn,
        /// The record's kind.
        kind: u8,
        /// Its format, the version found and the newest this build reads.
        newer: NewerVersion,
    },
    /// The OS random source failed (`getrandom::Error` is not a `std` error without its `std`
    /// feature, so it is carried as a value, not as a source).
    #[error("cannot seed the payload generator: {0}")]
    Random(getrandom::Error),
    /// `verify` found a torn tail (already reported on stdout): the log is not clean.
    #[error("torn tail of {dropped_bytes} bytes")]
    TornTail {
        /// The bytes open drops.
        dropped_bytes: u64,
    },
}

/// Runs one `wal` subcommand.
pub fn run(command: WalCommand) -> ExitCode {
    let failure_code = match command {
        WalCommand::Verify { .. } => EXIT_VERIFY_FAILURE,
        _ => EXIT_FAILURE,
    };
    let result = match command {
        // Compaction goes through the engine (it must know which executions are retained).
        WalCommand::Compact {
            dir,
            retention_days,
        } => return super::compact::run(&dir, retention_days),
        WalCommand::Verify { dir } => verify(&dir),
        WalCommand::Dump { dir, from, json } => dump(&dir, from.map(Lsn), json),
        WalCommand::Stats { dir } => stats(&dir),
        WalCommand::AppendTest {
            dir,
            threads,
            count,
            size,
            segment_size,
            seed,
        } => append_test(&AppendTest {
            dir,
            threads,
            count,
            size_bytes: size,
            segment_size_bytes: segment_size,
            seed,
        }),
    };
    match result {
        Ok(()) => ExitCode::SUCCESS,
        // A closed stdout (`dump | head`) is the reader's choice, not a failure.
        Err(Error::Output(e)) if e.kind() == io::ErrorKind::BrokenPipe => ExitCode::SUCCESS,
        Err(Error::Wal(WalError::Corrupt {
            segment_id,
            offset_bytes,
            reason,
        })) => {
            eprintln!("corrupt: segment {segment_id} offset {offset_bytes}: {reason}");
            ExitCode::from(EXIT_CORRUPT)
        }
        Err(e @ Error::Undecodable { .. }) => {
            eprintln!("corrupt: {e}");
            ExitCode::from(EXIT_CORRUPT)
        }
        // The torn-tail line is already on stdout.
        Err(Error::TornTail { .. }) => ExitCode::from(EXIT_TORN_TAIL),
        Err(e @ Error::LsnOrder { .. }) => {
            eprintln!("corrupt: {e}");
            ExitCode::from(EXIT_CORRUPT)
        }
        Err(e) => {
            eprintln!("error: {e}");
            ExitCode::from(failure_code)
        }
    }
}

/// Opens an existing log without changing it.
fn open_read_only(dir: &Path) -> Result<(Wal, RecoveryReport), Error> {
    if !dir.is_dir() {
        return Err(Error::NotADirectory {
            path: dir.to_path_buf(),
        });
    }
    Ok(inspect::open_read_only(dir)?)
}

/// What a full scan saw.
#[derive(Debug, Default)]
struct ScanSummary {
    records_count: u64,
    payload_bytes: u64,
    first_lsn: Option<Lsn>,
    last_lsn: Option<Lsn>,
}

/// Scans every record once, summing them up and handing each to `inspect` (which sees the
/// records in LSN order).
fn scan_all(wal: &Wal, mut inspect: impl FnMut(&Record<'_>)) -> Result<ScanSummary, Error> {
    let mut summary = ScanSummary::default();
    let mut order_error = None;
    wal.scan_from(Lsn(0), |record| {
        if let Some(last) = summary.last_lsn {
            if record.lsn <= last {
                order_error = Some((last, record.lsn));
                return ControlFlow::Break(());
            }
        }
        inspect(&record);
        summary.records_count += 1;
        summary.payload_bytes += record.payload.len() as u64;
        summary.first_lsn.get_or_insert(record.lsn);
        summary.last_lsn = Some(record.lsn);
        ControlFlow::Continue(())
    })?;
    if let Some((last, next)) = order_error {
        return Err(Error::LsnOrder {
            previous: last,
            next,
        });
    }
    Ok(summary)
}

fn lsn_range(summary: &ScanSummary) -> String {
    match (summary.first_lsn, summary.last_lsn) {
        (Some(first), Some(last)) => format!("{first}..={last}"),
        _ => "empty".to_owned(),
    }
}

fn verify(dir: &Path) -> Result<(), Error> {
    let (wal, report) = open_read_only(dir)?;
    // Open already checked every frame; scanning reads every record back through the public
    // path, so a reader-side fault shows up here too.
    let mut payloads = PayloadCheck::default();
    let summary = scan_all(&wal, |record| payloads.visit(record))?;
    payloads.finish(&wal)?;
    let segments_count = wal.segments().len();
    let mut out = io::stdout().lock();
    writeln!(
        out,
        "ok: {} records, lsn {}, {segments_count} segments, {} bytes scanned",
        summary.records_count,
        lsn_range(&summary),
        report.bytes_scanned
    )
    .map_err(Error::Output)?;
    if let Some(torn) = &report.torn_tail {
        // Not corruption: the unacknowledged end of the newest segment, which open truncates.
        // Still not a clean log: a crash tore a write, and the operator should know.
        writeln!(
            out,
            "torn tail: segment {} offset {}: {}; {} bytes dropped ({} complete records past it are dropped on open)",
            torn.segment_id,
            torn.offset_bytes,
            torn.reason,
            torn.dropped_bytes,
            torn.records_dropped_count
        )
        .map_err(Error::Output)?;
        return Err(Error::TornTail {
            dropped_bytes: torn.dropped_bytes,
        });
    }
    Ok(())
}

/// Decodes every payload of a store's log with the store's own decoder, during verify's one
/// scan, and prints each record that does not read (`undecodable: segment S lsn L kind K
/// execution ARN: reason`, on stderr). A log without a state machine or catalog record holds
/// no store records (every execution needs its machine, and machine records are never
/// compacted): its payloads are not the store's, and only their frames are checked.
#[derive(Debug, Default)]
struct PayloadCheck {
    store_log: bool,
    undecodable: Vec<Undecodable>,
    /// The first record a newer build wrote.
    newer: Option<NewerRecord>,
}

/// A record whose format version is newer than this build reads.
#[derive(Debug)]
struct NewerRecord {
    lsn: Lsn,
    kind: u8,
    newer: NewerVersion,
}

/// One record whose checksum held but that does not decode.
#[derive(Debug)]
struct Undecodable {
    lsn: Lsn,
    kind: u8,
    execution_arn: Option<String>,
    reason: String,
}

impl PayloadCheck {
    fn visit(&mut self, record: &Record<'_>) {
        let kind = record.kind.get();
        self.store_log |= is_store_marker(record.kind);
        let (execution_arn, reason) = match check_record(record) {
            RecordCheck::Readable { .. } => return,
            RecordCheck::UnknownKind => (None, "a record kind this build does not know".to_owned()),
            RecordCheck::Newer(newer) => {
                self.newer.get_or_insert(NewerRecord {
                    lsn: record.lsn,
                    kind,
                    newer,
                });
                return;
            }
            RecordCheck::Damaged {
                execution_arn,
                reason,
            } => (execution_arn, reason.to_string()),
        };
        self.undecodable.push(Undecodable {
            lsn: record.lsn,
            kind,
            execution_arn,
            reason,
        });
    }

    fn finish(self, wal: &Wal) -> Result<(), Error> {
        if !self.store_log {
            return Ok(());
        }
        let segments = wal.segments();
        let segment_of = |lsn: Lsn| {
            segments
                .iter()
                .rev()
                .find(|s| s.first_lsn <= lsn)
                .map_or_else(|| "?".to_owned(), |s| s.segment_id.to_string())
        };
        for record in &self.undecodable {
            let execution = record.execution_arn.as_deref().unwrap_or("unknown");
            eprintln!(
                "undecodable: segment {} lsn {} kind {} execution {execution}: {}",
                segment_of(record.lsn),
                record.lsn,
                record.kind,
                record.reason
            );
        }
        // This build cannot judge a newer build's records: that is "could not check", not
        // corruption.
        if let Some(newer) = self.newer {
            return Err(Error::NewerFormat {
                segment: segment_of(newer.lsn),
                lsn: newer.lsn,
                kind: newer.kind,
                newer: newer.newer,
            });
        }
        if self.undecodable.is_empty() {
            return Ok(());
        }
        Err(Error::Undecodable {
            count: self.undecodable.len(),
        })
    }
}

fn dump(dir: &Path, from: Option<Lsn>, json: bool) -> Result<(), Error> {
    let (wal, _report) = open_read_only(dir)?;
    let mut out = io::BufWriter::new(io::stdout().lock());
    let mut write_error = None;
    wal.scan_from(from.unwrap_or(Lsn(0)), |record| {
        let crc = crc32fast::hash(record.payload);
        let written = if json {
            let mut line = serde_json::json!({
                "lsn": record.lsn.0,
                "kind": record.kind.get(),
                "length": record.payload.len(),
                "crc": format!("{crc:08x}"),
                "payload": base64::engine::general_purpose::STANDARD.encode(record.payload),
            });
            if let Some(original) = record.copied_from {
                line["copied_from"] = serde_json::json!(original.0);
            }
            writeln!(out, "{line}")
        } else {
            writeln!(
                out,
                "{} {} {} {crc:08x} {}",
                record.lsn,
                record.kind.get(),
                record.payload.len(),
                Hex(record.payload)
            )
        };
        match written {
            Ok(()) => ControlFlow::Continue(()),
            Err(e) => {
                write_error = Some(e);
                ControlFlow::Break(())
            }
        }
    })?;
    if let Some(e) = write_error {
        return Err(Error::Output(e));
    }
    out.flush().map_err(Error::Output)
}

/// Lower-case hex of a byte string, written without an intermediate allocation.
struct Hex<'a>(&'a [u8]);

impl std::fmt::Display for Hex<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        self.0.iter().try_for_each(|b| write!(f, "{b:02x}"))
    }
}

fn stats(dir: &Path) -> Result<(), Error> {
    let (wal, _report) = open_read_only(dir)?;
    let summary = scan_all(&wal, |_| {})?;
    let segments = wal.segments();
    let file_bytes: u64 = segments.iter().map(|s| s.size_bytes).sum();
    let mut out = io::stdout().lock();
    let mut line = |text: String| writeln!(out, "{text}").map_err(Error::Output);
    line(format!("segments: {}", segments.len()))?;
    line(format!("records: {}", summary.records_count))?;
    line(format!("payload_bytes: {}", summary.payload_bytes))?;
    line(format!("file_bytes: {file_bytes}"))?;
    line(format!("lsn_range: {}", lsn_range(&summary)))?;
    for segment in &segments {
        let last = segment
            .last_lsn
            .map_or_else(|| "-".to_owned(), |l| l.to_string());
        line(format!(
            "segment {}: lsn {}..={last}, {} bytes{}",
            segment.segment_id,
            segment.first_lsn,
            segment.size_bytes,
            if segment.active { ", active" } else { "" }
        ))?;
    }
    Ok(())
}

/// Arguments of `append-test`, checked.
struct AppendTest {
    dir: PathBuf,
    threads: u32,
    count: u64,
    size_bytes: usize,
    segment_size_bytes: Option<u64>,
    seed: Option<u64>,
}

fn append_test(args: &AppendTest) -> Result<(), Error> {
    if args.threads == 0 || args.threads > APPEND_TEST_THREADS_MAX {
        return Err(Error::ThreadsOutOfRange {
            threads: args.threads,
            limit: APPEND_TEST_THREADS_MAX,
        });
    }
    if args.count > APPEND_TEST_RECORDS_MAX {
        return Err(Error::TooManyRecords {
            count: args.count,
            limit: APPEND_TEST_RECORDS_MAX,
        });
    }
    if args.size_bytes > RECORD_SIZE_BYTES_MAX {
        return Err(Error::RecordTooLarge {
            size_bytes: args.size_bytes,
            limit_bytes: RECORD_SIZE_BYTES_MAX,
        });
    }
    let seed = match args.seed {
        Some(seed) => seed,
        None => getrandom::u64().map_err(Error::Random)?,
    };
    let mut options = WalOptions {
        durability: Durability::GroupCommit,
        ..WalOptions::default()
    };
    if let Some(segment_size_bytes) = args.segment_size_bytes {
        options.segment_size_bytes = segment_size_bytes;
    }
    let (wal, report) = Wal::open(&args.dir, options)?;
    if let Some(torn) = &report.torn_tail {
        eprintln!(
            "append-test: truncated a torn tail in segment {} at offset {}: {}; {} bytes dropped",
            torn.segment_id, torn.offset_bytes, torn.reason, torn.dropped_bytes
        );
    }
    let kind = RecordKind::new(APPEND_TEST_KIND)?;
    let threads = u64::from(args.threads);
    let failed = AtomicBool::new(false);
    let results: Vec<Result<(), Error>> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|index| {
                // Thread `index` does an equal share, the first `count % threads` one more.
                let share = args.count / threads + u64::from(index < args.count % threads);
                let wal = &wal;
                let failed = &failed;
                scope.spawn(move || {
                    // Payload bytes need variety, not secrecy; the low bit set as before, so
                    // a `--seed` writes the payloads it wrote before.
                    let mut rng = Rng::xorshift64_star(
                        (seed ^ index.wrapping_mul(statelog_rng::GOLDEN_GAMMA)) | 1,
                    );
                    let mut payload = vec![0u8; args.size_bytes];
                    for _ in 0..share {
                        if failed.load(Ordering::Relaxed) {
                            break;
                        }
                        rng.fill_bytes(&mut payload);
                        let outcome =
                            wal.append(kind, &payload)
                                .map_err(Error::from)
                                .and_then(|lsn| {
                                    let crc = crc32fast::hash(&payload);
                                    // One locked, flushed write per ack: a kill never leaves half of
                                    // one ack glued to another.
                                    let mut out = io::stdout().lock();
                                    writeln!(out, "ack {lsn} {crc:08x}")
                                        .and_then(|()| out.flush())
                                        .map_err(Error::Output)
                                });
                        if let Err(e) = outcome {
                            failed.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                    }
                    Ok(())
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("append-test writer threads do not panic"))
            .collect()
    });
    results.into_iter().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn append_test_args(threads: u32, count: u64, size_bytes: usize) -> AppendTest {
        AppendTest {
            dir: PathBuf::from("/nonexistent/statelog-append-test"),
            threads,
            count,
            size_bytes,
            segment_size_bytes: None,
            seed: Some(1),
        }
    }

    /// The messages scripts read are the ones `invalid --ARG: REASON` printed before the
    /// arguments had a variant each.
    #[test]
    fn append_test_rejects_each_argument_with_its_limit() {
        let message = |args: AppendTest| match append_test(&args) {
            Err(e) => e.to_string(),
            Ok(()) => panic!("accepted"),
        };
        assert_eq!(
            message(append_test_args(0, 1, 1)),
            format!("invalid --threads: 0 is outside 1..={APPEND_TEST_THREADS_MAX}")
        );
        let too_many = APPEND_TEST_RECORDS_MAX + 1;
        assert_eq!(
            message(append_test_args(1, too_many, 1)),
            format!("invalid --count: {too_many} exceeds {APPEND_TEST_RECORDS_MAX}")
        );
        let too_large = RECORD_SIZE_BYTES_MAX + 1;
        assert_eq!(
            message(append_test_args(1, 1, too_large)),
            format!(
                "invalid --size: {too_large} exceeds the record limit of {RECORD_SIZE_BYTES_MAX} bytes"
            )
        );
    }
}
