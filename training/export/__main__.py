"""``python -m training.export``: write a student bundle and check it; non-zero exit if a check fails."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from parkour_core.bundle import BundleError, read_manifest
from training.export.models import SIZES
from training.export.parity import ParityError
from training.export.student import PRECISIONS, ExportError, export_random_student


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__)
    parser.add_argument(
        "--random", action="store_true", required=True, help="random weights (the only source until training lands)"
    )
    parser.add_argument("--size", choices=sorted(SIZES), default="php")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--precision",
        choices=list(PRECISIONS),
        default="int8",
        help="int8 (default): the runtime runs int8 models (standard ONNX ops) checked against the fp32 reference; "
        "int8-block: the same with onnxruntime's MatMulNBits (faster, onnxruntime >= 1.22); fp32: the reference only",
    )
    parser.add_argument("--name", help="bundle name in the manifest (default student_random_<size>)")
    parser.add_argument("--out", type=Path, required=True, help="bundle folder to write")
    args = parser.parse_args(argv)
    try:
        out = export_random_student(args.out, size=args.size, seed=args.seed, precision=args.precision, name=args.name)
    except (ExportError, ParityError, BundleError) as e:
        print(f"export failed: {e}", file=sys.stderr)
        return 1
    manifest = read_manifest(out)
    print(json.dumps({"bundle": str(out), **manifest.provenance}, indent=2))
    print(f"wrote bundle {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
