//! health: `GET /health` for an operator's supervisor, and the start-up check that the data
//! directory has room for a log segment.
//!
//! `/health` is unauthenticated, so it says only what a supervisor needs: 200
//! `{"status":"ok"}`, or 503 `{"status":"poisoned","reason":...}` once an engine's log is
//! poisoned (a failed write or sync of log data: nothing more is acknowledged until a restart).
//! The reason names the failed operation and the OS's words; no path, account or secret (the
//! server's own log has the detail). Must not: touch an engine beyond asking whether its log is
//! poisoned, or open one.

use std::io::Write;
use std::path::Path;
use std::sync::Arc;

use axum::extract::State;
use axum::http::{header, StatusCode};
use axum::response::{IntoResponse, Response};
use serde_json::json;

use super::{Backend, ServerState};

/// The zero-filled chunk the disk-room check writes at a time, in bytes.
const ROOM_CHECK_CHUNK_BYTES: usize = 1024 * 1024;

/// `GET /health`: 200 `{"status":"ok"}`, or 503 with the poisoned state and a short reason.
pub async fn health<B: Backend>(State(state): State<Arc<ServerState<B>>>) -> Response {
    let (status, body) = match state.backend.log_poisoned() {
        None => (StatusCode::OK, json!({"status": "ok"})),
        Some(reason) => (
            StatusCode::SERVICE_UNAVAILABLE,
            json!({"status": "poisoned", "reason": reason}),
        ),
    };
    (
        status,
        [(header::CONTENT_TYPE, "application/json")],
        body.to_string(),
    )
        .into_response()
}

/// Checks that `dir` (created if missing) has room for one log segment of `size_bytes`: it
/// writes that many zeros to a probe file, syncs it and removes it. A server that cannot make
/// its first segment refuses to start instead of reporting "listening" and failing every write.
/// The error names the directory, the bytes needed and what the OS said.
pub fn check_room_for_segment(dir: &Path, size_bytes: u64) -> Result<(), String> {
    let probe = dir.join(".statelog-room-check");
    let result = write_probe(dir, &probe, size_bytes);
    // Best effort either way: the probe only measured the room.
    let _ = std::fs::remove_file(&probe);
    result.map_err(|e| {
        format!(
            "the data directory {} has no room for a log segment: it needs {size_bytes} bytes \
             ({} MiB) free: {e}",
            dir.display(),
            size_bytes.div_ceil(1024 * 1024)
        )
    })
}

fn write_probe(dir: &Path, probe: &Path, size_bytes: u64) -> std::io::Result<()> {
    std::fs::create_dir_all(dir)?;
    let mut file = std::fs::File::create(probe)?;
    let zeros = vec![0u8; ROOM_CHECK_CHUNK_BYTES];
    let mut written = 0u64;
    while written < size_bytes {
        let len = (size_bytes - written).min(ROOM_CHECK_CHUNK_BYTES as u64) as usize;
        file.write_all(&zeros[..len])?;
        written += len as u64;
    }
    // Some file systems report a full disk only at the sync.
    file.sync_all()
}
