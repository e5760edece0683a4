"""Build a MuJoCo model: the robot's MJCF (from its installed package) plus a scene file.

Scene files (sim/scenes/<name>.yaml) hold the world: floor friction and a list of boxes.
The robot file is read where its package installed it and never copied. The floor and boxes go
in the terrain geom group, the only one the simulated depth camera sees; the camera itself is
added at the robot's camera mount.
"""

from __future__ import annotations

from pathlib import Path

import mujoco
import numpy as np
import yaml

from parkour_core.assets import resolve
from parkour_core.config import yaml_error_line
from parkour_core.paths import scenes_dir
from parkour_core.robots import RobotSpec
from parkour_sim.depth_camera import TERRAIN_GEOM_GROUP, add_depth_camera


class SceneError(ValueError):
    pass


def _numbers(value: object, n: int) -> bool:
    return (
        isinstance(value, list | tuple)
        and len(value) == n
        and all(isinstance(x, int | float) and not isinstance(x, bool) and np.isfinite(x) for x in value)
    )


def load_scene_file(name_or_path: str) -> dict:
    """The scene's content, checked: a bad name or a malformed file is one :class:`SceneError` line that says
    what is wrong where (no MuJoCo error or traceback later)."""
    path = Path(name_or_path)
    if not path.suffix:
        path = scenes_dir() / f"{name_or_path}.yaml"
    if not path.is_file():
        known = sorted(p.stem for p in scenes_dir().glob("*.yaml"))
        raise SceneError(f"scene {name_or_path!r} not found (known scenes: {', '.join(known)})")
    try:
        data = yaml.safe_load(path.read_text()) or {}
    except yaml.YAMLError as e:
        raise SceneError(yaml_error_line(path, e)) from None
    if not isinstance(data, dict):
        raise SceneError(f"{path}: expected a mapping (description, floor_friction, boxes), got {type(data).__name__}")
    unknown = set(data) - {"description", "floor_friction", "boxes"}
    if unknown:
        raise SceneError(f"{path}: unknown keys {sorted(unknown)}")
    friction = data.get("floor_friction", 1.0)
    if isinstance(friction, bool) or not isinstance(friction, int | float) or not 0.0 < friction <= 10.0:
        raise SceneError(f"{path}: floor_friction must be a number in (0, 10], got {friction!r}")
    boxes = data.get("boxes", [])
    if not isinstance(boxes, list):
        raise SceneError(f"{path}: boxes must be a list of {{pos, half_size}}, got {type(boxes).__name__}")
    for i, box in enumerate(boxes):
        if not isinstance(box, dict):
            raise SceneError(f"{path}: boxes[{i}] must be a mapping with pos and half_size, got {box!r}")
        missing = {"pos", "half_size"} - set(box)
        if missing:
            raise SceneError(f"{path}: boxes[{i}] lacks {sorted(missing)}")
        if not _numbers(box["pos"], 3):
            raise SceneError(f"{path}: boxes[{i}].pos must be 3 numbers [x, y, z] (m), got {box['pos']!r}")
        if not _numbers(box["half_size"], 3) or min(box["half_size"]) <= 0:
            raise SceneError(f"{path}: boxes[{i}].half_size must be 3 positive numbers (m), got {box['half_size']!r}")
        yaw = box.get("yaw_deg", 0.0)
        if not _numbers([yaw], 1):
            raise SceneError(f"{path}: boxes[{i}].yaw_deg must be a number, got {yaw!r}")
    return data


BAND = "elastic_band"  # the mocap body and the weld that hang the robot (band=True)


def build_model(
    spec: RobotSpec, scene: str | dict, physics_dt_s: float, robot_model: str = "", band: bool = False
) -> mujoco.MjModel:
    """``scene``: a scene name or file, or the scene's content itself (evaluation builds its worlds).
    ``robot_model``: one of parkour_sim.models (``""``: the spec's own). ``band``: a mocap body and a
    soft weld from it to the robot's base (inactive until RobotSim.hang), the elastic band."""
    from parkour_sim.models import robot_model as find_model

    world = scene if isinstance(scene, dict) else load_scene_file(scene)
    model = find_model(spec, robot_model)
    mj = mujoco.MjSpec.from_file(str(resolve(model.asset)))
    if model.adapt is not None:
        model.adapt(mj, spec)
    mj.option.timestep = physics_dt_s
    mj.option.iterations = 50
    mj.option.solver = mujoco.mjtSolver.mjSOL_NEWTON
    mount_body = mj.body(spec.camera.body)
    if mount_body is None:
        raise SceneError(f"the {spec.name} model has no body {spec.camera.body!r} for the depth camera")
    add_depth_camera(mount_body, spec.camera)
    body = mj.worldbody
    friction = float(world.get("floor_friction", 1.0))
    body.add_light(pos=[0, 0, 3], dir=[0, 0, -1], type=mujoco.mjtLightType.mjLIGHT_DIRECTIONAL)
    body.add_geom(
        name="floor", type=mujoco.mjtGeom.mjGEOM_PLANE, size=[0, 0, 0.05], friction=[friction, 0.005, 0.0001],
        rgba=[0.3, 0.35, 0.4, 1], group=TERRAIN_GEOM_GROUP,
    )  # fmt: skip
    if band:
        # A weld is solved by the constraint solver, implicitly: stable at any physics step. The band as an
        # applied spring-damper force was not: its damping on the light pelvis diverged at a 5 ms step.
        base = mj.body(spec.base_body)
        anchor = body.add_body(name=BAND, mocap=True, pos=list(base.pos))
        anchor.add_site(name=BAND, size=[0.01, 0.01, 0.01], group=5)
        # data: anchor on the base at its origin, the base's pose relative to the anchor the identity, torque scale 1
        weld = [0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
        mj.add_equality(name=BAND, type=mujoco.mjtEq.mjEQ_WELD, objtype=mujoco.mjtObj.mjOBJ_BODY, name1=BAND,
                        name2=spec.base_body, active=False, solref=[0.05, 1.0], data=weld)  # fmt: skip
    for i, box in enumerate(world.get("boxes", [])):
        yaw = np.deg2rad(float(box.get("yaw_deg", 0.0)))
        body.add_geom(
            name=box.get("name", f"box{i}"),
            type=mujoco.mjtGeom.mjGEOM_BOX,
            pos=[float(x) for x in box["pos"]],
            size=[float(x) for x in box["half_size"]],
            quat=[np.cos(yaw / 2), 0, 0, np.sin(yaw / 2)],
            friction=[friction, 0.005, 0.0001],
            rgba=[0.8, 0.55, 0.3, 1],
            group=TERRAIN_GEOM_GROUP,
        )
    return mj.compile()
