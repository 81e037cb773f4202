//! The `statelog wal` command line contracts, run against the built binary: `append-test` acks
//! exactly what `dump` then shows; `dump` text and `--json` agree and honour `--from`; `stats`
//! counts; `verify` exits 0 on a clean log, 2 on a torn tail (with the bytes dropped), 1 naming
//! segment and offset on corruption (a flipped bit in the last record after a clean close
//! included), 2 on a missing directory; bad arguments are refused with exit 2.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use base64::Engine as _;

/// Segment header bytes and record framing bytes, per `docs/wal-format.md`.
const SEGMENT_HEADER_SIZE_BYTES: u64 = 64;
const RECORD_HEADER_SIZE_BYTES: u64 = 16;
/// The sync mark that ends every syncing write: framing plus an 8-byte durable LSN.
const SYNC_MARK_SIZE_BYTES: u64 = 24;

fn statelog(args: &[&str], dir: &Path) -> Output {
    Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args(["wal"])
        .args(args.iter().take(1))
        .arg(dir)
        .args(args.iter().skip(1))
        .output()
        .expect("run statelog")
}

fn fresh_dir(name: &str) -> PathBuf {
    let dir = Path::new(env!("CARGO_TARGET_TMPDIR")).join(name);
    if dir.exists() {
        std::fs::remove_dir_all(&dir).expect("remove the previous run's directory");
    }
    dir
}

/// Runs `append-test` and returns its acks as lsn -> crc text.
fn append(dir: &Path, threads: u32, count: u64, size: usize) -> BTreeMap<u64, String> {
    let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
        .args(["wal", "append-test", "--dir"])
        .arg(dir)
        .args([
            "--threads",
            &threads.to_string(),
            "--count",
            &count.to_string(),
            "--size",
            &size.to_string(),
            "--segment-size",
            "65536",
        ])
        .output()
        .expect("run append-test");
    assert!(
        output.status.success(),
        "append-test failed: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    let text = String::from_utf8(output.stdout).expect("UTF-8 acks");
    let mut acks = BTreeMap::new();
    for line in text.lines() {
        let words: Vec<&str> = line.split(' ').collect();
        assert_eq!(words.len(), 3, "ack line {line:?}");
        assert_eq!(words[0], "ack");
        assert_eq!(words[2].len(), 8, "crc is 8 hex digits: {line:?}");
        assert!(words[2].bytes().all(|b| b.is_ascii_hexdigit()));
        let lsn: u64 = words[1].parse().expect("numeric lsn");
        assert!(
            acks.insert(lsn, words[2].to_owned()).is_none(),
            "lsn {lsn} acked twice"
        );
    }
    assert_eq!(acks.len() as u64, count, "one ack per append");
    acks
}

fn stdout_of(output: &Output) -> String {
    assert!(
        output.status.success(),
        "exit {}: {}",
        output.status,
        String::from_utf8_lossy(&output.stderr)
    );
    String::from_utf8(output.stdout.clone()).expect("UTF-8 output")
}

#[test]
fn append_test_acks_match_dump_text_and_json() {
    let dir = fresh_dir("wal_cli_dump");
    let acks = append(&dir, 4, 40, 33);
    let first_appended = *acks.keys().next().expect("acks");
    assert_eq!(first_appended, 1, "a new log starts at lsn 1");
    assert_eq!(*acks.keys().last().expect("acks"), 40, "lsns are dense");

    let text = stdout_of(&statelog(&["dump"], &dir));
    let json = stdout_of(&statelog(&["dump", "--json"], &dir));
    let text_lines: Vec<&str> = text.lines().collect();
    let json_lines: Vec<&str> = json.lines().collect();
    assert_eq!(text_lines.len(), 40);
    assert_eq!(json_lines.len(), 40);
    for (text_line, json_line) in text_lines.iter().zip(&json_lines) {
        let words: Vec<&str> = text_line.split(' ').collect();
        assert_eq!(words.len(), 5, "lsn kind length crc payload: {text_line:?}");
        let value: serde_json::Value = serde_json::from_str(json_line).expect("JSON line");
        let lsn = value["lsn"].as_u64().expect("lsn");
        assert_eq!(words[0], lsn.to_string());
        assert_eq!(words[1], "1", "append-test writes kind 1");
        assert_eq!(value["kind"].as_u64(), Some(1));
        assert_eq!(words[2], "33");
        assert_eq!(value["length"].as_u64(), Some(33));
        let payload = base64::engine::general_purpose::STANDARD
            .decode(value["payload"].as_str().expect("payload"))
            .expect("base64 payload");
        let hex: String = payload.iter().map(|b| format!("{b:02x}")).collect();
        assert_eq!(words[4], hex, "text and JSON payloads agree");
        let crc = format!("{:08x}", crc32fast::hash(&payload));
        assert_eq!(words[3], crc);
        assert_eq!(value["crc"].as_str(), Some(crc.as_str()));
        assert_eq!(acks[&lsn], crc, "the ack names the payload dump shows");
    }

    let from = stdout_of(&statelog(&["dump", "--from", "31"], &dir));
    let lsns: Vec<&str> = from
        .lines()
        .map(|l| l.split(' ').next().expect("lsn"))
        .collect();
    let expected: Vec<String> = (31..=40).map(|l: u64| l.to_string()).collect();
    assert_eq!(lsns, expected);

    let stats = stdout_of(&statelog(&["stats"], &dir));
    assert!(stats.contains("records: 40\n"), "{stats}");
    assert!(stats.contains("payload_bytes: 1320\n"), "{stats}");
    assert!(stats.contains("lsn_range: 1..=40\n"), "{stats}");
    assert!(stats.contains("segments: 1\n"), "{stats}");

    // Appending again continues the LSNs.
    let more = append(&dir, 1, 2, 5);
    assert_eq!(more.keys().copied().collect::<Vec<_>>(), vec![41, 42]);
    std::fs::remove_dir_all(&dir).expect("clean up");
}

fn segment_file(dir: &Path, id: u64) -> PathBuf {
    dir.join(format!("{id:020}.wal"))
}

fn flip_byte(path: &Path, offset: u64) {
    let mut bytes = std::fs::read(path).expect("read the segment");
    let index = usize::try_from(offset).expect("offset fits usize");
    bytes[index] ^= 0x5a;
    std::fs::write(path, bytes).expect("write the segment back");
}

/// Writes `bytes` at `offset` of a segment file.
fn write_at(path: &Path, offset: u64, bytes: &[u8]) {
    let mut image = std::fs::read(path).expect("read the segment");
    let start = usize::try_from(offset).expect("offset fits usize");
    image[start..start + bytes.len()].copy_from_slice(bytes);
    std::fs::write(path, image).expect("write the segment back");
}

#[test]
fn verify_exit_codes_clean_torn_tail_and_corrupt() {
    let dir = fresh_dir("wal_cli_verify");
    // One writer: each append is its own write, a 36-byte record then its 24-byte sync mark.
    append(&dir, 1, 10, 20);
    let clean = statelog(&["verify"], &dir);
    let clean_text = stdout_of(&clean);
    assert_eq!(clean.status.code(), Some(0));
    assert!(
        clean_text.starts_with("ok: 10 records, lsn 1..=10"),
        "{clean_text}"
    );
    assert!(!clean_text.contains("torn tail"), "{clean_text}");

    let record_size_bytes = RECORD_HEADER_SIZE_BYTES + 20;
    let write_size_bytes = record_size_bytes + SYNC_MARK_SIZE_BYTES;
    let end = SEGMENT_HEADER_SIZE_BYTES + 10 * write_size_bytes;
    let segment = segment_file(&dir, 1);
    // A crash tore the write of an eleventh record: its header and half its payload reached
    // the disk. A torn tail: exit 2, with the bytes open drops (the frame its header states).
    let mut torn_frame = vec![0xa5u8; 4];
    torn_frame.extend_from_slice(&20u32.to_le_bytes());
    torn_frame.extend_from_slice(&(11u64 | (0x81u64 << 56)).to_le_bytes());
    torn_frame.extend_from_slice(&[0x3c; 10]);
    write_at(&segment, end, &torn_frame);
    let torn = statelog(&["verify"], &dir);
    assert_eq!(torn.status.code(), Some(2), "{torn:?}");
    let torn_text = String::from_utf8(torn.stdout.clone()).expect("UTF-8 output");
    assert!(torn_text.starts_with("ok: 10 records"), "{torn_text}");
    assert!(
        torn_text.contains(&format!("torn tail: segment 1 offset {end}")),
        "{torn_text}"
    );
    assert!(torn_text.contains("; 36 bytes dropped"), "{torn_text}");
    // Verify changed nothing: the tail is still there to be found again.
    assert_eq!(statelog(&["verify"], &dir).stdout, torn.stdout);
    write_at(&segment, end, &vec![0; torn_frame.len()]);
    assert_eq!(statelog(&["verify"], &dir).status.code(), Some(0));

    // A flipped bit in the last, acknowledged record after a clean close: corruption, exit 1.
    let last = SEGMENT_HEADER_SIZE_BYTES + 9 * write_size_bytes;
    flip_byte(&segment, last + RECORD_HEADER_SIZE_BYTES + 3);
    let corrupt = statelog(&["verify"], &dir);
    assert_eq!(corrupt.status.code(), Some(1), "{corrupt:?}");
    let stderr = String::from_utf8_lossy(&corrupt.stderr);
    assert!(
        stderr.contains(&format!("corrupt: segment 1 offset {last}")),
        "{stderr}"
    );
    // dump and stats refuse the corrupt log the same way.
    assert_eq!(statelog(&["dump"], &dir).status.code(), Some(1));
    assert_eq!(statelog(&["stats"], &dir).status.code(), Some(1));
    flip_byte(&segment, last + RECORD_HEADER_SIZE_BYTES + 3);

    // Damage inside record 3 with valid records after it: corruption, exit 1, named.
    let offset = SEGMENT_HEADER_SIZE_BYTES + 2 * write_size_bytes;
    flip_byte(&segment, offset + RECORD_HEADER_SIZE_BYTES + 1);
    let corrupt = statelog(&["verify"], &dir);
    assert_eq!(corrupt.status.code(), Some(1), "{corrupt:?}");
    let stderr = String::from_utf8_lossy(&corrupt.stderr);
    assert!(
        stderr.contains(&format!("segment 1 offset {offset}")),
        "{stderr}"
    );
    std::fs::remove_dir_all(&dir).expect("clean up");
}

#[test]
fn missing_directory_and_bad_arguments_exit_2_or_3_for_verify() {
    let missing = fresh_dir("wal_cli_missing");
    // `verify` keeps 2 for a torn tail: a log it could not check at all is 3.
    for (command, code) in [("verify", 3), ("dump", 2), ("stats", 2)] {
        let output = statelog(&[command], &missing);
        assert_eq!(output.status.code(), Some(code), "{command}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains("is not a log directory"), "{stderr}");
    }
    assert!(!missing.exists(), "inspecting never creates the directory");

    let dir = fresh_dir("wal_cli_bad_args");
    for (args, needle) in [
        (
            vec!["--threads", "0", "--count", "1", "--size", "1"],
            "--threads",
        ),
        (
            vec!["--threads", "1", "--count", "1", "--size", "4194305"],
            "--size",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_statelog"))
            .args(["wal", "append-test", "--dir"])
            .arg(&dir)
            .args(&args)
            .output()
            .expect("run append-test");
        assert_eq!(output.status.code(), Some(2), "{args:?}: {output:?}");
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(stderr.contains(needle), "{args:?}: {stderr}");
        assert!(output.stdout.is_empty(), "nothing acked");
    }
}
