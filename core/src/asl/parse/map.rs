//! The Map state's fields: `ItemProcessor` (or the legacy `Iterator`), `ItemsPath`, the
//! Distributed Map's (`ProcessorConfig`, `ItemReader`, `ItemBatcher`, `ResultWriter`, `Label`),
//! `ItemSelector`, `MaxConcurrency[Path]`, the failure tolerance, its data flow, Retry and Catch.

use super::jsonata::Reads;
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
        let item_processor = self.item_processor(obj, depth, None);
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
        let (item_processor, distributed) = item_processor?;
        let map = MapState {
            item_processor,
            distributed,
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

    /// A Map's `ItemProcessor` (or legacy `Iterator`), and its Distributed Map fields when
    /// its `ProcessorConfig.Mode` is `DISTRIBUTED` (the Distributed fields on an inline Map
    /// are refused).
    /// `reads` is the JSONata state's (`None` for a JSONPath state): the expressions of its
    /// Distributed fields note what they read there.
    pub(super) fn item_processor(
        &mut self,
        obj: Obj<'_>,
        depth: usize,
        reads: Option<&mut Reads>,
    ) -> Option<(Branch, Option<Box<Distributed>>)> {
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
        let key = processor_key?;
        let at = obj.ptr(key);
        let value = obj.get(key)?;
        let mode = match value.get("ProcessorConfig") {
            Some(config) => {
                self.processor_config(config, &pointer_child(&at, "ProcessorConfig"))?
            }
            None => None,
        };
        let distributed = match mode {
            None => {
                for field in ["ItemReader", "ItemBatcher", "ResultWriter", "Label"] {
                    if obj.get(field).is_some() {
                        self.schema(
                            &obj.ptr(field),
                            format!("'{field}' applies only to a Map whose ProcessorConfig.Mode is DISTRIBUTED"),
                        );
                    }
                }
                Some(None)
            }
            Some(execution_type) => self
                .distributed(obj, value, execution_type, reads)
                .map(Some),
        };
        let branch = self.branch(value, &at, depth + 1, &format!("'{key}'"));
        Some((branch?, distributed?))
    }

    /// `ProcessorConfig`: `None` for INLINE (or no `Mode`), the child execution type for
    /// DISTRIBUTED; `None` outside when invalid (reported).
    pub(super) fn processor_config(
        &mut self,
        value: &Value,
        at: &str,
    ) -> Option<Option<ChildExecutionType>> {
        let config = self.object(value, at, "'ProcessorConfig'")?;
        self.check_fields(config, &[&["Mode", "ExecutionType"]], "'ProcessorConfig'");
        match self.string(config, "Mode").as_deref() {
            None | Some("INLINE") => {
                if config.get("ExecutionType").is_some() {
                    self.schema(
                        &config.ptr("ExecutionType"),
                        "'ExecutionType' applies only to Mode DISTRIBUTED",
                    );
                    return None;
                }
                Some(None)
            }
            Some("DISTRIBUTED") => match self.string(config, "ExecutionType").as_deref() {
                Some("STANDARD") => Some(Some(ChildExecutionType::Standard)),
                Some("EXPRESS") => Some(Some(ChildExecutionType::Express)),
                None => {
                    self.schema(
                        config.at,
                        "Mode DISTRIBUTED requires the field 'ExecutionType' (STANDARD or EXPRESS)",
                    );
                    None
                }
                Some(other) => {
                    self.schema(
                        &config.ptr("ExecutionType"),
                        format!("'ExecutionType' must be STANDARD or EXPRESS, not '{other}'"),
                    );
                    None
                }
            },
            Some(other) => {
                self.schema(
                    &config.ptr("Mode"),
                    format!("'Mode' must be INLINE or DISTRIBUTED, not '{other}'"),
                );
                None
            }
        }
    }

    /// The Distributed Map's own fields of the Map `obj` whose processor is `processor`.
    fn distributed(
        &mut self,
        obj: Obj<'_>,
        processor: &Value,
        execution_type: ChildExecutionType,
        mut reads: Option<&mut Reads>,
    ) -> Option<Box<Distributed>> {
        let item_reader = match obj.get("ItemReader") {
            None => Some(None),
            Some(value) => {
                let at = obj.ptr("ItemReader");
                if obj.get("ItemsPath").is_some() || obj.get("Items").is_some() {
                    self.unsupported(
                        &at,
                        "Distributed Map's 'ItemReader' with 'ItemsPath' or 'Items'",
                    );
                    None
                } else {
                    let reads = reads.as_deref_mut();
                    self.object_access(value, &at, "ItemReader", "ReaderConfig", reads)
                        .map(Some)
                }
            }
        };
        let result_writer = match obj.get("ResultWriter") {
            None => Some(None),
            Some(value) => {
                let at = obj.ptr("ResultWriter");
                let reads = reads.as_deref_mut();
                self.object_access(value, &at, "ResultWriter", "WriterConfig", reads)
                    .map(Some)
            }
        };
        let label = match obj.get("Label") {
            None => Some(None),
            Some(_) => self
                .string(obj, "Label")
                .and_then(|label| match label_problem(&label) {
                    None => Some(Some(label)),
                    Some(problem) => {
                        self.schema(&obj.ptr("Label"), problem);
                        None
                    }
                }),
        };
        let item_batcher = match obj.get("ItemBatcher") {
            None => Some(None),
            Some(value) => {
                let at = obj.ptr("ItemBatcher");
                self.item_batcher(value, &at, reads).map(Some)
            }
        };
        // The child's definition: the processor without its ProcessorConfig, and the query
        // language it inherits from the machine when it names none.
        let mut child_definition = processor.clone();
        if let Value::Object(fields) = &mut child_definition {
            fields.remove("ProcessorConfig");
            if !fields.contains_key("QueryLanguage")
                && self.machine_language == QueryLanguage::Jsonata
            {
                fields.insert("QueryLanguage".into(), Value::String("JSONata".into()));
            }
        }
        Some(Box::new(Distributed {
            execution_type,
            label: label?,
            item_batcher: item_batcher?,
            child_definition,
            item_reader: item_reader?,
            result_writer: result_writer?,
        }))
    }

    /// An `ItemReader` or `ResultWriter` (`what`) with its `config_key` (`ReaderConfig`,
    /// `WriterConfig`): `Resource` required, `Parameters` (JSONPath) or `Arguments` (JSONata,
    /// a template noting its reads in `reads`), the configuration kept as written for the
    /// reader or writer to check (a JSONata one's expressions compiled beside it);
    /// `ReaderConfig.MaxItemsPath` read here.
    fn object_access(
        &mut self,
        value: &Value,
        at: &str,
        what: &str,
        config_key: &str,
        mut reads: Option<&mut Reads>,
    ) -> Option<ObjectAccess> {
        let jsonata = reads.is_some();
        let access = self.object(value, at, &format!("'{what}'"))?;
        let arguments_key = if jsonata { "Arguments" } else { "Parameters" };
        self.check_fields(
            access,
            &[&["Resource", arguments_key, config_key]],
            &format!("'{what}'"),
        );
        let resource = self.required(access, "Resource", &format!("'{what}'"))?;
        let Some(resource) = resource.as_str().map(str::to_string) else {
            self.schema(&access.ptr("Resource"), "'Resource' must be a string");
            return None;
        };
        let arguments = match (access.get(arguments_key), reads.as_deref_mut()) {
            (None, _) => Some(None),
            (Some(_), Some(reads)) => self
                .jsonata_template(access, arguments_key, reads)
                .map(|t| t.map(BatchInput::Jsonata)),
            (Some(_), None) => self
                .template(access, arguments_key, true)
                .map(|t| Some(BatchInput::Template(t))),
        };
        let config = access.get(config_key).cloned();
        let config_expressions = match (&config, reads) {
            (Some(written), Some(reads)) if written.to_string().contains("{%") => {
                self.jsonata_template(access, config_key, reads)
            }
            _ => Some(None),
        };
        let max_items_path = match config.as_ref().and_then(|c| c.get("MaxItemsPath")) {
            None => Some(None),
            Some(_) if jsonata => {
                self.schema(
                    &pointer_child(&access.ptr(config_key), "MaxItemsPath"),
                    "'MaxItemsPath' is not supported in a JSONata state (use MaxItems)",
                );
                None
            }
            Some(Value::String(text)) => {
                let at = pointer_child(&access.ptr(config_key), "MaxItemsPath");
                self.reference_text(&at, "MaxItemsPath", text).map(Some)
            }
            Some(_) => {
                self.schema(
                    &pointer_child(&access.ptr(config_key), "MaxItemsPath"),
                    "'MaxItemsPath' must be a string",
                );
                None
            }
        };
        if config.as_ref().is_some_and(|c| !c.is_object()) {
            self.schema(
                &access.ptr(config_key),
                format!("'{config_key}' must be an object"),
            );
            return None;
        }
        Some(ObjectAccess {
            resource,
            arguments: arguments?,
            config,
            config_expressions: config_expressions?,
            max_items_path: max_items_path?,
        })
    }

    /// An `ItemBatcher`; a JSONata state's (`reads` given) takes literals or `{% %}`
    /// expressions for its counts and a template for `BatchInput`, and no `…Path` fields.
    fn item_batcher(
        &mut self,
        value: &Value,
        at: &str,
        mut reads: Option<&mut Reads>,
    ) -> Option<ItemBatcher> {
        let batcher = self.object(value, at, "'ItemBatcher'")?;
        let mut fields: Vec<&str> = vec!["MaxItemsPerBatch", "MaxInputBytesPerBatch", "BatchInput"];
        if reads.is_none() {
            fields.extend(["MaxItemsPerBatchPath", "MaxInputBytesPerBatchPath"]);
        }
        self.check_fields(batcher, &[&fields], "'ItemBatcher'");
        let (max_items, max_bytes) = match reads.as_deref_mut() {
            Some(reads) => (
                self.jsonata_count(batcher, "MaxItemsPerBatch", reads),
                self.jsonata_count(batcher, "MaxInputBytesPerBatch", reads),
            ),
            None => (
                self.count_pair(batcher, "MaxItemsPerBatch", "MaxItemsPerBatchPath"),
                self.count_pair(
                    batcher,
                    "MaxInputBytesPerBatch",
                    "MaxInputBytesPerBatchPath",
                ),
            ),
        };
        let batch_input = match (batcher.get("BatchInput"), reads) {
            (None, _) => Some(None),
            (Some(value), Some(reads)) => {
                if !value.is_object() && !value.as_str().is_some_and(|t| t.contains("{%")) {
                    self.schema(
                        &batcher.ptr("BatchInput"),
                        "'BatchInput' must be an object or a {% %} expression",
                    );
                    None
                } else {
                    self.jsonata_template(batcher, "BatchInput", reads)
                        .map(|t| t.map(BatchInput::Jsonata))
                }
            }
            (Some(_), None) => self
                .template(batcher, "BatchInput", true)
                .map(|t| Some(BatchInput::Template(t))),
        };
        let (max_items, max_bytes) = (max_items?, max_bytes?);
        if max_items.is_none() && max_bytes.is_none() {
            self.schema(
                at,
                "'ItemBatcher' requires 'MaxItemsPerBatch' or 'MaxInputBytesPerBatch' (or their Path)",
            );
            return None;
        }
        Some(ItemBatcher {
            max_items_per_batch: max_items,
            max_input_bytes_per_batch: max_bytes,
            batch_input: batch_input?,
        })
    }
}

/// Why `label` is not a valid Distributed Map `Label` (AWS: at most 40 characters, none of
/// whitespace, brackets, wildcards, `"#%\^|~`$&,;:/` or control characters); `None` when valid.
pub(super) fn label_problem(label: &str) -> Option<String> {
    let chars = label.chars().count();
    if chars > MAP_LABEL_CHARS_MAX {
        return Some(format!(
            "'Label' is {chars} characters long; the limit is {MAP_LABEL_CHARS_MAX}"
        ));
    }
    label
        .chars()
        .find(|&c| {
            let control = ('\u{0}'..='\u{1f}').contains(&c) || ('\u{7f}'..='\u{9f}').contains(&c);
            c.is_whitespace() || control || "<>{}[]?*\"#%\\^|~`$&,;:/".contains(c)
        })
        .map(|c| format!("'Label' may not contain {c:?}"))
}
