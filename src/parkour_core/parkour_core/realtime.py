"""CPU affinity, SCHED_FIFO priority and locked memory for a control process, from config, with a
clear word when refused.

Off by default. On a robot computer the supervisor and the policy node can be pinned to cores the
camera driver and the operator's tools do not use, and run ahead of them under SCHED_FIFO. Applied
at the start of the process, before any thread exists, so DDS's and rclpy's threads inherit both.
Locked memory keeps the kernel from evicting the process's pages (its code included: a reclaimer
such as DAMON pages out file pages not touched for seconds, and the next tick that needs one waits
for the disk); pages are locked as they are first touched (MCL_ONFAULT), so nothing is preloaded.
Linux only; elsewhere (or without the permission) it says why and the node runs as before.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import resource
from collections.abc import Sequence

# <sys/mman.h>
MCL_CURRENT, MCL_FUTURE, MCL_ONFAULT = 1, 2, 4


def apply_realtime(cpus: Sequence[int], priority: int, who: str, lock_memory: bool = False) -> list[str]:
    """Pin this process to ``cpus`` ([] leaves it), give it SCHED_FIFO ``priority`` (0 leaves it) and
    lock its memory (``lock_memory``).

    Returns one line per setting, what was set or why not (logged by the node)."""
    lines: list[str] = [_lock_memory_line(who)] if lock_memory else []
    if cpus:
        available = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        wanted = sorted(set(int(c) for c in cpus))
        if not hasattr(os, "sched_setaffinity"):
            lines.append(f"{who}: cpu_affinity {wanted} not set: this system has no sched_setaffinity")
        elif not set(wanted) <= set(available):
            lines.append(f"{who}: cpu_affinity {wanted} not set: this process may run only on CPUs {available}")
        else:
            os.sched_setaffinity(0, wanted)
            lines.append(f"{who}: pinned to CPUs {wanted}")
    if priority:
        if not hasattr(os, "sched_setscheduler"):
            lines.append(f"{who}: realtime_priority {priority} not set: this system has no SCHED_FIFO")
            return lines
        try:
            os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(priority))
            lines.append(f"{who}: SCHED_FIFO priority {priority}")
        except PermissionError:
            lines.append(
                f"{who}: realtime_priority {priority} not set: permission denied. Run as root, or grant the "
                "interpreter CAP_SYS_NICE (sudo setcap cap_sys_nice+ep $(readlink -f .venv/bin/python)), or "
                "raise RLIMIT_RTPRIO for this user (/etc/security/limits.conf: <user> - rtprio 90); "
                "or set it to 0. Running without it."
            )
        except OSError as e:
            lines.append(f"{who}: realtime_priority {priority} not set: {e}. Running without it.")
    return lines


def _lock_memory_line(who: str) -> str:
    """mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) where nothing can run out: as root (or with
    CAP_IPC_LOCK) or with an unlimited RLIMIT_MEMLOCK. Under a finite limit it is refused here, since
    an allocation past the limit would then fail in the middle of a run."""
    soft, _ = resource.getrlimit(resource.RLIMIT_MEMLOCK)
    if os.geteuid() != 0 and soft != resource.RLIM_INFINITY:
        return (
            f"{who}: lock_memory not set: RLIMIT_MEMLOCK is {soft} bytes. Run as root, or raise it for this user "
            "(/etc/security/limits.conf: <user> - memlock unlimited); or set lock_memory false. Running without it."
        )
    libc_name = ctypes.util.find_library("c")
    libc = ctypes.CDLL(libc_name, use_errno=True) if libc_name else None
    if libc is None or not hasattr(libc, "mlockall"):
        return f"{who}: lock_memory not set: this system has no mlockall"
    if libc.mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0:
        errno = ctypes.get_errno()
        return f"{who}: lock_memory not set: mlockall failed: {os.strerror(errno)}. Running without it."
    return f"{who}: memory locked (pages stay resident once touched)"
