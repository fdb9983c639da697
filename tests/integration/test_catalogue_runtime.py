"""The catalogue is truthful at run time: every entry's own samples (its sampler, over every input rank and
dtype it declares) run on the reference library, keras-tensorflow, in memo's real worker, with the output
shapes Keras's symbolic build promised.

memo validates mutants only symbolically (Keras on numpy); a rule the catalogue gets wrong there shows up
only when a library runs the model, and then on every library: a wasted model, not a finding. The samples
run side by side, many single-layer branches per model (``memo.layers.probe.samples_ir``), on one warm
worker; a model that fails is split in halves until the failing samples are found.

Failures that are bugs of the libraries themselves (the layer should run, the reference crashes) stay in
the catalogue, since finding them is memo's job: they are listed in KNOWN_LIBRARY_BUGS, kept out of the
sweep, and each is checked to still fail, so the list cannot go stale.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import pytest

from memo.layers import CATALOGUE
from memo.layers.probe import Sample, batches, entry_samples, samples_ir
from tests.conftest import module_executor

pytestmark = [pytest.mark.integration, pytest.mark.slow, pytest.mark.timeout(900)]

REFERENCE = "keras-tensorflow"
SEED = 2024
PER_RANK = 2        # samples per (entry, input rank, dtype variant)
BATCH = 150         # samples per model
BATCH_INPUT = 2     # memo.model.inputs.make_inputs's batch size: None in a symbolic shape runs as this


def _output_sizes(config: dict[str, Any]) -> tuple[int, ...]:
    size = config.get("output_size", ())
    return (size,) if isinstance(size, int) else tuple(size)


@dataclass(frozen=True)
class KnownBug:
    """A failure of the libraries themselves on samples the catalogue rightly generates."""

    what: str
    matches: Callable[[Sample], bool]
    example: Sample
    fails_as: Callable[[Any], bool]  # the reference's failing StageResult -> is it this bug


KNOWN_LIBRARY_BUGS = (
    # Also seen in graph mode (tf2onnx's trace): "Negative dimension size" for AdaptiveAveragePooling too.
    KnownBug("Keras on TensorFlow: adaptive pooling to an output size of 1 pools windows of n + 1 over n "
             "elements (VALID); eager TensorFlow's MaxPool then kills the process (SIGFPE) instead of raising",
             lambda s: s.api.startswith("AdaptiveMaxPooling") and 1 in _output_sizes(s.config),
             Sample("AdaptiveMaxPooling1D", ((None, 5, 4),), "float32", None, {"output_size": 1}),
             lambda failure: failure.status == "crash" and failure.signal == 8),
    KnownBug("Keras on TensorFlow: MelSpectrogram computing in float64 with power_to_db subtracts a float32 "
             "constant from a float64 tensor (InvalidArgumentError in Sub; JAX and torch promote)",
             lambda s: s.api == "MelSpectrogram" and s.policy == "float64" and bool(s.config.get("power_to_db")),
             Sample("MelSpectrogram", ((None, 6),), "float64", "float64",
                    {"fft_length": 8, "sequence_length": 2, "sequence_stride": 2, "num_mel_bins": 4,
                     "power_to_db": True, "dtype": "float64"}),
             lambda failure: failure.status == "error" and "expected to be a double tensor" in failure.message),
)


def known_bug(sample: Sample) -> KnownBug | None:
    return next((bug for bug in KNOWN_LIBRARY_BUGS if bug.matches(sample)), None)


reference = module_executor([REFERENCE], timeout_s=120)


class Runner:
    """Runs lists of samples as one model each on the reference, recursing into halves of a failing list."""

    def __init__(self, executor: Any, root: Path) -> None:
        self.executor = executor
        self.root = root
        self.models = 0

    def problems(self, samples: list[Sample]) -> list[str]:
        """What went wrong with one model of ``samples`` side by side (empty: every sample ran as promised)."""
        from memo.artifact import prepare_artifact
        from memo.errors import InvalidModelError
        from memo.model.build import infer_shapes

        self.models += 1
        ir = samples_ir(samples, name=f"catalogue_{self.models}")
        try:
            artifact = prepare_artifact(ir, self.root / str(self.models), seed=SEED)
            promised = infer_shapes(ir)
        except InvalidModelError as exc:
            return [f"symbolic build: {exc}"]
        result = self.executor.run(artifact).backends[REFERENCE]
        if result.failure is not None:
            failure = result.failure
            return [f"{failure.stage} {failure.status} {failure.exc_type}: {failure.message[:600]}"]
        outputs = np.load(result.outputs_path)
        out = []
        for i in range(len(samples)):
            want = tuple(BATCH_INPUT if d is None else d for d in promised[f"s{i}"])
            got = outputs[f"out_{i}"].shape
            if got != want:
                out.append(f"ran with output shape {got}, the symbolic build promised {want}")
        return out

    def failures(self, samples: list[Sample]) -> Iterator[tuple[Sample, list[str]]]:
        problems = self.problems(samples)
        if not problems:
            return
        if len(samples) == 1:
            yield samples[0], problems
            return
        middle = len(samples) // 2
        yield from self.failures(samples[:middle])
        yield from self.failures(samples[middle:])


def catalogue_samples() -> list[Sample]:
    return [sample for name in sorted(CATALOGUE) for sample in entry_samples(CATALOGUE[name], SEED, PER_RANK)]


def test_every_declared_rank_and_dtype_has_samples() -> None:
    """The sweep below covers what each entry claims: every input rank with every declared input dtype."""
    samples = catalogue_samples()
    drawn = {(s.api, len(s.shapes[0]), s.dtype) for s in samples if s.policy is None}
    claimed = {(name, rank, dtype) for name, spec in CATALOGUE.items()
               for rank in spec.input_ranks for dtype in spec.dtypes}
    assert sorted(claimed - drawn) == []
    assert {s.api for s in samples} == set(CATALOGUE)


def test_every_catalogue_sample_runs_on_the_reference(reference, tmp_path_factory: pytest.TempPathFactory) -> None:
    started = time.monotonic()
    samples = catalogue_samples()
    sweep = [sample for sample in samples if known_bug(sample) is None]
    runner = Runner(reference, tmp_path_factory.mktemp("catalogue"))
    failed = [(sample, problems) for batch in batches(sweep, BATCH) for sample, problems in runner.failures(batch)]
    report = "\n".join(f"{sample.describe()}\n    {problems[0]}" for sample, problems in failed)
    assert not failed, f"{len(failed)} of {len(sweep)} catalogue samples do not run on {REFERENCE}:\n{report}"
    assert len(sweep) > 10 * len(CATALOGUE)
    print(f"{len(sweep)} samples ({len(samples) - len(sweep)} of known library bugs set aside) in "
          f"{runner.models} models: {time.monotonic() - started:.0f} s")


@pytest.mark.parametrize("bug", KNOWN_LIBRARY_BUGS, ids=lambda bug: bug.example.api)
def test_known_library_bugs_still_fail(bug: KnownBug, reference, tmp_path: Path) -> None:
    """Each bug set aside above is real and still there: its example matches it and fails on the reference."""
    from memo.artifact import prepare_artifact

    assert bug.matches(bug.example)
    artifact = prepare_artifact(samples_ir([bug.example]), tmp_path / "example", seed=SEED)
    failure = reference.run(artifact).backends[REFERENCE].failure
    assert failure is not None, f"fixed upstream? {bug.what}"
    assert bug.fails_as(failure), failure
