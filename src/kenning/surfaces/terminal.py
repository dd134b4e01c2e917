"""Text on its way to a terminal: every control character made visible, except kenning's own styles.

Documents, file names and index rows may hold escape sequences: a clear-screen, an OSC 8 link that
shows one address and opens another, a window title, an 8-bit CSI (U+009B), a carriage return that
overwrites what was printed, bidirectional overrides that show text in another order than it is
("Trojan source"). None of them reaches the terminal as itself. `visible` turns each into something
a reader sees (ESC becomes ␛, other C0 controls their control pictures, DEL ␡, and C1 controls, bidi
controls and unpaired surrogates a \\uXXXX escape); newlines and tabs stay.

kenning's own colours and links are written with `OWN_ESC` in place of ESC: a marker made afresh in
each process, so no document can hold it. `SafeStream` wraps stdout and stderr for a command: it
makes everything visible, then turns the marker back into ESC.
"""

from __future__ import annotations

import secrets

OWN_ESC = "\ue000" + secrets.token_hex(8) + "\ue001"  # kenning's own ESC, unguessable by a document

_BIDI = (0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A))


def _escape(code: int) -> str:
    return f"\\u{code:04x}"


_TABLE: dict[int, str] = {c: chr(0x2400 + c) for c in range(0x20) if c not in (0x09, 0x0A)}
_TABLE[0x1B] = "\u241b"
_TABLE[0x7F] = "\u2421"
_TABLE.update({c: _escape(c) for c in (*range(0x80, 0xA0), *_BIDI, *range(0xD800, 0xE000))})
_JSON_TABLE = {c: _escape(c) for c in (*range(0x80, 0xA0), *_BIDI, *range(0xD800, 0xE000))}


def visible(text: str) -> str:
    """`text` with every control character shown instead of obeyed (see the module docstring)."""
    return text.translate(_TABLE)


def terminal_safe(text: str) -> str:
    """What may be written to a terminal: `visible` text, with kenning's own escapes restored."""
    return visible(text).replace(OWN_ESC, "\x1b")


def json_safe(text: str) -> str:
    """JSON text whose strings hold no C1 or bidi control and no unpaired surrogate as itself:
    written as \\u escapes, which every JSON reader turns back into the same characters (C0
    controls are escaped by json.dumps already)."""
    return text.translate(_JSON_TABLE)


def quote_path(path: str) -> str:
    """A file name on one line: as it is, or, when it holds a control character, a quote or a
    backslash, in double quotes with C escapes (\\n, \\t, \\", \\\\, \\xNN), as git shows such names."""
    if path.isprintable() and '"' not in path and "\\" not in path:
        return path
    out = []
    for ch in path:
        code = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif ch == "\n":
            out.append("\\n")
        elif ch == "\t":
            out.append("\\t")
        elif code < 0x20 or code == 0x7F:
            out.append(f"\\x{code:02x}")
        elif not ch.isprintable() or 0xD800 <= code < 0xE000:
            out.append(_escape(code))
        else:
            out.append(ch)
    return '"' + "".join(out) + '"'


class SafeStream:
    """A text stream that writes `terminal_safe` text to the stream it wraps; everything else (isatty,
    fileno, flush, encoding) is the wrapped stream's."""

    def __init__(self, stream):
        self.wrapped = stream

    def write(self, text: str) -> int:
        self.wrapped.write(terminal_safe(text))
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def __getattr__(self, name):
        return getattr(self.wrapped, name)
