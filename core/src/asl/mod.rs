//! asl: parse and validate Amazon States Language definitions (JSONPath mode) into a typed,
//! compiled model. Returns every diagnostic at once, each with the JSON path of the offending
//! field. Pure: no I/O, no clock, no WAL.
//!
//! - [`model`]: the typed definition the interpreter runs.
//! - [`assign`]: a state's, Choice rule's or Catcher's `Assign` ([`Assign`]).
//! - [`data_flow`]: a state's data-flow fields behind one type per query language
//!   ([`DataFlow`], a Catcher's [`CatchFlow`]) and the steps the interpreter asks of them.
//! - [`jsonata`]: the seam to a JSONata evaluator (traits the engine implements) and the
//!   compiled `{% %}` template ([`JsonataTemplate`]).
//! - [`parse`]: text -> [`StateMachine`] or every [`Diagnostic`]; `references`: the variables
//!   each state reads ([`StateMachine::variable_references`]).
//! - [`choice`]: Choice rule evaluation and the Choice state's pick.
//! - [`resource`]: Task `Resource` ARNs and the embedder's [`ResourceRegistry`].
//! - [`diagnostic`], [`timestamp`]: shared pieces; [`fuzz`]: the fuzz oracle; [`Error`]: the
//!   layer's Rust error (wraps the diagnostics).
//!
//! Invariants: a [`StateMachine`] exists only for a definition with no error diagnostic; every
//! path and template in it is compiled once, here; nothing in this module touches `wal`,
//! `clock`, threads or the file system (the CLI reads the file, then calls in).

pub mod assign;
pub mod choice;
pub mod data_flow;
pub mod diagnostic;
mod error;
pub mod fuzz;
mod json;
pub mod jsonata;
pub mod model;
pub mod parse;
#[cfg(test)]
mod parse_tests;
mod references;
pub mod resource;
pub mod timestamp;

pub use assign::Assign;
pub use choice::{compile_pattern, NO_CHOICE_MATCHED, NO_CHOICE_MATCHED_CAUSE};
pub use data_flow::{CatchFlow, DataFlow, Env, JsonPathFlow, JsonataFlow};
pub use diagnostic::{Diagnostic, DiagnosticCode, Severity};
pub use error::Error;
pub use jsonata::{Expression, Jsonata, JsonataRuntime, JsonataTemplate};
pub use model::{
    BatchInput, Branch, Catcher, ChildExecutionType, ChoiceRule, ChoiceState, CompareFamily,
    CompareOp, Condition, CountField, Distributed, FailField, FailState, IntegrationPattern,
    ItemBatcher, JitterStrategy, MapState, ObjectAccess, Operand, ParallelState, PassState,
    PatternPiece, PercentageField, QueryLanguage, Resource, ResourceKind, Retrier, SecondsField,
    State, StateKind, StateMachine, StateMap, StringPattern, TaskListField, TaskState, Test,
    Transition, TypeCheck, WaitFor, WaitState, ERROR_ALL, ERROR_RUNTIME,
};
pub use parse::{parse_definition, MachineType, ValidationOptions};
pub use resource::{parse_resource, RegistryRefusal, ResourceError, ResourceRegistry};
pub use timestamp::parse_timestamp;
