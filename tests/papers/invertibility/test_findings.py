"""The invertibility rows as the reproduce headline counts them: every differs row names its one
record, and rows of one error are one finding (issue 33: 6 differs, 4 errors)."""

from __future__ import annotations

from attnlab.checks import tally
from attnlab.papers.invertibility.experiments.conditioning import ConditioningConfig
from attnlab.papers.invertibility.experiments.conditioning import run as run_conditioning
from attnlab.papers.invertibility.experiments.proof_notes import ProofNotesConfig
from attnlab.papers.invertibility.experiments.proof_notes import run as run_proof_notes
from attnlab.registry import all_errata, select_claims

# the conditioning sweep of its own test, with one case where the cap 1 + P (N+L-2) < N^L binds
TINY = dict(w_cases=("2:3:2",), w_values=(0.1, 1.0), size_cases=("2:2:2",), size_w=(1.0,), head_cases=("2:3:2",),
            extra_heads=1, dim_cases=("2:3",), dims_beyond=2, hp_max_rows=16, certify_max_rows=16)


def test_six_differs_are_four_findings_each_with_its_record():
    rows = [c.run(0).check for c in select_claims(["invertibility"])]
    rows += run_conditioning(ConditioningConfig(**TINY)).summary
    rows += run_proof_notes(ProofNotesConfig(cases=("2:3:2",), w_values=(1.0,))).summary
    differs = [c for c in rows if c.verdict == "differs"]
    records = {e.id for e in all_errata(["invertibility"])}
    assert all(c.anchor and c.erratum in records for c in differs), [(c.quantity, c.erratum) for c in differs]
    by_record: dict[str, list[str]] = {}
    for c in differs:
        by_record.setdefault(c.erratum, []).append(c.quantity)
    assert len(differs) == 6 and tally(rows).findings == 4
    assert sorted(by_record) == ["invertibility.cap-below-n-to-the-l", "invertibility.final-determinant",
                                 "invertibility.hyperplane-vt", "invertibility.taylor-sign"]
    assert len(by_record["invertibility.cap-below-n-to-the-l"]) == 3  # positional-cap, minimal-heads, conditioning
    # attnlab's own statements are apart from the text's rows: any-w, fewer-heads-rank-Pd, no-positions-cap, and
    # conditioning's "rank reaches the cap"
    own = sorted(c.quantity for c in rows if c.group == "own")
    assert len(own) == 4 and all(c.verdict == "holds" for c in rows if c.group == "own"), own
    assert tally(rows).text["reproduced"] == 3  # theorem1-full-rank, theorem1-mid-size, conditioning's Theorem 1
