"""ssh's own error text becomes one line saying what is wrong and what to do."""

from __future__ import annotations

from virtbench.fleet.connect import ssh_problem
from virtbench.fleet.inventory import FleetHost

HOST = FleetHost("h1", "10.77.0.10", 2222, "root")


def test_unknown_host_key_says_how_to_add_it() -> None:
    stderr = ("No ED25519 host key is known for [10.77.0.10]:2222 and you have requested "
              "strict checking.\r\nHost key verification failed.\r\n")
    message = ssh_problem(HOST, stderr, "/tmp/kh")
    assert "unknown (not in /tmp/kh)" in message
    assert "ssh-keyscan -p 2222 10.77.0.10 >> /tmp/kh" in message
    assert "never accepts a key blindly" in message


def test_changed_host_key_is_not_the_same_message() -> None:
    stderr = ("@@@ WARNING: REMOTE HOST IDENTIFICATION HAS CHANGED! @@@\n"
              "Host key verification failed.")
    assert "CHANGED" in ssh_problem(HOST, stderr, None)


def test_unreachable_and_refused_logins() -> None:
    refused = "ssh: connect to host 10.77.0.10 port 2222: Connection refused\r\n"
    assert ssh_problem(HOST, refused, None) == ("unreachable: 10.77.0.10 port 2222: "
                                                "Connection refused")
    denied = "root@10.77.0.10: Permission denied (publickey).\r\n"
    assert "ansible_ssh_private_key_file" in ssh_problem(HOST, denied, None)
    assert ssh_problem(HOST, "", None).endswith("failed: no message")
