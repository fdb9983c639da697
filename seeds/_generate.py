"""Writes the bundled seed files (run from the repository root: ``.venv/bin/python seeds/_generate.py``).

The four small seeds are stored as real Keras JSON architectures; the six published ImageNet
architectures as recipes (builder + arguments, built with ``weights=None`` on load). No weights are
stored: memo generates them deterministically. The file name (without ``.json``) is the seed's name.
"""
from __future__ import annotations

import json
from pathlib import Path

import memo  # noqa: F401  (sets KERAS_BACKEND=numpy)
from memo.model.keras_runtime import keras_module

HERE = Path(__file__).resolve().parent

# name -> (builder, input shape): the smallest input each architecture accepts, so mutants stay cheap on
# CPU; the layer structure is the same as at 224x224 (InceptionV3 and InceptionResNetV2 need 75, Xception 71).
APPLICATIONS = {
    "densenet121": ("DenseNet121", [32, 32, 3]),
    "inception_resnet_v2": ("InceptionResNetV2", [75, 75, 3]),
    "inception_v3": ("InceptionV3", [75, 75, 3]),
    "mobilenet_v2": ("MobileNetV2", [32, 32, 3]),
    "resnet50": ("ResNet50", [32, 32, 3]),
    "xception": ("Xception", [71, 71, 3]),
}


def lenet5(k):
    x = inp = k.Input((28, 28, 1), name="input")  # MNIST
    x = k.layers.Conv2D(6, 5, padding="same", activation="relu", name="conv1")(x)
    x = k.layers.MaxPooling2D(2, name="pool1")(x)
    x = k.layers.Conv2D(16, 5, activation="relu", name="conv2")(x)
    x = k.layers.MaxPooling2D(2, name="pool2")(x)
    x = k.layers.Flatten(name="flatten")(x)
    x = k.layers.Dense(120, activation="relu", name="fc1")(x)
    x = k.layers.Dense(84, activation="relu", name="fc2")(x)
    out = k.layers.Dense(10, activation="softmax", name="predictions")(x)
    return k.Model(inp, out, name="lenet5")


def alexnet_cifar10(k):
    x = inp = k.Input((32, 32, 3), name="input")  # CIFAR-10
    for i, (filters, kernel, pool) in enumerate([(96, 3, True), (256, 5, True), (384, 3, False), (384, 3, False),
                                                 (256, 3, True)], start=1):
        x = k.layers.Conv2D(filters, kernel, padding="same", name=f"conv{i}")(x)
        x = k.layers.BatchNormalization(name=f"bn{i}")(x)
        x = k.layers.Activation("relu", name=f"relu{i}")(x)
        if pool:
            x = k.layers.MaxPooling2D(3, strides=2, name=f"pool{i}")(x)
    x = k.layers.Flatten(name="flatten")(x)
    for i in (1, 2):
        x = k.layers.Dense(1024, activation="relu", name=f"fc{i}")(x)
        x = k.layers.Dropout(0.5, name=f"dropout{i}")(x)
    out = k.layers.Dense(10, activation="softmax", name="predictions")(x)
    return k.Model(inp, out, name="alexnet_cifar10")


def lstm_sine_wave(k):
    x = inp = k.Input((50, 1), name="input")  # windows of 50 samples of a sine wave -> next sample
    x = k.layers.LSTM(50, return_sequences=True, name="lstm1")(x)
    x = k.layers.Dropout(0.2, name="dropout1")(x)
    x = k.layers.LSTM(100, name="lstm2")(x)
    x = k.layers.Dropout(0.2, name="dropout2")(x)
    out = k.layers.Dense(1, activation="linear", name="prediction")(x)
    return k.Model(inp, out, name="lstm_sine_wave")


def lstm_stock_price(k):
    x = inp = k.Input((30, 5), name="input")  # 30 trading days x (open, high, low, close, volume) -> next close
    x = k.layers.LSTM(64, return_sequences=True, name="lstm1")(x)
    x = k.layers.Dropout(0.2, name="dropout1")(x)
    x = k.layers.LSTM(64, return_sequences=True, name="lstm2")(x)
    x = k.layers.Dropout(0.2, name="dropout2")(x)
    x = k.layers.LSTM(32, name="lstm3")(x)
    x = k.layers.Dense(16, activation="relu", name="fc1")(x)
    out = k.layers.Dense(1, name="prediction")(x)
    return k.Model(inp, out, name="lstm_stock_price")


def main() -> None:
    keras = keras_module()
    for build in (lenet5, alexnet_cifar10, lstm_sine_wave, lstm_stock_price):
        model = build(keras)
        document = json.loads(model.to_json())
        document.pop("compile_config", None)
        (HERE / f"{model.name}.json").write_text(json.dumps(document, indent=1, sort_keys=True) + "\n")
    for name, (builder, shape) in APPLICATIONS.items():
        recipe = {"format": "memo-seed/1", "name": name, "builder": f"keras.applications.{builder}",
                  "kwargs": {"input_shape": shape}}
        (HERE / f"{name}.json").write_text(json.dumps(recipe, indent=1) + "\n")


if __name__ == "__main__":
    main()
