"""transformer-math.parameter-counts: Table 1, paper vs computed; config errors."""

import pytest

from attnlab.errors import ConfigError
from attnlab.papers.transformer_math.experiments.parameter_counts import ParameterCountsConfig, run as run_parameter_counts


def test_parameter_counts(storable):
    res = run_parameter_counts(ParameterCountsConfig())
    storable(res)
    assert res.deviations == []  # said: none (issue 34); each count comes from the model's own hyper-parameters
    rows = {r["model"]: r for r in res.data["rows"]}
    assert list(rows) == ["GPT-1", "BERT", "GPT-2", "GPT-3", "LaMDA", "Minerva"]
    assert rows["GPT-1"]["paper_value"] == 117e6 and rows["GPT-3"]["paper_value"] == 175e9
    for c in res.summary:
        assert c.verdict == "reproduced" and c.where == "§2, Table 1"  # every row within 5%
    # each row checks its own row of Table 1 (ledger: table-1-gpt1, ...)
    assert [c.anchor for c in res.summary] == [f"transformer-math.table-1-{m}" for m in
                                               ("gpt1", "bert", "gpt2", "gpt3", "lamda", "minerva")]
    for r in rows.values():
        if r["computed"] is not None:
            assert r["rel_error"] == pytest.approx(abs(r["computed"] - r["paper_value"]) / r["paper_value"])
    assert list(res.tables[0].columns[:4]) == ["model", "release", "paper", "computed"]


@pytest.mark.parametrize("kwargs, message", [
    (dict(rel_tol=2.0), r"rel_tol must be a finite number in \(0, 1\), got 2.0"),
    (dict(rel_tol=0.0), r"rel_tol must be a finite number in \(0, 1\)"),
    (dict(seed=-1), r"seed must be an integer in \[0, 4294967295\], got -1"),
])
def test_config_errors(kwargs, message):
    with pytest.raises(ConfigError, match=message):
        ParameterCountsConfig(**kwargs)
