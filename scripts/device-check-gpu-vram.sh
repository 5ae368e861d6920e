#!/usr/bin/env bash
# Check the GPU VRAM writer on a real GPU machine: read through NVML and through nvidia-smi,
# print both files and compare the GPU UUID sets. No internet needed.
#
#   OUT=/tmp/vram-check scripts/device-check-gpu-vram.sh
#
# Exit status: 0 both sources wrote a file and saw the same GPUs (or NVML could not be
# checked because nvidia-ml-py is missing, which is said loudly), 1 otherwise.
set -u
cd "$(dirname "$0")/.." || exit 1
OUT="${OUT:-/tmp}"
PYTHON="${PYTHON:-python3}"
mkdir -p "$OUT" || exit 1

# Prefer an editable install (brings nvidia-ml-py when it is available offline); otherwise
# run from the source tree. Short pip timeouts: without a network pip would retry for minutes.
if timeout 180 "$PYTHON" -m pip install -q --retries 0 --timeout 5 -e '.[gpu]' >"$OUT/pip.log" 2>&1; then
    echo "installed clusterwatch[gpu] (editable)"
else
    echo "pip install -e '.[gpu]' failed (see $OUT/pip.log); using PYTHONPATH=src"
fi
export PYTHONPATH="$PWD/src${PYTHONPATH:+:$PYTHONPATH}"

writer() {  # writer SOURCE FILE
    timeout 60 "$PYTHON" -m clusterwatch -v textfile gpu-vram --source "$1" --output "$2"
}
uuids() { grep -o 'uuid="[^"]*"' "$1" | sort -u; }

status=0
nvml_file="$OUT/gpu_vram.nvml.prom"
smi_file="$OUT/gpu_vram.nvidia-smi.prom"
rm -f "$nvml_file" "$smi_file"

if "$PYTHON" -c 'import pynvml' 2>/dev/null; then
    echo "== --source nvml"
    if writer nvml "$nvml_file"; then cat "$nvml_file"; else echo "FAILED: nvml"; status=1; fi
else
    echo "== --source nvml: SKIPPED, nvidia-ml-py (pynvml) is not installed: NVML NOT CHECKED"
fi

echo "== --source nvidia-smi"
if writer nvidia-smi "$smi_file"; then cat "$smi_file"; else echo "FAILED: nvidia-smi"; status=1; fi

if [ -s "$nvml_file" ] && [ -s "$smi_file" ]; then
    echo "== UUID sets (< nvml, > nvidia-smi)"
    if diff <(uuids "$nvml_file") <(uuids "$smi_file"); then
        echo "same $(uuids "$smi_file" | wc -l) GPU UUID(s) from both sources"
    else
        echo "FAILED: the sources see different GPUs"; status=1
    fi
    echo "== totals side by side (NVML bytes vs nvidia-smi MiB x 1048576)"
    grep '^gpu_vram_total_bytes' "$nvml_file"
    grep '^gpu_vram_total_bytes' "$smi_file"
fi

if [ "$status" -eq 0 ]; then echo "device check: OK"; else echo "device check: FAILED"; fi
exit "$status"
