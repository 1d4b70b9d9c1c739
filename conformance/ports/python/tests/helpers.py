from kvspec_port.harness import run_scenario


def run(name, params=(), steps=(), seed=0):
    """Runs explicit steps [(admit, row-or-None)], returns the log."""
    return run_scenario(name, list(params), seed, list(steps), None)


def singles(rows):
    """One single-position step per row (row None: null attention)."""
    return [(1, r) for r in rows]


def victims(log):
    return [s.victims for s in log.steps]
