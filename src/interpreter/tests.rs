//! Scenario tests of the interpreter (filled in below).
