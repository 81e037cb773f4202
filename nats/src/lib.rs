//! statelog-nats: statelog's log on NATS JetStream (issue 19).

pub mod limits;
#[cfg(feature = "testing")]
pub mod testing;
