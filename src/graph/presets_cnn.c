/* presets_cnn.c -- wide ResNet generator (Zagoruyko & Komodakis 2016, in
 * torchvision's wide_resnet50_2 layout).
 *
 * ResNet-50 v1.5 with the bottleneck's inner width multiplied by the width
 * factor (2 for WRN-50-2): conv 7x7/2 + batchnorm + relu, maxpool 3x3/2,
 * four stages of bottlenecks ([3,4,6,3] blocks for depth 50, [3,4,23,3] for
 * 101, [3,8,36,3] for 152; the stride sits on the 3x3 conv, a 1x1 conv +
 * batchnorm projects the shortcut of each stage's first block), global
 * average pooling, a fully connected classifier and cross-entropy.  Convs
 * have no bias, as in torchvision; batchnorm's running statistics are
 * buffers, not parameters, so they are not counted (68.9M for WRN-50-2).
 */
#include "config.h"

#include <stdio.h>

#include "presets_internal.h"

/* conv KxK/STRIDE (padding K/2, no bias) named CONV, then batchnorm named BN. */
static int32_t
wrn_conv_bn(as_pbuild *b, const char *conv, const char *bn, int32_t x, int64_t cout, int64_t k,
            int64_t stride)
{
    int64_t st[2] = {stride, stride}, pad[2] = {k / 2, k / 2};
    int64_t cin = x >= 0 ? as_preset_i_shape(b, x)->dim[1] : 1;
    as_attr a[2] = {AS_ATTR_V("stride", 2, st), AS_ATTR_V("padding", 2, pad)};
    int32_t in[3];

    in[0] = x;
    in[1] = as_preset_i_param(b, AS_DIMS(cout, cin, k, k), "%s.w", conv);
    x = as_preset_i_op(b, "conv2d", in, 2, a, 2, "%s", conv);
    in[0] = x;
    in[1] = as_preset_i_param(b, AS_DIMS(cout), "%s.g", bn);
    in[2] = as_preset_i_param(b, AS_DIMS(cout), "%s.b", bn);
    return as_preset_i_op(b, "batchnorm", in, 3, NULL, 0, "%s", bn);
}

/* Bottleneck block SCOPE ("layer2.0"): 1x1, 3x3/stride, 1x1 (x4), shortcut, relu. */
static int32_t
wrn_bottleneck(as_pbuild *b, const char *scope, int32_t x, int64_t planes, int64_t stride,
               int project)
{
    int64_t width = planes * b->cfg->width, out = planes * 4;
    char c[64], n[64];
    int32_t y, id = x;

    snprintf(c, sizeof c, "%s.conv1", scope);
    snprintf(n, sizeof n, "%s.bn1", scope);
    y = wrn_conv_bn(b, c, n, x, width, 1, 1);
    snprintf(n, sizeof n, "%s.relu1", scope);
    y = as_preset_i_op1(b, "relu", y, n);
    snprintf(c, sizeof c, "%s.conv2", scope);
    snprintf(n, sizeof n, "%s.bn2", scope);
    y = wrn_conv_bn(b, c, n, y, width, 3, stride);
    snprintf(n, sizeof n, "%s.relu2", scope);
    y = as_preset_i_op1(b, "relu", y, n);
    snprintf(c, sizeof c, "%s.conv3", scope);
    snprintf(n, sizeof n, "%s.bn3", scope);
    y = wrn_conv_bn(b, c, n, y, out, 1, 1);
    if (project) {
        snprintf(c, sizeof c, "%s.downsample.0", scope);
        snprintf(n, sizeof n, "%s.downsample.1", scope);
        id = wrn_conv_bn(b, c, n, x, out, 1, stride);
    }
    snprintf(n, sizeof n, "%s.add", scope);
    y = as_preset_i_op2(b, "add", y, id, n);
    snprintf(n, sizeof n, "%s.out", scope);
    return as_preset_i_op1(b, "relu", y, n);
}

void
as_preset_i_build_wresnet(as_pbuild *b)
{
    static const int blocks50[4] = {3, 4, 6, 3}, blocks101[4] = {3, 4, 23, 3},
                     blocks152[4] = {3, 8, 36, 3};
    const as_preset_cfg *c = b->cfg;
    const int *blocks = c->layers == 152 ? blocks152 : c->layers == 101 ? blocks101 : blocks50;
    int64_t k3[2] = {3, 3}, s2[2] = {2, 2}, p1[2] = {1, 1}, pool[2], flat[2];
    int32_t x, labels;
    as_attr a[3];
    char scope[32];
    int s, i;

    x = as_preset_i_input(b, b->dt, 0, AS_DIMS(c->batch, 3, c->image, c->image), "image");
    labels = as_preset_i_input(b, AS_DT_I32, 0, AS_DIMS(c->batch), "labels");
    x = wrn_conv_bn(b, "conv1", "bn1", x, 64, 7, 2);
    x = as_preset_i_op1(b, "relu", x, "relu");
    a[0] = AS_ATTR_V("kernel", 2, k3);
    a[1] = AS_ATTR_V("stride", 2, s2);
    a[2] = AS_ATTR_V("padding", 2, p1);
    x = as_preset_i_op(b, "maxpool2d", &x, 1, a, 3, "maxpool");
    for (s = 0; s < 4; s++)
        for (i = 0; i < blocks[s] && b->rc == AS_OK; i++) {
            snprintf(scope, sizeof scope, "layer%d.%d", s + 1, i);
            x = wrn_bottleneck(b, scope, x, (int64_t)64 << s, i == 0 && s > 0 ? 2 : 1, i == 0);
        }
    if (b->rc != AS_OK)
        return;
    /* Global average pooling: a kernel as large as the last feature map. */
    pool[0] = as_preset_i_shape(b, x)->dim[2];
    pool[1] = as_preset_i_shape(b, x)->dim[3];
    flat[0] = c->batch;
    flat[1] = as_preset_i_shape(b, x)->dim[1];
    a[0] = AS_ATTR_V("kernel", 2, pool);
    x = as_preset_i_op(b, "avgpool2d", &x, 1, a, 1, "avgpool");
    a[0] = AS_ATTR_V("shape", 2, flat);
    x = as_preset_i_op(b, "reshape", &x, 1, a, 1, "flatten");
    x = as_preset_i_linear(b, "fc", x, flat[1], c->classes, 1);
    x = as_preset_i_op2(b, "cross_entropy", x, labels, "loss");
    if (b->rc == AS_OK)
        as_graph_mark_output(b->g, x);
}
