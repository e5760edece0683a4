"""``python -m training.export``: write a student bundle and check it; non-zero exit if a check fails.

``--random``: a random-weight student (fp32 + int8). ``--from-bundle models/student_walk``: the int8
variant of a trained fp32 bundle, calibrated on simulator frames and checked on a simulator
recording (``training.export.calibration.sim_quantize``), written to ``--out``.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from parkour_core.bundle import BundleError, read_manifest
from training.export.parity import ParityError
from training.export.student import PRECISIONS, ExportError, export_random_student


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m training.export", description=__doc__)
    source = parser.add_mutually_exclusive_group(required=True)
    source.add_argument("--random", action="store_true", help="random weights")
    source.add_argument(
        "--from-bundle",
        type=Path,
        metavar="BUNDLE",
        help="quantise a trained fp32 student bundle (its ONNX files) to int8 in --out, calibrated on and checked "
        "against simulator recordings it drives (training.export.calibration); BUNDLE is never written",
    )
    parser.add_argument(
        "--size",
        default="php_student_gpu",
        help="a training config whose policy section sizes the student (php_student_gpu: PHP's; php_student_tiny)",
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--precision",
        choices=list(PRECISIONS),
        default="int8",
        help="int8 (default): the runtime runs int8 models (standard ONNX ops) checked against the fp32 reference; "
        "int8-block: the same with onnxruntime's MatMulNBits (faster, onnxruntime >= 1.22); fp32: the reference only",
    )
    parser.add_argument(
        "--name", help="bundle name in the manifest (default student_random_<size>, or <BUNDLE name>_int8)"
    )
    parser.add_argument("--out", type=Path, required=True, help="bundle folder to write")
    args = parser.parse_args(argv)
    try:
        if args.from_bundle is not None:
            from training.export.calibration import sim_quantize

            if args.precision == "fp32":
                raise ExportError("--from-bundle makes an int8 variant: --precision int8 or int8-block")
            out = sim_quantize(args.from_bundle, args.out, args.precision, args.name)
        else:
            out = export_random_student(
                args.out, size=args.size, seed=args.seed, precision=args.precision, name=args.name
            )
    except (ExportError, ParityError, BundleError) as e:
        print(f"export failed: {e}", file=sys.stderr)
        return 1
    manifest = read_manifest(out)
    print(json.dumps({"bundle": str(out), **manifest.provenance}, indent=2))
    print(f"wrote bundle {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
