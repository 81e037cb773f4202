//! asl: parse and validate Amazon States Language definitions (JSONPath mode) into a typed,
//! compiled model. Returns every diagnostic at once, each with the JSON path of the offending
//! field. Pure: no I/O, no clock, no WAL.
