"""kenning's two compiled parts: a segment's raw-token table (kenning.indexing._term_table) and the
per-posting and per-row loops of the query and write paths (kenning.kernels._native).

Both optional: where they cannot be compiled, kenning computes the same in Python and NumPy
(kenning.indexing.term_table; for the kernels, kenning.kernels says where), only slower.
"""

from setuptools import Extension, setup

KERNELS = "src/kenning/kernels/c"  # kenning.kernels._native's sources, a file per concern
KERNEL_FILES = ("module", "postings", "scoring", "phrases", "rows", "idcodec")

setup(
    ext_modules=[
        Extension(
            "kenning.indexing._term_table",
            ["src/kenning/indexing/_term_table.c"],
            extra_compile_args=["-O2"],
            optional=True,
        ),
        Extension(
            "kenning.kernels._native",
            [f"{KERNELS}/{name}.c" for name in KERNEL_FILES],
            depends=[f"{KERNELS}/kernels.h"],  # rebuilt when it changes; and shipped in the sdist
            # no fused multiply-add: the scores must equal NumPy's to the last bit; the files' shared
            # functions stay inside the extension (only PyInit__native is exported)
            extra_compile_args=["-O3", "-ffp-contract=off", "-fvisibility=hidden"],
            optional=True,
        ),
    ]
)
