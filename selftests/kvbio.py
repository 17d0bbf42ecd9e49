# SPDX-License-Identifier: GPL-2.0
#
# kvbio: what the selftests that order a handful of I/Os by hand share,
# for their Python parts: one-block direct I/Os, each from a thread of its
# own in the I/O priority class asked for, timed and listed as they
# complete; and kvbatch's counters (debugfs sched/stats), read and waited
# for without starting a process, so that a test's steps take
# milliseconds even in a busy emulated guest.
import ctypes
import mmap
import os
import threading
import time

BLOCK = 4096
SYS_IOPRIO_SET = 251            # x86_64
IOPRIO_WHO_PROCESS = 1
IOPRIO_CLASS_SHIFT = 13
# I/O priority classes: kvbatch's demand, normal and prefetch tiers.
RT, BE, IDLE = 1, 2, 3

_libc = ctypes.CDLL(None, use_errno=True)


class Ios:
    """One-block O_DIRECT I/Os on DEV, each from a thread of its own."""

    def __init__(self, dev):
        self.fd = os.open(dev, os.O_RDWR | os.O_DIRECT)
        self.lock = threading.Lock()
        self.threads = []
        # (name, latency in ms from just before the system call), in
        # completion order.
        self.done = []

    def _io(self, name, block, write, cls):
        if cls is not None:
            # With IOPRIO_WHO_PROCESS, a thread's id sets that thread's.
            if _libc.syscall(SYS_IOPRIO_SET, IOPRIO_WHO_PROCESS,
                             threading.get_native_id(),
                             cls << IOPRIO_CLASS_SHIFT) != 0:
                raise OSError(ctypes.get_errno(), 'ioprio_set')
        buf = mmap.mmap(-1, BLOCK)
        t = time.monotonic()
        if write:
            os.pwritev(self.fd, [buf], block * BLOCK)
        else:
            os.preadv(self.fd, [buf], block * BLOCK)
        with self.lock:
            self.done.append((name, int((time.monotonic() - t) * 1000)))

    def start(self, name, block, write=False, cls=None):
        """Read (or write) block BLOCK as NAME, in class CLS if given."""
        t = threading.Thread(target=self._io,
                             args=(name, block, write, cls))
        self.threads.append(t)
        t.start()

    def completed(self, name):
        with self.lock:
            return any(n == name for n, _ in self.done)

    def join(self):
        for t in self.threads:
            t.join()
        return self.done


def stat(path, key):
    """kvbatch's counter KEY in the debugfs stats file PATH, or None."""
    with open(path) as f:
        for line in f:
            k, _, v = line.partition(' ')
            if k == key:
                return int(v)
    return None


def wait_stat(path, key, value, stop=None, secs=10):
    """Until counter KEY reads VALUE: 0; 2 as soon as STOP() is true; 1
    after SECS seconds, with what it read printed as a TAP diagnostic."""
    for _ in range(secs * 100):
        if stat(path, key) == value:
            return 0
        if stop is not None and stop():
            return 2
        time.sleep(0.01)
    print('# # %s is %s, not %s' % (key, stat(path, key), value))
    return 1
