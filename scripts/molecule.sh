#!/usr/bin/env bash
# Run Molecule scenarios: render each scenario's blueprint, make sure the base image exists,
# then `molecule test`. Usage: scripts/molecule.sh [scenario...] (default: all).
set -euo pipefail
cd "$(dirname "$0")/.."
bash molecule/build-image.sh
scenarios=("$@")
if ((${#scenarios[@]} == 0)); then
    scenarios=(slurm node)
fi
for scenario in "${scenarios[@]}"; do
    estategen render "molecule/$scenario/blueprint.yaml" -o "molecule/$scenario/rendered"
    start=$(date +%s)
    molecule test -s "$scenario"
    echo "molecule scenario $scenario passed in $(( $(date +%s) - start )) s"
done
