"""Fast variants of the exported student for batch-1 CPU control: same inputs and outputs, int8 weights.

A PHP-sized student holds 11.6M fp32 weights (46 MB: more than a CPU's last-level cache), so one
control step mostly waits on memory. The fast variant (``*.int8.onnx``) changes three things: ``Elu``
on the backbone's conv maps becomes four element-wise kernels (:func:`rewrite_elu`), every ``Gemm``
gets int8 weights in one of ``WEIGHT_SCHEMES`` (:func:`_quantize_weights`), and optionally the
backbone's second convolution becomes a static int8 convolution (:func:`quantize_backbone`).

Kept fp32: the GRU (onnxruntime has no int8 GRU; unrolled into int8 matrix products it gains little
time for 20x the hidden-state error, fed back every tick) and 4-bit weights (several percent latent
error for no time gained over 8-bit blocks). The exporter measures every variant against the fp32
reference over a recurrent rollout (see :mod:`training.export.parity`); bench/policy/run.py times them
(bench/results/policy.json).
"""

from __future__ import annotations

import contextlib
import logging
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

ELU_ZERO = "elu_rewrite_zero"
# The backbone's conv maps (35k and 62k values) get the rewrite; its 128-value Elu does not.
ELU_REWRITE_MIN_ELEMENTS = 4096
ELU_ONE = "elu_rewrite_one"
WEIGHT_SCHEMES = ("dynamic", "block")


def rewrite_elu(model: onnx.ModelProto, min_elements: int = 0) -> onnx.ModelProto:
    """Replace ``Elu`` (alpha 1) on tensors of at least ``min_elements`` values by ``Max(x, Exp(Min(x, 0)) - 1)``.

    For x > 0 the second operand is 0 < x; for x <= 0 it is exp(x) - 1 >= x: so the maximum is
    exactly ELU. The error against onnxruntime's Elu is float rounding of exp(x) - 1 (< 1e-7).
    On the backbone's conv maps the four vectorised element-wise kernels are faster than
    onnxruntime's Elu; on small vectors (the MLP's 2048 values and fewer) one Elu kernel beats four
    kernel launches, so ``min_elements`` keeps those.
    """
    out = onnx.ModelProto()
    out.CopyFrom(model)
    sizes = _static_sizes(out) if min_elements > 0 else {}
    graph = out.graph
    nodes: list[onnx.NodeProto] = []
    rewritten = 0
    for node in graph.node:
        if node.op_type != "Elu" or sizes.get(node.input[0], 0) < min_elements:
            nodes.append(node)
            continue
        alpha = next((a.f for a in node.attribute if a.name == "alpha"), 1.0)
        if alpha != 1.0:
            raise ValueError(f"rewrite_elu handles alpha 1 only; node {node.name!r} has alpha {alpha}")
        x, y = node.input[0], node.output[0]
        prefix = f"{node.name or y}_elu"
        nodes += [
            helper.make_node("Min", [x, ELU_ZERO], [f"{prefix}_neg"], name=f"{prefix}_min"),
            helper.make_node("Exp", [f"{prefix}_neg"], [f"{prefix}_exp"], name=f"{prefix}_exp"),
            helper.make_node("Sub", [f"{prefix}_exp", ELU_ONE], [f"{prefix}_expm1"], name=f"{prefix}_sub"),
            helper.make_node("Max", [x, f"{prefix}_expm1"], [y], name=f"{prefix}_max"),
        ]
        rewritten += 1
    if rewritten:
        graph.initializer.extend(
            [
                numpy_helper.from_array(np.array(0.0, dtype=np.float32), ELU_ZERO),
                numpy_helper.from_array(np.array(1.0, dtype=np.float32), ELU_ONE),
            ]
        )
    del graph.node[:]
    graph.node.extend(nodes)
    onnx.checker.check_model(out)
    return out


def _static_sizes(model: onnx.ModelProto) -> dict[str, int]:
    """Element counts of the graph's values whose shapes are fully known (batch-1 exports: all of them)."""
    inferred = onnx.shape_inference.infer_shapes(model)
    sizes = {}
    for value in [*inferred.graph.value_info, *inferred.graph.input, *inferred.graph.output]:
        dims = [d.dim_value if d.HasField("dim_value") else 0 for d in value.type.tensor_type.shape.dim]
        if dims and all(d > 0 for d in dims):
            sizes[value.name] = int(np.prod(dims))
    return sizes


def _convs_to_quantize(model: onnx.ModelProto) -> list[str]:
    """Convolutions with more than one input channel (the first conv reads one depth channel)."""
    weights = {init.name: init for init in model.graph.initializer}
    names = []
    for node in model.graph.node:
        if node.op_type == "Conv" and node.input[1] in weights and weights[node.input[1]].dims[1] > 1:
            names.append(node.name)
    return names


class _FrameReader:
    """onnxruntime's CalibrationDataReader protocol over a list of depth frames."""

    def __init__(self, input_name: str, frames: Iterable[np.ndarray]) -> None:
        self._feeds = iter([{input_name: np.asarray(f, dtype=np.float32)[None]} for f in frames])

    def get_next(self) -> dict[str, np.ndarray] | None:
        return next(self._feeds, None)

    def rewind(self) -> None:  # part of the protocol; calibration reads the frames once
        pass


class _DropQuantizerAdvice(logging.Filter):
    ADVICE = ("pre-processing before quantization", "check if the model is already quantized")

    def filter(self, record: logging.LogRecord) -> bool:
        return not any(advice in record.getMessage() for advice in self.ADVICE)


@contextlib.contextmanager
def _quiet_quantizer() -> Iterator[None]:
    """onnxruntime.quantization logs advice on the root logger for every model: shape pre-processing
    (our exported graphs have static shapes) and, on the backbone whose convs are already int8 (QDQ),
    a QAT hint. Both are noise here."""
    drop = _DropQuantizerAdvice()
    logging.getLogger().addFilter(drop)
    try:
        yield
    finally:
        logging.getLogger().removeFilter(drop)


def _quantize_dynamic_weights(model_path: Path, out_path: Path) -> None:
    from onnxruntime.quantization import QuantType, quantize_dynamic

    # Signed int8 weights, unsigned int8 activations (u8s8): the fast path on VNNI x86 and on ARM. Weights in
    # 7 bits (reduce_range): x86 CPUs with AVX2 but no VNNI sum u8 x s8 pairs in saturating int16, which full
    # range overflows (onnxruntime's own advice), so a model quantized on one CPU stays right on another.
    with _quiet_quantizer():
        quantize_dynamic(
            model_path, out_path, op_types_to_quantize=["MatMul", "Gemm"], weight_type=QuantType.QInt8,
            reduce_range=True,
        )  # fmt: skip


def pack_int8_blocks(weight: np.ndarray, block_size: int) -> tuple[np.ndarray, np.ndarray]:
    """``weight`` [N, K] -> MatMulNBits' 8-bit layout: uint8 [N, k_blocks, block_size], scales [N, k_blocks].

    Symmetric per block: q = round(w / scale) + 128 with scale = max|w| / 127, so 128 (MatMulNBits'
    default zero point, used when no zero_points input is given) means 0. K is padded with zeros
    to whole blocks.
    """
    n, k = weight.shape
    k_blocks = -(-k // block_size)
    blocks = np.zeros((n, k_blocks * block_size), dtype=np.float64)
    blocks[:, :k] = weight
    blocks = blocks.reshape(n, k_blocks, block_size)
    scales = np.abs(blocks).max(axis=-1) / 127.0
    scales[scales == 0.0] = 1.0  # an all-zero block: any scale reproduces it
    quantised = np.clip(np.rint(blocks / scales[..., None]), -127, 127) + 128
    return quantised.astype(np.uint8), scales.astype(np.float32)


def gemm_to_matmul_nbits(model: onnx.ModelProto, block_size: int = 128) -> onnx.ModelProto:
    """Every ``Gemm`` with constant weights (alpha = beta = 1, as torch's Linear exports) -> 8-bit MatMulNBits."""
    out = onnx.ModelProto()
    out.CopyFrom(model)
    graph = out.graph
    initializers = {t.name: t for t in graph.initializer}
    nodes: list[onnx.NodeProto] = []
    replaced: set[str] = set()
    for node in graph.node:
        attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
        if (
            node.op_type != "Gemm"
            or node.input[1] not in initializers
            or attrs.get("transA", 0) != 0
            or attrs.get("alpha", 1.0) != 1.0
            or attrs.get("beta", 1.0) != 1.0
        ):
            nodes.append(node)
            continue
        weight = numpy_helper.to_array(initializers[node.input[1]])
        if not attrs.get("transB", 0):
            weight = weight.T  # MatMulNBits wants [N, K], torch's Linear weight layout
        quantised, scales = pack_int8_blocks(weight, block_size)
        q_name, s_name = f"{node.input[1]}_int8_blocks", f"{node.input[1]}_block_scales"
        graph.initializer.extend([numpy_helper.from_array(quantised, q_name), numpy_helper.from_array(scales, s_name)])
        bias = node.input[2] if len(node.input) > 2 else ""
        nodes.append(
            helper.make_node(
                "MatMulNBits",
                [node.input[0], q_name, s_name, "", "", bias],  # no zero points (128), no g_idx
                list(node.output),
                name=f"{node.name or node.output[0]}_int8_blocks",
                domain="com.microsoft",
                K=weight.shape[1],
                N=weight.shape[0],
                bits=8,
                block_size=block_size,
                accuracy_level=4,  # int8 x int8 arithmetic (VNNI / ARM dot products)
            )
        )
        replaced.add(node.input[1])
    del graph.node[:]
    graph.node.extend(nodes)
    kept = [t for t in graph.initializer if t.name not in replaced]
    del graph.initializer[:]
    graph.initializer.extend(kept)
    if replaced and not any(o.domain == "com.microsoft" for o in out.opset_import):
        out.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return out


def _quantize_weights(model_path: Path, out_path: Path, scheme: str) -> None:
    """Every ``Gemm`` of ``model_path`` with int8 weights, by ``scheme``.

    - ``dynamic`` (default): ``quantize_dynamic``, one scale per weight matrix, activations quantised per
      call. Standard ONNX operators only (DynamicQuantizeLinear, MatMulInteger), so the file runs on any
      onnxruntime build, old Jetson builds included.
    - ``block``: onnxruntime's ``MatMulNBits`` (com.microsoft) with 8-bit weights, one scale per 128
      weights, int8 arithmetic (accuracy_level 4). Faster per PHP-sized step: its batch-1 kernel streams
      the weights better. It needs onnxruntime >= 1.22 (8-bit MatMulNBits on the CPU); older builds
      refuse to load the file, so the bundle fails at load.
    """
    if scheme == "dynamic":
        _quantize_dynamic_weights(model_path, out_path)
    elif scheme == "block":
        onnx.save(gemm_to_matmul_nbits(onnx.load(model_path)), out_path)
    else:
        raise ValueError(f"weight scheme {scheme!r} is not one of {', '.join(WEIGHT_SCHEMES)}")


def quantize_student(fp32_path: Path, out_path: Path, scheme: str = "dynamic") -> None:
    """The recurrent student: int8 MLP weights; the GRU stays fp32 (the module docstring says why)."""
    _quantize_weights(fp32_path, out_path, scheme)


def quantize_backbone(
    fp32_path: Path,
    out_path: Path,
    calibration_frames: list[np.ndarray] | None,
    input_name: str = "depth",
    scheme: str = "dynamic",
) -> None:
    """The depth backbone: ELU rewrite, int8 Gemm weights, and static int8 convs if frames are given.

    The static int8 convolutions (QDQ, per-channel weights) are those with more than one input channel:
    the second (3x3, 32->64: 60% of the backbone's arithmetic). The first convolution stays fp32: with one
    input channel int8 is slower.
    ``calibration_frames`` are preprocessed policy images ([H, W] float32, as the runtime feeds
    them); their activation ranges fix the int8 scales of the convolutions, so they must look like
    what the robot will see (for a trained model: frames from its training distribution).
    """
    from onnxruntime.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_static

    with tempfile.TemporaryDirectory() as tmp:
        rewritten = Path(tmp) / "rewritten.onnx"
        model = rewrite_elu(onnx.load(fp32_path), min_elements=ELU_REWRITE_MIN_ELEMENTS)
        onnx.save(model, rewritten)
        convs = _convs_to_quantize(model)
        if calibration_frames and convs:
            static = Path(tmp) / "static.onnx"
            with _quiet_quantizer():
                quantize_static(
                    rewritten,
                    static,
                    _FrameReader(input_name, calibration_frames),  # type: ignore[arg-type]
                    quant_format=QuantFormat.QDQ,
                    op_types_to_quantize=["Conv"],
                    nodes_to_quantize=convs,
                    per_channel=True,
                    activation_type=QuantType.QUInt8,
                    weight_type=QuantType.QInt8,
                    reduce_range=True,  # 7-bit weights: see _quantize_dynamic_weights
                    calibrate_method=CalibrationMethod.MinMax,
                )
            rewritten = static
        _quantize_weights(rewritten, out_path, scheme)
