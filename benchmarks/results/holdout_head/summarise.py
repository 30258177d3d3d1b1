import polars as pl, re
sets = "x_weather x_leaf x_spam7 x_storms x_stackoverflow x_credit x_oj x_telco x_movies x_cards x_yogurt x_cracker x_attrition".split()
old = {}
for d in sets:
    try:
        df = pl.read_csv(f"/work/main/benchmarks/results/rule9_holdout_{d}.csv")
        old[d] = dict(zip(df["strategy"], df["aulc"])).get("epistemic+decision-flip")
    except FileNotFoundError:
        old[d] = None
for line in open("/work/main/benchmarks/results/label_efficiency_holdout.md"):
    m = re.match(r"\| (x_\w+) \| \d+ \| [\d,]+ \| ([\d.]+) ±", line)
    if m and old.get(m.group(1)) is None:
        old[m.group(1)] = float(m.group(2))
rows = []
L = ["| hold-out set | classes | epistemic | margin | entropy | random:vbll | epistemic - margin | epistemic - random:vbll | worst checkpoint vs random | epistemic with the fixed prior (before) |", "|---|---|---|---|---|---|---|---|---|---|"]
import json
man = json.load(open("/work/main/benchmarks/_work/data/manifest.json"))
for d in sets:
    df = pl.read_csv(f"/work/main/benchmarks/results/holdout_head/{d}.csv"); g = dict(zip(df["strategy"], df["aulc"])); z = dict(zip(df["strategy"], df["worst_z"]))
    rows.append((g["epistemic"]-g["margin"], g["epistemic"]-g["random:vbll"]))
    C = {"x_weather": 5, "x_leaf": 26, "x_spam7": 2, "x_storms": 9, "x_stackoverflow": 5, "x_credit": 2, "x_oj": 2, "x_telco": 2, "x_movies": 3, "x_cards": 2, "x_yogurt": 4, "x_cracker": 4, "x_attrition": 2}[d]
    o = old.get(d)
    L.append(f"| {d} | {C} | {g['epistemic']:.3f} | {g['margin']:.3f} | {g['entropy']:.3f} | {g['random:vbll']:.3f} | {rows[-1][0]:+.3f} | {rows[-1][1]:+.3f} | {z['epistemic']:+.2f} | {'' if o is None else f'{o:.3f}'} |")
n = len(rows)
L.append(f"| mean ({n}) | | | | | | {sum(r[0] for r in rows)/n:+.4f} | {sum(r[1] for r in rows)/n:+.4f} | | |")
print("\n".join(L))
print(f"\nepistemic >= margin on {sum(r[0] >= 0 for r in rows)} of {n}; >= random:vbll on {sum(r[1] >= 0 for r in rows)} of {n}")
