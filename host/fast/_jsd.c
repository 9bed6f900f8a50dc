/*
 * Rows of the float64 Jensen-Shannon divergence matrix (SPEC section 4, host.jsdmatrix), with
 * no Python per pair: each PQA is its non-empty entries as keys (queue << 32 | tag) sorted
 * ascending, with their counts; a pair is one merge walk over the two key lists.
 *
 * The mixture entropy is log2(T) - S / T, S = sum of m log2 m over the mixture values m, T their
 * sum. A key held by one genome only contributes its own term c/s log2(c/s) (s: the genome's
 * total in textbook mode, 1 in counts mode), so the caller passes each entry's term and each
 * genome's sum of terms and mass (its counts over s), and the walk takes logarithms of shared
 * keys only. J(a, b) and J(b, a)
 * are the same float: the walk is symmetric and every addition commutes.
 */
#include "_native.h"
#include <math.h>
#include <string.h>

/* the JSD modes of kmerspec.golden.entropy */
enum { MODE_COUNTS = 0, MODE_TEXTBOOK = 1 };

typedef struct {
    const uint64_t *keys;
    const double *counts, *terms;
    const int64_t *offsets;
    const double *term_sums, *scales, *masses, *entropy;
    int mode;
} Pqas;

static double jsd_pair(const Pqas *pqas, int64_t a, int64_t b)
{
    int64_t i = pqas->offsets[a], i_end = pqas->offsets[a + 1];
    int64_t j = pqas->offsets[b], j_end = pqas->offsets[b + 1];
    if (pqas->mode == MODE_TEXTBOOK && (i == i_end || j == j_end))
        return (i == i_end && j == j_end) ? 0.0 : 1.0;
    /* the same entries: 0 by definition (kmerspec.golden.entropy.same_entries), not the
     * rounding of the entropies' difference */
    if (i_end - i == j_end - j &&
        memcmp(pqas->keys + i, pqas->keys + j, (size_t)(i_end - i) * sizeof *pqas->keys) == 0 &&
        memcmp(pqas->counts + i, pqas->counts + j, (size_t)(i_end - i) * sizeof *pqas->counts) == 0)
        return 0.0;
    /* counts mixes raw counts (scale 1); textbook the two distributions with equal weight (the
     * SPEC's integer form p M_Q + q M_P is this times M_P M_Q; entropy ignores the scale) */
    const double scale_a = pqas->scales[a], scale_b = pqas->scales[b];
    const double total = pqas->masses[a] + pqas->masses[b];
    double shared = 0.0;
    while (i < i_end && j < j_end) {
        uint64_t key_a = pqas->keys[i], key_b = pqas->keys[j];
        if (key_a == key_b) {
            double m = pqas->counts[i] / scale_a + pqas->counts[j] / scale_b;
            shared += m * log2(m) - pqas->terms[i] - pqas->terms[j];
            i++;
            j++;
        } else {  /* without a branch: which side advances is a coin toss the CPU cannot guess */
            i += key_a < key_b;
            j += key_b < key_a;
        }
    }
    double mixture = 0.0;
    if (total > 0.0)
        mixture = log2(total) - (pqas->term_sums[a] + pqas->term_sums[b] + shared) / total;
    double divergence = mixture - (pqas->entropy[a] + pqas->entropy[b]) / 2;
    return divergence > 0.0 ? divergence : 0.0;  /* never below 0 (golden's max(0, ...)) */
}

/* jsd_rows(keys u64[E], counts f64[E], terms f64[E], offsets i64[N+1], term_sums f64[N],
 *          scales f64[N], masses f64[N], entropy f64[N], mode, rows i64[R], out f64[R*N]):
 * out[t][b] = JSD(rows[t], b), 0 on the diagonal. */
static PyObject *jsd_rows(PyObject *self, PyObject *args)
{
    enum { ARRAYS = 10 };
    PyObject *objects[ARRAYS];
    int mode;
    Array a[ARRAYS];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OOOOOOOOiOO", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &objects[5], &objects[6], &objects[7],
                          &mode, &objects[8], &objects[9]))
        return NULL;
    static const char *names[ARRAYS] = {"keys", "counts", "terms", "offsets", "term_sums",
                                        "scales", "masses", "entropy", "rows", "out"};
    static const ElementKind kinds[ARRAYS] = {KIND_UNSIGNED, KIND_FLOAT, KIND_FLOAT, KIND_SIGNED,
                                              KIND_FLOAT, KIND_FLOAT, KIND_FLOAT, KIND_FLOAT,
                                              KIND_SIGNED, KIND_FLOAT};
    for (int i = 0; i < ARRAYS; i++)
        if (get_typed_array(objects[i], &a[i], 8, kinds[i], i == ARRAYS - 1, names[i]) < 0)
            goto fail;
    Py_ssize_t entries = a[0].count, n = a[7].count, row_count = a[8].count;
    const int64_t *offsets = a[3].view.buf, *rows = a[8].view.buf;
    int consistent = (mode == MODE_COUNTS || mode == MODE_TEXTBOOK) &&
                     a[1].count == entries && a[2].count == entries && a[3].count == n + 1 &&
                     a[4].count == n && a[5].count == n && a[6].count == n &&
                     a[9].count == row_count * n &&
                     offsets[0] == 0 && offsets[n] == entries;
    for (Py_ssize_t g = 0; consistent && g < n; g++)
        consistent = offsets[g] <= offsets[g + 1];
    for (Py_ssize_t t = 0; consistent && t < row_count; t++)
        consistent = rows[t] >= 0 && rows[t] < n;
    if (!consistent) {
        PyErr_SetString(PyExc_ValueError, "jsd_rows: inconsistent arrays or mode");
        goto fail;
    }
    Pqas pqas = {a[0].view.buf, a[1].view.buf, a[2].view.buf, offsets, a[4].view.buf,
                 a[5].view.buf, a[6].view.buf, a[7].view.buf, mode};
    double *out = a[9].view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t t = 0; t < row_count; t++)
        for (Py_ssize_t b = 0; b < n; b++)
            out[t * n + b] = rows[t] == b ? 0.0 : jsd_pair(&pqas, rows[t], b);
    Py_END_ALLOW_THREADS
    return release_and_return(a, ARRAYS, 0);
fail:
    return release_and_return(a, ARRAYS, 1);
}

PyMethodDef jsd_methods[] = {
    {"jsd_rows", jsd_rows, METH_VARARGS,
     "jsd_rows(keys, counts, terms, offsets, term_sums, scales, masses, entropy, mode, rows, "
     "out): "
     "float64 JSD of each row PQA with every PQA (mode 0 counts, 1 textbook), into out."},
    {NULL, NULL, 0, NULL},
};
