"""Experiment values are checked at the door: unknown fields by name, finite numbers, sane
sizes, bounded seeds and grids (virtbench.contract.Params, virtbench.spec)."""

from __future__ import annotations

import pytest
from pydantic import BaseModel

from virtbench.contract import Params
from virtbench.model import VirtbenchError
from virtbench.plugins import all_labs, all_workloads
from virtbench.spec import SpecError, parse_experiment
from virtbench.spec.models import TargetSpec
from virtbench.targets.factory import TARGET_PARAMS, make_target

NOOP = "workloads: [{name: exec.noop}]\n"


def refusal(text: str, source: str = "p.yaml") -> str:
    with pytest.raises(SpecError) as info:
        parse_experiment(text, source)
    return str(info.value)


def plugin_params() -> dict[str, type[BaseModel]]:
    models: dict[str, type[BaseModel]] = {}
    models |= {f"workload {n}": c.Params for n, c in all_workloads().items()}
    models |= {f"lab {n}": c.Params for n, c in all_labs().items()}
    models |= {f"target {n}": m for n, m in TARGET_PARAMS.items()}
    return models


@pytest.mark.parametrize(("owner", "model"), list(plugin_params().items()))
def test_every_params_model_refuses_unknown_fields_and_non_finite_numbers(
        owner: str, model: type[BaseModel]) -> None:
    assert issubclass(model, Params), owner
    assert model.model_config.get("extra") == "forbid", owner
    assert model.model_config.get("allow_inf_nan") is False, owner


@pytest.mark.parametrize(("target", "line"), [
    ("{kind: local, params: {hots: x}}",
     "p.yaml:2: target.params.hots: Extra inputs are not permitted (takes no parameters)"),
    ("{kind: netns, params: {namespace: a, hots: x}}",
     "p.yaml:2: target.params.hots: Extra inputs are not permitted (fields: namespace)"),
    ("{kind: ssh, params: {hots: x}}",
     "p.yaml:2: target.params.hots: Extra inputs are not permitted; did you mean 'host'?"),
    ("{kind: ssh, params: {host: h, port: 70000}}",
     "p.yaml:2: target.params.port: Input should be less than or equal to 65535"),
    ("{kind: libvirt-guest, params: {domain: d, ssh_prot: 22}}",
     "did you mean 'ssh_port'?"),
    ("{kind: mars}", "p.yaml:2: target.kind: unknown target 'mars'; known: local, netns, ssh"),
])
def test_target_params_are_validated_at_load(target: str, line: str) -> None:
    # `hots:` used to be accepted and ignored for local and netns targets
    assert line in refusal(f"name: x\ntarget: {target}\n{NOOP}")


def test_make_target_refuses_unknown_params_without_the_loader() -> None:
    with pytest.raises(VirtbenchError, match=r"target .local. params: hots: Extra inputs"):
        make_target(TargetSpec(kind="local", params={"hots": "x"}))


@pytest.mark.parametrize(("text", "line"), [
    ("workloads: [{name: exec.noop, timeout_s: .inf}]\n",
     "p.yaml:2: workloads[0].timeout_s: Input should be a finite number"),
    ("workloads: [{name: exec.noop, timeout_s: 'inf'}]\n",
     "workloads[0].timeout_s: Input should be a finite number"),
    ("workloads: [{name: cpu.crc32c, params: {size_mib: .nan}}]\n",
     "workloads[0].params.size_mib: Input should be a finite number"),
    ("workloads: [{name: exec.command, params: {argv: [true], timeout_s: -.inf}}]\n",
     "workloads[0].params.timeout_s: Input should be a finite number"),
    (f"repetitions: {{min: 2, max: 3, budget_s: .inf}}\n{NOOP}",
     "repetitions.budget_s: Input should be a finite number"),
    ("lab: {kind: vnf-router, params: {neighbour_cpu_cores: .nan}}\n"
     "workloads: [{name: net.router-throughput}]\n",
     "lab.params.neighbour_cpu_cores: Input should be a finite number"),
    ("lab: {kind: vswitch}\nvariants: [{name: a, knobs: {background_mbps: .inf}}]\n"
     "workloads: [{name: net.qos-transfer}]\n", "knob 'background_mbps' = inf is refused"),
    ("workloads:\n  - name: net.router-throughput\n    search: {load: streams, lower: 1, "
     "upper: 4, pass_if: [{metric: x, max: .nan}]}\n", "Input should be a finite number"),
])
def test_non_finite_numbers_are_refused_everywhere(text: str, line: str) -> None:
    # timeout_s: .inf once gave a "complete" run in which every trial failed
    assert line in refusal("name: x\n" + text)


@pytest.mark.parametrize(("params", "field"), [
    ("{name: cpu.crc32c, params: {size_mib: 1e-12}}", "size_mib"),
    ("{name: cpu.aes, params: {bulk_mib: 1e-9}}", "bulk_mib"),
    ("{name: storage.fio, params: {runtime_s: 1e-9}}", "runtime_s"),
    ("{name: net.qos-probe, params: {interval_ms: 1e-300}}", "interval_ms"),
    ("{name: web.load, params: {rate_per_s: 1e-300}}", "rate_per_s"),
    ("{name: web.load, params: {duration_s: 1e300}}", "duration_s"),
    ("{name: exec.command, params: {argv: [x], timeout_s: 1e300}}", "timeout_s"),
    ("{name: exec.noop, timeout_s: 1e300}", "timeout_s"),
])
def test_physically_meaningless_values_are_refused(params: str, field: str) -> None:
    # size_mib: 1e-12 once measured a 0-byte buffer and stored throughput 0.0 as ok
    message = refusal(f"name: x\nworkloads: [{params}]\n")
    assert f"workloads[0].{'params.' if 'params' in params else ''}{field}: Input should be" \
        in message


def test_smallest_sane_size_is_accepted() -> None:
    exp = parse_experiment("name: x\nworkloads: [{name: cpu.crc32c, params: "
                           "{size_mib: 0.0009765625}}]\n")
    assert exp.workloads[0].params["size_mib"] == 1 / 1024


@pytest.mark.parametrize(("text", "line"), [
    ("matrix: {}\n", "p.yaml:2: matrix: an empty matrix makes no variants"),
    ("matrix: {cpu_features: []}\n", "p.yaml:2: matrix: knob 'cpu_features' has no values"),
    ("seed: 100000000000000000000000\n",
     "p.yaml:2: seed: Input should be less than or equal to 9223372036854775807"),
    ("seed: -100000000000000000000000\n", "p.yaml:2: seed: Input should be greater than"),
    ("repetitions: 1000000000000000\n", "p.yaml:2: repetitions: repetitions must be from 1 to"),
    ("repetitions: {max: 10000000000}\n", "repetitions.max: Input should be less than"),
    ("matrix: {a: [" + ", ".join(map(str, range(200))) + "], b: ["
     + ", ".join(map(str, range(200))) + "]}\n",
     "40,000 variants (variants, matrix and factorial together); at most 10,000"),
    ("variants: [{name: \"a\\e]0;pwned\\a\"}]\n",
     "variants[0].name: must not contain control characters (found U+001B)"),
    ("ordr: blocked\n", "p.yaml:2: ordr: Extra inputs are not permitted; did you mean 'order'?"),
    ("repetitions: {min: 2, mx: 3}\n", "repetitions.mx: Extra inputs are not permitted; did "
                                        "you mean 'max'?"),
])
def test_bad_experiment_values_name_the_field(text: str, line: str) -> None:
    # an empty matrix and a seed beyond 64 bits used to end in exit 3 (IndexError,
    # OverflowError in the store)
    assert line in refusal("name: x\n" + text + NOOP)


def test_workload_param_typo_gets_the_closest_name() -> None:
    assert ("p.yaml:2: workloads[0].params.size_mb: Extra inputs are not permitted; did you "
            "mean 'size_mib'?") in refusal(
        "name: x\nworkloads: [{name: cpu.crc32c, params: {size_mb: 1}}]\n")


def test_seed_at_the_64_bit_limit_is_accepted() -> None:
    assert parse_experiment(f"name: x\nseed: {2**63 - 1}\n{NOOP}").seed == 2**63 - 1


@pytest.mark.parametrize(("target", "field"), [
    ("{kind: ssh, params: {host: -oProxyCommand=x}}", "host"),
    ("{kind: ssh, params: {host: h, user: -lroot}}", "user"),
    ("{kind: libvirt-guest, params: {domain: d, ssh_host: -oX=y}}", "ssh_host"),
    ("{kind: libvirt-guest, params: {domain: d, ssh_user: -lx}}", "ssh_user"),
])
def test_an_ssh_host_or_user_that_reads_as_an_option_is_refused(target: str,
                                                                field: str) -> None:
    """A leading '-' would reach ssh's command line as an option: refused at load."""
    message = refusal(f"name: t\ntarget: {target}\n{NOOP}")
    assert f"p.yaml:2: target.params.{field}: the value '-" in message
    assert "ssh would read it as an option" in message
