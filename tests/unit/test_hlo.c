/* test_hlo.c -- unit tests of the HLO importer (reader_hlo.c, hlo_parse.c)
 * and of the HLO-only ops (ops_hlo.c): mapping, names, parameters and
 * updates, shape checks, error positions, and the reference kernels.
 */
#include "config.h"

#include <string.h>

#include "graph/reader_hlo.h"
#include "graph/registry.h"
#include "tap.h"

static const char *const mlp =
    "HloModule m, input_output_alias={ {0}: (1, {}, may-alias) }\n"
    "\n"
    "%sum (a: f32[], b: f32[]) -> f32[] {\n"
    "  %a = f32[] parameter(0)\n"
    "  %b = f32[] parameter(1)\n"
    "  ROOT %s = f32[] add(%a, %b)\n"
    "}\n"
    "\n"
    "ENTRY %main (x: f32[4,8], w: f32[8,2]) -> (f32[8,2], f32[]) {\n"
    "  %x = f32[4,8]{1,0} parameter(0)\n"
    "  %w = f32[8,2]{1,0} parameter(1), metadata={op_name=\"a{b}, c\"}\n"
    "  %d = f32[4,2]{1,0} dot(f32[4,8]{1,0} %x, /*index=1*/f32[8,2]{1,0} %w), "
    "lhs_contracting_dims={1}, rhs_contracting_dims={0}\n"
    "  %z = f32[] constant(0)\n"
    "  %l = f32[] reduce(%d, %z), dimensions={0,1}, to_apply=%sum\n"
    "  %neg = f32[8,2]{1,0} negate(w)\n"
    "  ROOT %t = (f32[8,2]{1,0}, f32[]) tuple(%neg, %l)\n"
    "}\n";

static int
read_err(const char *text, as_err *err)
{
    as_graph *g = NULL;
    int rc = as_hlo_read("t.hlo", text, strlen(text), &g, err);

    as_graph_free(g);
    return rc;
}

static void
test_import(void)
{
    as_graph *g = NULL;
    as_err err;
    int32_t w, neg;

    ok(as_hlo_detect(mlp, strlen(mlp)), "detects HloModule text");
    ok(!as_hlo_detect("graph g\n", 8), "does not detect .asg text");
    is_int(as_hlo_read("t.hlo", mlp, strlen(mlp), &g, &err), AS_OK, "reads a small module");
    if (g == NULL) {
        diag("%s", err.msg);
        return;
    }
    is_int(as_graph_nops(g), 3, "dot, reduce and negate become 3 ops");
    is_str(as_graph_op(g, 0)->def->name, "matmul", "dot -> matmul");
    is_str(as_graph_op(g, 1)->def->name, "reduce_sum", "reduce(add) -> reduce_sum");
    w = as_graph_find(g, "w");
    neg = as_graph_find(g, "neg");
    is_int(as_graph_tensor(g, w)->kind, AS_TK_PARAM, "aliased, updated parameter is a param");
    is_int(as_graph_tensor(g, as_graph_find(g, "x"))->kind, AS_TK_PARAM,
           "unaliased float rank-2 parameter is a param (weights of an inference dump)");
    is_int(as_graph_tensor(g, w)->update, neg, "input_output_alias ties w to its new value");
    is_int(as_graph_tensor(g, as_graph_find(g, "z"))->kind, AS_TK_CONST, "constant -> const");
    is_int(as_graph_noutputs(g), 2, "ROOT tuple leaves are the outputs");
    as_graph_free(g);
}

static void
test_errors(void)
{
    as_err err;

    is_int(read_err("", &err), AS_EPARSE, "empty text");
    is_str(err.msg, "t.hlo:1:1: empty file: expected 'HloModule'", "empty: message");
    is_int(read_err("HloModule m\n\x01\x02", &err), AS_EPARSE, "binary garbage");
    is_str(err.msg, "t.hlo:2:1: unexpected byte 0x01 (binary file?)", "garbage: position");
    is_int(read_err("HloModule m\nENTRY %e () -> f32[] {\n  %c = f32[] constant(1)\n", &err),
           AS_EPARSE, "truncated computation");
    is_int(read_err("HloModule m\nENTRY %e () -> f32[2] {\n  ROOT %c = f32[3]{0} iota(), "
                    "iota_dimension=0\n  %d = f32[3] negate(%c)\n}\n", &err),
           AS_OK, "ROOT need not be last");
    is_int(read_err("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2] parameter(0)\n"
                    "  ROOT %n = f32[3] negate(%p)\n}\n", &err),
           AS_EPARSE, "declared shape disagrees");
    is_str(err.msg, "t.hlo:4:9: 'n' declares f32[3] but negate gives f32[2]", "mismatch message");
    is_int(read_err("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2] parameter(0)\n"
                    "  %p = f32[2] parameter(1)\n  ROOT %n = f32[2] negate(%p)\n}\n", &err),
           AS_EPARSE, "duplicate instruction name");
    is_int(read_err("HloModule m\nENTRY %e (p: f32[2]) -> f32[2] {\n  %p = f32[2 parameter(0)\n}\n",
                    &err),
           AS_EPARSE, "malformed shape");
}

/* Run the reference kernel of OPTYPE on IN (shapes INS) after inferring the output. */
static int
run_kernel(const char *optype, const as_shape *ins, int nin, const double *const *in,
           const as_attr *attr, int nattr, double *out, as_shape *os)
{
    const as_op_def *def = as_registry_find(optype, (size_t)-1);
    as_arena *a = as_arena_new();
    as_attr *bound;
    as_opinfo info;
    as_err err;
    int nb, nout, rc;

    rc = as_registry_bind_attrs(def, attr, nattr, a, &bound, &nb, &err);
    if (rc == AS_OK)
        rc = as_op_infer(def, ins, nin, bound, nb, os, &nout, &err);
    if (rc == AS_OK) {
        double *outs[1] = {out};
        info.def = def;
        info.nin = nin;
        info.in = ins;
        info.nout = 1;
        info.out = os;
        info.nattr = nb;
        info.attr = bound;
        def->kernel(&info, in, outs);
    } else {
        diag("%s", err.msg);
    }
    as_arena_free(a);
    return rc;
}

static void
test_kernels(void)
{
    /* dot_general: batch 2 of [2x3] . [3x1] */
    as_shape s[3] = {{AS_DT_F32, 3, {2, 2, 3}}, {AS_DT_F32, 3, {2, 3, 1}}}, os;
    double a[12] = {1, 2, 3, 4, 5, 6, 1, 0, 0, 0, 1, 0}, b[6] = {1, 1, 1, 2, 3, 4}, o[16];
    const double *in[3] = {a, b};
    int64_t zb[1] = {0}, lc[1] = {2}, rc[1] = {1};
    as_attr at[4] = {AS_ATTR_V("lhs_batch", 1, zb), AS_ATTR_V("rhs_batch", 1, zb),
                     AS_ATTR_V("lhs_contract", 1, lc), AS_ATTR_V("rhs_contract", 1, rc)};
    is_int(run_kernel("dot_general", s, 2, in, at, 4, o, &os), AS_OK, "dot_general infers");
    is_int(os.rank, 3, "dot_general rank");
    ok(o[0] == 6 && o[1] == 15 && o[2] == 2 && o[3] == 3, "dot_general values");

    /* gather rows 2 and 0 of a [3,2] table */
    {
        as_shape gs[2] = {{AS_DT_F32, 2, {3, 2}}, {AS_DT_I32, 1, {2}}};
        double t[6] = {0, 1, 10, 11, 20, 21}, ids[2] = {2, 0};
        const double *gin[2] = {t, ids};
        int64_t off[1] = {1}, col[1] = {0}, map[1] = {0}, sz[2] = {1, 2};
        as_attr ga[5] = {AS_ATTR_V("offset_dims", 1, off), AS_ATTR_V("collapsed_slice_dims", 1, col),
                         AS_ATTR_V("start_index_map", 1, map), AS_ATTR_I("index_vector_dim", 1),
                         AS_ATTR_V("slice_sizes", 2, sz)};
        is_int(run_kernel("gather", gs, 2, gin, ga, 5, o, &os), AS_OK, "gather infers");
        ok(os.rank == 2 && os.dim[0] == 2 && os.dim[1] == 2, "gather shape [2,2]");
        ok(o[0] == 20 && o[1] == 21 && o[2] == 0 && o[3] == 1, "gather values");
    }
    /* dynamic_slice clamps its start */
    {
        as_shape ds[3] = {{AS_DT_F32, 1, {5}}, {AS_DT_I32, 0, {0}}};
        double x[5] = {0, 1, 2, 3, 4}, st[1] = {4};
        const double *din[2] = {x, st};
        int64_t sz[1] = {2};
        as_attr da[1] = {AS_ATTR_V("sizes", 1, sz)};
        is_int(run_kernel("dynamic_slice", ds, 2, din, da, 1, o, &os), AS_OK, "dynamic_slice");
        ok(o[0] == 3 && o[1] == 4, "dynamic_slice start clamped to 3");
    }
}

int
main(void)
{
    test_import();
    test_errors();
    test_kernels();
    return done_testing();
}
