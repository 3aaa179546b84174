"""Guest CPU configuration of libvirt/KVM domains: inventory, tuning, safe apply and rollback."""
