//! asl: parse and validate Amazon States Language definitions (JSONPath mode) into a typed,
//! compiled model. Returns every diagnostic at once, each with the JSON path of the offending
//! field. Pure: no I/O, no clock, no WAL.
//!
//! - [`model`]: the typed definition the interpreter runs.

pub mod model;

pub use model::{
    Branch, Catcher, ChoiceRule, ChoiceState, CompareFamily, CompareOp, Condition, CountField,
    FailField, FailState, IntegrationPattern, JitterStrategy, MapState, Operand, ParallelState,
    PassState, PatternPiece, PercentageField, QueryLanguage, Resource, ResourceKind, Retrier,
    SecondsField, State, StateKind, StateMachine, StateMap, StringPattern, TaskState, Test,
    Transition, TypeCheck, WaitFor, WaitState, ERROR_ALL,
};
