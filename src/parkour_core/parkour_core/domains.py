"""DDS and ROS domains for a graph, chosen so that graphs on one machine never share one by chance.

A graph's Unitree DDS domain (Cyclone) and its ROS domain (Fast DDS) are claimed for as long as the
claiming process runs: each claim is an abstract Unix socket bound under a name per domain, which the
kernel releases when the process ends, however it ends, and which a second process cannot bind. A
domain chosen here is also one where no DDS participant of this machine is found: the RTPS unicast
ports of the domain's participants (RTPS port mapping, 7400 + 250 x domain + 10 + 2 x participant)
are all free, so a graph that claims nothing (started by hand, a Unitree simulator) is avoided too.
The robots' domain 0 and the simulators' 1 are never chosen.
"""

from __future__ import annotations

import random
import socket
from dataclasses import dataclass, field

DDS_CHOICES = range(20, 100)  # Unitree DDS domains chosen for a graph; its ROS domain is preferably +100
ROS_CHOICES = range(100, 200)
_PORT_BASE, _DOMAIN_GAIN, _UNICAST_OFFSET = 7400, 250, 10
PARTICIPANTS_CHECKED = 120  # participant indices whose ports are checked (a graph here has about 20)


class DomainBusy(RuntimeError):
    pass


def _claim_socket(kind: str, domain: int) -> socket.socket | None:
    """The abstract socket that holds ``kind`` domain ``domain``; None if another process holds it."""
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    try:
        sock.bind(f"\0parkour-{kind}-domain-{domain}")
    except OSError:
        sock.close()
        return None
    return sock


def participant_found(domain: int) -> bool:
    """Whether a DDS participant of this machine uses ``domain`` (one of its unicast ports is bound)."""
    first = _PORT_BASE + _DOMAIN_GAIN * domain + _UNICAST_OFFSET
    for port in range(first, min(first + 2 * PARTICIPANTS_CHECKED, 65536), 2):
        probe = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        try:
            probe.bind(("0.0.0.0", port))
        except OSError:
            return True
        finally:
            probe.close()
    return False


@dataclass
class DomainClaim:
    """The domains of one graph, held until :meth:`release`, until the claim is dropped, or to the process's end."""

    dds: int
    ros: int
    _held: list[socket.socket] = field(default_factory=list, repr=False)

    def release(self) -> None:
        for sock in self._held:
            sock.close()
        self._held.clear()

    def __del__(self) -> None:
        self.release()

    def __enter__(self) -> DomainClaim:
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()


def _take(kind: str, domain: int, held: list[socket.socket], check: bool) -> bool:
    if check and participant_found(domain):
        return False
    sock = _claim_socket(kind, domain)
    if sock is None:
        return False
    held.append(sock)
    return True


def claim_domains(dds: int | None = None, ros: int | None = None) -> DomainClaim:
    """Domains for one graph: each one given is used as given (held, unless another process holds it:
    two namespaced graphs share a ROS domain on purpose); each one not given is chosen free.

    The ROS domain chosen is the DDS domain + 100 where that one is free, so logs pair them up.
    Raises DomainBusy when no free domain is left.
    """
    held: list[socket.socket] = []
    try:
        if dds is None:
            dds = _choose("dds", DDS_CHOICES, [], held)
        else:
            _take("dds", dds, held, check=False)
        if ros is None:
            ros = _choose("ros", ROS_CHOICES, [dds + 100] if dds + 100 in ROS_CHOICES else [], held)
        else:
            _take("ros", ros, held, check=False)
    except DomainBusy:
        DomainClaim(0, 0, held).release()
        raise
    return DomainClaim(dds, ros, held)


def _choose(kind: str, choices: range, preferred: list[int], held: list[socket.socket]) -> int:
    for candidate in preferred + random.sample(choices, len(choices)):
        if _take(kind, candidate, held, check=True):
            return candidate
    raise DomainBusy(f"every {kind.upper()} domain in {choices.start}-{choices.stop - 1} is in use on this machine")
