//! reader: iterate records by LSN.

/// An iterator over owned records from an LSN on.
#[derive(Debug)]
pub struct RecordIter {}
