"""Workloads: the flow engine's per-host configuration and its processes."""
