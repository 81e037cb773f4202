//! swf: Amazon SWF workflows on the engine: [`Engine::swf`] gives [`Swf`], one method per SWF
//! operation, named after it in snake case, taking the operation's `api` input and answering
//! its `api` output or an [`api::SwfError`] with SWF's fault. The engine is one account: its
//! registry (`registry`) is that account's domains and types.
//!
//! The module also re-exports the pure model (`statelog_swf`: `api`, `limits`, ...), so the
//! server names `statelog_engine::swf::api::…` and never the model's crate (the layering test
//! checks it).
//!
//! Pieces: `registry` (domains, types, tags), `index` (list/count of executions), `runs` (the
//! open runs, the commit path, deadlines, recovery), `executions` (start, polls, answers,
//! signal/cancel/terminate, describe, history), `lists` (task lists), `token` (task tokens),
//! `model` (the one place that calls the pure model's fold and transitions).
//!
//! Invariants: every change is durable in the store (`store::swf`) before the call that made
//! it answers. Must not: read wall time except through the engine's clock; log a task token.

mod executions;
mod index;
mod lists;
mod model;
mod registry;
mod runs;
mod token;

pub use lists::PollCancel;
pub use statelog_swf::*;

use parking_lot::Mutex;
use statelog_swf::api::{Fault, SwfError};

use super::Engine;

/// The SWF operations of one engine (one account). Cheap: a borrow of the engine.
#[derive(Debug, Clone, Copy)]
pub struct Swf<'a> {
    engine: &'a Engine,
}

impl Engine {
    /// The SWF operations of this engine (one account).
    pub fn swf(&self) -> Swf<'_> {
        Swf { engine: self }
    }
}

/// The engine's SWF state beside the store's index (kept in `Inner`).
#[derive(Debug, Default)]
pub(crate) struct SwfService {
    /// Serializes registry changes: each is checked against the registry and written under it.
    pub(crate) registry_writes: Mutex<()>,
    /// Open runs and their deadlines.
    pub(crate) runs: runs::Runs,
    /// Decision and activity task lists.
    pub(crate) lists: lists::TaskLists,
}

pub(crate) use runs::{recover, SwfDeadlines};

impl<'a> Swf<'a> {
    fn service(&self) -> &'a SwfService {
        &self.engine.inner.swf
    }

    /// Ends every SWF long poll of this engine: waiting polls answer empty now, later ones at
    /// once, and none claims a task from then on. A server calls it as it shuts down, so a
    /// poll whose client will never hear the answer does not start a task (whose token would
    /// be lost until its start-to-close timeout). Everything else keeps working.
    pub fn stop_polls(&self) {
        self.service().lists.close();
    }
}

/// A store failure as SWF answers it: `InternalFailure` naming it.
pub(crate) fn internal(error: impl std::fmt::Display) -> SwfError {
    SwfError::new(Fault::Internal, format!("storage: {error}"))
}

#[cfg(test)]
mod tests;
#[cfg(test)]
mod tests_children;
#[cfg(test)]
mod tests_limits;
#[cfg(test)]
mod tests_runs;
