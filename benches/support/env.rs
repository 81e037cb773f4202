//! env: the benches' knobs from the environment (`STATELOG_BENCH_*`).

/// The value of `name` parsed as `T`; `None` when unset. A value that does not parse stops
/// the bench, naming the variable, rather than measuring something else than asked.
pub fn env_parse<T: std::str::FromStr>(name: &str) -> Option<T> {
    let text = std::env::var(name).ok()?;
    match text.trim().parse() {
        Ok(value) => Some(value),
        Err(_) => panic!("{name}={text:?} does not parse"),
    }
}
