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
    model.train(train)
    mode = torch.onnx.TrainingMode.TRAINING if train else torch.onnx.TrainingMode.EVAL
    torch.onnx.export(model, args, path, export_params=params, opset_version=opset,
                      training=mode, do_constant_folding=fold and not train,
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


MODELS = {"mlp": mlp}

if __name__ == "__main__":
    for n in sys.argv[1:] or list(MODELS):
        MODELS[n]()
