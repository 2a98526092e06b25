import h5py, numpy as np, sys
for fn in sys.argv[1:]:
    f=h5py.File(fn,'r'); r={}
    for k in f['configs']:
        kl=f['configs'][k]['kl'][:].astype(np.float64); r[k]=kl.mean()
        b=[(64,128),(1024,2048),(2048,4096),(4096,8192)]
        print(fn.split('/')[-1], k, 'mean %.3e'%kl.mean(), ' '.join('%d..%d %.3e'%(a,c,kl[:,a:c].mean()) for a,c in b if c<=kl.shape[1]))
    s=[v for k,v in r.items() if 'hp=' in k and 'L=16' not in k] 
    if len(s)>=2: print('  split max/min', max(s)/min(s))
