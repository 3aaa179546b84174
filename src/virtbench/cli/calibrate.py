"""The `calibrate` command: A/A runs of an experiment's baseline variant, opened first and
measured in interleaved blocks (runner/blocks.py) → a noise profile (decide/calibration.py)
stored for this host and experiment file → the minimum detectable effect per workload · metric,
as a table or JSON. Exit codes: 0 a profile was stored, 1 a run failed, 130 interrupted (the
runs stay resumable: --resume), 2 bad input."""

from __future__ import annotations

import dataclasses
import sys
import time
import uuid
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import typer

from virtbench import __version__, safetext
from virtbench.cli import consoles
from virtbench.cli.options import DEFAULT_STORE, JsonOpt, StoreOpt, number_parser, open_store
from virtbench.model import RunFailed, VirtbenchError

if TYPE_CHECKING:
    from virtbench.spec.models import Experiment
    from virtbench.store import RunInfo, Store

__all__ = ["app", "calibrate", "calibration_experiment", "calibration_runs"]

app = typer.Typer()


def calibration_experiment(exp: Experiment, index: int, total: int) -> Experiment:
    """The experiment reduced to its baseline variant, described as calibration run
    ``index`` of ``total``. The stored experiment file stays the original: its hash, which
    keys the profile, is the one every normal run of the file has."""
    base = next(v for v in exp.all_variants() if v.name == exp.baseline_name)
    return exp.model_copy(update={
        "variants": [base], "matrix": None, "factorial": None, "baseline": base.name,
        "compare_by": None,
        "description": f"calibration run {index}/{total} (A/A, baseline variant {base.name} "
                       "only; `virtbench calibrate`)"})


BLOCK_PHASE = "calibration block "
"""Facts phase of a run's record of one block: ``calibration block 3``, with the block's order"""


def _repetitions(exp: Experiment) -> int:
    """n of the detectable-effect table: the experiment's repetitions (adaptive: its max)."""
    rule = exp.repetitions
    return rule if isinstance(rule, int) else rule.max


def calibration_runs(st: Store, exp: Experiment, ref: str) -> tuple[str, list[RunInfo]]:
    """The calibration ``ref`` (its id, or 'latest': the latest of this experiment) and its
    runs in the order they were opened (run 1 of K first)."""
    from virtbench.store.ids import check_run_id

    tagged = [r for r in st.runs() if r.calibration is not None]
    if ref != "latest":
        check_run_id(ref, "--resume: calibration id")
    else:
        mine = [r for r in tagged if r.experiment == exp.name]
        if not mine:
            raise VirtbenchError(f"--resume latest: no calibration of {exp.name} in the store")
        ref = str(mine[-1].calibration)
    runs = sorted((r for r in tagged if r.calibration == ref),
                  key=lambda r: (r.started_at, r.id))
    if not runs:
        raise VirtbenchError(f"--resume {ref}: no calibration of that id in the store "
                             "(`virtbench runs` marks calibration runs)")
    return ref, runs


def _blocks_done(st: Store, run_ids: list[str]) -> int:
    """The highest block number the runs recorded (0: none started)."""
    numbers = [int(phase[len(BLOCK_PHASE):]) for run_id in run_ids
               for _id, phase, _t, _data in st.facts(run_id)
               if phase.startswith(BLOCK_PHASE) and phase[len(BLOCK_PHASE):].isdigit()]
    return max(numbers, default=0)


@app.command()
def calibrate(
    experiment: Annotated[Path, typer.Argument(help="experiment YAML file")],
    runs: Annotated[int | None, typer.Option(
        "--runs", "-k", min=2, max=1000,
        help="separate runs of the baseline variant (2 to 1000; default 5)")] = None,
    budget: Annotated[float | None, typer.Option(
        "--budget", metavar="SECONDS", parser=number_parser(0, low_open=True),
        help="stop starting blocks when the next would end after this many seconds (by the "
             "mean duration of the blocks so far)")] = None,
    block_rounds: Annotated[int, typer.Option(
        "--block-rounds", min=1, max=10_000,
        help="repetition rounds of each run per block (default 1)")] = 1,
    resume: Annotated[str | None, typer.Option(
        "--resume", metavar="CALIBRATION",
        help="continue an interrupted calibration (its id, or 'latest')")] = None,
    detect: Annotated[float | None, typer.Option(
        "--detect", metavar="PCT", parser=number_parser(0, 100, low_open=True),
        help="also the repetitions and runs per side needed to detect a PCT % worsening")]
    = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """A/A calibration: run the experiment's baseline variant as K separate stored runs,
    interleaved in blocks, estimate per workload · metric how much results vary within a run
    and drift between runs, store that noise profile for this host and experiment file
    (`compare` uses it), and show the smallest regression the gate can detect."""
    from virtbench.cli.progress import RichProgress
    from virtbench.decide.calibration import build_profile, plan_document
    from virtbench.decide.runs import experiment_digest, load_run
    from virtbench.preflight import NoiseWatch
    from virtbench.runner import Runner, RunRecord, build_plan
    from virtbench.runner.blocks import run_in_blocks
    from virtbench.runner.record import refuse_if_running, sigterm_as_interrupt
    from virtbench.spec import load_resolved

    err = consoles.err
    resolved, text = load_resolved(experiment)  # judged once; each run is its baseline only
    exp = resolved.experiment
    st = open_store(store, create=True)
    command = f"virtbench calibrate {experiment}"

    def runner(index: int, total: int, record: RunRecord,
               noise: NoiseWatch | None = None) -> Runner:
        # The file was judged once (load_resolved); each run is its baseline variant only.
        reduced = dataclasses.replace(
            resolved, experiment=calibration_experiment(exp, index, total))
        return Runner(build_plan(reduced), record, progress=RichProgress(err, quiet),
                      noise=noise)

    if resume is not None:
        calibration, infos = calibration_runs(st, exp, resume)
        if experiment_digest(infos[0].spec_yaml) != experiment_digest(text):
            raise VirtbenchError(f"calibration {calibration} was started from a different "
                                 "experiment file; resume needs the same file")
        if runs is not None and runs != len(infos):
            raise VirtbenchError(f"--runs {runs}: calibration {calibration} has "
                                 f"{len(infos)} runs")
        run_ids = [r.id for r in infos]
        for info in infos:
            refuse_if_running(info)
        first_block = _blocks_done(st, run_ids) + 1
    else:
        total = runs or 5
        calibration = f"cal-{uuid.uuid4().hex[:8]}"
        run_ids = [f"{calibration}-{index}" for index in range(1, total + 1)]
        # Target, tools and knobs are checked before anything is stored (exit 2 on bad input).
        runner(1, total, RunRecord.new(st, text, str(experiment))).check()
        try:  # every run opened first, so an interrupted calibration is resumed whole
            for index, run_id in enumerate(run_ids, 1):
                runner(index, total, RunRecord.new(
                    st, text, str(experiment), run_id=run_id, calibration=calibration)
                ).open_run(f"opened; `{command} --resume {calibration}` measures it")
        except BaseException:  # nothing measured yet: no half-opened calibration stays
            for run_id in run_ids:
                if st.has_run(run_id):
                    st.delete_run(run_id)
            raise
        first_block = 1
    total = len(run_ids)
    index_of = {run_id: index for index, run_id in enumerate(run_ids, 1)}
    unfinished = [r for r in run_ids if st.run(r).status != "complete"]
    err.print(safetext.text(
        f"calibration {calibration}: {total} runs of variant {exp.baseline_name} "
        f"({', '.join(run_ids)}), {block_rounds} round(s) per run and block"
        + (f"; {len(unfinished)} unfinished, from block {first_block}" if resume else "")),
        highlight=False)

    started = time.monotonic()
    durations: list[float] = []
    block_started = [started]

    def before_block(block: int, order: list[str]) -> str:
        now = time.monotonic()
        if block > first_block:
            durations.append(now - block_started[0])
        block_started[0] = now
        elapsed = now - started
        # Never before every run measured two rounds: a within-run variance needs two values.
        if budget is not None and durations and (block - 1) * block_rounds >= 2:
            expected = sum(durations) / len(durations)
            if elapsed + expected > budget:
                return (f"--budget {budget:g} s: stopped after {len(durations)} block(s) "
                        f"({elapsed:.0f} s so far; the next would take about "
                        f"{expected:.0f} s more)")
        positions = [index_of[r] for r in order]
        for position, run_id in enumerate(order, 1):  # the order, recorded with each run
            st.add_facts(run_id, f"{BLOCK_PHASE}{block}", {
                "calibration": calibration, "block": block, "position": position,
                "order": positions, "rounds": block_rounds})
        err.print(safetext.text(f"calibration block {block}: runs "
                                f"{', '.join(map(str, positions))}"), highlight=False)
        return ""

    # The target's facts, collected once for every block of every run: the blocks follow
    # each other within minutes on one host (each run still stores them, and its last block
    # its "after" facts). Collecting them per block cost two collections per run and block.
    shared_facts: list[dict[str, Any]] = []

    def step(run_id: str) -> bool:
        index = index_of[run_id]
        noise = NoiseWatch()
        block_runner = runner(index, total, RunRecord.resume(
            st, run_id, text, str(experiment), calibration=calibration), noise=noise)
        if not shared_facts:
            from virtbench.facts import collect_facts

            shared_facts.append(collect_facts(block_runner.target))
        try:
            with noise.registered(exp.name):
                outcome = block_runner.run(rounds=block_rounds, facts=shared_facts[0])
        except RunFailed as exc:
            raise RunFailed(f"calibration run {index} of {total} ({run_id}) failed, no profile "
                            f"stored: {exc}; `{command} --resume {calibration}` retries "
                            "it") from exc
        if outcome.paused:
            st.set_run_status(run_id, "interrupted",
                              f"calibration {calibration}: paused between blocks; "
                              f"`{command} --resume {calibration}` continues it")
            return False
        err.print(safetext.text(f"calibration run {index}/{total}: {run_id} complete "
                                f"({outcome.stop_reason})"), highlight=False)
        return True

    try:
        with sigterm_as_interrupt():  # also between two runs' blocks, not only inside one
            done = run_in_blocks(unfinished, step, seed=exp.seed, salt=calibration,
                                 first_block=first_block, before_block=before_block)
    except KeyboardInterrupt as exc:
        for run_id in run_ids:  # the runner marked the one it ran; the others say how too
            info = st.run(run_id)
            if info.status != "complete":
                st.set_run_status(run_id, "interrupted",
                                  f"calibration {calibration} interrupted; `{command} "
                                  f"--resume {calibration}` continues it")
        err.print(f"[yellow]interrupted[/] ({safetext.markup(exc) or 'SIGINT'}); no profile "
                  f"stored; the samples so far stay in the store: continue with "
                  f"`{safetext.markup(command)} --resume {calibration}`", highlight=False)
        raise typer.Exit(130) from exc
    stopped = done.stopped
    if stopped:
        err.print(f"[yellow]{safetext.markup(stopped)}[/]", highlight=False)
        for run_id in run_ids:  # ended by the budget, as an adaptive run's time budget ends it
            if st.run(run_id).status != "complete":
                st.set_run_status(run_id, "complete", f"calibration {calibration}: {stopped}")
    profile = build_profile([load_run(r, lambda: st) for r in run_ids])
    profile.id = st.add_noise_profile(
        fingerprint=profile.fingerprint, experiment_hash=profile.experiment_hash,
        experiment=profile.experiment, host=profile.host, variant=profile.variant,
        run_ids=profile.run_ids, data=profile.data(), version=__version__)
    err.print(safetext.text(f"noise profile {profile.id} stored in {store} for host "
                            f"{profile.host} (fingerprint {profile.fingerprint}) and experiment "
                            f"file {profile.experiment_hash}"), highlight=False)
    document = plan_document(profile, _repetitions(exp), detect, stopped)
    document["calibration"] = {
        "id": calibration, "block_rounds": block_rounds,
        "blocks_run": [{"block": number, "runs": [index_of[r] for r in order]}
                       for number, order in done.blocks],
        "blocks_run_definition": "the blocks this invocation ran (a resumed calibration's "
                                 "earlier ones are in each run's facts, phase 'calibration "
                                 "block N'): runs by their index 1..K, in the order they ran"}
    if as_json:
        sys.stdout.write(safetext.dumps(document, indent=2) + "\n")
        return
    from virtbench.report.decide_text import render_calibration

    render_calibration(document, consoles.console)
