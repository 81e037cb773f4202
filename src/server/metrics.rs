//! metrics: the server's own counters and the Prometheus text of `GET /metrics`.
//!
//! Owns request counts by operation and outcome, the HTTP layer's time, executions started, and
//! connections: open now, and closed by [`CloseReason`].
//! Invariants: the label sets are bounded (operations come from the fixed [`Operation`] list or
//! the word `unknown`; outcomes are AWS error names, a fixed set), so the map cannot grow
//! without bound whatever clients send. Must not: block a request on anything but a short lock.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};

use parking_lot::Mutex;

use super::backend::MetricSample;

/// Why the server closed a connection (or `Closed`: the client or HTTP ended it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CloseReason {
    /// The client closed it, or HTTP did (`Connection: close`, a protocol error).
    Closed,
    /// No byte of a request within the keep-alive idle timeout.
    IdleTimeout,
    /// A request head took longer than the header-read timeout.
    HeaderTimeout,
    /// A request body took longer than the body timeout.
    BodyTimeout,
    /// Closed to make room for a new connection (server or peer at its cap).
    Evicted,
    /// A new connection refused: its peer was at its cap with every connection busy.
    PeerCap,
}

impl CloseReason {
    const ALL: [CloseReason; 6] = [
        CloseReason::Closed,
        CloseReason::IdleTimeout,
        CloseReason::HeaderTimeout,
        CloseReason::BodyTimeout,
        CloseReason::Evicted,
        CloseReason::PeerCap,
    ];

    /// The label value in `statelog_http_connections_closed_total`.
    pub fn as_str(self) -> &'static str {
        match self {
            CloseReason::Closed => "closed",
            CloseReason::IdleTimeout => "idle_timeout",
            CloseReason::HeaderTimeout => "header_timeout",
            CloseReason::BodyTimeout => "body_timeout",
            CloseReason::Evicted => "evicted",
            CloseReason::PeerCap => "peer_cap",
        }
    }
}

/// The server's counters.
#[derive(Debug, Default)]
pub struct Metrics {
    requests: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
    request_micros_sum: AtomicU64,
    request_count: AtomicU64,
    executions_started: AtomicU64,
    connections_opened: AtomicU64,
    connections_closed: [AtomicU64; CloseReason::ALL.len()],
}

impl Metrics {
    /// Counts one answered request: `operation` is an AWS operation name or `unknown`, `outcome`
    /// is `ok` or the AWS error name; `micros` is the time spent answering it.
    pub fn record_request(&self, operation: &'static str, outcome: &'static str, micros: u64) {
        *self
            .requests
            .lock()
            .entry((operation, outcome))
            .or_insert(0) += 1;
        self.request_micros_sum.fetch_add(micros, Ordering::Relaxed);
        self.request_count.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one execution started through the API.
    pub fn record_execution_started(&self) {
        self.executions_started.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one connection admitted.
    pub fn record_connection_opened(&self) {
        self.connections_opened.fetch_add(1, Ordering::Relaxed);
    }

    /// Counts one connection closed (or refused) for `reason`.
    pub fn record_connection_closed(&self, reason: CloseReason) {
        self.connections_closed[reason as usize].fetch_add(1, Ordering::Relaxed);
    }

    /// How many connections were closed for `reason`.
    pub fn connections_closed(&self, reason: CloseReason) -> u64 {
        self.connections_closed[reason as usize].load(Ordering::Relaxed)
    }

    /// How many requests were answered with `outcome` for `operation`.
    pub fn requests(&self, operation: &str, outcome: &str) -> u64 {
        self.requests
            .lock()
            .iter()
            .filter(|((op, out), _)| *op == operation && *out == outcome)
            .map(|(_, n)| *n)
            .sum()
    }

    /// The Prometheus text exposition of these counters followed by `engine`'s samples.
    pub fn render(&self, engine: &[MetricSample]) -> String {
        let mut out = String::new();
        out.push_str("# HELP statelog_http_requests_total API requests answered, by operation and outcome.\n");
        out.push_str("# TYPE statelog_http_requests_total counter\n");
        for ((operation, outcome), count) in self.requests.lock().iter() {
            let _ = writeln!(
                out,
                "statelog_http_requests_total{{operation=\"{operation}\",outcome=\"{outcome}\"}} {count}"
            );
        }
        let count = self.request_count.load(Ordering::Relaxed);
        let micros = self.request_micros_sum.load(Ordering::Relaxed);
        out.push_str("# HELP statelog_http_request_seconds Time spent answering API requests.\n");
        out.push_str("# TYPE statelog_http_request_seconds summary\n");
        let _ = writeln!(
            out,
            "statelog_http_request_seconds_sum {}",
            micros as f64 / 1e6
        );
        let _ = writeln!(out, "statelog_http_request_seconds_count {count}");
        out.push_str("# HELP statelog_api_executions_started_total Executions started through the HTTP API.\n");
        out.push_str("# TYPE statelog_api_executions_started_total counter\n");
        let _ = writeln!(
            out,
            "statelog_api_executions_started_total {}",
            self.executions_started.load(Ordering::Relaxed)
        );
        self.render_connections(&mut out);
        let mut described = std::collections::BTreeSet::new();
        for sample in engine {
            // A histogram's `_bucket`, `_sum` and `_count` samples share one family header.
            let family = if sample.kind == "histogram" {
                ["_bucket", "_sum", "_count"]
                    .iter()
                    .find_map(|suffix| sample.name.strip_suffix(suffix))
                    .unwrap_or(&sample.name)
            } else {
                &sample.name
            };
            if described.insert(family.to_owned()) {
                let _ = writeln!(out, "# HELP {family} {}", sample.help);
                let _ = writeln!(out, "# TYPE {family} {}", sample.kind);
            }
            let labels: Vec<String> = sample
                .labels
                .iter()
                .map(|(k, v)| format!("{k}=\"{}\"", escape_label(v)))
                .collect();
            if labels.is_empty() {
                let _ = writeln!(out, "{} {}", sample.name, sample.value);
            } else {
                let _ = writeln!(
                    out,
                    "{}{{{}}} {}",
                    sample.name,
                    labels.join(","),
                    sample.value
                );
            }
        }
        out
    }
}

impl Metrics {
    fn render_connections(&self, out: &mut String) {
        let opened = self.connections_opened.load(Ordering::Relaxed);
        // Refused connections were never opened, so they do not count against the open ones.
        let closed: u64 = CloseReason::ALL
            .iter()
            .filter(|r| **r != CloseReason::PeerCap)
            .map(|r| self.connections_closed(*r))
            .sum();
        out.push_str("# HELP statelog_http_connections_open HTTP connections open now.\n");
        out.push_str("# TYPE statelog_http_connections_open gauge\n");
        let _ = writeln!(
            out,
            "statelog_http_connections_open {}",
            opened.saturating_sub(closed)
        );
        out.push_str("# HELP statelog_http_connections_closed_total HTTP connections closed (or refused), by reason.\n");
        out.push_str("# TYPE statelog_http_connections_closed_total counter\n");
        for reason in CloseReason::ALL {
            let _ = writeln!(
                out,
                "statelog_http_connections_closed_total{{reason=\"{}\"}} {}",
                reason.as_str(),
                self.connections_closed(reason)
            );
        }
    }
}

fn escape_label(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn renders_counts_and_engine_samples() {
        let metrics = Metrics::default();
        metrics.record_request("StartExecution", "ok", 10);
        metrics.record_request("StartExecution", "ok", 20);
        metrics.record_request("unknown", "UnknownOperationException", 5);
        metrics.record_execution_started();
        assert_eq!(metrics.requests("StartExecution", "ok"), 2);
        let text = metrics.render(&[MetricSample {
            name: "statelog_executions_closed_total".into(),
            kind: "counter",
            help: "Closed executions by status.".into(),
            labels: vec![("status".into(), "SUCCEEDED".into())],
            value: 3.0,
        }]);
        assert!(text.contains(
            "statelog_http_requests_total{operation=\"StartExecution\",outcome=\"ok\"} 2"
        ));
        assert!(text.contains("statelog_http_request_seconds_count 3"));
        assert!(text.contains("statelog_api_executions_started_total 1"));
        assert!(text.contains("statelog_executions_closed_total{status=\"SUCCEEDED\"} 3"));
        assert!(text.contains("# TYPE statelog_executions_closed_total counter"));
    }

    #[test]
    fn histogram_samples_share_one_family_header() {
        let sample = |name: &str, le: Option<&str>, value| MetricSample {
            name: name.into(),
            kind: "histogram",
            help: "Commit time.".into(),
            labels: le.map_or_else(Vec::new, |le| vec![("le".into(), le.into())]),
            value,
        };
        let text = Metrics::default().render(&[
            sample("statelog_wal_commit_seconds_bucket", Some("0.001"), 1.0),
            sample("statelog_wal_commit_seconds_bucket", Some("+Inf"), 2.0),
            sample("statelog_wal_commit_seconds_sum", None, 0.5),
            sample("statelog_wal_commit_seconds_count", None, 2.0),
        ]);
        assert_eq!(
            text.matches("# TYPE statelog_wal_commit_seconds histogram")
                .count(),
            1,
            "{text}"
        );
        assert!(!text.contains("# TYPE statelog_wal_commit_seconds_bucket"));
        assert!(text.contains("statelog_wal_commit_seconds_bucket{le=\"+Inf\"} 2"));
        assert!(text.contains("statelog_wal_commit_seconds_count 2"));
    }
}
