"""The host record inside the monitor: what the reporter's JSON says, read one way.

Ingest, the pages and the alarms all read records through this package and never through
each other: `times` (the schema's UTC form), `reading` (tolerant readers of JSON values),
`sections` (the record's sections and the names they share), `index` (the queues and pushes
ingest indexes) and `slices` (the parts of a latest record ingest stores for the pages).
"""
