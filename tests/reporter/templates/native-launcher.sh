#!/bin/bash
# The native pilot launcher. It declares what it implements:
EPICPROD_LAUNCHER_FEATURES="container-launch omit-dispatch-image-filter"
export EPICPROD_LAUNCHER_FEATURES
exec python3 pilot.py --no-image-filter "$@"
