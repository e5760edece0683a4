"""The holosoma-inference side of bench/holosoma/run.py; runs in .venv-bench (bench/holosoma/setup.sh).

Its walking loop (``LocomotionPolicy.run``) on the robot does, every 20 ms: poll the velocity input and
apply it, advance the gait phase, ``policy_action()`` (read the low state, build the observation, run
the ONNX, clip and scale the action, add the default pose, send the low command), then sleep. Here
the hardware is replaced, nothing else: ``create_interface`` by a stub whose ``get_low_state`` returns
the prepared state row (holosoma's own layout) and whose ``send_low_command`` keeps the targets; the
input providers by the prepared commands, applied through its own ``_apply_velocity``. Timed per tick:

- ``loop``: ``_apply_velocity`` + ``update_phase_time`` + ``policy_action`` (its loop body without
  input polling and ``rate.sleep``), the job our ``PolicyRunner.step`` does;
- ``rl_inference``: its observation building + ONNX run + clip + scale alone (inside ``policy_action``).

Protocol on stdin/stdout (one line each): it prints ``ready``; ``run A B`` runs ticks A..B-1 and prints
``done``; ``quit`` writes ``--out`` (npz: per-tick times and the targets it sent) and exits.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import sys
import time

import numpy as np


def build_policy(model_path: str, joint_names: list[str]):
    from holosoma_inference.config.config_values.inference import g1_29dof_loco
    from holosoma_inference.inputs.api.commands import VelCmd
    from holosoma_inference.policies.locomotion import LocomotionPolicy
    from loguru import logger

    logger.remove()  # its INFO lines would go to our stdout protocol
    logger.add(sys.stderr, level="WARNING")

    class StubInterface:
        """Stands in for the Unitree SDK interface: no DDS, no robot."""

        kp_level = 1.0

        def __init__(self) -> None:
            self.state: np.ndarray | None = None
            self.sent: np.ndarray | None = None

        def update_config(self, robot_config) -> None:
            pass

        def get_low_state(self) -> np.ndarray:
            assert self.state is not None
            return self.state

        def send_low_command(self, cmd_q, cmd_dq, cmd_tau, dof_pos_latest=None, kp_override=None, kd_override=None):
            self.sent = cmd_q

    class BenchLocomotion(LocomotionPolicy):
        """holosoma's LocomotionPolicy with the hardware and operator inputs stubbed out."""

        def _init_sdk_components(self) -> None:
            self.sdk_type = "bench"

        def _init_communication_components(self) -> None:
            self.interface = StubInterface()

        def _init_input_handlers(self) -> None:
            self.rl_rate = self.config.task.rl_rate
            self.logger = logger
            self.rate = None
            self.use_joystick = False
            self.use_keyboard = False

        def rl_inference(self, robot_state_data):
            started = time.perf_counter()
            out = super().rl_inference(robot_state_data)
            self.inference_s = time.perf_counter() - started
            return out

    cfg = g1_29dof_loco
    config = dataclasses.replace(cfg, task=dataclasses.replace(cfg.task, model_path=model_path))
    policy = BenchLocomotion(config)
    if list(policy.dof_names) != joint_names:
        raise SystemExit(f"holosoma's dof order differs from ours: {policy.dof_names} vs {joint_names}")
    policy.stand_command[0, 0] = 1  # walking mode, as its walk command sets
    policy._handle_start_policy()  # use policy actions, phase (0, pi): what the operator's start does
    return policy, VelCmd


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs", required=True, help="npz from run.py: q, dq, quat_wxyz, gyro, cmd, joint_names")
    parser.add_argument("--model", required=True, help="the ONNX (holosoma_inference models/loco/g1_29dof/...)")
    parser.add_argument("--out", required=True)
    args = parser.parse_args()
    os.environ.setdefault("OMP_NUM_THREADS", "1")

    with np.load(args.inputs) as f:
        inputs = {k: f[k] for k in f.files}
    joint_names = [str(n) for n in inputs["joint_names"]]
    policy, vel_cmd = build_policy(args.model, joint_names)
    n = len(joint_names)
    ticks = len(inputs["q"])
    # holosoma's state row: base_pos(3) + quat wxyz(4) + dof_pos + base_lin_vel(3) + base_ang_vel(3) + dof_vel
    rows = np.zeros((ticks, 1, 13 + 2 * n))
    rows[:, 0, 3:7] = inputs["quat_wxyz"]
    rows[:, 0, 7 : 7 + n] = inputs["q"]
    rows[:, 0, 10 + n : 13 + n] = inputs["gyro"]
    rows[:, 0, 13 + n :] = inputs["dq"]
    commands = [vel_cmd(lin_vel=(float(c[0]), float(c[1])), ang_vel=float(c[2])) for c in inputs["cmd"]]

    loop_s = np.full(ticks, np.nan)
    inference_s = np.full(ticks, np.nan)
    targets = np.full((ticks, n), np.nan)
    print("ready", flush=True)
    for line in sys.stdin:
        words = line.split()
        if not words:
            continue
        if words[0] == "quit":
            break
        start, stop = int(words[1]), int(words[2])
        for k in range(start, stop):
            policy.interface.state = rows[k]
            started = time.perf_counter()
            policy._apply_velocity(commands[k])
            policy.update_phase_time()
            policy.policy_action()
            loop_s[k] = time.perf_counter() - started
            inference_s[k] = policy.inference_s
            targets[k] = policy.interface.sent
        print("done", flush=True)
    import onnxruntime

    np.savez(
        args.out,
        loop_s=loop_s,
        inference_s=inference_s,
        targets=targets,
        onnxruntime=onnxruntime.__version__,
        intra_op_threads=policy.onnx_policy_session.get_session_options().intra_op_num_threads,
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
