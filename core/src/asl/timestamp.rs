//! timestamp: the RFC 3339 timestamps of Choice rules and Wait states.
//!
//! AWS accepts the RFC 3339 profile of ISO 8601 with an uppercase `T` between date and time and
//! an uppercase `Z` when there is no numeric offset; a timestamp without an offset is not one.
//! Must not: read the clock.

use time::format_description::well_known::Rfc3339;
use time::OffsetDateTime;

/// Parses an ASL timestamp; `None` when `text` is not one.
pub fn parse_timestamp(text: &str) -> Option<OffsetDateTime> {
    // RFC 3339 (and the parser) allow lowercase or space separators; ASL does not.
    if text.contains('t') || text.contains('z') || text.as_bytes().get(10) != Some(&b'T') {
        return None;
    }
    OffsetDateTime::parse(text, &Rfc3339).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_rfc3339_with_uppercase_separators_only() {
        for ok in [
            "2016-03-14T01:59:00Z",
            "2016-03-14T01:59:00.123Z",
            "2016-03-14T01:59:00+02:00",
            "2016-03-14T01:59:00.123456789-07:30",
        ] {
            assert!(parse_timestamp(ok).is_some(), "{ok}");
        }
        for bad in [
            "",
            "date",
            "2016-03-14",
            "2016-03-14T01:59:00",
            "2016-03-14t01:59:00Z",
            "2016-03-14T01:59:00z",
            "2016-03-14 01:59:00Z",
            "2023-02-24 12:15:56.832957",
            "2016-13-14T01:59:00Z",
        ] {
            assert!(parse_timestamp(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn offsets_compare_as_instants() {
        let a = parse_timestamp("2016-03-14T01:59:00Z").expect("ts");
        let b = parse_timestamp("2016-03-14T03:59:00+02:00").expect("ts");
        assert_eq!(a, b);
    }
}
