"""Ansible-style inventories (YAML and INI) and ssh:// URLs become fleet hosts."""

from __future__ import annotations

import pytest

from virtbench.fleet.inventory import (
    InventoryError,
    expand_pattern,
    host_from_url,
    parse_inventory,
    select_hosts,
)

YAML_INVENTORY = """\
all:
  vars:
    ansible_user: bench
  hosts:
    lone: {ansible_host: 192.0.2.9}
  children:
    kvm:
      vars: {ansible_port: 2222, ansible_ssh_private_key_file: ~/.ssh/kvm}
      hosts:
        kvm[1:2]:
        kvm3: {ansible_host: 192.0.2.3, ansible_user: root}
    xen:
      hosts:
        xen1:
"""

INI_INVENTORY = """\
# a comment
lone ansible_host=192.0.2.9

[kvm]
kvm[01:02] ansible_port=2200
kvm3 ansible_host=192.0.2.3 ansible_user=root

[kvm:vars]
ansible_port=2222
ansible_ssh_private_key_file=/keys/kvm

[hypervisors:children]
kvm

[all:vars]
ansible_user=bench
"""


def test_yaml_inventory_hosts_groups_and_variables() -> None:
    hosts = {h.name: h for h in parse_inventory(YAML_INVENTORY, "inv.yaml")}
    assert list(hosts) == ["lone", "kvm1", "kvm2", "kvm3", "xen1"]
    assert hosts["lone"].address == "192.0.2.9" and hosts["lone"].port == 22
    assert hosts["lone"].user == "bench"
    assert hosts["kvm1"].address == "kvm1" and hosts["kvm1"].port == 2222
    assert hosts["kvm1"].key_file is not None and hosts["kvm1"].key_file.endswith("/.ssh/kvm")
    assert hosts["kvm3"].user == "root"  # host variables win over group variables
    assert hosts["kvm3"].groups == ("kvm",)
    assert hosts["xen1"].port == 22


def test_ini_inventory_hosts_groups_children_and_vars() -> None:
    hosts = {h.name: h for h in parse_inventory(INI_INVENTORY, "inv.ini")}
    assert list(hosts) == ["lone", "kvm01", "kvm02", "kvm3"]
    assert hosts["kvm01"].port == 2200  # the host line wins over [kvm:vars]
    assert hosts["kvm3"].port == 2222 and hosts["kvm3"].key_file == "/keys/kvm"
    assert hosts["kvm3"].user == "root" and hosts["lone"].user == "bench"
    assert set(hosts["kvm3"].groups) == {"hypervisors", "kvm"}
    assert [h.name for h in select_hosts(hosts.values(), ["hypervisors"])] == [
        "kvm01", "kvm02", "kvm3"]


def test_numeric_ranges_keep_zero_padding() -> None:
    assert expand_pattern("web[08:10].lab") == ["web08.lab", "web09.lab", "web10.lab"]
    assert expand_pattern("plain") == ["plain"]


def test_ssh_urls() -> None:
    host = host_from_url("ssh://root@10.0.0.2:2222")
    assert (host.name, host.address, host.port, host.user) == ("10.0.0.2:2222", "10.0.0.2",
                                                               2222, "root")
    assert host_from_url("ssh://h").port == 22
    with pytest.raises(InventoryError, match="expected ssh://"):
        host_from_url("http://h")
    for url in ("ssh://root:s3cret@h", "ssh://root:s3cret@h:port", "sftp://root:s3cret@h"):
        with pytest.raises(InventoryError) as refused:  # the message names it, masked
            host_from_url(url)
        assert "root:***@h" in str(refused.value) and "s3cret" not in str(refused.value)


@pytest.mark.parametrize(("text", "message"), [
    ("all:\n  hosts:\n    h1: {ansible_port: http}\n", r"inv:3: host h1: ansible_port 'http'"),
    ("all:\n  hostz:\n    h1:\n", r"inv:2: group 'all': unknown key 'hostz'"),
    ("all:\n  hosts:\n    h1: {ansible_password: x}\n", r"inv:3: .*never stores a password"),
    ("[web]\nh1 ansible_port\n", r"inv:2: host 'h1': expected key=value"),
    ("[web:bogus]\nh1\n", r"inv:1: \[web:bogus\]"),
    ("all:\n  hosts: {}\n", r"inv: the inventory lists no hosts"),
    ("all: [\n", r"inv:\d+: invalid YAML"),
])
def test_bad_inventories_name_the_line(text: str, message: str) -> None:
    with pytest.raises(InventoryError, match=message):
        parse_inventory(text, "inv")


@pytest.mark.parametrize(("text", "message"), [
    # a null key became a host (or group) named "None", a float key a rounded name
    ("all:\n  hosts:\n    ~:\n", "inv:3: a host without a name (YAML null"),
    ("all:\n  hosts:\n    h1:\n    ? \n", "inv:4: a host without a name (YAML null"),
    ("all:\n  hosts:\n    1.10:\n", r"inv:3: host 1.1 is a number in YAML, not a name: quote"),
    ("all:\n  hosts:\n    true:\n", "inv:3: host True is a yes/no value in YAML"),
    ("~:\n  hosts: {h1: }\n", "inv:1: a group without a name"),
    ("all:\n  children:\n    ~: {hosts: {h1: }}\n", "inv:3: a group without a name"),
    # a leading '-' is an ssh option, not a host (it failed only at connect)
    ("all:\n  hosts:\n    -oProxyCommand=x:\n", "inv:3: '-oProxyCommand=x' starts with '-'"),
    ("[web]\n-oProxyCommand=x\n", "inv:2: '-oProxyCommand=x' starts with '-'"),
    ("[web]\n-web[1:2]\n", "inv:2: '-web1' starts with '-'"),
    ("all:\n  hosts:\n    h1: {ansible_host: -oProxyCommand=x}\n",
     "inv:3: host h1: ansible_host '-oProxyCommand=x' starts with '-': ssh would read it"),
    ("[web]\nh1 ansible_user=-lroot\n", "inv:2: host h1: ansible_user '-lroot' starts with"),
])
def test_nameless_and_option_like_hosts_are_refused_at_load(text: str, message: str) -> None:
    with pytest.raises(InventoryError) as info:
        parse_inventory(text, "inv")
    assert str(info.value).startswith(message), str(info.value)
    assert "\n" not in str(info.value)


def test_an_option_like_ssh_url_is_refused() -> None:
    for url, what in (("ssh://-oProxyCommand=x", "host"), ("ssh://-lroot@h", "user")):
        with pytest.raises(InventoryError, match=f"--host '{url}': {what} '-"):
            host_from_url(url)
    assert [h.name for h in parse_inventory("all:\n  hosts:\n    h-1:\n    '12':\n")] == [
        "h-1", "12"]  # a '-' inside a name, and a quoted number, are names


def test_ssh_args_of_the_inventory_follow_virtbenchs_host_key_options() -> None:
    from virtbench.fleet.connect import connect

    text = ("all:\n  vars: {ansible_ssh_common_args: '-o KexAlgorithms=curve25519-sha256'}\n"
            "  hosts:\n    h1: {ansible_ssh_extra_args: '-o StrictHostKeyChecking=no'}\n")
    (host,) = parse_inventory(text, "inv")
    assert host.ssh_args == ("-o", "KexAlgorithms=curve25519-sha256",
                             "-o", "StrictHostKeyChecking=no")
    argv = connect(host).ssh_argv(["true"])
    # ssh takes an option's first value: the user's "no" can never turn host key checks off
    assert argv.index("StrictHostKeyChecking=yes") < argv.index("StrictHostKeyChecking=no")
    assert "KexAlgorithms=curve25519-sha256" in argv
    with pytest.raises(InventoryError, match="inv:3: host h1: ansible_ssh_extra_args"):
        parse_inventory("all:\n  hosts:\n    h1: {ansible_ssh_extra_args: \"-o 'x\"}\n", "inv")
