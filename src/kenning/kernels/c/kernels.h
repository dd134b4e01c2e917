/* What the C files of kenning.kernels._native share: the module's functions (module.c lists them), reading
 * Python buffers and stored term frequency columns, releasing a call's buffers, and little-endian
 * stores and loads.
 *
 * The helpers are static inline so that each file compiles them into its own loops (freq_at is read
 * once per posting) and a file that does not use one carries no copy of it.
 */
#ifndef KENNING_KERNELS_H
#define KENNING_KERNELS_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

/* The module's functions, each with its docstring in the file of its concern; module.c's table
 * names them (built with -fvisibility=hidden: only the module's init is exported). */

/* postings.c: a term's postings on the query path */
PyObject *all_live(PyObject *self, PyObject *args);
PyObject *live_postings(PyObject *self, PyObject *args);
PyObject *roaring_bytes(PyObject *self, PyObject *arg);
PyObject *roaring_union_bytes(PyObject *self, PyObject *arg);
PyObject *intersect_ids(PyObject *self, PyObject *arg);
extern const char all_live_doc[], live_postings_doc[], roaring_bytes_doc[], roaring_union_bytes_doc[],
    intersect_ids_doc[];

/* scoring.c: BM25 scores on the query path */
PyObject *weigh(PyObject *self, PyObject *args);
PyObject *maxscore(PyObject *self, PyObject *args);
PyObject *top_k(PyObject *self, PyObject *args);
PyObject *sum_scores(PyObject *self, PyObject *args);
extern const char weigh_doc[], maxscore_doc[], top_k_doc[], sum_scores_doc[];

/* phrases.c: phrases on stored positions on the query path */
PyObject *phrase_chunks(PyObject *self, PyObject *args);
extern const char phrase_chunks_doc[];

/* rows.c: posting rows on the write path */
PyObject *encode_rows(PyObject *self, PyObject *args);
PyObject *join_rows(PyObject *self, PyObject *args);
PyObject *pack_rows(PyObject *self, PyObject *args);
extern const char encode_rows_doc[], join_rows_doc[], pack_rows_doc[];

/* idcodec.c: a posting row's chunk ids packed by their gaps, on both paths */
PyObject *pack_ids(PyObject *self, PyObject *arg);
PyObject *unpack_ids(PyObject *self, PyObject *args);
extern const char pack_ids_doc[], unpack_ids_doc[];
/* the codec itself, for rows.c: a bound on a packed form's size; the packed form of `n` ascending
 * little-endian ids written to `out` and its length, or 0 when it would be no shorter (or they do not
 * ascend); a stored form's count (-1 with ValueError); a stored form's ids (0, or -1 with ValueError) */
size_t ids_packed_bound(size_t n);
size_t ids_pack(const unsigned char *le_ids, size_t n, unsigned char *out);
Py_ssize_t ids_count(const unsigned char *blob, size_t len);
int ids_unpack(const unsigned char *blob, size_t len, uint32_t *out, size_t n);

/* `obj` as a C-contiguous buffer of `itemsize`-byte items, held in `view` (released by the caller) */
static inline int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *name)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->itemsize != itemsize && view->len > 0) {
        PyErr_Format(PyExc_TypeError, "%s: items of %zd bytes expected, got %zd", name, itemsize,
                     view->itemsize);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

/* The first `got` of `views` released (a call's buffers, on its way out). */
static inline void release_views(Py_buffer *views, Py_ssize_t got)
{
    while (got > 0)
        PyBuffer_Release(&views[--got]);
}

/* A call's result: `out`, or NULL (and `out` dropped) when an error is set. */
static inline PyObject *result_or_error(PyObject *out)
{
    if (PyErr_Occurred()) {
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

/* A term frequency column as the stores give it: one or two bytes a posting, or empty when every
 * frequency is zero (width 0). Read in place: widening a common term's columns to uint16 filled
 * new memory the first query of a process pays for page by page. */
typedef struct {
    const unsigned char *buf;
    int width;
} Freqs;

static inline uint16_t freq_at(Freqs f, Py_ssize_t i)
{
    return f.width == 1 ? f.buf[i] : f.width == 2 ? ((const uint16_t *)f.buf)[i] : 0;
}

/* `obj` as a frequency column of `n` postings, held in `view` (released by the caller) */
static inline int get_freqs(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *name, Freqs *out)
{
    if (PyObject_GetBuffer(obj, view, PyBUF_C_CONTIGUOUS) < 0)
        return -1;
    if (view->len == 0) {
        out->buf = NULL, out->width = 0;
        return 0;
    }
    if (!((view->itemsize == 1 || view->itemsize == 2) && view->len / view->itemsize == n)) {
        PyErr_Format(PyExc_ValueError, "%s: one or two bytes for each of %zd postings expected", name, n);
        PyBuffer_Release(view);
        return -1;
    }
    out->buf = (const unsigned char *)view->buf, out->width = (int)view->itemsize;
    return 0;
}

/* The first index in [lo, hi) of ascending uint32 `ids` whose id is >= `target` (hi when none is). */
static inline Py_ssize_t lower_bound_u32(const uint32_t *ids, Py_ssize_t lo, Py_ssize_t hi, uint32_t target)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (ids[mid] < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo;
}

/* little-endian stores and loads, whatever the machine's order */
static inline void put_u16(unsigned char *at, uint32_t v)
{
    at[0] = v & 0xFF;
    at[1] = (v >> 8) & 0xFF;
}

static inline void put_u32(unsigned char *at, uint32_t v)
{
    put_u16(at, v & 0xFFFF);
    put_u16(at + 2, v >> 16);
}

static inline uint32_t get_u16(const unsigned char *at) { return (uint32_t)at[0] | ((uint32_t)at[1] << 8); }

#endif
