"""Build a tiny cross-encoder directory for tests: model.onnx, tokenizer.json and config.json.

No downloaded weights and no `onnx` package: the ONNX ModelProto is written with a minimal protobuf
encoder below (field numbers from onnx.proto), and onnxruntime validates it when it loads.

The model: each token id looks up a 2-d embedding; the embeddings of the *passage* tokens (attention
mask 1 and token type 1, i.e. segment B including its closing [SEP]) are averaged; a linear layer
turns the average into logits. Dimension 0 of the embedding is 1 for the word "zebra" only, and the
positive logit is 10 x dimension 0, so a passage scores 10 x (its share of "zebra" tokens). Query
tokens (type 0) do not count, so wrong token_type_ids or a wrong attention mask change the scores.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

VOCAB = {"[PAD]": 0, "[UNK]": 1, "[CLS]": 2, "[SEP]": 3, "zebra": 4, "cat": 5, "dog": 6, "the": 7, "horse": 8}
ZEBRA_WEIGHT = 10.0


# ------------------------------------------------------------------------------ protobuf, by hand
def _varint(n: int) -> bytes:
    if n < 0:
        n += 1 << 64
    out = bytearray()
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _int(field: int, n: int) -> bytes:
    return _varint(field << 3) + _varint(n)


def _bytes(field: int, data: bytes | str) -> bytes:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return _varint((field << 3) | 2) + _varint(len(data)) + data


FLOAT, INT64 = 1, 7  # TensorProto.DataType


def _tensor(name: str, array: np.ndarray) -> bytes:
    dtype = {np.dtype(np.float32): FLOAT, np.dtype(np.int64): INT64}[array.dtype]
    body = b"".join(_int(1, d) for d in array.shape) + _int(2, dtype) + _bytes(8, name)
    return body + _bytes(9, np.ascontiguousarray(array).astype(array.dtype.newbyteorder("<")).tobytes())


def _value_info(name: str, elem_type: int, dims: list[int | str]) -> bytes:
    shape = b"".join(_bytes(1, _int(1, d) if isinstance(d, int) else _bytes(2, d)) for d in dims)
    tensor_type = _int(1, elem_type) + _bytes(2, shape)
    return _bytes(1, name) + _bytes(2, _bytes(1, tensor_type))


def _attr_int(name: str, value: int) -> bytes:
    return _bytes(1, name) + _int(3, value) + _int(20, 2)  # type INT


def _node(op: str, inputs: list[str], outputs: list[str], attrs: list[bytes] = ()) -> bytes:
    body = b"".join(_bytes(1, i) for i in inputs) + b"".join(_bytes(2, o) for o in outputs)
    body += _bytes(3, f"{op}_{outputs[0]}") + _bytes(4, op)
    return body + b"".join(_bytes(5, a) for a in attrs)


def model_bytes(n_classes: int = 2) -> bytes:
    dim = 2
    emb = np.zeros((len(VOCAB), dim), dtype=np.float32)
    emb[VOCAB["zebra"], 0] = 1.0
    emb[:, 1] = 1.0  # a constant feature, to give the class-0 logit something to read
    if n_classes == 2:
        weight = np.array([[0.0, ZEBRA_WEIGHT], [1.0, 0.0]], dtype=np.float32)  # class 0 = 1, class 1 = 10*z
    else:
        weight = np.array([[ZEBRA_WEIGHT], [0.0]], dtype=np.float32)
    inits = [
        _tensor("emb", emb),
        _tensor("W", weight),
        _tensor("axis1", np.array([1], dtype=np.int64)),
        _tensor("axis2", np.array([2], dtype=np.int64)),
        _tensor("eps", np.array([1e-6], dtype=np.float32)),
    ]
    nodes = [
        _node("Gather", ["emb", "input_ids"], ["e"]),
        _node("Cast", ["attention_mask"], ["m"], [_attr_int("to", FLOAT)]),
        _node("Cast", ["token_type_ids"], ["t"], [_attr_int("to", FLOAT)]),
        _node("Mul", ["m", "t"], ["w"]),
        _node("Unsqueeze", ["w", "axis2"], ["w3"]),
        _node("Mul", ["e", "w3"], ["ew"]),
        _node("ReduceSum", ["ew", "axis1"], ["s"], [_attr_int("keepdims", 0)]),
        _node("ReduceSum", ["w", "axis1"], ["n"], [_attr_int("keepdims", 1)]),
        _node("Add", ["n", "eps"], ["n2"]),
        _node("Div", ["s", "n2"], ["mean"]),
        _node("MatMul", ["mean", "W"], ["logits"]),
    ]
    graph = b"".join(_bytes(1, n) for n in nodes) + _bytes(2, "tiny_cross_encoder")
    graph += b"".join(_bytes(5, t) for t in inits)
    for name in ("input_ids", "attention_mask", "token_type_ids"):
        graph += _bytes(11, _value_info(name, INT64, ["batch", "seq"]))
    graph += _bytes(12, _value_info("logits", FLOAT, ["batch", n_classes]))
    opset = _bytes(1, "") + _int(2, 13)
    return _int(1, 8) + _bytes(2, "kenning-tests") + _bytes(7, graph) + _bytes(8, opset)


# ----------------------------------------------------------------------------------- the tokenizer
def write_tokenizer(path: Path, with_template: bool = True) -> None:
    from tokenizers import Tokenizer, models, normalizers, pre_tokenizers, processors

    tok = Tokenizer(models.WordLevel(VOCAB, unk_token="[UNK]"))
    tok.normalizer = normalizers.Lowercase()
    tok.pre_tokenizer = pre_tokenizers.Whitespace()
    if with_template:
        tok.post_processor = processors.TemplateProcessing(
            single="[CLS] $A [SEP]",
            pair="[CLS] $A [SEP] $B:1 [SEP]:1",
            special_tokens=[("[CLS]", VOCAB["[CLS]"]), ("[SEP]", VOCAB["[SEP]"])],
        )
    tok.save(str(path))


def make_cross_encoder(
    directory: Path, *, n_classes: int = 2, max_length: int | None = None, with_template: bool = True
) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "model.onnx").write_bytes(model_bytes(n_classes))
    write_tokenizer(directory / "tokenizer.json", with_template=with_template)
    if max_length is not None:
        config = {"max_position_embeddings": max_length, "num_labels": n_classes}
        (directory / "config.json").write_text(json.dumps(config), encoding="utf-8")
    return directory


def expected_score(passage: str) -> float:
    """What the tiny model gives a passage: 10 x share of "zebra" among its tokens plus the final [SEP]."""
    words = passage.lower().split()
    return ZEBRA_WEIGHT * words.count("zebra") / (len(words) + 1)
