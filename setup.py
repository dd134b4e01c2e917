"""kenning's two compiled parts: a segment's raw-token table (kenning.indexing._term_table) and the
query path's per-posting loops (kenning._kernels).

Both optional: where they cannot be compiled, kenning computes the same in Python and NumPy
(kenning.indexing.term_table; for the kernels, kenning.kernels says where), only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "kenning.indexing._term_table",
            ["src/kenning/indexing/_term_table.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "kenning._kernels",
            ["src/kenning/_kernels.c"],
            # no fused multiply-add: the scores must equal NumPy's to the last bit
            extra_compile_args=["-O3", "-ffp-contract=off"],
            optional=True,
        ),
    ]
)
