/* test_mesh.c -- meshes (parsing, row-major layout, groups, node placement)
 * and hardware profiles (built-ins, the key=value file format and its
 * errors).
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "spmd/hw.h"
#include "spmd/mesh.h"
#include "tap.h"

#define GIB (1024.0 * 1024.0 * 1024.0)

static as_mesh *
mesh(const char *spec)
{
    as_mesh *m = NULL;
    as_err err = {0};

    if (as_mesh_parse(spec, &m, &err) != AS_OK) {
        diag("mesh '%s': %s", spec, err.msg);
        exit(1);
    }
    return m;
}

static void
test_parse(void)
{
    as_mesh *m;

    m = mesh("2x4");
    is_int(as_mesh_naxes(m), 2, "2x4 has 2 axes");
    is_int(as_mesh_ndevices(m), 8, "2x4 has 8 devices");
    is_str(as_mesh_axis_name(m, 0), "x", "2x4 axis 0 is named x");
    is_str(as_mesh_axis_name(m, 1), "y", "2x4 axis 1 is named y");
    is_int(as_mesh_axis_stride(m, 0), 4, "2x4 axis 0 has stride 4 (row-major)");
    is_int(as_mesh_axis_stride(m, 1), 1, "2x4 axis 1 has stride 1 (varies fastest)");
    is_str(as_mesh_str(m), "x=2,y=4", "2x4 prints canonically");
    as_mesh_free(m);

    m = mesh("8");
    ok(as_mesh_naxes(m) == 1 && as_mesh_axis_size(m, 0) == 8 &&
           strcmp(as_mesh_axis_name(m, 0), "x") == 0,
       "8 is one axis x of 8");
    as_mesh_free(m);

    m = mesh("2x2x2");
    ok(as_mesh_naxes(m) == 3 && strcmp(as_mesh_axis_name(m, 2), "z") == 0 &&
           as_mesh_axis_stride(m, 0) == 4 && as_mesh_axis_stride(m, 1) == 2,
       "2x2x2: axes x y z, strides 4 2 1");
    as_mesh_free(m);

    m = mesh("2x3x2x2");
    ok(as_mesh_naxes(m) == 4 && strcmp(as_mesh_axis_name(m, 0), "a0") == 0 &&
           strcmp(as_mesh_axis_name(m, 3), "a3") == 0 && as_mesh_ndevices(m) == 24,
       "4-axis mesh names a0..a3, 24 devices");
    as_mesh_free(m);

    m = mesh("dp=2,tp=4");
    ok(strcmp(as_mesh_axis_name(m, 0), "dp") == 0 && strcmp(as_mesh_axis_name(m, 1), "tp") == 0,
       "named axes dp, tp");
    is_int(as_mesh_axis_find(m, "tp"), 1, "axis_find tp = 1");
    is_int(as_mesh_axis_find(m, "pp"), -1, "axis_find of an absent name = -1");
    is_str(as_mesh_str(m), "dp=2,tp=4", "named mesh prints back");
    as_mesh_free(m);

    m = mesh("1x8");
    ok(as_mesh_axis_size(m, 0) == 1 && as_mesh_ndevices(m) == 8, "size-1 axes are allowed");
    as_mesh_free(m);
}

static void
test_layout(void)
{
    as_mesh *m = mesh("2x3x4");
    int c[AS_MESH_MAX_AXES], g[8], d, bad = 0;

    for (d = 0; d < 24; d++) {
        as_mesh_coords(m, d, c);
        if (as_mesh_device(m, c) != d || c[0] != d / 12 || c[1] != (d / 4) % 3 || c[2] != d % 4)
            bad++;
    }
    is_int(bad, 0, "2x3x4: coords <-> device id round trip, last axis fastest");
    as_mesh_group(m, 1, 17, g);
    ok(g[0] == 13 && g[1] == 17 && g[2] == 21, "2x3x4: group along axis 1 through 17 = 13 17 21");
    as_mesh_group(m, 0, 5, g);
    ok(g[0] == 5 && g[1] == 17, "2x3x4: group along axis 0 through 5 = 5 17");
    as_mesh_group(m, 2, 22, g);
    ok(g[0] == 20 && g[3] == 23, "2x3x4: group along axis 2 through 22 = 20..23");
    as_mesh_free(m);
}

/* Parse SPEC, expecting failure with a message containing WANT. */
static void
parse_fails(const char *spec, const char *want)
{
    as_mesh *m = NULL;
    as_err err = {0};
    int rc = as_mesh_parse(spec, &m, &err);

    ok(rc == AS_EUSAGE && m == NULL && as_status_exit(rc) == 2 && strstr(err.msg, want) != NULL &&
           strncmp(err.msg, "mesh '", 6) == 0,
       "mesh '%s' is rejected: %s", spec, want);
    if (strstr(err.msg, want) == NULL)
        diag("  got: %s", err.msg);
}

static void
test_parse_errors(void)
{
    as_mesh *m = NULL;
    as_err err = {0};

    as_mesh_parse("2x0", &m, &err);
    is_str(err.msg, "mesh '2x0': axis 2 has size 0 (must be >= 1)", "2x0: exact message");
    parse_fails("2x", "expected a number at column 3");
    parse_fails("x4", "expected a number at column 1");
    parse_fails("2xx4", "expected a number at column 3");
    parse_fails("dp=2,dp=4", "duplicate axis name 'dp'");
    parse_fails("dp=two", "expected a number at column 4");
    parse_fails("-2x4", "axis 1 has size -2 (must be >= 1)");
    parse_fails("4x-1", "axis 2 has size -1");
    parse_fails("2x2x2x2x2", "5 axes (at most 4)");
    parse_fails("256x256x2", "131072 devices (at most 65536)");
    parse_fails("99999999999999999999", "at most 65536");
    parse_fails("", "empty mesh");
    parse_fails("2x4y", "unexpected 'y' at column 4");
    parse_fails("dp=2,", "expected an axis name at column 6");
    parse_fails("dp=2,4", "expected an axis name at column 6");
    parse_fails("1dp=2", "expected an axis name at column 1");
    parse_fails("dp:2,tp=4", "expected '=' after 'dp' at column 3");
}

static void
test_new(void)
{
    int64_t sizes[2] = {4, 2};
    const char *names[2] = {"data", NULL};
    const char *bad[2] = {"9x", "y"};
    as_mesh *m = NULL;
    as_err err = {0};

    ok(as_mesh_new(2, sizes, names, &m, &err) == AS_OK &&
           strcmp(as_mesh_axis_name(m, 1), "y") == 0 &&
           strcmp(as_mesh_axis_name(m, 0), "data") == 0,
       "as_mesh_new: given and default names");
    as_mesh_free(m);
    m = NULL;
    ok(as_mesh_new(2, sizes, bad, &m, &err) == AS_EUSAGE && m == NULL &&
           strstr(err.msg, "bad axis name '9x'") != NULL,
       "as_mesh_new: bad name rejected");
    ok(as_mesh_new(0, sizes, NULL, &m, &err) == AS_EUSAGE, "as_mesh_new: zero axes rejected");
    as_mesh_free(NULL);
}

/* Link class of each axis of SPEC on DPN devices per node, as "ii", "ei", ... */
static const char *
links(const char *spec, int dpn, char *buf)
{
    as_mesh *m = mesh(spec);
    int k;

    for (k = 0; k < as_mesh_naxes(m); k++)
        buf[k] = as_mesh_axis_link(m, k, dpn) == AS_LINK_INTRA ? 'i' : 'e';
    buf[k] = '\0';
    as_mesh_free(m);
    return buf;
}

static void
test_links(void)
{
    char b[8];
    as_mesh *m;
    as_err err = {0};

    /* a100-dgx: 8 devices per node */
    is_str(links("2x8", 8, b), "ei", "2x8 on 8/node: axis 0 inter, axis 1 intra");
    is_str(links("4x4", 8, b), "ei", "4x4 on 8/node: stride-4 axis crosses nodes, axis 1 intra");
    is_str(links("8x2", 8, b), "ei", "8x2 on 8/node: axis 0 (0,2,..,14) crosses nodes");
    is_str(links("2x4", 8, b), "ii", "2x4 on 8/node: one node, all intra");
    is_str(links("16", 8, b), "e", "16 on 8/node: the single axis is inter");
    is_str(links("4x4x2", 8, b), "eii", "4x4x2 on 8/node: axes 1 and 2 stay in a node");
    is_str(links("2x2x4", 8, b), "eii", "2x2x4 on 8/node: only axis 0 crosses nodes");
    /* a10-pcie: 4 devices per node */
    is_str(links("2x2", 4, b), "ii", "2x2 on 4/node (a10-pcie): all intra");
    is_str(links("2x4", 4, b), "ei", "2x4 on 4/node: axis 0 inter");
    is_str(links("4x2", 4, b), "ei", "4x2 on 4/node: axis 0 (0,2,4,6) inter");
    /* v100-dgx2: 16 devices per node */
    is_str(links("2x8", 16, b), "ii", "2x8 on 16/node: all intra");
    is_str(links("1x32", 16, b), "ie", "1x32 on 16/node: size-1 axis intra, axis 1 inter");

    m = mesh("12");
    ok(as_mesh_check_nodes(m, 8, &err) == AS_EUSAGE &&
           strstr(err.msg, "12 devices span more than one node but are not a multiple of 8") !=
               NULL,
       "12 devices on 8/node is rejected");
    ok(as_mesh_check_nodes(m, 4, &err) == AS_OK, "12 devices on 4/node are 3 nodes");
    is_int(as_mesh_nnodes(m, 4), 3, "nnodes(12, 4) = 3");
    as_mesh_free(m);
    m = mesh("3");
    ok(as_mesh_check_nodes(m, 8, &err) == AS_OK && as_mesh_nnodes(m, 8) == 1,
       "3 devices fit in one 8-device node");
    as_mesh_free(m);
}

/* Hardware profiles. */

static void
test_builtin(void)
{
    as_hw hw;
    as_err err = {0};
    int i, sorted = 1;

    is_int(as_hw_builtin_count(), 4, "four built-in profiles");
    for (i = 1; i < as_hw_builtin_count(); i++) {
        as_hw a, b;

        as_hw_builtin(i - 1, &a);
        as_hw_builtin(i, &b);
        sorted &= strcmp(a.name, b.name) < 0;
    }
    ok(sorted, "built-ins are sorted by name");
    ok(as_hw_load("a100-dgx", &hw, &err) == AS_OK, "load a100-dgx");
    is_double(as_hw_peak_flops(&hw, AS_DT_BF16), 312e12, 1e-12, "a100 bf16 peak 312 TFLOP/s");
    is_double(as_hw_peak_flops(&hw, AS_DT_F32), 19.5e12, 1e-12, "a100 f32 peak 19.5 TFLOP/s");
    is_double(as_hw_peak_flops(&hw, AS_DT_I32), 19.5e12, 1e-12, "i32 falls back to the f32 peak");
    is_double(hw.memory, 80 * GIB, 1e-12, "a100 memory 80 GiB");
    is_int(hw.devices_per_node, 8, "a100-dgx has 8 devices per node");
    is_double(hw.distir_dram_bandwidth, 2039e9, 1e-12, "distir dram bandwidth derived from HBM");
    is_double(hw.distir_throughput, 19.5e12, 1e-12, "distir throughput derived from f32 peak");
    ok(as_hw_find_builtin("v100-dgx2", &hw) && hw.devices_per_node == 16 &&
           as_hw_peak_flops(&hw, AS_DT_BF16) == hw.peak_flops[AS_DT_F32],
       "v100-dgx2: 16/node, no bf16 tensor cores (falls back to f32)");
    ok(as_hw_find_builtin("a10-pcie", &hw) && hw.devices_per_node == 4, "a10-pcie: 4/node");
    ok(as_hw_find_builtin("h100-dgx", &hw) && hw.peak_flops[AS_DT_BF16] == 989.5e12,
       "h100-dgx: 989.5 TFLOP/s bf16 dense");
    ok(as_hw_load("b200", &hw, &err) == AS_EUSAGE &&
           strcmp(err.msg, "unknown hardware profile 'b200' (known: a10-pcie, a100-dgx, "
                           "h100-dgx, v100-dgx2)") == 0,
       "unknown profile name: exact message");
    ok(as_hw_load("/nonexistent/x.hw", &hw, &err) == AS_EIO, "missing profile file is AS_EIO");
}

#define GOOD_PROFILE                                                                               \
    "# a made-up accelerator\n"                                                                    \
    "name = my-gpu\n"                                                                              \
    "peak_flops.f32 = 19.5e12   # fp32\n"                                                          \
    "peak_flops.bf16 = 100e12\n"                                                                   \
    "hbm_bandwidth = 2.0e12\n"                                                                     \
    "memory = 80GiB\n"                                                                             \
    "devices_per_node = 8\n"                                                                       \
    "\n"                                                                                           \
    "intra_node_bandwidth = 300e9\n"                                                               \
    "intra_node_latency = 2e-6\n"                                                                  \
    "inter_node_bandwidth = 25e9\n"                                                                \
    "inter_node_latency = 5e-6\n"                                                                  \
    "kernel_overhead = 5e-6\n"

static void
test_file_good(void)
{
    as_hw hw;
    as_err err = {0};

    ok(as_hw_parse("g.hw", GOOD_PROFILE, &hw, &err) == AS_OK, "good profile parses");
    is_str(hw.name, "my-gpu", "name");
    is_double(hw.memory, 80 * GIB, 1e-12, "memory = 80GiB");
    is_double(hw.intra_node_latency, 2e-6, 1e-12, "intra_node_latency");
    is_double(as_hw_peak_flops(&hw, AS_DT_F16), 19.5e12, 1e-12, "absent f16 falls back to f32");
    is_double(hw.distir_link_bandwidth, 300e9, 1e-12, "distir link bandwidth derived");

    ok(as_hw_parse("b.hw", "base = a100-dgx\nname = a100-slow-ib\ninter_node_bandwidth = 12.5e9\n"
                           "hbm_bandwidth = 1.5e12\n",
                   &hw, &err) == AS_OK,
       "profile with base parses");
    ok(hw.inter_node_bandwidth == 12.5e9 && hw.peak_flops[AS_DT_BF16] == 312e12 &&
           hw.devices_per_node == 8 && strcmp(hw.name, "a100-slow-ib") == 0,
       "base values kept, overrides applied");
    is_double(hw.distir_dram_bandwidth, 1.5e12, 1e-12, "derived distir field follows override");
    is_double(hw.distir_inter_link_bandwidth, 12.5e9, 1e-12, "distir inter link follows override");
}

/* Memory value VAL parses to WANT bytes. */
static void
mem_is(const char *val, double want)
{
    char text[600];
    as_hw hw;
    as_err err = {0};

    snprintf(text, sizeof text, "base = a100-dgx\nname = m\nmemory = %s\nreserved_memory = 0\n",
             val);
    hw.memory = -1;
    as_hw_parse("m.hw", text, &hw, &err);
    is_double(hw.memory, want, 1e-12, "memory = %s", val);
}

/* Profile TEXT fails with a message equal to WANT. */
static void
file_fails(const char *text, const char *want, const char *what)
{
    as_hw hw;
    as_err err = {0};
    int rc = as_hw_parse("bad.hw", text, &hw, &err);

    ok(rc == AS_EPARSE && as_status_exit(rc) == 2 && strcmp(err.msg, want) == 0, "%s", what);
    if (strcmp(err.msg, want) != 0)
        diag("  got:  %s\n#   want: %s", err.msg, want);
}

static void
test_file_bad(void)
{
    mem_is("80GB", 80e9);
    mem_is("24 GiB", 24 * GIB);
    mem_is("1.5TB", 1.5e12);
    mem_is("2TiB", 2 * GIB * 1024);
    mem_is("1048576", 1048576);
    mem_is("512MiB", 512.0 * 1024 * 1024);

    file_fails("name = x\nmemory 80GiB\n", "bad.hw:2:1: expected 'key = value'", "missing '='");
    file_fails("name = x\n  colour = red\n", "bad.hw:2:3: unknown key 'colour'", "unknown key");
    file_fails("base = a100-dgx\nname = x\nhbm_bandwidth = fast\n",
               "bad.hw:3:17: bad number 'fast' for 'hbm_bandwidth'", "bad number");
    file_fails("base = a100-dgx\nname = x\nhbm_bandwidth = 2e12x\n",
               "bad.hw:3:17: bad number '2e12x' for 'hbm_bandwidth'", "trailing junk");
    file_fails("base = a100-dgx\nname = x\nintra_node_bandwidth = 0\n",
               "bad.hw:3:24: 'intra_node_bandwidth' must be > 0 (got 0)", "zero bandwidth");
    file_fails("base = a100-dgx\nname = x\nintra_node_latency = -1e-6\n",
               "bad.hw:3:22: 'intra_node_latency' must be >= 0 (got -1e-6)", "negative latency");
    file_fails("base = a100-dgx\nname = x\nmemory = -80GiB\n",
               "bad.hw:3:10: 'memory' must be > 0 (got -80GiB)", "negative memory");
    file_fails("base = a100-dgx\nname = x\nmemory = 80 GiBs\n",
               "bad.hw:3:10: bad size '80 GiBs' for 'memory' (a number, optionally with "
               "KB/MB/GB/TB or KiB/MiB/GiB/TiB)",
               "bad memory suffix");
    file_fails("base = a100-dgx\nname = x\ndevices_per_node = 2.5\n",
               "bad.hw:3:20: 'devices_per_node' must be an integer in 1..65536 (got 2.5)",
               "fractional devices_per_node");
    file_fails("base = a100-dgx\nname = x\nname = y\n",
               "bad.hw:3:1: duplicate key 'name' (first set on line 2)", "duplicate key");
    file_fails("base = b200\nname = x\n",
               "bad.hw:1:8: unknown base profile 'b200' (known: a10-pcie, a100-dgx, h100-dgx, "
               "v100-dgx2)",
               "unknown base");
    file_fails("name = x\npeak_flops.f32 = 1e12\nhbm_bandwidth = 1e12\n",
               "bad.hw:4:1: missing required keys 'memory', 'kernel_overhead', 'devices_per_node', "
               "'intra_node_bandwidth', 'intra_node_latency', 'inter_node_bandwidth', "
               "'inter_node_latency'",
               "missing required keys listed");
    file_fails("base = a100-dgx\n", "bad.hw:2:1: missing required key 'name'",
               "name is required even with a base");
    file_fails("base = a100-dgx\nname = x\nkernel_overhead =\n",
               "bad.hw:3:18: missing value for 'kernel_overhead'", "missing value");
    file_fails("base = a100-dgx\nname = x\n = 3\n", "bad.hw:3:2: missing key before '='",
               "missing key");
    file_fails("base = a100-dgx\nname = my gpu\n",
               "bad.hw:2:8: bad name 'my gpu' (letters, digits, '.', '_', '-', at most 63)",
               "name with a space");
    file_fails("base = a100-dgx\nname = x\npeak_flops.bf16 = nan\n",
               "bad.hw:3:19: bad number 'nan' for 'peak_flops.bf16'", "nan is not a number");
}

/* `hw show` output is itself a profile: print, parse back, compare. */
static void
test_roundtrip(void)
{
    char *buf = NULL;
    size_t len = 0;
    FILE *fp = open_memstream(&buf, &len);
    as_hw a, b;
    as_err err = {0};

    as_hw_find_builtin("h100-dgx", &a);
    as_hw_print(&a, fp);
    fclose(fp);
    ok(as_hw_parse("show.hw", buf, &b, &err) == AS_OK && memcmp(&a, &b, sizeof a) == 0,
       "as_hw_print output parses back to the same profile");
    if (err.msg[0])
        diag("  %s", err.msg);
    free(buf);
}

int
main(void)
{
    plan_lazy();
    test_parse();
    test_layout();
    test_parse_errors();
    test_new();
    test_links();
    test_builtin();
    test_file_good();
    test_file_bad();
    test_roundtrip();
    return done_testing();
}
