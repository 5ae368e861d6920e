#!/bin/bash
# per-job container launch through ATLASLocalRootBase
export ATLAS_LOCAL_ROOT_BASE=/cvmfs/atlas.cern.ch/repo/ATLASLocalRootBase
source ${ATLAS_LOCAL_ROOT_BASE}/user/atlasLocalSetup.sh --quiet
export thePlatform="$PAYLOAD_IMAGE"
setupATLAS -c $thePlatform -r "$PAYLOAD_COMMAND"
