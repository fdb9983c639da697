"""Regenerate the bundled example architectures (Keras JSON, no weights): ``python examples/make_examples.py``.

memo generates weights deterministically (``--seed``), so only the architectures are committed.
"""
from __future__ import annotations

from pathlib import Path

import memo  # noqa: F401  (selects Keras's numpy backend: no library under test is loaded)
from memo.model.build import build_keras_model
from memo.model.ir import ModelIR
from memo.model.keras_runtime import keras_module

HERE = Path(__file__).resolve().parent


def conv_net(keras):
    x = inputs = keras.Input((32, 32, 3), name="image")
    x = keras.layers.Conv2D(16, 3, padding="same", name="conv1")(x)
    x = keras.layers.BatchNormalization(name="bn1")(x)
    x = keras.layers.ReLU(name="relu1")(x)
    x = keras.layers.MaxPooling2D(name="pool1")(x)
    x = keras.layers.Conv2D(32, 3, padding="same", activation="relu", name="conv2")(x)
    x = keras.layers.DepthwiseConv2D(3, padding="same", name="depthwise")(x)
    x = keras.layers.BatchNormalization(name="bn2")(x)
    x = keras.layers.Activation("tanh", name="tanh")(x)
    x = keras.layers.AveragePooling2D(2, name="pool2")(x)
    x = keras.layers.Conv2D(32, 1, activation="sigmoid", name="pointwise")(x)
    x = keras.layers.GlobalAveragePooling2D(name="gap")(x)
    x = keras.layers.Dense(32, activation="relu", name="fc1")(x)
    x = keras.layers.Dropout(0.5, name="dropout")(x)
    outputs = keras.layers.Dense(10, activation="softmax", name="logits")(x)
    return keras.Model(inputs, outputs, name="conv_net")


def lstm_net(keras):
    x = inputs = keras.Input((20, 8), name="series")
    x = keras.layers.Dense(16, activation="tanh", name="embed")(x)
    x = keras.layers.LSTM(24, return_sequences=True, name="lstm1")(x)
    x = keras.layers.LayerNormalization(name="norm1")(x)
    x = keras.layers.GRU(16, return_sequences=True, name="gru")(x)
    x = keras.layers.Conv1D(16, 3, padding="causal", activation="relu", name="conv1d")(x)
    x = keras.layers.LSTM(16, name="lstm2")(x)
    x = keras.layers.Dense(32, activation="relu", name="dense1")(x)
    x = keras.layers.Dense(16, activation="elu", name="dense2")(x)
    x = keras.layers.Dense(8, activation="selu", name="dense3")(x)
    outputs = keras.layers.Dense(1, name="forecast")(x)
    return keras.Model(inputs, outputs, name="lstm_net")


def residual_net(keras):
    inputs = keras.Input((16, 16, 8), name="features")
    a = keras.layers.Conv2D(8, 3, padding="same", activation="relu", name="branch_a")(inputs)
    b = keras.layers.SeparableConv2D(8, 3, padding="same", name="branch_b")(inputs)
    x = keras.layers.Add(name="add")([a, b])
    x = keras.layers.BatchNormalization(name="bn")(x)
    c = keras.layers.Conv2D(8, 1, name="shortcut")(inputs)
    x = keras.layers.Concatenate(name="concat")([x, c])
    x = keras.layers.Conv2D(16, 3, strides=2, activation="relu", name="down")(x)
    x = keras.layers.ZeroPadding2D(1, name="pad")(x)
    x = keras.layers.MaxPooling2D(name="pool")(x)
    x = keras.layers.Flatten(name="flatten")(x)
    x = keras.layers.Dense(16, activation="relu", name="fc")(x)
    outputs = keras.layers.Dense(4, activation="softmax", name="probs")(x)
    return keras.Model(inputs, outputs, name="residual_net")


def main() -> None:
    keras = keras_module()
    for make in (conv_net, lstm_net, residual_net):
        model = make(keras)
        ir = ModelIR.from_keras_config(model.get_config())
        build_keras_model(ir)  # the committed file must round-trip through memo's IR
        path = HERE / f"{model.name}.json"
        path.write_text(model.to_json(indent=1) + "\n")
        print(f"{path.name}: {len(ir.body)} layers")


if __name__ == "__main__":
    main()
