/* The compiled signing kernel: text -> normalised bytes -> shingle hashes -> MinHash signature in one pass per
 * text, with no Python object per word or shingle. neardup_solr/text/kernel.py explains the choice of a plain C
 * extension and holds the Python side; the values are those of the NumPy path (text/shingles.py, minhash.py),
 * which the tests check on random Unicode.
 *
 * Normalisation: an ASCII text without '&' is normalised here (the ASCII table of text/normalizer.py: control
 * characters and punctuation except '-' become spaces, A-Z are lowered); any other text goes through the
 * normaliser's own Python `prepare` (HTML entities, NFKC, case folding), whose result this code then runs through
 * the same table (a no-op on it) while it collapses the spaces. Both give exactly `Normalizer.normalize`.
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <string.h>

#if defined(__GNUC__) && !defined(__clang__) && defined(__x86_64__) && defined(__linux__)
/* One binary for every x86-64: the minimum loop is compiled three times and picked at load time. */
#define MULTI_TARGET __attribute__((target_clones("avx512f", "avx2", "default")))
#else
#define MULTI_TARGET
#endif

static inline uint32_t rotl32(uint32_t x, int r) { return (x << r) | (x >> (32 - r)); }

static inline uint32_t fmix32(uint32_t h) {
    h ^= h >> 16;
    h *= 0x85ebca6bu;
    h ^= h >> 13;
    h *= 0xc2b2ae35u;
    h ^= h >> 16;
    return h;
}

static inline uint32_t scramble(uint32_t k) {
    k *= 0xcc9e2d51u;
    k = rotl32(k, 15);
    return k * 0x1b873593u;
}

static inline uint32_t absorb(uint32_t h, uint32_t k) {
    h ^= k;
    h = rotl32(h, 13);
    return h * 5u + 0xe6546b64u;
}

/* MurmurHash3_x86_32, as mmh3.hash(bytes, seed, signed=False). */
static uint32_t murmur3(const unsigned char *data, Py_ssize_t len, uint32_t seed) {
    uint32_t h = seed;
    Py_ssize_t nblocks = len / 4;
    for (Py_ssize_t i = 0; i < nblocks; i++) {
        uint32_t k;
        memcpy(&k, data + 4 * i, 4); /* x86-64 and aarch64 are little-endian, as mmh3 reads blocks */
        h = absorb(h, scramble(k));
    }
    const unsigned char *tail = data + 4 * nblocks;
    uint32_t k = 0;
    switch (len & 3) {
    case 3: k ^= (uint32_t)tail[2] << 16; /* fall through */
    case 2: k ^= (uint32_t)tail[1] << 8;  /* fall through */
    case 1: k ^= tail[0]; h ^= scramble(k);
    }
    h ^= (uint32_t)len;
    return fmix32(h);
}

/* Growable arrays, one set per call and reused across its texts. Not static: the normaliser's `prepare` is Python
 * code, during which another thread may enter the kernel. */
typedef struct { void *data; size_t cap; } Scratch;
typedef struct { Scratch normalised, units, hashes, islands; } Work;

static void release_work(Work *w) {
    free(w->islands.data);
    free(w->normalised.data);
    free(w->units.data);
    free(w->hashes.data);
}

static int reserve(Scratch *s, size_t bytes) {
    if (bytes <= s->cap) return 0;
    size_t cap = s->cap ? s->cap : 4096;
    while (cap < bytes) cap *= 2;
    void *p = realloc(s->data, cap);
    if (!p) { PyErr_NoMemory(); return -1; }
    s->data = p;
    s->cap = cap;
    return 0;
}

/* 0 for a byte that becomes a separator, else the byte it becomes (bytes >= 0x80 pass unchanged). */
static unsigned char ascii_table[256];

static void init_table(void) {
    static const char *punctuation = "!\"#$%&'()*+,./:;<=>?@[\\]^_`{|}~"; /* string.punctuation minus '-' */
    for (int c = 0; c < 256; c++) ascii_table[c] = (unsigned char)c;
    for (int c = 0; c < 32; c++) ascii_table[c] = 0;
    ascii_table[' '] = 0;
    ascii_table[127] = 0;
    for (const char *p = punctuation; *p; p++) ascii_table[(unsigned char)*p] = 0;
    for (int c = 'A'; c <= 'Z'; c++) ascii_table[c] = (unsigned char)(c - 'A' + 'a');
}

/* src through the table, separators collapsed to one ' ', ends stripped: Normalizer.normalize's bytes. */
static Py_ssize_t normalise_into(const unsigned char *src, Py_ssize_t len, unsigned char *out) {
    Py_ssize_t n = 0;
    int pending_space = 0;
    for (Py_ssize_t i = 0; i < len; i++) {
        unsigned char m = ascii_table[src[i]];
        if (m == 0) {
            pending_space = n > 0;
            continue;
        }
        if (pending_space) {
            out[n++] = ' ';
            pending_space = 0;
        }
        out[n++] = m;
    }
    return n;
}

typedef struct {
    PyObject *texts; /* a list or tuple (PySequence_Fast) */
    PyObject *prepare;
    PyObject *island_prepare, *island_cache; /* None, or the normaliser's island function and its dict */
    Py_ssize_t island_cache_limit;
    int fast_ascii, word_unit, ngram;
    uint32_t seed;
} Job;

static int append(Scratch *s, size_t *used, const char *bytes, size_t n) {
    if (reserve(s, *used + n + 4) < 0) return -1;
    memcpy((char *)s->data + *used, bytes, n);
    *used += n;
    return 0;
}

/* A text that is mostly ASCII with some other characters (prose with curly quotes, dashes, accents): the ASCII
 * characters go through unchanged (the table does their part later) and each island, a run of non-ASCII characters
 * with the ASCII character before it, goes through the normaliser's island function, remembered in its dict since
 * islands repeat ("’s", "“", "é"). The island function is Normalizer.kernel_prepare's Unicode part: NFKC and
 * case folding work character by character except where a character combines with the one before it, and nothing
 * combines with a following ASCII character, so splitting before every ASCII character changes nothing.
 * Returns the bytes' length in w->islands, or -1 with an exception set. */
static Py_ssize_t island_text(Work *w, const Job *job, PyObject *text) {
    int kind = PyUnicode_KIND(text);
    const void *data = PyUnicode_DATA(text);
    Py_ssize_t n = PyUnicode_GET_LENGTH(text);
    size_t used = 0;
    Py_ssize_t i = 0;
    while (i < n) {
        Py_UCS4 c = PyUnicode_READ(kind, data, i);
        if (c < 128 && (i + 1 == n || PyUnicode_READ(kind, data, i + 1) < 128)) {
            char byte = (char)c;
            if (append(&w->islands, &used, &byte, 1) < 0) return -1;
            i++;
            continue;
        }
        Py_ssize_t end = c < 128 ? i + 1 : i;
        while (end < n && PyUnicode_READ(kind, data, end) >= 128) end++;
        PyObject *key = PyUnicode_Substring(text, i, end);
        if (key == NULL) return -1;
        PyObject *value = PyDict_GetItemWithError(job->island_cache, key); /* borrowed */
        if (value != NULL) {
            Py_INCREF(value);
        } else if (PyErr_Occurred()) {
            Py_DECREF(key);
            return -1;
        } else {
            value = PyObject_CallOneArg(job->island_prepare, key);
            if (value == NULL || !PyUnicode_Check(value)) {
                if (value != NULL) PyErr_SetString(PyExc_TypeError, "the normaliser's island function must return a str");
                Py_XDECREF(value);
                Py_DECREF(key);
                return -1;
            }
            if (PyDict_GET_SIZE(job->island_cache) < job->island_cache_limit &&
                PyDict_SetItem(job->island_cache, key, value) < 0) {
                Py_DECREF(value);
                Py_DECREF(key);
                return -1;
            }
        }
        Py_DECREF(key);
        Py_ssize_t size;
        const char *utf8 = PyUnicode_AsUTF8AndSize(value, &size);
        int failed = utf8 == NULL || append(&w->islands, &used, utf8, (size_t)size) < 0;
        Py_DECREF(value);
        if (failed) return -1;
        i = end;
    }
    return (Py_ssize_t)used;
}

/* The normalised UTF-8 bytes of texts[i] in w->normalised; returns their length, or -1 with an exception set. */
static Py_ssize_t normalised_text(Work *w, const Job *job, Py_ssize_t i) {
    PyObject *text = PySequence_Fast_GET_ITEM(job->texts, i);
    if (!PyUnicode_Check(text)) {
        PyErr_Format(PyExc_TypeError, "text at index %zd is a %s, not a str; decode it first", i,
                     Py_TYPE(text)->tp_name);
        return -1;
    }
    PyObject *prepared = NULL;
    const char *utf8;
    Py_ssize_t len;
    if (job->fast_ascii && PyUnicode_IS_ASCII(text) &&
        memchr(PyUnicode_DATA(text), '&', (size_t)PyUnicode_GET_LENGTH(text)) == NULL) {
        utf8 = (const char *)PyUnicode_DATA(text);
        len = PyUnicode_GET_LENGTH(text);
    } else if (job->island_prepare != Py_None && !PyUnicode_IS_ASCII(text) &&
               PyUnicode_FindChar(text, '&', 0, PyUnicode_GET_LENGTH(text), 1) == -1) {
        len = island_text(w, job, text);
        if (len < 0) return -1;
        utf8 = w->islands.data ? w->islands.data : "";
    } else {
        prepared = PyObject_CallOneArg(job->prepare, text);
        if (prepared == NULL) return -1;
        if (!PyUnicode_Check(prepared)) {
            Py_DECREF(prepared);
            PyErr_SetString(PyExc_TypeError, "the normaliser's prepare() must return a str");
            return -1;
        }
        utf8 = PyUnicode_AsUTF8AndSize(prepared, &len);
        if (utf8 == NULL) {
            Py_DECREF(prepared);
            return -1;
        }
    }
    Py_ssize_t n = -1;
    if (reserve(&w->normalised, (size_t)len + 4) == 0)
        n = normalise_into((const unsigned char *)utf8, len, w->normalised.data);
    Py_XDECREF(prepared);
    return n;
}

/* Shingle hashes (duplicates kept) of the normalised text in w->normalised into w->hashes; returns how many. */
static Py_ssize_t shingle_hashes(Work *w, Py_ssize_t len, int word_unit, int ngram, uint32_t seed) {
    const unsigned char *text = w->normalised.data;
    if (len == 0) return 0;
    /* At most one unit per byte (+1 for the end position of the character path). */
    if (reserve(&w->units, sizeof(Py_ssize_t) * ((size_t)len + 1)) < 0) return -1;
    if (reserve(&w->hashes, sizeof(uint32_t) * ((size_t)len + 1)) < 0) return -1;
    uint32_t *out = w->hashes.data;
    if (word_unit) {
        /* Each word's hash, through the per-block scramble once; a shingle folds n of them in order. */
        uint32_t *blocks = w->units.data;
        Py_ssize_t nwords = 0, start = 0;
        for (Py_ssize_t i = 0; i <= len; i++) {
            if (i == len || text[i] == ' ') {
                blocks[nwords++] = scramble(murmur3(text + start, i - start, seed));
                start = i + 1;
            }
        }
        if (nwords < ngram) { /* a text shorter than one shingle is one shingle: its words as one key */
            uint32_t h = seed;
            for (Py_ssize_t j = 0; j < nwords; j++) h = absorb(h, blocks[j]);
            out[0] = fmix32(h ^ (uint32_t)(4 * nwords));
            return 1;
        }
        Py_ssize_t count = nwords - ngram + 1;
        uint32_t key_length = (uint32_t)(4 * ngram);
        for (Py_ssize_t i = 0; i < count; i++) {
            uint32_t h = seed;
            for (int j = 0; j < ngram; j++) h = absorb(h, blocks[i + j]);
            out[i] = fmix32(h ^ key_length);
        }
        return count;
    }
    /* Character k-grams: windows of k code points over the UTF-8 bytes (continuation bytes are 10xxxxxx). */
    Py_ssize_t *starts = w->units.data;
    Py_ssize_t nchars = 0;
    for (Py_ssize_t i = 0; i < len; i++)
        if ((text[i] & 0xC0) != 0x80) starts[nchars++] = i;
    starts[nchars] = len;
    if (nchars < ngram) {
        out[0] = murmur3(text, len, seed);
        return 1;
    }
    Py_ssize_t count = nchars - ngram + 1;
    for (Py_ssize_t i = 0; i < count; i++) out[i] = murmur3(text + starts[i], starts[i + ngram] - starts[i], seed);
    return count;
}

/* sig[j] = min over hashes h of fmix32(h ^ mask[j]), with pre_masks[j] = mask[j] ^ (mask[j] >> 16): the first
 * step of fmix32 distributes over XOR, so it is applied to each hash once and to the masks once per call. */
MULTI_TARGET
static void min_over_masks(const uint32_t *hashes, Py_ssize_t count, const uint32_t *pre_masks, int num_hashes,
                           uint32_t *sig) {
    for (int j = 0; j < num_hashes; j++) sig[j] = 0xFFFFFFFFu;
    for (Py_ssize_t s = 0; s < count; s++) {
        uint32_t pre = hashes[s] ^ (hashes[s] >> 16);
        for (int j = 0; j < num_hashes; j++) {
            uint32_t v = pre ^ pre_masks[j];
            v *= 0x85ebca6bu;
            v ^= v >> 13;
            v *= 0xc2b2ae35u;
            v ^= v >> 16;
            sig[j] = v < sig[j] ? v : sig[j];
        }
    }
}

/* The masks through fmix32's first step (see min_over_masks), after checking masks and out fit ndocs; NULL with
 * an exception set otherwise. The caller frees it. */
static uint32_t *prepared_masks(Py_buffer *masks, Py_buffer *out, Py_ssize_t ndocs) {
    Py_ssize_t num_hashes = masks->len / (Py_ssize_t)sizeof(uint32_t);
    if (num_hashes < 1 || masks->len % (Py_ssize_t)sizeof(uint32_t) ||
        out->len != ndocs * num_hashes * (Py_ssize_t)sizeof(uint32_t)) {
        PyErr_SetString(PyExc_ValueError, "masks and out do not fit the number of texts");
        return NULL;
    }
    uint32_t *pre_masks = malloc(sizeof(uint32_t) * (size_t)num_hashes);
    if (pre_masks == NULL) {
        PyErr_NoMemory();
        return NULL;
    }
    const uint32_t *raw_masks = masks->buf;
    for (Py_ssize_t j = 0; j < num_hashes; j++) pre_masks[j] = raw_masks[j] ^ (raw_masks[j] >> 16);
    return pre_masks;
}

/* texts, prepare, islands, fast_ascii, word_unit, ngram, seed[, masks, out[, normalised]]: *masks and *out stay
 * NULL when not given; *normalised is NULL or a list. */
static int parse_job(PyObject *args, Job *job, PyObject **masks, PyObject **out, PyObject **normalised) {
    PyObject *texts, *islands;
    unsigned long seed;
    *masks = *out = *normalised = NULL;
    if (!PyArg_ParseTuple(args, "OOOpiik|OOO", &texts, &job->prepare, &islands, &job->fast_ascii, &job->word_unit,
                          &job->ngram, &seed, masks, out, normalised))
        return -1;
    if (*normalised == Py_None) *normalised = NULL;
    if (*normalised != NULL && !PyList_Check(*normalised)) {
        PyErr_SetString(PyExc_TypeError, "normalised must be a list (or None)");
        return -1;
    }
    if ((*masks == NULL) != (*out == NULL)) {
        PyErr_SetString(PyExc_TypeError, "masks and out come together");
        return -1;
    }
    /* islands: None, or (function, dict, limit) */
    job->island_prepare = Py_None;
    job->island_cache = NULL;
    if (islands != Py_None && !PyArg_ParseTuple(islands, "OO!n", &job->island_prepare, &PyDict_Type,
                                                &job->island_cache, &job->island_cache_limit))
        return -1;
    if (job->ngram < 1) {
        PyErr_SetString(PyExc_ValueError, "ngram must be at least 1");
        return -1;
    }
    job->seed = (uint32_t)seed;
    job->texts = PySequence_Fast(texts, "texts must be a sequence of str");
    return job->texts == NULL ? -1 : 0;
}

/* With masks and out (a writable uint32 buffer, len(texts) x len(masks)) it signs as well, in the same pass; with a
 * list as normalised, each text's normalised form (Normalizer.normalize's str) is appended to it: the indexer
 * needs it for the MD5 and the word count, and normalising again in Python was a third of signing a web page. */
static PyObject *kernel_hashes(PyObject *self, PyObject *args) {
    Job job;
    PyObject *masks_obj, *out_obj, *normalised;
    if (parse_job(args, &job, &masks_obj, &out_obj, &normalised) < 0) return NULL;
    PyObject *result = NULL;
    Py_buffer masks = {0}, out = {0};
    uint32_t *pre_masks = NULL;
    Py_ssize_t num_hashes = 0;
    int signing = masks_obj != NULL;
    if (signing) {
        if (PyObject_GetBuffer(masks_obj, &masks, PyBUF_SIMPLE) < 0) {
            Py_DECREF(job.texts);
            return NULL;
        }
        if (PyObject_GetBuffer(out_obj, &out, PyBUF_WRITABLE) < 0) {
            PyBuffer_Release(&masks);
            Py_DECREF(job.texts);
            return NULL;
        }
        num_hashes = masks.len / (Py_ssize_t)sizeof(uint32_t);
        pre_masks = prepared_masks(&masks, &out, PySequence_Fast_GET_SIZE(job.texts));
        if (pre_masks == NULL) {
            PyBuffer_Release(&masks);
            PyBuffer_Release(&out);
            Py_DECREF(job.texts);
            return NULL;
        }
    }
    Py_ssize_t ndocs = PySequence_Fast_GET_SIZE(job.texts);
    Scratch all = {NULL, 0};
    Work work = {{NULL, 0}, {NULL, 0}, {NULL, 0}, {NULL, 0}};
    /* bytearrays, so that the NumPy arrays over them are writable like the NumPy path's */
    PyObject *offsets = PyByteArray_FromStringAndSize(NULL, (ndocs + 1) * (Py_ssize_t)sizeof(int64_t));
    if (offsets == NULL) goto done;
    int64_t *offset = (int64_t *)PyByteArray_AS_STRING(offsets);
    offset[0] = 0;
    size_t total = 0;
    for (Py_ssize_t i = 0; i < ndocs; i++) {
        Py_ssize_t len = normalised_text(&work, &job, i);
        if (len < 0) goto done;
        if (normalised != NULL) {
            PyObject *text = PyUnicode_DecodeUTF8(len ? (const char *)work.normalised.data : "", len, "strict");
            int failed = text == NULL || PyList_Append(normalised, text) < 0;
            Py_XDECREF(text);
            if (failed) goto done;
        }
        Py_ssize_t count = shingle_hashes(&work, len, job.word_unit, job.ngram, job.seed);
        if (count < 0 || reserve(&all, sizeof(uint32_t) * (total + (size_t)count)) < 0) goto done;
        if (count) memcpy((uint32_t *)all.data + total, work.hashes.data, sizeof(uint32_t) * (size_t)count);
        if (signing)
            min_over_masks(work.hashes.data, count, pre_masks, (int)num_hashes, (uint32_t *)out.buf + i * num_hashes);
        total += (size_t)count;
        offset[i + 1] = (int64_t)total;
    }
    PyObject *hashes = PyByteArray_FromStringAndSize(all.data ? all.data : "", (Py_ssize_t)(sizeof(uint32_t) * total));
    if (hashes != NULL) result = Py_BuildValue("(NO)", hashes, offsets);
done:
    free(all.data);
    release_work(&work);
    if (signing) {
        free(pre_masks);
        PyBuffer_Release(&masks);
        PyBuffer_Release(&out);
    }
    Py_XDECREF(offsets);
    Py_DECREF(job.texts);
    return result;
}

/* Signatures of sets already hashed: hashes[offsets[d]:offsets[d+1]] for document d. */
static PyObject *kernel_sign_hashes(PyObject *self, PyObject *args) {
    Py_buffer hashes, offsets, masks, out;
    if (!PyArg_ParseTuple(args, "y*y*y*w*", &hashes, &offsets, &masks, &out)) return NULL;
    PyObject *result = NULL;
    Py_ssize_t ndocs = offsets.len / (Py_ssize_t)sizeof(int64_t) - 1;
    Py_ssize_t total = hashes.len / (Py_ssize_t)sizeof(uint32_t);
    uint32_t *pre_masks = NULL;
    if (ndocs < 0) {
        PyErr_SetString(PyExc_ValueError, "sign_hashes(): offsets needs at least one value");
        goto done;
    }
    pre_masks = prepared_masks(&masks, &out, ndocs);
    if (pre_masks == NULL) goto done;
    const int64_t *offset = offsets.buf;
    Py_ssize_t num_hashes = masks.len / (Py_ssize_t)sizeof(uint32_t);
    for (Py_ssize_t d = 0; d < ndocs; d++) {
        if (offset[d] < 0 || offset[d] > offset[d + 1] || offset[d + 1] > total) {
            PyErr_SetString(PyExc_ValueError, "sign_hashes(): offsets out of order or past the hashes");
            goto done;
        }
    }
    for (Py_ssize_t d = 0; d < ndocs; d++)
        min_over_masks((const uint32_t *)hashes.buf + offset[d], (Py_ssize_t)(offset[d + 1] - offset[d]), pre_masks,
                       (int)num_hashes, (uint32_t *)out.buf + d * num_hashes);
    result = Py_NewRef(Py_None);
done:
    free(pre_masks);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&masks);
    PyBuffer_Release(&out);
    return result;
}

/* "<position>_<value in hex>" for every value of every row: a list of lists of str. uint32 rows give lowercase hex
 * without leading zeros (MinHash tokens, "{}_{:x}"), uint64 rows 16 digits (LSH band keys, "{}_{:016x}"). */
static PyObject *kernel_position_tokens(PyObject *self, PyObject *args) {
    Py_buffer values;
    Py_ssize_t rows, width;
    int itemsize;
    if (!PyArg_ParseTuple(args, "y*nni", &values, &rows, &width, &itemsize)) return NULL;
    if ((itemsize != 4 && itemsize != 8) || rows < 0 || width < 0 || values.len != rows * width * itemsize) {
        PyBuffer_Release(&values);
        PyErr_SetString(PyExc_ValueError, "position_tokens(): values do not fit rows x width of that item size");
        return NULL;
    }
    static const char digits[] = "0123456789abcdef";
    PyObject *result = PyList_New(rows);
    for (Py_ssize_t r = 0; result != NULL && r < rows; r++) {
        PyObject *row = PyList_New(width);
        if (row == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, r, row);
        for (Py_ssize_t j = 0; j < width; j++) {
            char text[48];
            int n = snprintf(text, 24, "%zd_", j);
            uint64_t v;
            if (itemsize == 4) {
                uint32_t v32;
                memcpy(&v32, (const char *)values.buf + 4 * (r * width + j), 4);
                v = v32;
            } else {
                memcpy(&v, (const char *)values.buf + 8 * (r * width + j), 8);
            }
            char hex[16];
            int len = 0;
            do {
                hex[len++] = digits[v & 15];
                v >>= 4;
            } while (v && len < 16);
            if (itemsize == 8)
                while (len < 16) hex[len++] = '0';
            while (len) text[n++] = hex[--len];
            PyObject *token = PyUnicode_FromStringAndSize(text, n);
            if (token == NULL) {
                Py_CLEAR(result);
                break;
            }
            PyList_SET_ITEM(row, j, token);
        }
    }
    PyBuffer_Release(&values);
    return result;
}

/* For document d, the distinct values of hashes[offsets[d]:offsets[d+1]] in first-seen order: how many there are
 * (into counts[d]) and, of those that are 0 modulo `modulus`, one str of their lowercase hex without leading zeros
 * joined by single spaces ("{:x}", the shingle tokens of content_nh). An open-addressing set per document, reused. */
static PyObject *kernel_distinct_hex(PyObject *self, PyObject *args) {
    Py_buffer hashes, offsets, counts;
    unsigned long modulus;
    if (!PyArg_ParseTuple(args, "y*y*w*k", &hashes, &offsets, &counts, &modulus)) return NULL;
    PyObject *result = NULL;
    uint64_t *table = NULL;
    char *text = NULL;
    Py_ssize_t ndocs = offsets.len / (Py_ssize_t)sizeof(int64_t) - 1;
    Py_ssize_t total = hashes.len / (Py_ssize_t)sizeof(uint32_t);
    const int64_t *offset = offsets.buf;
    const uint32_t *value = hashes.buf;
    if (ndocs < 0 || counts.len != ndocs * (Py_ssize_t)sizeof(int64_t) || modulus == 0) {
        PyErr_SetString(PyExc_ValueError, "distinct_hex(): offsets, counts or modulus do not fit");
        goto done;
    }
    for (Py_ssize_t d = 0; d < ndocs; d++) {
        if (offset[d] < 0 || offset[d] > offset[d + 1] || offset[d + 1] > total) {
            PyErr_SetString(PyExc_ValueError, "distinct_hex(): offsets out of order or past the hashes");
            goto done;
        }
    }
    size_t capacity = 0;
    result = PyList_New(ndocs);
    for (Py_ssize_t d = 0; result != NULL && d < ndocs; d++) {
        size_t n = (size_t)(offset[d + 1] - offset[d]);
        size_t size = 16;
        while (size < 2 * n) size <<= 1;
        if (size > capacity) {
            free(table);
            free(text);
            table = malloc(size * sizeof(uint64_t));
            text = malloc(size / 2 * 9 + 1);  /* at most n values of 8 digits and a space each */
            if (table == NULL || text == NULL) {
                PyErr_NoMemory();
                Py_CLEAR(result);
                break;
            }
            capacity = size;
        }
        memset(table, 0, size * sizeof(uint64_t));  /* 0: empty; a value v is kept as v + 1 */
        int64_t distinct = 0;
        size_t length = 0;
        for (size_t i = 0; i < n; i++) {
            uint32_t v = value[offset[d] + i];
            size_t slot = (size_t)((v * 0x9E3779B1u) & (uint32_t)(size - 1));
            while (table[slot] != 0 && table[slot] != (uint64_t)v + 1) slot = (slot + 1) & (size - 1);
            if (table[slot] != 0) continue;
            table[slot] = (uint64_t)v + 1;
            distinct++;
            if (v % modulus) continue;
            static const char digits[] = "0123456789abcdef";
            char hex[8];
            int len = 0;
            do {
                hex[len++] = digits[v & 15];
                v >>= 4;
            } while (v);
            if (length) text[length++] = ' ';
            while (len) text[length++] = hex[--len];
        }
        ((int64_t *)counts.buf)[d] = distinct;
        PyObject *joined = PyUnicode_FromStringAndSize(text, (Py_ssize_t)length);
        if (joined == NULL) {
            Py_CLEAR(result);
            break;
        }
        PyList_SET_ITEM(result, d, joined);
    }
done:
    free(table);
    free(text);
    PyBuffer_Release(&hashes);
    PyBuffer_Release(&offsets);
    PyBuffer_Release(&counts);
    return result;
}

static PyObject *kernel_murmur3(PyObject *self, PyObject *args) {
    Py_buffer data;
    unsigned long seed;
    if (!PyArg_ParseTuple(args, "y*k", &data, &seed)) return NULL;
    uint32_t h = murmur3(data.buf, data.len, (uint32_t)seed);
    PyBuffer_Release(&data);
    return PyLong_FromUnsignedLong(h);
}

static PyMethodDef kernel_methods[] = {
    {"hashes", kernel_hashes, METH_VARARGS,
     "hashes(texts, prepare, islands, fast_ascii, word_unit, ngram, seed[, masks, out]) -> (uint32 bytearray, int64 offsets "
     "bytearray): the shingle hashes of every text, duplicates kept, concatenated; with masks, every text's "
     "signature into out as well."},
    {"sign_hashes", kernel_sign_hashes, METH_VARARGS,
     "sign_hashes(hashes, offsets, masks, out): signatures of sets of uint32 hashes, hashes[offsets[d]:offsets[d+1]] "
     "for row d of out."},
    {"position_tokens", kernel_position_tokens, METH_VARARGS,
     "position_tokens(values, rows, width, itemsize): '<position>_<hex>' tokens of every row (4-byte values "
     "unpadded, 8-byte values 16 digits)."},
    {"distinct_hex", kernel_distinct_hex, METH_VARARGS,
     "distinct_hex(hashes, offsets, counts, modulus) -> list of str: per document, its distinct hashes counted into "
     "counts and those 0 modulo modulus as space-separated hex, in first-seen order."},
    {"murmur3", kernel_murmur3, METH_VARARGS, "murmur3(data, seed): MurmurHash3_x86_32, unsigned."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef kernel_module = {
    PyModuleDef_HEAD_INIT, "_kernel", "The compiled signing kernel (see neardup_solr/text/kernel.py).", -1,
    kernel_methods,
};

PyMODINIT_FUNC PyInit__kernel(void) {
    init_table();
    return PyModule_Create(&kernel_module);
}
