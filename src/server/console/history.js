// history: reading an execution's events (AWS JSON, as GetExecutionHistory answers them): which
// events are failures, which state an event belongs to, and the fold of a whole history into
// each state's outcome for the graph: succeeded, failed, caught (failed, then left through a
// Catcher), running, or not reached. Pure: no DOM, no API.

/** Event types shown as failures: ending in Failed, TimedOut or Aborted. */
export function isFailure(type) {
  return /(Failed|TimedOut|Aborted)$/.test(String(type));
}

/** Every event type of Step Functions histories, for the filter. */
export const EVENT_TYPES = [
  "ActivityFailed", "ActivityScheduleFailed", "ActivityScheduled", "ActivityStarted", "ActivitySucceeded",
  "ActivityTimedOut", "ChoiceStateEntered", "ChoiceStateExited", "EvaluationFailed", "ExecutionAborted",
  "ExecutionFailed", "ExecutionRedriven", "ExecutionStarted", "ExecutionSucceeded", "ExecutionTimedOut",
  "FailStateEntered", "LambdaFunctionFailed", "LambdaFunctionScheduleFailed", "LambdaFunctionScheduled",
  "LambdaFunctionStartFailed", "LambdaFunctionStarted", "LambdaFunctionSucceeded", "LambdaFunctionTimedOut",
  "MapIterationAborted", "MapIterationFailed", "MapIterationStarted", "MapIterationSucceeded", "MapRunAborted",
  "MapRunFailed", "MapRunRedriven", "MapRunStarted", "MapRunSucceeded", "MapStateAborted", "MapStateEntered",
  "MapStateExited", "MapStateFailed", "MapStateStarted", "MapStateSucceeded", "ParallelStateAborted",
  "ParallelStateEntered", "ParallelStateExited", "ParallelStateFailed", "ParallelStateStarted",
  "ParallelStateSucceeded", "PassStateEntered", "PassStateExited", "SucceedStateEntered", "SucceedStateExited",
  "TaskFailed", "TaskScheduled", "TaskStarted", "TaskStartFailed", "TaskStateAborted", "TaskStateEntered",
  "TaskStateExited", "TaskSubmitFailed", "TaskSubmitted", "TaskSucceeded", "TaskTimedOut", "WaitStateAborted",
  "WaitStateEntered", "WaitStateExited",
];

const ENTERED = /^(\w+)StateEntered$/;
const EXITED = /^(\w+)StateExited$/;

/** The `...EventDetails` member of an event, or undefined. */
export function detailsOf(event) {
  const key = Object.keys(event).find((k) => k.endsWith("EventDetails"));
  return key ? event[key] : undefined;
}

/** The state an event names itself (entered and exited events), or undefined. */
export function ownName(event) {
  if (ENTERED.test(event.type)) return event.stateEnteredEventDetails?.name;
  if (EXITED.test(event.type)) return event.stateExitedEventDetails?.name;
  return undefined;
}

/** The kind of state an event belongs to: Parallel, Map, or any (Task-like events). */
function kindOf(type) {
  if (type.startsWith("Parallel")) return "Parallel";
  if (type.startsWith("Map")) return "Map";
  return null;
}

const WALK_STEPS_MAX = 10000;

/**
 * The state `event` belongs to, walking `previousEventId` back through `byId` (a Map of the
 * events known) to the entered event of a state of the right kind; undefined when not found.
 */
export function stateOf(event, byId) {
  const own = ownName(event);
  if (own) return own;
  if (event.type.startsWith("Execution")) return undefined;
  const kind = kindOf(event.type);
  let id = event.previousEventId;
  for (let steps = 0; id && steps < WALK_STEPS_MAX; steps += 1) {
    const previous = byId.get(id);
    if (!previous) return undefined;
    const entered = ENTERED.exec(previous.type);
    if (entered && (!kind || entered[1] === kind)) return previous.stateEnteredEventDetails?.name;
    id = previous.previousEventId;
  }
  return undefined;
}

/** Events that start an attempt or report a success: the state's last attempt did not fail. */
const CLEARS = /(Scheduled|Started|Succeeded)$/;

/**
 * Folds a whole history (ascending ids) into Map name -> "succeeded" | "failed" | "caught" |
 * "running"; a state absent from the map was not reached. `executionStatus` is the execution's
 * (RUNNING, SUCCEEDED, FAILED, ...): a state still open when the execution closed failed.
 */
export function foldStatuses(events, executionStatus) {
  const byId = new Map(events.map((e) => [e.id, e]));
  const info = new Map();
  const of = (name) => {
    if (!info.has(name)) info.set(name, { open: 0, failedAttempt: false, final: null });
    return info.get(name);
  };
  for (const event of events) {
    const type = event.type;
    if (type === "ExecutionRedriven") {
      for (const state of info.values()) state.open = 0;
      continue;
    }
    if (ENTERED.test(type)) {
      const state = of(ownName(event));
      if (type === "FailStateEntered") {
        state.final = "failed";
      } else {
        state.open += 1;
        state.failedAttempt = false;
      }
      continue;
    }
    if (EXITED.test(type)) {
      const state = of(ownName(event));
      state.open = Math.max(0, state.open - 1);
      const outcome = state.failedAttempt ? "caught" : "succeeded";
      // Of a Map's many runs of one state, the worst shows.
      if (state.open === 0 || !state.final || state.final === "succeeded") state.final = outcome;
      continue;
    }
    if (type.startsWith("Execution") || type.startsWith("MapIteration")) continue;
    if (isFailure(type)) {
      const name = stateOf(event, byId);
      if (name) of(name).failedAttempt = true;
    } else if (CLEARS.test(type)) {
      const name = stateOf(event, byId);
      if (name) of(name).failedAttempt = false;
    }
  }
  const statuses = new Map();
  for (const [name, state] of info) {
    if (state.open > 0) {
      statuses.set(name, executionStatus === "RUNNING" ? "running" : "failed");
    } else if (state.final) {
      statuses.set(name, state.final);
    }
  }
  return statuses;
}
