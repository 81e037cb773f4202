#!/usr/bin/env python3
"""One 4 KiB pwrite + fdatasync on files of different sizes, interleaved round by round.

Issue 16's c=1 guard compares a Pass-chain start with one raw fdatasync of a 4 KiB file, while
the WAL syncs a 64 MiB segment written full of zeros beforehand. This probe asks what the file
alone costs: every file here is zero-filled and synced first, then each round rewrites one
4 KiB block of each file and syncs it. Prints the p25 and p50 per file.

    python3 benches/probes/fdatasync_file_size.py [DIR] [ROUNDS]

DIR defaults to a new temporary directory (on the filesystem under test), ROUNDS to 2500.
"""

import os
import sys
import tempfile
import time

KIB = 1024
MIB = 1024 * KIB


def zero_filled(path, size_bytes):
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
    chunk = b"\0" * min(size_bytes, MIB)
    for offset in range(0, size_bytes, len(chunk)):
        os.pwrite(fd, chunk, offset)
    os.fsync(fd)
    return fd


def main():
    directory = sys.argv[1] if len(sys.argv) > 1 else tempfile.mkdtemp(prefix="fdatasync-probe-")
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 2500
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
    for _ in range(rounds):
        for name, fd, offset in files:
            started = time.perf_counter()
            os.pwrite(fd, block, offset)
            os.fdatasync(fd)
            times[name].append(time.perf_counter() - started)
    for name, samples in times.items():
        samples.sort()
        p25 = samples[len(samples) // 4] * 1e6
        p50 = samples[len(samples) // 2] * 1e6
        print(f"{name:30} p25 {p25:6.1f} us  p50 {p50:6.1f} us")


if __name__ == "__main__":
    main()
