/* test_rules.c -- sharding rules: the exact rule sets of many op types on
 * their canonical examples (discovered through the kernels or analytic),
 * shrinking of real instances, every registered op having an example and
 * rules, the disk cache (round trip, corrupt, stale, truncated, rebuilt)
 * and concurrent lookups.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "spmd/rules.h"
#include "tap.h"

/* "in0:0 in1:- -> gather(0); ..." for SET. */
static char *
fmt_set(const as_rule_set *set)
{
    static char buf[2048];
    char ib[256], cb[32];
    size_t len = 0;
    int r, k;

    buf[0] = '\0';
    for (r = 0; r < set->nrules && len < sizeof buf - 300; r++) {
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s ->", r ? "; " : "",
                                as_rule_in_str(set, &set->rules[r], ib, sizeof ib));
        for (k = 0; k < set->nout; k++)
            len += (size_t)snprintf(buf + len, sizeof buf - len, "%s%s", k ? ", " : " ",
                                    as_combine_str(&set->rules[r].out[k], cb, sizeof cb));
    }
    return buf;
}

/* Rules of op OP's canonical example (NULL on error, with a diagnostic). */
static const as_rule_set *
ex_rules(const char *op)
{
    const as_op_def *def = as_registry_find(op, (size_t)-1);
    as_arena *arena = as_arena_new();
    const as_rule_set *set = NULL;
    as_opinfo info;
    as_err err;

    if (def == NULL || as_rules_example(def, arena, &info, NULL, &err) != AS_OK ||
        as_rules_get(&info, &set, &err) != AS_OK) {
        diag("%s: %s", op, def == NULL ? "not registered" : err.msg);
        set = NULL;
    }
    as_arena_free(arena);
    return set;
}

static void
expect(const char *op, const char *want, const char *why)
{
    const as_rule_set *set = ex_rules(op);

    is_str(set != NULL ? fmt_set(set) : "(error)", want, "%s: %s", op, why);
}

/* Rules of OP on explicit shapes IN[0..NIN) with attributes AT[0..NAT) (bound here). */
static const as_rule_set *
inst_rules(const char *op, const as_shape *in, int nin, const as_attr *at, int nat)
{
    const as_op_def *def = as_registry_find(op, (size_t)-1);
    as_arena *arena = as_arena_new();
    const as_rule_set *set = NULL;
    as_attr *bound = NULL;
    as_opinfo info;
    as_err err;
    int nb = 0;

    memset(&info, 0, sizeof info);
    if (def == NULL || as_registry_bind_attrs(def, at, nat, arena, &bound, &nb, &err) != AS_OK) {
        diag("%s: cannot bind attributes", op);
        as_arena_free(arena);
        return NULL;
    }
    info.def = def;
    info.nin = nin;
    info.in = in;
    info.nattr = nb;
    info.attr = bound;
    if (as_rules_get(&info, &set, &err) != AS_OK) {
        diag("%s: %s", op, err.msg);
        set = NULL;
    }
    as_arena_free(arena);
    return set;
}

static as_shape
shp(int rank, int64_t d0, int64_t d1, int64_t d2)
{
    as_shape s;

    memset(&s, 0, sizeof s);
    s.dtype = AS_DT_F32;
    s.rank = rank;
    s.dim[0] = d0;
    s.dim[1] = d1;
    s.dim[2] = d2;
    return s;
}

static void
test_examples(void)
{
    expect("matmul", "in0:0 in1:- -> gather(0); in0:1 in1:0 -> sum; in0:- in1:1 -> gather(1)",
           "m gathers, k sums, n gathers");
    expect("add", "in0:0 in1:0 -> gather(0); in0:1 in1:1 -> gather(1)", "each dim gathers");
    expect("softmax", "in0:0 -> gather(0)", "the softmax axis cannot split");
    expect("log_softmax", "in0:0 -> gather(0)", "the axis cannot split");
    expect("layernorm", "in0:0 in1:- in2:- -> gather(0)", "the normalised dim cannot split");
    expect("rmsnorm", "in0:0 in1:- -> gather(0)", "the normalised dim cannot split");
    expect("reduce_sum", "in0:0 -> gather(0); in0:1 -> sum", "split reduced dim sums");
    expect("reduce_max", "in0:0 -> gather(0); in0:1 -> max", "split reduced dim maxes");
    expect("reduce_min", "in0:0 -> gather(0); in0:1 -> min", "split reduced dim mins");
    expect("reduce_mean", "in0:0 -> gather(0); in0:1 -> mean", "split reduced dim averages");
    expect("transpose", "in0:0 -> gather(1); in0:1 -> gather(0)", "gather dims swap");
    expect("conv2d",
           "in0:0 in1:- -> gather(0); in0:1 in1:1 -> sum; in0:2 in1:- -> halo(2); "
           "in0:- in1:0 -> gather(1)",
           "batch gathers, in-channels sum, H halo, out-channels gather");
    expect("bias_add", "in0:0 in1:- -> gather(0); in0:1 in1:0 -> gather(1)",
           "bias splits with the last dim");
    expect("relu", "in0:0 -> gather(0); in0:1 -> gather(1)", "elementwise");
    expect("gelu", "in0:0 -> gather(0); in0:1 -> gather(1)", "elementwise");
    expect("cross_entropy", "in0:0 in1:0 -> mean", "batch split averages equal shards");
    expect("mse_loss", "in0:0 in1:0 -> mean; in0:1 in1:1 -> mean", "any dim averages");
    expect("cross_entropy_grad", "in0:- in1:0 in2:0 -> gather(0)",
           "loss gradient with a global count splits by batch");
    expect("mse_loss_grad", "in0:- in1:0 in2:0 -> gather(0); in0:- in1:1 in2:1 -> gather(1)",
           "mse gradient with a global count splits any dim");
    expect("embedding", "in0:1 in1:- -> gather(1); in0:- in1:0 -> gather(0)",
           "vocab split impossible (ids must be local rows), hidden and ids gather");
    expect("embedding_grad", "in0:0 in1:0 -> sum; in0:1 in1:- -> gather(1)",
           "scatter-add over id shards sums");
    expect("adam_update", "in0:0 in1:0 in2:0 -> gather(0); in0:1 in1:1 in2:1 -> gather(1)",
           "optimizer update is elementwise");
    expect("concat", "in0:0 in1:0 -> gather(0); in0:1 in1:1 -> block(1)",
           "concat axis split gathers block by block");
    expect("reshape", "in0:0 -> gather(0); in0:1 -> gather(1); in0:2 -> gather(2)",
           "analytic: H splits into the heads dim");
    expect("slice", "in0:0 -> gather(0)", "analytic: only the unsliced dim");
    expect("split", "in0:0 -> gather(0), gather(0)", "analytic: not along the axis");
    expect("zeros", "(no inputs) -> identity(0); (no inputs) -> identity(1)",
           "made split along any dim");
    expect("dot_general",
           "in0:0 in1:0 -> gather(0); in0:1 in1:- -> gather(1); in0:2 in1:1 -> sum; "
           "in0:- in1:2 -> gather(2)",
           "batch, lhs free, contraction, rhs free");
    expect("layernorm_grad_gamma", "in0:0 in1:0 -> sum", "rows split sums");
    expect("batchnorm", "in0:1 in1:0 in2:0 -> gather(1)", "only channels split");
    expect("one_hot", "in0:0 -> gather(0)", "ids split");
    expect("broadcast", "in0:0 -> gather(1); in0:- -> identity(0)",
           "operand dim maps to output dim 1; the new dim 0 is made locally");
    expect("maxpool2d", "in0:0 -> gather(0); in0:1 -> gather(1); in0:2 -> gather(2); "
                        "in0:3 -> gather(3)", "stride = window: spatial dims gather");
    expect("gather", "in0:1 in1:- -> gather(1); in0:- in1:0 -> gather(0)",
           "slice dim and index batch");
    expect("dynamic_slice", "in0:0 in1:- in2:- -> gather(0)", "analytic: whole dims only");
    expect("all_reduce", "", "collectives replicate");
    expect("opaque", "", "opaque ops replicate");
}

static void
test_flags(void)
{
    const as_rule_set *s = ex_rules("opaque");

    ok(s != NULL && (s->flags & AS_RULES_REPLICATE) && s->why != NULL, "opaque: replicate with a reason");
    s = ex_rules("reshape");
    ok(s != NULL && (s->flags & AS_RULES_ANALYTIC), "reshape: analytic");
    s = ex_rules("matmul");
    ok(s != NULL && (s->flags & AS_RULES_DISCOVERED), "matmul: discovered");
    ok(s != NULL && s->nrules == 3 && s->rules[1].id == 1 && s->rules[1].in_dim[0] == 1 &&
           s->rules[1].out[0].kind == AS_COMBINE_SUM,
       "matmul: rule 1 splits k and sums");
    s = ex_rules("conv2d");
    ok(s != NULL && s->nrules == 4 && s->rules[2].halo == 2, "conv2d: 3x3 window overlaps 2 rows");
}

/* Broadcast's output dims that no operand dim of size >= 2 gives are made by each device
 * (identity(d)): a scalar filled into a zero buffer (XLA's hoisted constants, 2.4 GB each on
 * the HLO step) needs no partial sum and no reduce-scatter to come out sharded. */
static void
test_made_locally(void)
{
    as_shape x;
    const as_rule_set *a;
    int64_t s2[2] = {12288, 36864}, s3[3] = {16, 2048, 12288}, d02[2] = {0, 2}, d01[2] = {0, 1};
    int64_t s2b[2] = {2048, 12288};
    as_attr at[2];

    memset(&x, 0, sizeof x);
    x.dtype = AS_DT_F32; /* rank 0 */
    at[0] = AS_ATTR_V("shape", 2, s2);
    at[1] = AS_ATTR_V("dims", 0, NULL);
    a = inst_rules("broadcast", &x, 1, at, 2);
    is_str(a ? fmt_set(a) : "(error)", "in0:- -> identity(0); in0:- -> identity(1)",
           "broadcast of a scalar: made locally along either dim");
    x = shp(2, 16, 12288, 0); /* [B,H] -> [B,S,H]: S is new */
    at[0] = AS_ATTR_V("shape", 3, s3);
    at[1] = AS_ATTR_V("dims", 2, d02);
    a = inst_rules("broadcast", &x, 1, at, 2);
    is_str(a ? fmt_set(a) : "(error)",
           "in0:0 -> gather(0); in0:1 -> gather(2); in0:- -> identity(1)",
           "broadcast [B,H] -> [B,S,H]: B and H split with the operand, S made locally");
    x = shp(2, 1, 12288, 0); /* a size-1 dim expanded */
    at[0] = AS_ATTR_V("shape", 2, s2b);
    at[1] = AS_ATTR_V("dims", 2, d01);
    a = inst_rules("broadcast", &x, 1, at, 2);
    is_str(a ? fmt_set(a) : "(error)", "in0:1 -> gather(1); in0:- -> identity(0)",
           "broadcast [1,H] -> [S,H]: the expanded dim is made locally");
}

static void
test_instances(void)
{
    as_shape mm[2], bmm[2], r1;
    as_rules_stats before, after;
    const as_rule_set *a, *b;
    int64_t shape[2] = {72, 24};
    as_attr at;

    /* A real-size matmul shrinks to the same rules, and one of the same size order hits. */
    mm[0] = shp(2, 1024, 4096, 0);
    mm[1] = shp(2, 4096, 16384, 0);
    a = inst_rules("matmul", mm, 2, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)",
           "in0:0 in1:- -> gather(0); in0:1 in1:0 -> sum; in0:- in1:1 -> gather(1)",
           "matmul 1024x4096x16384: three rules");
    as_rules_get_stats(&before);
    mm[0] = shp(2, 2048, 4096, 0);
    mm[1] = shp(2, 4096, 8192, 0);
    b = inst_rules("matmul", mm, 2, NULL, 0);
    as_rules_get_stats(&after);
    ok(a != NULL && a == b, "same size order: same cached rule set");
    is_int(after.discovered, before.discovered, "no new discovery for it");
    /* Batched matmul with a broadcast rank-2 b. */
    bmm[0] = shp(3, 6, 12, 18);
    bmm[1] = shp(3, 6, 18, 24);
    a = inst_rules("matmul", bmm, 2, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)",
           "in0:0 in1:0 -> gather(0); in0:1 in1:- -> gather(1); in0:2 in1:1 -> sum; "
           "in0:- in1:2 -> gather(2)",
           "batched matmul: batch, m, k, n");
    /* Reshape merging [B,S] into one dim: only B splits there. */
    r1 = shp(3, 6, 12, 24);
    at = AS_ATTR_V("shape", 2, shape);
    a = inst_rules("reshape", &r1, 1, &at, 1);
    is_str(a ? fmt_set(a) : "(error)", "in0:0 -> gather(0); in0:2 -> gather(1)",
           "reshape [B,S,H] -> [B*S,H]: S cannot split");
    test_made_locally();
}

static as_shape
shp4(int64_t d0, int64_t d1, int64_t d2, int64_t d3)
{
    as_shape s = shp(4, d0, d1, d2);

    s.dim[3] = d3;
    return s;
}

/* Whether SET has a rule splitting input IN's dim DIM alone with output 0 combining as WANT. */
static int
has_rule(const as_rule_set *set, int in, int dim, const char *want, int halo)
{
    char cb[32];
    int r, j;

    for (r = 0; set != NULL && r < set->nrules; r++) {
        const as_shard_rule *ru = &set->rules[r];
        int alone = ru->in_dim[in] == dim;
        for (j = 0; j < set->nin && alone; j++)
            alone = j == in || ru->in_dim[j] < 0;
        if (alone && strcmp(as_combine_str(&ru->out[0], cb, sizeof cb), want) == 0 &&
            ru->halo == halo)
            return 1;
    }
    return 0;
}

/* Dims of size 2..5 split like any other; the rules depend on rank and attributes, not size. */
static void
test_small_dims(void)
{
    as_shape x[3];
    const as_rule_set *a, *b;
    as_rules_stats before, after;

    x[0] = shp(2, 4, 64, 0);
    a = inst_rules("relu", x, 1, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)", "in0:0 -> gather(0); in0:1 -> gather(1)",
           "relu f32[4,64]: the batch of 4 splits");
    as_rules_get_stats(&before);
    x[0] = shp(2, 6, 64, 0);
    b = inst_rules("relu", x, 1, NULL, 0);
    x[0] = shp(2, 2, 3, 0);
    b = b == a ? inst_rules("relu", x, 1, NULL, 0) : NULL;
    as_rules_get_stats(&after);
    ok(a != NULL && b == a && after.discovered == before.discovered,
       "relu on [4,64], [6,64] and [2,3] share one rule set (per rank, not per size)");
    x[0] = shp(2, 4, 64, 0);
    x[1] = shp(2, 64, 2, 0);
    a = inst_rules("matmul", x, 2, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)",
           "in0:0 in1:- -> gather(0); in0:1 in1:0 -> sum; in0:- in1:1 -> gather(1)",
           "matmul [4,64]x[64,2]: m = 4 and n = 2 split too");
    x[0] = shp(2, 4, 64, 0);
    x[1] = shp(1, 64, 0, 0);
    a = inst_rules("bias_add", x, 2, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)", "in0:0 in1:- -> gather(0); in0:1 in1:0 -> gather(1)",
           "bias_add [4,64]+[64]: the batch of 4 splits");
    x[0] = shp(2, 4, 5, 0);
    x[1] = shp(2, 4, 5, 0);
    a = inst_rules("add", x, 2, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)", "in0:0 in1:0 -> gather(0); in0:1 in1:1 -> gather(1)",
           "add [4,5]+[4,5]: both small dims split");
    x[1] = shp(2, 1, 5, 0);
    a = inst_rules("add", x, 2, NULL, 0);
    is_str(a ? fmt_set(a) : "(error)", "in0:0 in1:- -> gather(0); in0:1 in1:1 -> gather(1)",
           "add [4,5]+[1,5]: the broadcast dim of 1 stays whole");
}

/* "all:D -> combine; ..." when every rule splits all inputs along one dim D, else "(mixed)". */
static const char *
fmt_uniform(const as_rule_set *set)
{
    static char buf[512];
    char cb[32];
    size_t len = 0;
    int r, j;

    buf[0] = '\0';
    for (r = 0; r < set->nrules && len < sizeof buf - 64; r++) {
        const as_shard_rule *rule = &set->rules[r];
        for (j = 1; j < set->nin; j++)
            if (rule->in_dim[j] != rule->in_dim[0])
                return "(mixed)";
        len += (size_t)snprintf(buf + len, sizeof buf - len, "%sall:%d -> %s", r ? "; " : "",
                                rule->in_dim[0], as_combine_str(&rule->out[0], cb, sizeof cb));
    }
    return buf;
}

/* Issue 13 item 12: concat with more inputs than discovery takes (PyTorch/XLA concatenates
 * ~200 gradient norms) gets the rules ShardCombine discovers on a few inputs. */
static void
test_many_inputs(void)
{
    enum { N = 200 };
    as_shape *x = calloc(N, sizeof *x);
    as_attr ax = AS_ATTR_I("axis", 1);
    const as_rule_set *few, *many;
    char want[512];
    int j;

    for (j = 0; j < N; j++)
        x[j] = shp(2, 4, 6, 0);
    few = inst_rules("concat", x, 3, &ax, 1);
    many = inst_rules("concat", x, N, &ax, 1);
    ok(few != NULL && (few->flags & AS_RULES_DISCOVERED), "concat of 3: discovered");
    ok(many != NULL && (many->flags & AS_RULES_ANALYTIC) && many->nin == N,
       "concat of %d: analytic, no error", N);
    snprintf(want, sizeof want, "%s", few ? fmt_uniform(few) : "(error)");
    is_str(want, "all:0 -> gather(0); all:1 -> block(1)", "concat of 3 [4,6] on axis 1");
    is_str(many ? fmt_uniform(many) : "(error)", want, "concat of %d: the same rules", N);
    x[7] = shp(2, 4, 12, 0); /* unequal along the axis: no block rule (as discovery) */
    few = inst_rules("concat", x + 6, 3, &ax, 1);
    many = inst_rules("concat", x, N, &ax, 1);
    snprintf(want, sizeof want, "%s", few ? fmt_uniform(few) : "(error)");
    is_str(want, "all:0 -> gather(0)", "concat of [4,6], [4,12], [4,6]");
    is_str(many ? fmt_uniform(many) : "(error)", want, "concat of %d, one longer: the same", N);
    for (j = 0; j < N; j++)
        x[j] = shp(1, 1, 0, 0);
    ax = (as_attr)AS_ATTR_I("axis", 0);
    many = inst_rules("concat", x, N, &ax, 1);
    ok(many != NULL && many->nrules == 0, "concat of %d f32[1] (gradient norms): replicated", N);
    free(x);
}

/* The size mapping keeps kernel windows and stride alignment. */
static void
test_strides(void)
{
    static const int64_t k2[2] = {2, 2}, k3[2] = {3, 3};
    as_attr pool[2] = {AS_ATTR_V("kernel", 2, k2), AS_ATTR_V("stride", 2, k2)};
    as_attr conv[1] = {AS_ATTR_V("stride", 2, k2)};
    as_attr pool3[2] = {AS_ATTR_V("kernel", 2, k3), AS_ATTR_V("stride", 2, k2)};
    as_shape x[2];
    const as_rule_set *a;

    x[0] = shp4(2, 4, 32, 32);
    a = inst_rules("maxpool2d", x, 1, pool, 2);
    ok(has_rule(a, 0, 2, "gather(2)", 0) && has_rule(a, 0, 3, "gather(3)", 0) &&
           has_rule(a, 0, 0, "gather(0)", 0) && has_rule(a, 0, 1, "gather(1)", 0),
       "maxpool2d k2 s2 on [2,4,32,32]: N, C, H, W split (%s)", a ? fmt_set(a) : "error");
    x[0] = shp4(32, 64, 112, 112);
    a = inst_rules("maxpool2d", x, 1, pool, 2);
    ok(has_rule(a, 0, 2, "gather(2)", 0) && has_rule(a, 0, 3, "gather(3)", 0),
       "maxpool2d k2 s2 on ResNet's [32,64,112,112]: H and W split (%s)",
       a ? fmt_set(a) : "error");
    x[0] = shp4(2, 4, 24, 24);
    a = inst_rules("maxpool2d", x, 1, pool3, 2);
    ok(has_rule(a, 0, 2, "halo(2)", 1) && has_rule(a, 0, 3, "halo(3)", 1),
       "maxpool2d k3 s2 on 24x24: H and W split with a halo of 1 row (%s)",
       a ? fmt_set(a) : "error");
    x[0] = shp4(2, 4, 24, 24);
    x[1] = shp4(8, 4, 2, 2);
    a = inst_rules("conv2d", x, 2, conv, 1);
    ok(has_rule(a, 0, 2, "gather(2)", 0) && has_rule(a, 0, 3, "gather(3)", 0) &&
           has_rule(a, 0, 0, "gather(0)", 0) && has_rule(a, 1, 0, "gather(1)", 0),
       "conv2d k2 s2 on [2,4,24,24]: N, H, W, out-channels split (%s)",
       a ? fmt_set(a) : "error");
    x[1] = shp4(8, 4, 3, 3);
    a = inst_rules("conv2d", x, 2, conv, 1);
    ok(has_rule(a, 0, 2, "halo(2)", 1) && has_rule(a, 0, 3, "halo(3)", 1),
       "conv2d k3 s2 on 24x24: H and W split with a halo of k - s = 1 (%s)",
       a ? fmt_set(a) : "error");
}

static void
test_registry(void)
{
    int i, missing = 0, failed = 0;

    for (i = 0; i < as_registry_count(); i++) {
        const as_op_def *def = as_registry_get(i);
        if (!as_rules_has_example(def->name)) {
            diag("op '%s' has no canonical example in src/spmd/rules_examples.c", def->name);
            missing++;
        } else if (ex_rules(def->name) == NULL) {
            failed++;
        }
    }
    ok(as_registry_count() > 0, "registry has %d op types", as_registry_count());
    is_int(missing, 0, "every registered op has a canonical example");
    is_int(failed, 0, "every registered op has rules (possibly replicate only)");
}

static char *
slurp(const char *path, size_t *len)
{
    char *buf = NULL;
    as_err err;

    if (as_read_file(path, &buf, len, &err) != AS_OK)
        return NULL;
    return buf;
}

static void
spit(const char *path, const char *buf, size_t len)
{
    as_err err;

    if (as_write_file_atomic(path, buf, len, &err) != AS_OK)
        diag("%s", err.msg);
}

static void
test_cache(void)
{
    char dir[] = "/tmp/test_rules.XXXXXX", path[64], *orig, *buf, before[2048];
    uint64_t fp = as_rules_fingerprint();
    const as_rule_set *s;
    size_t len;
    int n = 0, m = 0, rc;
    as_err err;

    if (mkdtemp(dir) == NULL) {
        ok(0, "mkdtemp");
        return;
    }
    snprintf(path, sizeof path, "%s/rules.cache", dir);
    as_rules_reset();
    as_rules_set_cache_path(path);
    s = ex_rules("matmul");
    snprintf(before, sizeof before, "%s", s ? fmt_set(s) : "");
    ex_rules("reduce_sum");
    ex_rules("conv2d");
    ex_rules("reshape"); /* analytic: memory only */
    ok(access(path, R_OK) == 0, "discovery wrote the cache file");
    rc = as_rules_cache_write(path, fp, &n, &err);
    ok(rc == AS_OK && n == 3, "write: three discovered entries (got %d)", n);
    as_rules_reset();
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_OK && m == 3, "read back: three entries (got %d)", m);
    as_rules_set_cache_path("off");
    s = ex_rules("matmul");
    is_str(s ? fmt_set(s) : "", before, "matmul from disk equals the discovered set");
    ok(s != NULL && (s->flags & AS_RULES_FROM_DISK), "matmul came from the disk cache");

    orig = slurp(path, &len);
    ok(orig != NULL && strncmp(orig, "autoshard-rules-cache 1 ", 24) == 0, "versioned header");
    if (orig == NULL)
        return;
    /* A flipped byte in the body. */
    buf = as_xstrdup(orig);
    buf[len - 5] = buf[len - 5] == '0' ? '1' : '0';
    spit(path, buf, len);
    as_rules_reset();
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_EPARSE && strstr(err.msg, "corrupt") != NULL, "corrupt byte detected: %s",
       err.msg);
    /* Rebuilt through as_rules_get, then valid again. */
    as_rules_reset();
    as_rules_set_cache_path(path);
    ok(ex_rules("matmul") != NULL, "rules still available with a corrupt cache");
    as_rules_reset();
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_OK && m == 1, "corrupt cache was rebuilt (%d entries)", m);
    /* Another fingerprint. */
    spit(path, orig, len);
    as_rules_reset();
    rc = as_rules_cache_read(path, fp ^ 1, &m, &err);
    ok(rc == AS_EPARSE && strstr(err.msg, "stale") != NULL, "fingerprint change detected: %s",
       err.msg);
    /* Truncated: last line cut, and cut right after the header. */
    spit(path, orig, len - 3);
    as_rules_reset();
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_EPARSE, "truncated file detected: %s", err.msg);
    spit(path, orig, (size_t)(strchr(orig, '\n') - orig) + 1);
    as_rules_reset();
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_EPARSE, "file cut after the header detected: %s", err.msg);
    spit(path, "garbage\n", 8);
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_EPARSE, "not a cache file: %s", err.msg);
    /* Stale file is rebuilt by as_rules_get. */
    spit(path, orig, len);
    as_rules_reset();
    as_rules_set_cache_path(path);
    ok(ex_rules("add") != NULL, "rules with a valid cache");
    as_rules_reset();
    rc = as_rules_cache_read(path, fp, &m, &err);
    ok(rc == AS_OK && m == 4, "cache grew by the new entry (%d entries)", m);
    as_rules_reset();
    as_rules_set_cache_path("off");
    free(buf);
    free(orig);
    unlink(path);
    rmdir(dir);
}

static void *
thread_main(void *arg)
{
    static const char *const ops[] = {"matmul", "softmax", "layernorm", "add", "conv2d",
                                      "reduce_sum", "transpose", "concat"};
    int *bad = arg, i;

    for (i = 0; i < 16; i++) {
        const as_rule_set *s = ex_rules(ops[i % 8]);
        if (s == NULL || (i % 8 == 0 && s->nrules != 3))
            (*bad)++;
    }
    return NULL;
}

static void
test_threads(void)
{
    pthread_t th[4];
    int bad[4] = {0}, i, total = 0;

    as_rules_reset();
    as_rules_set_cache_path("off");
    for (i = 0; i < 4; i++)
        pthread_create(&th[i], NULL, thread_main, &bad[i]);
    for (i = 0; i < 4; i++) {
        pthread_join(th[i], NULL);
        total += bad[i];
    }
    is_int(total, 0, "4 threads get consistent rules concurrently");
}

static void
test_names(void)
{
    as_combine c = {AS_COMBINE_GATHER, 0};
    char buf[32];

    is_str(as_combine_str(&c, buf, sizeof buf), "gather(0)", "gather(0)");
    c.kind = AS_COMBINE_SUM;
    c.dim = -1;
    is_str(as_combine_str(&c, buf, sizeof buf), "sum", "sum");
    c.kind = AS_COMBINE_HALO;
    c.dim = 2;
    is_str(as_combine_str(&c, buf, sizeof buf), "halo(2)", "halo(2)");
}

int
main(void)
{
    plan_lazy();
    as_rules_set_cache_path("off");
    test_names();
    test_examples();
    test_flags();
    test_instances();
    test_small_dims();
    test_many_inputs();
    test_strides();
    test_registry();
    test_cache();
    test_threads();
    as_rules_reset();
    return done_testing();
}
