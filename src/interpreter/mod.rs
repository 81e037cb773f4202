//! interpreter: pure stepping. `decide(state, trigger, definition, now) -> events` and `apply(state, event)`. No I/O, no clock, no WAL.
