"""Ingest of host records: tokens bound to keys, body and schema checks, storage and indexes."""
