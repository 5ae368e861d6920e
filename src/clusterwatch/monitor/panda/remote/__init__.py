"""The remote record: the host record of a harvester no reporter can run beside, built from
what it reports to the PanDA server.

`builder` assembles the record, pure over the server's rows (`clusterwatch.monitor.panda.
server_rows`) and the queue configuration, one module per section (`instance`, `workers`,
`limits`, `dialogs`, `metrics`; times in `times`). `run` is one run of the builder (the rows
read through `panda.panda_db`, the record stored through `ingest` or printed); `registered`
runs it for every remote key of the harvester registry, as the timer does.
"""
