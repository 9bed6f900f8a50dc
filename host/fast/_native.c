/*
 * The module host.fast._native: its other parts are the k-mer stream (_kmer_stream.c: parse,
 * hash and sketch a file block by block) and all-pairs Jaccard (_allpairs.c). This file holds
 * the order-dependent inner loops of the fast backend, identical to kmerspec.golden:
 * Count-Min insertion (conservative or plain, saturating), PQA insertion, and the
 * heavy-hitter store of the motif engine. Everything that can be vectorised (hashes,
 * sampling, thresholds, control counts) stays in numpy; these loops touch one key at a time
 * because each insertion depends on the state left by the previous one.
 *
 * Arrays are passed through the buffer protocol (C-contiguous, unsigned integers of the
 * stated item size); shapes are checked here, contents are trusted (indices in range).
 */
#include "_native.h"
#include <string.h>

int get_typed_array(PyObject *object, Array *array, Py_ssize_t itemsize, ElementKind kind,
                    int writable, const char *name)
{
    static const char *codes[] = {"BHILQN", "bhilqn", "fd"};
    static const char *kinds[] = {"unsigned integers", "signed integers", "floats"};
    int flags = PyBUF_C_CONTIGUOUS | PyBUF_FORMAT | (writable ? PyBUF_WRITABLE : 0);
    array->held = 0;
    if (PyObject_GetBuffer(object, &array->view, flags) < 0)
        return -1;
    array->held = 1;
    const char *format = array->view.format ? array->view.format : "B";
    char code = format[strlen(format) - 1];
    if (array->view.itemsize != itemsize || strchr(codes[kind], code) == NULL) {
        PyErr_Format(PyExc_TypeError, "%s must hold %zd-byte %s (format %s)", name, itemsize,
                     kinds[kind], format);
        return -1;
    }
    array->count = array->view.len / itemsize;
    return 0;
}

int get_array(PyObject *object, Array *array, Py_ssize_t itemsize, int writable,
              const char *name)
{
    return get_typed_array(object, array, itemsize, KIND_UNSIGNED, writable, name);
}

void release(Array *arrays, int n)
{
    for (int i = 0; i < n; i++)
        if (arrays[i].held)
            PyBuffer_Release(&arrays[i].view);
}

PyObject *release_and_return(Array *arrays, int n, int failed)
{
    release(arrays, n);
    if (failed)
        return NULL;
    Py_RETURN_NONE;
}

PyObject *set_level_from(PyObject *args, int (*use_level)(const char *), const char *levels)
{
    const char *level;
    if (!PyArg_ParseTuple(args, "s", &level))
        return NULL;
    if (use_level(level) < 0) {
        PyErr_Format(PyExc_ValueError, "SIMD level %s is not available on this CPU (%s or "
                     "best)", level, levels);
        return NULL;
    }
    Py_RETURN_NONE;
}

/* cm_insert(counters u32[d*width], width, indices u32[N*d], estimates u32[N], max_count,
 *           conservative): insert N keys in order; estimates[i] = estimate of insertion i. */
static PyObject *cm_insert(PyObject *self, PyObject *args)
{
    PyObject *objects[3];
    Py_ssize_t width;
    unsigned long long max_count;
    int conservative;
    Array a[3];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OnOOKp", &objects[0], &width, &objects[1], &objects[2],
                          &max_count, &conservative))
        return NULL;
    if (get_array(objects[0], &a[0], 4, 1, "counters") < 0 ||
        get_array(objects[1], &a[1], 4, 0, "indices") < 0 ||
        get_array(objects[2], &a[2], 4, 1, "estimates") < 0)
        goto fail;
    if (width <= 0 || a[0].count % width != 0) {
        PyErr_SetString(PyExc_ValueError, "counters must hold depth * width entries");
        goto fail;
    }
    Py_ssize_t depth = a[0].count / width, n = a[2].count;
    if (a[1].count != n * depth) {
        PyErr_SetString(PyExc_ValueError, "indices must hold depth indices per estimate");
        goto fail;
    }
    uint32_t *counters = a[0].view.buf;
    const uint32_t *indices = a[1].view.buf;
    uint32_t *estimates = a[2].view.buf;
    uint32_t limit = (uint32_t)max_count;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        estimates[i] = countmin_step(counters, width, depth, indices + i * depth, limit,
                                     conservative);
    Py_END_ALLOW_THREADS
    return release_and_return(a, 3, 0);
fail:
    return release_and_return(a, 3, 1);
}

/* pqa_insert(tags u32[Q*n], values u32[Q*n], n, queues u32[N], in_tags u32[N],
 *            in_values u32[N]): the PQA insertions of kmerspec.golden.pqa.queue_insert, in order. */
static PyObject *pqa_insert(PyObject *self, PyObject *args)
{
    PyObject *objects[5];
    Py_ssize_t n;
    Array a[5];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OOnOOO", &objects[0], &objects[1], &n, &objects[2],
                          &objects[3], &objects[4]))
        return NULL;
    static const char *names[5] = {"tags", "values", "queues", "in_tags", "in_values"};
    for (int i = 0; i < 5; i++)
        if (get_array(objects[i], &a[i], 4, i < 2, names[i]) < 0)
            goto fail;
    if (n <= 0 || a[0].count != a[1].count || a[0].count % n != 0 ||
        a[3].count != a[2].count || a[4].count != a[2].count) {
        PyErr_SetString(PyExc_ValueError, "pqa_insert: inconsistent array sizes");
        goto fail;
    }
    uint32_t *tags = a[0].view.buf, *values = a[1].view.buf;
    const uint32_t *queues = a[2].view.buf, *in_tags = a[3].view.buf,
                   *in_values = a[4].view.buf;
    Py_ssize_t total = a[2].count;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < total; i++) {
        uint32_t *tag = tags + (Py_ssize_t)queues[i] * n;
        uint32_t *value = values + (Py_ssize_t)queues[i] * n;
        uint32_t new_tag = in_tags[i], new_value = in_values[i];
        Py_ssize_t taken = -1;
        for (Py_ssize_t j = 0; j < n; j++)
            if (value[j] != 0 && tag[j] == new_tag) {
                taken = j;
                break;
            }
        if (taken < 0) {
            if (new_value <= value[n - 1])
                continue;
            taken = n - 1;
        }
        /* take entry `taken` out, then put (new_tag, new_value) after the entries >= it */
        for (Py_ssize_t j = taken; j + 1 < n; j++) {
            tag[j] = tag[j + 1];
            value[j] = value[j + 1];
        }
        Py_ssize_t place = 0;
        while (place < n - 1 && value[place] >= new_value)
            place++;
        for (Py_ssize_t j = n - 1; j > place; j--) {
            tag[j] = tag[j - 1];
            value[j] = value[j - 1];
        }
        tag[place] = new_tag;
        value[place] = new_value;
    }
    Py_END_ALLOW_THREADS
    return release_and_return(a, 5, 0);
fail:
    return release_and_return(a, 5, 1);
}

typedef struct {
    uint64_t *kmers;
    uint32_t *values;
    uint8_t *valid;
    uint32_t *control, *next_victim;
    Py_ssize_t ways;
} Store;

/* One heavy-hitter store update: a hit takes the new value; a miss fills a free way, else
 * evicts the set's round-robin victim. */
static inline void store_step(Store *store, uint32_t set, uint64_t word, uint32_t estimate)
{
    Py_ssize_t ways = store->ways, base = (Py_ssize_t)set * ways, way = -1, free_way = -1;
    for (Py_ssize_t w = 0; w < ways; w++) {
        if (store->valid[base + w] && store->kmers[base + w] == word) {
            way = w;
            break;
        }
        if (!store->valid[base + w] && free_way < 0)
            free_way = w;
    }
    if (way < 0) {
        if (free_way >= 0) {
            way = free_way;
        } else {
            way = store->next_victim[set];
            store->next_victim[set] = (uint32_t)((way + 1) % ways);
        }
        store->valid[base + way] = 1;
        store->kmers[base + way] = word;
        store->control[base + way] = 0;
    }
    store->values[base + way] = estimate;
}

/* store_record(kmers u64[S*W], values u32[S*W], valid u8[S*W], control u32[S*W],
 *              next_victim u32[S], ways, sets u32[N], words u64[N], estimates u32[N]):
 * the heavy-hitter store updates of kmerspec.golden.motif.HeavyHitterStore.record, in order. */
static PyObject *store_record(PyObject *self, PyObject *args)
{
    PyObject *objects[8];
    Py_ssize_t ways;
    Array a[8];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OOOOOnOOO", &objects[0], &objects[1], &objects[2],
                          &objects[3], &objects[4], &ways, &objects[5], &objects[6],
                          &objects[7]))
        return NULL;
    static const char *names[8] = {"kmers", "values", "valid", "control", "next_victim",
                                   "sets", "words", "estimates"};
    static const Py_ssize_t sizes[8] = {8, 4, 1, 4, 4, 4, 8, 4};
    for (int i = 0; i < 8; i++)
        if (get_array(objects[i], &a[i], sizes[i], i < 5, names[i]) < 0)
            goto fail;
    Py_ssize_t slots = a[0].count, n = a[5].count;
    if (ways <= 0 || slots % ways != 0 || a[1].count != slots || a[2].count != slots ||
        a[3].count != slots || a[4].count * ways != slots || a[6].count != n ||
        a[7].count != n) {
        PyErr_SetString(PyExc_ValueError, "store_record: inconsistent array sizes");
        goto fail;
    }
    uint64_t *kmers = a[0].view.buf;
    uint32_t *values = a[1].view.buf, *control = a[3].view.buf, *next_victim = a[4].view.buf;
    uint8_t *valid = a[2].view.buf;
    const uint32_t *sets = a[5].view.buf, *estimates = a[7].view.buf;
    const uint64_t *words = a[6].view.buf;
    Store store = {kmers, values, valid, control, next_victim, ways};
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n; i++)
        store_step(&store, sets[i], words[i], estimates[i]);
    Py_END_ALLOW_THREADS
    return release_and_return(a, 8, 0);
fail:
    return release_and_return(a, 8, 1);
}

/* motif_test_pass(words u64[N], tables u64[G*B*256], fields i64[F*3], counters u32[d*width],
 *                 width, max_count, threshold, kmers, values, valid, control, next_victim,
 *                 ways): the test pass of one k of kmerspec.golden.motif over N words in order.
 * H3 hashes: tables[g][b][byte] are the XOR contributions of key byte b to the packed outputs
 * of group g; field j = (group, offset, width) cuts output j out of them, rows 0..d-1 then the
 * store set. Each word: conservative Count-Min update, then a store update if its estimate
 * reaches the threshold. */
static PyObject *motif_test_pass(PyObject *self, PyObject *args)
{
    PyObject *objects[9];
    Py_ssize_t width, ways;
    unsigned long long max_count, threshold;
    Array a[9];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OOOOnKKOOOOOn", &objects[0], &objects[1], &objects[2],
                          &objects[3], &width, &max_count, &threshold, &objects[4],
                          &objects[5], &objects[6], &objects[7], &objects[8], &ways))
        return NULL;
    static const char *names[9] = {"words", "tables", "fields", "counters", "kmers", "values",
                                   "valid", "control", "next_victim"};
    static const Py_ssize_t sizes[9] = {8, 8, 8, 4, 8, 4, 1, 4, 4};
    for (int i = 0; i < 9; i++)
        if (get_typed_array(objects[i], &a[i], sizes[i], i == 2 ? KIND_SIGNED : KIND_UNSIGNED,
                            i >= 3, names[i]) < 0)
            goto fail;
    Py_ssize_t n = a[0].count, field_count = a[2].count / 3, slots = a[4].count;
    const int64_t *fields = a[2].view.buf;
    Py_ssize_t groups = 0, depth = field_count - 1;
    for (Py_ssize_t j = 0; j < field_count; j++)
        if (fields[3 * j] + 1 > groups)
            groups = fields[3 * j] + 1;
    if (field_count < 2 || field_count > 64 || groups < 1 || a[1].count % (groups * 256) != 0 ||
        width <= 0 || a[3].count != depth * width || ways <= 0 || slots % ways != 0 ||
        a[5].count != slots || a[6].count != slots || a[7].count != slots ||
        a[8].count * ways != slots) {
        PyErr_SetString(PyExc_ValueError, "motif_test_pass: inconsistent array sizes");
        goto fail;
    }
    Py_ssize_t key_bytes = a[1].count / (groups * 256);
    for (Py_ssize_t j = 0; j < field_count; j++)
        if (fields[3 * j] < 0 || fields[3 * j + 1] < 0 || fields[3 * j + 2] < 0 ||
            fields[3 * j + 1] + fields[3 * j + 2] > 64 || fields[3 * j + 2] > 32 ||
            (j < depth && ((int64_t)1 << fields[3 * j + 2]) != width) ||
            (j == depth && ((int64_t)1 << fields[3 * j + 2]) != a[8].count)) {
            PyErr_SetString(PyExc_ValueError, "motif_test_pass: a field does not match its table");
            goto fail;
        }
    const uint64_t *words = a[0].view.buf, *tables = a[1].view.buf;
    uint32_t *counters = a[3].view.buf;
    Store store = {a[4].view.buf, a[5].view.buf, a[6].view.buf, a[7].view.buf, a[8].view.buf,
                   ways};
    Py_BEGIN_ALLOW_THREADS
    uint64_t packed[64];
    uint32_t outputs[64];
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t word = words[i];
        for (Py_ssize_t g = 0; g < groups; g++) {
            const uint64_t *table = tables + g * key_bytes * 256;
            uint64_t value = 0;
            for (Py_ssize_t b = 0; b < key_bytes; b++)
                value ^= table[b * 256 + ((word >> (8 * b)) & 0xFF)];
            packed[g] = value;
        }
        for (Py_ssize_t j = 0; j < field_count; j++)
            outputs[j] = (uint32_t)((packed[fields[3 * j]] >> fields[3 * j + 1])
                                    & ((1ull << fields[3 * j + 2]) - 1));
        uint32_t estimate = countmin_step(counters, width, depth, outputs, (uint32_t)max_count, 1);
        if (estimate >= threshold)
            store_step(&store, outputs[depth], word, estimate);
    }
    Py_END_ALLOW_THREADS
    return release_and_return(a, 9, 0);
fail:
    return release_and_return(a, 9, 1);
}

/* count_matches(words u64[N], keys u64[K], counts u64[K]): counts[i] += occurrences of keys[i]
 * among words; keys sorted ascending and distinct. A bitmap of the keys' low 16 bits turns most
 * words away before the binary search. */
static PyObject *count_matches(PyObject *self, PyObject *args)
{
    PyObject *objects[3];
    Array a[3];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OOO", &objects[0], &objects[1], &objects[2]))
        return NULL;
    static const char *names[3] = {"words", "keys", "counts"};
    for (int i = 0; i < 3; i++)
        if (get_array(objects[i], &a[i], 8, i == 2, names[i]) < 0)
            goto fail;
    if (a[2].count != a[1].count) {
        PyErr_SetString(PyExc_ValueError, "count_matches: one count per key");
        goto fail;
    }
    const uint64_t *words = a[0].view.buf, *keys = a[1].view.buf;
    uint64_t *counts = a[2].view.buf;
    Py_ssize_t n = a[0].count, k = a[1].count;
    for (Py_ssize_t i = 1; i < k; i++)
        if (keys[i - 1] >= keys[i]) {
            PyErr_SetString(PyExc_ValueError, "count_matches: keys must be sorted and distinct");
            goto fail;
        }
    Py_BEGIN_ALLOW_THREADS
    uint64_t maybe[1024] = {0};
    for (Py_ssize_t i = 0; i < k; i++)
        maybe[(keys[i] & 0xFFFF) >> 6] |= 1ull << (keys[i] & 63);
    for (Py_ssize_t i = 0; i < n; i++) {
        uint64_t word = words[i];
        if (!(maybe[(word & 0xFFFF) >> 6] >> (word & 63) & 1))
            continue;
        Py_ssize_t lo = 0, hi = k;
        while (lo < hi) {
            Py_ssize_t mid = (lo + hi) / 2;
            if (keys[mid] < word)
                lo = mid + 1;
            else
                hi = mid;
        }
        if (lo < k && keys[lo] == word)
            counts[lo]++;
    }
    Py_END_ALLOW_THREADS
    return release_and_return(a, 3, 0);
fail:
    return release_and_return(a, 3, 1);
}

/* pack_nibbles(registers u8[2n], packed u8[n]): registers two to a byte, register 2i in the
 * low nibble of byte i (the layout of host.registers at w = 4), rows after rows alike. */
static PyObject *pack_nibbles(PyObject *self, PyObject *args)
{
    PyObject *objects[2];
    Array a[2];
    memset(a, 0, sizeof a);
    if (!PyArg_ParseTuple(args, "OO", &objects[0], &objects[1]))
        return NULL;
    if (get_array(objects[0], &a[0], 1, 0, "registers") < 0 ||
            get_array(objects[1], &a[1], 1, 1, "packed") < 0)
        return release_and_return(a, 2, 1);
    if (a[0].count != 2 * a[1].count) {
        PyErr_Format(PyExc_ValueError, "pack_nibbles: %zd registers do not fill %zd bytes",
                     a[0].count, a[1].count);
        return release_and_return(a, 2, 1);
    }
    const uint8_t *registers = a[0].view.buf;
    uint8_t *packed = a[1].view.buf;
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < a[1].count; i++)
        packed[i] = (uint8_t)(registers[2 * i] | (registers[2 * i + 1] << 4));
    Py_END_ALLOW_THREADS
    return release_and_return(a, 2, 0);
}

/* count_registers(packed u8[], w, value): how many registers of `packed` (host.registers'
 * layout: two a byte at w = 4, else one) hold `value`. */
static PyObject *count_registers(PyObject *self, PyObject *args)
{
    PyObject *object;
    int w, value;
    Array a = {0};
    if (!PyArg_ParseTuple(args, "Oii", &object, &w, &value))
        return NULL;
    if (get_array(object, &a, 1, 0, "packed") < 0)
        return release_and_return(&a, 1, 1);
    const uint8_t *packed = a.view.buf;
    Py_ssize_t count = 0;
    if (w == 4)
        for (Py_ssize_t i = 0; i < a.count; i++)
            count += ((packed[i] & 0x0F) == value) + ((packed[i] >> 4) == value);
    else
        for (Py_ssize_t i = 0; i < a.count; i++)
            count += packed[i] == value;
    release(&a, 1);
    return PyLong_FromSsize_t(count);
}

static PyMethodDef methods[] = {
    {"count_matches", count_matches, METH_VARARGS,
     "Exact occurrence counts of sorted distinct keys among words (in place)."},
    {"motif_test_pass", motif_test_pass, METH_VARARGS,
     "The motif engine's test pass of one k over words in order (in place)."},
    {"cm_insert", cm_insert, METH_VARARGS, "Count-Min insertions in order (in place)."},
    {"pqa_insert", pqa_insert, METH_VARARGS, "PQA insertions in order (in place)."},
    {"store_record", store_record, METH_VARARGS, "Heavy-hitter store updates (in place)."},
    {"pack_nibbles", pack_nibbles, METH_VARARGS,
     "pack_nibbles(registers, packed): registers two a byte, 2i in the low nibble (in place)."},
    {"count_registers", count_registers, METH_VARARGS,
     "count_registers(packed, w, value): registers of a packed row equal to value."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_native",
    "Compiled loops of the fast backend (see host/fast/_native.c).", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__native(void)
{
    PyObject *m = PyModule_Create(&module);
    if (m == NULL)
        return NULL;
    init_allpairs();
    if (PyModule_AddFunctions(m, allpairs_methods) < 0 ||
        PyModule_AddFunctions(m, mle_methods) < 0 ||
        PyModule_AddFunctions(m, jsd_methods) < 0 || add_kmer_stream_type(m) < 0) {
        Py_DECREF(m);
        return NULL;
    }
    return m;
}
