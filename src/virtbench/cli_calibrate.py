"""The `calibrate` command (registered by virtbench.cli): A/A runs of an experiment's baseline
variant → a noise profile (decide/calibration.py) stored for this host and experiment file →
the minimum detectable effect per workload · metric, as a table or JSON. Exit codes: 0 a
profile was stored, 1 a run failed or too few runs completed, 2 bad input."""

from __future__ import annotations

import dataclasses
import sys
import time
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from virtbench import __version__, safetext
from virtbench.cli_options import DEFAULT_STORE, JsonOpt, StoreOpt, number_parser
from virtbench.model import RunFailed

if TYPE_CHECKING:
    from virtbench.spec.models import Experiment

__all__ = ["calibrate", "calibration_experiment"]

console = safetext.console()
err = safetext.console(stderr=True)


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


def _repetitions(exp: Experiment) -> int:
    """n of the detectable-effect table: the experiment's repetitions (adaptive: its max)."""
    rule = exp.repetitions
    return rule if isinstance(rule, int) else rule.max


def calibrate(
    experiment: Annotated[Path, typer.Argument(help="experiment YAML file")],
    runs: Annotated[int, typer.Option(
        "--runs", "-k", min=2, max=1000,
        help="separate runs of the baseline variant (2 to 1000)")] = 5,
    budget: Annotated[float | None, typer.Option(
        "--budget", metavar="SECONDS", parser=number_parser(0, low_open=True),
        help="stop starting runs when the next would end after this many seconds (by the "
             "mean duration of the runs so far)")] = None,
    detect: Annotated[float | None, typer.Option(
        "--detect", metavar="PCT", parser=number_parser(0, 100, low_open=True),
        help="also the repetitions and runs per side needed to detect a PCT % worsening")]
    = None,
    store: StoreOpt = DEFAULT_STORE,
    as_json: JsonOpt = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q")] = False,
) -> None:
    """A/A calibration: run the experiment's baseline variant K times as separate stored runs,
    estimate per workload · metric how much results vary within a run and drift between runs,
    store that noise profile for this host and experiment file (`compare` uses it), and show
    the smallest regression the gate can detect."""
    from virtbench import cli
    from virtbench.cli_progress import RichProgress
    from virtbench.decide.calibration import build_profile, plan_document
    from virtbench.decide.runs import load_run
    from virtbench.preflight import NoiseWatch
    from virtbench.runner import Runner
    from virtbench.spec import load_resolved

    resolved, text = load_resolved(experiment)  # judged once; each run is its baseline only
    exp = resolved.experiment
    st = cli._store(store, create=True)
    run_ids: list[str] = []
    durations: list[float] = []
    stopped = ""
    started = time.monotonic()
    for index in range(1, runs + 1):
        elapsed = time.monotonic() - started
        if budget is not None and durations:
            expected = sum(durations) / len(durations)
            if elapsed + expected > budget:
                stopped = (f"--budget {budget:g} s: stopped after {len(run_ids)} of {runs} runs "
                           f"({elapsed:.0f} s so far; the next would take about "
                           f"{expected:.0f} s more)")
                break
        noise = NoiseWatch()
        runner = Runner(st, dataclasses.replace(
                            resolved, experiment=calibration_experiment(exp, index, runs)),
                        text, str(experiment),
                        progress=RichProgress(err, quiet), noise=noise)
        before = time.monotonic()
        try:
            with noise.registered(exp.name):
                outcome = runner.run()
        except KeyboardInterrupt as exc:
            err.print(f"[yellow]interrupted[/] ({safetext.markup(exc) or 'SIGINT'}) during "
                      f"calibration run {index} of {runs}; no profile stored (the "
                      f"{len(run_ids)} complete runs stay in the store)", highlight=False)
            raise typer.Exit(130) from exc
        except RunFailed as exc:  # bad input (target, tools, knobs) fails in the first run's
            # checks, before anything is stored
            raise RunFailed(f"calibration run {index} of {runs} failed, no profile stored: "
                            f"{exc}") from exc
        durations.append(time.monotonic() - before)
        run_ids.append(outcome.run_id)
        err.print(safetext.text(f"calibration run {index}/{runs}: {outcome.run_id}, "
                                f"{outcome.trials} trials, {outcome.failures} failed, "
                                f"{durations[-1]:.1f} s"), highlight=False)
    if stopped:
        err.print(f"[yellow]{safetext.markup(stopped)}[/]", highlight=False)
    if len(run_ids) < 2:
        raise RunFailed(f"{len(run_ids)} calibration run(s) completed; a noise profile needs at "
                        "least 2" + (f" ({stopped})" if stopped else ""))
    profile = build_profile([load_run(r, lambda: st) for r in run_ids])
    profile.id = st.add_noise_profile(
        fingerprint=profile.fingerprint, experiment_hash=profile.experiment_hash,
        experiment=profile.experiment, host=profile.host, variant=profile.variant,
        run_ids=profile.run_ids, data=profile.data(), version=__version__)
    err.print(safetext.text(f"noise profile {profile.id} stored in {store} for host "
                            f"{profile.host} (fingerprint {profile.fingerprint}) and experiment "
                            f"file {profile.experiment_hash}"), highlight=False)
    document = plan_document(profile, _repetitions(exp), detect, stopped)
    if as_json:
        sys.stdout.write(safetext.dumps(document, indent=2) + "\n")
        return
    from virtbench.report.decide_text import render_calibration

    render_calibration(document, console)
