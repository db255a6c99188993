/* reader_onnx.c -- import an ONNX model (binary ModelProto) into an autoshard
 * graph.  docs/onnx.md has the mapping; DESIGN:
 *  - The bytes are first walked with the protobuf-c descriptors of onnx.proto
 *    (generated at build time): every tag, wire type, varint and length is
 *    checked against the buffer, so truncated files, wrong field types and
 *    absurd length prefixes are reported with a byte offset and the field
 *    path ("graph.node[3].attribute[0].t") before protobuf-c unpacks them.
 *  - Values are looked up by name.  Nodes are emitted in file order when it
 *    is topological (as ONNX requires), else in a stable topological order;
 *    undefined names and cycles are errors.
 *  - Constants (Constant nodes, integer initializers, Shape of a tensor of
 *    static shape) are folded through the Shape -> Gather -> Unsqueeze ->
 *    Concat -> Reshape chains PyTorch writes; they become const tensors only
 *    when a real op reads them.
 *  - Roles: float initializers of rank >= 1 are parameters (batchnorm
 *    running statistics are constants); graph inputs that are not
 *    initializers are data inputs unless a weight slot reads them (Gemm B/C,
 *    Conv W/B, MatMul B of rank 2, normalisation scale/bias, an embedding
 *    table, a bias of lower rank added to an activation), which is what
 *    torch.onnx.export(..., export_params=False) writes for parameters.
 *  - Every emitted op is shape-checked by the registry, and against the
 *    declared types (value_info, graph outputs) where the file has them.
 *  - Unknown ops become one `opaque` op each with their declared shapes,
 *    counted in one warning line.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "reader_onnx.h"
#include "reader_onnx_internal.h"

#define OX_MAX_DEPTH 64                /* nested messages (subgraphs in attributes) */
#define OX_MAX_FOLD ((int64_t)1 << 20) /* elements of a constant read or folded */

/* ---- errors ---- */

int
ox_err(ox *o, const char *fmt, ...)
{
    char msg[440];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(o->err, AS_EPARSE, "%s: %s", o->path, msg);
}

static const char *
ox_node_name(const Onnx__NodeProto *n)
{
    if (n->name != NULL && n->name[0] != '\0')
        return n->name;
    if (n->n_output > 0 && n->output[0] != NULL && n->output[0][0] != '\0')
        return n->output[0];
    return "?";
}

int
ox_nerr(ox *o, const Onnx__NodeProto *n, const char *fmt, ...)
{
    char msg[400];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(o->err, AS_EPARSE, "%s: node '%.80s' (%.40s): %s", o->path, ox_node_name(n),
                   n->op_type != NULL ? n->op_type : "?", msg);
}

/* ---- detection ---- */

int
as_onnx_detect(const char *text, size_t len)
{
    const unsigned char *p = (const unsigned char *)text;
    size_t i, n = len < 256 ? len : 256;

    if (len < 2)
        return 0;
    /* ModelProto fields written first: ir_version (1, varint), producer_name (2), producer_version (3), graph (7). */
    if (p[0] == 0x08 || p[0] == 0x12 || p[0] == 0x1a || p[0] == 0x3a)
        return 1;
    /* The other ModelProto tags are printable bytes: ONNX only if binary bytes follow. */
    if (p[0] != 0x22 && p[0] != 0x28 && p[0] != 0x32 && p[0] != 0x42 && p[0] != 0x72 &&
        p[0] != 0x7a)
        return 0;
    for (i = 1; i < n; i++)
        if (p[i] < 0x09 || (p[i] > 0x0d && p[i] < 0x20))
            return 1;
    return 0;
}

/* ---- the wire-format walk ---- */

typedef struct wire {
    ox *o;
    const uint8_t *buf;
    size_t len;
    char path[256];
} wire;

static int
wire_err(wire *w, size_t at, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

static int
wire_err(wire *w, size_t at, const char *fmt, ...)
{
    char msg[360];
    va_list ap;

    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return as_errf(w->o->err, AS_EPARSE, "%s: byte %zu: %s%s%s", w->o->path, at, w->path[0] ? w->path : "",
                   w->path[0] ? ": " : "", msg);
}

/* Read a varint at *POS (< END); 0 if it runs past END or is longer than 10 bytes. */
static int
wire_varint(const uint8_t *b, size_t *pos, size_t end, uint64_t *v)
{
    uint64_t x = 0;
    int s;

    for (s = 0; s < 70; s += 7) {
        if (*pos >= end)
            return 0;
        x |= (uint64_t)(b[*pos] & 0x7f) << s;
        if ((b[(*pos)++] & 0x80) == 0) {
            *v = x;
            return 1;
        }
    }
    return 0;
}

static const char *const wire_names[8] = {"varint", "64-bit", "length-delimited", "group start",
                                           "group end", "32-bit", "invalid (6)", "invalid (7)"};

/* The wire type a field of type T is written with (unpacked). */
static int
wire_type_of(ProtobufCType t)
{
    switch (t) {
    case PROTOBUF_C_TYPE_FIXED64:
    case PROTOBUF_C_TYPE_SFIXED64:
    case PROTOBUF_C_TYPE_DOUBLE:
        return 1;
    case PROTOBUF_C_TYPE_FIXED32:
    case PROTOBUF_C_TYPE_SFIXED32:
    case PROTOBUF_C_TYPE_FLOAT:
        return 5;
    case PROTOBUF_C_TYPE_STRING:
    case PROTOBUF_C_TYPE_BYTES:
    case PROTOBUF_C_TYPE_MESSAGE:
        return 2;
    default:
        return 0;
    }
}

/* Check the message of descriptor D in [START, END) of the buffer. */
static int
wire_walk(wire *w, size_t start, size_t end, const ProtobufCMessageDescriptor *d, int depth)
{
    size_t pos = start, plen = strlen(w->path);
    unsigned counts[64] = {0};

    if (depth > OX_MAX_DEPTH)
        return wire_err(w, start, "messages nested more than %d deep", OX_MAX_DEPTH);
    while (pos < end) {
        size_t at = pos;
        uint64_t key, v;
        unsigned fid, wt;
        const ProtobufCFieldDescriptor *f;
        if (!wire_varint(w->buf, &pos, end, &key))
            return wire_err(w, at, "truncated or malformed field tag");
        fid = (unsigned)(key >> 3);
        wt = (unsigned)(key & 7);
        if (key >> 3 == 0 || key >> 3 > 536870911u)
            return wire_err(w, at, "invalid field number %llu", (unsigned long long)(key >> 3));
        f = d != NULL ? protobuf_c_message_descriptor_get_field(d, fid) : NULL;
        if (f != NULL) {
            int want = wire_type_of(f->type);
            int packed_ok = f->label == PROTOBUF_C_LABEL_REPEATED && want != 2 && wt == 2;
            if ((int)wt != want && !packed_ok)
                return wire_err(w, at, "field '%s' (%u) of %s has wire type %s, expected %s",
                                f->name, fid, d->short_name, wire_names[wt], wire_names[want]);
        }
        switch (wt) {
        case 0:
            if (!wire_varint(w->buf, &pos, end, &v))
                return wire_err(w, at, "truncated or malformed varint (field %u)", fid);
            break;
        case 1:
        case 5: {
            size_t k = wt == 1 ? 8 : 4;
            if (end - pos < k)
                return wire_err(w, at, "field %u: %zu-byte value runs past the end (%zu bytes "
                                "left): truncated file?", fid, k, end - pos);
            pos += k;
            break;
        }
        case 2: {
            size_t body;
            if (!wire_varint(w->buf, &pos, end, &v))
                return wire_err(w, at, "truncated or malformed length (field %u)", fid);
            if (v > end - pos)
                return wire_err(w, at, "field %s%s%s(%u) claims %llu bytes but %zu are left: "
                                "truncated file?", f != NULL ? "'" : "", f != NULL ? f->name : "",
                                f != NULL ? "' " : "", fid, (unsigned long long)v, end - pos);
            body = pos;
            pos += (size_t)v;
            if (f != NULL && f->type == PROTOBUF_C_TYPE_MESSAGE) {
                unsigned k = fid < 64 ? counts[fid]++ : 0;
                if (plen + strlen(f->name) + 16 < sizeof w->path) {
                    if (f->label == PROTOBUF_C_LABEL_REPEATED)
                        snprintf(w->path + plen, sizeof w->path - plen, "%s%s[%u]",
                                 plen ? "." : "", f->name, k);
                    else
                        snprintf(w->path + plen, sizeof w->path - plen, "%s%s", plen ? "." : "",
                                 f->name);
                }
                AS_CHECK(wire_walk(w, body, pos, f->descriptor, depth + 1));
                w->path[plen] = '\0';
            } else if (f != NULL && wire_type_of(f->type) != 2) { /* packed repeated scalars */
                int ft = wire_type_of(f->type);
                size_t q = body;
                if (ft == 0) {
                    while (q < pos)
                        if (!wire_varint(w->buf, &q, pos, &v))
                            return wire_err(w, q, "field '%s': malformed packed varint", f->name);
                } else if ((pos - body) % (ft == 1 ? 8 : 4) != 0)
                    return wire_err(w, at, "field '%s': packed length %zu is not a multiple of %d",
                                    f->name, pos - body, ft == 1 ? 8 : 4);
            }
            break;
        }
        default:
            return wire_err(w, at, "field %u has wire type %s, which onnx.proto never uses", fid,
                            wire_names[wt]);
        }
    }
    return AS_OK;
}

/* protobuf-c allocates through these: out of memory is one line and exit 1. */
static void *
ox_pb_alloc(void *data, size_t size)
{
    (void)data;
    return as_xmalloc(size ? size : 1);
}

static void
ox_pb_free(void *data, void *p)
{
    (void)data;
    free(p);
}

static ProtobufCAllocator ox_pb_allocator = {ox_pb_alloc, ox_pb_free, NULL};

/* ---- small helpers ---- */

int
ox_dtype(int32_t t, as_dtype *dt)
{
    switch (t) {
    case 1: *dt = AS_DT_F32; return 1;
    case 2: *dt = AS_DT_U8; return 1;
    case 3: *dt = AS_DT_I8; return 1;
    case 4: *dt = AS_DT_U16; return 1;
    case 5: *dt = AS_DT_I16; return 1;
    case 6: *dt = AS_DT_I32; return 1;
    case 7: *dt = AS_DT_I64; return 1;
    case 9: *dt = AS_DT_PRED; return 1;
    case 10: *dt = AS_DT_F16; return 1;
    case 11: *dt = AS_DT_F64; return 1;
    case 12: *dt = AS_DT_U32; return 1;
    case 13: *dt = AS_DT_U64; return 1;
    case 16: *dt = AS_DT_BF16; return 1;
    default: return 0;
    }
}

static const char *
ox_type_name(int32_t t)
{
    static const char *const n[] = {"undefined", "float", "uint8", "int8", "uint16", "int16",
                                    "int32", "int64", "string", "bool", "float16", "double",
                                    "uint32", "uint64", "complex64", "complex128", "bfloat16"};
    return t >= 0 && t <= 16 ? n[t] : "unknown";
}

int
ox_find(const ox *o, const char *name)
{
    int64_t v;

    return name != NULL && as_strmap_get(&o->names, name, (size_t)-1, &v) ? (int)v : -1;
}

static int
ox_val_add(ox *o, const char *name)
{
    ox_val v;
    int k = ox_find(o, name);

    if (k >= 0)
        return k;
    memset(&v, 0, sizeof v);
    v.name = name;
    v.tid = -1;
    v.input = -1;
    v.producer = -1;
    v.user = -1;
    AS_VEC_PUSH(&o->vals, v);
    as_strmap_put(&o->names, name, (int64_t)(o->vals.n - 1));
    return (int)(o->vals.n - 1);
}

int
ox_single_user(ox *o, const Onnx__NodeProto *n, int k)
{
    int vi = (size_t)k < n->n_output ? ox_find(o, n->output[k]) : -1;

    return vi >= 0 && o->vals.v[vi].nuse == 1 ? o->vals.v[vi].user : -1;
}

int
ox_has_in(const Onnx__NodeProto *n, int j)
{
    return j >= 0 && (size_t)j < n->n_input && n->input[j] != NULL && n->input[j][0] != '\0';
}

int
ox_nin(const Onnx__NodeProto *n)
{
    int k = (int)n->n_input;

    while (k > 0 && !ox_has_in(n, k - 1))
        k--;
    return k;
}

const as_shape *
ox_shape(ox *o, int32_t tid)
{
    /* A copy in the arena: emitters keep shapes across calls that add tensors, and adding a
       tensor may move the graph's tensor array (heap-use-after-free found by fuzz_onnx). */
    as_shape *c = as_arena_alloc(o->arena, sizeof *c);

    *c = as_graph_tensor(o->g, tid)->shape;
    return c;
}

ox_const *
ox_const_new(ox *o, const as_shape *s)
{
    ox_const *c = as_arena_calloc(o->arena, 1, sizeof *c);
    int64_t n = as_shape_numel(s);

    c->shape = *s;
    c->n = n;
    if (as_dtype_is_float(s->dtype))
        c->f = as_arena_calloc(o->arena, (size_t)(n ? n : 1), sizeof *c->f);
    else
        c->i = as_arena_calloc(o->arena, (size_t)(n ? n : 1), sizeof *c->i);
    return c;
}

/* S as a valid .asg name into BUF: [A-Za-z_][A-Za-z0-9_.-]*, '/' as '.'. */
static void
ox_sanitize(const char *s, char *buf, size_t cap)
{
    size_t k = 0;
    const char *p = s != NULL ? s : "";

    while (*p == '/')
        p++;
    if (!((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || *p == '_'))
        buf[k++] = 'v';
    for (; *p && k < cap - 2; p++) {
        char c = *p;
        if (c == '/')
            c = '.';
        else if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                   c == '_' || c == '.' || c == '-'))
            c = '_';
        buf[k++] = c;
    }
    buf[k] = '\0';
    if (strcmp(buf, "inf") == 0 || strcmp(buf, "nan") == 0)
        strcpy(buf + k, "_");
}

/* A sanitised name, unique in the graph. */
const char *
ox_name(ox *o, const char *s)
{
    char buf[256];

    ox_sanitize(s, buf, sizeof buf);
    if (as_graph_find(o->g, buf) >= 0)
        return as_graph_fresh_name(o->g, buf);
    return as_graph_strdup(o->g, buf);
}

/* ---- attributes ---- */

const Onnx__AttributeProto *
ox_attr(const Onnx__NodeProto *n, const char *name)
{
    size_t i;

    for (i = 0; i < n->n_attribute; i++)
        if (n->attribute[i]->name != NULL && strcmp(n->attribute[i]->name, name) == 0)
            return n->attribute[i];
    return NULL;
}

int64_t
ox_attr_i(const Onnx__NodeProto *n, const char *name, int64_t dflt)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);

    if (a == NULL)
        return dflt;
    if (a->has_i)
        return a->i;
    if (a->has_f) { /* a float where an int is meant: truncated, NaN as absent, and held
                       within int64 (a cast of 1.7e28 is undefined; the fuzzer's find) */
        if (isnan(a->f))
            return dflt;
        if (a->f >= 9.2e18)
            return INT64_MAX;
        if (a->f <= -9.2e18)
            return INT64_MIN;
        return (int64_t)a->f;
    }
    return dflt;
}

double
ox_attr_f(const Onnx__NodeProto *n, const char *name, double dflt)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);

    if (a == NULL)
        return dflt;
    if (a->has_f)
        return a->f;
    if (a->has_i)
        return (double)a->i;
    return dflt;
}

int
ox_attr_ints(const Onnx__NodeProto *n, const char *name, int64_t *v, int max)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    size_t i;

    if (a == NULL)
        return -1;
    if (a->n_ints > (size_t)max)
        return -2;
    for (i = 0; i < a->n_ints; i++)
        v[i] = a->ints[i];
    return (int)a->n_ints;
}

int
ox_attr_s(const Onnx__NodeProto *n, const char *name, char *buf, size_t cap)
{
    const Onnx__AttributeProto *a = ox_attr(n, name);
    size_t k;

    if (a == NULL || !a->has_s)
        return 0;
    k = a->s.len < cap - 1 ? a->s.len : cap - 1;
    memcpy(buf, a->s.data, k);
    buf[k] = '\0';
    return 1;
}

/* ---- tensors: types, data ---- */

/* Shape of a TensorProto (DIMS, DATA_TYPE) into *S. */
int
ox_tensor_shape(ox *o, const Onnx__TensorProto *t, const char *what, as_shape *s)
{
    size_t i;
    as_err e2;

    memset(s, 0, sizeof *s);
    if (!t->has_data_type || !ox_dtype(t->data_type, &s->dtype))
        return ox_err(o, "%s '%.100s': unsupported data type %d (%s)", what,
                      t->name != NULL ? t->name : "", (int)t->data_type,
                      ox_type_name(t->data_type));
    if (t->n_dims > AS_MAX_RANK)
        return ox_err(o, "%s '%.100s': rank %zu is more than %d", what,
                      t->name != NULL ? t->name : "", t->n_dims, AS_MAX_RANK);
    s->rank = (int)t->n_dims;
    for (i = 0; i < t->n_dims; i++) {
        if (t->dims[i] < 0)
            return ox_err(o, "%s '%.100s': negative dim %lld", what,
                          t->name != NULL ? t->name : "", (long long)t->dims[i]);
        s->dim[i] = t->dims[i];
    }
    if (as_shape_validate(s, 0, &e2) != AS_OK)
        return ox_err(o, "%s '%.100s': %s", what, t->name != NULL ? t->name : "", e2.msg);
    return AS_OK;
}

/* The directory of the model file, for external data ("." for stdin). */
static char *
ox_model_dir(const char *path)
{
    const char *sl = strrchr(path, '/');

    if (sl == NULL || strcmp(path, "<stdin>") == 0)
        return as_xstrdup(".");
    return as_xstrndup(path, (size_t)(sl - path) + (sl == path));
}

/*
 * External data of T: check that the file exists and holds OFFSET + LENGTH
 * bytes; with WANT, read the bytes into *DATA (malloc'ed).
 */
static int
ox_external(ox *o, const Onnx__TensorProto *t, int64_t nbytes, int want, uint8_t **data)
{
    const char *loc = NULL;
    int64_t off = 0, len = -1;
    char *dir, *full;
    struct stat st;
    size_t i;
    int rc = AS_OK;

    for (i = 0; i < t->n_external_data; i++) {
        const Onnx__StringStringEntryProto *e = t->external_data[i];
        if (e->key == NULL || e->value == NULL)
            continue;
        if (strcmp(e->key, "location") == 0)
            loc = e->value;
        else if (strcmp(e->key, "offset") == 0)
            off = strtoll(e->value, NULL, 10);
        else if (strcmp(e->key, "length") == 0)
            len = strtoll(e->value, NULL, 10);
    }
    if (loc == NULL || loc[0] == '\0')
        return ox_err(o, "tensor '%.100s': external data without a location",
                      t->name != NULL ? t->name : "");
    if (loc[0] == '/' || strstr(loc, "..") != NULL)
        return ox_err(o, "tensor '%.100s': external data location '%.100s' is not a relative "
                      "path inside the model's directory", t->name != NULL ? t->name : "", loc);
    if (len < 0)
        len = nbytes;
    dir = ox_model_dir(o->path);
    full = as_xasprintf("%s/%s", dir, loc);
    free(dir);
    if (stat(full, &st) != 0)
        rc = ox_err(o, "tensor '%.100s': external data file '%.200s' is missing (%s)",
                    t->name != NULL ? t->name : "", full, strerror(errno));
    else if (off < 0 || len < 0 || (int64_t)st.st_size < off || (int64_t)st.st_size - off < len)
        rc = ox_err(o, "tensor '%.100s': external data file '%.200s' has %lld bytes, fewer than "
                    "offset %lld + length %lld", t->name != NULL ? t->name : "", full,
                    (long long)st.st_size, (long long)off, (long long)len);
    else if (len != nbytes)
        rc = ox_err(o, "tensor '%.100s': external data length %lld differs from its shape's "
                    "%lld bytes", t->name != NULL ? t->name : "", (long long)len,
                    (long long)nbytes);
    else if (want) {
        FILE *fp = fopen(full, "rb");
        *data = as_xmalloc((size_t)len + 1);
        if (fp == NULL || fseeko(fp, (off_t)off, SEEK_SET) != 0 ||
            fread(*data, 1, (size_t)len, fp) != (size_t)len) {
            free(*data);
            *data = NULL;
            rc = ox_err(o, "tensor '%.100s': cannot read external data file '%.200s'",
                        t->name != NULL ? t->name : "", full);
        }
        if (fp != NULL)
            fclose(fp);
    }
    free(full);
    return rc;
}

/* Check that T's data agrees with its shape (and that external data exists). */
static int
ox_tensor_check(ox *o, const Onnx__TensorProto *t, const as_shape *s)
{
    int64_t n = as_shape_numel(s), nb = as_shape_bytes(s);
    size_t have;

    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL)
        return ox_external(o, t, nb, 0, NULL);
    if (t->has_raw_data) {
        if ((int64_t)t->raw_data.len != nb)
            return ox_err(o, "tensor '%.100s': raw_data has %zu bytes, its shape %lld",
                          t->name != NULL ? t->name : "", t->raw_data.len, (long long)nb);
        return AS_OK;
    }
    have = t->n_float_data + t->n_int32_data + t->n_int64_data + t->n_double_data +
           t->n_uint64_data + t->n_string_data;
    if (have != 0 && (int64_t)have != n)
        return ox_err(o, "tensor '%.100s': %zu values for a shape of %lld elements",
                      t->name != NULL ? t->name : "", have, (long long)n);
    return AS_OK; /* no data at all: a shape-only tensor (weights left out) */
}

static double
ox_half(uint16_t h, int bf16)
{
    if (bf16) {
        uint32_t u = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u, 4);
        return f;
    }
    {
        int e = (h >> 10) & 0x1f, m = h & 0x3ff;
        double v = e == 0 ? ldexp(m, -24) : e == 31 ? (m ? NAN : INFINITY)
                                                    : ldexp(m + 1024, e - 25);
        return (h & 0x8000) ? -v : v;
    }
}

/* The values of T (shape S) as a constant; NULL (no error) when it holds no data or is too big. */
int
ox_tensor_const(ox *o, const Onnx__TensorProto *t, const as_shape *s, ox_const **out)
{
    int64_t n = as_shape_numel(s), k;
    const uint8_t *raw = NULL;
    uint8_t *ext = NULL;
    ox_const *c;
    int esz = as_dtype_size(s->dtype);

    *out = NULL;
    if (n > OX_MAX_FOLD)
        return AS_OK;
    AS_CHECK(ox_tensor_check(o, t, s));
    if (t->has_data_location && t->data_location == ONNX__TENSOR_PROTO__DATA_LOCATION__EXTERNAL) {
        AS_CHECK(ox_external(o, t, as_shape_bytes(s), 1, &ext));
        raw = ext;
    } else if (t->has_raw_data)
        raw = t->raw_data.data;
    c = ox_const_new(o, s);
    for (k = 0; k < n; k++) {
        if (raw != NULL) {
            const uint8_t *p = raw + k * esz;
            switch (s->dtype) {
            case AS_DT_F32: { float f; memcpy(&f, p, 4); c->f[k] = f; break; }
            case AS_DT_F64: { double d; memcpy(&d, p, 8); c->f[k] = d; break; }
            case AS_DT_F16: case AS_DT_BF16: {
                uint16_t h; memcpy(&h, p, 2); c->f[k] = ox_half(h, s->dtype == AS_DT_BF16); break; }
            case AS_DT_I8: c->i[k] = (int8_t)p[0]; break;
            case AS_DT_U8: case AS_DT_PRED: c->i[k] = p[0]; break;
            case AS_DT_I16: { int16_t v; memcpy(&v, p, 2); c->i[k] = v; break; }
            case AS_DT_U16: { uint16_t v; memcpy(&v, p, 2); c->i[k] = v; break; }
            case AS_DT_I32: { int32_t v; memcpy(&v, p, 4); c->i[k] = v; break; }
            case AS_DT_U32: { uint32_t v; memcpy(&v, p, 4); c->i[k] = v; break; }
            case AS_DT_I64: case AS_DT_U64: { int64_t v; memcpy(&v, p, 8); c->i[k] = v; break; }
            default: break;
            }
        } else if ((size_t)n == t->n_float_data && c->f != NULL)
            c->f[k] = t->float_data[k];
        else if ((size_t)n == t->n_double_data && c->f != NULL)
            c->f[k] = t->double_data[k];
        else if ((size_t)n == t->n_int64_data && c->i != NULL)
            c->i[k] = t->int64_data[k];
        else if ((size_t)n == t->n_uint64_data && c->i != NULL)
            c->i[k] = (int64_t)t->uint64_data[k];
        else if ((size_t)n == t->n_int32_data) { /* int32_data also carries 8/16-bit ints, bool, f16 */
            if (c->i != NULL)
                c->i[k] = t->int32_data[k];
            else
                c->f[k] = (s->dtype == AS_DT_F16 || s->dtype == AS_DT_BF16)
                              ? ox_half((uint16_t)t->int32_data[k], s->dtype == AS_DT_BF16)
                              : t->int32_data[k];
        } else if (n > 0) {
            free(ext);
            return AS_OK; /* no data: not a known constant */
        }
    }
    free(ext);
    *out = c;
    return AS_OK;
}

/* ---- values ---- */

/* Declared type of a ValueInfoProto into V (symbolic dims as -1); 0 if it has none usable. */
static int
ox_decl(ox *o, const Onnx__ValueInfoProto *vi, as_shape *s, const char **sym)
{
    const Onnx__TypeProto__Tensor *tt;
    size_t i;

    *sym = NULL;
    memset(s, 0, sizeof *s);
    if (vi->type == NULL || vi->type->value_case != ONNX__TYPE_PROTO__VALUE_TENSOR_TYPE)
        return 0;
    tt = vi->type->tensor_type;
    if (tt == NULL || !tt->has_elem_type || !ox_dtype(tt->elem_type, &s->dtype) ||
        tt->shape == NULL || tt->shape->n_dim > AS_MAX_RANK)
        return 0;
    s->rank = (int)tt->shape->n_dim;
    for (i = 0; i < tt->shape->n_dim; i++) {
        const Onnx__TensorShapeProto__Dimension *d = tt->shape->dim[i];
        if (d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_VALUE &&
            d->dim_value >= 0)
            s->dim[i] = d->dim_value;
        else {
            s->dim[i] = -1;
            if (*sym == NULL)
                *sym = d->value_case == ONNX__TENSOR_SHAPE_PROTO__DIMENSION__VALUE_DIM_PARAM &&
                               d->dim_param != NULL
                           ? d->dim_param
                           : "?";
        }
    }
    (void)o;
    return 1;
}

/* Declared and inferred shapes agree (symbolic dims match anything). */
static int
ox_decl_ok(const as_shape *decl, const as_shape *got)
{
    int i;

    if (decl->dtype != got->dtype || decl->rank != got->rank)
        return 0;
    for (i = 0; i < got->rank; i++)
        if (decl->dim[i] >= 0 && decl->dim[i] != got->dim[i])
            return 0;
    return 1;
}

static void
ox_decl_str(const as_shape *s, char *buf, size_t n)
{
    size_t k;
    int i;

    k = (size_t)snprintf(buf, n, "%s[", as_dtype_name(s->dtype));
    for (i = 0; i < s->rank && k < n; i++) {
        if (s->dim[i] >= 0)
            k += (size_t)snprintf(buf + k, n - k, "%s%lld", i ? "," : "", (long long)s->dim[i]);
        else
            k += (size_t)snprintf(buf + k, n - k, "%s?", i ? "," : "");
    }
    if (k < n)
        snprintf(buf + k, n - k, "]");
}

/* Declare graph input / initializer K as a tensor of its role. */
static int
ox_declare(ox *o, int k, const as_shape *s)
{
    ox_val *v = &o->vals.v[k];
    as_tensor_kind kind = v->role == OX_ROLE_PARAM   ? AS_TK_PARAM
                          : v->role == OX_ROLE_CONST ? AS_TK_CONST
                                                     : AS_TK_INPUT;
    int32_t tid;

    if (as_graph_add_tensor(o->g, ox_name(o, v->name), s, kind,
                            kind == AS_TK_INPUT && s->rank > 0 ? 0 : -1, &tid, o->err) != AS_OK) {
        as_err_prefix(o->err, "%s: '%.100s': ", o->path, v->name);
        return AS_EPARSE;
    }
    v->tid = tid;
    while (o->t2v.n <= (size_t)tid)
        AS_VEC_PUSH(&o->t2v, -1);
    o->t2v.v[tid] = k;
    return AS_OK;
}

/* The shape a graph input or initializer is declared with. */
static int
ox_val_shape(ox *o, const ox_val *v, as_shape *s)
{
    if (v->init != NULL)
        return ox_tensor_shape(o, v->init, "initializer", s);
    *s = v->decl;
    return AS_OK;
}

int
ox_scalar(ox *o, as_dtype dt, double x, int32_t *tid)
{
    as_shape s;
    char buf[64];

    memset(&s, 0, sizeof s);
    s.dtype = dt;
    snprintf(buf, sizeof buf, "const.%s", as_dtype_name(dt));
    (void)x; /* graph constants carry shapes, not values */
    if (as_graph_add_tensor(o->g, as_graph_fresh_name(o->g, buf), &s, AS_TK_CONST, -1, tid,
                            o->err) != AS_OK)
        return AS_EPARSE;
    return AS_OK;
}

/* Tensor of value K for node N (reading input J): declare or materialise it. */
static int
ox_val_tensor(ox *o, const Onnx__NodeProto *n, int k, int32_t *tid)
{
    ox_val *v = &o->vals.v[k];
    as_shape s;

    if (v->tid >= 0) {
        *tid = v->tid;
        return AS_OK;
    }
    if (v->c != NULL) { /* a folded constant read by a real op */
        int32_t t;
        if (as_graph_add_tensor(o->g, ox_name(o, v->name), &v->c->shape, AS_TK_CONST, -1, &t,
                                o->err) != AS_OK) {
            as_err_prefix(o->err, "%s: '%.100s': ", o->path, v->name);
            return AS_EPARSE;
        }
        v = &o->vals.v[k];
        v->tid = t;
        *tid = t;
        return AS_OK;
    }
    if (v->init != NULL || v->input >= 0) {
        AS_CHECK(ox_val_shape(o, v, &s));
        AS_CHECK(ox_declare(o, k, &s));
        *tid = o->vals.v[k].tid;
        return AS_OK;
    }
    if (n == NULL)
        return ox_err(o, "'%.100s' has no value", v->name);
    return ox_nerr(o, n, "input '%.100s' has no value (internal order error)", v->name);
}

int
ox_in(ox *o, const Onnx__NodeProto *n, int j, int32_t *tid)
{
    int k;

    if (!ox_has_in(n, j))
        return ox_nerr(o, n, "input %d is missing", j + 1);
    k = ox_find(o, n->input[j]);
    if (k < 0)
        return ox_nerr(o, n, "input '%.100s' is not defined", n->input[j]);
    return ox_val_tensor(o, n, k, tid);
}

/* Constant value of value K (loading a constant initializer's data on demand). */
static const ox_const *
ox_val_const(ox *o, int k)
{
    ox_val *v = &o->vals.v[k];
    as_shape s;
    ox_const *c = NULL;

    if (v->c != NULL)
        return v->c;
    if (v->init == NULL || v->role == OX_ROLE_PARAM || v->tid >= 0)
        return NULL;
    if (ox_tensor_shape(o, v->init, "initializer", &s) != AS_OK ||
        ox_tensor_const(o, v->init, &s, &c) != AS_OK)
        return NULL; /* reported when the tensor is declared */
    o->vals.v[k].c = c;
    return c;
}

const ox_const *
ox_cin(ox *o, const Onnx__NodeProto *n, int j)
{
    int k;

    if (!ox_has_in(n, j) || (k = ox_find(o, n->input[j])) < 0)
        return NULL;
    return ox_val_const(o, k);
}

int
ox_in_shape(ox *o, const Onnx__NodeProto *n, int j, as_shape *s)
{
    int k;
    const ox_val *v;

    if (!ox_has_in(n, j) || (k = ox_find(o, n->input[j])) < 0)
        return 0;
    v = &o->vals.v[k];
    if (v->tid >= 0) {
        *s = *ox_shape(o, v->tid);
        return 1;
    }
    if (v->c != NULL) {
        *s = v->c->shape;
        return 1;
    }
    if (v->init != NULL || v->input >= 0) {
        as_err e2;
        as_err *keep = o->err;
        int ok;
        o->err = &e2;
        ok = ox_val_shape(o, v, s) == AS_OK;
        o->err = keep;
        return ok;
    }
    return 0;
}

/* ---- emitting ---- */

int
ox_op(ox *o, const Onnx__NodeProto *n, const char *optype, const char *outname,
      const int32_t *in, int nin, const as_attr *attr, int nattr, int32_t *outs, int *nout)
{
    const char *nm = outname;
    int32_t opid;
    const as_op *op;
    int k;

    if (nm == NULL) {
        char buf[300];
        snprintf(buf, sizeof buf, "%s.%s", ox_name(o, n->n_output > 0 ? n->output[0] : "v"),
                 optype);
        nm = as_graph_fresh_name(o->g, buf);
    }
    if (as_graph_add_op(o->g, optype, &nm, 1, in, nin, attr, nattr, &opid, o->err) != AS_OK) {
        char msg[sizeof o->err->msg];
        snprintf(msg, sizeof msg, "%s", o->err->msg);
        return ox_nerr(o, n, "%s", msg);
    }
    op = as_graph_op(o->g, opid);
    for (k = 0; outs != NULL && k < op->nout && k < AS_MAX_OUTS; k++)
        outs[k] = op->out[k];
    if (nout != NULL)
        *nout = op->nout;
    return AS_OK;
}

int
ox_bind(ox *o, const Onnx__NodeProto *n, int k, int32_t tid)
{
    int vi;
    ox_val *v;

    if ((size_t)k >= n->n_output || n->output[k] == NULL || n->output[k][0] == '\0')
        return AS_OK; /* an optional output nobody asked for */
    vi = ox_find(o, n->output[k]);
    if (vi < 0)
        return AS_OK;
    v = &o->vals.v[vi];
    if (v->has_decl && !ox_decl_ok(&v->decl, ox_shape(o, tid))) {
        char a[200], b[200];
        ox_decl_str(&v->decl, a, sizeof a);
        as_shape_str(ox_shape(o, tid), b, sizeof b);
        return ox_nerr(o, n, "output '%.100s' is declared %s but the import gives %s",
                       n->output[k], a, b);
    }
    v->tid = tid;
    return AS_OK;
}

int
ox_bind_const(ox *o, const Onnx__NodeProto *n, int k, ox_const *c)
{
    int vi;
    ox_val *v;

    if ((size_t)k >= n->n_output || n->output[k] == NULL || n->output[k][0] == '\0')
        return AS_OK;
    vi = ox_find(o, n->output[k]);
    if (vi < 0)
        return AS_OK;
    v = &o->vals.v[vi];
    if (v->has_decl && !ox_decl_ok(&v->decl, &c->shape)) {
        char a[200], b[200];
        ox_decl_str(&v->decl, a, sizeof a);
        as_shape_str(&c->shape, b, sizeof b);
        return ox_nerr(o, n, "output '%.100s' is declared %s but folds to %s", n->output[k], a,
                       b);
    }
    v->c = c;
    return AS_OK;
}

static void
ox_count_opaque(ox *o, const char *name)
{
    size_t i;

    for (i = 0; i < o->opaque.n; i++)
        if (strcmp(o->opaque.v[i].name, name) == 0) {
            o->opaque.v[i].n++;
            return;
        }
    AS_VEC_PUSH(&o->opaque, ((ox_count){name, 1}));
}

int
ox_opaque(ox *o, const Onnx__NodeProto *n, double flops)
{
    AS_VEC(int32_t) in = {0};
    AS_VEC(int64_t) dims = {0};
    AS_VEC(char) dts = {0};
    int64_t ranks[AS_MAX_OUTS];
    int32_t outs[AS_MAX_OUTS];
    int nout = 0, j, k, d, rc = AS_OK;
    char optype[128];

    snprintf(optype, sizeof optype, "%s%s%s", n->domain != NULL && n->domain[0] ? n->domain : "",
             n->domain != NULL && n->domain[0] ? "." : "", n->op_type != NULL ? n->op_type : "?");
    for (k = 0; optype[k]; k++) /* printable in the warning line and the .asg attribute */
        if (!((optype[k] >= 'a' && optype[k] <= 'z') || (optype[k] >= 'A' && optype[k] <= 'Z') ||
              (optype[k] >= '0' && optype[k] <= '9') || strchr("_.-:", optype[k]) != NULL))
            optype[k] = '?';
    if (n->n_output > AS_MAX_OUTS)
        return ox_nerr(o, n, "more than %d outputs", AS_MAX_OUTS);
    for (j = 0; j < (int)n->n_input; j++) {
        int32_t t;
        if (!ox_has_in(n, j))
            continue;
        AS_CHECK_GOTO(rc, ox_in(o, n, j, &t), out);
        AS_VEC_PUSH(&in, t);
    }
    for (k = 0; k < (int)n->n_output; k++) {
        int vi = ox_find(o, n->output[k]);
        const ox_val *v = vi >= 0 ? &o->vals.v[vi] : NULL;
        const char *dn;
        if (v == NULL || n->output[k][0] == '\0') {
            if (k == 0)
                break;
            continue; /* an absent optional output */
        }
        if (!v->has_decl) {
            rc = ox_nerr(o, n, "unsupported op: its output '%.100s' has no declared shape "
                         "(run onnx.shape_inference.infer_shapes on the model)", n->output[k]);
            goto out;
        }
        for (d = 0; d < v->decl.rank; d++)
            if (v->decl.dim[d] < 0) {
                rc = ox_nerr(o, n, "unsupported op: its output '%.100s' has a symbolic shape",
                             n->output[k]);
                goto out;
            }
        if (dts.n)
            AS_VEC_PUSH(&dts, ',');
        for (dn = as_dtype_name(v->decl.dtype); *dn; dn++)
            AS_VEC_PUSH(&dts, *dn);
        ranks[nout++] = v->decl.rank;
        for (d = 0; d < v->decl.rank; d++)
            AS_VEC_PUSH(&dims, v->decl.dim[d]);
    }
    if (nout == 0) {
        rc = ox_nerr(o, n, "no outputs");
        goto out;
    }
    AS_VEC_PUSH(&dts, '\0');
    {
        as_attr at[6] = {AS_ATTR_S("hlo_op", optype), AS_ATTR_S("out_dtypes", dts.v),
                         AS_ATTR_V("out_ranks", nout, ranks),
                         AS_ATTR_V("out_dims", (int)dims.n, dims.v != NULL ? dims.v : ranks),
                         AS_ATTR_F("flops", flops), AS_ATTR_S("target", "onnx")};
        const char *names[AS_MAX_OUTS];
        int32_t opid;
        const as_op *op;
        for (k = 0, j = 0; k < (int)n->n_output && j < nout; k++)
            if (n->output[k][0] != '\0')
                names[j++] = ox_name(o, n->output[k]);
        if (as_graph_add_op(o->g, "opaque", names, nout, in.v, (int)in.n, at, 6, &opid,
                            o->err) != AS_OK) {
            char msg[sizeof o->err->msg];
            snprintf(msg, sizeof msg, "%s", o->err->msg);
            rc = ox_nerr(o, n, "%s", msg);
            goto out;
        }
        op = as_graph_op(o->g, opid);
        for (k = 0; k < op->nout && k < AS_MAX_OUTS; k++)
            outs[k] = op->out[k];
    }
    for (k = 0, j = 0; k < (int)n->n_output && j < nout; k++) {
        if (n->output[k][0] == '\0')
            continue;
        AS_CHECK_GOTO(rc, ox_bind(o, n, k, outs[j++]), out);
    }
    ox_count_opaque(o, as_graph_strdup(o->g, optype));
out:
    free(in.v);
    free(dims.v);
    free(dts.v);
    return rc;
}

/* ---- loading and checking the graph ---- */

static int
ox_load_values(ox *o)
{
    Onnx__GraphProto *gp = o->graph;
    size_t i, j;

    as_strmap_init(&o->names);
    for (i = 0; i < gp->n_initializer; i++) {
        const Onnx__TensorProto *t = gp->initializer[i];
        int k;
        if (t->name == NULL || t->name[0] == '\0')
            return ox_err(o, "initializer %zu has no name", i);
        k = ox_val_add(o, t->name);
        if (o->vals.v[k].init != NULL)
            return ox_err(o, "initializer '%.100s' is defined twice", t->name);
        o->vals.v[k].init = t;
    }
    for (i = 0; i < gp->n_input; i++) {
        const Onnx__ValueInfoProto *vi = gp->input[i];
        const char *sym;
        int k;
        if (vi->name == NULL || vi->name[0] == '\0')
            return ox_err(o, "graph input %zu has no name", i);
        k = ox_val_add(o, vi->name);
        if (o->vals.v[k].input >= 0)
            return ox_err(o, "graph input '%.100s' is listed twice", vi->name);
        o->vals.v[k].input = (int)i;
        if (o->vals.v[k].init != NULL)
            continue; /* an initializer listed as an input too: its value wins */
        if (!ox_decl(o, vi, &o->vals.v[k].decl, &sym))
            return ox_err(o, "graph input '%.100s' is not a tensor of a supported type and rank",
                          vi->name);
        if (sym != NULL)
            return ox_err(o, "graph input '%.100s' has a symbolic dim '%.60s': export with fixed "
                          "shapes (no dynamic_axes)", vi->name, sym);
        o->vals.v[k].has_decl = 1;
    }
    for (i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        if (n->op_type == NULL || n->op_type[0] == '\0')
            return ox_err(o, "node %zu has no op_type", i);
        for (j = 0; j < n->n_output; j++) {
            int k;
            if (n->output[j] == NULL || n->output[j][0] == '\0')
                continue;
            k = ox_val_add(o, n->output[j]);
            if (o->vals.v[k].producer >= 0)
                return ox_nerr(o, n, "output '%.100s' is also produced by node '%.100s'",
                               n->output[j], ox_node_name(gp->node[o->vals.v[k].producer]));
            if (o->vals.v[k].init != NULL || o->vals.v[k].input >= 0)
                return ox_nerr(o, n, "output '%.100s' is also a graph input or initializer",
                               n->output[j]);
            o->vals.v[k].producer = (int)i;
        }
    }
    for (i = 0; i < gp->n_node; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (j = 0; j < n->n_input; j++) {
            int k;
            if (n->input[j] == NULL || n->input[j][0] == '\0')
                continue;
            k = ox_find(o, n->input[j]);
            if (k < 0)
                return ox_nerr(o, n, "input '%.100s' is not defined (not a graph input, an "
                               "initializer or a node output)", n->input[j]);
            o->vals.v[k].nuse++;
            if (o->vals.v[k].user < 0)
                o->vals.v[k].user = (int)i;
        }
    }
    /* declared types of intermediate values and outputs */
    for (j = 0; j < 2; j++) {
        size_t cnt = j == 0 ? gp->n_value_info : gp->n_output;
        Onnx__ValueInfoProto **arr = j == 0 ? gp->value_info : gp->output;
        for (i = 0; i < cnt; i++) {
            const char *sym;
            as_shape s;
            int k = ox_find(o, arr[i]->name);
            if (k < 0) {
                if (j == 1)
                    return ox_err(o, "graph output '%.100s' is not defined",
                                  arr[i]->name != NULL ? arr[i]->name : "");
                continue;
            }
            if (j == 1)
                o->vals.v[k].nuse++;
            if (o->vals.v[k].producer >= 0 && ox_decl(o, arr[i], &s, &sym)) {
                o->vals.v[k].decl = s;
                o->vals.v[k].has_decl = 1;
            }
        }
    }
    return AS_OK;
}

/* A cycle through node START (not yet emitted): "a -> b -> a" into the error. */
static int
ox_cycle(ox *o, const char *done, int start)
{
    Onnx__GraphProto *gp = o->graph;
    int *seen = as_xcalloc(gp->n_node + 1, sizeof *seen);
    int cur = start, step = 1, first;
    char buf[360];
    size_t len = 0;
    int rc;

    /* walk to an unemitted producer until a node repeats */
    while (seen[cur] == 0) {
        const Onnx__NodeProto *n = gp->node[cur];
        size_t j;
        int next = -1;
        seen[cur] = step++;
        for (j = 0; j < n->n_input && next < 0; j++) {
            int k = ox_has_in(n, (int)j) ? ox_find(o, n->input[j]) : -1;
            if (k >= 0 && o->vals.v[k].producer >= 0 && !done[o->vals.v[k].producer])
                next = o->vals.v[k].producer;
        }
        if (next < 0)
            break;
        cur = next;
    }
    first = cur;
    /* the cycle, in data-flow order: collect backwards then print reversed */
    {
        AS_VEC(int) cyc = {0};
        int c = first;
        do {
            const Onnx__NodeProto *n = gp->node[c];
            size_t j;
            int next = -1;
            AS_VEC_PUSH(&cyc, c);
            for (j = 0; j < n->n_input && next < 0; j++) {
                int k = ox_has_in(n, (int)j) ? ox_find(o, n->input[j]) : -1;
                if (k >= 0 && o->vals.v[k].producer >= 0 && !done[o->vals.v[k].producer] &&
                    seen[o->vals.v[k].producer])
                    next = o->vals.v[k].producer;
            }
            c = next;
        } while (c >= 0 && c != first && cyc.n < gp->n_node);
        buf[0] = '\0';
        for (size_t i = cyc.n; i-- > 0 && len < sizeof buf - 80;)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%.60s -> ",
                                    ox_node_name(gp->node[cyc.v[i]]));
        snprintf(buf + len, sizeof buf - len, "%.60s", ox_node_name(gp->node[cyc.v[cyc.n - 1]]));
        free(cyc.v);
    }
    rc = ox_err(o, "cycle: %s", buf);
    free(seen);
    return rc;
}

/* Topological order of the nodes: file order when it is one, else stable (smallest index first). */
static int
ox_toposort(ox *o)
{
    Onnx__GraphProto *gp = o->graph;
    size_t nn = gp->n_node, i, j, head = 0, cnt = 0;
    char *done = as_xcalloc(nn + 1, 1);
    int *pending = as_xcalloc(nn + 1, sizeof *pending);
    int *heap = as_xmalloc(sizeof *heap * (nn + 1));
    AS_VEC(int) *users = NULL;
    int sorted = 1, rc = AS_OK;

    o->order = as_xmalloc(sizeof *o->order * (nn + 1));
    for (i = 0; i < nn && sorted; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (j = 0; j < n->n_input && sorted; j++) {
            int k = ox_has_in(n, (int)j) ? ox_find(o, n->input[j]) : -1;
            if (k >= 0 && o->vals.v[k].producer >= 0 && !done[o->vals.v[k].producer])
                sorted = 0;
        }
        done[i] = 1;
    }
    if (sorted) {
        for (i = 0; i < nn; i++)
            o->order[i] = (int)i;
        goto out;
    }
    memset(done, 0, nn + 1);
    users = as_xcalloc(nn + 1, sizeof *users);
    for (i = 0; i < nn; i++) {
        const Onnx__NodeProto *n = gp->node[i];
        for (j = 0; j < n->n_input; j++) {
            int k = ox_has_in(n, (int)j) ? ox_find(o, n->input[j]) : -1;
            if (k >= 0 && o->vals.v[k].producer >= 0) {
                pending[i]++;
                AS_VEC_PUSH(&users[o->vals.v[k].producer], (int)i);
            }
        }
    }
    /* binary min-heap of ready nodes */
#define HEAP_PUSH(x)                                                                               \
    do {                                                                                           \
        size_t c_ = head++;                                                                        \
        heap[c_] = (x);                                                                            \
        while (c_ > 0 && heap[(c_ - 1) / 2] > heap[c_]) {                                          \
            int t_ = heap[c_];                                                                     \
            heap[c_] = heap[(c_ - 1) / 2];                                                         \
            heap[(c_ - 1) / 2] = t_;                                                               \
            c_ = (c_ - 1) / 2;                                                                     \
        }                                                                                          \
    } while (0)
    for (i = 0; i < nn; i++)
        if (pending[i] == 0)
            HEAP_PUSH((int)i);
    while (head > 0) {
        int x = heap[0];
        size_t c = 0;
        heap[0] = heap[--head];
        for (;;) {
            size_t l = 2 * c + 1, r = l + 1, m = c;
            if (l < head && heap[l] < heap[m])
                m = l;
            if (r < head && heap[r] < heap[m])
                m = r;
            if (m == c)
                break;
            int t = heap[c];
            heap[c] = heap[m];
            heap[m] = t;
            c = m;
        }
        o->order[cnt++] = x;
        done[x] = 1;
        for (j = 0; j < users[x].n; j++)
            if (--pending[users[x].v[j]] == 0)
                HEAP_PUSH(users[x].v[j]);
    }
#undef HEAP_PUSH
    if (cnt < nn) {
        for (i = 0; i < nn && done[i]; i++)
            ;
        rc = ox_cycle(o, done, (int)i);
    }
out:
    if (users != NULL) {
        for (i = 0; i < nn; i++)
            free(users[i].v);
        free(users);
    }
    free(done);
    free(pending);
    free(heap);
    return rc;
}

/* ---- roles of graph inputs and initializers ---- */

/* Does input slot J of node N hold a weight (parameter)?  2: a buffer (running statistics). */
static int
ox_weight_slot(const Onnx__NodeProto *n, int j)
{
    const char *t = n->op_type;

    if (strcmp(t, "Conv") == 0 || strcmp(t, "ConvTranspose") == 0 || strcmp(t, "Gemm") == 0)
        return j >= 1;
    if (strcmp(t, "BatchNormalization") == 0)
        return j == 1 || j == 2 ? 1 : j >= 3 ? 2 : 0;
    if (strcmp(t, "LayerNormalization") == 0 || strcmp(t, "InstanceNormalization") == 0 ||
        strcmp(t, "GroupNormalization") == 0)
        return j >= 1;
    if (strcmp(t, "Gather") == 0)
        return j == 0;
    if (strcmp(t, "MatMul") == 0)
        return j == 1;
    return 0;
}

static int
ox_is_view(const char *t)
{
    return strcmp(t, "Transpose") == 0 || strcmp(t, "Reshape") == 0 || strcmp(t, "Cast") == 0 ||
           strcmp(t, "Identity") == 0 || strcmp(t, "Unsqueeze") == 0 ||
           strcmp(t, "Squeeze") == 0 || strcmp(t, "Flatten") == 0;
}

/* Is value K read in a weight slot, directly or through view ops?  (DEPTH bounds the chase.) */
static int
ox_weight_use(ox *o, int k, int depth, int **users, const int *nusers)
{
    int u, best = 0;

    if (depth > 8)
        return 0;
    for (u = 0; u < nusers[k]; u++) {
        const Onnx__NodeProto *n = o->graph->node[users[k][u]];
        size_t j;
        for (j = 0; j < n->n_input; j++) {
            int s;
            if (!ox_has_in(n, (int)j) || strcmp(n->input[j], o->vals.v[k].name) != 0)
                continue;
            s = ox_weight_slot(n, (int)j);
            if (s == 1)
                return 1;
            if (s == 2)
                best = 2;
            if (j == 0 && ox_is_view(n->op_type) && n->n_output > 0) {
                int k2 = ox_find(o, n->output[0]);
                if (k2 >= 0 && (s = ox_weight_use(o, k2, depth + 1, users, nusers)) == 1)
                    return 1;
            }
        }
    }
    return best;
}

static void
ox_roles(ox *o)
{
    Onnx__GraphProto *gp = o->graph;
    int nv = (int)o->vals.n, k;
    int *nusers = as_xcalloc((size_t)nv + 1, sizeof *nusers), *fill;
    int **users = as_xcalloc((size_t)nv + 1, sizeof *users);
    size_t i, j;

    fill = as_xcalloc((size_t)nv + 1, sizeof *fill);
    for (i = 0; i < gp->n_node; i++)
        for (j = 0; j < gp->node[i]->n_input; j++)
            if ((k = ox_has_in(gp->node[i], (int)j) ? ox_find(o, gp->node[i]->input[j]) : -1) >= 0)
                nusers[k]++;
    for (k = 0; k < nv; k++)
        users[k] = as_xmalloc(sizeof **users * (size_t)(nusers[k] + 1));
    for (i = 0; i < gp->n_node; i++)
        for (j = 0; j < gp->node[i]->n_input; j++)
            if ((k = ox_has_in(gp->node[i], (int)j) ? ox_find(o, gp->node[i]->input[j]) : -1) >= 0 &&
                (fill[k] == 0 || users[k][fill[k] - 1] != (int)i))
                users[k][fill[k]++] = (int)i;
    for (k = 0; k < nv; k++) /* distinct users only: a node reading k twice counts once */
        nusers[k] = fill[k];
    for (k = 0; k < nv; k++) {
        ox_val *v = &o->vals.v[k];
        int isf, rank, w;
        if (v->init == NULL && v->input < 0)
            continue;
        if (v->init != NULL) {
            as_dtype dt;
            isf = v->init->has_data_type && ox_dtype(v->init->data_type, &dt) &&
                  as_dtype_is_float(dt);
            rank = (int)v->init->n_dims;
        } else {
            isf = as_dtype_is_float(v->decl.dtype);
            rank = v->decl.rank;
        }
        w = isf && rank >= 1 ? ox_weight_use(o, k, 0, users, nusers) : 0;
        if (v->init != NULL)
            v->role = isf && rank >= 1 && w != 2 ? OX_ROLE_PARAM : OX_ROLE_CONST;
        else
            v->role = w == 1 ? OX_ROLE_PARAM : w == 2 ? OX_ROLE_CONST : OX_ROLE_INPUT;
    }
    for (k = 0; k < nv; k++)
        free(users[k]);
    free(users);
    free(nusers);
    free(fill);
}

/* The declared tensor T is a view of (reshape, transpose, slice, cast chains), or -1. */
static int32_t
ox_root(ox *o, int32_t t)
{
    int d;

    for (d = 0; d < 16; d++) {
        const as_tensor *x = as_graph_tensor(o->g, t);
        const as_op *op;
        const char *nm;
        if (x->producer < 0)
            return t;
        op = as_graph_op(o->g, x->producer);
        nm = op->def->name;
        if (op->nin != 1 || !(strcmp(nm, "reshape") == 0 || strcmp(nm, "transpose") == 0 ||
                              strcmp(nm, "slice") == 0 || strcmp(nm, "cast") == 0))
            return -1;
        t = op->in[0];
    }
    return -1;
}

void
ox_bias_role(ox *o, int32_t a, int32_t b)
{
    int32_t t[2] = {a, b}, r[2];
    int j;

    r[0] = ox_root(o, a);
    r[1] = ox_root(o, b);
    for (j = 0; j < 2; j++) {
        const as_shape *sj = ox_shape(o, t[j]), *so = ox_shape(o, t[1 - j]);
        int k;
        if (r[j] < 0 || r[1 - j] >= 0 || (size_t)r[j] >= o->t2v.n || (k = o->t2v.v[r[j]]) < 0)
            continue;
        if (o->vals.v[k].role == OX_ROLE_INPUT && o->vals.v[k].init == NULL &&
            as_dtype_is_float(sj->dtype) && sj->rank >= 1 && sj->rank < so->rank) {
            o->vals.v[k].role = OX_ROLE_PARAM;
            o->redo = 1;
        }
    }
}

/* ---- the driver ---- */

static void
ox_warn_opaque(ox *o)
{
    char buf[1024];
    size_t i, j, len = 0;
    int total = 0;

    for (i = 1; i < o->opaque.n; i++)
        for (j = i; j > 0; j--) {
            ox_count *a = &o->opaque.v[j - 1], *b = &o->opaque.v[j];
            if (a->n > b->n || (a->n == b->n && strcmp(a->name, b->name) <= 0))
                break;
            ox_count t = *a;
            *a = *b;
            *b = t;
        }
    buf[0] = '\0';
    for (i = 0; i < o->opaque.n; i++) {
        total += o->opaque.v[i].n;
        if (len < sizeof buf - 64)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s (%d)", i ? ", " : "",
                                    o->opaque.v[i].name, o->opaque.v[i].n);
    }
    if (total > 0)
        as_warn("%s: %d unsupported ONNX op%s kept as opaque: %s", o->path, total,
                total == 1 ? "" : "s", buf);
}

static int
ox_opset(ox *o)
{
    size_t i;

    o->opset = 1;
    for (i = 0; i < o->model->n_opset_import; i++) {
        const Onnx__OperatorSetIdProto *p = o->model->opset_import[i];
        if ((p->domain == NULL || p->domain[0] == '\0' || strcmp(p->domain, "ai.onnx") == 0) &&
            p->has_version)
            o->opset = p->version;
    }
    if (o->model->n_opset_import == 0)
        return ox_err(o, "no opset_import: not an ONNX model");
    return AS_OK;
}

/* Values, order, roles; initializer shapes and data checked up front (missing external data). */
static int
ox_prepare(ox *o)
{
    Onnx__GraphProto *gp = o->graph;
    size_t i;

    AS_CHECK(ox_load_values(o));
    AS_CHECK(ox_toposort(o));
    ox_roles(o);
    for (i = 0; i < gp->n_initializer; i++) {
        as_shape s;
        AS_CHECK(ox_tensor_shape(o, gp->initializer[i], "initializer", &s));
        AS_CHECK(ox_tensor_check(o, gp->initializer[i], &s));
    }
    return AS_OK;
}

/* Emit the whole graph into o->g (a fresh graph). */
static int
ox_build(ox *o)
{
    Onnx__GraphProto *gp = o->graph;
    size_t i;
    int k;

    for (i = 0; i < o->vals.n; i++) {
        o->vals.v[i].tid = -1;
        o->vals.v[i].c = NULL;
        o->vals.v[i].tr = 0;
    }
    o->t2v.n = 0;
    o->opaque.n = 0;
    o->redo = 0;
    o->skip = as_arena_calloc(o->arena, gp->n_node + 1, 1);
    /* Constant nodes first, so patterns see their values wherever the file puts them */
    for (i = 0; i < gp->n_node; i++) {
        int done = 0;
        if (strcmp(gp->node[i]->op_type, "Constant") != 0 || gp->node[i]->n_input != 0 ||
            (gp->node[i]->domain != NULL && gp->node[i]->domain[0] != '\0'))
            continue;
        AS_CHECK(ox_fold(o, gp->node[i], &done));
        o->skip[i] = 1;
    }
    for (i = 0; i < gp->n_node; i++) {
        int ni = o->order[i], done = 0;
        const Onnx__NodeProto *n = gp->node[ni];
        if (o->skip[ni])
            continue;
        o->cur = ni;
        AS_CHECK(ox_fold(o, n, &done));
        if (!done)
            AS_CHECK(ox_emit(o, ni, n));
    }
    /* data inputs nobody read still belong to the graph */
    for (i = 0; i < gp->n_input; i++) {
        int32_t t;
        k = ox_find(o, gp->input[i]->name);
        if (k >= 0 && o->vals.v[k].tid < 0 && o->vals.v[k].init == NULL &&
            o->vals.v[k].role == OX_ROLE_INPUT)
            AS_CHECK(ox_val_tensor(o, NULL, k, &t));
    }
    for (i = 0; i < gp->n_output; i++) {
        int32_t t;
        Onnx__NodeProto dummy = ONNX__NODE_PROTO__INIT;
        k = ox_find(o, gp->output[i]->name);
        dummy.op_type = (char *)"output";
        dummy.name = gp->output[i]->name;
        AS_CHECK(ox_val_tensor(o, &dummy, k, &t));
        as_graph_mark_output(o->g, t);
    }
    if (as_graph_nops(o->g) == 0)
        return ox_err(o, "the graph has no ops after import (only constants)");
    return AS_OK;
}

int
as_onnx_read(const char *path, const char *text, size_t len, as_graph **out, as_err *err)
{
    ox o;
    wire w;
    int rc, pass;
    const char *gname;
    char gname_s[256];

    memset(&o, 0, sizeof o);
    o.path = path;
    o.err = err;
    memset(&w, 0, sizeof w);
    w.o = &o;
    w.buf = (const uint8_t *)text;
    w.len = len;
    AS_CHECK(wire_walk(&w, 0, len, &onnx__model_proto__descriptor, 0));
    o.model = onnx__model_proto__unpack(&ox_pb_allocator, len, (const uint8_t *)text);
    if (o.model == NULL)
        return as_errf(err, AS_EPARSE, "%s: malformed ONNX protobuf (protobuf-c rejects it)",
                       path);
    AS_CHECK_GOTO(rc, ox_opset(&o), out);
    o.graph = o.model->graph;
    if (o.graph == NULL) {
        rc = ox_err(&o, "the model has no graph");
        goto out;
    }
    gname = o.graph->name != NULL && o.graph->name[0] ? o.graph->name : "onnx";
    o.arena = as_arena_new();
    ox_sanitize(gname, gname_s, sizeof gname_s);
    o.g = as_graph_new(gname_s);
    AS_CHECK_GOTO(rc, ox_prepare(&o), out);
    for (pass = 0; pass < 4; pass++) { /* again while roles change (at most a few times) */
        rc = ox_build(&o);
        if (rc != AS_OK || !o.redo)
            break;
        as_graph_free(o.g);
        o.g = as_graph_new(gname_s);
    }
    if (rc == AS_OK) {
        ox_warn_opaque(&o);
        *out = o.g;
        o.g = NULL;
    }
out:
    as_graph_free(o.g);
    if (o.arena != NULL)
        as_arena_free(o.arena);
    if (o.names.keys != NULL)
        as_strmap_destroy(&o.names);
    free(o.vals.v);
    free(o.order);
    free(o.opaque.v);
    free(o.t2v.v);
    onnx__model_proto__free_unpacked(o.model, &ox_pb_allocator);
    return rc;
}
