//! engine: the public API (open, register integrations, state machines, start/stop/describe/list executions, history). Wires the pure core to the store and the clock.
