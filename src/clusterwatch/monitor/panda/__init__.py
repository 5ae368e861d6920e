"""The PanDA server's view (issue 12): what the monitor learns from the PanDA server and the
sites around it, for harvesters that no reporter can run beside (Perlmutter's, under PanDA
operations' account at NERSC).

So far: the NERSC IRI API client that reads a remote file, the queue configuration
(`iri_client`, its errors in `iri_errors`, its settings in `iri_settings`). No Django here:
these modules are plain adapters that take their environment as parameters.
"""
