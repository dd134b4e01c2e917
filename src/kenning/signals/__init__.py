"""Ranking signals as plugins: the Signal protocol and registry (base), and the built-in signals, each
in its own module: lexical (field-aware BM25), dense (embedding cosine), substring (raw text), graph
(the entity graph)."""

from kenning.signals.base import (
    Channel,
    Knob,
    Learned,
    Signal,
    SignalQuery,
    default_weights,
    explain_signal,
    feedback_channel,
    get,
    register,
    registered,
    signal_knobs,
    unregister,
    version,
)
from kenning.signals.dense import DenseSignal
from kenning.signals.graph import GraphSignal
from kenning.signals.lexical import LexicalSignal
from kenning.signals.substring import SubstringSignal

for _builtin in (LexicalSignal(), DenseSignal(), SubstringSignal(), GraphSignal()):
    register(_builtin)

__all__ = [
    "Channel",
    "Knob",
    "Learned",
    "Signal",
    "SignalQuery",
    "default_weights",
    "explain_signal",
    "feedback_channel",
    "get",
    "register",
    "registered",
    "signal_knobs",
    "unregister",
    "version",
]
