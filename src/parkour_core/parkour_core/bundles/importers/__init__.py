"""`parkour model import FORMAT SRC --out DIR`: a trainer's export as a bundle, one module per format.

A format's module says in one line what it reads (``HELP``) and turns an export into a
:class:`~.common.Source` (``read(src, spec)``: the files, the declaration and what it verified
or assumed); :func:`import_bundle` checks and writes it (:func:`~.common.write_bundle`). A new
format is one more module with ``HELP`` and ``read`` and one line in :data:`FORMATS`.
``python -m parkour_core.bundles.importers`` is the same verb without the ROS command line
(``make setup`` builds ``models/g1_walk`` with it).
"""

from __future__ import annotations

import argparse
import importlib
from pathlib import Path
from typing import Any, Protocol, cast

from parkour_core.bundles.importers.common import ImportRefused, Source, read_spec, write_bundle

FORMATS: dict[str, str] = {
    "rsl_rl": "parkour_core.bundles.importers.rsl_rl",
    "holosoma": "parkour_core.bundles.importers.holosoma",
    "php": "parkour_core.bundles.importers.php",
    "mjlab": "parkour_core.bundles.importers.mjlab",
}


class Importer(Protocol):
    HELP: str

    def read(self, src: str, spec: dict[str, Any] | None) -> Source: ...


def importer(fmt: str) -> Importer:
    if fmt not in FORMATS:
        raise ImportRefused(f"format {fmt!r} is not one this importer reads ({', '.join(FORMATS)})")
    return cast(Importer, importlib.import_module(FORMATS[fmt]))


def import_bundle(fmt: str, src: str, out: Path, spec: Path | None = None, name: str | None = None) -> Path:
    """Read ``src`` as ``fmt`` (with the user's import spec, if any) and write the bundle to ``out``.
    Raises :class:`ImportRefused` naming the mismatch; then ``out`` is as it was."""
    reader = importer(fmt)
    source = reader.read(src, read_spec(spec) if spec is not None else None)
    source.spec_path = spec
    return write_bundle(source, out, name)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("format", choices=sorted(FORMATS), help="what wrote the export (see docs/byop.md)")
    p.add_argument("src", help="rsl_rl, mjlab: the .onnx file; holosoma: the .onnx file, or ppo/fastsac (the "
                               "wheel's); php: the folder with depth_backbone.onnx and student.onnx")  # fmt: skip
    p.add_argument("--out", type=Path, required=True, help="the bundle folder to write")
    p.add_argument("--spec", type=Path, default=None, help="import spec (YAML): what the export does not record")
    p.add_argument("--name", default=None, help="the bundle's name (default: the --out folder's name)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m parkour_core.bundles.importers", description=__doc__)
    add_arguments(parser)
    args = parser.parse_args(argv)
    try:
        out = import_bundle(args.format, args.src, args.out, args.spec, args.name)
    except ImportRefused as e:
        parser.exit(1, f"import refused: {e}\n")
    print(f"wrote bundle {out}")
    return 0


__all__ = ["FORMATS", "ImportRefused", "Importer", "Source", "add_arguments", "import_bundle", "importer", "main"]
