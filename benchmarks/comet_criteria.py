"""COMET's three model-diversity criteria, with COMET's own definitions, over a memo campaign's executed models.

COMET (Li et al., "COMET: Coverage-guided Model Generation For Deep Learning Library Testing", TOSEM 2023;
github.com/maybeLee/COMET, ``implementations/scripts/coverage/architecture_coverage.py`` and
``scripts/tools/architecture_utils.py``) reports, after 6 hours, 18.8 % of its layer pairs and 50 % of its
layer parameter values. memo's own criteria (memo/coverage.py) differ in catalogue, denominators and what
counts, so this script measures memo's models with COMET's ruler. Definitions as COMET's code has them
(this is a reimplementation, not a copy):

* layer type ("API coverage"): classes of COMET's 67-layer list (``LAYERLIST`` in
  ``scripts/generation/layer_pools.py``) used by some model, over 67.
* layer pair ("API pair" / layer sequence): ordered (class of a producer, class of its consumer) over the
  edges of each model; pairs with a merge layer (Concatenate, Average, Maximum, Minimum, Add, Subtract,
  Multiply, Dot) or Dense at either end, or a class outside the list, are dropped (``trim_edge``). The
  denominator is every ordered pair of listed classes, neither a merge layer, where some output rank of the
  first is an input rank of the second by COMET's ``LayerOutputNdim``/``LayerInputNdim``: 2,170 pairs. As in
  COMET, an observed pair outside that space still counts (the script says how many there are).
* layer parameter ("configuration coverage"): for each listed class, its configurations
  (``layer.get_config()`` without ``name``, ``filters`` and ``units``), then for each parameter of COMET's
  pool (``boostraps/api_implementations/api_config_pool.json``): a numeric parameter (pool ``[0]``) counts
  its distinct values up to 6 (COMET checks ``len <= 5`` before appending) against a denominator of 5; any
  other parameter counts every distinct value seen (in the pool's list or not) against the length of its
  list. Total denominator: 2,049. ``filters`` and ``units`` are in the denominator but never counted (COMET
  pops them), and COMET counts default values (a ``None`` regularizer) like any other.

Mapping to memo: a model is one executed mutant (``executions`` joined with ``mutants.ir``, memo's IR:
memo/model/ir.py), seeds included unless ``--mutants-only``. Edges are IR edges (``Layer.inputs``). A
layer's configuration is the full Keras 3 config (the IR's config deserialized by Keras and read back with
``get_config()``, so defaults are present as in COMET; numbers compare by value, other values by their JSON
text). Differences that remain: COMET's list is Keras 2's; LocallyConnected1D/2D and ThresholdedReLU are
gone from Keras 3 (memo cannot cover them: at most 64 of 67 types), and Keras 3 renamed LeakyReLU's
``alpha`` to ``negative_slope`` (read under its new name). 42 of memo's 106 catalogue classes (Dense,
attention, Embedding, preprocessing layers, ...) are outside COMET's list and do not count here.

Reproduce: .venv/bin/python benchmarks/comet_criteria.py engines30 [--mutants-only] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import re
import sqlite3
import sys
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from memo.model.ir import ModelIR

PUBLISHED = {"pairs": 0.188, "params": 0.50}  # COMET after 6 hours (TOSEM 2023)
PARAMETER_SPACE = 5
NUM = None  # a numeric parameter (COMET's pool value [0])
MERGE = frozenset({"Concatenate", "Average", "Maximum", "Minimum", "Add", "Subtract", "Multiply", "Dot"})
NOT_IN_PAIRS = MERGE | {"Dense"}
POPPED = ("name", "filters", "units")
KERAS3_NAMES = {("LeakyReLU", "alpha"): "negative_slope"}  # (class, COMET's parameter) -> Keras 3 config key

# ----------------------------------------------------------------------------- COMET's layer list and ranks
_ANY = (2, 3, 4, 5, 6)
_FAMILIES = {
    "conv": ("Conv1D", "Conv2D", "Conv3D", "SeparableConv1D", "SeparableConv2D", "DepthwiseConv1D",
             "DepthwiseConv2D", "Conv2DTranspose", "Conv3DTranspose"),
    "pool": tuple(f"{kind}Pooling{n}D" for kind in ("Max", "Average", "GlobalMax", "GlobalAverage") for n in (1, 2, 3)),
    "rnn": ("LSTM", "GRU", "SimpleRNN", "TimeDistributed", "Bidirectional", "ConvLSTM1D", "ConvLSTM2D", "ConvLSTM3D"),
    "norm": ("BatchNormalization", "LayerNormalization"),
    "reg": ("Dropout", "SpatialDropout1D", "SpatialDropout2D", "SpatialDropout3D", "GaussianDropout",
            "GaussianNoise", "ActivityRegularization", "AlphaDropout"),
    "act": ("ReLU", "Softmax", "LeakyReLU", "PReLU", "ELU", "ThresholdedReLU"),
    "reshape": ("Flatten", "RepeatVector", "Permute", *(f"{op}{n}D" for op in ("Cropping", "UpSampling", "ZeroPadding")
                                                        for n in (1, 2, 3))),
    "merge": tuple(sorted(MERGE)),
    "local": ("LocallyConnected1D", "LocallyConnected2D"),
}
LAYERS: tuple[str, ...] = tuple(name for family in _FAMILIES.values() for name in family)


def _ranks(name: str) -> tuple[int, ...]:
    """A 1D/2D/3D spatial layer (``Conv2DTranspose``: 2D) takes rank 3/4/5."""
    match = re.search(r"([123])D", name)
    assert match, name
    return (int(match.group(1)) + 2,)


def _rank_tables() -> tuple[dict[str, tuple[int, ...]], dict[str, tuple[int, ...]]]:
    """COMET's LayerInputNdim and LayerOutputNdim (merge layers have none: they never pair)."""
    ins: dict[str, tuple[int, ...]] = {}
    outs: dict[str, tuple[int, ...]] = {}
    for name in _FAMILIES["conv"] + _FAMILIES["pool"][:6] + ("Cropping1D", "Cropping2D", "Cropping3D",
                                                             "UpSampling1D", "UpSampling2D", "UpSampling3D",
                                                             "ZeroPadding1D", "ZeroPadding2D", "ZeroPadding3D",
                                                             "SpatialDropout1D", "SpatialDropout2D",
                                                             "SpatialDropout3D", "LocallyConnected1D",
                                                             "LocallyConnected2D"):
        ins[name] = outs[name] = _ranks(name)
    for name in _FAMILIES["pool"][6:]:  # global pooling: rank 2, or the input rank with keepdims
        ins[name] = _ranks(name)
        outs[name] = (2, *ins[name])
    for name in ("LSTM", "GRU", "SimpleRNN", "Bidirectional", "Permute"):
        ins[name] = outs[name] = (3,)
    for n in (1, 2, 3):  # ConvLSTMnD: rank n + 3 in, n + 3 (return_sequences) or n + 2 out
        ins[f"ConvLSTM{n}D"], outs[f"ConvLSTM{n}D"] = (n + 3,), (n + 3, n + 2)
    ins["TimeDistributed"] = outs["TimeDistributed"] = (3, 4, 5, 6)
    ins["BatchNormalization"] = outs["BatchNormalization"] = (3, 4, 5, 6)
    for name in ("LayerNormalization", "Dropout", "GaussianDropout", "GaussianNoise", "ActivityRegularization",
                 "AlphaDropout", *_FAMILIES["act"]):
        ins[name] = outs[name] = _ANY
    ins["Flatten"], outs["Flatten"] = _ANY, (2,)
    ins["RepeatVector"], outs["RepeatVector"] = (2,), (3,)
    return ins, outs


INPUT_RANKS, OUTPUT_RANKS = _rank_tables()


# ----------------------------------------------------------------------------- COMET's parameter pool
def _weights(name: str, initializers: int, *, regularizer: bool = True, constraint: bool = True) -> dict:
    out = {f"{name}_initializer": initializers}
    if regularizer:
        out[f"{name}_regularizer"] = 2
    if constraint:
        out[f"{name}_constraint"] = 5
    return out


def _conv(padding: int, *, transpose: bool = False) -> dict:
    return {"filters": NUM, "kernel_size": NUM, "strides": NUM, "padding": padding, "data_format": 2,
            "dilation_rate": NUM, "activation": 11, "use_bias": 2, **_weights("kernel", 14), **_weights("bias", 15),
            "activity_regularizer": 2, **({"output_padding": 2} if transpose else {})}


def _separable(padding: int, *, trainable: bool) -> dict:
    return {"filters": NUM, "kernel_size": NUM, "strides": NUM, "padding": padding, "data_format": 2,
            "dilation_rate": NUM, "depth_multiplier": NUM, "activation": 11, "use_bias": 2,
            **_weights("depthwise", 15), **_weights("pointwise", 15), **_weights("bias", 15),
            "activity_regularizer": 2, **({"trainable": 2} if trainable else {})}


_DEPTHWISE = {"kernel_size": NUM, "strides": NUM, "padding": 2, "depth_multiplier": NUM, "data_format": 2,
              "dilation_rate": NUM, "activation": 11, "use_bias": 2, **_weights("depthwise", 15),
              **_weights("bias", 15), "activity_regularizer": 2}
_RECURRENT_WEIGHTS = {**_weights("kernel", 14), **_weights("recurrent", 15), **_weights("bias", 15),
                      "activity_regularizer": 2}
_RNN_FLAGS = {"dropout": NUM, "recurrent_dropout": NUM, "return_sequences": 2, "return_state": 2,
              "go_backwards": 2, "stateful": 2}
_CONV_LSTM = {"filters": NUM, "kernel_size": NUM, "strides": NUM, "padding": 2, "data_format": 2,
              "dilation_rate": NUM, "activation": 11, "recurrent_activation": 11, "use_bias": 2,
              "unit_forget_bias": 2, **_RECURRENT_WEIGHTS, **_RNN_FLAGS}
_NORM = {"axis": 2, "epsilon": NUM, "center": 2, "scale": 2, **_weights("beta", 14), **_weights("gamma", 14)}
_LOCAL = {"filters": NUM, "kernel_size": NUM, "strides": NUM, "data_format": 2, "activation": 11, "use_bias": 2,
          **_weights("kernel", 14), **_weights("bias", 15), "activity_regularizer": 2}

POOL: dict[str, dict[str, int | None]] = {name: {} for name in LAYERS}  # class -> parameter -> list length
POOL.update({
    "Conv1D": _conv(3), "Conv2D": _conv(2), "Conv3D": _conv(2),
    "Conv2DTranspose": _conv(2, transpose=True), "Conv3DTranspose": _conv(2, transpose=True),
    "SeparableConv1D": _separable(3, trainable=True), "SeparableConv2D": _separable(2, trainable=False),
    "DepthwiseConv1D": _DEPTHWISE, "DepthwiseConv2D": _DEPTHWISE,
    **{name: {"pool_size": NUM, "strides": 2, "padding": 2, "data_format": 2} for name in _FAMILIES["pool"][:6]},
    **{name: {"data_format": 2, "keepdims": 2} for name in _FAMILIES["pool"][6:]},
    "LSTM": {"units": NUM, "activation": 12, "recurrent_activation": 12, "use_bias": 2, "unit_forget_bias": 2,
             **_RECURRENT_WEIGHTS, **_RNN_FLAGS, "unroll": 2},
    "GRU": {"units": NUM, "activation": 11, "recurrent_activation": 11, "use_bias": 2, **_RECURRENT_WEIGHTS,
            **_RNN_FLAGS, "unroll": 2, "reset_after": 2},
    "SimpleRNN": {"units": NUM, "use_bias": 2, **_RECURRENT_WEIGHTS, **_RNN_FLAGS, "unroll": 2},
    "Bidirectional": {"merge_mode": 5},
    **{f"ConvLSTM{n}D": _CONV_LSTM for n in (1, 2, 3)},
    "BatchNormalization": {**_NORM, "momentum": NUM, **_weights("moving_mean", 14, regularizer=False, constraint=False),
                           **_weights("moving_variance", 14, regularizer=False, constraint=False)},
    "LayerNormalization": _NORM,
    "GaussianNoise": {"stddev": NUM}, "ActivityRegularization": {"l1": NUM, "l2": NUM},
    "Flatten": {"data_format": 2}, "RepeatVector": {"n": NUM},
    **{f"Cropping{n}D": {"cropping": NUM} for n in (1, 2, 3)},
    "UpSampling1D": {"size": 2}, "UpSampling2D": {"data_format": 2, "interpolation": 2},
    "UpSampling3D": {"data_format": 2},
    "ZeroPadding1D": {"padding": NUM}, "ZeroPadding2D": {"padding": NUM, "data_format": 2},
    "ZeroPadding3D": {"padding": NUM},
    "Concatenate": {"axis": 2}, "Dot": {"normalize": 2},
    "ReLU": {"max_value": NUM, "negative_slope": NUM, "threshold": NUM}, "Softmax": {"axis": 2},
    "LeakyReLU": {"alpha": NUM}, "ELU": {"alpha": NUM}, "ThresholdedReLU": {"theta": NUM},
    "PReLU": {"shared_axes": 2, **_weights("alpha", 14)},
    "LocallyConnected1D": {**_LOCAL, "padding": 1}, "LocallyConnected2D": {**_LOCAL, "padding": 2},
})


# ----------------------------------------------------------------------------- denominators
def pair_space() -> frozenset[tuple[str, str]]:
    """COMET's ``total_edges``: ordered pairs of listed, non-merge classes whose ranks connect."""
    return frozenset((a, b) for a in LAYERS for b in LAYERS
                     if a not in NOT_IN_PAIRS and b not in NOT_IN_PAIRS
                     and set(OUTPUT_RANKS[a]) & set(INPUT_RANKS[b]))


def parameter_space() -> int:
    """COMET's ``total_param_num``."""
    return sum(PARAMETER_SPACE if size is NUM else size for params in POOL.values() for size in params.values())


# ----------------------------------------------------------------------------- what models cover
def model_types(ir: ModelIR) -> set[str]:
    return {layer.class_name for layer in ir.body if layer.class_name in POOL}


def model_pairs(ir: ModelIR) -> set[tuple[str, str]]:
    """COMET's ``extract_edges`` + ``trim_edge`` on memo's IR."""
    by_name = ir.by_name()
    pairs = set()
    for layer in ir.body:
        for src in layer.inputs:
            pair = (by_name[src].class_name, layer.class_name)
            if all(name in POOL and name not in NOT_IN_PAIRS for name in pair):
                pairs.add(pair)
    return pairs


def value_key(value: Any) -> str:
    """A hashable stand-in for a config value: numbers compare by value (as COMET's ``in`` on lists does),
    everything else by its JSON text (tuples as lists)."""
    def numbers(x: Any) -> Any:
        if isinstance(x, bool) or x is None or isinstance(x, str):
            return x
        if isinstance(x, (int, float)):
            return float(x)
        if isinstance(x, (list, tuple)):
            return [numbers(item) for item in x]
        if isinstance(x, dict):
            return {str(k): numbers(v) for k, v in x.items()}
        return str(x)
    return json.dumps(numbers(value), sort_keys=True)


def parameter_count(class_name: str, configs: Iterable[Mapping[str, Any]], *, capped: bool = False) -> int:
    """COMET's ``_layer_config_coverage`` (its ``hp``) for the distinct configurations of one class.

    ``capped``: no parameter counts more than its share of the denominator (5 for a numeric one, the length
    of its list otherwise), which COMET does not enforce."""
    pool = POOL[class_name]
    seen: dict[str, set[str]] = {param: set() for param in pool}
    for config in configs:
        for param in pool:
            key = KERAS3_NAMES.get((class_name, param), param)
            if key in config and key not in POPPED:
                seen[param].add(value_key(config[key]))
    def limit(size: int | None) -> int:
        if capped:
            return PARAMETER_SPACE if size is NUM else size
        return PARAMETER_SPACE + 1 if size is NUM else sys.maxsize

    return sum(min(len(values), limit(pool[param])) for param, values in seen.items())


FullConfig = Callable[[str, dict[str, Any]], dict[str, Any]]


def measure(models: Iterable[ModelIR], full_config: FullConfig = lambda cls, config: config) -> dict[str, Any]:
    """COMET's three figures over ``models``; ``full_config(class, ir_config)`` returns the config
    ``get_config()`` would (defaults included)."""
    types: set[str] = set()
    pairs: set[tuple[str, str]] = set()
    configs: dict[str, dict[str, dict[str, Any]]] = {}
    count = 0
    for ir in models:
        count += 1
        types |= model_types(ir)
        pairs |= model_pairs(ir)
        for layer in ir.body:
            if layer.class_name in POOL:
                config = {k: v for k, v in full_config(layer.class_name, layer.config).items() if k not in POPPED}
                configs.setdefault(layer.class_name, {})[value_key(config)] = config
    space = pair_space()

    def params(capped: bool) -> list[int]:
        return [sum(parameter_count(name, found.values(), capped=capped) for name, found in configs.items()),
                parameter_space()]

    return {"models": count,
            "types": [len(types), len(LAYERS)],
            "pairs": [len(pairs), len(space)],
            "pairs_in_space": [len(pairs & space), len(space)],
            "pairs_outside_space": sorted(pairs - space),
            "params": params(False),
            "params_capped": params(True),
            "types_covered": sorted(types)}


# ----------------------------------------------------------------------------- the campaign
def executed_models(database: Path, *, mutants_only: bool) -> list[ModelIR]:
    """The IR of every executed model of a campaign (read-only)."""
    with sqlite3.connect(f"file:{database}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT m.ir FROM mutants m JOIN executions e ON e.mutant_id = m.id WHERE m.ir IS NOT NULL"
                          + (" AND m.operator != 'seed'" if mutants_only else "") + " ORDER BY m.id").fetchall()
    return [ModelIR.loads(ir) for (ir,) in rows]


def keras_full_config() -> FullConfig:
    """``get_config()`` of the layer Keras deserializes from an IR config (cached; the IR config itself when
    Keras cannot deserialize it alone)."""
    import memo  # noqa: F401  (sets KERAS_BACKEND=numpy)
    from memo.model.ir import Layer
    from memo.model.keras_runtime import deserialize_layer, keras_module

    keras = keras_module()
    cache: dict[str, dict[str, Any]] = {}

    def full(class_name: str, config: dict[str, Any]) -> dict[str, Any]:
        key = class_name + value_key(config)
        if key not in cache:
            try:
                cache[key] = deserialize_layer(keras, Layer("layer", class_name, config)).get_config()
            except Exception:  # noqa: BLE001 - a layer Keras cannot rebuild alone keeps its IR config
                cache[key] = dict(config)
        return cache[key]

    return full


def campaign_database(name: str) -> Path:
    path = Path(name)
    for candidate in (path, path / "campaign.sqlite", Path("campaigns") / name / "campaign.sqlite"):
        if candidate.is_file():
            return candidate
    raise SystemExit(f"no campaign database for {name!r} (tried {path}, campaigns/{name}/campaign.sqlite)")


def _share(pair: list[int]) -> str:
    return f"{pair[0]} / {pair[1]} ({100.0 * pair[0] / pair[1]:.1f} %)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("campaign", help="campaign name (campaigns/NAME) or its folder or database")
    parser.add_argument("--mutants-only", action="store_true", help="leave the executed seeds out")
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args(argv)
    database = campaign_database(args.campaign)
    figures = measure(executed_models(database, mutants_only=args.mutants_only), keras_full_config())
    which = "executed mutants" if args.mutants_only else "executed models (seeds included)"
    print(f"COMET's criteria over {figures['models']} {which} of {database}")
    print(f"  layer type       {_share(figures['types'])}")
    print(f"  layer pair       {_share(figures['pairs'])}   (only COMET's declared pairs: "
          f"{_share(figures['pairs_in_space'])})")
    print(f"  layer parameter  {_share(figures['params'])}   (each parameter capped at its share of the "
          f"denominator: {_share(figures['params_capped'])})")
    print(f"COMET after 6 h (published): layer pair {100 * PUBLISHED['pairs']:.1f} %, "
          f"layer parameter {100 * PUBLISHED['params']:.0f} %")
    flags = ["--mutants-only"] if args.mutants_only else []
    command = " ".join(["benchmarks/comet_criteria.py", args.campaign, *flags])
    print(f"reproduce: .venv/bin/python {command}")
    if args.json:
        args.json.write_text(json.dumps(figures, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
