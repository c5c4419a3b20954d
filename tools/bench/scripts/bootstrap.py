"""The bootstrap the A/B scripts share (worker_ab.sh, tree_ab.sh,
perf_ab.sh, wakeup.sh): a 95% interval of any statistic of the rounds, the
rounds resampled as wholes (seed 1, so that a report is reproducible)."""
import random


class Bootstrap:
    def __init__(self, n, count=4000, seed=1):
        rng = random.Random(seed)
        self.draws = [[rng.randrange(n) for _ in range(n)] for _ in range(count)]

    def interval(self, f):
        """(low, high): the 2.5% and 97.5% points of f(indices) over the draws."""
        vals = sorted(f(idx) for idx in self.draws)
        return vals[len(vals) // 40], vals[len(vals) - 1 - len(vals) // 40]
