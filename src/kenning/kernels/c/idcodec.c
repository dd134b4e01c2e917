/* A posting row's chunk ids packed by their gaps (kenning.store.compact describes the format and
 * holds the same codec in NumPy): a varint count, a varint first id, then the gaps less one in
 * blocks of 128, each block a byte giving its bit width and the gaps bit-packed at that width, low
 * bits first. A form whose length is a multiple of four gets one zero byte more, so that the length
 * alone tells the packed form from four bytes an id, which older rows (and rows packing does not
 * shorten) hold.
 *
 * At a million chat messages the ids were half of the postings' bytes (146 of 285 MB) and pack to
 * 39 MB; a term's ids are decoded once per segment and cached (kenning.lexical.view).
 */
#include "kernels.h"

#define BLOCK 128

static size_t put_varint(unsigned char *at, uint32_t v)
{
    size_t n = 0;
    while (v >= 0x80) {
        at[n++] = (unsigned char)(v | 0x80);
        v >>= 7;
    }
    at[n++] = (unsigned char)v;
    return n;
}

/* A varint at blob[*at..len) into *v; -1 when it runs past the end or past 32 bits. */
static int get_varint(const unsigned char *blob, size_t len, size_t *at, uint32_t *v)
{
    uint64_t value = 0;
    for (int shift = 0; shift < 35; shift += 7) {
        if (*at >= len)
            return -1;
        unsigned char byte = blob[(*at)++];
        value |= (uint64_t)(byte & 0x7F) << shift;
        if (!(byte & 0x80)) {
            if (value > UINT32_MAX)
                return -1;
            *v = (uint32_t)value;
            return 0;
        }
    }
    return -1;
}

static inline uint32_t get_u32(const unsigned char *at) { return get_u16(at) | (get_u16(at + 2) << 16); }

size_t ids_packed_bound(size_t n) { return 11 + (n / BLOCK + 1) + 4 * n; }

size_t ids_pack(const unsigned char *le_ids, size_t n, unsigned char *out)
{
    if (n == 0)
        return 0;
    size_t o = put_varint(out, (uint32_t)n);
    uint32_t prev = get_u32(le_ids);
    o += put_varint(out + o, prev);
    for (size_t start = 1; start < n; start += BLOCK) {
        size_t end = start + BLOCK < n ? start + BLOCK : n;
        uint32_t any = 0, last = prev;
        for (size_t i = start; i < end; i++) { /* the block's width: the widest gap less one */
            uint32_t id = get_u32(le_ids + 4 * i);
            if (id <= last)
                return 0; /* not ascending: kept as they are */
            any |= id - last - 1;
            last = id;
        }
        int width = 0;
        while (width < 32 && (any >> width) != 0)
            width++;
        out[o++] = (unsigned char)width;
        uint64_t acc = 0;
        int bits = 0;
        for (size_t i = start; i < end; i++) {
            uint32_t id = get_u32(le_ids + 4 * i);
            acc |= (uint64_t)(id - prev - 1) << bits;
            prev = id;
            bits += width;
            while (bits >= 8) {
                out[o++] = (unsigned char)acc;
                acc >>= 8;
                bits -= 8;
            }
        }
        if (bits > 0)
            out[o++] = (unsigned char)acc;
    }
    if (o % 4 == 0)
        out[o++] = 0;
    return o < 4 * n ? o : 0;
}

Py_ssize_t ids_count(const unsigned char *blob, size_t len)
{
    if (len % 4 == 0)
        return (Py_ssize_t)(len / 4);
    size_t at = 0;
    uint32_t n;
    /* every block of 128 gaps takes its width byte: a count the length cannot hold is refused before
     * anything is allocated for it */
    if (get_varint(blob, len, &at, &n) < 0 || n == 0 || (uint64_t)n > (uint64_t)BLOCK * len + 1) {
        PyErr_Format(PyExc_ValueError, "%zu bytes of packed chunk ids do not begin with their count", len);
        return -1;
    }
    return (Py_ssize_t)n;
}

int ids_unpack(const unsigned char *blob, size_t len, uint32_t *out, size_t n)
{
    if (len % 4 == 0) {
        for (size_t i = 0; i < n; i++)
            out[i] = get_u32(blob + 4 * i);
        return 0;
    }
    size_t at = 0;
    uint32_t count, first;
    if (n == 0 || get_varint(blob, len, &at, &count) < 0 || count != n || get_varint(blob, len, &at, &first) < 0)
        goto bad;
    uint64_t prev = first;
    out[0] = first;
    for (size_t start = 1; start < n; start += BLOCK) {
        size_t end = start + BLOCK < n ? start + BLOCK : n;
        if (at >= len)
            goto bad;
        int width = blob[at++];
        if (width > 32 || at + (width * (end - start) + 7) / 8 > len)
            goto bad;
        uint64_t mask = width == 32 ? 0xFFFFFFFFu : ((uint64_t)1 << width) - 1, acc = 0;
        int bits = 0;
        for (size_t i = start; i < end; i++) {
            while (bits < width) {
                acc |= (uint64_t)blob[at++] << bits;
                bits += 8;
            }
            prev += (acc & mask) + 1;
            acc >>= width;
            bits -= width;
            if (prev > UINT32_MAX)
                goto bad;
            out[i] = (uint32_t)prev;
        }
    }
    if (at + (at % 4 == 0) == len && (at % 4 != 0 || blob[at] == 0))
        return 0;
bad:
    PyErr_Format(PyExc_ValueError, "%zu bytes of packed chunk ids do not hold %zu ascending ids", len, n);
    return -1;
}

const char pack_ids_doc[] = PyDoc_STR(
    "pack_ids(ids) -> bytes\n\n"
    "Ascending chunk ids (uint32, little-endian bytes) packed by their gaps, or the same bytes\n"
    "when packing does not make them shorter (or they do not ascend).");

PyObject *pack_ids(PyObject *self, PyObject *arg)
{
    Py_buffer view;
    if (get_buffer(arg, &view, 1, "ids (bytes)") < 0)
        return NULL;
    PyObject *out = NULL;
    if (view.len % 4 != 0) {
        PyErr_SetString(PyExc_ValueError, "pack_ids: ids are whole uint32 values");
        goto done;
    }
    size_t n = (size_t)view.len / 4;
    unsigned char *packed = PyMem_Malloc(ids_packed_bound(n));
    if (packed == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    size_t size = ids_pack(view.buf, n, packed);
    out = size ? PyBytes_FromStringAndSize((const char *)packed, (Py_ssize_t)size)
               : PyBytes_FromStringAndSize(view.buf, view.len);
    PyMem_Free(packed);
done:
    PyBuffer_Release(&view);
    return out;
}

const char unpack_ids_doc[] = PyDoc_STR(
    "unpack_ids(blob, most) -> bytes\n\n"
    "A posting row's stored chunk ids, packed (pack_ids) or four bytes each, as uint32 bytes in the\n"
    "machine's order; ValueError for bytes kenning does not write, and for a packed count above\n"
    "`most` (what the row's other columns can hold), refused before anything is allocated for it.");

PyObject *unpack_ids(PyObject *self, PyObject *args)
{
    PyObject *blob;
    Py_ssize_t most;
    if (!PyArg_ParseTuple(args, "On", &blob, &most))
        return NULL;
    Py_buffer view;
    if (get_buffer(blob, &view, 1, "ids (bytes)") < 0)
        return NULL;
    PyObject *out = NULL;
    Py_ssize_t n = ids_count(view.buf, (size_t)view.len);
    if (n > most && view.len % 4 != 0) {
        PyErr_Format(PyExc_ValueError, "packed chunk ids claim %zd, more than their row holds (%zd)", n, most);
        n = -1;
    }
    if (n >= 0 && (out = PyBytes_FromStringAndSize(NULL, 4 * n)) != NULL &&
        ids_unpack(view.buf, (size_t)view.len, (uint32_t *)PyBytes_AS_STRING(out), (size_t)n) < 0)
        Py_CLEAR(out);
    PyBuffer_Release(&view);
    return out;
}
