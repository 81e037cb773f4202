//! history: the events an execution's history holds, as
//! [`Engine::get_execution_history`](crate::Engine::get_execution_history) returns them, and their
//! AWS JSON rendering.
//!
//! These are the core's types, re-exported here on purpose: a history page is made of them, so
//! they are part of the engine's API. Callers above the engine (the server, the CLI) name them
//! through this module and never through `statelog-core`. The WAL encoding of events is not
//! re-exported: only the store reads and writes it.

pub use statelog_core::history::aws_json;
pub use statelog_core::history::{
    ActivityScheduled, ActivityStarted, ErrorCause, EvaluationFailed, EventDetails, EventId,
    ExecutionRedriven, ExecutionStarted, HistoryEvent, LambdaFunctionScheduled, MapIteration,
    MapRunRedriven, MapRunStarted, MapStateStarted, Output, Payload, StateEntered, StateExited,
    TaskError, TaskOutput, TaskResource, TaskScheduled,
};
