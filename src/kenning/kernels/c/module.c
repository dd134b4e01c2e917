/* kenning.kernels._native: the loops kenning runs in C, one extension made of a file per concern
 * (kenning.kernels wraps it and says where each loop serves):
 *   postings.c  a term's postings on the query path: live postings, roaring bitmaps of chunk ids,
 *               intersections of chunk ids
 *   scoring.c   BM25 scores on the query path: weighing postings, MaxScore top k, top k of scores,
 *               a query's scores summed over every chunk
 *   phrases.c   phrases on stored positions on the query path: the chunks holding a phrase
 *   rows.c      posting rows on the write path: a new segment's, merged segments' joined, packs
 *   idcodec.c   a posting row's chunk ids packed by their gaps, and read back
 * This file is the module: its table of functions.
 */
#include "kernels.h"

static PyMethodDef kernel_methods[] = {
    {"all_live", all_live, METH_VARARGS, all_live_doc},
    {"live_postings", live_postings, METH_VARARGS, live_postings_doc},
    {"roaring_bytes", roaring_bytes, METH_O, roaring_bytes_doc},
    {"roaring_union_bytes", roaring_union_bytes, METH_O, roaring_union_bytes_doc},
    {"intersect_ids", intersect_ids, METH_O, intersect_ids_doc},
    {"weigh", weigh, METH_VARARGS, weigh_doc},
    {"maxscore", maxscore, METH_VARARGS, maxscore_doc},
    {"top_k", top_k, METH_VARARGS, top_k_doc},
    {"sum_scores", sum_scores, METH_VARARGS, sum_scores_doc},
    {"phrase_chunks", phrase_chunks, METH_VARARGS, phrase_chunks_doc},
    {"encode_rows", encode_rows, METH_VARARGS, encode_rows_doc},
    {"join_rows", join_rows, METH_VARARGS, join_rows_doc},
    {"pack_rows", pack_rows, METH_VARARGS, pack_rows_doc},
    {"pack_ids", pack_ids, METH_O, pack_ids_doc},
    {"unpack_ids", unpack_ids, METH_VARARGS, unpack_ids_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_native",
    .m_doc = "Per-posting and per-row loops in C (see kenning.kernels).",
    .m_size = -1,
    .m_methods = kernel_methods,
};

PyMODINIT_FUNC PyInit__native(void) { return PyModule_Create(&module); }
