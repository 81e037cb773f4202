//! statelog-wal: durable, ordered bytes. Knows nothing about workflows.
#![deny(missing_docs)]
