//! swf::token: SWF task tokens. A token is base64url (no padding) of
//! `[1] ++ len(run id) ++ run id ++ started event id (8 bytes, big endian) ++ nonce (16
//! bytes)`: the nonce is drawn from the engine's `RandomSource` and recorded in the
//! `…TaskStarted` event, so a token is unguessable, checked after a restart against the
//! folded state, and single use (the task closes in the commit that answers it).
//!
//! Invariants: a token is compared with the recorded nonce in constant time; a token that
//! does not parse, names an unknown run, or does not match is one answer
//! (`UnknownResourceFault`), so a caller learns nothing from which part failed. Must not: log
//! or echo a token.

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;

/// The version byte of today's tokens.
const TOKEN_VERSION: u8 = 1;

/// What a token names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Token {
    /// The run.
    pub(crate) run_id: String,
    /// The `DecisionTaskStarted` / `ActivityTaskStarted` event.
    pub(crate) started_event_id: u64,
    /// The nonce recorded in that event.
    pub(crate) nonce: [u8; 16],
}

/// The token of a started task.
pub(crate) fn encode(run_id: &str, started_event_id: u64, nonce: &[u8; 16]) -> String {
    let mut bytes = Vec::with_capacity(2 + run_id.len() + 24);
    bytes.push(TOKEN_VERSION);
    // Run ids are short (this engine makes them); a longer one is cut at 255 bytes, which
    // then names no run.
    let run = &run_id.as_bytes()[..run_id.len().min(255)];
    bytes.push(run.len() as u8);
    bytes.extend_from_slice(run);
    bytes.extend_from_slice(&started_event_id.to_be_bytes());
    bytes.extend_from_slice(nonce);
    URL_SAFE_NO_PAD.encode(bytes)
}

/// Reads a token; `None` when it is not one of this engine's shape.
pub(crate) fn decode(token: &str) -> Option<Token> {
    if token.len() > statelog_swf::limits::TASK_TOKEN_CHARS_MAX {
        return None;
    }
    let bytes = URL_SAFE_NO_PAD.decode(token).ok()?;
    let (&version, rest) = bytes.split_first()?;
    if version != TOKEN_VERSION {
        return None;
    }
    let (&len, rest) = rest.split_first()?;
    let len = usize::from(len);
    if rest.len() != len + 8 + 16 {
        return None;
    }
    let run_id = std::str::from_utf8(&rest[..len]).ok()?.to_string();
    let started_event_id = u64::from_be_bytes(rest[len..len + 8].try_into().ok()?);
    let nonce: [u8; 16] = rest[len + 8..].try_into().ok()?;
    Some(Token {
        run_id,
        started_event_id,
        nonce,
    })
}

/// Whether two nonces are equal, in time independent of where they differ.
pub(crate) fn same_nonce(a: &[u8; 16], b: &[u8; 16]) -> bool {
    let mut diff = 0u8;
    for (x, y) in a.iter().zip(b) {
        diff |= x ^ y;
    }
    std::hint::black_box(diff) == 0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_round_trip_and_anything_else_is_refused() {
        let nonce = [7u8; 16];
        let token = encode("run-1", 42, &nonce);
        assert!(!token.contains("run-1"), "the run id is not in clear text");
        assert_eq!(
            decode(&token),
            Some(Token {
                run_id: "run-1".into(),
                started_event_id: 42,
                nonce
            })
        );
        for bad in ["", "x", "!!!!", &token[..token.len() - 2]] {
            assert_eq!(decode(bad), None, "{bad:?}");
        }
        let mut other = nonce;
        other[15] ^= 1;
        assert!(same_nonce(&nonce, &nonce));
        assert!(!same_nonce(&nonce, &other));
    }
}
