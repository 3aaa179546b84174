"""Network workloads: foreground TCP with QoS instrumentation, latency probes, router throughput."""
