"""CPU affinity and SCHED_FIFO priority for a control process, from config, with a clear word when refused.

Off by default. On a robot computer the supervisor and the policy node can be pinned to cores the
camera driver and the operator's tools do not use, and run ahead of them under SCHED_FIFO. Applied
at the start of the process, before any thread exists, so DDS's and rclpy's threads inherit both.
Linux only; elsewhere (or without the permission) it says why and the node runs as before.
"""

from __future__ import annotations

import os
from collections.abc import Sequence


def apply_realtime(cpus: Sequence[int], priority: int, who: str) -> list[str]:
    """Pin this process to ``cpus`` ([] leaves it) and give it SCHED_FIFO ``priority`` (0 leaves it).

    Returns one line per setting, what was set or why not (logged by the node)."""
    lines: list[str] = []
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
