#!/usr/bin/env python3
"""Whether work between two syncs slows the second: the c=1 guard's chain syncs after a start.

Issue 16's c=1 guard times one raw 4 KiB pwrite + fdatasync, then a Pass-chain start, whose
~50,000 instructions run between the raw sync and the log's own fdatasync. Under an LD_PRELOAD
timer the log's fdatasync took 4-6 us longer than the raw one in the same round, while a probe
that does nothing in between (`fdatasync_file_size.py`) finds appends and the raw block equal.

This probe repeats the guard's round with the start replaced by touching N KiB of memory (one
write per 64-byte line, which evicts as much of the CPU caches as N allows): a raw 4 KiB
overwrite + fdatasync of one file, the N KiB touched, then a 1,028-byte append + fdatasync in a
64 MiB zero-filled file. Prints, per N, the p50 of each sync and of their difference in a round.

    python3 benches/probes/fdatasync_after_eviction.py [DIR] [ROUNDS]

DIR defaults to a new temporary directory, removed when done (give DIR on the filesystem under
test; files written there stay), ROUNDS to 1500.
"""

import os
import statistics
import sys
import tempfile
import time

KIB = 1024
MIB = 1024 * KIB
LINE = 64
RECORD = 1028
TOUCHED_KIB = [0, 64, 256, 1024]


def zero_filled(path, size_bytes, chunk_bytes=16 * KIB):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    chunk = b"\0" * chunk_bytes
    for offset in range(0, size_bytes, chunk_bytes):
        os.pwrite(fd, chunk, offset)
    os.fsync(fd)
    return fd


def run(directory, rounds):
    raw = os.open(os.path.join(directory, "raw"), os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    block = b"\x07" * (4 * KIB)
    os.pwrite(raw, block, 0)
    os.fsync(raw)
    record = b"r" * RECORD
    print(f"{'touched':>10}  {'raw sync p50':>12}  {'append sync p50':>15}  {'difference p50':>14}")
    for touched_kib in TOUCHED_KIB:
        log = zero_filled(os.path.join(directory, f"log-{touched_kib}"), 64 * MIB)
        memory = bytearray(max(touched_kib * KIB, LINE))
        lines = len(memory[::LINE])
        ones = b"\x01" * lines
        offset = 64
        raw_us, append_us, difference_us = [], [], []
        for _ in range(rounds):
            os.pwrite(raw, block, 0)
            started = time.perf_counter()
            os.fdatasync(raw)
            raw_sync = time.perf_counter() - started
            if touched_kib:
                # One write per cache line (a slice assignment: a C loop, no Python per line).
                memory[::LINE] = ones
            os.pwrite(log, record, offset)
            offset += RECORD
            started = time.perf_counter()
            os.fdatasync(log)
            append_sync = time.perf_counter() - started
            raw_us.append(raw_sync * 1e6)
            append_us.append(append_sync * 1e6)
            difference_us.append((append_sync - raw_sync) * 1e6)
        os.close(log)
        print(
            f"{touched_kib:>6} KiB  {statistics.median(raw_us):>9.1f} us"
            f"  {statistics.median(append_us):>12.1f} us  {statistics.median(difference_us):>11.1f} us"
        )
    os.close(raw)


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 and sys.argv[1] else None
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 1500
    if directory is None:
        with tempfile.TemporaryDirectory(prefix="statelog-eviction-probe-") as temporary:
            run(temporary, rounds)
    else:
        run(directory, rounds)


if __name__ == "__main__":
    main()
