//! swf::index: the executions index as the API shows it: List/Count of open and closed
//! workflow executions with every SWF filter (start or close time window, workflow id, type
//! name and version, tag, close status), `reverseOrder` and paging. It reads the store's run
//! summaries only (no history is read); a closed run past its domain's retention is gone from
//! every answer at once, before compaction reclaims it.
//!
//! Order: open runs and closed runs listed by start time are newest start first; closed runs
//! listed by close time (a `closeTimeFilter`) are newest close first; `reverseOrder` turns
//! either around. A page token names the last run shown by its sort key; it is checked (a
//! token of another listing is a `ValidationException`).
//!
//! Must not: read wall time except through the engine's clock; show a run the store has not
//! made durable (the store indexes a batch only after its synced append).

use statelog_store::swf::{CloseStatus as StoreClose, RunSummary};
use statelog_swf::api::{self, SwfError};

use super::Swf;

/// SWF's close status of the store's.
pub(crate) fn close_status_of(status: StoreClose) -> api::CloseStatus {
    match status {
        StoreClose::Completed => api::CloseStatus::Completed,
        StoreClose::Failed => api::CloseStatus::Failed,
        StoreClose::Canceled => api::CloseStatus::Canceled,
        StoreClose::Terminated => api::CloseStatus::Terminated,
        StoreClose::ContinuedAsNew => api::CloseStatus::ContinuedAsNew,
        StoreClose::TimedOut => api::CloseStatus::TimedOut,
    }
}

/// The filters of one listing or count, checked.
struct Filters<'a> {
    open: bool,
    start: Option<(u64, u64)>,
    close: Option<(u64, u64)>,
    workflow_id: Option<&'a str>,
    type_name: Option<&'a str>,
    type_version: Option<&'a str>,
    tag: Option<&'a str>,
    close_status: Option<api::CloseStatus>,
}

fn window(filter: &api::ExecutionTimeFilter) -> Result<(u64, u64), SwfError> {
    let oldest = api::timestamp_to_ms(filter.oldest_date);
    let latest = filter.latest_date.map_or(u64::MAX, api::timestamp_to_ms);
    if latest < oldest {
        return Err(SwfError::validation(
            "latestDate must not be before oldestDate in a time filter",
        ));
    }
    Ok((oldest, latest))
}

impl Filters<'_> {
    fn accepts(&self, run: &RunSummary) -> bool {
        if self.open != run.close.is_none() {
            return false;
        }
        if let Some((oldest, latest)) = self.start {
            if run.start.start_ms < oldest || run.start.start_ms > latest {
                return false;
            }
        }
        if let Some((oldest, latest)) = self.close {
            match &run.close {
                Some(close) if close.close_ms >= oldest && close.close_ms <= latest => {}
                _ => return false,
            }
        }
        if self.workflow_id.is_some_and(|w| w != run.workflow_id) {
            return false;
        }
        if self.type_name.is_some_and(|n| n != run.start.type_name) {
            return false;
        }
        if self
            .type_version
            .is_some_and(|v| v != run.start.type_version)
        {
            return false;
        }
        if self
            .tag
            .is_some_and(|t| !run.start.tags.iter().any(|x| x == t))
        {
            return false;
        }
        if let Some(status) = self.close_status {
            if run.close.as_ref().map(|c| close_status_of(c.status)) != Some(status) {
                return false;
            }
        }
        true
    }

    /// The key runs are ordered by: close time for a close-time listing, else start time;
    /// ties by start order.
    fn key(&self, run: &RunSummary) -> (u64, u64) {
        let ms = match (&self.close, &run.close) {
            (Some(_), Some(close)) => close.close_ms,
            _ => run.start.start_ms,
        };
        (ms, run.start_index)
    }
}

fn token_of(kind: char, key: (u64, u64)) -> String {
    format!("{kind}{:016x}{:016x}", key.0, key.1)
}

fn read_token(kind: char, token: &str) -> Result<(u64, u64), SwfError> {
    let bad = || {
        SwfError::validation(
            "Invalid nextPageToken: it was not given by this listing (its filters or order \
             changed)",
        )
    };
    let hex = token.strip_prefix(kind).ok_or_else(bad)?;
    // Only ASCII is sliced by byte: a multi-byte character in a forged token is refused, not
    // cut through.
    if hex.len() != 32 || !hex.is_ascii() {
        return Err(bad());
    }
    let ms = u64::from_str_radix(&hex[..16], 16).map_err(|_| bad())?;
    let index = u64::from_str_radix(&hex[16..], 16).map_err(|_| bad())?;
    Ok((ms, index))
}

impl Swf<'_> {
    /// The runs of `domain` the filters accept and that are not past retention, sorted newest
    /// first (or oldest first when `reverse`).
    fn matching(&self, domain: &str, filters: &Filters<'_>, reverse: bool) -> Vec<RunSummary> {
        let now_ms = self.engine.inner.options.clock.now_ms();
        let page =
            self.engine
                .inner
                .store
                .swf_runs(Some(domain), false, None, usize::MAX, &mut |run| {
                    filters.accepts(run) && !run.is_expired(now_ms)
                });
        let mut runs = page.runs;
        runs.sort_by_key(|run| std::cmp::Reverse(filters.key(run)));
        if reverse {
            runs.reverse();
        }
        runs
    }

    fn list(
        &self,
        domain: &str,
        filters: Filters<'_>,
        token: Option<&str>,
        size: Option<u32>,
        reverse: bool,
    ) -> Result<api::WorkflowExecutionInfos, SwfError> {
        self.domain(domain)?;
        let size = api::page_size(size)? as usize;
        let kind = match (filters.open, filters.close.is_some(), reverse) {
            (true, _, false) => 'o',
            (true, _, true) => 'p',
            (false, false, false) => 's',
            (false, false, true) => 't',
            (false, true, false) => 'c',
            (false, true, true) => 'd',
        };
        let mut runs = self.matching(domain, &filters, reverse);
        if let Some(token) = token {
            let after = read_token(kind, token)?;
            runs.retain(|run| {
                let key = filters.key(run);
                if reverse {
                    key > after
                } else {
                    key < after
                }
            });
        }
        let next_page_token = if runs.len() > size {
            runs.truncate(size);
            runs.last().map(|run| token_of(kind, filters.key(run)))
        } else {
            None
        };
        Ok(api::WorkflowExecutionInfos {
            execution_infos: runs.iter().map(|run| self.execution_info(run)).collect(),
            next_page_token,
        })
    }

    /// How a run shows in listings and descriptions.
    pub(crate) fn execution_info(&self, run: &RunSummary) -> api::WorkflowExecutionInfo {
        let cancel_requested = run.close.is_none() && self.cancel_requested(&run.run_id);
        api::WorkflowExecutionInfo {
            execution: api::WorkflowExecution {
                workflow_id: run.workflow_id.clone(),
                run_id: run.run_id.to_string(),
            },
            workflow_type: api::WorkflowType {
                name: run.start.type_name.clone(),
                version: run.start.type_version.clone(),
            },
            start_timestamp: api::timestamp_from_ms(run.start.start_ms),
            close_timestamp: run
                .close
                .as_ref()
                .map(|c| api::timestamp_from_ms(c.close_ms)),
            execution_status: if run.close.is_some() {
                api::ExecutionStatus::Closed
            } else {
                api::ExecutionStatus::Open
            },
            close_status: run.close.as_ref().map(|c| close_status_of(c.status)),
            parent: None,
            tag_list: (!run.start.tags.is_empty()).then(|| run.start.tags.clone()),
            cancel_requested: Some(cancel_requested),
        }
    }

    /// ListOpenWorkflowExecutions.
    pub fn list_open_workflow_executions(
        &self,
        input: &api::ListOpenWorkflowExecutionsInput,
    ) -> Result<api::WorkflowExecutionInfos, SwfError> {
        let filters = open_filters(
            &input.start_time_filter,
            input.execution_filter.as_ref(),
            input.type_filter.as_ref(),
            input.tag_filter.as_ref(),
        )?;
        self.list(
            &input.domain,
            filters,
            input.next_page_token.as_deref(),
            input.maximum_page_size,
            input.reverse_order.unwrap_or(false),
        )
    }

    /// ListClosedWorkflowExecutions.
    pub fn list_closed_workflow_executions(
        &self,
        input: &api::ListClosedWorkflowExecutionsInput,
    ) -> Result<api::WorkflowExecutionInfos, SwfError> {
        let filters = closed_filters(
            input.start_time_filter.as_ref(),
            input.close_time_filter.as_ref(),
            input.execution_filter.as_ref(),
            input.type_filter.as_ref(),
            input.tag_filter.as_ref(),
            input.close_status_filter.as_ref(),
        )?;
        self.list(
            &input.domain,
            filters,
            input.next_page_token.as_deref(),
            input.maximum_page_size,
            input.reverse_order.unwrap_or(false),
        )
    }

    /// CountOpenWorkflowExecutions.
    pub fn count_open_workflow_executions(
        &self,
        input: &api::CountOpenWorkflowExecutionsInput,
    ) -> Result<api::WorkflowExecutionCount, SwfError> {
        self.domain(&input.domain)?;
        let filters = open_filters(
            &input.start_time_filter,
            input.execution_filter.as_ref(),
            input.type_filter.as_ref(),
            input.tag_filter.as_ref(),
        )?;
        Ok(api::WorkflowExecutionCount {
            count: self.matching(&input.domain, &filters, false).len() as u64,
            truncated: Some(false),
        })
    }

    /// CountClosedWorkflowExecutions.
    pub fn count_closed_workflow_executions(
        &self,
        input: &api::CountClosedWorkflowExecutionsInput,
    ) -> Result<api::WorkflowExecutionCount, SwfError> {
        self.domain(&input.domain)?;
        let filters = closed_filters(
            input.start_time_filter.as_ref(),
            input.close_time_filter.as_ref(),
            input.execution_filter.as_ref(),
            input.type_filter.as_ref(),
            input.tag_filter.as_ref(),
            input.close_status_filter.as_ref(),
        )?;
        Ok(api::WorkflowExecutionCount {
            count: self.matching(&input.domain, &filters, false).len() as u64,
            truncated: Some(false),
        })
    }
}

fn open_filters<'a>(
    start: &api::ExecutionTimeFilter,
    execution: Option<&'a api::WorkflowExecutionFilter>,
    workflow_type: Option<&'a api::WorkflowTypeFilter>,
    tag: Option<&'a api::TagFilter>,
) -> Result<Filters<'a>, SwfError> {
    api::check_exclusive_filters(
        &[
            ("executionFilter", execution.is_some()),
            ("typeFilter", workflow_type.is_some()),
            ("tagFilter", tag.is_some()),
        ],
        None,
    )?;
    Ok(Filters {
        open: true,
        start: Some(window(start)?),
        close: None,
        workflow_id: execution.map(|e| e.workflow_id.as_str()),
        type_name: workflow_type.map(|t| t.name.as_str()),
        type_version: workflow_type.and_then(|t| t.version.as_deref()),
        tag: tag.map(|t| t.tag.as_str()),
        close_status: None,
    })
}

fn closed_filters<'a>(
    start: Option<&api::ExecutionTimeFilter>,
    close: Option<&api::ExecutionTimeFilter>,
    execution: Option<&'a api::WorkflowExecutionFilter>,
    workflow_type: Option<&'a api::WorkflowTypeFilter>,
    tag: Option<&'a api::TagFilter>,
    close_status: Option<&'a api::CloseStatusFilter>,
) -> Result<Filters<'a>, SwfError> {
    api::check_exclusive_filters(
        &[
            ("executionFilter", execution.is_some()),
            ("typeFilter", workflow_type.is_some()),
            ("tagFilter", tag.is_some()),
            ("closeStatusFilter", close_status.is_some()),
        ],
        Some((start.is_some(), close.is_some())),
    )?;
    Ok(Filters {
        open: false,
        start: start.map(window).transpose()?,
        close: close.map(window).transpose()?,
        workflow_id: execution.map(|e| e.workflow_id.as_str()),
        type_name: workflow_type.map(|t| t.name.as_str()),
        type_version: workflow_type.and_then(|t| t.version.as_deref()),
        tag: tag.map(|t| t.tag.as_str()),
        close_status: close_status.map(|c| c.status),
    })
}
