"""transformer-math.parameter-counts: Table 1 (§2), the paper's parameter counts beside the
counts computed from each model's published hyper-parameters."""

from __future__ import annotations

from dataclasses import dataclass

from attnlab.config import RunConfig, check_number, param
from attnlab.papers.transformer_math.table1 import table1_rows
from attnlab.registry import Experiment, register_experiment
from attnlab.checks import NO_ERROR, at_most, info
from attnlab.results import ExperimentResult, Table, bar_figure
from attnlab.runs.rundir import log_metric

EXPERIMENT_ID = "transformer-math.parameter-counts"
ANCHORS = {model: f"transformer-math.table-1-{model.lower().replace('-', '')}" for model in
           ("GPT-1", "BERT", "GPT-2", "GPT-3", "LaMDA", "Minerva")}
"""Table 1's row of each model (ledger.toml: table-1-gpt1, table-1-bert, ...)."""


@dataclass(frozen=True)
class ParameterCountsConfig(RunConfig):
    rel_tol: float = param(0.05, "largest |computed - paper| / paper that counts as agreement (Table 1 rounds)")

    def validate(self) -> None:
        check_number("rel_tol", self.rel_tol, 0, 1, open_min=True, open_max=True)


def run(cfg: ParameterCountsConfig, run_dir=None) -> ExperimentResult:
    rows = table1_rows()
    summary, table_rows = [], []
    for r in rows:
        computed, rel = r.get("computed"), r.get("rel_error")
        q = f"{r['model']} parameters: |computed - Table 1| / Table 1"
        if computed is None:  # no published architecture to count from
            summary.append(info(f"{r['model']} parameters", "not computed", paper_value=r["paper_value"],
                                where="§2, Table 1", detail=r.get("note", "")))
        else:
            summary.append(at_most(rel, cfg.rel_tol, f"computed {computed:,}; " + r.get("note", ""), quantity=q,
                                   paper_value=r["paper_value"], where="§2, Table 1",
                                   values={"computed": computed, "paper": r["paper_value"]},
                                   anchor=ANCHORS[r["model"]], erratum=NO_ERROR,
                                   falsifier=f"a count computed from {r['model']}'s published architecture more than "
                                             f"{cfg.rel_tol:.0%} away from Table 1's"))
        table_rows.append([r["model"], r["release"], r["paper_value"], computed, rel, r.get("note", "")])
        log_metric(run_dir, {"experiment": EXPERIMENT_ID, "model": r["model"], "computed": computed, "rel_error": rel})
    known = [r for r in rows if r.get("computed") is not None]
    fig = bar_figure(
        "parameter-counts.png",
        "Table 1: the paper's parameter counts next to the counts computed from each model's "
        "published hyper-parameters (log scale).",
        categories=[r["model"] for r in known],
        groups=[{"label": "paper (Table 1)", "values": [r["paper_value"] for r in known]},
                {"label": "computed", "values": [r["computed"] for r in known]}],
        ylabel="parameters", yscale="log", title="Table 1: number of parameters",
    )
    table = Table("Table 1, paper vs computed", ["model", "release", "paper", "computed", "rel. error", "note"],
                  table_rows, ["text", "text", "count", "count", "percent", "text"])
    # deviations: none; each row compares Table 1's printed count with the count from the model's published
    # hyper-parameters (the counting convention of each model in the table's note column)
    return ExperimentResult(summary=summary, tables=[table], figures=[fig], data={"rows": rows}, deviations=[],
                            notes=[f"A row passes when the relative error is at most {cfg.rel_tol:.0%}; "
                                   "Table 1 prints rounded counts."])


register_experiment(Experiment(EXPERIMENT_ID, "Table 1: parameter counts of six LLMs, paper vs computed from hyper-parameters",
                    ParameterCountsConfig, run, anchors=tuple(ANCHORS.values())))
