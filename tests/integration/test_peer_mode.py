"""`parkour robot --iface lo --live` against a simulator that behaves like Unitree's own, on both G1 models.

The stand-in (``bridge.peer: unitree_sim``) computes the PD torque once per arriving lowcmd and holds
it, steps physics at 5 ms and sends lowstate without tick or CRC. The script is the operator's
procedure from the gantry: stand up on the band, activate on the band, lower it (release) once the
policy walks, walk 0.5 m/s, damp. Judged from what the nodes wrote.

The robot graph runs on the stand-in's clock (``--sim-clock``), which holds for the supervisor's and
the policy's answers: on wall time the outcome is the host's scheduling (a stand-in stalled for tens of
ms on a busy machine is rightly damped for stale lowstate; a controller starved as long leaves the held
torque on long enough to carry a joint past its limit), so that run is a benchmark (bench/graph/robot.py).
"""

import numpy as np
import pytest

from parkour_bringup.standin import StandIn, run_against_standin

pytestmark = pytest.mark.integration

GANTRY = [
    {"at_s": 0.5, "request": "stand_up"},
    {"at_s": 4.5, "request": "activate", "in_mode": "STAND"},
    {"at_s": 5.5, "request": "release_band", "in_mode": "ACTIVE"},
    {"at_s": 6.0, "cmd": [0.5, 0.0, 0.0]},
    {"at_s": 14.0, "request": "damp", "in_mode": "ACTIVE"},
]
WALKED_M = 2.0  # 8 s at 0.5 m/s is 4 m; the policies walk 3-4 m of it


@pytest.mark.parametrize("robot_model", ["", "mjlab"], ids=["holosoma_model", "mjlab_model"])
def test_the_operator_s_procedure_walks_the_g1_on_a_unitree_like_simulator(tmp_path, robot_model):
    standin = StandIn(peer="unitree_sim", robot_model=robot_model, physics_dt_s=0.005, clock="sim")
    run = run_against_standin(tmp_path / "run", 18.0, "g1_walk", standin, GANTRY)
    held = run.bridge["lowcmd_held_sim_ms"]
    stand_in = f"commands held p99 {held['p99']} max {held['max']} ms of sim time"
    assert run.moves() == [
        ("DAMP", "STAND_UP", "stand up requested"),
        ("STAND_UP", "STAND", "stand-up complete"),
        ("STAND", "ACTIVE", "activate requested"),
        ("ACTIVE", "DAMP", "damp requested"),
    ], (stand_in, run.robot_output[-3000:])
    bridge = run.bridge
    assert bridge["peer"] == "unitree_sim" and bridge["robot_model"] == (robot_model or "default")
    assert bridge["band_released_at_s"] is not None and bridge["lowcmd_limit_violations"] == 0
    traj = bridge["trajectory"]
    t, x = np.array(traj["t"]), np.array(traj["x"])
    on_feet = t >= bridge["band_released_at_s"]
    if bridge["fell_at_s"] is not None:  # damping takes it down: only after it walked
        on_feet &= t < bridge["fell_at_s"]
    assert x[on_feet].max() - x[on_feet][0] >= WALKED_M, (x[on_feet][0], x[on_feet].max())
    requests = [r["request"] for r in run.script["log"] if r.get("request")]
    assert requests == ["stand_up", "activate", "release_band", "damp"]
