//! Store tests on the in-memory log: appends, index, rebuild, history read-back, bad input.

use serde_json::json;

use super::*;
use statelog_core::history::{ErrorCause, EventId, ExecutionStarted, Output, StateEntered};

const MACHINE_ARN: &str = "arn:aws:states:us-east-1:000000000000:stateMachine:orders";

fn exec_arn(name: &str) -> String {
    format!("arn:aws:states:us-east-1:000000000000:execution:orders:{name}")
}

fn event(id: u32, details: EventDetails) -> HistoryEvent {
    HistoryEvent {
        id: EventId(id),
        previous_event_id: id.saturating_sub(1),
        timestamp_ms: 1_000 + u64::from(id),
        details,
        scope: Vec::new(),
        timer: None,
    }
}

fn started(name: &str) -> HistoryEvent {
    event(
        1,
        EventDetails::ExecutionStarted(Box::new(ExecutionStarted {
            input: json!({"n": name}).into(),
            input_text: None,
            map_run_arn: None,
            input_truncated: false,
            role_arn: "arn:aws:iam::000000000000:role/r".into(),
            state_machine_alias_arn: None,
            state_machine_version_arn: None,
            execution_arn: exec_arn(name),
            state_machine_arn: MACHINE_ARN.into(),
        })),
    )
}

fn entered(id: u32) -> HistoryEvent {
    event(
        id,
        EventDetails::PassStateEntered(StateEntered {
            name: "A".into(),
            input: json!({}).into(),
            input_truncated: false,
        }),
    )
}

fn open_store(log: Arc<dyn Log>) -> Store {
    Store::open(log).expect("opens")
}

#[test]
fn appends_index_and_rebuild_agree() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log.clone());
    assert!(store.open_executions().is_empty());
    let machine = store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    assert!(matches!(
        store.create_machine("orders", "{}", "role", crate::MachineType::Standard, 6),
        Err(Error::MachineExists { .. })
    ));

    store
        .append_events(&exec_arn("a"), &[started("a"), entered(2)])
        .expect("appends");
    store
        .append_events(
            &exec_arn("a"),
            &[event(
                3,
                EventDetails::ExecutionSucceeded(Output {
                    output: json!(1).into(),
                    output_truncated: false,
                }),
            )],
        )
        .expect("appends");
    store
        .append_events(&exec_arn("b"), &[started("b")])
        .expect("appends");

    let a = store.execution(&exec_arn("a")).expect("indexed");
    assert_eq!(a.status, ExecutionStatus::Succeeded);
    assert_eq!(a.event_count, 3);
    assert_eq!(a.start_ms, 1_001);
    assert_eq!(a.stop_ms, Some(1_003));
    assert_eq!(a.machine_lsn, machine.lsn);
    let history = store.history(&exec_arn("a")).expect("reads");
    assert_eq!(history.len(), 3);
    let (first, last) = store.first_and_last_events(&exec_arn("a")).expect("reads");
    assert_eq!(first.id, EventId(1));
    assert_eq!(last.id, EventId(3));

    let listed = store.executions(Some(machine.lsn), None, None, 10);
    let names: Vec<_> = listed.iter().map(|e| e.execution_arn.to_string()).collect();
    assert_eq!(names, [exec_arn("b"), exec_arn("a")]);
    let running = store.executions(None, Some(ExecutionStatus::Running), None, 10);
    assert_eq!(running.len(), 1);
    let page = store.executions(None, None, Some(listed[0].start_index), 10);
    assert_eq!(page.len(), 1);
    assert_eq!(&*page[0].execution_arn, exec_arn("a"));
    assert_eq!(store.open_executions().len(), 1);

    // A second store over the same log rebuilds the same index from the batch headers.
    let again = open_store(log);
    assert_eq!(again.open_executions().len(), 1);
    assert_eq!(again.execution(&exec_arn("a")), Some(a));
    assert_eq!(again.history(&exec_arn("a")).expect("reads"), history);
    assert_eq!(again.machine("orders").expect("live").lsn, machine.lsn);
    // The first store answered from the ends it kept at append; the second reads the log: the
    // same events either way.
    assert_eq!(
        again.first_and_last_events(&exec_arn("a")).expect("reads"),
        (first, last)
    );
    assert_eq!(
        again.first_and_last_events(&exec_arn("b")).expect("reads"),
        store.first_and_last_events(&exec_arn("b")).expect("reads")
    );
}

#[test]
fn history_range_reads_the_events_asked_for() {
    let store = open_store(Arc::new(MemoryLog::new()));
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    let arn = exec_arn("long");
    store
        .append_events(&arn, &[started("long"), entered(2), entered(3)])
        .expect("appends");
    for id in 4..=10 {
        store.append_events(&arn, &[entered(id)]).expect("appends");
    }
    let whole = store.history(&arn).expect("reads");
    for (first, last) in [
        (1, 0),
        (1, 1),
        (1, 3),
        (2, 2),
        (2, 5),
        (3, 4),
        (4, 10),
        (0, 10),
        (7, 10),
    ] {
        let range = store.history_range(&arn, first..=last).expect("reads");
        let expected: Vec<_> = whole
            .iter()
            .filter(|e| (first..=last).contains(&e.id.0))
            .cloned()
            .collect();
        assert_eq!(range, expected, "{first}..={last}");
    }
    assert_eq!(store.history_range(&arn, 1..=99).expect("reads"), whole);
    assert_eq!(
        store.history_range(&arn, 9..=99).expect("reads"),
        whole[8..]
    );
    assert!(matches!(
        store.history_range(&exec_arn("nobody"), 1..=3),
        Err(Error::UnknownExecution { .. })
    ));
}

/// A read of a durable record does not sync the log because a newer record is unsynced; a
/// read of the unsynced one does.
#[test]
fn a_read_syncs_only_for_a_record_not_yet_durable() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log.clone());
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    store
        .append_events(&exec_arn("a"), &[started("a"), entered(2)])
        .expect("appends");
    let durable = log.stats().durable_lsn;
    let b = exec_arn("b");
    let events = [started("b")];
    let prepared = store.prepare_events(&b, &events).expect("prepares");
    store
        .append_prepared_unsynced(prepared)
        .expect("appends unsynced");
    assert_eq!(log.stats().durable_lsn, durable, "not synced yet");
    assert_eq!(store.history(&exec_arn("a")).expect("reads").len(), 2);
    assert_eq!(
        log.stats().durable_lsn,
        durable,
        "a durable record is read without a sync"
    );
    assert_eq!(store.history(&b).expect("reads").len(), 1);
    assert!(
        log.stats().durable_lsn > durable,
        "the unsynced one synced first"
    );
}

#[test]
fn refuses_gaps_unstarted_executions_and_unknown_machines() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log);
    assert!(matches!(
        store.append_events(&exec_arn("a"), &[started("a")]),
        Err(Error::UnknownMachine { .. })
    ));
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    assert!(matches!(
        store.append_events(&exec_arn("a"), &[entered(1)]),
        Err(Error::NotStarted { .. })
    ));
    store
        .append_events(&exec_arn("a"), &[started("a")])
        .expect("appends");
    assert!(matches!(
        store.append_events(&exec_arn("a"), &[entered(3)]),
        Err(Error::BadSequence { .. })
    ));
    assert!(matches!(
        store.history(&exec_arn("zz")),
        Err(Error::UnknownExecution { .. })
    ));
}

#[test]
fn deleted_machines_stay_readable_by_lsn_and_names_can_be_reused() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log.clone());
    let first = store
        .create_machine("orders", "{1}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    store.delete_machine("orders", 6).expect("deletes");
    assert!(store.machine("orders").is_none());
    assert!(store.machine_at(first.lsn).expect("kept").deleted);
    assert!(matches!(
        store.delete_machine("orders", 7),
        Err(Error::UnknownMachine { .. })
    ));
    let second = store
        .create_machine("orders", "{2}", "role", crate::MachineType::Standard, 8)
        .expect("creates");
    assert_ne!(first.lsn, second.lsn);
    let again = open_store(log);
    assert_eq!(&*again.machine("orders").expect("live").definition, "{2}");
    assert_eq!(again.machines().len(), 1);
}

#[test]
fn undecodable_records_are_listed_as_damaged_and_unknown_kinds_fail_open() {
    // A record whose checksum held but that does not read is a bug: open lists it, it does not
    // refuse the whole log. A kind this build does not know is a newer build's log: refused.
    let log = Arc::new(MemoryLog::new());
    log.append_batch(&[(KIND_EVENTS, &[1, 2, 3])])
        .expect("appends");
    let store = Store::open(log).expect("opens");
    let damaged = store.damaged();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert_eq!((damaged[0].lsn, damaged[0].kind), (Lsn(1), KIND_EVENTS));
    assert_eq!(damaged[0].execution_arn, None, "no ARN reads from 3 bytes");
    let log = Arc::new(MemoryLog::new());
    log.append_batch(&[(99, b"x")]).expect("appends");
    assert!(matches!(
        Store::open(log),
        Err(Error::UnknownKind { lsn: 1, kind: 99 })
    ));
}

#[test]
fn a_closed_execution_costs_little_in_the_index() {
    let entry = std::mem::size_of::<Entry>();
    assert!(entry <= 96, "index entry is {entry} bytes");
    let _ = ErrorCause::default();
}

#[test]
fn fold_open_batches_yields_only_open_executions_in_log_order() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log.clone());
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    store
        .append_events(&exec_arn("open"), &[started("open")])
        .expect("appends");
    store
        .append_events(&exec_arn("shut"), &[started("shut")])
        .expect("appends");
    store
        .append_events(&exec_arn("open"), &[entered(2)])
        .expect("appends");
    store
        .append_events(
            &exec_arn("shut"),
            &[event(
                2,
                EventDetails::ExecutionFailed(ErrorCause::new("E", "c")),
            )],
        )
        .expect("appends");
    let again = open_store(log);
    for partitions in [1, 3] {
        let folded = again
            .fold_open_batches(partitions, Vec::new, |seen, batch| {
                seen.push((batch.execution_arn, batch.events[0].id.0));
                Ok::<(), String>(())
            })
            .expect("folds");
        assert_eq!(folded.len(), partitions);
        let seen: Vec<_> = folded.into_iter().flatten().collect();
        assert_eq!(seen, [(exec_arn("open"), 1), (exec_arn("open"), 2)]);
    }
    assert_eq!(
        again.execution(&exec_arn("shut")).expect("indexed").status,
        ExecutionStatus::Failed
    );
}

#[test]
fn batch_records_carry_exactly_the_history_encoding() {
    let events = [started("a"), entered(2)];
    let arn = exec_arn("a");
    // A reused buffer holding an earlier batch: the new record follows it untouched.
    let mut scratch = EncodeScratch::default();
    encode_chunks(&arn, &events[..1], &mut scratch).expect("encodes");
    let earlier = scratch.bytes.clone();
    encode_chunks(&arn, &events, &mut scratch).expect("encodes");
    assert_eq!(scratch.records.len(), 2);
    assert_eq!(&scratch.bytes[..earlier.len()], earlier.as_slice());
    let (end, indexed) = scratch.records[1];
    assert_eq!(end, scratch.bytes.len());
    let bytes = &scratch.bytes[earlier.len()..end];
    let (decoded_header, history_bytes) =
        record::decode_batch_header(bytes).expect("header decodes");
    assert_eq!(decoded_header.execution_arn, arn);
    assert_eq!(Indexed::of(&decoded_header.borrowed()), indexed);
    assert_eq!((indexed.first_event_id, indexed.last_event_id), (1, 2));
    assert!(decoded_header.started.is_some());
    assert_eq!(indexed.start_ms, decoded_header.started.map(|s| s.start_ms));
    let owned = EventBatch {
        execution_arn: exec_arn("a"),
        events: events.to_vec(),
    };
    assert_eq!(
        history_bytes,
        encoding::encode(&owned).expect("encodes").as_slice()
    );
}

#[test]
fn a_header_that_disagrees_with_its_events_is_caught_on_read() {
    let log = Arc::new(MemoryLog::new());
    let machine = record::encode_machine(&MachineRecord::Created {
        name: "orders".into(),
        definition: "{}".into(),
        role_arn: "role".into(),
        created_ms: 1,
        machine_type: crate::MachineType::Standard,
    })
    .expect("encodes");
    log.append_batch(&[(KIND_MACHINE, &machine)])
        .expect("appends");
    // The header claims events 1..=3, the batch holds only event 1.
    let arn = exec_arn("a");
    let first = [started("a")];
    let mut header = header_for(&arn, &first);
    header.last_event_id = 3;
    let history_bytes = encoding::encode(&EventBatch {
        execution_arn: exec_arn("a"),
        events: vec![started("a")],
    })
    .expect("encodes");
    let mut bytes = Vec::new();
    record::encode_batch_head_into(&header, &mut bytes).expect("encodes");
    bytes.extend_from_slice(&history_bytes);
    log.append_batch(&[(KIND_EVENTS, &bytes)]).expect("appends");
    let store = open_store(log);
    assert_eq!(
        store
            .execution(&exec_arn("a"))
            .expect("indexed")
            .event_count,
        3
    );
    assert!(matches!(
        store.history(&exec_arn("a")),
        Err(Error::Decode { lsn: 2, .. })
    ));
}

/// The bytes of an event batch record for `events` of `arn` whose stored JSON text of `payload`
/// is made invalid: the store's own encoder writes it, then one `}` of the payload's text turns
/// into `]`, so the record keeps its length (and a log computes a valid checksum over it) but
/// its events do not decode.
pub(super) fn undecodable_batch(arn: &str, events: &[HistoryEvent], payload: &str) -> Vec<u8> {
    let mut bytes = Vec::new();
    record::encode_batch_head_into(&header_for(arn, events), &mut bytes).expect("encodes");
    let history_bytes = encoding::encode(&EventBatch {
        execution_arn: arn.to_string(),
        events: events.to_vec(),
    })
    .expect("encodes");
    let at = history_bytes
        .windows(payload.len())
        .position(|w| w == payload.as_bytes())
        .expect("the payload's text is in the record");
    let mut history_bytes = history_bytes;
    let close = at + payload.rfind('}').expect("an object");
    history_bytes[close] = b']';
    assert!(encoding::decode(&history_bytes).is_err(), "damaged");
    bytes.extend_from_slice(&history_bytes);
    bytes
}

#[test]
fn an_undecodable_batch_damages_only_its_execution() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log.clone());
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    for name in ["a", "b"] {
        store
            .append_events(&exec_arn(name), &[started(name)])
            .expect("appends");
    }
    // b's second batch does not decode; a third batch of b follows it in the log.
    let bad = undecodable_batch(&exec_arn("b"), &[entered(2)], "{}");
    let bad_lsn = log.append_batch(&[(KIND_EVENTS, &bad)]).expect("appends");
    store
        .append_events(&exec_arn("a"), &[entered(2)])
        .expect("a goes on");

    let store = open_store(log.clone());
    assert!(store.damaged().is_empty(), "open reads headers only");
    assert!(store.history(&exec_arn("a")).is_ok());
    let read = store.history(&exec_arn("b"));
    assert!(
        matches!(&read, Err(Error::Damaged { execution_arn, lsn, .. })
            if *execution_arn == exec_arn("b") && *lsn == bad_lsn.0),
        "{read:?}"
    );
    let damaged = store.damaged();
    assert_eq!(damaged.len(), 1);
    assert_eq!(damaged[0].lsn, bad_lsn);
    assert_eq!(
        damaged[0].execution_arn.as_deref(),
        Some(exec_arn("b").as_str())
    );
    // Nothing more is appended to a damaged execution; the others go on.
    assert!(matches!(
        store.append_events(&exec_arn("b"), &[entered(3)]),
        Err(Error::Damaged { .. })
    ));
    store
        .append_events(&exec_arn("a"), &[entered(3)])
        .expect("a goes on");

    // Recovery's fold finds it too, and folds every other open execution.
    let store = open_store(log.clone());
    let folded = store
        .fold_open_batches(2, Vec::new, |seen: &mut Vec<String>, batch| {
            seen.push(batch.execution_arn);
            Ok::<(), String>(())
        })
        .expect("folds");
    let mut seen: Vec<String> = folded.into_iter().flatten().collect();
    seen.sort();
    assert_eq!(
        seen,
        [exec_arn("a"), exec_arn("a"), exec_arn("a"), exec_arn("b")]
    );
    assert_eq!(
        store.damage_of(&exec_arn("b")).map(|d| d.lsn),
        Some(bad_lsn)
    );
    assert!(store.damage_of(&exec_arn("a")).is_none());
}

#[test]
fn a_batch_header_that_does_not_read_damages_its_execution_from_there() {
    let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
    let store = open_store(log.clone());
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    for name in ["a", "b"] {
        store
            .append_events(&exec_arn(name), &[started(name)])
            .expect("appends");
    }
    // A header cut short after its ARN: the ARN reads, the rest does not.
    let mut bytes = Vec::new();
    record::encode_batch_head_into(&header_for(&exec_arn("b"), &[entered(2)]), &mut bytes)
        .expect("encodes");
    bytes.truncate(2 + exec_arn("b").len());
    let bad_lsn = log.append_batch(&[(KIND_EVENTS, &bytes)]).expect("appends");
    // A later batch of b that would follow it: b's history has a hole, so b stays damaged.
    let mut later = Vec::new();
    record::encode_batch_head_into(&header_for(&exec_arn("b"), &[entered(3)]), &mut later)
        .expect("encodes");
    later.extend(
        encoding::encode(&EventBatch {
            execution_arn: exec_arn("b"),
            events: vec![entered(3)],
        })
        .expect("encodes"),
    );
    log.append_batch(&[(KIND_EVENTS, &later)]).expect("appends");

    let store = open_store(log);
    let damaged = store.damaged();
    assert_eq!(damaged.len(), 1, "{damaged:?}");
    assert_eq!(damaged[0].lsn, bad_lsn);
    assert_eq!(
        damaged[0].execution_arn.as_deref(),
        Some(exec_arn("b").as_str())
    );
    assert_eq!(
        store
            .execution(&exec_arn("b"))
            .expect("indexed")
            .event_count,
        1
    );
    assert!(matches!(
        store.history(&exec_arn("b")),
        Err(Error::Damaged { lsn, .. }) if lsn == bad_lsn.0
    ));
    assert_eq!(store.history(&exec_arn("a")).expect("reads").len(), 1);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(32))]

    /// Any payload the interpreter can hold goes through the store's whole record encoding
    /// (envelope, header, events) and reads back equal, and `decode_record` (what
    /// `wal verify` runs) finds the record readable.
    #[test]
    fn any_payload_round_trips_through_the_store(
        value in statelog_core::history::encoding::test_values::any_value(),
        depth in 0..=statelog_core::limits::PAYLOAD_JSON_DEPTH_MAX,
    ) {
        use statelog_core::history::encoding::test_values::nested;
        let depth = depth.saturating_sub(statelog_core::history::depth::depth_up_to(&value, usize::MAX));
        let value = nested(value, depth);
        let log: Arc<dyn Log> = Arc::new(MemoryLog::new());
        let store = open_store(log.clone());
        store.create_machine("orders", "{}", "role", crate::MachineType::Standard, 5).expect("creates");
        let exited = event(
            2,
            EventDetails::PassStateExited(statelog_core::history::StateExited {
                name: "A".into(),
                output: value.clone().into(),
                output_truncated: false,
                assigned: None,
            }),
        );
        let events = vec![started("a"), exited];
        store.append_events(&exec_arn("a"), &events).expect("appends");
        let reopened = open_store(log.clone());
        proptest::prop_assert_eq!(reopened.history(&exec_arn("a")).expect("reads"), events);
        let mut checks = Vec::new();
        log.scan_with_origin(&mut |_, _, kind, payload| {
            checks.push(decode_record(kind, payload));
            Ok(())
        })
        .expect("scans");
        proptest::prop_assert!(
            checks.iter().all(|c| matches!(c, RecordCheck::Readable { .. })),
            "{:?}",
            checks
        );
    }
}

/// A Map Run record of `parent`'s run `run`: its opening, or one child's end.
fn map_run_record(run: &str, parent: &str, ended: Option<u64>) -> map_runs::MapRunRecord {
    use map_runs::{ChildEnd, ChildEndStatus, MapRunRecord, MapRunSettings};
    match ended {
        None => MapRunRecord::Opened {
            map_run_arn: run.into(),
            execution_arn: exec_arn(parent),
            start_ms: 1_001,
            settings: MapRunSettings {
                max_concurrency: 2,
                tolerated_failure_count: None,
                tolerated_failure_percentage: None,
            },
        },
        Some(index) => MapRunRecord::ChildrenEnded {
            map_run_arn: run.into(),
            execution_arn: exec_arn(parent),
            redrive_count: 0,
            ends: vec![ChildEnd {
                child_index: index,
                item_count: 1,
                status: ChildEndStatus::Succeeded,
                execution_arn: format!("{run}/{index}"),
                input: Some("{}".into()),
                output: Some("1".into()),
                error: None,
                cause: None,
                start_ms: 1_001,
                stop_ms: 1_002,
            }],
        },
    }
}

fn succeeded(id: u32) -> HistoryEvent {
    event(
        id,
        EventDetails::ExecutionSucceeded(Output {
            output: json!(1).into(),
            output_truncated: false,
        }),
    )
}

#[test]
fn compaction_drops_map_run_records_with_their_parent_and_keeps_them_while_it_is_open() {
    let dir = tempfile::tempdir().expect("tempdir");
    let wal_options = || statelog_wal::WalOptions {
        segment_size_bytes: 16 * 1024,
        background_preparation: false,
        ..statelog_wal::WalOptions::default()
    };
    let open = || -> (Store, Arc<dyn Log>) {
        let (wal, _) = statelog_wal::Wal::open(dir.path(), wal_options()).expect("opens");
        let log: Arc<dyn Log> = Arc::new(wal);
        (open_store(log.clone()), log)
    };
    let (store, first_log) = open();
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    // `done` runs a Map Run and closes; `open` runs one and stays open.
    for parent in ["done", "open"] {
        store
            .append_events(&exec_arn(parent), &[started(parent), entered(2)])
            .expect("appends");
        let run = format!("run-{parent}");
        store
            .append_map_run(map_run_record(&run, parent, None), true)
            .expect("appends");
        for index in 0..3 {
            store
                .append_map_run(map_run_record(&run, parent, Some(index)), false)
                .expect("appends");
        }
    }
    store
        .append_events(&exec_arn("done"), &[succeeded(3)])
        .expect("appends");
    // Closed padding fills sealed segments past both runs' records.
    let pad = "p".repeat(2_000);
    for i in 0..30 {
        let name = format!("pad{i}");
        let mut first = started(&name);
        if let EventDetails::ExecutionStarted(s) = &mut first.details {
            s.input = json!({ "pad": pad }).into();
        }
        store
            .append_events(&exec_arn(&name), &[first, succeeded(2)])
            .expect("appends");
    }
    // Kept while the parent's records are: a compaction that expires nothing keeps both.
    store.compact(0).expect("compacts");
    assert!(store.map_run("run-done").is_some());
    let compacted = store.compact(u64::MAX).expect("compacts");
    assert!(compacted.segments_deleted_count > 0, "{compacted:?}");
    assert!(
        store.execution(&exec_arn("done")).is_none(),
        "the parent expired"
    );
    assert!(
        store.map_run("run-done").is_none(),
        "dropped with its parent"
    );
    let kept = store
        .map_run("run-open")
        .expect("kept with its open parent");
    assert_eq!(kept.ends_record_count(), 3);
    drop(store);
    drop(first_log);
    // The log agrees: the dropped run's records are gone, the open one's read back.
    let (store, log) = open();
    assert!(store.map_run("run-done").is_none());
    let mut kinds = 0;
    log.scan(&mut |_, kind, payload| {
        if kind == map_runs::KIND_MAP_RUN {
            kinds += 1;
            let record = map_runs::decode_map_run(payload).expect("reads");
            assert_eq!(record.map_run_arn(), "run-open");
        }
        Ok(())
    })
    .expect("scans");
    assert_eq!(kinds, 4, "the open run's opening and its three ends");
    let mut ends = Vec::new();
    let mut position = 0;
    while let Some((_, e)) = store
        .map_run_children_ended("run-open", position)
        .expect("reads")
    {
        ends.extend(e.iter().map(|e| e.child_index));
        position += 1;
    }
    assert_eq!(ends, vec![0, 1, 2]);
}

#[test]
fn ends_kept_at_append_answer_nothing_for_a_damaged_execution() {
    let store = open_store(Arc::new(MemoryLog::new()));
    store
        .create_machine("orders", "{}", "role", crate::MachineType::Standard, 5)
        .expect("creates");
    let arn = exec_arn("a");
    store
        .append_events(&arn, &[started("a"), entered(2)])
        .expect("appends");
    assert!(store.first_and_last_events(&arn).is_ok());
    let lsn = store.last_record_lsn(&arn).expect("indexed");
    store.mark_damaged(
        &arn,
        lsn,
        DamageReason::FoldForeignEvents {
            events_arn: exec_arn("b"),
        },
    );
    assert!(matches!(
        store.first_and_last_events(&arn),
        Err(Error::Damaged { .. })
    ));
}

#[test]
fn machine_name_reads_the_name_of_every_arn_form() {
    let arn = "arn:aws:states:us-east-1:123456789012:stateMachine:orders";
    assert_eq!(super::machine_name(arn), "orders");
    assert_eq!(super::machine_name(&format!("{arn}#Happy")), "orders");
    // Not a machine ARN: returned whole, as the substring search did.
    assert_eq!(super::machine_name("orders"), "orders");
    assert_eq!(
        super::machine_name("arn:aws:states:us-east-1:1:execution:orders:e1"),
        "arn:aws:states:us-east-1:1:execution:orders:e1"
    );
    // Whatever follows the last ":stateMachine:" is the name, colons included.
    assert_eq!(
        super::machine_name("arn:aws:states:r:1:stateMachine:a:b"),
        "a:b"
    );
}
