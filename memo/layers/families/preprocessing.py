"""Preprocessing layers that run in an inference model without adapt(), vocabularies or strings:
Rescaling, Normalization (explicit mean/variance), Resizing, CenterCrop, and the random augmentation
layers, which are deterministic at inference (identity, or a center crop for RandomCrop)."""
from __future__ import annotations

import random
from typing import Any, Mapping, Sequence

from memo.layers import values as v
from memo.layers.families.common import channels, draw_modes, entry, only, size as size_of, spatial
from memo.layers.spec import Draw, Impossible, LayerSpec, ParamSpace, Shape
from memo.model.ir import LayerConfig

ANY_RANK = (2, 3, 4, 5)
IMAGE = (4,)
# Resize interpolations every Keras backend implements ("area" exists in TensorFlow only).
INTERPOLATIONS = ("bilinear", "nearest", "bicubic", "lanczos3", "lanczos5")
AFFINE_INTERPOLATIONS = ("nearest", "bilinear")
FILL_MODES = ("reflect", "wrap", "constant", "nearest")
FLIP_MODES = ("horizontal", "vertical", "horizontal_and_vertical")


def rescaling() -> LayerSpec:
    params = [v.shape("scale", v.SIGNED, v.number), v.shape("offset", v.SIGNED, v.number)]
    return entry("Rescaling", "preprocessing", ANY_RANK, params,
                 lambda d, shapes: {"scale": d.real("scale", -5.0, 5.0), "offset": d.real("offset", -5.0, 5.0)})


def normalization() -> LayerSpec:
    params = [v.flag("invert")]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        chans = channels(only(shapes))
        mean = [round(d.rng.uniform(-1, 1), 3) for _ in range(chans)]
        variance = [round(d.rng.uniform(0.1, 2), 3) for _ in range(chans)]
        return {"axis": -1, "mean": mean, "variance": variance, "invert": d.choice("invert")}

    return entry("Normalization", "preprocessing", ANY_RANK, params, sample)


def _height_width(d: Draw, shape: Shape, *, at_most_input: bool) -> dict[str, int]:
    h, w = spatial(shape)
    if at_most_input:
        return {"height": d.integer("height", 1, h, cap=16), "width": d.integer("width", 1, w, cap=16)}
    return {"height": d.integer("height", 1, 128, cap=16), "width": d.integer("width", 1, 128, cap=16)}


def resizing() -> LayerSpec:
    params = [v.shape("height", v.EXTENT), v.shape("width", v.EXTENT), v.mode("interpolation", INTERPOLATIONS),
              v.flag("crop_to_aspect_ratio"), v.flag("pad_to_aspect_ratio"), v.flag("antialias"), v.data_format()]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        config = _height_width(d, only(shapes), at_most_input=False)
        config["crop_to_aspect_ratio"] = d.choice("crop_to_aspect_ratio")
        # cropping and padding to the aspect ratio exclude each other
        config["pad_to_aspect_ratio"] = d.choice("pad_to_aspect_ratio", (False,) if config["crop_to_aspect_ratio"]
                                                 else v.BOOLS)
        return draw_modes(d, ["interpolation", "antialias", "data_format"], config)

    return entry("Resizing", "preprocessing", IMAGE, params, sample)


def cropper(name: str) -> LayerSpec:
    params = [v.shape("height", v.EXTENT), v.shape("width", v.EXTENT), v.data_format()]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        config = _height_width(d, only(shapes), at_most_input=True)
        return draw_modes(d, ["data_format"], config)

    return entry(name, "preprocessing", IMAGE, params, sample)


VALUE_RANGES = ((0, 1), (0, 255), (-1, 1))


def _range_key(raw: Any) -> Any:
    if isinstance(raw, (list, tuple)) and len(raw) == 2 and all(isinstance(x, (int, float)) for x in raw):
        return ",".join(str(int(x)) if float(x).is_integer() else str(x) for x in raw)
    return None


def value_range() -> ParamSpace:
    return v.mode("value_range", [_range_key(r) for r in VALUE_RANGES], VALUE_RANGES, normalize=_range_key)


def _rgb_images(rng: random.Random, spec: LayerSpec) -> list[Shape]:
    return [(None, rng.randint(1, 10), rng.randint(1, 10), 3)]


def augmentation(name: str, factors: Sequence[str], modes: dict[str, Sequence[str]], *, ranged: bool = False,
                 rgb: bool = False) -> LayerSpec:
    """An augmentation layer: identity at inference, but a distinct API every converter has to handle.
    ``ranged``: it declares the pixel ``value_range``; ``rgb``: it needs exactly three channels."""
    params = [*(v.shape(f, v.SCALE, v.number) for f in factors), *(v.mode(k, vals) for k, vals in modes.items())]
    if ranged:
        params.append(value_range())
    mode_names = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        if rgb and only(shapes)[-1] != 3:
            raise Impossible(f"{name} needs RGB images (3 channels)")
        config: LayerConfig = {f: d.real(f, 0.0, 0.9) for f in factors}
        return draw_modes(d, mode_names, config)

    return entry(name, "preprocessing", IMAGE, params, sample, input_maker=_rgb_images if rgb else None)


def auto_contrast() -> LayerSpec:
    """Deterministic at inference: rescales each image's range to value_range."""
    return entry("AutoContrast", "preprocessing", IMAGE, [value_range()],
                 lambda d, shapes: {"value_range": d.choice("value_range")})


# Audio front ends (real FFT compute at inference). Keras computes their STFT in float32 or float64 only.
AUDIO_DTYPES = frozenset({"float32", "float64"})
STFT_MODES = ("log", "magnitude", "psd", "real", "imag", "angle", "stft")
WINDOWS = ("hann", "hamming")
SCALINGS = ("density", "spectrum", v.NONE)


def _powers_of_two(low: int, high: int) -> list[int]:
    return [2 ** k for k in range(1, 8) if low <= 2 ** k <= high]


def _frames(d: Draw, length: int, *, window: str, step: str, fft: str) -> dict[str, int]:
    """A window no longer than the signal, a step within the window and an FFT size (a power of two) >= it."""
    frame = d.integer(window, 1, max(1, length), cap=16)
    return {window: frame, step: d.integer(step, 1, frame, cap=8),
            fft: d.pick(fft, _powers_of_two(frame, 128) or [128])}


def stft_spectrogram() -> LayerSpec:
    params = [v.mode("mode", STFT_MODES), v.shape("frame_length", v.EXTENT), v.shape("frame_step", v.EXTENT),
              v.shape("fft_length", v.EXTENT), v.mode("window", WINDOWS), v.flag("periodic"),
              v.mode("scaling", SCALINGS, ("density", "spectrum", None),
                     normalize=lambda raw: v.NONE if raw is None else raw),
              v.mode("padding", ("valid", "same")), v.flag("expand_dims"), v.data_format()]
    modes = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        config: LayerConfig = _frames(d, size_of(only(shapes)[1]), window="frame_length", step="frame_step",
                                         fft="fft_length")
        return draw_modes(d, modes, config)

    return entry("STFTSpectrogram", "preprocessing", (3,), params, sample, dtypes=AUDIO_DTYPES,
                 rank_map=lambda rank: frozenset({3, 4}))


def mel_strides(length: int, fft: int) -> list[int]:
    """The frame steps (at most ``fft``) for which MelSpectrogram really has the frame count Keras 3.15's
    shape inference declares.

    Its ``compute_output_shape`` says ``(length + step + 1) // step`` frames, but its centered STFT (padded
    by ``fft // 2`` on each side, windows of ``fft``) makes ``1 + length // step``: the two agree only when
    the step does not divide ``length + 1`` (never for step 1). Otherwise the symbolic build accepts a model
    that every backend rejects at its next layer (a Keras bug, steered around here).
    """
    return [step for step in range(2, fft + 1) if mel_step_fits(length, step)]


def mel_step_fits(length: int, step: int) -> bool:
    """Whether MelSpectrogram's frame step makes the frame count Keras declares for ``length`` samples
    (:func:`mel_strides`)."""
    return step >= 2 and (length + 1) % step != 0


def mel_spectrogram() -> LayerSpec:
    params = [v.shape("fft_length", v.EXTENT), v.shape("sequence_length", v.EXTENT),
              v.shape("sequence_stride", v.EXTENT[1:]),  # no step 1: see mel_strides
              v.shape("num_mel_bins", v.COUNT), v.mode("window", WINDOWS),
              v.mode("sampling_rate", (8000, 16000, 22050, 44100)), v.flag("power_to_db")]
    modes = [p.name for p in params if p.kind == "mode"]

    def sample(d: Draw, shapes: Sequence[Shape]) -> LayerConfig:
        length = size_of(only(shapes)[1])
        # the signal is reflect-padded by fft_length // 2 on each side, which needs more samples than that;
        # the FFT must also leave room for a frame step that keeps the declared frame count
        ffts = [fft for fft in _powers_of_two(2, max(2, 2 * length - 1)) if mel_strides(length, fft)]
        if not ffts:
            raise Impossible(f"no frame step gives MelSpectrogram's declared frame count for {length} samples")
        fft = d.pick("fft_length", ffts)
        strides = mel_strides(length, fft)
        window = d.integer("sequence_length", 1, fft, cap=16)
        # a step within the window where one fits (Keras does not require it; a step past it skips samples)
        steps = [step for step in strides if step <= window] or strides
        config: LayerConfig = {"fft_length": fft, "sequence_length": window,
                                  "sequence_stride": d.pick("sequence_stride", steps),
                                  "num_mel_bins": d.integer("num_mel_bins", 1, 64, cap=16)}
        return draw_modes(d, modes, config)

    def inputs(rng: random.Random, spec: LayerSpec) -> list[Shape]:
        return [(None, rng.randint(2, 64))]

    def runtime_rule(config: Mapping[str, Any], shapes: Sequence[Shape]) -> str | None:
        # what ``sample`` steers around, broken by a mutation that changed the signal's length upstream: the
        # symbolic call accepts both, the run does not (MirrorPad's "paddings must be less than the dimension
        # size"; a frame count unlike the declared one)
        length, fft, step = only(shapes)[1], config.get("fft_length"), config.get("sequence_stride")
        if length is None:
            return None
        if isinstance(fft, int) and fft // 2 >= length:
            return f"reflect-pads {length} samples by {fft // 2}"
        if isinstance(step, int) and not mel_step_fits(length, step):
            return f"frame step {step} on {length} samples makes fewer frames than declared"
        return None

    return entry("MelSpectrogram", "preprocessing", (2,), params, sample, dtypes=AUDIO_DTYPES,
                 rank_map=lambda rank: frozenset({3}), input_maker=inputs, runtime_rule=runtime_rule)


def build() -> list[LayerSpec]:
    affine = {"fill_mode": FILL_MODES, "interpolation": AFFINE_INTERPOLATIONS}
    # Not declared: RandomCrop (its symbolic output is cropped but at inference it returns the input
    # unchanged, so the model breaks downstream) and RandomShear (a saved factor reloads with the wrong sign
    # and its constructor rejects it). Both fail on every backend: invalid models, not findings.
    return [rescaling(), normalization(), resizing(), cropper("CenterCrop"),
            augmentation("RandomFlip", (), {"mode": FLIP_MODES}),
            augmentation("RandomRotation", ("factor",), affine),
            augmentation("RandomZoom", ("height_factor", "width_factor"), affine),
            augmentation("RandomTranslation", ("height_factor", "width_factor"), affine),
            augmentation("RandomContrast", ("factor",), {}, ranged=True),
            augmentation("RandomBrightness", ("factor",), {}, ranged=True),
            augmentation("RandomGrayscale", ("factor",), {"data_format": v.DATA_FORMATS}, rgb=True),
            augmentation("RandomHue", ("factor",), {}, ranged=True, rgb=True),
            augmentation("RandomSaturation", ("factor",), {}, ranged=True, rgb=True),
            augmentation("RandomSharpness", ("factor",), {}, ranged=True),
            augmentation("RandomInvert", ("factor",), {}, ranged=True),
            augmentation("RandomColorDegeneration", ("factor",), {}, ranged=True, rgb=True),
            auto_contrast(), stft_spectrogram(), mel_spectrogram()]
