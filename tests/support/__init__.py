"""Helpers that test folders share: imported by tests and conftest files, never collected."""
