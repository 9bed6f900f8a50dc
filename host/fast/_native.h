/*
 * Shared by the C files of host.fast._native: typed views of Python buffers, and the method
 * tables each file contributes to the module (see _native.c).
 */
#ifndef KMER_SKETCH_NATIVE_H
#define KMER_SKETCH_NATIVE_H

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>

typedef struct {
    Py_buffer view;
    Py_ssize_t count;
    int held;
} Array;

/* Kinds of buffer element get_typed_array accepts. */
typedef enum { KIND_UNSIGNED, KIND_SIGNED, KIND_FLOAT } ElementKind;

/* A C-contiguous buffer of `itemsize`-byte elements of `kind`; -1 with a TypeError otherwise. */
int get_typed_array(PyObject *object, Array *array, Py_ssize_t itemsize, ElementKind kind,
                    int writable, const char *name);
/* A C-contiguous buffer of unsigned `itemsize`-byte integers. */
int get_array(PyObject *object, Array *array, Py_ssize_t itemsize, int writable,
              const char *name);
void release(Array *arrays, int n);
/* The end of a method taking arrays: releases them and returns None, or NULL with the
 * Python error already set when `failed`. */
PyObject *release_and_return(Array *arrays, int n, int failed);

/* One Count-Min insertion at the row indices given; returns its estimate. */
static inline uint32_t countmin_step(uint32_t *counters, Py_ssize_t width, Py_ssize_t depth,
                                     const uint32_t *row_index, uint32_t limit, int conservative)
{
    uint32_t estimate = UINT32_MAX;
    for (Py_ssize_t r = 0; r < depth; r++) {
        uint32_t value = counters[r * width + row_index[r]];
        value = value < limit ? value + 1 : limit;
        if (value < estimate)
            estimate = value;
    }
    for (Py_ssize_t r = 0; r < depth; r++) {
        uint32_t *counter = &counters[r * width + row_index[r]];
        uint32_t value = *counter < limit ? *counter + 1 : limit;
        if (!conservative || value == estimate)
            *counter = value;
    }
    return estimate;
}


/* The body of a set_*_simd_level(level) method: use_level(level), or ValueError naming the
 * levels there are. */
PyObject *set_level_from(PyObject *args, int (*use_level)(const char *), const char *levels);

/* Packed HLL sketches (host/fast/_allpairs.c): w = 4 registers two to a byte, wider ones a
 * byte each. */
typedef struct {
    const uint8_t *packed;
    size_t row_bytes;
    unsigned p, w;
} Sketches;

int get_sketches(PyObject *object, Array *array, int w, int p, Py_ssize_t n,
                 Sketches *sketches);

/* The pairs of a pair loop call: for each t, sketch rows[t] against order[u] for u in
 * [starts[t], stops[t]), values_per_pair values each appended to out. */
#define PAIR_PLAN_ARRAYS 7
typedef struct {
    Sketches sketches;
    const double *cards;
    const int64_t *rows, *starts, *stops, *order;
    Py_ssize_t count;
    double *out;
    Array arrays[PAIR_PLAN_ARRAYS];
} PairPlan;

/* objects: packed, cards f64[n], rows, starts, stops, order (i64), out f64; checked. Release
 * plan->arrays (PAIR_PLAN_ARRAYS of them) afterwards, also on failure. */
int get_pair_plan(PyObject *const objects[7], int w, int p, Py_ssize_t values_per_pair,
                  PairPlan *plan);

/* SPEC 3's "hll" estimator pieces (host/fast/_allpairs.c). */
unsigned hll_top_rank(unsigned p, unsigned w);
double hll_estimate_of_histogram(const uint32_t *hist, unsigned p, unsigned w);
const char *native_simd_level(void);

/* The k-mer kernels of one instruction set (host/fast/_kmer_simd.c), over runs of up to
 * KMER_RUN_CHUNK new bases after at most 31 of the run before them; none (NULL) at "scalar".
 *   scan(data, n, codes): how many leading bytes of data[0, n) are ACGTacgt, their codes (0..3)
 *       into codes (which has room for n + 64);
 *   words(codes, n, k, canonical, out): the word of every position p < n of codes (k >= 8), the
 *       k-mer ending there, at out[p] (valid from p = k - 1; out has room for n + 8); codes[-8..-1]
 *       are read and must be codes;
 *   hll(codes, n, k, canonical, registers, p, max_rank, floor): the words of positions
 *       k - 1 to n - 1 of codes (as words makes them) into HLL registers (SPEC 3), no register
 *       being below floor;
 *   floor(registers, m): the lowest of m registers (m a multiple of 64);
 *   printable(data, n): how many leading bytes of data[0, n) are above ' ' (a FASTQ quality
 *       line's up to its end, a CR, space, tab or other control byte). */
#define KMER_RUN_CHUNK 2048
#define KMER_RUN_WORDS (KMER_RUN_CHUNK + 96)
typedef struct {
    const char *name;
    size_t (*scan)(const uint8_t *data, size_t n, uint8_t *codes);
    void (*words)(const uint8_t *codes, size_t n, unsigned k, int canonical, uint64_t *out);
    void (*hll)(const uint8_t *codes, size_t n, unsigned k, int canonical, uint8_t *registers,
                unsigned p, unsigned max_rank, unsigned floor);
    unsigned (*floor)(const uint8_t *registers, size_t m);
    size_t (*printable)(const uint8_t *data, size_t n);
} KmerKernels;
extern KmerKernels kmer_kernels;
/* Use the kernels of `level` (scalar, avx2, avx512, avx512-gfni; "best": the widest this CPU
 * has); 0, or -1 if this CPU does not have it. */
int kmer_use_simd_level(const char *level);

extern PyMethodDef allpairs_methods[];
extern PyMethodDef mle_methods[];
int mle_use_simd_level(const char *level);
extern PyMethodDef jsd_methods[];
void init_allpairs(void);
int add_kmer_stream_type(PyObject *module);

#endif
