"""The PanDA server's view (issue 12): what the monitor learns from the PanDA server and the
sites around it, for harvesters that no reporter can run beside (Perlmutter's, under PanDA
operations' account at NERSC).

So far: the NERSC IRI API client that reads a remote file, the queue configuration
(`iri_client`, its errors in `iri_errors`, its settings in `iri_settings`), and the remote
harvester's host record built from the PanDA server's harvester tables (`remote_record`,
pure over the rows of `server_rows`, with `remote_instance`, `remote_workers`,
`remote_limits`, `remote_dialogs`, `remote_metrics` and `remote_times`). No Django here:
these modules are plain adapters and pure functions that take their environment as
parameters.
"""
