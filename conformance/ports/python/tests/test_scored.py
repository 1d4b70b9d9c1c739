"""Worked examples of spec/policies/{h2o,tova,snapkv,random}.md and harness.md#victims."""

from helpers import run, singles, victims

ROWS = [[], [1.0], [0.25, 0.5], [0.25, 0.125, 0.5]]
B3R1 = [("budget", 3), ("recent_window", 1)]


def test_h2o_lowest_sum():
    # h2o.md: sums 1.5, 0.625, 0.5 when 3 is admitted; 2 goes.
    log = run("h2o", B3R1, singles(ROWS))
    assert victims(log)[-1] == [2]
    assert log.steps[-1].cut[0] == (2, 0.5)


def test_h2o_equal_sums_evict_lower():
    log = run("h2o", B3R1, singles(ROWS[:3] + [[0.25, 0.25, 0.75]]))
    assert victims(log)[-1] == [1]


def test_tova_lowest_latest():
    log = run("tova", B3R1, singles(ROWS))
    assert victims(log)[-1] == [1]
    log = run("tova", B3R1, singles(ROWS[:3] + [[0.0, 0.125, 0.5]]))
    assert victims(log)[-1] == [0]


def test_tova_no_recent_window_evicts_new_at_zero_tie():
    # tova.md: with recent_window 0 a new position (+0.0) ties with an
    # observed candidate at 0.0, and the lower, observed one goes.
    log = run("tova", [("budget", 2), ("recent_window", 0)], singles([[], [0.5], [0.0, 0.5]]))
    assert victims(log)[-1] == [0]


def test_unobserved_chunk_evicts_lowest_positions():
    # harness.md#unobserved-positions: a first chunk over budget evicts 0, 1.
    for name in ("h2o", "tova", "snapkv"):
        log = run(name, [("budget", 4), ("recent_window", 1)], [(6, [])])
        assert victims(log) == [[0, 1]]


def test_snapkv_wrap_around():
    # snapkv.md: null first step, then rows (0.5), (0.25, 0.75), (0.125, 0.25, 0.5).
    params = B3R1 + [("obs_window", 2), ("pool_kernel", 1)]
    log = run("snapkv", params, singles([None, [0.5], [0.25, 0.75], [0.125, 0.25, 0.5]]))
    assert victims(log)[-1] == [0]
    assert log.steps[-1].cut[0] == (0, 0.375)


def test_snapkv_index_order_sum():
    # snapkv.md#window-sums: a ring (t, t, 1.0) with t = 2^-53 sums to
    # 1 + 2^-52 from index 0; in time order (1.0, t, t) it would be 1.0.
    from kvspec_port.policies.snapkv import SnapKvPolicy

    t = 2.0 ** -53
    params = {"budget": 9, "recent_window": 0, "obs_window": 3, "pool_kernel": 1}
    q = SnapKvPolicy(params, None)
    q.step(0, 1, None)
    for pos, w in zip((1, 2, 3), (t, t, 1.0)):
        q.step(pos, 1, [w] * len(q.kept))
    assert q.window_sums()[0] == 1.0 + 2.0 ** -52
    r = SnapKvPolicy(params, None)
    r.step(0, 1, None)
    for pos, w in zip((1, 2, 3, 4), (1.0, t, t, t)):
        r.step(pos, 1, [w] * len(r.kept))
    # Slot 0's ring: index 0 = t (overwrote 1.0), 1 = t, 2 = t.
    assert r.window_sums()[0] == 3 * t


def _snap_with_sums(sums, budget, recent_window, pool_kernel):
    """A snapkv whose kept slots have the given window sums (obs_window 1)."""
    steps = [(len(sums), None), (1, list(sums))]
    params = [("budget", budget), ("recent_window", recent_window),
              ("obs_window", 1), ("pool_kernel", pool_kernel)]
    return run("snapkv", params, steps)


def test_snapkv_pooling_defends_neighbour():
    assert victims(_snap_with_sums([0.5, 0.125, 1.0, 0.25], 4, 1, 1))[-1] == [1]
    assert victims(_snap_with_sums([0.5, 0.125, 1.0, 0.25], 4, 1, 3))[-1] == [0]


def test_snapkv_high_end_clamps():
    log = _snap_with_sums([1.0, 0.5, 0.25], 3, 0, 3)
    assert victims(log)[-1] == [3]
    assert [s for _, s in log.steps[-1].cut] == [0.25, 0.5, 1.0, 1.0]


def test_snapkv_equal_pooled_evict_lower():
    assert victims(_snap_with_sums([0.375, 1.0, 0.5], 3, 1, 3))[-1] == [0]


def test_harness_tie_example():
    # harness.md#victims: kept 4, 9, 12, 13; scores 0.5, 0.25, 0.25; 9 goes.
    from kvspec_port.policies.tova import TovaPolicy

    p = TovaPolicy({"budget": 3, "recent_window": 1}, None)
    p.step(4, 1, None)
    p.step(9, 1, [0.0])
    p.step(12, 1, [0.0, 0.0])
    out = p.step(13, 1, [0.5, 0.25, 0.25])
    assert out.victims == [9]
    assert out.cut == [(9, 0.25), (12, 0.25), (4, 0.5)]


def test_random_worked_example():
    # random.md: seed 42, budget 2, recent_window 0: evicts 0, 2, 4.
    log = run("random", [("budget", 2), ("recent_window", 0)], singles([None] * 5), seed=42)
    assert victims(log) == [[], [], [0], [2], [4]]
    log = run("random", [("budget", 2), ("recent_window", 0)], [(4, None)], seed=42)
    assert victims(log) == [[0, 2]]
