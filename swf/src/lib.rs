//! statelog-swf: the pure model of Amazon SWF workflow executions (issue 18;
//! the shared SWF design pins the seams).
//!
//! Modules:
//! - [`api`]: every operation's input and output shape with SWF's JSON names, the faults
//!   ([`api::Fault`], [`api::SwfError`]) and the shared validation helpers.
//! - [`limits`]: SWF's named maximums.
//! - [`events`]: the history events ([`events::Event`], one [`events::Attributes`] variant per
//!   SWF event type) and their SWF JSON; `events::samples()` is the golden sample.
//! - [`encoding`]: the stored bytes of an event batch (version + postcard).
//!
//! Deviations from SWF-DESIGN.md (additions only; nothing pinned is renamed):
//! - `DecisionTask.workflow_execution` / `workflow_type` and `ActivityTask.activity_id` /
//!   `workflow_execution` / `activity_type` are `Option`, so that an empty poll answers only
//!   `taskToken: ""` and the event ids (`DecisionTask::empty()`, `ActivityTask::empty()`).
//! - `DecisionTask.previous_started_event_id` is a `u64` always written (0 when none), as SWF.
//! - `DeleteDomainInput` exists for the engine API, but SWF has no DeleteDomain operation.
//!
//! Invariants: pure. No clock (times come in as epoch milliseconds), no randomness (token
//! nonces come in from the engine), no file system, network, threads or tokio.
//! Must not: depend on any statelog crate; perform I/O.

pub mod api;
pub mod encoding;
pub mod events;
pub mod limits;
