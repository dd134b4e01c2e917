"""Files kept beside an index's database, which a new process maps instead of rebuilding: the HNSW
graph over the vectors (ann), the lexical view's arrays (lengths_file), and the seal that says this
user's kenning wrote them (seal). The writer keeps them; readers use them only when sealed and
current. Below both the write path and the signals, so neither reaches into the other for them."""
