//! listing: a cluster-wide `ListExecutions` from every partition's page.
//!
//! Each partition answers a newest-first page of its own ([`WirePage`]); [`merge_pages`]
//! merges them by start time (then ARN, newest first) into one page, and the page token
//! ([`ListCursor`]) says, for each partition, the partition's own token of the page being read
//! and how many of that page were shown. A page stops early where a partition's page is used
//! up and it has more, since its next page may hold executions newer than the others'
//! remaining ones; so every execution is listed once, in order.
//!
//! Must not: read a partition itself (the backend does); trust a token it did not make (a
//! foreign or altered one is `InvalidToken`).

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

use crate::engine::Error as EngineError;
use crate::server::engine_backend::engine_error;
use crate::server::error::Error;

/// One execution of a partition's listing, as it crosses nodes.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WireSummary {
    pub(crate) arn: String,
    pub(crate) state_machine_arn: String,
    pub(crate) name: String,
    pub(crate) status: String,
    pub(crate) start_ms: u64,
    pub(crate) stop_ms: Option<u64>,
    pub(crate) redrive_count: u32,
    pub(crate) redrive_ms: Option<u64>,
}

#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub(crate) struct WirePage {
    pub(crate) items: Vec<WireSummary>,
    pub(crate) next_token: Option<String>,
}

/// Where one partition's listing stands across the pages of a cluster-wide `ListExecutions`.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct PartCursor {
    /// The partition's own token of the page being read (`None`: its first page).
    #[serde(rename = "t", default)]
    pub(crate) token: Option<String>,
    /// How many of that page were shown already.
    #[serde(rename = "s", default)]
    pub(crate) skip: u32,
    /// Whether the partition has nothing more to show.
    #[serde(rename = "d", default)]
    pub(crate) done: bool,
}

/// The cluster-wide `ListExecutions` page token: one [`PartCursor`] per partition.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListCursor {
    #[serde(rename = "p")]
    pub(crate) parts: Vec<PartCursor>,
}

impl ListCursor {
    pub(crate) fn encode(&self) -> String {
        // A struct of strings, numbers and booleans always encodes.
        let json = serde_json::to_vec(self).unwrap_or_default();
        format!("c{}", URL_SAFE_NO_PAD.encode(json))
    }

    pub(crate) fn decode(token: &str, partitions: u32) -> Result<Self, Error> {
        let invalid = || {
            engine_error(EngineError::InvalidToken {
                token: token.to_owned(),
            })
        };
        let bytes = token
            .strip_prefix('c')
            .and_then(|rest| URL_SAFE_NO_PAD.decode(rest).ok())
            .ok_or_else(invalid)?;
        let cursor: ListCursor = serde_json::from_slice(&bytes).map_err(|_| invalid())?;
        if cursor.parts.len() != partitions as usize {
            return Err(invalid());
        }
        Ok(cursor)
    }
}

/// Merges the partitions' newest-first pages: what one page of `max` shows, and the cursor
/// after it.
pub(crate) fn merge_pages(
    mut cursor: ListCursor,
    pages: Vec<Option<WirePage>>,
    max: usize,
) -> (Vec<WireSummary>, ListCursor) {
    // A k-way merge of the partitions' pages, each taken in its own order from its head (what
    // `skip` counts): the newest head (start time, then ARN) goes first. Each partition's page
    // is newest first by its own start order, which two starts in one millisecond may not
    // share with the ARN order, so the heads are compared, never the pages' items sorted as
    // one list (that could show a page's later item before an earlier one, and the count in
    // `skip` would then list one twice and skip another).
    let newer = |x: &WireSummary, y: &WireSummary| {
        x.start_ms
            .cmp(&y.start_ms)
            .then_with(|| x.arn.cmp(&y.arn))
            .is_gt()
    };
    let mut shown = Vec::new();
    let mut used = vec![0u32; pages.len()];
    while shown.len() < max {
        let mut best: Option<(usize, &WireSummary)> = None;
        for (partition, page) in pages.iter().enumerate() {
            let Some(page) = page else { continue };
            let head = cursor.parts[partition].skip as usize + used[partition] as usize;
            let Some(item) = page.items.get(head) else {
                continue;
            };
            if best.map_or(true, |(_, current)| newer(item, current)) {
                best = Some((partition, item));
            }
        }
        let Some((partition, item)) = best else { break };
        shown.push(item.clone());
        used[partition] += 1;
        let page = pages[partition].as_ref().expect("a page that was read");
        let consumed = cursor.parts[partition].skip as usize + used[partition] as usize;
        if consumed == page.items.len() && page.next_token.is_some() {
            // A partition's page shown to its end cannot be followed by its next page's items
            // ahead of another partition's older ones: the merged page stops here.
            break;
        }
    }
    for (partition, page) in pages.iter().enumerate() {
        let Some(page) = page else { continue };
        let part = &mut cursor.parts[partition];
        let consumed = part.skip as usize + used[partition] as usize;
        if consumed >= page.items.len() {
            match &page.next_token {
                Some(token) => {
                    part.token = Some(token.clone());
                    part.skip = 0;
                }
                None => {
                    part.done = true;
                    part.skip = 0;
                }
            }
        } else {
            part.skip = u32::try_from(consumed).unwrap_or(u32::MAX);
        }
    }
    (shown, cursor)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn summary(arn: &str, start_ms: u64) -> WireSummary {
        WireSummary {
            arn: arn.into(),
            state_machine_arn: "m".into(),
            name: arn.into(),
            status: "RUNNING".into(),
            start_ms,
            stop_ms: None,
            redrive_count: 0,
            redrive_ms: None,
        }
    }

    fn page(items: &[(&str, u64)], next: Option<&str>) -> Option<WirePage> {
        Some(WirePage {
            items: items.iter().map(|(arn, ms)| summary(arn, *ms)).collect(),
            next_token: next.map(str::to_owned),
        })
    }

    fn fresh(partitions: usize) -> ListCursor {
        ListCursor {
            parts: vec![PartCursor::default(); partitions],
        }
    }

    fn arns(items: &[WireSummary]) -> Vec<&str> {
        items.iter().map(|item| item.arn.as_str()).collect()
    }

    #[test]
    fn pages_merge_newest_first_and_resume_mid_page() {
        let pages = vec![
            page(&[("a3", 30), ("a1", 10)], None),
            page(&[("b4", 40), ("b2", 20)], None),
        ];
        let (shown, cursor) = merge_pages(fresh(2), pages, 3);
        assert_eq!(arns(&shown), ["b4", "a3", "b2"]);
        assert_eq!(cursor.parts[0].skip, 1);
        assert!(cursor.parts[1].done);
        // The next page reads partition 0's page again and skips what was shown.
        let pages = vec![page(&[("a3", 30), ("a1", 10)], None), None];
        let (shown, cursor) = merge_pages(cursor, pages, 3);
        assert_eq!(arns(&shown), ["a1"]);
        assert!(cursor.parts.iter().all(|part| part.done));
    }

    #[test]
    fn a_page_is_taken_in_its_own_order_when_starts_share_a_millisecond() {
        // Partition 0 started "a-y" before "a-x" in one millisecond: its newest-first page has
        // "a-x" (the later start) first though it sorts after "a-y" by ARN. Every execution is
        // listed once across pages of 2, whatever the order within the millisecond.
        let first = || {
            vec![
                page(&[("a-x", 50), ("a-y", 50), ("a-w", 10)], None),
                page(&[("b-1", 50), ("b-0", 5)], None),
            ]
        };
        let mut cursor = fresh(2);
        let mut listed = Vec::new();
        for _ in 0..5 {
            let pages = first()
                .into_iter()
                .enumerate()
                .map(|(index, page)| (!cursor.parts[index].done).then_some(page).flatten())
                .collect();
            let (shown, next) = merge_pages(cursor, pages, 2);
            listed.extend(arns(&shown).into_iter().map(str::to_owned));
            cursor = next;
            if cursor.parts.iter().all(|part| part.done) {
                break;
            }
        }
        let mut sorted = listed.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), listed.len(), "listed twice: {listed:?}");
        assert_eq!(sorted, ["a-w", "a-x", "a-y", "b-0", "b-1"], "{listed:?}");
        // Partition 0's own order is kept.
        let position = |arn| listed.iter().position(|l| l == arn).expect("listed");
        assert!(position("a-x") < position("a-y"), "{listed:?}");
    }

    #[test]
    fn a_used_up_page_with_more_behind_it_ends_the_merged_page() {
        // Partition 0's next page may hold executions newer than b1: stop before b1.
        let pages = vec![
            page(&[("a9", 90), ("a8", 80)], Some("x7")),
            page(&[("b1", 10)], None),
        ];
        let (shown, cursor) = merge_pages(fresh(2), pages, 10);
        assert_eq!(arns(&shown), ["a9", "a8"]);
        assert_eq!(cursor.parts[0].token.as_deref(), Some("x7"));
        assert_eq!(cursor.parts[0].skip, 0);
        assert!(!cursor.parts[1].done);
        assert_eq!(cursor.parts[1].skip, 0);
    }

    #[test]
    fn cursors_round_trip_and_a_foreign_token_is_invalid() {
        let mut cursor = fresh(3);
        cursor.parts[1] = PartCursor {
            token: Some("x12".into()),
            skip: 4,
            done: false,
        };
        cursor.parts[2].done = true;
        let token = cursor.encode();
        assert_eq!(ListCursor::decode(&token, 3).expect("reads"), cursor);
        for bad in ["x12", "c!!", &token[..token.len() - 2]] {
            let error = ListCursor::decode(bad, 3).expect_err("refused");
            assert_eq!(error.aws_name(), "InvalidToken", "{bad}");
        }
        assert_eq!(
            ListCursor::decode(&token, 4)
                .expect_err("another count")
                .aws_name(),
            "InvalidToken"
        );
    }
}
