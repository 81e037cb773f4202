#!/usr/bin/env bash
# The Restate peer of benches/concurrency.rs.
#
#   benches/peers/restate/run.sh          install, then run the concurrency bench with Restate
#   benches/peers/restate/run.sh install  only `npm ci` into this directory
#   benches/peers/restate/run.sh up       install, start restate-server and the steps service
#                                         on loopback, register it, and wait (Ctrl-C stops all)
#
# Every process this script starts is stopped when it exits, on failure too (trap). The bench
# itself starts and stops its own Restate (STATELOG_BENCH_RESTATE=1); `up` is for driving the
# ingress by hand, e.g. `curl -X POST 127.0.0.1:28080/steps/run -d '{"n":0}'`.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../../.." && pwd)"
mode="${1:-bench}"

install() {
    command -v node >/dev/null || { echo "run.sh: node is not on PATH" >&2; exit 2; }
    command -v npm >/dev/null || { echo "run.sh: npm is not on PATH" >&2; exit 2; }
    # The exact versions of package-lock.json, in this directory only (not the repo root).
    # Install scripts are not run: the packages need none (the server binary ships in its
    # platform package), and one dependency's postinstall only reports the download.
    (cd "$here" && npm ci --ignore-scripts --no-audit --no-fund)
}

server_binary() {
    local arch
    case "$(uname -m)" in
        x86_64) arch=x64 ;;
        aarch64 | arm64) arch=arm64 ;;
        *) echo "run.sh: no restate-server build for $(uname -m)" >&2; exit 2 ;;
    esac
    local os
    case "$(uname -s)" in
        Linux) os=linux ;;
        Darwin) os=darwin ;;
        *) echo "run.sh: no restate-server build for $(uname -s)" >&2; exit 2 ;;
    esac
    echo "$here/node_modules/@restatedev/restate-server-$os-$arch/bin/restate-server"
}

up() {
    local binary dir pids=()
    binary="$(server_binary)"
    dir="$(mktemp -d)"
    cleanup() {
        local pid
        for pid in "${pids[@]}"; do
            kill "$pid" 2>/dev/null || true
        done
        for pid in "${pids[@]}"; do
            wait "$pid" 2>/dev/null || true
        done
        rm -rf "$dir"
    }
    trap cleanup EXIT
    trap 'exit 130' INT TERM

    # Ports from restate.toml (node 25122, admin 29070, ingress 28080); the service's is 29080.
    "$binary" --config-file "$here/restate.toml" --base-dir "$dir/data" \
        --listen-mode tcp --no-logo >"$dir/server.log" 2>&1 &
    pids+=("$!")
    (cd "$here" && SERVICE_PORT=29080 RESTATE_LOGGING=WARN exec node service.js) \
        >"$dir/service.log" 2>&1 &
    pids+=("$!")

    local attempt
    for attempt in $(seq 1 600); do
        curl -sf http://127.0.0.1:29070/health >/dev/null && break
        [ "$attempt" = 600 ] && { tail -20 "$dir/server.log" >&2; exit 1; }
        sleep 0.1
    done
    for attempt in $(seq 1 600); do
        curl -sf -X POST http://127.0.0.1:29070/deployments \
            -H 'content-type: application/json' \
            -d '{"uri": "http://127.0.0.1:29080"}' >/dev/null && break
        [ "$attempt" = 600 ] && { tail -20 "$dir/service.log" >&2; exit 1; }
        sleep 0.1
    done
    echo "Restate is up: ingress http://127.0.0.1:28080/steps/run, admin http://127.0.0.1:29070"
    echo "logs in $dir; Ctrl-C stops the server and the service"
    wait -n "${pids[@]}"
    echo "run.sh: a process ended:" >&2
    tail -20 "$dir/server.log" "$dir/service.log" >&2
    exit 1
}

case "$mode" in
    install) install ;;
    up) install; up ;;
    bench)
        install
        cd "$repo"
        STATELOG_BENCH_RESTATE=1 exec cargo bench --bench concurrency
        ;;
    *) echo "usage: run.sh [bench|install|up]" >&2; exit 2 ;;
esac
