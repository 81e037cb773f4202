//! history: the execution history events (AWS names and detail shapes), their ids and their
//! versioned encoding. The source of truth for replay. Pure: no I/O.
