/* A segment's raw-token table, in C: the hot loop of building a segment.
 *
 * Python reads a text's tokens (TOKEN_RE, kenning.analysis.analyzer) and looks each one up in a
 * dict; for a segment of 20,000 chunks that per-token work was half of an analysis worker's time.
 * Here a text is scanned once: each token (a run of letters and digits, runs joined by inner
 * underscores: the same tokens TOKEN_RE finds in NFC text) is hashed straight from the string's
 * characters and looked up in an open-addressing table, with no Python object per token. What the
 * table cannot answer goes back to Python: tokens it has not seen, handed to a callback that gives
 * their terms (kenning.analysis) before their places are filled, and texts with tokens that make
 * several terms (identifiers, CJK runs: the slow path).
 *
 * The table also counts, for each raw token, the chunks that hold it (the spelling vocabulary's
 * counts), stamping each entry with the last chunk counted.
 *
 * kenning.indexing.term_table holds the same interface in Python, used when this module is not
 * built; tests/indexing/test_term_table.py holds the two equal.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#define UNKNOWN (-2) /* seen in a scan, its terms not given yet */
#define SEVERAL (-1) /* makes several terms at one place: the slow path */
#define ARENA_BLOCK (1 << 20)

typedef struct {
    uint64_t hash;
    const char *key; /* the token's characters in their narrowest kind (1, 2 or 4 bytes each) */
    Py_ssize_t len;  /* characters */
    int kind;
    int32_t term;
    uint64_t stamp;  /* the last chunk counted, plus one (0: none yet) */
    uint64_t listed; /* the last scan that listed it as new */
    int64_t chunks; /* chunks that hold the token (added less removed, in a table of changes) */
} Entry;

typedef struct Block {
    struct Block *next;
    size_t used;
    char data[];
} Block;

typedef struct {
    PyObject_HEAD
    Entry *slots;
    size_t capacity; /* a power of two */
    size_t count;
    Block *arena;
    uint32_t *ids;
    Py_ssize_t *pending; /* a scan's new tokens: (place in ids, start, end), three a token */
    size_t scratch;      /* capacity of ids, and of pending in tokens */
    uint64_t scans;      /* scans so far (each lists a new token once) */
    char *narrow;   /* a wide string's token in a narrower kind */
    size_t narrow_size;
} TermTable;

static unsigned char ascii_word[256];

static inline int is_word(int kind, const void *data, Py_ssize_t i)
{
    Py_UCS4 ch = PyUnicode_READ(kind, data, i);
    if (ch < 256 && kind == PyUnicode_1BYTE_KIND)
        return ascii_word[ch];
    return Py_UNICODE_ISALNUM(ch);
}

static inline uint64_t hash_key(const char *key, size_t nbytes, int kind)
{
    uint64_t h = 1469598103934665603ULL ^ (uint64_t)kind; /* FNV-1a */
    for (size_t i = 0; i < nbytes; i++) {
        h ^= (unsigned char)key[i];
        h *= 1099511628211ULL;
    }
    return h | 1; /* 0 marks an empty slot */
}

static const char *arena_copy(TermTable *self, const char *key, size_t nbytes)
{
    Block *block = self->arena;
    if (block == NULL || block->used + nbytes > ARENA_BLOCK) {
        size_t size = nbytes > ARENA_BLOCK ? nbytes : ARENA_BLOCK;
        Block *fresh = PyMem_Malloc(sizeof(Block) + size);
        if (fresh == NULL)
            return NULL;
        fresh->next = block;
        fresh->used = 0;
        self->arena = block = fresh;
    }
    char *copy = block->data + block->used;
    memcpy(copy, key, nbytes);
    block->used += nbytes;
    return copy;
}

static Entry *find(TermTable *self, const char *key, Py_ssize_t len, int kind, uint64_t hash)
{
    size_t mask = self->capacity - 1, i = (size_t)hash & mask;
    size_t nbytes = (size_t)len * kind;
    for (;;) {
        Entry *e = &self->slots[i];
        if (e->hash == 0)
            return e;
        if (e->hash == hash && e->len == len && e->kind == kind && memcmp(e->key, key, nbytes) == 0)
            return e;
        i = (i + 1) & mask;
    }
}

static int grow(TermTable *self)
{
    size_t capacity = self->capacity ? self->capacity * 2 : 1 << 16;
    Entry *slots = PyMem_Calloc(capacity, sizeof(Entry));
    if (slots == NULL)
        return -1;
    for (size_t i = 0; i < self->capacity; i++) {
        Entry *e = &self->slots[i];
        if (e->hash == 0)
            continue;
        size_t j = (size_t)e->hash & (capacity - 1);
        while (slots[j].hash != 0)
            j = (j + 1) & (capacity - 1);
        slots[j] = *e;
    }
    PyMem_Free(self->slots);
    self->slots = slots;
    self->capacity = capacity;
    return 0;
}

/* The entry for a token (its characters in their narrowest kind), made as UNKNOWN when absent;
 * NULL on memory error. The table grows only when an entry is made, so the entries a scan has
 * gathered stay where they are as long as it meets no new token. */
static Entry *entry_for(TermTable *self, const char *key, Py_ssize_t len, int kind)
{
    uint64_t hash = hash_key(key, (size_t)len * kind, kind);
    Entry *e = self->capacity ? find(self, key, len, kind, hash) : NULL;
    if (e != NULL && e->hash != 0)
        return e;
    if ((self->count + 1) * 10 > self->capacity * 7) {
        if (grow(self) < 0)
            return NULL;
        e = find(self, key, len, kind, hash);
    }
    const char *copy = arena_copy(self, key, (size_t)len * kind);
    if (copy == NULL)
        return NULL;
    e->hash = hash;
    e->key = copy;
    e->len = len;
    e->kind = kind;
    e->term = UNKNOWN;
    e->stamp = 0;
    e->chunks = 0;
    e->listed = 0;
    self->count++;
    return e;
}

static Entry *entry_of_str(TermTable *self, PyObject *raw)
{
    if (!PyUnicode_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "raw tokens must be str");
        return NULL;
    }
    Entry *e = entry_for(self, PyUnicode_DATA(raw), PyUnicode_GET_LENGTH(raw), PyUnicode_KIND(raw));
    if (e == NULL && !PyErr_Occurred())
        PyErr_NoMemory();
    return e;
}

/* A chunk id from Python: ids are uint32 in a segment. */
static int chunk_id(PyObject *value, uint64_t *stamp)
{
    unsigned long long chunk = PyLong_AsUnsignedLongLong(value);
    if (chunk == (unsigned long long)-1 && PyErr_Occurred())
        return -1;
    if (chunk > UINT32_MAX) {
        PyErr_Format(PyExc_OverflowError, "chunk id %llu does not fit a segment's 32 bits", chunk);
        return -1;
    }
    *stamp = (uint64_t)chunk + 1;
    return 0;
}

static inline void count_in(Entry *e, uint64_t stamp, int64_t delta)
{
    if (e->stamp != stamp) {
        e->stamp = stamp;
        e->chunks += delta;
    }
}

static int reserve(TermTable *self, size_t n)
{
    if (n <= self->scratch)
        return 0;
    size_t size = self->scratch ? self->scratch : 1024;
    while (size < n)
        size *= 2;
    uint32_t *ids = PyMem_Realloc(self->ids, size * sizeof(uint32_t));
    if (ids == NULL)
        return -1;
    self->ids = ids;
    Py_ssize_t *pending = PyMem_Realloc(self->pending, 3 * size * sizeof(Py_ssize_t));
    if (pending == NULL)
        return -1;
    self->pending = pending;
    self->scratch = size;
    return 0;
}

/* A token's characters as a key: in their narrowest kind (how Python keeps a str of them, so a
 * token read from a wide string and the same token given as a str are one entry). */
static const char *token_key(TermTable *self, int kind, const void *data, Py_ssize_t start,
                             Py_ssize_t len, int *key_kind)
{
    const char *at = (const char *)data + start * kind;
    *key_kind = kind;
    if (kind == PyUnicode_1BYTE_KIND)
        return at;
    Py_UCS4 top = 0;
    for (Py_ssize_t k = 0; k < len; k++) {
        Py_UCS4 ch = PyUnicode_READ(kind, data, start + k);
        if (ch > top)
            top = ch;
    }
    int narrow = top < 256 ? PyUnicode_1BYTE_KIND : top < 65536 ? PyUnicode_2BYTE_KIND : PyUnicode_4BYTE_KIND;
    if (narrow == kind)
        return at;
    if ((size_t)len * narrow > self->narrow_size) {
        char *buffer = PyMem_Realloc(self->narrow, (size_t)len * narrow);
        if (buffer == NULL)
            return NULL;
        self->narrow = buffer;
        self->narrow_size = (size_t)len * narrow;
    }
    for (Py_ssize_t k = 0; k < len; k++)
        PyUnicode_WRITE(narrow, self->narrow, k, PyUnicode_READ(kind, data, start + k));
    *key_kind = narrow;
    return self->narrow;
}

/* The next token at or after *pos: its start in *start and its end in *pos; 0 when there is none. */
static inline int next_token(int kind, const void *data, Py_ssize_t n, Py_ssize_t *pos, Py_ssize_t *start)
{
    Py_ssize_t i = *pos;
    while (i < n && !is_word(kind, data, i))
        i++;
    if (i >= n) {
        *pos = i;
        return 0;
    }
    *start = i;
    while (i < n && is_word(kind, data, i))
        i++;
    for (;;) { /* inner underscores join word runs: snake_case is one token */
        Py_ssize_t j = i;
        while (j < n && PyUnicode_READ(kind, data, j) == '_')
            j++;
        if (j == i || j >= n || !is_word(kind, data, j))
            break;
        i = j;
        while (i < n && is_word(kind, data, i))
            i++;
    }
    *pos = i;
    return 1;
}

/* The entry of the token text[start:end], made as UNKNOWN when absent; NULL on memory error. */
static Entry *token_entry(TermTable *self, int kind, const void *data, Py_ssize_t start, Py_ssize_t end)
{
    int key_kind;
    const char *key = token_key(self, kind, data, start, end - start, &key_kind);
    return key == NULL ? NULL : entry_for(self, key, end - start, key_kind);
}

PyDoc_STRVAR(scan_doc,
"scan(text, chunk_id, learn) -> bytes | None\n\n"
"The term ids of an NFC text's tokens as uint32 bytes (native order), the chunk counted once for\n"
"each token as it is read. Tokens the table has no term for are handed to learn (a list, each\n"
"once), which must give each its term (learn), then are looked up again: the text is read once.\n"
"None when some token makes several terms (the chunk counted all the same). learn must not scan.");

static PyObject *scan(TermTable *self, PyObject *args)
{
    PyObject *text, *chunk_arg, *learner;
    uint64_t stamp;
    if (!PyArg_ParseTuple(args, "UOO:scan", &text, &chunk_arg, &learner) || chunk_id(chunk_arg, &stamp) < 0)
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    uint64_t serial = ++self->scans;
    PyObject *unknown = NULL;
    size_t found = 0, pending = 0;
    int several = 0;
    Py_ssize_t i = 0, start;
    while (next_token(kind, data, n, &i, &start)) {
        Entry *e = token_entry(self, kind, data, start, i);
        if (e == NULL)
            goto fail;
        count_in(e, stamp, 1);
        if (found == self->scratch && reserve(self, found + 1) < 0)
            goto fail;
        if (e->term == SEVERAL) {
            several = 1;
        } else if (e->term == UNKNOWN) { /* its place filled once it is learned */
            Py_ssize_t *at = self->pending + 3 * pending++;
            at[0] = (Py_ssize_t)found, at[1] = start, at[2] = i;
            if (e->listed != serial) {
                e->listed = serial;
                if (unknown == NULL && (unknown = PyList_New(0)) == NULL)
                    goto fail;
                PyObject *token = PyUnicode_Substring(text, start, i);
                int failed = token == NULL || PyList_Append(unknown, token) < 0;
                Py_XDECREF(token);
                if (failed)
                    goto fail;
            }
        } else {
            self->ids[found] = (uint32_t)e->term;
        }
        found++;
    }
    if (unknown != NULL) {
        PyObject *done = PyObject_CallOneArg(learner, unknown);
        Py_CLEAR(unknown);
        if (done == NULL)
            goto fail;
        Py_DECREF(done);
        for (size_t k = 0; k < pending; k++) { /* (the table may have grown: looked up again) */
            const Py_ssize_t *at = self->pending + 3 * k;
            Entry *e = token_entry(self, kind, data, at[1], at[2]);
            if (e == NULL)
                goto fail;
            if (e->term == UNKNOWN) {
                PyObject *token = PyUnicode_Substring(text, at[1], at[2]);
                if (token != NULL)
                    PyErr_Format(PyExc_ValueError, "scan: learn gave %R no term", token);
                Py_XDECREF(token);
                goto fail;
            }
            if (e->term == SEVERAL)
                several = 1;
            else
                self->ids[at[0]] = (uint32_t)e->term;
        }
    }
    if (several)
        Py_RETURN_NONE;
    return PyBytes_FromStringAndSize((const char *)self->ids, (Py_ssize_t)(found * sizeof(uint32_t)));
fail:
    Py_XDECREF(unknown);
    return PyErr_Occurred() ? NULL : PyErr_NoMemory();
}

PyDoc_STRVAR(learn_doc,
"learn(raws, terms)\n\nGive raw tokens their term id (-1: the token makes several terms).");

static PyObject *learn(TermTable *self, PyObject *args)
{
    PyObject *raws, *terms;
    if (!PyArg_ParseTuple(args, "OO:learn", &raws, &terms))
        return NULL;
    PyObject *raw_seq = PySequence_Fast(raws, "raws must be a sequence");
    if (raw_seq == NULL)
        return NULL;
    PyObject *term_seq = PySequence_Fast(terms, "terms must be a sequence");
    if (term_seq == NULL) {
        Py_DECREF(raw_seq);
        return NULL;
    }
    Py_ssize_t n = PySequence_Fast_GET_SIZE(raw_seq);
    if (n != PySequence_Fast_GET_SIZE(term_seq)) {
        PyErr_SetString(PyExc_ValueError, "raws and terms differ in length");
        goto fail;
    }
    for (Py_ssize_t k = 0; k < n; k++) {
        long term = PyLong_AsLong(PySequence_Fast_GET_ITEM(term_seq, k));
        if (term == -1 && PyErr_Occurred())
            goto fail;
        if (term < SEVERAL || term > INT32_MAX) {
            PyErr_Format(PyExc_ValueError, "term id out of range: %ld", term);
            goto fail;
        }
        Entry *e = entry_of_str(self, PySequence_Fast_GET_ITEM(raw_seq, k));
        if (e == NULL)
            goto fail;
        e->term = (int32_t)term;
    }
    Py_DECREF(raw_seq);
    Py_DECREF(term_seq);
    Py_RETURN_NONE;
fail:
    Py_DECREF(raw_seq);
    Py_DECREF(term_seq);
    return NULL;
}

PyDoc_STRVAR(get_doc, "get(raw) -> int | None\n\nThe one term id of a raw token (None: unknown, or several terms).");

static PyObject *get(TermTable *self, PyObject *raw)
{
    if (!PyUnicode_Check(raw)) {
        PyErr_SetString(PyExc_TypeError, "raw tokens must be str");
        return NULL;
    }
    if (self->capacity == 0)
        Py_RETURN_NONE;
    int kind = PyUnicode_KIND(raw);
    Py_ssize_t len = PyUnicode_GET_LENGTH(raw);
    const char *key = PyUnicode_DATA(raw);
    Entry *e = find(self, key, len, kind, hash_key(key, (size_t)len * kind, kind));
    if (e->hash == 0 || e->term < 0)
        Py_RETURN_NONE;
    return PyLong_FromLong(e->term);
}

PyDoc_STRVAR(count_doc, "count(raws, chunk_id)\n\nCount a chunk once for each of its raw tokens (the slow path's).");

static PyObject *count(TermTable *self, PyObject *args)
{
    PyObject *raws;
    PyObject *chunk_arg;
    uint64_t stamp;
    if (!PyArg_ParseTuple(args, "OO:count", &raws, &chunk_arg) || chunk_id(chunk_arg, &stamp) < 0)
        return NULL;
    PyObject *seq = PySequence_Fast(raws, "raws must be a sequence");
    if (seq == NULL)
        return NULL;
    for (Py_ssize_t k = 0; k < PySequence_Fast_GET_SIZE(seq); k++) {
        Entry *e = entry_of_str(self, PySequence_Fast_GET_ITEM(seq, k));
        if (e == NULL) {
            Py_DECREF(seq);
            return NULL;
        }
        count_in(e, stamp, 1);
    }
    Py_DECREF(seq);
    Py_RETURN_NONE;
}

PyDoc_STRVAR(tally_doc,
"tally(text, chunk_id, delta=1)\n\n"
"Count a chunk once for each raw token of an NFC text, tokens not known yet included (they stay\n"
"without a term): for a table that only counts, such as a run's removed chunks' words (delta -1).");

static PyObject *tally(TermTable *self, PyObject *args)
{
    PyObject *text;
    PyObject *chunk_arg;
    long long delta = 1;
    uint64_t stamp;
    if (!PyArg_ParseTuple(args, "UO|L:tally", &text, &chunk_arg, &delta) || chunk_id(chunk_arg, &stamp) < 0)
        return NULL;
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    Py_ssize_t i = 0, start;
    while (next_token(kind, data, n, &i, &start)) {
        Entry *e = token_entry(self, kind, data, start, i);
        if (e == NULL)
            return PyErr_Occurred() ? NULL : PyErr_NoMemory();
        count_in(e, stamp, (int64_t)delta);
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(add_counts_doc,
"add_counts(counts)\n\n"
"Add {raw token: chunks} (any sign) to the tokens' counts: a run's table of changes takes its\n"
"workers' counts of the chunks they analysed, its removed chunks tallied with delta -1.");

static PyObject *add_counts(TermTable *self, PyObject *counts)
{
    if (!PyDict_Check(counts)) {
        PyErr_SetString(PyExc_TypeError, "counts must be a dict");
        return NULL;
    }
    PyObject *raw, *value;
    Py_ssize_t pos = 0;
    while (PyDict_Next(counts, &pos, &raw, &value)) {
        long long n = PyLong_AsLongLong(value);
        if (n == -1 && PyErr_Occurred())
            return NULL;
        Entry *e = entry_of_str(self, raw);
        if (e == NULL)
            return NULL;
        e->chunks += n;
    }
    Py_RETURN_NONE;
}

PyDoc_STRVAR(chunk_counts_doc,
"chunk_counts() -> dict[str, int]\n\nEach counted raw token and how many chunks hold it (not those at 0).");
PyDoc_STRVAR(take_counts_doc,
"take_counts() -> dict[str, int]\n\n"
"What chunk_counts() gives, each count then starting again from zero: a table kept from one segment\n"
"to the next gives each segment its own counts.");

static PyObject *counts_of(TermTable *self, int reset)
{
    PyObject *out = PyDict_New();
    if (out == NULL)
        return NULL;
    for (size_t i = 0; i < self->capacity; i++) {
        Entry *e = &self->slots[i];
        if (e->hash == 0 || e->chunks == 0)
            continue;
        PyObject *raw = PyUnicode_FromKindAndData(e->kind, e->key, e->len);
        if (raw == NULL)
            goto fail;
        PyObject *value = PyLong_FromLongLong(e->chunks);
        int failed = value == NULL || PyDict_SetItem(out, raw, value) < 0;
        Py_XDECREF(value);
        Py_DECREF(raw);
        if (failed)
            goto fail;
        if (reset)
            e->chunks = 0;
    }
    return out;
fail:
    Py_DECREF(out);
    return NULL;
}

static PyObject *chunk_counts(TermTable *self, PyObject *Py_UNUSED(ignored))
{
    return counts_of(self, 0);
}

static PyObject *take_counts(TermTable *self, PyObject *Py_UNUSED(ignored))
{
    return counts_of(self, 1);
}

static Py_ssize_t table_len(TermTable *self)
{
    return (Py_ssize_t)self->count;
}

static void table_dealloc(TermTable *self)
{
    PyMem_Free(self->slots);
    PyMem_Free(self->ids);
    PyMem_Free(self->pending);
    PyMem_Free(self->narrow);
    while (self->arena != NULL) {
        Block *next = self->arena->next;
        PyMem_Free(self->arena);
        self->arena = next;
    }
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static PyMethodDef table_methods[] = {
    {"scan", (PyCFunction)scan, METH_VARARGS, scan_doc},
    {"learn", (PyCFunction)learn, METH_VARARGS, learn_doc},
    {"get", (PyCFunction)get, METH_O, get_doc},
    {"count", (PyCFunction)count, METH_VARARGS, count_doc},
    {"tally", (PyCFunction)tally, METH_VARARGS, tally_doc},
    {"add_counts", (PyCFunction)add_counts, METH_O, add_counts_doc},
    {"chunk_counts", (PyCFunction)chunk_counts, METH_NOARGS, chunk_counts_doc},
    {"take_counts", (PyCFunction)take_counts, METH_NOARGS, take_counts_doc},
    {NULL, NULL, 0, NULL},
};

static PySequenceMethods table_sequence = {.sq_length = (lenfunc)table_len};

static PyTypeObject TermTableType = {
    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "kenning.indexing._term_table.TermTable",
    .tp_doc = PyDoc_STR("A segment's raw tokens: their term ids and the chunks that hold each."),
    .tp_basicsize = sizeof(TermTable),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)table_dealloc,
    .tp_methods = table_methods,
    .tp_as_sequence = &table_sequence,
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT,
    .m_name = "_term_table",
    .m_doc = "A segment's raw-token table in C (see kenning.indexing.term_table).",
    .m_size = -1,
};

PyMODINIT_FUNC PyInit__term_table(void)
{
    for (int ch = 0; ch < 256; ch++)
        ascii_word[ch] = Py_UNICODE_ISALNUM((Py_UCS4)ch) ? 1 : 0;
    if (PyType_Ready(&TermTableType) < 0)
        return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    Py_INCREF(&TermTableType);
    if (PyModule_AddObject(m, "TermTable", (PyObject *)&TermTableType) < 0) {
        Py_DECREF(&TermTableType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
