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


def _steps_run_at_once(catch_up_s: float, stall_s: float, dt: float = 0.005) -> int:
    """Steps a pacer lets run back to back (no sleep) after a stall of ``stall_s`` at 5 ms steps."""
    from parkour_sim.lockstep import WallPacer

    pacer = WallPacer(wall=0.0, sim_s=0.0, real_time_factor=1.0, catch_up_s=catch_up_s)
    wall, sim_s = 0.1 + stall_s, 0.1  # 20 steps on time, then the process did not run for stall_s
    sprinted = 0
    while pacer.sleep_s(wall, sim_s) == 0.0:
        sim_s += dt  # a physics step takes no wall time here
        sprinted += 1
        if sprinted > 100:
            break
    return sprinted


def test_on_wall_time_a_stalled_stand_in_runs_on_late_rather_than_sprinting_through_the_stall():
    # A sprint holds the last lowcmd's torque across every step of the stall (a held-torque peer).
    assert _steps_run_at_once(catch_up_s=0.005, stall_s=0.03) == 1  # the step that was due, then on time
    assert _steps_run_at_once(catch_up_s=0.05, stall_s=0.03) == 6  # lockstep: 30 ms of steps at once
    assert _steps_run_at_once(catch_up_s=0.05, stall_s=0.2) == 1  # far behind: runs on from there too


def test_the_pacer_never_runs_faster_than_real_time():
    from parkour_sim.lockstep import WallPacer

    pacer = WallPacer(wall=10.0, sim_s=0.0, real_time_factor=0.5, catch_up_s=0.005)
    assert abs(pacer.sleep_s(10.0, 0.01) - 0.02) < 1e-12  # 10 ms of sim at half speed: 20 ms of wall
