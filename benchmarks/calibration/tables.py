import pandas as pd, glob
pd.set_option("display.width", 250)
df = pd.concat([pd.read_csv(f) for f in glob.glob('results/reg_*.csv')])
L = ['vbll-gaussian','vbll-hetero','vbll-quantile','vbll-buckets','vbll-default','none','ensemble','mc-dropout','ref-bayesridge','ref-qgbm']
ab = {'vbll-gaussian':'gauss','vbll-hetero':'hetero','vbll-quantile':'quant','vbll-buckets':'bucket','vbll-default':'vdef','none':'none','ensemble':'ens','mc-dropout':'mcd','ref-bayesridge':'ridge','ref-qgbm':'qgbm'}
d = df[df.learner.isin(L)].copy(); d['l'] = d.learner.map(ab)
for col in ('cov50', 'cov90'):
    t = d.pivot_table(index=['dataset','n'], columns='l', values=col).round(2)[[ab[x] for x in L]]
    print(f"\n{col}\n", t.to_string())
ref = d[d.learner=='ref-bayesridge'].set_index(['dataset','n','seed']).crps
d['crps_rel'] = d.crps / d.set_index(['dataset','n','seed']).index.map(ref)
print("\nCRPS / ridge CRPS (mean over datasets & seeds)\n", d.pivot_table(index='n', columns='l', values='crps_rel').round(2)[[ab[x] for x in L]].to_string())
print("\nPIT KS (mean over datasets & seeds)\n", d.pivot_table(index='n', columns='l', values='ks').round(3)[[ab[x] for x in L if x!='ref-qgbm']].to_string())
print("\nNLL (mean over seeds)\n", d.pivot_table(index=['dataset','n'], columns='l', values='nll').round(2)[[ab[x] for x in L if x!='ref-qgbm']].to_string())
c = pd.concat([pd.read_csv(f) for f in glob.glob('results/cls_*.csv') if 'checks' not in f])
for col in ('ece', 'nll'):
    print(f"\n{col}\n", c.pivot_table(index=['dataset','n'], columns='learner', values=col).round(3).to_string())
print("\nacc - mean conf\n", (c.assign(g=c.acc-c.mean_conf)).pivot_table(index=['dataset','n'], columns='learner', values='g').round(3).to_string())
