//! The first and last events of recently appended executions, kept as appended, so that a
//! describe right after a close (the common case: a caller waits for the execution it started)
//! does not read its records back and decode every event between the two.
//!
//! An entry is made when the batch that starts an execution is appended (its first event is
//! `ExecutionStarted`) and follows the execution's later batches while it lasts. It names the
//! LSN of the last record it has seen; a reader uses it only when the index's last record for the
//! execution has that LSN, so anything the cache did not see (a compaction that moved the
//! records, an append that raced the lookup, an entry evicted and not made again) falls back to
//! the log. Bounded by entries and by the encoded bytes of the batches that made them; the
//! oldest entries go first.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use statelog_core::history::{EventDetails, HistoryEvent};
use statelog_wal::Lsn;

/// Entries kept at most: enough for the executions callers wait on (each describes its own soon
/// after its close, hundreds in flight), few enough to stay a megabyte or two.
pub(crate) const RECENT_ENDS_MAX: usize = 1024;

/// Encoded bytes held at most, counting for each entry the batches its two events came in; a
/// batch larger than an eighth of it is not kept.
pub(crate) const RECENT_ENDS_BYTES_MAX: usize = 4 * 1024 * 1024;

/// What one append tells the cache: the batch's first event when it starts the execution, its
/// last event, and the batch's encoded size.
#[derive(Debug)]
pub(crate) struct Ends {
    /// The execution's key and its first event, when the batch starts it.
    started: Option<(Arc<str>, HistoryEvent)>,
    last: HistoryEvent,
    bytes: usize,
}

impl Ends {
    /// The ends of the batch `events` (not empty) of `execution_arn`, `bytes` encoded bytes,
    /// taken out of `events` (whose order is lost: the caller is done with them); `None`, and
    /// `events` untouched, when the batch is too large to keep.
    pub(crate) fn take(
        execution_arn: &str,
        events: &mut Vec<HistoryEvent>,
        bytes: usize,
    ) -> Option<Ends> {
        if bytes > RECENT_ENDS_BYTES_MAX / 8 {
            return None;
        }
        let starts = matches!(events.first()?.details, EventDetails::ExecutionStarted(_));
        let last = events.pop()?;
        let started = match (starts, events.is_empty()) {
            (false, _) => None,
            // One event: the start is the last event too.
            (true, true) => Some(last.clone()),
            (true, false) => Some(events.swap_remove(0)),
        };
        Some(Ends {
            started: started.map(|first| (Arc::from(execution_arn), first)),
            last,
            bytes,
        })
    }

    #[cfg(test)]
    fn of(execution_arn: &str, events: &[HistoryEvent], bytes: usize) -> Option<Ends> {
        Self::take(execution_arn, &mut events.to_vec(), bytes)
    }
}

#[derive(Debug)]
pub(crate) struct Entry {
    first: HistoryEvent,
    last: HistoryEvent,
    last_lsn: Lsn,
    /// The encoded bytes of the batch `first` came in, and of the one `last` came in when that
    /// is a later batch (0 while it is the same).
    first_bytes: usize,
    last_bytes: usize,
    /// The insertion this entry was made by (an evicted key made again is a new insertion).
    serial: u64,
}

impl Entry {
    fn bytes(&self) -> usize {
        self.first_bytes + self.last_bytes
    }
}

#[derive(Debug, Default)]
pub(crate) struct RecentEnds {
    /// Boxed: the table stays small (a few cache lines per probe) and warm.
    entries: HashMap<Arc<str>, Box<Entry>, foldhash::quality::RandomState>,
    /// Keys in insertion order, with the insertion's serial.
    order: VecDeque<(Arc<str>, u64)>,
    bytes: usize,
    serial: u64,
}

impl RecentEnds {
    /// Takes the batch whose last record is at `last_lsn`.
    pub(crate) fn record(&mut self, execution_arn: &str, ends: Ends, last_lsn: Lsn) {
        match ends.started {
            Some((key, first)) => {
                self.serial += 1;
                let entry = Box::new(Entry {
                    first,
                    last: ends.last,
                    last_lsn,
                    first_bytes: ends.bytes,
                    last_bytes: 0,
                    serial: self.serial,
                });
                self.bytes += entry.bytes();
                if let Some(old) = self.entries.insert(Arc::clone(&key), entry) {
                    self.bytes -= old.bytes();
                }
                self.order.push_back((key, self.serial));
            }
            None => {
                let Some(entry) = self.entries.get_mut(execution_arn) else {
                    return;
                };
                entry.last = ends.last;
                entry.last_lsn = last_lsn;
                self.bytes = self.bytes - entry.last_bytes + ends.bytes;
                entry.last_bytes = ends.bytes;
            }
        }
        self.evict();
    }

    /// Evicts what taking `ends` would evict, before its append: the entries go back to the
    /// caller to drop outside the lock, and the append's wait for durability is not followed by
    /// their drop (cold by then). Appends racing this one may still leave the cache over its
    /// bounds at `record`, which evicts as well.
    // The entries leave their boxes as they are: no copy out of them just to drop them.
    #[allow(clippy::vec_box)]
    pub(crate) fn make_room(&mut self, ends: &Ends) -> Vec<Box<Entry>> {
        let mut evicted = Vec::new();
        let new_entry = usize::from(ends.started.is_some());
        while self.entries.len() + new_entry > RECENT_ENDS_MAX
            || self.bytes + ends.bytes > RECENT_ENDS_BYTES_MAX
        {
            match self.evict_oldest() {
                Some(Some(entry)) => evicted.push(entry),
                Some(None) => {}
                None => break,
            }
        }
        evicted
    }

    /// The first and last events of `execution_arn` when the cache has seen its record at
    /// `last_lsn` last.
    pub(crate) fn get(
        &self,
        execution_arn: &str,
        last_lsn: Lsn,
    ) -> Option<(HistoryEvent, HistoryEvent)> {
        let entry = self.entries.get(execution_arn)?;
        (entry.last_lsn == last_lsn).then(|| (entry.first.clone(), entry.last.clone()))
    }

    fn evict(&mut self) {
        while self.entries.len() > RECENT_ENDS_MAX || self.bytes > RECENT_ENDS_BYTES_MAX {
            if self.evict_oldest().is_none() {
                break;
            }
        }
        // Keys made again leave their older insertions in the queue: drop those once they are
        // most of it, so the queue stays within twice the entries.
        if self.order.len() > 2 * RECENT_ENDS_MAX {
            let entries = &self.entries;
            self.order
                .retain(|(key, serial)| entries.get(key).is_some_and(|e| e.serial == *serial));
        }
    }

    /// Takes the oldest insertion off the queue: `None` when the queue is empty, `Some(None)`
    /// when a newer insertion of its key made it stale, else its entry (removed).
    fn evict_oldest(&mut self) -> Option<Option<Box<Entry>>> {
        use std::collections::hash_map::Entry as Slot;
        let (key, serial) = self.order.pop_front()?;
        // A key made again since this insertion is the newer insertion's to evict.
        match self.entries.entry(key) {
            Slot::Occupied(slot) if slot.get().serial == serial => {
                let entry = slot.remove();
                self.bytes -= entry.bytes();
                Some(Some(entry))
            }
            _ => Some(None),
        }
    }

    #[cfg(test)]
    fn len(&self) -> usize {
        self.entries.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use statelog_core::history::{EventId, ExecutionStarted, Output, Payload};

    fn started(arn: &str) -> HistoryEvent {
        HistoryEvent {
            id: EventId(1),
            previous_event_id: 0,
            timestamp_ms: 1,
            details: EventDetails::ExecutionStarted(Box::new(ExecutionStarted {
                input: Payload::default(),
                input_truncated: false,
                role_arn: String::new(),
                state_machine_alias_arn: None,
                state_machine_version_arn: None,
                execution_arn: arn.to_string(),
                state_machine_arn: String::new(),
                input_text: None,
                map_run_arn: None,
            })),
            scope: Vec::new(),
            timer: None,
        }
    }

    fn succeeded(id: u32) -> HistoryEvent {
        HistoryEvent {
            id: EventId(id),
            previous_event_id: id - 1,
            timestamp_ms: 2,
            details: EventDetails::ExecutionSucceeded(Output {
                output: Payload::default(),
                output_truncated: false,
            }),
            scope: Vec::new(),
            timer: None,
        }
    }

    #[test]
    fn an_entry_follows_later_batches_and_answers_only_at_its_last_lsn() {
        let mut cache = RecentEnds::default();
        let start = [started("a")];
        cache.record("a", Ends::of("a", &start, 100).expect("small"), Lsn(5));
        let (first, last) = cache.get("a", Lsn(5)).expect("kept");
        assert_eq!((first.id, last.id), (EventId(1), EventId(1)));
        let close = [succeeded(2)];
        cache.record("a", Ends::of("a", &close, 100).expect("small"), Lsn(9));
        assert!(
            cache.get("a", Lsn(5)).is_none(),
            "an older LSN is not answered"
        );
        let (first, last) = cache.get("a", Lsn(9)).expect("kept");
        assert_eq!((first.id, last.id), (EventId(1), EventId(2)));
        // The entry counts the batches its two events came in, not every batch since.
        for lsn in 10..20 {
            cache.record("a", Ends::of("a", &close, 100).expect("small"), Lsn(lsn));
        }
        assert_eq!(cache.bytes, 200);
        // A batch of an execution the cache never saw start makes no entry.
        cache.record("b", Ends::of("b", &close, 100).expect("small"), Lsn(10));
        assert!(cache.get("b", Lsn(10)).is_none());
    }

    #[test]
    fn the_oldest_entries_go_first_past_the_bounds() {
        let mut cache = RecentEnds::default();
        for i in 0..RECENT_ENDS_MAX + 3 {
            let arn = format!("e{i}");
            cache.record(
                &arn,
                Ends::of(&arn, &[started(&arn)], 10).expect("small"),
                Lsn(i as u64 + 1),
            );
        }
        assert_eq!(cache.len(), RECENT_ENDS_MAX);
        assert!(cache.get("e0", Lsn(1)).is_none());
        assert!(cache.get("e3", Lsn(4)).is_some());
        // Bytes: batches of an eighth of the bound each keep at most eight entries.
        let mut cache = RecentEnds::default();
        let eighth = RECENT_ENDS_BYTES_MAX / 8;
        for i in 0..10u64 {
            let arn = format!("e{i}");
            cache.record(
                &arn,
                Ends::of(&arn, &[started(&arn)], eighth).expect("fits"),
                Lsn(i + 1),
            );
        }
        assert_eq!(cache.len(), 8);
        assert!(cache.get("e1", Lsn(2)).is_none());
        assert!(cache.get("e2", Lsn(3)).is_some());
        assert!(
            Ends::of("big", &[started("big")], eighth + 1).is_none(),
            "too large to keep"
        );
    }

    #[test]
    fn room_is_made_before_the_append_and_the_record_evicts_nothing_more() {
        let mut cache = RecentEnds::default();
        for i in 0..RECENT_ENDS_MAX {
            let arn = format!("e{i}");
            let ends = Ends::of(&arn, &[started(&arn)], 10).expect("small");
            cache.record(&arn, ends, Lsn(i as u64 + 1));
        }
        let ends = Ends::of("new", &[started("new")], 10).expect("small");
        let evicted = cache.make_room(&ends);
        assert_eq!(evicted.len(), 1, "the oldest goes to the caller");
        assert_eq!(evicted[0].first.id, EventId(1));
        assert!(cache.get("e0", Lsn(1)).is_none());
        // A later batch of a kept execution needs no room for a new entry.
        let close = [succeeded(2)];
        let later = Ends::of("e1", &close, 10).expect("small");
        assert!(cache.make_room(&later).is_empty());
        cache.record("new", ends, Lsn(5_000));
        assert_eq!(cache.len(), RECENT_ENDS_MAX);
        assert!(cache.get("e1", Lsn(2)).is_some(), "nothing more evicted");
        assert!(cache.get("new", Lsn(5_000)).is_some());
    }

    #[test]
    fn a_key_made_again_is_evicted_by_its_newest_insertion_only() {
        let mut cache = RecentEnds::default();
        cache.record(
            "a",
            Ends::of("a", &[started("a")], 10).expect("small"),
            Lsn(1),
        );
        cache.record(
            "a",
            Ends::of("a", &[started("a")], 10).expect("small"),
            Lsn(2),
        );
        for i in 0..RECENT_ENDS_MAX - 1 {
            let arn = format!("e{i}");
            cache.record(
                &arn,
                Ends::of(&arn, &[started(&arn)], 10).expect("small"),
                Lsn(i as u64 + 3),
            );
        }
        // The first insertion's queue entry went without taking the second's.
        assert!(cache.get("a", Lsn(2)).is_some());
        assert_eq!(cache.bytes, 10 * RECENT_ENDS_MAX);
    }
}
