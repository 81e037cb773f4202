//! Map (inline): runs its item processor once per item, up to its concurrency, and collects
//! the outputs in item order.
//!
//! ```text
//! decide: phase --(trigger or step: the events emitted)--> phase
//! Entered --(InputPath, ItemsPath, counts: MapStateStarted)--> Map
//! Map --(room under MaxConcurrency: MapIterationStarted)--> Map (iteration Running)
//! Map --(iteration Done: MapIterationSucceeded)--> Map
//! Map --(iteration fails, within tolerance: MapIterationFailed)--> Map
//! Map --(every iteration ended: MapStateSucceeded)--> Finishing --(MapStateExited)
//! Map --(over tolerance: running iterations MapIterationAborted, MapStateFailed)--> Failed
//! Entered --(parameters fail, a retrier takes it)--> Backoff
//! Backoff --(TimerFired: begins again, MapStateStarted)--> Map
//! Failed --(a catcher takes it: MapStateExited)--> the catcher's Next | thread Failed
//! Map --(parent fails)--> Aborted --(MapStateAborted)
//!
//! apply: phase --(event folded)--> phase
//! Entered | Backoff --(MapStateStarted)--> Map (its length, no iteration started)
//! Map --(MapIterationStarted i, i = started so far < length)--> Map (i Running, thread Pending)
//! Map --(MapIterationSucceeded i | MapIterationFailed i, i Running)--> Map (i Succeeded | Failed)
//! Map --(MapIterationAborted i, i Running)--> Map (i Aborted, its thread Aborted)
//! Map | Parallel --(MapStateSucceeded)--> Finishing              state::children_succeeded
//! Map | Parallel --(MapStateFailed)--> Failed (error known to decide)  state::children_failed
//! any --(a RetryBackoff timer on the event)--> Backoff (the error counted)  state::apply_timer
//! Entered, exited, aborted: the arms every state shares (`state`)
//! ```
//! The apply rows are the `fold_*` functions at the end of this file, called by
//! `state::apply`, except the two shared with Parallel; any other phase is an `ApplyError`.

use super::super::*;
use crate::asl::BatchInput;

impl Decider<'_, '_> {
    /// One step of the Map running at `scope` in `phase`.
    pub(in crate::interpreter::decide) fn step_map_state(
        &mut self,
        scope: &[u32],
        state: &State,
        map: &MapState,
        phase: Shallow,
    ) -> Step<Option<Outcome>> {
        match phase {
            Shallow::Entered if map.distributed.is_some() => self.begin_map_run(scope, state, map),
            Shallow::Entered => self.begin_map(scope, state, map),
            Shallow::Backoff(timer) if self.fired == Some(timer) => {
                self.fired = None;
                match map.distributed {
                    Some(_) => self.begin_map_run(scope, state, map),
                    None => self.begin_map(scope, state, map),
                }
            }
            Shallow::Map => self.step_map(scope, state, map, None),
            Shallow::MapRun(task_id) => self.step_map_run(scope, state, task_id),
            // Only a redrive steps a Map whose run ended (the run's own end steps on at once).
            Shallow::MapRunEnded => self.redrive_map_run(scope),
            _ => self.step_shared(scope, state, phase),
        }
    }

    /// A Distributed Map begins: its items (a failure there is the state's, before
    /// `MapStateStarted`), `MapStateStarted`, its counts (a failure there follows
    /// `MapStateStarted`, as recorded), then `MapRunStarted` with a new Map Run ARN: the
    /// engine runs the children and answers (`map_run_answer`).
    fn begin_map_run(
        &mut self,
        scope: &[u32],
        state: &State,
        map: &MapState,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let params = self.map_params(scope, state, map, &run);
        let items_len = match &params {
            Ok(params) => Some(params.items.len()),
            Err(failed) => failed.items_len,
        };
        let Some(length) = items_len else {
            let error = match params {
                Err(failed) => failed.error,
                Ok(_) => return Err(inconsistent("Map items vanished")),
            };
            let error = self.step_failure(scope, &run.name, run.entered_event_id, error)?;
            let failed = state
                .data_flow
                .as_jsonata()
                .map(|_| EventDetails::MapStateFailed);
            return self.handle_failure(scope, state, error, true, failed);
        };
        let length = u32::try_from(length).unwrap_or(u32::MAX);
        self.emit(
            scope,
            EventDetails::MapStateStarted(MapStateStarted { length }),
            None,
        )?;
        let (now_ms, seed) = self.map_entry_clock(scope);
        let checked = params.and_then(|params| {
            let fields = self
                .run_fields(state, map, &params, &run, now_ms, seed)
                .map_err(|error| MapParamsError {
                    error,
                    items_len: Some(params.items.len()),
                })?;
            Ok((params, fields))
        });
        if let Err(failed) = checked {
            let error = self.step_failure(scope, &run.name, run.entered_event_id, failed.error)?;
            let failed = state
                .data_flow
                .as_jsonata()
                .map(|_| EventDetails::MapStateFailed);
            return self.handle_failure(scope, state, error, true, failed);
        }
        let execution_arn = self
            .state
            .info
            .as_ref()
            .map(|info| info.execution_arn.clone())
            .unwrap_or_default();
        let id = crate::paths::intrinsic::uuid_v4(self.entropy.next_u64(), self.entropy.next_u64());
        let label = map_run_label(map, &state.name);
        let map_run_arn = map_run_arn(&execution_arn, &label, &id);
        let started = crate::history::MapRunStarted { map_run_arn };
        self.emit(scope, EventDetails::MapRunStarted(started), None)?;
        Ok(Some(Outcome::Waiting))
    }

    /// A redriven execution redrives the Map Run that ended: `MapRunRedriven` (same ARN, its
    /// redrive count), then the run waits for the engine again.
    fn redrive_map_run(&mut self, scope: &[u32]) -> Step<Option<Outcome>> {
        let (map_run_arn, redrive_count) = match self
            .state
            .thread(scope)
            .and_then(Thread::run)
            .map(|r| &r.phase)
        {
            Some(Phase::MapRunEnded {
                map_run_arn,
                redrive_count,
                ..
            }) => (map_run_arn.clone(), *redrive_count + 1),
            _ => return Err(inconsistent("no Map Run ended here")),
        };
        let redriven = crate::history::MapRunRedriven {
            map_run_arn,
            redrive_count,
        };
        self.emit(scope, EventDetails::MapRunRedriven(redriven), None)?;
        Ok(Some(Outcome::Waiting))
    }

    /// A Distributed Map waiting for its Map Run: the run's answer, when this decision
    /// carries it, ends the run (`MapRunSucceeded` then the Map's result, or `MapRunFailed`
    /// then the Map's failure, retried or caught); else it waits.
    fn step_map_run(
        &mut self,
        scope: &[u32],
        state: &State,
        task_id: u32,
    ) -> Step<Option<Outcome>> {
        let answer = match self.map_run_answer.take() {
            Some((id, answer)) if id == task_id => answer,
            other => {
                self.map_run_answer = other;
                return Ok(Some(Outcome::Waiting));
            }
        };
        match answer {
            Ok(results) => {
                self.emit(scope, EventDetails::MapRunSucceeded, None)?;
                if json_size_bytes(&results) > PAYLOAD_SIZE_BYTES_MAX {
                    let error = failure(
                        STATES_DATA_LIMIT_EXCEEDED,
                        format!(
                            "The Map Run of state '{}' produced a result with a size exceeding the maximum number of bytes service limit.",
                            state.name
                        ),
                    );
                    return self.handle_failure(
                        scope,
                        state,
                        error,
                        true,
                        Some(EventDetails::MapStateFailed),
                    );
                }
                self.emit(scope, EventDetails::MapStateSucceeded, None)?;
                let run = self.run_info(scope)?;
                // Recorded: the exit links to `MapRunSucceeded` when the Map is the
                // execution's first state, else to its `MapRunStarted`.
                let first_state = scope.is_empty() && run.entered_event_id == 2;
                if !first_state {
                    self.exited_links_to = Some(task_id);
                }
                let finished = self.finish_with_result(scope, state, &run, results);
                self.exited_links_to = None;
                finished
            }
            Err(error) => {
                self.emit(scope, EventDetails::MapRunFailed(error.clone()), None)?;
                self.handle_failure(
                    scope,
                    state,
                    error,
                    true,
                    Some(EventDetails::MapStateFailed),
                )
            }
        }
    }

    /// The Map's entry time and a seed from its entry and attempt: what its parameters'
    /// JSONata expressions see, so they evaluate the same on every later step (they are not
    /// recorded). Outside a running state (never for a Map), the decision's clock and 0.
    fn map_entry_clock(&self, scope: &[u32]) -> (u64, u64) {
        running_in(&self.state, scope)
            .map(|r| {
                let attempt = r.retried_errors.len() as u64;
                (r.entered_ms, u64::from(r.entered_event_id) << 16 | attempt)
            })
            .unwrap_or((self.now_ms, 0))
    }

    pub(in crate::interpreter::decide) fn map_params(
        &mut self,
        scope: &[u32],
        state: &State,
        map: &MapState,
        run: &RunInfo,
    ) -> Result<MapParams, MapParamsError> {
        let flow = &state.data_flow;
        let variables = &run.variables;
        // The parameters are computed again on every later step of the Map (its items are not
        // recorded), so a JSONata expression among them must give the same value each time:
        // it sees the Map's entry time and a generator seeded from its entry and attempt,
        // never the decision's clock or entropy.
        let (now_ms, seed) = self.map_entry_clock(scope);
        let mut entropy = statelog_rng::Rng::new(seed ^ 0x9e37_79b9_7f4a_7c15);
        let mut env = crate::asl::Env {
            now_ms,
            entropy: &mut entropy,
            variables,
            jsonata: self.def.jsonata.as_ref(),
        };
        let before_items = |error: StatesError| MapParamsError {
            error,
            items_len: None,
        };
        let effective = flow
            .effective_input(&run.input, &run.context, variables)
            .map_err(before_items)?
            .into_owned();
        let reads_items = map
            .distributed
            .as_ref()
            .is_some_and(|d| d.item_reader.is_some());
        // With an ItemReader the items are the run's to read (`MapStateStarted` says 0).
        let items = match reads_items {
            true => Value::Array(Vec::new()),
            false => flow
                .items(&effective, &run.context, &mut env)
                .map_err(before_items)?
                .into_owned(),
        };
        let items = match items {
            Value::Array(items) => items,
            other => return Err(before_items(items_not_array(flow, &other))),
        };
        let items_len = Some(items.len());
        let after_items = |error: StatesError| MapParamsError { error, items_len };
        let counts = (|| {
            let mut count = |field: Option<&CountField>, name: &str| match field {
                Some(CountField::Expression(expression)) => {
                    let field = name.trim_end_matches("Path");
                    let value = state_expression(
                        state,
                        expression,
                        field,
                        &run.input,
                        &run.context,
                        &mut env,
                    )?;
                    jsonata_count(expression, field, &value, 0).map(Some)
                }
                other => count_field(other, &effective, &run.context, variables, name),
            };
            let max_concurrency =
                count(map.max_concurrency.as_ref(), "MaxConcurrencyPath")?.unwrap_or(0);
            let tolerated_count = count(
                map.tolerated_failure_count.as_ref(),
                "ToleratedFailureCountPath",
            )?;
            let tolerated_percentage = match &map.tolerated_failure_percentage {
                None => None,
                Some(PercentageField::Literal(p)) => Some(*p),
                Some(PercentageField::Expression(expression)) => {
                    let field = "ToleratedFailurePercentage";
                    let value = state_expression(
                        state,
                        expression,
                        field,
                        &run.input,
                        &run.context,
                        &mut env,
                    )?;
                    Some(
                        value
                            .as_f64()
                            .ok_or_else(|| expression.wrong_type(field, "number", &value))?,
                    )
                }
                Some(PercentageField::Path(path)) => {
                    let value = select_required(path, &effective, &run.context, variables)?;
                    // AWS reads a number written as a string too (recorded: a variable
                    // holding "1").
                    let parsed = value.as_str().and_then(|text| text.parse::<f64>().ok());
                    let p = value.as_f64().filter(|_| value.is_number()).or(parsed).ok_or_else(|| {
                    runtime(format!(
                        "The ToleratedFailurePercentagePath field refers to value \"{}\" which is not a valid float: {}",
                        quoted_value(&value),
                        path.as_str()
                    ))
                })?;
                    Some(p)
                }
            };
            if let Some(p) = tolerated_percentage {
                if !(0.0..=100.0).contains(&p) {
                    return Err(runtime(
                        "ToleratedFailurePercentage must be between 0 and 100.",
                    ));
                }
            }
            Ok((max_concurrency, tolerated_count, tolerated_percentage))
        })();
        let (max_concurrency, tolerated_count, tolerated_percentage) =
            counts.map_err(after_items)?;
        Ok(MapParams {
            effective,
            items,
            max_concurrency,
            tolerated_count,
            tolerated_percentage,
        })
    }

    pub(in crate::interpreter::decide) fn begin_map(
        &mut self,
        scope: &[u32],
        state: &State,
        map: &MapState,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let params = match self.map_params(scope, state, map, &run) {
            Ok(params) => params,
            Err(e) => {
                let error = self.step_failure(scope, &run.name, run.entered_event_id, e.error)?;
                // A JSONata Map records its failure before it is retried or caught (AWS).
                let failed = state
                    .data_flow
                    .as_jsonata()
                    .map(|_| EventDetails::MapStateFailed);
                return self.handle_failure(scope, state, error, true, failed);
            }
        };
        let length = u32::try_from(params.items.len()).unwrap_or(u32::MAX);
        self.emit(
            scope,
            EventDetails::MapStateStarted(MapStateStarted { length }),
            None,
        )?;
        self.step_map(scope, state, map, Some(params))
    }

    pub(in crate::interpreter::decide) fn step_map(
        &mut self,
        scope: &[u32],
        state: &State,
        map: &MapState,
        params: Option<MapParams>,
    ) -> Step<Option<Outcome>> {
        let run = self.run_info(scope)?;
        let params = match params {
            Some(params) => params,
            None => match self.map_params(scope, state, map, &run) {
                Ok(params) => params,
                Err(e) => {
                    return Err(inconsistent(Inconsistency::MapParametersChanged {
                        cause: e.error.cause,
                    }))
                }
            },
        };
        let length = params.items.len();
        let mut started = 0usize;
        let mut failures = 0usize;
        let mut running = Vec::new();
        if let Some(Phase::Map { iterations, .. }) = self
            .state
            .thread(scope)
            .and_then(Thread::run)
            .map(|r| &r.phase)
        {
            started = iterations.len();
            for (index, iteration) in iterations.iter().enumerate() {
                match iteration.outcome {
                    IterationOutcome::Running => running.push(index),
                    IterationOutcome::Failed => failures += 1,
                    _ => {}
                }
            }
        }
        let mut waiting = 0usize;
        // Iterations already running: move each as far as it goes.
        for index in running {
            let outcome = self.advance(&child(scope, index))?;
            if let Some(error) =
                self.settle_iteration(scope, &state.name, index, outcome, &mut waiting)?
            {
                failures += 1;
                if let Some(error) = tolerance_exceeded(&params, failures, length, error) {
                    return self.fail_map(scope, state, error);
                }
            }
        }
        // Start new iterations while the concurrency allows, each run as far as it goes.
        // 0 means "no limit", which inline mode caps like any other value.
        let concurrency = match params.max_concurrency {
            0 => MAP_INLINE_CONCURRENCY_MAX,
            n => n.min(MAP_INLINE_CONCURRENCY_MAX),
        };
        while started < length && (waiting as u64) < concurrency {
            let index = started;
            started += 1;
            let iteration = MapIteration {
                name: state.name.clone(),
                index: index as u32,
            };
            self.emit(scope, EventDetails::MapIterationStarted(iteration), None)?;
            let item = params.items[index].clone();
            let mut env = step_env!(self, &run.variables);
            let input =
                state
                    .data_flow
                    .item_input(&params.effective, item, index, &run.context, &mut env);
            let outcome = match input {
                Ok(input) => {
                    let start_at = map.item_processor.start_at.clone();
                    self.enter_and_advance(&child(scope, index), &start_at, input)?
                }
                Err(e) => {
                    Outcome::Failed(self.step_failure(scope, &run.name, run.entered_event_id, e)?)
                }
            };
            if let Some(error) =
                self.settle_iteration(scope, &state.name, index, outcome, &mut waiting)?
            {
                failures += 1;
                if let Some(error) = tolerance_exceeded(&params, failures, length, error) {
                    return self.fail_map(scope, state, error);
                }
            }
        }
        if waiting > 0 || started < length {
            return Ok(Some(Outcome::Waiting));
        }
        let results: Vec<Value> = match self
            .state
            .thread(scope)
            .and_then(Thread::run)
            .map(|r| &r.phase)
        {
            Some(Phase::Map { iterations, .. }) => iterations
                .iter()
                .map(|it| match &it.thread {
                    Thread::Done { output } if it.outcome == IterationOutcome::Succeeded => {
                        Value::clone(output)
                    }
                    _ => Value::Null,
                })
                .collect(),
            _ => return Err(inconsistent("Map iterations vanished")),
        };
        self.emit(scope, EventDetails::MapStateSucceeded, None)?;
        self.finish_with_result(scope, state, &run, Value::Array(results))
    }

    /// The plan of the Map Run whose attempt is `task_id` (see [`MapRunPlan`]).
    pub(in crate::interpreter::decide) fn map_run_plan(
        &mut self,
        task_id: u32,
    ) -> Step<MapRunPlan> {
        let scope = self
            .find_task(task_id)
            .filter(|scope| self.is_map_run(scope))
            .ok_or_else(|| inconsistent("no Map Run with this attempt"))?;
        let state = self.state_def(&scope)?;
        let StateKind::Map(map) = &state.kind else {
            return Err(inconsistent("a Map Run outside a Map state"));
        };
        let Some(distributed) = map.distributed.as_ref() else {
            return Err(inconsistent("a Map Run of an inline Map"));
        };
        let (map_run_arn, redrive_count) = match self
            .state
            .thread(&scope)
            .and_then(Thread::run)
            .map(|r| &r.phase)
        {
            Some(Phase::MapRun {
                map_run_arn,
                redrive_count,
                ..
            }) => (map_run_arn.clone(), *redrive_count),
            _ => return Err(inconsistent("no Map Run with this attempt")),
        };
        let run = self.run_info(&scope)?;
        let changed = |error: StatesError| {
            inconsistent(Inconsistency::MapParametersChanged { cause: error.cause })
        };
        let params = self
            .map_params(&scope, state, map, &run)
            .map_err(|failed| changed(failed.error))?;
        let (now_ms, seed) = self.map_entry_clock(&scope);
        let fields = self
            .run_fields(state, map, &params, &run, now_ms, seed)
            .map_err(changed)?;
        Ok(MapRunPlan {
            map_run_arn,
            state_name: state.name.clone(),
            label: map_run_label(map, &state.name),
            execution_type: distributed.execution_type,
            child_definition: distributed.child_definition.clone(),
            items: params.items,
            max_concurrency: params.max_concurrency,
            tolerated_failure_count: params.tolerated_count,
            tolerated_failure_percentage: params.tolerated_percentage,
            max_items_per_batch: fields.max_items_per_batch,
            max_input_bytes_per_batch: fields.max_input_bytes_per_batch,
            batch_input: fields.batch_input,
            batched: distributed.item_batcher.is_some(),
            redrive_count,
            item_reader: fields.item_reader,
            result_writer: fields.result_writer,
            state: state.clone(),
            effective: params.effective,
            context: run.context.clone(),
            variables: run.variables.clone(),
            entered_ms: now_ms,
            entered_event_id: run.entered_event_id,
            seed,
            jsonata: self.def.jsonata.clone(),
        })
    }

    /// The Distributed Map's own fields evaluated for a run: the `ItemBatcher` counts and
    /// `BatchInput`, the `ItemReader` and `ResultWriter` arguments and configuration. They are
    /// evaluated again whenever the run's plan is made (also when it resumes), so a JSONata
    /// expression among them sees the Map's entry time `now_ms` and a generator seeded from
    /// its entry (`seed`), as in `map_params`; checked before `MapRunStarted`, so a failure
    /// fails the Map as the state's own.
    pub(in crate::interpreter::decide) fn run_fields(
        &self,
        state: &State,
        map: &MapState,
        params: &MapParams,
        run: &RunInfo,
        now_ms: u64,
        seed: u64,
    ) -> Result<RunFields, StatesError> {
        let jsonata = self.def.jsonata.as_ref();
        let evaluate = |input: &BatchInput, field: &str, salt: u64| {
            let mut entropy = statelog_rng::Rng::new(seed ^ salt);
            match input {
                BatchInput::Template(template) => template.evaluate_in(
                    &params.effective,
                    &run.context,
                    &run.variables,
                    &mut entropy,
                ),
                BatchInput::Jsonata(template) => {
                    let mut env = crate::asl::Env {
                        now_ms,
                        entropy: &mut entropy,
                        variables: &run.variables,
                        jsonata,
                    };
                    state_template(state, template, field, &run.input, &run.context, &mut env)
                }
            }
        };
        let Some(distributed) = map.distributed.as_ref() else {
            return Ok(RunFields::default());
        };
        let (max_items_per_batch, max_input_bytes_per_batch) = {
            let mut entropy = statelog_rng::Rng::new(seed ^ 0x6a09_e667);
            let mut env = crate::asl::Env {
                now_ms,
                entropy: &mut entropy,
                variables: &run.variables,
                jsonata,
            };
            batch_counts(state, map, params, run, &mut env)?
        };
        let access = |field: Option<&crate::asl::ObjectAccess>, config_field: &str| {
            let Some(field) = field else {
                return Ok::<_, StatesError>(None);
            };
            let arguments = match &field.arguments {
                None => Value::Object(serde_json::Map::new()),
                Some(arguments) => evaluate(arguments, "Arguments", 0x2545_f491)?,
            };
            let config = match &field.config_expressions {
                None => field.config.clone(),
                Some(template) => Some(evaluate(
                    &BatchInput::Jsonata(template.clone()),
                    config_field,
                    0x2545_f492,
                )?),
            };
            let max_items = match &field.max_items_path {
                None => None,
                Some(path) => count_field(
                    Some(&CountField::Path(path.clone())),
                    &params.effective,
                    &run.context,
                    &run.variables,
                    "MaxItemsPath",
                )?,
            };
            Ok(Some(EvaluatedAccess {
                resource: field.resource.clone(),
                arguments,
                config,
                max_items,
            }))
        };
        let batch_input = match distributed
            .item_batcher
            .as_ref()
            .and_then(|b| b.batch_input.as_ref())
        {
            None => None,
            Some(batch_input) => Some(evaluate(batch_input, "BatchInput", 0x5bd1_e995)?),
        };
        Ok(RunFields {
            max_items_per_batch,
            max_input_bytes_per_batch,
            batch_input,
            item_reader: access(distributed.item_reader.as_ref(), "ReaderConfig")?,
            result_writer: access(distributed.result_writer.as_ref(), "WriterConfig")?,
        })
    }

    /// Reports an iteration that ended; returns its error when it failed.
    pub(in crate::interpreter::decide) fn settle_iteration(
        &mut self,
        scope: &[u32],
        name: &str,
        index: usize,
        outcome: Outcome,
        waiting: &mut usize,
    ) -> Step<Option<ErrorCause>> {
        let iteration = MapIteration {
            name: name.to_string(),
            index: index as u32,
        };
        match outcome {
            Outcome::Waiting => {
                *waiting += 1;
                Ok(None)
            }
            Outcome::Done(_) => {
                self.emit(scope, EventDetails::MapIterationSucceeded(iteration), None)?;
                Ok(None)
            }
            Outcome::Failed(error) => {
                self.emit(scope, EventDetails::MapIterationFailed(iteration), None)?;
                Ok(Some(error))
            }
            Outcome::Aborted => Err(inconsistent("an iteration was aborted while its Map runs")),
        }
    }

    pub(in crate::interpreter::decide) fn fail_map(
        &mut self,
        scope: &[u32],
        state: &State,
        error: ErrorCause,
    ) -> Step<Option<Outcome>> {
        let running = self
            .map_iterations(scope, IterationOutcome::Running)
            .ok_or_else(|| inconsistent("fail_map without a running Map"))?;
        self.abort_map_iterations(scope, state, running)?;
        let failed = self
            .map_iterations(scope, IterationOutcome::Failed)
            .unwrap_or_default();
        for index in failed {
            self.abort_failed_task(&child(scope, index))?;
        }
        self.handle_failure(
            scope,
            state,
            error,
            true,
            Some(EventDetails::MapStateFailed),
        )
    }

    /// The indices of the iterations of the Map running at `scope` whose outcome is `outcome`;
    /// `None` when no Map runs there.
    pub(in crate::interpreter::decide) fn map_iterations(
        &self,
        scope: &[u32],
        outcome: IterationOutcome,
    ) -> Option<Vec<usize>> {
        match self
            .state
            .thread(scope)
            .and_then(Thread::run)
            .map(|r| &r.phase)
        {
            Some(Phase::Map { iterations, .. }) => Some(
                iterations
                    .iter()
                    .enumerate()
                    .filter(|(_, it)| it.outcome == outcome)
                    .map(|(i, _)| i)
                    .collect(),
            ),
            _ => None,
        }
    }

    /// Aborts the iterations `indices` of the Map `state` at `scope`, each followed by its
    /// `MapIterationAborted`.
    pub(in crate::interpreter::decide) fn abort_map_iterations(
        &mut self,
        scope: &[u32],
        state: &State,
        indices: Vec<usize>,
    ) -> Step<()> {
        for index in indices {
            self.abort(&child(scope, index))?;
            let iteration = MapIteration {
                name: state.name.clone(),
                index: index as u32,
            };
            self.emit(scope, EventDetails::MapIterationAborted(iteration), None)?;
        }
        Ok(())
    }
}

/// A Distributed Map's fields evaluated for one run (see `Decider::run_fields`).
#[derive(Default)]
pub(in crate::interpreter::decide) struct RunFields {
    max_items_per_batch: Option<u64>,
    max_input_bytes_per_batch: Option<u64>,
    batch_input: Option<Value>,
    item_reader: Option<EvaluatedAccess>,
    result_writer: Option<EvaluatedAccess>,
}

/// What the engine needs to run one Map Run (see [`crate::interpreter::map_run_plan`]): the
/// items, the evaluated counts, the child definition and how to build each child's input.
/// Evaluated again from the folded state whenever the run (re)starts: the same values as at
/// the Map's start (its entry time and a generator seeded from its entry and attempt).
#[derive(Debug, Clone)]
pub struct MapRunPlan {
    /// The Map Run's ARN (its `MapRunStarted`).
    pub map_run_arn: String,
    /// The Map state's name.
    pub state_name: String,
    /// The run's label (the Map's `Label`, else a name fixed by the state's name).
    pub label: String,
    /// STANDARD or EXPRESS children.
    pub execution_type: crate::asl::ChildExecutionType,
    /// The children's definition, as JSON.
    pub child_definition: Value,
    /// The items, in order.
    pub items: Vec<Value>,
    /// `MaxConcurrency` (0: as many as the engine allows).
    pub max_concurrency: u64,
    /// `ToleratedFailureCount`, when set.
    pub tolerated_failure_count: Option<u64>,
    /// `ToleratedFailurePercentage`, when set.
    pub tolerated_failure_percentage: Option<f64>,
    /// `ItemBatcher.MaxItemsPerBatch`, when set.
    pub max_items_per_batch: Option<u64>,
    /// `ItemBatcher.MaxInputBytesPerBatch`, when set.
    pub max_input_bytes_per_batch: Option<u64>,
    /// `ItemBatcher.BatchInput`, evaluated.
    pub batch_input: Option<Value>,
    /// Whether the Map has an `ItemBatcher` (a child's input is then `{"Items": [...]}`).
    pub batched: bool,
    /// How many times the run was redriven (0: a first run); a redriven run reruns only the
    /// children that did not succeed.
    pub redrive_count: u32,
    /// The `ItemReader`, its arguments evaluated: the items are read from it, not `items`.
    pub item_reader: Option<EvaluatedAccess>,
    /// The `ResultWriter`, its arguments evaluated.
    pub result_writer: Option<EvaluatedAccess>,
    state: State,
    effective: Value,
    context: Value,
    variables: std::sync::Arc<Variables>,
    entered_ms: u64,
    entered_event_id: u32,
    seed: u64,
    jsonata: Option<crate::asl::JsonataRuntime>,
}

/// An `ItemReader` or `ResultWriter` with its arguments evaluated against the Map's effective
/// input (and `MaxItemsPath` read).
#[derive(Debug, Clone, PartialEq)]
pub struct EvaluatedAccess {
    /// `Resource`, as written.
    pub resource: String,
    /// The evaluated `Parameters` / `Arguments` (`{}` when absent).
    pub arguments: Value,
    /// `ReaderConfig` / `WriterConfig`, as written.
    pub config: Option<Value>,
    /// `MaxItems` as `MaxItemsPath` gave it.
    pub max_items: Option<u64>,
}

impl MapRunPlan {
    /// The input of item `index` (of `items`) after the `ItemSelector` (the item itself
    /// without one); a failure is worded as the Map state's own.
    pub fn item_input(&self, index: usize) -> Result<Value, ErrorCause> {
        let item = self.items.get(index).cloned().unwrap_or(Value::Null);
        self.selected_input(item, index)
    }

    /// The input of `item`, the item at `index` (read from the `ItemReader`), after the
    /// `ItemSelector`.
    pub fn selected_input(&self, item: Value, index: usize) -> Result<Value, ErrorCause> {
        let mut entropy = statelog_rng::Rng::new(self.seed ^ (index as u64).rotate_left(32));
        let mut env = crate::asl::Env {
            now_ms: self.entered_ms,
            entropy: &mut entropy,
            variables: &self.variables,
            jsonata: self.jsonata.as_ref(),
        };
        self.state
            .data_flow
            .item_input(&self.effective, item, index, &self.context, &mut env)
            .map_err(|error| with_prefix(&self.state_name, self.entered_event_id, error))
    }
}

/// The Map parameters evaluated from its effective input.
pub(in crate::interpreter::decide) struct MapParams {
    pub(in crate::interpreter::decide) effective: Value,
    pub(in crate::interpreter::decide) items: Vec<Value>,
    pub(in crate::interpreter::decide) max_concurrency: u64,
    pub(in crate::interpreter::decide) tolerated_count: Option<u64>,
    pub(in crate::interpreter::decide) tolerated_percentage: Option<f64>,
}

/// Why the Map parameters did not evaluate, and how many items there were when the failure
/// came after the items (a Distributed Map records `MapStateStarted` first).
pub(in crate::interpreter::decide) struct MapParamsError {
    pub(in crate::interpreter::decide) error: StatesError,
    pub(in crate::interpreter::decide) items_len: Option<usize>,
}

/// A Distributed Map's `ItemBatcher` counts: (`MaxItemsPerBatch`, `MaxInputBytesPerBatch`).
pub(in crate::interpreter::decide) fn batch_counts(
    state: &State,
    map: &MapState,
    params: &MapParams,
    run: &RunInfo,
    env: &mut crate::asl::Env<'_>,
) -> Result<(Option<u64>, Option<u64>), StatesError> {
    let Some(batcher) = map
        .distributed
        .as_ref()
        .and_then(|d| d.item_batcher.as_ref())
    else {
        return Ok((None, None));
    };
    let mut count = |field: Option<&CountField>, name: &str| match field {
        Some(CountField::Expression(expression)) => {
            let field = name.trim_end_matches("Path");
            let value = state_expression(state, expression, field, &run.input, &run.context, env)?;
            jsonata_count(expression, field, &value, 0).map(Some)
        }
        other => count_field(other, &params.effective, &run.context, &run.variables, name),
    };
    let items = count(batcher.max_items_per_batch.as_ref(), "MaxItemsPerBatchPath")?;
    let bytes = count(
        batcher.max_input_bytes_per_batch.as_ref(),
        "MaxInputBytesPerBatchPath",
    )?;
    Ok((items, bytes))
}

/// A Map Run's label: the Map's `Label`, else a UUID-form name fixed by the state's name (so
/// every run of one Map state shares its child machine).
pub(in crate::interpreter) fn map_run_label(map: &MapState, state_name: &str) -> String {
    if let Some(label) = map.distributed.as_ref().and_then(|d| d.label.clone()) {
        return label;
    }
    // Two FNV-1a 64 hashes of the name (different offsets): pure and stable across versions.
    let fnv = |offset: u64| {
        state_name.bytes().fold(offset, |hash, byte| {
            (hash ^ u64::from(byte)).wrapping_mul(0x0000_0100_0000_01b3)
        })
    };
    crate::paths::intrinsic::uuid_v4(fnv(0xcbf2_9ce4_8422_2325), fnv(0x8422_2325_cbf2_9ce4))
}

/// `arn:<partition>:states:<region>:<account>:mapRun:<machine>/<label>:<id>` for a Map Run of
/// the execution `execution_arn` (`arn:...:execution:<machine>:<name>`).
pub(in crate::interpreter) fn map_run_arn(execution_arn: &str, label: &str, id: &str) -> String {
    let parts: Vec<&str> = execution_arn.splitn(8, ':').collect();
    match parts.as_slice() {
        [_, partition, service, region, account, _, machine, _] => {
            format!("arn:{partition}:{service}:{region}:{account}:mapRun:{machine}/{label}:{id}")
        }
        _ => format!("{execution_arn}/mapRun/{label}:{id}"),
    }
}

/// `MaxConcurrency[Path]` / `ToleratedFailureCount[Path]`.
pub(in crate::interpreter::decide) fn count_field(
    field: Option<&CountField>,
    effective: &Value,
    context: &Value,
    variables: &Variables,
    name: &str,
) -> Result<Option<u64>, StatesError> {
    match field {
        None => Ok(None),
        Some(CountField::Literal(count)) => Ok(Some(*count)),
        Some(CountField::Expression(_)) => Err(runtime(format!(
            "The {name} field holds a JSONata expression outside a JSONata state."
        ))),
        Some(CountField::Path(path)) => {
            let value = select_required(path, effective, context, variables)?;
            if let Some(count) = value.as_u64() {
                return Ok(Some(count));
            }
            // AWS reads a whole number written as a string too (recorded: a
            // `MaxConcurrencyPath` to a variable holding "1").
            if let Some(count) = value.as_str().and_then(|text| text.parse::<u64>().ok()) {
                return Ok(Some(count));
            }
            if value.as_i64().is_some() && name == "ToleratedFailureCountPath" {
                return Err(runtime("ToleratedFailureCount cannot be negative."));
            }
            Err(runtime(format!(
                "The {name} field refers to value \"{}\" which is not a valid integer: {}",
                quoted_value(&value),
                path.as_str()
            )))
        }
    }
}

/// When the Map must fail after `failures` failed iterations: the error it fails with.
pub(in crate::interpreter::decide) fn tolerance_exceeded(
    params: &MapParams,
    failures: usize,
    length: usize,
    error: ErrorCause,
) -> Option<ErrorCause> {
    if params.tolerated_count.is_none() && params.tolerated_percentage.is_none() {
        return Some(error);
    }
    let over_count = params
        .tolerated_count
        .is_some_and(|count| failures as u64 > count);
    let over_percentage = params.tolerated_percentage.is_some_and(|percentage| {
        length > 0 && (failures as f64 * 100.0 / length as f64) > percentage
    });
    if over_count || over_percentage {
        Some(failure(
            "States.ExceedToleratedFailureThreshold",
            "The specified tolerated failure threshold was exceeded",
        ))
    } else {
        None
    }
}

/// A Map's items that are not an array, worded as AWS words it (and named after the state's
/// query language). Shared by the interpreter and `test_state`.
pub(in crate::interpreter) fn items_not_array(
    flow: &crate::asl::DataFlow,
    items: &Value,
) -> StatesError {
    let error = match flow {
        crate::asl::DataFlow::Jsonata(_) => crate::asl::jsonata::QUERY_EVALUATION_ERROR,
        _ => STATES_RUNTIME,
    };
    StatesError::new(
        error,
        format!(
            "Map state input must be an array but was: {}",
            serde_json::to_string(items).unwrap_or_default()
        ),
    )
}

// The fold: how this state's events change the folded state (`state::apply` dispatches here).
// `MapStateSucceeded` / `MapStateFailed` are folded by `state::children_succeeded` /
// `state::children_failed`, shared with Parallel.

use crate::interpreter::state::{running, ApplyError, Iteration};

/// `MapStateStarted`: a freshly entered or retrying Map runs `length` iterations, none started.
pub(in crate::interpreter) fn fold_started(
    state: &mut ExecutionState,
    scope: &[u32],
    started: &MapStateStarted,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "MapStateStarted")?;
    if !matches!(run.phase, Phase::Entered | Phase::Backoff { .. }) {
        return Err(ApplyError::Misplaced(
            "MapStateStarted outside a freshly entered or retrying state",
        ));
    }
    run.phase = Phase::Map {
        length: started.length,
        iterations: Vec::new(),
    };
    Ok(())
}

/// `MapIterationStarted`: the next iteration in index order (below the length) starts, its
/// thread pending.
pub(in crate::interpreter) fn fold_iteration_started(
    state: &mut ExecutionState,
    scope: &[u32],
    started: &MapIteration,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "MapIterationStarted")?;
    match &mut run.phase {
        Phase::Map { length, iterations } => {
            if started.index as usize != iterations.len() || started.index >= *length {
                return Err(ApplyError::IterationOutOfOrder {
                    index: started.index,
                    started: iterations.len(),
                    length: *length,
                });
            }
            iterations.push(Iteration {
                thread: Thread::Pending,
                outcome: IterationOutcome::Running,
            });
        }
        _ => return Err(ApplyError::Misplaced("no Map running")),
    }
    Ok(())
}

/// `MapIterationSucceeded` / `MapIterationFailed` / `MapIterationAborted` (`outcome`): a
/// running iteration ends; an aborted one's thread is aborted (remembered first, for a
/// redrive).
pub(in crate::interpreter) fn fold_iteration_ended(
    state: &mut ExecutionState,
    scope: &[u32],
    ended: &MapIteration,
    outcome: IterationOutcome,
) -> Result<(), ApplyError> {
    debug_assert!(
        outcome != IterationOutcome::Running,
        "an end is not running"
    );
    if outcome == IterationOutcome::Aborted {
        let mut path = scope.to_vec();
        path.push(ended.index);
        crate::interpreter::redrive::remember(state, &path);
    }
    let run = running(state.thread_mut(scope)?, "a Map iteration end")?;
    match &mut run.phase {
        Phase::Map { iterations, .. } => match iterations.get_mut(ended.index as usize) {
            Some(iteration) if iteration.outcome == IterationOutcome::Running => {
                iteration.outcome = outcome;
                if outcome == IterationOutcome::Aborted {
                    iteration.thread = Thread::Aborted;
                }
            }
            _ => return Err(ApplyError::IterationNotRunning { index: ended.index }),
        },
        _ => return Err(ApplyError::Misplaced("no Map running")),
    }
    Ok(())
}

/// `MapRunStarted`: a Distributed Map that started (`MapStateStarted`) waits for its Map Run,
/// the event's id naming the run's attempt.
pub(in crate::interpreter) fn fold_map_run_started(
    state: &mut ExecutionState,
    scope: &[u32],
    event_id: u32,
    started: &crate::history::MapRunStarted,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "MapRunStarted")?;
    match &run.phase {
        Phase::Map { length, iterations } if iterations.is_empty() => {
            run.phase = Phase::MapRun {
                length: *length,
                task_id: event_id,
                map_run_arn: started.map_run_arn.clone(),
                redrive_count: 0,
            };
            Ok(())
        }
        _ => Err(ApplyError::Misplaced(
            "MapRunStarted outside a started Map with no iteration",
        )),
    }
}

/// `MapRunSucceeded` / `MapRunFailed` / `MapRunAborted`: the Map Run is over; the Map's own
/// `MapStateSucceeded` / `MapStateFailed` / `MapStateAborted` follows.
pub(in crate::interpreter) fn fold_map_run_ended(
    state: &mut ExecutionState,
    scope: &[u32],
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "a Map Run's end")?;
    match &run.phase {
        Phase::MapRun {
            length,
            map_run_arn,
            redrive_count,
            ..
        } => {
            run.phase = Phase::MapRunEnded {
                length: *length,
                map_run_arn: map_run_arn.clone(),
                redrive_count: *redrive_count,
            };
            Ok(())
        }
        _ => Err(ApplyError::Misplaced("no Map Run running")),
    }
}

/// `MapRunRedriven`: a redriven execution redrives the Map Run that ended (same ARN); the
/// event's id names the run's new attempt.
pub(in crate::interpreter) fn fold_map_run_redriven(
    state: &mut ExecutionState,
    scope: &[u32],
    event_id: u32,
    redriven: &crate::history::MapRunRedriven,
) -> Result<(), ApplyError> {
    let run = running(state.thread_mut(scope)?, "MapRunRedriven")?;
    match &run.phase {
        Phase::MapRunEnded {
            length,
            map_run_arn,
            ..
        } if *map_run_arn == redriven.map_run_arn => {
            run.phase = Phase::MapRun {
                length: *length,
                task_id: event_id,
                map_run_arn: map_run_arn.clone(),
                redrive_count: redriven.redrive_count,
            };
            Ok(())
        }
        _ => Err(ApplyError::Misplaced(
            "MapRunRedriven outside a Distributed Map whose run ended",
        )),
    }
}
