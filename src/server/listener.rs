//! listener: which connections are admitted, and which one gives way when the server is full.
//!
//! Owns the connection table: every open connection with its peer address, its [`Phase`] and
//! when it last finished a request. A connection is *evictable* while no request of it is past
//! its body (it waits for a request, or reads a head or a body). When the server is full, or a
//! peer is at its own cap, the evictable connection that has gone longest without finishing a
//! request is closed to make room: a slow client cannot hold a slot against a new one.
//!
//! Invariants: at most `connections_max` connections are admitted at once, and at most
//! `per_peer_max` of one peer IP address; a connection inside a request (body read, handler
//! running) is never evicted. Must not: read or write request bytes; sleep.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::Notify;
use tokio::time::Instant;

/// Where a connection is in its request cycle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Phase {
    /// No byte of a request yet (just opened, or kept alive after an answer).
    Idle = 0,
    /// Reading a request head (request line and headers).
    Head = 1,
    /// The head is read; reading the body.
    Body = 2,
    /// The body is read; the handler runs or the answer is being written.
    Handling = 3,
}

impl Phase {
    fn from_u8(value: u8) -> Phase {
        match value {
            0 => Phase::Idle,
            1 => Phase::Head,
            2 => Phase::Body,
            3 => Phase::Handling,
            _ => unreachable!("a phase is stored only from a Phase"),
        }
    }

    /// Whether a connection in this phase may be closed to make room for another.
    pub fn is_evictable(self) -> bool {
        self != Phase::Handling
    }
}

/// One open connection as the table and its driver see it.
#[derive(Debug)]
pub struct Connection {
    id: u64,
    peer: IpAddr,
    epoch: Instant,
    phase: AtomicU8,
    /// When the current phase began, in ms since `epoch`.
    phase_since_ms: AtomicU64,
    /// When the connection opened or last finished a request, in ms since `epoch`.
    progress_ms: AtomicU64,
    /// When bytes of an answer were last written, in ms since `epoch`.
    written_ms: AtomicU64,
    evicted: AtomicBool,
    evict: Notify,
    answered: Notify,
    table: Arc<Table>,
}

impl Connection {
    /// The peer's address.
    pub fn peer(&self) -> IpAddr {
        self.peer
    }

    /// The current phase.
    pub fn phase(&self) -> Phase {
        Phase::from_u8(self.phase.load(Ordering::Acquire))
    }

    /// When the current phase began; for [`Phase::Idle`], the later of that and the last
    /// write of an answer, so that a client still reading a large answer is not idle.
    pub fn phase_since(&self) -> Instant {
        let mut since_ms = self.phase_since_ms.load(Ordering::Acquire);
        if self.phase() == Phase::Idle {
            since_ms = since_ms.max(self.written_ms.load(Ordering::Acquire));
        }
        self.epoch + std::time::Duration::from_millis(since_ms)
    }

    /// Bytes of an answer were written to the socket.
    pub fn on_bytes_written(&self) {
        self.written_ms
            .store(self.table.now_ms(), Ordering::Release);
    }

    fn set_phase(&self, phase: Phase) {
        self.phase_since_ms
            .store(self.table.now_ms(), Ordering::Release);
        self.phase.store(phase as u8, Ordering::Release);
    }

    /// Bytes arrived: an idle connection starts reading a head.
    pub fn on_bytes_read(&self) {
        if self.phase() == Phase::Idle {
            self.set_phase(Phase::Head);
        }
    }

    /// The head of a request is read; its body follows.
    pub fn on_head(&self) {
        self.set_phase(Phase::Body);
    }

    /// The body of the request is read to its end; the request is no longer evictable.
    pub fn on_body_end(&self) {
        if self.phase() == Phase::Body {
            self.set_phase(Phase::Handling);
        }
    }

    /// The request is answered; the connection waits for the next one.
    pub fn on_answered(&self) {
        self.progress_ms
            .store(self.table.now_ms(), Ordering::Release);
        self.set_phase(Phase::Idle);
        self.answered.notify_one();
        // A connection that became evictable may make room for one waiting to be admitted.
        self.table.changed.notify_one();
    }

    /// Resolves after [`Connection::on_answered`] (at once if it was called since last time).
    pub async fn answered(&self) {
        self.answered.notified().await;
    }

    /// Whether the table closed this connection to make room for another.
    pub fn is_evicted(&self) -> bool {
        self.evicted.load(Ordering::Acquire)
    }

    /// Resolves once the table has evicted this connection.
    pub async fn evicted(&self) {
        loop {
            if self.is_evicted() {
                return;
            }
            self.evict.notified().await;
        }
    }
}

/// A connection's place in the table; dropping it frees the place.
#[derive(Debug)]
pub struct Slot {
    connection: Arc<Connection>,
}

impl Slot {
    /// The connection this slot admits.
    pub fn connection(&self) -> &Arc<Connection> {
        &self.connection
    }
}

impl Drop for Slot {
    fn drop(&mut self) {
        self.connection.table.release(&self.connection);
    }
}

/// What [`ConnectionTable::try_admit`] decided for a new connection.
#[derive(Debug)]
pub enum Admission {
    /// Admitted (perhaps after evicting another connection).
    Admitted(Slot),
    /// The peer is at its cap and every one of its connections is inside a request: close the
    /// new connection.
    PeerFull,
    /// The server is at its cap and every connection is inside a request: wait
    /// ([`ConnectionTable::changed`]) and try again.
    Full,
}

#[derive(Debug, Default)]
struct Open {
    next_id: u64,
    connections: HashMap<u64, Arc<Connection>>,
    per_peer: HashMap<IpAddr, usize>,
}

#[derive(Debug)]
struct Table {
    open: Mutex<Open>,
    changed: Notify,
    connections_max: usize,
    per_peer_max: usize,
    epoch: Instant,
}

impl Table {
    fn now_ms(&self) -> u64 {
        u64::try_from(self.epoch.elapsed().as_millis()).unwrap_or(u64::MAX)
    }

    fn release(&self, connection: &Connection) {
        let mut open = self.open.lock();
        if open.connections.remove(&connection.id).is_some() {
            forget_peer(&mut open, connection.peer);
        }
        drop(open);
        self.changed.notify_one();
    }
}

fn forget_peer(open: &mut Open, peer: IpAddr) {
    let count = open
        .per_peer
        .get_mut(&peer)
        .expect("every admitted connection counts for its peer");
    assert!(*count > 0, "a peer's count covers its open connections");
    *count -= 1;
    if *count == 0 {
        open.per_peer.remove(&peer);
    }
}

/// The open connections of one listener, bounded in total and per peer address.
#[derive(Debug, Clone)]
pub struct ConnectionTable {
    table: Arc<Table>,
}

impl ConnectionTable {
    /// A table admitting `connections_max` connections, `per_peer_max` of one peer address.
    pub fn new(connections_max: usize, per_peer_max: usize) -> Self {
        assert!(connections_max > 0, "a server must accept one connection");
        assert!(
            per_peer_max > 0,
            "a peer must be able to open one connection"
        );
        assert!(
            per_peer_max <= connections_max,
            "a peer's cap is within the server's"
        );
        Self {
            table: Arc::new(Table {
                open: Mutex::new(Open::default()),
                changed: Notify::new(),
                connections_max,
                per_peer_max,
                epoch: Instant::now(),
            }),
        }
    }

    /// How many connections are admitted now.
    pub fn open_count(&self) -> usize {
        self.table.open.lock().connections.len()
    }

    /// How many connections of `peer` are admitted now.
    pub fn peer_count(&self, peer: IpAddr) -> usize {
        self.table
            .open
            .lock()
            .per_peer
            .get(&peer)
            .copied()
            .unwrap_or(0)
    }

    /// Resolves after a connection closed or became evictable (or at once, if one did since
    /// the last call): the moment to retry a [`Admission::Full`] connection.
    pub async fn changed(&self) {
        self.table.changed.notified().await;
    }

    /// Admits a connection from `peer`, evicting the stalest evictable connection of that peer
    /// when it is at its cap, or of any peer when the server is at its cap.
    pub fn try_admit(&self, peer: IpAddr) -> Admission {
        let table = &self.table;
        let mut open = table.open.lock();
        if open.per_peer.get(&peer).copied().unwrap_or(0) >= table.per_peer_max {
            let Some(victim) = stalest_evictable(open.connections.values(), Some(peer)) else {
                return Admission::PeerFull;
            };
            evict(&mut open, &victim);
        }
        if open.connections.len() >= table.connections_max {
            let Some(victim) = stalest_evictable(open.connections.values(), None) else {
                return Admission::Full;
            };
            evict(&mut open, &victim);
        }
        let id = open.next_id;
        open.next_id += 1;
        let now_ms = table.now_ms();
        let connection = Arc::new(Connection {
            id,
            peer,
            epoch: table.epoch,
            phase: AtomicU8::new(Phase::Idle as u8),
            phase_since_ms: AtomicU64::new(now_ms),
            progress_ms: AtomicU64::new(now_ms),
            written_ms: AtomicU64::new(now_ms),
            evicted: AtomicBool::new(false),
            evict: Notify::new(),
            answered: Notify::new(),
            table: table.clone(),
        });
        open.connections.insert(id, connection.clone());
        *open.per_peer.entry(peer).or_insert(0) += 1;
        assert!(open.connections.len() <= table.connections_max);
        assert!(open.per_peer[&peer] <= table.per_peer_max);
        Admission::Admitted(Slot { connection })
    }
}

/// The evictable connection (of `peer`, if given) that has gone longest without finishing a
/// request; ties go to the oldest connection.
fn stalest_evictable<'a>(
    connections: impl Iterator<Item = &'a Arc<Connection>>,
    peer: Option<IpAddr>,
) -> Option<Arc<Connection>> {
    connections
        .filter(|c| peer.map_or(true, |p| c.peer == p))
        .filter(|c| c.phase().is_evictable())
        .min_by_key(|c| (c.progress_ms.load(Ordering::Acquire), c.id))
        .cloned()
}

fn evict(open: &mut Open, victim: &Connection) {
    let removed = open.connections.remove(&victim.id);
    assert!(removed.is_some(), "the victim is open");
    forget_peer(open, victim.peer);
    victim.evicted.store(true, Ordering::Release);
    victim.evict.notify_one();
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ip(last: u8) -> IpAddr {
        IpAddr::from([127, 0, 0, last])
    }

    fn admitted(admission: Admission) -> Slot {
        match admission {
            Admission::Admitted(slot) => slot,
            other => panic!("not admitted: {other:?}"),
        }
    }

    #[test]
    fn a_peer_at_its_cap_evicts_its_own_stalest_idle_connection() {
        let table = ConnectionTable::new(8, 2);
        let first = admitted(table.try_admit(ip(1)));
        let second = admitted(table.try_admit(ip(1)));
        let other = admitted(table.try_admit(ip(2)));
        // The second one answered a request: the first is now the stalest.
        second.connection().on_head();
        second.connection().on_answered();
        let third = admitted(table.try_admit(ip(1)));
        assert!(first.connection().is_evicted());
        assert!(!second.connection().is_evicted());
        assert!(!other.connection().is_evicted());
        assert_eq!(table.peer_count(ip(1)), 2);
        assert_eq!(table.open_count(), 3);
        drop(first);
        assert_eq!(table.open_count(), 3, "an evicted slot is freed once");
        drop((second, third, other));
        assert_eq!(table.open_count(), 0);
    }

    #[test]
    fn a_peer_whose_connections_are_all_inside_requests_is_refused() {
        let table = ConnectionTable::new(8, 2);
        let slots: Vec<Slot> = (0..2).map(|_| admitted(table.try_admit(ip(1)))).collect();
        for slot in &slots {
            slot.connection().on_head();
            slot.connection().on_body_end();
        }
        assert!(matches!(table.try_admit(ip(1)), Admission::PeerFull));
        assert!(slots.iter().all(|s| !s.connection().is_evicted()));
        // Another peer still gets in.
        let _other = admitted(table.try_admit(ip(2)));
    }

    #[test]
    fn a_full_server_evicts_a_slow_connection_or_waits_when_all_are_busy() {
        let table = ConnectionTable::new(2, 2);
        let slow = admitted(table.try_admit(ip(1)));
        slow.connection().on_bytes_read();
        assert_eq!(slow.connection().phase(), Phase::Head);
        let busy = admitted(table.try_admit(ip(2)));
        busy.connection().on_head();
        busy.connection().on_body_end();
        let newcomer = admitted(table.try_admit(ip(3)));
        assert!(slow.connection().is_evicted());
        assert!(!busy.connection().is_evicted());
        newcomer.connection().on_head();
        newcomer.connection().on_body_end();
        assert!(matches!(table.try_admit(ip(4)), Admission::Full));
        busy.connection().on_answered();
        let _late = admitted(table.try_admit(ip(4)));
        assert!(busy.connection().is_evicted());
    }
}
