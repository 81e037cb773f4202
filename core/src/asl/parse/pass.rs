//! The Pass state's fields: `Result`, `Parameters`, `ResultPath` and its transition.

use super::*;

impl Ctx<'_> {
    pub(super) fn pass(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        flow: &mut JsonPathFlow,
    ) -> Option<PassState> {
        let result = obj.get("Result").cloned();
        let result_path = self.result_path(obj, "ResultPath");
        let parameters = self.template(obj, "Parameters", false);
        let next = self.transition(obj, node)?;
        let failed = (obj.get("ResultPath").is_some() && result_path.is_none())
            || (obj.get("Parameters").is_some() && parameters.is_none());
        if failed {
            return None;
        }
        flow.result = result;
        flow.result_path = result_path;
        flow.parameters = parameters;
        Some(PassState { next })
    }
}
