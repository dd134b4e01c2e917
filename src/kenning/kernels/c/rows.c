/* A segment's posting rows on the write path, in C: the rows of a new segment with their digests
 * (encode_rows), the rows of merged segments joined term by term without the deleted chunks
 * (join_rows), and a merged range's short rows cut into packs with the range's checksum lines
 * (pack_rows).
 *
 * A segment holds ~150k terms, most of them a few postings long, so per-row costs in Python were
 * most of its encoding (~5 us a row) and of a merge's. A row is its columns in their narrowest exact
 * widths (kenning.store.compact); its digest is what kenning.store.checksum.digest_of_columns
 * computes, through hashlib, so both ways give the same bytes. kenning.kernels wraps these;
 * kenning.store.compact, kenning.indexing.segments and kenning.store.sqlite.packs run the same loops
 * in Python where the module is not built, and tests/lexical/test_kernels.py holds the two equal.
 */
#include "kernels.h"

/* A growing byte buffer. */
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

/* ---------------------------------------------------------------- a row's digest */

/* An empty hashlib.blake2b(digest_size=16) and the names of the methods called on its copies: made
 * on the first row a process digests, kept for the process's life. */
static PyObject *empty_hash, *copy_name, *update_name, *digest_name;

static int start_hashing(void)
{
    PyObject *hashlib = PyImport_ImportModule("hashlib");
    PyObject *blake2b = hashlib ? PyObject_GetAttrString(hashlib, "blake2b") : NULL;
    PyObject *no_args = PyTuple_New(0), *sixteen = Py_BuildValue("{s:i}", "digest_size", 16);
    PyObject *made = blake2b && no_args && sixteen ? PyObject_Call(blake2b, no_args, sixteen) : NULL;
    Py_XDECREF(hashlib);
    Py_XDECREF(blake2b);
    Py_XDECREF(no_args);
    Py_XDECREF(sixteen);
    if (made == NULL)
        return -1;
    copy_name = PyUnicode_InternFromString("copy");
    update_name = PyUnicode_InternFromString("update");
    digest_name = PyUnicode_InternFromString("digest");
    if (copy_name == NULL || update_name == NULL || digest_name == NULL) {
        Py_DECREF(made);
        return -1;
    }
    empty_hash = made;
    return 0;
}

/* hashlib.blake2b(data, digest_size=16).digest(), by hashlib itself, as kenning.store.checksum
 * digests: a copy of the empty hash, updated, digested (a hash made anew with its keyword argument
 * cost twice as much a row). Against a BLAKE2b written out in C, ~0.1 us more a row (~15 ms of a
 * 150k-row segment, under 1% of building it) and faster on long rows. NULL with an error set when
 * hashing fails. */
static PyObject *blake2b_16(const unsigned char *data, size_t size)
{
    if (empty_hash == NULL && start_hashing() < 0)
        return NULL;
    PyObject *hash = PyObject_CallMethodNoArgs(empty_hash, copy_name);
    PyObject *view = hash ? PyMemoryView_FromMemory((char *)data, (Py_ssize_t)size, PyBUF_READ) : NULL;
    PyObject *updated = view ? PyObject_CallMethodOneArg(hash, update_name, view) : NULL;
    PyObject *digest = updated ? PyObject_CallMethodNoArgs(hash, digest_name) : NULL;
    Py_XDECREF(hash);
    Py_XDECREF(view);
    Py_XDECREF(updated);
    return digest;
}

/* A row's digest (kenning.store.checksum.digest_of_columns): blake2b, 16 bytes, of the term's UTF-8
 * (surrogatepass), then per column its count (8 bytes little-endian) and its wide bytes (ids and
 * positions 4 bytes, frequencies 2), put together in `scratch`. */
static PyObject *row_digest(PyObject *term, const unsigned char *const wide[5], const size_t counts[5],
                            const size_t sizes[5], Buf *scratch)
{
    PyObject *utf8 = PyUnicode_AsEncodedString(term, "utf-8", "surrogatepass");
    if (utf8 == NULL)
        return NULL;
    size_t need = (size_t)PyBytes_GET_SIZE(utf8) + 40;
    for (int c = 0; c < 5; c++)
        need += sizes[c];
    scratch->len = 0;
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
        if (sizes[c])
            memcpy(scratch->data + scratch->len, wide[c], sizes[c]);
        scratch->len += sizes[c];
    }
    return blake2b_16(scratch->data, scratch->len);
}

/* ((term, ids, tf_title, tf_body, pos_title, pos_body), digest), the references to `columns` and
 * `digest` taken over; NULL when one of them is (an error is set). */
static PyObject *row_pair(PyObject *term, PyObject *columns[5], PyObject *digest)
{
    PyObject *row = NULL, *pair = NULL;
    if (digest && columns[0] && columns[1] && columns[2] && columns[3] && columns[4])
        row = PyTuple_Pack(6, term, columns[0], columns[1], columns[2], columns[3], columns[4]);
    if (row)
        pair = PyTuple_Pack(2, row, digest);
    for (int c = 0; c < 5; c++)
        Py_XDECREF(columns[c]);
    Py_XDECREF(digest);
    Py_XDECREF(row);
    return pair;
}

/* A row's stored ids column from `n` ascending little-endian ids: packed by their gaps when that is
 * shorter (idcodec.c), else as they are. */
static PyObject *stored_ids(const unsigned char *le_ids, size_t n, Buf *scratch)
{
    scratch->len = 0;
    if (buf_reserve(scratch, ids_packed_bound(n)) < 0)
        return NULL;
    size_t size = ids_pack(le_ids, n, scratch->data);
    return size ? PyBytes_FromStringAndSize((const char *)scratch->data, (Py_ssize_t)size)
                : PyBytes_FromStringAndSize((const char *)le_ids, (Py_ssize_t)(4 * n));
}

/* ---------------------------------------------------------------- encoding a segment's rows */

const char encode_rows_doc[] = PyDoc_STR(
    "encode_rows(terms, bounds, columns, kinds) -> [((term, ids, tf_title, tf_body,\n"
    "pos_title, pos_body), digest), ...]\n\n"
    "kenning.store.compact.encode_posting_rows' loop: each term's row as slices of its columns\n"
    "in the narrowest width its kind says (its ids packed by their gaps when shorter), and its\n"
    "digest, blake2b (16 bytes) of the term's\n"
    "UTF-8 (surrogatepass), then per column its count (8 bytes little-endian) and its wide\n"
    "bytes. bounds: int64 posting, title-position and body-position bounds (terms + 1 each);\n"
    "columns: bytes of ids\n"
    "(4), title tf wide (2) and byte (1), body tf wide and byte, title positions wide (4), short\n"
    "(2) and byte (1), body positions wide, short and byte; kinds: uint8 per term, tf 0 (none) /\n"
    "1 / 2 bytes, positions 1 / 2 / 4 bytes.");

PyObject *encode_rows(PyObject *self, PyObject *args)
{
    PyObject *terms, *bounds_o, *columns_o, *kinds_o;
    if (!PyArg_ParseTuple(args, "O!O!O!O!", &PyList_Type, &terms, &PyTuple_Type, &bounds_o, &PyTuple_Type,
                          &columns_o, &PyTuple_Type, &kinds_o))
        return NULL;
    if (PyTuple_GET_SIZE(bounds_o) != 3 || PyTuple_GET_SIZE(columns_o) != 11 || PyTuple_GET_SIZE(kinds_o) != 4) {
        PyErr_SetString(PyExc_ValueError, "encode_rows: 3 bounds, 11 columns and 4 kinds expected");
        return NULL;
    }
    /* the terms held as they are now: hashlib lets go of the GIL while it hashes a long row */
    terms = PyList_AsTuple(terms);
    if (terms == NULL)
        return NULL;
    Py_ssize_t n = PyTuple_GET_SIZE(terms);
    Py_buffer views[18];
    int got = 0;
    PyObject *out = NULL;
    for (int i = 0; i < 3; i++, got++)
        if (get_buffer(PyTuple_GET_ITEM(bounds_o, i), &views[got], 8, "bounds") < 0)
            goto done;
    for (int i = 0; i < 11; i++, got++)
        if (get_buffer(PyTuple_GET_ITEM(columns_o, i), &views[got], 1, "columns (bytes)") < 0)
            goto done;
    for (int i = 0; i < 4; i++, got++)
        if (get_buffer(PyTuple_GET_ITEM(kinds_o, i), &views[got], 1, "kinds") < 0)
            goto done;
    const int64_t *pb_ = views[0].buf, *tb_ = views[1].buf, *bb_ = views[2].buf;
    const unsigned char *ids = views[3].buf, *tft_w = views[4].buf, *tft_1 = views[5].buf, *tfb_w = views[6].buf,
               *tfb_1 = views[7].buf, *pt_w = views[8].buf, *pt_2 = views[9].buf, *pt_1 = views[10].buf,
               *pbo_w = views[11].buf, *pbo_2 = views[12].buf, *pbo_1 = views[13].buf;
    const uint8_t *k_tft = views[14].buf, *k_tfb = views[15].buf, *k_pt = views[16].buf, *k_pb = views[17].buf;
    for (int i = 0; i < 3; i++)
        if (views[i].len != 8 * (n + 1)) {
            PyErr_SetString(PyExc_ValueError, "encode_rows: bounds must hold terms + 1 values");
            goto done;
        }
    for (int i = 14; i < 18; i++)
        if (views[i].len != n) {
            PyErr_SetString(PyExc_ValueError, "encode_rows: a kind per term expected");
            goto done;
        }
    if (n > 0) {
        int64_t postings = pb_[n], titles = tb_[n], bodies = bb_[n];
        if (views[3].len != 4 * postings || views[4].len != 2 * postings || views[5].len != postings ||
            views[6].len != 2 * postings || views[7].len != postings || views[8].len != 4 * titles ||
            views[9].len != 2 * titles || views[10].len != titles || views[11].len != 4 * bodies ||
            views[12].len != 2 * bodies || views[13].len != bodies) {
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
    Buf scratch = {0};
    out = PyList_New(n);
    for (Py_ssize_t i = 0; out != NULL && i < n; i++) {
        PyObject *term = PyTuple_GET_ITEM(terms, i);
        if (!PyUnicode_Check(term)) {
            PyErr_SetString(PyExc_TypeError, "encode_rows: terms must be str");
            Py_CLEAR(out);
            break;
        }
        int64_t p0 = pb_[i], p1 = pb_[i + 1], t0 = tb_[i], t1 = tb_[i + 1], b0 = bb_[i], b1 = bb_[i + 1];
        size_t np_ = (size_t)(p1 - p0), nt = (size_t)(t1 - t0), nb = (size_t)(b1 - b0);
        const unsigned char *wide[5] = {ids + 4 * p0, tft_w + 2 * p0, tfb_w + 2 * p0, pt_w + 4 * t0, pbo_w + 4 * b0};
        const size_t counts[5] = {np_, np_, np_, nt, nb}, sizes[5] = {4 * np_, 2 * np_, 2 * np_, 4 * nt, 4 * nb};
        PyObject *digest = row_digest(term, wide, counts, sizes, &scratch);
        /* the row: each column in the width its kind says (kenning.store.compact) */
        PyObject *columns[5] = {NULL, NULL, NULL, NULL, NULL};
        if (digest != NULL) {
            columns[0] = stored_ids(ids + 4 * p0, np_, &scratch);
            columns[1] = k_tft[i] == 2   ? PyBytes_FromStringAndSize((const char *)tft_w + 2 * p0, 2 * np_)
                         : k_tft[i] == 1 ? PyBytes_FromStringAndSize((const char *)tft_1 + p0, np_)
                                         : PyBytes_FromStringAndSize(NULL, 0);
            columns[2] = k_tfb[i] == 2   ? PyBytes_FromStringAndSize((const char *)tfb_w + 2 * p0, 2 * np_)
                         : k_tfb[i] == 1 ? PyBytes_FromStringAndSize((const char *)tfb_1 + p0, np_)
                                         : PyBytes_FromStringAndSize(NULL, 0);
            columns[3] = k_pt[i] == 4   ? PyBytes_FromStringAndSize((const char *)pt_w + 4 * t0, 4 * nt)
                         : k_pt[i] == 2 ? PyBytes_FromStringAndSize((const char *)pt_2 + 2 * t0, 2 * nt)
                                        : PyBytes_FromStringAndSize((const char *)pt_1 + t0, nt);
            columns[4] = k_pb[i] == 4   ? PyBytes_FromStringAndSize((const char *)pbo_w + 4 * b0, 4 * nb)
                         : k_pb[i] == 2 ? PyBytes_FromStringAndSize((const char *)pbo_2 + 2 * b0, 2 * nb)
                                        : PyBytes_FromStringAndSize((const char *)pbo_1 + b0, nb);
        }
        PyObject *pair = row_pair(term, columns, digest);
        if (pair == NULL) {
            Py_CLEAR(out);
            break;
        }
        PyList_SET_ITEM(out, i, pair);
    }
    PyMem_Free(scratch.data);
done:
    release_views(views, got);
    Py_DECREF(terms);
    return result_or_error(out);
}

/* ---------------------------------------------------------------- joining stored rows (merges) */

static int is_dead(uint32_t id, const uint32_t *dead, Py_ssize_t n_dead)
{
    Py_ssize_t lo = lower_bound_u32(dead, 0, n_dead, id);
    return lo < n_dead && dead[lo] == id;
}


/* One stored row's columns appended to the wide buffers (ids u32, tf u16, positions u32, little-endian),
 * as kenning.store.compact._wide_columns reads them, without the postings of `dead` chunks (sorted);
 * -1 with ValueError when the lengths do not fit together. `unpacked`: room for packed ids read back. */
static int widen_row(PyObject *raw, Buf wide[5], const uint32_t *dead, Py_ssize_t n_dead, Buf *unpacked)
{
    Py_buffer v[5];
    int got = 0, rc = -1;
    for (; got < 5; got++)
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(raw, got + 1), &v[got], PyBUF_SIMPLE) < 0)
            goto done;
    Py_ssize_t n = ids_count(v[0].buf, (size_t)v[0].len);
    if (n < 0)
        goto done;
    const unsigned char *ids = v[0].buf;
    if (v[0].len != 4 * n) { /* packed by their gaps: read into `unpacked` */
        /* every posting stands in a field: the count is refused before anything is allocated for it
         * when the frequencies could not hold it (a few bytes of packed ids may claim billions) */
        if (n > v[1].len && n > v[2].len) {
            PyErr_Format(PyExc_ValueError, "packed chunk ids claim %zd, more than their row holds", n);
            goto done;
        }
        if (buf_reserve(unpacked, 4 * (size_t)n) < 0 || ids_unpack(v[0].buf, (size_t)v[0].len, (uint32_t *)unpacked->data, (size_t)n) < 0)
            goto done;
        for (Py_ssize_t i = 0; i < n; i++) /* as stored: little-endian */
            put_u32(unpacked->data + 4 * i, ((uint32_t *)unpacked->data)[i]);
        ids = unpacked->data;
    }
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
        if (v[3 + f].len != 4 * count[f] && v[3 + f].len != 2 * count[f] && v[3 + f].len != count[f]) {
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
            /* the positions' width: their length over their count (a count of 0 reads nothing) */
            Py_ssize_t pos_width = count[f] ? v[3 + f].len / count[f] : 4;
            if (keep) {
                Buf *wtf = &wide[1 + f], *wpos = &wide[3 + f];
                put_u16(wtf->data + wtf->len, x);
                wtf->len += 2;
                for (uint32_t j = 0; j < x; j++, wpos->len += 4) {
                    int64_t q = pos_at[f] + j;
                    if (pos_width == 4)
                        memcpy(wpos->data + wpos->len, pos + 4 * q, 4);
                    else if (pos_width == 2)
                        put_u32(wpos->data + wpos->len, get_u16(pos + 2 * q));
                    else
                        put_u32(wpos->data + wpos->len, pos[q]);
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

/* The row and digest of one term's joined wide columns: ids packed when shorter, frequencies in no
 * bytes (all zero), one or two, positions in one, two or four, as kenning.store.compact narrows them. */
static PyObject *joined_row(PyObject *term, Buf wide[5], Buf *scratch)
{
    size_t n = wide[0].len / 4, counts[5] = {n, n, n, wide[3].len / 4, wide[4].len / 4};
    const unsigned char *data[5] = {wide[0].data, wide[1].data, wide[2].data, wide[3].data, wide[4].data};
    const size_t sizes[5] = {wide[0].len, wide[1].len, wide[2].len, wide[3].len, wide[4].len};
    PyObject *digest = row_digest(term, data, counts, sizes, scratch);
    if (digest == NULL)
        return NULL;
    PyObject *cols[5] = {NULL, NULL, NULL, NULL, NULL};
    cols[0] = stored_ids(wide[0].data, n, scratch);
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
        int high = 0, second = 0;
        for (size_t i = 0; i < count && !high; i++) {
            high = w[4 * i + 2] != 0 || w[4 * i + 3] != 0;
            second |= w[4 * i + 1] != 0;
        }
        size_t width = high ? 4 : second ? 2 : 1;
        if (width == 4)
            cols[f] = PyBytes_FromStringAndSize((const char *)w, (Py_ssize_t)(4 * count));
        else if ((cols[f] = PyBytes_FromStringAndSize(NULL, (Py_ssize_t)(width * count))) != NULL) {
            unsigned char *o = (unsigned char *)PyBytes_AS_STRING(cols[f]);
            for (size_t i = 0; i < count; i++) {
                o[width * i] = w[4 * i];
                if (width == 2)
                    o[2 * i + 1] = w[4 * i + 1];
            }
        }
    }
    return row_pair(term, cols, digest);
}

const char join_rows_doc[] = PyDoc_STR(
    "join_rows(parts, dead) -> [((term, ids, tf_title, tf_body, pos_title, pos_body), digest), ...]\n\n"
    "kenning.indexing.segments.merge_range: parts[i] holds the i-th merged segment's stored rows\n"
    "(6-tuples, terms ascending, each once); each term's rows are joined in segment order without\n"
    "the postings of the `dead` chunk ids (uint32, ascending), narrowed as\n"
    "kenning.store.compact.encode_posting_row does, with its digest; a term left with no posting\n"
    "is dropped.");

PyObject *join_rows(PyObject *self, PyObject *args)
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
    Buf wide[5] = {{0}}, scratch = {0}, unpacked = {0};
    PyObject *out = PyList_New(0);
    if (lists == NULL || at == NULL || out == NULL) {
        if (!PyErr_Occurred())
            PyErr_NoMemory();
        goto fail;
    }
    /* each part's rows held as they are now (a tuple): hashlib lets go of the GIL while it hashes a
     * long row */
    for (Py_ssize_t i = 0; i < k; i++) {
        PyObject *list = PySequence_Fast_GET_ITEM(parts, i);
        if (!PyList_Check(list)) {
            PyErr_SetString(PyExc_TypeError, "join_rows: each part must be a list of rows");
            goto fail;
        }
        if ((lists[i] = PyList_AsTuple(list)) == NULL)
            goto fail;
        for (Py_ssize_t j = 0; j < PyTuple_GET_SIZE(lists[i]); j++) {
            PyObject *raw = PyTuple_GET_ITEM(lists[i], j);
            if (!PyTuple_Check(raw) || PyTuple_GET_SIZE(raw) != 6 || !PyUnicode_Check(PyTuple_GET_ITEM(raw, 0))) {
                PyErr_SetString(PyExc_TypeError, "join_rows: a row is (term, ids, tf_title, tf_body, pos_title, pos_body)");
                goto fail;
            }
        }
    }
    for (;;) {
        PyObject *term = NULL; /* the smallest term under the cursors */
        for (Py_ssize_t i = 0; i < k; i++) {
            if (at[i] >= PyTuple_GET_SIZE(lists[i]))
                continue;
            PyObject *t = PyTuple_GET_ITEM(PyTuple_GET_ITEM(lists[i], at[i]), 0);
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
            if (at[i] >= PyTuple_GET_SIZE(lists[i]))
                continue;
            PyObject *raw = PyTuple_GET_ITEM(lists[i], at[i]);
            int same = PyUnicode_Compare(PyTuple_GET_ITEM(raw, 0), term);
            if (same == -1 && PyErr_Occurred())
                bad = 1;
            else if (same == 0) {
                bad = widen_row(raw, wide, dead, n_dead, &unpacked) < 0;
                if (!bad && ++at[i] < PyTuple_GET_SIZE(lists[i])) { /* the part's next term comes after */
                    int after = PyUnicode_Compare(PyTuple_GET_ITEM(PyTuple_GET_ITEM(lists[i], at[i]), 0), term);
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
    PyMem_Free(unpacked.data);
    for (Py_ssize_t i = 0; lists != NULL && i < k; i++)
        Py_XDECREF(lists[i]);
    PyMem_Free(lists);
    PyMem_Free(at);
    Py_DECREF(parts);
    PyBuffer_Release(&dead_view);
    return out;
}

/* ---------------------------------------------------------------- posting packs */

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

const char pack_rows_doc[] = PyDoc_STR(
    "pack_rows(encoded, packed_type, max_row_bytes, max_rows, max_bytes, row_memory)\n"
    "    -> (rows, packs, marks, lines)\n\n"
    "kenning.store.sqlite.packs.pack_range's loop: a merged range's [(row, digest)], terms\n"
    "ascending, cut into the rows kept as rows (longer than max_row_bytes, a term holding a NUL,\n"
    "or one not after the last packed) and packs of the others, in order, each closed at\n"
    "max_rows rows or max_bytes of columns: packed_type(first, last, blob, held); the marks\n"
    "[(term, bytes held)]; and the rows' checksum lines, or None when the terms are not\n"
    "strictly ascending or one is not plain UTF-8 (the caller then sorts and joins them).");

PyObject *pack_rows(PyObject *self, PyObject *args)
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
