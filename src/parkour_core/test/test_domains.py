"""Domains chosen for a graph avoid those another process claimed or a DDS participant uses, and never 0 or 1."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from parkour_core import domains
from parkour_core.domains import claim_domains

HOLD = """
import sys
from parkour_core.domains import claim_domains
claim = claim_domains(int(sys.argv[1]), int(sys.argv[2]))
print("held", flush=True)
sys.stdin.read()
"""


def _unclaimed(kind: str, domain: int) -> bool:
    """Whether no process holds a claim on ``domain`` now (another test module may hold one for its run)."""
    sock = domains._claim_socket(kind, domain)
    if sock is None:
        return False
    sock.close()
    return True


def _two_free() -> tuple[int, int]:
    """Two DDS domains next to each other that nothing here uses or claims now (with their ROS domains)."""
    for d in range(20, 98):
        if any(domains.participant_found(x) for x in (d, d + 1, d + 100, d + 101)):
            continue
        if all(_unclaimed("dds", x) for x in (d, d + 1)) and all(_unclaimed("ros", x) for x in (d + 100, d + 101)):
            return d, d + 1
    pytest.skip("no two free domains side by side on this machine")


def test_the_robots_and_the_simulators_domains_are_never_chosen() -> None:
    assert {0, 1}.isdisjoint(domains.DDS_CHOICES) and {0, 1}.isdisjoint(domains.ROS_CHOICES)
    assert set(domains.DDS_CHOICES).isdisjoint(domains.ROS_CHOICES)


def test_a_domain_another_process_claimed_is_not_chosen_until_it_ends(monkeypatch) -> None:
    first, _ = _two_free()
    monkeypatch.setattr(domains, "DDS_CHOICES", range(first, first + 1))
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(first), str(first + 100)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True)  # fmt: skip
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with pytest.raises(domains.DomainBusy, match="every DDS domain in"):
            claim_domains()
    finally:
        holder.communicate("", timeout=30)  # its end releases its claim, however it ends
    with claim_domains() as claim:
        assert (claim.dds, claim.ros) == (first, first + 100)


def test_a_domain_a_dds_participant_uses_is_not_chosen(monkeypatch) -> None:
    """A participant that claims nothing (a graph started by hand): its RTPS unicast port is bound."""
    first, second = _two_free()
    monkeypatch.setattr(domains, "DDS_CHOICES", range(first, second + 1))
    participant = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    participant.bind(("0.0.0.0", 7400 + 250 * first + 10 + 2 * 3))  # its fourth participant
    try:
        assert domains.participant_found(first) and not domains.participant_found(second)
        for _ in range(10):  # whichever order the candidates are tried in
            with claim_domains() as claim:
                assert claim.dds == second
    finally:
        participant.close()


def test_a_domain_given_is_used_even_where_another_graph_holds_it() -> None:
    """Two namespaced graphs share a ROS domain on purpose; a robot's DDS domain is the robot's."""
    with claim_domains() as one, claim_domains(ros=one.ros) as two:
        assert two.ros == one.ros and two.dds != one.dds


def test_no_free_domain_left_is_said(monkeypatch) -> None:
    with claim_domains() as held:
        monkeypatch.setattr(domains, "DDS_CHOICES", range(held.dds, held.dds + 1))
        with pytest.raises(domains.DomainBusy, match="every DDS domain in"):
            claim_domains()
