"""Benchmarks behind ``prime-rl-dynamo bench``."""
