"""Models kenning runs but does not train: dense embedders (embed: MiniLM int8 ONNX by default,
sentence-transformers, OpenAI-compatible and Ollama endpoints), rerankers (rerankers: local
cross-encoders, chat endpoints), and the MODEL@URL spec they share (specs). Nothing here downloads."""
