"""What a user's machine downloads from PyPI: the training extra's torch (a CUDA build) vs the robot runtime.

These machines install torch==2.13.0 from a local CPU wheel (PIP_FIND_LINKS); a user's x86_64 Linux
machine takes the index's default build instead, with its CUDA libraries. This resolves both
installs against pypi.org only (``pip install --dry-run --report`` in a scratch venv, no local
wheels, nothing installed) and sums the sizes of the files pip picked, from the index's JSON API
(PEP 691). Writes bench/results/install_downloads.json.

    .venv/bin/python bench/install/downloads.py --out bench/results/install_downloads.json
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import urllib.request
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
INDEX = "https://pypi.org/simple"

from parkour_core.provenance import command_line, provenance  # noqa: E402
from parkour_core.stats import write_json  # noqa: E402


def _sizes(name: str) -> dict[str, int]:
    request = urllib.request.Request(f"{INDEX}/{name}/", headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(request, timeout=60) as response:
        return {f["filename"]: int(f.get("size", 0)) for f in json.load(response)["files"]}


def resolve(venv: Path, requirements: list[str]) -> dict:
    report = venv / "report.json"
    env = {k: v for k, v in os.environ.items() if not k.startswith("PIP_")}
    env["PIP_CONFIG_FILE"] = os.devnull  # no local wheel folders or extra indexes: what a user's machine sees
    cert = os.environ.get("PIP_CERT")
    cmd = [str(venv / "bin" / "pip"), "install", "--dry-run", "--ignore-installed", "--quiet", "--report", str(report),
           "--index-url", INDEX, *(["--cert", cert] if cert else []), *requirements]  # fmt: skip
    subprocess.run(cmd, check=True, env=env, timeout=900)
    packages = []
    for item in json.loads(report.read_text())["install"]:
        filename = item["download_info"]["url"].rsplit("/", 1)[1]
        name = item["metadata"]["name"]
        size = _sizes(name.lower().replace("_", "-")).get(filename, 0)
        packages.append({"name": name, "version": item["metadata"]["version"], "file": filename, "bytes": size})
    packages.sort(key=lambda p: -p["bytes"])
    return {"requirements": requirements, "packages": len(packages),
            "download_mb": round(sum(p["bytes"] for p in packages) / 1e6), "largest": packages[:12]}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "install_downloads.json")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        venv = Path(tmp) / "venv"  # a new pip (its --report), resolving for this Python and platform
        subprocess.run([sys.executable, "-m", "venv", "--upgrade-deps", str(venv)], check=True, capture_output=True)
        rows = {
            "torch_default_build": resolve(venv, ["torch==2.13.0"]),
            "robot_runtime": resolve(venv, ["-r", str(ROOT / "requirements" / "robot.txt")]),
        }
    write_json(args.out, {**provenance(command_line()), "index": INDEX, "platform": sys.platform, **rows})
    for key, row in rows.items():
        print(f"{key}: {row['packages']} packages, {row['download_mb']} MB")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
