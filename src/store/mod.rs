//! store: execution histories over the WAL: append events durably, rebuild state, index executions. Never depends on the interpreter.
