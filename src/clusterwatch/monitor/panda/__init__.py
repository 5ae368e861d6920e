"""The PanDA server's view: what the monitor learns from the PanDA server's database and the
sites around it, for harvesters that no reporter can run beside (Perlmutter's, under PanDA
operations' account at NERSC), and for the pages that ask the server about a PanDA job.

Here: the server's database as the monitor reads it (`panda_settings`, `panda_db`, its rows in
`server_rows`), the job page's section on a PanDA job (`panda_job_rows`, `panda_job_truth`),
and the image-demand API (`image_demand`, `image_demand_views`). Below them, `remote/` builds
the host record of a remote harvester from the server's harvester tables, and `iri/` reads its
queue configuration through the NERSC IRI API. `remote/` imports this package's modules, never
the reverse; the record is stored through `ingest` (an edge docs/architecture.md lists).
"""
