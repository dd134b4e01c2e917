/* A term's BM25 scores on the query path, in C: each posting's weighted score (weigh), the exact
 * top k over a query's terms (maxscore: Turtle & Flood's MaxScore by windows of chunk ids, weighing
 * only the postings it visits), and the top k of scores already made (top_k, which every channel's
 * ranking goes through). One file because weigh and maxscore weigh a posting through the same
 * weigh_one, so their scores agree to the last bit.
 *
 * In NumPy a common term's weighted scores took ~10 array passes (two fields' saturation, the
 * weights, the idf); here they take one. The arithmetic is NumPy's, operation for operation and in
 * the same order (see kenning.lexical.bm25), so the scores are equal to the last bit: the extension
 * is built with -ffp-contract=off, so that no multiply-add is fused. kenning.kernels wraps these;
 * kenning.lexical.view and kenning.lexical.pruning compute the same in NumPy where the module is
 * not built, and tests/lexical/test_kernels.py holds the two equal.
 */
#include "kernels.h"
#include <math.h>

/* ---------------------------------------------------------------- weighing postings */

/* A field's length normalisation, and the saturated term frequency of one field from it: together
 * what kenning.lexical.bm25.saturate computes, in its order of operations. */
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

/* What weighing one posting needs besides the posting: the fields' lengths by chunk id, the BM25
 * parameters and the fields' tables (when tabulated). */
typedef struct {
    const uint16_t *tl, *bl;
    Py_ssize_t chunks;
    int variant;
    double k1, b, delta, tw, bw;
    FieldTable title, body;
} Weighing;

/* Both fields' tables for `w`, in one block the caller frees; NULL (MemoryError set) when there is
 * no memory for them. */
static double *tabulate(Weighing *w)
{
    double *tables = PyMem_Malloc(4 * NORM_TABLE * sizeof(double));
    if (tables == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    FieldTable *fields[2] = {&w->title, &w->body};
    for (int f = 0; f < 2; f++) {
        double *norm = tables + 2 * f * NORM_TABLE, *once = norm + NORM_TABLE;
        for (int length = 0; length < NORM_TABLE; length++) {
            norm[length] = field_norm((double)length, fields[f]->avg, w->b);
            once[length] = saturate_norm(1.0, norm[length], w->variant, w->k1, w->delta);
        }
        fields[f]->norm = norm, fields[f]->once = once;
    }
    return tables;
}

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

const char weigh_doc[] = PyDoc_STR(
    "weigh(ids, tf_title, tf_body, title_len, body_len, avg_title, avg_body, variant, k1, b,\n"
    "      delta, title_weight, body_weight, idf, use_title, use_body) -> bytes\n\n"
    "Each posting's weighted BM25 score as float64 bytes: idf x (title_weight x S_title +\n"
    "body_weight x S_body), a field left out when its use_ flag is 0. ids: uint32; tf_*: one or\n"
    "two bytes per posting, or empty (all zero); *_len: uint16 per chunk id; variant 0\n"
    "classic, 1 plus, 2 l.");

PyObject *weigh(PyObject *self, PyObject *args)
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
    Weighing how = {tl, bl, chunks, variant, k1, b, delta, tw, bw, {NULL, NULL, avg_t}, {NULL, NULL, avg_b}};
    if (n >= TABLE_FROM && (tables = tabulate(&how)) == NULL)
        goto done;
    double *restrict w = (double *)PyBytes_AS_STRING(out);
    for (Py_ssize_t i = 0; i < n; i++)
        w[i] = weigh_one(&how, freq_at(tft, i), freq_at(tfb, i), ids[i], idf, use_title, use_body);
done:
    PyMem_Free(tables);
    release_views(views, got);
    return result_or_error(out);
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
    double held;         /* what holding the term counts for in the coordination (1.0: a clause) */
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
 * kenning.lexical.pruning multiplies the weighed scores. `bad` is set for an id without a length. */
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

/* a is worse than b: a lower score, or the same score and a higher id (ties go to the lower id); a
 * score that is not a number is below every number (a damaged input ranks last, whatever its order) */
static int worse(Scored a, Scored b)
{
    int a_nan = a.score != a.score, b_nan = b.score != b.score;
    if (a_nan != b_nan)
        return a_nan;
    if (a_nan)
        return a.id > b.id;
    return a.score < b.score || (a.score == b.score && a.id > b.id);
}

static inline void swap(Scored *heap, Py_ssize_t a, Py_ssize_t b)
{
    Scored t = heap[a];
    heap[a] = heap[b];
    heap[b] = t;
}

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
        swap(heap, i, w);
        i = w;
    }
}

static void sift_up(Scored *heap, Py_ssize_t i)
{
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!worse(heap[i], heap[parent]))
            return;
        swap(heap, i, parent);
        i = parent;
    }
}

/* offer `entry` to a heap of the k best kept so far (`*size` of them) */
static inline void heap_offer(Scored *heap, Py_ssize_t *size, Py_ssize_t k, Scored entry)
{
    if (*size < k) {
        heap[*size] = entry;
        sift_up(heap, (*size)++);
    } else if (worse(heap[0], entry)) {
        heap[0] = entry;
        sift_down(heap, *size, 0);
    }
}

/* empty a heap of `size` into ids and scores, best first (the worst comes off first) */
static void heap_drain(Scored *heap, Py_ssize_t size, int64_t *ids, double *scores)
{
    for (Py_ssize_t at = size - 1; at >= 0; at--) {
        ids[at] = heap[0].id;
        scores[at] = heap[0].score;
        heap[0] = heap[--size];
        sift_down(heap, size, 0);
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

/* floor + (1 - floor) x the share of the query a chunk holds: `held` of `whole` (matched clauses of
 * all clauses, or their idf of the query's idf), as the exhaustive path computes it */
static double coordination(double floor, double held, double whole)
{
    return floor + (1.0 - floor) * (held / whole);
}

/* an upper bound on the coordination of a chunk that holds at most `held` of `whole` */
static inline double coordination_bound(double floor, double held, double whole)
{
    return coordination(floor, held < whole ? held : whole, whole);
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

/* One window's shared arrays: the offsets touched, and per offset the coordination the lists matched
 * hold (a bound only: summed in another order than the exact) and their scores' sum. */
typedef struct {
    uint64_t *touched;
    double *held_at;
    double *partial_at;
} Window;

/* A list's posting at window offset `off` with its score: kept in the list's arrays (`v`, `b`) and
 * counted in the window's. */
static inline void put(Window *win, double *v, uint64_t *b, uint32_t off, double score, double held)
{
    v[off] = score;
    b[off >> 6] |= 1ull << (off & 63);
    win->touched[off >> 6] |= 1ull << (off & 63);
    win->held_at[off] += held;
    win->partial_at[off] += score;
}

const char maxscore_doc[] = PyDoc_STR(
    "maxscore(ids, scores, maxima, clauses, floor, k, allowed, weighing=None, held=None)\n"
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
    "be >= 0). clauses: the coordination's denominator; floor: its floor (1.0: none); held: None\n"
    "(each term counts 1 of `clauses`) or (a float per term, their whole): what holding each term\n"
    "counts for in the coordination, of a whole that may hold terms no chunk has; allowed: a\n"
    "bool buffer over chunk ids or None. Returns the top k best first (int64 and float64 bytes),\n"
    "how many chunks were scored, how many terms still had an essential list (candidates came\n"
    "from them) at the end, and the maxima (floats, pairs for split terms).");


PyObject *maxscore(PyObject *self, PyObject *args)
{
    PyObject *ids_t, *scores_t, *maxima_t, *allowed_o, *weighing_o = Py_None, *held_o = Py_None;
    Py_ssize_t clauses, k;
    double floor;
    if (!PyArg_ParseTuple(args, "O!O!O!ndnO|OO", &PyTuple_Type, &ids_t, &PyTuple_Type, &scores_t, &PyTuple_Type,
                          &maxima_t, &clauses, &floor, &k, &allowed_o, &weighing_o, &held_o))
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
    double *held_sum = PyMem_Calloc(most + 1, sizeof(double)); /* the first j lists' coordination held */
    char *present = PyMem_Calloc(most, 1);
    Scored *heap = PyMem_Calloc(k, sizeof(Scored));
    /* one window's essential postings: each list's score by offset, the lists present (a bit per
     * list and offset), how many matched and their sum (a bound only), and the offsets touched */
    double *val = PyMem_Calloc((size_t)most * WINDOW, sizeof(double));
    uint64_t *bits = PyMem_Calloc((size_t)most * (WINDOW / 64), sizeof(uint64_t));
    uint64_t *touched = PyMem_Calloc(WINDOW / 64, sizeof(uint64_t));
    double *held_at = PyMem_Calloc(WINDOW, sizeof(double));
    double *partial_at = PyMem_Calloc(WINDOW, sizeof(double));
    Py_ssize_t got = 0, size = 0, scored = 0, essential_from = 0, weighed = 0;
    double whole = (double)clauses; /* the coordination's denominator: clauses, or the query's idf */
    const unsigned char *allowed = NULL;
    Py_ssize_t allowed_n = 0;
    int has_allowed = 0, bad = 0;
    PyObject *result = NULL, *maxima_out = NULL;
    double *tables = NULL;
    Weighing how = {NULL, NULL, 0, 0, 0.0, 0.0, 0.0, 0.0, 0.0, {NULL, NULL, 0.0}, {NULL, NULL, 0.0}};
    if (!views || !given || !cursors || !sels || !order || !rank || !bound || !bound_sum || !found ||
        !held_sum || !present || !heap || !val || !bits || !touched || !held_at || !partial_at) {
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
    if (held_o == Py_None) {
        for (Py_ssize_t t = 0; t < terms; t++)
            given[t].held = 1.0;
    } else {
        PyObject *each_o;
        if (!PyArg_ParseTuple(held_o, "O!d", &PyTuple_Type, &each_o, &whole))
            goto done;
        if (PyTuple_GET_SIZE(each_o) != terms || !(whole > 0.0)) {
            PyErr_SetString(PyExc_ValueError, "maxscore: held needs one weight per term and a whole > 0");
            goto done;
        }
        double sum = 0.0;
        for (Py_ssize_t t = 0; t < terms; t++) {
            given[t].held = PyFloat_AsDouble(PyTuple_GET_ITEM(each_o, t));
            if (given[t].held == -1.0 && PyErr_Occurred())
                goto done;
            if (!(given[t].held >= 0.0)) {
                PyErr_SetString(PyExc_ValueError, "maxscore: a held weight below zero");
                goto done;
            }
            sum += given[t].held;
        }
        if (sum > whole * (1.0 + 1e-9)) {
            PyErr_SetString(PyExc_ValueError, "maxscore: the terms' held weights exceed their whole");
            goto done;
        }
    }
    if (weighed >= TABLE_FROM && (tables = tabulate(&how)) == NULL) /* as weigh() tabulates a common term's */
        goto done;
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
     * their maxima times the coordination of holding all j (more than it can get when two are parts
     * of one term: a bound still), a hair above, for rounding: the exact sums are added in another
     * order) */
    {
        double sum = 0.0, held = 0.0;
        bound[0] = 0.0;
        for (Py_ssize_t j = 0; j < lists; j++) {
            sum += cursors[order[j]].max;
            held += cursors[order[j]].held;
            bound_sum[j + 1] = sum;
            held_sum[j + 1] = held;
            bound[j + 1] = sum * coordination_bound(floor, held, whole) * (1.0 + 1e-9);
        }
    }
    Window win = {touched, held_at, partial_at};
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
                    put(&win, v, b, (uint32_t)(ids[at] - base), cursor_score(c, at, &how, &bad), c->held);
            } else { /* a part of one */
                uint32_t id;
                for (; at < n && (id = id_of(c, at)) < end; at++)
                    if (!not_in_list(c, at))
                        put(&win, v, b, (uint32_t)(id - base), cursor_score(c, at, &how, &bad), c->held);
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
                double held = held_at[off];
                double partial = partial_at[off];
                held_at[off] = 0.0;
                partial_at[off] = 0.0;
                if (has_allowed && (id >= allowed_n || !allowed[id]))
                    continue;
                double threshold = size == k ? heap[0].score : -INFINITY;
                /* the non-essential lists, largest first, while the chunk can still reach the threshold */
                double rest = bound_sum[ess];
                int hopeless = 0;
                for (Py_ssize_t j = ess - 1; j >= 0; j--) {
                    /* (the lists 0..j could add held_sum[j + 1] to what it holds) */
                    double most_held = held + held_sum[j + 1];
                    if ((partial + rest) * coordination_bound(floor, most_held, whole) * (1.0 + 1e-9) < threshold) {
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
                        held += c->held;
                    }
                }
                if (!hopeless) {
                    /* the exact score and coordination, summed in the query's order as the
                     * exhaustive path sums them */
                    double score = 0.0, exact_held = 0.0;
                    for (Py_ssize_t t = 0; t < lists; t++) {
                        if (rank[t] >= ess) {
                            if (bits[(size_t)t * (WINDOW / 64) + w] & (1ull << (off & 63))) {
                                score += val[(size_t)t * WINDOW + off];
                                exact_held += cursors[t].held;
                            }
                        } else if (present[t]) {
                            score += found[t];
                            exact_held += cursors[t].held;
                        }
                    }
                    if (floor < 1.0)
                        score *= coordination(floor, exact_held, whole);
                    scored++;
                    heap_offer(heap, &size, k, (Scored){score, id});
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
        heap_drain(heap, n, (int64_t *)PyBytes_AS_STRING(out_ids), (double *)PyBytes_AS_STRING(out_scores));
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
    release_views(views, got);
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
    PyMem_Free(held_sum);
    PyMem_Free(present);
    PyMem_Free(heap);
    PyMem_Free(val);
    PyMem_Free(bits);
    PyMem_Free(touched);
    PyMem_Free(held_at);
    PyMem_Free(partial_at);
    return result;
}

/* ---------------------------------------------------------------- top k */

const char top_k_doc[] = PyDoc_STR(
    "top_k(ids, scores, k, by_id) -> (ids bytes, scores bytes)\n\n"
    "The k best of `ids` (int64 or uint32) by score, best first, ties by ascending id, as int64 ids\n"
    "and float64 scores. `scores` (float64) holds one score per id in the same order, or with\n"
    "`by_id` one per chunk id (an id's score is scores[id]; an id past its end raises IndexError).\n"
    "Kept in a heap of k: the same k, in the same order, as sorting by (-score, id).");

/* (the heap is maxscore's: Scored, worse, sift_up and sift_down above) */

PyObject *top_k(PyObject *self, PyObject *args)
{
    PyObject *ids_obj, *scores_obj;
    Py_ssize_t k;
    int by_id;
    if (!PyArg_ParseTuple(args, "OOnp", &ids_obj, &scores_obj, &k, &by_id))
        return NULL;
    Py_buffer ids_view, scores_view;
    if (PyObject_GetBuffer(ids_obj, &ids_view, PyBUF_C_CONTIGUOUS) < 0)
        return NULL;
    if (ids_view.len && ids_view.itemsize != 4 && ids_view.itemsize != 8) {
        PyBuffer_Release(&ids_view);
        PyErr_SetString(PyExc_TypeError, "top_k: ids of four or eight bytes expected");
        return NULL;
    }
    if (get_buffer(scores_obj, &scores_view, 8, "scores") < 0) {
        PyBuffer_Release(&ids_view);
        return NULL;
    }
    int width = ids_view.len ? (int)ids_view.itemsize : 8;
    Py_ssize_t n = ids_view.len / width, n_scores = scores_view.len / 8;
    const double *scores = (const double *)scores_view.buf;
    PyObject *out = NULL, *out_ids = NULL, *out_scores = NULL;
    Scored *heap = NULL;
    if (!by_id && n_scores != n) {
        PyErr_SetString(PyExc_ValueError, "top_k: one score per id expected");
        goto done;
    }
    if (k > n)
        k = n;
    if (k < 0)
        k = 0;
    heap = PyMem_Malloc((k + 1) * sizeof(Scored));
    if (heap == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    Py_ssize_t size = 0;
    for (Py_ssize_t i = 0; i < n && k > 0; i++) {
        int64_t id = width == 4 ? (int64_t)((const uint32_t *)ids_view.buf)[i] : ((const int64_t *)ids_view.buf)[i];
        double score;
        if (by_id) {
            if (id < 0 || id >= n_scores) {
                PyErr_SetString(PyExc_IndexError, "top_k: an id past the scores");
                goto done;
            }
            score = scores[id];
        } else
            score = scores[i];
        heap_offer(heap, &size, k, (Scored){score, id});
    }
    out_ids = PyBytes_FromStringAndSize(NULL, 8 * size);
    out_scores = PyBytes_FromStringAndSize(NULL, 8 * size);
    if (out_ids == NULL || out_scores == NULL)
        goto done;
    heap_drain(heap, size, (int64_t *)PyBytes_AS_STRING(out_ids), (double *)PyBytes_AS_STRING(out_scores));
    out = PyTuple_Pack(2, out_ids, out_scores);
done:
    Py_XDECREF(out_ids);
    Py_XDECREF(out_scores);
    PyMem_Free(heap);
    PyBuffer_Release(&ids_view);
    PyBuffer_Release(&scores_view);
    return result_or_error(out);
}

/* ---------------------------------------------------------------- summed scores */

const char sum_scores_doc[] = PyDoc_STR(
    "sum_scores(out, ids, scores, weights, matched, matched_weights, floor, divisor) -> None or int\n\n"
    "A query's BM25 scores over every chunk id, as kenning.lexical.view.LexicalView.score sums them\n"
    "in NumPy, to the last bit, written into `out` (float64, zeros, one per chunk id): each term's\n"
    "postings' `ids` (uint32) add their `scores` (float64) times the term's weight, term by term;\n"
    "then, with coordination (`matched` not empty), each chunk's score is multiplied by\n"
    "floor + (1 - floor) x (held / divisor), where held sums `matched_weights` over the `matched` id\n"
    "arrays holding the chunk. Returns the length `out` needs, writing nothing, when an id lies past\n"
    "it. A zero score that the product leaves zero is not written: pages of `out` that no posting\n"
    "reaches stay unallocated, as they do in NumPy's bincount.");

/* the largest id of some uint32 arrays, plus one (0 for none) */
static Py_ssize_t ids_end(Py_buffer *views, Py_ssize_t n)
{
    Py_ssize_t end = 0;
    for (Py_ssize_t a = 0; a < n; a++) {
        const uint32_t *ids = (const uint32_t *)views[a].buf;
        for (Py_ssize_t i = 0; i < views[a].len / 4; i++)
            if ((Py_ssize_t)ids[i] + 1 > end)
                end = (Py_ssize_t)ids[i] + 1;
    }
    return end;
}

PyObject *sum_scores(PyObject *self, PyObject *args)
{
    PyObject *out_obj, *ids_obj, *scores_obj, *weights_obj, *matched_obj, *matched_weights_obj;
    double floor, divisor;
    if (!PyArg_ParseTuple(args, "OO!O!O!O!O!dd", &out_obj, &PyTuple_Type, &ids_obj, &PyTuple_Type, &scores_obj,
                          &PyTuple_Type, &weights_obj, &PyTuple_Type, &matched_obj, &PyTuple_Type,
                          &matched_weights_obj, &floor, &divisor))
        return NULL;
    Py_ssize_t n_terms = PyTuple_GET_SIZE(ids_obj), n_matched = PyTuple_GET_SIZE(matched_obj);
    if (PyTuple_GET_SIZE(scores_obj) != n_terms || PyTuple_GET_SIZE(weights_obj) != n_terms ||
        PyTuple_GET_SIZE(matched_weights_obj) != n_matched) {
        PyErr_SetString(PyExc_ValueError, "sum_scores: one score array and weight per id array expected");
        return NULL;
    }
    Py_buffer out_view;
    if (PyObject_GetBuffer(out_obj, &out_view, PyBUF_C_CONTIGUOUS | PyBUF_WRITABLE) < 0)
        return NULL;
    Py_buffer *views = PyMem_Calloc(2 * n_terms + n_matched + 1, sizeof(Py_buffer));
    double *held = NULL;
    PyObject *result = NULL;
    Py_ssize_t got = 0;
    if (views == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    if (out_view.itemsize != 8 && out_view.len > 0) {
        PyErr_SetString(PyExc_TypeError, "sum_scores: out holds float64");
        goto done;
    }
    for (Py_ssize_t t = 0; t < n_terms; t++, got++) /* ids at [0, n_terms), scores after them */
        if (get_buffer(PyTuple_GET_ITEM(ids_obj, t), &views[got], 4, "ids") < 0)
            goto done;
    for (Py_ssize_t t = 0; t < n_terms; t++, got++) {
        if (get_buffer(PyTuple_GET_ITEM(scores_obj, t), &views[got], 8, "scores") < 0)
            goto done;
        if (views[got].len / 8 != views[t].len / 4) {
            got++;
            PyErr_SetString(PyExc_ValueError, "sum_scores: one score per id expected");
            goto done;
        }
    }
    for (Py_ssize_t m = 0; m < n_matched; m++, got++)
        if (get_buffer(PyTuple_GET_ITEM(matched_obj, m), &views[got], 4, "matched") < 0)
            goto done;
    Py_ssize_t size = out_view.len / 8;
    Py_ssize_t end = ids_end(views, n_terms), matched_end = ids_end(views + 2 * n_terms, n_matched);
    if (matched_end > end)
        end = matched_end;
    if (end > size) { /* NumPy's arrays grow to the largest id: the caller gives a longer `out` */
        result = PyLong_FromSsize_t(end);
        goto done;
    }
    double *scores = (double *)out_view.buf;
    for (Py_ssize_t t = 0; t < n_terms; t++) {
        double weight = PyFloat_AsDouble(PyTuple_GET_ITEM(weights_obj, t));
        if (weight == -1.0 && PyErr_Occurred())
            goto done;
        const uint32_t *ids = (const uint32_t *)views[t].buf;
        const double *values = (const double *)views[n_terms + t].buf;
        for (Py_ssize_t i = 0; i < views[t].len / 4; i++)
            scores[ids[i]] += weight == 1.0 ? values[i] : values[i] * weight;
    }
    if (n_matched) {
        held = PyMem_Calloc(size + 1, sizeof(double));
        if (held == NULL) {
            PyErr_NoMemory();
            goto done;
        }
        for (Py_ssize_t m = 0; m < n_matched; m++) {
            double w = PyFloat_AsDouble(PyTuple_GET_ITEM(matched_weights_obj, m));
            if (w == -1.0 && PyErr_Occurred())
                goto done;
            const uint32_t *ids = (const uint32_t *)views[2 * n_terms + m].buf;
            for (Py_ssize_t i = 0; i < views[2 * n_terms + m].len / 4; i++)
                held[ids[i]] += w;
        }
        for (Py_ssize_t i = 0; i < size; i++) {
            double factor = floor + (1.0 - floor) * (held[i] / divisor);
            if (scores[i] == 0.0 && !signbit(scores[i]) && isfinite(factor) && factor >= 0.0)
                continue; /* +0 times that is +0: the page is left as it is */
            scores[i] *= factor;
        }
    }
    result = Py_NewRef(Py_None);
done:
    release_views(views, got);
    PyBuffer_Release(&out_view);
    PyMem_Free(views);
    PyMem_Free(held);
    return result_or_error(result);
}
