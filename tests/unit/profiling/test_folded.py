"""Folded stacks from a real ``perf script`` output (tests/data/perf/README.md)."""

from __future__ import annotations

import json
from pathlib import Path

from virtbench.profiling.folded import Folded, fold_perf_script, guest_leaves

DATA = Path(__file__).resolve().parents[2] / "data" / "perf"


def _lines(text: str) -> list[tuple[str, int]]:
    """(stack, count) of each folded line."""
    return [(line.rsplit(" ", 1)[0], int(line.rsplit(" ", 1)[1])) for line in text.splitlines()]


def test_every_sample_of_the_real_output_is_counted_once() -> None:
    text = (DATA / "crc32c-system-wide.txt").read_text()
    folded = fold_perf_script(text.splitlines())
    headers = sum(1 for line in text.splitlines() if line.rstrip().endswith("cpu-clock:"))
    assert folded.samples == headers == 67
    assert sum(count for _stack, count in _lines(folded.text())) == 67


def test_stacks_are_root_first_with_the_process_name_and_the_crc32c_leaf() -> None:
    folded = fold_perf_script((DATA / "crc32c-system-wide.txt").read_text().splitlines())
    stacks = dict(_lines(folded.text()))
    # perf prints the leaf first: "_crc32c_sw_slicing_by_8" then an unwound "[unknown]" caller
    assert stacks["python;[unknown];_crc32c_sw_slicing_by_8"] == 12
    assert all(stack.split(";")[0] for stack in stacks)  # a comm at the root of every stack
    idle = next(s for s in stacks if s.startswith("swapper;"))
    assert idle.split(";")[1] == "common_startup_64_[k]"  # the outermost kernel frame first
    assert idle.endswith(";pv_native_safe_halt_[k]")


def test_kernel_frames_are_marked_and_user_frames_are_not() -> None:
    folded = fold_perf_script((DATA / "crc32c-system-wide.txt").read_text().splitlines())
    frames = {f for stack, _ in _lines(folded.text()) for f in stack.split(";")[1:]}
    assert "entry_SYSCALL_64_after_hwframe_[k]" in frames
    assert "_PyLong_AsByteArray" in frames
    assert not any(f.endswith("_[g]") for f in frames)


def test_unresolved_frames_are_counted_by_module() -> None:
    folded = fold_perf_script((DATA / "crc32c-system-wide.txt").read_text().splitlines())
    assert folded.frames == 408
    assert folded.unresolved_frames == 29 == folded.unresolved_by_dso["[unknown]"]
    assert round(folded.unresolved_frames_pct, 2) == 7.11


def test_lines_are_ordered_by_count_then_name() -> None:
    folded = fold_perf_script((DATA / "crc32c-system-wide.txt").read_text().splitlines())
    lines = _lines(folded.text())
    assert lines == sorted(lines, key=lambda item: (-item[1], item[0]))


# The forms below are not in the saved output: a QEMU vCPU thread (comm with a space and a
# slash), a guest sample perf attributes to the guest kernel, and a function perf could not
# name inside a known library.
SYNTHETIC = """\
CPU 0/KVM  4242/4250  [001] cpu-clock:
\tffffffff81234567 native_safe_halt ([guest.kernel.kallsyms])
\t    7f0000001000 [unknown] (/usr/lib/x86_64-linux-gnu/libx265.so.199)
\t    55e000001000 main (/usr/bin/qemu-system-x86_64)

varnishd  77/78  [000] cpu-clock:
\tffffffffc0a01234 ovs_execute_actions ([openvswitch])
\t    7f0000002000 VRT_synth_page;x (/usr/lib/varnish/vmods/libvmod_std.so)

"""


def test_guest_module_and_unknown_function_frames() -> None:
    folded = fold_perf_script(SYNTHETIC.splitlines())
    assert dict(_lines(folded.text())) == {
        "CPU_0/KVM;main;[libx265.so.199];native_safe_halt_[g]": 1,
        "varnishd;VRT_synth_page:x;ovs_execute_actions_[k]": 1,
    }
    assert folded.unresolved_by_dso == {"/usr/lib/x86_64-linux-gnu/libx265.so.199": 1}


def test_a_recording_of_one_process_tree_without_cpu_numbers() -> None:
    """x265 through ffmpeg, recorded without -a (as the guest scope records QEMU's process)."""
    text = (DATA / "x265-one-process.txt").read_text()
    folded = fold_perf_script(text.splitlines())
    assert folded.samples == 164 == sum(count for _s, count in _lines(folded.text()))
    frames = {f for stack, _ in _lines(folded.text()) for f in stack.split(";")}
    assert "x265::saoCuStatsBO_c" in frames  # a C++ name with '::' kept whole
    assert "[libx265.so.199]" in frames  # a function libx265 does not export: its module
    assert folded.unresolved_by_dso["/usr/lib/x86_64-linux-gnu/libx265.so.199"] == 51
    assert {stack.split(";")[0] for stack, _ in _lines(folded.text())} == {"ffmpeg"}


def test_the_workload_is_what_the_root_forked_while_perf_recorded() -> None:
    text = (DATA / "workload-tree.txt").read_text()
    folded = fold_perf_script(text.splitlines())
    headers = sum(1 for line in text.splitlines() if line.rstrip().endswith("cpu-clock:"))
    assert folded.samples == headers  # task-event lines are not samples
    # forks perf synthesised for the processes alive at its start are not in the tree
    assert (2, 3) not in folded.forks and (20198, 20212) in folded.forks
    workload = folded.workload(20198)  # parent.py: sh 20212, and sh's python3 20213
    assert workload.pids == {20212, 20213}
    assert workload.comms == {"python3"}
    assert workload.samples == sum(c for (pid, _s), c in folded.pid_stacks.items()
                                   if pid in (20212, 20213)) > 0
    # parent.py's own samples and other python3 processes of the machine: same name, not its
    same_name = sum(c for (pid, s), c in folded.pid_stacks.items() if s.startswith("python3;"))
    own = sum(c for (pid, _s), c in folded.pid_stacks.items() if pid == 20198)
    assert own > 0 and same_name > workload.samples + own
    assert sum(c for _s, c in _lines(workload.text())) == workload.samples
    assert folded.workload(20198, exclude={20212}).pids == set()
    assert folded.workload(0).pids == set()  # the idle task forks nothing in a recording


def test_a_labs_daemons_count_with_what_they_forked_while_perf_recorded() -> None:
    folded = fold_perf_script((DATA / "workload-tree.txt").read_text().splitlines())
    # parent.py (20198) as a daemon started before the trial: it and the sh and python3 it
    # forked while perf recorded count; the root's own forks need not exist
    served = folded.workload(1, serving={20198})
    assert served.pids == {20198, 20212, 20213}
    assert served.samples == sum(c for (pid, _s), c in folded.pid_stacks.items()
                                 if pid in served.pids) > folded.workload(20198).samples
    # a daemon that had ended (no samples) adds nothing; exclude still wins
    assert folded.workload(20198, serving={999_999}).pids == {20212, 20213, 999_999}
    assert folded.workload(20198, serving={999_999}).samples == folded.workload(20198).samples
    assert folded.workload(1, exclude={20212}, serving={20198}).pids == {20198}


WINDOW_PROBE = 27102  # the probe's process in crc32c-window.txt (tests/data/perf/README.md)


def _probe_share(folded: Folded, leaf: str) -> float:
    probe = {stack: n for (pid, stack), n in folded.pid_stacks.items() if pid == WINDOW_PROBE}
    return sum(n for stack, n in probe.items() if stack.endswith(leaf)) / sum(probe.values())


def test_a_window_keeps_only_the_samples_of_the_probes_timed_loop() -> None:
    lines = (DATA / "crc32c-window.txt").read_text().splitlines()
    window = tuple(json.loads((DATA / "crc32c-window.json").read_text()))
    whole, timed = fold_perf_script(lines), fold_perf_script(lines, window)
    assert whole.samples == 349 and whole.outside_window == 0
    assert timed.samples == 187 and timed.samples + timed.outside_window == whole.samples
    assert timed.forks == whole.forks  # task events count whatever their time
    assert timed.frames < whole.frames  # frames of the samples kept only
    # The probe's start-up (Python, the random buffer) dilutes its routine over the whole
    # process; within its timed loop the routine is nearly every sample.
    assert _probe_share(whole, "_crc32c_sw_slicing_by_8") < 0.6
    assert _probe_share(timed, "_crc32c_sw_slicing_by_8") > 0.95


def test_sample_times_are_read_and_a_sample_without_one_is_kept() -> None:
    text = """\
python3 10/10 100.500000: cpu-clock:
\t    1000 inside (/usr/bin/python3)

python3 10/10 [001] 101.500000: cpu-clock:
\t    1000 after (/usr/bin/python3)

python3 10/10 cpu-clock:
\t    1000 untimed (/usr/bin/python3)
"""
    folded = fold_perf_script(text.splitlines(), (100.0, 101.0))
    assert dict(folded.stacks) == {"python3;inside": 1, "python3;untimed": 1}
    assert folded.outside_window == 1


# Hand-written (this machine's /dev/kvm runs no guest, so no real KVM recording exists here):
# what perf kvm's recording of a guest's QEMU process prints, in the forms perf 6.1 prints
# them. The first pass (-g): a guest-mode sample has no call chain (the kernel's unwinders
# stop at once in guest mode), so it is a header alone; a host-mode sample of the same thread
# has its chain. The second pass (-G, GUEST_LEAF_FIELDS): each sample's own frame.
KVM_FIRST_PASS = """\
CPU 0/KVM  4242/4250  1052.540852: cpu-clock:

CPU 0/KVM  4242/4250  1052.550852: cpu-clock:
\tffffffff8110a1b2 vcpu_enter_guest ([kernel.kallsyms])
\tffffffff810f0000 kvm_arch_vcpu_ioctl_run ([kernel.kallsyms])
\t    55e000001000 kvm_vcpu_thread_fn (/usr/bin/qemu-system-x86_64)

CPU 0/KVM  4242/4250  1052.560852: cpu-clock:

CPU 0/KVM  4242/4250  1052.570852: cpu-clock:

worker  4242/4260  1052.570852: cpu-clock:
\tffffffff81300000 filemap_read ([kernel.kallsyms])
\t    55e000002000 qemu_preadv (/usr/bin/qemu-system-x86_64)
"""
KVM_SECOND_PASS = """\
 CPU 0/KVM  4242/4250  1052.540852:  ffffffff81a0c3d0 blk_mq_submit_bio ([guest.kernel.kallsyms])
 CPU 0/KVM  4242/4250  1052.550852:  ffffffff8110a1b2 vcpu_enter_guest ([kernel.kallsyms])
 CPU 0/KVM  4242/4250  1052.560852:  ffffffff81a0c3d0 blk_mq_submit_bio ([guest.kernel.kallsyms])
 CPU 0/KVM  4242/4250  1052.570852:  ffffffffc0123456 [unknown] ([guest.kernel.kallsyms])
    worker  4242/4260  1052.570852:  ffffffff81300000 filemap_read ([kernel.kallsyms])
"""


def test_guest_mode_samples_get_their_own_guest_frame_from_the_second_pass() -> None:
    leaves = guest_leaves(KVM_SECOND_PASS.splitlines())
    assert set(leaves) == {(4250, "1052.540852"), (4250, "1052.560852"),
                           (4250, "1052.570852")}  # the guest's samples only
    folded = fold_perf_script(KVM_FIRST_PASS.splitlines(), leaves=leaves)
    assert dict(_lines(folded.text())) == {
        "CPU_0/KVM;blk_mq_submit_bio_[g]": 2,
        "CPU_0/KVM;[guest.kernel.kallsyms]_[g]": 1,  # an address the copy does not name
        "CPU_0/KVM;kvm_vcpu_thread_fn;kvm_arch_vcpu_ioctl_run_[k];vcpu_enter_guest_[k]": 1,
        "worker;qemu_preadv;filemap_read_[k]": 1,  # same time, another thread: its own chain
    }
    assert (folded.samples, folded.guest_samples) == (5, 3)
    assert folded.unresolved_by_dso == {"[guest.kernel.kallsyms]": 1}
    # without the second pass the guest's samples keep no frame, and none is a guest sample
    bare = fold_perf_script(KVM_FIRST_PASS.splitlines())
    assert dict(_lines(bare.text()))["CPU_0/KVM"] == 3 and bare.guest_samples == 0


def test_jit_code_is_named_without_its_process_id() -> None:
    """QEMU's TCG translation blocks, as perf names them (the form of a real TCG guest run:
    docs/explain.md, "Two disk cache modes of a guest"): one name whatever QEMU's process."""
    text = "".join(f"""\
CPU 0/TCG  {pid}/{pid + 5}  [000] cpu-clock:
\t    7f5e3c0123ab [unknown] (/tmp/perf-{pid}.map)
\t    55e000001000 cpu_exec (/usr/bin/qemu-system-x86_64)

""" for pid in (11960, 24346))
    folded = fold_perf_script(text.splitlines())
    assert dict(_lines(folded.text())) == {"CPU_0/TCG;cpu_exec;[jit]": 2}
    assert folded.unresolved_by_dso == {"/tmp/perf-11960.map": 1, "/tmp/perf-24346.map": 1}
