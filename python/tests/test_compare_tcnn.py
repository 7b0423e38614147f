"""python/benchmarks/compare_tcnn.py's combination of repeated runs (--repeat): no GPU, no
torch, no tinycudann needed; the workloads' results are made up here."""

from __future__ import annotations

import importlib.util

from conftest import REPO

_spec = importlib.util.spec_from_file_location("compare_tcnn", REPO / "python" / "benchmarks" / "compare_tcnn.py")
compare_tcnn = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(compare_tcnn)


def run(step_ms, loss, forward_us):
    return {
        "eikonal": {"median_step_ms": step_ms, "final_loss": loss, "final_loss_mean": loss, "finite": True,
                    "steps": 1500, "first_step_s": 0.4},
        "percall": {"forward_no_grad_us": forward_us, "forward_backward_us": 2 * forward_us},
        "model": {"train_step_ms_2^21": step_ms, "train_step_ms_2^21_jit": step_ms - 1, "losses_2^21": [1.0, 0.5]},
    }


def test_timings_are_medians_and_the_rest_is_the_first_run():
    runs = [run(3.0, 0.01, 30.0), run(5.0, 0.02, 20.0), run(4.0, 0.03, 25.0)]
    combined = compare_tcnn.combine_repeats(runs)
    assert combined["eikonal"]["median_step_ms"] == 4.0
    assert combined["percall"] == {"forward_no_grad_us": 25.0, "forward_backward_us": 50.0}
    assert combined["model"]["train_step_ms_2^21_jit"] == 3.0
    # not timings: the first run's
    assert combined["eikonal"]["final_loss"] == 0.01 and combined["eikonal"]["steps"] == 1500
    assert combined["eikonal"]["first_step_s"] == 0.4 and combined["model"]["losses_2^21"] == [1.0, 0.5]
    assert combined["repeats"]["eikonal"]["median_step_ms"] == [3.0, 5.0, 4.0]
    assert "final_loss" not in combined["repeats"]["eikonal"]
    assert runs[0]["eikonal"]["median_step_ms"] == 3.0  # the inputs are left as they were


def test_a_timing_missing_from_a_run_keeps_the_first_runs_value():
    second = run(5.0, 0.02, 20.0)
    del second["percall"]
    combined = compare_tcnn.combine_repeats([run(3.0, 0.01, 30.0), second])
    assert combined["percall"]["forward_no_grad_us"] == 30.0 and "percall" not in combined["repeats"]
    assert combined["eikonal"]["median_step_ms"] == 4.0  # the median of two: their mean


def test_one_run_is_itself_and_ratios_use_the_medians():
    one = run(3.0, 0.01, 30.0)
    assert compare_tcnn.combine_repeats([one]) == one and compare_tcnn.combine_repeats([]) == {}
    ours = compare_tcnn.combine_repeats([run(3.0, 0.01, 30.0), run(3.2, 0.01, 30.0), run(2.0, 0.01, 30.0)])
    theirs = compare_tcnn.combine_repeats([run(4.0, 0.01, 60.0), run(3.5, 0.01, 60.0), run(6.0, 0.01, 60.0)])
    ratio = compare_tcnn.ratios(ours, theirs)
    assert abs(ratio["eikonal"]["median_step_ms"] - 3.0 / 4.0) < 1e-12
    assert abs(ratio["percall"]["forward_no_grad_us"] - 0.5) < 1e-12
    lines = compare_tcnn.checks(ours, theirs, ratio)
    assert any(ok and "eikonal median_step_ms" in what for ok, what in lines)


def test_is_timing():
    assert compare_tcnn.is_timing("median_step_ms", 1.0) and compare_tcnn.is_timing("forward_backward_us", 3)
    assert compare_tcnn.is_timing("inference_ms_2^18_jit", 0.2)
    assert not compare_tcnn.is_timing("final_loss", 0.1) and not compare_tcnn.is_timing("first_step_s", 0.3)
    assert not compare_tcnn.is_timing("median_step_ms", None) and not compare_tcnn.is_timing("x_ms", True)


class _Clock:
    """A fake clock: each run_one call advances it by the package's seconds."""

    def __init__(self):
        self.now = 0.0

    def __call__(self):
        return self.now


def test_rounds_stop_before_the_budget_and_keep_complete_rounds():
    clock = _Clock()

    def run_one(package):
        clock.now += 40.0
        return {"package": package}, 0

    runs, statuses, stopped = compare_tcnn.run_rounds(5, 200.0, run_one, clock)
    # rounds take 80 s: the third would end at 240 s > 200 s
    assert [len(v) for v in runs.values()] == [2, 2] and statuses == {"tinycudann": 0, "gridjit": 0}
    assert "budget" in stopped and "round 3" in stopped
    runs, _, stopped = compare_tcnn.run_rounds(3, None, run_one, clock)
    assert [len(v) for v in runs.values()] == [3, 3] and stopped is None


def test_a_sigterm_keeps_the_complete_rounds_only():
    calls = []

    def run_one(package):
        calls.append(package)
        if len(calls) == 4:  # the second round's gridjit run is interrupted
            raise compare_tcnn._Stopped()
        return {"package": package, "n": len(calls)}, 1 if package == "gridjit" else 0

    runs, statuses, stopped = compare_tcnn.run_rounds(5, None, run_one)
    assert runs == {"tinycudann": [{"package": "tinycudann", "n": 1}], "gridjit": [{"package": "gridjit", "n": 2}]}
    assert statuses == {"tinycudann": 0, "gridjit": 1} and stopped == "stopped by SIGTERM"
