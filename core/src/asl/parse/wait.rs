//! The Wait state's fields: exactly one of `Seconds`, `Timestamp`, `SecondsPath`,
//! `TimestampPath`.

use super::*;

impl Ctx<'_> {
    pub(super) fn wait(&mut self, obj: Obj<'_>, node: &mut Node) -> Option<WaitState> {
        let present: Vec<&str> = ["Seconds", "Timestamp", "SecondsPath", "TimestampPath"]
            .into_iter()
            .filter(|k| obj.get(k).is_some())
            .collect();
        let wait = match present.as_slice() {
            [one] => match *one {
                "Seconds" => self
                    .uint(obj, "Seconds", 0, SECONDS_MAX)
                    .map(WaitFor::Seconds),
                "Timestamp" => {
                    let text = self.string(obj, "Timestamp");
                    match text.as_deref().map(|t| (t, parse_timestamp(t))) {
                        Some((_, Some(t))) => Some(WaitFor::Timestamp(t)),
                        Some((t, None)) => {
                            self.schema(
                                &obj.ptr("Timestamp"),
                                format!("'Timestamp' must be an RFC 3339 timestamp such as 2016-03-14T01:59:00Z, not '{t}'"),
                            );
                            None
                        }
                        None => None,
                    }
                }
                "SecondsPath" => self.reference(obj, "SecondsPath").map(WaitFor::SecondsPath),
                _ => self
                    .reference(obj, "TimestampPath")
                    .map(WaitFor::TimestampPath),
            },
            [] => {
                self.schema(obj.at, "a Wait state needs one of 'Seconds', 'Timestamp', 'SecondsPath', 'TimestampPath'");
                None
            }
            many => {
                self.schema(
                    obj.at,
                    format!(
                        "a Wait state takes exactly one of its wait fields, not {}",
                        many.join(", ")
                    ),
                );
                None
            }
        };
        let next = self.transition(obj, node);
        Some(WaitState {
            wait: wait?,
            next: next?,
        })
    }
}
