//! lease: who should own which partition, decided as a pure function.
//!
//! Each partition `p` has a lease, KV key `p<index>` in bucket `statelog_leases`, value
//! `{"node":NAME|null,"renewed":COUNTER}`. The KV revision at which a node acquires the lease is
//! its epoch for that partition (revisions grow per bucket, so epochs only grow). [`decide`]
//! takes what a node has seen (its holdings, the leases, the live nodes, the time on its own
//! monotonic clock) and answers what to do now; the NATS driver ([`crate::node`]) carries the
//! actions out with compare-and-set by revision and reports ownership changes.
//!
//! The rules, in the order they are applied:
//! 1. A held partition whose last successful renewal was sent `renew_deadline_ms` ago or more
//!    is dropped at once ([`LostReason::DeadlineMissed`]); one whose lease shows a revision
//!    newer than the holder's last write was taken by someone else ([`LostReason::Taken`]).
//! 2. target = ceil(partitions / live nodes), this node counted live. A node over target
//!    releases its highest-index partitions down to target.
//! 3. A held partition due (`renew_every_ms` since the last renewal was sent) is renewed.
//! 4. A node under target acquires, lowest index first, partitions whose lease is absent,
//!    released (`node: null`), or unchanged for `lease_ms` on this node's clock (holder gone).
//!
//! Invariants: a partition is in at most one action; an acquisition names the revision it
//! replaces (or absence), so two nodes never both win it.
//! Must not: read a clock, do I/O, or judge liveness by anyone's wall time.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use crate::error::Error;
use crate::limits::{
    LEASE_MARGIN_DIVISOR, LEASE_MS_MAX, LEASE_MS_MIN, LEASE_RENEWALS_PER_LEASE,
    LEASE_TICKS_PER_LEASE, NODE_HEARTBEATS_PER_LEASE,
};
use crate::partition::PartitionIndex;

/// A lease entry's value.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LeaseValue {
    /// The holder, or `None` once released.
    pub node: Option<String>,
    /// The holder's renewal counter (so every renewal is a new value, for readers).
    pub renewed: u64,
}

/// The KV key of partition `partition`'s lease.
pub fn lease_key(partition: PartitionIndex) -> String {
    format!("p{}", partition.0)
}

/// The partition of a lease key `p<index>` below `partitions`, or `None` for another key.
pub fn partition_of_key(key: &str, partitions: u32) -> Option<PartitionIndex> {
    let digits = key.strip_prefix('p')?;
    // `p01` is not a key this layer writes.
    if digits.is_empty() || (digits.len() > 1 && digits.starts_with('0')) {
        return None;
    }
    if !digits.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let index: u32 = digits.parse().ok()?;
    (index < partitions).then_some(PartitionIndex(index))
}

/// The timing of a node's leases, all derived from the lease length.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Timing {
    /// A lease unchanged this long counts as its holder gone.
    pub lease_ms: u64,
    /// A held lease is renewed this long after its last renewal was sent: a third of the
    /// lease, so two renewals may fail before the deadline.
    pub renew_every_ms: u64,
    /// A holder that has not renewed for this long drops the partition: three quarters of
    /// the lease, leaving a quarter for clock-rate drift and for the decision tick.
    pub renew_deadline_ms: u64,
    /// The driver decides at least this often: a tenth of the lease.
    pub tick_ms: u64,
    /// One lease request may take this long: a tenth of the lease, so a hung request cannot
    /// carry the holder past its deadline.
    pub request_timeout_ms: u64,
    /// A node's registry entry is rewritten this often.
    pub node_heartbeat_ms: u64,
    /// A node whose registry entry is unchanged this long is not counted live.
    pub node_dead_ms: u64,
}

impl Timing {
    /// The timing for `lease_ms`; node liveness follows the same lease (heartbeat a third,
    /// dead after one lease), so a dead node's partitions move within one lease.
    pub fn for_lease_ms(lease_ms: u64) -> Result<Self, Error> {
        if !(LEASE_MS_MIN..=LEASE_MS_MAX).contains(&lease_ms) {
            return Err(Error::LeaseMs {
                lease_ms,
                min_ms: LEASE_MS_MIN,
                max_ms: LEASE_MS_MAX,
            });
        }
        let timing = Self {
            lease_ms,
            renew_every_ms: lease_ms / LEASE_RENEWALS_PER_LEASE,
            renew_deadline_ms: lease_ms - lease_ms / LEASE_MARGIN_DIVISOR,
            tick_ms: lease_ms / LEASE_TICKS_PER_LEASE,
            request_timeout_ms: lease_ms / LEASE_TICKS_PER_LEASE,
            node_heartbeat_ms: lease_ms / NODE_HEARTBEATS_PER_LEASE,
            node_dead_ms: lease_ms,
        };
        // Two renewals fit before the deadline, and a renewal's request and one tick fit in
        // the margin after it, so the holder stops before another node may take over.
        assert!(2 * timing.renew_every_ms < timing.renew_deadline_ms);
        assert!(timing.renew_deadline_ms + timing.tick_ms + timing.request_timeout_ms < lease_ms);
        Ok(timing)
    }
}

/// What this node has seen of one lease key.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseSeen {
    /// The holder, `None` when released or deleted.
    pub holder: Option<String>,
    /// The entry's KV revision.
    pub revision: u64,
    /// When this node first saw this revision, on its monotonic clock.
    pub changed_at_ms: u64,
    /// Whether the latest entry is a delete or purge marker (the key is absent).
    pub deleted: bool,
}

/// A partition this node holds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Held {
    /// The revision of the acquiring write: the epoch its log is opened with.
    pub epoch: u64,
    /// The revision of this node's latest successful write of the lease.
    pub revision: u64,
    /// When the latest successful write was sent, on this node's monotonic clock.
    pub renewed_at_ms: u64,
    /// The value's renewal counter at that write.
    pub renewed: u64,
}

/// An acquisition whose answer never came (a timeout, often right after the lease bucket
/// elected a leader): the write may have landed. If it did, the watch shows it as the next
/// revision of the key naming this node with a fresh counter, and [`Unanswered::adopts`] takes
/// it as held, instead of waiting a whole lease for this node's own entry to lapse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Unanswered {
    /// When the acquiring write was sent, on this node's monotonic clock.
    pub sent_ms: u64,
    /// The key's revision known when it was sent (0 when none was): the write, had it landed,
    /// has a larger one.
    pub after_revision: u64,
}

impl Unanswered {
    /// Whether the entry seen (`holder`, `renewed`, `revision`, `deleted`) at `now_ms` is this
    /// node's unanswered acquisition, to be held from `sent_ms` on: it names `me` with the
    /// counter an acquisition writes (0), at a revision past the one expected, and the renew
    /// deadline counted from the send has not passed. Counting from the send is safe: every
    /// other node counts its lease from when it saw the write, which is later.
    pub fn adopts(
        &self,
        me: &str,
        entry: (Option<&str>, u64, u64, bool),
        now_ms: u64,
        timing: &Timing,
    ) -> bool {
        let (holder, renewed, revision, deleted) = entry;
        !deleted
            && holder == Some(me)
            && renewed == 0
            && revision > self.after_revision
            && now_ms.saturating_sub(self.sent_ms) < timing.renew_deadline_ms
    }
}

/// What this node has seen of one node registry key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct NodeSeen {
    /// The entry's KV revision.
    pub revision: u64,
    /// When this node first saw this revision, on its monotonic clock.
    pub changed_at_ms: u64,
}

/// Everything [`decide`] looks at.
#[derive(Debug, Clone, Default)]
pub struct View {
    /// The leases seen, by partition (a partition absent here has no key).
    pub leases: BTreeMap<PartitionIndex, LeaseSeen>,
    /// The registry entries seen, by node name (deleted ones removed).
    pub nodes: BTreeMap<String, NodeSeen>,
    /// The partitions this node holds.
    pub held: BTreeMap<PartitionIndex, Held>,
}

impl View {
    /// Records a lease entry seen at `now_ms`; an older revision than the one known is ignored
    /// (a watch and a scan may deliver the same key out of order).
    pub fn observe_lease(
        &mut self,
        partition: PartitionIndex,
        holder: Option<String>,
        revision: u64,
        deleted: bool,
        now_ms: u64,
    ) {
        if let Some(known) = self.leases.get(&partition) {
            if known.revision >= revision {
                return;
            }
        }
        self.leases.insert(
            partition,
            LeaseSeen {
                holder,
                revision,
                changed_at_ms: now_ms,
                deleted,
            },
        );
    }

    /// Records a registry entry seen at `now_ms` (a delete removes the node at once).
    pub fn observe_node(&mut self, name: &str, revision: u64, deleted: bool, now_ms: u64) {
        let known = self.nodes.get(name).map(|seen| seen.revision);
        if known.is_some_and(|known| known >= revision) {
            return;
        }
        if deleted {
            self.nodes.remove(name);
            return;
        }
        self.nodes.insert(
            name.to_owned(),
            NodeSeen {
                revision,
                changed_at_ms: now_ms,
            },
        );
    }

    /// How many nodes are live at `now_ms`, `me` always among them.
    pub fn live_nodes(&self, me: &str, now_ms: u64, timing: &Timing) -> u32 {
        let others = self
            .nodes
            .iter()
            .filter(|(name, seen)| {
                name.as_str() != me
                    && now_ms.saturating_sub(seen.changed_at_ms) < timing.node_dead_ms
            })
            .count();
        u32::try_from(others).unwrap_or(u32::MAX).saturating_add(1)
    }
}

/// Why a node stopped owning a partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum LostReason {
    /// Another node wrote the lease (it judged this node gone, or took a released lease).
    Taken,
    /// No renewal succeeded within the renew deadline.
    DeadlineMissed,
    /// A renewal's compare-and-set was refused: the lease moved on.
    RenewRefused,
    /// This node released it to balance the cluster.
    Released,
    /// This node is shutting down.
    Shutdown,
}

/// What an acquisition expects to replace.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Expected {
    /// No key (never written, or deleted): a create.
    Absent,
    /// The entry at this revision: a compare-and-set update.
    Revision(u64),
}

/// One thing to do now.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Stop the partition's engine at once; write nothing.
    Drop {
        /// The partition.
        partition: PartitionIndex,
        /// Why.
        reason: LostReason,
    },
    /// Stop the partition's engine, then write `node: null` over `revision`.
    Release {
        /// The partition.
        partition: PartitionIndex,
        /// The holder's latest revision.
        revision: u64,
    },
    /// Write a renewal over `revision`.
    Renew {
        /// The partition.
        partition: PartitionIndex,
        /// The holder's latest revision.
        revision: u64,
    },
    /// Write this node's name as the holder.
    Acquire {
        /// The partition.
        partition: PartitionIndex,
        /// What the write replaces.
        expected: Expected,
    },
}

/// ceil(partitions / live), at least 1.
pub fn target(partitions: u32, live: u32) -> u32 {
    assert!(live >= 1, "the deciding node is live");
    partitions.div_ceil(live).max(1)
}

/// What node `me`, seeing `view` at `now_ms`, should do among `partitions` partitions.
pub fn decide(me: &str, partitions: u32, view: &View, now_ms: u64, timing: &Timing) -> Vec<Action> {
    let mut actions = Vec::new();
    let mut keep: Vec<(PartitionIndex, &Held)> = Vec::new();
    // 1. Drops.
    for (&partition, held) in &view.held {
        let since_ms = now_ms.saturating_sub(held.renewed_at_ms);
        let taken = view
            .leases
            .get(&partition)
            .is_some_and(|seen| seen.revision > held.revision);
        if since_ms >= timing.renew_deadline_ms {
            actions.push(Action::Drop {
                partition,
                reason: LostReason::DeadlineMissed,
            });
        } else if taken {
            actions.push(Action::Drop {
                partition,
                reason: LostReason::Taken,
            });
        } else {
            keep.push((partition, held));
        }
    }
    let live = view.live_nodes(me, now_ms, timing);
    let target = target(partitions, live) as usize;
    // 2. Releases, highest index first (so acquisitions, lowest first, do not chase them).
    let surplus = keep.len().saturating_sub(target);
    for (partition, held) in keep.iter().rev().take(surplus) {
        actions.push(Action::Release {
            partition: *partition,
            revision: held.revision,
        });
    }
    keep.truncate(keep.len() - surplus);
    // 3. Renewals.
    for (partition, held) in &keep {
        if now_ms.saturating_sub(held.renewed_at_ms) >= timing.renew_every_ms {
            actions.push(Action::Renew {
                partition: *partition,
                revision: held.revision,
            });
        }
    }
    // 4. Acquisitions, lowest index first. A partition dropped above is not taken back in the
    // same decision: its lease is still live in others' eyes, or it moved on.
    let wanted = target.saturating_sub(keep.len());
    if wanted > 0 && surplus == 0 {
        let candidates = (0..partitions).map(PartitionIndex).filter(|partition| {
            if view.held.contains_key(partition) {
                return false;
            }
            match view.leases.get(partition) {
                None => true,
                Some(seen) if seen.deleted || seen.holder.is_none() => true,
                Some(seen) => now_ms.saturating_sub(seen.changed_at_ms) >= timing.lease_ms,
            }
        });
        for partition in candidates.take(wanted) {
            let expected = match view.leases.get(&partition) {
                None => Expected::Absent,
                Some(seen) if seen.deleted => Expected::Absent,
                Some(seen) => Expected::Revision(seen.revision),
            };
            actions.push(Action::Acquire {
                partition,
                expected,
            });
        }
    }
    debug_assert!(
        {
            let mut seen = std::collections::BTreeSet::new();
            actions.iter().all(|action| {
                let partition = match action {
                    Action::Drop { partition, .. }
                    | Action::Release { partition, .. }
                    | Action::Renew { partition, .. }
                    | Action::Acquire { partition, .. } => *partition,
                };
                seen.insert(partition)
            })
        },
        "a partition is in at most one action"
    );
    actions
}

#[cfg(test)]
mod tests {
    //! The decision rules, with the clock as a number: no NATS, no sleeps.
    use super::*;

    const LEASE_MS: u64 = 3_000;

    fn timing() -> Timing {
        Timing::for_lease_ms(LEASE_MS).expect("in range")
    }

    fn p(index: u32) -> PartitionIndex {
        PartitionIndex(index)
    }

    fn hold(view: &mut View, index: u32, revision: u64, at_ms: u64) {
        view.held.insert(
            p(index),
            Held {
                epoch: revision,
                revision,
                renewed_at_ms: at_ms,
                renewed: 0,
            },
        );
        view.observe_lease(p(index), Some("a".into()), revision, false, at_ms);
    }

    #[test]
    fn an_unanswered_acquisition_is_adopted_only_as_the_next_write_naming_this_node_in_time() {
        let timing = timing();
        let unanswered = Unanswered {
            sent_ms: 10_000,
            after_revision: 40,
        };
        let at = 10_000 + timing.renew_deadline_ms - 1;
        assert!(unanswered.adopts("a", (Some("a"), 0, 41, false), 10_200, &timing));
        assert!(unanswered.adopts("a", (Some("a"), 0, 57, false), at, &timing));
        // Another node's write, a release, a delete, a renewal's counter, an old revision.
        assert!(!unanswered.adopts("a", (Some("b"), 0, 41, false), 10_200, &timing));
        assert!(!unanswered.adopts("a", (None, 0, 41, false), 10_200, &timing));
        assert!(!unanswered.adopts("a", (Some("a"), 0, 41, true), 10_200, &timing));
        assert!(!unanswered.adopts("a", (Some("a"), 3, 41, false), 10_200, &timing));
        assert!(!unanswered.adopts("a", (Some("a"), 0, 40, false), 10_200, &timing));
        // Seen only once the renew deadline from the send has passed: too late to hold.
        assert!(!unanswered.adopts("a", (Some("a"), 0, 41, false), at + 1, &timing));
    }

    fn acquisitions(actions: &[Action]) -> Vec<u32> {
        actions
            .iter()
            .filter_map(|action| match action {
                Action::Acquire { partition, .. } => Some(partition.0),
                _ => None,
            })
            .collect()
    }

    fn releases(actions: &[Action]) -> Vec<u32> {
        actions
            .iter()
            .filter_map(|action| match action {
                Action::Release { partition, .. } => Some(partition.0),
                _ => None,
            })
            .collect()
    }

    #[test]
    fn a_lone_node_acquires_every_absent_partition_by_create() {
        let view = View::default();
        let actions = decide("a", 4, &view, 0, &timing());
        assert_eq!(acquisitions(&actions), vec![0, 1, 2, 3]);
        assert!(actions.iter().all(|action| matches!(
            action,
            Action::Acquire {
                expected: Expected::Absent,
                ..
            }
        )));
    }

    #[test]
    fn two_live_nodes_split_the_partitions_lowest_first() {
        let mut view = View::default();
        view.observe_node("b", 1, false, 0);
        // b holds 0 and 2, renewing.
        view.observe_lease(p(0), Some("b".into()), 5, false, 0);
        view.observe_lease(p(2), Some("b".into()), 6, false, 0);
        let actions = decide("a", 5, &view, 100, &timing());
        // target ceil(5/2) = 3: the free ones, 1, 3, 4.
        assert_eq!(acquisitions(&actions), vec![1, 3, 4]);
    }

    #[test]
    fn a_node_over_target_releases_its_highest_partitions() {
        let mut view = View::default();
        for index in 0..4 {
            hold(&mut view, index, u64::from(index) + 1, 0);
        }
        view.observe_node("b", 1, false, 0);
        let actions = decide("a", 4, &view, 10, &timing());
        assert_eq!(releases(&actions), vec![3, 2]);
        assert!(acquisitions(&actions).is_empty());
        match actions
            .iter()
            .find(|action| matches!(action, Action::Release { .. }))
        {
            Some(Action::Release { revision, .. }) => assert_eq!(*revision, 4),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn renewals_fall_due_a_third_of_a_lease_after_the_last() {
        let mut view = View::default();
        hold(&mut view, 0, 7, 1_000);
        let early = decide("a", 1, &view, 1_000 + LEASE_MS / 3 - 1, &timing());
        assert!(early.is_empty(), "{early:?}");
        let due = decide("a", 1, &view, 1_000 + LEASE_MS / 3, &timing());
        assert_eq!(
            due,
            vec![Action::Renew {
                partition: p(0),
                revision: 7
            }]
        );
    }

    #[test]
    fn a_missed_renew_deadline_drops_the_partition_before_others_may_take_it() {
        let mut view = View::default();
        hold(&mut view, 0, 7, 1_000);
        let timing = timing();
        let deadline_ms = 1_000 + timing.renew_deadline_ms;
        assert!(deadline_ms < 1_000 + timing.lease_ms);
        let before = decide("a", 1, &view, deadline_ms - 1, &timing);
        assert!(
            matches!(before.as_slice(), [Action::Renew { .. }]),
            "{before:?}"
        );
        let after = decide("a", 1, &view, deadline_ms, &timing);
        assert_eq!(
            after,
            vec![Action::Drop {
                partition: p(0),
                reason: LostReason::DeadlineMissed
            }]
        );
    }

    #[test]
    fn a_newer_revision_by_another_writer_means_taken_at_once() {
        let mut view = View::default();
        hold(&mut view, 0, 7, 1_000);
        view.observe_lease(p(0), Some("b".into()), 9, false, 1_001);
        let actions = decide("a", 1, &view, 1_001, &timing());
        assert_eq!(
            actions,
            vec![Action::Drop {
                partition: p(0),
                reason: LostReason::Taken
            }]
        );
    }

    #[test]
    fn a_stale_watch_entry_does_not_drop_a_held_partition() {
        let mut view = View::default();
        hold(&mut view, 0, 7, 1_000);
        // The scan or watch delivers the older revision after the newer one: ignored.
        view.observe_lease(p(0), Some("b".into()), 3, false, 1_001);
        assert_eq!(view.leases[&p(0)].revision, 7);
        assert!(decide("a", 1, &view, 1_001, &timing()).is_empty());
    }

    #[test]
    fn a_dead_holders_lease_is_taken_after_a_lease_on_the_observers_clock() {
        let mut view = View::default();
        // b's lease at revision 4 was first seen at 10_000 (whatever its wall time).
        view.observe_lease(p(0), Some("b".into()), 4, false, 10_000);
        let timing = timing();
        let early = decide("a", 1, &view, 10_000 + LEASE_MS - 1, &timing);
        assert!(acquisitions(&early).is_empty());
        let late = decide("a", 1, &view, 10_000 + LEASE_MS, &timing);
        assert_eq!(
            late,
            vec![Action::Acquire {
                partition: p(0),
                expected: Expected::Revision(4)
            }]
        );
        // A renewal seen resets the observer's clock for it.
        view.observe_lease(p(0), Some("b".into()), 5, false, 10_000 + LEASE_MS - 1);
        assert!(decide("a", 1, &view, 10_000 + LEASE_MS, &timing).is_empty());
    }

    #[test]
    fn released_and_deleted_leases_are_taken_at_once() {
        let mut view = View::default();
        view.observe_lease(p(0), None, 4, false, 0);
        view.observe_lease(p(1), None, 5, true, 0);
        let actions = decide("a", 2, &view, 1, &timing());
        assert_eq!(
            actions,
            vec![
                Action::Acquire {
                    partition: p(0),
                    expected: Expected::Revision(4)
                },
                Action::Acquire {
                    partition: p(1),
                    expected: Expected::Absent
                },
            ]
        );
    }

    #[test]
    fn a_node_silent_for_a_lease_no_longer_counts_toward_the_target() {
        let mut view = View::default();
        view.observe_node("b", 1, false, 0);
        let timing = timing();
        assert_eq!(view.live_nodes("a", timing.node_dead_ms - 1, &timing), 2);
        assert_eq!(view.live_nodes("a", timing.node_dead_ms, &timing), 1);
        // b deleted its entry (a clean stop): gone at once.
        view.observe_node("b", 2, true, 10);
        assert_eq!(view.live_nodes("a", 11, &timing), 1);
        // Its own entry never makes a node count twice.
        view.observe_node("a", 3, false, 10);
        assert_eq!(view.live_nodes("a", 11, &timing), 1);
    }

    #[test]
    fn the_default_timing_is_the_designs_and_bad_leases_are_refused() {
        let timing = Timing::for_lease_ms(crate::limits::LEASE_MS).expect("default");
        assert_eq!(timing.lease_ms, 3_000);
        assert_eq!(timing.renew_every_ms, 1_000);
        assert_eq!(timing.renew_deadline_ms, 2_250);
        assert_eq!(timing.tick_ms, 300);
        assert_eq!(timing.request_timeout_ms, 300);
        assert_eq!(timing.node_heartbeat_ms, 1_000);
        assert_eq!(timing.node_dead_ms, 3_000);
        for lease_ms in [0, LEASE_MS_MIN - 1, LEASE_MS_MAX + 1] {
            assert!(
                matches!(Timing::for_lease_ms(lease_ms), Err(Error::LeaseMs { lease_ms: got, .. }) if got == lease_ms),
                "{lease_ms}"
            );
        }
        assert!(Timing::for_lease_ms(LEASE_MS_MIN).is_ok());
        assert!(Timing::for_lease_ms(LEASE_MS_MAX).is_ok());
    }

    #[test]
    fn lease_keys_round_trip_and_foreign_keys_are_ignored() {
        assert_eq!(lease_key(p(17)), "p17");
        assert_eq!(partition_of_key("p17", 18), Some(p(17)));
        for key in ["p18", "p", "p01", "q1", "p1x", "p-1", "config"] {
            assert_eq!(partition_of_key(key, 18), None, "{key}");
        }
        assert_eq!(partition_of_key("p0", 1), Some(p(0)));
    }

    #[test]
    fn targets_round_up() {
        assert_eq!(target(8, 3), 3);
        assert_eq!(target(8, 2), 4);
        assert_eq!(target(1, 3), 1);
        assert_eq!(target(1_024, 1), 1_024);
    }

    /// Two nodes deciding in turn over one shared lease table (a model of the KV with
    /// compare-and-set) converge to an even split with every partition held once, and a
    /// survivor takes all after the other stops.
    #[test]
    fn a_model_of_two_nodes_converges_and_a_survivor_takes_all() {
        let timing = timing();
        let partitions = 7;
        // The shared KV: partition -> (holder, revision); a bucket-wide revision counter.
        let mut kv: BTreeMap<PartitionIndex, (Option<String>, u64)> = BTreeMap::new();
        let mut revision = 0_u64;
        let mut views: BTreeMap<&str, View> = BTreeMap::new();
        views.insert("a", View::default());
        views.insert("b", View::default());
        let mut epochs: BTreeMap<PartitionIndex, u64> = BTreeMap::new();
        let mut step = |now_ms: u64, names: &[&'static str], views: &mut BTreeMap<&str, View>| {
            for &name in names {
                // Heartbeats and the watch: every view sees the KV and the live nodes.
                for &other in names {
                    revision += 1;
                    let view = views.get_mut(name).expect("view");
                    view.observe_node(other, revision, false, now_ms);
                }
                let view = views.get_mut(name).expect("view");
                for (&partition, (holder, rev)) in &kv {
                    view.observe_lease(partition, holder.clone(), *rev, false, now_ms);
                }
                for action in decide(name, partitions, view, now_ms, &timing) {
                    match action {
                        Action::Drop { partition, .. } => {
                            view.held.remove(&partition);
                        }
                        Action::Release {
                            partition,
                            revision: expected,
                        } => {
                            view.held.remove(&partition);
                            if kv.get(&partition).map(|entry| entry.1) == Some(expected) {
                                revision += 1;
                                kv.insert(partition, (None, revision));
                            }
                        }
                        Action::Renew {
                            partition,
                            revision: expected,
                        } => {
                            if kv.get(&partition).map(|entry| entry.1) == Some(expected) {
                                revision += 1;
                                kv.insert(partition, (Some(name.to_owned()), revision));
                                let held = view.held.get_mut(&partition).expect("held");
                                held.revision = revision;
                                held.renewed_at_ms = now_ms;
                            } else {
                                view.held.remove(&partition);
                            }
                        }
                        Action::Acquire {
                            partition,
                            expected,
                        } => {
                            let current = kv.get(&partition).map(|entry| entry.1);
                            let matches = match expected {
                                Expected::Absent => current.is_none(),
                                Expected::Revision(rev) => current == Some(rev),
                            };
                            if matches {
                                revision += 1;
                                kv.insert(partition, (Some(name.to_owned()), revision));
                                if let Some(previous) = epochs.insert(partition, revision) {
                                    assert!(revision > previous, "epochs grow");
                                }
                                view.held.insert(
                                    partition,
                                    Held {
                                        epoch: revision,
                                        revision,
                                        renewed_at_ms: now_ms,
                                        renewed: 0,
                                    },
                                );
                            }
                        }
                    }
                }
            }
        };
        let mut now_ms = 0;
        for _ in 0..20 {
            step(now_ms, &["a", "b"], &mut views);
            now_ms += timing.tick_ms;
        }
        let held_a: Vec<u32> = views["a"].held.keys().map(|p| p.0).collect();
        let held_b: Vec<u32> = views["b"].held.keys().map(|p| p.0).collect();
        assert_eq!(held_a.len() + held_b.len(), 7, "{held_a:?} {held_b:?}");
        assert!(held_a.iter().all(|index| !held_b.contains(index)));
        assert!(
            held_a.len().abs_diff(held_b.len()) <= 1,
            "{held_a:?} {held_b:?}"
        );
        // b stops (no more steps for it); a takes everything within a lease and two ticks.
        let stopped_ms = now_ms;
        while views["a"].held.len() < 7 {
            step(now_ms, &["a"], &mut views);
            now_ms += timing.tick_ms;
            assert!(
                now_ms <= stopped_ms + timing.lease_ms + 3 * timing.tick_ms,
                "a took {:?} by {now_ms}",
                views["a"].held.keys().collect::<Vec<_>>()
            );
        }
    }
}
