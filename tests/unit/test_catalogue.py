"""The layer catalogue: declared spaces are well formed, samplers are valid by construction (Keras shape
inference on the numpy backend accepts >= 99 % of sampled settings, per entry), with_param honours the
requested value, and configs Keras writes map back into the declared spaces."""
from __future__ import annotations

import json
import random

import pytest

from memo.layers import CATALOGUE, MERGING, RESHAPING, get_spec, pair_possible, possible_pairs
from memo.layers.families.recurrent import MAX_UNROLL
from memo.layers.probe import build_rate, single_layer_ir
from memo.layers.spec import MODE, SHAPE

SAMPLES_PER_ENTRY = 40
MEMO_FAMILIES = (
    "Conv1D Conv2D Conv3D SeparableConv1D SeparableConv2D DepthwiseConv1D DepthwiseConv2D Conv1DTranspose "
    "Conv2DTranspose Conv3DTranspose MaxPooling1D MaxPooling2D MaxPooling3D AveragePooling1D AveragePooling2D "
    "AveragePooling3D GlobalMaxPooling1D GlobalMaxPooling2D GlobalMaxPooling3D GlobalAveragePooling1D "
    "GlobalAveragePooling2D GlobalAveragePooling3D LSTM GRU SimpleRNN Bidirectional TimeDistributed ConvLSTM1D "
    "ConvLSTM2D ConvLSTM3D BatchNormalization LayerNormalization Dropout SpatialDropout1D SpatialDropout2D "
    "SpatialDropout3D GaussianDropout GaussianNoise AlphaDropout ActivityRegularization Flatten RepeatVector "
    "Permute Reshape Cropping1D Cropping2D Cropping3D UpSampling1D UpSampling2D UpSampling3D ZeroPadding1D "
    "ZeroPadding2D ZeroPadding3D Concatenate Average Maximum Minimum Add Subtract Multiply Dot ReLU Softmax "
    "LeakyReLU PReLU ELU Activation").split()
NEWER_APIS = ("Dense EinsumDense Embedding Attention AdditiveAttention MultiHeadAttention GroupQueryAttention "
              "GroupNormalization UnitNormalization RMSNormalization Identity Rescaling Resizing CenterCrop "
              "AdaptiveAveragePooling2D AdaptiveMaxPooling1D").split()


def test_catalogue_covers_memo_and_newer_apis():
    assert len(CATALOGUE) >= 90
    missing = [name for name in MEMO_FAMILIES + NEWER_APIS if name not in CATALOGUE]
    assert not missing
    assert get_spec("Conv2D") is CATALOGUE["Conv2D"]
    assert get_spec("NoSuchLayer") is None


def test_reshaping_and_merging_sets():
    assert {"Flatten", "Reshape", "Permute", "Cropping2D", "ZeroPadding3D", "UpSampling1D"} <= RESHAPING
    assert {"Add", "Concatenate", "Dot", "Subtract"} <= MERGING
    assert all(CATALOGUE[name].arity[0] >= 2 for name in MERGING)


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_param_spaces_are_well_formed(name):
    spec = CATALOGUE[name]
    names = [p.name for p in spec.params]
    assert len(names) == len(set(names)), "a parameter is declared twice"
    for space in spec.params:
        assert space.kind in (MODE, SHAPE)
        assert space.values and len(set(space.values)) == len(space.values)
        assert json.loads(json.dumps(list(space.values))) == list(space.values), "values must survive JSON"
        if space.kind == MODE:
            for value in space.values:
                assert space.canonical(space.concrete(value)) == value, (space.name, value)
        else:
            assert [b.label for b in space.buckets] == list(space.values)
    for mode_name, candidates in spec.mode_candidates().items():
        assert len(candidates) == len(spec.param(mode_name).values)


def test_canonical_rejects_values_outside_the_declared_space():
    conv = CATALOGUE["Conv2D"]
    assert conv.param("padding").canonical("full") is None
    assert conv.param("filters").canonical(0) is None
    assert conv.param("filters").canonical(True) is None
    assert conv.param("filters").canonical(300) == "65+"
    assert conv.param("kernel_size").canonical([3, 5]) == "4-7"
    assert conv.param("kernel_initializer").canonical({"class_name": "GlorotUniform", "config": {}}) \
        == "glorot_uniform"
    assert conv.param("kernel_regularizer").canonical({"class_name": "L1L2", "config": {}}) == "l1_l2"
    assert conv.param("kernel_regularizer").canonical(None) == "none"
    assert conv.param("kernel_constraint").canonical({"class_name": "MinMaxNorm"}) == "min_max_norm"
    assert conv.param("activation").canonical(None) == "linear"
    assert conv.param("activation").canonical("no_such_activation") is None
    assert conv.coverage_values({"padding": "full", "filters": 8, "unknown": 1}) == [("filters", "5-16")]


@pytest.fixture(scope="module")
def build_rates():
    return {name: build_rate(spec, SAMPLES_PER_ENTRY, seed=7) for name, spec in CATALOGUE.items()}


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_sampled_settings_pass_keras_shape_inference(name, build_rates):
    rate, errors = build_rates[name]
    assert rate >= 0.99, f"{name}: {rate:.2%} built; first errors: {errors}"


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_sampler_is_deterministic_and_stays_in_declared_space(name):
    spec = CATALOGUE[name]
    rng = random.Random(3)
    for _ in range(20):
        shapes = spec.random_inputs(rng)
        assert spec.accepts(shapes)
        seed = rng.random()
        first, second = spec.sample(random.Random(seed), shapes), spec.sample(random.Random(seed), shapes)
        assert first == second
        for space in spec.params:
            if space.name in first and first[space.name] is not None:
                assert space.canonical(first[space.name]) is not None, (space.name, first[space.name])


def test_accepts_checks_rank_and_arity():
    assert CATALOGUE["Conv2D"].accepts([(None, 8, 8, 3)])
    assert not CATALOGUE["Conv2D"].accepts([(None, 8, 3)])
    assert not CATALOGUE["Add"].accepts([(None, 4)])
    assert not CATALOGUE["Add"].accepts([(None, 4), (None, 5)])
    assert CATALOGUE["Add"].accepts([(None, 4), (None, 4), (None, 4)])
    assert not CATALOGUE["Subtract"].accepts([(None, 4)] * 3)
    assert CATALOGUE["Concatenate"].accepts([(None, 4, 2), (None, 4, 5)])
    assert not CATALOGUE["Concatenate"].accepts([(None, 4, 2), (None, 3, 5)])
    assert CATALOGUE["Reshape"].sample(random.Random(0), [(None, None, 3)]) == {"target_shape": (-1,)}


def test_with_param_sets_every_declared_value_it_can():
    """Every (param, value) of Conv2D is reachable on a roomy input, and the result builds in Keras."""
    from memo.model.build import build_keras_model

    spec = CATALOGUE["Conv2D"]
    shapes = [(None, 12, 12, 60)]  # 60 channels: a divisor in every groups bucket
    rng = random.Random(0)
    base = spec.sample(rng, shapes)
    for space in spec.params:
        for value in space.values:
            config = spec.with_param(rng, base, space.name, value, shapes)
            assert config is not None, (space.name, value)
            assert space.canonical(config[space.name]) == value
            build_keras_model(single_layer_ir(spec, config, shapes))


def test_with_param_keeps_other_settings_and_refuses_impossible_values():
    spec = CATALOGUE["Conv2D"]
    shapes = [(None, 6, 6, 3)]
    base = spec.sample(random.Random(1), shapes)
    changed = spec.with_param(random.Random(2), base, "activation", "tanh", shapes)
    assert changed["activation"] == "tanh"
    assert {k: v for k, v in changed.items() if k != "activation"} == \
        {k: v for k, v in base.items() if k != "activation"}
    assert spec.with_param(random.Random(2), base, "kernel_size", "8+", shapes) is None  # 6x6 input, valid pad
    assert spec.with_param(random.Random(2), base, "padding", "causal", shapes) is None  # not declared
    assert spec.with_param(random.Random(2), base, "groups", "2", shapes) is None  # 3 channels


@pytest.mark.parametrize("name", sorted(CATALOGUE))
def test_with_param_results_are_valid(name):
    """For each entry, forcing random (param, value) pairs gives configs Keras builds, or None."""
    from memo.errors import InvalidModelError
    from memo.model.build import build_keras_model

    spec = CATALOGUE[name]
    if not spec.params:
        return
    rng = random.Random(11)
    built = 0
    for _ in range(6):
        shapes = spec.random_inputs(rng)
        base = spec.sample(rng, shapes)
        space = rng.choice(spec.params)
        value = rng.choice(space.values)
        config = spec.with_param(rng, base, space.name, value, shapes)
        if config is None:
            continue
        assert space.canonical(config[space.name]) == value
        try:
            build_keras_model(single_layer_ir(spec, config, shapes))
        except InvalidModelError as exc:
            pytest.fail(f"{name} with {space.name}={value!r}: {exc}")
        built += 1
    assert built > 0


def test_pair_possible_follows_ranks():
    assert pair_possible("Conv2D", "BatchNormalization")
    assert pair_possible("GlobalAveragePooling2D", "Dense")
    assert pair_possible("Dense", "Conv2D")  # Dense keeps rank 4
    assert not pair_possible("Flatten", "Conv2D")
    assert not pair_possible("RepeatVector", "Conv2D")
    assert pair_possible("Conv1D", "LSTM")
    assert ("LSTM", "Dense") in possible_pairs()
    assert all(a in CATALOGUE and b in CATALOGUE for a, b in possible_pairs())


def test_keras_written_configs_map_into_declared_spaces():
    """A config as Keras's get_config() writes it (serialized initializers, tuples) is canonicalized."""
    from memo.model.keras_runtime import keras_module

    keras = keras_module()
    layer = keras.layers.Conv2D(8, 3, kernel_initializer="he_normal", kernel_regularizer="l1l2",
                                kernel_constraint="min_max_norm", activation="gelu", padding="same")
    values = dict(CATALOGUE["Conv2D"].coverage_values(layer.get_config()))
    assert values["kernel_initializer"] == "he_normal"
    assert values["bias_initializer"] == "zeros"
    assert values["kernel_regularizer"] == "l1_l2"
    assert values["kernel_constraint"] == "min_max_norm"
    assert values["bias_constraint"] == "none"
    assert values["activation"] == "gelu"
    assert values["kernel_size"] == "2-3" and values["filters"] == "5-16" and values["padding"] == "same"
    wrapped = keras.layers.Bidirectional(keras.layers.GRU(4), merge_mode="sum").get_config()
    assert dict(CATALOGUE["Bidirectional"].coverage_values(wrapped)) == {"layer": "GRU", "merge_mode": "sum"}


def test_computes_in_follows_the_reference_kernels():
    """Which float dtypes a config may compute in (the DType operator's choices): declared input dtypes, less
    what TensorFlow's CPU kernels or memo's numpy weight writer cannot do."""
    conv = {"strides": (1, 1), "kernel_initializer": "glorot_uniform"}
    assert all(CATALOGUE["Conv2D"].computes_in(conv, d) for d in ("float16", "float32", "float64"))
    assert not CATALOGUE["Conv2D"].computes_in(conv, "bfloat16")  # not declared
    assert not CATALOGUE["Embedding"].computes_in({}, "int32")  # an input dtype, not a compute dtype
    orthogonal = {**conv, "kernel_initializer": {"class_name": "Orthogonal", "config": {}}}
    assert not CATALOGUE["Conv2D"].computes_in(orthogonal, "float16")
    assert CATALOGUE["Conv2D"].computes_in(orthogonal, "float64")
    wrapped = {"layer": {"class_name": "LSTM", "config": {"recurrent_initializer": "orthogonal"}}}
    assert not CATALOGUE["Bidirectional"].computes_in(wrapped, "float16")
    for name in ("MaxPooling3D", "AveragePooling3D", "AdaptiveMaxPooling3D", "AdaptiveAveragePooling3D",
                 "TimeDistributed"):
        assert CATALOGUE[name].computes_in({}, "float32")
        assert not any(CATALOGUE[name].computes_in({}, d) for d in ("float16", "float64")), name
    assert CATALOGUE["MaxPooling2D"].computes_in({}, "float16")
    for name in ("DepthwiseConv2D", "SeparableConv2D"):
        spec = CATALOGUE[name]
        assert spec.computes_in({"strides": (1, 2)}, "float32") and not spec.computes_in({"strides": (1, 2)}, "float64")
        assert spec.computes_in({"strides": (2, 2)}, "float16") and spec.computes_in({"strides": 2}, "float64")
    assert CATALOGUE["DepthwiseConv1D"].computes_in({"strides": (3,)}, "float64")


def test_mel_spectrogram_frames_match_keras_shape_inference():
    """Keras declares (n + step + 1) // step frames, its STFT makes 1 + n // step: only steps that do not
    divide n + 1 are drawn, also when a step bucket is forced."""
    spec = CATALOGUE["MelSpectrogram"]
    rng = random.Random(5)
    assert spec.sample(rng, [(None, 1)]) is None  # one sample: no step fits in the only FFT size
    for length in range(2, 70):
        for _ in range(5):
            config = spec.sample(rng, [(None, length)])
            forced = spec.with_param(rng, config, "sequence_stride", rng.choice(("2-4", "5-16")), [(None, length)])
            for cfg in filter(None, (config, forced)):
                step = cfg["sequence_stride"]
                assert (length + step + 1) // step == 1 + length // step, (length, cfg)
                assert step <= cfg["fft_length"] and cfg["sequence_length"] <= cfg["fft_length"] < 2 * length
    assert "1" not in spec.param("sequence_stride").values
    assert spec.with_param(rng, config, "sequence_length", "1", [(None, 20)])["sequence_length"] == 1


def test_recurrent_layers_unroll_short_sequences_only() -> None:
    """An unrolled recurrent layer copies its cell once per time step: over hundreds of steps every library
    spends its whole timeout building the graph."""
    for name in ("GRU", "LSTM", "SimpleRNN"):
        spec = CATALOGUE[name]
        for steps, allowed in ((MAX_UNROLL, True), (MAX_UNROLL + 1, False), (702, False)):
            shape = [(None, steps, 8)]
            forced = spec.with_param(random.Random(0), spec.sample(random.Random(0), shape), "unroll", True, shape)
            assert (forced is not None) == allowed, (name, steps)


def test_settings_the_reference_refuses_at_run_time_are_never_drawn_and_are_rejected() -> None:
    from memo.errors import InvalidModelError
    from memo.model.ir import Layer
    from memo.mutation.analysis import TensorInfo, call_layer

    rng = random.Random(0)
    for dims in (1, 2, 3):  # TensorFlow's SIGFPE: an adaptive max pooling whose last output size is 1
        spec = get_spec(f"AdaptiveMaxPooling{dims}D")
        for _ in range(200):
            shape = (None, *[rng.randint(1, 9) for _ in range(dims - 1)], rng.randint(2, 9), 3)
            config = spec.sample(rng, [shape])
            assert config is not None and config["output_size"][-1] >= 2
            assert spec.refuses_at_run_time(config, [shape]) is None
        assert spec.sample(rng, [(None, *[4] * (dims - 1), 1, 3)]) is None  # no setting for a last extent of 1
        assert all(value != "1" for value in spec.param("output_size").values)
    assert get_spec("AdaptiveAveragePooling1D").refuses_at_run_time({"output_size": (1,)}, [(None, 8, 3)]) is None
    pooling = Layer("p", "AdaptiveMaxPooling2D", {"output_size": [17, 1]}, ["x"])
    with pytest.raises(InvalidModelError, match="SIGFPE"):
        call_layer(pooling, [TensorInfo((None, 17, 2, 64), "float32")])
    pooling = Layer("p", "AdaptiveMaxPooling2D", {"output_size": [1, 4]}, ["x"])  # a last input extent of 1
    with pytest.raises(InvalidModelError, match="SIGFPE"):
        call_layer(pooling, [TensorInfo((None, 30, 1, 4), "float32")])
    assert call_layer(pooling, [TensorInfo((None, 30, 2, 4), "float32")]).shape == (None, 1, 4, 4)
    # RMSNormalization's scale multiplies against the last axis: axis 2 runs on a rank-3 input only
    norm = Layer("n", "RMSNormalization", {"axis": 2, "epsilon": 1e-5}, ["x"])
    assert call_layer(norm, [TensorInfo((None, 24, 20), "float32")]).shape == (None, 24, 20)
    with pytest.raises(InvalidModelError, match="last axis"):
        call_layer(norm, [TensorInfo((None, 24, 20, 4), "float32")])


def test_time_distributed_refuses_a_step_rank_its_inner_layer_does_not_take() -> None:
    spec = get_spec("TimeDistributed")
    pooling = {"layer": {"class_name": "AveragePooling2D", "config": {"pool_size": [1, 1]}, "module": "keras.layers"}}
    assert spec.refuses_at_run_time(pooling, [(None, 5, 12, 12, 2)]) is None  # steps of rank 4: (None, 12, 12, 2)
    assert "rank" in spec.refuses_at_run_time(pooling, [(None, 12, 12, 2)])


def test_mel_spectrogram_refuses_a_signal_its_settings_no_longer_fit() -> None:
    spec = get_spec("MelSpectrogram")
    rng = random.Random(0)
    for _ in range(200):  # what the sampler draws always runs
        shape = (None, rng.randint(2, 64))
        config = spec.sample(rng, [shape])
        assert config is not None and spec.refuses_at_run_time(config, [shape]) is None, (shape, config)
    # a campaign's mutant: fft_length 32 drawn for a long signal, then the signal shortened upstream to 2 samples
    settings = {"fft_length": 32, "sequence_length": 16, "sequence_stride": 5}
    assert "reflect-pads 2 samples by 16" in spec.refuses_at_run_time(settings, [(None, 2)])
    assert spec.refuses_at_run_time(settings, [(None, 40)]) is None
    assert "fewer frames" in spec.refuses_at_run_time(settings, [(None, 39)])  # step 5 divides 40


def test_einsum_dense_refuses_an_input_rank_unlike_its_equation() -> None:
    spec = get_spec("EinsumDense")
    rng = random.Random(0)
    for rank in (2, 3, 4):
        shape = (None, *[rng.randint(1, 6) for _ in range(rank - 1)])
        config = spec.sample(rng, [shape])
        assert config is not None and spec.refuses_at_run_time(config, [shape]) is None
    # a campaign's mutant: "ab,bc->ac" drawn for a rank-2 input, fed (None, 1, 1) after a keepdims pooling
    assert "rank-2 input, not rank 3" in spec.refuses_at_run_time({"equation": "ab,bc->ac"}, [(None, 1, 1)])
