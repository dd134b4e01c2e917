"""The one compiled part of kenning: a segment's raw-token table (kenning.indexing._term_table).

Optional: where it cannot be compiled, kenning runs the same table in Python
(kenning.indexing.term_table), only slower to index.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kenning.indexing._term_table",
            ["src/kenning/indexing/_term_table.c"],
            extra_compile_args=["-O2"],
            optional=True,
        )
    ]
)
