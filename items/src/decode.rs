//! Decoders: bytes pushed in as an object streams, items taken out one at a time. One per
//! input type: a JSON array, JSON Lines, CSV rows.
//!
//! Invariants: a decoder holds only the bytes it has not turned into items yet: at most one
//! item (`ITEM_SIZE_BYTES_MAX`, else `ItemTooLarge`) plus the last chunk pushed. It never
//! asks for more input after it was told the input ended.
//!
//! Must not: read from anywhere; hold items it has handed out.

use serde_json::{Map, Value};

use crate::error::ItemsError;
use crate::limits::{CSV_HEADER_SIZE_BYTES_MAX, ITEM_SIZE_BYTES_MAX};
use crate::spec::check_csv_headers;

/// What a decoder gives on a step.
#[derive(Debug, PartialEq)]
pub(crate) enum Step {
    /// The next item.
    Item(Value),
    /// It needs more bytes (never given once the input ended).
    NeedInput,
    /// No more items.
    End,
}

/// Bytes in, items out.
pub(crate) trait Decoder: Send {
    /// Appends the next bytes of the object.
    fn push(&mut self, bytes: &[u8]);
    /// The next item; `ended` says no more bytes will come.
    fn step(&mut self, ended: bool) -> Result<Step, ItemsError>;
    /// The bytes held: those pushed and not yet handed out as items.
    fn held_bytes(&self) -> usize;
}

/// Which object a decoder reads, for its errors.
#[derive(Debug, Clone)]
pub(crate) struct Location {
    pub(crate) bucket: String,
    pub(crate) key: String,
}

/// A byte buffer with a consumed front: bytes before `start` are done with, and dropped on
/// the next push.
#[derive(Debug, Default)]
struct Buffer {
    bytes: Vec<u8>,
    start: usize,
}

impl Buffer {
    /// Drops the consumed front and appends; returns how far offsets moved back.
    fn push(&mut self, more: &[u8]) -> usize {
        let shift = self.start;
        self.bytes.drain(..shift);
        self.start = 0;
        self.bytes.extend_from_slice(more);
        shift
    }

    fn held_bytes(&self) -> usize {
        self.bytes.len() - self.start
    }
}

fn strip_bom(bytes: &[u8], first: &mut bool) -> usize {
    let skip = if *first && bytes.starts_with(b"\xEF\xBB\xBF") {
        3
    } else {
        0
    };
    if !bytes.is_empty() {
        *first = false;
    }
    skip
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum ArrayPhase {
    /// Before the `[`.
    Open,
    /// After `[`: an item or `]`.
    First,
    /// Inside an item (from `item_start`), or before one after a `,`.
    Item,
    /// After the `]`: white space only.
    Closed,
}

/// A JSON array, element by element. Elements are delimited by scanning (strings, escapes,
/// nesting), then parsed alone.
pub(crate) struct JsonArray {
    location: Location,
    buffer: Buffer,
    first_push: bool,
    phase: ArrayPhase,
    /// Where the current item starts, and how far it has been scanned.
    item_start: usize,
    scan: usize,
    depth: usize,
    in_string: bool,
    escaped: bool,
    item_index: u64,
}

impl JsonArray {
    pub(crate) fn new(location: Location) -> Self {
        JsonArray {
            location,
            buffer: Buffer::default(),
            first_push: true,
            phase: ArrayPhase::Open,
            item_start: 0,
            scan: 0,
            depth: 0,
            in_string: false,
            escaped: false,
            item_index: 0,
        }
    }

    fn skip_white_space(&mut self) -> Option<u8> {
        let bytes = &self.buffer.bytes;
        while self.buffer.start < bytes.len() && bytes[self.buffer.start].is_ascii_whitespace() {
            self.buffer.start += 1;
        }
        bytes.get(self.buffer.start).copied()
    }

    fn truncated(&self) -> ItemsError {
        ItemsError::TruncatedJson {
            bucket: self.location.bucket.clone(),
            key: self.location.key.clone(),
        }
    }
}

impl Decoder for JsonArray {
    fn push(&mut self, bytes: &[u8]) {
        let skip = strip_bom(bytes, &mut self.first_push);
        let shift = self.buffer.push(&bytes[skip..]);
        self.item_start -= shift.min(self.item_start);
        self.scan -= shift.min(self.scan);
    }

    fn step(&mut self, ended: bool) -> Result<Step, ItemsError> {
        loop {
            match self.phase {
                ArrayPhase::Open => match self.skip_white_space() {
                    None if ended => {
                        return Err(ItemsError::NotAnArray {
                            bucket: self.location.bucket.clone(),
                            key: self.location.key.clone(),
                        })
                    }
                    None => return Ok(Step::NeedInput),
                    Some(b'[') => {
                        self.buffer.start += 1;
                        self.phase = ArrayPhase::First;
                    }
                    Some(_) => {
                        return Err(ItemsError::NotAnArray {
                            bucket: self.location.bucket.clone(),
                            key: self.location.key.clone(),
                        })
                    }
                },
                ArrayPhase::First => match self.skip_white_space() {
                    None if ended => return Err(self.truncated()),
                    None => return Ok(Step::NeedInput),
                    Some(b']') => {
                        self.buffer.start += 1;
                        self.phase = ArrayPhase::Closed;
                    }
                    Some(_) => {
                        self.phase = ArrayPhase::Item;
                        self.item_start = self.buffer.start;
                        self.scan = self.buffer.start;
                    }
                },
                ArrayPhase::Item => {
                    let bytes = &self.buffer.bytes;
                    let mut delimiter = None;
                    while self.scan < bytes.len() {
                        let b = bytes[self.scan];
                        if self.in_string {
                            if self.escaped {
                                self.escaped = false;
                            } else if b == b'\\' {
                                self.escaped = true;
                            } else if b == b'"' {
                                self.in_string = false;
                            }
                        } else {
                            match b {
                                b'"' => self.in_string = true,
                                b'[' | b'{' => self.depth += 1,
                                b']' if self.depth == 0 => {
                                    delimiter = Some(b']');
                                    break;
                                }
                                b',' if self.depth == 0 => {
                                    delimiter = Some(b',');
                                    break;
                                }
                                b']' | b'}' => self.depth = self.depth.saturating_sub(1), // malformed: serde says so
                                _ => {}
                            }
                        }
                        self.scan += 1;
                    }
                    let size_bytes = self.scan - self.item_start;
                    if size_bytes > ITEM_SIZE_BYTES_MAX {
                        return Err(ItemsError::ItemTooLarge {
                            bucket: self.location.bucket.clone(),
                            key: self.location.key.clone(),
                            item_index: self.item_index,
                            limit_bytes: ITEM_SIZE_BYTES_MAX,
                        });
                    }
                    let Some(delimiter) = delimiter else {
                        if ended {
                            return Err(self.truncated());
                        }
                        return Ok(Step::NeedInput);
                    };
                    let item = serde_json::from_slice(&bytes[self.item_start..self.scan]).map_err(
                        |source| ItemsError::BadJson {
                            bucket: self.location.bucket.clone(),
                            key: self.location.key.clone(),
                            item_index: self.item_index,
                            source,
                        },
                    )?;
                    self.item_index += 1;
                    self.scan += 1;
                    self.buffer.start = self.scan;
                    self.item_start = self.scan;
                    debug_assert_eq!(self.depth, 0);
                    debug_assert!(!self.in_string);
                    if delimiter == b']' {
                        self.phase = ArrayPhase::Closed;
                    }
                    return Ok(Step::Item(item));
                }
                ArrayPhase::Closed => {
                    return match self.skip_white_space() {
                        Some(_) => Err(ItemsError::TrailingData {
                            bucket: self.location.bucket.clone(),
                            key: self.location.key.clone(),
                        }),
                        None if ended => Ok(Step::End),
                        None => Ok(Step::NeedInput),
                    };
                }
            }
        }
    }

    fn held_bytes(&self) -> usize {
        self.buffer.held_bytes()
    }
}

/// Takes the next line out of `buffer`: its bytes without `\n` or `\r\n`; at the end of the
/// input, the last line without a newline. `scan` is where the search for `\n` resumes.
fn next_line<'a>(buffer: &'a mut Buffer, scan: &mut usize, ended: bool) -> Option<&'a [u8]> {
    let bytes = &buffer.bytes;
    let from = (*scan).max(buffer.start);
    let end = match bytes[from..].iter().position(|&b| b == b'\n') {
        Some(at) => from + at,
        None if ended && buffer.start < bytes.len() => bytes.len(),
        None => {
            *scan = bytes.len();
            return None;
        }
    };
    let start = buffer.start;
    buffer.start = (end + 1).min(bytes.len());
    *scan = buffer.start;
    let line = &buffer.bytes[start..end];
    Some(line.strip_suffix(b"\r").unwrap_or(line))
}

/// JSON Lines: one JSON value per line; blank lines are skipped.
pub(crate) struct JsonLines {
    location: Location,
    buffer: Buffer,
    first_push: bool,
    scan: usize,
    line_index: u64,
}

impl JsonLines {
    pub(crate) fn new(location: Location) -> Self {
        JsonLines {
            location,
            buffer: Buffer::default(),
            first_push: true,
            scan: 0,
            line_index: 0,
        }
    }
}

impl Decoder for JsonLines {
    fn push(&mut self, bytes: &[u8]) {
        let skip = strip_bom(bytes, &mut self.first_push);
        let shift = self.buffer.push(&bytes[skip..]);
        self.scan -= shift.min(self.scan);
    }

    fn step(&mut self, ended: bool) -> Result<Step, ItemsError> {
        loop {
            let pending = self.buffer.held_bytes();
            let Some(line) = next_line(&mut self.buffer, &mut self.scan, ended) else {
                if pending > ITEM_SIZE_BYTES_MAX {
                    return Err(ItemsError::ItemTooLarge {
                        bucket: self.location.bucket.clone(),
                        key: self.location.key.clone(),
                        item_index: self.line_index,
                        limit_bytes: ITEM_SIZE_BYTES_MAX,
                    });
                }
                return Ok(if ended { Step::End } else { Step::NeedInput });
            };
            let line_index = self.line_index;
            self.line_index += 1;
            if line.len() > ITEM_SIZE_BYTES_MAX {
                return Err(ItemsError::ItemTooLarge {
                    bucket: self.location.bucket.clone(),
                    key: self.location.key.clone(),
                    item_index: line_index,
                    limit_bytes: ITEM_SIZE_BYTES_MAX,
                });
            }
            if line.iter().all(u8::is_ascii_whitespace) {
                continue;
            }
            let item = serde_json::from_slice(line).map_err(|source| ItemsError::BadJson {
                bucket: self.location.bucket.clone(),
                key: self.location.key.clone(),
                item_index: line_index,
                source,
            })?;
            return Ok(Step::Item(item));
        }
    }

    fn held_bytes(&self) -> usize {
        self.buffer.held_bytes()
    }
}

/// CSV rows as objects of strings keyed by the headers (the first row's, or given). A row
/// with fewer fields than headers gets `""` for the rest; extra fields are dropped; an empty
/// line is no row.
pub(crate) struct Csv {
    location: Location,
    reader: csv_core::Reader,
    buffer: Buffer,
    first_push: bool,
    headers: Option<Vec<String>>,
    /// The current row's field bytes and field ends, as csv_core fills them.
    output: Vec<u8>,
    output_len: usize,
    ends: Vec<usize>,
    ends_len: usize,
    row_index: u64,
}

impl Csv {
    /// `headers`: `None` to take them from the first row.
    pub(crate) fn new(location: Location, delimiter: u8, headers: Option<Vec<String>>) -> Self {
        Csv {
            location,
            reader: csv_core::ReaderBuilder::new().delimiter(delimiter).build(),
            buffer: Buffer::default(),
            first_push: true,
            headers,
            output: vec![0; 1024],
            output_len: 0,
            ends: vec![0; 16],
            ends_len: 0,
            row_index: 0,
        }
    }

    fn too_large(&self) -> ItemsError {
        ItemsError::ItemTooLarge {
            bucket: self.location.bucket.clone(),
            key: self.location.key.clone(),
            item_index: self.row_index,
            limit_bytes: ITEM_SIZE_BYTES_MAX,
        }
    }

    /// The next row's fields, or `None` when more input is needed or the rows ended
    /// (`ended`).
    fn next_row(&mut self, ended: bool) -> Result<Option<Vec<String>>, ItemsError> {
        use csv_core::ReadRecordResult;
        loop {
            let input = &self.buffer.bytes[self.buffer.start..];
            let (result, read, written, ends) = self.reader.read_record(
                input,
                &mut self.output[self.output_len..],
                &mut self.ends[self.ends_len..],
            );
            self.buffer.start += read;
            self.output_len += written;
            self.ends_len += ends;
            match result {
                ReadRecordResult::InputEmpty => {
                    if !ended {
                        return Ok(None);
                    }
                    // Ended: the next call, with no input, tells csv_core so.
                }
                ReadRecordResult::OutputFull => {
                    if self.output.len() >= ITEM_SIZE_BYTES_MAX {
                        return Err(self.too_large());
                    }
                    let len = (self.output.len() * 2).min(ITEM_SIZE_BYTES_MAX);
                    self.output.resize(len, 0);
                }
                ReadRecordResult::OutputEndsFull => {
                    if self.ends.len() >= ITEM_SIZE_BYTES_MAX {
                        return Err(self.too_large());
                    }
                    let len = self.ends.len() * 2;
                    self.ends.resize(len, 0);
                }
                ReadRecordResult::Record => {
                    let row_index = self.row_index;
                    self.row_index += 1;
                    let mut fields = Vec::with_capacity(self.ends_len);
                    let mut from = 0;
                    for &end in &self.ends[..self.ends_len] {
                        let field = std::str::from_utf8(&self.output[from..end]).map_err(|_| {
                            ItemsError::NotUtf8 {
                                bucket: self.location.bucket.clone(),
                                key: self.location.key.clone(),
                                item_index: row_index,
                            }
                        })?;
                        fields.push(field.to_string());
                        from = end;
                    }
                    self.output_len = 0;
                    self.ends_len = 0;
                    if fields.len() == 1 && fields[0].is_empty() {
                        continue; // an empty line
                    }
                    return Ok(Some(fields));
                }
                ReadRecordResult::End => return Ok(None),
            }
        }
    }
}

impl Decoder for Csv {
    fn push(&mut self, bytes: &[u8]) {
        let skip = strip_bom(bytes, &mut self.first_push);
        self.buffer.push(&bytes[skip..]);
    }

    fn step(&mut self, ended: bool) -> Result<Step, ItemsError> {
        loop {
            let Some(fields) = self.next_row(ended)? else {
                if !ended {
                    return Ok(Step::NeedInput);
                }
                if self.headers.is_none() {
                    return Err(ItemsError::CsvHeaderMissing {
                        bucket: self.location.bucket.clone(),
                        key: self.location.key.clone(),
                    });
                }
                return Ok(Step::End);
            };
            let Some(headers) = &self.headers else {
                let size_bytes: usize = fields.iter().map(|f| f.len() + 1).sum();
                if size_bytes > CSV_HEADER_SIZE_BYTES_MAX {
                    return Err(ItemsError::CsvHeaderTooLarge {
                        size_bytes,
                        limit_bytes: CSV_HEADER_SIZE_BYTES_MAX,
                    });
                }
                check_csv_headers(&fields)?;
                self.headers = Some(fields);
                continue;
            };
            let mut item = Map::with_capacity(headers.len());
            let mut fields = fields.into_iter();
            for header in headers {
                let value = fields.next().unwrap_or_default();
                item.insert(header.clone(), Value::String(value));
            }
            return Ok(Step::Item(Value::Object(item)));
        }
    }

    fn held_bytes(&self) -> usize {
        self.buffer.held_bytes() + self.output_len
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn location() -> Location {
        Location {
            bucket: "b".into(),
            key: "k".into(),
        }
    }

    /// Feeds `input` in chunks of `chunk` bytes and collects every item.
    fn decode(
        decoder: &mut dyn Decoder,
        input: &[u8],
        chunk: usize,
    ) -> Result<Vec<Value>, ItemsError> {
        let mut chunks = input.chunks(chunk);
        let mut ended = false;
        let mut items = Vec::new();
        loop {
            match decoder.step(ended)? {
                Step::Item(item) => items.push(item),
                Step::End => return Ok(items),
                Step::NeedInput => {
                    assert!(!ended, "a decoder asked for input after the end");
                    match chunks.next() {
                        Some(bytes) => decoder.push(bytes),
                        None => ended = true,
                    }
                }
            }
        }
    }

    #[test]
    fn a_json_array_in_any_chunking() {
        let input = br#" [ {"a": "x,]}\"["}, [1, [2]], "s", 3.5, null, {"n": {"m": []}} ] "#;
        let expected = vec![
            json!({"a": "x,]}\"["}),
            json!([1, [2]]),
            json!("s"),
            json!(3.5),
            json!(null),
            json!({"n": {"m": []}}),
        ];
        for chunk in [1, 2, 3, 7, 1000] {
            let items = decode(&mut JsonArray::new(location()), input, chunk).expect("decodes");
            assert_eq!(items, expected, "chunks of {chunk}");
        }
        assert_eq!(
            decode(&mut JsonArray::new(location()), b"[]", 1).expect("empty"),
            Vec::<Value>::new()
        );
        let bom = decode(&mut JsonArray::new(location()), b"\xEF\xBB\xBF[1]", 100).expect("bom");
        assert_eq!(bom, vec![json!(1)]);
    }

    #[test]
    fn json_that_is_no_array_or_broken_is_refused() {
        let object =
            decode(&mut JsonArray::new(location()), br#"{"a": 1}"#, 4).expect_err("object");
        assert_eq!(object.cause(), "Attempting to map over non-iterable node.");
        let truncated =
            decode(&mut JsonArray::new(location()), b"[1, 2", 4).expect_err("truncated");
        assert!(matches!(truncated, ItemsError::TruncatedJson { .. }));
        let bad = decode(&mut JsonArray::new(location()), b"[1, tru]", 4).expect_err("bad");
        assert!(
            matches!(bad, ItemsError::BadJson { item_index: 1, .. }),
            "{bad}"
        );
        let trailing = decode(&mut JsonArray::new(location()), b"[1] x", 4).expect_err("trailing");
        assert!(matches!(trailing, ItemsError::TrailingData { .. }));
        let empty_item = decode(&mut JsonArray::new(location()), b"[1,]", 4).expect_err("[1,]");
        assert!(matches!(
            empty_item,
            ItemsError::BadJson { item_index: 1, .. }
        ));
        let large = format!("[\"{}\"]", "x".repeat(ITEM_SIZE_BYTES_MAX));
        let large =
            decode(&mut JsonArray::new(location()), large.as_bytes(), 8192).expect_err("large");
        assert!(matches!(
            large,
            ItemsError::ItemTooLarge { item_index: 0, .. }
        ));
    }

    #[test]
    fn json_lines_skip_blank_lines_and_take_a_last_line_without_newline() {
        let input = b"{\"a\":1}\r\n\n  \n[2]\n\"three\"";
        for chunk in [1, 3, 100] {
            let items = decode(&mut JsonLines::new(location()), input, chunk).expect("decodes");
            assert_eq!(items, vec![json!({"a": 1}), json!([2]), json!("three")]);
        }
        let bad = decode(&mut JsonLines::new(location()), b"1\n{\n", 2).expect_err("bad");
        assert!(
            matches!(bad, ItemsError::BadJson { item_index: 1, .. }),
            "{bad}"
        );
    }

    #[test]
    fn csv_rows_as_aws_reads_them() {
        // The recorded cases: missing fields are "", extra fields are dropped, values stay
        // strings, quoted fields may hold the delimiter and newlines.
        let input = b"Col1,Col2,Col3\nValue1,Value2,Value3\n,,,\ntrue,1,'HelloWorld'\n   \n\"a,b\",\"line\nbreak\",\"q\"\"q\"\n";
        for chunk in [1, 5, 1000] {
            let items =
                decode(&mut Csv::new(location(), b',', None), input, chunk).expect("decodes");
            assert_eq!(
                items,
                vec![
                    json!({"Col1": "Value1", "Col2": "Value2", "Col3": "Value3"}),
                    json!({"Col1": "", "Col2": "", "Col3": ""}),
                    json!({"Col1": "true", "Col2": "1", "Col3": "'HelloWorld'"}),
                    json!({"Col1": "   ", "Col2": "", "Col3": ""}),
                    json!({"Col1": "a,b", "Col2": "line\nbreak", "Col3": "q\"q"}),
                ],
                "chunks of {chunk}"
            );
        }
        let given = decode(
            &mut Csv::new(location(), b'|', Some(vec!["H1".into()])),
            b"a|b\nc\n",
            2,
        )
        .expect("given");
        assert_eq!(given, vec![json!({"H1": "a"}), json!({"H1": "c"})]);
    }

    #[test]
    fn csv_errors() {
        let duplicates = decode(&mut Csv::new(location(), b',', None), b"a,a\n1,2\n", 100)
            .expect_err("duplicates");
        assert_eq!(duplicates.cause(), "CSV headers cannot contain duplicates.");
        let empty = decode(&mut Csv::new(location(), b',', None), b"", 100).expect_err("empty");
        assert!(matches!(empty, ItemsError::CsvHeaderMissing { .. }));
        let not_utf8 =
            decode(&mut Csv::new(location(), b',', None), b"a\n\xff\n", 100).expect_err("not utf8");
        assert!(matches!(
            not_utf8,
            ItemsError::NotUtf8 { item_index: 1, .. }
        ));
        let wide_header = format!("{}\n", "h".repeat(CSV_HEADER_SIZE_BYTES_MAX + 1));
        let wide = decode(
            &mut Csv::new(location(), b',', None),
            wide_header.as_bytes(),
            4096,
        )
        .expect_err("wide header");
        assert!(matches!(wide, ItemsError::CsvHeaderTooLarge { .. }));
    }

    /// Arbitrary JSON values: scalars, strings with quotes, escapes and brackets, nesting.
    fn json_value() -> impl proptest::strategy::Strategy<Value = Value> {
        use proptest::prelude::*;
        let leaf = prop_oneof![
            Just(Value::Null),
            any::<bool>().prop_map(Value::from),
            any::<i64>().prop_map(Value::from),
            "[\\[\\]{},\"\\\\a-z \\n]{0,12}".prop_map(Value::from),
        ];
        leaf.prop_recursive(4, 32, 4, |inner| {
            prop_oneof![
                proptest::collection::vec(inner.clone(), 0..4).prop_map(Value::Array),
                proptest::collection::btree_map("[a-z,\\]\"]{0,4}", inner, 0..4)
                    .prop_map(|m| Value::Object(m.into_iter().collect())),
            ]
        })
    }

    proptest::proptest! {
        /// A JSON array, however chunked, yields its elements; JSON Lines of the same values
        /// too.
        #[test]
        fn any_array_in_any_chunking(items in proptest::collection::vec(json_value(), 0..8), chunk in 1usize..40) {
            let array = serde_json::to_vec(&items).expect("json");
            let decoded = decode(&mut JsonArray::new(location()), &array, chunk).expect("decodes");
            proptest::prop_assert_eq!(&decoded, &items);
            let mut lines = Vec::new();
            for item in &items {
                lines.extend(serde_json::to_vec(item).expect("json"));
                lines.push(b'\n');
            }
            let decoded = decode(&mut JsonLines::new(location()), &lines, chunk).expect("decodes");
            proptest::prop_assert_eq!(&decoded, &items);
        }

        /// No input panics a decoder: every one ends in items, the end, or a typed error.
        #[test]
        fn no_input_panics_a_decoder(input in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..200), chunk in 1usize..20) {
            let _ = decode(&mut JsonArray::new(location()), &input, chunk);
            let _ = decode(&mut JsonLines::new(location()), &input, chunk);
            let _ = decode(&mut Csv::new(location(), b',', None), &input, chunk);
            let _ = decode(&mut Csv::new(location(), b';', Some(vec!["a".into()])), &input, chunk);
        }

        /// Bytes made of JSON's structural characters, the likeliest to confuse the scanner.
        #[test]
        fn no_structural_soup_panics_the_array_decoder(input in "[\\[\\]{},\" \\\\0-9]{0,60}", chunk in 1usize..10) {
            let _ = decode(&mut JsonArray::new(location()), input.as_bytes(), chunk);
        }
    }
}
