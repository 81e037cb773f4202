#!/usr/bin/env python3
"""One 4 KiB pwrite + fdatasync on files of different sizes, interleaved round by round.

Issue 16's c=1 guard compares a Pass-chain start with one raw fdatasync of a 4 KiB file, while
the WAL syncs a 64 MiB segment written full of zeros beforehand. This probe asks what the file
alone costs: every file here is zero-filled and synced first, then each round rewrites one
4 KiB block of each file and syncs it. Prints the p25 and p50 per file.

Two more cases write as the log does, one commit after the other in a 64 MiB file: 1,013 bytes
(a 10-state Pass/Choice execution's batch) at the next offset each round, through the page
cache then fdatasync; and the same appends as O_DIRECT writes of the 4 KiB blocks they touch
(the tail block written again with the new bytes), then fdatasync.

Every file is zero-filled 16 KiB at a time, as the WAL fills its segments (`ZERO_FILL_CHUNK_BYTES`),
but one more case appends into a segment filled 1 MiB at a time: the page cache keeps those pages
in large folios, and each small append into them cost more, in its pwrite and in its fdatasync.

    python3 benches/probes/fdatasync_file_size.py [DIR] [ROUNDS]

DIR defaults to a new temporary directory, removed when done (give DIR on the filesystem under
test; files written there stay), ROUNDS to 2500.
"""

import mmap
import os
import sys
import tempfile
import time

KIB = 1024
MIB = 1024 * KIB
BLOCK = 4 * KIB


def zero_filled(path, size_bytes, chunk_bytes=16 * KIB):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    chunk = b"\0" * min(size_bytes, chunk_bytes)
    for offset in range(0, size_bytes, len(chunk)):
        os.pwrite(fd, chunk, offset)
    os.fsync(fd)
    return fd


def main():
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2500
    if len(sys.argv) > 1 and sys.argv[1]:
        measure(sys.argv[1], rounds)
    else:
        # A directory of our own goes when done: the files hold 200 MiB.
        with tempfile.TemporaryDirectory(prefix="fdatasync-probe-") as directory:
            measure(directory, rounds)


def measure(directory, rounds):
    block = b"\7" * (4 * KIB)
    cases = [
        ("4 KiB file, block at 0", 4 * KIB, 0),
        ("16 KiB file, block at 8 KiB", 16 * KIB, 8 * KIB),
        ("1 MiB file, block at 8 KiB", MIB, 8 * KIB),
        ("64 MiB file, block at 0", 64 * MIB, 0),
        ("64 MiB file, block at 8 KiB", 64 * MIB, 8 * KIB),
    ]
    files = [
        (name, zero_filled(os.path.join(directory, f"file{i}"), size), offset)
        for i, (name, size, offset) in enumerate(cases)
    ]
    times = {name: [] for name, _, _ in files}
    appended = zero_filled(os.path.join(directory, "appended"), 64 * MIB)
    appended_1m = zero_filled(os.path.join(directory, "appended-1m"), 64 * MIB, MIB)
    direct_path = os.path.join(directory, "direct")
    os.close(zero_filled(direct_path, 64 * MIB))
    direct = os.open(direct_path, os.O_RDWR | os.O_DIRECT)
    record = b"\5" * 1013
    # O_DIRECT needs an aligned buffer: an anonymous map is page-aligned. It holds the tail
    # blocks as they are on disk after each append.
    tail = mmap.mmap(-1, 2 * BLOCK)
    appends = (
        "64 MiB file, 1013 B appends",
        "64 MiB file, O_DIRECT appends",
        "filled 1 MiB at a time, appends",
    )
    for name in appends:
        times[name] = []
    offset = 0
    for _ in range(rounds):
        for name, fd, at in files:
            started = time.perf_counter()
            os.pwrite(fd, block, at)
            os.fdatasync(fd)
            times[name].append(time.perf_counter() - started)
        started = time.perf_counter()
        os.pwrite(appended, record, offset)
        os.fdatasync(appended)
        times[appends[0]].append(time.perf_counter() - started)
        started = time.perf_counter()
        os.pwrite(appended_1m, record, offset)
        os.fdatasync(appended_1m)
        times[appends[2]].append(time.perf_counter() - started)
        block_start = offset // BLOCK * BLOCK
        end = offset + len(record)
        blocks = -(-(end - block_start) // BLOCK)
        started = time.perf_counter()
        tail[offset - block_start : end - block_start] = record
        os.pwritev(direct, [memoryview(tail)[: blocks * BLOCK]], block_start)
        os.fdatasync(direct)
        times[appends[1]].append(time.perf_counter() - started)
        if end // BLOCK > block_start // BLOCK:
            # The next append starts in the second block: it becomes the first.
            tail[:BLOCK] = tail[BLOCK : 2 * BLOCK]
            tail[BLOCK:] = bytes(BLOCK)
        offset = end
    for name, samples in times.items():
        samples.sort()
        p25 = samples[len(samples) // 4] * 1e6
        p50 = samples[len(samples) // 2] * 1e6
        print(f"{name:31} p25 {p25:6.1f} us  p50 {p50:6.1f} us")


if __name__ == "__main__":
    main()
