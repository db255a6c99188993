#!/usr/bin/python3
"""make.py -- regenerate the ONNX test models of autoshard (docs/onnx.md).

Needs Debian's python3-torch, python3-torchvision and python3-onnx
(/usr/bin/python3; PyTorch 1.13, ONNX 1.12).  Run from anywhere:

    /usr/bin/python3 tests/data/onnx/make.py [NAME...]

Each model NAME.onnx is written beside this script, without weights
(export_params=False: parameters are graph inputs) unless its name ends in
_w (tiny weights as initializers), together with NAME.expect: the numbers
the tests compare with autoshard's import -- the module's parameter count
(sum of p.numel() over model.parameters(), what torchvision reports) and,
where `autoshard gen` builds the same model, the gen command line.
"""
import os
import sys
import math
import warnings

warnings.filterwarnings("ignore")

import torch
import torch.nn as nn
import torch.nn.functional as F

HERE = os.path.dirname(os.path.abspath(__file__))
torch.manual_seed(0)


def nparams(m):
    return sum(p.numel() for p in m.parameters())


def export(name, model, args, opset=17, params=False, train=False, names=None, fold=True,
           gen=None, extra=None):
    path = os.path.join(HERE, name + ".onnx")
    # distinct values: the exporter merges parameters that are equal (all-ones norm weights ...)
    with torch.no_grad():
        for p in model.parameters():
            p.uniform_(0.5, 1.5)
    model.train(train)
    # PRESERVE, not EVAL: EVAL folds batchnorm into the convolutions (and drops its parameters)
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.PRESERVE
    torch.onnx.export(model, args, path, export_params=params, opset_version=opset,
                      training=mode, do_constant_folding=False,
                      input_names=names)
    with open(os.path.join(HERE, name + ".expect"), "w") as f:
        f.write("# written by make.py: what the import of %s.onnx must give\n" % name)
        f.write("params %d\n" % nparams(model))
        if gen:
            f.write("gen %s\n" % gen)
        for k, v in (extra or {}).items():
            f.write("%s %s\n" % (k, v))
    print("%-24s %8d bytes, %d parameters" % (name, os.path.getsize(path), nparams(model)))


class MLP(nn.Module):
    """784 -> 128 -> 64 -> 10 with ReLU and cross-entropy (Gemm + bias, transB=1)."""

    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x, y):
        for i, l in enumerate(self.layers):
            x = l(x)
            if i + 1 < len(self.layers):
                x = F.relu(x)
        return F.cross_entropy(x, y)


def mlp():
    m = MLP([784, 128, 64, 10])
    export("mlp", m, (torch.randn(32, 784), torch.randint(0, 10, (32,))), names=["x", "y"])
    t = MLP([16, 32, 8])
    export("mlp_w", t, (torch.randn(4, 16), torch.randint(0, 8, (4,))), params=True,
           names=["x", "y"])


class CNNLoss(nn.Module):
    """A torchvision classifier followed by cross-entropy: a forward graph with a loss."""

    def __init__(self, net):
        super().__init__()
        self.net = net

    def forward(self, x, y):
        return F.cross_entropy(self.net(x), y)


def cnn(name, ctor, batch, gen=None):
    import torchvision
    m = getattr(torchvision.models, ctor)()
    x = torch.randn(batch, 3, 224, 224)
    y = torch.randint(0, 1000, (batch,))
    export(name + "_eval", m, (x,), names=["image"])
    export(name + "_train", CNNLoss(m), (x, y), train=True, names=["image", "labels"], gen=gen)


def resnet18():
    cnn("resnet18", "resnet18", 2)
    # opset 13: training-mode BatchNormalization has 5 outputs and no training_mode attribute
    import torchvision
    x, y = torch.randn(2, 3, 224, 224), torch.randint(0, 1000, (2,))
    export("resnet18_train_op13", CNNLoss(torchvision.models.resnet18()), (x, y), opset=13,
           train=True, names=["image", "labels"])


def opsets():
    """The MLP at the older opsets PyTorch 1.13 writes (Softmax/Squeeze/Slice forms change)."""
    for op in (9, 11, 13, 15):
        m = MLPSoftmax([32, 16, 8])
        export("mlp_op%d" % op, m, (torch.randn(4, 32),), opset=op, names=["x"])


class MLPSoftmax(nn.Module):
    """Linear layers, then log_softmax over classes of a [B, 2, C/2] view, flattened back."""

    def __init__(self, sizes):
        super().__init__()
        self.layers = nn.ModuleList(nn.Linear(a, b) for a, b in zip(sizes, sizes[1:]))

    def forward(self, x):
        for l in self.layers:
            x = torch.tanh(l(x))
        x = x.view(x.size(0), 2, -1).softmax(1)
        return x.flatten(1)[:, 1:].sum(1).mean()


def wresnet50():
    cnn("wide_resnet50_2", "wide_resnet50_2", 2, gen="wresnet-50 --batch 2")


# GPT-2 and BERT block stacks written as autoshard's gen presets build them
# (src/graph/presets_transformer.c), so that FLOPs and parameters can be
# compared op for op: separate q/k/v projections, heads split by reshape +
# transpose, scores scaled by 1/sqrt(hd), an additive causal mask, exact
# GELU, learned positions sliced from a [1024, h] table, tied logits.
CFG = dict(layers=2, hidden=64, heads=4, seq=16, batch=2, vocab=128, max_pos=1024)


class Attn(nn.Module):
    def __init__(self, h, nh):
        super().__init__()
        self.nh = nh
        self.q, self.k, self.v, self.out = (nn.Linear(h, h) for _ in range(4))

    def forward(self, x, mask=None):
        B, S, H = x.shape
        hd = H // self.nh
        q = self.q(x).view(B, S, self.nh, hd).transpose(1, 2)
        k = self.k(x).view(B, S, self.nh, hd).transpose(1, 2)
        v = self.v(x).view(B, S, self.nh, hd).transpose(1, 2)
        s = (q @ k.transpose(-1, -2)) * (1.0 / math.sqrt(hd))
        if mask is not None:
            s = s + mask
        c = s.softmax(-1) @ v
        return self.out(c.transpose(1, 2).reshape(B, S, H))


class MLPBlock(nn.Module):
    def __init__(self, h):
        super().__init__()
        self.fc1, self.fc2 = nn.Linear(h, 4 * h), nn.Linear(4 * h, h)

    def forward(self, x):
        return self.fc2(F.gelu(self.fc1(x)))


class GPTBlock(nn.Module):
    def __init__(self, h, nh):
        super().__init__()
        self.ln1, self.attn, self.ln2, self.mlp = nn.LayerNorm(h), Attn(h, nh), nn.LayerNorm(h), MLPBlock(h)

    def forward(self, x, mask):
        x = x + self.attn(self.ln1(x), mask)
        return x + self.mlp(self.ln2(x))


class GPT(nn.Module):
    def __init__(self, c):
        super().__init__()
        self.c = c
        self.wte = nn.Embedding(c["vocab"], c["hidden"])
        self.wpe = nn.Parameter(torch.zeros(c["max_pos"], c["hidden"]))
        self.h = nn.ModuleList(GPTBlock(c["hidden"], c["heads"]) for _ in range(c["layers"]))
        self.ln_f = nn.LayerNorm(c["hidden"])

    def forward(self, ids, labels):
        S = ids.shape[1]
        x = self.wte(ids) + self.wpe[:S]
        mask = torch.triu(torch.full((S, S), -1e9), 1)
        for b in self.h:
            x = b(x, mask)
        logits = F.linear(self.ln_f(x), self.wte.weight)
        return F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))


class BERTBlock(nn.Module):
    def __init__(self, h, nh):
        super().__init__()
        self.attn, self.ln1, self.mlp, self.ln2 = Attn(h, nh), nn.LayerNorm(h), MLPBlock(h), nn.LayerNorm(h)

    def forward(self, x):
        x = self.ln1(x + self.attn(x))
        return self.ln2(x + self.mlp(x))


class BERT(nn.Module):
    def __init__(self, c):
        super().__init__()
        h = c["hidden"]
        self.wte = nn.Embedding(c["vocab"], h)
        self.wpe = nn.Parameter(torch.zeros(c["max_pos"], h))
        self.wtt = nn.Embedding(2, h)
        self.emb_ln = nn.LayerNorm(h)
        self.h = nn.ModuleList(BERTBlock(h, c["heads"]) for _ in range(c["layers"]))
        self.mlm_dense, self.mlm_ln = nn.Linear(h, h), nn.LayerNorm(h)
        self.mlm_bias = nn.Parameter(torch.zeros(c["vocab"]))
        self.pooler, self.nsp = nn.Linear(h, h), nn.Linear(h, 2)

    def forward(self, ids, type_ids, labels, nsp_labels):
        S = ids.shape[1]
        x = self.emb_ln(self.wte(ids) + self.wpe[:S] + self.wtt(type_ids))
        for b in self.h:
            x = b(x)
        m = self.mlm_ln(F.gelu(self.mlm_dense(x)))
        logits = F.linear(m, self.wte.weight) + self.mlm_bias
        mlm = F.cross_entropy(logits.reshape(-1, logits.shape[-1]), labels.reshape(-1))
        p = torch.tanh(self.pooler(x[:, 0]))
        return mlm + F.cross_entropy(self.nsp(p), nsp_labels)


def gen_args(c):
    return "--layers %d --hidden %d --heads %d --seq %d --batch %d --vocab %d" % (
        c["layers"], c["hidden"], c["heads"], c["seq"], c["batch"], c["vocab"])


def gpt():
    c = CFG
    ids = torch.randint(0, c["vocab"], (c["batch"], c["seq"]))
    # no constant folding: the Shape -> Gather -> Unsqueeze -> Concat -> Reshape chains stay
    export("gpt2_block", GPT(c), (ids, ids), names=["ids", "labels"], fold=False,
           gen="gpt2-small " + gen_args(c))


def bert():
    c = dict(CFG, max_pos=512)  # BERT's position table, as gen's bert presets
    ids = torch.randint(0, c["vocab"], (c["batch"], c["seq"]))
    types = torch.randint(0, 2, (c["batch"], c["seq"]))
    nsp = torch.randint(0, 2, (c["batch"],))
    export("bert_block", BERT(c), (ids, types, ids, nsp),
           names=["ids", "type_ids", "labels", "nsp_labels"], gen="bert-base " + gen_args(c))


# Hand-written graphs (onnx.helper) for the op mappings and the error paths
# that PyTorch's exports above do not reach.
def hand():
    import numpy as np
    from onnx import TensorProto as TP, helper as oh, numpy_helper as nh
    import onnx

    def save(name, nodes, inputs, outputs, inits=(), vinfo=(), opset=17, check=True):
        g = oh.make_graph(nodes, name, inputs, outputs, initializer=list(inits),
                          value_info=list(vinfo))
        m = oh.make_model(g, opset_imports=[oh.make_opsetid("", opset)], producer_name="make.py")
        if check:
            onnx.checker.check_model(m)
        onnx.save(m, os.path.join(HERE, name + ".onnx"))
        print("%-24s %8d bytes" % (name, os.path.getsize(os.path.join(HERE, name + ".onnx"))))

    f = lambda n, s: oh.make_tensor_value_info(n, TP.FLOAT, s)
    i64 = lambda n, v: nh.from_array(np.array(v, dtype=np.int64), n)
    f32 = lambda n, v: nh.from_array(np.array(v, dtype=np.float32), n)
    N = oh.make_node

    # Convolutions and pools: asymmetric pads, SAME_UPPER, ceil_mode, 1-D conv.
    save("ops_conv", [
        N("Conv", ["x", "w"], ["c1"], pads=[0, 0, 1, 1], strides=[2, 2]),
        N("Conv", ["x", "w", "b"], ["c2"], auto_pad="SAME_UPPER", strides=[2, 2]),
        N("MaxPool", ["z"], ["p1"], kernel_shape=[3, 3], strides=[2, 2], ceil_mode=1),
        N("AveragePool", ["x"], ["p2"], kernel_shape=[2, 2], strides=[2, 2], pads=[1, 1, 1, 1]),
        N("Conv", ["s", "w1"], ["c3"], pads=[1, 1], group=1),
        N("GlobalAveragePool", ["c2"], ["g"]),
    ], [f("x", [2, 4, 9, 9]), f("w", [8, 4, 3, 3]), f("b", [8]), f("s", [2, 4, 10]),
        f("w1", [6, 4, 3]), f("z", [2, 4, 10, 10])],
        [f("c1", [2, 8, 4, 4]), f("c2", [2, 8, 5, 5]), f("p1", [2, 4, 5, 5]),
         f("p2", [2, 4, 5, 5]), f("c3", [2, 6, 10]), f("g", [2, 8, 1, 1])])

    # BatchNormalization in training mode as opset 9 writes it: 5 outputs.
    save("ops_bn5", [
        N("BatchNormalization", ["x", "sc", "bi", "mean", "var"],
          ["y", "rmean", "rvar", "smean", "svar"], epsilon=1e-5, momentum=0.9),
    ], [f("x", [4, 3, 5, 5])],
        [f("y", [4, 3, 5, 5]), f("rmean", [3]), f("rvar", [3]), f("smean", [3]), f("svar", [3])],
        inits=[f32("sc", [1, 1, 1]), f32("bi", [0, 0, 0]), f32("mean", [0, 0, 0]),
               f32("var", [1, 1, 1])], opset=9, check=False)

    # Dropout: training with its mask (opset 13, 3 inputs, 2 outputs), inference (1 input).
    save("ops_dropout", [
        N("Dropout", ["x", "ratio", "train"], ["d", "mask"]),
        N("Dropout", ["d"], ["e"]),
        N("Relu", ["e"], ["y"]),
    ], [f("x", [4, 8])], [f("y", [4, 8]), oh.make_tensor_value_info("mask", TP.BOOL, [4, 8])],
        inits=[f32("ratio", 0.25), nh.from_array(np.array(True), "train")])

    # Shape chains, Where, Expand, GatherElements, Not, ReduceMean, Pow/Sqrt/Div,
    # old-opset Softmax, Split, Slice with steps, Tile, Pad, and an op kept as opaque.
    save("ops_misc", [
        N("Shape", ["x"], ["sh"]),
        N("Gather", ["sh", "zero"], ["b0"], axis=0),
        N("Unsqueeze", ["b0"], ["b1"], axes=[0]),
        N("Concat", ["b1", "m1"], ["tgt"], axis=0),
        N("Reshape", ["x", "tgt"], ["flat"]),                     # [2, 12]
        N("ReduceMean", ["x"], ["mu"], axes=[2], keepdims=1),     # [2, 3, 1]
        N("Pow", ["x", "two"], ["sq"]),
        N("Sqrt", ["sq"], ["rt"]),
        N("Div", ["rt", "mu"], ["q"]),
        N("Greater", ["q", "half"], ["gt"]),
        N("Not", ["gt"], ["ng"]),
        N("Where", ["ng", "q", "x"], ["w"]),
        N("Expand", ["mu", "shp"], ["ex"]),                       # [2, 3, 4]
        N("GatherElements", ["w", "idx"], ["ge"], axis=2),
        N("Softmax", ["ge"], ["sm"], axis=1),                     # opset 11: flattened [2, 12]
        N("Split", ["sm"], ["s0", "s1"], axis=2, split=[1, 3]),
        N("Slice", ["s1", "st", "en", "ax", "stp"], ["sl"]),
        N("Tile", ["sl", "rep"], ["ti"]),
        N("Pad", ["ti", "pads"], ["pd"]),
        N("TopK", ["ex", "k"], ["tv", "ti2"], axis=2),
    ], [f("x", [2, 3, 4])],
        [f("flat", [2, 12]), f("pd", [2, 5, 4]), f("tv", [2, 3, 2]), f("ex", [2, 3, 4])],
        inits=[i64("zero", 0), i64("m1", [-1]), f32("two", 2.0), f32("half", 0.5),
               i64("shp", [2, 3, 4]), i64("idx", np.zeros((2, 3, 4), dtype=np.int64)),
               i64("st", [0]), i64("en", [3]), i64("ax", [1]), i64("stp", [2]),
               i64("rep", [1, 2, 1]), i64("pads", [0, 0, 0, 0, 1, 1]), i64("k", [2])],
        vinfo=[f("tv", [2, 3, 2]), oh.make_tensor_value_info("ti2", TP.INT64, [2, 3, 2])],
        opset=11)

    # Nodes written out of order: imported in a stable topological order.
    save("ops_unsorted", [
        N("Relu", ["h"], ["y"]),
        N("MatMul", ["x", "w"], ["h"]),
    ], [f("x", [4, 8])], [f("y", [4, 6])], inits=[f32("w", np.ones((8, 6)))], check=False)

    # Bad models: each is one line, exit 2.
    save("bad_cycle", [
        N("Add", ["x", "b"], ["a"], name="add_a"),
        N("Relu", ["a"], ["b"], name="relu_b"),
    ], [f("x", [4])], [f("b", [4])], check=False)
    save("bad_undefined", [N("Relu", ["nothere"], ["y"], name="r")], [f("x", [4])],
         [f("y", [4])], check=False)
    ext = onnx.TensorProto(name="w", data_type=TP.FLOAT, dims=[8, 6])
    ext.data_location = TP.EXTERNAL
    e = ext.external_data.add()
    e.key, e.value = "location", "w_missing.bin"
    save("bad_external", [N("MatMul", ["x", "w"], ["y"])], [f("x", [4, 8])], [f("y", [4, 6])],
         inits=[ext], check=False)
    save("bad_symbolic", [N("Relu", ["x"], ["y"])], [f("x", ["batch", 8])], [f("y", ["batch", 8])])
    save("bad_shape", [N("MatMul", ["x", "w"], ["y"], name="mm")], [f("x", [4, 8])],
         [f("y", [4, 7])], inits=[f32("w", np.ones((8, 6)))], check=False)


MODELS = {"hand": hand, "opsets": opsets, "mlp": mlp, "resnet18": resnet18, "wresnet50": wresnet50, "gpt": gpt, "bert": bert}

if __name__ == "__main__":
    for n in sys.argv[1:] or list(MODELS):
        MODELS[n]()
