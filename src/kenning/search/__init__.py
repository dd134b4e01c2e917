"""The read path: one request through named stages (pipeline), each stage a module (gather,
constrain, score, channels, fusion, feedback, verbatim, refine, present), with the request and result
types (request, results) and the state they pass along (context)."""
