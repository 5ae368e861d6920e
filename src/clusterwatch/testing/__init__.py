"""Loopback services and fakes for tests, benchmarks and the local demonstration.

Never used by production code paths.
"""
