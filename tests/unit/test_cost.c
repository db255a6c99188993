/* test_cost.c -- the three cost models against hand-computed values:
 * every collective on 2-, 4- and 8-device groups (intra and inter links),
 * routing over mesh axes, compute time of matmul and relu op infos, memory,
 * Alpa's replicated-parameter penalty, parameters and the registry.
 */
#include "config.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "graph/registry.h"
#include "spmd/cost.h"
#include "tap.h"

#define REL 1e-12

/* A made-up device with round numbers, so expectations read easily. */
static const char my_gpu[] = "name = my-gpu\n"
                             "peak_flops.f32 = 19.5e12\n"
                             "peak_flops.bf16 = 312e12\n"
                             "peak_flops.tf32 = 156e12\n"
                             "hbm_bandwidth = 2.0e12\n"
                             "memory = 80GiB\n"
                             "devices_per_node = 8\n"
                             "intra_node_bandwidth = 300e9\n"
                             "intra_node_latency = 2e-6\n"
                             "inter_node_bandwidth = 25e9\n"
                             "inter_node_latency = 5e-6\n"
                             "kernel_overhead = 5e-6\n";

struct coll_case {
    as_coll kind;
    int n;
    as_link link;
    int axis;
    double want;
};

/* roofline on my-gpu (intra 300e9 B/s, 2e-6 s; inter 25e9 B/s, 5e-6 s), S = 1e9 bytes */
static const struct coll_case roofline_cases[] = {
    {AS_COLL_ALL_REDUCE, 2, AS_LINK_INTRA, -1, 2.0*1/2*1e9/300e9 + 2*1*2e-6},
    {AS_COLL_ALL_GATHER, 2, AS_LINK_INTRA, -1, 1.0*1/2*1e9/300e9 + 1*2e-6},
    {AS_COLL_REDUCE_SCATTER, 2, AS_LINK_INTRA, -1, 1.0*1/2*1e9/300e9 + 1*2e-6},
    {AS_COLL_ALL_TO_ALL, 2, AS_LINK_INTRA, -1, 1.0*1/2*1e9/300e9 + 1*2e-6},
    {AS_COLL_SEND, 2, AS_LINK_INTRA, -1, 1e9/300e9 + 2e-6},
    {AS_COLL_ALL_REDUCE, 4, AS_LINK_INTRA, -1, 2.0*3/4*1e9/300e9 + 2*3*2e-6},
    {AS_COLL_ALL_GATHER, 4, AS_LINK_INTRA, -1, 1.0*3/4*1e9/300e9 + 3*2e-6},
    {AS_COLL_REDUCE_SCATTER, 4, AS_LINK_INTRA, -1, 1.0*3/4*1e9/300e9 + 3*2e-6},
    {AS_COLL_ALL_TO_ALL, 4, AS_LINK_INTRA, -1, 1.0*3/4*1e9/300e9 + 3*2e-6},
    {AS_COLL_SEND, 4, AS_LINK_INTRA, -1, 1e9/300e9 + 2e-6},
    {AS_COLL_ALL_REDUCE, 8, AS_LINK_INTRA, -1, 2.0*7/8*1e9/300e9 + 2*7*2e-6},
    {AS_COLL_ALL_GATHER, 8, AS_LINK_INTRA, -1, 1.0*7/8*1e9/300e9 + 7*2e-6},
    {AS_COLL_REDUCE_SCATTER, 8, AS_LINK_INTRA, -1, 1.0*7/8*1e9/300e9 + 7*2e-6},
    {AS_COLL_ALL_TO_ALL, 8, AS_LINK_INTRA, -1, 1.0*7/8*1e9/300e9 + 7*2e-6},
    {AS_COLL_SEND, 8, AS_LINK_INTRA, -1, 1e9/300e9 + 2e-6},
    {AS_COLL_ALL_REDUCE, 2, AS_LINK_INTER, -1, 2.0*1/2*1e9/25e9 + 2*1*5e-6},
    {AS_COLL_ALL_GATHER, 2, AS_LINK_INTER, -1, 1.0*1/2*1e9/25e9 + 1*5e-6},
    {AS_COLL_REDUCE_SCATTER, 2, AS_LINK_INTER, -1, 1.0*1/2*1e9/25e9 + 1*5e-6},
    {AS_COLL_ALL_TO_ALL, 2, AS_LINK_INTER, -1, 1.0*1/2*1e9/25e9 + 1*5e-6},
    {AS_COLL_SEND, 2, AS_LINK_INTER, -1, 1e9/25e9 + 5e-6},
    {AS_COLL_ALL_REDUCE, 4, AS_LINK_INTER, -1, 2.0*3/4*1e9/25e9 + 2*3*5e-6},
    {AS_COLL_ALL_GATHER, 4, AS_LINK_INTER, -1, 1.0*3/4*1e9/25e9 + 3*5e-6},
    {AS_COLL_REDUCE_SCATTER, 4, AS_LINK_INTER, -1, 1.0*3/4*1e9/25e9 + 3*5e-6},
    {AS_COLL_ALL_TO_ALL, 4, AS_LINK_INTER, -1, 1.0*3/4*1e9/25e9 + 3*5e-6},
    {AS_COLL_SEND, 4, AS_LINK_INTER, -1, 1e9/25e9 + 5e-6},
    {AS_COLL_ALL_REDUCE, 8, AS_LINK_INTER, -1, 2.0*7/8*1e9/25e9 + 2*7*5e-6},
    {AS_COLL_ALL_GATHER, 8, AS_LINK_INTER, -1, 1.0*7/8*1e9/25e9 + 7*5e-6},
    {AS_COLL_REDUCE_SCATTER, 8, AS_LINK_INTER, -1, 1.0*7/8*1e9/25e9 + 7*5e-6},
    {AS_COLL_ALL_TO_ALL, 8, AS_LINK_INTER, -1, 1.0*7/8*1e9/25e9 + 7*5e-6},
    {AS_COLL_SEND, 8, AS_LINK_INTER, -1, 1e9/25e9 + 5e-6},
};

/* distir on my-gpu (link 300e9 B/s intra, 25e9 B/s inter, no latency), S = 1e9 bytes */
static const struct coll_case distir_cases[] = {
    {AS_COLL_ALL_REDUCE, 2, AS_LINK_INTRA, -1, 2.0*1/2*1e9/300e9},
    {AS_COLL_ALL_GATHER, 2, AS_LINK_INTRA, -1, 2.0*1/2*(1e9/2)/300e9},
    {AS_COLL_REDUCE_SCATTER, 2, AS_LINK_INTRA, -1, 1.0*1/2*1e9/300e9},
    {AS_COLL_ALL_TO_ALL, 2, AS_LINK_INTRA, -1, 1.0*1/2*1e9/300e9},
    {AS_COLL_SEND, 2, AS_LINK_INTRA, -1, 1e9/300e9},
    {AS_COLL_ALL_REDUCE, 4, AS_LINK_INTRA, -1, 2.0*3/4*1e9/300e9},
    {AS_COLL_ALL_GATHER, 4, AS_LINK_INTRA, -1, 2.0*3/4*(1e9/4)/300e9},
    {AS_COLL_REDUCE_SCATTER, 4, AS_LINK_INTRA, -1, 1.0*3/4*1e9/300e9},
    {AS_COLL_ALL_TO_ALL, 4, AS_LINK_INTRA, -1, 1.0*3/4*1e9/300e9},
    {AS_COLL_SEND, 4, AS_LINK_INTRA, -1, 1e9/300e9},
    {AS_COLL_ALL_REDUCE, 8, AS_LINK_INTRA, -1, 2.0*7/8*1e9/300e9},
    {AS_COLL_ALL_GATHER, 8, AS_LINK_INTRA, -1, 2.0*7/8*(1e9/8)/300e9},
    {AS_COLL_REDUCE_SCATTER, 8, AS_LINK_INTRA, -1, 1.0*7/8*1e9/300e9},
    {AS_COLL_ALL_TO_ALL, 8, AS_LINK_INTRA, -1, 1.0*7/8*1e9/300e9},
    {AS_COLL_SEND, 8, AS_LINK_INTRA, -1, 1e9/300e9},
    {AS_COLL_ALL_REDUCE, 2, AS_LINK_INTER, -1, 2.0*1/2*1e9/25e9},
    {AS_COLL_ALL_GATHER, 2, AS_LINK_INTER, -1, 2.0*1/2*(1e9/2)/25e9},
    {AS_COLL_REDUCE_SCATTER, 2, AS_LINK_INTER, -1, 1.0*1/2*1e9/25e9},
    {AS_COLL_ALL_TO_ALL, 2, AS_LINK_INTER, -1, 1.0*1/2*1e9/25e9},
    {AS_COLL_SEND, 2, AS_LINK_INTER, -1, 1e9/25e9},
    {AS_COLL_ALL_REDUCE, 4, AS_LINK_INTER, -1, 2.0*3/4*1e9/25e9},
    {AS_COLL_ALL_GATHER, 4, AS_LINK_INTER, -1, 2.0*3/4*(1e9/4)/25e9},
    {AS_COLL_REDUCE_SCATTER, 4, AS_LINK_INTER, -1, 1.0*3/4*1e9/25e9},
    {AS_COLL_ALL_TO_ALL, 4, AS_LINK_INTER, -1, 1.0*3/4*1e9/25e9},
    {AS_COLL_SEND, 4, AS_LINK_INTER, -1, 1e9/25e9},
    {AS_COLL_ALL_REDUCE, 8, AS_LINK_INTER, -1, 2.0*7/8*1e9/25e9},
    {AS_COLL_ALL_GATHER, 8, AS_LINK_INTER, -1, 2.0*7/8*(1e9/8)/25e9},
    {AS_COLL_REDUCE_SCATTER, 8, AS_LINK_INTER, -1, 1.0*7/8*1e9/25e9},
    {AS_COLL_ALL_TO_ALL, 8, AS_LINK_INTER, -1, 1.0*7/8*1e9/25e9},
    {AS_COLL_SEND, 8, AS_LINK_INTER, -1, 1e9/25e9},
};

/* alpa with Alpa's defaults alpha = (1, 1), beta = (1, 0.1), B = 1000 bytes */
static const struct coll_case alpa_cases[] = {
    {AS_COLL_ALL_REDUCE, 2, AS_LINK_INTRA, 0, 1 + 2*1*1.0/2*1000 + 0.01},
    {AS_COLL_ALL_GATHER, 2, AS_LINK_INTRA, 0, 1 + 1*1.0/2*1000 + 0.1},
    {AS_COLL_REDUCE_SCATTER, 2, AS_LINK_INTRA, 0, 1 + 1*1.0/2*1000 + 0.001},
    {AS_COLL_ALL_TO_ALL, 2, AS_LINK_INTRA, 0, 1 + 1*1.0/2/2*1000*(2/2.0) + 0.001},
    {AS_COLL_SEND, 2, AS_LINK_INTRA, 0, 1 + 1*1000},
    {AS_COLL_ALL_REDUCE, 4, AS_LINK_INTRA, 0, 1 + 2*1*3.0/4*1000 + 0.01},
    {AS_COLL_ALL_GATHER, 4, AS_LINK_INTRA, 0, 1 + 1*3.0/4*1000 + 0.1},
    {AS_COLL_REDUCE_SCATTER, 4, AS_LINK_INTRA, 0, 1 + 1*3.0/4*1000 + 0.001},
    {AS_COLL_ALL_TO_ALL, 4, AS_LINK_INTRA, 0, 1 + 1*3.0/4/4*1000*(4/2.0) + 0.001},
    {AS_COLL_SEND, 4, AS_LINK_INTRA, 0, 1 + 1*1000},
    {AS_COLL_ALL_REDUCE, 8, AS_LINK_INTRA, 0, 1 + 2*1*7.0/8*1000 + 0.01},
    {AS_COLL_ALL_GATHER, 8, AS_LINK_INTRA, 0, 1 + 1*7.0/8*1000 + 0.1},
    {AS_COLL_REDUCE_SCATTER, 8, AS_LINK_INTRA, 0, 1 + 1*7.0/8*1000 + 0.001},
    {AS_COLL_ALL_TO_ALL, 8, AS_LINK_INTRA, 0, 1 + 1*7.0/8/8*1000*(8/2.0) + 0.001},
    {AS_COLL_SEND, 8, AS_LINK_INTRA, 0, 1 + 1*1000},
    {AS_COLL_ALL_REDUCE, 2, AS_LINK_INTRA, 1, 1 + 2*0.1*1.0/2*1000 + 0.01},
    {AS_COLL_ALL_GATHER, 2, AS_LINK_INTRA, 1, 1 + 0.1*1.0/2*1000 + 0.1},
    {AS_COLL_REDUCE_SCATTER, 2, AS_LINK_INTRA, 1, 1 + 0.1*1.0/2*1000 + 0.001},
    {AS_COLL_ALL_TO_ALL, 2, AS_LINK_INTRA, 1, 1 + 0.1*1.0/2/2*1000*(2/2.0) + 0.001},
    {AS_COLL_SEND, 2, AS_LINK_INTRA, 1, 1 + 0.1*1000},
    {AS_COLL_ALL_REDUCE, 4, AS_LINK_INTRA, 1, 1 + 2*0.1*3.0/4*1000 + 0.01},
    {AS_COLL_ALL_GATHER, 4, AS_LINK_INTRA, 1, 1 + 0.1*3.0/4*1000 + 0.1},
    {AS_COLL_REDUCE_SCATTER, 4, AS_LINK_INTRA, 1, 1 + 0.1*3.0/4*1000 + 0.001},
    {AS_COLL_ALL_TO_ALL, 4, AS_LINK_INTRA, 1, 1 + 0.1*3.0/4/4*1000*(4/2.0) + 0.001},
    {AS_COLL_SEND, 4, AS_LINK_INTRA, 1, 1 + 0.1*1000},
    {AS_COLL_ALL_REDUCE, 8, AS_LINK_INTRA, 1, 1 + 2*0.1*7.0/8*1000 + 0.01},
    {AS_COLL_ALL_GATHER, 8, AS_LINK_INTRA, 1, 1 + 0.1*7.0/8*1000 + 0.1},
    {AS_COLL_REDUCE_SCATTER, 8, AS_LINK_INTRA, 1, 1 + 0.1*7.0/8*1000 + 0.001},
    {AS_COLL_ALL_TO_ALL, 8, AS_LINK_INTRA, 1, 1 + 0.1*7.0/8/8*1000*(8/2.0) + 0.001},
    {AS_COLL_SEND, 8, AS_LINK_INTRA, 1, 1 + 0.1*1000},
};

static as_hw
load_hw(const char *text)
{
    as_hw hw;
    as_err err = {0};

    if (as_hw_parse("my-gpu.hw", text, &hw, &err) != AS_OK) {
        diag("%s", err.msg);
        exit(1);
    }
    return hw;
}

/* A cost model NAME on HW and MESH with optional params; exits on failure. */
static as_cost_model *
model(const char *name, const as_hw *hw, const as_mesh *m, const char *const *params, size_t np)
{
    as_cost_model *cm = NULL;
    as_err err = {0};
    const as_cost_ops *ops = as_cost_model_find(name, &err);

    if (ops == NULL || as_cost_model_new(ops, hw, m, params, np, &cm, &err) != AS_OK) {
        diag("%s: %s", name, err.msg);
        exit(1);
    }
    return cm;
}

static as_mesh *
mesh(const char *spec)
{
    as_mesh *m = NULL;
    as_err err = {0};

    if (as_mesh_parse(spec, &m, &err) != AS_OK) {
        diag("%s", err.msg);
        exit(1);
    }
    return m;
}

static void
run_cases(const as_cost_model *cm, const struct coll_case *c, size_t n, double bytes)
{
    size_t i;

    for (i = 0; i < n; i++) {
        as_comm_group g = {.n = c[i].n, .link = c[i].link, .axis = c[i].axis};

        is_double(as_cost_collective_group(cm, c[i].kind, bytes, &g), c[i].want, REL,
                  "%s: %s over %d devices, %s%s%d", as_cost_model_ops(cm)->name,
                  as_coll_name(c[i].kind), c[i].n, as_link_name(c[i].link),
                  c[i].axis >= 0 ? ", axis " : "", c[i].axis >= 0 ? c[i].axis : c[i].n);
    }
}

static void
test_collectives(void)
{
    as_hw hw = load_hw(my_gpu);
    as_mesh *m = mesh("2x4");
    as_cost_model *cm;

    cm = model("roofline", &hw, m, NULL, 0);
    run_cases(cm, roofline_cases, sizeof roofline_cases / sizeof roofline_cases[0], 1e9);
    as_cost_model_free(cm);
    cm = model("distir", &hw, m, NULL, 0);
    run_cases(cm, distir_cases, sizeof distir_cases / sizeof distir_cases[0], 1e9);
    as_cost_model_free(cm);
    cm = model("alpa", &hw, m, NULL, 0);
    run_cases(cm, alpa_cases, sizeof alpa_cases / sizeof alpa_cases[0], 1000);
    as_cost_model_free(cm);
    as_mesh_free(m);
}

/* Collectives over mesh axes pick n and the link class from the mesh. */
static void
test_axes(void)
{
    as_hw hw = load_hw(my_gpu);
    as_mesh *m = mesh("dp=2,tp=8");
    as_mesh *m1 = mesh("1x8");
    const char *ab[] = {"alpha=0.5,2", "beta=1e-6,3e-9"};
    as_cost_model *cm;

    cm = model("roofline", &hw, m, NULL, 0);
    ok(as_cost_axis_link(cm, 0) == AS_LINK_INTER && as_cost_axis_link(cm, 1) == AS_LINK_INTRA,
       "dp=2,tp=8 on 8/node: dp inter, tp intra");
    is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e9, 0), 2.0*1/2*1e9/25e9 + 2*1*5e-6,
              REL, "roofline: all-reduce over dp uses inter-node links");
    is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e9, 1), 2.0*7/8*1e9/300e9 + 2*7*2e-6,
              REL, "roofline: all-reduce over tp uses intra-node links");
    is_double(as_cost_collective(cm, AS_COLL_ALL_GATHER, 4e6, 1), 1.0*7/8*4e6/300e9 + 7*2e-6,
              REL, "roofline: all-gather of 4 MB over tp");
    as_cost_model_free(cm);

    cm = model("distir", &hw, m, NULL, 0);
    is_double(as_cost_collective(cm, AS_COLL_SEND, 1e9, 0), 1e9/25e9, REL,
              "distir: send over dp at the inter-node link bandwidth");
    as_cost_model_free(cm);

    cm = model("alpa", &hw, m, ab, 2);
    is_double(as_cost_collective(cm, AS_COLL_ALL_GATHER, 1e6, 0), 0.5 + 1e-6*1/2*1e6 + 0.1, REL,
              "alpa: all-gather on axis 0 with alpha=0.5, beta=1e-6");
    is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e6, 1), 2 + 2*3e-9*7/8*1e6 + 0.01, REL,
              "alpa: all-reduce on axis 1 with alpha=2, beta=3e-9");
    {
        as_comm_group g = {.n = 16, .link = AS_LINK_INTER, .axis = -1};

        is_double(as_cost_collective_group(cm, AS_COLL_ALL_REDUCE, 1e6, &g),
                  2 + 2*1e-6*15/16*1e6 + 0.01, REL,
                  "alpa: a group that is not one axis uses the largest alpha and beta");
    }
    as_cost_model_free(cm);

    cm = model("roofline", &hw, m1, NULL, 0);
    is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e9, 0), 0.0, REL,
              "all-reduce over a size-1 axis is free");
    is_double(as_cost_collective(cm, AS_COLL_SEND, 1e9, 0), 1e9/300e9 + 2e-6, REL,
              "send over a size-1 axis still moves the bytes");
    as_cost_model_free(cm);
    as_mesh_free(m1);
    as_mesh_free(m);
}

/* Builtin profile numbers flow into the roofline collective formulas. */
static void
test_builtin_links(void)
{
    as_hw a100, a10;
    as_mesh *m = mesh("2x8"), *m2 = mesh("2x2");
    as_cost_model *cm;

    as_hw_find_builtin("a100-dgx", &a100);
    as_hw_find_builtin("a10-pcie", &a10);
    cm = model("roofline", &a100, m, NULL, 0);
    is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e9, 1),
              2.0*7/8*1e9/300e9 + 2*7*3.4e-6, REL, "a100-dgx: tp all-reduce on NVSwitch");
    is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e9, 0), 2.0*1/2*1e9/25e9 + 2*1*14e-6,
              REL, "a100-dgx: dp all-reduce on HDR InfiniBand");
    as_cost_model_free(cm);
    cm = model("roofline", &a10, m2, NULL, 0);
    ok(as_cost_axis_link(cm, 0) == AS_LINK_INTRA && as_cost_axis_link(cm, 1) == AS_LINK_INTRA,
       "2x2 on a10-pcie: both axes intra-node");
    is_double(as_cost_collective(cm, AS_COLL_ALL_GATHER, 1e9, 0), 1.0*1/2*1e9/32e9 + 1*5.7e-6,
              REL, "a10-pcie: all-gather over PCIe");
    as_cost_model_free(cm);
    as_mesh_free(m2);
    as_mesh_free(m);
}

/* Fill INFO for op NAME with two inputs A, B and infer the output into OUT. */
static int
opinfo2(const char *name, const as_shape *in, int nin, as_shape *out, as_opinfo *info)
{
    static const as_attr mm_attr[2] = {AS_ATTR_I("transpose_a", 0), AS_ATTR_I("transpose_b", 0)};
    const as_op_def *def = as_registry_find(name, (size_t)-1);
    as_err err = {0};
    int nout = 0, nattr = strcmp(name, "matmul") == 0 ? 2 : 0;

    if (def == NULL)
        return 0;
    if (as_op_infer(def, in, nin, mm_attr, nattr, out, &nout, &err) != AS_OK) {
        diag("%s: %s", name, err.msg);
        return 0;
    }
    info->def = def;
    info->nin = nin;
    info->in = in;
    info->nout = nout;
    info->out = out;
    info->nattr = nattr;
    info->attr = mm_attr;
    return 1;
}

static as_shape
shape2(as_dtype t, int64_t a, int64_t b)
{
    as_shape s;

    memset(&s, 0, sizeof s);
    s.dtype = t;
    s.rank = 2;
    s.dim[0] = a;
    s.dim[1] = b;
    return s;
}

static void
test_compute_matmul(void)
{
    as_hw a100;
    as_mesh *m = mesh("8");
    as_cost_model *roof, *roof32, *alpa, *dist;
    const char *tf32[] = {"tf32=1"};
    as_shape in[2], out[AS_MAX_OUTS], inb[2], outb[AS_MAX_OUTS], ins[2], outs[AS_MAX_OUTS];
    as_opinfo info, infob, infos;
    double mm_bytes = (1024.0*4096 + 4096.0*16384 + 1024.0*16384) * 4;

    in[0] = shape2(AS_DT_F32, 1024, 4096);
    in[1] = shape2(AS_DT_F32, 4096, 16384);
    if (!opinfo2("matmul", in, 2, out, &info)) {
        diag("matmul is not registered yet: skipping the matmul compute tests");
        as_mesh_free(m);
        return;
    }
    inb[0] = shape2(AS_DT_BF16, 1024, 4096);
    inb[1] = shape2(AS_DT_BF16, 4096, 16384);
    opinfo2("matmul", inb, 2, outb, &infob);
    ins[0] = shape2(AS_DT_F32, 8, 4096);
    ins[1] = shape2(AS_DT_F32, 4096, 8);
    opinfo2("matmul", ins, 2, outs, &infos);

    as_hw_find_builtin("a100-dgx", &a100);
    roof = model("roofline", &a100, m, NULL, 0);
    roof32 = model("roofline", &a100, m, tf32, 1);
    alpa = model("alpa", &a100, m, NULL, 0);
    dist = model("distir", &a100, m, NULL, 0);

    is_double(as_op_flops(&info), 2.0*1024*4096*16384, REL, "matmul flops = 2mkn");
    is_double(as_op_bytes(&info), mm_bytes, REL, "matmul bytes = inputs + output");
    is_double(as_cost_compute(roof, &info), fmax(2.0*1024*4096*16384/19.5e12,
              mm_bytes/2039e9) + 5e-6, REL, "roofline: f32 matmul is compute-bound at 19.5 TF");
    is_double(as_cost_compute(roof32, &info), 2.0*1024*4096*16384/156e12 + 5e-6, REL,
              "roofline tf32=1: f32 matmul at 156 TF (TF32)");
    is_double(as_cost_compute(roof, &infob), fmax(2.0*1024*4096*16384/312e12,
              mm_bytes/2/2039e9) + 5e-6, REL, "roofline: bf16 matmul at 312 TF");
    is_double(as_cost_compute(roof, &infos), (8.0*4096 + 4096.0*8 + 8.0*8)*4/2039e9 + 5e-6,
              REL, "roofline: skinny matmul is memory-bound");
    is_double(as_cost_compute(alpa, &info), 0.0, REL, "alpa: compute is free");
    is_double(as_cost_compute(dist, &info),
              5e-6 + (1024.0*4096 + 4096.0*16384)*4/2039e9 + 2.0*1024*4096*16384/19.5e12, REL,
              "distir: overhead + input bytes / dram_bw + 2mkn / throughput");
    as_cost_model_free(dist);
    as_cost_model_free(alpa);
    as_cost_model_free(roof32);
    as_cost_model_free(roof);
    as_mesh_free(m);
}

static void
test_compute_elementwise(void)
{
    as_hw a100;
    as_mesh *m = mesh("8");
    as_cost_model *roof, *dist;
    as_shape in[2], out[AS_MAX_OUTS];
    as_opinfo info;
    static const char *const distir_v100[] = {"throughput=1.4e13", "dram_bandwidth=9e11",
                                              "overhead=1e-5"};

    in[0] = shape2(AS_DT_F32, 1024, 1024);
    if (!opinfo2("relu", in, 1, out, &info)) {
        diag("relu is not registered: skipping the elementwise compute tests");
        as_mesh_free(m);
        return;
    }
    as_hw_find_builtin("a100-dgx", &a100);
    roof = model("roofline", &a100, m, NULL, 0);
    dist = model("distir", &a100, m, NULL, 0);
    is_double(as_cost_compute(roof, &info), fmax(1024.0*1024/19.5e12, 2*4*1024.0*1024/2039e9) +
              5e-6, REL, "roofline: relu is memory-bound");
    is_double(as_cost_compute(dist, &info), 5e-6 + 4*1024.0*1024/2039e9 + 1024.0*1024/19.5e12,
              REL, "distir: overhead + input bytes / dram_bw + elements / throughput");
    as_cost_model_free(dist);
    /* DistIR's own constants (V100: 14 TFLOP/s, 900 GB/s, 10 us launch overhead): a relu on
     * 1024^2 fp32 is 1e-5 + 4194304 / 9e11 + 1048576 / 1.4e13 = 1.4735e-5 s (the output is not
     * charged: with it, 1.94e-5 s). */
    dist = model("distir", &a100, m, distir_v100, 3);
    is_double(as_cost_compute(dist, &info), 1.47350e-5, 1e-4,
              "distir with DistIR's constants: relu on 1024^2 fp32 = 1.4735e-5 s");
    in[0] = shape2(AS_DT_F32, 1024, 1024);
    in[1] = shape2(AS_DT_F32, 1024, 1024);
    if (opinfo2("add", in, 2, out, &info))
        is_double(as_cost_compute(dist, &info), 1e-5 + 2 * 4194304.0 / 9e11 + 1048576.0 / 1.4e13,
                  1e-12, "distir: add reads both inputs, one operation per element");
    in[1] = shape2(AS_DT_F32, 1, 1024);
    if (opinfo2("add", in, 2, out, &info))
        is_double(as_cost_compute(dist, &info),
                  1e-5 + (4194304.0 + 4096) / 9e11 + 1048576.0 / 1.4e13, 1e-12,
                  "distir: a broadcast input counts its own bytes, elements of the largest input");
    as_cost_model_free(dist);
    as_cost_model_free(roof);
    as_mesh_free(m);
}

static void
test_memory_penalty(void)
{
    as_hw hw = load_hw(my_gpu);
    as_mesh *m = mesh("2x4");
    const char *big[] = {"beta=100,100"};
    as_cost_model *roof = model("roofline", &hw, m, NULL, 0);
    as_cost_model *alpa = model("alpa", &hw, m, NULL, 0);
    as_cost_model *alpa2 = model("alpa", &hw, m, big, 1);
    as_shape s = shape2(AS_DT_F32, 10, 3), w = shape2(AS_DT_F32, 1024, 512);
    int64_t p41[2] = {4, 1}, p24[2] = {2, 4};

    is_double(as_cost_memory(roof, &s, p41), 3.0*3*4, REL,
              "roofline: f32[10,3] split 4 ways on dim 0 holds ceil(10/4) rows");
    is_double(as_cost_memory(alpa, &s, p41), 10.0*3*4/4, REL, "alpa: memory = bytes / tiles");
    is_double(as_cost_memory(alpa, &w, p24), 1024.0*512*4/8, REL, "alpa: 2x4 tiles");
    is_double(as_cost_memory(roof, &w, NULL), 1024.0*512*4, REL, "replicated: whole tensor");
    is_double(as_cost_shard_bytes(&w, p24), 512.0*128*4, REL, "shard bytes of a 2x4 split");
    is_double(as_cost_replicated_penalty(alpa),
              round((1 + 2*1*1.0/2*1 + 0.01) + (1 + 2*0.1*3.0/4*1 + 0.01)), REL,
              "alpa: penalty = round(AR(1 byte, axis 0) + AR(1 byte, axis 1))");
    is_double(as_cost_replicated_penalty(alpa2),
              round((1 + 2*100*1.0/2*1 + 0.01) + (1 + 2*100*3.0/4*1 + 0.01)), REL,
              "alpa: penalty follows beta");
    is_double(as_cost_replicated_penalty(roof), 0.0, REL, "roofline: no replication penalty");
    as_cost_model_free(alpa2);
    as_cost_model_free(alpa);
    as_cost_model_free(roof);
    as_mesh_free(m);
}

/* as_cost_model_new with one PARAM fails with exactly WANT. */
static void
param_fails(const char *name, const char *spec, const char *param, const char *want)
{
    as_hw hw = load_hw(my_gpu);
    as_mesh *m = mesh(spec);
    as_cost_model *cm = NULL;
    as_err err = {0};
    int rc = as_cost_model_new(as_cost_model_find(name, &err), &hw, m, &param, 1, &cm, &err);

    ok(rc == AS_EUSAGE && cm == NULL && strcmp(err.msg, want) == 0, "%s: '%s' rejected", name,
       param);
    if (strcmp(err.msg, want) != 0)
        diag("  got:  %s\n#   want: %s", err.msg, want);
    as_mesh_free(m);
}

static void
test_registry_params(void)
{
    as_hw hw = load_hw(my_gpu);
    as_mesh *m;
    as_cost_model *cm = NULL;
    as_err err = {0};
    char *buf = NULL;
    size_t len = 0;
    FILE *fp;
    as_coll k;

    ok(as_cost_model_find("roofline", &err) == &as_cost_roofline &&
           as_cost_model_find("alpa", &err) == &as_cost_alpa &&
           as_cost_model_find("distir", &err) == &as_cost_distir,
       "registry finds roofline, alpa, distir");
    ok(as_cost_model_count() == 3 && as_cost_model_get(0) == &as_cost_roofline,
       "three models, roofline first (default)");
    ok(as_cost_model_find("lp", &err) == NULL &&
           strcmp(err.msg, "unknown cost model 'lp' (known: alpa, distir, roofline)") == 0 &&
           as_status_exit(err.code) == 2,
       "unknown cost model: exact message, exit 2");
    fp = open_memstream(&buf, &len);
    as_cost_model_list(fp);
    fclose(fp);
    ok(strstr(buf, "roofline") && strstr(buf, "(default)") && strstr(buf, "alpa") &&
           strstr(buf, "distir"),
       "as_cost_model_list names every model");
    free(buf);
    ok(as_coll_parse("reduce-scatter", &k) && k == AS_COLL_REDUCE_SCATTER &&
           !as_coll_parse("broadcast", &k),
       "as_coll_parse");

    param_fails("alpa", "2x4", "alpha=1", "cost model 'alpa': 'alpha' has 1 value but the mesh "
                "has 2 axes");
    param_fails("alpa", "2x4", "beta=1,x", "cost model 'alpa': bad number 'x' for 'beta'");
    param_fails("alpa", "2x4", "beta=1,-1", "cost model 'alpa': 'beta' must be >= 0 (got -1)");
    param_fails("alpa", "2x4", "gamma=1", "cost model 'alpa': unknown parameter 'gamma' (known: "
                "alpha, beta)");
    param_fails("roofline", "8", "tf32=2", "cost model 'roofline': 'tf32' must be 0 or 1 (got 2)");
    param_fails("roofline", "8", "tf32", "cost model 'roofline': expected KEY=VALUE, got 'tf32'");
    param_fails("distir", "8", "throughput=0", "cost model 'distir': 'throughput' must be > 0 "
                "(got 0)");

    m = mesh("12");
    ok(as_cost_model_new(&as_cost_roofline, &hw, m, NULL, 0, &cm, &err) == AS_EUSAGE &&
           cm == NULL && strstr(err.msg, "not a multiple of 8 devices per node") != NULL,
       "a 12-device mesh does not fit 8-device nodes");
    as_mesh_free(m);

    m = mesh("2x8");
    {
        const char *p[] = {"throughput=1e12", "link_bandwidth=100e9"};

        cm = model("distir", &hw, m, p, 2);
        is_double(as_cost_collective(cm, AS_COLL_ALL_REDUCE, 1e9, 1), 2.0*7/8*1e9/100e9, REL,
                  "distir: link_bandwidth parameter overrides the profile");
        ok(as_cost_model_set_param(cm, "overhead", "1e-5", &err) == AS_OK,
           "set_param after creation");
        as_cost_model_free(cm);
    }
    as_mesh_free(m);
}

int
main(void)
{
    plan_lazy();
    test_collectives();
    test_axes();
    test_builtin_links();
    test_compute_matmul();
    test_compute_elementwise();
    test_memory_penalty();
    test_registry_params();
    return done_testing();
}
