"""Small models the mutation tests (and the benchmark, before reduced seeds exist) mutate."""
from __future__ import annotations

from memo.model.ir import Layer, ModelIR


def lenet() -> ModelIR:
    return ModelIR(layers=[
        Layer("x", "InputLayer", {"batch_shape": [None, 28, 28, 1], "dtype": "float32"}),
        Layer("conv1", "Conv2D", {"filters": 6, "kernel_size": [5, 5], "activation": "relu"}, ["x"]),
        Layer("pool1", "MaxPooling2D", {"pool_size": [2, 2]}, ["conv1"]),
        Layer("conv2", "Conv2D", {"filters": 16, "kernel_size": [5, 5], "activation": "relu"}, ["pool1"]),
        Layer("pool2", "MaxPooling2D", {"pool_size": [2, 2]}, ["conv2"]),
        Layer("flat", "Flatten", {}, ["pool2"]),
        Layer("fc1", "Dense", {"units": 32, "activation": "relu"}, ["flat"]),
        Layer("fc2", "Dense", {"units": 10, "activation": "softmax"}, ["fc1"]),
    ], outputs=["fc2"], name="lenet")


def residual_net() -> ModelIR:
    return ModelIR(layers=[
        Layer("x", "InputLayer", {"batch_shape": [None, 16, 16, 3], "dtype": "float32"}),
        Layer("stem", "Conv2D", {"filters": 8, "kernel_size": [3, 3], "padding": "same"}, ["x"]),
        Layer("bn", "BatchNormalization", {}, ["stem"]),
        Layer("relu", "ReLU", {}, ["bn"]),
        Layer("conv_a", "Conv2D", {"filters": 8, "kernel_size": [3, 3], "padding": "same"}, ["relu"]),
        Layer("add", "Add", {}, ["relu", "conv_a"], call_style="list"),
        Layer("gap", "GlobalAveragePooling2D", {}, ["add"]),
        Layer("out", "Dense", {"units": 4}, ["gap"]),
    ], outputs=["out"], name="resnet_tiny")


def lstm_regressor() -> ModelIR:
    return ModelIR(layers=[
        Layer("seq", "InputLayer", {"batch_shape": [None, 12, 5], "dtype": "float32"}),
        Layer("lstm", "LSTM", {"units": 8, "return_sequences": True}, ["seq"]),
        Layer("lstm2", "LSTM", {"units": 8}, ["lstm"]),
        Layer("head", "Dense", {"units": 1}, ["lstm2"]),
    ], outputs=["head"], name="lstm_regressor")


MODELS = {"lenet": lenet, "resnet_tiny": residual_net, "lstm_regressor": lstm_regressor}
