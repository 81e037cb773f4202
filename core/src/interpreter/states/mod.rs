//! One module per ASL state type: each holds how its state steps in `decide` (begin, step,
//! finish) and, in a section at its end, how its own events fold into the state (`fold_*`,
//! called by `state::apply`). Each opens with its transition table, `Phase --(trigger or
//! event)--> Phase`: the decide rows (what a trigger or step emits) and the apply rows (what
//! an event does to the phase). The machinery every state shares stays in `decide` (emit,
//! enter/exit, retry and catch, scopes) and in `state` (the entered, exited and aborted events,
//! the retry timer, the Parallel/Map success and failure).
//!
//! Adding a state type: a module here, an arm in `Decider::step` and `Decider::enter`, and
//! arms for its events in `state::apply_details` calling its `fold_*` functions. The compiler
//! asks for all three: none of those matches has a catch-all.

pub(in crate::interpreter) mod choice;
pub(in crate::interpreter) mod fail;
pub(in crate::interpreter) mod map;
pub(in crate::interpreter) mod parallel;
mod pass;
mod succeed;
pub(in crate::interpreter) mod task;
pub(in crate::interpreter) mod wait;
