"""Mutation testing of the safety rules: can the tests of parkour_core fail when safety.py or
supervisor_core.py is wrong?

    .venv/bin/python bench/mutation/run.py [--out bench/results/mutation_safety.json]

Runs the pinned mutmut (requirements/constraints.txt; this script installs nothing) over exactly
``parkour_core/safety.py`` and ``parkour_core/supervisor_core.py`` with the unit and property tests
in TESTS, and writes per file: mutants, killed, survived, timeouts and other outcomes, the score
killed / (total - equivalent) and the raw score killed / total, and every mutant not killed with its
mutated line before and after. Survivors that cannot change any observable behaviour are classified
``equivalent`` by bench/mutation/equivalent.yaml, keyed by file, function and the mutated line (never
by mutmut's mutant number, which changes when code moves). The run happens in a work folder
(:func:`prepare` says why). Property tests (hypothesis) run with a fixed seed and at most
--max-examples examples each (PARKOUR_HYPOTHESIS_MAX_EXAMPLES, read by src/parkour_core/test/conftest.py),
so a run is repeatable and the normal test suite keeps its own settings.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import time
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import yaml

ROOT = Path(__file__).resolve().parents[2]
HERE = Path(__file__).resolve().parent
PACKAGE = ROOT / "src" / "parkour_core" / "parkour_core"
TEST_DIR = ROOT / "src" / "parkour_core" / "test"
FILES = ("safety.py", "supervisor_core.py")
# The tests of parkour_core that exercise the two files (mutmut runs, per mutant, those that call its function).
TESTS = (
    "test_safety.py",
    "test_safety_clamp.py",
    "test_safety_remote.py",
    "test_supervisor_core.py",
    "test_h1.py",
    "test_unitree.py",
)
# The repository's pytest options (--import-mode=importlib), a fixed hypothesis seed, no cache.
PYTEST_ARGS = ["-c", str(ROOT / "pyproject.toml"), "--hypothesis-seed=0", "-p", "no:cacheprovider"]
TEST_LINK = "parkour_core_test"  # inside mutants/: the real src/parkour_core/test
TOOL = "mutmut"
EQUIVALENT = HERE / "equivalent.yaml"
# mutmut's exit codes per mutant (mutmut/stats.py status_by_exit_code), folded into the kinds reported.
STATUS = {1: "killed", 3: "killed", 0: "survived", 5: "no_tests", 33: "no_tests", 34: "skipped", 36: "timeout"}
STATUS |= {c: "timeout" for c in (-24, 24, 152, 255)} | {None: "not_checked"}


def pinned_version(name: str) -> str:
    for line in (ROOT / "requirements" / "constraints.txt").read_text().splitlines():
        if line.lower().startswith(f"{name}=="):
            return line.split("==", 1)[1].strip()
    raise SystemExit(f"{name} is not pinned in requirements/constraints.txt")


def git_commit() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True, check=True)
    dirty = subprocess.run(["git", "status", "--porcelain"], cwd=ROOT, capture_output=True, text=True, check=True)
    return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")


def mutmut_config() -> str:
    """pyproject.toml of the work folder: what to mutate, which tests, and how pytest runs them."""
    tests = [f"{TEST_LINK}/{t}" for t in TESTS if (TEST_DIR / t).is_file()]
    lines = [
        "[tool.mutmut]",
        'source_paths = ["parkour_core"]',
        f"only_mutate = {json.dumps([f'parkour_core/{f}' for f in FILES])}",
        f"pytest_add_cli_args_test_selection = {json.dumps(tests)}",
        f"pytest_add_cli_args = {json.dumps(PYTEST_ARGS)}",
        "use_git_change_detection = false",
    ]
    return "\n".join(lines) + "\n"


def prepare(work: Path) -> None:
    """Make the work folder afresh: a copy of the package, the mutmut configuration, a link to the tests.

    mutmut 3 imports the mutated copy from a ``mutants/`` folder and names modules after their path, so it
    cannot run on src/parkour_core/parkour_core/ in place: the work folder (default bench/mutation/work/,
    git-ignored) holds the copy, and the tests, through the link, import the mutated package.
    """
    if work.exists():
        shutil.rmtree(work)
    shutil.copytree(PACKAGE, work / "parkour_core", ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
    (work / "pyproject.toml").write_text(mutmut_config())
    (work / "mutants").mkdir()
    # A link, not a copy: conftest.py finds the repository from its resolved path, and test node ids stay
    # inside mutmut's rootdir (mutants/).
    (work / "mutants" / TEST_LINK).symlink_to(TEST_DIR, target_is_directory=True)


def function_of(mutant: str) -> str:
    """parkour_core.safety.x_clamp_command__mutmut_3 -> clamp_command;
    parkour_core.supervisor_core.xǁSupervisorCoreǁtick__mutmut_7 -> SupervisorCore.tick."""
    key = mutant.rpartition(".")[2].rsplit("__mutmut_", 1)[0]
    if key.startswith("xǁ"):
        _, cls, name = key.split("ǁ")
        return f"{cls}.{name}"
    return key.removeprefix("x_")


def changed_lines(diff: str) -> tuple[str, str, str]:
    """The mutated line(s) before and after, and the unchanged line just above them, all stripped, from
    mutmut's unified diff of the function."""
    before, after, context = [], [], ""
    for line in diff.splitlines():
        if line.startswith(("#", "---", "+++", "@@")):  # "# <mutant>: <status>" heads mutmut show
            continue
        if line.startswith("-"):
            before.append(line[1:].strip())
        elif line.startswith("+"):
            after.append(line[1:].strip())
        elif not (before or after) and line.strip():
            context = line.strip()
    return "\n".join(before), "\n".join(after), context


def load_equivalent() -> list[dict[str, str]]:
    entries = yaml.safe_load(EQUIVALENT.read_text()) or []
    for e in entries:
        missing = {"file", "function", "before", "after", "reason"} - set(e)
        if missing:
            raise SystemExit(f"{EQUIVALENT}: entry {e} lacks {sorted(missing)}")
    return entries


def classify(
    entries: list[dict[str, str]], file: str, function: str, before: str, after: str, context: str
) -> str | None:
    """The reason of the entry for this mutation, if any. An entry with ``context`` (the unchanged line above
    the mutated one) matches only there: for a line that occurs more than once in a function."""
    for e in entries:
        if (e["file"], e["function"], e["before"].strip(), e["after"].strip()) != (file, function, before, after):
            continue
        if "context" in e and e["context"].strip() != context:
            continue
        return str(e["reason"])
    return None


def mutmut(work: Path, env: dict[str, str], *args: str, log: Path | None = None) -> subprocess.CompletedProcess[str]:
    exe = str(Path(sys.executable).with_name("mutmut"))
    if log is None:
        return subprocess.run([exe, *args], cwd=work, env=env, capture_output=True, text=True)
    with log.open("a") as f:
        return subprocess.run([exe, *args], cwd=work, env=env, stdout=f, stderr=subprocess.STDOUT, text=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "mutation_safety.json")
    p.add_argument("--work", type=Path, default=HERE / "work", help="work folder, deleted and made afresh")
    p.add_argument("--max-children", type=int, default=1, help="mutants tested at once (one core each)")
    p.add_argument("--max-examples", type=int, default=20, help="hypothesis examples per property test")
    p.add_argument("--report-only", action="store_true", help="re-read the last run in --work, run nothing")
    p.add_argument("--resume", action="store_true", help="go on with a stopped run in --work (mutmut resumes)")
    args = p.parse_args()

    pinned = pinned_version(TOOL)
    installed = version(TOOL)
    if installed != pinned:
        raise SystemExit(f"{TOOL} {installed} is installed but {pinned} is pinned: run `make setup`")
    work = args.work.resolve()
    env = os.environ | {"PARKOUR_ROOT": str(ROOT), "PARKOUR_HYPOTHESIS_MAX_EXAMPLES": str(args.max_examples)}
    command = f"mutmut run --max-children {args.max_children}"
    if not args.report_only:
        if not args.resume:
            prepare(work)
            # What is mutated and from which commit, taken now: the tree may change while mutmut runs.
            sources = {
                f"parkour_core/{f}": hashlib.sha256((work / "parkour_core" / f).read_bytes()).hexdigest()[:16]
                for f in FILES
            }
            info = {"commit": git_commit(), "sources_sha256": sources, "segments": []}
            info["hypothesis"] = {"max_examples": args.max_examples, "seed": 0}
            (work / "run_info.json").write_text(json.dumps(info))
        info = json.loads((work / "run_info.json").read_text())
        env["PARKOUR_HYPOTHESIS_MAX_EXAMPLES"] = str(info["hypothesis"]["max_examples"])
        print(f"{TOOL} {installed} in {work} (log: {work / 'mutmut.log'}); this takes a while")
        start = time.monotonic()
        proc = mutmut(work, env, *command.split()[1:], log=work / "mutmut.log")
        info["segments"].append({"command": command, "run_s": round(time.monotonic() - start, 1)})
        (work / "run_info.json").write_text(json.dumps(info))
        if proc.returncode != 0:
            print((work / "mutmut.log").read_text()[-3000:], file=sys.stderr)
            raise SystemExit(f"mutmut run failed with exit code {proc.returncode}")
    info = json.loads((work / "run_info.json").read_text())

    entries = load_equivalent()
    files: dict[str, Any] = {}
    unclassified = 0
    for name in FILES:
        meta = json.loads((work / "mutants" / "parkour_core" / f"{name}.meta").read_text())
        codes: dict[str, int | None] = meta["exit_code_by_key"]
        counts: dict[str, int] = {}
        survivors = []
        for mutant, code in sorted(codes.items(), key=lambda kv: _mutant_order(kv[0])):
            status = STATUS.get(code, "suspicious")
            counts[status] = counts.get(status, 0) + 1
            if status == "killed":
                continue
            diff = mutmut(work, env, "show", mutant).stdout
            function = function_of(mutant)
            before, after, context = changed_lines(diff)
            reason = classify(entries, name, function, before, after, context) if status == "survived" else None
            unclassified += status == "survived" and reason is None
            survivors.append(
                {
                    "id": mutant,
                    "status": status,
                    "function": function,
                    "before": before,
                    "after": after,
                    "context": context,
                    "equivalent": reason is not None,
                    "reason": reason,
                }
            )
        total = len(codes)
        killed = counts.get("killed", 0)
        equivalent = sum(s["equivalent"] for s in survivors)
        files[f"parkour_core/{name}"] = {
            "mutants": total,
            "killed": killed,
            "survived": counts.get("survived", 0),
            "timeout": counts.get("timeout", 0),
            "suspicious": counts.get("suspicious", 0),
            "no_tests": counts.get("no_tests", 0),
            "other": {
                k: v for k, v in counts.items() if k not in {"killed", "survived", "timeout", "suspicious", "no_tests"}
            },
            "equivalent": equivalent,
            "score": round(killed / (total - equivalent), 4) if total > equivalent else None,
            "raw_score": round(killed / total, 4) if total else None,
            "not_killed": survivors,
        }

    result = {
        "what": "mutation testing of the safety rules (parkour_core safety.py, supervisor_core.py)",
        "tool": TOOL,
        "version": installed,
        "command": " ; ".join(s["command"] for s in info["segments"]) + " (in the work folder made by run.py)",
        "reproduce": ".venv/bin/python bench/mutation/run.py",
        "commit": info["commit"],
        "sources_sha256": info["sources_sha256"],
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "run_s": round(sum(s["run_s"] for s in info["segments"]), 1),
        "segments": info["segments"],
        "cpu_count": os.cpu_count(),
        "tests": [f"src/parkour_core/test/{t}" for t in TESTS if (TEST_DIR / t).is_file()],
        "hypothesis": info["hypothesis"],
        "equivalent_classification": str(EQUIVALENT.relative_to(ROOT)),
        "files": files,
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=2, ensure_ascii=False) + "\n")

    for path, f in files.items():
        print(
            f"{path}: {f['mutants']} mutants, {f['killed']} killed, {f['survived']} survived "
            f"({f['equivalent']} equivalent), {f['timeout']} timeout, {f['suspicious']} suspicious, "
            f"{f['no_tests']} no tests; score {f['score']}, raw {f['raw_score']}"
        )
        for s in f["not_killed"]:
            if not s["equivalent"]:
                print(f"  {s['status']}: {s['id']}\n    - {s['before']}\n    + {s['after']}")
    print(f"{unclassified} survivors neither killed nor classified equivalent; wrote {args.out}")
    return 0


def _mutant_order(mutant: str) -> tuple[str, int]:
    m = re.search(r"__mutmut_(\d+)$", mutant)
    return (function_of(mutant), int(m.group(1)) if m else 0)


if __name__ == "__main__":
    sys.exit(main())
