#!/usr/bin/env bash
# Installs what edgenf needs on a Debian 12 machine, idempotently. Run as root.
set -euo pipefail

pkgs=(clang-14 llvm python3 python3-venv libbpf-dev bpftool iproute2 iputils-ping nftables iptables tcpdump tshark iperf3 linux-libc-dev make ca-certificates bubblewrap util-linux)
missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
	echo "setup: installing ${missing[*]}"
	export DEBIAN_FRONTEND=noninteractive
	apt-get update -qq
	apt-get install -y -qq "${missing[@]}" >/dev/null
fi

if ! command -v go >/dev/null; then
	echo "setup: Go is required (go1.22 or newer) and was not found on PATH" >&2
	exit 1
fi

# Real servers the telemetry tests start on loopback (InfluxDB; Prometheus
# and promtool) and the browser the dashboard test drives headless. Their
# packaged services are not ours: those this run installs are disabled and
# stopped (the tests start private instances).
servers=(influxdb prometheus chromium)
new=()
for p in "${servers[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || new+=("$p")
done
if ((${#new[@]})); then
	echo "setup: installing ${new[*]} (telemetry and dashboard tests)"
	export DEBIAN_FRONTEND=noninteractive
	apt-get -o DPkg::Lock::Timeout=600 update -qq
	apt-get -o DPkg::Lock::Timeout=600 install -y -qq --no-install-recommends "${new[@]}" >/dev/null
	for s in influxdb prometheus; do
		if [[ " ${new[*]} " == *" $s "* ]] && [ -d /run/systemd/system ]; then
			systemctl disable --now "$s" >/dev/null 2>&1 || true
		fi
	done
fi

mountpoint -q /sys/fs/bpf || mount -t bpf bpf /sys/fs/bpf
go mod download
