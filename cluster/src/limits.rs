//! limits: every bound and every timing of the cluster layer, named.

/// The most partitions a cluster may have. Each partition is a stream, a lease and (on its
/// owner) an engine; a thousand is far past what a few nodes carry and keeps one node's lease
/// scan small.
pub const PARTITIONS_MAX: u32 = 1_024;

/// The longest node name, in bytes (a KV key and part of a NATS subject).
pub const NODE_NAME_BYTES_MAX: usize = 64;

/// The largest value read from a cluster bucket (config, node or lease entry), in bytes. A
/// larger one is refused as corrupt rather than parsed.
pub const ENTRY_BYTES_MAX: usize = 4_096;

/// The longest listen address a node registers, in bytes.
pub const LISTEN_BYTES_MAX: usize = 256;

/// How long a lease lives without a renewal, on the observer's monotonic clock: a lease whose
/// revision has not changed for this long counts as its holder gone.
pub const LEASE_MS: u64 = 3_000;

/// The shortest lease a [`crate::node::NodeOptions`] accepts (tests use short leases; below this
/// the renewal round trips eat the lease).
pub const LEASE_MS_MIN: u64 = 300;

/// The longest lease a [`crate::node::NodeOptions`] accepts.
pub const LEASE_MS_MAX: u64 = 60_000;

/// A holder renews its lease this many times per lease length (every `lease_ms / 3`), so two
/// renewals may fail before its deadline.
pub const LEASE_RENEWALS_PER_LEASE: u64 = 3;

/// The holder's renew deadline is `lease_ms - lease_ms / LEASE_MARGIN_DIVISOR`: it stops a
/// quarter lease before any other node may take over, room for clock-rate drift and a tick.
pub const LEASE_MARGIN_DIVISOR: u64 = 4;

/// The driver decides at least every `lease_ms / LEASE_TICKS_PER_LEASE`, and one lease request
/// may take that long at most, so a hung request cannot carry a holder past its deadline.
pub const LEASE_TICKS_PER_LEASE: u64 = 10;

/// A node rewrites its registry entry `lease_ms / NODE_HEARTBEATS_PER_LEASE` apart (1 s with
/// the default lease); one unchanged for a whole lease (3 s) is not counted live.
pub const NODE_HEARTBEATS_PER_LEASE: u64 = 3;

/// How long a surviving node takes at most to own a dead node's partitions, before replay:
/// the lease, plus one decision tick and one KV round trip. Tests wait this long; issue 19
/// aims at under 10 s including replay.
pub const TAKEOVER_MS_MAX: u64 = 10_000;

/// How long connecting to NATS may take.
pub const CONNECT_TIMEOUT_MS: u64 = 5_000;

/// How long one KV request of `init`/`load` may take.
pub const REQUEST_TIMEOUT_MS: u64 = 5_000;

/// The most replicas a cluster bucket gets (R3: survives one server down with a quorum).
pub const BUCKET_REPLICAS_MAX: usize = 3;

// A node is judged dead only after several missed heartbeats.
const _: () = assert!(NODE_HEARTBEATS_PER_LEASE >= 2);
// Two renewals fit before the deadline: 1/3 + 1/3 < 3/4.
const _: () =
    assert!(LEASE_MARGIN_DIVISOR * 2 < LEASE_RENEWALS_PER_LEASE * (LEASE_MARGIN_DIVISOR - 1));
// The margin holds a tick and a request: 2/10 < 1/4.
const _: () = assert!(2 * LEASE_MARGIN_DIVISOR < LEASE_TICKS_PER_LEASE);
const _: () = assert!(LEASE_MS_MIN <= LEASE_MS && LEASE_MS <= LEASE_MS_MAX);
// A takeover fits its bound with room for a tick and a round trip.
const _: () = assert!(LEASE_MS + LEASE_MS / 2 <= TAKEOVER_MS_MAX);
// Partition indexes fit a lease key `p<index>` and a u32.
const _: () = assert!(PARTITIONS_MAX > 0);
