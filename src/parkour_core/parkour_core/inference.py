"""onnxruntime sessions for the control loop: one place decides threads, providers and optimisation."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

CUDA = "CUDAExecutionProvider"
CPU = "CPUExecutionProvider"


class ProviderError(ValueError):
    """The configured onnxruntime providers cannot run here."""


def choose_providers(requested: str = "auto") -> list[str]:
    """``auto``: CUDA where onnxruntime-gpu and a GPU exist (a Jetson), else CPU; or ``cpu``/``cuda``.
    ``cuda`` where onnxruntime offers no CUDA raises :class:`ProviderError` rather than running on the CPU
    unasked: the policy's timing is what was configured, or nothing runs."""
    import onnxruntime as ort

    available = ort.get_available_providers()
    if requested == "cpu":
        return [CPU]
    if requested == "cuda":
        if CUDA not in available:
            raise ProviderError(
                f"policy.providers is 'cuda' but this onnxruntime offers only {', '.join(available)}: install "
                "onnxruntime-gpu on a machine with a CUDA GPU, or set policy.providers to auto or cpu"
            )
        return [CUDA, CPU]
    return [CUDA, CPU] if CUDA in available else [CPU]


def make_session(path: Path | bytes, intra_op_threads: int = 1, providers: Sequence[str] | None = None) -> Any:
    """A session tuned for batch-1 control: by default 1 intra-op thread on the calling thread.

    ``path``: the model file, or the serialized model (training re-declares a teacher's batch axis).

    One thread keeps the step on one core, where it does not fight the DDS and executor threads
    for the other; two threads are faster on an idle machine and collapse on a busy one.

    A batch-1 step of a large student is bound by reading its weights, so speed comes from the
    model file (int8 weights: training/export/optimize.py), not from here. On the PHP-sized int8
    student, interleaved on one core, denormals-as-zero, the EXTENDED or LAYOUT optimisation level,
    no memory arena and no memory pattern all land within noise of these settings, so none is set.
    Denormals-as-zero would also switch the calling thread's floating-point mode, i.e. numpy's in the
    policy node.
    """
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = intra_op_threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    model = path if isinstance(path, bytes) else str(path)
    return ort.InferenceSession(model, options, providers=list(providers or [CPU]))


class BoundRun:
    """Runs ``session`` reading ``inputs`` and writing ``outputs`` in place: onnxruntime's IOBinding,
    bound once to the arrays' memory (float32, C-contiguous; kept alive here).

    ``session.run`` wraps every input and converts every output on each call, and its caller then copies
    the outputs to where it keeps them; bound, a call does neither. The kernels are those of
    ``session.run``, and so are the outputs. CPU memory: for CPU sessions.
    """

    def __init__(self, session: Any, inputs: dict[str, np.ndarray], outputs: dict[str, np.ndarray]) -> None:
        self.arrays = (inputs, outputs)
        self._binding = session.io_binding()
        for kind, arrays in (("input", inputs), ("output", outputs)):
            for name, a in arrays.items():
                if a.dtype != np.float32 or not a.flags.c_contiguous:
                    raise ValueError(f"{kind} {name!r}: bind float32 C-contiguous arrays, not {a.dtype}")
                bind = self._binding.bind_input if kind == "input" else self._binding.bind_output
                bind(name, "cpu", 0, np.float32, list(a.shape), a.ctypes.data)
        self._run = session.run_with_iobinding

    def __call__(self) -> None:
        # No RunOptions: given one, onnxruntime's wrapper looks up a GPU-graph entry in it on every call,
        # which costs about as much as a small network's run.
        self._run(self._binding)
