"""Progress of long jobs (training iterations, evaluation trials) and their curves as they grow.

On a terminal: one rich progress bar (done / total, rate, time left, the job's key figure). When the
output is not a terminal (CI, ``nohup``, a pipe): one plain line every ``interval_s``. Either way,
``update(row)`` appends the row to the curve file (JSON lines, flushed) at once, so a run that is
killed keeps every iteration it finished. The file is appended to: whoever starts a run clears it.

A time-boxed run (``time_box_s``, a training size with minutes instead of iterations) shows the bar
over its time box and counts iterations beside it.
"""

from __future__ import annotations

import json
import math
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import IO, Any

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn, TimeRemainingColumn


def read_curve(path: Path | str) -> list[dict[str, Any]]:
    """The rows a run wrote with ``update``, in order (a torn last line, from a kill, is dropped)."""
    rows = []
    for line in Path(path).read_text().splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            break
    return rows


def _format(value: Any) -> str:
    if isinstance(value, float):
        return f"{value:.4g}" if math.isfinite(value) else str(value)
    return str(value)


class RunProgress:
    """See the module docstring. ``figures``: the row keys shown beside the bar (the key figure first)."""

    def __init__(
        self,
        name: str,
        *,
        total: int | None = None,
        time_box_s: float | None = None,
        unit: str = "iterations",
        figures: tuple[str, ...] = (),
        curve: Path | str | None = None,
        stream: IO[str] | None = None,
        interval_s: float = 15.0,
        terminal: bool | None = None,
    ) -> None:
        if total is None and time_box_s is None:
            raise ValueError(f"{name}: give a total count or a time box")
        self.name, self.total, self.time_box_s, self.unit = name, total, time_box_s, unit
        self.figures, self.interval_s = figures, interval_s
        self.stream = stream if stream is not None else sys.stderr
        self.terminal = self.stream.isatty() if terminal is None else terminal
        self.done = 0
        self.last: dict[str, Any] = {}
        self.started = time.monotonic()
        self._last_line = self.started
        self._curve: IO[str] | None = None
        if curve is not None:
            Path(curve).parent.mkdir(parents=True, exist_ok=True)
            self._curve = open(curve, "a")  # noqa: SIM115 - held open for the run, closed in close()
        self._bar: Progress | None = None
        if self.terminal:
            self._bar = Progress(
                TextColumn("[bold]{task.description}"), BarColumn(), MofNCompleteColumn(),
                TextColumn("{task.fields[count]}"), TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
                TextColumn("{task.fields[figures]}"),
                console=Console(file=self.stream), transient=False,
            )  # fmt: skip
            self._bar.start()
            bar_total = float(time_box_s) if time_box_s is not None else float(total or 0)
            self._task = self._bar.add_task(name, total=bar_total, count="", figures="")

    def elapsed_s(self) -> float:
        return time.monotonic() - self.started

    def figures_text(self) -> str:
        return " ".join(f"{k} {_format(self.last[k])}" for k in self.figures if k in self.last)

    def rate(self) -> float:
        return self.done / max(self.elapsed_s(), 1e-9)

    def left_s(self) -> float | None:
        if self.time_box_s is not None:
            return max(0.0, self.time_box_s - self.elapsed_s())
        if self.total is None or self.done == 0:
            return None
        return (self.total - self.done) / self.rate()

    def status_line(self) -> str:
        of = f"/{self.total}" if self.total is not None else ""
        left = self.left_s()
        left_text = f", {left / 60:.1f} min left" if left is not None else ""
        figures = self.figures_text()
        return (f"{self.name}: {self.done}{of} {self.unit}, {self.rate():.3g}/s, {self.elapsed_s() / 60:.1f} min"
                f"{left_text}{'; ' + figures if figures else ''}")  # fmt: skip

    def update(self, row: dict[str, Any] | None = None, advance: int = 1) -> None:
        """``advance`` more done; ``row`` (the iteration's figures) goes to the curve file and the display."""
        self.done += advance
        if row is not None:
            self.last.update(row)
            if self._curve is not None:
                self._curve.write(json.dumps(row) + "\n")
                self._curve.flush()
        if self._bar is not None:
            completed = self.elapsed_s() if self.time_box_s is not None else self.done
            count = f"({self.done} {self.unit})" if self.time_box_s is not None else ""
            self._bar.update(self._task, completed=completed, count=count, figures=self.figures_text())
            return
        now = time.monotonic()
        if now - self._last_line >= self.interval_s or (self.total is not None and self.done >= self.total):
            self._last_line = now
            print(self.status_line(), file=self.stream, flush=True)

    def log(self, line: str) -> None:
        """A line above the bar (on a terminal) or in the plain output."""
        if self._bar is not None:
            self._bar.console.print(line, markup=False, highlight=False)
        else:
            print(line, file=self.stream, flush=True)

    def close(self) -> None:
        if self._bar is not None:
            self._bar.stop()
            self._bar = None
        if self._curve is not None:
            self._curve.close()
            self._curve = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        self.close()


def plot_curves(
    rows: list[dict[str, Any]], panels: Sequence[tuple[str, Sequence[tuple[str, str]]]], path: Path
) -> None:
    """One panel per (title, [(row key, label)]) against the iteration; missing keys are skipped."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    k = [r["iteration"] for r in rows]
    fig, axes = plt.subplots(1, len(panels), figsize=(5 * len(panels), 4), squeeze=False)
    for ax, (title, series) in zip(axes[0], panels, strict=True):
        for key, label in series:
            if any(key in r for r in rows):
                ax.plot(k, [r.get(key, math.nan) for r in rows], label=label)
        ax.set_title(title)
        ax.set_xlabel("iteration")
        if "loss" in title.lower():
            ax.set_yscale("log")
        if len(series) > 1:
            ax.legend()
    fig.tight_layout()
    fig.savefig(path, dpi=90)
    plt.close(fig)
