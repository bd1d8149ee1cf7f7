"""Measurements taken by the orchestrator: binary record readers, ping, CPU accounting."""
