//! The Fail state's fields: `Error`/`ErrorPath` and `Cause`/`CausePath`.

use super::*;

impl Ctx<'_> {
    pub(super) fn fail_field(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        path_key: &str,
    ) -> Option<Option<FailField>> {
        match (obj.get(key), obj.get(path_key)) {
            (Some(_), Some(_)) => {
                self.schema(
                    obj.at,
                    format!("a Fail state cannot have both '{key}' and '{path_key}'"),
                );
                None
            }
            (Some(_), None) => self.string(obj, key).map(|s| Some(FailField::Literal(s))),
            (None, Some(_)) => {
                let text = self.string(obj, path_key)?;
                let at = obj.ptr(path_key);
                let expression = match FieldExpression::parse(path_key, &text) {
                    Ok(expression) => Box::new(expression),
                    Err(error) => {
                        self.error(
                            &at,
                            DiagnosticCode::InvalidPath,
                            format!("'{path_key}' is not a valid path or intrinsic call: {error}"),
                        );
                        return None;
                    }
                };
                let source = serde_json::json!({ "value.$": text });
                match Template::compile(&source) {
                    Ok(template) => Some(Some(FailField::Dynamic {
                        text,
                        expression,
                        template,
                    })),
                    Err(problems) => {
                        if problems.is_empty() {
                            self.error(
                                &at,
                                DiagnosticCode::InvalidPath,
                                format!("'{path_key}' does not compile"),
                            );
                        }
                        for problem in problems {
                            self.error(
                                &at,
                                DiagnosticCode::InvalidPath,
                                format!("'{path_key}': {}", problem.message),
                            );
                        }
                        None
                    }
                }
            }
            (None, None) => Some(None),
        }
    }

    pub(super) fn fail(&mut self, obj: Obj<'_>) -> Option<FailState> {
        let error = self.fail_field(obj, "Error", "ErrorPath");
        let cause = self.fail_field(obj, "Cause", "CausePath");
        Some(FailState {
            error: error?,
            cause: cause?,
        })
    }
}
