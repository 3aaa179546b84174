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
    from virtbench.preflight import NoiseWatch
    from virtbench.runner import Runner, RunRecord
    from virtbench.runner.blocks import BlocksOutcome
    from virtbench.spec import ResolvedExperiment
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
    from virtbench.spec import load_resolved

    resolved, text = load_resolved(experiment)  # judged once; each run is its baseline only
    cal = _Calibration(open_store(store, create=True), resolved, text, experiment,
                       block_rounds, quiet)
    if resume is not None:
        cal.resume(resume, runs)
    else:
        cal.open(runs or 5)
    cal.announce(resumed=resume is not None)
    done = cal.measure(budget)
    if done.stopped:
        cal.end_by_budget(done.stopped)
    document = cal.store_profile(detect, done)
    if as_json:
        sys.stdout.write(safetext.dumps(document, indent=2) + "\n")
        return
    from virtbench.report.decide_text import render_calibration

    render_calibration(document, consoles.console)


class _BudgetClock:
    """The durations of the blocks so far: stop before a block that would end past --budget."""

    def __init__(self, budget: float | None, first_block: int, block_rounds: int) -> None:
        self.budget = budget
        self.first_block = first_block
        self.block_rounds = block_rounds
        self.started = time.monotonic()
        self.block_started = self.started
        self.durations: list[float] = []

    def block_starts(self, block: int) -> str:
        """Note that ``block`` starts now; why not to start it ('' to start it)."""
        now = time.monotonic()
        if block > self.first_block:
            self.durations.append(now - self.block_started)
        self.block_started = now
        elapsed = now - self.started
        # Never before every run measured two rounds: a within-run variance needs two values.
        if self.budget is None or not self.durations or (block - 1) * self.block_rounds < 2:
            return ""
        expected = sum(self.durations) / len(self.durations)
        if elapsed + expected <= self.budget:
            return ""
        return (f"--budget {self.budget:g} s: stopped after {len(self.durations)} block(s) "
                f"({elapsed:.0f} s so far; the next would take about {expected:.0f} s more)")


class _Calibration:
    """One calibration: its K stored runs of the baseline variant, measured block by block."""

    def __init__(self, st: Store, resolved: ResolvedExperiment, text: str, experiment: Path,
                 block_rounds: int, quiet: bool) -> None:
        self.st = st
        self.resolved = resolved
        self.exp = resolved.experiment
        self.text = text
        self.experiment = experiment
        self.command = f"virtbench calibrate {experiment}"
        self.block_rounds = block_rounds
        self.quiet = quiet
        self.id = ""
        self.run_ids: list[str] = []
        self.index_of: dict[str, int] = {}
        self.first_block = 1
        # The target's facts, collected once for every block of every run: the blocks follow
        # each other within minutes on one host (each run still stores them, and its last
        # block its "after" facts). Collecting them per block cost two collections per run
        # and block.
        self.shared_facts: dict[str, Any] | None = None

    def runner(self, index: int, total: int, record: RunRecord,
               noise: NoiseWatch | None = None) -> Runner:
        from virtbench.cli.progress import RichProgress
        from virtbench.runner import Runner, build_plan

        # The file was judged once (load_resolved); each run is its baseline variant only.
        reduced = dataclasses.replace(
            self.resolved, experiment=calibration_experiment(self.exp, index, total))
        return Runner(build_plan(reduced), record,
                      progress=RichProgress(consoles.err, self.quiet), noise=noise)

    def new_record(self, run_id: str | None = None) -> RunRecord:
        from virtbench.runner import RunRecord

        return RunRecord.new(self.st, self.text, str(self.experiment), run_id=run_id,
                             calibration=self.id if run_id else None)

    def _set_runs(self, calibration: str, run_ids: list[str]) -> None:
        self.id = calibration
        self.run_ids = run_ids
        self.index_of = {run_id: index for index, run_id in enumerate(run_ids, 1)}

    @property
    def resume_hint(self) -> str:
        return f"`{self.command} --resume {self.id}`"

    def resume(self, ref: str, runs: int | None) -> None:
        """Continue calibration ``ref``: same experiment file, same number of runs, none of
        them running now; from the block after the last one recorded."""
        from virtbench.decide.runs import experiment_digest
        from virtbench.runner.record import refuse_if_running

        calibration, infos = calibration_runs(self.st, self.exp, ref)
        if experiment_digest(infos[0].spec_yaml) != experiment_digest(self.text):
            raise VirtbenchError(f"calibration {calibration} was started from a different "
                                 "experiment file; resume needs the same file")
        if runs is not None and runs != len(infos):
            raise VirtbenchError(f"--runs {runs}: calibration {calibration} has "
                                 f"{len(infos)} runs")
        self._set_runs(calibration, [r.id for r in infos])
        for info in infos:
            refuse_if_running(info)
        self.first_block = _blocks_done(self.st, self.run_ids) + 1

    def open(self, total: int) -> None:
        """A new calibration of ``total`` runs, every one stored before any is measured (so an
        interrupted calibration is resumed whole)."""
        calibration = f"cal-{uuid.uuid4().hex[:8]}"
        self._set_runs(calibration,
                       [f"{calibration}-{index}" for index in range(1, total + 1)])
        # Target, tools and knobs are checked before anything is stored (exit 2 on bad input).
        self.runner(1, total, self.new_record()).check()
        try:
            for index, run_id in enumerate(self.run_ids, 1):
                self.runner(index, total, self.new_record(run_id)).open_run(
                    f"opened; {self.resume_hint} measures it")
        except BaseException:  # nothing measured yet: no half-opened calibration stays
            for run_id in self.run_ids:
                if self.st.has_run(run_id):
                    self.st.delete_run(run_id)
            raise

    def unfinished(self) -> list[str]:
        return [r for r in self.run_ids if self.st.run(r).status != "complete"]

    def announce(self, *, resumed: bool) -> None:
        unfinished = self.unfinished()
        consoles.err.print(safetext.text(
            f"calibration {self.id}: {len(self.run_ids)} runs of variant "
            f"{self.exp.baseline_name} ({', '.join(self.run_ids)}), {self.block_rounds} "
            "round(s) per run and block"
            + (f"; {len(unfinished)} unfinished, from block {self.first_block}" if resumed
               else "")), highlight=False)

    def measure(self, budget: float | None) -> BlocksOutcome:
        """Run the unfinished runs in interleaved blocks until each is complete or --budget
        stops them; Ctrl-C (or SIGTERM) marks every unfinished run interrupted: exit 130."""
        from virtbench.runner.blocks import run_in_blocks
        from virtbench.runner.record import sigterm_as_interrupt

        unfinished = self.unfinished()
        clock = _BudgetClock(budget, self.first_block, self.block_rounds)

        def before_block(block: int, order: list[str]) -> str:
            stop = clock.block_starts(block)
            if not stop:
                self._record_block(block, order)
            return stop

        try:
            with sigterm_as_interrupt():  # also between two runs' blocks, not only inside one
                return run_in_blocks(unfinished, self._step, seed=self.exp.seed, salt=self.id,
                                     first_block=self.first_block, before_block=before_block)
        except KeyboardInterrupt as exc:
            self._mark_interrupted(exc)
            raise typer.Exit(130) from exc

    def _record_block(self, block: int, order: list[str]) -> None:
        """The block's order, recorded with each run, and shown."""
        positions = [self.index_of[r] for r in order]
        for position, run_id in enumerate(order, 1):
            self.st.add_facts(run_id, f"{BLOCK_PHASE}{block}", {
                "calibration": self.id, "block": block, "position": position,
                "order": positions, "rounds": self.block_rounds})
        consoles.err.print(safetext.text(f"calibration block {block}: runs "
                                         f"{', '.join(map(str, positions))}"), highlight=False)

    def _step(self, run_id: str) -> bool:
        """One block's rounds of one run; False when it paused (the calibration stops)."""
        from virtbench.preflight import NoiseWatch

        index, total = self.index_of[run_id], len(self.run_ids)
        noise = NoiseWatch()
        from virtbench.runner import RunRecord

        record = RunRecord.resume(self.st, run_id, self.text, str(self.experiment),
                                  calibration=self.id)
        block_runner = self.runner(index, total, record, noise=noise)
        if self.shared_facts is None:
            from virtbench.facts import collect_facts

            self.shared_facts = collect_facts(block_runner.target)
        try:
            with noise.registered(self.exp.name):
                outcome = block_runner.run(rounds=self.block_rounds,
                                           facts=self.shared_facts)
        except RunFailed as exc:
            raise RunFailed(f"calibration run {index} of {total} ({run_id}) failed, no profile "
                            f"stored: {exc}; {self.resume_hint} retries it") from exc
        if outcome.paused:
            self.st.set_run_status(run_id, "interrupted",
                                   f"calibration {self.id}: paused between blocks; "
                                   f"{self.resume_hint} continues it")
            return False
        consoles.err.print(safetext.text(f"calibration run {index}/{total}: {run_id} complete "
                                         f"({outcome.stop_reason})"), highlight=False)
        return True

    def _mark_interrupted(self, exc: KeyboardInterrupt) -> None:
        for run_id in self.unfinished():  # the runner marked the one it ran; the others too
            self.st.set_run_status(run_id, "interrupted",
                                   f"calibration {self.id} interrupted; {self.resume_hint} "
                                   "continues it")
        consoles.err.print(
            f"[yellow]interrupted[/] ({safetext.markup(exc) or 'SIGINT'}); no profile stored; "
            f"the samples so far stay in the store: continue with "
            f"`{safetext.markup(self.command)} --resume {self.id}`", highlight=False)

    def end_by_budget(self, stopped: str) -> None:
        """Mark the unfinished runs complete, as an adaptive run's time budget ends it."""
        consoles.err.print(f"[yellow]{safetext.markup(stopped)}[/]", highlight=False)
        for run_id in self.unfinished():
            self.st.set_run_status(run_id, "complete", f"calibration {self.id}: {stopped}")

    def store_profile(self, detect: float | None, done: BlocksOutcome) -> dict[str, Any]:
        """Build the noise profile of the runs, store it, and return the plan document."""
        from virtbench.decide.calibration import build_profile, plan_document
        from virtbench.decide.runs import load_run

        st = self.st
        profile = build_profile([load_run(r, lambda: st) for r in self.run_ids])
        profile.id = st.add_noise_profile(
            fingerprint=profile.fingerprint, experiment_hash=profile.experiment_hash,
            experiment=profile.experiment, host=profile.host, variant=profile.variant,
            run_ids=profile.run_ids, data=profile.data(), version=__version__)
        consoles.err.print(safetext.text(
            f"noise profile {profile.id} stored in {st.shown} for host {profile.host} "
            f"(fingerprint {profile.fingerprint}) and experiment file "
            f"{profile.experiment_hash}"), highlight=False)
        document = plan_document(profile, _repetitions(self.exp), detect, done.stopped)
        document["calibration"] = {
            "id": self.id, "block_rounds": self.block_rounds,
            "blocks_run": [{"block": number, "runs": [self.index_of[r] for r in order]}
                           for number, order in done.blocks],
            "blocks_run_definition": "the blocks this invocation ran (a resumed calibration's "
                                     "earlier ones are in each run's facts, phase "
                                     "'calibration block N'): runs by their index 1..K, in "
                                     "the order they ran"}
        return document
