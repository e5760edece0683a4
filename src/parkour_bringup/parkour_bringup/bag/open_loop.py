"""Open-loop replay: feed a bag's recorded policy inputs through a bundle and compare its actions.

Every ``/policy/tick_inputs`` message is what the recorded runner consumed on one tick (state,
command after its timeout, reset, the depth frame behind the latent). A fresh runner of the
candidate bundle steps through the same sequence: resets where the recording reset, runs its depth
backbone whenever the recorded latent came from a new frame (the image is taken from
``/camera/depth/policy`` by its stamp), and steps on each tick. Its actions are compared with the
recorded ones, recovered from ``/policy/joint_targets`` as (targets - default_q) / action_scale of
the bundle that produced them. The recorded bundle itself reproduces its targets exactly (zero
divergence); another bundle shows how far it would act differently on the same inputs.

Ticks are compared only where the replayed runner's memory is the recorded one's; negative controls
(:data:`CONTROLS`) replay with a deliberate error to show that the check would notice one (both:
:func:`replay_against_bundle`). Not modelled: a live swap inside the bag (the shadow run and the
switch); the candidate runs from the first tick on.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parkour_bringup.bag.messages import bundle as read_bundle
from parkour_bringup.bag.messages import tick_inputs as read_tick_inputs
from parkour_bringup.bag.reader import BagError, StackBag
from parkour_bringup.bag.topics import (
    BUNDLE_TOPIC,
    DEPTH_TOPIC,
    TARGETS_TOPIC,
    TICK_INPUTS_TOPIC,
    TickInputs,
    stamp_s,
)
from parkour_core.bundle import BundleError, Manifest, as_array, load_bundle, read_manifest
from parkour_core.bundles import resolve_bundle
from parkour_core.runner import PolicyRunner, RobotState

DEFAULT_THRESHOLD = 0.05  # action units (before action_scale): a visible change of the commanded pose
CONTROLS = ("shift-depth", "shuffle-depth", "drop-reset")


@dataclass
class RecordedTick:
    inputs: TickInputs
    bundle_name: str | None = None  # header.frame_id of the tick's targets
    targets: np.ndarray | None = None  # None: the targets message of this tick is not in the bag


def _read_recording(bag: StackBag, joint_names: tuple[str, ...]):
    ticks: list[RecordedTick] = []
    # Two ticks can share a stamp (sim time had not moved between them): keep every one, in order.
    targets: dict[int, list[tuple[str, np.ndarray]]] = {}
    depth: dict[float, np.ndarray] = {}
    announced: dict[str, str] = {}
    for m in bag.messages([TICK_INPUTS_TOPIC, TARGETS_TOPIC, DEPTH_TOPIC, BUNDLE_TOPIC]):
        if m.topic == TICK_INPUTS_TOPIC:
            try:
                ticks.append(RecordedTick(read_tick_inputs(m)))
            except ValueError as e:
                raise BagError(f"{bag.path}: {e}") from None
        elif m.topic == TARGETS_TOPIC:
            if tuple(m.msg.name) != joint_names:
                raise BagError(f"{bag.path}: the recorded targets name joints {list(m.msg.name)[:3]}..., "
                               f"not the bundle's policy order {list(joint_names)[:3]}...")  # fmt: skip
            stamp = m.msg.header.stamp
            key = stamp.sec * 1_000_000_000 + stamp.nanosec
            targets.setdefault(key, []).append((m.msg.header.frame_id, np.asarray(m.msg.position, dtype=np.float64)))
        elif m.topic == DEPTH_TOPIC:
            if m.msg.encoding == "32FC1":
                image = np.frombuffer(bytes(m.msg.data), dtype=np.float32).reshape(m.msg.height, m.msg.width)
                depth[stamp_s(m.msg.header.stamp.sec, m.msg.header.stamp.nanosec)] = image
        elif m.topic == BUNDLE_TOPIC:
            try:
                name, path = read_bundle(m)
                announced[name] = path
            except ValueError:
                pass  # not ours to judge here; the recorded targets still name their bundle
    for tick in ticks:
        # Inputs are published just before their targets by the same thread, so the n-th inputs of a
        # stamp belong with the n-th targets of that stamp.
        same_stamp = targets.get(tick.inputs.stamp_ns)
        if same_stamp:
            tick.bundle_name, tick.targets = same_stamp.pop(0)
    # Targets whose inputs never reached the bag: a lost tick, after which the replayed recurrent
    # state no longer follows the recorded one (targets from before the first recorded tick do not count).
    first = ticks[0].inputs.stamp_ns if ticks else None
    orphans = sum(len(v) for k, v in targets.items() if first is not None and k > first)
    return ticks, depth, announced, orphans


def _recorded_manifests(
    bag: StackBag, names: set[str], announced: dict[str, str], candidate: Manifest
) -> tuple[dict[str, Manifest], dict[str, str]]:
    """The manifest of every bundle that produced targets in the bag, to turn its targets into actions."""
    manifests: dict[str, Manifest] = {}
    basis: dict[str, str] = {}
    fallback = {bag.custom_data.get("bundle", ""): bag.custom_data.get("bundle_path", "")}
    for name in sorted(names):
        path = announced.get(name) or fallback.get(name)
        if path:
            try:
                manifests[name] = read_manifest(Path(path))
                basis[name] = path
                continue
            except BundleError:
                pass
        # The recorded bundle is gone from this machine: read its actions with the candidate's mapping.
        manifests[name] = candidate
        basis[name] = f"unavailable ({path or 'not announced'}); candidate's default_q and action_scale used"
    return manifests, basis


def _summary(values: np.ndarray) -> dict[str, float | None]:
    if values.size == 0:
        return {"p50": None, "p99": None, "max": None}
    return {
        "p50": float(np.percentile(values, 50)),
        "p99": float(np.percentile(values, 99)),
        "max": float(values.max()),
    }


def _controlled_depth(depth: dict[float, np.ndarray], control: str | None, seed: int) -> dict[float, np.ndarray]:
    """The recorded frames by stamp, each replaced by another one's under a depth control."""
    if control not in ("shift-depth", "shuffle-depth") or len(depth) < 2:
        return depth
    stamps = sorted(depth)
    if control == "shift-depth":
        order = np.roll(np.arange(len(stamps)), 1)  # every frame's place holds the one exposed before it
    else:
        rng = np.random.default_rng(seed)
        order = rng.permutation(len(stamps))
        while np.any(order == np.arange(len(stamps))):  # no frame may stay in its place
            order = rng.permutation(len(stamps))
    return {stamp: depth[stamps[k]] for stamp, k in zip(stamps, order, strict=True)}


def replay_against_bundle(
    bag: StackBag, bundle: str, threshold: float = DEFAULT_THRESHOLD, control: str | None = None, seed: int = 0
) -> dict[str, Any]:
    """Per-joint action divergence of ``bundle`` from the bag's recorded actions (nothing is written).

    Ticks are compared only where the replayed runner's memory is the recorded one's: from the bag's
    first reset on (the policy node marks its first tick as one: its runner is new), and while the
    frame behind the latent is in the bag. A recorder that matched the policy late (DDS discovery on a
    busy machine) starts its bag mid-episode; the ticks before the next reset are stepped, counted as
    ``ticks_out_of_sync``, and not compared, because the recorded runner's memory from before the bag
    is unknown. The same holds after a tick stepped on a latent whose frame is not in the bag (the
    recorder matched the camera later than the policy): its recurrent state took in an input the
    replay does not have, so comparison resumes at the next reset (the activation's).

    ``control`` (one of :data:`CONTROLS`) replays with that deliberate error, a negative control that shows
    the check would notice one. ``shift-depth`` gives every tick the frame recorded before its own (an
    off-by-one in the camera's latency), ``shuffle-depth`` permutes the recorded frames (``seed`` draws the
    shuffle), ``drop-reset`` skips every runner reset but one on the bag's first tick (the policy's new
    runner) and compares on from there (the recurrent state, previous action and gait clock carried over an
    activation). A student whose actions use its depth and its memory diverges under each; one that ignores
    them would still read zero.
    """
    if control is not None and control not in CONTROLS:
        raise ValueError(f"unknown control {control!r}; one of {list(CONTROLS)}")
    try:
        candidate = load_bundle(resolve_bundle(bundle))
    except BundleError as e:
        raise BagError(f"bundle {bundle!r}: {e}") from None
    m = candidate.manifest
    bag.require_robot(m.robot)
    bag.require_topics([TICK_INPUTS_TOPIC, TARGETS_TOPIC], "an open-loop replay")
    if m.uses_depth:
        bag.require_topics([DEPTH_TOPIC], f"bundle {m.name!r} (a depth policy)")
    ticks, depth, announced, orphans = _read_recording(bag, m.joint_names)
    if control in ("shift-depth", "shuffle-depth") and not (m.uses_depth and len(depth) >= 2):
        raise BagError(
            f"--control {control}: bundle {m.name!r} with {len(depth)} recorded frames has no depth to alter"
        )
    frames = _controlled_depth(depth, control, seed)
    compared = [t for t in ticks if t.targets is not None]
    if not compared:
        raise BagError(f"{bag.path}: no {TICK_INPUTS_TOPIC} message has its {TARGETS_TOPIC} in the bag")
    manifests, basis = _recorded_manifests(bag, {t.bundle_name or "" for t in compared}, announced, m)

    runner = PolicyRunner(candidate, intra_op_threads=1)  # one thread: the same arithmetic as any recording
    default_new = as_array(m.default_joint_pos)
    latent_from: float | None = None
    missing_frames = 0
    # Frames exposed before the recorder's subscription matched the camera are not in any bag; only
    # a gap after the first recorded frame is a loss.
    first_recorded = min(depth) if depth else None
    frames_before_recording = 0
    action_diffs: list[np.ndarray] = []
    target_diffs: list[np.ndarray] = []
    times: list[float] = []
    memory_known = False  # the replayed recurrent state, previous action and gait clock are the recorded ones
    latent_known = True  # the replayed latent is the recorded one (no frame yet: both are zeros)
    out_of_sync = 0
    resets_dropped = 0
    for index, tick in enumerate(ticks):
        inputs = tick.inputs
        if inputs.reset and control == "drop-reset" and index > 0:
            # What a replay that mishandled resets would do: carry its memory over and compare on.
            resets_dropped += 1
            memory_known = True
        elif inputs.reset:
            runner.reset()
            memory_known = True
        if runner.backbone is not None and inputs.depth_stamp_s is not None and inputs.depth_stamp_s != latent_from:
            image = frames.get(inputs.depth_stamp_s)
            if image is None and (first_recorded is None or inputs.depth_stamp_s < first_recorded):
                frames_before_recording += 1
            elif image is None:
                missing_frames += 1
            else:
                runner.set_depth(image, inputs.depth_stamp_s)
            latent_known = image is not None
            latent_from = inputs.depth_stamp_s
        state = RobotState(inputs.q, inputs.dq, inputs.quat_wxyz, inputs.gyro)
        targets_new = runner.step(state, inputs.command)
        in_sync = memory_known and latent_known
        # A step on a latent the bag does not hold leaves a recurrent state the recording's is not:
        # unknown until the next reset.
        memory_known = in_sync
        if tick.targets is None:
            continue  # the tick ran (the runner's memory moves on) but its targets were not recorded
        if not in_sync:
            out_of_sync += 1
            continue
        rec = manifests[tick.bundle_name or ""]
        action_rec = (tick.targets - as_array(rec.default_joint_pos)) / rec.action_scale
        action_new = (targets_new - default_new) / m.action_scale
        action_diffs.append(np.abs(action_new - action_rec))
        target_diffs.append(np.abs(targets_new - tick.targets))
        times.append(stamp_s(inputs.stamp_sec, inputs.stamp_nanosec))

    if not action_diffs:
        raise BagError(f"{bag.path}: no tick to compare: the bag holds no runner reset (activation), so the "
                       "recorded runner's memory is unknown; record from before the robot is activated")  # fmt: skip
    actions = np.stack(action_diffs)
    targets = np.stack(target_diffs)
    over = np.argwhere(actions > threshold)
    first_over = None
    if len(over):
        i, j = (int(v) for v in over[0])
        first_over = {"tick": i, "t_s": times[i], "joint": m.joint_names[j], "value": float(actions[i, j])}
    return {
        "bag": str(bag.path),
        "bundle": str(candidate.path),
        "bundle_name": m.name,
        "recorded_bundles": sorted(manifests),
        "recorded_action_basis": basis,
        "ticks_replayed": len(ticks),
        "ticks_compared": len(action_diffs),
        "ticks_out_of_sync": out_of_sync,
        "targets_without_inputs": orphans,
        "depth_frames_missing": missing_frames,
        "depth_frames_before_recording": frames_before_recording,
        "control": control,
        "resets_dropped": resets_dropped,
        "threshold": threshold,
        "action_divergence": _summary(actions),
        "target_divergence_rad": _summary(targets),
        "first_tick_over_threshold": first_over,
        "per_joint": {name: _summary(actions[:, j]) for j, name in enumerate(m.joint_names)},
    }
