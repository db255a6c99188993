/* test_asg.c -- the .asg reader and writer and the igraph checks: every
 * grammar construct, error messages with their positions (cycles before
 * use-before-definition), write -> parse -> write round trips (including
 * trained graphs), and liveness / peak memory / longest path on a hand-made
 * graph whose numbers are worked out by hand below.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "graph/check.h"
#include "graph/io.h"
#include "graph/registry.h"
#include "tap.h"

/* Parse TEXT (as file "t.asg"); NULL on error with the message in *ERR. */
static as_graph *
parse(const char *text, as_err *err)
{
    as_graph *g = NULL;

    as_err_clear(err);
    if (as_graph_parse_asg("t.asg", text, strlen(text), &g, err) != AS_OK)
        return NULL;
    return g;
}

/* Parsing TEXT must fail with exactly message WANT. */
static void
parse_fails(const char *text, const char *want, const char *what)
{
    as_err err;
    as_graph *g = parse(text, &err);

    ok(g == NULL && err.code == AS_EPARSE, "%s: rejected", what);
    is_str(err.msg, want, "%s: message", what);
    as_graph_free(g);
}

static const char *const mlp_text =
    "# a two-layer MLP\n"
    "graph mlp2\n"
    "input x : f32[8,16] batch=0   # data\n"
    "input y : f32[8,4] batch=0\n"
    "param w1 : f32[16,32]\n"
    "param w2 : f32[32,4]\n"
    "h = matmul(x, w1)\n"
    "a : f32[8,32] = relu(h)\n"
    "p = matmul(a, w2)\n"
    "l = mse_loss(p, y)\n"
    "output l\n";

static void
test_constructs(void)
{
    static const char text[] =
        "graph shapes-test.v2   # names may hold dots and dashes\n"
        "\n"
        "input ids : i32[4,8] batch=1\n"
        "param emb : f32[100,16]\n"
        "const k.c : f32[]\n"
        "state mom : f32[100,16] of=emb\n"
        "e = embedding(emb, ids)\n"
        "s0 : f32[4,8,8], s1 = split(e) axis=-1 parts=2\n"
        "c = concat(s1, s0) axis=2\n"
        "t = transpose(c) perm=[0,2,1]\n"
        "r = reshape(t) shape=[4,128]\n"
        "h = cast(r) dtype=\"f16\"\n"
        "m = reduce_sum(h) dims=[] keepdims=0\n"
        "sc = scale(m) factor=1e-5\n"
        "mo = scale(mom) factor=2\n"
        "output sc, r\n";
    static const char upd[] = "param w : f32[2]\nv = neg(w)\nupdate w = v\noutput v\n";
    as_err err;
    as_graph *g = parse(text, &err);
    const as_tensor *t;
    const as_op *op;
    int32_t id;

    if (!ok(g != NULL, "every construct parses")) {
        diag("%s", err.msg);
        return;
    }
    is_str(as_graph_name(g), "shapes-test.v2", "graph name");
    is_int(as_graph_nops(g), 9, "9 ops");
    t = as_graph_tensor(g, as_graph_find(g, "ids"));
    ok(t->kind == AS_TK_INPUT && t->shape.dtype == AS_DT_I32 && t->batch_dim == 1,
       "input with dtype and batch=1");
    is_int(t->line, 3, "tensor line recorded");
    t = as_graph_tensor(g, as_graph_find(g, "k.c"));
    ok(t->kind == AS_TK_CONST && t->shape.rank == 0, "scalar const f32[]");
    t = as_graph_tensor(g, as_graph_find(g, "mom"));
    ok(t->kind == AS_TK_STATE && t->of == as_graph_find(g, "emb"), "state of=emb");
    id = as_graph_find(g, "s1");
    ok(id >= 0 && as_graph_tensor(g, id)->shape.dim[2] == 8, "second output of split named s1");
    op = as_graph_op(g, as_graph_tensor(g, id)->producer);
    is_int(op->nout, 2, "split has two outputs");
    is_int(as_attr_int(op->attr, op->nattr, "axis", 0), -1, "negative int attribute");
    op = as_graph_op(g, as_graph_tensor(g, as_graph_find(g, "t"))->producer);
    is_int(as_attr_ints(op->attr, op->nattr, "perm", NULL), 3, "int list attribute");
    op = as_graph_op(g, as_graph_tensor(g, as_graph_find(g, "h"))->producer);
    is_str(as_attr_str(op->attr, op->nattr, "dtype", ""), "f16", "quoted string attribute");
    is_int(as_graph_tensor(g, op->out[0])->shape.dtype, AS_DT_F16, "cast to f16");
    op = as_graph_op(g, as_graph_tensor(g, as_graph_find(g, "m"))->producer);
    is_int(as_attr_ints(op->attr, op->nattr, "dims", NULL), 0, "empty list attribute");
    op = as_graph_op(g, as_graph_tensor(g, as_graph_find(g, "sc"))->producer);
    is_double(as_attr_float(op->attr, op->nattr, "factor", 0), 1e-5, 1e-15, "float 1e-5");
    is_int(op->line, 14, "op line recorded");
    op = as_graph_op(g, as_graph_tensor(g, as_graph_find(g, "mo"))->producer);
    is_double(as_attr_float(op->attr, op->nattr, "factor", 0), 2.0, 0, "int given for float");
    is_int(as_graph_noutputs(g), 2, "two outputs");
    is_str(as_graph_tensor(g, as_graph_output(g, 1))->name, "r", "outputs in order");
    as_verbosity = 0; /* mo is dead: a warning */
    ok(as_graph_check(g, &err) == AS_OK, "graph passes the igraph checks");
    as_verbosity = 1;
    as_graph_free(g);

    /* Default name from the file name; update directive. */
    g = NULL;
    as_err_clear(&err);
    if (as_graph_parse_asg("dir/my model.asg", upd, strlen(upd), &g, &err) != AS_OK) {
        ok(0, "update graph parses: %s", err.msg);
        return;
    }
    is_str(as_graph_name(g), "my_model", "default name is the sanitised basename");
    t = as_graph_tensor(g, as_graph_find(g, "w"));
    ok(t->update == as_graph_find(g, "v"), "update w = v recorded");
    as_graph_free(g);
}

static void
test_errors(void)
{
    parse_fails("", "t.asg:1:1: empty graph: no ops", "empty file");
    parse_fails("# nothing\ninput x : f32[2]\n", "t.asg:1:1: empty graph: no ops", "no ops");
    parse_fails("graph x\n\001\002", "t.asg:2:1: binary data", "binary data");
    parse_fails("input x : f32[2]\nh = relu(x", "t.asg:2:11: expected ',' or ')' after an input, "
                                                "got end of line",
                "truncated line");
    parse_fails("input x : f32[2]\nh = frob(x)\n", "t.asg:2:5: unknown op type 'frob'",
                "unknown op");
    parse_fails("input x : f32[2]\nh = relu(x, x)\n", "t.asg:2:5: 'relu' takes 1 input, got 2",
                "wrong arity");
    parse_fails("input x : f32[2]\nh = relu(x) foo=1\n",
                "t.asg:2:13: 'relu' has no attribute 'foo' (it takes none)", "unknown attribute");
    parse_fails("input x : f32[2,3]\nh = softmax(x) axis=\"a\"\n",
                "t.asg:2:16: 'softmax': attribute 'axis' must be an integer",
                "wrong attribute type");
    parse_fails("input x : f32[2,3]\nh : f32[3,2] = relu(x)\n",
                "t.asg:2:5: 'h' is declared f32[3,2] but relu gives f32[2,3]",
                "written type differs from the inferred one");
    parse_fails("input x : f32[2]\nh = relu(x)\n  h = neg(x)\n",
                "t.asg:3:3: redefinition of 'h' (first defined at line 2)", "redefinition");
    parse_fails("input x : f32[2]\nh = relu(q)\n", "t.asg:2:10: undefined name 'q'",
                "undefined name");
    parse_fails("input x : f32[2]\nh = relu(x)\noutput h, zz\n", "t.asg:3:11: undefined name 'zz'",
                "output of an unknown name");
    parse_fails("input x : f32[2]\nh = relu(x)\nupdate x = h\n",
                "t.asg:3:8: 'x' is not a parameter or optimizer state", "update of a non-param");
    parse_fails("input x : f32[4294967296,4294967296]\nh = relu(x)\n",
                "t.asg:1:11: f32[4294967296,4294967296] is too large: its size overflows 64 bits",
                "dims overflow 64 bits");
    parse_fails("wibble x\n", "t.asg:1:1: unknown statement 'wibble'", "unknown statement");
    parse_fails("input x : f32[2] batch=3\nh = relu(x)\n",
                "t.asg:1:24: batch dim 3 out of range for rank 1", "batch dim out of range");
    parse_fails("input x : f32[2]\nh = relu(x)\ntrain optimizer=lbfgs\n",
                "t.asg:3:17: unknown optimizer 'lbfgs' (expected adam, sgd or momentum)",
                "unknown optimizer");
    parse_fails("input x : f32[2]\nh = cast(x) dtype=\"f16\n", "t.asg:2:19: unterminated string",
                "unterminated string");
    parse_fails("graph a\ngraph b\ninput x : f32[2]\nh = relu(x)\n",
                "t.asg:2:1: second graph header (first at line 1)", "two graph headers");
}

/* A cycle is reported before any use-before-definition, with the ops' names. */
static void
test_cycles(void)
{
    static const char both[] = "input x : f32[2]\n"
                               "z = relu(y0)\n"  /* use before definition, no cycle */
                               "a = add(x, c)\n" /* a -> b -> c -> a */
                               "b = relu(a)\n"
                               "c = relu(b)\n"
                               "y0 = relu(x)\n";
    static const char order[] = "input x : f32[2]\n"
                                "z = relu(y0)\n"
                                "y0 = relu(x)\n";

    parse_fails(both, "t.asg:3:12: cycle: a -> b -> c -> a", "cycle named by its ops");
    parse_fails(order, "t.asg:2:10: 'y0' used before its definition at line 3",
                "use before definition");
    parse_fails("input x : f32[2]\na = add(x, a)\n", "t.asg:2:12: cycle: a -> a", "self-loop");
    parse_fails("input x : f32[2]\nparam w : f32[2]\nh, g = split(x) parts=2 axis=0\n"
                "k = add(g, m)\nm = relu(k)\n",
                "t.asg:4:12: cycle: k -> m -> k", "cycle through a second output");
}

/* The igraph cycle finder on a hand-built graph: 0->1->2->3->1, 3->4. */
static void
test_find_cycle(void)
{
    igraph_vector_int_t edges, cyc;
    igraph_t ig;
    as_err err;
    int found = 0;

    as_igraph_setup();
    igraph_vector_int_init_int(&edges, 10, 0, 1, 1, 2, 2, 3, 3, 1, 3, 4);
    igraph_vector_int_init(&cyc, 0);
    igraph_create(&ig, &edges, 5, IGRAPH_DIRECTED);
    ok(as_igraph_find_cycle(&ig, &cyc, &found, &err) == AS_OK && found, "cycle found");
    ok(igraph_vector_int_size(&cyc) == 3 && VECTOR(cyc)[0] == 1 && VECTOR(cyc)[1] == 2 &&
           VECTOR(cyc)[2] == 3,
       "cycle is 1 -> 2 -> 3");
    igraph_destroy(&ig);
    igraph_vector_int_clear(&edges);
    igraph_vector_int_push_back(&edges, 0);
    igraph_vector_int_push_back(&edges, 1);
    igraph_create(&ig, &edges, 2, IGRAPH_DIRECTED);
    ok(as_igraph_find_cycle(&ig, &cyc, &found, &err) == AS_OK && !found &&
           igraph_vector_int_size(&cyc) == 0,
       "a DAG has no cycle");
    igraph_destroy(&ig);
    igraph_vector_int_destroy(&cyc);
    igraph_vector_int_destroy(&edges);
}

/* parse -> write -> parse -> write gives the same bytes. */
static void
round_trip(const char *text, const char *what)
{
    as_graph *g1 = NULL, *g2 = NULL;
    char *w1 = NULL, *w2 = NULL;
    size_t n1 = 0, n2 = 0;
    as_err err;

    if ((g1 = parse(text, &err)) == NULL) {
        ok(0, "%s: parses (%s)", what, err.msg);
        return;
    }
    ok(as_graph_write_asg_buf(g1, &w1, &n1, &err) == AS_OK, "%s: written", what);
    g2 = w1 != NULL ? parse(w1, &err) : NULL;
    ok(g2 != NULL, "%s: written text parses%s%s", what, g2 ? "" : ": ", g2 ? "" : err.msg);
    if (g2 != NULL) {
        ok(as_graph_write_asg_buf(g2, &w2, &n2, &err) == AS_OK, "%s: written again", what);
        ok(w2 != NULL && n1 == n2 && memcmp(w1, w2, n1) == 0, "%s: byte-identical", what);
        is_int(as_graph_nops(g2), as_graph_nops(g1), "%s: same op count", what);
        is_int(as_graph_ntensors(g2), as_graph_ntensors(g1), "%s: same tensor count", what);
        if (as_graph_nops(g1) > 0)
            is_int(as_graph_op(g2, as_graph_nops(g2) - 1)->flags,
                   as_graph_op(g1, as_graph_nops(g1) - 1)->flags, "%s: op flags kept", what);
    }
    free(w2);
    free(w1);
    as_graph_free(g2);
    as_graph_free(g1);
}

static void
test_round_trip(void)
{
    char buf[2048];
    as_graph_stats s1, s2;
    as_graph *g1, *g2;
    char *w = NULL;
    as_err err;

    round_trip(mlp_text, "forward MLP");
    snprintf(buf, sizeof buf, "%strain optimizer=adam lr=0.01\n", mlp_text);
    round_trip(buf, "MLP trained with adam");
    snprintf(buf, sizeof buf, "%strain optimizer=sgd lr=0.1\n", mlp_text);
    round_trip(buf, "MLP trained with sgd");
    snprintf(buf, sizeof buf, "%strain optimizer=momentum momentum=0.95\n", mlp_text);
    round_trip(buf, "MLP trained with momentum");
    round_trip("input x : f32[4,8]\n"
               "o = opaque(x) hlo_op=custom-call out_dtypes=f32 out_ranks=[2] out_dims=[4,8] "
               "flops=1.5e9 target=\"a \\\"quoted\\\" # name\"\n"
               "p = pad(o) lo=[0,1] hi=[1,0] value=-inf\n"
               "q = scale(p) factor=0.1\n"
               "output q\n",
               "strings, -inf and 0.1");

    /* The expanded graph keeps its statistics (gradients, states) through a write. */
    snprintf(buf, sizeof buf, "%strain optimizer=adam\n", mlp_text);
    g1 = parse(buf, &err);
    g2 = NULL;
    if (g1 != NULL && as_graph_write_asg_buf(g1, &w, NULL, &err) == AS_OK)
        g2 = parse(w, &err);
    if (!ok(g1 != NULL && g2 != NULL, "trained MLP written and read back")) {
        diag("%s", err.msg);
    } else if (as_graph_stats_compute(g1, &s1, &err) == AS_OK) {
        if (as_graph_stats_compute(g2, &s2, &err) == AS_OK) {
            is_int(s2.grad_bytes, s1.grad_bytes, "gradient bytes survive the round trip");
            is_int(s1.grad_bytes, (16 * 32 + 32 * 4) * 4, "gradients = parameter bytes");
            is_int(s1.state_bytes, 2 * s1.param_bytes, "adam: two states per parameter");
            is_int(s2.peak_activation_bytes, s1.peak_activation_bytes, "same peak");
            ok(s1.training && s2.training, "both are training graphs");
            as_graph_stats_free(&s2);
        }
        as_graph_stats_free(&s1);
    }
    free(w);
    as_graph_free(g2);
    as_graph_free(g1);
}

/*
 * Liveness on a hand-made graph (all f32[4,8] activations are 128 bytes):
 *   op0 a = matmul(x, w)   live after alloc: x a         = 256
 *   op1 b = relu(a)        x a b                         = 384
 *   op2 c = add(a, b)      x a b c                       = 512  <- peak; a, b freed
 *   op3 d = matmul(c, w)   x c d                         = 384; c freed
 *   op4 e = neg(x)         x d e                         = 384 (e is dead)
 * w (param, 256 B) is resident, not an activation.
 */
static void
test_liveness(void)
{
    static const char text[] = "graph live\n"
                               "input x : f32[4,8]\n"
                               "param w : f32[8,8]\n"
                               "a = matmul(x, w)\n"
                               "b = relu(a)\n"
                               "c = add(a, b)\n"
                               "d = matmul(c, w)\n"
                               "e = neg(x)\n"
                               "output d\n";
    static const int32_t want_def[] = {-1, -1, 0, 1, 2, 3, 4};
    static const int32_t want_last[] = {4, 3, 2, 2, 3, 5, -1};
    int32_t def[7], last[7], order[5], pos[5], i;
    as_graph_stats st;
    as_graph *g;
    as_err err;
    int j, topo_ok = 1, saved = as_verbosity;

    if ((g = parse(text, &err)) == NULL) {
        ok(0, "liveness graph parses: %s", err.msg);
        return;
    }
    as_verbosity = 0; /* e is dead: as_graph_check warns */
    ok(as_graph_check(g, &err) == AS_OK, "check passes (dead op is only a warning)");
    as_verbosity = saved;
    ok(as_graph_liveness(g, def, last, &err) == AS_OK, "liveness computed");
    for (i = 0; i < 7; i++) {
        is_int(def[i], want_def[i], "def of '%s'", as_graph_tensor(g, i)->name);
        is_int(last[i], want_last[i], "last use of '%s'", as_graph_tensor(g, i)->name);
    }
    ok(as_graph_topo_order(g, order, &err) == AS_OK, "topological order");
    for (i = 0; i < 5; i++)
        pos[order[i]] = i;
    for (i = 0; i < 5; i++) {
        const as_op *op = as_graph_op(g, i);
        for (j = 0; j < op->nin; j++) {
            int32_t p = as_graph_tensor(g, op->in[j])->producer;
            if (p >= 0 && pos[p] >= pos[i])
                topo_ok = 0;
        }
    }
    ok(topo_ok, "every op comes after its producers in the topological order");
    if (as_graph_stats_compute(g, &st, &err) != AS_OK) {
        ok(0, "stats: %s", err.msg);
        as_graph_free(g);
        return;
    }
    is_int(st.peak_activation_bytes, 512, "peak activation bytes (hand-computed)");
    is_int(st.peak_op, 2, "peak at op 2");
    is_int(st.params, 64, "64 parameter elements");
    is_int(st.param_bytes, 256, "parameter bytes");
    is_int(st.input_bytes, 128, "input bytes");
    is_int(st.grad_bytes, 0, "no gradients");
    is_int(st.longest_path_ops, 4, "longest path a -> b -> c -> d");
    is_double(st.longest_path_flops,
              as_graph_op_flops(g, 0) + as_graph_op_flops(g, 1) + as_graph_op_flops(g, 2) +
                  as_graph_op_flops(g, 3),
              1e-12, "most expensive path is the same chain");
    is_double(as_graph_op_flops(g, 0), 2.0 * 4 * 8 * 8, 1e-12, "matmul FLOPs 2mkn");
    is_int(st.nby_type, 4, "four op types");
    is_str(st.by_type[0].type, "matmul", "most frequent type first");
    is_int(st.by_type[0].count, 2, "two matmuls");
    is_str(st.by_type[1].type, "add", "ties sorted by name");
    ok(!st.training, "not a training graph");
    as_graph_stats_free(&st);
    as_graph_free(g);
}

/* Tokens for the 6*params*tokens reference: integer ids, else the batch input. */
static void
test_tokens(void)
{
    as_graph_stats st;
    as_graph *g;
    as_err err;

    g = parse("input ids : i32[4,16] batch=0\nparam emb : f32[50,8]\n"
              "e = embedding(emb, ids)\noutput e\n",
              &err);
    if (ok(g != NULL && as_graph_stats_compute(g, &st, &err) == AS_OK, "ids graph")) {
        is_double(st.tokens, 64, 0, "tokens = elements of the integer input");
        as_graph_stats_free(&st);
    }
    as_graph_free(g);
    g = parse("input x : f32[2,16,8] batch=0\nh = relu(x)\noutput h\n", &err);
    if (ok(g != NULL && as_graph_stats_compute(g, &st, &err) == AS_OK, "rank-3 input graph")) {
        is_double(st.tokens, 32, 0, "tokens = batch x sequence");
        as_graph_stats_free(&st);
    }
    as_graph_free(g);
}

int
main(void)
{
    plan_lazy();
    test_constructs();
    test_errors();
    test_cycles();
    test_find_cycle();
    test_round_trip();
    test_liveness();
    test_tokens();
    return done_testing();
}
