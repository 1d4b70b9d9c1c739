import logging
logging.disable(logging.WARNING)
from kvpress import DecodingPress, KnormPress
from kvpress.utils import compute_n_kept
p = DecodingPress(base_press=KnormPress())
fails = []
tot = 0
for k in range(2, 3001):
    for t in range(1, k):
        tot += 1
        r = p._find_target_compression_ratio(k, t)
        n = compute_n_kept(k, r)
        if n != t:
            fails.append((k, t, n, r))
print("pairs", tot, "failures", len(fails), fails[:10])
