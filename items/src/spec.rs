//! What a Map state asks for, after the engine evaluated its fields: `ItemReaderSpec` (where
//! the items come from) and `ResultWriterSpec` (where the results go).
//!
//! Invariants: a spec for one of the S3 resources this crate serves is checked whole when it
//! is built (bucket, key, input type, CSV headers, MaxItems), so opening it only meets the
//! object store's errors and the data's. A spec for any other resource keeps its arguments
//! as given, for an embedder's `ItemSource`.
//!
//! Must not: evaluate JSONPath or JSONata (the engine did); touch an object store.

use serde_json::{Map, Value};

use crate::error::{Access, ConfigKind, ItemsError};
use crate::limits::{CSV_HEADER_SIZE_BYTES_MAX, MAX_ITEMS_MAX, RESULT_FILE_SIZE_BYTES_MAX};

/// The ItemReader resource that reads one object's items.
pub const S3_GET_OBJECT: &str = "arn:aws:states:::s3:getObject";
/// The ItemReader resource whose items are a bucket's objects.
pub const S3_LIST_OBJECTS_V2: &str = "arn:aws:states:::s3:listObjectsV2";
/// The ResultWriter resource.
pub const S3_PUT_OBJECT: &str = "arn:aws:states:::s3:putObject";

/// `ReaderConfig.CSVDelimiter`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CsvDelimiter {
    /// `,` (the default).
    Comma,
    /// `|`.
    Pipe,
    /// `;`.
    Semicolon,
    /// ` `.
    Space,
    /// `\t`.
    Tab,
}

impl CsvDelimiter {
    /// The delimiter's byte.
    pub fn byte(self) -> u8 {
        match self {
            CsvDelimiter::Comma => b',',
            CsvDelimiter::Pipe => b'|',
            CsvDelimiter::Semicolon => b';',
            CsvDelimiter::Space => b' ',
            CsvDelimiter::Tab => b'\t',
        }
    }
}

/// Where a CSV object's column names come from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CsvHeaders {
    /// `CSVHeaderLocation: FIRST_ROW`: the object's first row.
    FirstRow,
    /// `CSVHeaderLocation: GIVEN` with `CSVHeaders`.
    Given(Vec<String>),
}

/// How one object's bytes become items (`ReaderConfig.InputType`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InputType {
    /// A JSON array (or, with `ItemsPointer`, an array inside a JSON object).
    Json {
        /// `ReaderConfig.ItemsPointer`: a JSON Pointer to the array.
        items_pointer: Option<String>,
    },
    /// One JSON value per line.
    Jsonl,
    /// Rows of delimited text; each item an object of strings keyed by the headers.
    Csv {
        /// Where the headers come from.
        headers: CsvHeaders,
        /// The field delimiter.
        delimiter: CsvDelimiter,
    },
    /// An S3 inventory `manifest.json` (`InputType: MANIFEST`); the items are its CSV files'
    /// rows.
    Manifest,
    /// An Athena manifest (`ManifestType: ATHENA_DATA`): one `s3://bucket/key` per line; the
    /// items are those objects' items, each read as `data` (the `InputType` given).
    AthenaManifest {
        /// How each listed object's bytes become items.
        data: Box<InputType>,
    },
}

/// What a reader spec reads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ReaderTarget {
    /// `s3:getObject`: one object's items.
    Object {
        /// The bucket.
        bucket: String,
        /// The key.
        key: String,
        /// `VersionId`, if given.
        version_id: Option<String>,
        /// How its bytes become items.
        input_type: InputType,
    },
    /// `s3:listObjectsV2`: the bucket's objects under a prefix, in key order.
    List {
        /// The bucket.
        bucket: String,
        /// `Prefix` (empty: every object).
        prefix: String,
        /// `Transformation: LOAD_AND_FLATTEN`: the items are each listed object's items, read
        /// as this `InputType`; `None`: the items are the objects' descriptions.
        load: Option<InputType>,
    },
    /// A resource this crate does not serve: for an embedder's `ItemSource`.
    Other,
}

/// A Map state's ItemReader, evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemReaderSpec {
    resource: String,
    arguments: Value,
    reader_config: Option<Value>,
    target: ReaderTarget,
    max_items: Option<u64>,
    expected_etag: Option<String>,
}

impl ItemReaderSpec {
    /// Checks an ItemReader: `resource` as written, `arguments` its evaluated
    /// `Parameters`/`Arguments`, `reader_config` its `ReaderConfig` (a `MaxItems` number in
    /// it counts; `MaxItemsPath` is the caller's to evaluate, see `with_max_items`).
    pub fn new(
        resource: &str,
        arguments: &Value,
        reader_config: Option<&Value>,
    ) -> Result<Self, ItemsError> {
        let config = match reader_config {
            None => None,
            Some(Value::Object(map)) => Some(map),
            Some(_) => {
                return Err(ItemsError::InvalidConfig {
                    config: ConfigKind::ReaderConfig,
                    field: "ReaderConfig",
                    expected: "an object",
                })
            }
        };
        let max_items = match config.and_then(|c| c.get("MaxItems")) {
            None => None,
            Some(value) => max_items_of(value)?,
        };
        let target = match s3_action(resource) {
            Some("getObject") => {
                let args = arguments_of(resource, arguments, Access::Read)?;
                let bucket = string_argument(resource, args, "Bucket", Access::Read)?;
                let key = string_argument(resource, args, "Key", Access::Read)?;
                let version_id =
                    optional_string_argument(resource, args, "VersionId", Access::Read)?;
                let config = config.ok_or(ItemsError::InvalidConfig {
                    config: ConfigKind::ReaderConfig,
                    field: "InputType",
                    expected: "given for s3:getObject",
                })?;
                ReaderTarget::Object {
                    bucket,
                    key,
                    version_id,
                    input_type: input_type_of(config)?,
                }
            }
            Some("listObjectsV2") => {
                let args = arguments_of(resource, arguments, Access::Read)?;
                let bucket = string_argument(resource, args, "Bucket", Access::Read)?;
                let prefix = optional_string_argument(resource, args, "Prefix", Access::Read)?
                    .unwrap_or_default();
                let transformation = config.and_then(|c| c.get("Transformation"));
                let load = match transformation.map(|t| t.as_str()) {
                    None | Some(Some("NONE")) => None,
                    Some(Some("LOAD_AND_FLATTEN")) => {
                        let config = config.expect("a Transformation is in a ReaderConfig");
                        Some(object_input_type_of(config, "LOAD_AND_FLATTEN")?)
                    }
                    Some(_) => {
                        return Err(ItemsError::InvalidConfig {
                            config: ConfigKind::ReaderConfig,
                            field: "Transformation",
                            expected: "NONE or LOAD_AND_FLATTEN",
                        })
                    }
                };
                ReaderTarget::List {
                    bucket,
                    prefix,
                    load,
                }
            }
            _ => ReaderTarget::Other,
        };
        Ok(ItemReaderSpec {
            resource: resource.to_string(),
            arguments: arguments.clone(),
            reader_config: reader_config.cloned(),
            target,
            max_items,
            expected_etag: None,
        })
    }

    /// Sets MaxItems as the caller evaluated it (from `MaxItemsPath`, or JSONata); it
    /// replaces a `MaxItems` in `ReaderConfig`. 0 or `None` means every item.
    pub fn with_max_items(mut self, max_items: Option<u64>) -> Self {
        self.max_items = max_items;
        self
    }

    /// Pins the object read (`s3:getObject`; for MANIFEST, the manifest) to the ETag a
    /// cursor reported when the Map Run began (`ItemCursor::object_etag`): a Map Run that
    /// resumes at an item index then fails with `ObjectChanged` instead of reading other items
    /// under the same indexes.
    pub fn with_expected_etag(mut self, etag: Option<String>) -> Self {
        self.expected_etag = etag;
        self
    }

    /// The ETag the object must have (`with_expected_etag`).
    pub fn expected_etag(&self) -> Option<&str> {
        self.expected_etag.as_deref()
    }

    /// The resource as written.
    pub fn resource(&self) -> &str {
        &self.resource
    }

    /// The evaluated arguments, as given.
    pub fn arguments(&self) -> &Value {
        &self.arguments
    }

    /// The `ReaderConfig`, as given.
    pub fn reader_config(&self) -> Option<&Value> {
        self.reader_config.as_ref()
    }

    /// What is read.
    pub fn target(&self) -> &ReaderTarget {
        &self.target
    }

    /// The most items read: `None` for every item (MaxItems absent or 0), capped at
    /// `MAX_ITEMS_MAX`.
    pub fn max_items(&self) -> Option<u64> {
        match self.max_items {
            None | Some(0) => None,
            Some(n) => Some(n.min(MAX_ITEMS_MAX)),
        }
    }
}

/// `ResultWriterSpec`'s `WriterConfig.Transformation`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Transformation {
    /// Each child's result with its metadata (the default when writing to S3).
    None,
    /// A succeeded child's output only.
    Compact,
    /// As `Compact`, with an output that is an array spliced into the file.
    Flatten,
}

/// `ResultWriterSpec`'s `WriterConfig.OutputType`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OutputType {
    /// A results file is one JSON array (`.json`).
    Json,
    /// A results file has one JSON value per line (`.jsonl`).
    Jsonl,
}

/// A Map state's ResultWriter, evaluated.
#[derive(Debug, Clone, PartialEq)]
pub struct ResultWriterSpec {
    bucket: String,
    prefix: String,
    writer_config: WriterConfig,
    file_size_bytes_max: u64,
}

/// A ResultWriter's `WriterConfig`: how each child's result is shaped. It applies to results
/// written to S3 and, for a ResultWriter with only a `WriterConfig` (AWS's preview), to the
/// Map state's output (`WriterConfig::records`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriterConfig {
    transformation: Transformation,
    output_type: OutputType,
}

impl Default for WriterConfig {
    /// `NONE` and `JSON`: AWS's defaults when results are written to S3.
    fn default() -> Self {
        WriterConfig {
            transformation: Transformation::None,
            output_type: OutputType::Json,
        }
    }
}

impl WriterConfig {
    /// Checks a `WriterConfig` object (`Transformation`, `OutputType`); `None` gives the
    /// defaults.
    pub fn new(writer_config: Option<&Value>) -> Result<Self, ItemsError> {
        let mut config = WriterConfig::default();
        let fields = match writer_config {
            None => return Ok(config),
            Some(Value::Object(fields)) => fields,
            Some(_) => {
                return Err(ItemsError::InvalidConfig {
                    config: ConfigKind::WriterConfig,
                    field: "WriterConfig",
                    expected: "an object",
                })
            }
        };
        if let Some(value) = fields.get("Transformation") {
            config.transformation = match value.as_str() {
                Some("NONE") => Transformation::None,
                Some("COMPACT") => Transformation::Compact,
                Some("FLATTEN") => Transformation::Flatten,
                _ => {
                    return Err(ItemsError::InvalidConfig {
                        config: ConfigKind::WriterConfig,
                        field: "Transformation",
                        expected: "NONE, COMPACT or FLATTEN",
                    })
                }
            };
        }
        if let Some(value) = fields.get("OutputType") {
            config.output_type = match value.as_str() {
                Some("JSON") => OutputType::Json,
                Some("JSONL") => OutputType::Jsonl,
                _ => {
                    return Err(ItemsError::InvalidConfig {
                        config: ConfigKind::WriterConfig,
                        field: "OutputType",
                        expected: "JSON or JSONL",
                    })
                }
            };
        }
        Ok(config)
    }

    /// `Transformation`.
    pub fn transformation(&self) -> Transformation {
        self.transformation
    }

    /// `OutputType`.
    pub fn output_type(&self) -> OutputType {
        self.output_type
    }
}

impl ResultWriterSpec {
    /// Checks a ResultWriter: `resource` must be `arn:aws:states:::s3:putObject`,
    /// `arguments` its evaluated `Parameters`/`Arguments` (`Bucket`, optional `Prefix`),
    /// `writer_config` its `WriterConfig` (`Transformation`, `OutputType`).
    pub fn new(
        resource: &str,
        arguments: &Value,
        writer_config: Option<&Value>,
    ) -> Result<Self, ItemsError> {
        if s3_action(resource) != Some("putObject") {
            return Err(ItemsError::UnsupportedResource {
                resource: resource.to_string(),
                access: Access::Write,
            });
        }
        let args = arguments_of(resource, arguments, Access::Write)?;
        let bucket = string_argument(resource, args, "Bucket", Access::Write)?;
        let prefix =
            optional_string_argument(resource, args, "Prefix", Access::Write)?.unwrap_or_default();
        Ok(ResultWriterSpec {
            bucket,
            prefix,
            writer_config: WriterConfig::new(writer_config)?,
            file_size_bytes_max: RESULT_FILE_SIZE_BYTES_MAX,
        })
    }

    /// Cuts results files at `size_bytes` instead of AWS's 5 GB (tests, small deployments).
    /// A file holds at least one result, however large.
    pub fn with_file_size_bytes_max(mut self, size_bytes: u64) -> Self {
        assert!(size_bytes > 0, "a results file's size limit is positive");
        self.file_size_bytes_max = size_bytes;
        self
    }

    /// The bucket written to.
    pub fn bucket(&self) -> &str {
        &self.bucket
    }

    /// The key prefix (`Prefix`; empty when absent).
    pub fn prefix(&self) -> &str {
        &self.prefix
    }

    /// The `WriterConfig`.
    pub fn writer_config(&self) -> WriterConfig {
        self.writer_config
    }

    /// `WriterConfig.Transformation` (`None` by default).
    pub fn transformation(&self) -> Transformation {
        self.writer_config.transformation()
    }

    /// `WriterConfig.OutputType` (`Json` by default).
    pub fn output_type(&self) -> OutputType {
        self.writer_config.output_type()
    }

    /// Where results files are cut.
    pub fn file_size_bytes_max(&self) -> u64 {
        self.file_size_bytes_max
    }
}

/// The S3 action of `arn:<partition>:states:::s3:<action>`, or `None` for another resource.
fn s3_action(resource: &str) -> Option<&str> {
    let rest = resource.strip_prefix("arn:")?;
    let (_partition, rest) = rest.split_once(':')?;
    rest.strip_prefix("states:::s3:")
}

fn arguments_of<'a>(
    resource: &str,
    arguments: &'a Value,
    access: Access,
) -> Result<&'a Map<String, Value>, ItemsError> {
    arguments
        .as_object()
        .ok_or_else(|| ItemsError::InvalidArgument {
            resource: resource.to_string(),
            field: "Parameters",
            expected: "an object",
            access,
        })
}

fn string_argument(
    resource: &str,
    args: &Map<String, Value>,
    field: &'static str,
    access: Access,
) -> Result<String, ItemsError> {
    optional_string_argument(resource, args, field, access)?.ok_or_else(|| {
        ItemsError::InvalidArgument {
            resource: resource.to_string(),
            field,
            expected: "a string",
            access,
        }
    })
}

fn optional_string_argument(
    resource: &str,
    args: &Map<String, Value>,
    field: &'static str,
    access: Access,
) -> Result<Option<String>, ItemsError> {
    match args.get(field) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(_) => Err(ItemsError::InvalidArgument {
            resource: resource.to_string(),
            field,
            expected: "a string",
            access,
        }),
    }
}

fn max_items_of(value: &Value) -> Result<Option<u64>, ItemsError> {
    if let Some(n) = value.as_u64() {
        return Ok(Some(n));
    }
    if let Some(n) = value.as_i64() {
        return Err(ItemsError::MaxItemsNegative { value: n });
    }
    // A string (a JSONata expression as written) is the caller's to evaluate.
    if value.is_string() {
        return Ok(None);
    }
    Err(ItemsError::InvalidConfig {
        config: ConfigKind::ReaderConfig,
        field: "MaxItems",
        expected: "a non-negative integer",
    })
}

fn input_type_of(config: &Map<String, Value>) -> Result<InputType, ItemsError> {
    match config.get("ManifestType").and_then(Value::as_str) {
        None => {}
        Some("S3_INVENTORY")
            if config.get("InputType").and_then(Value::as_str) != Some("MANIFEST") =>
        {
            return Err(ItemsError::InvalidConfig {
                config: ConfigKind::ReaderConfig,
                field: "InputType",
                expected: "MANIFEST with ManifestType S3_INVENTORY",
            });
        }
        Some("S3_INVENTORY") => {}
        Some("ATHENA_DATA") => {
            let data = object_input_type_of(config, "ATHENA_DATA")?;
            return Ok(InputType::AthenaManifest {
                data: Box::new(data),
            });
        }
        Some(_) => {
            return Err(ItemsError::InvalidConfig {
                config: ConfigKind::ReaderConfig,
                field: "ManifestType",
                expected: "S3_INVENTORY or ATHENA_DATA",
            })
        }
    }
    let input_type = config.get("InputType").and_then(Value::as_str);
    match input_type {
        Some("JSON") => {
            let items_pointer = match config.get("ItemsPointer") {
                None => None,
                Some(Value::String(p)) if p.is_empty() || p.starts_with('/') => Some(p.clone()),
                Some(_) => {
                    return Err(ItemsError::InvalidConfig {
                        config: ConfigKind::ReaderConfig,
                        field: "ItemsPointer",
                        expected: "a JSON Pointer (empty or starting with '/')",
                    })
                }
            };
            Ok(InputType::Json { items_pointer })
        }
        Some("JSONL") => Ok(InputType::Jsonl),
        Some("CSV") => csv_input_type(config),
        Some("MANIFEST") => Ok(InputType::Manifest),
        Some("PARQUET") => Err(ItemsError::Unsupported {
            feature: "ReaderConfig.InputType PARQUET",
        }),
        _ => Err(ItemsError::InvalidConfig {
            config: ConfigKind::ReaderConfig,
            field: "InputType",
            expected: "one of CSV, JSON, JSONL, MANIFEST, PARQUET",
        }),
    }
}

/// The `InputType` of objects a listing or an Athena manifest names: one that reads a single
/// object (JSON, JSONL, CSV; PARQUET is not read yet), not another manifest.
fn object_input_type_of(
    config: &Map<String, Value>,
    by: &'static str,
) -> Result<InputType, ItemsError> {
    let expected = match by {
        "ATHENA_DATA" => "CSV, JSONL or PARQUET with ManifestType ATHENA_DATA",
        _ => "JSON, JSONL, CSV or PARQUET with Transformation LOAD_AND_FLATTEN",
    };
    match config.get("InputType").and_then(Value::as_str) {
        Some("PARQUET") => Err(ItemsError::Unsupported {
            feature: "ReaderConfig.InputType PARQUET",
        }),
        Some("JSON") if by == "ATHENA_DATA" => Err(ItemsError::InvalidConfig {
            config: ConfigKind::ReaderConfig,
            field: "InputType",
            expected,
        }),
        Some("JSON" | "JSONL" | "CSV") => {
            let input_type = input_type_of(&without_manifest_type(config))?;
            Ok(input_type)
        }
        _ => Err(ItemsError::InvalidConfig {
            config: ConfigKind::ReaderConfig,
            field: "InputType",
            expected,
        }),
    }
}

/// `config` without its `ManifestType`, to read the data's `InputType` alone.
fn without_manifest_type(config: &Map<String, Value>) -> Map<String, Value> {
    let mut config = config.clone();
    config.remove("ManifestType");
    config
}

fn csv_input_type(config: &Map<String, Value>) -> Result<InputType, ItemsError> {
    let delimiter = match config.get("CSVDelimiter").and_then(Value::as_str) {
        None if config.get("CSVDelimiter").is_none() => CsvDelimiter::Comma,
        Some("COMMA") => CsvDelimiter::Comma,
        Some("PIPE") => CsvDelimiter::Pipe,
        Some("SEMICOLON") => CsvDelimiter::Semicolon,
        Some("SPACE") => CsvDelimiter::Space,
        Some("TAB") => CsvDelimiter::Tab,
        _ => {
            return Err(ItemsError::InvalidConfig {
                config: ConfigKind::ReaderConfig,
                field: "CSVDelimiter",
                expected: "one of COMMA, PIPE, SEMICOLON, SPACE, TAB",
            })
        }
    };
    let headers = match config.get("CSVHeaderLocation").and_then(Value::as_str) {
        None if config.get("CSVHeaderLocation").is_none() => CsvHeaders::FirstRow,
        Some("FIRST_ROW") => CsvHeaders::FirstRow,
        Some("GIVEN") => {
            let given = config.get("CSVHeaders").and_then(Value::as_array).ok_or(
                ItemsError::InvalidConfig {
                    config: ConfigKind::ReaderConfig,
                    field: "CSVHeaders",
                    expected: "an array of strings with CSVHeaderLocation GIVEN",
                },
            )?;
            let mut headers = Vec::with_capacity(given.len());
            for header in given {
                let header = header.as_str().ok_or(ItemsError::InvalidConfig {
                    config: ConfigKind::ReaderConfig,
                    field: "CSVHeaders",
                    expected: "an array of strings",
                })?;
                headers.push(header.to_string());
            }
            check_csv_headers(&headers)?;
            CsvHeaders::Given(headers)
        }
        _ => {
            return Err(ItemsError::InvalidConfig {
                config: ConfigKind::ReaderConfig,
                field: "CSVHeaderLocation",
                expected: "FIRST_ROW or GIVEN",
            })
        }
    };
    Ok(InputType::Csv { headers, delimiter })
}

/// Checks CSV headers as AWS does: no duplicates, at most `CSV_HEADER_SIZE_BYTES_MAX` bytes.
pub(crate) fn check_csv_headers(headers: &[String]) -> Result<(), ItemsError> {
    let size_bytes: usize = headers.iter().map(|h| h.len() + 1).sum();
    if size_bytes > CSV_HEADER_SIZE_BYTES_MAX {
        return Err(ItemsError::CsvHeaderTooLarge {
            size_bytes,
            limit_bytes: CSV_HEADER_SIZE_BYTES_MAX,
        });
    }
    let mut seen = std::collections::HashSet::with_capacity(headers.len());
    for header in headers {
        if !seen.insert(header.as_str()) {
            return Err(ItemsError::CsvHeadersDuplicate {
                header: header.clone(),
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_csv_reader_with_given_headers() {
        let spec = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b", "Key": "k.csv"}),
            Some(&json!({"InputType": "CSV", "CSVHeaderLocation": "GIVEN",
                "CSVHeaders": ["a", "b"], "CSVDelimiter": "PIPE", "MaxItems": 2})),
        )
        .expect("valid");
        assert_eq!(spec.max_items(), Some(2));
        let ReaderTarget::Object { input_type, .. } = spec.target() else {
            panic!("an object reader: {spec:?}");
        };
        assert_eq!(
            input_type,
            &InputType::Csv {
                headers: CsvHeaders::Given(vec!["a".into(), "b".into()]),
                delimiter: CsvDelimiter::Pipe
            }
        );
    }

    #[test]
    fn max_items_zero_means_all_and_negative_is_refused() {
        let args = json!({"Bucket": "b", "Key": "k"});
        let spec = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &args,
            Some(&json!({"InputType": "JSON", "MaxItems": 0})),
        )
        .expect("valid");
        assert_eq!(spec.max_items(), None);
        assert_eq!(spec.clone().with_max_items(Some(3)).max_items(), Some(3));
        assert_eq!(
            spec.with_max_items(Some(MAX_ITEMS_MAX + 1)).max_items(),
            Some(MAX_ITEMS_MAX)
        );
        let negative = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &args,
            Some(&json!({"InputType": "JSON", "MaxItems": -1})),
        )
        .expect_err("negative");
        assert!(matches!(
            negative,
            ItemsError::MaxItemsNegative { value: -1 }
        ));
    }

    #[test]
    fn bad_readers_name_the_field() {
        let no_key = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b"}),
            Some(&json!({"InputType": "JSON"})),
        )
        .expect_err("no key");
        assert!(matches!(
            no_key,
            ItemsError::InvalidArgument { field: "Key", .. }
        ));
        let no_input_type =
            ItemReaderSpec::new(S3_GET_OBJECT, &json!({"Bucket": "b", "Key": "k"}), None)
                .expect_err("no input type");
        assert!(matches!(
            no_input_type,
            ItemsError::InvalidConfig {
                field: "InputType",
                ..
            }
        ));
        let duplicates = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b", "Key": "k"}),
            Some(&json!({"InputType": "CSV", "CSVHeaderLocation": "GIVEN", "CSVHeaders": ["a", "a"]})),
        )
        .expect_err("duplicates");
        assert_eq!(duplicates.cause(), "CSV headers cannot contain duplicates.");
        let parquet = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b", "Key": "k"}),
            Some(&json!({"InputType": "PARQUET"})),
        )
        .expect_err("parquet");
        assert!(matches!(parquet, ItemsError::Unsupported { .. }));
    }

    #[test]
    fn load_and_flatten_and_athena_manifests_name_the_data_input_type() {
        let list = ItemReaderSpec::new(
            S3_LIST_OBJECTS_V2,
            &json!({"Bucket": "b", "Prefix": "p/"}),
            Some(&json!({"Transformation": "LOAD_AND_FLATTEN", "InputType": "JSONL"})),
        )
        .expect("valid");
        assert_eq!(
            list.target(),
            &ReaderTarget::List {
                bucket: "b".into(),
                prefix: "p/".into(),
                load: Some(InputType::Jsonl)
            }
        );
        let no_input_type = ItemReaderSpec::new(
            S3_LIST_OBJECTS_V2,
            &json!({"Bucket": "b"}),
            Some(&json!({"Transformation": "LOAD_AND_FLATTEN"})),
        )
        .expect_err("no InputType");
        assert!(matches!(
            no_input_type,
            ItemsError::InvalidConfig {
                field: "InputType",
                ..
            }
        ));
        let athena = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b", "Key": "manifest.csv"}),
            Some(&json!({"ManifestType": "ATHENA_DATA", "InputType": "CSV",
                "CSVHeaderLocation": "GIVEN", "CSVHeaders": ["a"]})),
        )
        .expect("valid");
        let ReaderTarget::Object { input_type, .. } = athena.target() else {
            panic!("an object reader: {athena:?}");
        };
        assert_eq!(
            input_type,
            &InputType::AthenaManifest {
                data: Box::new(InputType::Csv {
                    headers: CsvHeaders::Given(vec!["a".into()]),
                    delimiter: CsvDelimiter::Comma
                })
            }
        );
        let athena_json = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b", "Key": "m"}),
            Some(&json!({"ManifestType": "ATHENA_DATA", "InputType": "JSON"})),
        )
        .expect_err("JSON is no Athena data format");
        assert!(matches!(
            athena_json,
            ItemsError::InvalidConfig {
                field: "InputType",
                ..
            }
        ));
        let inventory_not_manifest = ItemReaderSpec::new(
            S3_GET_OBJECT,
            &json!({"Bucket": "b", "Key": "m"}),
            Some(&json!({"ManifestType": "S3_INVENTORY", "InputType": "CSV"})),
        )
        .expect_err("S3_INVENTORY is read with InputType MANIFEST");
        assert!(matches!(
            inventory_not_manifest,
            ItemsError::InvalidConfig { .. }
        ));
    }

    #[test]
    fn another_resource_keeps_its_arguments_for_an_embedder() {
        let spec = ItemReaderSpec::new("arn:aws:states:::my:items", &json!({"Table": "t"}), None)
            .expect("kept");
        assert_eq!(spec.target(), &ReaderTarget::Other);
        assert_eq!(spec.arguments(), &json!({"Table": "t"}));
    }

    #[test]
    fn a_result_writer() {
        let spec = ResultWriterSpec::new(
            S3_PUT_OBJECT,
            &json!({"Bucket": "results", "Prefix": "jobs"}),
            Some(&json!({"Transformation": "COMPACT", "OutputType": "JSONL"})),
        )
        .expect("valid");
        assert_eq!(spec.bucket(), "results");
        assert_eq!(spec.prefix(), "jobs");
        assert_eq!(spec.transformation(), Transformation::Compact);
        assert_eq!(spec.output_type(), OutputType::Jsonl);
        let wrong = ResultWriterSpec::new(S3_GET_OBJECT, &json!({"Bucket": "b"}), None)
            .expect_err("not putObject");
        assert!(matches!(wrong, ItemsError::UnsupportedResource { .. }));
    }
}
