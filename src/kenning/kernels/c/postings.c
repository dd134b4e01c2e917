/* A term's postings on the query path, in C: whether a segment's postings can serve as stored
 * (all_live), joined from its segments without the deleted chunks (live_postings), chunk ids as
 * roaring bitmaps, one term's (roaring_bytes) or the union of a query's terms (roaring_union_bytes),
 * and the chunks that several terms' postings share (intersect_ids).
 *
 * A common term at a million chunks has ~300k postings. In NumPy, joining its segments' postings
 * without the deleted chunks took a concatenation, a mask and three widenings, and its bitmap
 * pyroaring's adding of values (2 ms): here each is one pass, or none (postings as stored, read in
 * place). kenning.kernels wraps these; kenning.lexical.view and kenning.kernels.arrays compute the
 * same in NumPy where the module is not built.
 */
#include "kernels.h"

#define NO_RUNS_COOKIE 12346u /* roaring's portable format, no run containers */
#define ARRAY_MAX 4096        /* a container of more values is a bitset */

/* ---------------------------------------------------------------- roaring bitmaps */

const char roaring_bytes_doc[] = PyDoc_STR(
    "roaring_bytes(ids) -> bytes or None\n\n"
    "uint32 ids, ascending and distinct, in roaring's portable serialization (no run\n"
    "containers), for BitMap.deserialize; None when they are not ascending.");

PyObject *roaring_bytes(PyObject *self, PyObject *arg)
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

const char roaring_union_bytes_doc[] = PyDoc_STR(
    "roaring_union_bytes(ids) -> bytes\n\n"
    "The union of a tuple of uint32 id buffers (any order, repeats allowed) in roaring's portable\n"
    "serialization (no run containers), for BitMap.deserialize: a query's candidates without\n"
    "building each term's bitmap first.");

PyObject *roaring_union_bytes(PyObject *self, PyObject *arg)
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
    release_views(views, got);
    PyMem_Free(views);
    PyMem_Free(bits);
    return out;
}

/* ---------------------------------------------------------------- live postings */

const char all_live_doc[] = PyDoc_STR(
    "all_live(ids, live) -> bool\n\n"
    "Whether the bool buffer `live` marks every one of the uint32 `ids`: then a segment's\n"
    "postings serve as stored, with no copy.");

PyObject *all_live(PyObject *self, PyObject *args)
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

const char live_postings_doc[] = PyDoc_STR(
    "live_postings(parts, live) -> (ids, tf_title, tf_body)\n\n"
    "One term's postings from its segments' parts, each (uint32 ids, title and body term\n"
    "frequencies as uint8 or uint16, or empty when all zero), in the order given, keeping the\n"
    "chunks the bool buffer `live` marks: uint32 ids, uint16 frequencies (bytes).");

PyObject *live_postings(PyObject *self, PyObject *args)
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
    release_views(views, got);
    PyMem_Free(views);
    PyMem_Free(freqs);
    return result;
}

/* ---------------------------------------------------------------- intersections */

const char intersect_ids_doc[] = PyDoc_STR(
    "intersect_ids(arrays) -> bytes\n\n"
    "The uint32 ids every one of `arrays` (uint32, each ascending and distinct) holds, ascending.\n"
    "Put the shortest first: its ids are looked up in the others, each by a galloping search from\n"
    "where the last one was found.");

/* The first index at or after `from` in ids[0, n) whose id is >= `target` (exponential steps, then
 * a binary search within the last step). */
static Py_ssize_t gallop(const uint32_t *ids, Py_ssize_t n, Py_ssize_t from, uint32_t target)
{
    Py_ssize_t step = 1, lo = from, hi = from;
    while (hi < n && ids[hi] < target) {
        lo = hi + 1;
        hi += step;
        step <<= 1;
    }
    return lower_bound_u32(ids, lo, hi < n ? hi : n, target);
}

PyObject *intersect_ids(PyObject *self, PyObject *arg)
{
    if (!PyTuple_Check(arg) || PyTuple_GET_SIZE(arg) == 0) {
        PyErr_SetString(PyExc_TypeError, "intersect_ids: a non-empty tuple of id arrays expected");
        return NULL;
    }
    Py_ssize_t n_arrays = PyTuple_GET_SIZE(arg), got = 0;
    Py_buffer *views = PyMem_Calloc(n_arrays, sizeof(Py_buffer));
    Py_ssize_t *cursor = PyMem_Calloc(n_arrays, sizeof(Py_ssize_t));
    PyObject *out = NULL;
    if (!views || !cursor) {
        PyErr_NoMemory();
        goto done;
    }
    for (; got < n_arrays; got++)
        if (get_buffer(PyTuple_GET_ITEM(arg, got), &views[got], 4, "ids") < 0)
            goto done;
    const uint32_t *first = (const uint32_t *)views[0].buf;
    Py_ssize_t n_first = views[0].len / 4, n_out = 0;
    out = PyBytes_FromStringAndSize(NULL, 4 * n_first);
    if (out == NULL)
        goto done;
    uint32_t *kept = (uint32_t *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n_first; i++) {
        uint32_t id = first[i];
        int all = 1;
        for (Py_ssize_t a = 1; a < n_arrays && all; a++) {
            const uint32_t *ids = (const uint32_t *)views[a].buf;
            Py_ssize_t n = views[a].len / 4;
            cursor[a] = gallop(ids, n, cursor[a], id);
            all = cursor[a] < n && ids[cursor[a]] == id;
        }
        if (all)
            kept[n_out++] = id;
    }
    if (_PyBytes_Resize(&out, 4 * n_out) < 0)
        out = NULL;
done:
    release_views(views, got);
    PyMem_Free(views);
    PyMem_Free(cursor);
    return result_or_error(out);
}
