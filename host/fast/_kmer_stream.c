/*
 * KmerStream: one file's bytes, fed block by block, become k-mers (SPEC section 1) that are
 * hashed and sketched in the same pass, identical to kmerspec.golden.
 *
 * The parser is the line machine of kmerspec.golden.line_machine. Its state (line state,
 * forward and reverse-complement words, run length) lives in the object between blocks, so a
 * block may end anywhere: inside a k-mer, between a CR and its LF, inside a FASTQ record. Memory
 * is the block being fed, never the file. Every feeding method releases the GIL; an object must
 * not be fed from two threads at once (it refuses, with RuntimeError).
 *
 * Consumers of the k-mers (HLL registers, murmur3 sampling, plain k-mer words) are small inline
 * functions passed to one always-inlined parse loop, so each gets its own specialised loop.
 *
 * Two ways through a sequence line, one result. The scalar loop rolls the words base by base
 * and hands each k-mer over at once. The batched one (a SIMD level of host/fast/_kmer_simd.c,
 * k >= 8) gathers the bases of the current run as codes and hands them to the SIMD kernels
 * when the run breaks, when KMER_RUN_CHUNK of them wait, and at the end of a block
 * (flush_run); between two flushes the stream's words and run length are those before the
 * waiting bases, so every other part of the line machine reads the state it always did.
 *
 * With check=True the stream also applies the host's input check (SPEC 1.1,
 * kmerspec.golden.parse.check_input) in the same pass, and parses what that check returns:
 * trailing spaces and tabs of a line are skipped instead of breaking the window, and the first
 * problem stops the stream with InputFormatError, whose message is check_input's. The checks
 * sit off the path of a base (a space in a sequence line moves to a state of its own), so
 * checking costs the sw backend next to nothing. finish() checks the file's end.
 */
#include "_native.h"
#include <stddef.h>
#include <string.h>
#include <structmember.h>

/* Parser states between two bytes: kmerspec.golden.line_machine.LineState, same numbers. */
enum {
    LS_RECORD, LS_SEQUENCE, LS_FASTQ_SEQ, LS_FASTQ_SEP, LS_FASTQ_QUAL,
    IN_SEQUENCE, IN_HEADER, IN_FASTQ_HEADER, IN_FASTQ_SEQ, IN_FASTQ_SEP, IN_FASTQ_QUAL,
    /* check mode only: after a space or tab in a (FASTA, FASTQ) sequence line, which only
     * spaces, tabs and CR may follow up to the line's end */
    IN_SEQUENCE_TAIL, IN_FASTQ_SEQ_TAIL,
};

/* Byte classes: 0..3 are the base codes A C G T; all from CLASS_GT on break the window. */
enum { CLASS_LF = 4, CLASS_CR, CLASS_GT, CLASS_AT, CLASS_SPACE, CLASS_CODE, CLASS_OTHER };

static uint8_t byte_class[256];
static uint8_t protein_only[256];

static void init_byte_class(void)
{
    memset(byte_class, CLASS_OTHER, sizeof byte_class);
    /* kmerspec.golden.parse.NUCLEOTIDE_CODES and PROTEIN_ONLY */
    for (const char *code = "URYSWKMBDHVNXuryswkmbdhvnx-."; *code; code++)
        byte_class[(uint8_t)*code] = CLASS_CODE;
    for (const char *code = "EFIJLOPQZefijlopqz*"; *code; code++)
        protein_only[(uint8_t)*code] = 1;
    static const char bases[] = "ACGT", lower[] = "acgt";
    for (int code = 0; code < 4; code++) {
        byte_class[(uint8_t)bases[code]] = (uint8_t)code;
        byte_class[(uint8_t)lower[code]] = (uint8_t)code;
    }
    byte_class['\n'] = CLASS_LF;
    byte_class['\r'] = CLASS_CR;
    byte_class['>'] = CLASS_GT;
    byte_class['@'] = CLASS_AT;
    byte_class[' '] = CLASS_SPACE;
    byte_class['\t'] = CLASS_SPACE;
}

/* The problems of the input check, each a message of kmerspec.golden.parse.check_input. */
enum {
    BAD_NONE, BAD_BYTE, BAD_INNER_SPACE, BAD_SWITCH_TO_FASTA, BAD_SWITCH_TO_FASTQ,
    BAD_NO_FASTQ_HEADER, BAD_SEPARATOR, BAD_QUALITY_LENGTH, BAD_END,
};

typedef struct {
    PyObject_HEAD
    int k, canonical, state, busy, check;
    unsigned run;  /* bases in the current run, capped at k */
    uint64_t forward, reverse, mask;
    unsigned long long sequence_bytes;  /* bytes on sequence lines so far, CR and LF excluded */
    /* the input check (check mode); offsets count the bytes fed since reset */
    unsigned long long fed, line_start, lines, records;
    unsigned long long sequence_mark, sequence_length, quality_length, quality_spaces;
    unsigned long long leading_spaces, space_column;  /* a run of spaces/tabs not yet ended */
    unsigned long long trimmed_lines;  /* lines whose trailing spaces the check skipped */
    int kind, space_byte;  /* kind: 0 before the first record, else '>' or '@' */
    int problem, problem_byte;
    unsigned long long problem_record, problem_line, problem_column;
} KmerStream;

/* Record the first problem of the input check; parsing stops there. */
static void refuse(KmerStream *s, int problem, unsigned long long line,
                   unsigned long long column, int byte)
{
    s->problem = problem;
    s->problem_record = s->records;
    s->problem_line = line;
    s->problem_column = column;
    s->problem_byte = byte;
}

/* A sequence line's byte that is no nucleotide code, or the first one after a run of spaces. */
static void refuse_in_sequence(KmerStream *s, unsigned c, int byte, unsigned long long column)
{
    if (c != CLASS_CODE && c >= CLASS_GT)
        refuse(s, BAD_BYTE, s->lines + 1, column, byte);
    else
        refuse(s, BAD_INNER_SPACE, s->lines + 1, s->space_column, s->space_byte);
}

typedef void (*Emit)(void *context, uint64_t word);
/* The batched form of an Emit: the k-mers of positions k - 1 to n - 1 of a run of n codes,
 * in stream order (words: room for the kernels' words of the run). */
typedef void (*Consume)(void *context, const uint8_t *codes, size_t n, unsigned k,
                        int canonical, uint64_t *words);

static inline void emit_nothing(void *context, uint64_t word)
{
    (void)context;
    (void)word;
}

/* The bases of the current run not yet made into k-mers (the batched parse). */
#define RUN_BEFORE 64  /* room for the run's last bases before them, and the 8 the kernels read */
typedef struct {
    uint8_t codes[RUN_BEFORE + KMER_RUN_CHUNK + 64];  /* the waiting ones from RUN_BEFORE on */
    size_t waiting;
    uint64_t words[KMER_RUN_WORDS];
} RunBatch;

/* The waiting bases' k-mers to consume(), in order; forward, reverse and run then include
 * them, unless the run `ends` here (a break sets run to 0, and no k-mer is made of the words
 * before k more bases have pushed them out). The kernels start from the last min(run, k - 1)
 * bases of the run before, taken from the forward word, and yield the k-mers of the positions
 * that have k bases of the run. */
static inline __attribute__((always_inline)) void
flush_run(RunBatch *batch, uint64_t *forward, uint64_t *reverse, unsigned *run, unsigned k,
          uint64_t mask, int canonical, Consume consume, void *context, int ends)
{
    size_t waiting = batch->waiting;
    if (waiting == 0)
        return;
    unsigned before = *run < k - 1 ? *run : k - 1;
    uint8_t *start = batch->codes + RUN_BEFORE - before;
    for (unsigned j = 0; j < before; j++)
        start[j] = (uint8_t)(*forward >> 2 * (before - 1 - j)) & 3;
    size_t n = before + waiting;
    if (n >= k)
        consume(context, start, n, k, canonical, batch->words);
    batch->waiting = 0;
    if (ends)
        return;
    /* the words after the last base: its last k bases rolled in */
    uint64_t f = *forward, r = *reverse;
    const unsigned reverse_shift = 2 * (k - 1);
    for (size_t j = waiting > k ? waiting - k : 0; j < waiting; j++) {
        uint64_t c = batch->codes[RUN_BEFORE + j];
        f = ((f << 2) | c) & mask;
        r = (r >> 2) | ((3 - c) << reverse_shift);
    }
    *forward = f;
    *reverse = r;
    *run = *run + waiting < k ? *run + (unsigned)waiting : k;
}

/* One block through the line machine; emit(context, word) for every k-mer, in stream order.
 * With a batch (a SIMD level, k >= 8), the bases of sequence lines wait as codes and
 * consume() takes the k-mers of each run through the kernels instead. */
static inline __attribute__((always_inline)) void
parse_block(KmerStream *stream, const uint8_t *data, size_t n, Emit emit, void *context,
            RunBatch *batch, Consume consume)
{
    int state = stream->state;
    unsigned run = stream->run;
    uint64_t forward = stream->forward, reverse = stream->reverse;
    unsigned long long sequence_bytes = stream->sequence_bytes;
    const unsigned k = (unsigned)stream->k, reverse_shift = 2 * (k - 1);
    const uint64_t mask = stream->mask;
    /* all ones when canonical: min(forward, reverse) without a branch, which would be
     * mispredicted at every other base */
    const uint64_t canonical = stream->canonical ? ~0ull : 0;
    const int check = stream->check;
    const unsigned long long fed = stream->fed;
    KmerStream *const s = stream;
    size_t i = 0;
    if (s->problem)
        return;
/* the column of data[i] in its line, from 1 */
#define COLUMN (fed + i - s->line_start + 1)
/* data[i] is a line feed */
#define NEW_LINE() (s->lines++, s->line_start = fed + i + 1)
/* the waiting bases become k-mers (batched parse), the run going on or ending there */
#define FLUSH_RUN(ends) do { \
        if (batch != NULL) \
            flush_run(batch, &forward, &reverse, &run, k, mask, stream->canonical, consume, \
                      context, ends); \
    } while (0)
#define FLUSH() FLUSH_RUN(0)
/* a byte that is no base breaks the run */
#define BREAK_RUN() do { FLUSH_RUN(1); run = 0; } while (0)
    while (i < n) {
        if (state == IN_SEQUENCE || state == IN_FASTQ_SEQ) {
            for (; i < n; i++) {
                if (batch != NULL) {
                    /* the bases from here on wait as codes; the byte after them, if any,
                     * goes through the line machine below */
                    for (;;) {
                        if (batch->waiting == KMER_RUN_CHUNK)
                            FLUSH();
                        size_t room = KMER_RUN_CHUNK - batch->waiting;
                        size_t want = n - i < room ? n - i : room;
                        size_t bases = kmer_kernels.scan(
                            data + i, want, batch->codes + RUN_BEFORE + batch->waiting);
                        batch->waiting += bases;
                        sequence_bytes += bases;
                        i += bases;
                        if (bases < want || i == n)
                            break;
                    }
                    if (i == n)
                        break;
                }
                unsigned c = byte_class[data[i]];
                sequence_bytes += c != CLASS_LF && c != CLASS_CR;
                if (c < 4) {
                    if (emit == emit_nothing)  /* the check alone: no k-mer to make */
                        continue;
                    forward = ((forward << 2) | c) & mask;
                    reverse = (reverse >> 2) | ((uint64_t)(3 - c) << reverse_shift);
                    if (++run >= k) {
                        run = k;
                        uint64_t take_reverse = canonical & -(uint64_t)(reverse < forward);
                        emit(context, forward ^ ((forward ^ reverse) & take_reverse));
                    }
                } else if (c == CLASS_LF) {
                    /* a FASTA sequence line continues on the next line; a FASTQ one ends */
                    if (state == IN_FASTQ_SEQ) {
                        BREAK_RUN();
                        s->sequence_length = sequence_bytes - s->sequence_mark;
                    }
                    state = state == IN_FASTQ_SEQ ? LS_FASTQ_SEP : LS_SEQUENCE;
                    NEW_LINE();
                    if (batch != NULL && state == LS_SEQUENCE && i + 1 < n
                            && byte_class[data[i + 1]] < 4) {
                        /* a FASTA line starting with a base: what the line start below does
                         * with it (no leading space can be pending in a sequence line), but
                         * without the round trip, once a line */
                        state = IN_SEQUENCE;
                        continue;
                    }
                    i++;
                    break;
                } else if (c != CLASS_CR) {
                    if (check && c != CLASS_CODE) {
                        if (c != CLASS_SPACE) {
                            refuse_in_sequence(s, c, data[i], COLUMN);
                            goto stop;
                        }
                        sequence_bytes--;  /* a trailing space is removed, not counted */
                        s->trimmed_lines++;
                        s->space_column = COLUMN;
                        s->space_byte = data[i];
                        state = state == IN_FASTQ_SEQ ? IN_FASTQ_SEQ_TAIL : IN_SEQUENCE_TAIL;
                        i++;
                        break;
                    }
                    BREAK_RUN();
                }
            }
            continue;
        }
        if (state == IN_SEQUENCE_TAIL || state == IN_FASTQ_SEQ_TAIL) {
            for (; i < n; i++) {
                unsigned c = byte_class[data[i]];
                if (c == CLASS_SPACE || c == CLASS_CR)
                    continue;
                if (c != CLASS_LF) {
                    refuse_in_sequence(s, c, data[i], COLUMN);
                    goto stop;
                }
                if (state == IN_FASTQ_SEQ_TAIL) {
                    BREAK_RUN();
                    s->sequence_length = sequence_bytes - s->sequence_mark;
                }
                state = state == IN_FASTQ_SEQ_TAIL ? LS_FASTQ_SEP : LS_SEQUENCE;
                NEW_LINE();
                i++;
                break;
            }
            continue;
        }
        if (state == IN_FASTQ_QUAL && check) {
            /* its length without CR and trailing spaces must be the sequence's; a stretch
             * without CR, space or tab counts whole, not byte by byte: up to the line's end
             * (a quality line, nearly always), found by memchr, at the scalar level; its bytes
             * above ' ' (printable, one pass) at a SIMD level */
            if (s->quality_spaces == 0 && kmer_kernels.printable != NULL) {
                size_t stretch = kmer_kernels.printable(data + i, n - i);
                s->quality_length += stretch;
                i += stretch;
            } else if (s->quality_spaces == 0) {
                const uint8_t *line_end = memchr(data + i, '\n', n - i);
                size_t stretch = (size_t)((line_end != NULL ? line_end : data + n) - (data + i));
                if (!memchr(data + i, '\r', stretch) && !memchr(data + i, ' ', stretch)
                        && !memchr(data + i, '\t', stretch)) {
                    s->quality_length += stretch;
                    i += stretch;
                }
            }
            for (; i < n; i++) {
                unsigned c = byte_class[data[i]];
                if (c == CLASS_CR)
                    continue;
                if (c == CLASS_SPACE) {
                    s->quality_spaces++;
                } else if (c != CLASS_LF) {
                    s->quality_length += s->quality_spaces + 1;
                    s->quality_spaces = 0;
                } else {
                    if (s->quality_length != s->sequence_length) {
                        refuse(s, BAD_QUALITY_LENGTH, s->lines + 1, 0, 0);
                        goto stop;
                    }
                    state = LS_RECORD;
                    NEW_LINE();
                    i++;
                    break;
                }
            }
            continue;
        }
        if (state >= IN_HEADER) {
            /* header, separator and quality lines: nothing but their end matters, and the
             * run was already broken when the line began */
            const uint8_t *end = memchr(data + i, '\n', n - i);
            if (end == NULL)
                break;
            i = (size_t)(end - data);
            NEW_LINE();
            i++;
            state = state == IN_FASTQ_HEADER ? LS_FASTQ_SEQ
                  : state == IN_FASTQ_SEP ? LS_FASTQ_QUAL : LS_RECORD;
            continue;
        }
        /* at a line start */
        unsigned c = byte_class[data[i]];
        if (c == CLASS_CR) {
            i++;
        } else if (c == CLASS_SPACE && check) {
            /* leading spaces: a line of nothing else is an empty line */
            if (s->leading_spaces++ == 0) {
                s->space_column = COLUMN;
                s->space_byte = data[i];
            }
            i++;
        } else if (c == CLASS_LF) {
            s->trimmed_lines += s->leading_spaces != 0;
            s->leading_spaces = 0;
            if (state >= LS_FASTQ_SEQ) {  /* an empty line inside a FASTQ record counts */
                BREAK_RUN();
                if (check && state == LS_FASTQ_SEP) {
                    refuse(s, BAD_SEPARATOR, s->lines + 1, 0, 0);
                    goto stop;
                }
                if (check && state == LS_FASTQ_QUAL && s->sequence_length != 0) {
                    s->quality_length = 0;
                    refuse(s, BAD_QUALITY_LENGTH, s->lines + 1, 0, 0);
                    goto stop;
                }
                if (state == LS_FASTQ_SEQ)
                    s->sequence_length = 0;
                state = state == LS_FASTQ_SEQ ? LS_FASTQ_SEP
                      : state == LS_FASTQ_SEP ? LS_FASTQ_QUAL : LS_RECORD;
            }
            NEW_LINE();
            i++;
        } else if (check && s->leading_spaces && state != LS_FASTQ_QUAL) {
            /* a line that starts with a space: never a header, nor a '+' line */
            if (state == LS_FASTQ_SEP)
                refuse(s, BAD_SEPARATOR, s->lines + 1, 0, 0);
            else if (state != LS_FASTQ_SEQ && s->kind == '@')
                refuse(s, BAD_NO_FASTQ_HEADER, s->lines + 1, 0, 0);
            else
                refuse_in_sequence(s, c, data[i], COLUMN);
            goto stop;
        } else if (state == LS_RECORD || state == LS_SEQUENCE) {
            if (c == CLASS_GT || (c == CLASS_AT && state == LS_RECORD)) {
                BREAK_RUN();
                state = c == CLASS_GT ? IN_HEADER : IN_FASTQ_HEADER;
                if (check) {
                    int kind = c == CLASS_GT ? '>' : '@';
                    s->records++;
                    if (s->kind && s->kind != kind) {
                        refuse(s, kind == '>' ? BAD_SWITCH_TO_FASTA : BAD_SWITCH_TO_FASTQ,
                               s->lines + 1, 0, 0);
                        goto stop;
                    }
                    s->kind = kind;
                }
                i++;
            } else if (check && s->kind == '@') {
                refuse(s, BAD_NO_FASTQ_HEADER, s->lines + 1, 0, 0);
                goto stop;
            } else {
                state = IN_SEQUENCE;  /* this byte is read again as sequence */
            }
        } else if (state == LS_FASTQ_SEQ) {
            s->sequence_mark = sequence_bytes;
            state = IN_FASTQ_SEQ;
        } else if (state == LS_FASTQ_SEP) {
            if (check && data[i] != '+') {
                refuse(s, BAD_SEPARATOR, s->lines + 1, 0, 0);
                goto stop;
            }
            BREAK_RUN();
            state = IN_FASTQ_SEP;
            i++;
        } else {
            BREAK_RUN();
            state = IN_FASTQ_QUAL;
            if (check) {  /* read again by the quality check, after the leading spaces */
                s->quality_length = s->leading_spaces;
                s->quality_spaces = 0;
                s->leading_spaces = 0;
            } else {
                i++;
            }
        }
    }
stop:
    FLUSH();
#undef COLUMN
#undef NEW_LINE
#undef FLUSH_RUN
#undef FLUSH
#undef BREAK_RUN
    stream->fed = fed + n;
    stream->state = state;
    stream->sequence_bytes = sequence_bytes;
    stream->run = run;
    stream->forward = forward;
    stream->reverse = reverse;
}

/* Raise the check's problem as InputFormatError (kmerspec.golden.parse.check_input's words). */
static PyObject *InputFormatError;

static int raise_problem(KmerStream *s)
{
    if (!s->problem)
        return 0;
    static const char shape[] = "FASTQ records are 4 lines: '@' header, sequence, '+', quality";
    char place[96], what[32];
    if (s->problem_record && s->problem_line)
        snprintf(place, sizeof place, "record %llu, line %llu: ", s->problem_record,
                 s->problem_line);
    else if (s->problem_record)
        snprintf(place, sizeof place, "record %llu: ", s->problem_record);
    else
        snprintf(place, sizeof place, "line %llu: ", s->problem_line);
    int byte = s->problem_byte;
    if (byte >= 0x21 && byte <= 0x7E)
        snprintf(what, sizeof what, "'%c'", byte);
    else
        snprintf(what, sizeof what, "byte 0x%02x", byte);
    switch (s->problem) {
    case BAD_BYTE:
        PyErr_Format(InputFormatError, "%s%s in a sequence line (column %llu): %s", place, what,
                     s->problem_column, protein_only[byte]
                     ? "this looks like a protein sequence; only nucleotide sequences can be "
                       "sketched" : "not a nucleotide code");
        break;
    case BAD_INNER_SPACE:
        PyErr_Format(InputFormatError, "%s%s inside a sequence line (column %llu); only "
                     "trailing spaces and tabs are allowed", place,
                     byte == ' ' ? "a space" : "a tab", s->problem_column);
        break;
    case BAD_SWITCH_TO_FASTA:
        PyErr_Format(InputFormatError, "%sa FASTA header ('>') in a FASTQ file", place);
        break;
    case BAD_SWITCH_TO_FASTQ:
        PyErr_Format(InputFormatError, "%sa FASTQ header ('@') in a FASTA file", place);
        break;
    case BAD_NO_FASTQ_HEADER:
        PyErr_Format(InputFormatError, "%sexpected a FASTQ header ('@') after the quality "
                     "line (%s)", place, shape);
        break;
    case BAD_SEPARATOR:
        PyErr_Format(InputFormatError, "%sexpected the '+' line of a FASTQ record (%s)", place,
                     shape);
        break;
    case BAD_QUALITY_LENGTH:
        PyErr_Format(InputFormatError, "%sthe quality line has %llu characters, the sequence "
                     "%llu", place, s->quality_length, s->sequence_length);
        break;
    default:
        PyErr_Format(InputFormatError, "%sthe file ends inside a FASTQ record (%s)", place,
                     shape);
    }
    return -1;
}

static inline uint64_t fmix64(uint64_t x)
{
    x ^= x >> 33;
    x *= 0xFF51AFD7ED558CCDULL;
    x ^= x >> 33;
    x *= 0xC4CEB9FE1A85EC53ULL;
    x ^= x >> 33;
    return x;
}

static inline uint32_t rotl32(uint32_t x, int r)
{
    return (x << r) | (x >> (32 - r));
}

/* MurmurHash3_x86_32 of the 8 little-endian bytes of a word (kmerspec.golden.hashes). */
static inline uint32_t murmur3_32(uint64_t word, uint32_t seed)
{
    uint32_t h = seed;
    for (int half = 0; half < 2; half++) {
        uint32_t block = (uint32_t)(word >> (32 * half));
        block *= 0xCC9E2D51u;
        block = rotl32(block, 15) * 0x1B873593u;
        h ^= block;
        h = rotl32(h, 13) * 5 + 0xE6546B64u;
    }
    h ^= 8;
    h ^= h >> 16;
    h *= 0x85EBCA6Bu;
    h ^= h >> 13;
    h *= 0xC2B2AE35u;
    h ^= h >> 16;
    return h;
}

typedef struct {
    uint8_t *registers;
    unsigned p, max_rank;
    /* the batched parse: no register is below floor, the minimum found when `since` was 0;
     * found again after 2^p words (registers only grow, so an old floor still holds). The
     * floor rises after some 2^p ln(2^p) k-mers, then after twice as many each time: scanning
     * every 2^p / 4 k-mers (4 bytes a k-mer, 2 % of a FASTA run) kept it no higher. */
    unsigned floor;
    size_t since;
} HllSink;

static inline void emit_hll(void *context, uint64_t word)
{
    HllSink *sink = context;
    uint64_t h = fmix64(word);
    uint64_t low = h << sink->p;  /* the 64-p low bits, at the top */
    unsigned rank = low ? (unsigned)__builtin_clzll(low) + 1 : 65 - sink->p;
    if (rank > sink->max_rank)
        rank = sink->max_rank;
    uint8_t *reg = &sink->registers[h >> (64 - sink->p)];
    *reg = *reg > rank ? *reg : (uint8_t)rank;
}

typedef struct {
    uint64_t *out;
    size_t count;
    uint32_t seed, mask;
} WordSink;

static inline void emit_word(void *context, uint64_t word)
{
    WordSink *sink = context;
    sink->out[sink->count++] = word;
}

static inline void emit_sampled(void *context, uint64_t word)
{
    WordSink *sink = context;
    if ((murmur3_32(word, sink->seed) & sink->mask) == 0)
        sink->out[sink->count++] = word;
}

static inline void consume_hll(void *context, const uint8_t *codes, size_t n, unsigned k,
                               int canonical, uint64_t *words)
{
    HllSink *sink = context;
    size_t m = (size_t)1 << sink->p;
    if (sink->since == 0 || sink->since >= m) {
        sink->floor = kmer_kernels.floor(sink->registers, m);
        sink->since = 0;
    }
    if (sink->floor < sink->max_rank)
        kmer_kernels.hll(codes, n, k, canonical, sink->registers, sink->p, sink->max_rank,
                         sink->floor);
    sink->since += n - k + 1;
}

/* The words of a run (its k-mers from words[k - 1] on) for the consumers of single words. */
static inline const uint64_t *run_words(const uint8_t *codes, size_t n, unsigned k,
                                        int canonical, uint64_t *words)
{
    kmer_kernels.words(codes, n, k, canonical, words);
    return words + k - 1;
}

static inline void consume_words(void *context, const uint8_t *codes, size_t n, unsigned k,
                                 int canonical, uint64_t *words)
{
    WordSink *sink = context;
    memcpy(sink->out + sink->count, run_words(codes, n, k, canonical, words),
           (n - k + 1) * sizeof *words);
    sink->count += n - k + 1;
}

static inline void consume_sampled(void *context, const uint8_t *codes, size_t n, unsigned k,
                                   int canonical, uint64_t *words)
{
    const uint64_t *kmers = run_words(codes, n, k, canonical, words);
    for (size_t j = 0; j < n - k + 1; j++)
        emit_sampled(context, kmers[j]);
}

/* Whether this stream's k-mers go through the SIMD kernels (a batch), or the scalar loop. */
static int batched(const KmerStream *stream)
{
    return kmer_kernels.scan != NULL && stream->k >= 8;
}

static void start_batch(RunBatch *batch)
{
    memset(batch->codes, 0, sizeof batch->codes);  /* what the kernels read before a run */
    batch->waiting = 0;
}

/* One block through the line machine with emit, through the kernels when the stream is
 * batched (consume then takes the k-mers). */
#define PARSE(stream, data, n, emit, consume, context) do { \
        if (batched(stream)) { \
            RunBatch batch; \
            start_batch(&batch); \
            parse_block(stream, data, n, emit, context, &batch, consume); \
        } else { \
            parse_block(stream, data, n, emit, context, NULL, NULL); \
        } \
    } while (0)

/* Borrow the stream for a GIL-free call; 0 with RuntimeError if another thread has it. */
static int acquire(KmerStream *self)
{
    if (self->busy) {
        PyErr_SetString(PyExc_RuntimeError, "KmerStream is being fed by another thread");
        return -1;
    }
    self->busy = 1;
    return 0;
}

/* The minimum-count prefilter (SPEC 7): a conservative-update Count-Min insertion per k-mer,
 * in stream order; the k-mer reaches the HLL iff the insertion's estimate is >= min_count. */
typedef struct {
    HllSink hll;
    uint32_t *counters;  /* depth rows of width counters; the caller's, kept between blocks */
    Py_ssize_t width, depth;
    uint32_t seed, mask, limit, min_count;
} MinCountSink;

static inline void emit_min_count(void *context, uint64_t word)
{
    MinCountSink *sink = context;
    uint32_t row_index[16];
    for (Py_ssize_t r = 0; r < sink->depth; r++)
        row_index[r] = murmur3_32(word, sink->seed + (uint32_t)r) & sink->mask;
    if (countmin_step(sink->counters, sink->width, sink->depth, row_index, sink->limit, 1)
            >= sink->min_count)
        emit_hll(&sink->hll, word);
}

static inline void consume_min_count(void *context, const uint8_t *codes, size_t n,
                                     unsigned k, int canonical, uint64_t *words)
{
    const uint64_t *kmers = run_words(codes, n, k, canonical, words);
    for (size_t j = 0; j < n - k + 1; j++)
        emit_min_count(context, kmers[j]);
}

static PyObject *stream_hll(KmerStream *self, PyObject *args)
{
    Py_buffer data;
    PyObject *registers_object, *counters_object = NULL;
    int p, w, width_bits = 0;
    unsigned long seed = 0, max_count = 0, min_count = 1;
    Array registers = {0}, counters = {0};
    if (!PyArg_ParseTuple(args, "y*Oii|Oikkk", &data, &registers_object, &p, &w,
                          &counters_object, &width_bits, &seed, &max_count, &min_count))
        return NULL;
    if (get_array(registers_object, &registers, 1, 1, "registers") < 0)
        goto fail;
    if (p < 8 || p > 18 || w < 4 || w > 8 || registers.count != ((Py_ssize_t)1 << p)) {
        PyErr_Format(PyExc_ValueError, "hll: need 8 <= p <= 18, 4 <= w <= 8 and 2^p registers "
                     "(p=%d, w=%d, %zd registers)", p, w, registers.count);
        goto fail;
    }
    Py_ssize_t width = (Py_ssize_t)1 << (width_bits & 31);
    if (counters_object != NULL) {
        if (get_array(counters_object, &counters, 4, 1, "counters") < 0)
            goto fail;
        if (width_bits < 1 || width_bits > 24 || counters.count % width != 0
                || counters.count / width < 1 || counters.count / width > 16
                || min_count < 2 || min_count > max_count || max_count > UINT32_MAX
                || seed > UINT32_MAX) {
            PyErr_Format(PyExc_ValueError, "hll: the minimum-count prefilter needs 1..16 rows "
                         "of 2^width_bits counters (1 <= width_bits <= 24) and "
                         "2 <= min_count <= max_count < 2^32 (%zd counters, width_bits=%d, "
                         "min_count=%lu, max_count=%lu)", counters.count, width_bits,
                         min_count, max_count);
            goto fail;
        }
    }
    if (acquire(self) < 0)
        goto fail;
    HllSink hll = {registers.view.buf, (unsigned)p, (1u << w) - 1, 0, 0};
    MinCountSink filter = {hll, counters.view.buf, width, counters.count / width,
                           (uint32_t)seed, (uint32_t)(width - 1), (uint32_t)max_count,
                           (uint32_t)min_count};
    Py_BEGIN_ALLOW_THREADS
    if (counters_object != NULL)
        PARSE(self, data.buf, (size_t)data.len, emit_min_count, consume_min_count, &filter);
    else
        PARSE(self, data.buf, (size_t)data.len, emit_hll, consume_hll, &hll);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (raise_problem(self) < 0)
        goto fail;
    release(&counters, 1);
    release(&registers, 1);
    PyBuffer_Release(&data);
    Py_RETURN_NONE;
fail:
    release(&counters, 1);
    release(&registers, 1);
    PyBuffer_Release(&data);
    return NULL;
}

/* kmers(data, out) and sample(data, out, s, seed): k-mer words into out, returning how many. */
static PyObject *stream_words(KmerStream *self, PyObject *args, int sampled)
{
    Py_buffer data;
    PyObject *out_object;
    int s = 0;
    unsigned long seed = 0;
    Array out = {0};
    if (sampled ? !PyArg_ParseTuple(args, "y*Oik", &data, &out_object, &s, &seed)
                : !PyArg_ParseTuple(args, "y*O", &data, &out_object))
        return NULL;
    if (get_array(out_object, &out, 8, 1, "out") < 0)
        goto fail;
    if (out.count < data.len) {
        PyErr_Format(PyExc_ValueError, "out holds %zd words; a block of %zd bytes needs as many",
                     out.count, data.len);
        goto fail;
    }
    if (s < 0 || s > 32) {
        PyErr_Format(PyExc_ValueError, "s must be from 0 to 32, not %d", s);
        goto fail;
    }
    if (acquire(self) < 0)
        goto fail;
    WordSink sink = {out.view.buf, 0, (uint32_t)seed,
                     s == 32 ? 0xFFFFFFFFu : (uint32_t)((1ull << s) - 1)};
    Py_BEGIN_ALLOW_THREADS
    if (sampled && s > 0)
        PARSE(self, data.buf, (size_t)data.len, emit_sampled, consume_sampled, &sink);
    else
        PARSE(self, data.buf, (size_t)data.len, emit_word, consume_words, &sink);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    if (raise_problem(self) < 0)
        goto fail;
    release(&out, 1);
    PyBuffer_Release(&data);
    return PyLong_FromSize_t(sink.count);
fail:
    release(&out, 1);
    PyBuffer_Release(&data);
    return NULL;
}

static PyObject *stream_kmers(KmerStream *self, PyObject *args)
{
    return stream_words(self, args, 0);
}

static PyObject *stream_sample(KmerStream *self, PyObject *args)
{
    return stream_words(self, args, 1);
}

static void reset(KmerStream *self)
{
    self->state = LS_RECORD;
    self->run = 0;
    self->forward = self->reverse = 0;
    self->sequence_bytes = 0;
    self->fed = self->line_start = self->lines = self->records = 0;
    self->sequence_mark = self->sequence_length = 0;
    self->quality_length = self->quality_spaces = 0;
    self->leading_spaces = self->space_column = self->trimmed_lines = 0;
    self->kind = self->space_byte = 0;
    self->problem = self->problem_byte = 0;
    self->problem_record = self->problem_line = self->problem_column = 0;
}

/* check(block): the input check alone (a stream made with check=True), no k-mers. */
static PyObject *stream_check(KmerStream *self, PyObject *args)
{
    Py_buffer data;
    if (!PyArg_ParseTuple(args, "y*", &data))
        return NULL;
    if (!self->check) {
        PyBuffer_Release(&data);
        PyErr_SetString(PyExc_ValueError, "check() needs a stream made with check=True");
        return NULL;
    }
    if (acquire(self) < 0) {
        PyBuffer_Release(&data);
        return NULL;
    }
    Py_BEGIN_ALLOW_THREADS
    parse_block(self, data.buf, (size_t)data.len, emit_nothing, NULL, NULL, NULL);
    Py_END_ALLOW_THREADS
    self->busy = 0;
    PyBuffer_Release(&data);
    if (raise_problem(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

/* finish(): the end of the file. A last line without its line feed is checked as if it had
 * one (check_input reads "x" and "x\n" alike); a FASTQ record left open is refused. */
static PyObject *stream_finish(KmerStream *self, PyObject *unused)
{
    if (!self->check)
        Py_RETURN_NONE;
    if (acquire(self) < 0)
        return NULL;
    if (self->fed > self->line_start)
        parse_block(self, (const uint8_t *)"\n", 1, emit_nothing, NULL, NULL, NULL);
    if (!self->problem && self->state != LS_RECORD && self->state != LS_SEQUENCE)
        refuse(self, BAD_END, 0, 0, 0);
    self->busy = 0;
    if (raise_problem(self) < 0)
        return NULL;
    Py_RETURN_NONE;
}

static PyObject *stream_reset(KmerStream *self, PyObject *unused)
{
    if (acquire(self) < 0)
        return NULL;
    reset(self);
    self->busy = 0;
    Py_RETURN_NONE;
}

static int stream_init(KmerStream *self, PyObject *args, PyObject *kwargs)
{
    static char *keywords[] = {"k", "canonical", "check", NULL};
    int k, canonical = 1, check = 0;
    if (!PyArg_ParseTupleAndKeywords(args, kwargs, "i|pp", keywords, &k, &canonical, &check))
        return -1;
    if (k < 1 || k > 32) {
        PyErr_Format(PyExc_ValueError, "k must be an integer from 1 to 32, not %d", k);
        return -1;
    }
    self->k = k;
    self->canonical = canonical;
    self->check = check;
    self->mask = k == 32 ? ~0ull : (1ull << (2 * k)) - 1;
    self->busy = 0;
    reset(self);
    return 0;
}

static PyMethodDef stream_methods[] = {
    {"hll", (PyCFunction)stream_hll, METH_VARARGS,
     "hll(block, registers, p, w[, counters, width_bits, seed, max_count, min_count]): insert "
     "the block's k-mers into uint8 registers (2^p); with the uint32 counters of the minimum-"
     "count prefilter (depth x 2^width_bits, zero at the genome's start), only those whose "
     "conservative Count-Min estimate reaches min_count (SPEC 7)."},
    {"kmers", (PyCFunction)stream_kmers, METH_VARARGS,
     "kmers(block, out) -> count: the block's k-mer words into uint64 out (len(block) words)."},
    {"sample", (PyCFunction)stream_sample, METH_VARARGS,
     "sample(block, out, s, seed) -> count: the k-mer words whose murmur3_32(word, seed) has "
     "its low s bits zero."},
    {"reset", (PyCFunction)stream_reset, METH_NOARGS,
     "Start a new file: record start, empty run."},
    {"check", (PyCFunction)stream_check, METH_VARARGS,
     "check(block): the input check of a check=True stream over the block, no k-mers."},
    {"finish", (PyCFunction)stream_finish, METH_NOARGS,
     "The file has ended: with check=True, refuse a FASTQ record left open "
     "(InputFormatError)."},
    {NULL, NULL, 0, NULL},
};

static PyMemberDef stream_members[] = {
    {"sequence_bytes", T_ULONGLONG, offsetof(KmerStream, sequence_bytes), READONLY,
     "Bytes on sequence lines fed so far (bases and breaking bytes; CR and LF excluded): "
     "what progress reports count as bases."},
    {"trimmed_lines", T_ULONGLONG, offsetof(KmerStream, trimmed_lines), READONLY,
     "check=True: sequence lines, and lines of spaces only, whose trailing spaces and tabs "
     "the check skipped so far (0: the bytes fed are what the check returns, for the k-mers "
     "of every parser)."},
    {NULL, 0, 0, 0, NULL},
};

static PyTypeObject KmerStreamType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "host.fast._native.KmerStream",
    .tp_doc = "KmerStream(k, canonical=True, check=False): the k-mers of one file, fed block "
              "by block; with check, of the file as the host's input check (SPEC 1.1) takes "
              "it, refusing bad input with InputFormatError.",
    .tp_basicsize = sizeof(KmerStream),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_init = (initproc)stream_init,
    .tp_methods = stream_methods,
    .tp_members = stream_members,
};

static PyObject *kmer_simd_level(PyObject *module, PyObject *unused)
{
    return PyUnicode_FromString(kmer_kernels.name);
}

static PyObject *set_kmer_simd_level(PyObject *module, PyObject *args)
{
    return set_level_from(args, kmer_use_simd_level, "scalar, avx2, avx512, avx512-gfni");
}

static PyMethodDef kmer_level_methods[] = {
    {"kmer_simd_level", kmer_simd_level, METH_NOARGS,
     "The instruction set KmerStream sketches with (k >= 8): avx512-gfni, avx512, avx2 or "
     "scalar."},
    {"set_kmer_simd_level", set_kmer_simd_level, METH_VARARGS,
     "set_kmer_simd_level(level): use scalar, avx2, avx512 or avx512-gfni (ValueError if this "
     "CPU has not got it), or 'best'; for all streams, from their next block on."},
    {NULL, NULL, 0, NULL},
};

int add_kmer_stream_type(PyObject *module)
{
    init_byte_class();
    kmer_use_simd_level("best");
    if (PyModule_AddFunctions(module, kmer_level_methods) < 0)
        return -1;
    if (PyType_Ready(&KmerStreamType) < 0)
        return -1;
    InputFormatError = PyErr_NewExceptionWithDoc(
        "host.fast._native.InputFormatError",
        "Input refused by the host's input check (SPEC 1.1); the message is "
        "kmerspec.golden.parse.check_input's, without the file name.", PyExc_ValueError, NULL);
    if (InputFormatError == NULL || PyModule_AddObject(module, "InputFormatError",
                                                       InputFormatError) < 0)
        return -1;
    Py_INCREF(InputFormatError);
    Py_INCREF(&KmerStreamType);
    if (PyModule_AddObject(module, "KmerStream", (PyObject *)&KmerStreamType) < 0) {
        Py_DECREF(&KmerStreamType);
        return -1;
    }
    return 0;
}
