"""The central web app (Django): host-record ingest, pages, alarms.

Run it through `clusterwatch monitor <django command>`; settings come from the environment
(`clusterwatch.monitor.site.settings`). Only this part imports Django.
"""
