/* The query path's per-posting loops, in C: what a term costs the first time a process meets it,
 * and the top-k search over the terms' postings; and on the write path, the encoding of a new
 * segment's rows with their digests (encode_rows, BLAKE2b), the joining of merged segments' rows
 * (join_rows) and the packing of a range's short rows (pack_rows).
 *
 * A common term at a million chunks has ~300k postings. In NumPy, its weighted BM25 scores took
 * ~10 array passes (two fields' saturation, the weights, the idf), its roaring bitmap pyroaring's
 * adding of values (2 ms), and joining its segments' postings without the deleted chunks a
 * concatenation, a mask and three widenings: here each is one pass, or none (postings as stored,
 * read in place). MaxScore (Turtle & Flood 1995) finds the exact top k by windows of chunk ids,
 * weighing only the postings it visits.
 *
 * The arithmetic is NumPy's, operation for operation and in the same order (see
 * kenning.signals.lexical.saturate), so the scores are equal to the last bit: built with
 * -ffp-contract=off, so that no multiply-add is fused. kenning.kernels wraps this module; where it
 * is not built, the NumPy code beside each caller runs instead (kenning.signals.lexical,
 * kenning.signals.pruning, kenning.kernels.arrays), and tests/test_kernels.py holds the two equal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <math.h>
#include <string.h>

#define NO_RUNS_COOKIE 12346u /* roaring's portable format, no run containers */
#define ARRAY_MAX 4096        /* a container of more values is a bitset */

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t itemsize, const char *name)
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
static int get_freqs(PyObject *obj, Py_buffer *view, Py_ssize_t n, const char *name, Freqs *out)
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

static void put_u16(unsigned char *at, uint32_t v)
{
    at[0] = v & 0xFF;
    at[1] = (v >> 8) & 0xFF;
}

static void put_u32(unsigned char *at, uint32_t v)
{
    put_u16(at, v & 0xFFFF);
    put_u16(at + 2, v >> 16);
}

PyDoc_STRVAR(roaring_bytes_doc,
             "roaring_bytes(ids) -> bytes or None\n\n"
             "uint32 ids, ascending and distinct, in roaring's portable serialization (no run\n"
             "containers), for BitMap.deserialize; None when they are not ascending.");

static PyObject *roaring_bytes(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (get_buffer(arg, &view, 4, "ids") < 0)
        return NULL;
    const uint32_t *ids = (const uint32_t *)view.buf;
    Py_ssize_t n = view.len / 4;
    Py_ssize_t containers = 0, payload = 0, card = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (i && ids[i] <= ids[i - 1]) {
            PyBuffer_Release(&view);
            Py_RETURN_NONE;
        }
        if (i == 0 || (ids[i] >> 16) != (ids[i - 1] >> 16)) {
            if (i)
                payload += card <= ARRAY_MAX ? 2 * card : 8192;
            containers++;
            card = 0;
        }
        card++;
    }
    if (n)
        payload += card <= ARRAY_MAX ? 2 * card : 8192;
    Py_ssize_t header = 8 + 8 * containers;
    PyObject *out = PyBytes_FromStringAndSize(NULL, header + payload);
    if (out == NULL) {
        PyBuffer_Release(&view);
        return NULL;
    }
    unsigned char *b = (unsigned char *)PyBytes_AS_STRING(out);
    memset(b, 0, header + payload);
    put_u32(b, NO_RUNS_COOKIE);
    put_u32(b + 4, (uint32_t)containers);
    Py_ssize_t start = 0, c = 0, offset = header;
    while (start < n) {
        Py_ssize_t end = start;
        uint32_t key = ids[start] >> 16;
        while (end < n && (ids[end] >> 16) == key)
            end++;
        Py_ssize_t count = end - start;
        put_u16(b + 8 + 4 * c, key);
        put_u16(b + 8 + 4 * c + 2, (uint32_t)(count - 1));
        put_u32(b + 8 + 4 * containers + 4 * c, (uint32_t)offset);
        unsigned char *at = b + offset;
        if (count <= ARRAY_MAX) {
            for (Py_ssize_t i = start; i < end; i++, at += 2)
                put_u16(at, ids[i] & 0xFFFF);
            offset += 2 * count;
        } else {
            for (Py_ssize_t i = start; i < end; i++) {
                uint32_t low = ids[i] & 0xFFFF;
                at[low >> 3] |= (unsigned char)(1u << (low & 7));
            }
            offset += 8192;
        }
        c++;
        start = end;
    }
    PyBuffer_Release(&view);
    return out;
}

PyDoc_STRVAR(roaring_union_bytes_doc,
             "roaring_union_bytes(ids) -> bytes\n\n"
             "The union of a tuple of uint32 id buffers (any order, repeats allowed) in roaring's portable\n"
             "serialization (no run containers), for BitMap.deserialize: a query's candidates without\n"
             "building each term's bitmap first.");

static PyObject *roaring_union_bytes(PyObject *self, PyObject *arg)
{
    if (!PyTuple_Check(arg)) {
        PyErr_SetString(PyExc_TypeError, "roaring_union_bytes: a tuple of id buffers");
        return NULL;
    }
    Py_ssize_t parts = PyTuple_GET_SIZE(arg), got = 0;
    Py_buffer *views = PyMem_Calloc(parts + 1, sizeof(Py_buffer));
    unsigned char *bits = NULL; /* a 65,536-bit set per container key, up to the largest key */
    PyObject *out = NULL;
    if (views == NULL)
        return PyErr_NoMemory();
    uint32_t top = 0;
    Py_ssize_t total = 0;
    for (; got < parts; got++) {
        if (get_buffer(PyTuple_GET_ITEM(arg, got), &views[got], 4, "ids") < 0)
            goto done;
        const uint32_t *ids = (const uint32_t *)views[got].buf;
        Py_ssize_t n = views[got].len / 4;
        for (Py_ssize_t i = 0; i < n; i++)
            top = ids[i] > top ? ids[i] : top;
        total += n;
    }
    size_t keys = total ? (size_t)(top >> 16) + 1 : 0;
    bits = PyMem_Calloc(keys ? keys : 1, 8192);
    if (bits == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t p = 0; p < parts; p++) {
        const uint32_t *ids = (const uint32_t *)views[p].buf;
        Py_ssize_t n = views[p].len / 4;
        for (Py_ssize_t i = 0; i < n; i++) {
            uint32_t id = ids[i];
            bits[(size_t)(id >> 16) * 8192 + ((id & 0xFFFF) >> 3)] |= (unsigned char)(1u << (id & 7));
        }
    }
    /* each container's cardinality, then the sizes */
    Py_ssize_t containers = 0, payload = 0;
    uint32_t *cards = PyMem_Calloc(keys ? keys : 1, sizeof(uint32_t));
    if (cards == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    for (size_t k = 0; k < keys; k++) {
        uint32_t card = 0;
        for (int w = 0; w < 1024; w++) {
            uint64_t word;
            memcpy(&word, bits + k * 8192 + 8 * w, 8);
            card += (uint32_t)__builtin_popcountll(word);
        }
        cards[k] = card;
        if (card) {
            containers++;
            payload += card <= ARRAY_MAX ? 2 * card : 8192;
        }
    }
    Py_ssize_t header = 8 + 8 * containers;
    out = PyBytes_FromStringAndSize(NULL, header + payload);
    if (out == NULL) {
        PyMem_Free(cards);
        goto done;
    }
    unsigned char *b = (unsigned char *)PyBytes_AS_STRING(out);
    put_u32(b, NO_RUNS_COOKIE);
    put_u32(b + 4, (uint32_t)containers);
    Py_ssize_t c = 0, offset = header;
    for (size_t k = 0; k < keys; k++) {
        uint32_t card = cards[k];
        if (!card)
            continue;
        const unsigned char *set = bits + k * 8192;
        put_u16(b + 8 + 4 * c, (uint32_t)k);
        put_u16(b + 8 + 4 * c + 2, card - 1);
        put_u32(b + 8 + 4 * containers + 4 * c, (uint32_t)offset);
        unsigned char *at = b + offset;
        if (card <= ARRAY_MAX) {
            for (uint32_t byte = 0; byte < 8192; byte++) {
                unsigned v = set[byte];
                while (v) {
                    unsigned bit = (unsigned)__builtin_ctz(v);
                    v &= v - 1;
                    put_u16(at, (byte << 3) | bit);
                    at += 2;
                }
            }
            offset += 2 * card;
        } else {
            memcpy(at, set, 8192); /* bit i of the set is bit (i & 7) of byte i >> 3: roaring's layout */
            offset += 8192;
        }
        c++;
    }
    PyMem_Free(cards);
done:
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(bits);
    return out;
}

/* A field's length normalisation, and the saturated term frequency of one field from it: together
 * what kenning.signals.lexical.saturate computes, in its order of operations. */
static double field_norm(double length, double avg, double b)
{
    return (1.0 - b) + b * (avg > 0 ? length / avg : 1.0);
}

static double saturate_norm(double tf, double norm, int variant, double k1, double delta)
{
    if (variant == 0)
        return tf * (k1 + 1.0) / (tf + k1 * norm);
    if (variant == 1)
        return tf * (k1 + 1.0) / (tf + k1 * norm) + delta;
    double c = tf / norm + delta;
    return (k1 + 1.0) * c / (k1 + c);
}

/* A common term's postings meet the same few thousand field lengths over and over, and each
 * saturation cost two divisions (168k postings of one word at 1M chunks: ~4 ms). From TABLE_FROM postings a
 * call first tabulates, for the lengths below NORM_TABLE, each field's norm and its saturation at
 * tf 1 (most postings): each entry is the same expression on the same values, so the scores do not
 * change by a bit. */
#define NORM_TABLE 4096
#define TABLE_FROM 16384

typedef struct {
    const double *norm, *once; /* by length below NORM_TABLE; NULL: no table */
    double avg;
} FieldTable;

static double saturate_field(const FieldTable *t, uint16_t tf, uint16_t length, int variant, double k1,
                             double b, double delta)
{
    if (t->norm != NULL && length < NORM_TABLE)
        return tf == 1 ? t->once[length] : saturate_norm((double)tf, t->norm[length], variant, k1, delta);
    return saturate_norm((double)tf, field_norm((double)length, t->avg, b), variant, k1, delta);
}

static void fill_table(double *norm, double *once, double avg, int variant, double k1, double b,
                       double delta)
{
    for (int length = 0; length < NORM_TABLE; length++) {
        norm[length] = field_norm((double)length, avg, b);
        once[length] = saturate_norm(1.0, norm[length], variant, k1, delta);
    }
}

/* What weighing one posting needs besides the posting: the fields' lengths by chunk id, the BM25
 * parameters and the fields' tables (when tabulated). */
typedef struct {
    const uint16_t *tl, *bl;
    Py_ssize_t chunks;
    int variant;
    double k1, b, delta, tw, bw;
    FieldTable title, body;
} Weighing;

/* One posting's weighted score: idf x (tw x S_title + bw x S_body). A field's saturation only where
 * the term occurs in it: most postings have no title occurrence, and the branch is well predicted.
 * weigh() and MaxScore's scores on demand both call this, so they agree to the last bit. */
static inline double weigh_one(const Weighing *w, uint16_t tft, uint16_t tfb, uint32_t id, double idf,
                               int use_title, int use_body)
{
    double acc = 0.0;
    if (use_title && tft > 0)
        acc += w->tw * saturate_field(&w->title, tft, w->tl[id], w->variant, w->k1, w->b, w->delta);
    if (use_body && tfb > 0)
        acc += w->bw * saturate_field(&w->body, tfb, w->bl[id], w->variant, w->k1, w->b, w->delta);
    return idf * acc;
}

PyDoc_STRVAR(weigh_doc,
             "weigh(ids, tf_title, tf_body, title_len, body_len, avg_title, avg_body, variant, k1, b,\n"
             "      delta, title_weight, body_weight, idf, use_title, use_body) -> bytes\n\n"
             "Each posting's weighted BM25 score as float64 bytes: idf x (title_weight x S_title +\n"
             "body_weight x S_body), a field left out when its use_ flag is 0. ids: uint32; tf_*: one or\n"
             "two bytes per posting, or empty (all zero); *_len: uint16 per chunk id; variant 0\n"
             "classic, 1 plus, 2 l.");

static PyObject *weigh(PyObject *self, PyObject *args)
{
    PyObject *ids_o, *tft_o, *tfb_o, *tl_o, *bl_o;
    double avg_t, avg_b, k1, b, delta, tw, bw, idf;
    int variant, use_title, use_body;
    if (!PyArg_ParseTuple(args, "OOOOOddiddddddpp", &ids_o, &tft_o, &tfb_o, &tl_o, &bl_o, &avg_t, &avg_b,
                          &variant, &k1, &b, &delta, &tw, &bw, &idf, &use_title, &use_body))
        return NULL;
    if (variant < 0 || variant > 2) {
        PyErr_SetString(PyExc_ValueError, "variant: 0, 1 or 2");
        return NULL;
    }
    /* ids (uint32), title and body lengths (uint16 a chunk id); then the frequencies as stored */
    PyObject *objects[3] = {ids_o, tl_o, bl_o};
    static const Py_ssize_t itemsizes[3] = {4, 2, 2};
    static const char *names[3] = {"ids", "title_len", "body_len"};
    Py_buffer views[5];
    int got = 0;
    PyObject *out = NULL;
    double *tables = NULL; /* the fields' norm tables, for a common term */
    for (; got < 3; got++)
        if (get_buffer(objects[got], &views[got], itemsizes[got], names[got]) < 0)
            goto done;
    Py_buffer ids_v = views[0], tl_v = views[1], bl_v = views[2];
    Py_ssize_t n = ids_v.len / 4, chunks = tl_v.len / 2;
    Freqs tft, tfb;
    if (get_freqs(tft_o, &views[got], n, "tf_title", &tft) < 0)
        goto done;
    got++;
    if (get_freqs(tfb_o, &views[got], n, "tf_body", &tfb) < 0)
        goto done;
    got++;
    if (bl_v.len / 2 != chunks) {
        PyErr_SetString(PyExc_ValueError, "weigh: columns of different lengths");
        goto done;
    }
    const uint32_t *ids = (const uint32_t *)ids_v.buf;
    const uint16_t *tl = (const uint16_t *)tl_v.buf, *bl = (const uint16_t *)bl_v.buf;
    for (Py_ssize_t i = 0; i < n; i++) {
        if (ids[i] >= chunks) {
            PyErr_Format(PyExc_IndexError, "weigh: chunk id %lu has no length", (unsigned long)ids[i]);
            goto done;
        }
    }
    out = PyBytes_FromStringAndSize(NULL, n * 8);
    if (out == NULL)
        goto done;
    FieldTable title = {NULL, NULL, avg_t}, body = {NULL, NULL, avg_b};
    if (n >= TABLE_FROM) {
        tables = PyMem_Malloc(4 * NORM_TABLE * sizeof(double));
        if (tables == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        fill_table(tables, tables + NORM_TABLE, avg_t, variant, k1, b, delta);
        fill_table(tables + 2 * NORM_TABLE, tables + 3 * NORM_TABLE, avg_b, variant, k1, b, delta);
        title.norm = tables, title.once = tables + NORM_TABLE;
        body.norm = tables + 2 * NORM_TABLE, body.once = tables + 3 * NORM_TABLE;
    }
    double *restrict w = (double *)PyBytes_AS_STRING(out);
    Weighing how = {tl, bl, chunks, variant, k1, b, delta, tw, bw, title, body};
    for (Py_ssize_t i = 0; i < n; i++)
        w[i] = weigh_one(&how, freq_at(tft, i), freq_at(tfb, i), ids[i], idf, use_title, use_body);
done:
    PyMem_Free(tables);
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    if (PyErr_Occurred()) {
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- live postings */

PyDoc_STRVAR(all_live_doc,
             "all_live(ids, live) -> bool\n\n"
             "Whether the bool buffer `live` marks every one of the uint32 `ids`: then a segment's\n"
             "postings serve as stored, with no copy.");

static PyObject *all_live(PyObject *self, PyObject *args)
{
    PyObject *ids_o, *live_o;
    if (!PyArg_ParseTuple(args, "OO", &ids_o, &live_o))
        return NULL;
    Py_buffer ids_v, live_v;
    if (get_buffer(ids_o, &ids_v, 4, "ids") < 0)
        return NULL;
    if (get_buffer(live_o, &live_v, 1, "live") < 0) {
        PyBuffer_Release(&ids_v);
        return NULL;
    }
    const uint32_t *ids = (const uint32_t *)ids_v.buf;
    const unsigned char *live = (const unsigned char *)live_v.buf;
    Py_ssize_t n = ids_v.len / 4, live_n = live_v.len, dead = 0;
    for (Py_ssize_t i = 0; i < n; i++) /* counted, not stopped at: no branch in the loop */
        dead += !(ids[i] < live_n && live[ids[i]]);
    PyBuffer_Release(&ids_v);
    PyBuffer_Release(&live_v);
    return PyBool_FromLong(dead == 0);
}

PyDoc_STRVAR(live_postings_doc,
             "live_postings(parts, live) -> (ids, tf_title, tf_body)\n\n"
             "One term's postings from its segments' parts, each (uint32 ids, title and body term\n"
             "frequencies as uint8 or uint16, or empty when all zero), in the order given, keeping the\n"
             "chunks the bool buffer `live` marks: uint32 ids, uint16 frequencies (bytes).");

static PyObject *live_postings(PyObject *self, PyObject *args)
{
    PyObject *parts, *live_o;
    if (!PyArg_ParseTuple(args, "O!O", &PyTuple_Type, &parts, &live_o))
        return NULL;
    Py_ssize_t n_parts = PyTuple_GET_SIZE(parts), got = 0, total = 0;
    Py_buffer *views = PyMem_Calloc(3 * n_parts + 1, sizeof(Py_buffer));
    Freqs *freqs = PyMem_Calloc(2 * n_parts + 1, sizeof(Freqs)); /* each part's title, body */
    PyObject *ids_out = NULL, *tft_out = NULL, *tfb_out = NULL, *result = NULL;
    if (views == NULL || freqs == NULL) {
        PyMem_Free(views);
        PyMem_Free(freqs);
        return PyErr_NoMemory();
    }
    if (get_buffer(live_o, &views[got], 1, "live") < 0)
        goto done;
    got++;
    const unsigned char *live = (const unsigned char *)views[0].buf;
    Py_ssize_t live_n = views[0].len;
    for (Py_ssize_t p = 0; p < n_parts; p++) {
        PyObject *part = PyTuple_GET_ITEM(parts, p);
        if (!PyTuple_Check(part) || PyTuple_GET_SIZE(part) != 3) {
            PyErr_SetString(PyExc_TypeError, "live_postings: each part is (ids, tf_title, tf_body)");
            goto done;
        }
        if (get_buffer(PyTuple_GET_ITEM(part, 0), &views[got], 4, "ids") < 0)
            goto done;
        got++;
        Py_ssize_t n = views[got - 1].len / 4;
        for (int f = 0; f < 2; f++) {
            if (get_freqs(PyTuple_GET_ITEM(part, 1 + f), &views[got], n, f ? "tf_body" : "tf_title",
                          &freqs[2 * p + f]) < 0)
                goto done;
            got++;
        }
        total += n;
    }
    ids_out = PyBytes_FromStringAndSize(NULL, total * 4);
    tft_out = PyBytes_FromStringAndSize(NULL, total * 2);
    tfb_out = PyBytes_FromStringAndSize(NULL, total * 2);
    if (ids_out == NULL || tft_out == NULL || tfb_out == NULL)
        goto done;
    uint32_t *oi = (uint32_t *)PyBytes_AS_STRING(ids_out);
    uint16_t *ot = (uint16_t *)PyBytes_AS_STRING(tft_out), *ob = (uint16_t *)PyBytes_AS_STRING(tfb_out);
    Py_ssize_t kept = 0;
    for (Py_ssize_t p = 0; p < n_parts; p++) {
        const Py_buffer *iv = &views[1 + 3 * p];
        const Freqs tv = freqs[2 * p], bv = freqs[2 * p + 1];
        const uint32_t *ids = (const uint32_t *)iv->buf;
        Py_ssize_t n = iv->len / 4;
        for (Py_ssize_t i = 0; i < n; i++) {
            /* written always, kept (the count moves on) only when live: no branch to mispredict */
            oi[kept] = ids[i];
            ot[kept] = freq_at(tv, i);
            ob[kept] = freq_at(bv, i);
            kept += ids[i] < live_n && live[ids[i]];
        }
    }
    if (_PyBytes_Resize(&ids_out, kept * 4) < 0 || _PyBytes_Resize(&tft_out, kept * 2) < 0 ||
        _PyBytes_Resize(&tfb_out, kept * 2) < 0)
        goto done;
    result = PyTuple_Pack(3, ids_out, tft_out, tfb_out);
done:
    Py_XDECREF(ids_out);
    Py_XDECREF(tft_out);
    Py_XDECREF(tfb_out);
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    PyMem_Free(freqs);
    return result;
}

/* ---------------------------------------------------------------- MaxScore */

typedef struct {
    const uint32_t *ids;
    const double *scores; /* each posting's score, or NULL: weighed when needed, from the below */
    Freqs tft, tfb;
    double idf, weight; /* weight: the clause's (query term frequency, boost); 1.0 none */
    int use_title, use_body;
    Py_ssize_t n, at; /* postings (of this list), cursor */
    double max;       /* the largest score in the list */
    const uint32_t *sel; /* a term's title part: the offsets of its postings with a title hit */
    int rest;            /* a term's other part: its postings with a title hit are not in it */
    Py_ssize_t term;     /* the query term the list is, or is a part of */
} Cursor;

/* A common term's title hits are split from its other postings into a list of their own (from
 * SPLIT_FROM postings, when it has both kinds): a title hit in a short chunk gives the whole term a
 * bound several times what its body-only postings can score (title weight 2), which kept every
 * common word of a query essential, every one of its postings visited. Its body-only part has its own,
 * lower bound and stops being essential much sooner. A chunk is in one part of a term or the other,
 * so sums and matches stay those of the unsplit term. */
#define SPLIT_FROM 4096

/* the offset in its term's arrays of a cursor position (a title part counts its own postings) */
static inline Py_ssize_t posting_of(const Cursor *c, Py_ssize_t at) { return c->sel ? (Py_ssize_t)c->sel[at] : at; }

static inline uint32_t id_of(const Cursor *c, Py_ssize_t at) { return c->ids[posting_of(c, at)]; }

/* whether the posting at a cursor position is the other part's (a title hit, for a rest part) */
static inline int not_in_list(const Cursor *c, Py_ssize_t at) { return c->rest && freq_at(c->tft, at) > 0; }

/* A posting's score: given, or weighed as weigh() weighs it, then times the clause's weight as
 * kenning.signals.pruning multiplies the weighed scores. `bad` is set for an id without a length. */
static inline double cursor_score(const Cursor *c, Py_ssize_t at, const Weighing *w, int *bad)
{
    if (c->scores != NULL)
        return c->scores[at];
    Py_ssize_t p = posting_of(c, at);
    uint32_t id = c->ids[p];
    if (id >= w->chunks) {
        *bad = 1;
        return 0.0;
    }
    double s = weigh_one(w, freq_at(c->tft, p), freq_at(c->tfb, p), id, c->idf, c->use_title, c->use_body);
    return c->weight != 1.0 ? s * c->weight : s;
}

/* A bound on the scores of a cursor's list without weighing its postings: each used field's largest
 * term frequency, saturated at the shortest norm a field can have (length 0: 1 - b), weighed as a
 * posting is. A field's saturation rises with its frequency and falls as the field grows longer (b in
 * [0, 1], k1 and delta >= 0, as Bm25Params holds them), so no posting scores above it. One pass over
 * the frequencies, not over the lengths: finding the exact maximum (a term's first query in a process)
 * read every posting's lengths, and over the scale benchmark's 1M queries the kernel with it took
 * mean / p95 2.1 / 5.2 ms against 1.3 / 3.0 ms with this bound, the same results. A list of given
 * scores gets its exact maximum. */
static double cursor_max(const Cursor *c, const Weighing *w)
{
    if (c->n == 0)
        return 0.0;
    if (c->scores != NULL) {
        double best = -INFINITY;
        for (Py_ssize_t i = 0; i < c->n; i++)
            if (c->scores[i] > best)
                best = c->scores[i];
        return best;
    }
    uint16_t most_title = 0, most_body = 0;
    const int title = c->use_title && c->tft.width, body = c->use_body && c->tfb.width;
    for (Py_ssize_t at = 0; at < c->n; at++) { /* (a rest part's postings have no title hit) */
        if (not_in_list(c, at))
            continue;
        Py_ssize_t p = posting_of(c, at);
        uint16_t t = title ? freq_at(c->tft, p) : 0, b = body ? freq_at(c->tfb, p) : 0;
        most_title = t > most_title ? t : most_title;
        most_body = b > most_body ? b : most_body;
    }
    /* the shortest norm, kept above zero: BM25L divides by it (b = 1 makes it 0) */
    double shortest = 1.0 - w->b > 1e-300 ? 1.0 - w->b : 1e-300;
    double acc = 0.0;
    if (most_title)
        acc += w->tw * saturate_norm((double)most_title, shortest, w->variant, w->k1, w->delta);
    if (most_body)
        acc += w->bw * saturate_norm((double)most_body, shortest, w->variant, w->k1, w->delta);
    double bound = c->idf * acc * (1.0 + 1e-9); /* (a hair above, for rounding) */
    return c->weight != 1.0 ? bound * c->weight : bound;
}


typedef struct {
    double score;
    int64_t id;
} Scored;

/* a is worse than b: a lower score, or the same score and a higher id (ties go to the lower id) */
static int worse(Scored a, Scored b) { return a.score < b.score || (a.score == b.score && a.id > b.id); }

/* a min-heap on "worse": the root is the worst of the k kept */
static void sift_down(Scored *heap, Py_ssize_t size, Py_ssize_t i)
{
    for (;;) {
        Py_ssize_t l = 2 * i + 1, r = l + 1, w = i;
        if (l < size && worse(heap[l], heap[w]))
            w = l;
        if (r < size && worse(heap[r], heap[w]))
            w = r;
        if (w == i)
            return;
        Scored t = heap[i];
        heap[i] = heap[w];
        heap[w] = t;
        i = w;
    }
}

static void sift_up(Scored *heap, Py_ssize_t i)
{
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!worse(heap[i], heap[parent]))
            return;
        Scored t = heap[i];
        heap[i] = heap[parent];
        heap[parent] = t;
        i = parent;
    }
}

/* the cursor moved to its first posting >= id (galloping, then binary search) */
static void seek(Cursor *c, int64_t id)
{
    Py_ssize_t lo = c->at, step = 1, hi;
    if (lo >= c->n || id_of(c, lo) >= id)
        return;
    hi = lo + 1;
    while (hi < c->n && id_of(c, hi) < id) {
        lo = hi;
        step *= 2;
        hi = lo + step;
    }
    if (hi > c->n)
        hi = c->n;
    while (lo + 1 < hi) { /* ids[lo] < id; ids[hi] >= id or hi == n */
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (id_of(c, mid) < id)
            lo = mid;
        else
            hi = mid;
    }
    c->at = hi;
}

static double coordination(double floor, Py_ssize_t matched, Py_ssize_t clauses)
{
    return floor + (1.0 - floor) * ((double)matched / (double)clauses);
}


/* The essential terms' postings are gathered a window of chunk ids at a time, each term's in one tight
 * loop, into per-window arrays; the window's candidates are then visited in id order from a bitmap.
 * Finding each next candidate as the smallest id under every essential cursor (a chunk at a time)
 * cost more than the gathering: over the scale benchmark's 400 queries at 1M chunks, the kernel's
 * p95 2.9-4.0 -> 2.2-3.3 ms and its slowest query 6.1-8.8 -> 3.7-5.5 ms, same results (windows of
 * 2^8 to 2^14 ids measured; 2^9 and 2^10 best, at 100k chunks too). Lucene's MaxScoreBulkScorer
 * also works by windows. */
#define WINDOW_BITS 10
#define WINDOW (1 << WINDOW_BITS)

/* One window's shared arrays: the offsets touched, and per offset the lists matched and their sum. */
typedef struct {
    uint64_t *touched;
    uint16_t *count;
    double *partial_at;
} Window;

/* A list's posting at window offset `off` with its score: kept in the list's arrays (`v`, `b`) and
 * counted in the window's. */
static inline void put(Window *win, double *v, uint64_t *b, uint32_t off, double score)
{
    v[off] = score;
    b[off >> 6] |= 1ull << (off & 63);
    win->touched[off >> 6] |= 1ull << (off & 63);
    win->count[off]++;
    win->partial_at[off] += score;
}

PyDoc_STRVAR(maxscore_doc,
             "maxscore(ids, scores, maxima, clauses, floor, k, allowed, weighing=None)\n"
             "    -> (ids, scores, scored, essential, maxima)\n\n"
             "The exact top k by summed scores times coordination, ties by ascending id (Turtle &\n"
             "Flood's MaxScore, by windows of chunk ids). ids: a tuple of uint32 buffers (ascending), one per\n"
             "term in the query's order; scores: for each, its float64 scores, or (tf_title, tf_body, idf,\n"
             "weight, use_title, use_body) to weigh the postings it needs as weigh() does, times weight\n"
             "(frequencies as weigh() takes them);\n"
             "then weighing is (title_len, body_len, avg_title, avg_body, variant, k1, b, delta,\n"
             "title_weight, body_weight). A weighed term of SPLIT_FROM postings or more with title hits\n"
             "and other postings is searched as two lists, its title hits and the rest, each bounded on\n"
             "its own. maxima: each term's largest score (a bound: no score may exceed it), or for a\n"
             "split term a (title hits, rest) pair of them, or None to have them found: the exact maximum\n"
             "of given scores, a bound from the largest frequencies for weighed postings (weight must then\n"
             "be >= 0). clauses: the coordination's denominator; floor: its floor (1.0: none); allowed: a\n"
             "bool buffer over chunk ids or None. Returns the top k best first (int64 and float64 bytes),\n"
             "how many chunks were scored, how many terms still had an essential list (candidates came\n"
             "from them) at the end, and the maxima (floats, pairs for split terms).");


static PyObject *maxscore(PyObject *self, PyObject *args)
{
    PyObject *ids_t, *scores_t, *maxima_t, *allowed_o, *weighing_o = Py_None;
    Py_ssize_t clauses, k;
    double floor;
    if (!PyArg_ParseTuple(args, "O!O!O!ndnO|O", &PyTuple_Type, &ids_t, &PyTuple_Type, &scores_t, &PyTuple_Type,
                          &maxima_t, &clauses, &floor, &k, &allowed_o, &weighing_o))
        return NULL;
    Py_ssize_t terms = PyTuple_GET_SIZE(ids_t);
    if (PyTuple_GET_SIZE(scores_t) != terms || PyTuple_GET_SIZE(maxima_t) != terms || clauses < 1 || k < 1 ||
        terms > clauses) {
        PyErr_SetString(PyExc_ValueError,
                        "maxscore: one score list and maximum per id list, 1 <= terms <= clauses, k >= 1");
        return NULL;
    }
    /* a term's postings are one list, or two when its title hits are split from the rest
     * (SPLIT_FROM): `lists` of them in all, each term's in the query's order, its title part first */
    const Py_ssize_t most = 2 * terms;
    Py_ssize_t lists = 0;
    Py_buffer *views = PyMem_Calloc(3 * terms + 3, sizeof(Py_buffer));
    Cursor *given = PyMem_Calloc(terms, sizeof(Cursor)); /* each term's postings, whole */
    Cursor *cursors = PyMem_Calloc(most, sizeof(Cursor));
    uint32_t **sels = PyMem_Calloc(terms, sizeof(uint32_t *));
    Py_ssize_t *order = PyMem_Calloc(most, sizeof(Py_ssize_t));
    Py_ssize_t *rank = PyMem_Calloc(most, sizeof(Py_ssize_t));
    double *bound = PyMem_Calloc(most + 1, sizeof(double));
    double *bound_sum = PyMem_Calloc(most + 1, sizeof(double)); /* the first j maxima summed */
    double *found = PyMem_Calloc(most, sizeof(double));
    double *coord = PyMem_Calloc(most + 1, sizeof(double)); /* by matches: no division per chunk */
    char *present = PyMem_Calloc(most, 1);
    Scored *heap = PyMem_Calloc(k, sizeof(Scored));
    /* one window's essential postings: each list's score by offset, the lists present (a bit per
     * list and offset), how many matched and their sum (a bound only), and the offsets touched */
    double *val = PyMem_Calloc((size_t)most * WINDOW, sizeof(double));
    uint64_t *bits = PyMem_Calloc((size_t)most * (WINDOW / 64), sizeof(uint64_t));
    uint64_t *touched = PyMem_Calloc(WINDOW / 64, sizeof(uint64_t));
    uint16_t *count = PyMem_Calloc(WINDOW, sizeof(uint16_t));
    double *partial_at = PyMem_Calloc(WINDOW, sizeof(double));
    Py_ssize_t got = 0, size = 0, scored = 0, essential_from = 0, weighed = 0;
    const unsigned char *allowed = NULL;
    Py_ssize_t allowed_n = 0;
    int has_allowed = 0, bad = 0;
    PyObject *result = NULL, *maxima_out = NULL;
    double *tables = NULL;
    Weighing how = {NULL, NULL, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, {NULL, NULL, 0.0}, {NULL, NULL, 0.0}};
    if (!views || !given || !cursors || !sels || !order || !rank || !bound || !bound_sum || !found || !coord ||
        !present || !heap || !val || !bits || !touched || !count || !partial_at) {
        PyErr_NoMemory();
        goto done;
    }
    if (weighing_o != Py_None) {
        PyObject *tl_o, *bl_o;
        if (!PyArg_ParseTuple(weighing_o, "OOddiddddd", &tl_o, &bl_o, &how.title.avg, &how.body.avg, &how.variant,
                              &how.k1, &how.b, &how.delta, &how.tw, &how.bw))
            goto done;
        if (how.variant < 0 || how.variant > 2) {
            PyErr_SetString(PyExc_ValueError, "maxscore: variant 0, 1 or 2");
            goto done;
        }
        if (get_buffer(tl_o, &views[got], 2, "title_len") < 0)
            goto done;
        got++;
        if (get_buffer(bl_o, &views[got], 2, "body_len") < 0)
            goto done;
        got++;
        how.tl = (const uint16_t *)views[got - 2].buf;
        how.bl = (const uint16_t *)views[got - 1].buf;
        how.chunks = views[got - 2].len / 2;
        if (views[got - 1].len / 2 != how.chunks) {
            PyErr_SetString(PyExc_ValueError, "maxscore: title and body lengths of different lengths");
            goto done;
        }
    }
    for (Py_ssize_t t = 0; t < terms; t++) {
        if (get_buffer(PyTuple_GET_ITEM(ids_t, t), &views[got], 4, "ids") < 0)
            goto done;
        got++;
        Cursor *c = &given[t];
        c->term = t;
        c->ids = (const uint32_t *)views[got - 1].buf;
        c->n = views[got - 1].len / 4;
        c->weight = 1.0;
        PyObject *spec = PyTuple_GET_ITEM(scores_t, t);
        if (PyTuple_Check(spec)) { /* frequencies, weighed when needed */
            PyObject *tft_o, *tfb_o;
            if (weighing_o == Py_None) {
                PyErr_SetString(PyExc_ValueError, "maxscore: frequencies given without weighing");
                goto done;
            }
            if (!PyArg_ParseTuple(spec, "OOddpp", &tft_o, &tfb_o, &c->idf, &c->weight, &c->use_title,
                                  &c->use_body))
                goto done;
            if (get_freqs(tft_o, &views[got], c->n, "tf_title", &c->tft) < 0)
                goto done;
            got++;
            if (get_freqs(tfb_o, &views[got], c->n, "tf_body", &c->tfb) < 0)
                goto done;
            got++;
            weighed += c->n;
        } else {
            if (get_buffer(spec, &views[got], 8, "scores") < 0)
                goto done;
            got++;
            c->scores = (const double *)views[got - 1].buf;
            if (views[got - 1].len / 8 != c->n) {
                PyErr_SetString(PyExc_ValueError, "maxscore: ids and scores of different lengths");
                goto done;
            }
        }
    }
    if (weighed >= TABLE_FROM) { /* as weigh() tabulates a common term's */
        tables = PyMem_Malloc(4 * NORM_TABLE * sizeof(double));
        if (tables == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        fill_table(tables, tables + NORM_TABLE, how.title.avg, how.variant, how.k1, how.b, how.delta);
        fill_table(tables + 2 * NORM_TABLE, tables + 3 * NORM_TABLE, how.body.avg, how.variant, how.k1, how.b,
                   how.delta);
        how.title.norm = tables, how.title.once = tables + NORM_TABLE;
        how.body.norm = tables + 2 * NORM_TABLE, how.body.once = tables + 3 * NORM_TABLE;
    }
    maxima_out = PyTuple_New(terms);
    if (maxima_out == NULL)
        goto done;
    for (Py_ssize_t t = 0; t < terms; t++) {
        Cursor *c = &given[t];
        PyObject *known = PyTuple_GET_ITEM(maxima_t, t), *value;
        Py_ssize_t hits = 0;
        if (c->scores == NULL && c->use_title && c->tft.width && c->n >= SPLIT_FROM)
            for (Py_ssize_t i = 0; i < c->n; i++)
                hits += freq_at(c->tft, i) > 0;
        if (known == Py_None && c->scores == NULL && c->weight < 0) {
            PyErr_SetString(PyExc_ValueError, "maxscore: a bound to find needs weight >= 0");
            goto done;
        }
        if (hits > 0 && hits < c->n && (known == Py_None || PyTuple_Check(known))) {
            uint32_t *sel = sels[t] = PyMem_Malloc((size_t)hits * sizeof(uint32_t));
            if (sel == NULL) {
                PyErr_NoMemory();
                goto done;
            }
            for (Py_ssize_t i = 0, j = 0; i < c->n; i++)
                if (freq_at(c->tft, i) > 0)
                    sel[j++] = (uint32_t)i;
            Cursor *title = &cursors[lists++], *other = &cursors[lists++];
            *title = *c, *other = *c;
            title->sel = sel, title->n = hits;
            other->rest = 1;
            if (known == Py_None) { /* found here (the caller keeps them for the next query) */
                title->max = cursor_max(title, &how);
                other->max = cursor_max(other, &how);
            } else if (!PyArg_ParseTuple(known, "dd", &title->max, &other->max)) {
                goto done;
            }
            value = Py_BuildValue("(dd)", title->max, other->max);
        } else {
            Cursor *whole = &cursors[lists++];
            *whole = *c;
            if (known == Py_None) {
                whole->max = cursor_max(whole, &how);
            } else if (PyTuple_Check(known)) { /* (a split bound for a list not split: their larger) */
                double a, b;
                if (!PyArg_ParseTuple(known, "dd", &a, &b))
                    goto done;
                whole->max = a > b ? a : b;
            } else {
                whole->max = PyFloat_AsDouble(known); /* kept by the caller's cache */
                if (whole->max == -1.0 && PyErr_Occurred())
                    goto done;
            }
            value = PyFloat_FromDouble(whole->max);
        }
        if (value == NULL)
            goto done;
        PyTuple_SET_ITEM(maxima_out, t, value);
    }
    if (allowed_o != Py_None) {
        if (get_buffer(allowed_o, &views[got], 1, "allowed") < 0)
            goto done;
        has_allowed = 1;
        allowed = (const unsigned char *)views[got].buf;
        allowed_n = views[got].len;
        got++;
    }
    for (Py_ssize_t m = 0; m <= lists; m++)
        coord[m] = coordination(floor, m, clauses);
    for (Py_ssize_t j = 0; j < lists; j++)
        order[j] = j;
    /* lists by their largest score, ascending (insertion sort: a query has a few) */
    for (Py_ssize_t i = 1; i < lists; i++)
        for (Py_ssize_t j = i; j > 0 && cursors[order[j]].max < cursors[order[j - 1]].max; j--) {
            Py_ssize_t t = order[j];
            order[j] = order[j - 1];
            order[j - 1] = t;
        }
    for (Py_ssize_t j = 0; j < lists; j++)
        rank[order[j]] = j;
    /* bound[j]: the most a chunk holding only the first j lists of that order can score (the sum of
     * their maxima times the coordination of j matches (more than it can get when two are parts of
     * one term: a bound still), a hair above, for rounding: the exact sums
     * are added in another order) */
    {
        double sum = 0.0;
        bound[0] = 0.0;
        for (Py_ssize_t j = 0; j < lists; j++) {
            sum += cursors[order[j]].max;
            bound_sum[j + 1] = sum;
            bound[j + 1] = sum * coord[j + 1] * (1.0 + 1e-9);
        }
    }
    Window win = {touched, count, partial_at};
    for (;;) {
        /* the window starts at the smallest id under the essential lists' cursors; the lists
         * essential at its start stay so until it ends (their postings in it are gathered, so
         * their cursors cannot be searched for its chunks) */
        const Py_ssize_t ess = essential_from;
        int64_t base = INT64_MAX;
        for (Py_ssize_t j = ess; j < lists; j++) {
            Cursor *c = &cursors[order[j]];
            if (c->at < c->n && id_of(c, c->at) < base)
                base = id_of(c, c->at);
        }
        if (base == INT64_MAX)
            break;
        const int64_t end = base + WINDOW;
        for (Py_ssize_t j = ess; j < lists; j++) {
            Py_ssize_t t = order[j];
            Cursor *c = &cursors[t];
            const uint32_t *ids = c->ids;
            double *v = val + (size_t)t * WINDOW;
            uint64_t *b = bits + (size_t)t * (WINDOW / 64);
            Py_ssize_t at = c->at, n = c->n;
            if (c->sel == NULL && !c->rest) { /* a whole term: the tight loop */
                for (; at < n && ids[at] < end; at++)
                    put(&win, v, b, (uint32_t)(ids[at] - base), cursor_score(c, at, &how, &bad));
            } else { /* a part of one */
                uint32_t id;
                for (; at < n && (id = id_of(c, at)) < end; at++)
                    if (!not_in_list(c, at))
                        put(&win, v, b, (uint32_t)(id - base), cursor_score(c, at, &how, &bad));
            }
            c->at = at;
        }
        for (uint32_t w = 0; w < WINDOW / 64; w++) {
            uint64_t word = touched[w];
            touched[w] = 0;
            while (word) {
                uint32_t off = (w << 6) | (uint32_t)__builtin_ctzll(word);
                word &= word - 1;
                int64_t id = base + off;
                Py_ssize_t matched = count[off];
                double partial = partial_at[off];
                count[off] = 0;
                partial_at[off] = 0.0;
                if (has_allowed && (id >= allowed_n || !allowed[id]))
                    continue;
                double threshold = size == k ? heap[0].score : -INFINITY;
                /* the non-essential lists, largest first, while the chunk can still reach the threshold */
                double rest = bound_sum[ess];
                int hopeless = 0;
                for (Py_ssize_t j = ess - 1; j >= 0; j--) {
                    if ((partial + rest) * coord[matched + j + 1] * (1.0 + 1e-9) < threshold) {
                        hopeless = 1;
                        break;
                    }
                    Py_ssize_t t = order[j];
                    Cursor *c = &cursors[t];
                    rest -= c->max;
                    seek(c, id);
                    if (c->at < c->n && id_of(c, c->at) == id && !not_in_list(c, c->at)) {
                        found[t] = cursor_score(c, c->at, &how, &bad);
                        present[t] = 1;
                        partial += found[t];
                        matched++;
                    }
                }
                if (!hopeless) {
                    /* the exact score, summed in the query's order as the exhaustive path sums it */
                    double score = 0.0;
                    for (Py_ssize_t t = 0; t < lists; t++) {
                        if (rank[t] >= ess) {
                            if (bits[(size_t)t * (WINDOW / 64) + w] & (1ull << (off & 63)))
                                score += val[(size_t)t * WINDOW + off];
                        } else if (present[t]) {
                            score += found[t];
                        }
                    }
                    score *= coord[matched];
                    scored++;
                    Scored entry = {score, id};
                    if (size < k) {
                        heap[size] = entry;
                        sift_up(heap, size++);
                    } else if (worse(heap[0], entry)) {
                        heap[0] = entry;
                        sift_down(heap, size, 0);
                    }
                    if (size == k) /* lists whose chunks alone cannot reach the k-th best stop being essential */
                        while (essential_from < lists && bound[essential_from + 1] < heap[0].score)
                            essential_from++;
                }
                for (Py_ssize_t j = 0; j < ess; j++)
                    present[order[j]] = 0;
            }
        }
        for (Py_ssize_t j = ess; j < lists; j++)
            memset(bits + (size_t)order[j] * (WINDOW / 64), 0, (WINDOW / 64) * sizeof(uint64_t));
    }
    if (bad)
        goto no_length;
    {
        Py_ssize_t n = size;
        PyObject *out_ids = PyBytes_FromStringAndSize(NULL, n * 8);
        PyObject *out_scores = PyBytes_FromStringAndSize(NULL, n * 8);
        if (out_ids == NULL || out_scores == NULL) {
            Py_XDECREF(out_ids);
            Py_XDECREF(out_scores);
            goto done;
        }
        int64_t *oi = (int64_t *)PyBytes_AS_STRING(out_ids);
        double *os = (double *)PyBytes_AS_STRING(out_scores);
        for (Py_ssize_t i = n - 1; i >= 0; i--) {
            oi[i] = heap[0].id;
            os[i] = heap[0].score;
            heap[0] = heap[--size];
            sift_down(heap, size, 0);
        }
        Py_ssize_t essential_terms = 0; /* the terms with a list still essential at the end */
        for (Py_ssize_t t = 0; t < terms; t++)
            for (Py_ssize_t j = essential_from; j < lists; j++)
                if (cursors[order[j]].term == t) {
                    essential_terms++;
                    break;
                }
        result = Py_BuildValue("NNnnO", out_ids, out_scores, scored, essential_terms, maxima_out);
    }
    goto done;
no_length:
    PyErr_SetString(PyExc_IndexError, "maxscore: a chunk id has no length");
done:
    Py_XDECREF(maxima_out);
    PyMem_Free(tables);
    for (Py_ssize_t i = 0; i < got; i++)
        PyBuffer_Release(&views[i]);
    PyMem_Free(views);
    if (sels != NULL)
        for (Py_ssize_t t = 0; t < terms; t++)
            PyMem_Free(sels[t]);
    PyMem_Free(sels);
    PyMem_Free(given);
    PyMem_Free(cursors);
    PyMem_Free(order);
    PyMem_Free(rank);
    PyMem_Free(bound);
    PyMem_Free(bound_sum);
    PyMem_Free(found);
    PyMem_Free(coord);
    PyMem_Free(present);
    PyMem_Free(heap);
    PyMem_Free(val);
    PyMem_Free(bits);
    PyMem_Free(touched);
    PyMem_Free(count);
    PyMem_Free(partial_at);
    return result;
}

/* ---------------------------------------------------------------- BLAKE2b (RFC 7693)
 * The rows' digests are hashlib.blake2b(..., digest_size=16): a row is a few dozen bytes, and calling
 * back into hashlib for each cost more than the rest of its encoding. Unkeyed, sequential mode only;
 * tests hold it to hashlib on every row they encode. */

static const uint64_t blake2b_iv[8] = {
    0x6A09E667F3BCC908ULL, 0xBB67AE8584CAA73BULL, 0x3C6EF372FE94F82BULL, 0xA54FF53A5F1D36F1ULL,
    0x510E527FADE682D1ULL, 0x9B05688C2B3E6C1FULL, 0x1F83D9ABFB41BD6BULL, 0x5BE0CD19137E2179ULL,
};

static const uint8_t blake2b_sigma[12][16] = {
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
    {11, 8, 12, 0, 5, 2, 15, 13, 10, 14, 3, 6, 7, 1, 9, 4}, {7, 9, 3, 1, 13, 12, 11, 14, 2, 6, 5, 10, 4, 0, 15, 8},
    {9, 0, 5, 7, 2, 4, 10, 15, 14, 1, 11, 12, 6, 8, 3, 13}, {2, 12, 6, 10, 0, 11, 8, 3, 4, 13, 7, 5, 15, 14, 1, 9},
    {12, 5, 1, 15, 14, 13, 4, 10, 0, 7, 6, 3, 9, 2, 8, 11}, {13, 11, 7, 14, 12, 1, 3, 9, 5, 0, 15, 4, 8, 6, 2, 10},
    {6, 15, 14, 9, 11, 3, 0, 8, 12, 2, 13, 7, 1, 4, 10, 5}, {10, 2, 8, 4, 7, 6, 1, 5, 15, 11, 9, 14, 3, 12, 13, 0},
    {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15}, {14, 10, 4, 8, 9, 15, 13, 6, 1, 12, 0, 2, 11, 7, 5, 3},
};

static uint64_t rotr64(uint64_t x, int n) { return (x >> n) | (x << (64 - n)); }

static uint64_t load64(const unsigned char *p)
{
    uint64_t v = 0;
    for (int i = 7; i >= 0; i--)
        v = (v << 8) | p[i];
    return v;
}

#define B2B_G(a, b, c, d, x, y)                                                                                  \
    do {                                                                                                         \
        v[a] = v[a] + v[b] + (x);                                                                                \
        v[d] = rotr64(v[d] ^ v[a], 32);                                                                          \
        v[c] = v[c] + v[d];                                                                                      \
        v[b] = rotr64(v[b] ^ v[c], 24);                                                                          \
        v[a] = v[a] + v[b] + (y);                                                                                \
        v[d] = rotr64(v[d] ^ v[a], 16);                                                                          \
        v[c] = v[c] + v[d];                                                                                      \
        v[b] = rotr64(v[b] ^ v[c], 63);                                                                          \
    } while (0)

static void blake2b_compress(uint64_t h[8], const unsigned char block[128], uint64_t counter, int last)
{
    uint64_t v[16], m[16];
    for (int i = 0; i < 8; i++) {
        v[i] = h[i];
        v[i + 8] = blake2b_iv[i];
    }
    v[12] ^= counter; /* the high word of the byte counter stays 0: no row is 2^64 bytes */
    if (last)
        v[14] = ~v[14];
    for (int i = 0; i < 16; i++)
        m[i] = load64(block + 8 * i);
    for (int r = 0; r < 12; r++) {
        const uint8_t *s = blake2b_sigma[r];
        B2B_G(0, 4, 8, 12, m[s[0]], m[s[1]]);
        B2B_G(1, 5, 9, 13, m[s[2]], m[s[3]]);
        B2B_G(2, 6, 10, 14, m[s[4]], m[s[5]]);
        B2B_G(3, 7, 11, 15, m[s[6]], m[s[7]]);
        B2B_G(0, 5, 10, 15, m[s[8]], m[s[9]]);
        B2B_G(1, 6, 11, 12, m[s[10]], m[s[11]]);
        B2B_G(2, 7, 8, 13, m[s[12]], m[s[13]]);
        B2B_G(3, 4, 9, 14, m[s[14]], m[s[15]]);
    }
    for (int i = 0; i < 8; i++)
        h[i] ^= v[i] ^ v[i + 8];
}

/* hashlib.blake2b(data, digest_size=16).digest() */
static void blake2b_16(const unsigned char *data, size_t size, unsigned char out[16])
{
    uint64_t h[8];
    unsigned char block[128];
    uint64_t counter = 0;
    memcpy(h, blake2b_iv, sizeof h);
    h[0] ^= 0x01010000ULL ^ 16; /* fanout 1, depth 1, no key, 16-byte digest */
    while (size > 128) {
        counter += 128;
        blake2b_compress(h, data, counter, 0);
        data += 128;
        size -= 128;
    }
    memset(block, 0, sizeof block);
    memcpy(block, data, size);
    counter += size;
    blake2b_compress(h, block, counter, 1);
    for (int i = 0; i < 16; i++)
        out[i] = (unsigned char)(h[i / 8] >> (8 * (i % 8)));
}

PyDoc_STRVAR(blake2b_16_doc, "blake2b_16(data) -> bytes\n\nhashlib.blake2b(data, digest_size=16).digest(), as encode_rows digests.");

static PyObject *blake2b_16_py(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    unsigned char out[16];
    if (PyObject_GetBuffer(arg, &view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    blake2b_16((const unsigned char *)view.buf, (size_t)view.len, out);
    PyBuffer_Release(&view);
    return PyBytes_FromStringAndSize((const char *)out, 16);
}

/* ---------------------------------------------------------------- encoding a segment's rows */

PyDoc_STRVAR(encode_rows_doc,
             "encode_rows(terms, bounds, columns, kinds) -> [((term, ids, tf_title, tf_body,\n"
             "pos_title, pos_body), digest), ...]\n\n"
             "kenning.store.compact.encode_posting_rows' loop: each term's row as slices of its columns\n"
             "in the narrowest width its kind says, and its digest, blake2b (16 bytes) of the term's\n"
             "UTF-8 (surrogatepass), then per column its count (8 bytes little-endian) and its wide\n"
             "bytes. bounds: int64 posting, title-position and body-position bounds (terms + 1 each);\n"
             "columns: bytes of ids\n"
             "(4), title tf wide (2) and byte (1), body tf wide and byte, title positions wide (4) and\n"
             "short (2), body positions wide and short; kinds: uint8 per term, tf 0 (none) / 1 / 2 bytes,\n"
             "positions 2 / 4 bytes.");

static PyObject *encode_rows(PyObject *self, PyObject *args)
{
    PyObject *terms, *bounds_o, *columns_o, *kinds_o;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &terms, &PyTuple_Type, &bounds_o, &PyTuple_Type,
                          &columns_o, &PyTuple_Type, &kinds_o))
        return NULL;
    if (PyTuple_GET_SIZE(bounds_o) != 3 || PyTuple_GET_SIZE(columns_o) != 9 || PyTuple_GET_SIZE(kinds_o) != 4) {
        PyErr_SetString(PyExc_ValueError, "encode_rows: 3 bounds, 9 columns and 4 kinds expected");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(terms);
    Py_buffer views[16];
    int got = 0;
    PyObject *out = NULL;
    unsigned char *scratch = NULL;
    size_t scratch_size = 0;
    for (int i = 0; i < 3; i++, got++)
        if (get_buffer(PyTuple_GET_ITEM(bounds_o, i), &views[got], 8, "bounds") < 0)
            goto done;
    for (int i = 0; i < 9; i++, got++)
        if (get_buffer(PyTuple_GET_ITEM(columns_o, i), &views[got], 1, "columns (bytes)") < 0)
            goto done;
    for (int i = 0; i < 4; i++, got++)
        if (get_buffer(PyTuple_GET_ITEM(kinds_o, i), &views[got], 1, "kinds") < 0)
            goto done;
    const int64_t *pb_ = views[0].buf, *tb_ = views[1].buf, *bb_ = views[2].buf;
    const char *ids = views[3].buf, *tft_w = views[4].buf, *tft_1 = views[5].buf, *tfb_w = views[6].buf,
               *tfb_1 = views[7].buf, *pt_w = views[8].buf, *pt_2 = views[9].buf, *pbo_w = views[10].buf,
               *pbo_2 = views[11].buf;
    const uint8_t *k_tft = views[12].buf, *k_tfb = views[13].buf, *k_pt = views[14].buf, *k_pb = views[15].buf;
    for (int i = 0; i < 3; i++)
        if (views[i].len != 8 * (n + 1)) {
            PyErr_SetString(PyExc_ValueError, "encode_rows: bounds must hold terms + 1 values");
            goto done;
        }
    for (int i = 12; i < 16; i++)
        if (views[i].len != n) {
            PyErr_SetString(PyExc_ValueError, "encode_rows: a kind per term expected");
            goto done;
        }
    if (n > 0) {
        int64_t postings = pb_[n], titles = tb_[n], bodies = bb_[n];
        if (views[3].len != 4 * postings || views[4].len != 2 * postings || views[5].len != postings ||
            views[6].len != 2 * postings || views[7].len != postings || views[8].len != 4 * titles ||
            views[9].len != 2 * titles || views[10].len != 4 * bodies || views[11].len != 2 * bodies) {
            PyErr_SetString(PyExc_ValueError, "encode_rows: columns do not match their bounds");
            goto done;
        }
        for (Py_ssize_t i = 0; i < n; i++)
            if (pb_[i] > pb_[i + 1] || tb_[i] > tb_[i + 1] || bb_[i] > bb_[i + 1] || pb_[i] < 0 || tb_[i] < 0 ||
                bb_[i] < 0) {
                PyErr_SetString(PyExc_ValueError, "encode_rows: bounds must not decrease");
                goto done;
            }
    }
    out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *term = PyList_GET_ITEM(terms, i);
        int64_t p0 = pb_[i], p1 = pb_[i + 1], t0 = tb_[i], t1 = tb_[i + 1], b0 = bb_[i], b1 = bb_[i + 1];
        int64_t np_ = p1 - p0, nt = t1 - t0, nb = b1 - b0;
        PyObject *utf8 = PyUnicode_Check(term) ? PyUnicode_AsEncodedString(term, "utf-8", "surrogatepass") : NULL;
        if (utf8 == NULL) {
            if (!PyErr_Occurred())
                PyErr_SetString(PyExc_TypeError, "encode_rows: terms must be str");
            Py_CLEAR(out);
            break;
        }
        /* the digest's input: the term, then each column's count and wide bytes */
        const char *wide[5] = {ids + 4 * p0, tft_w + 2 * p0, tfb_w + 2 * p0, pt_w + 4 * t0, pbo_w + 4 * b0};
        int64_t counts[5] = {np_, np_, np_, nt, nb};
        int64_t sizes[5] = {4 * np_, 2 * np_, 2 * np_, 4 * nt, 4 * nb};
        size_t need = (size_t)PyBytes_GET_SIZE(utf8) + 40;
        for (int c = 0; c < 5; c++)
            need += (size_t)sizes[c];
        if (need > scratch_size) {
            unsigned char *grown = PyMem_Realloc(scratch, need);
            if (grown == NULL) {
                Py_DECREF(utf8);
                PyErr_NoMemory();
                Py_CLEAR(out);
                break;
            }
            scratch = grown;
            scratch_size = need;
        }
        size_t at = (size_t)PyBytes_GET_SIZE(utf8);
        memcpy(scratch, PyBytes_AS_STRING(utf8), at);
        Py_DECREF(utf8);
        for (int c = 0; c < 5; c++) {
            uint64_t v = (uint64_t)counts[c];
            for (int k = 0; k < 8; k++)
                scratch[at++] = (unsigned char)(v >> (8 * k));
            memcpy(scratch + at, wide[c], (size_t)sizes[c]);
            at += (size_t)sizes[c];
        }
        unsigned char hashed[16];
        blake2b_16(scratch, at, hashed);
        PyObject *digest = PyBytes_FromStringAndSize((const char *)hashed, 16);
        /* the row: each column in the width its kind says (kenning.store.compact) */
        PyObject *row = NULL;
        if (digest != NULL) {
            PyObject *tft = k_tft[i] == 2   ? PyBytes_FromStringAndSize(tft_w + 2 * p0, 2 * np_)
                            : k_tft[i] == 1 ? PyBytes_FromStringAndSize(tft_1 + p0, np_)
                                            : PyBytes_FromStringAndSize(NULL, 0);
            PyObject *tfb = k_tfb[i] == 2   ? PyBytes_FromStringAndSize(tfb_w + 2 * p0, 2 * np_)
                            : k_tfb[i] == 1 ? PyBytes_FromStringAndSize(tfb_1 + p0, np_)
                                            : PyBytes_FromStringAndSize(NULL, 0);
            PyObject *pt = k_pt[i] == 4 ? PyBytes_FromStringAndSize(pt_w + 4 * t0, 4 * nt)
                                        : PyBytes_FromStringAndSize(pt_2 + 2 * t0, 2 * nt);
            PyObject *pbs = k_pb[i] == 4 ? PyBytes_FromStringAndSize(pbo_w + 4 * b0, 4 * nb)
                                         : PyBytes_FromStringAndSize(pbo_2 + 2 * b0, 2 * nb);
            PyObject *idb = PyBytes_FromStringAndSize(ids + 4 * p0, 4 * np_);
            if (tft && tfb && pt && pbs && idb)
                row = PyTuple_Pack(6, term, idb, tft, tfb, pt, pbs);
            Py_XDECREF(tft);
            Py_XDECREF(tfb);
            Py_XDECREF(pt);
            Py_XDECREF(pbs);
            Py_XDECREF(idb);
        }
        PyObject *pair = row ? PyTuple_Pack(2, row, digest) : NULL;
        Py_XDECREF(row);
        Py_XDECREF(digest);
        if (pair == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, pair);
    }
done:
    PyMem_Free(scratch);
    while (got > 0)
        PyBuffer_Release(&views[--got]);
    if (PyErr_Occurred()) {
        Py_XDECREF(out);
        return NULL;
    }
    return out;
}

/* ---------------------------------------------------------------- joining stored rows (merges) */

typedef struct {
    unsigned char *data;
    size_t len, cap;
} Buf;

static int buf_reserve(Buf *b, size_t more)
{
    if (b->len + more <= b->cap)
        return 0;
    size_t cap = b->cap ? b->cap : 256;
    while (cap < b->len + more)
        cap *= 2;
    unsigned char *grown = PyMem_Realloc(b->data, cap);
    if (grown == NULL) {
        PyErr_NoMemory();
        return -1;
    }
    b->data = grown;
    b->cap = cap;
    return 0;
}

static int is_dead(uint32_t id, const uint32_t *dead, Py_ssize_t n_dead)
{
    Py_ssize_t lo = 0, hi = n_dead;
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        if (dead[mid] < id)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < n_dead && dead[lo] == id;
}

static uint32_t get_u16(const unsigned char *at) { return (uint32_t)at[0] | ((uint32_t)at[1] << 8); }

/* One stored row's columns appended to the wide buffers (ids u32, tf u16, positions u32, little-endian),
 * as kenning.store.compact._wide_columns reads them, without the postings of `dead` chunks (sorted);
 * -1 with ValueError when the lengths do not fit together. */
static int widen_row(PyObject *raw, Buf wide[5], const uint32_t *dead, Py_ssize_t n_dead)
{
    Py_buffer v[5];
    int got = 0, rc = -1;
    for (; got < 5; got++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(raw, got + 1), &v[got], PyBUF_SIMPLE) < 0)
            goto done;
    if (v[0].len % 4 != 0) {
        PyErr_SetString(PyExc_ValueError, "a posting row's ids are not whole uint32 values");
        goto done;
    }
    Py_ssize_t n = v[0].len / 4;
    const unsigned char *ids = v[0].buf;
    int64_t count[2] = {0, 0};
    for (int f = 0; f < 2; f++) { /* each field's frequencies fit the postings, its positions their sum */
        Py_ssize_t tf_len = v[1 + f].len;
        const unsigned char *tf = v[1 + f].buf;
        if (tf_len != 0 && tf_len != n && tf_len != 2 * n) {
            PyErr_Format(PyExc_ValueError, "%zd bytes cannot hold %zd term frequencies", tf_len, n);
            goto done;
        }
        for (Py_ssize_t i = 0; tf_len && i < n; i++)
            count[f] += tf_len == n ? tf[i] : get_u16(tf + 2 * i);
        if (v[3 + f].len != 4 * count[f] && v[3 + f].len != 2 * count[f]) {
            PyErr_Format(PyExc_ValueError, "%zd bytes cannot hold %lld positions", v[3 + f].len, (long long)count[f]);
            goto done;
        }
    }
    for (int c = 0; c < 5; c++)
        if (buf_reserve(&wide[c], c == 0 ? 4 * (size_t)n : c < 3 ? 2 * (size_t)n : 4 * (size_t)count[c - 3]) < 0)
            goto done;
    int64_t pos_at[2] = {0, 0};
    for (Py_ssize_t i = 0; i < n; i++) {
        uint32_t id = (uint32_t)ids[4 * i] | ((uint32_t)ids[4 * i + 1] << 8) | ((uint32_t)ids[4 * i + 2] << 16) |
                      ((uint32_t)ids[4 * i + 3] << 24);
        int keep = n_dead == 0 || !is_dead(id, dead, n_dead);
        if (keep) {
            memcpy(wide[0].data + wide[0].len, ids + 4 * i, 4);
            wide[0].len += 4;
        }
        for (int f = 0; f < 2; f++) {
            Py_ssize_t tf_len = v[1 + f].len;
            const unsigned char *tf = v[1 + f].buf, *pos = v[3 + f].buf;
            uint32_t x = tf_len == 0 ? 0 : tf_len == n ? tf[i] : get_u16(tf + 2 * i);
            int wide_pos = v[3 + f].len == 4 * count[f];
            if (keep) {
                Buf *wtf = &wide[1 + f], *wpos = &wide[3 + f];
                put_u16(wtf->data + wtf->len, x);
                wtf->len += 2;
                for (uint32_t j = 0; j < x; j++, wpos->len += 4) {
                    int64_t q = pos_at[f] + j;
                    if (wide_pos)
                        memcpy(wpos->data + wpos->len, pos + 4 * q, 4);
                    else
                        put_u32(wpos->data + wpos->len, get_u16(pos + 2 * q));
                }
            }
            pos_at[f] += x;
        }
    }
    rc = 0;
done:
    while (got > 0)
        PyBuffer_Release(&v[--got]);
    return rc;
}

/* The row and digest of one term's joined wide columns: frequencies in no bytes (all zero), one or
 * two, positions in two or four, as kenning.store.compact narrows them. */
static PyObject *joined_row(PyObject *term, Buf wide[5], Buf *scratch)
{
    size_t n = wide[0].len / 4, counts[5] = {n, n, n, wide[3].len / 4, wide[4].len / 4};
    PyObject *utf8 = PyUnicode_AsEncodedString(term, "utf-8", "surrogatepass");
    if (utf8 == NULL)
        return NULL;
    scratch->len = 0;
    size_t need = (size_t)PyBytes_GET_SIZE(utf8) + 40;
    for (int c = 0; c < 5; c++)
        need += wide[c].len;
    if (buf_reserve(scratch, need) < 0) {
        Py_DECREF(utf8);
        return NULL;
    }
    memcpy(scratch->data, PyBytes_AS_STRING(utf8), (size_t)PyBytes_GET_SIZE(utf8));
    scratch->len = (size_t)PyBytes_GET_SIZE(utf8);
    Py_DECREF(utf8);
    for (int c = 0; c < 5; c++) {
        for (int k = 0; k < 8; k++)
            scratch->data[scratch->len++] = (unsigned char)((uint64_t)counts[c] >> (8 * k));
        if (wide[c].len)
            memcpy(scratch->data + scratch->len, wide[c].data, wide[c].len);
        scratch->len += wide[c].len;
    }
    unsigned char hashed[16];
    blake2b_16(scratch->data, scratch->len, hashed);
    PyObject *cols[5] = {NULL, NULL, NULL, NULL, NULL}, *digest = NULL, *row = NULL, *pair = NULL;
    cols[0] = PyBytes_FromStringAndSize((const char *)wide[0].data, (Py_ssize_t)wide[0].len);
    for (int f = 1; f <= 2; f++) { /* frequencies */
        const unsigned char *w = wide[f].data;
        int high = 0, any = 0;
        for (size_t i = 0; i < n; i++) {
            high |= w[2 * i + 1] != 0;
            any |= w[2 * i] != 0;
        }
        if (high)
            cols[f] = PyBytes_FromStringAndSize((const char *)w, (Py_ssize_t)(2 * n));
        else if (!any)
            cols[f] = PyBytes_FromStringAndSize(NULL, 0);
        else if ((cols[f] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)n)) != NULL)
            for (size_t i = 0; i < n; i++)
                PyBytes_AS_STRING(cols[f])[i] = (char)w[2 * i];
    }
    for (int f = 3; f <= 4; f++) { /* positions */
        const unsigned char *w = wide[f].data;
        size_t count = counts[f];
        int high = 0;
        for (size_t i = 0; i < count && !high; i++)
            high = w[4 * i + 2] != 0 || w[4 * i + 3] != 0;
        if (high)
            cols[f] = PyBytes_FromStringAndSize((const char *)w, (Py_ssize_t)(4 * count));
        else if ((cols[f] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(2 * count))) != NULL) {
            unsigned char *o = (unsigned char *)PyBytes_AS_STRING(cols[f]);
            for (size_t i = 0; i < count; i++) {
                o[2 * i] = w[4 * i];
                o[2 * i + 1] = w[4 * i + 1];
            }
        }
    }
    digest = PyBytes_FromStringAndSize((const char *)hashed, 16);
    if (digest && cols[0] && cols[1] && cols[2] && cols[3] && cols[4])
        row = PyTuple_Pack(6, term, cols[0], cols[1], cols[2], cols[3], cols[4]);
    if (row)
        pair = PyTuple_Pack(2, row, digest);
    for (int c = 0; c < 5; c++)
        Py_XDECREF(cols[c]);
    Py_XDECREF(digest);
    Py_XDECREF(row);
    return pair;
}

PyDoc_STRVAR(join_rows_doc,
             "join_rows(parts, dead) -> [((term, ids, tf_title, tf_body, pos_title, pos_body), digest), ...]\n\n"
             "kenning.indexing.segments.merge_range: parts[i] holds the i-th merged segment's stored rows\n"
             "(6-tuples, terms ascending, each once); each term's rows are joined in segment order without\n"
             "the postings of the `dead` chunk ids (uint32, ascending), narrowed as\n"
             "kenning.store.compact.encode_posting_row does, with its digest; a term left with no posting\n"
             "is dropped.");

static PyObject *join_rows(PyObject *self, PyObject *args)
{
    PyObject *parts_o, *dead_o;
    Py_buffer dead_view;
    if (!PyArg_ParseTuple(args, "OO", &parts_o, &dead_o))
        return NULL;
    if (get_buffer(dead_o, &dead_view, 4, "dead") < 0)
        return NULL;
    const uint32_t *dead = dead_view.buf;
    Py_ssize_t n_dead = dead_view.len / 4;
    PyObject *parts = PySequence_Fast(parts_o, "join_rows: a sequence of row lists expected");
    if (parts == NULL) {
        PyBuffer_Release(&dead_view);
        return NULL;
    }
    Py_ssize_t k = PySequence_Fast_GET_SIZE(parts);
    PyObject **lists = PyMem_Calloc((size_t)(k ? k : 1), sizeof(PyObject *));
    Py_ssize_t *at = PyMem_Calloc((size_t)(k ? k : 1), sizeof(Py_ssize_t));
    Buf wide[5] = {{0}}, scratch = {0};
    PyObject *out = PyList_New(0);
    if (lists == NULL || at == NULL || out == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto fail;
    }
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *list = PySequence_Fast_GET_ITEM(parts, i);
        if (!PyList_Check(list)) {
            PyErr_SetString(PyExc_TypeError, "join_rows: each part must be a list of rows");
            goto fail;
        }
        for (Py_ssize_t j = 0; j < PyList_GET_SIZE(list); j++) {
            PyObject *raw = PyList_GET_ITEM(list, j);
            if (!PyTuple_Check(raw) || PyTuple_GET_SIZE(raw) != 6 || !PyUnicode_Check(PyTuple_GET_ITEM(raw, 0))) {
                PyErr_SetString(PyExc_TypeError, "join_rows: a row is (term, ids, tf_title, tf_body, pos_title, pos_body)");
                goto fail;
            }
        }
        lists[i] = list;
    }
    for (;;) {
        PyObject *term = NULL; /* the smallest term under the cursors */
        for (Py_ssize_t i = 0; i < k; i++) {
            if (at[i] >= PyList_GET_SIZE(lists[i]))
                continue;
            PyObject *t = PyTuple_GET_ITEM(PyList_GET_ITEM(lists[i], at[i]), 0);
            if (term == NULL) {
                term = t;
                continue;
            }
            int less = PyUnicode_Compare(t, term);
            if (less == -1 && PyErr_Occurred())
                goto fail;
            if (less < 0)
                term = t;
        }
        if (term == NULL)
            break;
        Py_INCREF(term);
        for (int c = 0; c < 5; c++)
            wide[c].len = 0;
        int bad = 0;
        for (Py_ssize_t i = 0; i < k && !bad; i++) { /* segment order: ids stay ascending */
            if (at[i] >= PyList_GET_SIZE(lists[i]))
                continue;
            PyObject *raw = PyList_GET_ITEM(lists[i], at[i]);
            int same = PyUnicode_Compare(PyTuple_GET_ITEM(raw, 0), term);
            if (same == -1 && PyErr_Occurred())
                bad = 1;
            else if (same == 0) {
                bad = widen_row(raw, wide, dead, n_dead) < 0;
                if (!bad && ++at[i] < PyList_GET_SIZE(lists[i])) { /* the part's next term comes after */
                    int after = PyUnicode_Compare(PyTuple_GET_ITEM(PyList_GET_ITEM(lists[i], at[i]), 0), term);
                    if (after <= 0) {
                        if (!PyErr_Occurred())
                            PyErr_SetString(PyExc_ValueError, "join_rows: a part's terms are not ascending");
                        bad = 1;
                    }
                }
            }
        }
        if (!bad && wide[0].len == 0) { /* every posting of the term was of deleted chunks */
            Py_DECREF(term);
            continue;
        }
        PyObject *pair = bad ? NULL : joined_row(term, wide, &scratch);
        Py_DECREF(term);
        if (pair == NULL || PyList_Append(out, pair) < 0) {
            Py_XDECREF(pair);
            goto fail;
        }
        Py_DECREF(pair);
    }
    goto done;
fail:
    Py_CLEAR(out);
done:
    for (int c = 0; c < 5; c++)
        PyMem_Free(wide[c].data);
    PyMem_Free(scratch.data);
    PyMem_Free(lists);
    PyMem_Free(at);
    Py_DECREF(parts);
    PyBuffer_Release(&dead_view);
    return out;
}

/* ----------------------------------------------------------------------------- posting packs */

/* The pack of rows encoded[idx[0..count)] (kenning.store.sqlite.packs.encode_pack's layout): their
 * terms as UTF-8 joined by NUL, five little-endian uint16 lengths a row, then the columns. */
static PyObject *pack_blob(PyObject *encoded, const Py_ssize_t *idx, Py_ssize_t count, Py_ssize_t columns)
{
    Py_ssize_t terms_len = count - 1;
    for (Py_ssize_t k = 0; k < count; k++) {
        Py_ssize_t len;
        PyObject *row = PyTuple_GET_ITEM(PyList_GET_ITEM(encoded, idx[k]), 0);
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 0), &len) == NULL)
            return NULL;
        terms_len += len;
    }
    if (terms_len > (Py_ssize_t)UINT32_MAX || count > (Py_ssize_t)UINT32_MAX) {
        PyErr_SetString(PyExc_OverflowError, "pack_rows: a pack too large");
        return NULL;
    }
    PyObject *blob = PyBytes_FromStringAndSize(NULL, 8 + terms_len + 10 * count + columns);
    if (blob == NULL)
        return NULL;
    unsigned char *out = (unsigned char *)PyBytes_AS_STRING(blob);
    put_u32(out, (uint32_t)count);
    put_u32(out + 4, (uint32_t)terms_len);
    unsigned char *terms = out + 8, *lengths = terms + terms_len, *data = lengths + 10 * count;
    for (Py_ssize_t k = 0; k < count; k++) {
        PyObject *row = PyTuple_GET_ITEM(PyList_GET_ITEM(encoded, idx[k]), 0);
        Py_ssize_t len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(row, 0), &len);
        if (k > 0)
            *terms++ = 0;
        memcpy(terms, utf8, (size_t)len);
        terms += len;
        for (int c = 1; c <= 5; c++) {
            PyObject *column = PyTuple_GET_ITEM(row, c);
            Py_ssize_t n = PyBytes_GET_SIZE(column);
            put_u16(lengths, (uint32_t)n);
            lengths += 2;
            memcpy(data, PyBytes_AS_STRING(column), (size_t)n);
            data += n;
        }
    }
    return blob;
}

/* Append (term, size) to `marks`; -1 on error. */
static int add_mark(PyObject *marks, PyObject *term, Py_ssize_t size)
{
    PyObject *mark = Py_BuildValue("(On)", term, size);
    int failed = mark == NULL || PyList_Append(marks, mark) < 0;
    Py_XDECREF(mark);
    return failed ? -1 : 0;
}

/* The rows' lines of the segment checksum (kenning.store.checksum.digest_lines: term as UTF-8, NUL,
 * digest), in the order given; None (no error) when a term is not plain UTF-8 (a lone surrogate). */
static PyObject *digest_lines_of(PyObject *encoded)
{
    Py_ssize_t n = PyList_GET_SIZE(encoded), total = 0;
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(encoded, i);
        Py_ssize_t len;
        if (PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(PyTuple_GET_ITEM(item, 0), 0), &len) == NULL) {
            PyErr_Clear();
            Py_RETURN_NONE;
        }
        total += len + 1 + PyBytes_GET_SIZE(PyTuple_GET_ITEM(item, 1));
    }
    PyObject *lines = PyBytes_FromStringAndSize(NULL, total);
    if (lines == NULL)
        return NULL;
    char *out = PyBytes_AS_STRING(lines);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(encoded, i), *digest = PyTuple_GET_ITEM(item, 1);
        Py_ssize_t len;
        const char *utf8 = PyUnicode_AsUTF8AndSize(PyTuple_GET_ITEM(PyTuple_GET_ITEM(item, 0), 0), &len);
        memcpy(out, utf8, (size_t)len);
        out += len;
        *out++ = 0;
        memcpy(out, PyBytes_AS_STRING(digest), (size_t)PyBytes_GET_SIZE(digest));
        out += PyBytes_GET_SIZE(digest);
    }
    return lines;
}

PyDoc_STRVAR(pack_rows_doc,
             "pack_rows(encoded, packed_type, max_row_bytes, max_rows, max_bytes, row_memory)\n"
             "    -> (rows, packs, marks, lines)\n\n"
             "kenning.store.sqlite.packs.pack_range's loop: a merged range's [(row, digest)], terms\n"
             "ascending, cut into the rows kept as rows (longer than max_row_bytes, a term holding a NUL,\n"
             "or one not after the last packed) and packs of the others, in order, each closed at\n"
             "max_rows rows or max_bytes of columns: packed_type(first, last, blob, held); the marks\n"
             "[(term, bytes held)]; and the rows' checksum lines, or None when the terms are not\n"
             "strictly ascending or one is not plain UTF-8 (the caller then sorts and joins them).");

static PyObject *pack_rows(PyObject *self, PyObject *args)
{
    PyObject *encoded, *packed_type;
    Py_ssize_t max_row_bytes, max_rows, max_bytes, row_memory;
    if (!PyArg_ParseTuple(args, "O!Onnnn", &PyList_Type, &encoded, &packed_type, &max_row_bytes, &max_rows,
                          &max_bytes, &row_memory))
        return NULL;
    if (max_row_bytes > 65535 || max_rows < 1) {
        PyErr_SetString(PyExc_ValueError, "pack_rows: a packed row's lengths take two bytes, a pack a row or more");
        return NULL;
    }
    Py_ssize_t n = PyList_GET_SIZE(encoded);
    for (Py_ssize_t i = 0; i < n; i++) {
        PyObject *item = PyList_GET_ITEM(encoded, i), *row;
        int ok = PyTuple_Check(item) && PyTuple_GET_SIZE(item) == 2 && PyBytes_Check(PyTuple_GET_ITEM(item, 1)) &&
                 PyTuple_Check(row = PyTuple_GET_ITEM(item, 0)) && PyTuple_GET_SIZE(row) == 6 &&
                 PyUnicode_Check(PyTuple_GET_ITEM(row, 0));
        for (int c = 1; ok && c <= 5; c++)
            ok = PyBytes_Check(PyTuple_GET_ITEM(row, c));
        if (!ok) {
            PyErr_SetString(PyExc_TypeError, "pack_rows: an item is ((term, five bytes columns), digest bytes)");
            return NULL;
        }
    }
    PyObject *rows = PyList_New(0), *packs = PyList_New(0), *marks = PyList_New(0), *lines = NULL;
    Py_ssize_t *idx = PyMem_Malloc(sizeof(Py_ssize_t) * (size_t)max_rows);
    if (rows == NULL || packs == NULL || marks == NULL || idx == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto fail;
    }
    Py_ssize_t count = 0, size_sum = 0;
    PyObject *last = NULL, *previous = NULL; /* the last term packed; the term before this one */
    int ascending = 1;
    for (Py_ssize_t i = 0; i <= n; i++) {
        int close = i == n && count > 0;
        if (i < n) {
            PyObject *row = PyTuple_GET_ITEM(PyList_GET_ITEM(encoded, i), 0), *term = PyTuple_GET_ITEM(row, 0);
            Py_ssize_t size = 0;
            for (int c = 1; c <= 5; c++)
                size += PyBytes_GET_SIZE(PyTuple_GET_ITEM(row, c));
            if (previous != NULL && ascending) {
                int order = PyUnicode_Compare(previous, term);
                if (order == -1 && PyErr_Occurred())
                    goto fail;
                ascending = order < 0;
            }
            previous = term;
            int packable = size <= max_row_bytes;
            if (packable) {
                Py_ssize_t nul = PyUnicode_FindChar(term, 0, 0, PyUnicode_GET_LENGTH(term), 1);
                if (nul == -2)
                    goto fail;
                packable = nul < 0;
            }
            if (packable && last != NULL) {
                int after = PyUnicode_Compare(term, last);
                if (after == -1 && PyErr_Occurred())
                    goto fail;
                packable = after > 0;
            }
            if (!packable) {
                if (PyList_Append(rows, row) < 0 || add_mark(marks, term, size + row_memory) < 0)
                    goto fail;
                continue;
            }
            idx[count++] = i;
            size_sum += size;
            last = term;
            close = size_sum >= max_bytes || count >= max_rows;
        }
        if (!close)
            continue;
        PyObject *blob = pack_blob(encoded, idx, count, size_sum);
        if (blob == NULL)
            goto fail;
        PyObject *first = PyTuple_GET_ITEM(PyTuple_GET_ITEM(PyList_GET_ITEM(encoded, idx[0]), 0), 0);
        Py_ssize_t held = size_sum + count * row_memory;
        PyObject *packed = PyObject_CallFunction(packed_type, "OONn", first, last, blob, held);
        int failed = packed == NULL || PyList_Append(packs, packed) < 0 || add_mark(marks, last, held) < 0;
        Py_XDECREF(packed);
        if (failed)
            goto fail;
        count = size_sum = 0;
    }
    if (ascending)
        lines = digest_lines_of(encoded);
    else {
        lines = Py_None;
        Py_INCREF(lines);
    }
    if (lines == NULL)
        goto fail;
    PyMem_Free(idx);
    return Py_BuildValue("(NNNN)", rows, packs, marks, lines);
fail:
    PyMem_Free(idx);
    Py_XDECREF(rows);
    Py_XDECREF(packs);
    Py_XDECREF(marks);
    return NULL;
}

static PyMethodDef kernel_methods[] = {
    {"all_live", all_live, METH_VARARGS, all_live_doc},
    {"roaring_bytes", (PyCFunction)roaring_bytes, METH_O, roaring_bytes_doc},
    {"roaring_union_bytes", (PyCFunction)roaring_union_bytes, METH_O, roaring_union_bytes_doc},
    {"weigh", (PyCFunction)weigh, METH_VARARGS, weigh_doc},
    {"maxscore", (PyCFunction)maxscore, METH_VARARGS, maxscore_doc},
    {"live_postings", (PyCFunction)live_postings, METH_VARARGS, live_postings_doc},
    {"encode_rows", (PyCFunction)encode_rows, METH_VARARGS, encode_rows_doc},
    {"blake2b_16", (PyCFunction)blake2b_16_py, METH_O, blake2b_16_doc},
    {"join_rows", (PyCFunction)join_rows, METH_VARARGS, join_rows_doc},
    {"pack_rows", (PyCFunction)pack_rows, METH_VARARGS, pack_rows_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_kernels",
    .m_doc = "Per-posting and per-row loops in C (see kenning.kernels).",
    .m_size = -1,
    .m_methods = kernel_methods,
};

PyMODINIT_FUNC PyInit__kernels(void) { return PyModule_Create(&module); }
