# SPDX-License-Identifier: GPL-2.0
"""kvbatch: tag a KV-cache engine's reads for the kvbatch I/O scheduler.

A tag is the Linux I/O priority of the calling thread, which its direct
(O_DIRECT) reads carry to the scheduler; buffered reads lose it. Tiers:

  demand    class RT, hint = batch id: a recall the GPU waits on, served
            before the other tiers. Needs CAP_SYS_NICE or CAP_SYS_ADMIN.
  group     class BE, hint = batch id: the reads are one batch (counted,
            traced, in the statistics) in the normal tier, with no
            precedence. No privilege needed.
  prefetch  class IDLE, hint = batch id: served when nothing else waits.

Batch ids are 8..1023 (hints 1..7 are SCSI/ATA command duration limits).

    import kvbatch
    with kvbatch.recall():              # demand, a fresh batch id
        for f in block_files:
            os.preadv(f, bufs, 0)       # f opened with O_DIRECT

The layout of the value is kv-ioprio.h's (C engines: kvbatch/kvbatch.h).
Pure Python: the ioprio_set and ioprio_get system calls through ctypes.
"""

import ctypes
import errno
import itertools
import os
import platform
import struct
import threading

__all__ = ["DEMAND", "GROUP", "PREFETCH", "TIERS", "ID_MIN", "ID_MAX",
           "tag", "next_batch_id", "thread_ioprio", "set_thread_ioprio",
           "recall"]

# kv-ioprio.h: class in bits 13..15, hint in bits 3..12, level in 0..2.
CLASS_SHIFT = 13
HINT_SHIFT = 3
CLASS_RT, CLASS_BE, CLASS_IDLE = 1, 2, 3

DEMAND, GROUP, PREFETCH = "demand", "group", "prefetch"
TIERS = {DEMAND: CLASS_RT, GROUP: CLASS_BE, PREFETCH: CLASS_IDLE}
ID_MIN, ID_MAX = 8, 1023

# ioprio_set(2)'s IOPRIO_WHO_PROCESS: with who 0, the calling thread.
_WHO_PROCESS = 1

# (ioprio_set, ioprio_get) by machine and pointer size: a 32-bit Python
# on a 64-bit kernel uses the 32-bit table.
_SYSCALLS = {
    ("x86_64", 8): (251, 252),
    ("x86_64", 4): (289, 290),
    ("i386", 4): (289, 290),
    ("i686", 4): (289, 290),
    ("aarch64", 8): (30, 31),
    ("arm64", 8): (30, 31),
    ("riscv64", 8): (30, 31),
}


def _syscall_numbers():
    key = (platform.machine(), struct.calcsize("P"))
    nrs = _SYSCALLS.get(key)
    if nrs is None:
        raise OSError(errno.ENOSYS, "kvbatch: no ioprio system call numbers "
                      f"for {key[0]} with {8 * key[1]}-bit pointers")
    return nrs


_libc = None


def _syscall(nr, *args):
    global _libc
    if _libc is None:
        _libc = ctypes.CDLL(None, use_errno=True)
        _libc.syscall.restype = ctypes.c_long
    r = _libc.syscall(ctypes.c_long(nr), *(ctypes.c_long(a) for a in args))
    if r < 0:
        e = ctypes.get_errno()
        raise OSError(e, os.strerror(e))
    return r


def tag(tier, batch_id):
    """The I/O priority of batch BATCH_ID (8..1023) in TIER ("demand",
    "group" or "prefetch"). ValueError or TypeError on anything else."""
    if tier not in TIERS:
        raise ValueError(f"kvbatch: tier {tier!r} is not one of "
                         f"{', '.join(map(repr, TIERS))}")
    if not isinstance(batch_id, int) or isinstance(batch_id, bool):
        raise TypeError(f"kvbatch: batch_id {batch_id!r} is not an int")
    if not ID_MIN <= batch_id <= ID_MAX:
        raise ValueError(f"kvbatch: batch_id {batch_id} is not in "
                         f"{ID_MIN}..{ID_MAX}")
    return TIERS[tier] << CLASS_SHIFT | batch_id << HINT_SHIFT


_ids = itertools.count()
_ids_lock = threading.Lock()


def next_batch_id():
    """A batch id for the next recall, cycling through 8..1023 for the
    whole process (thread-safe). An id comes back after 1015 others."""
    with _ids_lock:
        n = next(_ids)
    return ID_MIN + n % (ID_MAX - ID_MIN + 1)


def thread_ioprio():
    """The calling thread's I/O priority (ioprio_get(2)); 0 if it never
    set one."""
    return _syscall(_syscall_numbers()[1], _WHO_PROCESS, 0)


def set_thread_ioprio(value):
    """Set the calling thread's I/O priority (ioprio_set(2)); other
    threads keep theirs. OSError (PermissionError for class RT without
    CAP_SYS_NICE or CAP_SYS_ADMIN) if the kernel refuses it."""
    if not isinstance(value, int) or isinstance(value, bool) or \
            not 0 <= value <= 0xffff:
        raise ValueError(f"kvbatch: I/O priority {value!r} is not in 0..65535")
    _syscall(_syscall_numbers()[0], _WHO_PROCESS, 0, value)


class recall:
    """Tag the calling thread's reads as one batch until the block ends,
    then give the thread back the I/O priority it had (on an exception
    too). batch_id None takes next_batch_id(). Threads started inside
    the block inherit the tag: start a pool's threads outside it.

        with kvbatch.recall(tier="group") as r:
            print(r.batch_id, hex(r.ioprio))

    Demand without the privilege raises PermissionError on entry and
    changes nothing: it is never quietly served as another tier; ask for
    tier="group" to read as one batch without precedence."""

    def __init__(self, batch_id=None, tier=DEMAND):
        if batch_id is None:
            tag(tier, ID_MIN)          # the tier's error before an id is used
            batch_id = next_batch_id()
        self.tier = tier
        self.batch_id = batch_id
        self.ioprio = tag(tier, batch_id)
        self._saved = None

    def __enter__(self):
        if self._saved is not None:
            raise RuntimeError("kvbatch: this recall is already entered")
        saved = thread_ioprio()
        try:
            set_thread_ioprio(self.ioprio)
        except PermissionError as e:
            if self.tier != DEMAND:
                raise
            raise PermissionError(
                e.errno, "kvbatch: the demand tier is I/O priority class RT, "
                "which needs CAP_SYS_NICE or CAP_SYS_ADMIN; without it, "
                "tier=\"group\" reads as one batch with no precedence") from e
        self._saved = saved
        return self

    def __exit__(self, exc_type, exc, tb):
        saved, self._saved = self._saved, None
        try:
            set_thread_ioprio(saved)
        except OSError:
            if exc_type is None:
                raise
        return False
