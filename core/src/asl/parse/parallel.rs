//! The Parallel state's fields: `Branches` (each a nested machine), its data flow, Retry and
//! Catch.

use super::*;

impl Ctx<'_> {
    pub(super) fn parallel(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        depth: usize,
        flow: &mut JsonPathFlow,
    ) -> Option<ParallelState> {
        let branches = self.branches(obj, depth);
        let parameters = self.template(obj, "Parameters", false);
        let result_selector = self.template(obj, "ResultSelector", true);
        let result_path = self.result_path(obj, "ResultPath");
        let retry = self.retriers(obj);
        let catch = self.catchers(obj, node);
        let next = self.transition(obj, node);
        let parallel = ParallelState {
            branches: branches?,
            retry: retry?,
            catch: catch?,
            next: next?,
        };
        flow.parameters = present_or_fail(obj, "Parameters", parameters)?;
        flow.result_selector = present_or_fail(obj, "ResultSelector", result_selector)?;
        flow.result_path = present_or_fail(obj, "ResultPath", result_path)?;
        Some(parallel)
    }

    /// A Parallel's `Branches`, each a nested machine.
    pub(super) fn branches(&mut self, obj: Obj<'_>, depth: usize) -> Option<Vec<Branch>> {
        match self.required(obj, "Branches", "a Parallel state") {
            None => None,
            Some(Value::Array(items)) if items.is_empty() => {
                self.schema(&obj.ptr("Branches"), "Value cannot be empty");
                None
            }
            Some(Value::Array(items)) => {
                let at = obj.ptr("Branches");
                let mut branches = Vec::with_capacity(items.len());
                let mut ok = true;
                for (i, item) in items.iter().enumerate() {
                    match self.branch(item, &pointer_index(&at, i), depth + 1, "a Parallel branch")
                    {
                        Some(b) => branches.push(b),
                        None => ok = false,
                    }
                }
                ok.then_some(branches)
            }
            Some(_) => {
                self.schema(
                    &obj.ptr("Branches"),
                    "'Branches' must be an array of branches",
                );
                None
            }
        }
    }
}
