"""Text made well-formed: a str with no unpaired surrogate.

Python holds an unpaired surrogate in a str where bytes that were not UTF-8 were decoded with
`surrogateescape`, or where JSON or YAML wrote one as an escape ("\\ud800"). No UTF-8 encoder, tokenizer,
database driver or JSON writer accepts one, so text from a query or a document is made well-formed
before it goes anywhere: each unpaired surrogate becomes U+FFFD.
"""

from __future__ import annotations

import re

_SURROGATE = re.compile("[\ud800-\udfff]")  # in a str, a surrogate is always unpaired


def has_surrogates(text: str) -> bool:
    """Whether a str holds an unpaired surrogate (ASCII text, the common case, is told at once)."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def well_formed(text: str) -> str:
    """`text` with every unpaired surrogate replaced by U+FFFD."""
    if not has_surrogates(text):
        return text
    return _SURROGATE.sub("\ufffd", text)


def well_formed_data(value):
    """`value` (what JSON or YAML decodes to: dicts, lists, strings, numbers) with every string, keys
    included, made well-formed; walked without recursion, so nesting of any depth is fine. The
    containers are changed in place where a string in them changes; the value is returned."""
    if isinstance(value, str):
        return well_formed(value)
    stack = [value]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            for key in list(node):
                item = node[key]
                if isinstance(key, str) and has_surrogates(key):
                    del node[key]
                    key = well_formed(key)
                    node[key] = item
                if isinstance(item, str):
                    if has_surrogates(item):
                        node[key] = well_formed(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
        elif isinstance(node, list):
            for i, item in enumerate(node):
                if isinstance(item, str):
                    if has_surrogates(item):
                        node[i] = well_formed(item)
                elif isinstance(item, (dict, list)):
                    stack.append(item)
    return value
