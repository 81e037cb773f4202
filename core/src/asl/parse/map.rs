//! The Map state's fields: `ItemProcessor` (or the legacy `Iterator`), `ItemsPath`,
//! `ItemSelector`, `MaxConcurrency[Path]`, the failure tolerance, its data flow, Retry and Catch.

use super::*;

impl Ctx<'_> {
    pub(super) fn count_pair(
        &mut self,
        obj: Obj<'_>,
        key: &str,
        path_key: &str,
    ) -> Option<Option<CountField>> {
        match (obj.get(key), obj.get(path_key)) {
            (Some(_), Some(_)) => {
                self.schema(
                    obj.at,
                    format!("a Map state cannot have both '{key}' and '{path_key}'"),
                );
                None
            }
            (Some(_), None) => self
                .uint(obj, key, 0, u64::from(u32::MAX))
                .map(|n| Some(CountField::Literal(n))),
            (None, Some(_)) => self
                .reference(obj, path_key)
                .map(|p| Some(CountField::Path(p))),
            (None, None) => Some(None),
        }
    }

    pub(super) fn map(
        &mut self,
        obj: Obj<'_>,
        node: &mut Node,
        depth: usize,
        flow: &mut JsonPathFlow,
    ) -> Option<MapState> {
        let item_processor = self.item_processor(obj, depth);
        let selector_key = match (obj.get("ItemSelector"), obj.get("Parameters")) {
            (Some(_), Some(_)) => {
                self.schema(
                    obj.at,
                    "a Map state cannot have both 'ItemSelector' and 'Parameters'",
                );
                return None;
            }
            (Some(_), None) => Some("ItemSelector"),
            (None, Some(_)) => Some("Parameters"),
            (None, None) => None,
        };
        let item_selector = selector_key.map(|key| self.template(obj, key, true));
        let items_path = obj
            .get("ItemsPath")
            .map(|_| self.reference(obj, "ItemsPath"));
        let max_concurrency = self.count_pair(obj, "MaxConcurrency", "MaxConcurrencyPath");
        let tolerated_failure_count =
            self.count_pair(obj, "ToleratedFailureCount", "ToleratedFailureCountPath");
        let tolerated_failure_percentage = match (
            obj.get("ToleratedFailurePercentage"),
            obj.get("ToleratedFailurePercentagePath"),
        ) {
            (Some(_), Some(_)) => {
                self.schema(
                        obj.at,
                        "a Map state cannot have both 'ToleratedFailurePercentage' and 'ToleratedFailurePercentagePath'",
                    );
                None
            }
            (Some(v), None) => match v.as_f64() {
                Some(p) if (0.0..=100.0).contains(&p) => Some(Some(PercentageField::Literal(p))),
                _ => {
                    self.schema(
                        &obj.ptr("ToleratedFailurePercentage"),
                        format!(
                            "'ToleratedFailurePercentage' must be a number from 0 to 100, not {v}"
                        ),
                    );
                    None
                }
            },
            (None, Some(_)) => self
                .reference(obj, "ToleratedFailurePercentagePath")
                .map(|p| Some(PercentageField::Path(p))),
            (None, None) => Some(None),
        };
        let result_selector = self.template(obj, "ResultSelector", true);
        let result_path = self.result_path(obj, "ResultPath");
        let retry = self.retriers(obj);
        let catch = self.catchers(obj, node);
        let next = self.transition(obj, node);
        let map = MapState {
            item_processor: item_processor?,
            max_concurrency: max_concurrency?,
            tolerated_failure_count: tolerated_failure_count?,
            tolerated_failure_percentage: tolerated_failure_percentage?,
            retry: retry?,
            catch: catch?,
            next: next?,
        };
        flow.items_path = match items_path {
            None => None,
            Some(parsed) => Some(parsed?),
        };
        flow.item_selector = match item_selector {
            None => None,
            Some(compiled) => Some(compiled?),
        };
        flow.result_selector = present_or_fail(obj, "ResultSelector", result_selector)?;
        flow.result_path = present_or_fail(obj, "ResultPath", result_path)?;
        Some(map)
    }

    /// A Map's `ItemProcessor` (or legacy `Iterator`); Distributed Map's fields refused.
    pub(super) fn item_processor(&mut self, obj: Obj<'_>, depth: usize) -> Option<Branch> {
        for key in ["ItemReader", "ItemBatcher", "ResultWriter", "Label"] {
            if obj.get(key).is_some() {
                self.unsupported(&obj.ptr(key), &format!("Distributed Map's '{key}'"));
            }
        }
        let processor_key = match (obj.get("ItemProcessor"), obj.get("Iterator")) {
            (Some(_), Some(_)) => {
                self.schema(
                    obj.at,
                    "a Map state cannot have both 'ItemProcessor' and 'Iterator'",
                );
                None
            }
            (Some(_), None) => Some("ItemProcessor"),
            (None, Some(_)) => Some("Iterator"),
            (None, None) => {
                self.schema(obj.at, "These fields are required: [ItemProcessor]");
                None
            }
        };
        processor_key.and_then(|key| {
            let at = obj.ptr(key);
            let value = obj.get(key)?;
            if let Some(config) = value.get("ProcessorConfig") {
                self.processor_config(config, &pointer_child(&at, "ProcessorConfig"));
            }
            self.branch(value, &at, depth + 1, &format!("'{key}'"))
        })
    }

    pub(super) fn processor_config(&mut self, value: &Value, at: &str) {
        let Some(config) = self.object(value, at, "'ProcessorConfig'") else {
            return;
        };
        self.check_fields(config, &[&["Mode", "ExecutionType"]], "'ProcessorConfig'");
        match self.string(config, "Mode").as_deref() {
            None | Some("INLINE") => {
                if config.get("ExecutionType").is_some() {
                    self.schema(
                        &config.ptr("ExecutionType"),
                        "'ExecutionType' applies only to Mode DISTRIBUTED",
                    );
                }
            }
            Some("DISTRIBUTED") => {
                self.unsupported(&config.ptr("Mode"), "Distributed Map (Mode DISTRIBUTED)")
            }
            Some(other) => self.schema(
                &config.ptr("Mode"),
                format!("'Mode' must be INLINE or DISTRIBUTED, not '{other}'"),
            ),
        }
    }
}
