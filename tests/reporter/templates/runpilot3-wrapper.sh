#!/bin/bash
# a plain pilot wrapper: no container launch of its own
exec python3 pilot.py "$@"
