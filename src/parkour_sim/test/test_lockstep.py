"""The bridge's view of a silent peer: wall time while sim time was held is not the peer's silence."""

from parkour_sim.lockstep import PeerSilence


def test_a_peer_is_gone_only_after_the_timeout_of_its_own_silence():
    peer = PeerSilence(timeout_wall_s=2.0)
    assert not peer.gone(100.0)  # never heard: nothing to judge yet
    peer.heard(10.0)
    assert peer.silent_s(11.5) == 1.5 and not peer.gone(11.5)
    assert peer.gone(12.1)


def test_time_the_simulator_held_for_the_other_peer_does_not_count():
    supervisor = PeerSilence(timeout_wall_s=2.0)
    supervisor.heard(10.0)
    supervisor.sim_held(2.0)  # the bridge waited 2 s for a killed policy: sim time stood still
    assert supervisor.silent_s(12.5) == 0.5 and not supervisor.gone(12.5)
    assert supervisor.gone(14.1)
    supervisor.heard(14.2)  # heard again: the held time is spent
    assert abs(supervisor.silent_s(15.0) - 0.8) < 1e-9
