/* test_graph.c -- the IR core: dtypes, shapes, attributes, arenas, string
 * maps, the registry's integrity and attribute binding.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "graph/graph.h"
#include "graph/registry.h"
#include "tap.h"

static void
test_dtypes(void)
{
    as_dtype t;

    ok(as_dtype_parse("bf16", 4, &t) && t == AS_DT_BF16, "parse bf16");
    ok(as_dtype_parse("s32", 3, &t) && t == AS_DT_I32, "HLO s32 is i32");
    ok(!as_dtype_parse("f31", 3, &t), "unknown dtype rejected");
    is_int(as_dtype_size(AS_DT_F16), 2, "f16 is 2 bytes");
    is_str(as_dtype_name(AS_DT_PRED), "pred", "pred name");
}

static void
test_shapes(void)
{
    as_shape s = {AS_DT_F32, 2, {8, 512}};
    as_shape big = {AS_DT_F32, 3, {1LL << 30, 1LL << 30, 16}};
    as_shape zero = {AS_DT_F32, 1, {0}};
    as_err err;
    char buf[64];

    is_int(as_shape_numel(&s), 4096, "numel");
    is_int(as_shape_bytes(&s), 16384, "bytes");
    is_str(as_shape_str(&s, buf, sizeof buf), "f32[8,512]", "shape string");
    ok(as_shape_validate(&s, 1, &err) == AS_OK, "valid shape");
    ok(as_shape_validate(&big, 1, &err) == AS_EPARSE && strstr(err.msg, "overflows"),
       "overflowing shape rejected: %s", err.msg);
    ok(as_shape_validate(&zero, 1, &err) == AS_EPARSE, "zero dim rejected when min is 1");
    ok(as_shape_validate(&zero, 0, &err) == AS_OK, "zero dim allowed when min is 0");
}

static void
test_arena_map(void)
{
    as_arena *a = as_arena_new();
    as_strmap m;
    int64_t v = 0;
    int i;
    char key[32];

    as_strmap_init(&m);
    for (i = 0; i < 10000; i++) {
        snprintf(key, sizeof key, "k%d", i);
        as_strmap_put(&m, as_arena_strdup(a, key), i);
    }
    ok(as_strmap_get(&m, "k7777", (size_t)-1, &v) && v == 7777, "map finds k7777");
    ok(!as_strmap_get(&m, "k10000", (size_t)-1, NULL), "map misses k10000");
    ok(as_strmap_get(&m, "k12xyz", 3, &v) && v == 12, "lookup by length");
    (void)as_arena_alloc(a, 1 << 20);
    ok(as_arena_bytes(a) > (1 << 20), "arena counts big blocks");
    as_strmap_destroy(&m);
    as_arena_free(a);
}

static void
test_registry(void)
{
    as_err err;
    int i, n = as_registry_count();

    ok(as_registry_selfcheck(&err) == AS_OK, "registry self-check: %s", err.msg);
    for (i = 1; i < n; i++)
        if (strcmp(as_registry_get(i - 1)->name, as_registry_get(i)->name) >= 0)
            break;
    ok(i >= n, "registry sorted by name (%d ops)", n);
    for (i = 0; i < n; i++)
        if (as_registry_find(as_registry_get(i)->name, (size_t)-1) != as_registry_get(i))
            break;
    ok(i >= n, "every op found by name");
    ok(as_registry_find("no_such_op", (size_t)-1) == NULL, "unknown op not found");
}

int
main(void)
{
    plan_lazy();
    test_dtypes();
    test_shapes();
    test_arena_map();
    test_registry();
    return done_testing();
}
