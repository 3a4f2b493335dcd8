#!/usr/bin/env bash
# Install estategen into a virtual environment, .venv/ at the top of the checkout (or the folder
# ESTATEGEN_VENV names), created with the machine's python3 (Debian's own python3 refuses
# `pip install` outside one: PEP 668).
# Usage: scripts/install.sh          estategen itself
#        scripts/install.sh --test   estategen editable, with what the tests and linters need
# A fresh Debian has python3 without its venv module (package python3-venv): as root this
# installs it; otherwise it says which package to install.
set -euo pipefail
cd "$(dirname "$0")/.."

fail() {
    echo "scripts/install.sh: $*" >&2
    exit 1
}

case "${1:-}" in
    "") target=(.) ;;
    --test) target=(-e '.[test,dev]') ;;
    *) fail "usage: scripts/install.sh [--test]" ;;
esac

python="${ESTATEGEN_PYTHON:-python3}"
command -v "$python" >/dev/null 2>&1 || fail "no $python: install Python 3.11 or newer (Debian package python3)"
"$python" -c 'import sys; sys.exit(sys.version_info < (3, 11))' \
    || fail "$("$python" --version 2>&1) is too old: estategen needs Python 3.11 or newer"

# venv creates the environment with pip only where ensurepip is there; Debian splits it out.
if ! "$python" -c 'import ensurepip, venv' >/dev/null 2>&1; then
    [[ $(id -u) == 0 ]] && command -v apt-get >/dev/null 2>&1 \
        || fail "$python has no venv module: install the Debian package python3-venv (as root: apt-get install python3-venv)"
    echo "installing Debian package python3-venv"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
fi

venv="${ESTATEGEN_VENV:-.venv}"

# A .venv from another interpreter (or a broken one) is made again rather than half reused.
if [[ -x "$venv"/bin/python ]] \
    && ! "$venv"/bin/python -c 'import sys; sys.exit(sys.base_prefix != sys.argv[1])' \
        "$("$python" -c 'import sys; print(sys.base_prefix)')" 2>/dev/null; then
    echo "scripts/install.sh: $venv was made by another Python; making it again"
    rm -rf "$venv"
fi
[[ -x "$venv"/bin/pip ]] || "$python" -m venv "$venv"

"$venv"/bin/python -m pip install --quiet --disable-pip-version-check "${target[@]}"
echo "$("$venv"/bin/estategen --version) installed in $venv/ with $("$venv"/bin/python --version)"
