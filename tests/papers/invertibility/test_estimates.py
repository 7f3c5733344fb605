"""The invertibility experiments' estimates: sizes beyond the machine refused in one line before
anything runs or is written, the presets well inside it, and the estimated peak against what a
case measures.

The presets' estimates, peak and time on a 2-core machine (its load moves the measured rates by
up to 2x), with the quick runs' measured times: conditioning 47.7 MiB, ~4 s (run 4.6 s) and
526 MiB (A of 4096 x 4104 and its SVD), ~3.5 min; embedding-kinds 160 MiB (the trained tables),
~1 s (run 1.2 s) and ~1 min; proof-notes 47.7 and 49.5 MiB (sigma_min in 4096-bit balls), ~1.5 s
(run 1.9 s) and ~10 s; recovery 24.8 MiB, ~0.5 s (run 0.2 s) and 276 MiB, ~2 min."""

from __future__ import annotations

import tracemalloc

import numpy as np
import pytest

from attnlab.errors import ConfigError
from attnlab.estimates import KINDS, GiB
from attnlab.papers.invertibility.construction import BASE_BYTES
from attnlab.papers.invertibility import cost
from attnlab.papers.invertibility.experiments.conditioning import ConditioningConfig
from attnlab.papers.invertibility.experiments.embedding_kinds import EmbeddingKindsConfig
from attnlab.papers.invertibility.experiments.proof_notes import ProofNotesConfig
from attnlab.papers.invertibility.experiments.recovery import RecoveryConfig, measure_recovery, recovery_estimate

CONFIGS = (ConditioningConfig, EmbeddingKindsConfig, ProofNotesConfig, RecoveryConfig)


@pytest.mark.parametrize("config_cls, huge, lower", [
    (ConditioningConfig, {"extra_heads": 10 ** 9}, "lower extra_heads or head_cases"),  # P up to 10^9 (3:3:4)
    (ConditioningConfig, {"dims_beyond": 10 ** 6}, "lower dims_beyond or dim_cases"),  # d up to 10^6: W_QK d^2
    (ConditioningConfig, {"w_cases": ("2:4:4", "2:3:1000000")}, "lower w_cases"),
    (EmbeddingKindsConfig, {"cases": ("2:4:10000000",)}, "lower cases"),
    (ProofNotesConfig, {"cases": ("2:3:2", "2:4:10000000")}, "lower cases or w_values"),
    (RecoveryConfig, {"cases": ("2:4:10000000",)}, "lower cases"),
])
def test_a_huge_size_is_refused_in_one_line_naming_what_to_lower(config_cls, huge, lower):
    with pytest.raises(ConfigError) as err:
        config_cls(**huge)
    line = str(err.value)
    assert "\n" not in line and line.startswith("the run needs about ") and " GiB of memory (" in line, line
    assert "; cpu has " in line and line.rsplit(": ", 1)[1].startswith(lower), line
    need = float(line.split("needs about ")[1].split(" GiB")[0].replace(",", ""))
    assert need > 1000, line  # W_QK (P x d x d) or A (N^L x P d) in float64 and balls: far beyond any machine


def test_the_estimate_of_a_billion_heads_is_counted_by_strata_not_listed(monkeypatch):
    """extra_heads = 10^9 (machine memory taken as unlimited, so the config is built) is estimated
    over 2 x 10^9 cases in 0.4 s (under 5 s asserted, for a loaded machine), and its peak is the largest case's: (N, L, d) =
    (3, 3, 4) at P = 10^9 + 7, A of T x c = 27 x 4 P in float64 (8 T c bytes) and its
    high-precision sigma_min, whose last attempt is at 256 bits (96-byte balls; 27 rows are
    conditioned like 1e-10 at w = 1): the pieces' table and the pieces' sums (27 (c + P) and
    T (c + P) balls) and A of the last two attempts (2 T c): 4.5 T c balls."""
    import time

    from attnlab import estimates

    monkeypatch.setattr(estimates, "device_memory", lambda device="cpu": None)
    start = time.perf_counter()
    est = ConditioningConfig(extra_heads=10 ** 9).estimate()
    assert time.perf_counter() - start < 5
    A = 27 * 4 * (10 ** 9 + 7)
    assert cost.high_precision_attempts(cost.log10_condition(3, 3, 4, 10 ** 9 + 7, 1.0)) == (128, 256)
    assert est.peak_bytes == pytest.approx(8 * A + 4.5 * 96 * A, rel=1e-6)
    assert "(3, 3, 4, 1000000007)" in est.what and est.lower == ("extra_heads", "head_cases", "hp_max_rows")
    per_case = cost.case_estimate(3, 3, 4, 10 ** 9, 1.0).calls  # 23 small calls, the same at every P
    assert est.calls == pytest.approx(2 * 10 ** 9 * per_case, rel=0.01)  # the head sweeps of 2:4:4 and 3:3:4


def test_strata_sum_within_one_percent_of_the_exact_sum():
    """A head sweep of 3000 cases (P = 1..3000 at (2, 4, 4)): Simpson's rule over strata against the
    sum of every case's estimate, for each kind of work; the peak is the last (largest) case's."""
    def one(P):
        return cost.case_estimate(2, 4, 4, P, 1.0, high_precision=False, certify=False)

    values = range(1, 3001)
    exact = [one(P) for P in values]
    strata = cost.sweep_estimates(one, values)
    assert len(strata) < 700
    for kind in KINDS:
        want = sum(getattr(e, kind) for e in exact)
        got = sum(getattr(e, kind) for e in strata)
        assert got == pytest.approx(want, rel=0.01), kind
    assert max(e.peak_bytes for e in strata) == max(e.peak_bytes for e in exact) == exact[-1].peak_bytes


def test_the_cli_refuses_before_writing(cli_error, tmp_path):
    out = tmp_path / "run"
    line = cli_error(["reproduce", "invertibility", "--set", "cases=2:4:100000000", "--out", str(out)])
    assert line.startswith("attnlab: error: invertibility.embedding-kinds with --set cases=2:4:100000000: the run "
                           "needs about 74,506,331 GiB of memory ((N, L, d, P) = (2, 4, 100000000, 1), W_QK E11, "
                           "w = 0.1: W_QK (1 x 100000000 x 100000000 float64)); cpu has "), line
    assert line.endswith(" GiB: lower cases"), line
    assert not out.exists()


PRESET_PEAKS_MIB = {  # the estimates' peaks in MiB (quick, paper)
    ConditioningConfig: (47.7, 525.9),  # w = 10 at (2, 6, 6): 4096-bit balls; paper: A of 4096 x 4104 and its SVD
    EmbeddingKindsConfig: (160.0, 160.0),  # the trained tables
    ProofNotesConfig: (47.7, 49.5),  # the limit row at w = 10 ((2, 6, 6); (4, 3, 5)): 4096-bit balls
    RecoveryConfig: (24.8, 276.2),  # sigma_min of 64 rows at 512 bits; of 256 rows at 2048 bits ((4, 4, 6), w = 1)
}


@pytest.mark.parametrize("config_cls", CONFIGS)
@pytest.mark.parametrize("scale", ["quick", "paper"])
def test_presets_fit_well_inside_4_gib(config_cls, scale):
    est = config_cls(scale=scale).estimate()
    assert est.peak_bytes < 4 * GiB
    want = PRESET_PEAKS_MIB[config_cls][scale == "paper"]
    assert est.peak_bytes / 2 ** 20 == pytest.approx(want, abs=0.1)
    assert est.gemm + est.lapack + est.arb > 0


def test_paper_conditioning_peak_is_its_largest_case():
    """The 4096-row size case (2, 12, 12), P = 342: A (4096 x 4104) and its SVD in float64,
    BASE_BYTES + 8 (T L d + P d^2 + 4 T c) = 526 MiB."""
    est = ConditioningConfig(scale="paper").estimate()
    T, L, d, P = 4096, 12, 12, 342
    assert est.peak_bytes == BASE_BYTES + 8 * (T * L * d + P * d * d + 4 * T * P * d)
    assert "(2, 12, 12, 342)" in est.what and est.lower == ("size_cases",)


def test_recovery_estimate_tracks_the_traced_peak():
    """One recovery case, (N, L, d) = (2, 8, 8) (A 256 x 256), 1 draw at 3 levels, no high precision:
    numpy's allocations traced by tracemalloc peak at 10.6 MiB; the estimate's arrays (its peak less
    BASE_BYTES, which tracemalloc does not see) are 12.5 MiB. Within 0.75x to 1.5x."""
    cfg = RecoveryConfig(cases=("2:8:8",), w_values=(1.0,), levels=(1e-8, 1e-2, 10.0), draws=1, hp_max_rows=0)
    measure_recovery(2, 3, 2, 1.0, cfg, np.random.default_rng(0))  # imports and first calls outside the trace
    tracemalloc.start()
    try:
        measure_recovery(2, 8, 8, 1.0, cfg, np.random.default_rng(0))
        traced = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    estimated = recovery_estimate(2, 8, 8, 1.0, cfg).peak_bytes - BASE_BYTES
    assert 0.75 <= estimated / traced <= 1.5, (estimated / 2 ** 20, traced / 2 ** 20)
