//! history: paging of SWF results (`maximumPageSize`, default and largest 1000;
//! `reverseOrder`; `nextPageToken`), for GetWorkflowExecutionHistory and decision tasks
//! ([`page`]) and for any list ([`page_indices`]); the events a decision task polled with
//! `startAtPreviousStartedEvent` shows ([`since_previous_started`]).
//!
//! A token is opaque to the caller: hex of (format, scope, page size, order, position) with a
//! checksum. The scope names what is paged (the engine chooses it: a run id for a history, the
//! run and started event for a decision task, a domain and filter for a list) and can be read
//! back ([`token_scope`]) so that PollForDecisionTask with a token finds its task. A token of
//! another scope, or reused with another page size or order, or damaged, is a
//! `ValidationException`, as SWF answers a token it does not accept.
//!
//! Invariants: pages are disjoint and, followed to the end, cover every item once in order;
//! the last page has no token; every token fits `limits::PAGE_TOKEN_CHARS_MAX` (for scopes of
//! ids). Must not: hold state between calls (everything is in the token) or panic on any token.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::api::{page_size, SwfError};
use crate::events::Event;
use crate::limits;

/// The format byte of tokens this build writes.
const TOKEN_FORMAT: u8 = 1;

/// What a page token records.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
struct PageToken {
    format: u8,
    scope: String,
    page_size: u32,
    reverse: bool,
    /// Index of the next item in the paged order.
    position: u64,
}

/// One page request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageRequest<'a> {
    /// What is paged (a token of another scope is refused).
    pub scope: &'a str,
    /// `maximumPageSize` (1000 when absent or 0).
    pub maximum_page_size: Option<u32>,
    /// `reverseOrder`.
    pub reverse_order: bool,
    /// `nextPageToken` of the previous page.
    pub next_page_token: Option<&'a str>,
}

/// Which items make one page.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PageSlice {
    /// Indexes into the items, in answer order.
    pub indices: Vec<usize>,
    /// The token of the next page, when there is one.
    pub next_page_token: Option<String>,
}

/// One page of history events, as SWF's JSON.
#[derive(Debug, Clone, PartialEq)]
pub struct Page {
    /// The events.
    pub events: Vec<Value>,
    /// The token of the next page, when there is one.
    pub next_page_token: Option<String>,
}

fn expired() -> SwfError {
    SwfError::validation("Specified token has exceeded its maximum lifetime")
}

/// FNV-1a, 64 bits: a checksum against damaged tokens (not a secret: tokens grant nothing).
fn checksum(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325, |hash, &b| {
        (hash ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}

fn encode_token(token: &PageToken) -> String {
    let mut bytes = postcard::to_allocvec(token).expect("a page token always encodes");
    let sum = checksum(&bytes);
    bytes.extend_from_slice(&sum.to_le_bytes());
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

fn decode_token(text: &str) -> Result<PageToken, SwfError> {
    if text.len() > limits::PAGE_TOKEN_CHARS_MAX || text.len() % 2 != 0 || text.len() < 18 {
        return Err(expired());
    }
    let bytes = (0..text.len())
        .step_by(2)
        .map(|i| {
            text.get(i..i + 2)
                .and_then(|pair| u8::from_str_radix(pair, 16).ok())
        })
        .collect::<Option<Vec<u8>>>()
        .ok_or_else(expired)?;
    let (body, sum) = bytes.split_at(bytes.len() - 8);
    let sum: [u8; 8] = sum.try_into().map_err(|_| expired())?;
    if checksum(body) != u64::from_le_bytes(sum) {
        return Err(expired());
    }
    let token: PageToken = postcard::from_bytes(body).map_err(|_| expired())?;
    if token.format != TOKEN_FORMAT {
        return Err(expired());
    }
    Ok(token)
}

/// The scope a token was issued for (PollForDecisionTask with a token finds its task by it).
pub fn token_scope(token: &str) -> Result<String, SwfError> {
    decode_token(token).map(|t| t.scope)
}

/// The page of `len` items that `request` asks for.
pub fn page_indices(len: usize, request: &PageRequest<'_>) -> Result<PageSlice, SwfError> {
    let size = page_size(request.maximum_page_size)?;
    let position = match request.next_page_token {
        None | Some("") => 0,
        Some(text) => {
            let token = decode_token(text)?;
            if token.scope != request.scope
                || token.page_size != size
                || token.reverse != request.reverse_order
            {
                return Err(expired());
            }
            usize::try_from(token.position).map_err(|_| expired())?
        }
    };
    if position > len {
        return Err(expired());
    }
    let end = position.saturating_add(size as usize).min(len);
    let indices: Vec<usize> = (position..end)
        .map(|i| {
            if request.reverse_order {
                len - 1 - i
            } else {
                i
            }
        })
        .collect();
    let next_page_token = (end < len).then(|| {
        encode_token(&PageToken {
            format: TOKEN_FORMAT,
            scope: request.scope.to_string(),
            page_size: size,
            reverse: request.reverse_order,
            position: end as u64,
        })
    });
    debug_assert!(indices.len() <= size as usize);
    Ok(PageSlice {
        indices,
        next_page_token,
    })
}

/// One page of `events` (a whole history, or a decision task's events up to its started
/// event) as SWF's JSON.
pub fn page(events: &[Event], request: &PageRequest<'_>) -> Result<Page, SwfError> {
    let slice = page_indices(events.len(), request)?;
    Ok(Page {
        events: slice.indices.iter().map(|&i| events[i].to_json()).collect(),
        next_page_token: slice.next_page_token,
    })
}

/// The events of a decision task polled with `startAtPreviousStartedEvent: true`: those with an
/// `eventTimestamp` at or after the one of the previous decision task's `DecisionTaskStarted`
/// event (`previous_started_event_id`, 0 when there was none: then every event), as SWF
/// defines it. `events` are the task's visible events (up to its own started event). The
/// answer is one contiguous tail: it starts at the previous started event, or earlier at the
/// events right before it that carry its timestamp (written in the same instant), and keeps
/// every later event whatever its timestamp, so no event after the previous task is dropped
/// (an injected clock may step back). A previous id past the events is treated as none.
pub fn since_previous_started(events: &[Event], previous_started_event_id: u64) -> &[Event] {
    let Some(at) = previous_started_event_id
        .checked_sub(1)
        .and_then(|i| usize::try_from(i).ok())
        .filter(|&i| i < events.len())
    else {
        return events;
    };
    let since_ms = events[at].timestamp_ms;
    let first = events[..at]
        .iter()
        .rposition(|e| e.timestamp_ms < since_ms)
        .map_or(0, |i| i + 1);
    &events[first..]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::api::Fault;
    use crate::events::{Attributes, MarkerRecorded};

    fn events(count: u64) -> Vec<Event> {
        (1..=count)
            .map(|id| Event {
                event_id: id,
                timestamp_ms: id * 1_000,
                attributes: Attributes::MarkerRecorded(MarkerRecorded {
                    marker_name: format!("m{id}"),
                    details: None,
                    decision_task_completed_event_id: 0,
                }),
            })
            .collect()
    }

    fn ids(page: &Page) -> Vec<u64> {
        page.events
            .iter()
            .map(|e| e["eventId"].as_u64().expect("an id"))
            .collect()
    }

    fn request<'a>(size: Option<u32>, reverse: bool, token: Option<&'a str>) -> PageRequest<'a> {
        PageRequest {
            scope: "run-1",
            maximum_page_size: size,
            reverse_order: reverse,
            next_page_token: token,
        }
    }

    #[test]
    fn pages_cover_everything_once_in_order() {
        let history = events(7);
        let first = page(&history, &request(Some(3), false, None)).expect("first");
        assert_eq!(ids(&first), [1, 2, 3]);
        let token = first.next_page_token.expect("more");
        let second = page(&history, &request(Some(3), false, Some(&token))).expect("second");
        assert_eq!(ids(&second), [4, 5, 6]);
        let token = second.next_page_token.expect("more");
        let third = page(&history, &request(Some(3), false, Some(&token))).expect("third");
        assert_eq!(ids(&third), [7]);
        assert_eq!(third.next_page_token, None);
    }

    #[test]
    fn reverse_order_pages_newest_first() {
        let history = events(5);
        let first = page(&history, &request(Some(2), true, None)).expect("first");
        assert_eq!(ids(&first), [5, 4]);
        let token = first.next_page_token.expect("more");
        let second = page(&history, &request(Some(2), true, Some(&token))).expect("second");
        assert_eq!(ids(&second), [3, 2]);
        let token = second.next_page_token.expect("more");
        let third = page(&history, &request(Some(2), true, Some(&token))).expect("third");
        assert_eq!(ids(&third), [1]);
        assert_eq!(third.next_page_token, None);
    }

    #[test]
    fn the_default_and_largest_page_is_1000() {
        let history = events(2_500);
        let first = page(&history, &request(None, false, None)).expect("first");
        assert_eq!(first.events.len(), 1000);
        let token = first.next_page_token.expect("more");
        // 0 means the default too, so the token still matches.
        let second = page(&history, &request(Some(0), false, Some(&token))).expect("second");
        assert_eq!(ids(&second)[0], 1001);
        assert_eq!(
            page(&history, &request(Some(1001), false, None)).map_err(|e| e.fault),
            Err(Fault::Validation)
        );
        let exact = page(&events(1000), &request(None, false, None)).expect("one page");
        assert_eq!(exact.next_page_token, None, "no empty last page");
        let empty = page(&[], &request(None, false, None)).expect("empty");
        assert!(empty.events.is_empty());
        assert_eq!(empty.next_page_token, None);
    }

    #[test]
    fn a_token_of_another_request_or_damaged_is_refused() {
        let history = events(10);
        let token = page(&history, &request(Some(3), false, None))
            .expect("first")
            .next_page_token
            .expect("more");
        assert_eq!(token_scope(&token), Ok("run-1".to_string()));
        let other_run = PageRequest {
            scope: "run-2",
            ..request(Some(3), false, Some(&token))
        };
        let refused = |r: &PageRequest<'_>| page(&history, r).map_err(|e| (e.fault, e.message));
        let expected = Err((
            Fault::Validation,
            "Specified token has exceeded its maximum lifetime".to_string(),
        ));
        assert_eq!(refused(&other_run), expected);
        assert_eq!(refused(&request(Some(4), false, Some(&token))), expected);
        assert_eq!(refused(&request(Some(3), true, Some(&token))), expected);
        let mut damaged = token.clone().into_bytes();
        damaged[4] = if damaged[4] == b'0' { b'1' } else { b'0' };
        let damaged = String::from_utf8(damaged).expect("hex");
        assert_eq!(refused(&request(Some(3), false, Some(&damaged))), expected);
        for junk in ["zz", "abc", "0000000000000000000000", "é"] {
            assert_eq!(
                refused(&request(Some(3), false, Some(junk))),
                expected,
                "{junk}"
            );
        }
        assert!(token_scope("nope").is_err());
        // A token past a shortened history (cannot happen to a history; lists may shrink).
        let short = events(2);
        assert!(page(&short, &request(Some(3), false, Some(&token))).is_err());
    }

    #[test]
    fn since_previous_started_keeps_the_tail_from_the_previous_started_instant() {
        // Timestamps 1000, 2000, ... except events 4 and 5, written in event 5's instant.
        let mut history = events(8);
        history[3].timestamp_ms = 5_000;
        let ids_of = |tail: &[Event]| tail.iter().map(|e| e.event_id).collect::<Vec<_>>();
        assert_eq!(
            ids_of(since_previous_started(&history, 0)),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(ids_of(since_previous_started(&history, 7)), [7, 8]);
        assert_eq!(
            ids_of(since_previous_started(&history, 5)),
            [4, 5, 6, 7, 8],
            "an earlier event of the same instant is kept"
        );
        assert_eq!(
            ids_of(since_previous_started(&history, 1)),
            [1, 2, 3, 4, 5, 6, 7, 8]
        );
        assert_eq!(
            ids_of(since_previous_started(&history, 9)).len(),
            8,
            "past the end"
        );
        // A clock that stepped back after the previous task drops nothing after it.
        history[7].timestamp_ms = 1;
        assert_eq!(ids_of(since_previous_started(&history, 7)), [7, 8]);
        // Paged, the tail pages like any history.
        let tail = since_previous_started(&history, 6);
        let first = page(tail, &request(Some(2), false, None)).expect("first");
        assert_eq!(ids(&first), [6, 7]);
        let token = first.next_page_token.expect("more");
        let second = page(tail, &request(Some(2), false, Some(&token))).expect("second");
        assert_eq!(ids(&second), [8]);
        let reversed = page(tail, &request(None, true, None)).expect("reversed");
        assert_eq!(ids(&reversed), [8, 7, 6]);
    }

    #[test]
    fn tokens_fit_the_limit_for_long_scopes() {
        let scope = format!("{}/{}/{}", "d".repeat(256), "w".repeat(256), u64::MAX);
        let slice = page_indices(
            10,
            &PageRequest {
                scope: &scope,
                maximum_page_size: Some(1),
                reverse_order: false,
                next_page_token: None,
            },
        )
        .expect("pages");
        let token = slice.next_page_token.expect("more");
        assert!(
            token.len() <= limits::PAGE_TOKEN_CHARS_MAX,
            "{}",
            token.len()
        );
        assert_eq!(token_scope(&token), Ok(scope));
    }
}
