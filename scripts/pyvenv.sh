#!/usr/bin/env bash
# Creates (or refreshes) the project's Python virtualenv for the test clients
# that come from PyPI (scapy, schemathesis, p4runtime-shell, ...), and prints
# its path. Packages are pinned in scripts/requirements-test.txt; the venv is
# rebuilt when that file changes. Usage: venv=$(scripts/pyvenv.sh)
# A client whose pins conflict with those (p4runtime-shell wants protobuf 3)
# gets a venv of its own: scripts/pyvenv.sh scripts/requirements-NAME.txt
# makes .venv-NAME.
set -euo pipefail
cd "$(dirname "$0")/.."
req=${1:-scripts/requirements-test.txt}
case $req in
scripts/requirements-test.txt) venv=${EDGENF_VENV:-$PWD/.venv} ;;
scripts/requirements-*.txt) name=${req#scripts/requirements-}; venv=$PWD/.venv-${name%.txt} ;;
*) echo "pyvenv: $req: want scripts/requirements-NAME.txt" >&2; exit 1 ;;
esac
stamp="$venv/.requirements"
if [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp"; then
	echo "$venv"
	exit 0
fi
# Serialise concurrent callers (parallel test packages) on one lock.
mkdir -p "$(dirname "$venv")"
exec 9>"$venv.lock"
flock 9
if ! { [ -x "$venv/bin/python" ] && cmp -s "$req" "$stamp"; }; then
	if ! python3 -c 'import venv, ensurepip' 2>/dev/null; then
		echo "pyvenv: python3 with the venv module is required (apt-get install python3-venv)" >&2
		exit 1
	fi
	rm -rf "$venv"
	python3 -m venv "$venv" >&2
	"$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >&2
	cp "$req" "$stamp"
fi
echo "$venv"
