"""Entry point of an analysis worker process (kenning.indexing.analysis): `python -m` this module, so
the classes it sends back pickle under their own module's name, not `__main__`."""

import os

from kenning.indexing.analysis import serve

if __name__ == "__main__":
    serve()
    # the end of input, every answer flushed: leave without tearing the interpreter down, which took
    # ~60 ms (freeing a segment's arrays and the modules) that the writer waited for at each run's end
    os._exit(0)
