#!/bin/bash
# An older native launcher: it still filters jobs by the dispatch image.
# EPICPROD_LAUNCHER_FEATURES="omit-dispatch-image-filter"   (a comment declares nothing)
EPICPROD_LAUNCHER_FEATURES="container-launch"
exec python3 pilot.py "$@"
