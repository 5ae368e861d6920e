"""Pool watch: expected HTCondor execute nodes and GPU VRAM textfiles, alert and recover.

Layout: `decisions` holds the pure rules; `sources` turn condor_status and Prometheus answers
into classified observations; `state` persists records and the outbox; `poll` ties one
run together; `replay` and `exercise` drive the same rules from recorded or simulated data.
"""
