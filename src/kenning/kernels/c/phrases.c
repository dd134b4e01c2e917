/* Phrases on stored positions, in C: which of a few chunks hold a phrase's words at their offsets
 * from one common start (phrase_chunks).
 *
 * A phrase check on a handful of candidates took some fifteen NumPy calls per word and field in
 * kenning.lexical.view (a binary search, the positions' slices, their keys, a sort and an
 * intersection), a few microseconds each: most of a verbatim check's time on a small collection.
 * Here it is one pass over the wanted chunks per call. kenning.lexical.view computes the same in
 * NumPy where the module is not built, and tests hold the two equal.
 */
#include "kernels.h"

const char phrase_chunks_doc[] = PyDoc_STR(
    "phrase_chunks(wanted, words) -> bytes\n\n"
    "The chunks among `wanted` (uint32 ids, ascending) in which every word stands at its offset\n"
    "from one common start, as uint32 ids, ascending. `words` is a tuple of (ids, tf, positions,\n"
    "offset) per word, one segment and one field each: the word's postings' uint32 chunk ids\n"
    "(ascending), their term frequencies in that field (one or two bytes each, or empty when all\n"
    "zero), the positions (two or four bytes each, a posting's ascending, the postings' in id order)\n"
    "and the word's offset in the phrase. The first word's positions give the starts to try (none\n"
    "before the text's start): put the rarest first. Raises IndexError when the frequencies count\n"
    "more positions than there are.");

typedef struct {
    const uint32_t *ids;
    Py_ssize_t n;
    Freqs tf;
    const unsigned char *pos;
    int pos_width; /* 1, 2 or 4 bytes */
    Py_ssize_t n_pos;
    long long offset;
    Py_ssize_t at;    /* the next posting to look at (wanted ids ascend) */
    Py_ssize_t start; /* where that posting's positions begin */
} Word;

static inline long long position_at(const Word *w, Py_ssize_t i)
{
    return w->pos_width == 1   ? ((const uint8_t *)w->pos)[i]
           : w->pos_width == 2 ? ((const uint16_t *)w->pos)[i]
                               : ((const uint32_t *)w->pos)[i];
}

/* Move `w` to chunk `id`: its positions' [*lo, *hi) when it holds the word, else 0. -1 (IndexError
 * set) when the frequencies run past the positions. */
static int seek(Word *w, uint32_t id, Py_ssize_t *lo, Py_ssize_t *hi)
{
    while (w->at < w->n && w->ids[w->at] < id) {
        w->start += freq_at(w->tf, w->at);
        w->at++;
    }
    if (w->at >= w->n || w->ids[w->at] != id)
        return 0;
    *lo = w->start;
    *hi = w->start + freq_at(w->tf, w->at);
    if (*hi > w->n_pos) {
        PyErr_SetString(PyExc_IndexError, "a term's frequencies count more positions than it holds");
        return -1;
    }
    return *hi > *lo;
}

/* Whether `target` is among the positions [lo, hi) of `w` (ascending: a binary search). */
static int holds(const Word *w, Py_ssize_t lo, Py_ssize_t hi, long long target)
{
    while (lo < hi) {
        Py_ssize_t mid = lo + (hi - lo) / 2;
        long long value = position_at(w, mid);
        if (value == target)
            return 1;
        if (value < target)
            lo = mid + 1;
        else
            hi = mid;
    }
    return 0;
}

PyObject *phrase_chunks(PyObject *self, PyObject *args)
{
    PyObject *wanted_obj, *words_obj;
    if (!PyArg_ParseTuple(args, "OO!", &wanted_obj, &PyTuple_Type, &words_obj))
        return NULL;
    Py_ssize_t n_words = PyTuple_GET_SIZE(words_obj);
    Py_buffer *views = PyMem_Calloc(3 * n_words + 1, sizeof(Py_buffer));
    Word *words = PyMem_Calloc(n_words + 1, sizeof(Word));
    Py_ssize_t *lo = PyMem_Calloc(n_words + 1, sizeof(Py_ssize_t));
    Py_ssize_t *hi = PyMem_Calloc(n_words + 1, sizeof(Py_ssize_t));
    PyObject *out = NULL;
    Py_ssize_t got = 0;
    if (!views || !words || !lo || !hi) {
        PyErr_NoMemory();
        goto done;
    }
    if (get_buffer(wanted_obj, &views[got], 4, "wanted") < 0)
        goto done;
    const uint32_t *wanted = (const uint32_t *)views[got].buf;
    Py_ssize_t n_wanted = views[got++].len / 4;
    for (Py_ssize_t w = 0; w < n_words; w++) {
        PyObject *word = PyTuple_GET_ITEM(words_obj, w);
        if (!PyTuple_Check(word) || PyTuple_GET_SIZE(word) != 4) {
            PyErr_SetString(PyExc_TypeError, "each word is (ids, tf, positions, offset)");
            goto done;
        }
        if (get_buffer(PyTuple_GET_ITEM(word, 0), &views[got], 4, "ids") < 0)
            goto done;
        words[w].ids = (const uint32_t *)views[got].buf;
        words[w].n = views[got++].len / 4;
        if (get_freqs(PyTuple_GET_ITEM(word, 1), &views[got++], words[w].n, "tf", &words[w].tf) < 0) {
            got--;
            goto done;
        }
        Py_buffer *pos = &views[got];
        if (PyObject_GetBuffer(PyTuple_GET_ITEM(word, 2), pos, PyBUF_C_CONTIGUOUS) < 0)
            goto done;
        got++;
        if (pos->len && pos->itemsize != 1 && pos->itemsize != 2 && pos->itemsize != 4) {
            PyErr_SetString(PyExc_TypeError, "positions: one, two or four bytes each expected");
            goto done;
        }
        words[w].pos = (const unsigned char *)pos->buf;
        words[w].pos_width = pos->len ? (int)pos->itemsize : 2;
        words[w].n_pos = pos->len / words[w].pos_width;
        words[w].offset = PyLong_AsLongLong(PyTuple_GET_ITEM(word, 3));
        if (words[w].offset == -1 && PyErr_Occurred())
            goto done;
    }
    out = PyBytes_FromStringAndSize(NULL, 4 * n_wanted);
    if (out == NULL)
        goto done;
    uint32_t *found = (uint32_t *)PyBytes_AS_STRING(out);
    Py_ssize_t n_found = 0;
    for (Py_ssize_t i = 0; i < n_wanted && n_words > 0; i++) {
        uint32_t id = wanted[i];
        int all = 1;
        for (Py_ssize_t w = 0; w < n_words && all; w++) {
            int held = seek(&words[w], id, &lo[w], &hi[w]);
            if (held < 0)
                goto failed;
            all = held;
        }
        if (!all)
            continue;
        int match = 0;
        for (Py_ssize_t p = lo[0]; p < hi[0] && !match; p++) {
            long long start = position_at(&words[0], p) - words[0].offset;
            if (start < 0)
                continue; /* the word stands nearer the text's start than its offset: no phrase */
            match = 1;
            for (Py_ssize_t w = 1; w < n_words && match; w++)
                match = holds(&words[w], lo[w], hi[w], start + words[w].offset);
        }
        if (match)
            found[n_found++] = id;
    }
    if (_PyBytes_Resize(&out, 4 * n_found) < 0)
        out = NULL;
    goto done;
failed:
    Py_CLEAR(out);
done:
    release_views(views, got);
    PyMem_Free(views);
    PyMem_Free(words);
    PyMem_Free(lo);
    PyMem_Free(hi);
    return result_or_error(out);
}
