"""The notes of the profile part: how the probe's figures were taken in the serving API process
and what they hold (the recorder's work, the middleware under its clock, the ledger's CPU,
the medians of record(), the recorder's GIL slices, the maintenance pass). How the probe
cuts slices and times the middleware is in docs/performance.md.
"""

from __future__ import annotations

from typing import Any

from bench.load import KEYS, USERS
from bench.parts.profile_cpu import ledger_ms, middleware_ms, record_ms
from bench.results import f3, note


def profile_notes(d: dict[str, Any]) -> None:
    """The profile's notes, from the probe's figures in ``d`` (what ``bench/profiling.py``'s
    ``profile`` returns)."""
    pr = d["probe"]
    _probe_note(d)
    mw = pr.get("middleware") or {}
    if mw:
        _middleware_note(mw)
    _cpu_note(pr)
    _medians_note(pr)
    _slices_note(pr)
    _maintenance_notes(pr, d.get("vfork_wait_releases_gil") or {})


def _probe_note(d: dict[str, Any]) -> None:
    """The window, the pre-filled root, the shape and the recorder's work in it."""
    pr = d["probe"]
    shape = pr.get("shape") or {}
    note(
        f"profile: {d['window_s']:.0f} s of load on one server with the ledger on "
        f"({d['tokens_per_s']:.0f} tokens/s while sampled), seed root: {d['seed']}; recorder: "
        f"{shape.get('recorder')}, maintenance: {shape.get('maintenance')}; "
        f"record() {pr['record_calls_per_s']:.0f}/s, wakeups {pr['wakeups_per_s']:.2f}/s "
        f"(by reason {pr['wakeups_by_reason'] or 'n/a'}), take-ins {pr['take_ins_per_s']:.2f}/s "
        f"of {pr['take_in_events_per_call']:.0f} events ({pr['take_in_cpu_ms_per_s']:.2f} ms/s "
        f"CPU), flushes {pr['flushes_per_s']:.2f}/s of {pr['flush_ms_mean']:.2f} ms (max "
        f"{pr['flush_ms_max']:.1f} ms since start), recorder CPU "
        f"{pr['recorder_cpu_ms_per_s']:.1f} ms/s of which flushes "
        f"{pr['flush_cpu_ms_per_s']:.1f} and file checks {pr['check_file_cpu_ms_per_s']:.2f}; "
        f"main thread {pr['main_thread_cpu_ms_per_s']:.0f} ms/s; dropped {pr['dropped']:.0f}"
    )


def _middleware_note(mw: dict[str, Any]) -> None:
    """The attribution middleware under the probe's clock, beside the control."""
    per = mw["stretches_per_call"]
    charged = mw["charged_cpu_ms_per_s"]
    note(
        f"profile, attribution middleware (--middleware vllm_ledger.middleware."
        f"LedgerMiddleware, --api-key with {len(KEYS)} keys, users on, each "
        f"request with a key and one of {USERS} users): {mw['calls_per_s']:.1f} "
        f"calls/s, its own code {mw['own_cpu_ms_per_s']:.2f} ms/s of CPU "
        f"({f3(mw['own_cpu_us_per_call'])} us a call), timed by bench/mwclock.py "
        f"(thread_time at every change of owner, {mw['bias_us']:.2f} us per stretch taken "
        f"off as the clock's own share, measured at start on a thread of its own); the "
        f"control (bench/probe/middleware.py's NullMiddleware, a pass-through of the same "
        f"shape under the same clock) {f3(mw.get('null_cpu_ms_per_s'))} ms/s "
        f"({f3(mw.get('null_cpu_us_per_call'))} us a call): the clock's error in this "
        f"process, taken off per stretch: {f3(mw.get('net_cpu_ms_per_s'))} ms/s "
        f"({f3(mw.get('net_cpu_us_per_call'))} us a call), the figure counted in the "
        f"ledger's CPU; charged to the app it wraps "
        f"{charged.get('app', 0):.1f} ms/s and to the server's receive/send "
        f"{charged.get('server', 0):.2f} ms/s; stretches a call {per}; "
        f"{mw['tagged']} requests tagged, {mw['faults']} faults, tag book full "
        f"{mw['book_full']} times"
    )


def _cpu_note(pr: dict[str, Any]) -> None:
    """The ledger's CPU against the API process's, as a factor on the process."""
    rest = pr["process_cpu_ms_per_s"] - ledger_ms(pr)
    note(
        f"profile: the ledger's CPU (recorder thread {pr['recorder_cpu_ms_per_s']:.2f} + "
        f"record() calls {record_ms(pr):.2f} + middleware {middleware_ms(pr):.2f} = "
        f"{ledger_ms(pr):.2f} ms/s) "
        f"is {ledger_ms(pr) / pr['process_cpu_ms_per_s']:.1%} of the API process's "
        f"{pr['process_cpu_ms_per_s']:.0f} ms/s: measured directly, the API process's CPU with "
        f"the ledger is about {pr['process_cpu_ms_per_s'] / rest:.3f}x what it would be without "
        "it (the A/B target: <= 1.03); no sampler ran in this window (py-spy samples a second "
        "window of the same load after it)"
        if rest > 0
        else "profile: the API process's CPU was not read"
    )


def _medians_note(pr: dict[str, Any]) -> None:
    """How the medians of record() were taken."""
    note(
        "profile, record() medians: both loggers' record() timed by one wrapper (perf_counter "
        "around the call, histogram of 16 buckets an octave), medians of the window's calls "
        f"{pr['ledger_record_us_median'] or 0:.2f} us (ledger) and "
        f"{pr['prometheus_record_us_median'] or 0:.2f} us (PrometheusStatLogger), less "
        f"{pr['timer_bias_us']:.2f} us that the wrapper adds to a call (the median of timing a "
        "no-op the same way in the same process)"
    )


def _slices_note(pr: dict[str, Any]) -> None:
    """The recorder thread's GIL slices in the window, by kind, and the longest."""
    sl = pr["gil_slices"]
    kinds = ", ".join(
        f"{k}: {v['n']} x {v['mean_ms']:.3f} ms mean ({v['cpu_ms']:.1f} ms CPU in all)"
        for k, v in sorted(sl["kinds"].items(), key=lambda kv: -kv[1]["n"])
    )
    longest = "; ".join(
        f"{s['wall_ms']:.2f} ms wall / {s['cpu_ms']:.2f} ms CPU ({s['label']})"
        for s in sl["longest"]
    )
    note(
        f"profile, recorder GIL slices in the window: {kinds or 'none'}; the longest: "
        f"{longest or 'none'}; slices over 1 ms: {sl['over_1ms']}, over 5 ms: {sl['over_5ms']}"
        + (
            "; the probe's slice log was full (longest slices may be missing)"
            if sl["log_full"]
            else ""
        )
        + f"; record() on vLLM's loop, longest call since start {pr['ledger_record_max_us']:.0f} us"
    )


def _maintenance_notes(pr: dict[str, Any], vf: dict[str, Any]) -> None:
    """A note per maintenance pass: the spawn of its child and the child, or the pass on a
    thread; ``vf`` says whether the vfork wait lets the GIL go."""
    for m in pr["maintenance"]:
        where = "inside" if m["in_window"] else "outside"
        if "spawn_wall_s" in m:
            fork = (
                f", fork_exec {m['fork_exec_wall_s'] * 1e3:.2f} ms wall / "
                f"{m['fork_exec_cpu_s'] * 1e3:.2f} ms CPU"
                if "fork_exec_wall_s" in m
                else ""
            )
            child_cpu = m.get("child_cpu_s", m.get("child_cpu_seen_s"))
            note(
                f"profile: maintenance child (pid {m.get('child_pid')}) spawned in "
                f"{m['spawn_wall_s'] * 1e3:.2f} ms wall / {m['spawn_cpu_s'] * 1e3:.2f} ms CPU of "
                f"the API process's thread{fork}; the child ran at nice {m.get('child_nice', '?')}"
                f" (policy {m.get('child_policy', '?')}; 5 is SCHED_IDLE), "
                + (f"{child_cpu * 1e3:.0f} ms CPU" if child_cpu is not None else "CPU unknown")
                + (
                    f" in {m['child_wall_s']:.2f} s wall, exit status {m.get('child_status')}"
                    if "child_wall_s" in m
                    else " (still running at the end of the window)"
                )
                + f"; {where} the window; counted as {m['spawn_gil_ms']:.2f} ms of GIL"
                + (
                    " (fork_exec's time off the CPU left out: the vfork wait lets the GIL go "
                    f"on this interpreter, checked with a spawn of {vf['spawn_ms']:.0f} ms "
                    f"during which another thread waited {vf['other_thread_longest_wait_ms']:.1f}"
                    " ms at most)"
                    if vf.get("released")
                    else " (all of the spawn's wall time)"
                )
            )
        else:
            note(
                f"profile: maintenance pass {m['wall_s'] * 1e3:.0f} ms wall, "
                f"{m['cpu_s'] * 1e3:.0f} ms CPU, {m['files_read']} files read, "
                f"{m['compacted']} compacted, on a thread of the API process (its GIL holds are "
                f"not bounded by the probe), {where} the window"
            )
    if not pr["maintenance"]:
        note("profile: no maintenance pass ran during the window")
