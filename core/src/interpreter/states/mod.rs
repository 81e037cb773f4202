//! One module per ASL state type: each holds how its state steps in `decide` (begin, step,
//! finish) and opens with its transition table, `Phase --(trigger or event)--> Phase`. The
//! machinery every state shares (emit, enter/exit, retry and catch, scopes) stays in `decide`.
//!
//! Adding a state type: a module here, an arm in `Decider::step` and `Decider::enter` (the
//! compiler asks for both: those matches have no catch-all), and its events' arms in
//! `state::apply`.

mod choice;
mod fail;
pub(in crate::interpreter) mod map;
pub(in crate::interpreter) mod parallel;
mod pass;
mod succeed;
pub(in crate::interpreter) mod task;
pub(in crate::interpreter) mod wait;
