"""Entry point of an analysis worker process (kenning.indexing.analysis): `python -m` this module, so
the classes it sends back pickle under their own module's name, not `__main__`."""

from kenning.indexing.analysis import serve

if __name__ == "__main__":
    serve()
