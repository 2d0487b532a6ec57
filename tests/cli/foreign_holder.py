#!/usr/bin/env python3
"""Another program on the machine, for checking that the suite holds on a
shared host (issue 26, item 8): it holds PAGES huge pages of 2 MiB (a hugetlb
memfd mapped shared, every page written) and FILES files /dev/shm/PREFIX<n>,
prints "ready" and waits. On SIGTERM or SIGINT it checks that its pages and
files are as it wrote them, removes its files and exits 0 if they were, 1 if
not (saying what changed). Not run by ctest.

    python3 tests/cli/foreign_holder.py [--pages=8] [--files=3] [--prefix=other_holder_]
"""
import argparse
import mmap
import os
import signal
import sys
import time

PAGE = 2 << 20


def pattern(i):
    return (b"page %08d of another program " % i).ljust(64, b".")


def hugetlb_kb():
    """KiB of this process's huge pages, faulted in (its own smaps)."""
    kb = 0
    with open("/proc/self/smaps") as f:
        for line in f:
            if line.startswith(("Shared_Hugetlb:", "Private_Hugetlb:")):
                kb += int(line.split()[1])
    return kb


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--pages", type=int, default=8)
    ap.add_argument("--files", type=int, default=3)
    ap.add_argument("--prefix", default="other_holder_")
    a = ap.parse_args()
    fd = os.memfd_create("other_holder", os.MFD_HUGETLB)
    os.ftruncate(fd, a.pages * PAGE)
    m = mmap.mmap(fd, a.pages * PAGE, mmap.MAP_SHARED)
    for i in range(a.pages):
        m[i * PAGE:i * PAGE + 64] = pattern(i)
    files = {}
    for n in range(a.files):
        path = "/dev/shm/%s%d_%d" % (a.prefix, os.getpid(), n)
        data = (b"file %d of another program\n" % n) * 1000
        with open(path, "wb") as f:
            f.write(data)
        files[path] = data
    stop = []
    signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
    signal.signal(signal.SIGINT, lambda *_: stop.append(1))
    print("ready: %d huge pages (%d KiB in smaps), files %s" % (a.pages, hugetlb_kb(), " ".join(sorted(files))),
          flush=True)
    while not stop:
        time.sleep(0.2)
    wrong = [i for i in range(a.pages) if m[i * PAGE:i * PAGE + 64] != pattern(i)]
    if hugetlb_kb() != a.pages * 2048:
        wrong.append("smaps: %d KiB" % hugetlb_kb())
    for path, data in files.items():
        try:
            with open(path, "rb") as f:
                if f.read() != data:
                    wrong.append(path + " changed")
            os.unlink(path)
        except OSError as e:
            wrong.append("%s: %s" % (path, e))
    print("holder: %s" % ("pages and files as written; files removed" if not wrong else "CHANGED: %s" % wrong),
          flush=True)
    return 1 if wrong else 0


if __name__ == "__main__":
    sys.exit(main())
