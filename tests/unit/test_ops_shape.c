/* test_ops_shape.c -- the shape op family (src/graph/ops_shape.c): shape
 * inference and its error messages, hand-computed kernel values, the
 * gradient rules against finite differences, and split's zeros for outputs
 * without a gradient.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "gradcheck.h"
#include "graph/ops_internal.h"
#include "tap.h"

#define F32(...) mkshape(AS_DT_F32, __VA_ARGS__)
#define NA(a) ((int)(sizeof(a) / sizeof((a)[0])))

/* Values 0, 1, 2, ... */
static void
fill_seq(double *v, int n)
{
    int i;

    for (i = 0; i < n; i++)
        v[i] = i;
}

/* Do OUT[0..n) and WANT[0..n) agree exactly? */
static int
same(const double *out, const double *want, int n)
{
    int i;

    for (i = 0; i < n; i++)
        if (out[i] != want[i]) {
            diag("  element %d: got %g, want %g", i, out[i], want[i]);
            return 0;
        }
    return 1;
}

/* Infer OPTYPE on SHAPES through a graph; returns the error message or "" on success. */
static const char *
infer_msg(const char *optype, const as_shape *shapes, int nin, const as_attr *attr, int nattr,
          as_shape *out)
{
    static as_err err;
    as_graph *g = as_graph_new("t");
    int32_t ids[8], op;
    char name[16];
    int j, rc = AS_OK;

    as_err_clear(&err);
    for (j = 0; j < nin && rc == AS_OK; j++) {
        snprintf(name, sizeof name, "x%d", j);
        rc = as_graph_add_tensor(g, name, &shapes[j], AS_TK_INPUT, -1, &ids[j], &err);
    }
    if (rc == AS_OK)
        rc = as_graph_add_op(g, optype, NULL, 0, ids, nin, attr, nattr, &op, &err);
    if (rc == AS_OK && out != NULL)
        *out = as_graph_tensor(g, as_graph_op(g, op)->out[0])->shape;
    as_graph_free(g);
    return rc == AS_OK ? "" : err.msg;
}

/* Shape string of S (static buffer per call site use). */
static const char *
sstr(const as_shape *s)
{
    static char buf[4][128];
    static int k;

    k = (k + 1) % 4;
    return as_shape_str(s, buf[k], sizeof buf[k]);
}

static void
test_transpose(void)
{
    as_shape x = F32(2, 2, 3), o;
    double in[6] = {0, 1, 2, 3, 4, 5}, out[6], want[6] = {0, 3, 1, 4, 2, 5};
    const double *ins[1] = {in};
    int64_t perm[2] = {1, 0}, bad[2] = {0, 0}, p4[4] = {0, 2, 3, 1};
    as_attr a = AS_ATTR_V("perm", 2, perm);
    as_err err;

    ok(run_kernel("transpose", &x, 1, ins, &a, 1, out, &o, &err) == AS_OK, "transpose runs");
    is_str(sstr(&o), "f32[3,2]", "transpose of 2x3 is 3x2");
    ok(same(out, want, 6), "transpose of a 2x3 by hand");
    a = AS_ATTR_V("perm", 2, bad);
    is_str(infer_msg("transpose", &x, 1, &a, 1, NULL),
           "transpose: perm [0,0] is not a permutation of 2 dims", "repeated perm entry rejected");
    a = AS_ATTR_V("perm", 4, p4);
    x = F32(4, 2, 3, 4, 5);
    is_str(infer_msg("transpose", &x, 1, &a, 1, &o), "", "rank-4 transpose infers");
    is_str(sstr(&o), "f32[2,4,5,3]", "rank-4 transpose shape");
    a = AS_ATTR_V("perm", 2, perm);
    ok(strstr(infer_msg("transpose", &x, 1, &a, 1, NULL), "not a permutation of 4 dims") != NULL,
       "perm of the wrong length rejected");
}

static void
test_reshape(void)
{
    as_shape x = F32(2, 6, 4), o;
    double in[24], out[24];
    const double *ins[1] = {in};
    int64_t s1[2] = {-1, 8}, s2[2] = {5, 5}, s3[3] = {-1, 2, -1}, s4[2] = {-1, 5};
    as_attr a = AS_ATTR_V("shape", 2, s1);
    as_err err;

    fill_seq(in, 24);
    ok(run_kernel("reshape", &x, 1, ins, &a, 1, out, &o, &err) == AS_OK, "reshape runs");
    is_str(sstr(&o), "f32[3,8]", "reshape [-1,8] of 6x4 is 3x8");
    ok(same(out, in, 24), "reshape keeps the row-major data");
    a = AS_ATTR_V("shape", 2, s2);
    is_str(infer_msg("reshape", &x, 1, &a, 1, NULL),
           "reshape: cannot reshape f32[6,4] (24 elements) to [5,5]", "element count mismatch");
    a = AS_ATTR_V("shape", 3, s3);
    ok(strstr(infer_msg("reshape", &x, 1, &a, 1, NULL), "at most one -1") != NULL,
       "two -1 entries rejected");
    a = AS_ATTR_V("shape", 2, s4);
    ok(strstr(infer_msg("reshape", &x, 1, &a, 1, NULL), "cannot reshape") != NULL,
       "-1 that does not divide rejected");
}

static void
test_broadcast(void)
{
    as_shape x = F32(1, 3), y = F32(2, 2, 1), o;
    double in[3] = {1, 2, 3}, out[6];
    double want_np[6] = {1, 2, 3, 1, 2, 3}, want_hlo[6] = {1, 1, 2, 2, 3, 3};
    double want_col[6] = {1, 1, 1, 2, 2, 2};
    const double *ins[1] = {in};
    int64_t s23[2] = {2, 3}, s32[2] = {3, 2}, d0[1] = {0}, bad[2] = {4, 3};
    as_attr a[2] = {AS_ATTR_V("shape", 2, s23), AS_ATTR_V("dims", 0, NULL)};
    as_err err;

    ok(run_kernel("broadcast", &x, 1, ins, a, 1, out, &o, &err) == AS_OK &&
           same(out, want_np, 6), "numpy broadcast [3] -> [2,3] repeats rows");
    ok(run_kernel("broadcast", &y, 1, ins, a, 1, out, &o, &err) == AS_OK &&
           same(out, want_col, 6), "numpy broadcast [2,1] -> [2,3] stretches the 1");
    a[0] = AS_ATTR_V("shape", 2, s32);
    a[1] = AS_ATTR_V("dims", 1, d0);
    ok(run_kernel("broadcast", &x, 1, ins, a, 2, out, &o, &err) == AS_OK &&
           same(out, want_hlo, 6), "HLO broadcast [3] dims=[0] -> [3,2]");
    is_str(sstr(&o), "f32[3,2]", "HLO broadcast shape");
    a[0] = AS_ATTR_V("shape", 2, bad);
    ok(strstr(infer_msg("broadcast", &x, 1, a, 2, NULL), "cannot broadcast f32[3] to [4,3]") !=
           NULL, "HLO dims mapping a mismatched dim rejected");
    a[1] = AS_ATTR_V("dims", 0, NULL);
    a[0] = AS_ATTR_V("shape", 2, s32);
    ok(strstr(infer_msg("broadcast", &x, 1, a, 2, NULL), "cannot broadcast") != NULL,
       "numpy alignment mismatch rejected");
}

static void
test_concat(void)
{
    as_shape s[3] = {F32(2, 2, 1), F32(2, 2, 2), F32(2, 2, 1)}, o, bad[2];
    double a[2] = {1, 2}, b[4] = {3, 4, 5, 6}, c[2] = {7, 8}, out[8];
    double want[8] = {1, 3, 4, 7, 2, 5, 6, 8};
    const double *ins[3] = {a, b, c};
    as_attr ax = AS_ATTR_I("axis", -1);
    as_err err;

    ok(run_kernel("concat", s, 3, ins, &ax, 1, out, &o, &err) == AS_OK, "concat of 3 runs");
    is_str(sstr(&o), "f32[2,4]", "concat shape along the last axis");
    ok(same(out, want, 8), "concat values by hand");
    bad[0] = F32(2, 2, 1);
    bad[1] = F32(2, 3, 1);
    ok(strstr(infer_msg("concat", bad, 2, &ax, 1, NULL), "does not match input 0") != NULL,
       "concat with a mismatched dim rejected");
    is_str(infer_msg("concat", s, 1, &ax, 1, &o), "", "concat of one input is allowed");
}

/* Run split on X with ATTR and return the number of outputs; outputs in OUT[k]. */
static int
run_split(const as_shape *x, const double *in, const as_attr *attr, int nattr, double **out,
          as_shape *outs, as_err *err)
{
    const as_op_def *def = as_registry_find("split", (size_t)-1);
    as_arena *arena = as_arena_new();
    as_attr *bound;
    int nb, nout = -1;
    as_opinfo info;
    const double *ins[1] = {in};

    if (as_registry_bind_attrs(def, attr, nattr, arena, &bound, &nb, err) == AS_OK &&
        as_op_infer(def, x, 1, bound, nb, outs, &nout, err) == AS_OK) {
        info.def = def;
        info.nin = 1;
        info.in = x;
        info.nout = nout;
        info.out = outs;
        info.nattr = nb;
        info.attr = bound;
        def->kernel(&info, ins, out);
    }
    as_arena_free(arena);
    return nout;
}

static void
test_split(void)
{
    as_shape x = F32(2, 2, 3), outs[AS_MAX_OUTS];
    double in[6] = {0, 1, 2, 3, 4, 5}, o0[6], o1[6], o2[6], *out[3] = {o0, o1, o2};
    double w0[2] = {0, 3}, w1[4] = {1, 2, 4, 5}, p1[2] = {1, 4};
    int64_t sizes[2] = {1, 2}, badsz[2] = {1, 1};
    as_attr a[3] = {AS_ATTR_I("axis", 1), AS_ATTR_V("sizes", 2, sizes), AS_ATTR_I("parts", 3)};
    as_err err;

    is_int(run_split(&x, in, a, 2, out, outs, &err), 2, "split sizes [1,2] gives 2 outputs");
    ok(!strcmp(sstr(&outs[0]), "f32[2,1]") && !strcmp(sstr(&outs[1]), "f32[2,2]"),
       "split sizes shapes %s %s", sstr(&outs[0]), sstr(&outs[1]));
    ok(same(o0, w0, 2) && same(o1, w1, 4), "split sizes values by hand");
    a[1] = a[2];
    is_int(run_split(&x, in, a, 2, out, outs, &err), 3, "split parts=3 gives 3 outputs");
    ok(same(o1, p1, 2), "split parts middle output by hand");
    a[1] = AS_ATTR_V("sizes", 2, sizes);
    ok(strstr(infer_msg("split", &x, 1, a, 3, NULL), "exactly one of sizes") != NULL,
       "split with both sizes and parts rejected");
    ok(strstr(infer_msg("split", &x, 1, a, 1, NULL), "exactly one of sizes") != NULL,
       "split with neither sizes nor parts rejected");
    a[1] = AS_ATTR_V("sizes", 2, badsz);
    is_str(infer_msg("split", &x, 1, a, 2, NULL),
           "split: sizes [1,1] sum to 2 but dim 1 of f32[2,3] is 3", "sizes must sum to the dim");
    a[1] = AS_ATTR_I("parts", 2);
    is_str(infer_msg("split", &x, 1, a, 2, NULL),
           "split: 2 parts do not divide dim 1 (3) of f32[2,3]", "parts must divide the dim");
}

static void
test_slice_pad(void)
{
    as_shape x = F32(1, 10), m = F32(2, 3, 4), o;
    double in[12], out[30], w1[3] = {1, 4, 7}, w2[4] = {5, 7, 9, 11};
    double small[4] = {1, 2, 3, 4}, wpad[9] = {9, 9, 9, 1, 2, 9, 3, 4, 9};
    double wsg[10] = {0, 1, 0, 0, 2, 0, 0, 3, 0, 0};
    const double *ins[1] = {in};
    int64_t b1[1] = {1}, e1[1] = {8}, s1[1] = {3}, b2[2] = {1, 1}, e2[2] = {3, 4}, s2[2] = {1, 2};
    int64_t lo[2] = {1, 0}, hi[2] = {0, 1}, shp[1] = {10}, e9[1] = {11};
    as_attr a[4] = {AS_ATTR_V("begin", 1, b1), AS_ATTR_V("end", 1, e1),
                    AS_ATTR_V("strides", 1, s1)};
    as_shape sq = F32(2, 2, 2), three = F32(1, 3);
    as_err err;

    fill_seq(in, 12);
    ok(run_kernel("slice", &x, 1, ins, a, 3, out, &o, &err) == AS_OK && same(out, w1, 3),
       "strided slice [1:8:3] of 0..9 is 1 4 7");
    is_str(sstr(&o), "f32[3]", "strided slice shape is ceil(7/3)");
    a[0] = AS_ATTR_V("begin", 2, b2);
    a[1] = AS_ATTR_V("end", 2, e2);
    a[2] = AS_ATTR_V("strides", 2, s2);
    ok(run_kernel("slice", &m, 1, ins, a, 3, out, &o, &err) == AS_OK && same(out, w2, 4),
       "2-D slice [1:3, 1:4:2] by hand");
    a[1] = AS_ATTR_V("end", 1, e9);
    a[0] = AS_ATTR_V("begin", 1, b1);
    ok(strstr(infer_msg("slice", &x, 1, a, 2, NULL), "end (11) <= 10") != NULL,
       "slice past the end rejected");
    a[0] = AS_ATTR_V("lo", 2, lo);
    a[1] = AS_ATTR_V("hi", 2, hi);
    a[2] = AS_ATTR_F("value", 9.0);
    ins[0] = small;
    ok(run_kernel("pad", &sq, 1, ins, a, 3, out, &o, &err) == AS_OK && same(out, wpad, 9),
       "pad lo [1,0] hi [0,1] with 9 by hand");
    is_str(sstr(&o), "f32[3,3]", "pad shape");
    a[0] = AS_ATTR_V("lo", 1, lo);
    ok(strstr(infer_msg("pad", &sq, 1, a, 2, NULL), "need 2 entries") != NULL,
       "pad with too few entries rejected");
    a[0] = AS_ATTR_V("input_shape", 1, shp);
    a[1] = AS_ATTR_V("begin", 1, b1);
    a[2] = AS_ATTR_V("end", 1, e1);
    a[3] = AS_ATTR_V("strides", 1, s1);
    ok(run_kernel("slice_grad", &three, 1, ins, a, 4, out, &o, &err) == AS_OK &&
           same(out, wsg, 10), "slice_grad scatters dy into zeros");
    ok(strstr(infer_msg("slice_grad", &sq, 1, a, 4, NULL), "dy is f32[2,2]") != NULL,
       "slice_grad with a mismatched dy rejected");
}

static void
test_zeros_iota_identity(void)
{
    as_shape o, x = F32(1, 3);
    double out[6] = {5, 5, 5, 5, 5, 5}, zero[6] = {0}, wi[6] = {0, 1, 2, 0, 1, 2};
    double in[3] = {4, 5, 6};
    const double *ins[1] = {in};
    int64_t shp[2] = {2, 3};
    as_attr a[3] = {AS_ATTR_V("shape", 2, shp), AS_ATTR_S("dtype", "bf16"), AS_ATTR_I("dim", -1)};
    as_err err;

    ok(run_kernel("zeros", NULL, 0, NULL, a, 2, out, &o, &err) == AS_OK && same(out, zero, 6),
       "zeros fills zeros");
    is_str(sstr(&o), "bf16[2,3]", "zeros shape and dtype");
    a[1] = a[2];
    ok(run_kernel("iota", NULL, 0, NULL, a, 2, out, &o, &err) == AS_OK && same(out, wi, 6),
       "iota along the last dim");
    is_str(sstr(&o), "i32[2,3]", "iota defaults to i32");
    a[1] = AS_ATTR_I("dim", 2);
    ok(strstr(infer_msg("iota", NULL, 0, a, 2, NULL), "dim 2 out of range") != NULL,
       "iota dim out of range rejected");
    a[1] = AS_ATTR_S("dtype", "f31");
    ok(strstr(infer_msg("zeros", NULL, 0, a, 2, NULL), "unknown dtype 'f31'") != NULL,
       "zeros with an unknown dtype rejected");
    ok(run_kernel("identity", &x, 1, ins, NULL, 0, out, &o, &err) == AS_OK && same(out, in, 3),
       "identity copies");
}

static void
test_flags_costs(void)
{
    const as_op_def *r = as_registry_find("reshape", (size_t)-1);
    const as_op_def *t = as_registry_find("transpose", (size_t)-1);
    const as_op_def *c = as_registry_find("concat", (size_t)-1);
    as_shape x = F32(2, 4, 8), y = F32(2, 8, 4);
    int64_t perm[2] = {1, 0};
    as_attr a = AS_ATTR_V("perm", 2, perm);
    as_opinfo info = {t, 1, &x, 1, &y, 1, &a};
    as_err err;

    ok(r != NULL && (r->flags & AS_OPF_FOLLOW) && (r->flags & AS_OPF_RESHAPE),
       "reshape is follow + reshape");
    ok(t != NULL && (t->flags & AS_OPF_FOLLOW) && !(t->flags & AS_OPF_RESHAPE),
       "transpose is follow");
    ok(c != NULL && (c->flags & AS_OPF_VARIADIC) && c->min_in == 1, "concat is variadic, >= 1");
    is_double(as_op_flops(&info), 0.0, 0.0, "transpose costs no FLOPs");
    is_double(as_op_bytes(&info), 256.0, 0.0, "transpose moves input + output bytes");
    ok(as_registry_selfcheck(&err) == AS_OK, "registry selfcheck: %s", err.msg);
}

/* Gradient checks of every differentiable shape op. */
static void
test_gradcheck(void)
{
    int64_t p4[4] = {2, 0, 3, 1}, rs[2] = {-1, 6}, s23[2] = {2, 3}, s243[3] = {2, 4, 3};
    int64_t d02[2] = {0, 2}, s2342[4] = {2, 4, 3, 2}, d13[2] = {1, 3};
    int64_t b[3] = {0, 1, 1}, e[3] = {2, 5, 4}, st[3] = {1, 2, 2}, bc[2] = {1, 0}, ec[2] = {3, 2};
    int64_t lo[3] = {1, 0, 2}, hi[3] = {0, 2, 1}, sz[3] = {1, 3, 1}, ish[3] = {2, 5, 4};
    as_shape x4 = F32(4, 2, 3, 2, 2), x3 = F32(3, 2, 5, 4), x1 = F32(1, 3), x0 = F32(0);
    as_shape c3[3] = {F32(3, 2, 1, 3), F32(3, 2, 2, 3), F32(3, 2, 3, 3)}, x2 = F32(2, 4, 3);
    as_shape xs21 = F32(2, 4, 1), dy = F32(3, 2, 2, 2);
    as_attr a[4];
    double err;

    a[0] = AS_ATTR_V("perm", 4, p4);
    err = gradcheck("transpose", &x4, 1, a, 1, 0, 1);
    ok(err >= 0 && err < 1e-6, "gradcheck transpose rank 4 (err %.3g)", err);
    a[0] = AS_ATTR_V("shape", 2, rs);
    err = gradcheck("reshape", &x4, 1, a, 1, 0, 2);
    ok(err >= 0 && err < 1e-6, "gradcheck reshape (err %.3g)", err);
    a[0] = AS_ATTR_V("shape", 3, s243);
    err = gradcheck("broadcast", &x1, 1, a, 1, 0, 3);
    ok(err >= 0 && err < 1e-6, "gradcheck broadcast numpy [3] -> [2,4,3] (err %.3g)", err);
    err = gradcheck("broadcast", &xs21, 1, a, 1, 0, 4);
    ok(err >= 0 && err < 1e-6, "gradcheck broadcast numpy [4,1] -> [2,4,3] (err %.3g)", err);
    a[0] = AS_ATTR_V("shape", 2, s23);
    err = gradcheck("broadcast", &x0, 1, a, 1, 0, 5);
    ok(err >= 0 && err < 1e-6, "gradcheck broadcast scalar -> [2,3] (err %.3g)", err);
    a[0] = AS_ATTR_V("shape", 4, s2342);
    a[1] = AS_ATTR_V("dims", 2, d13);
    err = gradcheck("broadcast", &xs21, 1, a, 2, 0, 6);
    ok(err >= 0 && err < 1e-6, "gradcheck broadcast HLO [4,1] dims [1,3] (err %.3g)", err);
    a[1] = AS_ATTR_V("dims", 2, d02);
    a[0] = AS_ATTR_V("shape", 3, s243);
    ok(strstr(infer_msg("broadcast", &xs21, 1, a, 2, NULL), "dim 0 is 4, output dim 0 is 2") !=
           NULL, "broadcast [4,1] dims [0,2] to [2,4,3] is rejected");
    a[0] = AS_ATTR_I("axis", 1);
    err = gradcheck("concat", c3, 3, a, 1, 0, 8);
    ok(err >= 0 && err < 1e-6, "gradcheck concat of 3 inputs (err %.3g)", err);
    a[1] = AS_ATTR_I("parts", 3);
    a[0] = AS_ATTR_I("axis", -1);
    err = gradcheck("split", &x2, 1, a, 2, 0, 9);
    ok(err >= 0 && err < 1e-6, "gradcheck split into 3 parts (err %.3g)", err);
    a[0] = AS_ATTR_I("axis", 1);
    a[1] = AS_ATTR_V("sizes", 3, sz);
    err = gradcheck("split", &x3, 1, a, 2, 0, 10);
    ok(err >= 0 && err < 1e-6, "gradcheck split sizes [1,3,1] (err %.3g)", err);
    a[0] = AS_ATTR_V("begin", 3, b);
    a[1] = AS_ATTR_V("end", 3, e);
    a[2] = AS_ATTR_V("strides", 3, st);
    err = gradcheck("slice", &x3, 1, a, 3, 0, 11);
    ok(err >= 0 && err < 1e-6, "gradcheck strided slice (err %.3g)", err);
    a[0] = AS_ATTR_V("begin", 2, bc);
    a[1] = AS_ATTR_V("end", 2, ec);
    err = gradcheck("slice", &x2, 1, a, 2, 0, 12);
    ok(err >= 0 && err < 1e-6, "gradcheck contiguous slice (err %.3g)", err);
    a[0] = AS_ATTR_V("lo", 3, lo);
    a[1] = AS_ATTR_V("hi", 3, hi);
    a[2] = AS_ATTR_F("value", 0.5);
    err = gradcheck("pad", &x3, 1, a, 3, 0, 13);
    ok(err >= 0 && err < 1e-6, "gradcheck pad (err %.3g)", err);
    err = gradcheck("identity", &x3, 1, NULL, 0, 0, 14);
    ok(err >= 0 && err < 1e-6, "gradcheck identity (err %.3g)", err);
    a[0] = AS_ATTR_V("input_shape", 3, ish);
    a[1] = AS_ATTR_V("begin", 3, b);
    a[2] = AS_ATTR_V("end", 3, e);
    a[3] = AS_ATTR_V("strides", 3, st);
    err = gradcheck("slice_grad", &dy, 1, a, 4, 0, 15);
    ok(err >= 0 && err < 1e-6, "gradcheck slice_grad (err %.3g)", err);
}

/* split where only the middle output is used: the others' gradients are zeros. */
static void
test_split_zeros(void)
{
    as_graph *g = as_graph_new("split");
    as_shape x = F32(2, 2, 3), r = F32(2, 2, 1);
    int32_t xid, rid, op, y, *grad_of = NULL;
    double **vals = NULL, want[6] = {0, 10, 0, 0, 11, 0};
    as_attr a[2] = {AS_ATTR_I("axis", 1), AS_ATTR_I("parts", 3)};
    int zeros = 0, i, nt;
    as_err err;

    ok(as_graph_add_tensor(g, "x", &x, AS_TK_PARAM, -1, &xid, &err) == AS_OK &&
           as_graph_add_op(g, "split", NULL, 0, &xid, 1, a, 2, &op, &err) == AS_OK &&
           as_graph_add_tensor(g, "r", &r, AS_TK_CONST, -1, &rid, &err) == AS_OK,
       "split graph builds");
    y = as_graph_op(g, op)->out[1];
    grad_of = as_xmalloc((size_t)as_graph_ntensors(g) * sizeof *grad_of);
    ok(as_grad_backward(g, 1, &y, &rid, grad_of, &err) == AS_OK, "split backward: %s", err.msg);
    for (i = 0; i < as_graph_nops(g); i++)
        zeros += strcmp(as_graph_op(g, i)->def->name, "zeros") == 0;
    is_int(zeros, 2, "two zeros ops stand in for the unused outputs");
    nt = as_graph_ntensors(g);
    vals = as_xcalloc((size_t)nt, sizeof *vals);
    for (i = 0; i < nt; i++)
        vals[i] = as_xcalloc((size_t)as_shape_numel(&as_graph_tensor(g, i)->shape) + 1,
                             sizeof(double));
    vals[rid][0] = 10;
    vals[rid][1] = 11;
    ok(as_graph_eval(g, vals, &err) == AS_OK && grad_of[xid] >= 0 &&
           same(vals[grad_of[xid]], want, 6), "split gradient is dy in the middle, 0 elsewhere");
    for (i = 0; i < nt; i++)
        free(vals[i]);
    free(vals);
    free(grad_of);
    as_graph_free(g);
}

int
main(void)
{
    plan_lazy();
    test_transpose();
    test_reshape();
    test_broadcast();
    test_concat();
    test_split();
    test_slice_pad();
    test_zeros_iota_identity();
    test_flags_costs();
    test_gradcheck();
    test_split_zeros();
    return done_testing();
}
