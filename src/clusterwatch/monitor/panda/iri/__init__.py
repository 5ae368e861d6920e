"""The NERSC IRI API client that reads a remote harvester's queue configuration file:
`client` (the exchange, bounded as every outbound request through `clusterwatch.http_client`),
`errors` (what a failed read means to the record), `settings` (the API's URL and token from
the environment and credential files).
"""
