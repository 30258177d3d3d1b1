"""`alkit bench`'s terminal table: the labels-to-target cell says how many seeds reached the target."""

from __future__ import annotations

import io

import polars as pl
from rich.console import Console

from alkit.cli_tables import bench_table


def _render(df: pl.DataFrame) -> str:
    out = io.StringIO()
    Console(file=out, width=200).print(bench_table(df, "crps"))
    return out.getvalue()


def test_labels_to_target_names_the_seeds_that_reached_it() -> None:
    df = pl.DataFrame({"strategy": ["epistemic", "random", "margin"], "n_seeds": [2, 2, 2],
                       "crps@60_mean": [1.667, 1.614, 1.7], "crps@60_std": [0.124, 0.012, 0.1],
                       "aulc_mean": [1.715, 1.665, 1.7], "aulc_std": [0.193, 0.034, 0.1],
                       "labels_to_target_mean": [20.0, 55.0, None], "n_reached": [1, 2, 0]})
    rows = {line.split()[0]: line for line in _render(df).splitlines() if line.strip().startswith(("epi", "ran", "mar"))}
    assert "20 (1/2)" in rows["epistemic"]  # one seed of two reached it: not a plain "20"
    assert "55" in rows["random"] and "(2/2)" not in rows["random"]  # every seed reached it
    assert "—" in rows["margin"]  # none did
