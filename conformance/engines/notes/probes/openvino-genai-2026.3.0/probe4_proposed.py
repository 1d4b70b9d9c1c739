"""The proposed kvspec card for OpenVINO GenAI 2026.3.0.0's cache eviction
(conformance/engines/notes/openvino-genai-2026.3.0.md, "Proposed kvspec
rules", items 4 to 8), at the level of CacheEvictionAlgorithm's two calls,
written from the note's statement of the rules, for one layer. Where GenAI
asserts (NORM_SUM with a SnapKV window registered over fewer tracked slots
than window queries, CE:154 and CE:228), this raises AssertionError."""


class Proposed:
    def __init__(self, block, start, recent, max_size, norm_sum, pool, snapkv):
        self.B, self.S, self.R, self.M = block, start, recent, max_size
        self.norm_sum, self.w, self.W = norm_sum, pool, snapkv
        self.acc, self.cnt = [], []
        self.snap = 0  # window queries registered so far (at most W)

    def register(self, x, k):
        """x: the step's scores (floats) over every slot of the cache, after
        admission; k: how many window queries were summed into x."""
        if self.snap < self.W:
            assert self.snap + k <= self.W
            self.snap += k
        n = len(x)
        if n <= self.S:
            return  # nothing tracked yet
        t = x[self.S:]
        # Forward max pool over w slots, truncated at the end.
        u = [float(max(t[i:i + self.w])) for i in range(len(t))]
        if not self.acc:
            if self.W and k == 0:
                return  # the SnapKV window not reached: nothing seeded
            m = len(u)
            if self.norm_sum and self.W:
                assert m >= k, "fewer tracked slots than window queries"
            self.acc = list(u)
            self.cnt = [m - i for i in range(m)] if self.W == 0 else [min(k, m - i) for i in range(m)]
            return
        old = len(self.acc)
        assert len(u) >= old
        self.acc += [0.0] * (len(u) - old)
        for i in range(len(u)):
            self.acc[i] += u[i]
        d = len(u) - old
        if not self.norm_sum:
            pass
        elif self.W == 0 or self.snap == self.W:
            self.cnt = [c + d for c in self.cnt] + [d - i for i in range(d)]
        elif self.norm_sum:
            m = len(u)
            assert m >= self.snap, "fewer tracked slots than window queries"
            self.cnt = [min(self.snap, m - i) for i in range(m)]

    def evict(self):
        """The logical blocks evicted, ascending (cache block indices)."""
        B = self.B
        n = self.S + len(self.acc)
        if n < self.M + B:
            return []
        first = self.S // B
        candidates = n // B - self.R // B - first
        k = n // B - self.M // B
        scores = []
        for i in range(candidates):
            s = 0.0
            for j in range(B):
                a = self.acc[B * i + j]
                s += a / self.cnt[B * i + j] if self.norm_sum else a
            scores.append((s, i))
        gone = sorted(i for _, i in sorted(scores)[:k])
        keep = [p for p in range(len(self.acc)) if p // B not in set(gone)]
        self.acc = [self.acc[p] for p in keep]
        if self.norm_sum:
            self.cnt = [self.cnt[p] for p in keep]
        return [i + first for i in gone]
